// The statistics of flash-cpu-bind-split-count on the inputs of
// bind-split-count.mlir, one report per part: @bound binds its two
// flash.split_count ops, @untouched has none.
//
// REQUIRES: pass-statistics
// RUN: flashc-opt %S/bind-split-count.mlir --split-input-file \
// RUN:   --flash-cpu-bind-split-count -verify-diagnostics \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: Pass statistics report
// CHECK: {{^ *}}FlashCPUBindSplitCount{{$}}
// CHECK-NEXT: (S) 2 num-bound -
// CHECK-LABEL: Pass statistics report
// CHECK: {{^ *}}FlashCPUBindSplitCount{{$}}
// CHECK-NEXT: (S) 0 num-bound -
