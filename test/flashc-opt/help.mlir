// RUN: flashc-opt --help | FileCheck %s

// CHECK: OVERVIEW: flashc optimizer driver
// CHECK: Available Dialects:
// CHECK-SAME: arith
// CHECK-SAME: bufferization
// CHECK-SAME: flash
// CHECK-SAME: func
// CHECK-SAME: gpu
// CHECK-SAME: linalg
// CHECK-SAME: llvm
// CHECK-SAME: math
// CHECK-SAME: memref
// CHECK-SAME: nvgpu
// CHECK-SAME: nvvm
// CHECK-SAME: scf
// CHECK-SAME: tensor
// CHECK-SAME: vector
// Flash passes and upstream passes are both registered.
// CHECK-DAG: --flash-fuse-attention
// CHECK-DAG: --canonicalize
// CHECK-DAG: --convert-nvgpu-to-nvvm
// CHECK-DAG: --one-shot-bufferize
