//===- CausalSkip.cpp - Skip fully masked KV blocks -----------------------===//
//
// Implements `flash-causal-skip`. A KV loop whose step carries the causal
// offset o(j) = c - j (key j + t is visible to row r iff t <= r + o(j)) is
// replaced by two loops over the same state:
//
//   [lb, fullEnd)   blocks every row of the Q block sees entirely: no mask
//   [fullEnd, end)  diagonal blocks: mask kept
//
// with end = min(ub, max(lb, c + Br)) (no row sees a key at or past c + Br)
// and fullEnd = min(end, lb + max(0, c + 1 - lb) floordiv Bc * Bc), or end
// when every key below ub is visible to the first row. Inside
// each loop, the block size min(Bc, ub - j) is clamped to the new upper
// bound, so no key past `end` is read.
//
//===----------------------------------------------------------------------===//

#include "AttentionUtils.h"

#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHCAUSALSKIP
#include "flashc/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// Clones `loop` over [lb, ub) starting from `inits`; uses of the old upper
/// bound inside the body (the block-size computation) see `ub`. Drops the
/// step's mask when `unmasked`.
scf::ForOp cloneWithBounds(RewriterBase &rewriter, scf::ForOp loop, Value lb,
                           Value ub, ValueRange inits, bool unmasked) {
  IRMapping mapping;
  mapping.map(loop.getUpperBound(), ub);
  auto clone = cast<scf::ForOp>(rewriter.clone(*loop, mapping));
  clone.getLowerBoundMutable().assign(lb);
  clone.getUpperBoundMutable().assign(ub);
  clone.getInitArgsMutable().assign(inits);
  if (unmasked) {
    AttentionStepOp step = getKVLoopStep(clone);
    Value offset = step.getMaskOffset();
    step.getMaskOffsetMutable().clear();
    if (Operation *def = offset.getDefiningOp())
      if (def->use_empty() && def->getParentOp() == clone)
        rewriter.eraseOp(def);
  }
  return clone;
}

/// Splits one masked KV loop; leaves loops it cannot analyse unchanged.
void skipMaskedBlocks(RewriterBase &rewriter, scf::ForOp loop) {
  AttentionStepOp step = getKVLoopStep(loop);
  if (!step || !step.getMaskOffset())
    return;
  auto sub = step.getMaskOffset().getDefiningOp<arith::SubIOp>();
  if (!sub || sub.getRhs() != loop.getInductionVar() ||
      !loop.isDefinedOutsideOfLoop(sub.getLhs()) ||
      !loop.isDefinedOutsideOfLoop(step.getQuery()))
    return;
  Value c = sub.getLhs();
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  auto qType = cast<ShapedType>(step.getQuery().getType());
  Value rows =
      toValue(rewriter, loc,
              getDim(rewriter, loc, step.getQuery(), qType.getRank() - 2));
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound();
  Value bc = loop.getStep();
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);

  Value reach = arith::AddIOp::create(rewriter, loc, c, rows);
  Value end = minIndex(rewriter, loc, ub, maxIndex(rewriter, loc, lb, reach));
  Value visible = arith::SubIOp::create(
      rewriter, loc, arith::AddIOp::create(rewriter, loc, c, one), lb);
  Value fullBlocks = arith::FloorDivSIOp::create(
      rewriter, loc, maxIndex(rewriter, loc, zero, visible), bc);
  Value fullEnd =
      minIndex(rewriter, loc, end,
               arith::AddIOp::create(
                   rewriter, loc, lb,
                   arith::MulIOp::create(rewriter, loc, fullBlocks, bc)));
  // When every key below ub is visible to row 0 (decode against a cache),
  // the partial last block needs no mask either.
  Value allVisible =
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sle, ub,
                            arith::AddIOp::create(rewriter, loc, c, one));
  fullEnd = arith::SelectOp::create(rewriter, loc, allVisible, end, fullEnd);

  scf::ForOp full = cloneWithBounds(rewriter, loop, lb, fullEnd,
                                    loop.getInitArgs(), /*unmasked=*/true);
  scf::ForOp diagonal =
      cloneWithBounds(rewriter, loop, fullEnd, end, full.getResults(),
                      /*unmasked=*/false);
  rewriter.replaceOp(loop, diagonal.getResults());
}

struct FlashCausalSkipPass
    : flash::impl::FlashCausalSkipBase<FlashCausalSkipPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kKVLoopAttr))
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops)
      skipMaskedBlocks(rewriter, loop);
  }
};

} // namespace
