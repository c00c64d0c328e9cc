//===- BF16DotTest.cpp - bf16 decode through vdpbf16ps --------------------===//
//
// On hosts with AVX512_BF16, decode with bf16 Q and K computes S = Q . K^T
// by vdpbf16ps (PipelineConfig::bf16Dot: "off", the default, never; "host"
// where the host has it; "on" always). Decode shapes (Nq <= 16) with GQA, MQA
// and MHA, causal masks, head dims that are not whole 32-element vectors (40,
// 59, 16) and 256, and key counts around the key groups and the KV block
// run both ways against the float64 reference on fresh random inputs (the
// seed is printed on failure), with getOutputTolerance's bf16 tolerance.
// "on" is skipped where the host lacks the instruction, and must then fail
// to compile with a clear error instead.
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

bool hostHasBF16Dot() {
  llvm::Expected<TargetInfo> host = TargetInfo::get("cpu");
  if (!host) {
    llvm::consumeError(host.takeError());
    return false;
  }
  return host->bf16DotProduct;
}

struct DotCase {
  const char *name;
  int64_t heads, kvHeads, headDim;
  bool causal;
};

const DotCase kCases[] = {
    {"Gqa4D128", 8, 2, 128, false}, {"Gqa4D40Causal", 8, 2, 40, true},
    {"MqaD59", 4, 1, 59, false},    {"MhaD16Causal", 2, 2, 16, true},
    {"Gqa2D256", 4, 2, 256, false},
};

class BF16DotTest
    : public ::testing::TestWithParam<std::tuple<const char *, DotCase>> {};

TEST_P(BF16DotTest, DecodeMatchesTheReference) {
  auto [mode, c] = GetParam();
  AttentionSpec spec;
  spec.heads = c.heads;
  spec.kvHeads = c.kvHeads;
  spec.headDim = c.headDim;
  spec.dtype = ElementType::BF16;
  spec.mask = c.causal ? Mask::causal() : Mask::none();
  spec.withLse = true;
  spec.batch = 1;
  spec.seqQ = spec.seqKV = 64;
  PipelineConfig config;
  config.bf16Dot = mode;
  auto kernel = Compiler::global().compile(spec, "cpu", config);
  if (std::string(mode) == "on" && !hostHasBF16Dot()) {
    ASSERT_FALSE(static_cast<bool>(kernel));
    EXPECT_EQ(errorOf(kernel.takeError()),
              "bf16-dot=on: this host has no AVX512_BF16 (vdpbf16ps); use "
              "host or off");
    GTEST_SKIP() << "the host has no AVX512_BF16";
  }
  ASSERT_TRUE(static_cast<bool>(kernel)) << errorOf(kernel.takeError());

  // (B, Nq, Nk): decode, with key counts around the groups of 4 keys and
  // the KV block, and causal rows that see no key (Nk < Nq).
  flashc_test::checkSizes(**kernel, spec,
                          {{1, 1, 1},
                           {1, 1, 3},
                           {2, 1, 7},
                           {1, 1, 257},
                           {1, 4, 1000},
                           {1, 16, 33},
                           {1, 5, 3},
                           {3, 2, 515}});
}

INSTANTIATE_TEST_SUITE_P(
    Modes, BF16DotTest,
    ::testing::Combine(::testing::Values("on", "host", "off"),
                       ::testing::ValuesIn(kCases)),
    [](const ::testing::TestParamInfo<std::tuple<const char *, DotCase>>
           &info) {
      std::string mode = std::get<0>(info.param);
      mode[0] = static_cast<char>(std::toupper(mode[0]));
      return std::string(std::get<1>(info.param).name) + mode;
    });

TEST(BF16DotConfigTest, BadSettingsAreRejected) {
  PipelineConfig config;
  config.bf16Dot = "yes";
  llvm::Error err = config.validate();
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(errorOf(std::move(err)),
            "bf16-dot must be off, host or on, got 'yes'");
  config.bf16Dot = "on";
  config.vectorLanes = 8;
  err = config.validate();
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(errorOf(std::move(err)),
            "bf16-dot=on needs 16-lane vectors (AVX-512); vector-lanes is 8");
  config = PipelineConfig();
  config.target = "sm_80";
  config.bf16Dot = "host";
  err = config.validate();
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(errorOf(std::move(err)), "bf16-dot applies to the CPU target only");
}

} // namespace
