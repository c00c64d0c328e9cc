// flash-cpu-widen-operands: one f32 copy of each f16/bf16 tensor whose
// blocks the tiled prefill steps read; f32 operands, decode functions and
// Q tiles that hold the whole query are left alone.
// RUN: split-file %s %t
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=16" --flash-causal-skip \
// RUN:   --canonicalize --flash-cpu-widen-operands | FileCheck %s --check-prefix=PREFILL
// RUN: flashc-opt %t/unchanged.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=16" --canonicalize \
// RUN:   --flash-cpu-widen-operands | FileCheck %s --check-prefix=SAME
// The copies come before the transposed copy of K, which is made from the
// f32 copy.
// RUN: flashc-opt %t/prefill.mlir --flash-online-softmax \
// RUN:   --flash-tile="block-q=16 block-kv=16" --flash-causal-skip \
// RUN:   --canonicalize --flash-cpu-widen-operands --flash-cpu-transpose-keys \
// RUN:   | FileCheck %s --check-prefix=TRANSPOSE

// GQA, causal (two KV loops): Q, K and V are each copied once, at
// function level, and both steps read f32 blocks of the copies with the
// offsets and sizes of the bf16 blocks they replace.
// PREFILL-LABEL: func.func @prefill
// PREFILL-SAME: (%[[Q:.+]]: tensor<1x8x?x64xbf16>, %[[K:.+]]: tensor<1x2x?x64xbf16>, %[[V:.+]]: tensor<1x2x?x64xbf16>)
// PREFILL-DAG: %[[VW:.+]] = linalg.copy ins(%[[V]] : tensor<1x2x?x64xbf16>) outs(%{{.+}} : tensor<1x2x?x64xf32>) -> tensor<1x2x?x64xf32>
// PREFILL-DAG: %[[KW:.+]] = linalg.copy ins(%[[K]] : tensor<1x2x?x64xbf16>) outs(%{{.+}} : tensor<1x2x?x64xf32>) -> tensor<1x2x?x64xf32>
// PREFILL-DAG: %[[QW:.+]] = linalg.copy ins(%[[Q]] : tensor<1x8x?x64xbf16>) outs(%{{.+}} : tensor<1x8x?x64xf32>) -> tensor<1x8x?x64xf32>
// PREFILL: scf.forall
// PREFILL: scf.for
// PREFILL: %[[QB:.+]] = tensor.extract_slice %[[QW]][0, %{{.+}}, %{{.+}}, 0] [1, 4, %{{.+}}, 64] [1, 1, 1, 1] : tensor<1x8x?x64xf32> to tensor<4x?x64xf32>
// PREFILL: %[[KB:.+]] = tensor.extract_slice %[[KW]][0, %{{.+}}, %{{.+}}, 0] [1, 1, %{{.+}}, 64] [1, 1, 1, 1] : tensor<1x2x?x64xf32> to tensor<?x64xf32>
// PREFILL: %[[VB:.+]] = tensor.extract_slice %[[VW]][0, %{{.+}}, %{{.+}}, 0] [1, 1, %{{.+}}, 64] [1, 1, 1, 1] : tensor<1x2x?x64xf32> to tensor<?x64xf32>
// PREFILL: flash.attention_step ins(%[[QB]], %[[KB]], %[[VB]] : tensor<4x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>)
// PREFILL: scf.for
// PREFILL: flash.attention_step ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<4x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) mask
// PREFILL-NOT: linalg.copy
// The output stays bf16.
// PREFILL: flash.finalize
// PREFILL-SAME: outs(%{{.+}} : tensor<4x?x64xbf16>)

// TRANSPOSE-LABEL: func.func @prefill
// TRANSPOSE-SAME: (%{{[^:]+}}: tensor<1x8x?x64xbf16>, %[[K:[^:]+]]: tensor<1x2x?x64xbf16>, %{{[^:]+}}: tensor<1x2x?x64xbf16>)
// TRANSPOSE: %[[KW:.+]] = linalg.copy ins(%[[K]] : tensor<1x2x?x64xbf16>) outs(%{{.+}} : tensor<1x2x?x64xf32>)
// TRANSPOSE: linalg.transpose ins(%[[KW]] : tensor<1x2x?x64xf32>)
// TRANSPOSE: flash.attention_step ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<4x?x64xf32>, tensor<64x?xf32>, tensor<?x64xf32>)
// TRANSPOSE-SAME: key_transposed

// SAME-LABEL: func.func @f32
// SAME-NOT: linalg.copy
// SAME: flash.attention_step ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>)
// SAME-LABEL: func.func @decode_entry
// SAME-NOT: linalg.copy
// SAME: flash.attention_step ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x?x16xf16>, tensor<?x16xf16>, tensor<?x16xf16>)
// SAME-LABEL: func.func @whole_query
// SAME-NOT: linalg.copy
// SAME: flash.attention_step ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x16x16xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>)
// SAME-NOT: linalg.copy

//--- prefill.mlir
func.func @prefill(%q: tensor<1x8x?x64xbf16>, %k: tensor<1x2x?x64xbf16>,
                   %v: tensor<1x2x?x64xbf16>) -> tensor<1x8x?x64xbf16> {
  %o = flash.attention %q, %k, %v causal : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x8x?x64xbf16>
  return %o : tensor<1x8x?x64xbf16>
}

//--- unchanged.mlir
func.func @f32(%q: tensor<1x2x?x64xf32>, %k: tensor<1x2x?x64xf32>,
               %v: tensor<1x2x?x64xf32>) -> tensor<1x2x?x64xf32> {
  %o = flash.attention %q, %k, %v : tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32> -> tensor<1x2x?x64xf32>
  return %o : tensor<1x2x?x64xf32>
}

// Decode serves Nq <= 16 whatever its types say: each block is read once.
func.func @decode_entry(%q: tensor<1x2x?x16xf16>, %k: tensor<1x2x?x16xf16>,
                        %v: tensor<1x2x?x16xf16>) -> tensor<1x2x?x16xf16> attributes {flash.decode} {
  %o = flash.attention %q, %k, %v : tensor<1x2x?x16xf16>, tensor<1x2x?x16xf16>, tensor<1x2x?x16xf16> -> tensor<1x2x?x16xf16>
  return %o : tensor<1x2x?x16xf16>
}

// One Q tile holds the whole query: each key block is read once.
func.func @whole_query(%q: tensor<1x2x16x16xbf16>, %k: tensor<1x2x64x16xbf16>,
                       %v: tensor<1x2x64x16xbf16>) -> tensor<1x2x16x16xbf16> {
  %o = flash.attention %q, %k, %v : tensor<1x2x16x16xbf16>, tensor<1x2x64x16xbf16>, tensor<1x2x64x16xbf16> -> tensor<1x2x16x16xbf16>
  return %o : tensor<1x2x16x16xbf16>
}
