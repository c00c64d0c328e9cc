//===- FlashTileDialect.h - The flash_tile dialect --------------*- C++ -*-===//
//
// Declares the flash_tile dialect, its layout attributes (with their
// interface), its enums and its types.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEDIALECT_H
#define FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Dialect.h"

#include "flashc/Dialect/FlashTile/IR/FlashTileOpsDialect.h.inc"

#include "flashc/Dialect/FlashTile/IR/FlashTileEnums.h.inc"

#include "flashc/Dialect/FlashTile/IR/FlashTileAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "flashc/Dialect/FlashTile/IR/FlashTileAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "flashc/Dialect/FlashTile/IR/FlashTileOpsTypes.h.inc"

#endif // FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEDIALECT_H
