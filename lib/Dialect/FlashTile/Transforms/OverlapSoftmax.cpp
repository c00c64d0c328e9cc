//===- OverlapSoftmax.cpp - Overlap a block's softmax with the last's PV --===//
//
// Implements `flash-tile-overlap-softmax`: each KV loop of a warp-
// specialised kernel's consumers starts a block's S = Q K^T, then the
// previous block's O += P V, and computes the block's softmax while the
// tensor cores run P V (FlashAttention-3's intra-warpgroup overlap).
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/Transforms/Passes.h"

#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-tile-overlap-softmax"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash_tile {
#define GEN_PASS_DEF_FLASHTILEOVERLAPSOFTMAX
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"
} // namespace flash_tile
} // namespace mlir

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

/// A KV loop split into the block's own work (S = Q K^T, the softmax, P)
/// and the work deferred to the next iteration: O's rescale, the wait for
/// V's stage, O += P V and V's release.
struct LoopPlan {
  scf::ForOp loop;
  WarpgroupMmaOp s, pv;
  /// The iteration argument O, which P V accumulates into and yields.
  unsigned oIndex = 0;
  /// The deferred ops, in the body's order.
  SmallVector<Operation *> deferred;
  /// What the deferred ops read of an iteration (other than O): values the
  /// body defines, its block arguments included, carried to the next.
  llvm::SetVector<Value> carried;
};

/// The loop as a plan, or why not.
FailureOr<LoopPlan> matchLoop(scf::ForOp loop, std::string &why) {
  Block *body = loop.getBody();
  SmallVector<WarpgroupMmaOp> mmas;
  for (Operation &op : body->without_terminator()) {
    if (auto mma = dyn_cast<WarpgroupMmaOp>(&op))
      mmas.push_back(mma);
    else if (op.walk([](WarpgroupMmaOp) {
                 return WalkResult::interrupt();
               }).wasInterrupted())
      return why = "a warpgroup MMA is nested in a region", failure();
  }
  if (mmas.size() != 2)
    return why = "it does not have two warpgroup MMAs", failure();
  if (loop.getUnsignedCmp())
    return why = "its bounds compare unsigned (the rewrite compares signed)",
           failure();
  LoopPlan plan;
  plan.loop = loop;
  plan.s = mmas[0];
  plan.pv = mmas[1];
  if (plan.s.getAsync() || plan.pv.getAsync())
    return why = "its multiplies are async already", failure();
  if (plan.pv.isSharedA())
    return why = "the second multiply's A is not a register tile (P)",
           failure();
  Operation *yield = body->getTerminator();
  Value result = plan.pv.getResult();
  if (!result.hasOneUse() || *result.getUsers().begin() != yield)
    return why = "the second multiply's result is not only yielded", failure();
  plan.oIndex = result.getUses().begin()->getOperandNumber();
  BlockArgument o = loop.getRegionIterArgs()[plan.oIndex];

  // O's rescale (when there is one) and the multiply.
  Operation *rescale = plan.pv.getAcc().getDefiningOp();
  if (plan.pv.getAcc() != o) {
    if (!rescale || rescale->getBlock() != body ||
        !llvm::is_contained(rescale->getOperands(), o) ||
        !rescale->getResult(0).hasOneUse())
      return why = "the second multiply's accumulator is neither O nor an op "
                   "of O used by it alone",
             failure();
  } else {
    rescale = nullptr;
  }
  for (Operation *user : o.getUsers())
    if (user != rescale && user != plan.pv.getOperation())
      return why = "O is read by more than its rescale and the multiply",
             failure();

  // V's stage: its wait and release move with the multiply.
  Value v = plan.pv.getB();
  if (v == plan.s.getB())
    return why = "both multiplies read the same buffer", failure();
  llvm::SmallPtrSet<Operation *, 8> deferred;
  if (rescale)
    deferred.insert(rescale);
  deferred.insert(plan.pv);
  for (Operation *user : v.getUsers()) {
    if (user == plan.pv.getOperation() || !loop->isProperAncestor(user))
      continue;
    if (user->getBlock() != body || !isa<StageWaitOp, StageReleaseOp>(user))
      return why = "V's buffer is used by more than its stage's wait and "
                   "release in the loop",
             failure();
    deferred.insert(user);
  }
  for (Operation &op : body->without_terminator())
    if (deferred.contains(&op))
      plan.deferred.push_back(&op);

  // The deferred ops' inputs of an iteration.
  for (Operation *op : plan.deferred)
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        Region *at = operand.getParentRegion();
        if (operand == o || op->isAncestor(at->getParentOp()))
          continue;
        if (loop.getRegion().isAncestor(at) &&
            !(operand.getDefiningOp() &&
              deferred.contains(operand.getDefiningOp())))
          plan.carried.insert(operand);
      }
    });
  return plan;
}

