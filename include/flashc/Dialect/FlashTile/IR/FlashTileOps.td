//===- FlashTileOps.td - flash_tile operations -------------*- tablegen -*-===//
//
// The operations of the flash_tile dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEOPS_TD
#define FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEOPS_TD

include "flashc/Dialect/FlashTile/IR/FlashTileTypes.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

def FlashTile_Tile : Type<CPred<"::llvm::isa<::mlir::flash_tile::TileType>($_self)">,
    "flash_tile register tile", "::mlir::flash_tile::TileType">;
def FlashTile_Shared : Type<CPred<"::llvm::isa<::mlir::flash_tile::SharedType>($_self)">,
    "flash_tile shared-memory buffer", "::mlir::flash_tile::SharedType">;
// Rows of a matrix in global memory: `N x C`, or `G x N x C` for G groups
// of rows (the query heads of a GQA group) that a tile packs group-major.
def FlashTile_GlobalMatrix : MemRefRankOf<[AnyType], [2, 3]>;

//===----------------------------------------------------------------------===//
// Shared memory and copies
//===----------------------------------------------------------------------===//

def FlashTile_AllocOp : FlashTile_Op<"alloc",
    [MemoryEffects<[MemAlloc<DefaultResource>]>]> {
  let summary = "A shared-memory buffer";
  let description = [{
    Creates a buffer in the CTA's shared memory, live until the kernel
    ends. `offset`, its byte offset in the CTA's dynamic shared memory, is
    set by the pass that allocates shared memory; until then it is absent.

    ```mlir
    %k = flash_tile.alloc : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset);
  let results = (outs FlashTile_Shared:$buffer);
  let assemblyFormat = "attr-dict `:` qualified(type($buffer))";
  let hasVerifier = 1;
}

def FlashTile_ViewOp : FlashTile_Op<"view", [Pure, ViewLikeOpInterface]> {
  let summary = "The first columns of a one-stage buffer, as a buffer";
  let description = [{
    The first `C'` columns of every row of `source`, a buffer of one
    stage of `R x C` elements, as a buffer of one stage of `R x C'`: the
    same bytes, no copy. Where the buffers are placed, both have the same
    placement, and `C'` is a whole number of its panels (rows wider than
    a swizzle's row are stored as panels of that row, one after another,
    so the first panels of a buffer are a buffer of their own); before
    `flash-tile-allocate-shared` places them, neither has one, and that
    pass gives the view its source's. A kernel's output whose head dim
    is below its queries' is written through a view of Q's buffer
    (`flash-tile-use-tma`).

    ```mlir
    %o = flash_tile.view %q
        : !flash_tile.shared<1x128x192xf16> to !flash_tile.shared<1x128x128xf16>
    ```
  }];
  let arguments = (ins FlashTile_Shared:$source);
  let results = (outs FlashTile_Shared:$result);
  let assemblyFormat = [{
    $source attr-dict `:` qualified(type($source)) `to` qualified(type($result))
  }];
  let extraClassDeclaration = [{
    /// The buffer whose memory the view is (ViewLikeOpInterface).
    ::mlir::Value getViewSource() { return getSource(); }
  }];
  let hasVerifier = 1;
}

