// The statistics of flash-cpu-transpose-keys on the inputs of
// transpose-keys.mlir and widen-operands.mlir: the steps that read the
// transposed K, and the copies made (one per key tensor, however many
// steps read it).
//
// REQUIRES: pass-statistics
// RUN: split-file %S/transpose-keys.mlir %t
// RUN: split-file %S/widen-operands.mlir %t.widen
//
// Two functions with one step each: two copies.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=16" --canonicalize \
// RUN:   --flash-cpu-transpose-keys -mlir-pass-statistics \
// RUN:   -mlir-pass-statistics-display=list -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PREFILL
// PREFILL: {{^ *}}FlashCPUTransposeKeys{{$}}
// PREFILL-NEXT: (S) 2 num-copies -
// PREFILL-NEXT: (S) 2 num-steps-transposed -
//
// The unmasked and the masked loop of one causal attention read one copy.
// RUN: flashc-opt %t.widen/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=16" --flash-causal-skip \
// RUN:   --canonicalize --flash-cpu-widen-operands --flash-cpu-transpose-keys \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARED
// SHARED: {{^ *}}FlashCPUTransposeKeys{{$}}
// SHARED-NEXT: (S) 1 num-copies -
// SHARED-NEXT: (S) 2 num-steps-transposed -
//
// Decode reads each key block once: no copy.
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-kv=16" --canonicalize --flash-cpu-transpose-keys \
// RUN:   -mlir-pass-statistics -mlir-pass-statistics-display=list \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=DECODE
// DECODE: {{^ *}}FlashCPUTransposeKeys{{$}}
// DECODE-NEXT: (S) 0 num-copies -
// DECODE-NEXT: (S) 0 num-steps-transposed -
