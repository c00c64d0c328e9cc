//===- FlashDialect.td - The flash dialect definition ------*- tablegen -*-===//
//
// The `flash` dialect: attention, softmax and GEMM as first-class operations
// on ranked tensors, the entry level of the flashc compiler.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_TD
#define FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_TD

include "mlir/IR/OpBase.td"

def Flash_Dialect : Dialect {
  let name = "flash";
  let cppNamespace = "::mlir::flash";
  let summary = "Attention, softmax and GEMM for the flashc attention compiler";
  let description = [{
    The `flash` dialect is the entry level of flashc. It expresses attention
    either as a naive graph (`flash.matmul`, `flash.softmax` and an
    elementwise scale) or directly as one `flash.attention` operation.

    The graph level is what a framework hands over: it materialises the
    `N x N` score matrix. `flash-fuse-attention` recognises the chain
    `matmul(Q, K^T) -> scale -> softmax -> matmul(., V)` and replaces it with
    a single `flash.attention`, which later passes rewrite into the
    FlashAttention algorithm (online softmax over SRAM-sized tiles) without
    ever materialising the score matrix.

    Tensor layout follows the common `[batch, heads, sequence, head_dim]`
    convention. Accumulation is always performed in f32, whatever the
    element type of the operands.

    The passes mark the IR they build, and the kernels they produce, with
    the dialect's discardable attributes:

    - `flash.kv_loop` (unit), on the sequential `scf.for` over KV blocks
      that `flash-online-softmax` and `flash-tile` create; the later passes
      find the loop by it. `flash-to-tile` marks a GPU kernel's loops over
      KV blocks with it too, for `flash-tile-pipeline`.
    - `flash.tile_loop` (unit), on the `scf.forall` over
      `(batch, kv-head, q-block[, split])` of the FA2 order.
    - `flash.split_count` (unit), on the `index` argument of a CPU kernel
      function that carries the launch-time KV split count.
    - `flash.decode` (unit), on a function whose attention is decode-shaped:
      each K and V block is read once, so no operand copies are made.
    - `flash.grid` (an array of `#flash.grid_factor`s, whose product is the
      number of CTAs), `flash.block` and `flash.shared_bytes` (integers) and
      `flash.tile` (i64 array: G, Br, Bc, row tiles, KV warps), on a GPU
      kernel: its launch, for the runtime. The verifier checks that every
      size a grid factor names is a `flash.param` of the kernel.
    - `flash.final_at_one_split` (unit), on a forward GPU kernel of split-KV
      partials that writes the attention's output itself when launched with
      one split: the runtime launches no combine kernel then.
    - `flash.programmatic_launch` (unit), on a GPU kernel that may start
      before the kernel launched before it on its stream has finished
      (sm_90a's programmatic dependent launch): it waits for that kernel's
      results itself (`griddepcontrol.wait`), and the runtime launches it
      with the attribute that allows the early start.
    - `flash.max_registers` (integer, 16 to 255), on a GPU kernel: the
      registers a thread may use, which the back end declares
      (`.maxnreg`). ptxas otherwise keeps a small kernel's registers few,
      and with them its loads in flight: the combine kernel's reads of its
      splits.
    - `flash.param` (dictionary: `name` and `meaning`, strings), on each
      argument of a GPU kernel: what the runtime passes there. A bundle's
      manifest lists the kernels' arguments from these. A tensor map's
      also names its `tensor` (`q`, `k` or `v`) and the `box` (i64 array,
      innermost dimension first) the runtime builds the map with.
    - `flash.grid_constants` (i64 array), on a GPU kernel: the positions of
      its arguments that are 128-byte tensor maps passed as
      `__grid_constant__` parameters (`flash-llvm-grid-constants` makes
      them so once the kernel is an `llvm.func`).
  }];
  let discardableAttrs = (ins
    "::mlir::UnitAttr":$kv_loop,
    "::mlir::UnitAttr":$tile_loop,
    "::mlir::UnitAttr":$split_count,
    "::mlir::UnitAttr":$decode,
    "::mlir::ArrayAttr":$grid,
    "::mlir::IntegerAttr":$block,
    "::mlir::IntegerAttr":$shared_bytes,
    "::mlir::DenseI64ArrayAttr":$tile,
    "::mlir::UnitAttr":$final_at_one_split,
    "::mlir::UnitAttr":$programmatic_launch,
    "::mlir::IntegerAttr":$max_registers,
    "::mlir::DictionaryAttr":$param,
    "::mlir::DenseI64ArrayAttr":$grid_constants
  );
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
  private:
    void registerAttributes();
  public:
  }];
}

class Flash_Op<string mnemonic, list<Trait> traits = []>
    : Op<Flash_Dialect, mnemonic, traits>;

#endif // FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_TD
