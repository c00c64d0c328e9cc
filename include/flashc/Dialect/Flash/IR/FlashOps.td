//===- FlashOps.td - flash dialect operations ---------------*- tablegen -*-===//
//
// Operation definitions of the flash dialect: the graph level (matmul,
// softmax) and the attention level (attention).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHOPS_TD
#define FLASHC_DIALECT_FLASH_IR_FLASHOPS_TD

include "flashc/Dialect/Flash/IR/FlashAttrs.td"
include "flashc/Dialect/Flash/IR/FlashDialect.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
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

    `mask` is a `#flash.mask`, printed by name after the operands (absent:
    `none`). With `causal`, the input is read as scores `[..., Nq, Nk]` and entry
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
                       DefaultValuedAttr<Flash_MaskAttr,
                                         "::flashc::Mask::none()">:$mask);
  let results = (outs Flash_FloatTensor:$result);

  let assemblyFormat = [{
    $input (`dim` `=` $dim^)? (`scale` `=` $scale^)? custom<Mask>($mask)
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

    `scale` defaults to `1/sqrt(D)` and must be finite and positive. The
    optional f32 operand `scale_factor` multiplies it at run time: a kernel
    compiled with `scale = 1.0` and a `scale_factor` argument serves every
    softmax scale. The factor must be finite and positive when the op runs
    (the runtime checks it at each call; max(c s) = c max(s) holds only for
    c > 0). `mask` is a `#flash.mask`, printed by name after the operands
    (absent: `none`). With
    `causal`, key `j` is masked for query `i` when `j > i + (Nk - Nq)`: the
    mask is aligned to the bottom-right corner, so when `Nk > Nq` (decoding
    against a KV cache) the last query sees every key. A query row with no
    visible key produces zeros (and `-inf` in `lse`), never NaN.

    NaN and infinity propagate per row, as in PyTorch: a row whose scores
    include NaN (a NaN or infinite entry of its query or of a key it sees,
    or a score that overflows f32) produces NaN outputs and a NaN `lse`,
    and leaves every other row alone. A NaN or infinite entry of V can
    reach any output row of its head (a weight of 0 times NaN is NaN, as in
    PyTorch's P V). `-inf` in `lse` always means "no visible key", so a
    split-KV merge never drops a NaN row.

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
    // The scale as a run-time value:
    %o2 = flash.attention %q, %k, %v scale = 1.000000e+00 scale_factor(%s)
        : tensor<2x32x?x128xbf16>, tensor<2x8x?x128xbf16>, tensor<2x8x?x128xbf16>
        -> tensor<2x32x?x128xbf16>
    ```
  }];

  let arguments = (ins Flash_AttentionTensor:$query,
                       Flash_AttentionTensor:$key,
                       Flash_AttentionTensor:$value,
                       Optional<F32>:$scale_factor,
                       OptionalAttr<F32Attr>:$scale,
                       DefaultValuedAttr<Flash_MaskAttr,
                                         "::flashc::Mask::none()">:$mask);
  let results = (outs Flash_AttentionTensor:$out,
                      Optional<RankedTensorOf<[F32]>>:$lse);

  let assemblyFormat = [{
    $query `,` $key `,` $value (`scale` `=` $scale^)?
    (`scale_factor` `(` $scale_factor^ `)`)? custom<Mask>($mask)
    attr-dict `:` type($query) `,` type($key) `,` type($value)
    `->` type($out) (`,` type($lse)^)?
  }];
  let hasVerifier = 1;

  let builders = [
    // Infers the result types from the operands; `scale` may be null (the
    // default 1/sqrt(D) then applies).
    OpBuilder<(ins "Value":$query, "Value":$key, "Value":$value,
                   "FloatAttr":$scale, "::flashc::Mask":$mask, "bool":$withLse,
                   CArg<"Value", "Value()">:$scaleFactor)>
  ];

  let extraClassDeclaration = [{
    /// The compile-time softmax scale: `scale` if set, else 1/sqrt(D); a
    /// `scale_factor` multiplies it at run time.
    double getEffectiveScale();
    /// Number of query heads sharing one key/value head (Hq / Hkv).
    int64_t getGroupSize();
  }];
}

//===----------------------------------------------------------------------===//
// The online level: block-level state updates.
//
// These ops are in destination-passing style: on tensors they return the
// updated destinations; on memrefs (after bufferization) they update them in
// place and return nothing. They are the boundary between the shared,
// target-independent compiler and each backend, which expands them into its
// own register-level code.
//===----------------------------------------------------------------------===//

def Flash_AnyInput : AnyTypeOf<[RankedTensorOf<[F32, F16, BF16]>,
                                MemRefOf<[F32, F16, BF16]>],
                               "ranked tensor or memref of f32, f16 or bf16">;
def Flash_StateBuffer : AnyTypeOf<[RankedTensorOf<[F32]>, MemRefOf<[F32]>],
                                  "ranked tensor or memref of f32">;

def Flash_AttentionStepOp : Flash_Op<"attention_step", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<DestinationStyleOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "One online-softmax step of a Q block against a KV block";
  let description = [{
    Updates the online-softmax state `(acc, m, l)` of a block of query rows
    with one block of keys and values. With `Q: [..., G, Br, D]`,
    `K: [..., Bc, D]`, `V: [..., Bc, Dv]`, `acc: [..., G, Br, Dv]` and
    `m, l: [..., G, Br]` (leading dimensions are shared batch dimensions; `G`
    query heads of a GQA group share one key/value block), for every row
    `(g, r)`:

    ```
    s_c   = scale * Q[g, r, :] . K[c, :]          (-inf where masked)
    m'    = max(m, max_c s_c)
    alpha = exp(m - m'),  p_c = exp(s_c - m')     (with m' read as 0 if -inf)
    l'    = alpha * l + sum_c p_c
    acc'  = alpha * acc + sum_c p_c V[c, :]
    ```

    The optional f32 operand `scale_factor` multiplies `scale` at run time
    (it must then be finite and positive), as for `flash.attention`.

    The state is f32 whatever the element type of Q, K and V. When the
    optional `mask` offset `o` is present, column `c` is masked for row `r`
    when `c > r + o`; causal attention passes
    `o = q_start - kv_start + (Nk - Nq)`. A row whose entries are all masked
    keeps `m = -inf`, `l = 0` and `acc = 0`, never NaN.

    With `key_transposed`, K is given as `[..., D, Bc]` (a backend may keep
    a transposed copy of K so that its inner loop reads keys contiguously).

    Example (one packed GQA tile of 4 heads x 64 rows, causal diagonal
    block):

    ```mlir
    %acc2, %m2, %l2 = flash.attention_step
        ins(%q, %k, %v : tensor<4x64x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>)
        mask(%off)
        outs(%acc, %m, %l : tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
        scale = 0.0883883461 -> tensor<4x64x128xf32>, tensor<4x64xf32>, tensor<4x64xf32>
    ```
  }];

  let arguments = (ins Flash_AnyInput:$query, Flash_AnyInput:$key,
                       Flash_AnyInput:$value,
                       Optional<Index>:$mask_offset,
                       Flash_StateBuffer:$acc, Flash_StateBuffer:$max,
                       Flash_StateBuffer:$sum,
                       Optional<F32>:$scale_factor,
                       F32Attr:$scale, UnitAttr:$key_transposed);
  let results = (outs Variadic<RankedTensorOf<[F32]>>:$results);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
    type($value) `)` (`mask` `(` $mask_offset^ `)`)?
    `outs` `(` $acc `,` $max `,` $sum `:` type($acc) `,` type($max) `,`
    type($sum) `)` `scale` `=` $scale
    (`scale_factor` `(` $scale_factor^ `)`)?
    (`key_transposed` $key_transposed^)?
    attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
}

def Flash_FinalizeOp : Flash_Op<"finalize", [
    DeclareOpInterfaceMethods<DestinationStyleOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Normalise an online-softmax state into the output and LSE";
  let description = [{
    The deferred normalisation of FlashAttention-2: divides the accumulator
    by the row sum once, at the end, and optionally produces the row
    log-sum-exp.

    ```
    out = l != 0 ? acc / l : 0         (converted to out's element type)
    lse = l != 0 ? m + log(l) : -inf
    ```

    `acc` and `out` have one shape `[..., Dv]`; `m`, `l` and `lse` have its
    leading dimensions `[...]`. A row that saw no key (`l = 0`) produces 0
    and -inf; a NaN `l` (NaN in the row's scores) produces NaN in both.

    Example:

    ```mlir
    %o, %lse = flash.finalize ins(%acc, %m, %l : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>)
        outs(%out, %lse0 : tensor<64x128xbf16>, tensor<64xf32>)
        -> tensor<64x128xbf16>, tensor<64xf32>
    ```
  }];

  let arguments = (ins Flash_StateBuffer:$acc, Flash_StateBuffer:$max,
                       Flash_StateBuffer:$sum, Flash_AnyInput:$out,
                       Optional<Flash_StateBuffer>:$lse);
  let results = (outs Variadic<RankedTensorOf<[F32, F16, BF16]>>:$results);

  let assemblyFormat = [{
    `ins` `(` $acc `,` $max `,` $sum `:` type($acc) `,` type($max) `,`
    type($sum) `)` `outs` `(` $out (`,` $lse^)? `:` type($out)
    (`,` type($lse)^)? `)` attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
}

def Flash_CombineOp : Flash_Op<"combine", [
    DeclareOpInterfaceMethods<DestinationStyleOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Merge split-KV partial results by log-sum-exp";
  let description = [{
    The merge step of flash-decoding. `parts: [S, ..., Dv]` holds `S`
    normalised partial outputs and `part_lse: [S, ...]` their log-sum-exps,
    each computed over one split of the keys. For every row:

    ```
    lse = log(sum_s exp(part_lse[s]))
    out = sum_s exp(part_lse[s] - lse) * parts[s]
    ```

    The merge is associative and commutative. Splits that saw no key
    (`part_lse = -inf`) contribute nothing; a row whose every split is
    empty produces 0 and `lse = -inf`. A NaN `part_lse` makes the row's
    output and `lse` NaN.

    Example:

    ```mlir
    %o = flash.combine ins(%parts, %plse : tensor<8x1x4x1x128xf32>, tensor<8x1x4x1xf32>)
        outs(%out : tensor<1x4x1x128xf16>) -> tensor<1x4x1x128xf16>
    ```
  }];

  let arguments = (ins Flash_StateBuffer:$parts, Flash_StateBuffer:$part_lse,
                       Flash_AnyInput:$out,
                       Optional<Flash_StateBuffer>:$lse);
  let results = (outs Variadic<RankedTensorOf<[F32, F16, BF16]>>:$results);

  let assemblyFormat = [{
    `ins` `(` $parts `,` $part_lse `:` type($parts) `,` type($part_lse) `)`
    `outs` `(` $out (`,` $lse^)? `:` type($out) (`,` type($lse)^)? `)`
    attr-dict (`->` type($results)^)?
  }];
  let hasVerifier = 1;
}

def Flash_SplitCountOp : Flash_Op<"split_count", [Pure]> {
  let summary = "The number of KV splits, chosen when the kernel is launched";
  let description = [{
    The split count of a split-KV (flash-decoding) loop nest whose count is
    not fixed at compile time. `flash-split-kv{dynamic-splits}` uses it as
    the upper bound of the split dimension and the leading size of the
    partial results; the GPU backend turns it into the kernels' `splits`
    argument, which the runtime computes at launch from the CTA x wave model
    and the actual sizes. A kernel compiled this way serves every KV length.

    ```mlir
    %s = flash.split_count
    %chunk = arith.ceildivsi %blocks, %s : index
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict";
}

#endif // FLASHC_DIALECT_FLASH_IR_FLASHOPS_TD
