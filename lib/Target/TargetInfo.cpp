//===- TargetInfo.cpp - Built-in target descriptions ----------------------===//
//
// The figures for sm_80 (A100) and sm_90a (H100/H200) are the vendor's
// published limits; the host CPU is described from what the OS reports.
//
//===----------------------------------------------------------------------===//

#include "flashc/Target/TargetInfo.h"

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
  // Two 512-bit FMA pipes at ~3 GHz: 2 x 16 lanes x 2 flops x 3e9.
  t.perProcessorPeakTflops = 0.19;
  t.launchOverheadUs = 2;
  t.vectorLanes = 16;
  return t;
}

TargetInfo sm80() {
  TargetInfo t;
  t.name = "sm_80";
  t.kind = TargetKind::CUDA;
  t.sramBytes = 163 * 1024; // opt-in maximum per block (164 KB per SM)
  t.numProcessors = 108;
  t.memoryBandwidthGBs = 1555;
  t.perProcessorBandwidthGBs = 80;
  t.perProcessorPeakTflops = 312.0 / 108; // dense f16 tensor cores
  t.launchOverheadUs = 5;
  t.mmaM = 16, t.mmaN = 8, t.mmaK = 16;
  t.maxRegistersPerThread = 255;
  return t;
}

TargetInfo sm90a() {
  TargetInfo t;
  t.name = "sm_90a";
  t.kind = TargetKind::CUDA;
  t.sramBytes = 227 * 1024; // opt-in maximum per block (228 KB per SM)
  t.numProcessors = 132;
  t.memoryBandwidthGBs = 3350;
  t.perProcessorBandwidthGBs = 80;
  t.perProcessorPeakTflops = 989.0 / 132; // dense f16/bf16 tensor cores
  t.launchOverheadUs = 5;
  t.mmaM = 64, t.mmaN = 256, t.mmaK = 16; // wgmma m64nNk16
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
  if (name == "sm_80")
    return sm80();
  if (name == "sm_90a")
    return sm90a();
  return llvm::createStringError("unknown target '" + name +
                                 "'; known targets: " + knownTargets());
}
