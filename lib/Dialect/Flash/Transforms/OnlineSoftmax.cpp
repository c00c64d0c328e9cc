//===- OnlineSoftmax.cpp - Attention as an online-softmax loop ------------===//
//
// Implements `flash-online-softmax`: every flash.attention becomes a
// sequential loop over KV blocks carrying the f32 state (acc, m, l), updated
// by flash.attention_step, and one flash.finalize. Query heads are regrouped
// as [B, Hkv, G, Nq, D] so that the G heads sharing a KV head form one block
// of rows; this is the form that flash-tile and the later passes refine.
//
//===----------------------------------------------------------------------===//

#include "AttentionUtils.h"

#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"
#include "flashc/Support/Sizes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"

#include <limits>

#define DEBUG_TYPE "flash-online-softmax"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHONLINESOFTMAX
#include "flashc/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// Rewrites one attention op. Returns failure with a diagnostic for input the
/// pass cannot handle.
LogicalResult rewriteAttention(RewriterBase &rewriter, AttentionOp op,
                               int64_t blockKV) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  auto qType = op.getQuery().getType();
  auto vType = op.getValue().getType();
  Type f32 = rewriter.getF32Type();
  int64_t hq = qType.getDimSize(1), hkv = op.getKey().getType().getDimSize(1);
  int64_t g = hq / hkv, d = qType.getDimSize(3), dv = vType.getDimSize(3);
  LLVM_DEBUG(DBGS() << "attention at " << loc << ": " << hq << " query heads, "
                    << hkv << " KV heads (G = " << g << "), blocks of "
                    << blockKV << " keys, mask " << op.getMask().str()
                    << "\n");

  OpFoldResult batch = getDim(rewriter, loc, q, 0);
  OpFoldResult nq = getDim(rewriter, loc, q, 2);
  OpFoldResult nk = getDim(rewriter, loc, k, 2);
  auto idx = [&](int64_t i) -> OpFoldResult {
    return rewriter.getIndexAttr(i);
  };

  // Q viewed as [B, Hkv, G, Nq, D].
  SmallVector<OpFoldResult> qeSizes = {batch, idx(hkv), idx(g), nq, idx(d)};
  SmallVector<ReassociationIndices> qReassoc = {{0}, {1, 2}, {3}, {4}};
  auto qeType = slicedType(qeSizes, qType.getElementType(), {});
  Value qe = tensor::ExpandShapeOp::create(rewriter, loc, qeType, q, qReassoc,
                                           qeSizes);

  // The state: acc = 0, m = -inf, l = 0.
  SmallVector<OpFoldResult> rowSizes = {batch, idx(hkv), idx(g), nq};
  SmallVector<OpFoldResult> accSizes = {batch, idx(hkv), idx(g), nq, idx(dv)};
  double negInf = -std::numeric_limits<double>::infinity();
  Value acc0 = createFilled(rewriter, loc, accSizes, f32, 0.0);
  Value m0 = createFilled(rewriter, loc, rowSizes, f32, negInf);
  Value l0 = createFilled(rewriter, loc, rowSizes, f32, 0.0);

  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value step = arith::ConstantIndexOp::create(rewriter, loc, blockKV);
  Value nkVal = toValue(rewriter, loc, nk);
  // The mask as the step's offset: key t is visible to query row r iff
  // t <= r + diag (causal: diag = Nk - Nq, aligned at the bottom right).
  Value diag;
  switch (op.getMask().kind) {
  case ::flashc::MaskKind::None:
    break;
  case ::flashc::MaskKind::Causal:
    diag =
        arith::SubIOp::create(rewriter, loc, nkVal, toValue(rewriter, loc, nq));
    break;
  }

  auto loop = scf::ForOp::create(
      rewriter, loc, zero, nkVal, step, ValueRange{acc0, m0, l0},
      [&](OpBuilder &b, Location loc, Value j, ValueRange state) {
        Value remaining = arith::SubIOp::create(b, loc, nkVal, j);
        Value n = minIndex(b, loc, step, remaining);
        Value kb = extractSlice(b, loc, k, {idx(0), idx(0), j, idx(0)},
                                {batch, idx(hkv), n, idx(d)}, {});
        Value vb = extractSlice(b, loc, v, {idx(0), idx(0), j, idx(0)},
                                {batch, idx(hkv), n, idx(dv)}, {});
        Value offset;
        if (diag)
          offset = arith::SubIOp::create(b, loc, diag, j);
        auto stepOp = AttentionStepOp::create(
            b, loc, TypeRange(state), qe, kb, vb, offset, state[0], state[1],
            state[2], op.getScaleFactor(),
            b.getF32FloatAttr(op.getEffectiveScale()));
        scf::YieldOp::create(b, loc, stepOp.getResults());
      });
  FlashDialect::KvLoopAttrHelper(rewriter.getContext())
      .setAttr(loop, rewriter.getUnitAttr());

  // Deferred normalisation into [B, Hkv, G, Nq, Dv], then back to
  // [B, Hq, Nq, Dv]. The destinations are created in the result's shape and
  // expanded, so that empty-tensor elimination can replace them with the
  // caller's buffer.
  SmallVector<ReassociationIndices> rowReassoc = {{0}, {1, 2}, {3}};
  auto emptyLike = [&](Value result, ArrayRef<OpFoldResult> expandedSizes,
                       ArrayRef<ReassociationIndices> reassoc) -> Value {
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      sizes.push_back(type.isDynamicDim(i) ? (i == 0 ? batch : nq)
                                           : idx(type.getDimSize(i)));
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, sizes, type.getElementType());
    auto expandedType = slicedType(expandedSizes, type.getElementType(), {});
    return tensor::ExpandShapeOp::create(rewriter, loc, expandedType, empty,
                                         reassoc, expandedSizes);
  };
  Value outInit = emptyLike(op.getOut(), accSizes, qReassoc);
  Value lseInit;
  if (op.getLse())
    lseInit = emptyLike(op.getLse(), rowSizes, rowReassoc);
  SmallVector<Type> finalTypes = {outInit.getType()};
  if (lseInit)
    finalTypes.push_back(lseInit.getType());
  auto finalize = FinalizeOp::create(rewriter, loc, finalTypes,
                                     loop.getResult(0), loop.getResult(1),
                                     loop.getResult(2), outInit, lseInit);

  SmallVector<Value> replacements;
  replacements.push_back(tensor::CollapseShapeOp::create(
      rewriter, loc, op.getOut().getType(), finalize.getResult(0), qReassoc));
  if (lseInit) {
    replacements.push_back(
        tensor::CollapseShapeOp::create(rewriter, loc, op.getLse().getType(),
                                        finalize.getResult(1), rowReassoc));
  }
  rewriter.replaceOp(op, replacements);
  return success();
}

struct FlashOnlineSoftmaxPass
    : flash::impl::FlashOnlineSoftmaxBase<FlashOnlineSoftmaxPass> {
  using Base::Base;

  void runOnOperation() override {
    if (blockKV <= 0) {
      getOperation()->emitError()
          << "flash-online-softmax: block-kv must be positive, got "
          << static_cast<int64_t>(blockKV);
      return signalPassFailure();
    }
    if (blockKV > flashc::kMaxBlockSize) {
      getOperation()->emitError()
          << "flash-online-softmax: "
          << flashc::checkRange(blockKV, "block-kv", 1, flashc::kMaxBlockSize);
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops) {
      if (failed(rewriteAttention(rewriter, op, blockKV)))
        return signalPassFailure();
      ++numRewritten;
    }
  }
};

} // namespace
