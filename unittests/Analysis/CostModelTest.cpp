//===- CostModelTest.cpp - Tests of the attention cost model --------------===//
//
// Checks the cost model against the worked numbers of the FlashAttention
// seed: the HBM traffic of standard attention and of the algorithm-1 loop
// order, the causal block fraction 1/2 + 1/(2T), the CTA x wave model of
// flash-decoding (exercises 8 and 9, section 6.4), and the JSON keys of the
// report.
//
//===----------------------------------------------------------------------===//

#include "flashc/Analysis/CostModel.h"
#include "flashc/Analysis/AttentionSchedule.h"
#include "flashc/Core/GPUSchedule.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <random>
#include <string>

using namespace mlir;
using namespace mlir::flash;

namespace {

/// One head, N = 4096, d = 64, f16: the seed's worked example.
AttentionProblem seedShape() {
  AttentionProblem s;
  s.seqQ = s.seqKV = 4096;
  s.headDim = s.headDimV = 64;
  s.dtype = flashc::ElementType::F16;
  return s;
}

/// CodeLlama-34B on 4 GPUs, as in the flash-decoding blog: 16 query heads,
/// 2 kv heads, d = 128, one new query, f16.
AttentionProblem decodeShape(int64_t batch, int64_t keys) {
  AttentionProblem s;
  s.batch = batch;
  s.heads = 16;
  s.kvHeads = 2;
  s.seqQ = 1;
  s.seqKV = keys;
  s.headDim = s.headDimV = 128;
  s.dtype = flashc::ElementType::F16;
  return s;
}

TargetInfo getTarget(llvm::StringRef name) {
  llvm::Expected<TargetInfo> t = TargetInfo::get(name);
  EXPECT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  return *t;
}

/// Unwraps `e`, failing the test with its message on an error.
template <typename T> T unwrap(llvm::Expected<T> e) {
  if (!e) {
    ADD_FAILURE() << llvm::toString(e.takeError());
    return T();
  }
  return std::move(*e);
}

TEST(CostModelTest, StandardTrafficIsFourNdPlusFourNSquared) {
  HbmTraffic t = getStandardTraffic(seedShape());
  EXPECT_EQ(t.total(), 68157440); // 4 N d + 4 N^2
  EXPECT_EQ(t.reads, 2 * 4096 * 64 + 2 * 4096 * 4096 + 4096 * 64);
  EXPECT_EQ(t.writes, 2 * 4096 * 4096 + 4096 * 64);

  for (int64_t n : {1, 7, 128, 1000}) {
    for (int64_t d : {16, 64, 128}) {
      AttentionProblem s;
      s.seqQ = s.seqKV = n;
      s.headDim = s.headDimV = d;
      EXPECT_EQ(getStandardTraffic(s).total(), 4 * n * d + 4 * n * n)
          << "N=" << n << " d=" << d;
    }
  }

  // Scaled by B * Hq, with K and V charged per query head.
  AttentionProblem gqa = seedShape();
  gqa.batch = 2;
  gqa.heads = 8;
  gqa.kvHeads = 2;
  EXPECT_EQ(getStandardTraffic(gqa).total(), 16 * 68157440);
}

TEST(CostModelTest, Algorithm1WorkedExample) {
  // M = 51,200 elements gives Bc = ceil(M / 4d) = 200, Br = 64, Tc = 21.
  AttentionProblem s = seedShape();
  HbmTraffic t = getLoopOrderTraffic(s, LoopOrder::Algorithm1, 64, 200);
  EXPECT_EQ(t.total(), 17653760);
  // K, V once and 21 reads of Q, O, l, m; 21 writes of O, l, m and the
  // initial one.
  EXPECT_EQ(t.reads, 524288 + 21 * 532480);
  EXPECT_EQ(t.writes, 21 * 270336 + 270336);

  // The same through the target: 102400 bytes of f16 on sm_80.
  TargetInfo target = getTarget("sm_80");
  target.sramBytes = 102400;
  EXPECT_EQ(getSramElements(target, s), 51200);
  TileSizes tiles = chooseTileSizes(target, s, LoopOrder::Algorithm1);
  EXPECT_EQ(tiles.blockQ, 64);
  EXPECT_EQ(tiles.blockKV, 200);

  CostOptions options;
  options.order = LoopOrder::Algorithm1;
  CostReport r = unwrap(computeCostReport(target, s, options));
  EXPECT_EQ(r.algorithm1.traffic.total(), 17653760);
  EXPECT_EQ(r.standard.total(), 68157440);
  EXPECT_EQ(r.coverage.blocksKV, 21);
  EXPECT_EQ(r.coverage.blocksQ, 64);
  // N^2 d^2 / M = 4096^2 * 64^2 / 51200.
  EXPECT_DOUBLE_EQ(r.ioModelElements, 1342177.28);
  EXPECT_NEAR(r.algorithm1.ratioToModel, 13.153, 1e-3);
  EXPECT_NEAR(r.standardRatioToModel, 50.781, 1e-3);
}

TEST(CostModelTest, CPUTilesFromTheBudgetAndTheVectorWidth) {
  // A 2 MiB L2 (524,288 f32 elements), d = 128.
  TargetInfo cpu;
  cpu.name = "cpu";
  cpu.kind = TargetKind::CPU;
  cpu.sramBytes = 2 << 20;
  AttentionProblem s;
  s.batch = 1;
  s.heads = s.kvHeads = 8;
  s.seqQ = s.seqKV = 4096;
  s.headDim = s.headDimV = 128;
  s.dtype = flashc::ElementType::F32;
  // 8 lanes: 64 rows, and Bc = (M - 2 * 64 * 128) / (2 * 128 + 64),
  // clamped to 256.
  cpu.vectorLanes = 8;
  TileSizes t8 = chooseTileSizes(cpu, s, LoopOrder::FA2);
  EXPECT_EQ(t8.blockQ, 64);
  EXPECT_EQ(t8.blockKV, 256);
  // 16 lanes: 128 rows, which still leave Bc = 256.
  cpu.vectorLanes = 16;
  TileSizes t16 = chooseTileSizes(cpu, s, LoopOrder::FA2);
  EXPECT_EQ(t16.blockQ, 128);
  EXPECT_EQ(t16.blockKV, 256);
  // GQA packs 4 heads: 128 packed rows are 32 per head.
  s.kvHeads = 2;
  EXPECT_EQ(chooseTileSizes(cpu, s, LoopOrder::FA2).blockQ, 32);
  s.kvHeads = 8;
  // 256 KiB (65,536 elements): 128 rows would leave Bc = (65536 - 32768) /
  // 384 = 80, less than 256, so the block stays at 64 rows (Bc = (65536 -
  // 16384) / 320 = 153, to 144).
  cpu.sramBytes = 256 << 10;
  TileSizes small = chooseTileSizes(cpu, s, LoopOrder::FA2);
  EXPECT_EQ(small.blockQ, 64);
  EXPECT_EQ(small.blockKV, 144);
}

TEST(CostModelTest, WideWarpsOnTheTilePath) {
  llvm::Expected<TargetInfo> sm80 = TargetInfo::get("sm_80");
  ASSERT_TRUE(static_cast<bool>(sm80)) << llvm::toString(sm80.takeError());
  AttentionProblem s;
  s.batch = 1;
  s.heads = s.kvHeads = 8;
  s.seqQ = s.seqKV = 4096;
  s.headDim = s.headDimV = 64;
  s.dtype = flashc::ElementType::F16;
  // A tile's Br and Bc; a kernel's row tiles per warp, warps and Q.
  auto expectTile = [&](bool wide, int64_t blockQ, int64_t blockKV) {
    TileSizes t = chooseTileSizes(*sm80, s, LoopOrder::FA2, wide);
    EXPECT_EQ(t.blockQ, blockQ);
    EXPECT_EQ(t.blockKV, blockKV);
  };
  auto expectWarps = [](const flashc::GPUTileConfig &c, int64_t perWarp,
                        int64_t warps, bool qInRegisters) {
    EXPECT_EQ(c.rowTilesPerWarp, perWarp);
    EXPECT_EQ(c.warps(), warps);
    EXPECT_EQ(c.qInRegisters, qInRegisters);
  };
  // Without wide warps: 64 rows in 4 warps of 16, blocks of 128 keys.
  expectTile(false, 64, 128);
  // With them, up to D = 64: 128 rows and blocks of 64 keys ...
  expectTile(true, 128, 64);
  // ... which the kernel gives 4 warps of two row tiles, Q in registers.
  flashc::GPUTileConfig c =
      flashc::makeGPUTileConfig(1, 64, 64, 2, 128, 64, 2, true);
  EXPECT_EQ(c.rowTiles, 8);
  expectWarps(c, 2, 4, true);
  EXPECT_EQ(c.threads(), 128);
  // The same block without wide warps: 8 warps of one row tile.
  flashc::GPUTileConfig eight =
      flashc::makeGPUTileConfig(1, 64, 64, 2, 128, 64, 2, false);
  EXPECT_EQ(eight.warps(), 8);
  EXPECT_TRUE(eight.qInRegisters);
  // A GQA group of 4 packs 32 rows per head.
  s.kvHeads = 2;
  EXPECT_EQ(chooseTileSizes(*sm80, s, LoopOrder::FA2, true).blockQ, 32);
  // A group that is not a power of two packs floor(128 / G) rows a head
  // into the 128 rows of 4 wide warps: a group of 3 heads as 3 x 42, the
  // last 2 rows padding.
  s.heads = 6;
  EXPECT_EQ(chooseTileSizes(*sm80, s, LoopOrder::FA2, true).blockKV, 64);
  EXPECT_EQ(chooseTileSizes(*sm80, s, LoopOrder::FA2, true).blockQ, 42);
  flashc::GPUTileConfig three =
      flashc::makeGPUTileConfig(3, 64, 64, 2, 42, 64, 2, true);
  EXPECT_EQ(three.tileGroup, 3);
  EXPECT_EQ(three.tileRows(), 128);
  EXPECT_EQ(three.groupRows(), 42);
  EXPECT_TRUE(three.hasPaddingRows());
  EXPECT_EQ(three.warps(), 4);
  // Rows that do not fill a power of two of row tiles are rounded up to
  // one: 5 x 20 rows in 8 tiles (25 rows a head in the layout), 7 x 2 in
  // one, 80 x 1 in 8 (1 a head, 48 padding rows).
  flashc::GPUTileConfig five =
      flashc::makeGPUTileConfig(5, 64, 64, 2, 20, 64, 2, true);
  EXPECT_EQ(five.tileRows(), 128);
  EXPECT_EQ(five.groupRows(), 25);
  EXPECT_EQ(flashc::makeGPUTileConfig(7, 64, 64, 2, 2, 64, 4, true).tileRows(),
            16);
  flashc::GPUTileConfig eighty =
      flashc::makeGPUTileConfig(80, 64, 64, 2, 1, 64, 2, true);
  EXPECT_EQ(eighty.tileRows(), 128);
  EXPECT_EQ(eighty.groupRows(), 1);
  // A group of 4 has none: 4 x 32.
  EXPECT_FALSE(flashc::makeGPUTileConfig(4, 64, 64, 2, 32, 64, 2, true)
                   .hasPaddingRows());
  // Without wide warps (flash-tile's wide-warps=0) the rows are G x Br, 63 in
  // four MMA tiles.
  EXPECT_EQ(chooseTileSizes(*sm80, s, LoopOrder::FA2, false).blockQ, 21);
  EXPECT_EQ(flashc::makeGPUTileConfig(3, 64, 64, 2, 21, 128, 2).tileRows(),
            64);
  // Up to D = 128 too: 128 rows in blocks of 32 keys (32 + 128
  // accumulator columns a warp), Q read again per block.
  s.heads = s.kvHeads = 8;
  s.headDim = s.headDimV = 128;
  expectTile(true, 128, 32);
  expectWarps(flashc::makeGPUTileConfig(1, 128, 128, 2, 128, 32, 2, true), 2, 4,
              false);
  // 64 keys at D = 128 (192 accumulator columns) keep 16-row warps, Q in
  // registers.
  expectWarps(flashc::makeGPUTileConfig(1, 128, 128, 2, 128, 64, 2, true), 1, 8,
              true);
  // Beyond D = 128 the tile path keeps 16-row warps, and Q in registers
  // (without wide warps it is re-read beyond 128).
  flashc::GPUTileConfig d256 =
      flashc::makeGPUTileConfig(1, 256, 256, 2, 64, 16, 2, true);
  EXPECT_EQ(d256.rowTilesPerWarp, 1);
  EXPECT_TRUE(d256.qInRegisters);
  EXPECT_FALSE(
      flashc::makeGPUTileConfig(1, 256, 256, 2, 64, 16, 2, false)
          .qInRegisters);
}

TEST(CostModelTest, FA2TrafficReadsKVOncePerQBlock) {
  AttentionProblem s = seedShape();
  // Br = 64: K and V read N / 64 times, twice the algorithm-1 order.
  HbmTraffic t64 = getLoopOrderTraffic(s, LoopOrder::FA2, 64, 200);
  EXPECT_EQ(t64.reads, 4096 * 64 + 64 * 4096 * 128);
  EXPECT_EQ(t64.writes, 4096 * 64 + 4096);
  // Br = 128: about the algorithm-1 count.
  HbmTraffic t128 = getLoopOrderTraffic(s, LoopOrder::FA2, 128, 128);
  EXPECT_EQ(t128.total(), 4096 * 64 + 32 * 4096 * 128 + 4096 * 64 + 4096);

  // A causal mask halves (plus the diagonal) the K and V reads.
  s.mask = flashc::Mask::causal();
  HbmTraffic causal = getLoopOrderTraffic(s, LoopOrder::FA2, 128, 128);
  EXPECT_EQ(causal.reads, 4096 * 64 + (32 * 33 / 2) * 128 * 128);
}

TEST(CostModelTest, SquareCausalBlockFraction) {
  // T block rows of B: T (T + 1) / 2 blocks, 1/2 + 1/(2T) of them.
  for (int64_t t : {1, 2, 3, 8, 16, 32, 64}) {
    for (int64_t b : {16, 64, 128}) {
      double fraction = getCausalBlockFraction(t * b, t * b, b, b);
      EXPECT_DOUBLE_EQ(fraction, 0.5 + 1.0 / (2.0 * t))
          << "T=" << t << " B=" << b;
    }
  }
  // The seed's example: N = 4096 with blocks of 64, 128, 256.
  EXPECT_NEAR(getCausalBlockFraction(4096, 4096, 64, 64), 0.508, 5e-4);
  EXPECT_NEAR(getCausalBlockFraction(4096, 4096, 128, 128), 0.516, 5e-4);
  EXPECT_NEAR(getCausalBlockFraction(4096, 4096, 256, 256), 0.531, 5e-4);

  // Schedule FLOPs over dense FLOPs equal the fraction when blocks divide.
  AttentionProblem s = seedShape();
  s.mask = flashc::Mask::causal();
  EXPECT_EQ(getScheduleFlops(s, 128, 128) * 64, getDenseFlops(s) * 33);
}

TEST(CostModelTest, CausalVisiblePairsBottomRight) {
  // Square: N (N + 1) / 2.
  EXPECT_EQ(countVisiblePairs(4096, 4096, true), 4096 * 4097 / 2);
  // Decode: the single query sees every key.
  EXPECT_EQ(countVisiblePairs(1, 1000, true), 1000);
  // Nk > Nq: row i sees i + (Nk - Nq) + 1 keys.
  EXPECT_EQ(countVisiblePairs(3, 5, true), 3 + 4 + 5);
  // Nk < Nq: the first Nq - Nk rows see nothing.
  EXPECT_EQ(countVisiblePairs(5, 3, true), 1 + 2 + 3);
  EXPECT_EQ(countVisiblePairs(5, 3, false), 15);

  AttentionProblem s = seedShape();
  EXPECT_EQ(getDenseFlops(s), 2LL * 4096 * 4096 * 128);
  EXPECT_EQ(getCausalFlops(s), getDenseFlops(s));
  s.mask = flashc::Mask::causal();
  EXPECT_EQ(getCausalFlops(s), 2LL * (4096 * 4097 / 2) * 128);

  // Decode with blocks: every KV block visited, once.
  AttentionProblem d = decodeShape(1, 1000);
  d.mask = flashc::Mask::causal();
  BlockCoverage c = computeBlockCoverage(d, 1, 128);
  EXPECT_EQ(c.blocksKV, 8);
  EXPECT_EQ(c.visitedPairs, 8);
  EXPECT_EQ(c.visitedKeys, 1000);
  EXPECT_DOUBLE_EQ(c.visitedFraction(), 1.0);
}

/// Block coverage the direct way, one Q block at a time.
BlockCoverage coverageByBlocks(const AttentionProblem &shape, int64_t blockQ,
                               int64_t blockKV) {
  BlockCoverage c;
  c.blocksQ = (shape.seqQ + blockQ - 1) / blockQ;
  c.blocksKV = (shape.seqKV + blockKV - 1) / blockKV;
  for (int64_t i = 0; i < c.blocksQ; ++i) {
    int64_t rows = std::min(blockQ, shape.seqQ - i * blockQ);
    int64_t blocks = c.blocksKV;
    if (shape.isCausal()) {
      int64_t lastKey = i * blockQ + rows - 1 + shape.seqKV - shape.seqQ;
      blocks = lastKey < 0 ? 0 : std::min(c.blocksKV, lastKey / blockKV + 1);
    }
    int64_t keys = std::min(shape.seqKV, blocks * blockKV);
    c.visitedPairs += blocks;
    c.visitedRows += blocks * rows;
    c.visitedKeys += keys;
    c.visitedScores += rows * keys;
    c.keysTouched = std::max(c.keysTouched, keys);
  }
  return c;
}

TEST(CostModelTest, BlockCoverageByRunsMatchesBlockByBlock) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int64_t> len(1, 700), block(1, 80);
  for (int trial = 0; trial < 3000; ++trial) {
    AttentionProblem s = decodeShape(len(rng), len(rng));
    s.seqQ = len(rng);
    s.mask = (trial % 3 != 0) ? flashc::Mask::causal() : flashc::Mask::none();
    int64_t br = block(rng), bc = block(rng);
    SCOPED_TRACE(llvm::formatv("Nq {0} Nk {1} Br {2} Bc {3} causal {4}",
                               s.seqQ, s.seqKV, br, bc, s.isCausal())
                     .str());
    BlockCoverage fast = computeBlockCoverage(s, br, bc);
    BlockCoverage slow = coverageByBlocks(s, br, bc);
    ASSERT_EQ(fast.blocksQ, slow.blocksQ);
    ASSERT_EQ(fast.blocksKV, slow.blocksKV);
    ASSERT_EQ(fast.visitedPairs, slow.visitedPairs);
    ASSERT_EQ(fast.visitedRows, slow.visitedRows);
    ASSERT_EQ(fast.visitedKeys, slow.visitedKeys);
    ASSERT_EQ(fast.visitedScores, slow.visitedScores);
    ASSERT_EQ(fast.keysTouched, slow.keysTouched);
  }
}

