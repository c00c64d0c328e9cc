//===- AttentionNumericsTest.cpp - Kernels against a float64 reference ----===//
//
// Compiles attention kernels for the CPU through the JIT API and compares
// them with the float64 reference on fresh random inputs (the seed is
// printed on failure). The cases cover causal and non-causal attention,
// MHA/GQA/MQA, tails, Nq = 1, Nk = 1, Nq != Nk, head dimensions 32 to 256,
// f32/f16/bf16, split counts, both loop orders, huge logits and fully
// masked rows.
//
// Tolerances on the output (absolute; outputs are convex combinations of V
// entries of unit scale): f32 2e-4, f16 4e-3, bf16 3e-2 (about 4 ulps of the
// output type at 1.0, plus the f32 accumulation error). The LSE is compared
// with 1e-3 + 1e-5 * |lse|.
//
//===----------------------------------------------------------------------===//

#include "AttentionTestUtils.h"

#include "flashc/Compiler/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <ostream>
#include <random>

using namespace mlir::flash;

namespace {

struct NumericsCase {
  const char *name;
  int64_t batch, heads, kvHeads, seqQ, seqKV, headDim, headDimV;
  ElementType dtype;
  bool causal;
  bool lse = true;
  /// Pipeline knobs (0: automatic).
  int64_t blockQ = 0, blockKV = 0, splits = 1;
  const char *loopOrder = "fa2";
  /// Standard deviation of the inputs (logits grow with its square).
  double magnitude = 1.0;
  /// Explicit softmax scale (0: the default 1/sqrt(D)).
  double scale = 0;
  /// Extra slack for cases whose f32 rounding is inherently larger.
  double toleranceScale = 1.0;
};

void PrintTo(const NumericsCase &c, std::ostream *os) { *os << c.name; }

const NumericsCase kCases[] = {
    // name, B, Hq, Hkv, Nq, Nk, D, Dv, dtype, causal
    {"MhaF32", 2, 4, 4, 128, 128, 64, 64, ElementType::F32, false},
    {"MhaF32Causal", 2, 4, 4, 128, 128, 64, 64, ElementType::F32, true},
    {"GqaF32Causal", 1, 8, 2, 96, 96, 64, 64, ElementType::F32, true},
    {"MqaF32", 2, 6, 1, 70, 130, 32, 32, ElementType::F32, false},
    {"TailsSmallBlocksCausal", 1, 2, 2, 77, 93, 64, 64, ElementType::F32, true, true,
     16, 32},
    {"TailsNonCausal", 1, 2, 1, 50, 301, 64, 64, ElementType::F32, false, true, 16,
     48},
    {"SeqQ1", 3, 4, 2, 1, 257, 64, 64, ElementType::F32, false},
    {"SeqQ1Causal", 1, 4, 4, 1, 100, 128, 128, ElementType::F32, true},
    {"SeqKV1", 1, 2, 2, 33, 1, 64, 64, ElementType::F32, false},
    {"SeqKV1Causal", 1, 2, 2, 5, 1, 64, 64, ElementType::F32, true},
    {"QLongerThanKVCausal", 1, 2, 2, 40, 24, 64, 64, ElementType::F32, true, true, 8,
     8},
    {"KVLongerThanQCausal", 1, 2, 2, 24, 200, 64, 64, ElementType::F32, true, true,
     16, 32},
    {"HeadDim32", 1, 2, 2, 64, 64, 32, 32, ElementType::F32, true},
    {"HeadDim80", 1, 2, 2, 64, 80, 80, 80, ElementType::F32, false},
    {"HeadDim96", 1, 2, 1, 64, 64, 96, 96, ElementType::F32, true},
    {"HeadDim128", 1, 2, 2, 64, 100, 128, 128, ElementType::F32, false},
    {"HeadDim256", 1, 1, 1, 40, 70, 256, 256, ElementType::F32, true},
    {"ValueDimDiffers", 1, 2, 2, 32, 40, 64, 24, ElementType::F32, false},
    {"OddHeadDim", 1, 2, 2, 17, 19, 20, 12, ElementType::F32, true},
    {"F16Causal", 2, 4, 2, 100, 100, 64, 64, ElementType::F16, true},
    {"F16HeadDim128", 1, 2, 2, 64, 64, 128, 128, ElementType::F16, false},
    {"BF16Causal", 1, 4, 4, 100, 120, 64, 64, ElementType::BF16, true},
    {"BF16GqaDecode", 2, 8, 2, 1, 300, 64, 64, ElementType::BF16, false},
    {"Splits2", 1, 4, 1, 1, 500, 64, 64, ElementType::F32, false, true, 0, 64, 2},
    {"Splits7Causal", 1, 4, 2, 2, 700, 64, 64, ElementType::F32, true, true, 0, 32,
     7},
    {"Splits64", 1, 2, 2, 1, 1000, 64, 64, ElementType::F32, true, true, 0, 16, 64},
    {"SplitsMoreThanBlocks", 1, 2, 2, 1, 40, 64, 64, ElementType::F32, false, true, 0,
     16, 9},
    {"Algorithm1", 1, 2, 2, 70, 90, 64, 64, ElementType::F32, false, true, 0, 0, 1,
     "algorithm1"},
    {"Algorithm1Causal", 1, 4, 2, 65, 65, 64, 64, ElementType::F32, true, true, 16,
     16, 1, "algorithm1"},
    // Logits of magnitude ~1e4: no overflow, no NaN. The f32 dot products
    // carry an absolute error of ~1e-3 at that size, hence the slack.
    {"HugeLogits", 1, 2, 2, 64, 64, 64, 64, ElementType::F32, false, true, 0, 0, 1,
     "fa2", 35.0, 1.0, 50.0},
    {"HugeLogitsCausal", 1, 2, 2, 64, 64, 64, 64, ElementType::F32, true, true, 0, 0,
     1, "fa2", 35.0, 1.0, 50.0},
    // Nq > Nk under causal alignment: the first 30 rows see no key.
    {"FullyMaskedRows", 1, 2, 2, 40, 10, 64, 64, ElementType::F32, true, true, 8, 8},
    {"FullyMaskedRowsSplit", 1, 2, 1, 12, 4, 32, 32, ElementType::F32, true, true, 0,
     2, 2},
};

class AttentionNumericsTest : public ::testing::TestWithParam<NumericsCase> {};

TEST_P(AttentionNumericsTest, MatchesFloat64Reference) {
  const NumericsCase &c = GetParam();
  AttentionSpec spec;
  spec.batch = c.batch;
  spec.heads = c.heads;
  spec.kvHeads = c.kvHeads;
  spec.seqQ = c.seqQ;
  spec.seqKV = c.seqKV;
  spec.headDim = c.headDim;
  spec.headDimV = c.headDimV;
  spec.dtype = c.dtype;
  spec.mask = c.causal ? Mask::causal() : Mask::none();
  spec.withLse = c.lse;
  if (c.scale > 0)
    spec.scale = c.scale;
  PipelineConfig config;
  config.blockQ = c.blockQ;
  config.blockKV = c.blockKV;
  config.splits = c.splits;
  config.loopOrder = c.loopOrder;

  auto kernel = Compiler::global().compile(spec, "cpu", config);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());

  unsigned seed = flashc_test::freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with FLASHC_TEST_SEED)");
  std::mt19937 rng(seed);
  flashc_test::AttentionBuffers b(spec, rng, c.magnitude);
  TensorRef lseRef = b.lse.ref();
  llvm::Error err = (*kernel)->run(b.q.ref(), b.k.ref(), b.v.ref(),
                                   b.out.ref(), c.lse ? &lseRef : nullptr);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  flashc_test::expectMatchesReference(spec, b, c.toleranceScale);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AttentionNumericsTest, ::testing::ValuesIn(kCases),
    [](const ::testing::TestParamInfo<NumericsCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
