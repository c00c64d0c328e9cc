//===- KernelModule.h - The module a kernel is compiled from ----*- C++ -*-===//
//
// A kernel module is what the compiler hands to the pipeline: entry points
// with a kernel's calling convention around one flash.attention. Every
// kernel serves any batch and sequence lengths, so these are dynamic; a
// kernel computes one KV head group (groupKernelSpec), so Hkv is 1. Each
// entry point takes Q, K, V and O (and the LSE) as memrefs with any strides
// but a unit innermost one, and the softmax scale as an f32, which the
// attention takes as its run-time `scale_factor` on a compile-time scale of
// 1 (the code does not depend on the scale):
//
//   func.func @flash_attention(
//       %q: memref<?xGx?xDxT, strided<[?, ?, ?, 1], offset: ?>>,
//       %k: memref<?x1x?xDxT, ...>, %v: memref<?x1x?xDvxT, ...>,
//       %o: memref<?xGx?xDvxT, ...>, [%lse: memref<?xGx?xf32, ...>,]
//       %scale: f32[, %splits: index {flash.split_count}])
//       attributes {llvm.emit_c_interface} {
//     %qt = bufferization.to_tensor %q restrict : ...   (and K, V)
//     %ot[, %lt] = flash.attention %qt, %kt, %vt scale = 1.0
//         scale_factor(%scale) [causal] : ...
//     bufferization.materialize_in_destination %ot in restrict writable
//         %o : ...                                       (and the LSE)
//     return
//   }
//
// A CPU kernel's entry points also take the KV split count as a last
// `index` argument marked `flash.split_count`, and its module holds a
// second entry point, `@flash_attention_decode`, marked `flash.decode` (no
// transposed copy of K), for Nq <= max-seq-q.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_COMPILER_KERNELMODULE_H
#define FLASHC_LIB_COMPILER_KERNELMODULE_H

#include "flashc/Compiler/JIT.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace flash {
namespace detail {

/// The entry points of a kernel module.
inline constexpr llvm::StringLiteral kPrefillEntryName = "flash_attention";
inline constexpr llvm::StringLiteral kDecodeEntryName =
    "flash_attention_decode";

/// The two forms of a kernel module.
enum class KernelKind {
  /// `@flash_attention` alone; the GPU stages build the kernels and their
  /// launch arguments from it.
  GPU,
  /// Both entry points, taking the KV split count.
  CPU,
};

/// The kernel module of `spec` for a `kind` kernel; `spec` is the problem
/// of one KV head group (groupKernelSpec): its sizes and scale are not in
/// the module.
OwningOpRef<ModuleOp>
buildKernelModule(MLIRContext &ctx, const AttentionSpec &spec, KernelKind kind);

/// A caller's module made the kernel module of its attention.
struct ImportedModule {
  /// The attention's problem. A dynamic batch reads as 1 and a dynamic
  /// length as 4096 (what flash-tile assumes of one): the kernel serves
  /// every batch and length either way, but on a GPU target the query
  /// length chooses the variant (a dynamic one, the prefill variant).
  AttentionSpec spec;
  OwningOpRef<ModuleOp> module;
  /// Whether `module` is the kernel module `spec` builds (buildKernelModule
  /// of its KV head group): the caller's module said no more than the spec.
  bool describedBySpec = false;
};

/// Parses `source`, fuses its naive graph (flash-fuse-attention) and makes
/// the module the kernel module of kind `kind` of its single attention,
/// whose operands must be arguments of its function. That function gives
/// way to the kernel's entry points, which hold the attention itself,
/// with every attribute it has, on the kernel's operand types (dynamic
/// batch and lengths, one KV head group) and with the entry point's scale
/// argument as its `scale_factor` on a scale of 1; the rest of the module
/// (other functions, attributes) stays as it is. The error explains what
/// did not fit.
llvm::Expected<ImportedModule>
importModule(MLIRContext &ctx, llvm::StringRef source, KernelKind kind);

} // namespace detail
} // namespace flash
} // namespace mlir

#endif // FLASHC_LIB_COMPILER_KERNELMODULE_H
