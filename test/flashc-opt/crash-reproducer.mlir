// `--mlir-pass-pipeline-crash-reproducer` works as in mlir-opt: a pass that
// fails (here flash-tile on a block size beyond its limit) leaves a
// reproducer naming the pipeline and holding the input IR, and running the
// reproducer fails the same way.
// RUN: rm -f %t.repro.mlir
// RUN: not flashc-opt %s --flash-online-softmax --flash-tile="block-q=65537" \
// RUN:   --mlir-pass-pipeline-crash-reproducer=%t.repro.mlir 2>&1 | FileCheck %s --check-prefix=RUN1
// RUN: FileCheck %s --check-prefix=REPRO < %t.repro.mlir
// RUN: not flashc-opt %t.repro.mlir --run-reproducer 2>&1 | FileCheck %s --check-prefix=RUN1

// RUN1: error: flash-tile: block-q must be from 0 to 65536, got 65537

// REPRO: func.func @attention
// REPRO: flash.attention
// REPRO: mlir_reproducer
// REPRO: pipeline: "builtin.module(flash-online-softmax{{.*}}, flash-tile{{.*}}block-q=65537

func.func @attention(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x32x8xf32>,
                     %v: tensor<1x2x32x8xf32>) -> tensor<1x2x16x8xf32> {
  %o = flash.attention %q, %k, %v : tensor<1x2x16x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32> -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}
