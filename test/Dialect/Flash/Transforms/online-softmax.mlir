// RUN: flashc-opt %s --split-input-file --flash-online-softmax=block-kv=64 | FileCheck %s
// The default block of 128 keys:
// RUN: flashc-opt %s --split-input-file --flash-online-softmax | FileCheck %s --check-prefix=DEFAULT
// The same pass nested on functions through --pass-pipeline:
// RUN: flashc-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(flash-online-softmax{block-kv=64}))" \
// RUN:   | FileCheck %s
//
// A block size that is not positive is an error.
// RUN: not flashc-opt %s --split-input-file --flash-online-softmax=block-kv=0 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ZERO
// RUN: not flashc-opt %s --split-input-file --flash-online-softmax=block-kv=-3 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEGATIVE
// RUN: not flashc-opt %s --split-input-file --flash-online-softmax=block-kv=1000000 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HUGE

// ZERO: error: flash-online-softmax: block-kv must be positive, got 0{{$}}
// NEGATIVE: error: flash-online-softmax: block-kv must be positive, got -3{{$}}
// HUGE: error: flash-online-softmax: block-kv must be from 1 to 65536, got 1000000{{$}}

//===----------------------------------------------------------------------===//
// Multi-head attention, static shapes.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @mha_static
// CHECK-SAME: (%[[Q:.+]]: tensor<1x8x128x64xf32>, %[[K:.+]]: tensor<1x8x256x64xf32>, %[[V:.+]]: tensor<1x8x256x32xf32>)
// Q is viewed as [B, Hkv, G, Nq, D] with G = 1.
// CHECK: %[[QE:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 128, 64] : tensor<1x8x128x64xf32> into tensor<1x8x1x128x64xf32>
// The state: acc = 0, m = -inf, l = 0, all f32.
// CHECK: %[[ZERO_A:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC0:.+]] = linalg.fill ins(%[[ZERO_A]] : f32) outs(%{{.+}} : tensor<1x8x1x128x32xf32>) -> tensor<1x8x1x128x32xf32>
// CHECK: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[M0:.+]] = linalg.fill ins(%[[NINF]] : f32) outs(%{{.+}} : tensor<1x8x1x128xf32>) -> tensor<1x8x1x128xf32>
// CHECK: %[[ZERO_L:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[L0:.+]] = linalg.fill ins(%[[ZERO_L]] : f32) outs(%{{.+}} : tensor<1x8x1x128xf32>) -> tensor<1x8x1x128xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[BLOCK:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[NK:.+]] = arith.constant 256 : index
// CHECK: %[[R:.+]]:3 = scf.for %[[J:.+]] = %[[C0]] to %[[NK]] step %[[BLOCK]] iter_args(%[[ACC:.+]] = %[[ACC0]], %[[M:.+]] = %[[M0]], %[[L:.+]] = %[[L0]])
// The last block is min(block-kv, Nk - j) keys.
// CHECK: %[[REST:.+]] = arith.subi %[[NK]], %[[J]] : index
// CHECK: %[[N:.+]] = arith.minsi %[[BLOCK]], %[[REST]] : index
// CHECK: %[[KB:.+]] = tensor.extract_slice %[[K]][0, 0, %[[J]], 0] [1, 8, %[[N]], 64] [1, 1, 1, 1] : tensor<1x8x256x64xf32> to tensor<1x8x?x64xf32>
// CHECK: %[[VB:.+]] = tensor.extract_slice %[[V]][0, 0, %[[J]], 0] [1, 8, %[[N]], 32] [1, 1, 1, 1] : tensor<1x8x256x32xf32> to tensor<1x8x?x32xf32>
// No mask without causal.
// CHECK-NOT: mask(
// CHECK: %[[S:.+]]:3 = flash.attention_step ins(%[[QE]], %[[KB]], %[[VB]] : tensor<1x8x1x128x64xf32>, tensor<1x8x?x64xf32>, tensor<1x8x?x32xf32>) outs(%[[ACC]], %[[M]], %[[L]] : tensor<1x8x1x128x32xf32>, tensor<1x8x1x128xf32>, tensor<1x8x1x128xf32>) scale = 1.250000e-01 -> tensor<1x8x1x128x32xf32>, tensor<1x8x1x128xf32>, tensor<1x8x1x128xf32>
// CHECK-NEXT: scf.yield %[[S]]#0, %[[S]]#1, %[[S]]#2
// CHECK-NEXT: } {flash.kv_loop}
// The destination is made in the result's shape and expanded.
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x8x128x32xf32>
// CHECK: %[[EE:.+]] = tensor.expand_shape %[[E]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 128, 32] : tensor<1x8x128x32xf32> into tensor<1x8x1x128x32xf32>
// CHECK: %[[F:.+]] = flash.finalize ins(%[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<1x8x1x128x32xf32>, tensor<1x8x1x128xf32>, tensor<1x8x1x128xf32>) outs(%[[EE]] : tensor<1x8x1x128x32xf32>) -> tensor<1x8x1x128x32xf32>
// CHECK: %[[O:.+]] = tensor.collapse_shape %[[F]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x8x1x128x32xf32> into tensor<1x8x128x32xf32>
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: flash.attention

