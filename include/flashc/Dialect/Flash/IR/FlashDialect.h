//===- FlashDialect.h - The flash dialect -----------------------*- C++ -*-===//
//
// Declares the flash dialect class, with the helpers that read and write
// its discardable attributes (FlashDialect::KvLoopAttrHelper and the like).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
#define FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include "flashc/Dialect/Flash/IR/FlashOpsDialect.h.inc"

#endif // FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
