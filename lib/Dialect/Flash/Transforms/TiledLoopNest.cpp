//===- TiledLoopNest.cpp - The tiled attention loop nest, recognised once -===//

#include "flashc/Dialect/Flash/Transforms/TiledLoopNest.h"

#include "flashc/Dialect/Flash/IR/FlashDialect.h"

using namespace mlir;
using namespace mlir::flash;

FailureOr<TiledLoopNest>
mlir::flash::matchTiledLoopNest(scf::ForallOp forall,
                                TiledLoopNestMismatch &why) {
  auto fail = [&](Operation *op, const Twine &message) {
    why.op = op;
    why.message = message.str();
    return failure();
  };
  MLIRContext *ctx = forall.getContext();
  if (!FlashDialect::TileLoopAttrHelper(ctx).isAttrPresent(forall))
    return fail(forall, "not a flash.tile_loop");
  TiledLoopNest t;
  t.forall = forall;
  FlashDialect::KvLoopAttrHelper kvLoop(ctx);
  for (Operation &op : forall.getBody()->without_terminator()) {
    if (auto loop = dyn_cast<scf::ForOp>(op);
        loop && kvLoop.isAttrPresent(loop)) {
      AttentionStepOp step = getKVLoopStep(loop);
      if (!step)
        return fail(loop, "a KV loop must hold exactly one "
                          "flash.attention_step");
      t.kvLoops.push_back(loop);
      t.steps.push_back(step);
    } else if (auto fin = dyn_cast<FinalizeOp>(op)) {
      if (t.finalize)
        return fail(fin, "one flash.finalize per tile expected");
      t.finalize = fin;
    } else if (isa<scf::ForOp, scf::ForallOp, AttentionStepOp, CombineOp>(op)) {
      return fail(&op, "unexpected loop or flash op in the tile loop; run "
                       "the algorithm in FA2 order (loop-order=fa2)");
    }
  }
  if (t.kvLoops.empty() || !t.finalize)
    return fail(forall, "a tile loop needs a KV loop and a flash.finalize");

  AttentionStepOp first = t.steps.front();
  for (AttentionStepOp step : t.steps)
    if (step.getQuery() != first.getQuery() ||
        step.getScaleAttr() != first.getScaleAttr())
      return fail(step, "the KV loops of a tile must share its Q tile and "
                        "scale");
  // The loops chain their state; the finalize reads the last one's.
  for (size_t i = 1; i < t.kvLoops.size(); ++i)
    if (t.kvLoops[i].getInitArgs() != ValueRange(t.kvLoops[i - 1].getResults()))
      return fail(t.kvLoops[i], "the KV loops of a tile must carry one state");
  scf::ForOp last = t.kvLoops.back();
  if (last.getNumResults() < 3 || t.finalize.getAcc() != last.getResult(0) ||
      t.finalize.getMax() != last.getResult(1) ||
      t.finalize.getSum() != last.getResult(2))
    return fail(t.finalize, "the finalize must read the last KV loop's "
                            "state");

  // Result i goes through a slice of shared output i, which the
  // terminator publishes.
  auto iterArgs = forall.getRegionIterArgs();
  ValueRange inits = t.finalize.getDpsInits();
  if (t.finalize->getNumResults() > iterArgs.size() ||
      inits.size() != t.finalize->getNumResults())
    return fail(t.finalize, "the finalize must write one shared output of "
                            "the tile loop per result");
  for (auto [i, dest] : llvm::enumerate(inits)) {
    auto slice = dest.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || slice.getSource() != iterArgs[i])
      return fail(t.finalize, "the finalize must write slices of the tile "
                              "loop's shared outputs, result i into output "
                              "i");
    t.outSlices.push_back(slice);
  }
  for (Operation &op : forall.getTerminator().getYieldingOps()) {
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(op);
    if (!insert)
      return fail(&op, "the tile loop must publish its results with "
                       "tensor.parallel_insert_slice");
    t.inserts.push_back(insert);
  }
  if (t.inserts.size() != t.outSlices.size())
    return fail(forall, "the tile loop must publish each finalize result "
                        "once");
  return t;
}
