// RUN: flashc-opt %s | FileCheck %s
// Printing and re-parsing the custom form is stable:
// RUN: flashc-opt %s | flashc-opt | FileCheck %s
// The generic form parses back to the same custom form:
// RUN: flashc-opt %s --mlir-print-op-generic | flashc-opt | FileCheck %s
// RUN: flashc-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.+]]: tensor<2x8x128x64xf16>, %[[B:.+]]: tensor<2x8x128x64xf16>, %[[C:.+]]: tensor<2x8x64x32xf16>)
func.func @matmul(%a: tensor<2x8x128x64xf16>, %b: tensor<2x8x128x64xf16>,
                  %c: tensor<2x8x64x32xf16>)
    -> (tensor<2x8x128x128xf32>, tensor<2x8x128x32xf16>) {
  // CHECK: flash.matmul %[[A]], %[[B]] transpose_b : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x128xf32>
  %0 = flash.matmul %a, %b transpose_b
      : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x128xf32>
  // CHECK: flash.matmul %[[A]], %[[C]] : tensor<2x8x128x64xf16>, tensor<2x8x64x32xf16> -> tensor<2x8x128x32xf16>
  %1 = flash.matmul %a, %c
      : tensor<2x8x128x64xf16>, tensor<2x8x64x32xf16> -> tensor<2x8x128x32xf16>
  return %0, %1 : tensor<2x8x128x128xf32>, tensor<2x8x128x32xf16>
}
// GENERIC-LABEL: sym_name = "matmul"
// GENERIC: "flash.matmul"(%{{.+}}, %{{.+}}) <{transpose_b}>
// GENERIC: "flash.matmul"(%{{.+}}, %{{.+}}) : (tensor<2x8x128x64xf16>, tensor<2x8x64x32xf16>)

// CHECK-LABEL: func.func @matmul_dynamic
func.func @matmul_dynamic(%a: tensor<?x?x64xf32>, %b: tensor<?x?x64xf32>)
    -> tensor<?x?x?xf32> {
  // CHECK: flash.matmul %{{.+}}, %{{.+}} transpose_b : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x?xf32>
  %0 = flash.matmul %a, %b transpose_b
      : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[S:.+]]: tensor<2x8x?x?xf32>)
func.func @softmax(%s: tensor<2x8x?x?xf32>)
    -> (tensor<2x8x?x?xf32>, tensor<2x8x?x?xbf16>, tensor<2x8x?x?xf32>) {
  // CHECK: flash.softmax %[[S]] : tensor<2x8x?x?xf32> -> tensor<2x8x?x?xf32>
  %0 = flash.softmax %s : tensor<2x8x?x?xf32> -> tensor<2x8x?x?xf32>
  // CHECK: flash.softmax %[[S]] scale = 1.250000e-01 causal : tensor<2x8x?x?xf32> -> tensor<2x8x?x?xbf16>
  %1 = flash.softmax %s scale = 0.125 causal
      : tensor<2x8x?x?xf32> -> tensor<2x8x?x?xbf16>
  // CHECK: flash.softmax %[[S]] dim = 1 : tensor<2x8x?x?xf32> -> tensor<2x8x?x?xf32>
  %2 = flash.softmax %s dim = 1 : tensor<2x8x?x?xf32> -> tensor<2x8x?x?xf32>
  return %0, %1, %2 : tensor<2x8x?x?xf32>, tensor<2x8x?x?xbf16>, tensor<2x8x?x?xf32>
}
// GENERIC-LABEL: sym_name = "softmax"
// GENERIC: "flash.softmax"(%{{.+}}) <{mask = #flash.mask<none>}> : (tensor<2x8x?x?xf32>)
// GENERIC: "flash.softmax"(%{{.+}}) <{mask = #flash.mask<causal>, scale = 1.250000e-01 : f32}>
// GENERIC: "flash.softmax"(%{{.+}}) <{dim = 1 : i64, mask = #flash.mask<none>}>

// CHECK-LABEL: func.func @attention_mha
// CHECK-SAME: (%[[Q:.+]]: tensor<1x16x1024x64xf16>, %[[K:.+]]: tensor<1x16x1024x64xf16>, %[[V:.+]]: tensor<1x16x1024x64xf16>)
func.func @attention_mha(%q: tensor<1x16x1024x64xf16>, %k: tensor<1x16x1024x64xf16>,
                         %v: tensor<1x16x1024x64xf16>) -> tensor<1x16x1024x64xf16> {
  // CHECK: flash.attention %[[Q]], %[[K]], %[[V]] : tensor<1x16x1024x64xf16>, tensor<1x16x1024x64xf16>, tensor<1x16x1024x64xf16> -> tensor<1x16x1024x64xf16>
  %o = flash.attention %q, %k, %v
      : tensor<1x16x1024x64xf16>, tensor<1x16x1024x64xf16>, tensor<1x16x1024x64xf16>
      -> tensor<1x16x1024x64xf16>
  return %o : tensor<1x16x1024x64xf16>
}
// GENERIC-LABEL: sym_name = "attention_mha"
// GENERIC: "flash.attention"(%{{.+}}, %{{.+}}, %{{.+}}) <{mask = #flash.mask<none>}> : (tensor<1x16x1024x64xf16>

