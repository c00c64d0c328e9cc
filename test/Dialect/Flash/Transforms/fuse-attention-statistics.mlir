// The statistics of flash-fuse-attention on the inputs of
// fuse-attention.mlir read as one module: six chains fuse (one in each of
// the first four functions, two in @two_chains), the others do not.
//
// REQUIRES: pass-statistics
// RUN: flashc-opt %S/fuse-attention.mlir --flash-fuse-attention \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: Pass statistics report
// CHECK: {{^ *}}FlashFuseAttention{{$}}
// CHECK-NEXT: (S) 6 num-fused -
