//===- FlashTileAttrs.td - flash_tile layouts --------------*- tablegen -*-===//
//
// The layout attributes of the flash_tile dialect and their interface.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEATTRS_TD
#define FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEATTRS_TD

include "flashc/Dialect/FlashTile/IR/FlashTileDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def FlashTile_LayoutAttrInterface : AttrInterface<"LayoutAttrInterface"> {
  let cppNamespace = "::mlir::flash_tile";
  let description = [{
    How a register tile's elements are spread over the CTA's threads: every
    layout says which tile shapes it can hold and how many elements each
    thread keeps.
  }];
  let methods = [
    InterfaceMethod<[{
        Checks that a tile of `shape` can have this layout; reports why not
        through `emitError`.
      }], "::llvm::LogicalResult", "verifyShape",
      (ins "::llvm::function_ref<::mlir::InFlightDiagnostic()>":$emitError,
           "::llvm::ArrayRef<int64_t>":$shape)>,
    InterfaceMethod<[{
        The number of warps the layout spreads a tile over.
      }], "int64_t", "getNumWarps", (ins)>,
    InterfaceMethod<[{
        The elements each thread holds of a tile of `shape` (a shape that
        verifyShape accepts).
      }], "int64_t", "getElementsPerThread",
      (ins "::llvm::ArrayRef<int64_t>":$shape)>,
    InterfaceMethod<[{
        The coordinates in a tile of `shape` of the `element`-th value
        that thread `thread` (in [0, 32 * warps)) holds, `element` in [0,
        getElementsPerThread(shape)): what the layout means. Warps are
        numbered row-major over the layout's warp grid, lanes as the
        hardware numbers them.
      }], "::llvm::SmallVector<int64_t>", "getCoordinates",
      (ins "::llvm::ArrayRef<int64_t>":$shape, "int64_t":$thread,
           "int64_t":$element)>,
  ];
}

