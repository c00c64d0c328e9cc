//===- AllocateShared.cpp - Place a kernel's shared buffers ---------------===//
//
// Implements `flash-tile-allocate-shared`: every flash_tile.alloc of a
// function gets the placement of its rows where it has none (swizzled
// 16-byte chunks, or rows padded by a chunk: getSharedPlacement) and its
// byte offset in the CTA's dynamic shared memory, 128-byte aligned, in
// program order; the function records the total as flash.shared_bytes,
// which must fit the chip's (or the given) budget.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/Transforms/Passes.h"

#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"
#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Target/TargetInfo.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "flash-tile-allocate-shared"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash_tile {
#define GEN_PASS_DEF_FLASHTILEALLOCATESHARED
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"
} // namespace flash_tile
} // namespace mlir

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

/// Buffers start on 128 bytes: a row of 8 swizzled 16-byte chunks.
constexpr int64_t kAlignment = 128;
/// Buffers a warpgroup MMA reads start on flashc::kWarpgroupSharedAlignment
/// bytes (the 128-byte swizzle's period of 8 rows), as do the buffers of
/// such a kernel as a whole: the lowering aligns their start at run time,
/// within as many bytes more.
/// Whether the asynchronous proxy reads or writes `alloc`'s buffer in the
/// 128-byte swizzle: a warpgroup MMA reads it, or a TMA copy fills it.
bool isWarpgroupOperand(AllocOp alloc) {
  return llvm::any_of(alloc.getBuffer().getUsers(), [&](Operation *user) {
    if (isa<TmaLoadOp>(user))
      return true;
    auto mma = dyn_cast<WarpgroupMmaOp>(user);
    return mma &&
           (mma.getB() == alloc.getBuffer() || mma.getA() == alloc.getBuffer());
  });
}

struct AllocateSharedPass
    : flash_tile::impl::FlashTileAllocateSharedBase<AllocateSharedPass> {
  using Base::Base;

  /// Gives the views of `buffer` (and theirs) its placement: the first
  /// columns of placed rows are rows of their own only where the rows are
  /// panels and the view's columns whole panels.
  LogicalResult placeViews(Value buffer, SwizzledLayoutAttr placement) {
    int64_t columns = cast<SharedType>(buffer.getType()).getColumns();
    for (Operation *user : buffer.getUsers()) {
      auto view = dyn_cast<ViewOp>(user);
      if (!view)
        continue;
      SharedType type = view.getResult().getType();
      int64_t panel = placement.getPanel();
      if (type.getColumns() < columns &&
          (!panel || type.getColumns() % panel != 0))
        return view.emitError()
               << "flash-tile-allocate-shared: a view of the first "
               << type.getColumns() << " columns of a buffer of " << columns
               << " placed as " << placement
               << " is not a whole number of its panels";
      view.getResult().setType(SharedType::get(
          &getContext(), type.getShape(), type.getElementType(), placement));
      if (failed(placeViews(view.getResult(), placement)))
        return failure();
    }
    return success();
  }

  void runOnOperation() override {
    int64_t budget = sharedBytes;
    // Where the budget comes from, for the error: the pass's shared-bytes
    // (which the pipelines and flashc call sram-bytes) or the chip.
    std::string budgetName = "of the budget asked for (shared-bytes; "
                             "sram-bytes in the pipelines and flashc)";
    if (budget < 0) {
      getOperation()->emitError()
          << "flash-tile-allocate-shared: shared-bytes is " << budget
          << "; give a positive budget, or 0 for the chip's";
      return signalPassFailure();
    }
    if (budget == 0) {
      llvm::Expected<flash::TargetInfo> target =
          flash::TargetInfo::getGPU(chip);
      if (!target) {
        getOperation()->emitError()
            << "flash-tile-allocate-shared: "
            << llvm::toString(target.takeError());
        return signalPassFailure();
      }
      budget = target->sramBytes;
      budgetName = "that " + chip + " allows";
    }
    flash::FlashDialect::SharedBytesAttrHelper total(&getContext());
    WalkResult result = getOperation()->walk([&](FunctionOpInterface fn) {
      if (failed(allocate(fn, budget, budgetName, total)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult allocate(FunctionOpInterface fn, int64_t budget,
                         StringRef budgetName,
                         flash::FlashDialect::SharedBytesAttrHelper &total) {
    SmallVector<AllocOp> allocs;
    fn->walk([&](AllocOp alloc) {
      // A nested function places its own buffers.
      if (alloc->getParentOfType<FunctionOpInterface>() == fn)
        allocs.push_back(alloc);
    });
    if (allocs.empty())
      return success();
    Builder b(&getContext());
    SmallVector<bool> operands =
        llvm::map_to_vector(allocs, isWarpgroupOperand);
    // The rows' placement first: it decides the sizes.
    for (auto [alloc, operand] : llvm::zip_equal(allocs, operands)) {
      SharedType type = alloc.getBuffer().getType();
      if (type.hasLayout())
        continue;
      int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
      // A warpgroup MMA reads rows wider than the 128-byte swizzle as
      // panels of 128 bytes.
      SwizzledLayoutAttr placement =
          operand ? getWarpgroupPlacement(&getContext(), type.getColumns(),
                                          bytes)
                  : getSharedPlacement(&getContext(), type.getColumns(), bytes);
      if (!placement)
        return alloc.emitError()
               << "flash-tile-allocate-shared: rows of " << type.getColumns()
               << " x " << type.getElementType()
               << " are not whole 16-byte chunks, which a buffer's placement "
                  "swizzles or pads";
      alloc.getBuffer().setType(SharedType::get(
          &getContext(), type.getShape(), type.getElementType(), placement));
      if (failed(placeViews(alloc.getBuffer(), placement)))
        return failure();
      ++numPlacements;
    }
    int64_t offset = 0;
    for (auto [alloc, operand] : llvm::zip_equal(allocs, operands)) {
      offset = llvm::alignTo(
          offset, operand ? flashc::kWarpgroupSharedAlignment : kAlignment);
      alloc.setOffsetAttr(b.getI64IntegerAttr(offset));
      LLVM_DEBUG(DBGS() << "@" << fn.getName() << ": "
                        << alloc.getBuffer().getType() << " at " << offset
                        << "\n");
      offset += alloc.getBuffer().getType().getSizeInBytes();
    }
    if (llvm::is_contained(operands, true))
      offset += flashc::kWarpgroupSharedAlignment;
    // The mbarriers of the stages a TMA copy fills (8 bytes each), and of
    // those a warp-specialised kernel's consumers release, which the
    // lowering puts in static shared memory, count against the same budget.
    for (AllocOp alloc : allocs)
      for (bool release : {false, true})
        if (llvm::any_of(alloc.getBuffer().getUsers(), [&](Operation *user) {
              return release ? isa<StageReleaseOp>(user) : isa<TmaLoadOp>(user);
            }))
          offset +=
              flashc::kMbarrierBytes * alloc.getBuffer().getType().getStages();
    if (offset > budget) {
      InFlightDiagnostic diag = fn->emitError()
                                << "the shared buffers of @" << fn.getName()
                                << " need " << offset << " bytes, more than "
                                << "the " << budget << " bytes per CTA "
                                << budgetName;
      for (AllocOp alloc : allocs)
        diag.attachNote(alloc.getLoc())
            << alloc.getBuffer().getType().getSizeInBytes() << " bytes at "
            << *alloc.getOffset();
      return failure();
    }
    total.setAttr(fn, b.getI64IntegerAttr(offset));
    numBuffers += allocs.size();
    numBytes += offset;
    return success();
  }
};

} // namespace
