// RUN: flashc-opt %s --split-input-file | flashc-opt --split-input-file | FileCheck %s
// RUN: flashc-opt %s --split-input-file --mlir-print-op-generic | flashc-opt --split-input-file | FileCheck %s

// The grid of a GPU kernel: factors over the sizes its flash.params name.

// CHECK-LABEL: func.func @forward_grid
// CHECK-SAME: flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<ceildiv(Nq, 64)>, #flash.grid_factor<splits>]
func.func @forward_grid(%b: i64 {flash.param = {name = "B", meaning = "batch"}},
                        %nq: i64 {flash.param = {name = "Nq", meaning = "rows"}},
                        %s: i64 {flash.param = {name = "splits", meaning = "splits"}})
    attributes {flash.grid = [#flash.grid_factor<B>,
                              #flash.grid_factor<ceildiv(Nq, 64)>,
                              #flash.grid_factor<splits>]} {
  return
}

// -----

// A product with integers; `ceildiv(x, 1)` is `x`.
// CHECK-LABEL: func.func @combine_grid
// CHECK-SAME: flash.grid = [#flash.grid_factor<ceildiv(B * 8 * Nq, 4)>, #flash.grid_factor<3>, #flash.grid_factor<Nq>]
func.func @combine_grid(%b: i64 {flash.param = {name = "B", meaning = "batch"}},
                        %nq: i64 {flash.param = {name = "Nq", meaning = "rows"}})
    attributes {flash.grid = [#flash.grid_factor<ceildiv(B * 8 * Nq, 4)>,
                              #flash.grid_factor<3>,
                              #flash.grid_factor<ceildiv(Nq, 1)>]} {
  return
}

// -----

// A function whose arguments carry no flash.param (a kernel after its
// lowering to LLVM) keeps its grid unchecked against them.
// CHECK-LABEL: func.func @lowered
// CHECK-SAME: flash.grid = [#flash.grid_factor<B>]
func.func @lowered(%b: i64) attributes {flash.grid = [#flash.grid_factor<B>]} {
  return
}

// -----

// The mask: by name in an op's syntax, #flash.mask as an attribute.
// CHECK-LABEL: func.func @masks
// CHECK-SAME: attributes {other.op = #flash.mask<none>, some.op = #flash.mask<causal>}
// CHECK: flash.attention %{{.+}}, %{{.+}}, %{{.+}} causal :
// CHECK: flash.attention %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK: flash.attention %{{.+}}, %{{.+}}, %{{.+}} causal :
// CHECK: flash.softmax %{{.+}} causal :
func.func @masks(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %s: tensor<4x8xf32>)
    attributes {some.op = #flash.mask<causal>, other.op = #flash.mask<none>} {
  %0 = flash.attention %q, %k, %v causal : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %1 = flash.attention %q, %k, %v none : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %2 = flash.attention %q, %k, %v {mask = #flash.mask<causal>} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  %3 = flash.softmax %s causal : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// A GPU kernel's register budget.
// CHECK-LABEL: func.func @budget
// CHECK-SAME: flash.max_registers = 128 : i64
func.func @budget() attributes {flash.max_registers = 128} {
  return
}
