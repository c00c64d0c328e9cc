//===- StagePhases.h - Stage parities carried as a bit mask -----*- C++ -*-===//
//
// flash-tile-use-tma and flash-tile-warp-specialize track the phase of each
// stage's mbarrier a loop waits on as one bit a stage in an i32 mask: the
// parity of the phase to wait for. These build the bit of a stage, read it
// and flip it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_DIALECT_FLASHTILE_TRANSFORMS_STAGEPHASES_H
#define FLASHC_LIB_DIALECT_FLASHTILE_TRANSFORMS_STAGEPHASES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace flash_tile {

/// `1 << stage`: the bit of stage `stage` (an index) in an i32 mask.
inline Value stagePhaseBit(OpBuilder &b, Location loc, Value stage) {
  return arith::ShLIOp::create(
      b, loc, arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1),
      arith::IndexCastOp::create(b, loc, b.getI32Type(), stage));
}

/// `(mask & bit) != 0`: the parity the stage of `bit` holds in `mask`.
inline Value stagePhaseParity(OpBuilder &b, Location loc, Value mask,
                              Value bit) {
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      arith::AndIOp::create(b, loc, mask, bit),
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
}

/// `mask ^ bit`: the mask once the stage of `bit` has moved to its next
/// phase.
inline Value flipStagePhase(OpBuilder &b, Location loc, Value mask, Value bit) {
  return arith::XOrIOp::create(b, loc, mask, bit);
}

} // namespace flash_tile
} // namespace mlir

#endif // FLASHC_LIB_DIALECT_FLASHTILE_TRANSFORMS_STAGEPHASES_H