// DEFAULT-LABEL: func.func @mha_static
// DEFAULT: %[[BLOCK:.+]] = arith.constant 128 : index
// DEFAULT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[BLOCK]] iter_args
// DEFAULT: } {flash.kv_loop}
func.func @mha_static(%q: tensor<1x8x128x64xf32>, %k: tensor<1x8x256x64xf32>,
                      %v: tensor<1x8x256x32xf32>) -> tensor<1x8x128x32xf32> {
  %o = flash.attention %q, %k, %v scale = 0.125
      : tensor<1x8x128x64xf32>, tensor<1x8x256x64xf32>, tensor<1x8x256x32xf32>
      -> tensor<1x8x128x32xf32>
  return %o : tensor<1x8x128x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// GQA, dynamic batch and sequence lengths, causal.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @gqa_dynamic_causal
// CHECK-SAME: (%[[Q:.+]]: tensor<?x8x?x64xf16>, %[[K:.+]]: tensor<?x2x?x64xf16>, %[[V:.+]]: tensor<?x2x?x64xf16>)
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<?x8x?x64xf16>
// CHECK-DAG: %[[NQ:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<?x8x?x64xf16>
// CHECK-DAG: %[[NK:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<?x2x?x64xf16>
// 8 query heads over 2 KV heads: G = 4.
// CHECK: %[[QE:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1, 2], [3], [4]] output_shape [%[[B]], 2, 4, %[[NQ]], 64] : tensor<?x8x?x64xf16> into tensor<?x2x4x?x64xf16>
// CHECK: %[[E0:.+]] = tensor.empty(%[[B]], %[[NQ]]) : tensor<?x2x4x?x64xf32>
// CHECK: %[[ACC0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E0]] : tensor<?x2x4x?x64xf32>)
// CHECK: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[M0:.+]] = linalg.fill ins(%[[NINF]] : f32) outs(%{{.+}} : tensor<?x2x4x?xf32>)
// CHECK: %[[L0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x2x4x?xf32>)
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[BLOCK:.+]] = arith.constant 64 : index
// The causal alignment Nk - Nq.
// CHECK-DAG: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK: %[[R:.+]]:3 = scf.for %[[J:.+]] = %[[C0]] to %[[NK]] step %[[BLOCK]] iter_args(%[[ACC:.+]] = %[[ACC0]], %[[M:.+]] = %[[M0]], %[[L:.+]] = %[[L0]]) -> (tensor<?x2x4x?x64xf32>, tensor<?x2x4x?xf32>, tensor<?x2x4x?xf32>)
// CHECK: %[[REST:.+]] = arith.subi %[[NK]], %[[J]] : index
// CHECK: %[[N:.+]] = arith.minsi %[[BLOCK]], %[[REST]] : index
// CHECK: %[[KB:.+]] = tensor.extract_slice %[[K]][0, 0, %[[J]], 0] [%[[B]], 2, %[[N]], 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x2x?x64xf16>
// CHECK: %[[VB:.+]] = tensor.extract_slice %[[V]][0, 0, %[[J]], 0] [%[[B]], 2, %[[N]], 64] [1, 1, 1, 1] : tensor<?x2x?x64xf16> to tensor<?x2x?x64xf16>
// The mask offset (Nk - Nq) - j; the default scale 1/sqrt(64).
// CHECK: %[[OFF:.+]] = arith.subi %[[DIAG]], %[[J]] : index
// CHECK: flash.attention_step ins(%[[QE]], %[[KB]], %[[VB]] : tensor<?x2x4x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>) mask(%[[OFF]]) outs(%[[ACC]], %[[M]], %[[L]] : tensor<?x2x4x?x64xf32>, tensor<?x2x4x?xf32>, tensor<?x2x4x?xf32>) scale = 1.250000e-01
// CHECK: } {flash.kv_loop}
// CHECK: %[[E:.+]] = tensor.empty(%[[B]], %[[NQ]]) : tensor<?x8x?x64xf16>
// CHECK: %[[EE:.+]] = tensor.expand_shape %[[E]] {{\[}}[0], [1, 2], [3], [4]] output_shape [%[[B]], 2, 4, %[[NQ]], 64] : tensor<?x8x?x64xf16> into tensor<?x2x4x?x64xf16>
// CHECK: %[[F:.+]] = flash.finalize ins(%[[R]]#0, %[[R]]#1, %[[R]]#2 : {{.+}}) outs(%[[EE]] : tensor<?x2x4x?x64xf16>) -> tensor<?x2x4x?x64xf16>
// CHECK: %[[O:.+]] = tensor.collapse_shape %[[F]] {{\[}}[0], [1, 2], [3], [4]] : tensor<?x2x4x?x64xf16> into tensor<?x8x?x64xf16>
// CHECK-NEXT: return %[[O]]
func.func @gqa_dynamic_causal(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                              %v: tensor<?x2x?x64xf16>) -> tensor<?x8x?x64xf16> {
  %o = flash.attention %q, %k, %v causal
      : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>
      -> tensor<?x8x?x64xf16>
  return %o : tensor<?x8x?x64xf16>
}

