// The statistics of flash-cpu-dynamic-schedule on the input of
// dynamic-schedule.mlir: of its two omp.wsloop ops, the one without a
// schedule gets schedule(dynamic).
//
// REQUIRES: pass-statistics
// RUN: flashc-opt %S/dynamic-schedule.mlir --flash-cpu-dynamic-schedule \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: Pass statistics report
// CHECK: {{^ *}}FlashCPUDynamicSchedule{{$}}
// CHECK-NEXT: (S) 1 num-scheduled -
