//===- Passes.td - flash dialect passes ---------------------*- tablegen -*-===//
//
// Declares the passes that transform flash dialect IR.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_TRANSFORMS_PASSES_TD
#define FLASHC_DIALECT_FLASH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FlashFuseAttention : Pass<"flash-fuse-attention"> {
  let summary = "Fuse a matmul-softmax-matmul chain into one flash.attention";
  let description = [{
    Recognises naive attention written at the graph level,

    ```
    S = flash.matmul Q, K transpose_b       // Q . K^T
    S' = S * c   or   S / c                 // optional, c a splat constant
    P = flash.softmax S' [scale = s] [causal]
    O = flash.matmul P, V
    ```

    and replaces it with `O = flash.attention Q, K, V scale = c*s [causal]`
    (or `s/c`). The fused op always carries an explicit scale, which is 1
    when the graph applies none. The intermediates `S`, `S'` and `P` become
    dead and are erased.

    The chain is left unchanged when fusing it would change what the program
    computes or is not expressible as one attention:

    - an intermediate (`S`, `S'` or `P`) has a user outside the chain;
    - the first matmul does not read K transposed, or the second one reads V
      transposed;
    - the softmax reduces another dimension than the last;
    - the operands are not rank-4 `[B, H, N, D]` tensors of one element type
      among f32, f16 and bf16, or the result element type differs from it;
    - the combined scale is not finite and positive.

    Example:

    ```mlir
    %s = flash.matmul %q, %k transpose_b : ... -> tensor<1x8x128x128xf32>
    %p = flash.softmax %s scale = 1.250000e-01 causal : ...
    %o = flash.matmul %p, %v : ... -> tensor<1x8x128x64xf32>
    ```

    becomes

    ```mlir
    %o = flash.attention %q, %k, %v scale = 1.250000e-01 causal : ...
    ```
  }];
  let dependentDialects = ["::mlir::flash::FlashDialect"];
}

#endif // FLASHC_DIALECT_FLASH_TRANSFORMS_PASSES_TD
