//===- Passes.td - flashc conversion passes ------------------*- tablegen -*-===//
//
// Declares the passes that lower the flash dialect to a backend.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CONVERSION_PASSES_TD
#define FLASHC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FlashExpandToCPU : Pass<"flash-expand-to-cpu"> {
  let summary = "Expand the block-level flash ops into register-blocked vector code";
  let description = [{
    The CPU backend's expansion of the online-level ops, on memrefs (after
    bufferization). Vectors are `vector-lanes` f32 wide, and each register
    block keeps at most that many accumulators: 16 lanes for AVX-512's 32
    registers, 8 for AVX2's 16 (the pipelines pass the host's width).

    - `flash.attention_step` on a `[G, Br, D]` Q tile. The G x Br rows are
      processed four at a time (the heads of a GQA group share the blocks).
      S = Q . K^T takes one of two forms:
      - with `key_transposed` (K is a `[D, Bc]` slice of the transposed copy
        that `flash-cpu-transpose-keys` makes for prefill): 4 rows x up to 4
        vectors of columns of accumulators carried through the D loop
        (broadcast + `vector.fma`), the S lines the chunk stores prefetched
        for writing before it; S is stored unscaled when the scale is
        positive (the scale goes into the row maxima and the softmax's FMA).
        The whole chunks of columns that every row of the 64-row super-block
        sees (all of them without a mask; under a causal mask those before
        the smallest row's end) go chunk by chunk across all the row blocks,
        so that a chunk of Kt is read from L2 once and then from L1, each
        row's running maximum over them kept in a vector of its own; each
        row block takes those maxima and does its other columns itself;
      - otherwise (decode, or a Q tile that holds the whole query): K rows
        are read in place, with no copy. The rows of Q are packed into an
        f32 scratch; keys are taken `vector-lanes / 4` at a time with one
        accumulator per (row, key) along D, and the accumulators are summed
        into one vector by a tree of two-source `vector.shuffle`s. K rows
        are prefetched a few keys ahead (`memref.prefetch`), the same rows
        of V with them into L2 (two streams in flight), and V rows again
        in the first pass of P . V: decode streams K and V from memory
        once.
      Either way, S is scaled, masked and reduced to row maxima as it is
      stored (a maximum is one compare and select, which x86 does in one
      instruction); then, one row at a time, P = 2^(S log2(e) - m log2(e))
      and the row sum overwrite S (the exponent clamped at -127, 2^f of its
      fraction by a degree-5 polynomial, 2^n in the exponent bits; with
      `scalef`, the fraction x - floor(x) by vreduceps, 2^f by a degree-5
      polynomial on [0, 1] and 2^floor(x) applied by vscalefps, with no
      clamp: -inf gives 0). The
      rows are taken 64 at a time: S and the softmax for each row block of
      the 64, then `acc += P . V` in blocks of keys whose V rows fit
      32 KiB, each block read by every row block of the 64 while it is in
      L1, two keys an iteration (the first block scales the accumulators it
      loads by the rows' alphas: `acc = alpha * acc` takes no pass of its
      own). Under a causal
      mask, columns no row of the block sees are skipped. The scratch (packed Q, the 64-row S, the
      alphas and the maxima) is stack memory between `llvm.intr.stacksave` and
      `llvm.intr.stackrestore`, released after every step.
    - The `[B, H, N, D] -> [B, H, D, N]` `linalg.transpose` that
      `flash-cpu-transpose-keys` creates: a parallel loop over (batch, head)
      of 16 x 16 block transposes through `vector.transpose`.
    - `flash.finalize` and `flash.combine` on any rank: loops over the rows
      with the head dimension vectorised.

    Masked and padded columns are excluded with selects, so fully masked
    rows keep `m = -inf`, `l = 0`, never NaN. The output uses the vector,
    scf, arith, math and memref dialects only. Fails on a step whose Q is not
    rank 3 (run flash-tile first).
  }];
  let options = [
    Option<"vectorLanes", "vector-lanes", "int64_t", /*default=*/"16",
           "f32 lanes of one vector register: 16 (AVX-512, 32 registers) "
           "or 8 (AVX2, 16 registers); sizes the vectors and the register "
           "blocks">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "Decode with bf16 Q and K (16 lanes only): S = Q . K^T by "
           "AVX512_BF16's dot product of bf16 pairs (vdpbf16ps, through "
           "llvm.call_intrinsic), 32 elements of a K row per instruction "
           "with no conversion, f32 sums. Only for hosts that have it">,
    Option<"scalef", "scalef", "bool", /*default=*/"false",
           "With 16 lanes: the softmax's 2^x takes x - floor(x) by "
           "AVX-512's vreduceps and applies 2^floor(x) by vscalefps "
           "(through llvm.call_intrinsic), with no clamp: four vector "
           "operations fewer per 16 scores than building 2^n in the "
           "exponent bits. Only for hosts that have AVX-512">,
    Option<"ktReuse", "kt-reuse", "bool", /*default=*/"true",
           "With K pre-transposed: compute the scores of the columns every "
           "row of a 64-row super-block sees chunk by chunk across its row "
           "blocks, so that each chunk of Kt is read from L1 by all of them "
           "(false: row block by row block, each reading all of Kt)">,
    Option<"ablate", "ablate", "std::string", /*default=*/"\"\"",
           "For measurement only: a comma-separated list of the step's "
           "phases to leave out, of qk (the FMA loop of S = Q . K^T; its "
           "scale, mask and maxima remain), softmax (the exponentials and "
           "row sums) and pv (the P . V loop, and with it the "
           "accumulator rescale). The kernel's results are then wrong by design; "
           "timing it with and without a phase gives that phase's share">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
  let statistics = [
    Statistic<"numStepsTransposedK", "num-steps-transposed-k",
              "Attention steps expanded with K pre-transposed (column blocks)">,
    Statistic<"numStepsKeyRows", "num-steps-key-rows",
              "Attention steps expanded reading K rows in place">,
    Statistic<"numStepsDot", "num-steps-bf16-dot",
              "Attention steps whose S = Q . K^T uses vdpbf16ps">,
    Statistic<"numFinalizes", "num-finalizes", "flash.finalize ops expanded">,
    Statistic<"numCombines", "num-combines", "flash.combine ops expanded">,
    Statistic<"numKeyTransposes", "num-key-transposes",
              "Transposed copies of K expanded into block transposes">,
    Statistic<"numWidenings", "num-widenings",
              "f32 copies of f16 or bf16 operands expanded">
  ];
}