// GQA with a dynamic batch and sequence lengths, a value head dimension that
// differs from the query/key one, and the log-sum-exp result.
// CHECK-LABEL: func.func @attention_gqa_lse
func.func @attention_gqa_lse(%q: tensor<?x32x?x128xbf16>, %k: tensor<?x8x?x128xbf16>,
                             %v: tensor<?x8x?x96xbf16>)
    -> (tensor<?x32x?x96xbf16>, tensor<?x32x?xf32>) {
  // CHECK: %{{.+}}, %{{.+}} = flash.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 1.250000e-01 causal : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x96xbf16> -> tensor<?x32x?x96xbf16>, tensor<?x32x?xf32>
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 causal
      : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x96xbf16>
      -> tensor<?x32x?x96xbf16>, tensor<?x32x?xf32>
  return %o, %lse : tensor<?x32x?x96xbf16>, tensor<?x32x?xf32>
}
// GENERIC-LABEL: sym_name = "attention_gqa_lse"
// GENERIC: "flash.attention"(%{{.+}}, %{{.+}}, %{{.+}}) <{mask = #flash.mask<causal>, scale = 1.250000e-01 : f32}>

// MQA decode: one query token against a long cache, f32.
// CHECK-LABEL: func.func @attention_mqa_decode
func.func @attention_mqa_decode(%q: tensor<4x8x1x64xf32>, %k: tensor<4x1x4096x64xf32>,
                                %v: tensor<4x1x4096x64xf32>) -> tensor<4x8x1x64xf32> {
  // CHECK: flash.attention %{{.+}}, %{{.+}}, %{{.+}} causal : tensor<4x8x1x64xf32>, tensor<4x1x4096x64xf32>, tensor<4x1x4096x64xf32> -> tensor<4x8x1x64xf32>
  %o = flash.attention %q, %k, %v causal
      : tensor<4x8x1x64xf32>, tensor<4x1x4096x64xf32>, tensor<4x1x4096x64xf32>
      -> tensor<4x8x1x64xf32>
  return %o : tensor<4x8x1x64xf32>
}

