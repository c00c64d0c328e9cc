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
  let statistics = [
    Statistic<"numFused", "num-fused",
              "Attention chains fused into one flash.attention">
  ];
}

def FlashOnlineSoftmax : Pass<"flash-online-softmax"> {
  let summary = "Rewrite flash.attention into an online-softmax loop over KV blocks";
  let description = [{
    Replaces each `flash.attention` with the online form of the
    FlashAttention algorithm: a sequential `scf.for` over blocks of
    `block-kv` keys that carries the f32 state `(acc, m, l)` and updates it
    with one `flash.attention_step` per block, followed by one
    `flash.finalize` that divides by `l` (FA2's deferred normalisation) and
    produces the log-sum-exp when the attention returns it.

    The query is viewed as `[B, Hkv, G, Nq, D]` (`tensor.expand_shape`) so
    that the `G = Hq / Hkv` query heads sharing a key/value head form one
    block of rows. With `causal`, every step carries the mask offset
    `(Nk - Nq) - j`; `flash-causal-skip` later removes it where a block is
    fully visible. The loop is tagged `flash.kv_loop` for the later passes.

    Example: `flash.attention %q, %k, %v scale = 0.125` on
    `tensor<1x8x128x64xf32>` becomes

    ```mlir
    %qe = tensor.expand_shape %q [[0], [1, 2], [3], [4]] ...
    %r:3 = scf.for %j = %c0 to %c128 step %c64 iter_args(%acc = %a0, %m = %m0, %l = %l0) {
      %kb = tensor.extract_slice %k[0, 0, %j, 0] [1, 8, %n, 64] [1, 1, 1, 1]
      %vb = tensor.extract_slice %v[0, 0, %j, 0] [1, 8, %n, 64] [1, 1, 1, 1]
      %s:3 = flash.attention_step ins(%qe, %kb, %vb : ...) outs(%acc, %m, %l : ...) scale = 0.125
      scf.yield %s#0, %s#1, %s#2
    } {flash.kv_loop}
    %o = flash.finalize ins(%r#0, %r#1, %r#2 : ...) outs(%e : ...)
    %out = tensor.collapse_shape %o [[0], [1, 2], [3], [4]] ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
  let options = [
    Option<"blockKV", "block-kv", "int64_t", /*default=*/"128",
           "Keys per block of the online loop (re-chosen by flash-tile)">
  ];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten",
              "flash.attention ops rewritten into an online loop">
  ];
}

def FlashTile : Pass<"flash-tile"> {
  let summary = "Tile the online attention loop to the target's SRAM capacity";
  let description = [{
    Tiles each online attention loop (produced by `flash-online-softmax`)
    into blocks of `Br` query rows and `Bc` keys chosen from the target's
    SRAM capacity (`TargetInfo`), or given by `block-q` and `block-kv`.

    - `loop-order=fa2` (default): an `scf.forall` over
      `(batch, kv-head, q-block)`; each work item packs the `G` query heads
      of its GQA group into one `[G, Br, D]` tile, keeps its state in a
      tile-sized buffer and runs the KV loop to the end before finalizing
      into its slice of the output.
    - `loop-order=algorithm1`: the order of the FlashAttention paper, a
      sequential loop over KV blocks around an `scf.forall` over
      `(batch, kv-head, q-block)` that updates the full-size state.

    Tails (`Nq` or `Nk` not a multiple of the block) give smaller final
    blocks; `Nq = 1` and `Nk = 1` are ordinary cases of that.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "Target whose SRAM capacity sizes the blocks (cpu, sm_80, sm_90a)">,
    Option<"loopOrder", "loop-order", "std::string", /*default=*/"\"fa2\"",
           "Loop order: fa2 (parallel over Q blocks) or algorithm1">,
    Option<"blockQ", "block-q", "int64_t", /*default=*/"0",
           "Query rows per block per head (0: from the target)">,
    Option<"blockKV", "block-kv", "int64_t", /*default=*/"0",
           "Keys per block (0: from the target)">,
    Option<"sramBytes", "sram-bytes", "int64_t", /*default=*/"0",
           "Override the target's SRAM capacity in bytes (0: the target's)">,
    Option<"wideWarps", "wide-warps", "bool", /*default=*/"false",
           "GPU: tiles for kernels that give a warp 32 query rows where "
           "registers allow (the flash_tile path)">,
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "GPU: the stages of the kernels' K and V buffers (2 to 4) whose "
           "shared memory the KV block is sized to fit">,
    Option<"warpgroupMma", "warpgroup-mma", "bool", /*default=*/"true",
           "sm_90a: whether the kernels multiply by warpgroups, whose "
           "buffers' rows the KV block fits unpadded (false: mma.sync "
           "kernels at the same tiles, whose rows are padded as on sm_80)">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"16",
           "GPU: the bytes the kernels assume of the tensors' addresses and "
           "strides (16, 8, 4 or 2); a decode kernel that copies element "
           "by element (2) takes blocks of 16 keys a kv warp">
  ];
  let statistics = [
    Statistic<"numTiledFA2", "num-tiled-fa2",
              "Online attention loops tiled in FA2 order">,
    Statistic<"numTiledAlgorithm1", "num-tiled-algorithm1",
              "Online attention loops tiled in algorithm-1 order">
  ];
}

def FlashCausalSkip : Pass<"flash-causal-skip"> {
  let summary = "Skip fully masked KV blocks and mask only diagonal blocks";
  let description = [{
    For every KV loop whose steps carry a causal mask offset `o(j)`, bounds
    the loop to the blocks the Q block can see and splits it in two: a loop
    over blocks every row sees in full, whose steps carry no mask, and a
    loop over the diagonal blocks, which keep it. With `c = o(0)` (so key
    `j + t` is visible to row `r` iff `t <= r + o(j)`, `o(j) = c - j`) and
    `Br` rows, the blocks end at `min(Nk, max(0, c + Br))` and the unmasked
    prefix at `min(that, max(0, floor((c + 1) / Bc) * Bc))`. Rows that see
    no key are left with `m = -inf`, `l = 0` and finalize to 0 and -inf.

    `split-diagonal` says where the loop is split (`always`, the default).
    Where it is not, the loop is only bounded: one loop over `[lb, end)`
    whose steps all keep the mask, one copy of the step's code instead of
    two. The CPU's pipeline splits in functions marked `flash.decode` only
    (`decode`): its prefill step costs no more masked than unmasked on a
    block every row sees, while its decode step, which reads K rows in
    place, pays a compare and a select per score for the mask. The GPU's
    splits everywhere but in the loops over one KV split of a
    flash-decoding kernel (`prefill`: a loop in a tile loop whose partial
    results a `flash.combine` merges): the GPU's masked step applies the
    mask only to a block some row does not see in full, so one loop of
    such steps costs a decode kernel a comparison a block, and halves its
    code.
  }];
  let options = [
    Option<"splitDiagonal", "split-diagonal", "std::string",
           /*default=*/"\"always\"",
           "Where to split off the blocks every row sees into a loop of "
           "unmasked steps: always, decode (in functions marked flash.decode "
           "only), prefill (but in loops over one KV split of a "
           "flash-decoding kernel) or never (one loop of masked steps over "
           "the visible blocks)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"
  ];
  let statistics = [
    Statistic<"numLoopsBounded", "num-loops-bounded",
              "Masked KV loops bounded to the visible blocks, not split "
              "(split-diagonal)">,
    Statistic<"numLoopsSplit", "num-loops-split",
              "Masked KV loops split into a full and a diagonal loop">,
    Statistic<"numLoopsKept", "num-loops-kept",
              "Masked KV loops left as they are (offset not c - j)">,
    Statistic<"numBlocksFull", "num-blocks-full",
              "KV blocks run unmasked, summed over the tiles (static bounds)">,
    Statistic<"numBlocksMasked", "num-blocks-masked",
              "KV blocks run masked, summed over the tiles (static bounds)">,
    Statistic<"numBlocksSkipped", "num-blocks-skipped",
              "KV blocks skipped, summed over the tiles (static bounds)">
  ];
}

def FlashSplitKV : Pass<"flash-split-kv"> {
  let summary = "Split the KV loop of decode-shaped attention (flash-decoding)";
  let description = [{
    For tiled attention whose query block is small (decode: `Nq <= max-seq-q`),
    adds a split dimension to the parallel loop: each of `S` work items per
    `(batch, kv-head, q-block)` runs the KV loop over one contiguous range of
    keys and finalizes a partial f32 output and its log-sum-exp; a
    `flash.combine` then merges the partials by log-sum-exp into the
    result. `S` is `splits`, or when 0 the count the CTA x wave model
    predicts fastest on the target (capped so that each split keeps at least
    one KV block).

    With `dynamic-splits`, every tiled attention is split and `S` is a
    `flash.split_count`: the count is chosen when the kernel is launched, so
    one compiled kernel serves every KV length (the GPU backend makes it a
    kernel argument).
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::flash::FlashDialect"
  ];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "Target whose SM count and bandwidth drive the wave model">,
    Option<"splits", "splits", "int64_t", /*default=*/"0",
           "Number of KV splits (0: chosen by the wave model)">,
    Option<"maxSeqQ", "max-seq-q", "int64_t", /*default=*/"16",
           "Split only when the query length is at most this">,
    Option<"dynamicSplits", "dynamic-splits", "bool", /*default=*/"false",
           "Split every tiled attention with a count chosen at launch">
  ];
  let statistics = [
    Statistic<"numSplit", "num-split",
              "Tiled attentions whose KV loop was split in a fixed count">,
    Statistic<"numSplits", "num-splits",
              "KV ranges created, summed over the fixed-count splits">,
    Statistic<"numDynamic", "num-dynamic",
              "Tiled attentions split in a launch-time count">,
    Statistic<"numWhole", "num-whole",
              "Tiled attentions left with one KV range">,
    Statistic<"numUnmatched", "num-unmatched",
              "Tile loops not in the form flash-tile builds, left as they are">
  ];
}

def FlashReportCost : Pass<"flash-report-cost"> {
  let summary = "Print the cost model of each flash.attention and its schedule";
  let description = [{
    An analysis: leaves the IR unchanged and prints, for every
    `flash.attention`, its FLOPs; the HBM element reads and writes of
    standard 3-pass attention, of the algorithm-1 loop order and of the FA2
    loop order (counted by the convention of the FlashAttention seed's
    exercise 3); the Theta(N^2 d^2 / M) model; the fraction of blocks a
    causal mask leaves; the chosen tiles and splits; and, on GPU targets,
    the split count and time predicted by the CTA x wave model. With
    `json`, prints one JSON object per attention instead.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "Target (cpu, sm_80, sm_90a)">,
    Option<"sramBytes", "sram-bytes", "int64_t", /*default=*/"0",
           "Override the target's SRAM capacity in bytes (0: the target's)">,
    Option<"loopOrder", "loop-order", "std::string", /*default=*/"\"fa2\"",
           "Loop order of the chosen schedule: fa2 or algorithm1">,
    Option<"blockQ", "block-q", "int64_t", /*default=*/"0",
           "Query rows per block (0: from the target)">,
    Option<"blockKV", "block-kv", "int64_t", /*default=*/"0",
           "Keys per block (0: from the target)">,
    Option<"splits", "splits", "int64_t", /*default=*/"0",
           "KV splits (0: chosen by the wave model)">,
    Option<"json", "json", "bool", /*default=*/"false",
           "Print JSON instead of text">
  ];
  let statistics = [
    Statistic<"numReported", "num-reported",
              "flash.attention ops whose cost was reported">
  ];
}

#endif // FLASHC_DIALECT_FLASH_TRANSFORMS_PASSES_TD
