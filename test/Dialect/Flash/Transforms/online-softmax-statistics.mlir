// The statistics of flash-online-softmax on the inputs of
// online-softmax.mlir read as one module: each of its six flash.attention
// ops becomes an online loop.
//
// REQUIRES: pass-statistics
// RUN: flashc-opt %S/online-softmax.mlir --flash-online-softmax \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: Pass statistics report
// CHECK: {{^ *}}FlashOnlineSoftmax{{$}}
// CHECK-NEXT: (S) 6 num-rewritten -
