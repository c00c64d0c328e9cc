//===- TargetInfo.h - What the passes need to know of a target --*- C++ -*-===//
//
// A TargetInfo describes the machine a kernel is compiled for, in the terms
// the target-independent passes need: the capacity of the fast memory that
// plays the role of SRAM (shared memory per block on a GPU, the per-core L2
// on a CPU), the number of parallel processors (SMs or cores), memory
// bandwidth and compute peaks for the cost model, and the MMA shape.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TARGET_TARGETINFO_H
#define FLASHC_TARGET_TARGETINFO_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace flash {

enum class TargetKind { CPU, CUDA };

struct TargetInfo {
  /// "cpu", "sm_80" or "sm_90a".
  std::string name;
  TargetKind kind = TargetKind::CPU;
  /// Bytes of fast on-chip memory one block of work may use: the opt-in
  /// maximum of shared memory per block on a GPU, the per-core L2 on a CPU.
  int64_t sramBytes = 0;
  /// Streaming multiprocessors on a GPU, cores on a CPU.
  int64_t numProcessors = 0;
  /// Sustained memory bandwidth in GB/s (HBM on a GPU, DRAM on a CPU).
  double memoryBandwidthGBs = 0;
  /// Bandwidth one SM can pull on its own (Little's law: bytes in flight /
  /// latency), in GB/s. Used by the CTA x wave model.
  double perProcessorBandwidthGBs = 0;
  /// Dense 16-bit matrix peak of one SM (or fp32 FMA peak of one core), in
  /// TFLOP/s.
  double perProcessorPeakTflops = 0;
  /// Fixed cost of one kernel launch, in microseconds.
  double launchOverheadUs = 0;
  /// Warp-level MMA shape (m, n, k) for 16-bit inputs; zero on the CPU.
  int64_t mmaM = 0, mmaN = 0, mmaK = 0;
  /// Maximum 32-bit registers per thread; zero on the CPU.
  int64_t maxRegistersPerThread = 0;
  /// Width in f32 lanes of the CPU's vector registers; zero on a GPU.
  int64_t vectorLanes = 0;
  /// CPU: the host has AVX512_BF16's dot product of bf16 pairs
  /// (vdpbf16ps); false on a GPU.
  bool bf16DotProduct = false;

  bool isGPU() const { return kind == TargetKind::CUDA; }
  /// Whether the GPU multiplies by warpgroups (sm_90a's wgmma, m64nNk16),
  /// which its prefill tiles are sized for.
  bool hasWarpgroupMma() const { return isGPU() && mmaM == 64; }

  /// The names `get` accepts, for diagnostics.
  static llvm::StringRef knownTargets() { return "cpu, sm_80, sm_90a"; }

  /// Returns the description of a named target, or an error naming the
  /// known ones. "cpu" describes the host (cores and L2 read from the OS).
  static llvm::Expected<TargetInfo> get(llvm::StringRef name);

  /// Like `get`, and an error "target 'NAME' is not a GPU" for the CPU:
  /// what a GPU pass's target option must name.
  static llvm::Expected<TargetInfo> getGPU(llvm::StringRef name);
};

} // namespace flash
} // namespace mlir

#endif // FLASHC_TARGET_TARGETINFO_H
