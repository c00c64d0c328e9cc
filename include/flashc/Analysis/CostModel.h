//===- CostModel.h - FLOPs, HBM traffic, CTA x wave model -------*- C++ -*-===//
//
// The analytical cost model of one attention problem: its FLOPs (dense, as
// seen through a causal mask, and as computed by a block schedule), the HBM
// element reads and writes of standard 3-pass attention and of the two
// FlashAttention loop orders, the Theta(N^2 d^2 / M) IO model, the fraction
// of blocks a causal mask leaves, and the CTA x wave model that predicts a
// GPU kernel's time and chooses the number of KV splits (flash-decoding).
// `computeCostReport` bundles all of it; the report prints as aligned text
// or as JSON with stable key names.
//
// Counting conventions (those of the FlashAttention seed's exercises 2-4):
//
// - Traffic is counted in elements, not bytes, per query head, and then
//   multiplied by B * Hq. With GQA each query head is charged its own reads
//   of K and V, as if it did not share them; a schedule that packs the G
//   heads of a group into one tile reads K and V G times less often (the
//   wave model, which models such a schedule, counts bytes per group).
// - Causal attention with a loop order visits only the (Q block, KV block)
//   pairs with at least one visible entry (flash-causal-skip); standard
//   attention is always dense.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_ANALYSIS_COSTMODEL_H
#define FLASHC_ANALYSIS_COSTMODEL_H

#include "flashc/Analysis/AttentionSchedule.h"
#include "flashc/Core/WaveModel.h"
#include "flashc/Target/TargetInfo.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir {
namespace flash {

using ::flashc::kDefaultMaxSplits;
using ::flashc::kTensorCoreEfficiency;
/// Rows of the Q tile of the FlashAttention-2 library kernel, which the
/// baseline `predictFA2KernelTime` models.
inline constexpr int64_t kFA2KernelRows = 128;

/// Returns success if `shape` describes a problem the model can count:
/// positive sizes, Hq a multiple of Hkv, and counts that fit in 64 bits.
llvm::Error verifyCostShape(const AttentionProblem &shape);

/// The SRAM capacity M in elements that `chooseTileSizes` sizes blocks with:
/// the target's `sramBytes` over the element size on a GPU, over 4 bytes on
/// the CPU (blocks held in f32).
int64_t getSramElements(const TargetInfo &target, const AttentionProblem &shape);

//===----------------------------------------------------------------------===//
// FLOPs
//===----------------------------------------------------------------------===//

/// Number of (query, key) pairs of one head a causal mask leaves visible,
/// with bottom-right alignment: key j is visible to query i iff
/// j <= i + (Nk - Nq). Without `causal`, Nq * Nk.
int64_t countVisiblePairs(int64_t seqQ, int64_t seqKV, bool causal);

/// FLOPs of the dense problem, 2 * B * Hq * Nq * Nk * (D + Dv) (the two
/// matrix products; the softmax is not counted).
int64_t getDenseFlops(const AttentionProblem &shape);

/// FLOPs of the visible pairs only: 2 * B * Hq * visible * (D + Dv). Equal
/// to the dense FLOPs without a causal mask.
int64_t getCausalFlops(const AttentionProblem &shape);

//===----------------------------------------------------------------------===//
// Block schedules
//===----------------------------------------------------------------------===//

/// How a schedule of Br x Bc blocks covers one head's Nq x Nk score matrix.
/// The last block of each dimension is shorter when it does not divide.
struct BlockCoverage {
  /// Tr = ceil(Nq / Br) and Tc = ceil(Nk / Bc).
  int64_t blocksQ = 0;
  int64_t blocksKV = 0;
  /// (Q block, KV block) pairs computed: all Tr * Tc of them, or with a
  /// causal mask those with at least one visible entry.
  int64_t visitedPairs = 0;
  /// Sums over the visited pairs of the Q block's rows, of the KV block's
  /// keys, and of rows x keys (the scores computed, masked ones included).
  int64_t visitedRows = 0;
  int64_t visitedKeys = 0;
  int64_t visitedScores = 0;
  /// Keys of the KV blocks that some Q block visits.
  int64_t keysTouched = 0;

