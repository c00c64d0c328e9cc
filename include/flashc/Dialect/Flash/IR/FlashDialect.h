//===- FlashDialect.h - The flash dialect -----------------------*- C++ -*-===//
//
// Declares the flash dialect class, with the helpers that read and write
// its discardable attributes (FlashDialect::KvLoopAttrHelper and the like),
// and its attributes (GridFactorAttr, MaskAttr).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
#define FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include "flashc/Core/Problem.h"
#include "llvm/ADT/Hashing.h"

#include "flashc/Dialect/Flash/IR/FlashOpsDialect.h.inc"

namespace flashc {
/// Hashes a mask for the storage of #flash.mask.
inline llvm::hash_code hash_value(const Mask &mask) {
  return llvm::hash_value(static_cast<int>(mask.kind));
}
} // namespace flashc

#define GET_ATTRDEF_CLASSES
#include "flashc/Dialect/Flash/IR/FlashAttrs.h.inc"

#endif // FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_H