TEST(CostModelTest, BlockCoverageOfManyQueryBlocksIsQuick) {
  // 2^32 query rows in blocks of one over 8 keys (the fuzzer's input that
  // used to run for minutes): the last 8 rows see keys, row Nq - 8 + j sees
  // j + 1 of them.
  AttentionProblem s = decodeShape(1, 8);
  s.seqQ = int64_t(1) << 32;
  s.mask = flashc::Mask::causal();
  BlockCoverage c = computeBlockCoverage(s, 1, 8);
  EXPECT_EQ(c.blocksQ, int64_t(1) << 32);
  EXPECT_EQ(c.visitedPairs, 8);
  EXPECT_EQ(c.visitedKeys, 64);
  EXPECT_EQ(c.visitedScores, 64);
  s.mask = flashc::Mask::none();
  c = computeBlockCoverage(s, 1, 8);
  EXPECT_EQ(c.visitedPairs, int64_t(1) << 32);
  EXPECT_EQ(c.visitedScores, int64_t(8) << 32);
}

TEST(CostModelTest, FA2KernelAtDecodeIsComputeBound) {
  // Exercise 8: batch 1, 64K keys, 16 heads, d = 128 on an A100: 16 CTAs,
  // 4 * 128 * 65536 * 128 FLOPs each at 70% of 2.89 TFLOP/s: ~2.12 ms.
  WavePrediction p =
      unwrap(predictFA2KernelTime(getTarget("sm_80"), decodeShape(1, 65536)));
  EXPECT_EQ(p.ctas, 16);
  EXPECT_EQ(p.waves, 1);
  EXPECT_DOUBLE_EQ(p.flopsPerCta, 4.0 * 128 * 65536 * 128);
  EXPECT_TRUE(p.computeBound);
  EXPECT_NEAR(p.timeUs, 2130, 10);
}

