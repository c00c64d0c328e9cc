//===- PrefillSteps.h - Which steps get function-level operand copies -----===//
//
// flash-cpu-widen-operands and flash-cpu-transpose-keys make one copy of a
// K (or Q, K, V) tensor per call for the steps that read its blocks many
// times. This is the test they share.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHTOCPU_PREFILLSTEPS_H
#define FLASHC_LIB_CONVERSION_FLASHTOCPU_PREFILLSTEPS_H

#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::flash {

/// True for steps whose key and value blocks are read by many Q tiles: not
/// in a function marked `flash.decode` (decode: one tile per block), and
/// not with a Q tile that holds the whole query. Elsewhere each block is
/// read once, and a copy would only add a pass over the data.
inline bool readsBlocksRepeatedly(AttentionStepOp step) {
  if (auto func = step->getParentOfType<FunctionOpInterface>())
    if (FlashDialect::DecodeAttrHelper(step.getContext()).isAttrPresent(func))
      return false;
  auto qTile = cast<RankedTensorType>(step.getQuery().getType());
  if (auto qSlice = step.getQuery().getDefiningOp<tensor::ExtractSliceOp>()) {
    RankedTensorType source = qSlice.getSourceType();
    int64_t nq = source.getDimSize(source.getRank() - 2);
    if (!qTile.isDynamicDim(1) && nq == qTile.getDimSize(1))
      return false;
  }
  return true;
}

} // namespace mlir::flash

#endif // FLASHC_LIB_CONVERSION_FLASHTOCPU_PREFILLSTEPS_H
