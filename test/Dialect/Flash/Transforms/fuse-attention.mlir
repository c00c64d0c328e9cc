// RUN: flashc-opt %s --split-input-file --flash-fuse-attention | FileCheck %s
// The same pass nested on functions through --pass-pipeline:
// RUN: flashc-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(flash-fuse-attention))" \
// RUN:   | FileCheck %s

//===----------------------------------------------------------------------===//
// Chains that fuse.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @mul_scale
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x128x64xf32>, %[[K:.+]]: tensor<2x8x256x64xf32>, %[[V:.+]]: tensor<2x8x256x32xf32>)
// CHECK-NEXT: %[[O:.+]] = flash.attention %[[Q]], %[[K]], %[[V]] scale = 1.250000e-01 : tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>, tensor<2x8x256x32xf32> -> tensor<2x8x128x32xf32>
// CHECK-NEXT: return %[[O]]
func.func @mul_scale(%q: tensor<2x8x128x64xf32>, %k: tensor<2x8x256x64xf32>,
                     %v: tensor<2x8x256x32xf32>) -> tensor<2x8x128x32xf32> {
  %s = flash.matmul %q, %k transpose_b
      : tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32> -> tensor<2x8x128x256xf32>
  %c = arith.constant dense<0.125> : tensor<2x8x128x256xf32>
  %t = arith.mulf %s, %c : tensor<2x8x128x256xf32>
  %p = flash.softmax %t : tensor<2x8x128x256xf32> -> tensor<2x8x128x256xf32>
  %o = flash.matmul %p, %v
      : tensor<2x8x128x256xf32>, tensor<2x8x256x32xf32> -> tensor<2x8x128x32xf32>
  return %o : tensor<2x8x128x32xf32>
}

// -----

// f16 operands with f32 scores, the scale on the softmax and a causal mask.
// CHECK-LABEL: func.func @f16_causal_softmax_scale
// CHECK-NEXT: %[[O:.+]] = flash.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 1.250000e-01 causal : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
// CHECK-NEXT: return %[[O]]
func.func @f16_causal_softmax_scale(%q: tensor<1x4x64x64xf16>, %k: tensor<1x4x64x64xf16>,
                                    %v: tensor<1x4x64x64xf16>) -> tensor<1x4x64x64xf16> {
  %s = flash.matmul %q, %k transpose_b
      : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf32>
  %p = flash.softmax %s scale = 0.125 causal : tensor<1x4x64x64xf32> -> tensor<1x4x64x64xf16>
  %o = flash.matmul %p, %v
      : tensor<1x4x64x64xf16>, tensor<1x4x64x64xf16> -> tensor<1x4x64x64xf16>
  return %o : tensor<1x4x64x64xf16>
}

// -----

