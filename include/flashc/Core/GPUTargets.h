//===- GPUTargets.h - The GPU chips flashc compiles for ---------*- C++ -*-===//
//
// The published figures of the GPU targets, dependency-free so that both
// the compiler's TargetInfo and the LLVM-free runtime (which runs the CTA x
// wave model at launch with the device's actual SM count) read them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TARGET_GPUTARGETS_H
#define FLASHC_TARGET_GPUTARGETS_H

#include <cstdint>
#include <string_view>

namespace flashc {

struct GPUTargetFigures {
  const char *name;
  /// Opt-in maximum of shared memory per block, bytes.
  int64_t sharedBytesPerBlock;
  int64_t numSMs;
  /// HBM bandwidth, and what one decode CTA pulls on its own, GB/s: 48
  /// measured on an H200 (a GQA-4 D = 128 bf16 decode kernel, 64 CTAs
  /// at 45-51 GB/s each; docs/PERFORMANCE.md), taken for sm_80 too, where
  /// the same CTA keeps the same bytes in flight over a like latency.
  double memoryBandwidthGBs;
  double perSMBandwidthGBs;
  /// Dense f16/bf16 tensor-core peak of one SM, TFLOP/s.
  double perSMPeakTflops;
  /// Fixed cost of one kernel launch, microseconds.
  double launchOverheadUs;
  /// The oldest PTX ISA version (x10) that knows the chip.
  int64_t minPtxVersion;
};

/// sm_80 (A100) and sm_90a (H100/H200); null for any other name.
inline const GPUTargetFigures *findGPUTarget(std::string_view name) {
  static const GPUTargetFigures targets[] = {
      {"sm_80", 163 * 1024, 108, 1555, 48, 312.0 / 108, 5, 70},
      {"sm_90a", 227 * 1024, 132, 3350, 48, 989.0 / 132, 5, 80},
  };
  for (const GPUTargetFigures &t : targets)
    if (name == t.name)
      return &t;
  return nullptr;
}

} // namespace flashc

#endif // FLASHC_TARGET_GPUTARGETS_H