// -----

//===----------------------------------------------------------------------===//
// The log-sum-exp result.
//===----------------------------------------------------------------------===//

// Nk = 100 is not a multiple of the block: the loop still runs to Nk and the
// last block is min(64, 100 - j) = 36 keys.
// CHECK-LABEL: func.func @lse
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x16x32xbf16>, %[[K:.+]]: tensor<2x4x100x32xbf16>, %[[V:.+]]: tensor<2x4x100x32xbf16>)
// CHECK-DAG: %[[NK:.+]] = arith.constant 100 : index
// CHECK-DAG: %[[NQ:.+]] = arith.constant 16 : index
// CHECK: %[[DIAG:.+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK: %[[R:.+]]:3 = scf.for %[[J:.+]] = %{{.+}} to %[[NK]] step %{{.+}} iter_args
// CHECK: %[[OFF:.+]] = arith.subi %[[DIAG]], %[[J]] : index
// CHECK: flash.attention_step ins({{.+}}) mask(%[[OFF]]) outs({{.+}}) scale = 5.000000e-01
// CHECK: } {flash.kv_loop}
// CHECK: %[[EO:.+]] = tensor.empty() : tensor<2x4x16x32xbf16>
// CHECK: %[[EOE:.+]] = tensor.expand_shape %[[EO]] {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 4, 1, 16, 32] : tensor<2x4x16x32xbf16> into tensor<2x4x1x16x32xbf16>
// CHECK: %[[EL:.+]] = tensor.empty() : tensor<2x4x16xf32>
// CHECK: %[[ELE:.+]] = tensor.expand_shape %[[EL]] {{\[}}[0], [1, 2], [3]] output_shape [2, 4, 1, 16] : tensor<2x4x16xf32> into tensor<2x4x1x16xf32>
// CHECK: %[[F:.+]]:2 = flash.finalize ins(%[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x4x1x16x32xf32>, tensor<2x4x1x16xf32>, tensor<2x4x1x16xf32>) outs(%[[EOE]], %[[ELE]] : tensor<2x4x1x16x32xbf16>, tensor<2x4x1x16xf32>) -> tensor<2x4x1x16x32xbf16>, tensor<2x4x1x16xf32>
// CHECK: %[[O:.+]] = tensor.collapse_shape %[[F]]#0 {{\[}}[0], [1, 2], [3], [4]] : tensor<2x4x1x16x32xbf16> into tensor<2x4x16x32xbf16>
// CHECK: %[[LSE:.+]] = tensor.collapse_shape %[[F]]#1 {{\[}}[0], [1, 2], [3]] : tensor<2x4x1x16xf32> into tensor<2x4x16xf32>
// CHECK-NEXT: return %[[O]], %[[LSE]]
func.func @lse(%q: tensor<2x4x16x32xbf16>, %k: tensor<2x4x100x32xbf16>,
               %v: tensor<2x4x100x32xbf16>)
    -> (tensor<2x4x16x32xbf16>, tensor<2x4x16xf32>) {
  %o, %l = flash.attention %q, %k, %v scale = 0.5 causal
      : tensor<2x4x16x32xbf16>, tensor<2x4x100x32xbf16>, tensor<2x4x100x32xbf16>
      -> tensor<2x4x16x32xbf16>, tensor<2x4x16xf32>
  return %o, %l : tensor<2x4x16x32xbf16>, tensor<2x4x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Two attentions in one function both become loops.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @two_attentions
// CHECK: scf.for
// CHECK: flash.attention_step
// CHECK-NOT: mask(
// CHECK: } {flash.kv_loop}
// CHECK: flash.finalize
// CHECK: scf.for
// CHECK: flash.attention_step {{.+}} mask(
// CHECK: } {flash.kv_loop}
// CHECK: flash.finalize
// CHECK-NOT: flash.attention
func.func @two_attentions(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x8x16xf32>,
                          %v: tensor<1x1x8x16xf32>)
    -> (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>) {
  %o0 = flash.attention %q, %k, %v
      : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x8x16xf32>
  %o1 = flash.attention %q, %k, %v causal
      : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x8x16xf32>
  return %o0, %o1 : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Functions without attention are left unchanged.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @no_attention
// CHECK-SAME: (%[[A:.+]]: tensor<1x1x8x8xf32>, %[[B:.+]]: tensor<1x1x8x8xf32>)
// CHECK-NEXT: %[[S:.+]] = flash.matmul %[[A]], %[[B]] transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
// CHECK-NEXT: %[[P:.+]] = flash.softmax %[[S]] : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
// CHECK-NEXT: return %[[P]]
// CHECK-NOT: scf.for
func.func @no_attention(%a: tensor<1x1x8x8xf32>, %b: tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32> {
  %s = flash.matmul %a, %b transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %p = flash.softmax %s : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %p : tensor<1x1x8x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// A run-time scale factor reaches every step, beside the compile-time scale.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @scale_factor
// CHECK-SAME: %[[S:[^:]+]]: f32
// CHECK: flash.attention_step {{.+}} scale = 1.000000e+00 scale_factor(%[[S]])
// DEFAULT-LABEL: func.func @scale_factor
// DEFAULT: flash.attention_step {{.+}} scale_factor(
func.func @scale_factor(%q: tensor<1x2x8x16xf32>, %k: tensor<1x1x80x16xf32>,
                        %v: tensor<1x1x80x16xf32>, %s: f32) -> tensor<1x2x8x16xf32> {
  %o = flash.attention %q, %k, %v scale = 1.0 scale_factor(%s) causal
      : tensor<1x2x8x16xf32>, tensor<1x1x80x16xf32>, tensor<1x1x80x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