  int64_t totalPairs() const { return blocksQ * blocksKV; }
  /// visitedPairs / (Tr * Tc): 1 without a mask.
  double visitedFraction() const;
};

/// Covers `shape` (causal or not) with blocks of `blockQ` x `blockKV`.
/// Both must be positive.
BlockCoverage computeBlockCoverage(const AttentionProblem &shape, int64_t blockQ,
                                   int64_t blockKV);

/// The exact fraction of Br x Bc block pairs of a causal Nq x Nk score
/// matrix with at least one visible entry (bottom-right alignment). For
/// Nq = Nk = T * B and Br = Bc = B it is 1/2 + 1/(2T).
double getCausalBlockFraction(int64_t seqQ, int64_t seqKV, int64_t blockQ,
                              int64_t blockKV);

/// FLOPs a block schedule computes: 2 * (D + Dv) per score of every visited
/// block, times B * Hq.
int64_t getScheduleFlops(const AttentionProblem &shape, int64_t blockQ,
                         int64_t blockKV);

//===----------------------------------------------------------------------===//
// HBM traffic (elements)
//===----------------------------------------------------------------------===//

struct HbmTraffic {
  int64_t reads = 0;
  int64_t writes = 0;
  int64_t total() const { return reads + writes; }
};

/// Standard 3-pass attention (the paper's algorithm 0): S = Q K^T reads Q
/// and K and writes S; P = softmax(S) reads S and writes P; O = P V reads P
/// and V and writes O. Per head Nq*D + Nk*D + 4*Nq*Nk + Nk*Dv + Nq*Dv, i.e.
/// 4Nd + 4N^2 for a square problem; dense even with a causal mask.
HbmTraffic getStandardTraffic(const AttentionProblem &shape);

/// The loop orders, per head:
///
/// - Algorithm1 (outer loop over KV blocks): K and V are read once
///   (Nk*D + Nk*Dv); O, l and m are written once at the start
///   (Nq*Dv + 2*Nq); for every visited (Q block, KV block) pair the Q block
///   is read and its O, l, m read and written back (rows*(D + Dv + 2) read,
///   rows*(Dv + 2) written). Without a mask that is Tc * (Nq*D + Nq*Dv +
///   2*Nq) read and Tc * (Nq*Dv + 2*Nq) written.
/// - FA2 (outer parallel loop over Q blocks): Q is read once (Nq*D); every Q
///   block reads the K and V blocks it visits (keys*(D + Dv) per visited
///   pair); O is written once (Nq*Dv) together with the row log-sum-exp
///   L = m + log l that the backward pass and split merging need (Nq).
///
/// `blockQ` and `blockKV` must be positive.
HbmTraffic getLoopOrderTraffic(const AttentionProblem &shape, LoopOrder order,
                               int64_t blockQ, int64_t blockKV);

/// The value of the IO model Theta(N^2 d^2 / M): B * Hq * Nq * Nk * d^2 / M
/// with d = max(D, Dv) and M in elements.
double getIoModelElements(const AttentionProblem &shape, int64_t sramElements);

//===----------------------------------------------------------------------===//
// The CTA x wave model
//===----------------------------------------------------------------------===//

/// A kernel's predicted time under the CTA x wave model (see
/// flashc/Core/WaveModel.h, which the runtime shares).
using WavePrediction = ::flashc::WavePrediction;

/// The wave model's view of a target: on a GPU the runtime's
/// (flashc::getWaveTarget) with the target's SM count and bandwidth, so
/// that the cost report and a launch choose the same split count; on the
/// CPU its cores and rows of 64.
::flashc::WaveTarget getWaveTarget(const TargetInfo &target);

/// The largest split count worth trying: every split keeps at least one
/// block of `blockKV` keys, and at most `maxSplits`.
int64_t getMaxSplits(const AttentionProblem &shape, int64_t blockKV,
                     int64_t maxSplits = kDefaultMaxSplits);

/// Predicts the flashc FA2 schedule on a GPU `target` with the KV loop split
/// `splits` ways: one CTA per (batch, kv-head, Q block, split), the G query
/// heads of a group packed as G * Br rows of one tile padded up to the
/// wave target's row quantum. Splits are contiguous runs of ceil(Tc / S) KV
/// blocks (the last ones shorter, possibly empty). A causal mask is not
/// modelled (every CTA is charged its full range of keys). Errors on a CPU
/// target, a bad tile size, or `splits` outside [1, Tc].
llvm::Expected<WavePrediction> predictSplitKVTime(const TargetInfo &target,
                                                  const AttentionProblem &shape,
                                                  const TileSizes &tiles,
                                                  int64_t splits);

/// Evaluates `predictSplitKVTime` for S = 1 .. getMaxSplits(shape,
/// tiles.blockKV, maxSplits) and returns the fewest splits predicted within
/// flashc::kSplitTolerance of the fastest: flashc::chooseSplitCount, which
/// the runtime runs at launch.
llvm::Expected<WavePrediction>
chooseSplits(const TargetInfo &target, const AttentionProblem &shape,
             const TileSizes &tiles, int64_t maxSplits = kDefaultMaxSplits);

/// The FlashAttention-2 library kernel without splitting, as the seed models
/// it: one CTA per (batch, query head, block of `kFA2KernelRows` queries),
/// its Q tile computed as `kFA2KernelRows` rows whatever Nq, each CTA
/// reading all of K and V of its head.
llvm::Expected<WavePrediction>
predictFA2KernelTime(const TargetInfo &target, const AttentionProblem &shape);

/// The floor of any kernel on `target`: max(visible FLOPs / (SMs * per-SM
/// peak), bytes of Q, K, V (once per kv head) and O / HBM bandwidth), in
/// microseconds, without launch overhead or efficiency loss.
double getFloorTimeUs(const TargetInfo &target, const AttentionProblem &shape);

//===----------------------------------------------------------------------===//
// The report
//===----------------------------------------------------------------------===//

/// What to report on; zero fields are chosen by the model.
struct CostOptions {
  /// The loop order of the chosen schedule.
  LoopOrder order = LoopOrder::FA2;
  /// Query rows per block per head and keys per block; 0: `chooseTileSizes`
  /// for each order. When given they apply to both orders.
  int64_t blockQ = 0;
  int64_t blockKV = 0;
  /// KV splits; 0: `chooseSplits` on a GPU, 1 on the CPU.
  int64_t splits = 0;
  /// The GPU kernels' K and V stages, which the chosen KV block fits.
  int64_t stages = 2;
  /// sm_90a: whether the kernels multiply by warpgroups, whose buffers'
  /// rows the chosen KV block fits unpadded (see `chooseTileSizes`).
  bool warpgroupMma = true;
  /// The GPU kernels' alignment of the tensors (see `chooseTileSizes`).
  int64_t alignment = 16;
};

/// The traffic of one loop order with its own tiles.
struct LoopOrderCost {
  LoopOrder order = LoopOrder::FA2;
  TileSizes tiles;
  BlockCoverage coverage;
  HbmTraffic traffic;
  /// traffic.total() / the IO model value.
  double ratioToModel = 0;
};

struct CostReport {
  std::string target;
  AttentionProblem shape;
  int64_t sramBytes = 0;
  /// M, in elements (see `getSramElements`).
  int64_t sramElements = 0;

