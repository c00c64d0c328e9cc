//===- Passes.h - flashc conversion passes ----------------------*- C++ -*-===//
//
// Declares the passes that lower the flash dialect to a backend.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CONVERSION_PASSES_H
#define FLASHC_CONVERSION_PASSES_H

#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace flash {

#define GEN_PASS_DECL
#include "flashc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashc/Conversion/Passes.h.inc"

/// Whether `name` is a value of flash-to-tile's causal-order option (which
/// the pipelines pass on).
bool isCausalOrder(llvm::StringRef name);
/// The option's values for a diagnostic: "auto, lightest, heaviest or
/// heaviest-per-head".
llvm::StringRef getCausalOrderNames();

} // namespace flash
} // namespace mlir

#endif // FLASHC_CONVERSION_PASSES_H
