//===- Pipeline.cpp - Software-pipeline the KV loops' copies --------------===//
//
// Implements `flash-tile-pipeline`: the KV loops of a kernel, which copy
// their block into stage 0, wait, compute and wait again, become a software
// pipeline over the stages of their K and V buffers: the first blocks are
// copied before the first loop, and each iteration starts the copies of the
// block S - 1 blocks on while its own block, which landed at the end of the
// previous iteration, computes.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/Transforms/Passes.h"

#include "flashc/Core/GPUSchedule.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-tile-pipeline"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash_tile {
#define GEN_PASS_DEF_FLASHTILEPIPELINE
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"
} // namespace flash_tile
} // namespace mlir

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

/// One KV loop in the form flash-to-tile writes: the copies of block `j`
/// (`prefix`, every op before the first wait), the wait for them
/// (`acquire`), the block's work, and the wait that ends the iteration
/// (`release`).
struct KVLoopForm {
  scf::ForOp loop;
  SmallVector<Operation *> prefix;
  AsyncWaitOp acquire, release;
  /// The prefix's copies and the stage operands of the body's reads of
  /// their buffers (local loads, warpgroup MMAs).
  SmallVector<AsyncCopyOp> copies;
  SmallVector<OpOperand *> reads;
};

/// Reads `loop` as a KVLoopForm, adding the buffers its copies fill to
/// `buffers`; reports what does not fit on the loop.
FailureOr<KVLoopForm> matchLoop(scf::ForOp loop,
                                llvm::SetVector<AllocOp> &buffers) {
  KVLoopForm form;
  form.loop = loop;
  Block *body = loop.getBody();
  auto fail = [&](const Twine &why) {
    return loop.emitOpError("is not a KV loop that flash-tile-pipeline "
                            "pipelines: ")
           << why;
  };
  for (Operation &op : body->without_terminator()) {
    if (auto wait = dyn_cast<AsyncWaitOp>(op)) {
      form.acquire = wait;
      break;
    }
    form.prefix.push_back(&op);
  }
  if (!form.acquire)
    return fail("its body does not wait for its block's copies "
                "(flash_tile.async_wait)");
  if (form.acquire.getPending() != 0)
    return fail("the wait for its block's copies has pending " +
                Twine(form.acquire.getPending()) + ", not 0");
  Operation *last = body->getTerminator()->getPrevNode();
  form.release = dyn_cast_or_null<AsyncWaitOp>(last);
  if (!form.release || form.release == form.acquire ||
      form.release.getPending() != 0)
    return fail("its body does not end with flash_tile.async_wait pending 0 "
                "(every thread done with the stage)");
  llvm::SmallPtrSet<Operation *, 8> inPrefix(form.prefix.begin(),
                                             form.prefix.end());
  for (Operation *op : form.prefix) {
    WalkResult r = op->walk([&](Operation *inner) {
      if (auto copy = dyn_cast<AsyncCopyOp>(inner))
        form.copies.push_back(copy);
      else if (isa<AsyncWaitOp, AsyncCommitOp>(inner))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return fail("its block's copies wait or commit themselves");
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (!inPrefix.contains(body->findAncestorOpInBlock(*user)))
          return fail("a value of its block's copies is used after them");
  }
  if (form.copies.empty())
    return fail("no flash_tile.async_copy before its first wait");
  for (AsyncCopyOp copy : form.copies) {
    if (!isConstantIntValue(copy.getStage(), 0))
      return fail("a copy of its block is not into stage 0");
    auto alloc = copy.getBuffer().getDefiningOp<AllocOp>();
    if (!alloc || loop->isAncestor(alloc))
      return fail("a copy of its block fills a buffer that is not a "
                  "flash_tile.alloc before the loop");
    buffers.insert(alloc);
  }
  // Everything else of the body reads the block, at stage 0; it copies and
  // commits nothing.
  for (Operation &op : *body) {
    if (inPrefix.contains(&op) || &op == form.acquire)
      continue;
    WalkResult r = op.walk([&](Operation *inner) {
      if (isa<AsyncCopyOp, AsyncCommitOp>(inner) ||
          (isa<AsyncWaitOp>(inner) && inner != form.release))
        return WalkResult::interrupt();
      auto copied = [&](Value buffer) {
        return llvm::any_of(form.copies, [&](AsyncCopyOp c) {
          return c.getBuffer() == buffer;
        });
      };
      if (auto load = dyn_cast<LocalLoadOp>(inner)) {
        if (copied(load.getBuffer()))
          form.reads.push_back(&load.getStageMutable());
      } else if (auto mma = dyn_cast<WarpgroupMmaOp>(inner)) {
        if (copied(mma.getB()))
          form.reads.push_back(&mma.getBStageMutable());
        if (mma.isSharedA() && copied(mma.getA()))
          form.reads.push_back(&*mma.getAStageMutable().begin());
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return fail("its block's work copies or waits as well");
  }
  for (OpOperand *read : form.reads)
    if (!isConstantIntValue(read->get(), 0))
      return fail("a read of its block is not from stage 0");
  return form;
}

struct PipelinePass : flash_tile::impl::FlashTilePipelineBase<PipelinePass> {
  using Base::Base;

  void runOnOperation() override {
    if (stages != 0 && !flashc::isPipelineStageCount(stages)) {
      getOperation()->emitError()
          << "flash-tile-pipeline: stages is " << stages.getValue() << "; give "
          << flashc::kMinPipelineStages << " to " << flashc::kMaxPipelineStages
          << ", or 0 for the buffers' own";
      return signalPassFailure();
    }
    WalkResult result = getOperation()->walk([&](FunctionOpInterface fn) {
      if (failed(pipeline(fn)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult pipeline(FunctionOpInterface fn);
};

LogicalResult PipelinePass::pipeline(FunctionOpInterface fn) {
  MLIRContext *ctx = &getContext();
  flash::FlashDialect::KvLoopAttrHelper kvLoop(ctx);
  SmallVector<scf::ForOp> loops;
  fn->walk([&](scf::ForOp loop) {
    if (kvLoop.isAttrPresent(loop) &&
        loop->getParentOfType<FunctionOpInterface>() == fn)
      loops.push_back(loop);
  });
  if (loops.empty())
    return success();
  Block *block = loops.front()->getBlock();
  for (scf::ForOp loop : loops)
    if (loop->getBlock() != block)
      return loop.emitOpError("is a KV loop of @")
             << fn.getName()
             << " outside the block of its first: flash-tile-pipeline "
                "hands blocks over between loops of one block";

  llvm::SetVector<AllocOp> buffers;
  SmallVector<KVLoopForm> forms;
  for (scf::ForOp loop : loops) {
    FailureOr<KVLoopForm> form = matchLoop(loop, buffers);
    if (failed(form))
      return failure();
    forms.push_back(std::move(*form));
  }

  // The stages: the option's, or the buffers' (which must agree).
  int64_t n = stages;
  if (n == 0) {
    n = AllocOp(buffers.front()).getBuffer().getType().getStages();
    for (AllocOp alloc : buffers)
      if (alloc.getBuffer().getType().getStages() != n)
        return alloc.emitOpError("has ")
               << alloc.getBuffer().getType().getStages()
               << " stages where the KV loops' other buffers have " << n
               << "; give flash-tile-pipeline's stages";
    if (!flashc::isPipelineStageCount(n))
      return AllocOp(buffers.front()).emitOpError("has ")
             << n << " stages; flash-tile-pipeline pipelines "
             << flashc::kMinPipelineStages << " to "
             << flashc::kMaxPipelineStages << " (give its stages option)";
  } else {
    // batch_reduce merges through a KV buffer after the loops: fewer stages
    // could leave it too small.
    for (AllocOp alloc : buffers)
      if (n < alloc.getBuffer().getType().getStages())
        for (Operation *user : alloc->getUsers())
          if (isa<BatchReduceOp>(user))
            return user->emitOpError("merges through a buffer that "
                                     "flash-tile-pipeline would shrink from ")
                   << alloc.getBuffer().getType().getStages() << " to " << n
                   << " stages";
  }

  // Where the first blocks' copies go: with the copies before the last
  // wait ahead of the first loop (Q's), or, without one, before the loop
  // with a wait of their own. Their indices are computed ahead of the
  // copies before that wait.
  scf::ForOp firstLoop = loops.front();
  AsyncWaitOp prologueWait;
  for (Operation *op = firstLoop->getPrevNode(); op; op = op->getPrevNode())
    if ((prologueWait = dyn_cast<AsyncWaitOp>(op)))
      break;
  if (prologueWait && prologueWait.getPending() != 0)
    return prologueWait.emitOpError("waits with pending ")
           << prologueWait.getPending()
           << " before the KV loops; flash-tile-pipeline sets it, from 0";
  Operation *valuesAt = firstLoop;
  if (prologueWait) {
    valuesAt = prologueWait;
    while (isa_and_nonnull<AsyncCopyOp>(valuesAt->getPrevNode()))
      valuesAt = valuesAt->getPrevNode();
  }
  // The loops' bounds are used there.
  DominanceInfo dominance(fn);
  for (scf::ForOp loop : loops)
    for (Value bound : {loop.getLowerBound(), loop.getUpperBound()})
      if (!dominance.properlyDominates(bound, valuesAt))
        return loop.emitOpError("has a bound defined after the KV loops' "
                                "first copies start; flash-tile-pipeline "
                                "needs every KV loop's bounds before them");
  // More than two stages look further ahead than the next loop: the loops
  // must continue one another.
  std::optional<int64_t> step = getConstantIntValue(firstLoop.getStep());
  if (n > 2) {
    for (size_t i = 0; i < loops.size(); ++i) {
      std::optional<int64_t> s = getConstantIntValue(loops[i].getStep());
      if (!s || s != step)
        return loops[i].emitOpError("steps by other than the first KV loop's "
                                    "constant step; ")
               << n << " stages need KV loops of one constant step (2 do not)";
      if (i > 0 && loops[i].getLowerBound() != loops[i - 1].getUpperBound())
        return loops[i].emitOpError("does not start where the KV loop before "
                                    "it ends; ")
               << n
               << " stages need KV loops that continue one another (2 do "
                  "not)";
    }
  }

  // Everything is checked: the IR changes from here on.
  for (AllocOp alloc : buffers) {
    SharedType type = alloc.getBuffer().getType();
    if (type.getStages() == n)
      continue;
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = n;
    alloc.getBuffer().setType(
        SharedType::get(ctx, shape, type.getElementType(), type.getLayout()));
  }
  IRRewriter rewriter(ctx);
  if (!prologueWait) {
    rewriter.setInsertionPoint(firstLoop);
    prologueWait = AsyncWaitOp::create(rewriter, firstLoop.getLoc(), 0);
    valuesAt = prologueWait;
  }
  Location loc = firstLoop.getLoc();
  rewriter.setInsertionPoint(valuesAt);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  auto selectBelow = [&](Value x, Value bound, Value otherwise) -> Value {
    Value below = arith::CmpIOp::create(rewriter, loc,
                                        arith::CmpIPredicate::slt, x, bound);
    return arith::SelectOp::create(rewriter, loc, below, x, otherwise);
  };
  Value none = index(-1);
  // The end of the last loop (the loops below are replaced as they grow).
  Value end = loops.back().getUpperBound();
  // For two stages: each loop's hand-over (the first block of the next
  // non-empty loop, or -1) and the first block of all.
  SmallVector<Value> nextStart(loops.size());
  SmallVector<Value> firstBlocks;
  if (n == 2) {
    for (size_t i = loops.size(); i-- > 0;)
      nextStart[i] =
          i + 1 == loops.size()
              ? none
              : selectBelow(loops[i + 1].getLowerBound(),
                            loops[i + 1].getUpperBound(), nextStart[i + 1]);
    firstBlocks.push_back(selectBelow(firstLoop.getLowerBound(),
                                      firstLoop.getUpperBound(), nextStart[0]));
  } else {
    for (int64_t k = 0; k + 1 < n; ++k) {
      Value at = arith::AddIOp::create(rewriter, loc, firstLoop.getLowerBound(),
                                       index(k * *step));
      firstBlocks.push_back(selectBelow(at, end, none));
    }
  }

  // Clones a loop's copies of block `j` for block `block` into `stage` at
  // the rewriter's insertion point.
  auto copyBlock = [&](KVLoopForm &form, Value block, Value stage) {
    IRMapping map;
    map.map(form.loop.getInductionVar(), block);
    for (Operation *op : form.prefix) {
      Operation *clone = rewriter.clone(*op, map);
      clone->walk(
          [&](AsyncCopyOp copy) { copy.getStageMutable().assign(stage); });
    }
  };
  Value stageIn = index(0);
  SmallVector<Value> firstStages;
  for (size_t k = 0; k < firstBlocks.size(); ++k)
    firstStages.push_back(k == 0 ? stageIn : index(k));
  rewriter.setInsertionPoint(prologueWait);
  for (auto [k, blockValue] : llvm::enumerate(firstBlocks)) {
    copyBlock(forms.front(), blockValue, firstStages[k]);
    if (k + 1 < firstBlocks.size())
      AsyncCommitOp::create(rewriter, loc);
  }
  prologueWait.setPending(n - 2);
  numPrologueCopies += firstBlocks.size();

  // Each loop carries the stage of its block and, with more than two
  // stages, the stage its copies go to: the one the previous block used
  // (two stages compute it as 1 - s).
  SmallVector<Value> carried = {stageIn};
  if (n > 2)
    carried.push_back(index(n - 1));
  for (auto [i, form] : llvm::enumerate(forms)) {
    scf::ForOp old = form.loop;
    unsigned first = old.getNumRegionIterArgs();
    rewriter.setInsertionPoint(old);
    auto grown = old.replaceWithAdditionalYields(
        rewriter, carried, /*replaceInitOperandUsesInLoop=*/false,
        [](OpBuilder &, Location, ArrayRef<BlockArgument> args) {
          return SmallVector<Value>(args.begin(), args.end());
        });
    if (failed(grown))
      return old.emitOpError("could not carry the pipeline's stage");
    auto loop = cast<scf::ForOp>(grown->getOperation());
    kvLoop.setAttr(loop, rewriter.getUnitAttr());
    form.loop = loop;
    Location at = loop.getLoc();
    Value s = loop.getRegionIterArgs()[first];
    Value j = loop.getInductionVar();
    rewriter.setInsertionPointToStart(loop.getBody());
    auto cst = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, at, v);
    };
    // The block S - 1 blocks on, and the stage the previous block used
    // (`write`), which every thread finished reading before the wait that
    // ended the previous iteration; the next iteration's stage.
    Value ahead, write, nextStage;
    if (n == 2) {
      Value jn = arith::AddIOp::create(rewriter, at, j, loop.getStep());
      Value below = arith::CmpIOp::create(
          rewriter, at, arith::CmpIPredicate::slt, jn, loop.getUpperBound());
      ahead = arith::SelectOp::create(rewriter, at, below, jn, nextStart[i]);
      write = arith::SubIOp::create(rewriter, at, cst(1), s);
      nextStage = write;
    } else {
      Value a = arith::AddIOp::create(rewriter, at, j, cst((n - 1) * *step));
      Value below = arith::CmpIOp::create(rewriter, at,
                                          arith::CmpIPredicate::slt, a, end);
      ahead = arith::SelectOp::create(rewriter, at, below, a, cst(-1));
      write = loop.getRegionIterArgs().back();
      Value up = arith::AddIOp::create(rewriter, at, s, cst(1));
      Value wraps = arith::CmpIOp::create(rewriter, at,
                                          arith::CmpIPredicate::eq, up, cst(n));
      nextStage = arith::SelectOp::create(rewriter, at, wraps, cst(0), up);
    }
    copyBlock(form, ahead, write);
    for (Operation *op : llvm::reverse(form.prefix))
      rewriter.eraseOp(op);
    rewriter.eraseOp(form.acquire);
    for (OpOperand *read : form.reads)
      read->set(s);
    form.release.setPending(n - 2);
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    yield->setOperand(first, nextStage);
    if (n > 2)
      yield->setOperand(first + 1, s);
    for (size_t c = 0; c < carried.size(); ++c)
      carried[c] = loop.getResult(first + c);
    ++numLoops;
    LLVM_DEBUG(DBGS() << "@" << fn.getName() << ": KV loop " << i << " over "
                      << n << " stages\n");
  }
  return success();
}

} // namespace
