//===- FlashAttrs.td - flash dialect attributes ------------*- tablegen -*-===//
//
// Attribute definitions of the flash dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHATTRS_TD
#define FLASHC_DIALECT_FLASH_IR_FLASHATTRS_TD

include "flashc/Dialect/Flash/IR/FlashDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Flash_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Flash_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// GridFactorAttr
//===----------------------------------------------------------------------===//

def Flash_GridFactorAttr : Flash_Attr<"GridFactor", "grid_factor"> {
  let summary = "One factor of a GPU kernel's grid size";
  let description = [{
    A GPU kernel's grid (`flash.grid`) is the product of a list of factors,
    one per dimension of the tile loop it was built from. Each factor is
    `ceildiv(a * b * ..., d)`: a product of integers and of the sizes the
    runtime passes the kernel, named as their `flash.param` (`B`, `Nq`,
    `Nk`, `splits`), divided by a positive integer and rounded up. The
    runtime computes the grid from these factors and the launch's sizes;
    the bundle manifest holds them as data.

    Example: the grid of a forward kernel with 64-row query blocks and a
    KV split, and of a combine kernel with four rows per CTA:

    ```mlir
    flash.grid = [#flash.grid_factor<B>, #flash.grid_factor<ceildiv(Nq, 64)>,
                  #flash.grid_factor<splits>]
    flash.grid = [#flash.grid_factor<ceildiv(B * 8 * Nq, 4)>]
    ```
  }];
  let parameters = (ins
    "::mlir::ArrayAttr":$product,
    DefaultValuedParameter<"int64_t", "1">:$ceil_div
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // FLASHC_DIALECT_FLASH_IR_FLASHATTRS_TD
