//===- DirectFinalize.cpp - Skip the combine when there is one split ------===//
//
// Implements `flash-cpu-direct-finalize`. With a run-time split count S,
// every tile finalizes into a slice of the partial buffers and a serial
// flash.combine merges them into the output:
//
//   %parts = memref.alloc(%S, ...)
//   scf.forall (..., %s) in (..., %S) {
//     %p = memref.subview %parts[%s, i...] [1, n...]
//     flash.finalize ins(...) outs(%p, %pl)
//   }
//   flash.combine ins(%parts, %plse) outs(%out[, %lse])
//
// When S = 1 at run time the merge is a copy. This pass versions each such
// finalize on S == 1: that branch writes the output (and the LSE, if the
// combine has one) in place, the other keeps the partial slices; the
// combine runs only when S != 1, and the partial buffers are allocated
// with S = 0 rows when S == 1.
//
//===----------------------------------------------------------------------===//

#include "flashc/Conversion/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-cpu-direct-finalize"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHCPUDIRECTFINALIZE
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// A finalize whose destinations are one split's slices of the partial
/// buffers: `%parts[%s, i...] [1, n...]` and `%plse[%s, i...] [1, n...]`.
struct PartialFinalize {
  FinalizeOp op;
  memref::SubViewOp out, lse;
};

/// `value`'s defining slice if it is a unit-stride slice of `buffer`, one
/// split wide, used by nothing else.
memref::SubViewOp splitSlice(Value value, Value buffer) {
  auto slice = value ? value.getDefiningOp<memref::SubViewOp>() : nullptr;
  if (!slice || slice.getSource() != buffer || !slice.hasUnitStride() ||
      !isConstantIntValue(slice.getMixedSizes().front(), 1) ||
      !slice->hasOneUse())
    return {};
  return slice;
}

/// The box of a split slice of a partial buffer ([S, B, ...]) without its
/// split dimension: the slice of the destination ([B, ...]) it stands for.
struct DestinationBox {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  explicit DestinationBox(memref::SubViewOp slice)
      : offsets(slice.getMixedOffsets()), sizes(slice.getMixedSizes()),
        strides(slice.getMixedStrides()) {
    offsets.erase(offsets.begin());
    sizes.erase(sizes.begin());
    strides.erase(strides.begin());
  }
};

/// The type of the destination slice for `slice`: `dest`'s element type and
/// layout, `slice`'s (rank-reduced) shape; none if `dest` is not a strided
/// memref of one rank less than the partial buffer, or the shape is not a
/// rank reduction of the box.
MemRefType destinationSliceType(memref::SubViewOp slice, Value dest) {
  auto destType = dyn_cast<MemRefType>(dest.getType());
  if (!destType || !destType.isStrided() ||
      destType.getRank() + 1 != slice.getSourceType().getRank())
    return {};
  DestinationBox box(slice);
  auto full = memref::SubViewOp::inferResultType(destType, box.offsets,
                                                 box.sizes, box.strides);
  ArrayRef<int64_t> shape = slice.getType().getShape();
  if (!computeRankReductionMask(full.getShape(), shape))
    return {};
  return memref::SubViewOp::inferRankReducedResultType(
      shape, destType, box.offsets, box.sizes, box.strides);
}

Value destinationSlice(OpBuilder &b, memref::SubViewOp slice, Value dest) {
  DestinationBox box(slice);
  return memref::SubViewOp::create(b, slice.getLoc(),
                                   destinationSliceType(slice, dest), dest,
                                   box.offsets, box.sizes, box.strides);
}

