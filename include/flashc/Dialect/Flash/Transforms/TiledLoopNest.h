//===- TiledLoopNest.h - The tiled attention loop nest, recognised once -*- C++ -*-===//
//
// The loop nest that flash-tile builds (and that flash-causal-skip and
// flash-split-kv rewrite), as every pass after flash-tile sees it:
//
//   %r = scf.forall (...) shared_outs(%o0 = ..., %o1 = ...) {
//     %q = tensor.extract_slice ...                      (the Q tile)
//     %s0:3 = scf.for ... {                              flash.kv_loop
//       ... flash.attention_step %q, %k_block, %v_block ...
//     }
//     %s1:3 = scf.for ... iter_args(%s0#0, %s0#1, %s0#2) {flash.kv_loop}
//     %d0 = tensor.extract_slice %o0 ...
//     %f:2 = flash.finalize %sN#0, %sN#1, %sN#2 into %d0, %d1
//     scf.forall.in_parallel {
//       tensor.parallel_insert_slice %f#0 into %o0 ...
//       ...
//     }
//   } {flash.tile_loop}
//
// One or more KV loops (the causal split gives two) each hold exactly one
// flash.attention_step, share one Q tile and scale, and carry one online-
// softmax state into the next; the finalize reads the last loop's state
// and writes its i-th result into a slice of the forall's i-th shared
// output, which the terminator publishes.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASH_TRANSFORMS_TILEDLOOPNEST_H
#define FLASHC_DIALECT_FLASH_TRANSFORMS_TILEDLOOPNEST_H

#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir {
namespace flash {

/// The pieces of one tiled attention loop nest.
struct TiledLoopNest {
  scf::ForallOp forall;
  /// The KV loops in order, and the attention step of each.
  SmallVector<scf::ForOp> kvLoops;
  SmallVector<AttentionStepOp> steps;
  FinalizeOp finalize;
  /// Per finalize result: the slice of the forall's shared output it
  /// writes, and the parallel_insert_slice that publishes it.
  SmallVector<tensor::ExtractSliceOp> outSlices;
  SmallVector<tensor::ParallelInsertSliceOp> inserts;
};

/// Why a loop nest is not a TiledLoopNest: the op at fault and what.
struct TiledLoopNestMismatch {
  Operation *op = nullptr;
  std::string message;
};

/// Recognises `forall` (a `flash.tile_loop`) as a tiled loop nest, or
/// fails saying why in `why`.
FailureOr<TiledLoopNest> matchTiledLoopNest(scf::ForallOp forall,
                                            TiledLoopNestMismatch &why);

} // namespace flash
} // namespace mlir

#endif // FLASHC_DIALECT_FLASH_TRANSFORMS_TILEDLOOPNEST_H
