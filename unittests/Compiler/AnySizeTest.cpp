//===- AnySizeTest.cpp - One CPU kernel for every batch and length --------===//
//
// A CPU kernel is compiled per (dtype, GQA group size, head dims, causal,
// scale, LSE, schedule) and takes the batch, the head counts and both
// sequence lengths from its buffers; the KV split count is chosen at every
// run. These tests compile one kernel and run it over many random
// (B, Hkv, Nq, Nk), including Nq = 1, Nk < Nq under causal alignment and
// block tails, against the float64 reference on fresh random inputs (the
// seed is printed on failure), with the tolerances of AttentionNumericsTest
// (outputs: getOutputTolerance; LSE: 1e-3 + 1e-5 |lse|).
//
//===----------------------------------------------------------------------===//

#include "AttentionTestUtils.h"

#include "flashc/Compiler/Reference.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <string>

using namespace mlir::flash;

namespace {

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

using flashc_test::checkRun;
using flashc_test::Sizes;

struct AnySizeCase {
  const char *name;
  int64_t heads, kvHeads, headDim;
  ElementType dtype;
  bool causal;
};

void PrintTo(const AnySizeCase &c, std::ostream *os) { *os << c.name; }

const AnySizeCase kCases[] = {
    {"MhaF32", 2, 2, 32, ElementType::F32, false},
    {"GqaF32Causal", 4, 2, 64, ElementType::F32, true},
    {"MqaF16Causal", 4, 1, 64, ElementType::F16, true},
    {"GqaBF16", 8, 2, 64, ElementType::BF16, false},
};

class AnySizeTest : public ::testing::TestWithParam<AnySizeCase> {};

TEST_P(AnySizeTest, OneKernelServesEveryBatchAndLength) {
  const AnySizeCase &c = GetParam();
  AttentionSpec spec;
  spec.heads = c.heads;
  spec.kvHeads = c.kvHeads;
  spec.headDim = c.headDim;
  spec.dtype = c.dtype;
  spec.mask = c.causal ? Mask::causal() : Mask::none();
  spec.withLse = true;
  spec.batch = 2;
  spec.seqQ = spec.seqKV = 64;
  auto kernel = Compiler::global().compile(spec);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());

  unsigned seed = flashc_test::freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with FLASHC_TEST_SEED)");
  std::mt19937 rng(seed);
  // Decode (Nq = 1), Nk < Nq (causal: the first rows see no key), one key,
  // block tails on both sides, and random sizes.
  std::vector<Sizes> sizes = {{1, 1, 1},    {1, 1, 300},  {3, 1, 1000},
                              {1, 40, 10},  {2, 17, 257}, {1, 130, 129},
                              {1, 16, 600}, {2, 5, 5}};
  std::uniform_int_distribution<int64_t> batch(1, 3), seq(1, 200),
      kvHeads(1, 3);
  for (int i = 0; i < 12; ++i)
    sizes.push_back({batch(rng), seq(rng), seq(rng), kvHeads(rng)});
  for (Sizes s : sizes) {
    checkRun(**kernel, spec, s, rng);
    if (HasFatalFailure())
      return;
    // The same kernel comes back for these sizes and head counts (of the
    // same group size): nothing is compiled.
    AttentionSpec other = flashc_test::resized(spec, s);
    size_t cached = Compiler::global().getCacheSize();
    auto again = Compiler::global().compile(other);
    ASSERT_TRUE(static_cast<bool>(again)) << errorOf(again.takeError());
    EXPECT_EQ(again->get(), kernel->get());
    EXPECT_EQ(Compiler::global().getCacheSize(), cached);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AnySizeTest, ::testing::ValuesIn(kCases),
    [](const ::testing::TestParamInfo<AnySizeCase> &info) {
      return std::string(info.param.name);
    });

AttentionSpec decodeSpec() {
  AttentionSpec spec;
  spec.heads = 4;
  spec.kvHeads = 1;
  spec.headDim = 64;
  spec.seqQ = 1;
  spec.seqKV = 2048;
  spec.withLse = true;
  return spec;
}

