// The statistics of flash-cpu-direct-finalize on the inputs of
// direct-finalize.mlir read as one module: the combines of @with_lse and
// @without_lse are versioned, with one finalize each; the other three are
// kept.
//
// REQUIRES: pass-statistics
// RUN: flashc-opt %S/direct-finalize.mlir --flash-cpu-direct-finalize \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: Pass statistics report
// CHECK: {{^ *}}FlashCPUDirectFinalize{{$}}
// CHECK-NEXT: (S) 3 num-combines-kept -
// CHECK-NEXT: (S) 2 num-combines-versioned -
// CHECK-NEXT: (S) 2 num-finalizes-versioned -