// A division by sqrt(d) combined with the softmax's own scale.
// CHECK-LABEL: func.func @div_scale
// CHECK-NEXT: flash.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 6.250000e-02 : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xbf16>
// CHECK-NEXT: return
func.func @div_scale(%q: tensor<1x2x8x16xbf16>, %k: tensor<1x2x8x16xbf16>,
                     %v: tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16> {
  %s = flash.matmul %q, %k transpose_b
      : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x8xf32>
  %c = arith.constant dense<4.0> : tensor<1x2x8x8xf32>
  %t = arith.divf %s, %c : tensor<1x2x8x8xf32>
  %p = flash.softmax %t scale = 0.25 : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xbf16>
  %o = flash.matmul %p, %v
      : tensor<1x2x8x8xbf16>, tensor<1x2x8x16xbf16> -> tensor<1x2x8x16xbf16>
  return %o : tensor<1x2x8x16xbf16>
}

// -----

// Dynamic batch and sequence lengths; no scale anywhere gives scale 1.
// CHECK-LABEL: func.func @dynamic
// CHECK-NEXT: flash.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 1.000000e+00 : tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16> -> tensor<?x2x?x16xf16>
// CHECK-NEXT: return
func.func @dynamic(%q: tensor<?x2x?x16xf16>, %k: tensor<?x2x?x16xf16>,
                   %v: tensor<?x2x?x16xf16>) -> tensor<?x2x?x16xf16> {
  %s = flash.matmul %q, %k transpose_b
      : tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16> -> tensor<?x2x?x?xf32>
  %p = flash.softmax %s : tensor<?x2x?x?xf32> -> tensor<?x2x?x?xf16>
  %o = flash.matmul %p, %v
      : tensor<?x2x?x?xf16>, tensor<?x2x?x16xf16> -> tensor<?x2x?x16xf16>
  return %o : tensor<?x2x?x16xf16>
}

// -----

// The constant may be the left operand of mulf; two chains in one function
// both fuse.
// CHECK-LABEL: func.func @two_chains
// CHECK: flash.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 5.000000e-01 causal
// CHECK: flash.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 1.000000e+00 :
// CHECK-NOT: flash.matmul
func.func @two_chains(%q: tensor<1x1x8x8xf32>, %k: tensor<1x1x8x8xf32>, %v: tensor<1x1x8x8xf32>)
    -> (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>) {
  %s0 = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %c = arith.constant dense<0.5> : tensor<1x1x8x8xf32>
  %t0 = arith.mulf %c, %s0 : tensor<1x1x8x8xf32>
  %p0 = flash.softmax %t0 causal : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o0 = flash.matmul %p0, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %s1 = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %p1 = flash.softmax %s1 : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o1 = flash.matmul %p1, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o0, %o1 : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Graphs left unchanged.
//===----------------------------------------------------------------------===//

// The scores are also returned: fusing would lose them.
// CHECK-LABEL: func.func @scores_escape
// CHECK-NOT: flash.attention
// CHECK: flash.matmul
// CHECK: flash.softmax
// CHECK: flash.matmul
func.func @scores_escape(%q: tensor<1x1x8x8xf32>, %k: tensor<1x1x8x8xf32>, %v: tensor<1x1x8x8xf32>)
    -> (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>) {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %p = flash.softmax %s : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o, %s : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>
}

// -----

// The scaled scores have a second user.
// CHECK-LABEL: func.func @scaled_scores_escape
// CHECK-NOT: flash.attention
// CHECK: arith.mulf
// CHECK: flash.softmax
func.func @scaled_scores_escape(%q: tensor<1x1x8x8xf32>, %k: tensor<1x1x8x8xf32>, %v: tensor<1x1x8x8xf32>)
    -> (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>) {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %c = arith.constant dense<0.5> : tensor<1x1x8x8xf32>
  %t = arith.mulf %s, %c : tensor<1x1x8x8xf32>
  %p = flash.softmax %t : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o, %t : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>
}

// -----

// The probabilities feed two matmuls.
// CHECK-LABEL: func.func @probabilities_escape
// CHECK-NOT: flash.attention
// CHECK-COUNT-3: flash.matmul
func.func @probabilities_escape(%q: tensor<1x1x8x8xf32>, %k: tensor<1x1x8x8xf32>, %v: tensor<1x1x8x8xf32>)
    -> (tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>) {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %p = flash.softmax %s : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o2 = flash.matmul %p, %q : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o, %o2 : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32>
}

// -----

// Q . K without the transpose: K would have to be [B, H, D, Nk].
// CHECK-LABEL: func.func @k_not_transposed
// CHECK-NOT: flash.attention
// CHECK: flash.matmul %{{.+}}, %{{.+}} : tensor<1x1x8x16xf32>, tensor<1x1x16x8xf32>
func.func @k_not_transposed(%q: tensor<1x1x8x16xf32>, %kt: tensor<1x1x16x8xf32>, %v: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %s = flash.matmul %q, %kt : tensor<1x1x8x16xf32>, tensor<1x1x16x8xf32> -> tensor<1x1x8x8xf32>
  %p = flash.softmax %s : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// -----

// P . V^T reads V transposed.
// CHECK-LABEL: func.func @v_transposed
// CHECK-NOT: flash.attention
// CHECK: flash.matmul %{{.+}}, %{{.+}} transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x16x8xf32>
func.func @v_transposed(%q: tensor<1x1x8x16xf32>, %k: tensor<1x1x8x16xf32>, %vt: tensor<1x1x16x8xf32>)
    -> tensor<1x1x8x16xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x8x8xf32>
  %p = flash.softmax %s : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o = flash.matmul %p, %vt transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x16x8xf32> -> tensor<1x1x8x16xf32>
  return %o : tensor<1x1x8x16xf32>
}

// -----

// A softmax over the query axis is not attention.
// CHECK-LABEL: func.func @softmax_other_axis
// CHECK-NOT: flash.attention
// CHECK: flash.softmax %{{.+}} dim = 2
func.func @softmax_other_axis(%q: tensor<1x1x8x8xf32>, %k: tensor<1x1x8x8xf32>, %v: tensor<1x1x8x8xf32>)
    -> tensor<1x1x8x8xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %p = flash.softmax %s dim = 2 : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o : tensor<1x1x8x8xf32>
}

// -----

// A scale that is not one splat constant cannot become an attribute.
// CHECK-LABEL: func.func @non_splat_scale
// CHECK-NOT: flash.attention
// CHECK: arith.mulf
func.func @non_splat_scale(%q: tensor<1x1x2x2xf32>, %k: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>)
    -> tensor<1x1x2x2xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %c = arith.constant dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>
  %t = arith.mulf %s, %c : tensor<1x1x2x2xf32>
  %p = flash.softmax %t : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = flash.matmul %p, %v : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32> -> tensor<1x1x2x2xf32>
  return %o : tensor<1x1x2x2xf32>
}

