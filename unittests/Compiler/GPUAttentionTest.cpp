//===- GPUAttentionTest.cpp - GPU kernels in the PTX simulator ------------===//
//
// Every configuration the default kernel bundle ships (sm_80 and sm_90a,
// f16 and bf16, D = 64, 128, 256, MHA and GQA groups of 4, causal or not,
// prefill and split-KV decode) is compiled and run in the PTX simulator at
// small sizes on fresh random inputs, and compared with the float64
// reference: odd lengths, Nq = 1, Nk < Nq under causal alignment (fully
// masked rows), several KV heads. Further cases cover the log-sum-exp, head
// dims that need padding, strides that do not fold batch and heads
// together, and that one kernel serves every length (no recompilation).
// Every compiled kernel's PTX uses only instructions the simulator
// implements.
//
//===----------------------------------------------------------------------===//

#include "AttentionTestUtils.h"

#include "flashc/Compiler/Reference.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Runtime/flashc_runtime.h"
#include "flashc/Simulator/Simulator.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <dlfcn.h>
#include <functional>
#include <optional>
#include <ostream>
#include <random>

using namespace mlir::flash;

namespace {

/// A kernel variant: what is fixed at compile time.
struct Config {
  const char *target;
  ElementType dtype;
  int64_t headDim;
  int64_t group;
  bool causal;
  bool decode;
  bool lse = false;
  int64_t headDimV = 0;
};

std::string nameOf(const Config &c) {
  std::string s = std::string(c.target) + "_" +
                  std::string(::flashc::stringify(c.dtype)) + "_d" +
                  std::to_string(c.headDim) + "_g" + std::to_string(c.group) +
                  (c.causal ? "_causal" : "") + (c.decode ? "_decode" : "_prefill");
  if (c.lse)
    s += "_lse";
  if (c.headDimV)
    s += "_dv" + std::to_string(c.headDimV);
  return s;
}

void PrintTo(const Config &c, std::ostream *os) { *os << nameOf(c); }

/// Sizes a call picks at run time.
struct Shape {
  int64_t batch, kvHeads, seqQ, seqKV;
  int64_t splits = 0; // decode: 0 = the wave model's
};

using flashc_test::freshSeed;

AttentionSpec specOf(const Config &c, const Shape &s) {
  AttentionSpec spec;
  spec.batch = s.batch;
  spec.kvHeads = s.kvHeads;
  spec.heads = s.kvHeads * c.group;
  spec.seqQ = s.seqQ;
  spec.seqKV = s.seqKV;
  spec.headDim = c.headDim;
  spec.headDimV = c.headDimV;
  spec.dtype = c.dtype;
  spec.mask = c.causal ? Mask::causal() : Mask::none();
  spec.withLse = c.lse;
  return spec;
}

/// Compiles (or finds) the kernel of `c` and runs it on `s` in the
/// simulator; checks the outputs against float64. `shapeInputs`, when
/// given, rewrites the random inputs first; `countersOut`, when given,
/// receives the simulator's counters of the run.
void checkShape(const Config &c, const Shape &s,
                std::shared_ptr<const Kernel> *kernelOut = nullptr,
                const PipelineConfig &config = PipelineConfig(),
                const std::function<void(flashc_test::AttentionBuffers &)>
                    &shapeInputs = nullptr,
                flashc::runtime::SimulatorCounters *countersOut = nullptr) {
  AttentionSpec spec = specOf(c, s);
  ASSERT_EQ(spec.isDecode(), c.decode) << "the shape must pick the variant";
  auto kernel = Compiler::global().compile(spec, c.target, config);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  if (kernelOut)
    *kernelOut = *kernel;
  ASSERT_TRUE((*kernel)->isGPU());
  {
    // The schedule sizes tiles by GPUTileConfig's shared memory (Q's rows,
    // the K and V stages); the kernel's own total (flash-tile-allocate-
    // shared) is that, plus on sm_90a the warpgroup MMAs' alignment and
    // the stages' mbarriers.
    const flashc::runtime::KernelVariant &v = *(*kernel)->getMetadata().gpu;
    flashc::GPUTileConfig tile = flashc::makeGPUTileConfig(
        v.query.group, v.query.headDim, v.query.headDimV, 2, v.blockQ,
        v.blockKV, v.query.decode ? 4 : 2, /*wideWarps=*/true,
        /*warpgroup=*/std::string(c.target) == "sm_90a" && config.warpgroupMma);
    tile.stages = config.stages;
    int64_t extra = v.forward.sharedBytes - tile.sharedBytes();
    if (std::string(c.target) == "sm_80")
      EXPECT_EQ(extra, 0) << v.forward.sharedBytes << " bytes, GPUTileConfig "
                          << tile.sharedBytes();
    else
      EXPECT_TRUE(extra == 0 ||
                  (extra >= flashc::kWarpgroupSharedAlignment &&
                   extra <= flashc::getWarpgroupSharedReserve(tile.stages)))
          << v.forward.sharedBytes << " bytes, GPUTileConfig "
          << tile.sharedBytes();
  }

  unsigned seed = freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with FLASHC_TEST_SEED)");
  std::mt19937 rng(seed);
  SCOPED_TRACE(spec.str());
  flashc_test::AttentionBuffers b(spec, rng);
  if (shapeInputs)
    shapeInputs(b);
  RunOptions options;
  options.simulate = true;
  options.splits = s.splits;
  // A simulator of its own, for its counters.
  options.device = flashc::runtime::getSimulatorDevice(c.target);
  TensorRef lseRef = b.lse.ref();
  llvm::Error err = (*kernel)->run(b.q.ref(), b.k.ref(), b.v.ref(),
                                   b.out.ref(), c.lse ? &lseRef : nullptr,
                                   options);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  flashc_test::expectMatchesReference(spec, b, 1.0, /*lseAbs=*/1e-3,
                                      /*lseRel=*/1e-3);
  // The swizzled (or padded) shared layouts put the 8 rows of every
  // ldmatrix matrix in 8 different bank groups.
  auto counters = flashc::runtime::getSimulatorCounters(*options.device);
  ASSERT_TRUE(counters.ok()) << counters.message();
  if (countersOut)
    *countersOut = *counters;
  // sm_90a's kernels of 64 rows or more (every prefill tile; decode
  // tiles of groups above 32 heads) multiply by warpgroups from shared
  // memory where a buffer's rows are whole rows of the 128-, 64- or 32-byte
  // swizzle (K's for S, V's for O; head dims padded to 16, so every 16-bit
  // head dim); the other multiplies load their operands by ldmatrix.
  int64_t tileRows =
      flashc::chooseGPUTiles(c.group, c.headDim,
                             c.headDimV ? c.headDimV : c.headDim, 2, c.decode,
                             /*wideWarps=*/true, /*warpgroup=*/true)
          .tileRows();
  bool warpgroup = std::string(c.target) == "sm_90a" && config.warpgroupMma &&
                   tileRows >= 64;
  auto swizzleRow = [](int64_t d) {
    return flashc::getWarpgroupSwizzleBytes((d + 15) / 16 * 16 * 2) != 0;
  };
  bool qk = warpgroup && swizzleRow(c.headDim);
  bool pv = warpgroup && swizzleRow(c.headDimV ? c.headDimV : c.headDim);
  EXPECT_EQ(counters->wgmmaInstructions > 0, qk || pv)
      << counters->wgmmaInstructions << " wgmma.mma_async";
  // Their copies are TMA copies where every buffer is so read and the rows
  // are whole 16-byte units (a head dim of a multiple of 8).
  bool tma = warpgroup && config.tma && qk && pv && c.headDim % 8 == 0 &&
             (c.headDimV ? c.headDimV : c.headDim) % 8 == 0;
  EXPECT_EQ(counters->tensorLoads > 0, tma)
      << counters->tensorLoads << " TMA tensor loads";
  // A producer warp copies for them, its warpgroup's registers moved to
  // the consumers': every warp of each CTA runs one setmaxnreg.
  bool specialised = tma && config.warpSpecialize;
  EXPECT_EQ(counters->setmaxnregInstructions > 0, specialised)
      << counters->setmaxnregInstructions << " setmaxnreg";
  // Two consumer warpgroups (128 query rows) take turns at the tensor
  // cores, passing each turn by bar.arrive.
  bool pingpong = specialised && config.pingpong && tileRows == 128;
  EXPECT_EQ(counters->barrierArrivals > 0, pingpong)
      << counters->barrierArrivals << " bar.arrive";
  EXPECT_EQ(counters->ldmatrixMatrices > 0, !(qk && pv))
      << counters->ldmatrixMatrices << " ldmatrix matrices";
  EXPECT_EQ(counters->ldmatrixExtraWavefronts, 0u)
      << "ldmatrix bank conflicts, over " << counters->ldmatrixMatrices
      << " matrices";
  // ld/st.shared (the kv warps' merge, the staging of O) and cp.async's
  // writes of Q, K and V: no request takes more wavefronts than its words
  // need, where rows are whole 128-byte lines (head dims of 64, 128 and
  // 256, swizzled). Other rows are padded by a chunk, which keeps ldmatrix
  // free of conflicts but not every copy that writes them (counted, not
  // asserted: docs/PERFORMANCE.md).
  auto wholeLines = [](int64_t d) { return d == 64 || d == 128 || d == 256; };
  if (wholeLines(c.headDim) &&
      wholeLines(c.headDimV ? c.headDimV : c.headDim)) {
    EXPECT_EQ(counters->sharedExtraWavefronts, 0u)
        << "ld/st.shared and cp.async bank conflicts, over "
        << counters->sharedRequests << " requests";
  }
}

