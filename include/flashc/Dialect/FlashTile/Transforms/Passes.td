//===- Passes.td - flash_tile passes -----------------------*- tablegen -*-===//
//
// Declares the passes over flash_tile IR.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_TRANSFORMS_PASSES_TD
#define FLASHC_DIALECT_FLASHTILE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FlashTileAssignLayouts : Pass<"flash-tile-assign-layouts"> {
  let summary = "Choose a kernel's warps and the layouts of its tiles";
  let description = [{
    `flash-to-tile` writes a kernel's register tiles without layouts
    (`!flash_tile.tile<64x64xf32>`) and its copies without a blocked
    layout. For every function (a `func.func` or a `gpu.func`) holding
    such tiles, this pass chooses how the CTA's warps share the work and
    where every tile lives on them:

    - **Warps.** The kernel's `flash_tile.mma` ops give the tile's rows
      `R`, its batch `B` of matrices (3-D tiles: the kv warps of a decode
      tile, each with its own share of a KV block), the widest operand or
      accumulator and the narrowest and widest accumulators (S's keys
      and O's Dv). A warp owns 32 rows where the tile has 128 rows, no
      batch, no matrix wider than 128 columns and at most 160
      accumulator columns (keys + Dv: what 255 registers hold for 32
      rows; a warp then reads each K and V fragment once for two row
      tiles), else 16 (GPUSchedule's `chooseRowTilesPerWarp`, which the
      cost model counts by too); `rows-per-warp` overrides the choice.
      A kernel with a `flash_tile.warpgroup_mma` gives every warp 16
      rows, so that each warpgroup holds the 64 rows of its instructions
      (`rows-per-warp = 32` is then an error). The CTA has
      `R / rows-per-warp x B` warps, a power of two, recorded on the
      function as `flash.block` (threads).
    - **MMA layouts.** Every accumulator gets `#flash_tile.mma<warps =
      [R / rows-per-warp, B], instr = [16, 8, 16]>` (2-D: a batch's
      merged result spreads its columns over the kv warps) or `<warps =
      [B, R / rows-per-warp, 1]>` (a batch), its operands the A and B
      operand layouts of it (a warpgroup MMA's register A the A operand
      layout; its shared operands have none); shared-memory reads, splats and broadcasts
      feeding an MMA take the layout it needs.
    - **The rest** follows to a fixed point: a reduction leaves a
      `#flash_tile.slice` of its source's layout, a fold and a rescale
      keep it, a map takes its inputs', a batch reduction leaves the 2-D layout and a
      broadcast the batched one, loop-carried values and branch results
      the layout that reaches them, a splat its users'.
    - **Conversions.** Where a value's layout is not what its user needs
      (the S accumulator, rounded to f16, as the A operand of P V), a
      `flash_tile.convert_layout` is inserted after the value.
    - **Copies** without a layout get the blocked copy layout: 16-byte
      runs (8 or 4 where 16 do not spread over every thread, single
      elements for rows that are not whole 16-byte chunks), a warp's
      lanes over a row's runs first.

    Tiles that already have layouts keep them (the combine kernel's
    blocked tiles are written with theirs). A kernel whose MMAs disagree
    on the tile or do not split into m16n8k16 instructions, whose warps
    are not a power of two, or one of whose tiles no rule reaches (a
    reduction of an operand, say, which has no row slice) is an error
    that says so.

    Example (4 warps of 16 rows):

    ```mlir
    %q = flash_tile.local_load %qs[%c0] : !flash_tile.shared<1x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
    %kt = flash_tile.local_load %ks[%c0] transpose : !flash_tile.shared<2x64x64xf16, #sw> -> !flash_tile.tile<64x64xf16>
    %s0 = flash_tile.splat %zero : !flash_tile.tile<64x64xf32>
    %s = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<64x64xf32>
    %m = flash_tile.reduce max %s : !flash_tile.tile<64x64xf32> -> !flash_tile.tile<64xf32>
    ```

    becomes

    ```mlir
    %q = flash_tile.local_load %qs[%c0] : ... -> !flash_tile.tile<64x64xf16, #flash_tile.operand<a, #mma>>
    %kt = flash_tile.local_load %ks[%c0] transpose : ... -> !flash_tile.tile<64x64xf16, #flash_tile.operand<b, #mma>>
    %s0 = flash_tile.splat %zero : !flash_tile.tile<64x64xf32, #mma>
    %s = flash_tile.mma %q, %kt, %s0 : ...
    %m = flash_tile.reduce max %s : !flash_tile.tile<64x64xf32, #mma> -> !flash_tile.tile<64xf32, #flash_tile.slice<1, #mma>>
    // #mma = #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>,
    // and on the function: flash.block = 128 : i64
    ```
  }];
  let dependentDialects = ["::mlir::flash::FlashDialect"];
  let options = [
    Option<"rowsPerWarp", "rows-per-warp", "int64_t", /*default=*/"0",
           "Query rows each warp owns: 16, 32, or 0 for the schedule's "
           "choice">,
  ];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "Kernels given layouts">,
    Statistic<"numTiles", "num-tiles", "Tiles given a layout">,
    Statistic<"numConversions", "num-conversions",
              "Layout conversions inserted">,
  ];
}