/// The first op of the conversion of P, the second multiply's A, from the
/// softmax's f32 tile (a map that only casts, then layout conversions), or
/// A's defining op where there is none. The previous block's P V is waited
/// for before it, as FlashAttention-3 does: once the next P is written,
/// ptxas would otherwise find the registers of the P that P V reads
/// redefined while it runs (it folds the copies the inline PTX takes its
/// operands through) and serialize every multiply of the kernel.
Operation *findPConversion(WarpgroupMmaOp pv) {
  Operation *first = pv.getA().getDefiningOp();
  for (Operation *op = first; op;) {
    bool cast = false;
    if (auto map = dyn_cast<MapOp>(op)) {
      Block &body = map.getBody().front();
      cast = map.getInputs().size() == 1 && !map.getIndices() &&
             body.getOperations().size() == 2 &&
             isa<arith::TruncFOp, arith::ExtFOp>(body.front());
    }
    if (!cast && !isa<ConvertLayoutOp>(op))
      break;
    first = op;
    op = op->getOperand(0).getDefiningOp();
  }
  return first;
}

/// Rewrites the planned loop, when it has a block: the first block's own
/// work, then a loop whose iterations start S, then the previous block's
/// P V, wait for S, compute the softmax and wait for P V, then the last
/// block's deferred work.
void pipeline(LoopPlan &plan) {
  scf::ForOp loop = plan.loop;
  Location loc = loop.getLoc();
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  BlockArgument o = loop.getRegionIterArgs()[plan.oIndex];
  llvm::SmallPtrSet<Operation *, 8> deferred(plan.deferred.begin(),
                                             plan.deferred.end());
  unsigned numArgs = loop.getNumRegionIterArgs();
  SmallVector<unsigned> stateIndices;
  for (unsigned i = 0; i < numArgs; ++i)
    if (i != plan.oIndex)
      stateIndices.push_back(i);

  OpBuilder b(loop);
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound(),
        step = loop.getStep();
  Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);

  // Everything below runs only when there is a block; otherwise the loop's
  // results are its initial values. One branch around the whole pipeline
  // rather than one around its prologue and one around its epilogue: ptxas
  // spills O where it merges the epilogue's multiply with the initial O,
  // and the carried P with a placeholder of zeros.
  auto guard = scf::IfOp::create(b, loc, loop.getResultTypes(), any,
                                 /*withElse=*/true);
  for (Block *block : {guard.thenBlock(), guard.elseBlock()})
    if (!block->empty())
      block->getTerminator()->erase();
  {
    OpBuilder eb = OpBuilder::atBlockEnd(guard.elseBlock());
    scf::YieldOp::create(eb, loc, loop.getInitArgs());
  }
  b.setInsertionPointToEnd(guard.thenBlock());

  // The first block's own work.
  SmallVector<Value> stateInits, carriedInits;
  {
    IRMapping m;
    m.map(loop.getInductionVar(), lb);
    for (auto [arg, init] :
         llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs()))
      m.map(arg, init);
    for (Operation &op : body->without_terminator())
      if (!deferred.contains(&op))
        b.clone(op, m);
    for (unsigned i : stateIndices)
      stateInits.push_back(m.lookupOrDefault(yield.getOperand(i)));
    for (Value v : plan.carried)
      carriedInits.push_back(m.lookupOrDefault(v));
  }

  // The loop over the blocks after the first.
  SmallVector<Value> inits(stateInits);
  inits.push_back(loop.getInitArgs()[plan.oIndex]);
  llvm::append_range(inits, carriedInits);
  Value second = arith::AddIOp::create(b, loc, lb, step);
  auto steady = scf::ForOp::create(b, loc, second, ub, step, inits);
  steady->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  Block *steadyBody = steady.getBody();
  if (!steadyBody->empty())
    steadyBody->getTerminator()->erase();
  ValueRange newArgs = steady.getRegionIterArgs();
  Value newO = newArgs[stateIndices.size()];
  ValueRange newCarried = newArgs.drop_front(stateIndices.size() + 1);
  {
    OpBuilder sb = OpBuilder::atBlockEnd(steadyBody);
    // This iteration's block.
    IRMapping m;
    m.map(loop.getInductionVar(), steady.getInductionVar());
    for (auto [k, i] : llvm::enumerate(stateIndices))
      m.map(loop.getRegionIterArgs()[i], newArgs[k]);
    // The previous block's deferred work reads what that iteration carried.
    IRMapping previous;
    previous.map(o, newO);
    for (auto [v, arg] : llvm::zip(plan.carried, newCarried))
      previous.map(v, arg);
    Value pvStarted, pvDone;
    SmallVector<Operation *> releases;
    // P V, once the softmax is done, before the next P is written.
    Operation *pConversion = findPConversion(plan.pv);
    auto waitForPV = [&] {
      pvDone =
          WarpgroupWaitOp::create(sb, loc, pvStarted.getType(), pvStarted, 0);
      for (Operation *r : releases)
        sb.clone(*r, previous);
    };
    for (Operation &op : body->without_terminator()) {
      if (deferred.contains(&op))
        continue;
      if (&op == pConversion && pvStarted && !pvDone)
        waitForPV();
      if (&op != plan.s.getOperation()) {
        sb.clone(op, m);
        continue;
      }
      // What the previous block's P V reads is ready before S starts (its
      // rescaled O, its stage of V), so that between the two starts no
      // other instruction writes a multiply's registers; then S and P V
      // start back to back.
      for (Operation *d : plan.deferred) {
        if (isa<StageReleaseOp>(d))
          releases.push_back(d);
        else if (d != plan.pv.getOperation())
          sb.clone(*d, previous);
      }
      Operation *clone = sb.clone(op, m);
      cast<WarpgroupMmaOp>(clone).setAsync(true);
      Operation *pv = sb.clone(*plan.pv, previous);
      cast<WarpgroupMmaOp>(pv).setAsync(true);
      pvStarted = pv->getResult(0);
      // S once P V is the only multiply still running.
      Value started = clone->getResult(0);
      Value sDone =
          WarpgroupWaitOp::create(sb, loc, started.getType(), started, 1);
      m.map(plan.s.getResult(), sDone);
    }
    if (!pvDone)
      waitForPV();
    SmallVector<Value> yields;
    for (unsigned i : stateIndices)
      yields.push_back(m.lookupOrDefault(yield.getOperand(i)));
    yields.push_back(pvDone);
    for (Value v : plan.carried)
      yields.push_back(m.lookupOrDefault(v));
    scf::YieldOp::create(sb, loc, yields);
  }

  // The last block's deferred work.
  b.setInsertionPointAfter(steady);
  IRMapping last;
  last.map(o, steady.getResult(stateIndices.size()));
  for (auto [v, r] : llvm::zip(plan.carried, steady.getResults().drop_front(
                                                 stateIndices.size() + 1)))
    last.map(v, r);
  for (Operation *d : plan.deferred)
    b.clone(*d, last);
  SmallVector<Value> results(numArgs);
  for (auto [k, i] : llvm::enumerate(stateIndices))
    results[i] = steady.getResult(k);
  results[plan.oIndex] = last.lookup(plan.pv.getResult());
  scf::YieldOp::create(b, loc, results);

  loop.replaceAllUsesWith(guard.getResults());
  loop.erase();
}

struct OverlapSoftmaxPass
    : flash_tile::impl::FlashTileOverlapSoftmaxBase<OverlapSoftmaxPass> {
  using Base::Base;

  void runOnOperation() override {
    flash::FlashDialect::KvLoopAttrHelper kvLoop(&getContext());
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](WarpSpecializeOp specialize) {
      specialize.getConsumers().walk([&](scf::ForOp loop) {
        if (kvLoop.isAttrPresent(loop))
          loops.push_back(loop);
      });
    });
    for (scf::ForOp loop : loops) {
      std::string why;
      FailureOr<LoopPlan> plan = matchLoop(loop, why);
      if (failed(plan)) {
        LLVM_DEBUG(DBGS() << "a KV loop keeps its order: " << why << "\n");
        ++numKept;
        continue;
      }
      pipeline(*plan);
      ++numLoops;
    }
  }
};

} // namespace