class ShippedConfigTest : public ::testing::TestWithParam<Config> {};

TEST_P(ShippedConfigTest, MatchesFloat64InTheSimulator) {
  const Config &c = GetParam();
  if (c.decode) {
    // One query or a few, short and longer KV, splits by the wave model
    // and fixed.
    checkShape(c, {2, 2, 1, 300});
    checkShape(c, {1, 1, 3, 130, 2});
    checkShape(c, {1, 2, 1, 17, 1});
    // Three batch entries, three non-empty splits: the combine's last CTA
    // of batch entries (four to a CTA where there is one head) is partial.
    checkShape(c, {3, 1, 1, 600, 3});
    // Nine splits (blocks of 256 keys at most: 9 of them), which the
    // combine reads in a whole step of 8 and a masked step of one; and
    // eight, one whole step and no masked one.
    std::shared_ptr<const Kernel> kernel;
    checkShape(c, {1, 1, 1, 2100, 9}, &kernel);
    if (kernel) {
      EXPECT_GE((2100 + kernel->getMetadata().gpu->blockKV - 1) /
                    kernel->getMetadata().gpu->blockKV,
                9);
    }
    checkShape(c, {2, 1, 1, 2100, 8});
  } else {
    checkShape(c, {2, 2, 37, 53});
    // Nk < Nq: under causal alignment the first rows see no key.
    checkShape(c, {1, 1, 70, 33});
    // Several KV blocks, the last one ragged.
    checkShape(c, {1, 1, 130, 260});
  }
}

std::vector<Config> shippedConfigs() {
  std::vector<Config> configs;
  for (const char *target : {"sm_80", "sm_90a"})
    for (ElementType dtype : {ElementType::F16, ElementType::BF16})
      for (int64_t d : {64, 128, 256})
        for (int64_t g : {1, 4})
          for (bool causal : {false, true})
            for (bool decode : {false, true})
              configs.push_back({target, dtype, d, g, causal, decode});
  return configs;
}

INSTANTIATE_TEST_SUITE_P(Bundle, ShippedConfigTest,
                         ::testing::ValuesIn(shippedConfigs()),
                         [](const auto &info) { return nameOf(info.param); });

/// The log-sum-exp output, both variants, and head dims that are padded in
/// shared memory (48, 80, 96, 112, 192: rows of a chunk count that is not
/// a power of two, padded by a chunk; 59, 61: padded to 64 for the MMAs,
/// copied element by element) or differ between K and V.
std::vector<Config> extraConfigs() {
  return {
      {"sm_80", ElementType::F16, 128, 4, true, false, /*lse=*/true},
      {"sm_80", ElementType::BF16, 64, 1, false, false, true},
      {"sm_80", ElementType::F16, 128, 4, true, true, true},
      {"sm_90a", ElementType::BF16, 256, 1, true, true, true},
      {"sm_80", ElementType::F16, 59, 2, true, false, true},
      {"sm_80", ElementType::BF16, 96, 1, false, false, false},
      {"sm_90a", ElementType::F16, 59, 8, true, true, true, /*headDimV=*/61},
      {"sm_80", ElementType::F16, 80, 1, true, false, false, /*headDimV=*/48},
      {"sm_80", ElementType::F16, 64, 1, true, false, true, /*headDimV=*/128},
      {"sm_80", ElementType::F16, 48, 1, false, false, false},
      {"sm_90a", ElementType::BF16, 112, 4, true, true, true},
      {"sm_80", ElementType::F16, 192, 1, true, false, false, /*headDimV=*/128},
      {"sm_80", ElementType::BF16, 192, 4, false, true, false,
       /*headDimV=*/128},
      // GQA groups that are not a power of two (floor(R / G) rows a head,
      // the tile's last rows no head's), and groups of more than 64 heads
      // (a tile of one query row of each).
      {"sm_80", ElementType::F16, 64, 3, true, false, true},
      {"sm_90a", ElementType::F16, 128, 5, true, true, false},
      {"sm_80", ElementType::BF16, 64, 80, false, false, false},
      {"sm_90a", ElementType::F16, 128, 6, true, false, false},
      {"sm_80", ElementType::BF16, 128, 12, false, true, true},
      // sm_90a's warpgroup MMAs: rows padded to 64 columns, one of the two
      // multiplies by warpgroups and the other by warps, a GQA group that
      // is not a power of two, and one of more than 64 heads.
      {"sm_90a", ElementType::F16, 59, 2, true, false, true},
      {"sm_90a", ElementType::BF16, 64, 1, true, false, false,
       /*headDimV=*/128},
      {"sm_90a", ElementType::F16, 128, 1, false, false, true, /*headDimV=*/64},
      {"sm_90a", ElementType::BF16, 64, 3, true, false, false},
      {"sm_90a", ElementType::F16, 64, 80, false, false, true},
      // More groups that are not a power of two: 3 x 42 rows at D = 256
      // (TMA boxes of 3 groups of 42), 7 x 18 with the log-sum-exp, 24 x 5
      // (120 of 128 rows), a decode tile of 3 x 5 rows and, on sm_80, 5 x
      // 12 of 64 rows at D = 256.
      {"sm_90a", ElementType::BF16, 256, 3, true, false, true},
      {"sm_90a", ElementType::F16, 128, 7, false, false, true},
      {"sm_90a", ElementType::BF16, 64, 24, true, false, false},
      {"sm_90a", ElementType::F16, 128, 3, true, true, true},
      {"sm_80", ElementType::F16, 256, 5, false, false, false},
      // Decode tiles of 64 and 128 rows (groups of 33 heads and more, MQA)
      // multiply by warpgroups and copy by TMA on sm_90a; their combine
      // kernel takes the forward kernel's tensor maps, unused.
      {"sm_90a", ElementType::F16, 128, 48, false, true, true},
      {"sm_90a", ElementType::BF16, 64, 80, true, true, false},
      // 8 warps of 16 rows (a group of 80 or 128 heads beyond D = 128)
      // copying K blocks of 16 keys: the warps split the columns too.
      {"sm_80", ElementType::BF16, 80, 128, true, false, false,
       /*headDimV=*/256},
      {"sm_80", ElementType::BF16, 48, 80, false, true, false,
       /*headDimV=*/256},
      // Rows narrower than the banks' 128 bytes: 64 bytes (D = 32) and 32
      // (D = 16) swizzle in runs of 2 and 4 rows, 16 (D = 8) not at all;
      // each without bank conflicts.
      {"sm_80", ElementType::F16, 32, 1, true, false, false},
      {"sm_80", ElementType::BF16, 16, 1, false, false, true},
      {"sm_80", ElementType::F16, 8, 1, false, false, false},
      {"sm_80", ElementType::F16, 32, 4, false, true, false},
      {"sm_90a", ElementType::BF16, 32, 1, false, false, false},
      {"sm_90a", ElementType::F16, 16, 4, true, false, false},
      {"sm_90a", ElementType::F16, 8, 8, false, true, false},
      // sm_90a's rows of the 64- and 32-byte swizzles: 96 and 160 columns
      // in panels of 64 bytes, 80 and 72 (padded to 80) in panels of 32
      // bytes, one beside the other (Q and K in one, V and O in the
      // other), and a decode tile of 64 rows.
      {"sm_90a", ElementType::F16, 96, 1, true, false, true},
      {"sm_90a", ElementType::BF16, 80, 4, false, false, false},
      {"sm_90a", ElementType::F16, 160, 1, true, false, false},
      {"sm_90a", ElementType::BF16, 72, 2, false, false, true},
      {"sm_90a", ElementType::F16, 96, 1, false, false, false,
       /*headDimV=*/80},
      {"sm_90a", ElementType::BF16, 96, 48, false, true, false},
  };
}