class FlashTile_Attr<string name, string attrMnemonic,
                     list<Trait> traits = []>
    : AttrDef<FlashTile_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def FlashTile_MmaLayoutAttr : FlashTile_Attr<"MmaLayout", "mma",
    [DeclareAttrInterfaceMethods<FlashTile_LayoutAttrInterface>]> {
  let summary = "The accumulator layout of a warp-level MMA";
  let description = [{
    The accumulator (C and D) of a warp-level matrix multiply-accumulate of
    shape `instr` = `[M, N, K]`, repeated over a grid of `warps` =
    `[rows, columns]` warps and then over the tile: a tile of `R x C`
    elements needs `R` a multiple of `M * warps[0]` and `C` a multiple of
    `N * warps[1]`. Each warp owns the rows `[w0 * R / warps[0], ...)` and
    the columns likewise; within one `M x N` instruction tile, lane `l`
    holds rows `l / 4` and `l / 4 + 8` and columns `2 * (l % 4)` and the
    next, as `mma.sync.m16n8k16` defines them.

    `instr` is `[16, 8, 16]` (f16 and bf16 operands) or `[16, 8, 8]`.

    With three warp counts, `[batch, rows, columns]`, the layout holds a
    batch of independent matrices, a 3-D tile of `B x R x C` elements with
    `B = warps[0]`: warp `w` holds matrix `w mod B`, as warp `w / B` of the
    2-D layout of the last two counts. (The batch varies fastest, so that
    a tile replicated over the column warps of a 2-D layout of `B` columns
    is already in every warp of the batch: see `flash_tile.broadcast`.) Flash-decoding's kv warps are such a batch: each warp
    multiplies the Q tile by its own share of a KV block and keeps its own
    softmax state, and the states are combined once, at the end
    (`flash_tile.batch_reduce`).

    ```mlir
    // 4 warps stacked over the rows: 16 query rows per warp of a 64-row tile.
    #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>
    // 4 warps, each with its own 16-row matrix.
    #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$warps,
                        ArrayRefParameter<"int64_t">:$instr);
  let assemblyFormat = "`<` `warps` `=` `[` $warps `]` `,` `instr` `=` `[` $instr `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether the layout holds a batch of matrices (three warp counts).
    bool isBatched() const { return getWarps().size() == 3; }
    /// The matrices of a batched layout (1 otherwise).
    int64_t getBatch() const { return isBatched() ? getWarps()[0] : 1; }
    /// The warp grid of one matrix: the last two counts.
    ::llvm::ArrayRef<int64_t> getMatrixWarps() const {
      return getWarps().take_back(2);
    }
    /// The 2-D layout of one matrix (this layout when not batched).
    MmaLayoutAttr getMatrixLayout() const;
  }];
}

def FlashTile_OperandKind : I32EnumAttr<"OperandKind",
    "Which operand of a multiply a layout is for", [
      I32EnumAttrCase<"A", 0, "a">,
      I32EnumAttrCase<"B", 1, "b">,
    ]> {
  let cppNamespace = "::mlir::flash_tile";
  let genSpecializedAttr = 0;
}

def FlashTile_OperandLayoutAttr : FlashTile_Attr<"OperandLayout", "operand",
    [DeclareAttrInterfaceMethods<FlashTile_LayoutAttrInterface>]> {
  let summary = "The layout of an A or B operand of a warp-level MMA";
  let description = [{
    The A (`M x K`) or B (`K x N`) operand of the multiply whose
    accumulator layout is `parent`. A tile of A spreads its rows over the
    parent's row warps, and is replicated over its column warps; B likewise
    over its column warps. An A tile's rows are a multiple of
    `M * warps[0]` and its columns of `K`; a B tile's rows of `K` and its
    columns of `N * warps[1]`. With a batched parent, the tile is a batch of
    such operands, `B x M x K` or `B x K x N`, one per group of warps.

    ```mlir
    #flash_tile.operand<a, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
    ```
  }];
  let parameters = (ins
    EnumParameter<FlashTile_OperandKind>:$kind,
    "::mlir::flash_tile::MmaLayoutAttr":$parent);
  let assemblyFormat = "`<` $kind `,` qualified($parent) `>`";
}

def FlashTile_SliceLayoutAttr : FlashTile_Attr<"SliceLayout", "slice",
    [DeclareAttrInterfaceMethods<FlashTile_LayoutAttrInterface>]> {
  let summary = "A tile of a 2-D layout with one dimension removed";
  let description = [{
    What reducing a tile of layout `parent` along `dim` leaves: with
    `dim = 1` of a 2-D parent, one value per row, held by the threads that
    held that row (for an MMA accumulator, the four lanes of a quad; for a
    `blocked` layout, the lanes and warps spread over the columns). A
    `slice` tile is also how a per-row value (a running maximum or sum)
    meets a tile in `flash_tile.map`, broadcast along `dim`. Of a batched
    MMA parent (`B x R x C`), `dim` is 1 or 2 and the slice keeps the
    batch: `dim = 2` leaves `B x R`, a value per row of each matrix.

    The parent is an MMA accumulator layout (`#flash_tile.mma`) or a 2-D
    `#flash_tile.blocked` layout.

    ```mlir
    #flash_tile.slice<1, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
    #flash_tile.slice<2, #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>>
    // One value per row, in every lane of the row's warp.
    #flash_tile.slice<1, #flash_tile.blocked<size = [1, 4], threads = [1, 32], warps = [4, 1]>>
    ```
  }];
  let parameters = (ins "int64_t":$dim,
                        "::mlir::flash_tile::LayoutAttrInterface":$parent);
  let assemblyFormat = "`<` $dim `,` qualified($parent) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The parent as an MMA accumulator layout, or null.
    MmaLayoutAttr getMmaParent() const {
      return ::llvm::dyn_cast<MmaLayoutAttr>(getParent());
    }
    /// Whether the parent is a batched MMA layout.
    bool isBatched() const {
      MmaLayoutAttr mma = getMmaParent();
      return mma && mma.isBatched();
    }
  }];
}

