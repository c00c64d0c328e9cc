//===- TransposeKeys.cpp - One transposed copy of K for the CPU -----------===//
//
// Implements `flash-cpu-transpose-keys`: a key block
//   tensor.extract_slice %K[b, h, j, 0] [1, 1, n, D] -> [n, D]
// of a function-level K [B, Hkv, Nk, D] becomes
//   tensor.extract_slice %Kt[b, h, 0, j] [1, 1, D, n] -> [D, n]
// of Kt = linalg.transpose(K) [B, Hkv, D, Nk], created once per K (in a
// buffer whose rows are one cache line longer), and the step is marked
// key_transposed.
//
//===----------------------------------------------------------------------===//

#include "PrefillSteps.h"

#include "flashc/Conversion/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-cpu-transpose-keys"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHCPUTRANSPOSEKEYS
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// The transposed copy of `key`, created after its definition (or at the
/// start of its block for an argument); counts the copies it creates in
/// `created`.
Value getTransposed(RewriterBase &rewriter, Value key,
                    llvm::DenseMap<Value, Value> &cache,
                    Pass::Statistic &created) {
  if (Value t = cache.lookup(key))
    return t;
  ++created;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfterValue(key);
  Location loc = key.getLoc();
  auto type = cast<RankedTensorType>(key.getType());
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : {0, 1, 3, 2}) {
    if (type.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(rewriter, loc, key, d).getResult());
    else
      sizes.push_back(rewriter.getIndexAttr(type.getDimSize(d)));
  }
  // Rows of Kt padded by one cache line: with a row stride of a multiple of
  // 4 KiB (Nk = 2048, say) the rows of a column block would all fall in
  // the same few L1 sets.
  SmallVector<OpFoldResult> padded = sizes;
  int64_t lineElements =
      std::max<int64_t>(512 / type.getElementTypeBitWidth(), 1);
  if (std::optional<int64_t> n = getConstantIntValue(sizes[3]))
    padded[3] = rewriter.getIndexAttr(*n + lineElements);
  else
    padded[3] = arith::AddIOp::create(
                    rewriter, loc, cast<Value>(sizes[3]),
                    arith::ConstantIndexOp::create(rewriter, loc, lineElements))
                    .getResult();
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, padded, type.getElementType());
  SmallVector<OpFoldResult> zeros(4, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> ones(4, rewriter.getIndexAttr(1));
  empty =
      tensor::ExtractSliceOp::create(rewriter, loc, empty, zeros, sizes, ones);
  Value t = linalg::TransposeOp::create(rewriter, loc, key, empty,
                                        ArrayRef<int64_t>{0, 1, 3, 2})
                .getResult()[0];
  cache[key] = t;
  return t;
}

struct FlashCPUTransposeKeysPass
    : flash::impl::FlashCPUTransposeKeysBase<FlashCPUTransposeKeysPass> {
  void runOnOperation() override {
    if (failed(checkUnitStrides()))
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    llvm::DenseMap<Value, Value> cache;
    SmallVector<AttentionStepOp> steps;
    getOperation()->walk([&](AttentionStepOp step) { steps.push_back(step); });
    for (AttentionStepOp step : steps) {
      if (step.getKeyTransposed() || step.getNumResults() == 0)
        continue;
      if (!readsBlocksRepeatedly(step)) {
        LLVM_DEBUG(DBGS() << "step at " << step.getLoc()
                          << " kept: each key block is read once (decode, "
                             "or a Q tile that holds the whole query)\n");
        continue;
      }
      auto slice = step.getKey().getDefiningOp<tensor::ExtractSliceOp>();
      if (!slice || slice.getSourceType().getRank() != 4 ||
          slice.getType().getRank() != 2 || !slice.hasUnitStride())
        continue;
      Value key = slice.getSource();
      auto func = step->getParentOfType<FunctionOpInterface>();
      if (!func || key.getParentRegion() != &func.getFunctionBody()) {
        LLVM_DEBUG(DBGS() << "step at " << step.getLoc()
                          << " kept: K is not a function-level tensor\n");
        continue;
      }
      SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
      SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
      // A [1, 1, n, D] box starting at column 0 of the head dimension.
      if (!isConstantIntValue(sizes[0], 1) ||
          !isConstantIntValue(sizes[1], 1) ||
          !isConstantIntValue(offsets[3], 0) ||
          !isConstantIntValue(sizes[3], slice.getSourceType().getDimSize(3))) {
        LLVM_DEBUG(DBGS() << "step at " << step.getLoc()
                          << " kept: the key block is not a [1, 1, n, D] box "
                             "of one head\n");
        continue;
      }
      LLVM_DEBUG(DBGS() << "step at " << step.getLoc()
                        << " reads the transposed copy of K\n");
      Value kt = getTransposed(rewriter, key, cache, numCopies);
      rewriter.setInsertionPoint(slice);
      SmallVector<OpFoldResult> tOffsets = {
          offsets[0], offsets[1], rewriter.getIndexAttr(0), offsets[2]};
      SmallVector<OpFoldResult> tSizes = {sizes[0], sizes[1], sizes[3],
                                          sizes[2]};
      SmallVector<OpFoldResult> strides(4, rewriter.getIndexAttr(1));
      auto sliceType = cast<RankedTensorType>(slice.getType());
      auto tType = RankedTensorType::get(
          {sliceType.getDimSize(1), sliceType.getDimSize(0)},
          sliceType.getElementType());
      Value tSlice = tensor::ExtractSliceOp::create(
          rewriter, slice.getLoc(), tType, kt, tOffsets, tSizes, strides);
      rewriter.modifyOpInPlace(step, [&] {
        step.getKeyMutable().assign(tSlice);
        step.setKeyTransposed(true);
      });
      if (slice->use_empty())
        rewriter.eraseOp(slice);
      ++numStepsTransposed;
    }
  }

  /// The CPU backend bufferizes tensor slices into memref subviews, and
  /// flash-tile only makes unit-stride slices. Other strides are rejected
  /// here, before bufferization: MLIR 22 crashes folding `memref.dim` of a
  /// rank-reducing subview whose dropped unit dimension has a non-unit
  /// stride (in SubViewOp::getDroppedDims).
  LogicalResult checkUnitStrides() {
    WalkResult result = getOperation()->walk([](Operation *op) {
      if (!isa<tensor::ExtractSliceOp, tensor::InsertSliceOp,
               tensor::ParallelInsertSliceOp>(op))
        return WalkResult::advance();
      auto slice = cast<OffsetSizeAndStrideOpInterface>(op);
      for (auto [dim, stride] : llvm::enumerate(slice.getMixedStrides())) {
        if (isConstantIntValue(stride, 1))
          continue;
        InFlightDiagnostic diag = op->emitOpError() << "has stride ";
        if (std::optional<int64_t> value = getConstantIntValue(stride))
          diag << *value;
        else
          diag << "(dynamic)";
        diag << " in dimension " << dim
             << "; the CPU backend lowers unit-stride slices only";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(result.wasInterrupted());
  }
};

} // namespace