// -----

// A scale computed at run time cannot become an attribute either.
// CHECK-LABEL: func.func @dynamic_scale
// CHECK-NOT: flash.attention
// CHECK: arith.mulf
func.func @dynamic_scale(%q: tensor<1x1x8x8xf32>, %k: tensor<1x1x8x8xf32>, %v: tensor<1x1x8x8xf32>,
                         %c: tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %t = arith.mulf %s, %c : tensor<1x1x8x8xf32>
  %p = flash.softmax %t : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o : tensor<1x1x8x8xf32>
}

// -----

// A negative combined scale is valid softmax but not a valid attention scale.
// CHECK-LABEL: func.func @negative_scale
// CHECK-NOT: flash.attention
// CHECK: flash.softmax %{{.+}} scale = -1.000000e+00
func.func @negative_scale(%q: tensor<1x1x8x8xf32>, %k: tensor<1x1x8x8xf32>, %v: tensor<1x1x8x8xf32>)
    -> tensor<1x1x8x8xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %p = flash.softmax %s scale = -1.0 : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  %o = flash.matmul %p, %v : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o : tensor<1x1x8x8xf32>
}

// -----

// Rank-3 tensors have no head dimension.
// CHECK-LABEL: func.func @rank3
// CHECK-NOT: flash.attention
// CHECK: flash.softmax
func.func @rank3(%q: tensor<4x8x8xf32>, %k: tensor<4x8x8xf32>, %v: tensor<4x8x8xf32>) -> tensor<4x8x8xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<4x8x8xf32>, tensor<4x8x8xf32> -> tensor<4x8x8xf32>
  %p = flash.softmax %s : tensor<4x8x8xf32> -> tensor<4x8x8xf32>
  %o = flash.matmul %p, %v : tensor<4x8x8xf32>, tensor<4x8x8xf32> -> tensor<4x8x8xf32>
  return %o : tensor<4x8x8xf32>
}

// -----

// f64 is not an attention element type.
// CHECK-LABEL: func.func @f64
// CHECK-NOT: flash.attention
// CHECK: flash.softmax
func.func @f64(%q: tensor<1x1x8x8xf64>, %k: tensor<1x1x8x8xf64>, %v: tensor<1x1x8x8xf64>) -> tensor<1x1x8x8xf64> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf64>, tensor<1x1x8x8xf64> -> tensor<1x1x8x8xf64>
  %p = flash.softmax %s : tensor<1x1x8x8xf64> -> tensor<1x1x8x8xf64>
  %o = flash.matmul %p, %v : tensor<1x1x8x8xf64>, tensor<1x1x8x8xf64> -> tensor<1x1x8x8xf64>
  return %o : tensor<1x1x8x8xf64>
}

// -----

// The output element type (f32) differs from the operands' (f16).
// CHECK-LABEL: func.func @widening_output
// CHECK-NOT: flash.attention
// CHECK: flash.softmax
func.func @widening_output(%q: tensor<1x1x8x8xf16>, %k: tensor<1x1x8x8xf16>, %v: tensor<1x1x8x8xf16>) -> tensor<1x1x8x8xf32> {
  %s = flash.matmul %q, %k transpose_b : tensor<1x1x8x8xf16>, tensor<1x1x8x8xf16> -> tensor<1x1x8x8xf32>
  %p = flash.softmax %s : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf16>
  %o = flash.matmul %p, %v : tensor<1x1x8x8xf16>, tensor<1x1x8x8xf16> -> tensor<1x1x8x8xf32>
  return %o : tensor<1x1x8x8xf32>
}
