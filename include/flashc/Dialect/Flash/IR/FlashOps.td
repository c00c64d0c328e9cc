//===- FlashOps.td - flash dialect operations ---------------*- tablegen -*-===//
//
// Operation definitions of the flash dialect: the graph level (matmul,
// softmax) and the attention level (attention).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHOPS_TD
#define FLASHC_DIALECT_FLASH_IR_FLASHOPS_TD

include "flashc/Dialect/Flash/IR/FlashDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

/// A ranked tensor of any floating-point element type.
def Flash_FloatTensor : RankedTensorOf<[AnyFloat]>;

/// The element types attention accepts for Q, K, V and O.
def Flash_AttentionElementType : AnyTypeOf<[F32, F16, BF16]>;
def Flash_AttentionTensor : RankedTensorOf<[F32, F16, BF16]>;

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

def Flash_MatmulOp : Flash_Op<"matmul", [Pure]> {
  let summary = "Batched matrix multiplication on ranked tensors";
  let description = [{
    Multiplies the two innermost dimensions of `lhs` and `rhs`; all leading
    dimensions are batch dimensions and must agree. With `transpose_b` the
    right-hand side is read transposed, so `lhs: [..., M, K]` is multiplied
    with `rhs: [..., N, K]` (this is how `Q . K^T` is written without a
    separate transpose). Without it, `rhs` is `[..., K, N]`. The result is
    `[..., M, N]`.

    `lhs` and `rhs` share their element type; the result may use a wider
    floating-point type (for example f16 operands with an f32 result). The
    product is accumulated in f32.

    Example:

    ```mlir
    %s = flash.matmul %q, %k transpose_b
        : tensor<2x8x128x64xf16>, tensor<2x8x128x64xf16> -> tensor<2x8x128x128xf32>
    ```
  }];

  let arguments = (ins Flash_FloatTensor:$lhs, Flash_FloatTensor:$rhs,
                       UnitAttr:$transpose_b);
  let results = (outs Flash_FloatTensor:$result);

  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_b` $transpose_b^)? attr-dict
    `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

def Flash_SoftmaxOp : Flash_Op<"softmax", [Pure]> {
  let summary = "Softmax along one dimension, with optional scale and causal mask";
  let description = [{
    Computes `softmax(scale * input)` along dimension `dim` (the last
    dimension when `dim` is absent). `scale` defaults to 1.

    With `causal`, the input is read as scores `[..., Nq, Nk]` and entry
    `(i, j)` is masked (contributes `exp(-inf) = 0`) when `j > i + (Nk - Nq)`.
    The mask is aligned to the bottom-right corner: when the key sequence is
    longer than the query sequence (decoding with a KV cache) the last query
    row sees every key. A row whose every entry is masked produces zeros.
    `causal` requires the softmax to run along the last dimension.

    The result has the shape of the input; its element type may differ (for
    example f32 scores producing f16 probabilities).

    Example:

    ```mlir
    %p = flash.softmax %s scale = 1.250000e-01 causal
        : tensor<2x8x128x128xf32> -> tensor<2x8x128x128xf16>
    ```
  }];

  let arguments = (ins Flash_FloatTensor:$input,
                       OptionalAttr<I64Attr>:$dim,
                       OptionalAttr<F32Attr>:$scale,
                       UnitAttr:$causal);
  let results = (outs Flash_FloatTensor:$result);

  let assemblyFormat = [{
    $input (`dim` `=` $dim^)? (`scale` `=` $scale^)? (`causal` $causal^)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// The dimension the softmax reduces over: `dim` if set, else the last.
    int64_t getReductionDim();
    /// The scale applied to the input: `scale` if set, else 1.
    double getEffectiveScale();
  }];
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

def Flash_AttentionOp : Flash_Op<"attention", [Pure]> {
  let summary = "Scaled dot-product attention, O = softmax(scale * Q K^T) V";
  let description = [{
    Computes multi-head scaled dot-product attention

    ```
    O[b, h, i, :] = sum_j softmax_j(scale * Q[b, h, i, :] . K[b, g, j, :]) V[b, g, j, :]
    ```

    with `Q: [B, Hq, Nq, D]`, `K: [B, Hkv, Nk, D]`, `V: [B, Hkv, Nk, Dv]`
    and `O: [B, Hq, Nq, Dv]`. `Hq` must be a multiple of `Hkv`; query head
    `h` reads key/value head `g = h / (Hq / Hkv)`. This covers multi-head
    (`Hq = Hkv`), grouped-query (`Hq = G * Hkv`) and multi-query (`Hkv = 1`)
    attention.

    `scale` defaults to `1/sqrt(D)` and must be finite and positive. With
    `causal`, key `j` is masked for query `i` when `j > i + (Nk - Nq)`: the
    mask is aligned to the bottom-right corner, so when `Nk > Nq` (decoding
    against a KV cache) the last query sees every key. A query row with no
    visible key produces zeros (and `-inf` in `lse`), never NaN.

    Q, K, V and O share one element type (f32, f16 or bf16). Scores, the
    softmax statistics and the accumulator are always f32.

    An optional second result holds the row log-sum-exp of the scaled
    scores, `lse[b, h, i] = log(sum_j exp(scale * S[b, h, i, j]))`, as f32
    `[B, Hq, Nq]`; the backward pass and split-KV merging consume it.

    The batch `B` and the sequence lengths `Nq` and `Nk` may be dynamic;
    head counts and head dimensions are static.

    Example:

    ```mlir
    %o, %lse = flash.attention %q, %k, %v scale = 1.250000e-01 causal
        : tensor<2x32x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>
        -> tensor<2x32x?x128xbf16>, tensor<2x32x?xf32>
    ```
  }];

  let arguments = (ins Flash_AttentionTensor:$query,
                       Flash_AttentionTensor:$key,
                       Flash_AttentionTensor:$value,
                       OptionalAttr<F32Attr>:$scale,
                       UnitAttr:$causal);
  let results = (outs Flash_AttentionTensor:$out,
                      Optional<RankedTensorOf<[F32]>>:$lse);

  let assemblyFormat = [{
    $query `,` $key `,` $value (`scale` `=` $scale^)? (`causal` $causal^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type($out) (`,` type($lse)^)?
  }];
  let hasVerifier = 1;

  let builders = [
    // Infers the result types from the operands; `scale` may be null (the
    // default 1/sqrt(D) then applies).
    OpBuilder<(ins "Value":$query, "Value":$key, "Value":$value,
                   "FloatAttr":$scale, "bool":$causal, "bool":$withLse)>
  ];

  let extraClassDeclaration = [{
    /// The softmax scale: `scale` if set, else 1/sqrt(D).
    double getEffectiveScale();
    /// Number of query heads sharing one key/value head (Hq / Hkv).
    int64_t getGroupSize();
  }];
}

#endif // FLASHC_DIALECT_FLASH_IR_FLASHOPS_TD