def FlashTile_AsyncCopyOp : FlashTile_Op<"async_copy"> {
  let summary = "Start copying rows of a global matrix into a stage";
  let description = [{
    Starts an asynchronous copy of the rows `[row, row + R)` of the 2-D
    global matrix `source` into stage `stage` of `buffer` (`R x C` per
    stage): the rows from `valid` on (counted from `row`) are filled with
    zeros instead of read, so a ragged last block reads nothing out of
    bounds. A 3-D source of `G` groups (`G x N x C`, the query heads of a
    GQA group) is packed group-major: with `P = floor(R / G)` rows a
    group, stage row `p` is row `row + p mod P` of group `p / P`, and
    `valid` counts the rows of each group; with `groups`, the groups from
    `groups` on are zeros too, not read. Where `G` does not divide `R`,
    the rows from `G x P` on belong to no group (a GQA tile's rows
    rounded up to whole MMA tiles of a power of two of warps): `groups`,
    at most `G`, is then required, and they are zeros. A source narrower than the stage (`C' < C`
    columns: a head dim padded to the MMA's 16) fills its first `C'`
    columns; the stage's other columns are zero-filled too, so that the
    padding adds nothing to a product. The copy is spread over the CTA's
    threads as `layout` says; each thread's run (`size` of the blocked
    layout: one row, 4, 8 or 16 bytes) is one copy instruction, and the
    runs divide the source's columns (without `layout`, as `flash-to-tile`
    writes it, `flash-tile-assign-layouts` chooses it once the CTA's warps
    are known). A run of one element (rows that are
    not whole 4-byte units, which `cp.async` cannot copy) is a plain load
    and store instead.

    `alignment` is what the caller knows of the source: its start and its
    strides between rows and between groups are multiples of `alignment`
    bytes (a power of two, from the element's size to 16), and no run is
    longer. Without it, a source whose rows are whole 16-byte units is
    16-byte aligned (the kernels' arguments are, unless built for less),
    and other rows go element by element. The copies of one stage form a group with
    `flash_tile.async_wait`, which waits for them (and orders the plain
    stores with the rest).

    ```mlir
    flash_tile.async_copy %k[%j], %kbuf[%stage] valid %n
        {layout = #flash_tile.blocked<size = [1, 8], threads = [8, 4], warps = [4, 1]>}
        : memref<?x64xf16>, !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
    ```
  }];
  let arguments = (ins FlashTile_GlobalMatrix:$source, Index:$row,
                       FlashTile_Shared:$buffer, Index:$stage, Index:$valid,
                       Optional<Index>:$groups,
                       OptionalAttr<FlashTile_BlockedLayoutAttr>:$layout,
                       OptionalAttr<I64Attr>:$alignment);
  let assemblyFormat = [{
    $source `[` $row `]` `,` $buffer `[` $stage `]` `valid` $valid
    (`groups` $groups^)?
    attr-dict `:` qualified(type($source)) `,` qualified(type($buffer))
  }];
  let hasVerifier = 1;
}

def FlashTile_AsyncWaitOp : FlashTile_Op<"async_wait"> {
  let summary = "Wait for all but the newest groups of copies";
  let description = [{
    Closes the group of the copies started since the last wait, waits until
    at most `pending` groups are still in flight, and then until every
    thread of the CTA has done so: the stages those copies filled are
    readable by every thread afterwards. A pipeline of `S` stages waits
    with `pending = S - 2` in its loop, so that the next blocks' copies
    stay in flight while the current block computes.

    ```mlir
    flash_tile.async_wait pending 1
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let assemblyFormat = "`pending` $pending attr-dict";
}

def FlashTile_AsyncCommitOp : FlashTile_Op<"async_commit"> {
  let summary = "Close a group of copies without waiting";
  let description = [{
    Closes the group of the copies started since the last `async_commit` or
    `async_wait`, so that a later `async_wait pending N` can wait for it
    while the N groups after it stay in flight. A pipeline of `S > 2`
    stages fills its first `S - 1` stages before the loop, one group each.

    ```mlir
    flash_tile.async_copy %k[%j0], %kbuf[%c0] valid %c64 {layout = #copy} : ...
    flash_tile.async_commit
    flash_tile.async_copy %k[%j1], %kbuf[%c1] valid %c64 {layout = #copy} : ...
    flash_tile.async_wait pending 1  // the first group has landed
    ```
  }];
  let assemblyFormat = "attr-dict";
}

// A CUtensorMap kernel parameter: the generic address of its 128 bytes
// (a `__grid_constant__` parameter, which the runtime builds at launch).
def FlashTile_TensorMap : Type<CPred<"::llvm::isa<::mlir::LLVM::LLVMPointerType>($_self)">,
    "the address of a tensor map", "::mlir::LLVM::LLVMPointerType">;

def FlashTile_TmaLoadOp : FlashTile_Op<"tma_load"> {
  let summary = "Start a TMA copy of a tensor's box into a stage";
  let description = [{
    Starts the tensor memory accelerator's copy of the box of `box`
    elements (innermost dimension first, as the tensor map `map` was built
    with) at `coordinates` (innermost first) of the tensor `map` describes
    into stage `stage` of `buffer`. The stage is `R x C` with `R` the
    product of the box's outer dimensions, or, for a box of `G = box[2]`
    groups of `box[1]` rows where `G` does not divide `R`, with
    `box[1] = floor(R / G)`: the box fills the stage's first `G x box[1]`
    rows and leaves the others (a GQA tile's padding rows) as they are.
    The box's inner dimension is one
    row of the 128-, 64- or 32-byte swizzle the buffer is placed in (the
    widest that divides its rows), so a stage of wider rows (panels,
    `#flash_tile.swizzled<..., panel = box[0]>`) is one box per panel, at
    inner coordinates `box[0]` apart. Elements outside the tensor are
    zeros: a ragged last block reads nothing out of bounds.

    The copy completes on the stage's mbarrier, one per stage of each
    buffer a `tma_load` fills, which expects the boxes' bytes;
    `flash_tile.stage_wait` waits for it. The CTA's first thread issues
    the copy; every thread of the CTA executes the op. In the producer
    region of a `flash_tile.warp_specialize`, the producer warp executes
    it and one elected thread of the warp issues the copy.

    ```mlir
    flash_tile.tma_load %kmap[%c0, %j, %c0, %b], %kbuf[%stage] box [64, 128, 1, 1]
        : !llvm.ptr, !flash_tile.shared<2x128x128xf16, #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>>
    ```
  }];
  let arguments = (ins FlashTile_TensorMap:$map, Variadic<Index>:$coordinates,
                       FlashTile_Shared:$buffer, Index:$stage,
                       DenseI64ArrayAttr:$box);
  let assemblyFormat = [{
    $map `[` $coordinates `]` `,` $buffer `[` $stage `]` `box` $box
    attr-dict `:` qualified(type($map)) `,` qualified(type($buffer))
  }];
  let hasVerifier = 1;
}

def FlashTile_TmaStoreOp : FlashTile_Op<"tma_store"> {
  let summary = "Store a stage to a tensor's box by TMA";
  let description = [{
    Every thread's writes to stage `stage` of `buffer` before it are made
    visible to the asynchronous proxy, the CTA meets at a barrier, and the
    tensor memory accelerator stores the stage into the box of `box`
    elements (innermost first) at `coordinates` (innermost first) of the
    tensor `map` describes, one box per panel of the stage's rows
    at inner coordinates `box[0]` apart (a box of `G` groups that does not
    cover the stage's rows, as `flash_tile.tma_load` allows, stores its
    first `G x box[1]` rows); elements outside the tensor are
    not written, so a ragged last tile writes only its rows. The first
    thread issues the stores and waits until they have read the stage,
    which may be reused after the op. Every thread of the CTA executes it.

    ```mlir
    flash_tile.tma_store %obuf[%c0], %omap[%c0, %row, %c0, %b] box [64, 128, 1, 1]
        : !flash_tile.shared<1x128x128xf16, #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>>, !llvm.ptr
    ```
  }];
  let arguments = (ins FlashTile_Shared:$buffer, Index:$stage,
                       FlashTile_TensorMap:$map, Variadic<Index>:$coordinates,
                       DenseI64ArrayAttr:$box);
  let assemblyFormat = [{
    $buffer `[` $stage `]` `,` $map `[` $coordinates `]` `box` $box
    attr-dict `:` qualified(type($buffer)) `,` qualified(type($map))
  }];
  let hasVerifier = 1;
}

def FlashTile_LocalStoreOp : FlashTile_Op<"local_store"> {
  let summary = "Write a register tile into one stage of a shared buffer";
  let description = [{
    Each thread writes the values it holds of `value` (a 2-D tile of the
    stage's shape and element type) to their places in stage `stage` of
    `buffer`, following the buffer's swizzle and panels; the writes of a
    thread's consecutive values of a row are one access. No barrier
    follows: readers order themselves after it (`flash_tile.tma_store`
    does).

    ```mlir
    flash_tile.local_store %o, %obuf[%c0]
        : !flash_tile.tile<128x128xf16, #mma>, !flash_tile.shared<1x128x128xf16, #swizzled>
    ```
  }];
  let arguments = (ins FlashTile_Tile:$value, FlashTile_Shared:$buffer,
                       Index:$stage);
  let assemblyFormat = [{
    $value `,` $buffer `[` $stage `]` attr-dict `:` qualified(type($value))
    `,` qualified(type($buffer))
  }];
  let hasVerifier = 1;
}

def FlashTile_StageWaitOp : FlashTile_Op<"stage_wait"> {
  let summary = "Wait for the TMA copies into a stage";
  let description = [{
    Waits until the TMA copies into stage `stage` of `buffer` (filled by
    `flash_tile.tma_load`) have landed: the stage's mbarrier has completed
    its phase of parity `parity`. A stage's first fill completes phase 0,
    its next one phase 1, and so on; the waiting thread then reads the
    stage. Every thread of the CTA (of the consumers, in a
    `flash_tile.warp_specialize`) waits for itself.

    ```mlir
    flash_tile.stage_wait %kbuf[%stage], %parity : !flash_tile.shared<2x128x128xf16, #swizzled>
    ```
  }];
  let arguments = (ins FlashTile_Shared:$buffer, Index:$stage, I1:$parity);
  let assemblyFormat = [{
    $buffer `[` $stage `]` `,` $parity attr-dict `:` qualified(type($buffer))
  }];
}

def FlashTile_BarrierOp : FlashTile_Op<"barrier"> {
  let summary = "Wait for every thread of the CTA";
  let description = [{
    Every thread of the CTA waits here for every other: what each read or
    wrote in shared memory before is done for all after. A pipeline of TMA
    copies ends each iteration with one, so that the next copy into a
    stage starts only after every thread has read it. In the consumer
    region of a `flash_tile.warp_specialize` it meets the consumer threads
    only (a named barrier of their count).

    ```mlir
    flash_tile.barrier
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def FlashTile_StageReleaseOp : FlashTile_Op<"stage_release"> {
  let summary = "Release a stage to the producer that fills it";
  let description = [{
    In the consumer region of a `flash_tile.warp_specialize`: every
    consumer thread arrives on the release mbarrier of stage `stage` of
    `buffer` (one per stage of each buffer the producer fills, expecting
    an arrival of every consumer thread), saying that it has done reading
    the stage. Once all have, the stage's release phase completes and the
    producer, waiting in `flash_tile.stage_acquire`, may fill it again.
    A read of the stage by a warpgroup MMA is done when the op returns, so
    a release may follow it directly.

    ```mlir
    flash_tile.stage_release %kbuf[%stage] : !flash_tile.shared<2x128x128xf16, #swizzled>
    ```
  }];
  let arguments = (ins FlashTile_Shared:$buffer, Index:$stage);
  let assemblyFormat = [{
    $buffer `[` $stage `]` attr-dict `:` qualified(type($buffer))
  }];
  let hasVerifier = 1;
}

def FlashTile_StageAcquireOp : FlashTile_Op<"stage_acquire"> {
  let summary = "Wait until the consumers have released a stage";
  let description = [{
    In the producer region of a `flash_tile.warp_specialize`: waits until
    stage `stage` of `buffer` is free to fill, its release mbarrier having
    completed its phase of parity `parity` (every consumer thread arrived,
    `flash_tile.stage_release`). A fresh mbarrier counts the phase before
    its first (of parity 1) as complete, so a producer that waits for the
    parity opposite to the one its consumers wait for in
    `flash_tile.stage_wait` (1 for a stage's first fill, then 0, ...)
    finds a stage free the first time without waiting. The producer's
    threads wait for themselves.

    ```mlir
    flash_tile.stage_acquire %kbuf[%stage], %parity : !flash_tile.shared<2x128x128xf16, #swizzled>
    ```
  }];
  let arguments = (ins FlashTile_Shared:$buffer, Index:$stage, I1:$parity);
  let assemblyFormat = [{
    $buffer `[` $stage `]` `,` $parity attr-dict `:` qualified(type($buffer))
  }];
  let hasVerifier = 1;
}

def FlashTile_TurnWaitOp : FlashTile_Op<"turn_wait"> {
  let summary = "Wait for this warpgroup's turn at the tensor cores";
  let description = [{
    In the consumer region of a `flash_tile.warp_specialize` of two or more
    consumer warpgroups: the warpgroup waits until it holds the turn,
    passed to it by the warpgroup before it (`flash_tile.turn_pass`; the
    first warpgroup holds the first turn). A turn is the ops from a
    `flash_tile.turn_wait` to the next `flash_tile.turn_pass` of the same
    block, typically a warpgroup's MMAs: the consumer warpgroups take turns
    in order, so that one warpgroup's softmax runs while the next one's
    multiplies occupy the tensor cores (FlashAttention-3's ping-pong).
    Every warpgroup must take the same turns. A turn holds only what never
    waits for another warpgroup: warpgroup MMAs, their waits, stage
    releases and ops without regions or memory effects. Lowered to a named
    barrier of the warpgroup's (`bar.sync`), which the warpgroup before it
    arrives on; the first warpgroup arrives on its own as the consumers
    start, and waits on it once more as they end, for the last turn's
    pass, so that no arrival is left at exit.

    ```mlir
    flash_tile.turn_wait
    %s = flash_tile.warpgroup_mma %q[%c0], %k[%s] transpose, %zero async : ...
    flash_tile.turn_pass
    %sw = flash_tile.warpgroup_wait %s pending 0 : !flash_tile.tile<128x128xf32, #mma>
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def FlashTile_TurnPassOp : FlashTile_Op<"turn_pass"> {
  let summary = "Pass the turn at the tensor cores to the next warpgroup";
  let description = [{
    Ends the turn that the `flash_tile.turn_wait` before it in the same
    block began: the warpgroup passes the turn to the next consumer
    warpgroup (the last to the first) and goes on without waiting (an
    arrival on the next warpgroup's named barrier, `bar.arrive`).

    ```mlir
    flash_tile.turn_pass
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def FlashTile_WarpSpecializeOp : FlashTile_Op<"warp_specialize",
    [SingleBlock, NoTerminator, RecursiveMemoryEffects]> {
  let summary = "Split the CTA into a producer warp and consumer warpgroups";
  let description = [{
    Runs `producer` on the first warp of the CTA's last warpgroup and
    `consumers` on the `consumer_threads` threads before it (whole
    warpgroups: the CTA is `consumer_threads + 128` threads, the first ones
    those the kernel's layouts were chosen for). On entry the producer's
    warpgroup gives up registers down to `producer_registers` a thread and
    the consumers' warpgroups take them, up to `consumer_registers` a
    thread (`setmaxnreg`); what both allot fits the SM's 65536 registers.
    The other warps of the producer's warpgroup have nothing to do.

    The producer fills the stages of shared buffers by TMA
    (`flash_tile.tma_load`, issued by one elected thread of its warp),
    waiting before each fill until the consumers have released the stage
    (`flash_tile.stage_acquire`); the consumers wait for each stage to land
    (`flash_tile.stage_wait`) and release it once read
    (`flash_tile.stage_release`). A `flash_tile.barrier` in `consumers`
    meets only the consumer threads.

    ```mlir
    flash_tile.warp_specialize producer(registers 24) {
      flash_tile.stage_acquire %kbuf[%s], %free : !flash_tile.shared<2x128x128xf16, #swizzled>
      flash_tile.tma_load %kmap[%c0, %j, %c0, %b], %kbuf[%s] box [64, 128, 1, 1]
          : !llvm.ptr, !flash_tile.shared<2x128x128xf16, #swizzled>
    } consumers(threads 256, registers 240) {
      flash_tile.stage_wait %kbuf[%s], %full : !flash_tile.shared<2x128x128xf16, #swizzled>
      ...
      flash_tile.stage_release %kbuf[%s] : !flash_tile.shared<2x128x128xf16, #swizzled>
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$consumer_threads,
                       I64Attr:$producer_registers,
                       I64Attr:$consumer_registers);
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumers);
  let assemblyFormat = [{
    `producer` `(` `registers` $producer_registers `)` $producer
    `consumers` `(` `threads` $consumer_threads `,` `registers`
    $consumer_registers `)` $consumers attr-dict
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The threads of the CTA: the consumers' and a producer warpgroup's.
    int64_t getBlockThreads() { return getConsumerThreads() + 128; }
    Block &getProducerBlock() { return getProducer().front(); }
    Block &getConsumersBlock() { return getConsumers().front(); }
  }];
}

def FlashTile_LocalLoadOp : FlashTile_Op<"local_load"> {
  let summary = "Read one stage of a shared buffer into registers";
  let description = [{
    Reads stage `stage` of `buffer` into a register tile of the result's
    layout (an MMA operand layout: `ldmatrix` on NVIDIA GPUs). With
    `transpose`, the tile is the stage's transpose (`K^T` from a stage of K
    rows): its shape is `C x R` for a stage of `R x C`. A 3-D tile of a
    batched layout, `B x X x Y`, reads the stage as `B` blocks of
    consecutive rows, matrix `b` from the `b`-th: the stage is `(B * X) x
    Y`, or `(B * Y) x X` with `transpose` (each kv warp's keys of a
    flash-decoding block).

    ```mlir
    %kt = flash_tile.local_load %kbuf[%stage] transpose
        : !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
        -> !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #mma>>
    ```
  }];
  let arguments = (ins FlashTile_Shared:$buffer, Index:$stage,
                       UnitAttr:$transpose);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = [{
    $buffer `[` $stage `]` (`transpose` $transpose^)? attr-dict `:`
    qualified(type($buffer)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Register tiles
//===----------------------------------------------------------------------===//

def FlashTile_SplatOp : FlashTile_Op<"splat", [Pure,
    TypesMatchWith<"the scalar is of the tile's element type", "result",
                   "value", "::llvm::cast<::mlir::flash_tile::TileType>($_self).getElementType()">]> {
  let summary = "A tile holding one value everywhere";
  let description = [{
    A tile whose every element is `value`: the zero accumulator of a
    multiply, the running maxima's start at the lowest float.

    ```mlir
    %lowest = arith.constant -3.40282347E+38 : f32
    %m0 = flash_tile.splat %lowest : !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>>
    ```
  }];
  let arguments = (ins AnyType:$value);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = "$value attr-dict `:` qualified(type($result))";
}

def FlashTile_ConvertLayoutOp : FlashTile_Op<"convert_layout", [Pure]> {
  let summary = "The same tile in another layout";
  let description = [{
    The same elements, held as another layout says: moving them between
    threads or registers. The accumulator of `S = Q K^T` becomes the A
    operand of `P V` this way; where the two layouts put every element in
    the same thread (an accumulator and an A operand of the same MMA), it
    is a repacking of registers.

    ```mlir
    %p = flash_tile.convert_layout %s
        : !flash_tile.tile<64x64xf16, #mma> -> !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #mma>>
    ```
  }];
  let arguments = (ins FlashTile_Tile:$source);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` qualified(type($source)) `->` qualified(type($result))";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def FlashTile_MmaOp : FlashTile_Op<"mma", [Pure,
    AllTypesMatch<["acc", "result"]>]> {
  let summary = "Matrix multiply-accumulate of register tiles";
  let description = [{
    `result = a * b + acc`: `a` is `M x K` in the A operand layout of the
    accumulator's MMA layout, `b` `K x N` in its B operand layout, `acc`
    and the result `M x N` in the MMA layout. The operands are f16 or bf16
    (both the same), the accumulator f32. With a batched layout every tile
    has a leading batch dimension and matrix `b` of the result is
    `a[b] * b[b] + acc[b]`.

    ```mlir
    %s1 = flash_tile.mma %q, %kt, %s0
        : !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #mma>>,
          !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #mma>>,
          !flash_tile.tile<64x64xf32, #mma>
    ```
  }];
  let arguments = (ins FlashTile_Tile:$a, FlashTile_Tile:$b,
                       FlashTile_Tile:$acc);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` qualified(type($a)) `,` qualified(type($b)) `,` qualified(type($acc))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The checks of shapes and element types, which tiles without layouts
    /// get too.
    ::llvm::LogicalResult verifyShapes();
  }];
}

def FlashTile_WarpgroupMmaOp : FlashTile_Op<"warpgroup_mma",
    [AllTypesMatch<["acc", "result"]>,
     MemoryEffects<[MemRead]>]> {
  let summary = "Matrix multiply-accumulate of a warpgroup, B in shared memory";
  let description = [{
    `result = a * b + acc`, as a warpgroup-level MMA (`wgmma.mma_async` on
    sm_90a) computes it: `b` is read by the tensor cores straight from
    stage `b_stage` of a shared buffer, `a` either from stage `a_stage` of
    a shared buffer or from registers. Every warpgroup of the CTA (four
    consecutive warps) multiplies its 64 rows of `a` into its 64 rows of
    the accumulator.

    - `a` (`M x K`): a shared buffer whose stage is `M x K` (its rows are
      A's rows), or a register tile in `#flash_tile.operand<a, ...>` of
      the accumulator's layout (P of `P V`, never stored).
    - `b` (`K x N`): the stage itself (`K x N`, N-major: V of `P V`), or
      with `transpose_b` the stage's transpose (`N x K`, K-major: K of
      `Q K^T`).
    - `acc` and the result: `M x N` f32 in a `#flash_tile.mma` layout of
      16 rows per warp and one column warp, so that the warps of a
      warpgroup hold the 64 rows of its accumulator as the instruction
      does. `M` is a multiple of 64, `N` of 8 up to 256, `K` of 16.

    The shared operands are read in the layout the buffer's
    `#flash_tile.swizzled` places them: 16-byte chunks swizzled over 8
    rows of 128 bytes, the canonical 128-, 64- or 32-byte swizzles of the
    tensor cores (and of the TMA), rows wider than the swizzle's in
    panels of its row. The multiply is complete when the op returns; its reads of
    shared memory are asynchronous-proxy reads, which see the plain
    stores and `cp.async` copies before them only across a proxy fence
    (`flash-tile-to-nvgpu` fences after each `async_wait` of a kernel
    that has this op).

    With `async` the op only starts the multiply: its result is the
    accumulator once `flash_tile.warpgroup_wait` has waited for it, its one
    use, in the same block; until then the multiply reads its operands
    (the registers of `a` and `acc`, the shared stages), which nothing may
    overwrite, and the stages may not be released.

    ```mlir
    %s = flash_tile.warpgroup_mma %q[%c0], %k[%stage] transpose, %zero
        : !flash_tile.shared<1x128x64xf16, #sw>, !flash_tile.shared<2x64x64xf16, #sw>,
          !flash_tile.tile<128x64xf32, #mma>
    %o = flash_tile.warpgroup_mma %p, %v[%stage], %acc
        : !flash_tile.tile<128x64xf16, #flash_tile.operand<a, #mma>>,
          !flash_tile.shared<2x64x64xf16, #sw>, !flash_tile.tile<128x64xf32, #mma>
    ```
  }];
  let arguments = (ins AnyTypeOf<[FlashTile_Tile, FlashTile_Shared]>:$a,
                       Optional<Index>:$a_stage, FlashTile_Shared:$b,
                       Index:$b_stage, FlashTile_Tile:$acc,
                       UnitAttr:$transpose_b, UnitAttr:$async);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = [{
    $a (`[` $a_stage^ `]`)? `,` $b `[` $b_stage `]`
    (`transpose` $transpose_b^)? `,` $acc (`async` $async^)? attr-dict `:`
    qualified(type($a)) `,` qualified(type($b)) `,` qualified(type($acc))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether A is read from shared memory (else from registers).
    bool isSharedA() {
      return ::llvm::isa<SharedType>(getA().getType());
    }
    /// The M x K, K x N and M x N shapes of the multiply.
    ::llvm::SmallVector<int64_t, 3> getMNK();
    /// Whether an M x K by K x N multiply splits into a warpgroup's
    /// m64nNk16 instructions: M a multiple of 64, N of 8 up to 256, K of
    /// 16.
    static bool fitsInstruction(int64_t m, int64_t n, int64_t k) {
      return m % 64 == 0 && n % 8 == 0 && n <= 256 && k % 16 == 0;
    }
  }];
}

def FlashTile_WarpgroupWaitOp : FlashTile_Op<"warpgroup_wait",
    [AllTypesMatch<["pending_result", "result"]>]> {
  let summary = "Wait for a started warpgroup MMA";
  let description = [{
    Waits until at most `pending` of the warpgroup MMAs the thread started
    (`flash_tile.warpgroup_mma ... async`, in program order) are still
    running, and returns the accumulator of `pending_result`, whose
    multiply must be done by then: at least `pending` more must have been
    started after it (`wgmma.wait_group pending`). Every thread of the
    warpgroup waits.

    ```mlir
    %s0 = flash_tile.warpgroup_mma %q[%c0], %k[%s] transpose, %zero async : ...
    %o0 = flash_tile.warpgroup_mma %p, %v[%t], %o async : ...
    %s = flash_tile.warpgroup_wait %s0 pending 1 : !flash_tile.tile<128x128xf32, #mma>
    ```
  }];
  let arguments = (ins FlashTile_Tile:$pending_result,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = [{
    $pending_result `pending` $pending attr-dict `:` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def FlashTile_ReduceKind : I32EnumAttr<"ReduceKind",
    "How a row reduction combines", [
      I32EnumAttrCase<"Max", 0, "max">,
      I32EnumAttrCase<"Sum", 1, "sum">,
    ]> {
  let cppNamespace = "::mlir::flash_tile";
}

def FlashTile_ReduceOp : FlashTile_Op<"reduce", [Pure]> {
  let summary = "Reduce a tile along one matrix dimension";
  let description = [{
    The maximum or sum of a tile along the dimension its result's
    `#flash_tile.slice` layout removes, one value per remaining index, held
    by the threads that held those elements. Threads combine their own
    elements first; the layout decides which lanes then exchange them (for
    an MMA accumulator reduced along its rows, the four lanes of a quad).
    A batched tile reduces each matrix on its own.

    ```mlir
    %m = flash_tile.reduce max %s
        : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>>
    ```
  }];
  let arguments = (ins FlashTile_ReduceKind:$kind, FlashTile_Tile:$source);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = [{
    $kind $source attr-dict `:` qualified(type($source)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def FlashTile_FoldOp : FlashTile_Op<"fold", [Pure]> {
  let summary = "Combine a tile's blocks of columns";
  let description = [{
    The maximum or sum of the `W`-column blocks of a tile, for a result
    of `W` columns in the same layout (and the same leading extents):
    `result[r][c]` combines `source[r][k * W + c]` over every block `k`
    (`result[b][r][c]` of a batched tile). Where the layout gives each
    thread the same columns of every block (an MMA accumulator folded to one
    instruction tile's 8 columns), each thread combines its own values and
    nothing moves between threads: a reduction left partial, which a
    `flash_tile.reduce` of the result finishes. FA2's row sums are kept so
    across the KV loop and reduced once at its end.

    ```mlir
    %part = flash_tile.fold sum %p
        : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64x8xf32, #mma>
    ```
  }];
  let arguments = (ins FlashTile_ReduceKind:$kind, FlashTile_Tile:$source);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = [{
    $kind $source attr-dict `:` qualified(type($source)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def FlashTile_RescaleOp : FlashTile_Op<"rescale", [Pure,
    AllTypesMatch<["acc", "result"]>]> {
  let summary = "Scale each row of an accumulator by a factor of the row";
  let description = [{
    `result[r][c] = acc[r][c] * factor[r]` (`result[b][r][c] = acc[b][r][c]
    * factor[b][r]` of a batch): the online softmax's rescale of O by
    `2^(m_old - m_new)` when a row's running maximum moves. `factor` is a
    value per row of `acc`, its shape without the last dimension, f32 (in
    the `#flash_tile.slice` of the accumulator's layout that removes the
    columns, where the tiles have layouts).

    A thread whose factors are all 1 keeps its values as they are (`x * 1
    = x`, NaN and infinities included): it branches around the
    multiplications, so that a block that moves no maximum it holds costs
    it a comparison per row instead of a multiplication per value.

    ```mlir
    %o = flash_tile.rescale %acc by %alpha
        : !flash_tile.tile<64x64xf32, #mma>, !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>>
    ```
  }];
  let arguments = (ins FlashTile_Tile:$acc, FlashTile_Tile:$factor);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = [{
    $acc `by` $factor attr-dict `:` qualified(type($acc)) `,` qualified(type($factor))
  }];
  let hasVerifier = 1;
}

def FlashTile_BroadcastOp : FlashTile_Op<"broadcast", [Pure]> {
  let summary = "A batch of copies of a tile";
  let description = [{
    A batched tile of `B` matrices, each of them `source`: the result's
    shape is `B` followed by the source's. The Q tile of flash-decoding
    meets every kv warp's share of a block this way. Where each thread
    already holds what it needs (an operand or slice replicated over the
    warps that become the batch), nothing moves.

    ```mlir
    %qb = flash_tile.broadcast %q
        : !flash_tile.tile<16x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>>>
        -> !flash_tile.tile<4x16x64xf16, #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>>>
    ```
  }];
  let arguments = (ins FlashTile_Tile:$source);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` qualified(type($source)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def FlashTile_BatchReduceOp : FlashTile_Op<"batch_reduce"> {
  let summary = "Reduce a batched tile over its batch";
  let description = [{
    The maximum or sum of the `B` matrices of a batched tile, element by
    element, as a tile of one matrix in the result's layout (over the same
    warps). The values move between warps through `scratch`, a shared
    buffer of at least the source's bytes whose contents the op
    overwrites: it waits for every thread before writing it and after.
    The batch sits there row-major, the columns of a matrix's row
    XOR-swizzled by the row in runs of 8 f32, so that the 8 rows an
    accumulator's store or load covers fall in different banks.
    Flash-decoding combines its kv warps' softmax states so, once, after
    the KV loop.

    ```mlir
    %o = flash_tile.batch_reduce sum %ob, %kbuf
        : !flash_tile.tile<4x16x64xf32, #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>>,
          !flash_tile.shared<2x256x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
        -> !flash_tile.tile<16x64xf32, #flash_tile.mma<warps = [1, 4], instr = [16, 8, 16]>>
    ```
  }];
  let arguments = (ins FlashTile_ReduceKind:$kind, FlashTile_Tile:$source,
                       FlashTile_Shared:$scratch);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = [{
    $kind $source `,` $scratch attr-dict `:` qualified(type($source)) `,`
    qualified(type($scratch)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def FlashTile_MapOp : FlashTile_Op<"map", [Pure, SingleBlock]> {
  let summary = "An elementwise function of tiles";
  let description = [{
    Applies the region to each element of its inputs. The inputs have the
    result's shape and layout, or are `#flash_tile.slice` tiles of the
    result's layout, broadcast along the dimension the slice removes (a
    per-row maximum meeting the scores). The region takes one scalar per
    input, preceded by the element's indices in the result when `indices`
    is given (for a mask), and yields the result's element.

    ```mlir
    // exp2(s * scale - m) with the row maxima broadcast along the rows.
    %p = flash_tile.map %s, %m : !flash_tile.tile<64x64xf32, #mma>,
        !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>> -> !flash_tile.tile<64x64xf32, #mma> {
    ^bb0(%x: f32, %mx: f32):
      %t = math.fma %x, %c, %neg : f32
      %e = math.exp2 %t : f32
      flash_tile.yield %e : f32
    }
    ```
  }];
  let arguments = (ins Variadic<FlashTile_Tile>:$inputs, UnitAttr:$indices);
  let results = (outs FlashTile_Tile:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`indices` $indices^)? $inputs attr-dict `:` qualified(type($inputs)) `->`
    qualified(type($result)) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def FlashTile_YieldOp : FlashTile_Op<"yield", [Pure, Terminator,
    HasParent<"MapOp">]> {
  let summary = "The element a flash_tile.map computes";
  let description = [{
    Ends a `flash_tile.map` region with the result's element at the
    region's position; its type is the result tile's element type.
  }];
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` qualified(type($value))";
}

def FlashTile_LoadOp : FlashTile_Op<"load", [MemoryEffects<[MemRead]>]> {
  let summary = "Read rows of a global matrix into a register tile";
  let description = [{
    Reads the rows `[row, row + R)` of the 2-D global matrix `source` into
    an `R x C` tile; the tile's rows from `valid` on (counted from `row`)
    are zeros, not read, and so are its columns past a narrower matrix's
    (`C' < C` columns: a row padded to the layout's width). A 3-D source of `G` groups takes the tile's rows
    group-major, `valid` per group, as `flash_tile.async_copy` packs them;
    with `groups`, the groups from `groups` on are zeros too (a last tile
    of batch entries that does not fill the tile), as are the rows past
    the last group's where `G` does not divide `R` (`groups` is then
    required, at most `G`).
    A 1-D tile of `R` values is a column: `source` has one column. Each
    thread reads the elements its layout gives it; where it holds several
    consecutive columns of a row, they are one access when `alignment`
    allows.

    `alignment` is what the caller knows of the matrix: its start and its
    strides between rows and between groups are multiples of `alignment`
    bytes (a power of two; the element's size when absent). A thread's run
    of consecutive columns is read in accesses of up to that many bytes
    (and at most 16).

    With `clamp`, the tile's rows from `valid` on read row `valid - 1`
    instead (and groups from `groups` on read group `groups - 1`): every
    row is read without a branch around it, so that the reads of several
    loads can be in flight together (columns past a narrower matrix's are
    still checked one by one). `valid` and `groups` are then at least 1.

    ```mlir
    %part = flash_tile.load %parts[%n] valid %left {alignment = 16}
        : memref<4x?x128xf32, strided<[?, 128, 1], offset: ?>>
          -> !flash_tile.tile<4x128xf32, #blocked>
    %lse = flash_tile.load %lses[%n] valid %left groups %g clamp
        : memref<4x?x1xf32, strided<[?, 1, 1], offset: ?>>
          -> !flash_tile.tile<4xf32, #flash_tile.slice<1, #blocked>>
    ```
  }];
  let arguments = (ins FlashTile_GlobalMatrix:$source, Index:$row,
                       Index:$valid, Optional<Index>:$groups,
                       OptionalAttr<I64Attr>:$alignment, UnitAttr:$clamp);
  let results = (outs FlashTile_Tile:$result);
  let assemblyFormat = [{
    $source `[` $row `]` `valid` $valid (`groups` $groups^)? (`clamp` $clamp^)?
    attr-dict `:` qualified(type($source)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def FlashTile_StoreOp : FlashTile_Op<"store"> {
  let summary = "Write a register tile to rows of a global matrix";
  let description = [{
    Writes the `R x C` tile to the rows `[row, row + valid)` of the 2-D
    global matrix `dest` (the tile's rows from `valid` on are not written:
    a ragged last block writes nothing out of bounds). A matrix of fewer
    columns than the tile takes the tile's first ones (the rest is the
    padding of a head dim). A 3-D `dest` of `G`
    groups takes the tile's rows group-major, `valid` per group, as
    `flash_tile.async_copy` reads them; with `groups`, the groups from
    `groups` on are not written, nor the rows past the last group's where
    `G` does not divide `R` (`groups` is then required, at most `G`). A 1-D tile of `R` values is a
    column: `dest` has one column (a log-sum-exp per row). The
    tile and the matrix have the same element type. Where the layout holds
    an element in several threads, one of them writes it. `alignment` is
    what `flash_tile.load` says it is: a thread's consecutive columns are
    written in accesses of up to that many bytes.

    ```mlir
    flash_tile.store %o, %out[%i] valid %n {alignment = 16}
        : !flash_tile.tile<64x64xf16, #blocked>, memref<?x64xf16>
    ```
  }];
  let arguments = (ins FlashTile_Tile:$value, FlashTile_GlobalMatrix:$dest,
                       Index:$row, Index:$valid, Optional<Index>:$groups,
                       OptionalAttr<I64Attr>:$alignment);
  let assemblyFormat = [{
    $value `,` $dest `[` $row `]` `valid` $valid (`groups` $groups^)? attr-dict
    `:` qualified(type($value)) `,` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

#endif // FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEOPS_TD
