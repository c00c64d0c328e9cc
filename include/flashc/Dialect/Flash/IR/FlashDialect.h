//===- FlashDialect.h - The flash dialect -----------------------*- C++ -*-===//
//
// Declares the flash dialect class, with the helpers that read and write
// its discardable attributes (FlashDialect::KvLoopAttrHelper and the like),
// and its attributes (GridFactorAttr).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
#define FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include "flashc/Dialect/Flash/IR/FlashOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "flashc/Dialect/Flash/IR/FlashAttrs.h.inc"

#endif // FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