def FlashCPUBindSplitCount : Pass<"flash-cpu-bind-split-count", "::mlir::func::FuncOp"> {
  let summary = "Make the launch-time split count a function argument";
  let description = [{
    `flash-split-kv{dynamic-splits}` leaves the KV split count as
    `flash.split_count`, a value chosen when the kernel runs. On the CPU the
    caller passes it: this pass replaces every `flash.split_count` of a
    function with the function's `index` argument marked
    `{flash.split_count}`, so that one compiled kernel serves every batch
    and sequence length with the split count the runtime picks from the
    actual sizes. A function that uses `flash.split_count` without such an
    argument, or with more than one, is an error.

    ```mlir
    func.func @f(..., %s: index {flash.split_count}) {
      %0 = flash.split_count      // replaced by %s
    ```
  }];
  let statistics = [
    Statistic<"numBound", "num-bound",
              "flash.split_count ops replaced by the function argument">
  ];
}

def FlashCPUDirectFinalize : Pass<"flash-cpu-direct-finalize"> {
  let summary = "Finalize into the output when the run-time split count is 1";
  let description = [{
    With a launch-time split count S, each tile finalizes into its split's
    slice of the partial buffers `[S, ...]` and a serial `flash.combine`
    merges them into the output. With one split the merge only copies: a
    second pass over the output and, for prefill, partial buffers as large
    as the output to allocate and fault in at every call. This pass
    versions each such `flash.finalize` on `S == 1`: that branch writes
    the combine's output slice (and its LSE slice, if it has one; without
    one the LSE is not computed) directly, the other the partial slices.
    The combine runs only when `S != 1`, and the partial buffers are
    allocated with 0 rows when `S == 1`. Runs on memrefs, after
    bufferization. A combine whose partial buffers are not allocations
    used only by it, their deallocations and one-split slices that
    finalizes write is left as it is.

    ```mlir
    %p = memref.subview %parts[%s, %b, %h, %i, 0] [1, 1, 1, %n, 64] [1, 1, 1, 1, 1]
    flash.finalize ins(%acc, %m, %l : ...) outs(%p, %pl : ...)
    // becomes
    scf.if %single {
      %o = memref.subview %out[%b, %h, %i, 0] [1, 1, %n, 64] [1, 1, 1, 1]
      flash.finalize ins(%acc, %m, %l : ...) outs(%o : ...)
    } else {
      %p = memref.subview %parts[...]
      flash.finalize ins(%acc, %m, %l : ...) outs(%p, %pl : ...)
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
  let statistics = [
    Statistic<"numCombinesVersioned", "num-combines-versioned",
              "flash.combine ops run only when S != 1">,
    Statistic<"numFinalizesVersioned", "num-finalizes-versioned",
              "flash.finalize ops versioned on S == 1">,
    Statistic<"numCombinesKept", "num-combines-kept",
              "flash.combine ops left as they are">
  ];
}

def FlashCPUWidenOperands : Pass<"flash-cpu-widen-operands"> {
  let summary = "Compute f16 and bf16 prefill on f32 copies of Q, K and V";
  let description = [{
    The CPU kernel computes in f32. With f16 or bf16 operands, its inner
    loops would convert every vector of K and V they load, once per block
    of four query rows that reads it (and every element of Q, once per
    column block): on AVX-512 that is two more vector instructions for
    every four FMAs. This pass makes one f32 copy of each f16 or bf16
    tensor whose blocks the attention steps read (`linalg.copy` into an
    f32 `tensor.empty`, where the tensor is defined), and the steps read
    f32 blocks of the copies instead. The conversion is exact, so results
    do not change. Runs on tiled tensor IR, before
    `flash-cpu-transpose-keys` and bufferization; the CPU expansion turns
    the copies into parallel vector loops.

    Steps whose Q, K and V are not all slices of function-level f16 or
    bf16 tensors, steps whose Q tile holds the whole query, and steps in a
    function marked `flash.decode` are left as they are: there each block
    is read once, and a copy would only add a pass over the data.

    ```mlir
    %kb = tensor.extract_slice %k[%b, %h, %j, 0] [1, 1, %n, 64] [1, 1, 1, 1]
        : tensor<?x8x?x64xbf16> to tensor<?x64xbf16>
    // becomes
    %kw = linalg.copy ins(%k : tensor<?x8x?x64xbf16>)
                      outs(%e : tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
    %kb = tensor.extract_slice %kw[%b, %h, %j, 0] [1, 1, %n, 64] [1, 1, 1, 1]
        : tensor<?x8x?x64xf32> to tensor<?x64xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numStepsWidened", "num-steps-widened",
              "Attention steps switched to f32 blocks">,
    Statistic<"numCopies", "num-copies", "f32 copies of operands created">
  ];
}

def FlashCPUTransposeKeys : Pass<"flash-cpu-transpose-keys"> {
  let summary = "Keep one transposed copy of K for the CPU kernels";
  let description = [{
    The CPU kernel computes `S = Q . K^T` with K's columns in vector lanes,
    so it wants K as `[D, Bc]`. Rather than transposing every K block for
    every Q tile that visits it, this pass transposes each key tensor once
    (`linalg.transpose` to `[B, Hkv, D, Nk]`, where the key tensor is
    defined), slices the blocks from the copy and marks the steps
    `key_transposed`. The copy's rows are padded by one 64-byte cache line
    (it is a slice of a `[B, Hkv, D, Nk + 64 bytes]` buffer): rows of a
    multiple of 4 KiB (Nk = 2048 in f32, say) would otherwise map the
    column blocks the kernel reads onto a few L1 sets. Runs on tiled tensor
    IR, before bufferization. Steps
    whose key block is not a slice of a function-level tensor, steps whose
    Q tile holds the whole query, and steps in a function marked
    `flash.decode` (decode: each key block is read by one tile only) are
    left as they are; the expansion then transposes per step.

    The CPU backend lowers unit-stride slices only (flash-tile makes no
    others): a `tensor.extract_slice`, `insert_slice` or
    `parallel_insert_slice` with any other stride, static or dynamic, is an
    error here, before bufferization.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numStepsTransposed", "num-steps-transposed",
              "Attention steps switched to blocks of the transposed K">,
    Statistic<"numCopies", "num-copies", "Transposed copies of K created">
  ];
}

def FlashCPUDynamicSchedule : Pass<"flash-cpu-dynamic-schedule"> {
  let summary = "Hand the CPU kernels' parallel work items out dynamically";
  let description = [{
    Sets `schedule(dynamic)` on every `omp.wsloop` that has no schedule
    (those `convert-scf-to-openmp` makes from the kernels' parallel loops:
    the attention tiles, the heads of the transposed K, the widened
    copies). A thread takes the next work item when it finishes one, so a
    thread that runs slower (a busy or throttled core, a vCPU the host
    deschedules) holds up the others by at most one item instead of by its
    whole share. A work item is a whole tile of the attention (64 query
    rows against every key, or its split), so the hand-out costs nothing
    measurable.

    ```mlir
    omp.wsloop {
    // becomes
    omp.wsloop schedule(dynamic) {
    ```
  }];
  let dependentDialects = ["::mlir::omp::OpenMPDialect"];
  let statistics = [
    Statistic<"numScheduled", "num-scheduled",
              "omp.wsloop ops given schedule(dynamic)">
  ];
}

def FlashApproximateMath : Pass<"flash-approximate-math"> {
  let summary = "Rewrite vector exp/log into polynomial approximations";
  let description = [{
    Applies MLIR's polynomial approximations to `math.exp` and `math.log`
    (and the f32 expansions they rely on) so that LLVM does not scalarise a
    `vector<16xf32>` exponential into sixteen `expf` calls.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FlashToTile : Pass<"flash-to-tile", "::mlir::ModuleOp"> {
  let summary = "Build FlashAttention-2 GPU kernels from the tiled IR as flash_tile ops";
  let description = [{
    The GPU backend's expansion of the tiled IR (after flash-tile,
    flash-split-kv and flash-causal-skip, on tensors). For each function
    holding a `flash.tile_loop`, builds in `gpu.module @flash_kernels`:

    - `<func>_fwd`: one CTA per iteration of the tile loop (the grid is the
      product of its bounds). The CTA evaluates the tiled IR's own index
      arithmetic (tile offsets, the bounds of the unmasked and masked KV
      loops, the causal mask offsets, the split ranges), cloned into the
      kernel, and writes the block-level ops as flash_tile ops (without
      layouts: `flash-tile-assign-layouts` chooses the warps and them): Q
      and double-buffered K and V blocks copied
      into shared memory (`flash_tile.async_copy`, zero-filling rows past
      the sequence and the head dims' padding to 16), the operands
      read from shared memory into MMA operand layouts
      (`flash_tile.local_load`),
      `flash_tile.mma` for S = Q K^T and O += P V with f32 accumulation,
      the online softmax as row reductions and maps of the scores, P
      rounded to the operands' type as the A operand of P V, and the
      deferred normalisation, log-sum-exp and stores in the epilogue.
      Decode tiles split a KV block between kv warps (a batch of matrices,
      each kv warp's keys and state) and merge their states through
      shared memory (`flash_tile.batch_reduce`).
    - `<func>_combine`, when the KV loop was split: the log-sum-exp merge
      of the f32 partials, loads of the partials and their log-sum-exps
      (`flash_tile.load`), maps and stores in a blocked layout, CTAs of a
      few rows of a few heads, a warp's lanes over a row's columns, several
      splits a step (8 at Dv = 64, 128 or 256; fewer where a thread holds
      more than 8 partials of a split) with their loads clamped to the
      rows rather than branched around, so that they are in flight
      together, in 128 registers (`flash.max_registers`); the last
      splits, when they are not a whole step, in a masked step after the
      loop.

    On sm_90a both kernels are programmatic dependent launches
    (`flash.programmatic_launch`): each waits for the kernel before it on
    the stream before anything else (`griddepcontrol.wait`); the forward
    kernel then lets the combine launch (`griddepcontrol.launch_dependents`,
    when launched with more than one split), and the combine the kernel
    after it (the next call's forward kernel). Both are inline PTX that
    clobbers memory.

    flash-tile-assign-layouts then chooses the warps and layouts,
    flash-tile-allocate-shared places the shared buffers and
    flash-tile-to-nvgpu lowers the ops to NVGPU/NVVM.

    Every kernel takes the same arguments: `q, k, v, out` (element type of
    Q), `lse, ws_out, ws_lse` (f32), then `batch, seq_q, seq_kv, splits`
    and the (batch, head, row) strides of `q, k, v, out`, as i64; all
    pointers are bare. Where rows are multiples of 16 bytes, q, k, v and
    out are `alignment`-byte aligned (their addresses and strides), the
    workspaces 16-byte aligned; the copies of q, k and v carry an
    `alignment` below 16, and so do the stores of out. Each carries `flash.grid` (its CTA
    count as `#flash.grid_factor`s over `B`, `Nq`, `Nk` and `splits`, the
    `flash.param` names of its size arguments), `flash.shared_bytes` and
    `flash.tile` for the runtime, and the combine kernel its `flash.block`
    (the forward kernel's comes with its layouts). The host function
    is erased.

    Every head dim up to 256 is built: the MMAs run over the head dims
    padded to 16, and rows that are not whole 16-byte chunks are copied
    and stored element by element.

    Fails with a diagnostic on f32 inputs, dynamic head counts or head
    dims, head dims beyond 256, tiles whose shared memory exceeds the
    target's, and tiles the flash_tile body does not build (a tile of a
    warp count that is not a power of two, say).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::flash_tile::FlashTileDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect", "::mlir::ub::UBDialect",
    "::mlir::vector::VectorDialect"
  ];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"sm_80\"",
           "sm_80 or sm_90a: the shared-memory budget of a block">,
    Option<"causalOrder", "causal-order", "std::string",
           /*default=*/"\"auto\"",
           "The order of a causal kernel's CTAs: lightest (Q blocks in "
           "order within each head, the fewest keys first), heaviest (the "
           "last Q block of every head first, which shortens the grid's "
           "tail), heaviest-per-head (each head's Q blocks in reverse "
           "order, the heads in order) or auto (heaviest where a head has "
           "2048 query rows or more, lightest below; chosen at launch)">,
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "Stages of the K and V shared buffers (2 to 4), which "
           "flash-tile-pipeline pipelines the KV loops' copies over">,
    Option<"rescaleThreshold", "rescale-threshold", "int64_t",
           /*default=*/"8",
           "How far (log2, 0 to 15) a row's maximum may grow past the one "
           "its P and O are kept against before they are rescaled to it; "
           "0 rescales whenever it grows">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"16",
           "The bytes (16, 8, 4 or 2) that q, k, v and out's addresses and "
           "their row, head and batch strides are multiples of: the "
           "copies and stores of rows of whole 16-byte units move at most "
           "that many bytes at a time (their `alignment`)">,
    Option<"warpgroupMma", "warpgroup-mma", "bool", /*default=*/"true",
           "sm_90a: count the buffers' rows as the warpgroup MMAs place "
           "them, unpadded (false: for a pipeline without "
           "flash-tile-use-warpgroup-mma, padded as on sm_80)">
  ];
  let statistics = [
    Statistic<"numForwardKernels", "num-forward-kernels",
              "Forward kernels built">,
    Statistic<"numCombineKernels", "num-combine-kernels",
              "Combine kernels built (split KV loops)">
  ];
}

def FlashTileToNVGPU : Pass<"flash-tile-to-nvgpu", "::mlir::ModuleOp"> {
  let summary = "Lower flash_tile ops to NVGPU, NVVM and GPU ops (sm_80, sm_90a)";
  let description = [{
    One conversion pattern per `flash_tile` op. A register tile becomes the
    vector of the values each thread holds (`vector<N x T>`, in the order
    its layout's coordinates number them), a shared buffer a 1-D view of
    the CTA's dynamic shared memory at the offset that
    `flash-tile-allocate-shared` assigned. What a layout puts on each
    thread is computed once per kernel from `gpu.thread_id` (the
    thread-dependent part of the layout's coordinates); each value adds
    constants.

    - `alloc`: `memref.view` of `gpu.dynamic_shared_memory`.
    - `async_copy`: one `nvgpu.device_async_copy` per run of the blocked
      layout, reading 0 bytes (zero-filling) for rows at or past `valid`;
      16-byte runs bypass L1.
    - `async_commit`: `cp.async.commit_group`.
    - `tma_load`: the first thread's `nvgpu.mbarrier.arrive.expect_tx` of
      the stage's bytes on the stage's mbarrier, then its
      `nvgpu.tma.async.load` of each box (a panel of the stage) through
      the tensor map argument as an `!nvgpu.tensormap.descriptor` of the
      box row's swizzle (128, 64 or 32 bytes) with zeros out of bounds. The mbarriers, one per
      stage of each buffer a `tma_load` fills (`nvgpu.mbarrier.create`),
      are initialised for one arrival by the first thread at the
      kernel's entry, followed by a CTA barrier.
    - `stage_wait`: `nvgpu.mbarrier.try_wait.parity` on the stage's
      mbarrier.
    - `local_store`: each thread's runs of a row (within a swizzle chunk)
      as `vector.store`s at the buffer's swizzled, paneled addresses.
    - `tma_store`: `fence.proxy.async.shared::cta` and a CTA barrier, then
      the first thread's `nvgpu.tma.async.store` of each panel,
      `cp.async.bulk.commit_group` and `cp.async.bulk.wait_group.read 0`
      (the stage is free again when the op ends).
    - `barrier`: `gpu.barrier`.
    - `async_wait`: `cp.async.commit_group`, `cp.async.wait_group pending`
      and a CTA barrier; in a kernel with a warpgroup MMA, a
      `fence.proxy.async.shared::cta` before the barrier, so that the
      tensor cores' asynchronous-proxy reads see the copies.
    - `local_load`: `nvgpu.ldmatrix` of four 8 x 8 matrices (two at an odd
      last tile): A operands untransposed, B operands from a stage of its
      columns (`transpose`, K^T from K rows) untransposed and from a stage
      of its rows (V) transposed. Addresses follow the buffer's swizzle.
    - `mma`: `mma.sync.m16n8k16` per instruction tile and step of K
      (`nvgpu.mma.sync` for f16, `nvvm.mma.sync` for bf16).
    - `warpgroup_mma`: `wgmma.fence`, one `wgmma.mma_async` m64nNk16
      (f32 accumulators) per step of K, `wgmma.commit_group` and
      `wgmma.wait_group 0`. Shared operands are 64-bit matrix
      descriptors of the buffer's swizzle (W = 128, 64 or 32 bytes): K-major
      (Q, K) with 8-row groups 8 W bytes apart and k-steps of 32 bytes
      along a panel's rows, whole panels beyond; N-major (V) with k-steps
      of 16 rows and the panels the leading offset apart. Each warpgroup's A
      is its own 64 rows. A from registers is four pairs of 16-bit values
      a step, in the A operand layout of m16n8k16. The instruction is
      inline PTX (NVVM's op has no register A); the accumulator's values
      map to its registers through the layout's coordinates. The buffers
      of such a kernel start on 1024 bytes: the dynamic shared memory's
      address rounded up at run time.
    - `splat`: `vector.broadcast`.
    - `convert_layout`: between layouts that keep every value on its
      thread (an f16 accumulator to the A operand of the same MMA), a
      `vector.shuffle` of the thread's values.
    - `reduce`: the thread's own values, then `gpu.shuffle xor` among the
      lanes that share a row (1, 2) or a column (4, 8, 16).
    - `map`: the region, cloned once per value held, with the indices as
      index arithmetic and slice inputs broadcast; `math.exp2` and
      `math.log2` on f32 become `ex2.approx.ftz` and `lg2.approx`, and
      `math.fma` and `arith.maxnumf` become `llvm.intr.fma` and
      `llvm.intr.maxnum` (libdevice is not linked).
    - `store`: scalar stores of the rows below `valid`, by the owner of
      each element where the layout replicates it.

    What needs values to move between threads (other layout conversions,
    reductions across warps) or an instruction shape other than m16n8k16
    is reported as an error on the op, and so is a tile or a copy without
    a layout (`flash-tile-assign-layouts` gives them theirs). A kernel's
    `flash.block` becomes its `nvvm.reqntid`: it runs with exactly the
    threads its layouts spread the tiles over.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def FlashLLVMGridConstants : Pass<"flash-llvm-grid-constants", "::mlir::ModuleOp"> {
  let summary = "Pass a kernel's tensor maps as __grid_constant__ parameters";
  let description = [{
    On each `llvm.func` kernel with `flash.grid_constants` (the positions
    of its tensor map arguments, which `flash-tile-use-tma` added as
    `!llvm.ptr`s), makes each such argument a 128-byte parameter passed by
    value and read in place (`llvm.byval = !llvm.array<128 x i8>`,
    `nvvm.grid_constant`, 64-byte aligned): PTX's
    `.param .align 64 .b8 p[128]`, whose generic address (`cvta.param`)
    the TMA copies take. It runs after `convert-gpu-to-nvvm`, which does
    not carry these attributes over from a `gpu.func`, and removes
    `flash.grid_constants`.

    ```mlir
    llvm.func @k(%map: !llvm.ptr {llvm.align = 64 : i64}) attributes {flash.grid_constants = array<i64: 0>, nvvm.kernel}
    ```

    becomes

    ```mlir
    llvm.func @k(%map: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}) attributes {nvvm.kernel}
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
  let statistics = [
    Statistic<"numParameters", "num-parameters",
              "Tensor maps made __grid_constant__ parameters">,
  ];
}

#endif // FLASHC_CONVERSION_PASSES_TD
