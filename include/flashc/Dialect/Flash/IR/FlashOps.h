//===- FlashOps.h - flash dialect operations --------------------*- C++ -*-===//
//
// Declares the operations of the flash dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_IR_FLASHOPS_H
#define FLASHC_DIALECT_FLASH_IR_FLASHOPS_H

#include "flashc/Core/Problem.h"
#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "flashc/Dialect/Flash/IR/FlashOps.h.inc"

namespace mlir {
namespace flash {

/// The single flash.attention_step directly in the body of `loop`, a KV loop
/// (`flash.kv_loop`), or null when it holds none or several.
AttentionStepOp getKVLoopStep(Operation *loop);

} // namespace flash
} // namespace mlir

#endif // FLASHC_DIALECT_FLASH_IR_FLASHOPS_H