def FlashTileUseWarpgroupMma : Pass<"flash-tile-use-warpgroup-mma"> {
  let summary = "Multiply by warpgroups straight from shared memory (sm_90a)";
  let description = [{
    Rewrites each `flash_tile.mma` of a kernel whose B operand is a
    `flash_tile.local_load` of a shared buffer into a
    `flash_tile.warpgroup_mma` that reads that buffer's stage itself
    (`wgmma.mma_async` on sm_90a): the tensor cores read B, and A too
    where A is an untransposed `local_load` (Q of `Q K^T`), from shared
    memory, and no warp loads them into registers. An A operand computed
    in registers (P of `P V`) stays there. A `local_load` left without
    users is erased.

    It runs before `flash-tile-assign-layouts`, on tiles without layouts,
    which then gives every warp 16 rows so that each warpgroup holds the
    64 rows of its instructions. An MMA is rewritten where the
    instruction can do it and the buffers' rows are what its swizzles
    read; others are left as they are, and a kernel may mix
    both:

    - the accumulator is a matrix (no batch) of a multiple of 64 rows
      and 8 to 256 columns (a multiple of 8), K a multiple of 16;
    - every buffer it reads has rows of a multiple of 32 bytes (16-bit
      columns a multiple of 16, which every padded head dim is): rows of
      the widest of the 128-, 64- and 32-byte swizzles that divides them
      (128 for 64, 128, 192 or 256 columns; 64 for 32, 96 or 160; 32 for
      16, 48, 80 or 112), in panels of its row where wider
      (`flash-tile-allocate-shared` places them so).

    Example:

    ```mlir
    %kt = flash_tile.local_load %k[%s] transpose : !flash_tile.shared<2x64x64xf16> -> !flash_tile.tile<64x64xf16>
    %s1 = flash_tile.mma %q, %kt, %s0 : !flash_tile.tile<128x64xf16>, !flash_tile.tile<64x64xf16>, !flash_tile.tile<128x64xf32>
    ```

    becomes (with `%q` a `local_load` of `%qs[%c0]`)

    ```mlir
    %s1 = flash_tile.warpgroup_mma %qs[%c0], %k[%s] transpose, %s0
        : !flash_tile.shared<1x128x64xf16>, !flash_tile.shared<2x64x64xf16>, !flash_tile.tile<128x64xf32>
    ```
  }];
  let statistics = [
    Statistic<"numShared", "num-shared-a",
              "MMAs rewritten with A from shared memory">,
    Statistic<"numRegisters", "num-register-a",
              "MMAs rewritten with A from registers">,
    Statistic<"numKept", "num-kept", "MMAs left as warp-level MMAs">,
  ];
}