def FlashTile_BlockedLayoutAttr : FlashTile_Attr<"BlockedLayout", "blocked",
    [DeclareAttrInterfaceMethods<FlashTile_LayoutAttrInterface>]> {
  let summary = "Contiguous runs per thread, for copies";
  let description = [{
    Each thread holds `size` contiguous elements per dimension; `threads`
    threads of a warp (their product is 32) and `warps` warps tile the
    dimensions, the last dimension fastest. The layout repeats over a
    larger tile. Copies between global and shared memory use it: with
    `size = [1, 8]` of 16-bit elements each thread moves 16 bytes, one
    `cp.async` of 16 bytes.

    ```mlir
    #flash_tile.blocked<size = [1, 8], threads = [4, 8], warps = [4, 1]>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$size,
                        ArrayRefParameter<"int64_t">:$threads,
                        ArrayRefParameter<"int64_t">:$warps);
  let assemblyFormat = "`<` `size` `=` `[` $size `]` `,` `threads` `=` `[` $threads `]` `,` `warps` `=` `[` $warps `]` `>`";
  let genVerifyDecl = 1;
}

def FlashTile_SwizzledLayoutAttr : FlashTile_Attr<"SwizzledLayout",
                                                  "swizzled"> {
  let summary = "The placement of a shared-memory buffer's rows";
  let description = [{
    A shared-memory buffer stores its rows one after the other, in chunks of
    `vector` elements (16 bytes for `ldmatrix` and `cp.async`). The chunk
    `c` of row `r` is stored at chunk position
    `c xor ((r / rowsPerPhase) mod phases)`, so that the eight rows an
    `ldmatrix` reads at once fall in different banks. `phases = 1` is no
    swizzle. `phases` is a power of two that divides the chunks of a row,
    so that every chunk stays in its row (the buffer type checks it).

    Rows narrower than the 128 bytes of the 32 banks share a phase in
    runs of `rowsPerPhase` (default 1): rows of two 16-byte chunks lie
    four to 128 bytes, so four rows take the same place before the next
    four swap their chunks (`phases = 2, rowsPerPhase = 4`); rows of four
    chunks swap every two (`phases = 4, rowsPerPhase = 2`). These are the
    32- and 64-byte swizzles of the TMA and the tensor cores.

    With `panel`, a row is split into panels of `panel` elements (the
    row of the tensor cores' and the TMA's 128-, 64- or 32-byte swizzle),
    and
    each panel of the stage's rows is stored as a matrix of its own, one
    after the other: element `(r, c)` of a stage of `R` rows lies in
    panel `c / panel`, at `(c / panel) * R * panel + r * panel` plus its
    chunk's swizzled place in the panel's row. Warpgroup MMAs read
    buffers of rows wider than their swizzle's row in this form (96 f16
    columns: three panels of the 64-byte swizzle). `panel = 0` (the
    default) is one panel of the whole row.

    Rows whose chunks are not a power of two are padded instead: each row
    takes `padding` more elements (whole chunks) than it holds. A row of an
    odd number of chunks puts the eight rows an `ldmatrix` reads in eight
    different banks without a swizzle (96 f16 columns are 12 chunks; with
    one chunk of padding, 13). Padding goes without a swizzle
    (`phases = 1`).

    ```mlir
    #flash_tile.swizzled<vector = 8, phases = 8>
    #flash_tile.swizzled<vector = 8, phases = 1, padding = 8>
    #flash_tile.swizzled<vector = 8, phases = 8, panel = 64>
    #flash_tile.swizzled<vector = 8, phases = 2, rowsPerPhase = 4>
    ```
  }];
  let parameters = (ins "int64_t":$vector, "int64_t":$phases,
                        DefaultValuedParameter<"int64_t", "0">:$padding,
                        DefaultValuedParameter<"int64_t", "0">:$panel,
                        DefaultValuedParameter<"int64_t", "1">:$rowsPerPhase);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "int64_t":$vector, "int64_t":$phases,
                     CArg<"int64_t", "0">:$padding), [{
      return $_get($_ctxt, vector, phases, padding, 0, 1);
    }]>,
  ];
  let extraClassDeclaration = [{
    /// The elements between consecutive rows of a panel: the panel's, or
    /// a padded row's of `columns` when the row is one panel.
    int64_t getRowPitch(int64_t columns) const {
      return getPanel() ? getPanel() : columns + getPadding();
    }
  }];
}

#endif // FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEATTRS_TD
