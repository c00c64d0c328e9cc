//===- WaveModel.cpp - The CTA x wave model -------------------------------===//

#include "flashc/Core/WaveModel.h"

#include "flashc/Core/GPUSchedule.h"
#include "flashc/Core/GPUTargets.h"
#include "flashc/Support/Sizes.h"

#include <algorithm>
#include <vector>

using namespace flashc;

WaveTarget flashc::getWaveTarget(std::string_view chip, int64_t numSMs,
                                 double memoryBandwidthGBs) {
  const GPUTargetFigures *f = findGPUTarget(chip);
  if (!f)
    f = findGPUTarget("sm_80");
  WaveTarget t;
  t.numSMs = numSMs > 0 ? numSMs : f->numSMs;
  t.perSMPeakTflops = f->perSMPeakTflops;
  t.memoryBandwidthGBs =
      memoryBandwidthGBs > 0 ? memoryBandwidthGBs : f->memoryBandwidthGBs;
  t.perSMBandwidthGBs = f->perSMBandwidthGBs;
  t.launchOverheadUs = f->launchOverheadUs;
  t.rowQuantum = kMmaRows;
  return t;
}

void flashc::evaluateWaves(const WaveTarget &target, WavePrediction &p) {
  p.waves = ceilDiv(p.ctas, target.numSMs);
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

int64_t flashc::getMaxSplitCount(const AttentionProblem &problem,
                                 int64_t blockKV, int64_t maxSplits) {
  int64_t blocks = ceilDiv(problem.seqKV, std::max<int64_t>(blockKV, 1));
  return std::max<int64_t>(1, std::min(maxSplits, blocks));
}

WavePrediction flashc::predictSplitKV(const WaveTarget &target,
                                      const AttentionProblem &s,
                                      int64_t blockQ, int64_t blockKV,
                                      int64_t splits) {
  int64_t blocksKV = ceilDiv(s.seqKV, blockKV);
  blockQ = std::min(blockQ, s.seqQ);
  int64_t rows = s.group() * blockQ;
  int64_t quantum = std::max<int64_t>(1, target.rowQuantum);
  int64_t dqk = s.headDim, dv = s.valueDim(), eb = s.elementBytes();

  WavePrediction p;
  p.splits = splits;
  p.kernels = splits > 1 ? 2 : 1;
  p.ctas = s.batch * s.kvHeads * ceilDiv(s.seqQ, blockQ) * splits;
  // A GPU's CTA computes its flash_tile kernel's MMA row tiles (a GQA
  // tile's rounded up to a power of two); the CPU's, multiples of its
  // quantum.
  p.rowsPerCta =
      quantum == kMmaRows
          ? tileRowTiles(s.group(), blockQ, /*wideWarps=*/true) * kMmaRows
          : ceilDiv(rows, quantum) * quantum;
  p.keysPerCta = std::min(s.seqKV, ceilDiv(blocksKV, splits) * blockKV);
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

WavePrediction flashc::chooseSplitCount(const WaveTarget &target,
                                        const AttentionProblem &s,
                                        int64_t blockQ, int64_t blockKV,
                                        int64_t maxSplits) {
  int64_t cap = getMaxSplitCount(s, blockKV, maxSplits);
  int64_t blocks = ceilDiv(s.seqKV, std::max<int64_t>(blockKV, 1));
  // Split counts that give a split the same number of blocks,
  // ceil(blocks / S), give every CTA the same work; more of them only add
  // CTAs (waves, fewer GB/s each), partials and the combine's reads, so
  // the prediction never falls as S grows among them. The smallest S of
  // each such run, ceil(blocks / k) for k blocks a split, is therefore
  // the only one that can be the fastest or the first within the
  // tolerance: about 2 sqrt(blocks) counts instead of every one (the
  // runtime chooses at each decode call).
  std::vector<WavePrediction> predictions;
  for (int64_t n = 1; n <= cap;) {
    predictions.push_back(predictSplitKV(target, s, blockQ, blockKV, n));
    int64_t k = ceilDiv(blocks, n);
    if (k <= 1)
      break;
    n = ceilDiv(blocks, k - 1);
  }
  double fastest = std::min_element(predictions.begin(), predictions.end(),
                                    [](const WavePrediction &a,
                                       const WavePrediction &b) {
                                      return a.timeUs < b.timeUs;
                                    })
                       ->timeUs;
  // The fastest is within the tolerance of itself: one is always found.
  return *std::find_if(predictions.begin(), predictions.end(),
                       [&](const WavePrediction &p) {
                         return p.timeUs <= fastest * (1 + kSplitTolerance);
                       });
}