def FlashTileUseTma : Pass<"flash-tile-use-tma"> {
  let summary = "Copy a kernel's blocks by TMA, waiting on mbarriers (sm_90a)";
  let description = [{
    Rewrites the copies of a pipelined kernel (after `flash-tile-pipeline`)
    into copies by the tensor memory accelerator, for the sm_90a kernels
    whose tensor cores read shared memory (`flash_tile.warpgroup_mma`):

    - each `flash_tile.async_copy` becomes a `flash_tile.tma_load` of a
      tensor map the kernel takes as a new argument (`q_map`, `k_map`,
      `v_map`: a 128-byte `__grid_constant__` parameter the runtime builds
      at launch), at the coordinates of the copied rows in the whole
      tensor (the source's `memref.subview` offsets plus the copy's row);
      each stage of a buffer so filled has an mbarrier the copy completes;
    - the KV loops carry the parity of each stage's next phase (an `i32`
      of one bit per stage); each buffer's first read in an iteration
      waits for its stage (`flash_tile.stage_wait`), and the wait that ended
      the iteration (`flash_tile.async_wait`) becomes a
      `flash_tile.barrier`, after which the next copy into the stage may
      start; the wait before the loops becomes Q's stage wait;
    - `flash_tile.async_commit` goes: an mbarrier counts its own copies;
    - a branch between a full block's copies and a ragged one's, which are
      now the same TMA copies (TMA fills the rows past the tensor with
      zeros itself), folds into them.
    - the store of the kernel's output (`out`) after the KV loops, where a
      buffer filled once before them (Q's) has the tile's shape and element
      type, becomes a `flash_tile.local_store` of the tile into that buffer
      (free once the loops have read it) and a `flash_tile.tma_store` of
      it to a fourth tensor map (`out_map`): rows and heads past the
      tensor's are not written, as the store's `valid` and `groups` did
      not. Where the buffer has more columns (V's head dim below Q's) and
      the tile's are a whole number of the panels the buffer is placed in
      (192 of Q's columns in panels of 64, the 128-byte swizzle's row, for
      an output of 128 or 64), the tile goes through a `flash_tile.view`
      of the buffer's first panels, stored a panel a box. Other outputs
      keep their stores, and so does an output whose store's `alignment`
      is below 16 bytes.

    A kernel is rewritten whole or not at all: every copy must be of 16-bit
    rows of a multiple of 32 bytes (boxes of one row of the widest 128-,
    64- or 32-byte swizzle that divides them, the buffer's) from a subview of a reinterpret_cast of the kernel's `q`,
    `k` or `v` argument whose rows are whole 16-byte units (a head dim
    of a multiple of 8: the runtime then requires strides of 16-byte
    multiples and a 16-byte aligned base, which is all a tensor map needs;
    rows of other widths, D = 59 say, may be packed, which no tensor map
    describes) and without an `alignment` below 16 (a kernel built for
    less aligned tensors, the runtime's fallback), and the kernel must
    multiply by warpgroups. A
    kernel whose copies do not all qualify keeps its `cp.async` copies.
    The rows a copy zero-fills past `valid` are those past the tensor's end,
    which a TMA box fills with zeros; a GQA tile's groups past the group
    are past the tensor's head dimension, zeros too.

    The kernel records the new arguments' positions in
    `flash.grid_constants` for `flash-llvm-grid-constants`, and each
    argument's `flash.param` names the tensor (`tensor`) and the box the
    runtime's map must have (`box`, innermost first).

    The runtime launches the kernels of one module (a decode variant's
    forward kernel and its combine) with one argument list: every other
    kernel of the module that took the same arguments as a kernel given
    tensor maps takes the maps too (the same `flash.param`s and grid
    constants), unused.
  }];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "Kernels given TMA copies">,
    Statistic<"numCopies", "num-copies", "Copies rewritten as TMA copies">,
    Statistic<"numStores", "num-stores",
              "Output stores rewritten as TMA stores">,
    Statistic<"numKept", "num-kept", "Kernels left with cp.async copies">,
    Statistic<"numFoldedBranches", "num-folded-branches",
              "Branches between a full and a ragged block's copies folded">,
    Statistic<"numSharedMaps", "num-shared-maps",
              "Kernels given another kernel's tensor maps, unused">,
  ];
}

def FlashTileWarpSpecialize : Pass<"flash-tile-warp-specialize"> {
  let summary = "Give a TMA kernel's copies to a producer warp (sm_90a)";
  let description = [{
    Splits a kernel whose blocks are copied by TMA (after
    `flash-tile-use-tma`) into a producer and its consumers, a
    `flash_tile.warp_specialize`:

    - from the first op that copies (Q's `flash_tile.tma_load`) to the end
      of its block, the kernel becomes the consumers' region, run by the
      threads the kernel had (whole warpgroups); the CTA gains a warpgroup
      for the producer (`flash.block` grows by 128);
    - the producer's region is that code sliced down to its copies: the
      `flash_tile.tma_load`s and what computes their coordinates and
      stages, the KV loops carrying only what those need. Before each fill
      of a stage of a buffer the KV loops fill (K's and V's) the producer
      waits until the consumers have released it
      (`flash_tile.stage_acquire`), tracking each stage's parity, one bit a
      stage in an `i32` a buffer, which starts at all ones: a stage's first
      fill does not wait;
    - the consumers copy nothing: each KV loop releases a buffer's stage
      (`flash_tile.stage_release`) after its last read of it in the
      iteration, and the barrier that ended the iteration, which kept the
      next copy into a stage from starting before every thread had read
      it, goes (where nothing else in the loop writes shared memory).

    `setmaxnreg` moves registers from the producer's warpgroup to the
    consumers': `producer-registers` a producer thread and
    `consumer-registers` a consumer thread, or when 0 the most (a multiple
    of 8, at most 240) that the SM's 65536 registers leave them.

    A kernel is rewritten only where every `flash_tile.tma_load` is under
    one block whose terminator uses nothing the moved code defines, and
    whose `flash.block` is whole warpgroups; others are left as they are.
  }];
  let options = [
    Option<"producerRegisters", "producer-registers", "int64_t", "24",
           "Registers a thread of the producer's warpgroup keeps">,
    Option<"consumerRegisters", "consumer-registers", "int64_t", "0",
           "Registers a consumer thread gets (0: the most the SM's "
           "registers allow, at most 240)">,
  ];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "Kernels warp-specialised">,
    Statistic<"numReleases", "num-releases", "Stage releases inserted">,
    Statistic<"numAcquires", "num-acquires", "Stage acquires inserted">,
    Statistic<"numBarriers", "num-barriers",
              "KV loop barriers the releases replaced">,
  ];
}

def FlashTileOverlapSoftmax : Pass<"flash-tile-overlap-softmax"> {
  let summary = "Overlap each block's softmax with the previous block's P V";
  let description = [{
    Software-pipelines each KV loop of a warp-specialised kernel's
    consumers (after `flash-tile-warp-specialize`) over its two warpgroup
    MMAs, as FlashAttention-3 overlaps within a warpgroup: an iteration
    rescales the previous block's O and waits for its stage of V, starts
    its block's `S = Q K^T` (`flash_tile.warpgroup_mma ... async`) and the
    previous block's `O += P V` back to back, waits for S alone
    (`flash_tile.warpgroup_wait ... pending 1`), releases K's stage and
    computes the block's softmax while the tensor cores run P V, then
    waits for P V (`pending 0`), releases the previous block's V stage and
    converts the softmax to P (the next P V's registers are written only
    once the last one has read its own). What the deferred work reads of
    its block (P, the rescale factor, V's stage and its parity) is carried
    to the next iteration. The first block's own work runs before the loop
    and the last block's deferred work (its rescale, V's wait, P V and V's
    release) after it, all three in one `scf.if` on the loop having a
    block, whose other side yields the loop's initial values (with a
    branch around each of the two, ptxas merged O with its initial value
    and the carried P with a placeholder of zeros, and spilled).

    A loop is rewritten when it has two warpgroup MMAs at its top level,
    the second of a register A (P) into the iteration argument it yields
    (O), read by nothing but the multiply and its rescale, and V's buffer
    used in the loop only by the multiply and its stage's wait and
    release; other loops keep their order.
  }];
  let statistics = [
    Statistic<"numLoops", "num-loops", "KV loops pipelined">,
    Statistic<"numKept", "num-kept", "KV loops left in their order">,
  ];
}