  int64_t denseFlops = 0;
  int64_t causalFlops = 0;
  /// FLOPs of the chosen schedule.
  int64_t scheduleFlops = 0;

  HbmTraffic standard;
  double standardRatioToModel = 0;
  LoopOrderCost algorithm1;
  LoopOrderCost fa2;
  /// B * Hq * Nq * Nk * d^2 / M.
  double ioModelElements = 0;

  /// The chosen schedule: order, tiles, block coverage and splits.
  LoopOrder order = LoopOrder::FA2;
  TileSizes tiles;
  BlockCoverage coverage;
  int64_t splits = 1;

  /// GPU targets only: the CTA x wave prediction of the chosen schedule
  /// with `splits`, the unsplit FA2 library baseline, and the floor.
  std::optional<WavePrediction> prediction;
  std::optional<WavePrediction> fa2KernelPrediction;
  std::optional<double> floorTimeUs;

  const LoopOrderCost &chosenOrder() const {
    return order == LoopOrder::Algorithm1 ? algorithm1 : fa2;
  }
};

/// Computes the report of `shape` on `target` (with its `sramBytes` as
/// given: override it before calling). Errors name the offending value.
llvm::Expected<CostReport> computeCostReport(const TargetInfo &target,
                                             const AttentionProblem &shape,
                                             const CostOptions &options = {});

/// Prints the report as aligned, human-readable text. The traffic rows name
/// the loop orders by which loop is outer: "kv-outer (algorithm1)" reads K
/// and V once and the Q, O, l and m blocks once per KV block, "q-outer
/// (fa2)" reads Q and writes O once and reads the K and V blocks once per Q
/// block; a line says so with the block counts. "<- kernel" marks the order
/// a kernel runs (the schedule's on the CPU, q-outer on a GPU), and
/// "<- schedule" the schedule's when a GPU kernel would not run it.
void printCostReport(const CostReport &report, llvm::raw_ostream &os);

/// The report as JSON. The keys are stable (a `flashc cost --json` reads
/// them):
///
///   target, sramBytes, sramElements,
///   shape {batch, heads, kvHeads, seqQ, seqKV, headDim, headDimV, causal,
///          elementBytes},
///   flops {dense, causal, schedule},
///   hbmElements {model,
///                standard {reads, writes, total, ratioToModel},
///                algorithm1 / fa2 {blockQ, blockKV, reads, writes, total,
///                                  ratioToModel}},
///   schedule {loopOrder, blockQ, blockKV, blocksQ, blocksKV, blockPairs,
///             visitedBlockPairs, causalBlockFraction, splits},
///   waveModel (null on the CPU) {splits, ctas, waves, rowsPerCta,
///             keysPerCta, flopsPerCta, bytesPerCta, bandwidthPerCtaGBs,
///             ctaTimeUs, bound ("compute" or "memory"), kernels,
///             combineTimeUs, timeUs, floorUs, fa2KernelTimeUs}.
llvm::json::Object costReportToJSON(const CostReport &report);

} // namespace flash
} // namespace mlir

#endif // FLASHC_ANALYSIS_COSTMODEL_H