class ExtraConfigTest : public ::testing::TestWithParam<Config> {};

TEST_P(ExtraConfigTest, MatchesFloat64InTheSimulator) {
  const Config &c = GetParam();
  if (c.decode) {
    std::shared_ptr<const Kernel> kernel;
    checkShape(c, {2, 2, 1, 300}, &kernel);
    // Decode kernels come through the flash_tile body, which writes the
    // attention's output itself at one split.
    if (kernel) {
      EXPECT_TRUE(kernel->getMetadata().gpu->forward.finalAtOneSplit);
    }
    checkShape(c, {1, 1, 2, 45, 3});
    checkShape(c, {3, 1, 1, 600, 3});
  } else {
    checkShape(c, {2, 1, 37, 53});
    checkShape(c, {1, 2, 70, 33});
    // Several KV blocks through both stages, the last one ragged.
    checkShape(c, {1, 1, 130, 260});
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, ExtraConfigTest,
                         ::testing::ValuesIn(extraConfigs()),
                         [](const auto &info) { return nameOf(info.param); });

/// A causal kernel whose CTAs run in each order (the last Q block of every
/// head first, each head's Q blocks last first, in order, or auto: the
/// first where a head has 2048 rows or more): the same results, with
/// several Q blocks per head, GQA, a split decode kernel, and heads of
/// 2100 rows (whose first 2040 rows see no key: cheap to simulate).
TEST(GPUKernelTest, EveryCausalOrderMatches) {
  for (const char *order :
       {"heaviest", "heaviest-per-head", "lightest", "auto"}) {
    SCOPED_TRACE(order);
    PipelineConfig config;
    config.causalOrder = order;
    checkShape({"sm_80", ElementType::F16, 64, 1, true, false},
               {2, 2, 300, 300}, nullptr, config);
    checkShape({"sm_80", ElementType::F16, 64, 1, true, false},
               {1, 2, 2100, 60}, nullptr, config);
    checkShape({"sm_80", ElementType::F16, 128, 4, true, false, true},
               {1, 2, 70, 90}, nullptr, config);
    checkShape({"sm_90a", ElementType::BF16, 64, 4, true, true},
               {2, 1, 3, 130, 2}, nullptr, config);
  }
}

/// sm_90a's kernels with each block's softmax overlapped with the previous
/// block's P V (flash-tile-overlap-softmax, the pipeline's overlap-softmax
/// option): the same results for every head dim, causal (both KV loops
/// pipelined, the blocks handed between them) or not, MHA and GQA, with
/// the log-sum-exp, over one block (the loop's first and last block are
/// the same), two and several, a ragged last block, and over 3 stages.
TEST(GPUKernelTest, OverlappedSoftmaxMatches) {
  PipelineConfig config;
  config.overlapSoftmax = true;
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("d " + std::to_string(d) + (causal ? " causal" : ""));
      checkShape({"sm_90a", ElementType::F16, d, 1, causal, false},
                 {1, 1, 130, 260}, nullptr, config);
      checkShape({"sm_90a", ElementType::BF16, d, 4, causal, false, true},
                 {2, 1, 37, 53}, nullptr, config);
      checkShape({"sm_90a", ElementType::F16, d, 1, causal, false},
                 {1, 1, 70, 129}, nullptr, config);
    }
  // More queries than keys: the first 130 rows see no key under the
  // bottom-right mask, so the first CTA runs neither KV loop.
  checkShape({"sm_90a", ElementType::BF16, 128, 1, true, false},
             {1, 1, 200, 70}, nullptr, config);
  config.stages = 3;
  checkShape({"sm_90a", ElementType::F16, 128, 1, true, false},
             {1, 2, 200, 520}, nullptr, config);
}

/// sm_90a's output through shared memory and TMA stores: through Q's
/// buffer where O's tile has its shape, and through its first panels
/// where V's head dim is below Q's by whole panels (a flash_tile.view:
/// DeepSeek's 192 / 128 in the 128-byte swizzle's panels of 64 columns,
/// 96 / 64 in the 64-byte swizzle's of 32, 160 / 96 in those of 32,
/// 256 / 64 one panel), causal or not, MHA and GQA, with the log-sum-exp,
/// without warp specialisation, O's writes into Q's rows free of bank
/// conflicts; the other outputs keep their stores from registers (O wider
/// than Q, or not whole panels of it: 128 / 96).
TEST(GPUKernelTest, OutputStoresByTmaThroughQsBuffer) {
  struct Case {
    Config config;
    bool tmaStore;
  };
  const Case cases[] = {
      {{"sm_90a", ElementType::BF16, 128, 1, false, false}, true},
      {{"sm_90a", ElementType::BF16, 192, 1, true, false, false, 128}, true},
      {{"sm_90a", ElementType::F16, 192, 4, false, false, true, 128}, true},
      {{"sm_90a", ElementType::F16, 96, 2, true, false, false, 64}, true},
      {{"sm_90a", ElementType::BF16, 160, 1, false, false, true, 96}, true},
      {{"sm_90a", ElementType::F16, 256, 3, true, false, false, 64}, true},
      {{"sm_90a", ElementType::F16, 128, 1, false, false, false, 96}, false},
      {{"sm_90a", ElementType::BF16, 64, 1, true, false, false, 128}, false},
  };
  for (const Case &k : cases) {
    SCOPED_TRACE(nameOf(k.config));
    for (Shape shape : {Shape{2, 2, 37, 53}, Shape{1, 1, 130, 260}}) {
      flashc::runtime::SimulatorCounters counters;
      checkShape(k.config, shape, nullptr, PipelineConfig(), nullptr,
                 &counters);
      EXPECT_EQ(counters.tensorStores > 0, k.tmaStore)
          << counters.tensorStores << " TMA stores";
      // Their ld/st.shared are O's writes into Q's swizzled rows (the
      // copies are TMA's): without bank conflicts.
      if (k.tmaStore) {
        EXPECT_GT(counters.sharedRequests, 0u);
        EXPECT_EQ(counters.sharedExtraWavefronts, 0u)
            << "bank conflicts over " << counters.sharedRequests << " requests";
      }
    }
  }
  PipelineConfig config;
  config.warpSpecialize = false;
  flashc::runtime::SimulatorCounters counters;
  checkShape({"sm_90a", ElementType::BF16, 192, 1, true, false, false, 128},
             {1, 2, 130, 200}, nullptr, config, nullptr, &counters);
  EXPECT_GT(counters.tensorStores, 0u);
}

/// sm_90a's warp-specialised kernels without the ping-pong of their consumer
/// warpgroups (flash-tile-pingpong, the pipeline's pingpong option, on by
/// default and so in every other sm_90a test): the same results, and no
/// turns passed (checkShape asserts no bar.arrive ran); and the overlapped
/// softmax without them (with them, whose turns hold two multiplies
/// started back to back, OverlappedSoftmaxMatches runs it).
TEST(GPUKernelTest, WithoutPingPongMatches) {
  PipelineConfig config;
  config.pingpong = false;
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      SCOPED_TRACE("d " + std::to_string(d) + (causal ? " causal" : ""));
      checkShape({"sm_90a", ElementType::BF16, d, 4, causal, false, true},
                 {2, 1, 37, 140}, nullptr, config);
    }
  config.overlapSoftmax = true;
  checkShape({"sm_90a", ElementType::F16, 128, 1, true, false},
             {1, 2, 200, 300}, nullptr, config);
}