def FlashTilePingPong : Pass<"flash-tile-pingpong"> {
  let summary = "Make the consumer warpgroups take turns at the tensor cores";
  let description = [{
    Schedules the consumer warpgroups of a warp-specialised kernel (after
    `flash-tile-warp-specialize` and, when it runs,
    `flash-tile-overlap-softmax`) in ping-pong, as FlashAttention-3 does:
    each run of warpgroup MMAs in the consumers' region (MMAs one after the
    other, with nothing between them but ops free of memory effects and
    regions, none reading what an MMA of the run computes) becomes a turn,
    begun by `flash_tile.turn_wait` and ended by `flash_tile.turn_pass`
    right after its last MMA is started. The
    warpgroups take the turns in order, so that while one computes its
    softmax the next one's multiplies run.

    A multiply of the run that waited for itself is made `async`, and a
    `flash_tile.warpgroup_wait` for it follows the turn's end: the turn
    passes as soon as the multiplies are started, and the next warpgroup's
    queue behind them.

    Only kernels of two or more consumer warpgroups, not taking turns
    already, are scheduled; the
    turns need every warpgroup to run the same MMAs, which the tile IR's
    control flow (the same for every thread of the CTA) gives.
  }];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "Kernels scheduled in ping-pong">,
    Statistic<"numTurns", "num-turns", "Turns inserted">,
    Statistic<"numStarted", "num-started",
              "Multiplies made async for their turn to end early">,
  ];
}

