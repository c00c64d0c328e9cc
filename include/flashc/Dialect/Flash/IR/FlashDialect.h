//===- FlashDialect.h - The flash dialect -----------------------*- C++ -*-===//
//
// Declares the flash dialect class.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
#define FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "flashc/Dialect/Flash/IR/FlashOpsDialect.h.inc"

#endif // FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