/// Kernels pipelined over 3 and 4 stages (flash-tile-pipeline, the pipeline's
/// stages option) give the same results: prefill with the blocks of a
/// causal kernel's two KV loops handed over between them and a ragged last
/// block; split decode, whose kv warps merge through the KV buffers, at 3
/// stages on sm_90a. Decode tiles whose stages do not fit the shared memory
/// get half the KV block, down to 16 keys and fewer kv warps (D = 256 on
/// sm_80: 64 keys over 4 kv warps at 2 stages, 32 over 2 at 3).
TEST(GPUKernelTest, EveryStageCountMatches) {
  for (int64_t stages : {3, 4}) {
    SCOPED_TRACE(stages);
    PipelineConfig config;
    config.stages = stages;
    checkShape({"sm_80", ElementType::F16, 64, 1, true, false},
               {2, 2, 300, 300}, nullptr, config);
    checkShape({"sm_80", ElementType::BF16, 128, 2, false, false},
               {1, 1, 70, 330}, nullptr, config);
  }
  PipelineConfig config;
  config.stages = 3;
  checkShape({"sm_90a", ElementType::F16, 64, 4, true, true},
             {2, 1, 3, 700, 2}, nullptr, config);
  checkShape({"sm_90a", ElementType::BF16, 128, 1, false, true, true},
             {1, 2, 1, 530}, nullptr, config);
  std::shared_ptr<const Kernel> kernel;
  checkShape({"sm_80", ElementType::F16, 256, 1, false, true}, {1, 2, 1, 200},
             &kernel, config);
  EXPECT_EQ(kernel->getMetadata().tiles.blockKV, 32);
  config.stages = 4;
  checkShape({"sm_80", ElementType::F16, 64, 4, true, true}, {2, 1, 3, 700},
             &kernel, config);
  EXPECT_EQ(kernel->getMetadata().tiles.blockKV, 128);
  // A KV block given that the stages do not fit is the tile's error.
  config.blockKV = 256;
  AttentionSpec spec = specOf({"sm_80", ElementType::F16, 128, 1, false, false},
                              {1, 1, 300, 300});
  auto refused = Compiler::global().compile(spec, "sm_80", config);
  ASSERT_FALSE(static_cast<bool>(refused));
  std::string message = llvm::toString(refused.takeError());
  EXPECT_NE(message.find("bytes of shared memory, the target has 166912 on "
                         "sm_80"),
            std::string::npos)
      << message;
}

/// Scores that grow along the keys, so that a row's maximum moves in every
/// KV block: by far more than 2^8 (growth 1: O is rescaled every block),
/// or by a little (growth 0.02: P grows past 1 while the maximum O is kept
/// against stays). Q's and K's elements are positive, K's row n scaled by
/// growth x (1 + n / 16). With the rescale threshold at its default (8)
/// and at 0 (rescale whenever the maximum grows), prefill, causal and
/// decode kernels match float64.
TEST(GPUKernelTest, RowMaximaThatGrowMatch) {
  for (int64_t threshold : {8, 0}) {
    for (double growth : {1.0, 0.02}) {
      SCOPED_TRACE("rescale-threshold " + std::to_string(threshold) +
                   ", growth " + std::to_string(growth));
      PipelineConfig config;
      config.rescaleThreshold = threshold;
      auto grow = [growth](flashc_test::AttentionBuffers &b) {
        for (int64_t i = 0; i < b.q.getNumElements(); ++i)
          b.q.set(i, std::fabs(b.q.get(i)));
        int64_t seqKV = b.k.getSizes()[2], d = b.k.getSizes()[3];
        for (int64_t i = 0; i < b.k.getNumElements(); ++i) {
          int64_t n = (i / d) % seqKV;
          b.k.set(i, std::fabs(b.k.get(i)) * growth * (1.0 + n / 16.0));
        }
      };
      checkShape({"sm_80", ElementType::F16, 64, 1, false, false},
                 {1, 2, 40, 300}, nullptr, config, grow);
      checkShape({"sm_80", ElementType::BF16, 128, 4, true, false, true},
                 {1, 1, 70, 260}, nullptr, config, grow);
      checkShape({"sm_90a", ElementType::F16, 256, 1, false, false},
                 {1, 1, 20, 100}, nullptr, config, grow);
      checkShape({"sm_80", ElementType::F16, 128, 4, false, true, true},
                 {1, 2, 1, 600, 2}, nullptr, config, grow);
    }
  }
}

/// A rescale threshold outside 0 to 15 is an error that says so.
TEST(GPUKernelTest, RescaleThresholdOutsideZeroToFifteenIsRefused) {
  AttentionSpec spec =
      specOf({"sm_80", ElementType::F16, 64, 1, false, false}, {1, 1, 64, 64});
  for (int64_t threshold : {-1, 16}) {
    PipelineConfig config;
    config.rescaleThreshold = threshold;
    auto kernel = Compiler::global().compile(spec, "sm_80", config);
    ASSERT_FALSE(static_cast<bool>(kernel));
    std::string message = llvm::toString(kernel.takeError());
    EXPECT_NE(message.find("rescale-threshold is 0 to 15 (log2 of how far P "
                           "may grow past 1 before O is rescaled), not " +
                           std::to_string(threshold)),
              std::string::npos)
        << message;
  }
}

/// A stage count outside 2 to 4 is an error that says so.
TEST(GPUKernelTest, StagesOutsideTwoToFourAreRefused) {
  AttentionSpec spec = specOf({"sm_80", ElementType::F16, 64, 1, false, false},
                              {1, 1, 64, 64});
  for (int64_t stages : {1, 5}) {
    PipelineConfig config;
    config.stages = stages;
    auto kernel = Compiler::global().compile(spec, "sm_80", config);
    ASSERT_FALSE(static_cast<bool>(kernel));
    std::string message = llvm::toString(kernel.takeError());
    EXPECT_NE(message.find("stages must be 2 to 4, got " +
                           std::to_string(stages)),
              std::string::npos)
        << message;
  }
}

/// One compiled kernel serves every batch, head count of its group size and
/// length: later calls find it in the cache.
TEST(GPUKernelTest, OneKernelServesEveryLength) {
  Config c{"sm_80", ElementType::F16, 64, 2, true, false};
  std::shared_ptr<const Kernel> first, again;
  checkShape(c, {1, 1, 40, 40}, &first);
  size_t compiled = Compiler::global().getCacheSize();
  for (Shape s : {Shape{3, 2, 17, 90}, Shape{1, 3, 129, 64},
                  Shape{2, 1, 64, 200}}) {
    checkShape(c, s, &again);
    EXPECT_EQ(again.get(), first.get());
  }
  EXPECT_EQ(Compiler::global().getCacheSize(), compiled);
}

