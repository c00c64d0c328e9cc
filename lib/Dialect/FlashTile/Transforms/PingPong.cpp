//===- PingPong.cpp - Consumer warpgroups take turns at the tensor cores --===//
//
// Implements `flash-tile-pingpong`: in a warp-specialised kernel of two or
// more consumer warpgroups, every run of warpgroup MMAs becomes a turn
// (flash_tile.turn_wait ... flash_tile.turn_pass) that the warpgroups take
// in order, so that one warpgroup's softmax overlaps the next one's
// multiplies (FlashAttention-3's ping-pong schedule).
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/Transforms/Passes.h"

#include "flashc/Core/GPUSchedule.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-tile-pingpong"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash_tile {
#define GEN_PASS_DEF_FLASHTILEPINGPONG
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"
} // namespace flash_tile
} // namespace mlir

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

/// The runs of warpgroup MMAs of `block`: MMAs one after the other with
/// nothing between them but ops without regions or memory effects, none of
/// which (the MMAs included) reads the result of an MMA of the run: that
/// is there only once the turn has passed and the MMA has been waited for.
SmallVector<SmallVector<WarpgroupMmaOp>> findRuns(Block &block) {
  SmallVector<SmallVector<WarpgroupMmaOp>> runs;
  SmallVector<WarpgroupMmaOp> run;
  auto end = [&] {
    if (!run.empty())
      runs.push_back(std::move(run));
    run.clear();
  };
  for (Operation &op : block) {
    if (llvm::any_of(op.getOperands(), [&](Value v) {
          return llvm::any_of(
              run, [&](WarpgroupMmaOp mma) { return v == mma.getResult(); });
        }))
      end();
    if (auto mma = dyn_cast<WarpgroupMmaOp>(op)) {
      run.push_back(mma);
      continue;
    }
    if (run.empty() || op.getNumRegions() || !isMemoryEffectFree(&op))
      end();
  }
  end();
  return runs;
}

struct PingPongPass : flash_tile::impl::FlashTilePingPongBase<PingPongPass> {
  using Base::Base;

  /// Makes `run` a turn: waits for the turn before its first MMA, starts
  /// every MMA, passes the turn and then waits for the MMAs that waited for
  /// themselves.
  void makeTurn(ArrayRef<WarpgroupMmaOp> run) {
    Operation *first = run.front(), *last = run.back();
    Location loc = first->getLoc();
    OpBuilder b(first);
    TurnWaitOp::create(b, loc);
    b.setInsertionPointAfter(last);
    TurnPassOp::create(b, loc);
    for (auto [index, op] : llvm::enumerate(run)) {
      WarpgroupMmaOp mma = op;
      if (mma.getAsync())
        continue;
      mma.setAsync(true);
      // The MMAs after it in the run were started after it.
      int64_t pending = run.size() - 1 - index;
      auto wait = WarpgroupWaitOp::create(b, loc, mma.getType(),
                                          mma.getResult(), pending);
      mma.getResult().replaceAllUsesExcept(wait.getResult(), wait);
      ++numStarted;
    }
    ++numTurns;
  }

  void runOnOperation() override {
    getOperation()->walk([&](WarpSpecializeOp specialize) {
      int64_t warpgroups =
          specialize.getConsumerThreads() / flashc::kWarpgroupThreads;
      if (warpgroups < 2) {
        LLVM_DEBUG(DBGS() << "one consumer warpgroup: no turns\n");
        return;
      }
      if (specialize.getConsumers()
              .walk([](TurnWaitOp) { return WalkResult::interrupt(); })
              .wasInterrupted()) {
        LLVM_DEBUG(DBGS() << "the warpgroups take turns already\n");
        return;
      }
      SmallVector<Block *> blocks;
      specialize.getConsumers().walk(
          [&](Block *block) { blocks.push_back(block); });
      unsigned turns = numTurns;
      for (Block *block : blocks)
        for (const SmallVector<WarpgroupMmaOp> &run : findRuns(*block))
          makeTurn(run);
      if (numTurns != turns)
        ++numKernels;
    });
  }
};

} // namespace
