// The README's demo input fuses into one causal attention with scale 1/8.
// RUN: flashc-opt %flashc_src_root/examples/naive_attention.mlir --flash-fuse-attention | FileCheck %s

// CHECK-LABEL: func.func @naive_attention
// CHECK-NEXT: %[[O:.+]] = flash.attention %arg0, %arg1, %arg2 scale = 1.250000e-01 causal : tensor<2x8x1024x64xf16>, tensor<2x8x1024x64xf16>, tensor<2x8x1024x64xf16> -> tensor<2x8x1024x64xf16>
// CHECK-NEXT: return %[[O]]