/// Strides that do not fold batch and KV heads together ([B, N, H, D]
/// memory viewed as [B, H, N, D]) run as one launch per batch entry.
TEST(GPUKernelTest, TransposedLayoutsRunPerBatch) {
  AttentionSpec spec;
  spec.batch = 3;
  spec.heads = 4;
  spec.kvHeads = 2;
  spec.seqQ = 33;
  spec.seqKV = 47;
  spec.headDim = 64;
  spec.dtype = ElementType::F16;
  spec.mask = Mask::causal();
  auto kernel = Compiler::global().compile(spec, "sm_80");
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());

  unsigned seed = freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  // Dense [B, H, N, D] tensors for the reference, and [B, N, H, D] copies.
  auto make = [&](int64_t h, int64_t n) {
    HostTensor t(spec.dtype, {spec.batch, h, n, spec.headDim});
    for (int64_t i = 0; i < t.getNumElements(); ++i)
      t.set(i, normal(rng));
    return t;
  };
  HostTensor q = make(spec.heads, spec.seqQ);
  HostTensor k = make(spec.kvHeads, spec.seqKV);
  HostTensor v = make(spec.kvHeads, spec.seqKV);
  auto view = [&](HostTensor &u, int64_t h, int64_t n) {
    TensorRef r;
    r.data = u.data();
    r.dtype = spec.dtype;
    r.sizes = {spec.batch, h, n, spec.headDim};
    r.strides = {n * h * spec.headDim, spec.headDim, h * spec.headDim, 1};
    return r;
  };
  HostTensor qt = flashc_test::swapMiddleDims(q),
             kt = flashc_test::swapMiddleDims(k),
             vt = flashc_test::swapMiddleDims(v);
  HostTensor outT(spec.dtype, {spec.batch, spec.seqQ, spec.heads, 64});
  RunOptions options;
  options.simulate = true;
  // [B, H, N, D] views of [B, N, H, D] buffers.
  options.layout = flashc::Layout::Strided;
  llvm::Error err = (*kernel)->run(
      view(qt, spec.heads, spec.seqQ), view(kt, spec.kvHeads, spec.seqKV),
      view(vt, spec.kvHeads, spec.seqKV), view(outT, spec.heads, spec.seqQ),
      nullptr, options);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  std::vector<double> expected = referenceAttention(spec, q, k, v);
  double worst = 0;
  for (int64_t b = 0; b < spec.batch; ++b)
    for (int64_t h = 0; h < spec.heads; ++h)
      for (int64_t n = 0; n < spec.seqQ; ++n)
        for (int64_t d = 0; d < 64; ++d) {
          double got = outT.get(((b * spec.seqQ + n) * spec.heads + h) * 64 + d);
          double want = expected[((b * spec.heads + h) * spec.seqQ + n) * 64 + d];
          worst = std::max(worst, std::isfinite(got) ? std::fabs(got - want)
                                                     : INFINITY);
        }
  EXPECT_LE(worst, getOutputTolerance(spec.dtype));
}

/// A GPU kernel reads the memory of the device it runs on.
TEST(GPUKernelTest, MemorySpaceMismatchIsAnError) {
  AttentionSpec spec;
  spec.heads = 2;
  spec.seqQ = spec.seqKV = 32;
  spec.headDim = 64;
  spec.dtype = ElementType::F16;
  auto kernel = Compiler::global().compile(spec, "sm_80");
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  HostTensor q(ElementType::F16, {1, 2, 32, 64}), k(ElementType::F16, {1, 2, 32, 64}),
      v(ElementType::F16, {1, 2, 32, 64}), out(ElementType::F16, {1, 2, 32, 64});
  TensorRef deviceQ = q.ref();
  deviceQ.onDevice = true;
  RunOptions options;
  options.simulate = true;
  llvm::Error err =
      (*kernel)->run(deviceQ, k.ref(), v.ref(), out.ref(), nullptr, options);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("query is in device memory"),
            std::string::npos);
  // Without --simulate, this machine has no CUDA driver: a clear error.
  err = (*kernel)->run(deviceQ, k.ref(), v.ref(), out.ref(), nullptr, {});
  if (err) {
    EXPECT_NE(llvm::toString(std::move(err)).find("simulate"),
              std::string::npos);
  }
}

/// A device that records the grid of each launch and runs it in the
/// simulator.
class RecordingSimulator : public flashc::runtime::Device {
public:
  explicit RecordingSimulator(const std::string &chip)
      : sim(flashc::runtime::getSimulatorDevice(chip)) {}
  std::string describe() const override { return sim->describe(); }
  bool isSimulator() const override { return true; }
  std::string getChip() const override { return sim->getChip(); }
  int64_t getNumSMs() const override { return sim->getNumSMs(); }
  flashc::Result<void *> allocate(uint64_t bytes, void *stream) override {
    return sim->allocate(bytes, stream);
  }
  flashc::Status release(void *p, void *stream) override {
    return sim->release(p, stream);
  }
  flashc::Status launch(const flashc::runtime::KernelVariant &variant,
                        const flashc::runtime::KernelEntry &kernel,
                        uint64_t grid,
                        const std::vector<flashc::runtime::LaunchArg> &args,
                        void *stream) override {
    launches.emplace_back(kernel.name, grid);
    return sim->launch(variant, kernel, grid, args, stream);
  }
  flashc::Status copyToDevice(void *dst, const void *src, uint64_t bytes,
                              void *stream) override {
    return sim->copyToDevice(dst, src, bytes, stream);
  }
  flashc::Status copyToHost(void *dst, const void *src, uint64_t bytes,
                            void *stream) override {
    return sim->copyToHost(dst, src, bytes, stream);
  }
  flashc::Status synchronize(void *stream) override {
    return sim->synchronize(stream);
  }

  std::shared_ptr<flashc::runtime::Device> sim;
  std::vector<std::pair<std::string, uint64_t>> launches;
};

