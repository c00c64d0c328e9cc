// Bad input and bad pipelines give diagnostics and a non-zero exit, not a
// crash.
// RUN: not flashc-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: echo "module {}" | not flashc-opt --pass-pipeline="builtin.module(flash-no-such-pass)" 2>&1 | FileCheck %s --check-prefix=PIPELINE

// PIPELINE: 'flash-no-such-pass' does not refer to a registered pass or pass pipeline

// PARSE: error: expected ','
func.func @too_few_operands(%q: tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32> {
  %o = flash.attention %q, %q : tensor<1x1x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o : tensor<1x1x8x8xf32>
}

// -----

// PARSE: error: 'flash.attention' op head dimension of key (16) does not match head dimension of query (8)
func.func @verifier(%q: tensor<1x1x8x8xf32>, %k: tensor<1x1x8x16xf32>) -> tensor<1x1x8x8xf32> {
  %o = flash.attention %q, %k, %q : tensor<1x1x8x8xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x8xf32> -> tensor<1x1x8x8xf32>
  return %o : tensor<1x1x8x8xf32>
}
