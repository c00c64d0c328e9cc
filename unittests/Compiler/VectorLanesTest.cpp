//===- VectorLanesTest.cpp - CPU kernels at both vector widths ------------===//
//
// The CPU expansion is register-blocked for the host's vector registers:
// 16 f32 lanes (AVX-512) or 8 (AVX2), chosen from the host unless
// PipelineConfig::vectorLanes says otherwise. Both widths run on any x86-64
// host that has AVX2 (LLVM splits the wider vectors), so both are checked
// here on every machine: prefill (the transposed copy of K) and decode
// (K read row by row, one accumulator per (row, key) and a shuffle tree),
// with GQA, MQA and MHA, causal masks, head dims that are not whole vectors
// (59, 80), key counts that are not whole groups, and f32, f16 and bf16,
// against the float64 reference on fresh random inputs (the seed is printed
// on failure), with the tolerances of AttentionNumericsTest (outputs:
// getOutputTolerance; LSE: 1e-3 + 1e-5 |lse|).
//
//===----------------------------------------------------------------------===//

#include "AttentionTestUtils.h"

#include "flashc/Compiler/JIT.h"
#include "flashc/Pipelines/Pipelines.h"
#include "flashc/Target/TargetInfo.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

#include <string>
#include <tuple>

using namespace mlir::flash;

namespace {

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

struct LanesCase {
  const char *name;
  int64_t heads, kvHeads, headDim;
  ElementType dtype;
  bool causal;
};

const LanesCase kCases[] = {
    {"Gqa4BF16D128", 8, 2, 128, ElementType::BF16, false},
    {"Gqa4F16D64Causal", 8, 2, 64, ElementType::F16, true},
    {"MhaF32D59Causal", 3, 3, 59, ElementType::F32, true},
    {"MqaF32D80", 4, 1, 80, ElementType::F32, false},
    {"MhaBF16D16", 2, 2, 16, ElementType::BF16, false},
};

/// A vector width, and how the softmax's 2^x is built at 16 lanes:
/// "host" (vscalefps where the host has AVX-512) or "off" (in the exponent
/// bits, as at 8 lanes).
struct Width {
  int64_t lanes;
  const char *scalef;
};

const Width kWidths[] = {{8, "host"}, {16, "off"}, {16, "host"}};

class VectorLanesTest
    : public ::testing::TestWithParam<std::tuple<Width, LanesCase>> {};

TEST_P(VectorLanesTest, MatchesTheReference) {
  auto [width, c] = GetParam();
  int64_t lanes = width.lanes;
  AttentionSpec spec;
  spec.heads = c.heads;
  spec.kvHeads = c.kvHeads;
  spec.headDim = c.headDim;
  spec.dtype = c.dtype;
  spec.mask = c.causal ? Mask::causal() : Mask::none();
  spec.withLse = true;
  spec.batch = 1;
  spec.seqQ = spec.seqKV = 64;
  PipelineConfig config;
  config.vectorLanes = lanes;
  config.scalef = width.scalef;
  auto kernel = Compiler::global().compile(spec, "cpu", config);
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  EXPECT_NE((*kernel)->getMetadata().config.find(
                "vector-lanes=" + std::to_string(lanes)),
            std::string::npos)
      << (*kernel)->getMetadata().config;

  // (B, Nq, Nk): decode (Nq <= 16) with key counts around the key groups
  // and the KV block, causal rows that see no key (Nk < Nq), and prefill.
  flashc_test::checkSizes(**kernel, spec,
                          {{1, 1, 1},
                           {1, 1, 2},
                           {2, 1, 7},
                           {1, 1, 257},
                           {1, 3, 1000},
                           {1, 16, 33},
                           {1, 5, 3},
                           {2, 40, 300},
                           {1, 100, 77}});
}

INSTANTIATE_TEST_SUITE_P(
    Widths, VectorLanesTest,
    ::testing::Combine(::testing::ValuesIn(kWidths),
                       ::testing::ValuesIn(kCases)),
    [](const ::testing::TestParamInfo<std::tuple<Width, LanesCase>> &info) {
      const Width &w = std::get<0>(info.param);
      return std::string(std::get<1>(info.param).name) + "Lanes" +
             std::to_string(w.lanes) +
             (std::string(w.scalef) == "off" ? "NoScalef" : "");
    });

TEST(VectorLanesConfigTest, OtherWidthsAreRejected) {
  PipelineConfig config;
  config.vectorLanes = 4;
  llvm::Error err = config.validate();
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(errorOf(std::move(err)),
            "vector-lanes must be 0 (the host's), 8 or 16, got 4");
  config.vectorLanes = 8;
  EXPECT_FALSE(static_cast<bool>(config.validate()));
}

TEST(VectorLanesConfigTest, ScalefValuesAreChecked) {
  PipelineConfig config;
  config.scalef = "maybe";
  llvm::Error err = config.validate();
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(errorOf(std::move(err)),
            "scalef must be off, host or on, got 'maybe'");
  config.scalef = "on";
  config.vectorLanes = 8;
  err = config.validate();
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(errorOf(std::move(err)),
            "scalef=on needs 16-lane vectors (AVX-512); vector-lanes is 8");
}

/// scalef=on compiles where the host has AVX-512 and is refused, naming
/// the reason, where it has not (vscalefps could not be selected).
TEST(VectorLanesConfigTest, ScalefOnNeedsTheHostsAVX512) {
  llvm::Expected<TargetInfo> host = TargetInfo::get("cpu");
  ASSERT_TRUE(static_cast<bool>(host)) << errorOf(host.takeError());
  AttentionSpec spec;
  spec.heads = 2;
  spec.kvHeads = 2;
  spec.seqQ = spec.seqKV = 40;
  spec.headDim = 32;
  PipelineConfig config;
  config.vectorLanes = 16;
  config.scalef = "on";
  Compiler compiler;
  auto kernel = compiler.compile(spec, "cpu", config);
  if (host->vectorLanes != 16) {
    ASSERT_FALSE(static_cast<bool>(kernel));
    EXPECT_EQ(errorOf(kernel.takeError()),
              "scalef=on: this host has no AVX-512 (vscalefps); use host or "
              "off");
    return;
  }
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());
  EXPECT_NE((*kernel)->getMetadata().config.find("scalef=on"),
            std::string::npos);
  flashc_test::checkSizes(**kernel, spec, {{1, 40, 40}, {2, 1, 333}});
}

} // namespace
