// RUN: flashc-opt %s --split-input-file --verify-diagnostics \
// RUN:   --flash-llvm-grid-constants | FileCheck %s

// The tensor maps flash.grid_constants names become 128-byte by-value
// parameters read in place, 64-byte aligned; the other arguments and a
// kernel without the attribute are left as they are.
// CHECK-LABEL: llvm.func @kernel
// CHECK-SAME: (%arg0: !llvm.ptr {llvm.align = 16 : i64}, %arg1: i64,
// CHECK-SAME: %arg2: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg3: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-NOT: flash.grid_constants
// CHECK-SAME: attributes {nvvm.kernel}
// CHECK-LABEL: llvm.func @other
// CHECK-SAME: (%arg0: !llvm.ptr)
gpu.module @kernels {
  llvm.func @kernel(%q: !llvm.ptr {llvm.align = 16 : i64}, %n: i64,
                    %qmap: !llvm.ptr {llvm.align = 64 : i64},
                    %kmap: !llvm.ptr) attributes {flash.grid_constants = array<i64: 2, 3>, nvvm.kernel} {
    llvm.return
  }
  llvm.func @other(%p: !llvm.ptr) attributes {nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'llvm.func' op has flash.grid_constants position 1, which is not one of its pointer arguments}}
  llvm.func @kernel(%q: !llvm.ptr, %n: i64) attributes {flash.grid_constants = array<i64: 1>, nvvm.kernel} {
    llvm.return
  }
}
