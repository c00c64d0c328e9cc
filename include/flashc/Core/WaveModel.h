//===- WaveModel.h - The CTA x wave model, without dependencies -*- C++ -*-===//
//
// The model that predicts a split-KV (flash-decoding) kernel's time and
// chooses its number of splits. The cost report uses it at compile time and
// the LLVM-free runtime at launch time (from the actual B, Nk and the
// device's SM count and bandwidth), so it lives in this dependency-free
// folder, and both choose a split count with the same function.
//
// One CTA runs per SM at a time; every CTA takes as long as the longest one,
// and a partial last wave costs a whole wave:
//
//   per-CTA time = max(padded FLOPs / (per-SM peak * efficiency),
//                      bytes moved / per-SM bandwidth),
//   per-SM bandwidth = min(per-SM limit, HBM bandwidth / active SMs),
//   total = waves * per-CTA time + launch overhead per kernel
//           [+ the combine kernel's bytes / HBM bandwidth when split].
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CORE_WAVEMODEL_H
#define FLASHC_CORE_WAVEMODEL_H

#include "flashc/Core/Problem.h"

#include <cstdint>
#include <string_view>

namespace flashc {

/// Fraction of the tensor-core peak a CTA sustains in the wave model (the
/// FlashAttention-2 paper reaches 50-73% of peak in the forward pass).
inline constexpr double kTensorCoreEfficiency = 0.7;
/// Default upper bound on the number of KV splits.
inline constexpr int64_t kDefaultMaxSplits = 256;
/// chooseSplitCount takes the fewest splits predicted within this fraction
/// of the fastest: each split more costs what the model leaves out (its
/// partial rows' round trip through L2, a CTA's prologue and epilogue), and
/// the model's small differences are within its error.
inline constexpr double kSplitTolerance = 0.03;

/// The figures of a GPU the model needs.
struct WaveTarget {
  int64_t numSMs = 0;
  /// Dense 16-bit tensor-core peak of one SM, TFLOP/s.
  double perSMPeakTflops = 0;
  /// HBM bandwidth, and what one CTA of a decode kernel pulls on its own
  /// (the bytes it keeps in flight over the memory latency), GB/s.
  double memoryBandwidthGBs = 0;
  double perSMBandwidthGBs = 0;
  /// Fixed cost of one kernel launch, microseconds.
  double launchOverheadUs = 0;
  /// Rows of a CTA's Q tile are padded up to a multiple of this. A GPU's
  /// (kMmaRows) are its kernels' MMA row tiles, flashc::tileRowTiles.
  int64_t rowQuantum = 16;
};

/// A kernel's predicted time.
struct WavePrediction {
  int64_t splits = 1;
  int64_t ctas = 0;
  int64_t waves = 0;
  /// Rows of the CTA's Q tile after padding (they cost tensor-core work).
  int64_t rowsPerCta = 0;
  /// Keys of the longest split.
  int64_t keysPerCta = 0;
  double flopsPerCta = 0;
  /// Bytes one CTA reads (its Q rows, its keys of K and V) and writes (its
  /// output rows and their log-sum-exp; f32 partials when split).
  double bytesPerCta = 0;
  double bandwidthPerCtaGBs = 0;
  double ctaTimeUs = 0;
  /// True when the FLOP term of the per-CTA time dominates.
  bool computeBound = false;
  /// 1, or 2 when split (the split kernel and the combine).
  int64_t kernels = 1;
  /// Time of the combine kernel without its launch: it reads S f32 partials
  /// and log-sum-exps per row and writes the output, at full HBM bandwidth.
  double combineTimeUs = 0;
  double timeUs = 0;
};

/// The wave model's figures of a device running `chip`'s kernels (sm_80,
/// sm_90a; any other name: sm_80's): the chip's published figures, with the
/// actual device's SM count and memory bandwidth in place of the chip's
/// when they are given (positive). An H200 runs sm_90a's kernels with 4.8
/// TB/s, not the H100's 3.35. Rows of a CTA's Q tile are padded to whole
/// MMA tiles (kMmaRows), as the kernels do.
WaveTarget getWaveTarget(std::string_view chip, int64_t numSMs = 0,
                         double memoryBandwidthGBs = 0);

/// Fills the wave counts and times of `p` from its per-CTA work (`ctas`,
/// `flopsPerCta`, `bytesPerCta`, `kernels` and `combineTimeUs` set).
void evaluateWaves(const WaveTarget &target, WavePrediction &p);

/// The largest split count worth trying for `problem` in KV blocks of
/// `blockKV` keys: every split keeps at least one block, and at most
/// `maxSplits`.
int64_t getMaxSplitCount(const AttentionProblem &problem, int64_t blockKV,
                         int64_t maxSplits = kDefaultMaxSplits);

/// The flashc FA2 schedule with the KV loop split `splits` ways: one CTA per
/// (batch, kv-head, Q block, split), the G query heads of a group packed as
/// G * Br rows of one tile padded up to the row quantum. Splits are
/// contiguous runs of ceil(Tc / S) KV blocks. A causal mask is not modelled.
/// The caller guarantees a problem that passes AttentionProblem::check,
/// positive tiles and 1 <= splits <= getMaxSplitCount.
WavePrediction predictSplitKV(const WaveTarget &target,
                              const AttentionProblem &problem, int64_t blockQ,
                              int64_t blockKV, int64_t splits);

/// Returns the fewest splits S in 1 .. getMaxSplitCount whose
/// `predictSplitKV` is within kSplitTolerance of the fastest. (Only the
/// smallest S of each number of KV blocks a split gets is evaluated: the
/// others cannot be faster.) The cost
/// report and the runtime both choose a decode kernel's split count here.
WavePrediction chooseSplitCount(const WaveTarget &target,
                                const AttentionProblem &problem,
                                int64_t blockQ, int64_t blockKV,
                                int64_t maxSplits = kDefaultMaxSplits);

} // namespace flashc

#endif // FLASHC_CORE_WAVEMODEL_H