TEST(CostModelTest, WaveModelExercise9) {
  // Batch 1, 64K keys, 2 kv heads on 108 SMs: 32 splits (64 CTAs, one wave
  // at the full HBM bandwidth) beat 64 splits (128 CTAs, two waves). The
  // rows of a CTA are padded to one MMA tile of 16, as flashc's decode
  // kernels do and as the runtime models them (the exercise pads to 64).
  TargetInfo a100 = getTarget("sm_80");
  AttentionProblem s = decodeShape(1, 65536);
  TileSizes tiles = chooseTileSizes(a100, s, LoopOrder::FA2);
  EXPECT_EQ(tiles.blockQ, 1);
  EXPECT_EQ(tiles.blockKV, 128);

  WavePrediction p32 = unwrap(predictSplitKVTime(a100, s, tiles, 32));
  WavePrediction p64 = unwrap(predictSplitKVTime(a100, s, tiles, 64));
  EXPECT_EQ(p32.ctas, 64);
  EXPECT_EQ(p32.waves, 1);
  EXPECT_EQ(p32.rowsPerCta, 16); // 8 heads padded to one MMA tile
  EXPECT_EQ(p32.keysPerCta, 2048);
  EXPECT_NEAR(p32.bandwidthPerCtaGBs, 1555.0 / 64, 1e-9);
  EXPECT_EQ(p64.ctas, 128);
  EXPECT_EQ(p64.waves, 2);
  EXPECT_EQ(p64.kernels, 2);
  EXPECT_LT(p32.timeUs, p64.timeUs);

  // Too few splits leave SMs idle: S = 1 is 2 CTAs, each limited by what
  // one CTA pulls from memory (48 GB/s: 33.5 MB in ~699 us).
  WavePrediction p1 = unwrap(predictSplitKVTime(a100, s, tiles, 1));
  EXPECT_EQ(p1.ctas, 2);
  EXPECT_EQ(p1.kernels, 1);
  EXPECT_FALSE(p1.computeBound);
  EXPECT_NEAR(p1.timeUs, 65536.0 * 256 * 2 / 48e3 + 5, 1);
  WavePrediction best = unwrap(chooseSplits(a100, s, tiles));
  EXPECT_LT(best.timeUs, p1.timeUs / 7);
  // The fewest splits within the tolerance of the fastest.
  EXPECT_LE(best.timeUs, p32.timeUs * (1 + flashc::kSplitTolerance));
  EXPECT_LE(best.splits, 32);
  EXPECT_LE(best.ctas, a100.numProcessors);
  // About reading the KV cache once (67 MB at 1555 GB/s) plus two launches.
  EXPECT_NEAR(best.timeUs, 43.2 + 10, 2);
  // flash-decoding beats the unsplit FA2 kernel by tens of times here.
  WavePrediction fa2 = unwrap(predictFA2KernelTime(a100, s));
  EXPECT_GT(fa2.timeUs / best.timeUs, 30);
}

