//===- WidenOperands.cpp - f32 copies of f16/bf16 operands for the CPU ----===//
//
// Implements `flash-cpu-widen-operands`: a block
//   tensor.extract_slice %X[...] -> tensor<...xbf16>
// of a function-level f16 or bf16 tensor X that an attention step reads
// (its Q, K or V) becomes
//   tensor.extract_slice %Xw[...] -> tensor<...xf32>
// of Xw = linalg.copy(X) into f32, created once per X. The step then
// computes on f32 blocks, and the kernel's inner loops convert nothing.
//
//===----------------------------------------------------------------------===//

#include "PrefillSteps.h"

#include "flashc/Conversion/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-cpu-widen-operands"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHCPUWIDENOPERANDS
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// The f32 copy of `source`, created after its definition (or at the start
/// of its block for an argument); counts the copies it creates in
/// `created`.
Value getWidened(RewriterBase &rewriter, Value source,
                 llvm::DenseMap<Value, Value> &cache,
                 Pass::Statistic &created) {
  if (Value w = cache.lookup(source))
    return w;
  ++created;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfterValue(source);
  Location loc = source.getLoc();
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(rewriter, loc, source);
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, sizes, rewriter.getF32Type());
  Value w = linalg::CopyOp::create(rewriter, loc, ValueRange{source},
                                   ValueRange{empty})
                .getResult(0);
  cache[source] = w;
  return w;
}

struct FlashCPUWidenOperandsPass
    : flash::impl::FlashCPUWidenOperandsBase<FlashCPUWidenOperandsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    llvm::DenseMap<Value, Value> cache;
    SmallVector<AttentionStepOp> steps;
    getOperation()->walk([&](AttentionStepOp step) { steps.push_back(step); });
    for (AttentionStepOp step : steps) {
      if (step.getNumResults() == 0 || step.getKeyTransposed())
        continue;
      if (!readsBlocksRepeatedly(step)) {
        LLVM_DEBUG(DBGS() << "step at " << step.getLoc()
                          << " kept: each block is read once (decode, or a "
                             "Q tile that holds the whole query)\n");
        continue;
      }
      auto func = step->getParentOfType<FunctionOpInterface>();
      if (!func)
        continue;
      // All three operands or none: the step takes one element type.
      SmallVector<tensor::ExtractSliceOp> slices;
      for (Value operand : {step.getQuery(), step.getKey(), step.getValue()}) {
        auto slice = operand.getDefiningOp<tensor::ExtractSliceOp>();
        Type elt = cast<RankedTensorType>(operand.getType()).getElementType();
        if (!slice || !isa<Float16Type, BFloat16Type>(elt) ||
            slice.getSource().getParentRegion() != &func.getFunctionBody())
          break;
        slices.push_back(slice);
      }
      if (slices.size() != 3) {
        LLVM_DEBUG(DBGS() << "step at " << step.getLoc()
                          << " kept: Q, K and V are not all slices of "
                             "function-level f16 or bf16 tensors\n");
        continue;
      }
      LLVM_DEBUG(DBGS() << "step at " << step.getLoc()
                        << " reads f32 copies of Q, K and V\n");
      SmallVector<Value> widened;
      for (tensor::ExtractSliceOp slice : slices) {
        Value source =
            getWidened(rewriter, slice.getSource(), cache, numCopies);
        rewriter.setInsertionPoint(step);
        auto type = cast<RankedTensorType>(slice.getType());
        widened.push_back(tensor::ExtractSliceOp::create(
            rewriter, slice.getLoc(), type.clone(rewriter.getF32Type()), source,
            slice.getMixedOffsets(), slice.getMixedSizes(),
            slice.getMixedStrides()));
      }
      rewriter.modifyOpInPlace(step, [&] {
        step.getQueryMutable().assign(widened[0]);
        step.getKeyMutable().assign(widened[1]);
        step.getValueMutable().assign(widened[2]);
      });
      for (tensor::ExtractSliceOp slice : slices)
        if (slice->use_empty())
          rewriter.eraseOp(slice);
      ++numStepsWidened;
    }
  }
};

} // namespace
