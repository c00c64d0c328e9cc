//===- InitFlashc.h - Register flashc's dialects and passes -----*- C++ -*-===//
//
// One place that registers what flashc-opt and the JIT need: the flash
// dialect, the upstream dialects the pipelines lower through with the
// interface models their passes rely on (bufferization, buffer
// deallocation, subset insertion, ConvertToLLVM), and every flash pass.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_INITFLASHC_H
#define FLASHC_INITFLASHC_H

namespace mlir {
class DialectRegistry;

namespace flash {

/// Inserts the flash dialect, the upstream dialects flashc lowers through,
/// and their interface models into `registry`.
void registerFlashcDialects(DialectRegistry &registry);

/// Registers the LLVM IR translations the CPU JIT and the GPU pipeline need
/// (the latter also the NVVM target that serialises gpu.modules).
void registerFlashcTranslations(DialectRegistry &registry);

/// Registers every upstream pass, every flash pass and conversion pass, and
/// the flash pipelines. Safe to call more than once.
void registerFlashcPasses();

} // namespace flash
} // namespace mlir

#endif // FLASHC_INITFLASHC_H