TEST(CostModelTest, WaveQuantizationBatch64) {
  // Section 6.4: batch 64, 2K keys: 128 CTAs unsplit take two waves (about
  // 151 us); 4-16 splits bring it to about 100 us.
  TargetInfo a100 = getTarget("sm_80");
  AttentionProblem s = decodeShape(64, 2048);
  TileSizes tiles = chooseTileSizes(a100, s, LoopOrder::FA2);
  WavePrediction p1 = unwrap(predictSplitKVTime(a100, s, tiles, 1));
  EXPECT_EQ(p1.ctas, 128);
  EXPECT_EQ(p1.waves, 2);
  EXPECT_NEAR(p1.timeUs, 151, 3);
  WavePrediction best = unwrap(chooseSplits(a100, s, tiles));
  EXPECT_GE(best.splits, 4);
  EXPECT_LE(best.splits, 16);
  EXPECT_NEAR(best.timeUs, 100, 6);
}

TEST(CostModelTest, SplitsAreBoundedByKVBlocks) {
  TargetInfo a100 = getTarget("sm_80");
  AttentionProblem s = decodeShape(1, 1000);
  TileSizes tiles{1, 128, LoopOrder::FA2};
  EXPECT_EQ(getMaxSplits(s, 128), 8);
  EXPECT_EQ(getMaxSplits(decodeShape(1, 1 << 20), 128), kDefaultMaxSplits);
  WavePrediction best = unwrap(chooseSplits(a100, s, tiles));
  EXPECT_GE(best.splits, 1);
  EXPECT_LE(best.splits, 8);

  llvm::Expected<WavePrediction> tooMany =
      predictSplitKVTime(a100, s, tiles, 9);
  ASSERT_FALSE(static_cast<bool>(tooMany));
  EXPECT_EQ(llvm::toString(tooMany.takeError()),
            "9 splits out of range: 1000 keys in blocks of 128 make 8 "
            "blocks, and every split needs at least one");

  llvm::Expected<WavePrediction> cpu =
      predictSplitKVTime(getTarget("cpu"), s, tiles, 1);
  ASSERT_FALSE(static_cast<bool>(cpu));
  EXPECT_EQ(llvm::toString(cpu.takeError()),
            "the CTA x wave model needs a GPU target; 'cpu' is not one");
}

