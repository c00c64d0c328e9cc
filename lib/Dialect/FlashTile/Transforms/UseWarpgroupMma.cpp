//===- UseWarpgroupMma.cpp - Multiply by warpgroups from shared memory ----===//
//
// Implements `flash-tile-use-warpgroup-mma`: a flash_tile.mma whose B is a
// local_load of a shared buffer becomes a flash_tile.warpgroup_mma that
// reads the buffer's stage itself (A too, where A is an untransposed
// local_load), for the sm_90a kernels' wgmma.mma_async.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/Transforms/Passes.h"

#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"
#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
namespace flash_tile {
#define GEN_PASS_DEF_FLASHTILEUSEWARPGROUPMMA
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"
} // namespace flash_tile
} // namespace mlir

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

/// The local_load that defines `v`, when it reads a whole 2-D stage whose
/// rows the tensor cores read as they are (hasWarpgroupRows).
LocalLoadOp swizzleRowLoad(Value v) {
  auto load = v.getDefiningOp<LocalLoadOp>();
  if (!load || load.getResult().getType().getRank() != 2)
    return {};
  SharedType buffer = load.getBuffer().getType();
  if (!hasWarpgroupRows(buffer.getColumns(),
                        buffer.getElementType().getIntOrFloatBitWidth() / 8))
    return {};
  return load;
}

struct UseWarpgroupMmaPass
    : flash_tile::impl::FlashTileUseWarpgroupMmaBase<UseWarpgroupMmaPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<MmaOp> mmas;
    getOperation()->walk([&](MmaOp op) { mmas.push_back(op); });
    // Loads a rewritten MMA read, erased once none reads them.
    llvm::SetVector<Operation *> loads;
    for (MmaOp op : mmas) {
      TileType acc = op.getAcc().getType();
      ArrayRef<int64_t> shape = acc.getShape();
      LocalLoadOp b = swizzleRowLoad(op.getB());
      int64_t k = op.getA().getType().getShape().back();
      if (acc.hasLayout() || acc.getRank() != 2 || !b ||
          !WarpgroupMmaOp::fitsInstruction(shape[0], shape[1], k)) {
        ++numKept;
        continue;
      }
      LocalLoadOp a = swizzleRowLoad(op.getA());
      if (a && a.getTranspose())
        a = {};
      OpBuilder builder(op);
      auto wgmma = WarpgroupMmaOp::create(
          builder, op.getLoc(), acc, a ? Value(a.getBuffer()) : op.getA(),
          a ? a.getStage() : Value(), b.getBuffer(), b.getStage(), op.getAcc(),
          b.getTranspose());
      op.replaceAllUsesWith(wgmma.getResult());
      op.erase();
      if (a) {
        loads.insert(a);
        ++numShared;
      } else {
        ++numRegisters;
      }
      loads.insert(b);
    }
    for (Operation *load : loads)
      if (load->use_empty())
        load->erase();
  }
};

} // namespace
