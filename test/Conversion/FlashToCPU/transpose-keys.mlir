// flash-cpu-transpose-keys: one transposed copy of each key tensor, sliced
// per block, for the steps of tiled prefill; decode and strided slices.
// RUN: split-file %s %t
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=16" --canonicalize \
// RUN:   --flash-cpu-transpose-keys | FileCheck %s --check-prefix=PREFILL
// RUN: flashc-opt %t/decode.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-kv=16" --canonicalize \
// RUN:   --flash-cpu-transpose-keys | FileCheck %s --check-prefix=DECODE
// RUN: flashc-opt %t/decode-function.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=16" --canonicalize \
// RUN:   --flash-cpu-transpose-keys | FileCheck %s --check-prefix=DECODE-FN
// RUN: flashc-opt %t/strided.mlir --split-input-file \
// RUN:   --flash-cpu-transpose-keys -verify-diagnostics
// The CPU pipeline stops there too, with the error and no crash.
// RUN: not flashc-opt %t/strided.mlir --split-input-file --flash-cpu-pipeline 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PIPELINE --implicit-check-not="Stack dump"

// PIPELINE: error: 'tensor.extract_slice' op has stride 2 in dimension 0
// PIPELINE: error: 'tensor.insert_slice' op has stride 0 in dimension 2
// PIPELINE: error: 'tensor.parallel_insert_slice' op has stride (dynamic) in dimension 3

// The transpose is made once, at function level, before the tile loop.
// PREFILL-LABEL: func.func @prefill
// PREFILL-SAME: (%[[Q:.+]]: tensor<1x2x64x16xf32>, %[[K:.+]]: tensor<1x2x64x16xf32>, %[[V:.+]]: tensor<1x2x64x16xf32>)
// Its rows are padded by one cache line (16 f32), so that rows whose
// length is a multiple of 4 KiB do not share L1 sets.
// PREFILL: %[[E:.+]] = tensor.empty() : tensor<1x2x16x80xf32>
// PREFILL: %[[ES:.+]] = tensor.extract_slice %[[E]][0, 0, 0, 0] [1, 2, 16, 64] [1, 1, 1, 1] : tensor<1x2x16x80xf32> to tensor<1x2x16x64xf32>
// PREFILL: %[[KT:.+]] = linalg.transpose ins(%[[K]] : tensor<1x2x64x16xf32>) outs(%[[ES]] : tensor<1x2x16x64xf32>) permutation = [0, 1, 3, 2]
// PREFILL: scf.forall
// PREFILL: scf.for %[[J:[^ ]+]] =
// The [D, n] block of the copy replaces the [n, D] block of K.
// PREFILL: %[[KB:.+]] = tensor.extract_slice %[[KT]][0, %{{.+}}, 0, %[[J]]] [1, 1, 16, %{{.+}}] [1, 1, 1, 1] : tensor<1x2x16x64xf32> to tensor<16x?xf32>
// PREFILL-NOT: tensor.extract_slice %[[K]]
// PREFILL: flash.attention_step ins(%{{.+}}, %[[KB]], %{{.+}} : tensor<1x?x16xf32>, tensor<16x?xf32>, tensor<?x16xf32>)
// PREFILL-SAME: key_transposed
// PREFILL-NOT: linalg.transpose

// With a dynamic key length and bf16 keys, the padding is 32 elements.
// PREFILL-LABEL: func.func @prefill_dynamic
// PREFILL-SAME: (%{{.+}}: tensor<1x2x?x16xbf16>, %[[K:.+]]: tensor<1x2x?x16xbf16>, %{{.+}}: tensor<1x2x?x16xbf16>)
// PREFILL: %[[N:.+]] = tensor.dim %[[K]], %c2
// PREFILL: %[[NP:.+]] = arith.addi %[[N]], %c32
// PREFILL: %[[E:.+]] = tensor.empty(%[[NP]]) : tensor<1x2x16x?xbf16>
// PREFILL: %[[ES:.+]] = tensor.extract_slice %[[E]][0, 0, 0, 0] [1, 2, 16, %[[N]]] [1, 1, 1, 1]
// PREFILL: linalg.transpose ins(%[[K]] : tensor<1x2x?x16xbf16>) outs(%[[ES]] : tensor<1x2x16x?xbf16>)
// PREFILL: flash.attention_step
// PREFILL-SAME: key_transposed