TEST(CostModelTest, ReportOnCpuHasNoPrediction) {
  AttentionProblem s = seedShape();
  s.mask = flashc::Mask::causal();
  CostOptions options;
  options.blockQ = 128;
  options.blockKV = 128;
  CostReport r = unwrap(computeCostReport(getTarget("cpu"), s, options));
  EXPECT_EQ(r.splits, 1);
  EXPECT_FALSE(r.prediction.has_value());
  EXPECT_DOUBLE_EQ(r.coverage.visitedFraction(), 0.515625);
  EXPECT_EQ(r.tiles.blockQ, 128);
  EXPECT_EQ(r.algorithm1.tiles.blockKV, 128);

  AttentionProblem bad = s;
  bad.heads = 3;
  bad.kvHeads = 2;
  llvm::Expected<CostReport> err = computeCostReport(getTarget("cpu"), bad);
  ASSERT_FALSE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(err.takeError()),
            "3 query heads are not a multiple of 2 kv heads");
}

TEST(CostModelTest, JsonRoundTripHasDocumentedKeys) {
  CostReport r =
      unwrap(computeCostReport(getTarget("sm_80"), decodeShape(1, 65536), {}));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(costReportToJSON(r));
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object *root = parsed->getAsObject();
  ASSERT_NE(root, nullptr);

  auto expectKeys = [](const llvm::json::Object *o,
                       std::initializer_list<const char *> keys,
                       const char *where) {
    ASSERT_NE(o, nullptr) << where;
    EXPECT_EQ(o->size(), keys.size()) << where;
    for (const char *key : keys)
      EXPECT_NE(o->get(key), nullptr) << where << "." << key;
  };
  expectKeys(root,
             {"target", "sramBytes", "sramElements", "shape", "flops",
              "hbmElements", "schedule", "waveModel"},
             "root");
  expectKeys(root->getObject("shape"),
             {"batch", "heads", "kvHeads", "seqQ", "seqKV", "headDim",
              "headDimV", "causal", "elementBytes"},
             "shape");
  expectKeys(root->getObject("flops"), {"dense", "causal", "schedule"},
             "flops");
  const llvm::json::Object *hbm = root->getObject("hbmElements");
  expectKeys(hbm, {"model", "standard", "algorithm1", "fa2"}, "hbmElements");
  expectKeys(hbm->getObject("standard"),
             {"reads", "writes", "total", "ratioToModel"}, "standard");
  for (const char *order : {"algorithm1", "fa2"})
    expectKeys(
        hbm->getObject(order),
        {"blockQ", "blockKV", "reads", "writes", "total", "ratioToModel"},
        order);
  expectKeys(root->getObject("schedule"),
             {"loopOrder", "blockQ", "blockKV", "blocksQ", "blocksKV",
              "blockPairs", "visitedBlockPairs", "causalBlockFraction",
              "splits"},
             "schedule");
  expectKeys(root->getObject("waveModel"),
             {"splits", "ctas", "waves", "rowsPerCta", "keysPerCta",
              "flopsPerCta", "bytesPerCta", "bandwidthPerCtaGBs", "ctaTimeUs",
              "bound", "kernels", "combineTimeUs", "timeUs", "floorUs",
              "fa2KernelTimeUs"},
             "waveModel");

  // Values survive the round trip.
  EXPECT_EQ(root->getString("target"), "sm_80");
  EXPECT_EQ(root->getObject("schedule")->getInteger("splits"), r.splits);
  EXPECT_EQ(root->getObject("waveModel")->getNumber("timeUs"),
            r.prediction->timeUs);
  EXPECT_EQ(root->getObject("flops")->getInteger("dense"), r.denseFlops);

  // On the CPU the wave model is null.
  CostReport cpu = unwrap(computeCostReport(getTarget("cpu"), seedShape(), {}));
  llvm::json::Object cpuJson = costReportToJSON(cpu);
  ASSERT_NE(cpuJson.get("waveModel"), nullptr);
  EXPECT_EQ(cpuJson.get("waveModel")->kind(), llvm::json::Value::Null);
}

} // namespace
