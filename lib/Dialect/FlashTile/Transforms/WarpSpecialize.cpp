//===- WarpSpecialize.cpp - Give a TMA kernel's copies to a producer ------===//
//
// Implements `flash-tile-warp-specialize`: a kernel whose blocks are copied
// by TMA becomes a producer warp that copies and consumer warpgroups that
// compute, the stages of its ring buffers handed between them by mbarriers
// (flash_tile.stage_acquire / stage_wait / stage_release).
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/Transforms/Passes.h"

#include "StagePhases.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-tile-warp-specialize"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash_tile {
#define GEN_PASS_DEF_FLASHTILEWARPSPECIALIZE
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"
} // namespace flash_tile
} // namespace mlir

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

/// The most registers a consumer thread is given by default: what
/// FlashAttention-3's two consumer warpgroups take, leaving the producer's
/// warpgroup 24 of the SM's 65536.
constexpr int64_t kDefaultMaxConsumerRegisters = 240;

//===----------------------------------------------------------------------===//
// The producer: the consumers' code sliced down to its copies
//===----------------------------------------------------------------------===//

/// Deletes from `region` every op that neither is a `flash_tile.tma_load`
/// nor computes what one needs (its operands, the loops and branches around
/// it, and the loop-carried values and branch results those read), and
/// drops the results and iteration arguments of the loops and branches
/// left that nothing needs.
class CopySlice {
public:
  explicit CopySlice(Region &region) : region(region) {}

  void run() {
    region.walk([&](TmaLoadOp load) { markOp(load); });
    // The ops to delete, outermost first: a dead op's nested ops go with it.
    SmallVector<Operation *> dead;
    region.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (live.contains(op) || isLiveTerminator(op))
        return WalkResult::advance();
      dead.push_back(op);
      return WalkResult::skip();
    });
    // What a dead op defines is used only by dead ops, or by the
    // terminators of live loops and branches at results nothing needs,
    // which shrink() rebuilds without them.
    for (Operation *op : dead)
      op->dropAllUses();
    for (Operation *op : llvm::reverse(dead))
      op->erase();
    SmallVector<Operation *> containers;
    region.walk([&](Operation *op) {
      if (isa<scf::ForOp, scf::IfOp>(op))
        containers.push_back(op);
    });
    for (Operation *op : containers) {
      if (auto loop = dyn_cast<scf::ForOp>(op))
        shrink(loop);
      else
        shrink(cast<scf::IfOp>(op));
    }
    for (auto &[type, placeholder] : placeholders) {
      assert(placeholder->use_empty() && "only dropped values used it");
      placeholder->erase();
    }
  }

