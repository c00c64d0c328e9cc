// The GPU pipeline with format=bin: the toolkit's ptxas assembles the
// kernels, and the gpu.binary holds a cubin (an ELF object) for the chip
// instead of PTX text.
//
// REQUIRES: ptxas
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_80 format=bin" | FileCheck %s
// RUN: flashc-opt %s --flash-gpu-pipeline="chip=sm_90a format=bin" \
// RUN:   | FileCheck %s --check-prefix=SM90

// CHECK: gpu.binary @flash_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">
// CHECK-SAME: bin = "\7FELF
// CHECK-NOT: assembly =
// SM90: gpu.binary @flash_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// SM90-SAME: bin = "\7FELF

func.func @attention(%q: tensor<?x2x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                     %v: tensor<?x2x?x64xf16>) -> tensor<?x2x?x64xf16> {
  %o = flash.attention %q, %k, %v
      : tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x2x?x64xf16>
  return %o : tensor<?x2x?x64xf16>
}