/// Tensors whose addresses or row strides are not multiples of 16 bytes
/// (an odd element offset into a buffer, rows padded by 2 or 4 elements,
/// or 1) run on the kernel built with their alignment: on sm_90a no TMA
/// (its tensor maps need 16 bytes) and cp.async of 8 or 4 bytes, or
/// element by element; the same on sm_80 for its 16-byte cp.async. The
/// kernel's fallbacks say which variant ran and why; the results match
/// float64 for prefill (causal, GQA) and split decode.
TEST(GPUKernelTest, UnalignedTensorsRunOnAFallback) {
  struct Case {
    const char *target;
    bool decode;
    int64_t pad, offset; // row padding and start offset, in elements
    int64_t alignment;   // what the call then has
  };
  const Case cases[] = {{"sm_90a", false, 0, 0, 16}, // no fallback
                        {"sm_90a", false, 4, 0, 8},
                        {"sm_90a", false, 2, 0, 4},
                        {"sm_90a", false, 0, 1, 2},
                        {"sm_90a", true, 2, 0, 4},
                        {"sm_80", false, 0, 1, 2},
                        {"sm_80", true, 4, 4, 8},
                        // Decode element by element: blocks of 16 keys a
                        // kv warp.
                        {"sm_90a", true, 0, 1, 2},
                        {"sm_80", true, 2, 1, 2}};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.target) + (c.decode ? " decode" : " prefill") +
                 ", rows padded by " + std::to_string(c.pad) + ", offset " +
                 std::to_string(c.offset));
    AttentionSpec spec;
    spec.batch = 2;
    spec.heads = 4;
    spec.kvHeads = 2;
    spec.seqQ = c.decode ? 3 : 77;
    spec.seqKV = 150;
    spec.headDim = 64;
    spec.dtype = ElementType::BF16;
    spec.mask = Mask::causal();
    auto kernel = Compiler::global().compile(spec, c.target);
    ASSERT_TRUE(static_cast<bool>(kernel))
        << llvm::toString(kernel.takeError());
    EXPECT_EQ((*kernel)->getMetadata().gpu->alignment, 16);
    unsigned seed = freshSeed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal;
    int64_t D = spec.headDim, pitch = D + c.pad;
    // Dense [B, H, N, D] tensors for the reference, and copies whose rows
    // are `pitch` elements apart from `offset` elements into a buffer.
    auto make = [&](int64_t h, int64_t n) {
      HostTensor t(spec.dtype, {spec.batch, h, n, D});
      for (int64_t i = 0; i < t.getNumElements(); ++i)
        t.set(i, normal(rng));
      return t;
    };
    auto place = [&](const HostTensor &t, HostTensor &buffer, int64_t h,
                     int64_t n) {
      for (int64_t r = 0; r < spec.batch * h * n; ++r)
        for (int64_t d = 0; d < D; ++d)
          buffer.set(c.offset + r * pitch + d, t.get(r * D + d));
      TensorRef ref;
      ref.data = static_cast<char *>(buffer.data()) + 2 * c.offset;
      ref.dtype = spec.dtype;
      ref.sizes = {spec.batch, h, n, D};
      ref.strides = {h * n * pitch, n * pitch, pitch, 1};
      return ref;
    };
    auto bufferFor = [&](int64_t h, int64_t n) {
      return HostTensor(spec.dtype, {c.offset + spec.batch * h * n * pitch});
    };
    HostTensor q = make(spec.heads, spec.seqQ);
    HostTensor k = make(spec.kvHeads, spec.seqKV);
    HostTensor v = make(spec.kvHeads, spec.seqKV);
    HostTensor qb = bufferFor(spec.heads, spec.seqQ),
               kb = bufferFor(spec.kvHeads, spec.seqKV),
               vb = bufferFor(spec.kvHeads, spec.seqKV),
               ob = bufferFor(spec.heads, spec.seqQ);
    HostTensor zeros(spec.dtype, {spec.batch, spec.heads, spec.seqQ, D});
    TensorRef qr = place(q, qb, spec.heads, spec.seqQ),
              kr = place(k, kb, spec.kvHeads, spec.seqKV),
              vr = place(v, vb, spec.kvHeads, spec.seqKV),
              outr = place(zeros, ob, spec.heads, spec.seqQ);
    auto device = flashc::runtime::getSimulatorDevice(c.target);
    RunOptions options;
    options.device = device;
    options.layout = flashc::Layout::Strided;
    llvm::Error err = (*kernel)->run(qr, kr, vr, outr, nullptr, options);
    ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));

    // The kernel (cached, shared by the cases of its target and variant)
    // records one fallback per alignment met; 16-byte aligned tensors run
    // its own variant (by TMA on sm_90a).
    std::vector<Kernel::Fallback> fallbacks = (*kernel)->getFallbacks();
    auto counters = flashc::runtime::getSimulatorCounters(*device);
    ASSERT_TRUE(counters.ok());
    if (c.alignment == 16) {
      EXPECT_TRUE(fallbacks.empty());
      EXPECT_GT(counters->tensorLoads, 0u);
      continue;
    }
    auto fallback = llvm::find_if(fallbacks, [&](const Kernel::Fallback &f) {
      return f.alignment == c.alignment;
    });
    ASSERT_NE(fallback, fallbacks.end());
    EXPECT_EQ(fallback->variant->alignment, c.alignment);
    EXPECT_EQ(fallback->variant->id, (*kernel)->getMetadata().gpu->id + "-a" +
                                         std::to_string(c.alignment));
    EXPECT_NE(
        fallback->reason.find(std::to_string(c.alignment) + "-byte aligned"),
        std::string::npos)
        << fallback->reason;
    EXPECT_EQ(counters->tensorLoads, 0u) << "no TMA below 16 bytes";
    // A decode kernel that copies element by element takes 16 keys a kv
    // warp (4 of them), a quarter of the 16-byte kernel's block at D = 64.
    if (c.decode && c.alignment == 2) {
      EXPECT_EQ(fallback->variant->blockKV, 64);
      EXPECT_EQ((*kernel)->getMetadata().gpu->blockKV, 256);
    }
    if (std::string(c.target) == "sm_90a" && !c.decode) {
      EXPECT_GT(counters->wgmmaInstructions, 0u);
    }

    std::vector<double> expected = referenceAttention(spec, q, k, v);
    double worst = 0;
    for (int64_t r = 0; r < spec.batch * spec.heads * spec.seqQ; ++r)
      for (int64_t d = 0; d < D; ++d) {
        double got = ob.get(c.offset + r * pitch + d);
        double want = expected[r * D + d];
        worst = std::max(worst,
                         std::isfinite(got) ? std::fabs(got - want) : INFINITY);
      }
    EXPECT_LE(worst, getOutputTolerance(spec.dtype));
    // The padding between rows is left alone.
    for (int64_t r = 0; r < spec.batch * spec.heads * spec.seqQ; ++r)
      for (int64_t d = D; d < pitch; ++d)
        ASSERT_EQ(ob.get(c.offset + r * pitch + d), 0.0);
  }
}

/// The stride of a dimension of one element (a batch of one, one KV head)
/// is never used: an odd one, as DLPack and as_strided views may give,
/// neither makes the call fall back nor keeps its tensor maps from being
/// built, nor makes the LSE look not contiguous; sm_90a runs its TMA
/// kernel and matches float64.
TEST(GPUKernelTest, StridesOfUnitDimensionsAreIgnored) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 4;
  spec.kvHeads = 1;
  spec.seqQ = 50;
  spec.seqKV = 70;
  spec.headDim = 64;
  spec.dtype = ElementType::F16;
  spec.withLse = true;
  auto kernel = Compiler::global().compile(spec, "sm_90a");
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  unsigned seed = freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  flashc_test::AttentionBuffers b(spec, rng);
  auto odd = [](TensorRef r, std::initializer_list<int> dims) {
    for (int d : dims)
      r.strides[d] = 12345;
    return r;
  };
  auto device = flashc::runtime::getSimulatorDevice("sm_90a");
  RunOptions options;
  options.device = device;
  options.layout = flashc::Layout::Strided;
  TensorRef lse = odd(b.lse.ref(), {0});
  llvm::Error err = (*kernel)->run(odd(b.q.ref(), {0}), odd(b.k.ref(), {0, 1}),
                                   odd(b.v.ref(), {0, 1}),
                                   odd(b.out.ref(), {0}), &lse, options);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  EXPECT_TRUE((*kernel)->getFallbacks().empty());
  auto counters = flashc::runtime::getSimulatorCounters(*device);
  ASSERT_TRUE(counters.ok());
  EXPECT_GT(counters->tensorLoads, 0u);
  flashc_test::expectMatchesReference(spec, b, 1.0, /*lseAbs=*/1e-3,
                                      /*lseRel=*/1e-3);
}

/// The runtime refuses tensors less aligned than the variant it is handed
/// assumes, naming the tensor, what it lacks and the option that builds a
/// variant taking it; a bundle holding both variants finds the fallback
/// for such a call.
TEST(GPUKernelTest, RuntimeRefusesTensorsLessAlignedThanItsVariant) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 1;
  spec.seqQ = 64;
  spec.seqKV = 64;
  spec.headDim = 64;
  spec.dtype = ElementType::F16;
  PipelineConfig config;
  config.target = "sm_90a";
  auto aligned = Compiler::compileGPUVariant(spec, config);
  ASSERT_TRUE(static_cast<bool>(aligned))
      << llvm::toString(aligned.takeError());
  config.alignment = 4;
  auto fallback = Compiler::compileGPUVariant(spec, config);
  ASSERT_TRUE(static_cast<bool>(fallback))
      << llvm::toString(fallback.takeError());
  EXPECT_EQ(aligned->alignment, 16);
  EXPECT_EQ(fallback->alignment, 4);
  EXPECT_EQ(fallback->id, aligned->id + "-a4");
  EXPECT_NE(fallback->ptx.find("alignment=4"), std::string::npos)
      << "the descriptor records it";

  HostTensor q(spec.dtype, {1, 1, 64, 66}), k(spec.dtype, {1, 1, 64, 64}),
      v(spec.dtype, {1, 1, 64, 64}), out(spec.dtype, {1, 1, 64, 64});
  flashc::runtime::AttentionCall call;
  call.q = flashc::runtime::TensorView::contiguous(q.data(), spec.dtype,
                                                   {1, 1, 64, 64});
  call.q.strides[0] = call.q.strides[1] = 64 * 66;
  call.q.strides[2] = 66; // 132-byte rows: 4-byte aligned
  call.k = flashc::runtime::TensorView::contiguous(k.data(), spec.dtype,
                                                   {1, 1, 64, 64});
  call.v = flashc::runtime::TensorView::contiguous(v.data(), spec.dtype,
                                                   {1, 1, 64, 64});
  call.out = flashc::runtime::TensorView::contiguous(out.data(), spec.dtype,
                                                     {1, 1, 64, 64});
  EXPECT_EQ(flashc::runtime::getCallAlignment(call), 4);
  auto device = flashc::runtime::getSimulatorDevice("sm_90a");
  flashc::Status s = flashc::runtime::launchAttention(*device, *aligned, call);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), flashc::ErrorCode::InvalidArgument);
  EXPECT_NE(s.message().find("query has strides"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--alignment 4"), std::string::npos)
      << s.message();
  // An address that is not even the element's.
  flashc::runtime::AttentionCall odd = call;
  odd.k.data = static_cast<char *>(k.data()) + 1;
  s = flashc::runtime::launchAttention(*device, *fallback, odd);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("key is at an address that is not a multiple "
                             "of its 2-byte elements"),
            std::string::npos)
      << s.message();

  flashc::runtime::Bundle bundle;
  bundle.add(*fallback);
  bundle.add(*aligned);
  flashc::runtime::AttentionQuery query = spec.gpuQuery("sm_90a");
  EXPECT_EQ(bundle.find(query)->alignment, 16);
  EXPECT_EQ(bundle.find(query, 8)->alignment, 4);
  EXPECT_EQ(bundle.find(query, 2)->alignment, 4)
      << "none fits: the least demanding";
  const flashc::runtime::KernelVariant *found =
      bundle.find(query, flashc::runtime::getCallAlignment(call));
  ASSERT_TRUE(found);
  EXPECT_TRUE(flashc::runtime::launchAttention(*device, *found, call).ok());
}

