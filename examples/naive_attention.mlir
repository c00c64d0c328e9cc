// Naive causal multi-head attention as a framework would hand it over:
// S = Q . K^T, S / sqrt(d), softmax with a causal mask, then P . V. It
// materialises the 2x8x1024x1024 score matrix in f32 (64 MiB).
// `flashc-opt --flash-fuse-attention` turns it into one flash.attention.
func.func @naive_attention(%q: tensor<2x8x1024x64xf16>,
                           %k: tensor<2x8x1024x64xf16>,
                           %v: tensor<2x8x1024x64xf16>)
    -> tensor<2x8x1024x64xf16> {
  %s = flash.matmul %q, %k transpose_b
      : tensor<2x8x1024x64xf16>, tensor<2x8x1024x64xf16> -> tensor<2x8x1024x1024xf32>
  %sqrt_d = arith.constant dense<8.0> : tensor<2x8x1024x1024xf32>
  %scaled = arith.divf %s, %sqrt_d : tensor<2x8x1024x1024xf32>
  %p = flash.softmax %scaled causal
      : tensor<2x8x1024x1024xf32> -> tensor<2x8x1024x1024xf16>
  %o = flash.matmul %p, %v
      : tensor<2x8x1024x1024xf16>, tensor<2x8x1024x64xf16> -> tensor<2x8x1024x64xf16>
  return %o : tensor<2x8x1024x64xf16>
}
