// The statistics of flash-expand-to-cpu on the valid inputs of
// expand-to-cpu.mlir read as one module: seven steps (four with K
// pre-transposed, three reading K rows, of which @step_bf16 uses
// vdpbf16ps with bf16-dot), two finalizes, one combine and one widening
// copy (the f32 to f32 copy of @widen is not one).
//
// REQUIRES: pass-statistics
// RUN: split-file %S/expand-to-cpu.mlir %t
// RUN: flashc-opt %t/valid.mlir --flash-expand-to-cpu=bf16-dot=true \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefixes=CHECK,DOT
// RUN: flashc-opt %t/valid.mlir --flash-expand-to-cpu \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefixes=CHECK,NODOT

// CHECK-LABEL: Pass statistics report
// CHECK: {{^ *}}FlashExpandToCPU{{$}}
// CHECK-NEXT: (S) 1 num-combines -
// CHECK-NEXT: (S) 2 num-finalizes -
// CHECK-NEXT: (S) 0 num-key-transposes -
// DOT-NEXT: (S) 1 num-steps-bf16-dot -
// NODOT-NEXT: (S) 0 num-steps-bf16-dot -
// CHECK-NEXT: (S) 3 num-steps-key-rows -
// CHECK-NEXT: (S) 4 num-steps-transposed-k -
// CHECK-NEXT: (S) 1 num-widenings -
