//===- TargetInfo.cpp - Built-in target descriptions ----------------------===//
//
// The figures for sm_80 (A100) and sm_90a (H100/H200) are the vendor's
// published limits (flashc/Core/GPUTargets.h, which the runtime shares);
// the host CPU is described from what the OS reports.
//
//===----------------------------------------------------------------------===//

#include "flashc/Target/TargetInfo.h"

#include "flashc/Core/GPUTargets.h"

#include <thread>
#include <unistd.h>

using namespace mlir::flash;

namespace {

TargetInfo hostCPU() {
  TargetInfo t;
  t.name = "cpu";
  t.kind = TargetKind::CPU;
  long l2 = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
  l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  t.sramBytes = l2 > 0 ? l2 : 1 << 20;
  unsigned cores = std::thread::hardware_concurrency();
  t.numProcessors = cores ? cores : 1;
  t.memoryBandwidthGBs = 20;
  t.perProcessorBandwidthGBs = 20;
  t.launchOverheadUs = 2;
  // The kernels are register-blocked for the host's vector registers: 32 of
  // 16 lanes with AVX-512, else 16 of 8 (AVX2).
  t.vectorLanes = 8;
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f"))
    t.vectorLanes = 16;
  t.bf16DotProduct =
      t.vectorLanes == 16 && __builtin_cpu_supports("avx512bf16");
#endif
  // Two FMA pipes at ~3 GHz: 2 x lanes x 2 flops x 3e9.
  t.perProcessorPeakTflops = 2.0 * t.vectorLanes * 2 * 3e9 * 1e-12;
  return t;
}

TargetInfo gpu(const flashc::GPUTargetFigures &f) {
  TargetInfo t;
  t.name = f.name;
  t.kind = TargetKind::CUDA;
  t.sramBytes = f.sharedBytesPerBlock;
  t.numProcessors = f.numSMs;
  t.memoryBandwidthGBs = f.memoryBandwidthGBs;
  t.perProcessorBandwidthGBs = f.perSMBandwidthGBs;
  t.perProcessorPeakTflops = f.perSMPeakTflops;
  t.launchOverheadUs = f.launchOverheadUs;
  // mma.sync m16n8k16 on both; sm_90a's wgmma tiles are m64nNk16.
  bool hopper = std::string_view(f.name) == "sm_90a";
  t.mmaM = hopper ? 64 : 16;
  t.mmaN = hopper ? 256 : 8;
  t.mmaK = 16;
  t.maxRegistersPerThread = 255;
  return t;
}

} // namespace

llvm::Expected<TargetInfo> TargetInfo::get(llvm::StringRef name) {
  if (name == "cpu" || name == "host") {
    // Asking the OS for the cache size is slow; the host does not change.
    static const TargetInfo host = hostCPU();
    return host;
  }
  if (const flashc::GPUTargetFigures *f = flashc::findGPUTarget(name))
    return gpu(*f);
  return llvm::createStringError("unknown target '" + name +
                                 "'; known targets: " + knownTargets());
}

llvm::Expected<TargetInfo> TargetInfo::getGPU(llvm::StringRef name) {
  llvm::Expected<TargetInfo> target = get(name);
  if (target && !target->isGPU())
    return llvm::createStringError("target '" + target->name +
                                   "' is not a GPU");
  return target;
}
