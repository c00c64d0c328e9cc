//===- FlashTileOps.h - flash_tile operations -------------------*- C++ -*-===//
//
// Declares the operations of the flash_tile dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEOPS_H
#define FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEOPS_H

#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define GET_OP_CLASSES
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h.inc"

#endif // FLASHC_DIALECT_FLASHTILE_IR_FLASHTILEOPS_H
