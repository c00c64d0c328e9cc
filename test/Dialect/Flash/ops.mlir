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
// GENERIC: "flash.softmax"(%{{.+}}) : (tensor<2x8x?x?xf32>)
// GENERIC: "flash.softmax"(%{{.+}}) <{causal, scale = 1.250000e-01 : f32}>
// GENERIC: "flash.softmax"(%{{.+}}) <{dim = 1 : i64}>

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
// GENERIC: "flash.attention"(%{{.+}}, %{{.+}}, %{{.+}}) : (tensor<1x16x1024x64xf16>

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
// GENERIC: "flash.attention"(%{{.+}}, %{{.+}}, %{{.+}}) <{causal, scale = 1.250000e-01 : f32}>

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