def FlashTileAllocateShared : Pass<"flash-tile-allocate-shared"> {
  let summary = "Place a kernel's shared buffers and check the budget";
  let description = [{
    Gives every `flash_tile.alloc` of a function (a `func.func` or a
    `gpu.func`) without a placement its `#flash_tile.swizzled` layout
    (a buffer a `flash_tile.warpgroup_mma` reads
    or a `flash_tile.tma_load` fills: the widest of the 128-, 64- and
    32-byte swizzles whose row divides the buffer's, rows wider than that
    in panels of it (`panel = 64`, 32 or 16 for 16-bit elements), and on a
    1024-byte
    boundary; the kernel's total then counts 1024 bytes more, within which
    the lowering aligns the buffers' start, and 8 bytes for the mbarrier
    of each stage a TMA copy fills), else
    16-byte chunks XOR-swizzled over 8 rows where a row has a power of
    two of them (rows of 2 or 4 chunks, 32 or 64 bytes, in runs of 4 or
    2 rows a phase; rows of one chunk as they are), else rows padded by a
    chunk (48, 80, 96, 112, 160, 192 or 224 f16 columns); each puts the 8
    rows an ldmatrix reads in 8 different bank groups; rows that are not
    whole
    16-byte chunks are an error. A `flash_tile.view` of a buffer takes
    the buffer's placement; a view of fewer columns than a row's that are
    not a whole number of its panels is an error. Then every allocation gets its byte
    offset in the CTA's dynamic shared memory, in the order the
    allocations appear, each aligned to 128 bytes (so that a
    swizzled buffer's rows start on the bank pattern the swizzle assumes),
    and records the total on the function as `flash.shared_bytes`. Every
    buffer lives until the kernel ends: no two share memory.

    The total must fit the budget: `shared-bytes`, or, when it is 0, the
    opt-in maximum per CTA of the `chip` (163 KiB on sm_80, 227 KiB on
    sm_90a). A function over the budget is an error that lists its
    buffers and their sizes.

    Example:

    ```mlir
    %q = flash_tile.alloc : !flash_tile.shared<1x64x64xf16>
    %k = flash_tile.alloc : !flash_tile.shared<2x64x96xf16>
    ```

    becomes

    ```mlir
    %q = flash_tile.alloc {offset = 0 : i64}
        : !flash_tile.shared<1x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
    %k = flash_tile.alloc {offset = 8192 : i64}
        : !flash_tile.shared<2x64x96xf16, #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>>
    // and on the function: flash.shared_bytes = 34816 : i64
    ```
  }];
  let dependentDialects = ["::mlir::flash::FlashDialect"];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_80\"",
           "The GPU chip whose shared memory per CTA is the budget "
           "(sm_80 or sm_90a)">,
    Option<"sharedBytes", "shared-bytes", "int64_t", /*default=*/"0",
           "The budget in bytes (0: the chip's opt-in maximum per CTA)">,
  ];
  let statistics = [
    Statistic<"numBuffers", "num-buffers", "Shared buffers placed">,
    Statistic<"numPlacements", "num-placements",
              "Buffers given the placement of their rows">,
    Statistic<"numBytes", "num-bytes",
              "Bytes of shared memory placed, alignment included">,
  ];
}

