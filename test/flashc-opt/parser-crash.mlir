// MLIR 22's parser crashes on a few malformed inputs after (or without)
// reporting an error. flashc-opt parses the input under crash recovery
// first, so these end in diagnostics, one error line and exit status 1.
// AddressSanitizer owns SIGSEGV, so crash recovery is off there.
// UNSUPPORTED: asan
// RUN: split-file %s %t
// RUN: not flashc-opt %t/transpose.mlir --flash-tile 2>&1 | FileCheck %s --check-prefix=TRANSPOSE --implicit-check-not="Stack dump"
// RUN: not flashc-opt %t/expand.mlir 2>&1 | FileCheck %s --check-prefix=EXPAND --implicit-check-not="Stack dump"
// RUN: not flashc-opt < %t/expand.mlir 2>&1 | FileCheck %s --check-prefix=EXPAND --implicit-check-not="Stack dump"
// RUN: not flashc-opt %t/split.mlir --split-input-file 2>&1 | FileCheck %s --check-prefix=SPLIT --implicit-check-not="Stack dump"
// A well-formed input is untouched by the extra parse.
// RUN: flashc-opt %t/good.mlir | FileCheck %s --check-prefix=GOOD

// TRANSPOSE: error: custom op 'linalg.transpose' integer value too large
// TRANSPOSE: flashc-opt: error: MLIR's parser crashed on this input after the diagnostics above (a defect in upstream MLIR 22); the input is rejected

// EXPAND-NOT: diagnostics above
// EXPAND: flashc-opt: error: MLIR's parser crashed on this input (a defect in upstream MLIR 22); the input is rejected

// The crashing chunk is the second one; the first one's diagnostics are
// reported by the real run only, which never starts.
// SPLIT-NOT: expected SSA operand
// SPLIT: flashc-opt: error: MLIR's parser crashed on this input

// GOOD: func.func @transpose

//--- transpose.mlir
func.func @transpose(%k: tensor<1x1x4x16xf32>, %j: tensor<1x1x16x4xf32>) -> tensor<1x1x16x4xf32> {
  %kt = linalg.transpose ins(%k : tensor<1x1x4x16xf32>) outs(%j : tensor<1x1x16x4xf32>) permutation = [0, 99999999999999999999, 3, 2]
  return %kt : tensor<1x1x16x4xf32>
}

//--- expand.mlir
func.func @expand(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensor.expand_shape %a [[0, 1], []] output_shape [4, 8] : tensor<4x8xf32> into tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

//--- split.mlir
func.func @bad() {
  %0 = arith.addf : f32
  return
}
// -----
func.func @expand(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensor.expand_shape %a [[0, 1], []] output_shape [4, 8] : tensor<4x8xf32> into tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

//--- good.mlir
func.func @transpose(%k: tensor<1x1x4x16xf32>, %j: tensor<1x1x16x4xf32>) -> tensor<1x1x16x4xf32> {
  %kt = linalg.transpose ins(%k : tensor<1x1x4x16xf32>) outs(%j : tensor<1x1x16x4xf32>) permutation = [0, 1, 3, 2]
  return %kt : tensor<1x1x16x4xf32>
}
