//===- Passes.h - flash dialect passes --------------------------*- C++ -*-===//
//
// Declares the passes of the flash dialect and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_TRANSFORMS_PASSES_H
#define FLASHC_DIALECT_FLASH_TRANSFORMS_PASSES_H

#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace flash {

#define GEN_PASS_DECL
#include "flashc/Dialect/Flash/Transforms/Passes.h.inc"

/// Adds the pattern that fuses matmul(Q, K^T) -> [scale] -> softmax ->
/// matmul(., V) into flash.attention.
void populateFuseAttentionPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "flashc/Dialect/Flash/Transforms/Passes.h.inc"

} // namespace flash
} // namespace mlir

#endif // FLASHC_DIALECT_FLASH_TRANSFORMS_PASSES_H