/// The finalizes that write the combine's partial buffers, or failure if a
/// buffer is not an allocation of S rows (the two in one block), or has a
/// user other than the combine, its deallocation and the finalizes'
/// slices, or the combine's destinations are not visible at a finalize.
FailureOr<SmallVector<PartialFinalize>> matchPartials(CombineOp combine,
                                                      DominanceInfo &dom) {
  Value parts = combine.getParts(), partLse = combine.getPartLse();
  auto partsAlloc = parts.getDefiningOp<memref::AllocOp>();
  auto lseAlloc = partLse.getDefiningOp<memref::AllocOp>();
  if (!partsAlloc || !lseAlloc ||
      partsAlloc->getBlock() != lseAlloc->getBlock() ||
      !partsAlloc.getType().isDynamicDim(0) ||
      !lseAlloc.getType().isDynamicDim(0) ||
      partsAlloc.getDynamicSizes().front() !=
          lseAlloc.getDynamicSizes().front())
    return failure();
  auto visibleAt = [&](Value dest, Operation *op) {
    return !dest || dom.properlyDominates(dest, op);
  };
  SmallVector<PartialFinalize> found;
  for (Operation *user : parts.getUsers()) {
    if (user == combine || isa<memref::DeallocOp>(user))
      continue;
    auto slice = dyn_cast<memref::SubViewOp>(user);
    if (!slice || !slice->hasOneUse())
      return failure();
    auto finalize = dyn_cast<FinalizeOp>(*slice->user_begin());
    if (!finalize || splitSlice(finalize.getOut(), parts) != slice)
      return failure();
    memref::SubViewOp lse = splitSlice(finalize.getLse(), partLse);
    if (!lse || !destinationSliceType(slice, combine.getOut()) ||
        (combine.getLse() && !destinationSliceType(lse, combine.getLse())) ||
        !visibleAt(combine.getOut(), finalize) ||
        !visibleAt(combine.getLse(), finalize))
      return failure();
    found.push_back({finalize, slice, lse});
  }
  for (Operation *user : partLse.getUsers()) {
    if (user == combine || isa<memref::DeallocOp>(user))
      continue;
    if (!llvm::any_of(found, [&](PartialFinalize &f) {
          return f.lse.getOperation() == user;
        }))
      return failure();
  }
  if (found.empty())
    return failure();
  return found;
}

struct FlashCPUDirectFinalizePass
    : flash::impl::FlashCPUDirectFinalizeBase<FlashCPUDirectFinalizePass> {
  void runOnOperation() override {
    SmallVector<CombineOp> combines;
    getOperation()->walk([&](CombineOp op) { combines.push_back(op); });
    DominanceInfo dom(getOperation());
    for (CombineOp combine : combines) {
      FailureOr<SmallVector<PartialFinalize>> partials =
          matchPartials(combine, dom);
      if (failed(partials)) {
        LLVM_DEBUG(DBGS() << "combine at " << combine.getLoc()
                          << " kept: its partial buffers are not S-row "
                             "allocations written only by split slices of "
                             "finalizes\n");
        ++numCombinesKept;
        continue;
      }
      LLVM_DEBUG(DBGS() << "combine at " << combine.getLoc()
                        << " versioned on S == 1 with " << partials->size()
                        << " finalize(s)\n");
      rewrite(combine, *partials);
      ++numCombinesVersioned;
      numFinalizesVersioned += partials->size();
    }
  }

  void rewrite(CombineOp combine, MutableArrayRef<PartialFinalize> partials) {
    OpBuilder b(&getContext());
    auto partsAlloc = combine.getParts().getDefiningOp<memref::AllocOp>();
    auto lseAlloc = combine.getPartLse().getDefiningOp<memref::AllocOp>();
    Location loc = combine.getLoc();

    // single = (S == 1); the partial buffers get 0 rows then.
    b.setInsertionPoint(partsAlloc->isBeforeInBlock(lseAlloc) ? partsAlloc
                                                              : lseAlloc);
    Value splits = partsAlloc.getDynamicSizes().front();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value single =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, splits, one);
    Value rows = arith::SelectOp::create(b, loc, single, zero, splits);
    partsAlloc.getDynamicSizesMutable()[0].assign(rows);
    lseAlloc.getDynamicSizesMutable()[0].assign(rows);

    for (PartialFinalize &f : partials) {
      b.setInsertionPoint(f.op);
      auto branch = scf::IfOp::create(b, f.op.getLoc(), single,
                                      /*withElseRegion=*/true);
      // S == 1: the output in place, and the LSE if the combine has one.
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
      Value out = destinationSlice(b, f.out, combine.getOut());
      Value lse = combine.getLse()
                      ? destinationSlice(b, f.lse, combine.getLse())
                      : Value();
      FinalizeOp::create(b, f.op.getLoc(), TypeRange{}, f.op.getAcc(),
                         f.op.getMax(), f.op.getSum(), out, lse);
      // Otherwise the partial slices, as before.
      Operation *terminator = branch.elseBlock()->getTerminator();
      f.out->moveBefore(terminator);
      f.lse->moveBefore(terminator);
      f.op->moveBefore(terminator);
    }

    b.setInsertionPoint(combine);
    Value several =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, splits, one);
    auto merge = scf::IfOp::create(b, loc, several, /*withElseRegion=*/false);
    combine->moveBefore(merge.thenBlock()->getTerminator());
  }
};

} // namespace