TEST(AnySizeSplitsTest, TheSplitCountIsChosenPerRun) {
  PipelineConfig config;
  config.blockKV = 64;
  AttentionSpec spec = decodeSpec();
  auto kernel = Compiler::global().compile(spec, "cpu", config);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  const Kernel &kr = **kernel;
  EXPECT_EQ(kr.getMetadata().splits, 0);
  EXPECT_EQ(kr.getMetadata().tiles.blockKV, 64);
  // Asked for: at most one split per KV block; prefill shapes never split.
  RunOptions eight;
  eight.splits = 8;
  EXPECT_EQ(kr.getSplitCount(1, 1, 2048, eight), 8);
  EXPECT_EQ(kr.getSplitCount(1, 1, 130, eight), 3);
  EXPECT_EQ(kr.getSplitCount(1, 1, 1, eight), 1);
  EXPECT_EQ(kr.getSplitCount(1, 200, 2048, eight), 1);
  // The model's choice is a valid count.
  int64_t chosen = kr.getSplitCount(1, 1, 4096);
  EXPECT_GE(chosen, 1);
  EXPECT_LE(chosen, 64);

  unsigned seed = flashc_test::freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with FLASHC_TEST_SEED)");
  std::mt19937 rng(seed);
  for (int64_t splits : {1, 2, 5, 32}) {
    RunOptions options;
    options.splits = splits;
    SCOPED_TRACE(std::to_string(splits) + " splits");
    checkRun(kr, spec, {1, 1, 2048}, rng, options);
    checkRun(kr, spec, {2, 3, 700}, rng, options);
    checkRun(kr, spec, {2, 1, 900, 3}, rng, options);
    AttentionSpec causal = spec;
    causal.mask = Mask::causal();
    auto causalKernel = Compiler::global().compile(causal, "cpu", config);
    ASSERT_TRUE(static_cast<bool>(causalKernel))
        << errorOf(causalKernel.takeError());
    // Causal with Nq > Nk: rows and whole splits see no key.
    checkRun(**causalKernel, causal, {1, 12, 5}, rng, options);
    checkRun(**causalKernel, causal, {1, 16, 1000}, rng, options);
  }
}

TEST(AnySizeSplitsTest, AFixedSplitCountIsKept) {
  PipelineConfig config;
  config.blockKV = 32;
  config.splits = 6;
  auto kernel = Compiler::global().compile(decodeSpec(), "cpu", config);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  EXPECT_EQ((*kernel)->getMetadata().splits, 6);
  RunOptions two;
  two.splits = 2;
  EXPECT_EQ((*kernel)->getSplitCount(1, 1, 4096, two), 6);
  EXPECT_EQ((*kernel)->getSplitCount(1, 1, 100, two), 4);
  unsigned seed = flashc_test::freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  checkRun(**kernel, decodeSpec(), {1, 1, 1000}, rng);
}

TEST(AnySizeTest, TheLLVMIRDoesNotDependOnTheSizes) {
  AttentionSpec a = decodeSpec(), b = decodeSpec();
  b.batch = 7;
  b.seqQ = 999;
  b.seqKV = 3;
  auto irA = Compiler::emitLLVMIR(a, {});
  auto irB = Compiler::emitLLVMIR(b, {});
  ASSERT_TRUE(static_cast<bool>(irA)) << errorOf(irA.takeError());
  ASSERT_TRUE(static_cast<bool>(irB)) << errorOf(irB.takeError());
  EXPECT_EQ(*irA, *irB);
  // Nor on the head counts, for one group size.
  b.heads *= 3;
  b.kvHeads *= 3;
  auto irHeads = Compiler::emitLLVMIR(b, {});
  ASSERT_TRUE(static_cast<bool>(irHeads)) << errorOf(irHeads.takeError());
  EXPECT_EQ(*irA, *irHeads);
  AttentionSpec c = decodeSpec();
  c.headDim = 32;
  auto irC = Compiler::emitLLVMIR(c, {});
  ASSERT_TRUE(static_cast<bool>(irC)) << errorOf(irC.takeError());
  EXPECT_NE(*irA, *irC);
  AttentionSpec d = decodeSpec();
  d.heads *= 2;
  auto irD = Compiler::emitLLVMIR(d, {});
  ASSERT_TRUE(static_cast<bool>(irD)) << errorOf(irD.takeError());
  EXPECT_NE(*irA, *irD);
}

} // namespace
