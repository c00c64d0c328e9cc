//===- Passes.h - flash_tile passes -----------------------------*- C++ -*-===//
//
// Declares the passes over flash_tile IR and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_TRANSFORMS_PASSES_H
#define FLASHC_DIALECT_FLASHTILE_TRANSFORMS_PASSES_H

#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace flash_tile {

#define GEN_PASS_DECL
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"

} // namespace flash_tile
} // namespace mlir

#endif // FLASHC_DIALECT_FLASHTILE_TRANSFORMS_PASSES_H