/// The C API runs the first of the bundle's kernels (sm_90a, then sm_80 on
/// the simulator) that the call's alignment fits: with an sm_90a variant
/// for 16 bytes only and an sm_80 one for 4, rows of 66 elements run on
/// the sm_80 one and match float64; the same bundle without it refuses
/// the call, naming the alignment.
TEST(GPUKernelTest, CAPIRunsTheFirstKernelTheAlignmentFits) {
  AttentionSpec spec;
  spec.heads = spec.kvHeads = 2;
  spec.seqQ = spec.seqKV = 40;
  spec.headDim = 64;
  spec.dtype = ElementType::F16;
  PipelineConfig config;
  config.target = "sm_90a";
  auto sm90 = Compiler::compileGPUVariant(spec, config);
  config.target = "sm_80";
  config.alignment = 4;
  auto sm80 = Compiler::compileGPUVariant(spec, config);
  ASSERT_TRUE(sm90 && sm80);
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("flashc-capi", dir));
  auto save = [&](bool withFallback) {
    flashc::runtime::Bundle bundle;
    bundle.add(*sm90);
    if (withFallback)
      bundle.add(*sm80);
    std::string path = (dir + (withFallback ? "/both" : "/one")).str();
    EXPECT_FALSE(bundle.save(path));
    return path;
  };
  std::string both = save(true), one = save(false);

  unsigned seed = freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  HostTensor q(spec.dtype, {1, 2, 40, 64}), k(spec.dtype, {1, 2, 40, 64}),
      v(spec.dtype, {1, 2, 40, 64});
  for (HostTensor *t : {&q, &k, &v})
    for (int64_t i = 0; i < t->getNumElements(); ++i)
      t->set(i, normal(rng));
  // Q in rows of 66 elements (132 bytes: 4-byte aligned).
  HostTensor qPadded(spec.dtype, {1, 2, 40, 66}),
      out(spec.dtype, {1, 2, 40, 64});
  for (int64_t r = 0; r < 80; ++r)
    for (int64_t d = 0; d < 64; ++d)
      qPadded.set(r * 66 + d, q.get(r * 64 + d));
  auto tensor = [](HostTensor &t, std::initializer_list<int64_t> strides) {
    flashc_tensor x{};
    x.data = t.data();
    x.dtype = FLASHC_F16;
    x.rank = 4;
    int64_t sizes[4] = {1, 2, 40, 64};
    int i = 0;
    for (int64_t stride : strides) {
      x.sizes[i] = sizes[i];
      x.strides[i++] = stride;
    }
    return x;
  };
  flashc_tensor tq = tensor(qPadded, {2 * 40 * 66, 40 * 66, 66, 1}),
                tk = tensor(k, {2 * 40 * 64, 40 * 64, 64, 1}),
                tv = tensor(v, {2 * 40 * 64, 40 * 64, 64, 1}),
                to = tensor(out, {2 * 40 * 64, 40 * 64, 64, 1});
  for (const std::string &path : {both, one}) {
    flashc_bundle *bundle = nullptr;
    ASSERT_EQ(flashc_bundle_open(path.c_str(), &bundle), FLASHC_OK)
        << flashc_last_error();
    flashc_status status = flashc_attention(
        bundle, FLASHC_DEVICE_SIMULATOR, FLASHC_LAYOUT_BHND, &tq, &tk, &tv, &to,
        nullptr, FLASHC_MASK_NONE, 0, nullptr);
    flashc_bundle_close(bundle);
    if (path == one) {
      EXPECT_EQ(status, FLASHC_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(flashc_last_error())
                    .find("kernel sm_90a-f16-g1-d64-prefill needs 16 (a "
                          "variant built for 4 bytes takes it"),
                std::string::npos)
          << flashc_last_error();
      continue;
    }
    ASSERT_EQ(status, FLASHC_OK) << flashc_last_error();
    std::vector<double> expected = referenceAttention(spec, q, k, v);
    double worst = 0;
    for (int64_t i = 0; i < out.getNumElements(); ++i)
      worst = std::max(worst, std::isfinite(out.get(i))
                                  ? std::fabs(out.get(i) - expected[i])
                                  : INFINITY);
    EXPECT_LE(worst, getOutputTolerance(spec.dtype));
  }
  llvm::sys::fs::remove_directories(dir);
}

/// A fixed split count in the configuration is a launch argument of the
/// one decode kernel (as on the CPU): the forward grid has that many
/// splits, the combine merges them, and the result matches the reference.
/// With one split the forward kernel writes the output itself and no
/// combine runs.
TEST(GPUKernelTest, FixedSplitCountIsPassedAtLaunch) {
  AttentionSpec spec;
  spec.batch = 2;
  spec.heads = 8;
  spec.kvHeads = 2;
  spec.seqQ = 1;
  spec.seqKV = 1000; // 4 KV blocks of 256 keys: room for 3 splits
  spec.headDim = 64;
  spec.dtype = ElementType::F16;
  spec.mask = Mask::causal();
  uint64_t forwardGrid[2] = {0, 0};
  for (int64_t splits : {1, 3}) {
    PipelineConfig config;
    config.splits = splits;
    auto kernel = Compiler::global().compile(spec, "sm_80", config);
    ASSERT_TRUE(static_cast<bool>(kernel))
        << llvm::toString(kernel.takeError());
    EXPECT_EQ((*kernel)->getMetadata().splits, splits);
    unsigned seed = freshSeed();
    SCOPED_TRACE("splits " + std::to_string(splits) + ", seed " +
                 std::to_string(seed));
    std::mt19937 rng(seed);
    flashc_test::AttentionBuffers b(spec, rng);
    auto device = std::make_shared<RecordingSimulator>("sm_80");
    RunOptions options;
    options.device = device;
    llvm::Error err = (*kernel)->run(b.q.ref(), b.k.ref(), b.v.ref(),
                                     b.out.ref(), nullptr, options);
    ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
    flashc_test::expectMatchesReference(spec, b);
    ASSERT_EQ(device->launches.size(), splits == 1 ? 1u : 2u)
        << "forward, and combine when split";
    EXPECT_EQ(device->launches[0].first, "flash_attention_fwd");
    if (splits > 1) {
      EXPECT_EQ(device->launches[1].first, "flash_attention_combine");
    }
    forwardGrid[splits == 3] = device->launches[0].second;
  }
  EXPECT_EQ(forwardGrid[1], 3 * forwardGrid[0]);
}

