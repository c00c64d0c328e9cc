// The statistics of flash-cpu-widen-operands on the inputs of
// widen-operands.mlir: the two steps of a causal bf16 prefill read f32
// copies of its Q, K and V (three copies); no step of the unchanged input
// does.
//
// REQUIRES: pass-statistics
// RUN: split-file %S/widen-operands.mlir %t
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=16" --flash-causal-skip \
// RUN:   --canonicalize --flash-cpu-widen-operands -mlir-pass-statistics \
// RUN:   -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PREFILL
// RUN: flashc-opt %t/unchanged.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=16" --canonicalize \
// RUN:   --flash-cpu-widen-operands -mlir-pass-statistics \
// RUN:   -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SAME

// PREFILL: {{^ *}}FlashCPUWidenOperands{{$}}
// PREFILL-NEXT: (S) 3 num-copies -
// PREFILL-NEXT: (S) 2 num-steps-widened -

// SAME: {{^ *}}FlashCPUWidenOperands{{$}}
// SAME-NEXT: (S) 0 num-copies -
// SAME-NEXT: (S) 0 num-steps-widened -
