// The statistics of flash-report-cost on three inputs of report-cost.mlir
// read as one module: one report per flash.attention.
//
// REQUIRES: pass-statistics
// RUN: split-file %S/report-cost.mlir %t
// RUN: cat %t/seed.mlir %t/causal.mlir %t/decode.mlir \
// RUN:   | flashc-opt --flash-report-cost -mlir-pass-statistics \
// RUN:     -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s

// CHECK-LABEL: Pass statistics report
// CHECK: {{^ *}}FlashReportCost{{$}}
// CHECK-NEXT: (S) 3 num-reported -