/// An environment variable set for a scope (the fake driver's switches).
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char *n, const char *value) : name(n) { setenv(n, value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;
};

/// A compiled kernel on the CUDA device with device pointers, under the
/// fake driver (ctest flashc-compiler-fake-cuda; FakeCudaDriver.cpp): the
/// JIT's kernel through the runtime's module loading and launches, with
/// the tensors, the output and the LSE in device memory.
TEST(GPUKernelTest, RunsOnTheCudaDriverWithDevicePointers) {
  if (!std::getenv("FLASHC_TEST_CUDA"))
    GTEST_SKIP() << "runs under the fake CUDA driver only";
  auto cuda = flashc::runtime::getCudaDevice(0);
  ASSERT_TRUE(cuda.ok()) << cuda.message();
  ASSERT_NE((*cuda)->describe().find("fake CUDA driver"), std::string::npos)
      << (*cuda)->describe();
  // Prefill, split decode, split decode on a driver that refuses the
  // kernels' early start (they then launch as any other), and with the
  // runtime told not to ask for it (FLASHC_CUDA_PROGRAMMATIC_LAUNCH=0);
  // and a prefill of V's head dim below Q's (on sm_90a, O stored by TMA
  // through the first panels of Q's buffer, its tensor map of Dv columns
  // built by the driver).
  for (int mode : {0, 1, 2, 3, 4}) {
    bool decode = mode > 0 && mode < 4, refused = mode == 2, off = mode == 3,
         narrowV = mode == 4;
    SCOPED_TRACE(refused   ? "early start refused"
                 : off     ? "early start off"
                 : decode  ? "decode"
                 : narrowV ? "Dv < D"
                           : "");
    // Unset again however the iteration ends.
    std::optional<ScopedEnv> refusing, switchedOff;
    if (refused)
      refusing.emplace("FLASHC_FAKE_CUDA_NO_PROGRAMMATIC_LAUNCH", "1");
    if (off)
      switchedOff.emplace("FLASHC_CUDA_PROGRAMMATIC_LAUNCH", "0");
    AttentionSpec spec;
    spec.batch = 2;
    spec.heads = 8;
    spec.kvHeads = 2;
    spec.seqQ = decode ? 1 : 45;
    spec.seqKV = decode ? 700 : 77;
    spec.headDim = narrowV ? 192 : 128;
    spec.headDimV = narrowV ? 128 : 0;
    spec.dtype = ElementType::BF16;
    spec.mask = Mask::causal();
    spec.withLse = true;
    auto kernel = Compiler::global().compile(spec, (*cuda)->getChip());
    ASSERT_TRUE(static_cast<bool>(kernel))
        << llvm::toString(kernel.takeError());
    unsigned seed = freshSeed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    flashc_test::AttentionBuffers b(spec, rng);
    // Device copies of every tensor.
    std::vector<std::pair<HostTensor *, void *>> copies;
    auto toDevice = [&](HostTensor &t) {
      TensorRef r = t.ref();
      uint64_t bytes =
          t.getNumElements() * (t.getDType() == ElementType::F32 ? 4 : 2);
      auto mem = (*cuda)->allocate(bytes, nullptr);
      EXPECT_TRUE(mem.ok()) << mem.message();
      if (!mem.ok())
        return r;
      EXPECT_FALSE((*cuda)->copyToDevice(*mem, t.data(), bytes, nullptr));
      copies.emplace_back(&t, *mem);
      r.data = *mem;
      r.onDevice = true;
      return r;
    };
    TensorRef q = toDevice(b.q), k = toDevice(b.k), v = toDevice(b.v),
              out = toDevice(b.out), lse = toDevice(b.lse);
    ASSERT_EQ(copies.size(), 5u);
    RunOptions options;
    options.splits = decode ? 3 : 0;
    // The fake driver's count of launches and of programmatic ones.
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(driver, nullptr);
    using StatsFn = void(unsigned long long *, unsigned long long *);
    auto *stats =
        reinterpret_cast<StatsFn *>(dlsym(driver, "flashcFakeCudaLaunchStats"));
    ASSERT_NE(stats, nullptr);
    unsigned long long launches0, programmatic0, launches, programmatic;
    stats(&launches0, &programmatic0);
    llvm::Error err = (*kernel)->run(q, k, v, out, &lse, options);
    ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
    stats(&launches, &programmatic);
    dlclose(driver);
    // On sm_90a every kernel is a programmatic dependent launch (each
    // waits for the kernel before it itself): the forward kernel, and a
    // split decode's combine; sm_80 has none, and a driver that refuses
    // them launches both as any other.
    EXPECT_EQ(launches - launches0, decode ? 2u : 1u);
    EXPECT_EQ(programmatic - programmatic0,
              refused || off || (*cuda)->getChip() != "sm_90a" ? 0u
              : decode                                         ? 2u
                                                               : 1u);
    for (auto &[host, mem] : copies) {
      if (host == &b.out || host == &b.lse) {
        EXPECT_FALSE((*cuda)->copyToHost(
            host->data(), mem,
            host->getNumElements() * (host == &b.lse ? 4 : 2), nullptr));
      }
      EXPECT_FALSE((*cuda)->release(mem, nullptr));
    }
    EXPECT_FALSE((*cuda)->synchronize(nullptr));
    flashc_test::expectMatchesReference(spec, b);
  }
}

/// A driver that cannot build a tensor map: a TMA kernel's run fails
/// before it launches, naming the tensor, the driver's reason and the
/// variants that copy without one (FLASHC_FAKE_CUDA_NO_TENSOR_MAPS).
TEST(GPUKernelTest, TensorMapRefusedByTheCudaDriver) {
  if (!std::getenv("FLASHC_TEST_CUDA"))
    GTEST_SKIP() << "runs under the fake CUDA driver only";
  auto cuda = flashc::runtime::getCudaDevice(0);
  ASSERT_TRUE(cuda.ok()) << cuda.message();
  AttentionSpec spec;
  spec.heads = 2;
  spec.seqQ = 64;
  spec.seqKV = 64;
  spec.headDim = 64;
  spec.dtype = ElementType::F16;
  auto kernel = Compiler::global().compile(spec, (*cuda)->getChip());
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());
  bool tma = false;
  for (const auto &p : (*kernel)->getMetadata().gpu->parameters)
    tma |= p.isTensorMap();
  // sm_90a's prefill copies by TMA; sm_80 has none to refuse.
  EXPECT_EQ(tma, (*cuda)->getChip() == "sm_90a");
  if (!tma)
    return;
  std::mt19937 rng(freshSeed());
  flashc_test::AttentionBuffers b(spec, rng);
  std::vector<void *> memory;
  auto toDevice = [&](HostTensor &t) {
    TensorRef r = t.ref();
    auto mem = (*cuda)->allocate(t.getNumElements() * 2, nullptr);
    EXPECT_TRUE(mem.ok()) << mem.message();
    if (mem.ok()) {
      memory.push_back(*mem);
      r.data = *mem;
      r.onDevice = true;
    }
    return r;
  };
  TensorRef q = toDevice(b.q), k = toDevice(b.k), v = toDevice(b.v),
            out = toDevice(b.out);
  ASSERT_EQ(memory.size(), 4u);
  llvm::Error err = [&] {
    ScopedEnv refusing("FLASHC_FAKE_CUDA_NO_TENSOR_MAPS", "1");
    RunOptions options;
    return (*kernel)->run(q, k, v, out, nullptr, options);
  }();
  ASSERT_TRUE(static_cast<bool>(err)) << "a run without its tensor maps";
  std::string message = llvm::toString(std::move(err));
  EXPECT_NE(message.find("copies by TMA: the tensor map of query could not "
                         "be built (cuTensorMapEncodeTiled refused"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("a variant built with --tma off or a lower "
                         "--alignment copies without one"),
            std::string::npos)
      << message;
  for (void *mem : memory)
    EXPECT_FALSE((*cuda)->release(mem, nullptr));
}

/// Every instruction of every shipped kernel's PTX is one the simulator
/// implements (an unimplemented one would be a parse error at launch).
TEST(GPUKernelTest, SimulatorImplementsEveryShippedOpcode) {
  std::set<std::string> all;
  for (const Config &c : shippedConfigs()) {
    if (std::string(c.target) != "sm_80" && c.headDim != 128)
      continue; // the PTX differs between targets only in its header
    AttentionSpec spec = specOf(c, c.decode ? Shape{1, 1, 1, 64}
                                            : Shape{1, 1, 64, 64});
    auto kernel = Compiler::global().compile(spec, c.target);
    ASSERT_TRUE(static_cast<bool>(kernel))
        << llvm::toString(kernel.takeError());
    auto ops = flashc::sim::listOpcodes((*kernel)->getMetadata().gpu->ptx);
    ASSERT_TRUE(static_cast<bool>(ops)) << ops.message();
    all.insert(ops->begin(), ops->end());
  }
  EXPECT_GT(all.size(), 20u);
  for (const std::string &op : all)
    EXPECT_TRUE(flashc::sim::isSupportedOpcode(op)) << op;
}

} // namespace
