//===- FlashTileTypes.td - flash_tile types ----------------*- tablegen -*-===//
//
// The register tile and the shared-memory buffer of the flash_tile dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_IR_FLASHTILETYPES_TD
#define FLASHC_DIALECT_FLASHTILE_IR_FLASHTILETYPES_TD

include "flashc/Dialect/FlashTile/IR/FlashTileAttrs.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class FlashTile_Type<string name, string typeMnemonic,
                     list<Trait> traits = []>
    : TypeDef<FlashTile_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def FlashTile_TileType : FlashTile_Type<"Tile", "tile",
    [ShapedTypeInterface]> {
  let summary = "A tile held in the CTA's registers";
  let description = [{
    A 1-D or 2-D array of statically known size, held by the CTA's threads
    as its `layout` (an attribute implementing the layout interface: `mma`,
    `operand`, `slice` or `blocked`) says, or a batch of such arrays (one
    more, leading, dimension) in a batched layout. The layout must accept
    the shape: an MMA layout, for instance, needs whole instruction tiles
    per warp.

    ```mlir
    !flash_tile.tile<64x64xf32, #flash_tile.mma<warps = [4, 1], instr = [16, 8, 16]>>
    !flash_tile.tile<4x16x32xf32, #flash_tile.mma<warps = [4, 1, 1], instr = [16, 8, 16]>>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        "::mlir::Attribute":$layout);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    using ShapedType::Trait<TileType>::clone;
    /// ShapedTypeInterface: a tile always has a rank.
    bool hasRank() const { return true; }
    ::mlir::ShapedType cloneWith(std::optional<::llvm::ArrayRef<int64_t>> shape,
                                 ::mlir::Type elementType) const;
    /// The layout, through its interface (null for a tile without one).
    ::mlir::flash_tile::LayoutAttrInterface getLayoutInterface() const {
      return ::llvm::cast_if_present<::mlir::flash_tile::LayoutAttrInterface>(
          getLayout());
    }
    /// Whether the tile has its layout yet.
    bool hasLayout() const { return static_cast<bool>(getLayout()); }
    /// The same tile in `layout`.
    TileType withLayout(::mlir::Attribute layout) const {
      return TileType::get(getContext(), getShape(), getElementType(), layout);
    }
  }];
}

def FlashTile_SharedType : FlashTile_Type<"Shared", "shared",
    [ShapedTypeInterface]> {
  let summary = "A buffer of one or more tiles in shared memory";
  let description = [{
    `stages x rows x columns` elements in shared memory: `stages` tiles of
    `rows x columns`, one per stage of a software pipeline, whose rows are
    placed as the `#flash_tile.swizzled` layout says (swizzled, or padded
    to a wider row). The columns are a whole number of the layout's chunks,
    and the swizzle's phases divide a row's chunks. Without a layout, as
    `flash-to-tile` writes a kernel's buffers, `flash-tile-allocate-shared`
    chooses it (until then the buffer's rows count as unpadded).

    ```mlir
    !flash_tile.shared<2x64x64xf16, #flash_tile.swizzled<vector = 8, phases = 8>>
    !flash_tile.shared<2x64x64xf16>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        "::mlir::flash_tile::SwizzledLayoutAttr":$layout);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    using ShapedType::Trait<SharedType>::clone;
    bool hasRank() const { return true; }
    ::mlir::ShapedType cloneWith(std::optional<::llvm::ArrayRef<int64_t>> shape,
                                 ::mlir::Type elementType) const;
    int64_t getStages() const { return getShape()[0]; }
    int64_t getRows() const { return getShape()[1]; }
    int64_t getColumns() const { return getShape()[2]; }
    /// The elements a row occupies: its columns and the layout's padding
    /// (none without a layout yet).
    int64_t getRowElements() const {
      return getColumns() + (getLayout() ? getLayout().getPadding() : 0);
    }
    /// Whether the buffer has its placement yet.
    bool hasLayout() const { return static_cast<bool>(getLayout()); }
    /// The bytes the buffer occupies.
    int64_t getSizeInBytes() const;
  }];
}

#endif // FLASHC_DIALECT_FLASHTILE_IR_FLASHTILETYPES_TD
