//===- WaveModel.h - The CTA x wave model, without dependencies -*- C++ -*-===//
//
// The model that predicts a split-KV (flash-decoding) kernel's time and
// chooses its number of splits. The cost report uses it at compile time and
// the LLVM-free runtime at launch time (from the actual B, Nk and the
// device's SM count), so it lives in this dependency-free header.
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

#ifndef FLASHC_RUNTIME_WAVEMODEL_H
#define FLASHC_RUNTIME_WAVEMODEL_H

#include <algorithm>
#include <cstdint>

namespace flashc {

/// Fraction of the tensor-core peak a CTA sustains in the wave model (the
/// FlashAttention-2 paper reaches 50-73% of peak in the forward pass).
inline constexpr double kTensorCoreEfficiency = 0.7;
/// Default upper bound on the number of KV splits.
inline constexpr int64_t kDefaultMaxSplits = 256;

/// The figures of a GPU the model needs.
struct WaveTarget {
  int64_t numSMs = 0;
  /// Dense 16-bit tensor-core peak of one SM, TFLOP/s.
  double perSMPeakTflops = 0;
  /// HBM bandwidth, and what one SM can pull on its own, GB/s.
  double memoryBandwidthGBs = 0;
  double perSMBandwidthGBs = 0;
  /// Fixed cost of one kernel launch, microseconds.
  double launchOverheadUs = 0;
  /// Rows of a CTA's Q tile are padded up to a multiple of this.
  int64_t rowQuantum = 64;
};

/// One attention problem and the kernel's tile sizes.
struct WaveProblem {
  int64_t batch = 1, heads = 1, kvHeads = 1;
  int64_t seqQ = 1, seqKV = 1;
  int64_t headDim = 64, headDimV = 64;
  int64_t elementBytes = 2;
  /// Query rows per head (Br) and keys (Bc) of one tile.
  int64_t blockQ = 1, blockKV = 1;
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

/// ceil(a / b) for a >= 0, b > 0, without overflow.
inline int64_t waveCeilDiv(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

/// Fills the wave counts and times of `p` from its per-CTA work (`ctas`,
/// `flopsPerCta`, `bytesPerCta`, `kernels` and `combineTimeUs` set).
inline void evaluateWaves(const WaveTarget &target, WavePrediction &p) {
  p.waves = waveCeilDiv(p.ctas, target.numSMs);
  int64_t active = std::max<int64_t>(1, std::min(p.ctas, target.numSMs));
  p.bandwidthPerCtaGBs = std::min(target.perSMBandwidthGBs,
                                  target.memoryBandwidthGBs / double(active));
  // TFLOP/s = 1e6 FLOP/us; GB/s = 1e3 B/us.
  double computeUs = p.flopsPerCta / (target.perSMPeakTflops * 1e6 *
                                      kTensorCoreEfficiency);
  double memoryUs = p.bytesPerCta / (p.bandwidthPerCtaGBs * 1e3);
  p.computeBound = computeUs > memoryUs;
  p.ctaTimeUs = std::max(computeUs, memoryUs);
  p.timeUs = p.waves * p.ctaTimeUs + p.kernels * target.launchOverheadUs +
             p.combineTimeUs;
}

/// The largest split count worth trying: every split keeps at least one
/// block of keys, and at most `maxSplits`.
inline int64_t getMaxSplitCount(const WaveProblem &p,
                                int64_t maxSplits = kDefaultMaxSplits) {
  int64_t blocks = waveCeilDiv(p.seqKV, std::max<int64_t>(p.blockKV, 1));
  return std::max<int64_t>(1, std::min(maxSplits, blocks));
}

/// The flashc FA2 schedule with the KV loop split `splits` ways: one CTA per
/// (batch, kv-head, Q block, split), the G query heads of a group packed as
/// G * Br rows of one tile padded up to the row quantum. Splits are
/// contiguous runs of ceil(Tc / S) KV blocks. A causal mask is not modelled.
/// The caller guarantees positive sizes and 1 <= splits <= Tc.
inline WavePrediction predictSplitKV(const WaveTarget &target,
                                     const WaveProblem &s, int64_t splits) {
  int64_t blocksKV = waveCeilDiv(s.seqKV, s.blockKV);
  int64_t blockQ = std::min(s.blockQ, s.seqQ);
  int64_t group = s.heads / s.kvHeads;
  int64_t rows = group * blockQ;
  int64_t quantum = std::max<int64_t>(1, target.rowQuantum);
  int64_t dqk = s.headDim, dv = s.headDimV, eb = s.elementBytes;

  WavePrediction p;
  p.splits = splits;
  p.kernels = splits > 1 ? 2 : 1;
  p.ctas = s.batch * s.kvHeads * waveCeilDiv(s.seqQ, blockQ) * splits;
  p.rowsPerCta = waveCeilDiv(rows, quantum) * quantum;
  p.keysPerCta =
      std::min(s.seqKV, waveCeilDiv(blocksKV, splits) * s.blockKV);
  p.flopsPerCta = 2.0 * p.rowsPerCta * p.keysPerCta * (dqk + dv);
  // The Q tile and the split's K and V in; the output rows (f32 partials
  // when split) and one log-sum-exp per row out.
  double outRow = splits > 1 ? 4.0 * (dv + 1) : double(dv * eb + 4);
  p.bytesPerCta = double(rows) * dqk * eb +
                  double(p.keysPerCta) * (dqk + dv) * eb + rows * outRow;
  if (splits > 1) {
    // The combine reads every split's partial row and log-sum-exp and
    // writes the output row and its log-sum-exp.
    double rowsTotal = double(s.batch) * s.heads * s.seqQ;
    double bytes = rowsTotal * (splits * 4.0 * (dv + 1) + dv * eb + 4);
    p.combineTimeUs = bytes / (target.memoryBandwidthGBs * 1e3);
  }
  evaluateWaves(target, p);
  return p;
}

/// Evaluates `predictSplitKV` for S = 1 .. getMaxSplitCount and returns the
/// fastest (on a tie, within a relative 1e-9, the fewer splits).
inline WavePrediction chooseSplitCount(const WaveTarget &target,
                                       const WaveProblem &s,
                                       int64_t maxSplits = kDefaultMaxSplits) {
  WavePrediction best = predictSplitKV(target, s, 1);
  int64_t cap = getMaxSplitCount(s, maxSplits);
  for (int64_t n = 2; n <= cap; ++n) {
    WavePrediction p = predictSplitKV(target, s, n);
    if (p.timeUs < best.timeUs * (1 - 1e-9))
      best = p;
  }
  return best;
}

} // namespace flashc

#endif // FLASHC_RUNTIME_WAVEMODEL_H
