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

//===----------------------------------------------------------------------===//
// MaskAttr
//===----------------------------------------------------------------------===//

def Flash_MaskAttr : Flash_Attr<"Mask", "mask"> {
  let summary = "Which keys a query row attends to";
  let description = [{
    The mask of an attention or a softmax, as flashc's problem description
    (`flashc::Mask`, flashc/Core/Problem.h) holds it: one value per kind,
    so that a new kind of mask is a new case of that description and of the
    passes that implement it, not a new attribute on every op.

    - `none`: every query attends to every key.
    - `causal`: query `i` attends to keys `j <= i + (Nk - Nq)`, aligned at
      the bottom-right corner, so that the last query sees every key
      (decoding with a KV cache).

    Ops print their mask after their operands by its name alone
    (`flash.attention %q, %k, %v causal`); the attribute's own form is
    `#flash.mask<causal>`.
  }];
  let parameters = (ins
    AttrParameter<"::flashc::Mask", "the mask">:$value
  );
  let hasCustomAssemblyFormat = 1;
  let returnType = "::flashc::Mask";
  let convertFromStorage = "$_self.getValue()";
  let constBuilderCall =
      "::mlir::flash::MaskAttr::get($_builder.getContext(), $0)";
}

#endif // FLASHC_DIALECT_FLASH_IR_FLASHATTRS_TD
