// RUN: flashc-opt %s --split-input-file --verify-diagnostics

//===----------------------------------------------------------------------===//
// flash.matmul
//===----------------------------------------------------------------------===//

func.func @matmul_rank1(%a: tensor<64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{lhs must have rank >= 2, got rank 1}}
  %0 = flash.matmul %a, %b : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%a: tensor<2x4x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{rhs rank (2) does not match lhs rank (3)}}
  %0 = flash.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

func.func @matmul_result_rank(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{result rank (3) does not match lhs rank (2)}}
  %0 = flash.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<1x4x4xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<4x8xf16>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{lhs element type ('f16') does not match rhs element type ('f32')}}
  %0 = flash.matmul %a, %b : tensor<4x8xf16>, tensor<8x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @matmul_integer(%a: tensor<4x8xi32>, %b: tensor<8x4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of floating-point values}}
  %0 = flash.matmul %a, %b : tensor<4x8xi32>, tensor<8x4xi32> -> tensor<4x4xi32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{rhs batch dimension 0 (3) does not match lhs batch dimension 0 (2)}}
  %0 = flash.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

func.func @matmul_result_batch(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+1 {{result batch dimension 0 (5) does not match lhs batch dimension 0 (2)}}
  %0 = flash.matmul %a, %b : tensor<2x4x8xf32>, tensor<2x8x4xf32> -> tensor<5x4x4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<16x4xf32>) {
  // expected-error @+1 {{contraction dimension of lhs (8) does not match contraction dimension of rhs (16)}}
  %0 = flash.matmul %a, %b : tensor<4x8xf32>, tensor<16x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @matmul_contraction_transposed(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{contraction dimension of lhs (8) does not match contraction dimension of rhs (4) (rhs is transposed)}}
  %0 = flash.matmul %a, %b transpose_b : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_result_shape(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error @+1 {{result shape [4, 8] is inconsistent with the operands: expected [..., 4, 16]}}
  %0 = flash.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// flash.softmax
//===----------------------------------------------------------------------===//

func.func @softmax_rank0(%s: tensor<f32>) {
  // expected-error @+1 {{input must have rank >= 1, got rank 0}}
  %0 = flash.softmax %s : tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @softmax_result_rank(%s: tensor<4x8xf32>) {
  // expected-error @+1 {{result rank (1) does not match input rank (2)}}
  %0 = flash.softmax %s : tensor<4x8xf32> -> tensor<32xf32>
  return
}

// -----

func.func @softmax_result_shape(%s: tensor<4x8xf32>) {
  // expected-error @+1 {{result shape [4, 9] does not match input shape [4, 8]}}
  %0 = flash.softmax %s : tensor<4x8xf32> -> tensor<4x9xf32>
  return
}

// -----

func.func @softmax_dim(%s: tensor<4x8xf32>) {
  // expected-error @+1 {{softmax dimension 2 is out of range for rank 2}}
  %0 = flash.softmax %s dim = 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_negative_dim(%s: tensor<4x8xf32>) {
  // expected-error @+1 {{softmax dimension -1 is out of range for rank 2}}
  %0 = flash.softmax %s dim = -1 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @softmax_causal_rank1(%s: tensor<8xf32>) {
  // expected-error @+1 {{causal softmax needs scores of rank >= 2 ([..., Nq, Nk]), got rank 1}}
  %0 = flash.softmax %s causal : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @softmax_causal_dim(%s: tensor<4x8xf32>) {
  // expected-error @+1 {{causal softmax must reduce the last dimension (1), got dimension 0}}
  %0 = flash.softmax %s dim = 0 causal : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// The mask is an attribute of its own: a stray `causal` unit attribute
// would be ignored.
func.func @softmax_causal_unit_attr(%s: tensor<4x8xf32>) {
  // expected-error @+1 {{has a 'causal' attribute; the mask is written by name after the operands (`causal`), or as mask = #flash.mask<causal>}}
  %0 = flash.softmax %s {causal} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @attention_causal_unit_attr(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{has a 'causal' attribute; the mask is written by name after the operands}}
  %0 = flash.attention %q, %k, %v {causal} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @attention_unknown_mask(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  // expected-error @+1 {{unknown mask 'sliding'; expected one of none, causal}}
  %0 = flash.attention %q, %k, %v {mask = #flash.mask<sliding>} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @softmax_scale_inf(%s: tensor<4x8xf32>) {
  // expected-error @+1 {{scale must be finite, got INF}}
  %0 = flash.softmax %s scale = 0x7F800000 : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// flash.attention
//===----------------------------------------------------------------------===//

func.func @attention_query_rank(%q: tensor<8x128x64xf16>, %k: tensor<1x8x128x64xf16>, %v: tensor<1x8x128x64xf16>) {
  // expected-error @+1 {{query must have rank 4 [B, Hq, Nq, D], got rank 3}}
  %o = flash.attention %q, %k, %v : tensor<8x128x64xf16>, tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16> -> tensor<1x8x128x64xf16>
  return
}

// -----

func.func @attention_key_rank(%q: tensor<1x8x128x64xf16>, %k: tensor<8x128x64xf16>, %v: tensor<1x8x128x64xf16>) {
  // expected-error @+1 {{key must have rank 4 [B, Hkv, Nk, D], got rank 3}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<8x128x64xf16>, tensor<1x8x128x64xf16> -> tensor<1x8x128x64xf16>
  return
}

// -----

func.func @attention_value_rank(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x128x64xf16>, %v: tensor<1x1x8x128x64xf16>) {
  // expected-error @+1 {{value must have rank 4 [B, Hkv, Nk, Dv], got rank 5}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16>, tensor<1x1x8x128x64xf16> -> tensor<1x8x128x64xf16>
  return
}

// -----

func.func @attention_result_rank(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x128x64xf16>, %v: tensor<1x8x128x64xf16>) {
  // expected-error @+1 {{result must have rank 4 [B, Hq, Nq, Dv], got rank 3}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16> -> tensor<8x128x64xf16>
  return
}

// -----

func.func @attention_element_types(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x128x64xf32>, %v: tensor<1x8x128x64xf16>) {
  // expected-error @+1 {{element types of query ('f16'), key ('f32') and value ('f16') must match}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf16> -> tensor<1x8x128x64xf16>
  return
}

// -----

func.func @attention_result_element_type(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x128x64xf16>, %v: tensor<1x8x128x64xf16>) {
  // expected-error @+1 {{result element type ('f32') does not match the operand element type ('f16')}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16> -> tensor<1x8x128x64xf32>
  return
}

// -----

func.func @attention_f64(%q: tensor<1x8x128x64xf64>, %k: tensor<1x8x128x64xf64>, %v: tensor<1x8x128x64xf64>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf64>, tensor<1x8x128x64xf64>, tensor<1x8x128x64xf64> -> tensor<1x8x128x64xf64>
  return
}

// -----

func.func @attention_dynamic_heads(%q: tensor<1x?x128x64xf16>, %k: tensor<1x8x128x64xf16>, %v: tensor<1x8x128x64xf16>) {
  // expected-error @+1 {{head counts must be static, got query [1, ?, 128, 64], key [1, 8, 128, 64], value [1, 8, 128, 64]}}
  %o = flash.attention %q, %k, %v : tensor<1x?x128x64xf16>, tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16> -> tensor<1x?x128x64xf16>
  return
}

// -----

func.func @attention_dynamic_head_dim(%q: tensor<1x8x128x?xf16>, %k: tensor<1x8x128x?xf16>, %v: tensor<1x8x128x64xf16>) {
  // expected-error @+1 {{head dimensions must be static, got query [1, 8, 128, ?], key [1, 8, 128, ?], value [1, 8, 128, 64]}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x?xf16>, tensor<1x8x128x?xf16>, tensor<1x8x128x64xf16> -> tensor<1x8x128x64xf16>
  return
}

// -----

func.func @attention_zero_heads(%q: tensor<1x0x128x64xf16>, %k: tensor<1x0x128x64xf16>, %v: tensor<1x0x128x64xf16>) {
  // expected-error @+1 {{head counts and head dimensions must be non-zero, got Hq = 0, Hkv = 0, D = 64, Dv = 64}}
  %o = flash.attention %q, %k, %v : tensor<1x0x128x64xf16>, tensor<1x0x128x64xf16>, tensor<1x0x128x64xf16> -> tensor<1x0x128x64xf16>
  return
}

// -----

func.func @attention_key_batch(%q: tensor<2x8x128x64xf16>, %k: tensor<3x8x128x64xf16>, %v: tensor<2x8x128x64xf16>) {
  // expected-error @+1 {{batch size of key (3) does not match batch size of query (2)}}
  %o = flash.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<3x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @attention_value_batch(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x128x64xf16>, %v: tensor<4x8x128x64xf16>) {
  // expected-error @+1 {{batch size of value (4) does not match batch size of query (2)}}
  %o = flash.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16>, tensor<4x8x128x64xf16> -> tensor<2x8x128x64xf16>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x128x128xf16>, %v: tensor<1x8x128x64xf16>) {
  // expected-error @+1 {{head dimension of key (128) does not match head dimension of query (64)}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<1x8x128x128xf16>, tensor<1x8x128x64xf16> -> tensor<1x8x128x64xf16>
  return
}

// -----

func.func @attention_value_heads(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x128x64xf16>, %v: tensor<1x4x128x64xf16>) {
  // expected-error @+1 {{number of value heads (4) does not match number of key heads (8)}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16>, tensor<1x4x128x64xf16> -> tensor<1x8x128x64xf16>
  return
}

// -----

func.func @attention_kv_length(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x128x64xf16>, %v: tensor<1x8x256x64xf16>) {
  // expected-error @+1 {{sequence length of value (256) does not match sequence length of key (128)}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<1x8x128x64xf16>, tensor<1x8x256x64xf16> -> tensor<1x8x128x64xf16>
  return
}

// -----

func.func @attention_gqa_multiple(%q: tensor<1x6x128x64xf16>, %k: tensor<1x4x128x64xf16>, %v: tensor<1x4x128x64xf16>) {
  // expected-error @+1 {{number of query heads (6) is not a multiple of the number of key/value heads (4)}}
  %o = flash.attention %q, %k, %v : tensor<1x6x128x64xf16>, tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16> -> tensor<1x6x128x64xf16>
  return
}

// -----

func.func @attention_result_shape(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x256x64xf16>, %v: tensor<1x8x256x32xf16>) {
  // expected-error @+1 {{result shape [1, 8, 128, 64] is inconsistent with the operands: expected [1, 8, 128, 32] ([B, Hq, Nq, Dv])}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<1x8x256x64xf16>, tensor<1x8x256x32xf16> -> tensor<1x8x128x64xf16>
  return
}

// -----

func.func @attention_result_seq(%q: tensor<1x8x128x64xf16>, %k: tensor<1x8x256x64xf16>, %v: tensor<1x8x256x64xf16>) {
  // expected-error @+1 {{result shape [1, 8, 256, 64] is inconsistent with the operands: expected [1, 8, 128, 64] ([B, Hq, Nq, Dv])}}
  %o = flash.attention %q, %k, %v : tensor<1x8x128x64xf16>, tensor<1x8x256x64xf16>, tensor<1x8x256x64xf16> -> tensor<1x8x256x64xf16>
  return
}

// -----

func.func @attention_lse_shape(%q: tensor<?x8x?x64xf16>, %k: tensor<?x8x?x64xf16>, %v: tensor<?x8x?x64xf16>) {
  // expected-error @+1 {{lse result shape [?, 4, ?] is inconsistent with the operands: expected [?, 8, ?] ([B, Hq, Nq])}}
  %o, %lse = flash.attention %q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16> -> tensor<?x8x?x64xf16>, tensor<?x4x?xf32>
  return
}

// -----

func.func @attention_lse_rank(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{lse result shape [1, 8, 16, 1] is inconsistent with the operands: expected [1, 8, 16] ([B, Hq, Nq])}}
  %o, %lse = flash.attention %q, %k, %v : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>, tensor<1x8x16x1xf32>
  return
}

// -----

func.func @attention_lse_type(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{result #1 must be ranked tensor of 32-bit float values, but got 'tensor<1x8x16xf16>'}}
  %o, %lse = flash.attention %q, %k, %v : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>, tensor<1x8x16xf16>
  return
}

// -----

func.func @attention_scale_zero(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{scale must be positive, got 0.000000e+00}}
  %o = flash.attention %q, %k, %v scale = 0.0 : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attention_scale_negative(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{scale must be positive, got -1.250000e-01}}
  %o = flash.attention %q, %k, %v scale = -0.125 : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @attention_scale_nan(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{scale must be finite, got nan}}
  %o = flash.attention %q, %k, %v scale = 0x7FC00000 : tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16> -> tensor<1x8x16x64xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// flash.attention_step
//===----------------------------------------------------------------------===//

func.func @step_mixed(%q: tensor<1x4x8xf32>, %k: memref<4x8xf32>, %v: tensor<4x8xf32>, %acc: tensor<1x4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs, not a mix}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf32>, memref<4x8xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @step_query_rank(%q: tensor<4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>, %acc: tensor<4x8xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>) {
  // expected-error @+1 {{query must have rank >= 3 ([..., G, Br, D]), got rank 2}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) scale = 1.0 -> tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @step_key_rank(%q: tensor<1x4x8xf32>, %k: tensor<1x4x8xf32>, %v: tensor<4x8xf32>, %acc: tensor<1x4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{key must have rank 2 ([..., Bc, D]), got rank 3}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @step_acc_rank(%q: tensor<1x4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>, %acc: tensor<4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{acc must have rank 3 ([..., G, Br, Dv]), got rank 2}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @step_element_types(%q: tensor<1x4x8xf16>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>, %acc: tensor<1x4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{element types of query ('f16'), key ('f32') and value ('f32') must match}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf16>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @step_state_type(%q: tensor<1x4x8xf16>, %k: tensor<4x8xf16>, %v: tensor<4x8xf16>, %acc: tensor<1x4x8xf16>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{operand #3 must be ranked tensor or memref of f32}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>) outs(%acc, %m, %l : tensor<1x4x8xf16>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<1x4x8xf16>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @step_batch(%q: tensor<2x1x4x8xf32>, %k: tensor<3x4x8xf32>, %v: tensor<3x4x8xf32>, %acc: tensor<2x1x4x8xf32>, %m: tensor<2x1x4xf32>, %l: tensor<2x1x4xf32>) {
  // expected-error @+1 {{key dimension 0 (3) does not match query dimension 0 (2)}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<2x1x4x8xf32>, tensor<3x4x8xf32>, tensor<3x4x8xf32>) outs(%acc, %m, %l : tensor<2x1x4x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>) scale = 1.0 -> tensor<2x1x4x8xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>
  return
}

// -----

func.func @step_head_dim(%q: tensor<1x4x8xf32>, %k: tensor<4x16xf32>, %v: tensor<4x8xf32>, %acc: tensor<1x4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{key dimension 1 (16) does not match query dimension 2 (8)}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @step_kv_length(%q: tensor<1x4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<5x8xf32>, %acc: tensor<1x4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{value dimension 0 (5) does not match key dimension 0 (4)}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf32>, tensor<4x8xf32>, tensor<5x8xf32>) outs(%acc, %m, %l : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @step_acc_rows(%q: tensor<1x4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>, %acc: tensor<1x5x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{acc dimension 1 (5) does not match query dimension 1 (4)}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<1x5x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<1x5x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @step_acc_width(%q: tensor<1x4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x16xf32>, %acc: tensor<1x4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{acc dimension 2 (8) does not match value dimension 1 (16)}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf32>, tensor<4x8xf32>, tensor<4x16xf32>) outs(%acc, %m, %l : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @step_max_shape(%q: tensor<2x4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>, %acc: tensor<2x4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<2x4xf32>) {
  // expected-error @+1 {{max dimension 0 (1) does not match query dimension 0 (2)}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<2x4x8xf32>, tensor<1x4xf32>, tensor<2x4xf32>) scale = 1.0 -> tensor<2x4x8xf32>, tensor<1x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @step_result_types(%q: tensor<1x4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>, %acc: tensor<1x4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{expected type of operand #5 ('tensor<1x4xf32>') to match type of corresponding result ('tensor<4xf32>')}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = 1.0 -> tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @step_scale(%q: tensor<1x4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>, %acc: tensor<1x4x8xf32>, %m: tensor<1x4xf32>, %l: tensor<1x4xf32>) {
  // expected-error @+1 {{scale must be positive, got -1.000000e+00}}
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<1x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%acc, %m, %l : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) scale = -1.0 -> tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// flash.finalize
//===----------------------------------------------------------------------===//

func.func @finalize_out_shape(%acc: tensor<4x8xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>, %o: tensor<4x16xf16>) {
  // expected-error @+1 {{out dimension 1 (16) does not match acc dimension 1 (8)}}
  %r = flash.finalize ins(%acc, %m, %l : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4x16xf16>) -> tensor<4x16xf16>
  return
}

// -----

func.func @finalize_out_rank(%acc: tensor<4x8xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>, %o: tensor<32xf16>) {
  // expected-error @+1 {{out rank (1) does not match acc rank (2)}}
  %r = flash.finalize ins(%acc, %m, %l : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<32xf16>) -> tensor<32xf16>
  return
}

// -----

func.func @finalize_sum_rank(%acc: tensor<4x8xf32>, %m: tensor<4xf32>, %l: tensor<4x8xf32>, %o: tensor<4x8xf16>) {
  // expected-error @+1 {{sum must have rank 1 (the rank of acc without its last dimension), got rank 2}}
  %r = flash.finalize ins(%acc, %m, %l : tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) outs(%o : tensor<4x8xf16>) -> tensor<4x8xf16>
  return
}

// -----

func.func @finalize_lse_shape(%acc: tensor<4x8xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>, %o: tensor<4x8xf16>, %lse: tensor<5xf32>) {
  // expected-error @+1 {{lse dimension 0 (5) does not match acc dimension 0 (4)}}
  %r:2 = flash.finalize ins(%acc, %m, %l : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) outs(%o, %lse : tensor<4x8xf16>, tensor<5xf32>) -> tensor<4x8xf16>, tensor<5xf32>
  return
}

// -----

func.func @finalize_mixed(%acc: memref<4x8xf32>, %m: memref<4xf32>, %l: memref<4xf32>, %o: tensor<4x8xf16>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs, not a mix}}
  %r = flash.finalize ins(%acc, %m, %l : memref<4x8xf32>, memref<4xf32>, memref<4xf32>) outs(%o : tensor<4x8xf16>) -> tensor<4x8xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// flash.combine
//===----------------------------------------------------------------------===//

func.func @combine_parts_rank(%p: tensor<8xf32>, %pl: tensor<f32>, %o: tensor<f32>) {
  // expected-error @+1 {{parts must have rank >= 2 ([S, ..., Dv]), got rank 1}}
  %r = flash.combine ins(%p, %pl : tensor<8xf32>, tensor<f32>) outs(%o : tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @combine_part_lse(%p: tensor<8x4x16xf32>, %pl: tensor<4x4xf32>, %o: tensor<4x16xf32>) {
  // expected-error @+1 {{part_lse dimension 0 (4) does not match parts dimension 0 (8)}}
  %r = flash.combine ins(%p, %pl : tensor<8x4x16xf32>, tensor<4x4xf32>) outs(%o : tensor<4x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @combine_out_rank(%p: tensor<8x4x16xf32>, %pl: tensor<8x4xf32>, %o: tensor<8x4x16xf32>) {
  // expected-error @+1 {{out must have rank 2 (parts without the split dimension), got rank 3}}
  %r = flash.combine ins(%p, %pl : tensor<8x4x16xf32>, tensor<8x4xf32>) outs(%o : tensor<8x4x16xf32>) -> tensor<8x4x16xf32>
  return
}

// -----

func.func @combine_out_shape(%p: tensor<8x4x16xf32>, %pl: tensor<8x4xf32>, %o: tensor<4x32xf32>) {
  // expected-error @+1 {{out dimension 1 (32) does not match parts dimension 2 (16)}}
  %r = flash.combine ins(%p, %pl : tensor<8x4x16xf32>, tensor<8x4xf32>) outs(%o : tensor<4x32xf32>) -> tensor<4x32xf32>
  return
}

// -----

func.func @combine_lse_shape(%p: tensor<8x4x16xf32>, %pl: tensor<8x4xf32>, %o: tensor<4x16xf32>, %lse: tensor<3xf32>) {
  // expected-error @+1 {{lse dimension 0 (3) does not match out dimension 0 (4)}}
  %r:2 = flash.combine ins(%p, %pl : tensor<8x4x16xf32>, tensor<8x4xf32>) outs(%o, %lse : tensor<4x16xf32>, tensor<3xf32>) -> tensor<4x16xf32>, tensor<3xf32>
  return
}

// -----

// The scale factor is an f32.
// expected-note @+1 {{prior use here}}
func.func @scale_factor_not_f32(%q: tensor<1x1x8x16xf32>, %s: f64) {
  // expected-error @+1 {{expects different type than prior uses: 'f32' vs 'f64'}}
  %o = flash.attention %q, %q, %q scale_factor(%s)
      : tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x1x8x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// flash.grid and #flash.grid_factor
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'flash.grid' names the size 'Nk', which no integer argument's flash.param names}}
func.func @grid_unknown_size(%b: i64 {flash.param = {name = "B", meaning = "batch"}})
    attributes {flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<ceildiv(Nk, 64)>]} {
  return
}

// -----

// expected-error @+1 {{'flash.grid' names the size 'q', which no integer argument's flash.param names}}
func.func @grid_names_a_pointer(%q: memref<?xf16> {flash.param = {name = "q", meaning = "Q"}})
    attributes {flash.grid = [#flash.grid_factor<q>]} {
  return
}

// -----

// expected-error @+1 {{'flash.grid' must be a non-empty array of #flash.grid_factor, not "B*ceildiv(Nq,64)"}}
func.func @grid_as_a_string() attributes {flash.grid = "B*ceildiv(Nq,64)"} {
  return
}

// -----

// expected-error @+1 {{'flash.grid' must be a non-empty array of #flash.grid_factor, not []}}
func.func @grid_empty() attributes {flash.grid = []} {
  return
}

// -----

// expected-error @+1 {{a grid factor divides by 0; expected a positive integer}}
func.func @grid_divides_by_zero() attributes {flash.grid = [#flash.grid_factor<ceildiv(B, 0)>]} {
  return
}

// -----

// expected-error @+1 {{a grid factor's integer -2 is negative}}
func.func @grid_negative() attributes {flash.grid = [#flash.grid_factor<-2>]} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// flash.max_registers
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'flash.max_registers' is 256 : i64; a thread's registers are an integer from 16 to 255}}
func.func @too_many_registers() attributes {flash.max_registers = 256} {
  return
}

// -----

// expected-error @+1 {{'flash.max_registers' is 8 : i64; a thread's registers are an integer from 16 to 255}}
func.func @too_few_registers() attributes {flash.max_registers = 8} {
  return
}

// -----

// expected-error @+1 {{'flash.max_registers' is 100000000000000000000 : i128; a thread's registers are an integer from 16 to 255}}
func.func @registers_beyond_64_bits() attributes {flash.max_registers = 100000000000000000000 : i128} {
  return
}

// -----

// expected-error @+1 {{'flash.max_registers' is "many"; a thread's registers are an integer from 16 to 255}}
func.func @registers_as_a_string() attributes {flash.max_registers = "many"} {
  return
}

// -----

// expected-error @+1 {{expected ','}}
func.func @grid_ceildiv_without_divisor() attributes {flash.grid = [#flash.grid_factor<ceildiv(B)>]} {
  return
}