private:
  bool inside(Operation *op) const {
    return region.isAncestor(op->getParentRegion());
  }
  bool isLiveTerminator(Operation *op) const {
    return op->hasTrait<OpTrait::IsTerminator>() && op->getParentOp() &&
           live.contains(op->getParentOp());
  }

  void markOp(Operation *op) {
    if (!inside(op) || !live.insert(op).second)
      return;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      markValue(loop.getLowerBound());
      markValue(loop.getUpperBound());
      markValue(loop.getStep());
    } else if (auto branch = dyn_cast<scf::IfOp>(op)) {
      markValue(branch.getCondition());
    } else {
      for (Value operand : op->getOperands())
        markValue(operand);
      // An op holding regions of its own (none a copy needs today) keeps
      // what they use.
      op->walk([&](Operation *nested) {
        if (nested != op)
          for (Value operand : nested->getOperands())
            markValue(operand);
      });
    }
    if (Operation *parent = op->getParentOp())
      markOp(parent);
  }

  void markValue(Value value) {
    if (auto result = dyn_cast<OpResult>(value)) {
      Operation *def = result.getOwner();
      if (!inside(def))
        return;
      unsigned i = result.getResultNumber();
      if (auto loop = dyn_cast<scf::ForOp>(def))
        return markIterArg(loop, i);
      if (auto branch = dyn_cast<scf::IfOp>(def))
        return markBranchResult(branch, i);
      return markOp(def);
    }
    auto arg = cast<BlockArgument>(value);
    Operation *owner = arg.getOwner()->getParentOp();
    if (!owner || !inside(owner))
      return;
    if (auto loop = dyn_cast<scf::ForOp>(owner);
        loop && arg != loop.getInductionVar())
      return markIterArg(loop, arg.getArgNumber() - 1);
    markOp(owner);
  }

  void markIterArg(scf::ForOp loop, unsigned i) {
    if (!liveResults[loop].insert(i).second)
      return;
    markOp(loop);
    markValue(loop.getInitArgs()[i]);
    markValue(loop.getYieldedValues()[i]);
  }

  void markBranchResult(scf::IfOp branch, unsigned i) {
    if (!liveResults[branch].insert(i).second)
      return;
    markOp(branch);
    markValue(branch.thenYield().getOperand(i));
    markValue(branch.elseYield().getOperand(i));
  }

  /// The live indices of `op`'s results, in order.
  SmallVector<unsigned> liveIndices(Operation *op) {
    SmallVector<unsigned> indices(liveResults[op].begin(),
                                  liveResults[op].end());
    llvm::sort(indices);
    return indices;
  }

  /// A value of `type` that stands in for the dropped results of a loop or
  /// branch where what uses them (the terminator of a loop or branch around
  /// it, at an index dropped too, or a loop's dropped initial value) is
  /// yet to be rebuilt.
  Value placeholder(Type type) {
    Operation *&op = placeholders[type];
    if (!op) {
      OpBuilder b = OpBuilder::atBlockBegin(&region.front());
      op = UnrealizedConversionCastOp::create(b, region.getLoc(), type,
                                              ValueRange{});
    }
    return op->getResult(0);
  }

  /// Replaces the uses of `op`'s results outside `indices` by placeholders.
  void dropResults(Operation *op, ArrayRef<unsigned> indices) {
    for (OpResult result : op->getResults())
      if (!llvm::is_contained(indices, result.getResultNumber()))
        result.replaceAllUsesWith(placeholder(result.getType()));
  }

  /// Rebuilds `yield` with its operands at `indices`.
  static void keepOperands(Operation *yield, ArrayRef<unsigned> indices) {
    SmallVector<Value> kept;
    for (unsigned i : indices)
      kept.push_back(yield->getOperand(i));
    OpBuilder b(yield);
    scf::YieldOp::create(b, yield->getLoc(), kept);
    yield->erase();
  }

  void shrink(scf::ForOp loop) {
    SmallVector<unsigned> indices = liveIndices(loop);
    if (indices.size() == loop.getNumResults())
      return;
    OpBuilder b(loop);
    SmallVector<Value> inits;
    for (unsigned i : indices)
      inits.push_back(loop.getInitArgs()[i]);
    auto shrunk =
        scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound(),
                           loop.getUpperBound(), loop.getStep(), inits);
    Block *body = shrunk.getBody();
    if (!body->empty())
      body->back().erase();
    keepOperands(loop.getBody()->getTerminator(), indices);
    // A dropped iteration argument has no uses left but the terminator's,
    // rebuilt above: a placeholder stands in for it.
    SmallVector<Value> args{shrunk.getInductionVar()};
    for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
      auto at = llvm::find(indices, i);
      args.push_back(at == indices.end()
                         ? placeholder(arg.getType())
                         : shrunk.getRegionIterArgs()[at - indices.begin()]);
    }
    IRRewriter rewriter(b);
    rewriter.mergeBlocks(loop.getBody(), body, args);
    for (auto [k, i] : llvm::enumerate(indices))
      loop.getResult(i).replaceAllUsesWith(shrunk.getResult(k));
    dropResults(loop, indices);
    shrunk->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
    loop.erase();
  }

  void shrink(scf::IfOp branch) {
    SmallVector<unsigned> indices = liveIndices(branch);
    if (indices.size() == branch.getNumResults())
      return;
    OpBuilder b(branch);
    SmallVector<Type> types;
    for (unsigned i : indices)
      types.push_back(branch.getResult(i).getType());
    auto shrunk = scf::IfOp::create(b, branch.getLoc(), types,
                                    branch.getCondition(), /*withElse=*/true);
    shrunk.getThenRegion().takeBody(branch.getThenRegion());
    shrunk.getElseRegion().takeBody(branch.getElseRegion());
    keepOperands(shrunk.thenYield(), indices);
    keepOperands(shrunk.elseYield(), indices);
    for (auto [k, i] : llvm::enumerate(indices))
      branch.getResult(i).replaceAllUsesWith(shrunk.getResult(k));
    dropResults(branch, indices);
    branch.erase();
  }

  Region &region;
  llvm::MapVector<Type, Operation *> placeholders;
  llvm::DenseSet<Operation *> live;
  llvm::DenseMap<Operation *, llvm::SmallDenseSet<unsigned>> liveResults;
};

/// Waits before each fill of a stage of `ring`'s buffers in the producer
/// region until its consumers have released it, threading one parity mask
/// per buffer (a bit per stage) through the region's loops and branches.
class AcquireThreader {
public:
  AcquireThreader(ArrayRef<Value> ring, int64_t &numAcquires)
      : ring(ring), numAcquires(numAcquires) {}