// A Q tile that holds the whole query reads each key block once: no copy.
// DECODE-LABEL: func.func @decode
// DECODE-NOT: linalg.transpose
// DECODE: flash.attention_step
// DECODE-NOT: key_transposed
// DECODE-SAME: -> tensor<1x1x16xf32>

// A function marked flash.decode serves Nq <= 16 whatever its types say:
// no copy either.
// DECODE-FN-LABEL: func.func @decode_entry
// DECODE-FN-NOT: linalg.transpose
// DECODE-FN: flash.attention_step
// DECODE-FN-NOT: key_transposed
// DECODE-FN-SAME: -> tensor<1x?x16xf32>

//--- decode-function.mlir
func.func @decode_entry(%q: tensor<1x2x?x16xf32>, %k: tensor<1x2x?x16xf32>,
                        %v: tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32> attributes {flash.decode} {
  %o = flash.attention %q, %k, %v : tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32> -> tensor<1x2x?x16xf32>
  return %o : tensor<1x2x?x16xf32>
}

//--- prefill.mlir
func.func @prefill(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x64x16xf32>,
                   %v: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = flash.attention %q, %k, %v : tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32> -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

func.func @prefill_dynamic(%q: tensor<1x2x?x16xbf16>, %k: tensor<1x2x?x16xbf16>,
                           %v: tensor<1x2x?x16xbf16>) -> tensor<1x2x?x16xbf16> {
  %o = flash.attention %q, %k, %v : tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16>, tensor<1x2x?x16xbf16> -> tensor<1x2x?x16xbf16>
  return %o : tensor<1x2x?x16xbf16>
}

//--- decode.mlir
func.func @decode(%q: tensor<1x2x1x16xf32>, %k: tensor<1x2x64x16xf32>,
                  %v: tensor<1x2x64x16xf32>) -> tensor<1x2x1x16xf32> {
  %o = flash.attention %q, %k, %v : tensor<1x2x1x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32> -> tensor<1x2x1x16xf32>
  return %o : tensor<1x2x1x16xf32>
}

//--- strided.mlir
// MLIR 22 crashes bufferizing a rank-reducing slice with a non-unit stride
// in a dropped dimension; the CPU backend takes unit strides only.
func.func @static_stride(%q: tensor<2x2x64x16xf32>, %i: index) -> tensor<1x16x16xf32> {
  // expected-error @+1 {{'tensor.extract_slice' op has stride 2 in dimension 0; the CPU backend lowers unit-stride slices only}}
  %s = tensor.extract_slice %q[0, %i, 0, 0] [1, 1, 16, 16] [2, 1, 1, 1] : tensor<2x2x64x16xf32> to tensor<1x16x16xf32>
  return %s : tensor<1x16x16xf32>
}

// -----

func.func @zero_stride(%q: tensor<2x2x64x16xf32>, %t: tensor<16x16xf32>) -> tensor<2x2x64x16xf32> {
  // expected-error @+1 {{'tensor.insert_slice' op has stride 0 in dimension 2; the CPU backend lowers unit-stride slices only}}
  %s = tensor.insert_slice %t into %q[0, 0, 0, 0] [1, 1, 16, 16] [1, 1, 0, 1] : tensor<16x16xf32> into tensor<2x2x64x16xf32>
  return %s : tensor<2x2x64x16xf32>
}

// -----

func.func @dynamic_stride(%q: tensor<2x2x64x16xf32>, %st: index) -> tensor<2x2x64x16xf32> {
  %e = tensor.empty() : tensor<1x1x16x16xf32>
  %r = scf.forall (%i) in (2) shared_outs(%o = %q) -> (tensor<2x2x64x16xf32>) {
    scf.forall.in_parallel {
      // expected-error @+1 {{'tensor.parallel_insert_slice' op has stride (dynamic) in dimension 3; the CPU backend lowers unit-stride slices only}}
      tensor.parallel_insert_slice %e into %o[%i, 0, 0, 0] [1, 1, 16, 16] [1, 1, 1, %st] : tensor<1x1x16x16xf32> into tensor<2x2x64x16xf32>
    }
  }
  return %r : tensor<2x2x64x16xf32>
}