// CHECK-LABEL: func.func @attention_step_tensor
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<4x64x128xbf16>, %[[K:[^:]+]]: tensor<?x128xbf16>, %[[V:[^:]+]]: tensor<?x128xbf16>, %[[ACC:[^:]+]]: tensor<4x64x128xf32>, %[[M:[^:]+]]: tensor<4x64xf32>, %[[L:[^:]+]]: tensor<4x64xf32>, %[[OFF:[^:]+]]: index)
func.func @attention_step_tensor(%q: tensor<4x64x128xbf16>, %k: tensor<?x128xbf16>,
    %v: tensor<?x128xbf16>, %acc: tensor<4x64x128xf32>, %m: tensor<4x64xf32>,
    %l: tensor<4x64xf32>, %off: index)
    -> (tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>) {
  // CHECK: flash.attention_step ins(%[[Q]], %[[K]], %[[V]] : tensor<4x64x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>) mask(%[[OFF]]) outs(%[[ACC]], %[[M]], %[[L]] : tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>) scale = 1.250000e-01 -> tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>
  %r:3 = flash.attention_step ins(%q, %k, %v : tensor<4x64x128xbf16>, tensor<?x128xbf16>, tensor<?x128xbf16>)
      mask(%off) outs(%acc, %m, %l : tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
      scale = 0.125 -> tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>
  return %r#0, %r#1, %r#2 : tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>
}

// Batched (untiled) form on memrefs: no results, no mask.
// CHECK-LABEL: func.func @attention_step_memref
func.func @attention_step_memref(%q: memref<2x8x1x16x64xf32>, %k: memref<2x8x32x64xf32>,
    %v: memref<2x8x32x64xf32>, %acc: memref<2x8x1x16x64xf32>,
    %m: memref<2x8x1x16xf32>, %l: memref<2x8x1x16xf32>) {
  // CHECK: flash.attention_step ins(%{{.+}}, %{{.+}}, %{{.+}} : memref<2x8x1x16x64xf32>, memref<2x8x32x64xf32>, memref<2x8x32x64xf32>) outs(%{{.+}}, %{{.+}}, %{{.+}} : memref<2x8x1x16x64xf32>, memref<2x8x1x16xf32>, memref<2x8x1x16xf32>) scale = 1.250000e-01{{$}}
  flash.attention_step ins(%q, %k, %v : memref<2x8x1x16x64xf32>, memref<2x8x32x64xf32>, memref<2x8x32x64xf32>)
      outs(%acc, %m, %l : memref<2x8x1x16x64xf32>, memref<2x8x1x16xf32>, memref<2x8x1x16xf32>)
      scale = 0.125
  return
}

// CHECK-LABEL: func.func @finalize
func.func @finalize(%acc: tensor<64x128xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>,
    %out: tensor<64x128xbf16>, %lse: tensor<64xf32>, %mo: memref<64x128xf16>,
    %macc: memref<64x128xf32>, %mm: memref<64xf32>, %ml: memref<64xf32>)
    -> (tensor<64x128xbf16>, tensor<64xf32>) {
  // CHECK: flash.finalize ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>) outs(%{{.+}}, %{{.+}} : tensor<64x128xbf16>, tensor<64xf32>) -> tensor<64x128xbf16>, tensor<64xf32>
  %o, %s = flash.finalize ins(%acc, %m, %l : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>)
      outs(%out, %lse : tensor<64x128xbf16>, tensor<64xf32>) -> tensor<64x128xbf16>, tensor<64xf32>
  // CHECK: flash.finalize ins(%{{.+}}, %{{.+}}, %{{.+}} : memref<64x128xf32>, memref<64xf32>, memref<64xf32>) outs(%{{.+}} : memref<64x128xf16>){{$}}
  flash.finalize ins(%macc, %mm, %ml : memref<64x128xf32>, memref<64xf32>, memref<64xf32>)
      outs(%mo : memref<64x128xf16>)
  return %o, %s : tensor<64x128xbf16>, tensor<64xf32>
}

// CHECK-LABEL: func.func @combine
func.func @combine(%parts: tensor<8x1x4x1x128xf32>, %plse: tensor<8x1x4x1xf32>,
    %out: tensor<1x4x1x128xf16>, %lse: tensor<1x4x1xf32>)
    -> (tensor<1x4x1x128xf16>, tensor<1x4x1xf32>) {
  // CHECK: flash.combine ins(%{{.+}}, %{{.+}} : tensor<8x1x4x1x128xf32>, tensor<8x1x4x1xf32>) outs(%{{.+}}, %{{.+}} : tensor<1x4x1x128xf16>, tensor<1x4x1xf32>) -> tensor<1x4x1x128xf16>, tensor<1x4x1xf32>
  %o, %s = flash.combine ins(%parts, %plse : tensor<8x1x4x1x128xf32>, tensor<8x1x4x1xf32>)
      outs(%out, %lse : tensor<1x4x1x128xf16>, tensor<1x4x1xf32>) -> tensor<1x4x1x128xf16>, tensor<1x4x1xf32>
  return %o, %s : tensor<1x4x1x128xf16>, tensor<1x4x1xf32>
}

// A run-time scale factor, on attention and on its steps.
// CHECK-LABEL: func.func @scale_factor
// CHECK-SAME: %[[S:[^:]+]]: f32
func.func @scale_factor(%q: tensor<1x4x?x64xf16>, %k: tensor<1x1x?x64xf16>,
    %v: tensor<1x1x?x64xf16>, %s: f32, %acc: tensor<4x64x64xf32>,
    %m: tensor<4x64xf32>, %l: tensor<4x64xf32>)
    -> (tensor<1x4x?x64xf16>, tensor<4x64x64xf32>) {
  // CHECK: flash.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 1.000000e+00 scale_factor(%[[S]]) causal :
  %o = flash.attention %q, %k, %v scale = 1.0 scale_factor(%s) causal
      : tensor<1x4x?x64xf16>, tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>
      -> tensor<1x4x?x64xf16>
  %qt = tensor.empty() : tensor<4x64x64xf16>
  %kt = tensor.empty() : tensor<64x64xf16>
  // CHECK: flash.attention_step {{.+}} scale = 5.000000e-01 scale_factor(%[[S]]) key_transposed ->
  %r:3 = flash.attention_step ins(%qt, %kt, %kt : tensor<4x64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>)
      outs(%acc, %m, %l : tensor<4x64x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
      scale = 0.5 scale_factor(%s) key_transposed
      -> tensor<4x64x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>
  return %o, %r#0 : tensor<1x4x?x64xf16>, tensor<4x64x64xf32>
}