def FlashTilePipeline : Pass<"flash-tile-pipeline"> {
  let summary = "Software-pipeline the copies of a kernel's KV loops";
  let description = [{
    Rewrites the KV loops of each function (the `scf.for` ops marked
    `flash.kv_loop`, in one block, in order) so that the copies of the next
    blocks are in flight while the current block computes, over the stages
    of the buffers they fill.

    A KV loop comes in as `flash-to-tile` writes it: its body starts with
    the copies of block `j` into stage 0 of its K and V buffers (any ops
    before the first `async_wait`, with results used there only), then
    `async_wait pending 0`, the block's computation reading stage 0, and
    `async_wait pending 0` last, after which every thread is done with the
    stage. With `S` stages, the pass:

    - copies the first `S - 1` blocks of the loops before the first loop,
      one group each (`async_commit` between them), the first with the
      copies before the `async_wait` that precedes the first loop (Q's),
      which then waits with `pending = S - 2`;
    - carries the stage `s` of the current block through every loop;
    - starts each iteration with the copies of the block `S - 1` blocks on
      into the stage the previous block used, drops the wait after them,
      reads stage `s`, and ends with `async_wait pending S - 2`: the next
      block has landed, and the other stages' copies stay in flight.

    With 2 stages "the next block" follows from each loop's bounds: the
    next iteration's block, or the first block of the next non-empty loop.
    With more, the loops must continue one another (each starting where
    the previous ends, with one step), and block `j + (S - 1) step` is
    copied while it is below the last loop's end. A block past the end is
    `-1`, which the copies' guard skips.

    `stages` sets the stages of the K and V buffers (2 to 4); 0 keeps the
    stages they were allocated with. Input that does not have the form
    above is an error that names what is missing.

    Example, 2 stages (the buffers hold 2):

    ```mlir
    flash_tile.async_copy %q[%c0], %qs[%c0] valid %n : ...
    flash_tile.async_wait pending 0
    scf.for %j = %c0 to %nk step %c64 iter_args(...) {
      scf.if (%j >= 0) { flash_tile.async_copy %k[%j], %ks[%c0] ... }
      flash_tile.async_wait pending 0
      %kt = flash_tile.local_load %ks[%c0] transpose : ...
      ...
      flash_tile.async_wait pending 0
    } {flash.kv_loop}
    ```

    becomes

    ```mlir
    flash_tile.async_copy %q[%c0], %qs[%c0] valid %n : ...
    scf.if (%first >= 0) { flash_tile.async_copy %k[%first], %ks[%c0] ... }
    flash_tile.async_wait pending 0
    scf.for %j = %c0 to %nk step %c64 iter_args(..., %s = %c0) {
      %other = arith.subi %c1, %s : index
      scf.if (%next >= 0) { flash_tile.async_copy %k[%next], %ks[%other] ... }
      %kt = flash_tile.local_load %ks[%s] transpose : ...
      ...
      flash_tile.async_wait pending 0
      scf.yield ..., %other : ..., index
    } {flash.kv_loop}
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::flash::FlashDialect",
                           "::mlir::scf::SCFDialect"];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Stages of the K and V buffers, 2 to 4 (0: as allocated)">,
  ];
  let statistics = [
    Statistic<"numLoops", "num-loops", "KV loops pipelined">,
    Statistic<"numPrologueCopies", "num-prologue-copies",
              "Blocks copied before the first loop">,
  ];
}

#endif // FLASHC_DIALECT_FLASHTILE_TRANSFORMS_PASSES_TD