  /// Threads `masks` (one per buffer of the ring) through `block`.
  void thread(Block &block, SmallVector<Value> &masks) {
    for (Operation &op : llvm::make_early_inc_range(block.without_terminator()))
      if (fills(&op))
        threadOp(&op, masks);
  }

private:
  /// Whether `op` is or holds a copy into a ring buffer.
  bool fills(Operation *op) {
    WalkResult found = op->walk([&](TmaLoadOp load) {
      return llvm::is_contained(ring, load.getBuffer())
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    return found.wasInterrupted();
  }

  void threadOp(Operation *op, SmallVector<Value> &masks) {
    Location loc = op->getLoc();
    if (auto load = dyn_cast<TmaLoadOp>(op)) {
      unsigned i = llvm::find(ring, load.getBuffer()) - ring.begin();
      OpBuilder b(load);
      Value stage = load.getStage();
      Value bit = stagePhaseBit(b, loc, stage);
      StageAcquireOp::create(b, loc, load.getBuffer(), stage,
                             stagePhaseParity(b, loc, masks[i], bit));
      ++numAcquires;
      b.setInsertionPointAfter(load);
      masks[i] = flipStagePhase(b, loc, masks[i], bit);
      return;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      IRRewriter rewriter(loop);
      // The loop carries the masks, yielded as they enter; then its body
      // threads them.
      FailureOr<LoopLikeOpInterface> threaded =
          loop.replaceWithAdditionalYields(
              rewriter, masks, /*replaceInitOperandUsesInLoop=*/false,
              [&](OpBuilder &, Location, ArrayRef<BlockArgument> args) {
                return SmallVector<Value>(args.begin(), args.end());
              });
      assert(succeeded(threaded) && "scf.for takes more iteration arguments");
      auto newLoop = cast<scf::ForOp>(threaded->getOperation());
      SmallVector<Value> inner = llvm::to_vector_of<Value>(
          newLoop.getRegionIterArgs().take_back(masks.size()));
      thread(*newLoop.getBody(), inner);
      Operation *yield = newLoop.getBody()->getTerminator();
      unsigned first = yield->getNumOperands() - masks.size();
      for (auto [k, mask] : llvm::enumerate(inner))
        yield->setOperand(first + k, mask);
      ResultRange results = newLoop->getResults();
      masks = llvm::to_vector_of<Value>(results.take_back(masks.size()));
      return;
    }
    auto branch = cast<scf::IfOp>(op);
    SmallVector<Value> thenMasks = masks, elseMasks = masks;
    thread(*branch.thenBlock(), thenMasks);
    if (branch.elseBlock())
      thread(*branch.elseBlock(), elseMasks);
    OpBuilder b(branch);
    SmallVector<Type> types(branch.getResultTypes());
    types.append(masks.size(), b.getI32Type());
    auto threaded = scf::IfOp::create(b, loc, types, branch.getCondition(),
                                      /*withElse=*/true);
    threaded.getThenRegion().takeBody(branch.getThenRegion());
    if (branch.elseBlock())
      threaded.getElseRegion().takeBody(branch.getElseRegion());
    else if (threaded.elseBlock()->empty()) {
      OpBuilder end = OpBuilder::atBlockEnd(threaded.elseBlock());
      scf::YieldOp::create(end, loc);
    }
    for (auto [yield, extra] : {std::pair{threaded.thenYield(), &thenMasks},
                                {threaded.elseYield(), &elseMasks}})
      yield->insertOperands(yield->getNumOperands(), *extra);
    for (auto [old, now] :
         llvm::zip(branch.getResults(), threaded.getResults()))
      old.replaceAllUsesWith(now);
    masks = llvm::to_vector_of<Value>(
        threaded.getResults().take_back(masks.size()));
    branch.erase();
  }

  ArrayRef<Value> ring;
  int64_t &numAcquires;
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Deletes what the consumers no longer need once their copies went: ops
/// without effects nothing uses, and branches left empty.
void sweep(Region &region) {
  bool changed = true;
  while (changed) {
    changed = false;
    // Users before what they use, nested ops before the op holding them.
    SmallVector<Operation *> ops;
    region.walk<WalkOrder::PreOrder>([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : llvm::reverse(ops)) {
      auto branch = dyn_cast<scf::IfOp>(op);
      bool emptyBranch =
          branch && branch.getNumResults() == 0 &&
          llvm::hasSingleElement(*branch.thenBlock()) &&
          (!branch.elseBlock() || llvm::hasSingleElement(*branch.elseBlock()));
      if (emptyBranch || isOpTriviallyDead(op)) {
        op->erase();
        changed = true;
      }
    }
  }
}

struct WarpSpecializePass
    : flash_tile::impl::FlashTileWarpSpecializeBase<WarpSpecializePass> {
  using Base::Base;

  void runOnOperation() override {
    if (!flashc::isSetMaxRegisterCount(producerRegisters)) {
      getOperation()->emitError()
          << "flash-tile-warp-specialize: producer-registers "
          << static_cast<int64_t>(producerRegisters)
          << " is not a multiple of 8 from " << flashc::kMinSetMaxRegisters
          << " to " << flashc::kMaxSetMaxRegisters;
      return signalPassFailure();
    }
    if (consumerRegisters != 0 &&
        !flashc::isSetMaxRegisterCount(consumerRegisters)) {
      getOperation()->emitError()
          << "flash-tile-warp-specialize: consumer-registers "
          << static_cast<int64_t>(consumerRegisters)
          << " is not a multiple of 8 from " << flashc::kMinSetMaxRegisters
          << " to " << flashc::kMaxSetMaxRegisters;
      return signalPassFailure();
    }
    SmallVector<FunctionOpInterface> fns;
    getOperation()->walk([&](FunctionOpInterface fn) {
      if (!fn.isExternal())
        fns.push_back(fn);
    });
    for (FunctionOpInterface fn : fns)
      if (failed(rewrite(fn)))
        return signalPassFailure();
  }

  LogicalResult rewrite(FunctionOpInterface fn);
};

LogicalResult WarpSpecializePass::rewrite(FunctionOpInterface fn) {
  MLIRContext *ctx = fn->getContext();
  SmallVector<TmaLoadOp> loads;
  fn->walk([&](TmaLoadOp load) { loads.push_back(load); });
  if (loads.empty())
    return success();
  auto keep = [&](const Twine &why) {
    LLVM_DEBUG(DBGS() << "@" << fn.getName() << " is not specialised: " << why
                      << "\n");
    return success();
  };
  flash::FlashDialect::BlockAttrHelper blockAttr(ctx);
  IntegerAttr block = blockAttr.getAttr(fn);
  if (!block)
    return keep("it has no flash.block");
  int64_t consumers = block.getInt();
  if (consumers % flashc::kWarpgroupThreads)
    return keep("its block is not whole warpgroups");
  if (fn->walk([](WarpSpecializeOp) {
          return WalkResult::interrupt();
        }).wasInterrupted())
    return keep("it is specialised already");

  // The block that holds every copy, and its op that holds the first.
  Block *body = loads.front()->getBlock();
  auto holdsAll = [&](Block *b) {
    return llvm::all_of(loads, [&](TmaLoadOp load) {
      return b->findAncestorOpInBlock(*load) != nullptr;
    });
  };
  while (!holdsAll(body)) {
    Operation *parent = body->getParentOp();
    if (!parent || parent == fn.getOperation())
      return keep("its copies are in different regions");
    body = parent->getBlock();
  }
  Operation *first = body->findAncestorOpInBlock(*loads.front());
  for (Operation &op : body->without_terminator())
    if (op.isBeforeInBlock(first) && llvm::any_of(loads, [&](TmaLoadOp l) {
          return body->findAncestorOpInBlock(*l) == &op;
        })) {
      first = &op;
      break;
    }
  SmallVector<Operation *> moved;
  for (Operation *op = first; op != body->getTerminator();
       op = op->getNextNode())
    moved.push_back(op);
  for (Value operand : body->getTerminator()->getOperands())
    if (Operation *def = operand.getDefiningOp();
        def && def->getBlock() == body && !def->isBeforeInBlock(first))
      return keep("its block's terminator uses what the consumers compute");

  // Ring buffers: those filled in a loop, whose stages the consumers
  // release. Each is read in loops that wait for its stages; its release
  // follows the last read in each.
  llvm::SetVector<Value> ringSet;
  for (TmaLoadOp load : loads)
    if (load->getParentOfType<scf::ForOp>())
      ringSet.insert(load.getBuffer());
  SmallVector<Value> ring = ringSet.takeVector();
  struct Release {
    Operation *after;
    Value buffer, stage;
  };
  SmallVector<Release> releases;
  llvm::SetVector<scf::ForOp> loops;
  for (Value buffer : ring) {
    for (Operation *user : buffer.getUsers()) {
      if (isa<TmaLoadOp>(user))
        continue;
      auto wait = dyn_cast<StageWaitOp>(user);
      auto loop = wait ? dyn_cast<scf::ForOp>(wait->getParentOp()) : nullptr;
      if (!loop)
        continue;
      loops.insert(loop);
    }
    // Every other read is in a loop that waits for the buffer's stage.
    for (Operation *user : buffer.getUsers()) {
      if (isa<TmaLoadOp>(user))
        continue;
      bool covered = llvm::any_of(loops, [&](scf::ForOp loop) {
        return loop.getBody()->findAncestorOpInBlock(*user) != nullptr &&
               llvm::any_of(
                   loop.getBody()->getOps<StageWaitOp>(),
                   [&](StageWaitOp w) { return w.getBuffer() == buffer; });
      });
      if (!covered)
        return keep("a read of a ring buffer is outside the loops that "
                    "wait for its stages");
    }
  }
  for (scf::ForOp loop : loops) {
    Block *loopBody = loop.getBody();
    for (Value buffer : ring) {
      StageWaitOp wait;
      Operation *last = nullptr;
      for (Operation &op : loopBody->without_terminator()) {
        auto w = dyn_cast<StageWaitOp>(&op);
        if (w && w.getBuffer() == buffer && !wait)
          wait = w;
        bool reads = false;
        op.walk([&](Operation *nested) {
          if (!isa<TmaLoadOp>(nested) &&
              llvm::is_contained(nested->getOperands(), buffer))
            reads = true;
        });
        if (reads)
          last = &op;
      }
      if (!wait)
        continue;
      releases.push_back({last, buffer, wait.getStage()});
    }
  }

  // The consumers' region: the kernel from its first copy on, the buffers
  // (which both regions use) allocated before it.
  for (Operation *op : moved)
    if (isa<AllocOp>(op))
      op->moveBefore(first);
  llvm::erase_if(moved, [](Operation *op) { return isa<AllocOp>(op); });
  OpBuilder b(first);
  Location loc = first->getLoc();
  int64_t producerRegs = producerRegisters;
  int64_t consumerRegs = consumerRegisters;
  if (consumerRegs == 0)
    consumerRegs = std::min<int64_t>(
        kDefaultMaxConsumerRegisters,
        (flashc::kRegistersPerSM - producerRegs * flashc::kWarpgroupThreads) /
            consumers / 8 * 8);
  auto specialize =
      WarpSpecializeOp::create(b, loc, consumers, producerRegs, consumerRegs);
  Block *producer = b.createBlock(&specialize.getProducer());
  Block *consumer = b.createBlock(&specialize.getConsumers());
  for (Operation *op : moved)
    op->moveBefore(consumer, consumer->end());

  // The producer: a copy of the consumers' code, sliced to its copies.
  b.setInsertionPointToEnd(producer);
  IRMapping mapping;
  for (Operation &op : *consumer)
    b.clone(op, mapping);
  CopySlice(specialize.getProducer()).run();
  b.setInsertionPointToStart(producer);
  SmallVector<Value> masks(
      ring.size(), arith::ConstantIntOp::create(b, loc, -1, 32).getResult());
  int64_t acquires = 0;
  AcquireThreader(ring, acquires).thread(*producer, masks);
  numAcquires += acquires;

  // The consumers copy nothing; they release each stage after reading it,
  // which replaces the loops' barriers where nothing else needs them.
  specialize.getConsumers().walk([](TmaLoadOp load) { load.erase(); });
  for (Release &r : releases) {
    OpBuilder rb(r.after->getContext());
    rb.setInsertionPointAfter(r.after);
    StageReleaseOp::create(rb, r.after->getLoc(), r.buffer, r.stage);
    ++numReleases;
  }
  for (scf::ForOp loop : loops) {
    bool writesShared = false;
    loop.walk([&](Operation *op) {
      writesShared |=
          isa<LocalStoreOp, AsyncCopyOp, BatchReduceOp, TmaStoreOp>(op);
    });
    if (writesShared)
      continue;
    for (BarrierOp barrier :
         llvm::make_early_inc_range(loop.getBody()->getOps<BarrierOp>())) {
      barrier.erase();
      ++numBarriers;
    }
  }
  sweep(specialize.getConsumers());
  blockAttr.setAttr(
      fn, IntegerAttr::get(block.getType(), specialize.getBlockThreads()));
  ++numKernels;
  LLVM_DEBUG(DBGS() << "@" << fn.getName() << ": " << ring.size()
                    << " ring buffers, " << releases.size() << " releases, "
                    << acquires << " acquires, registers " << producerRegs
                    << "/" << consumerRegs << "\n");
  return success();
}

} // namespace
