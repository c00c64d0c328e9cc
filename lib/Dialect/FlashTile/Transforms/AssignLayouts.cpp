//===- AssignLayouts.cpp - Choose the layouts of a kernel's tiles ---------===//
//
// Implements `flash-tile-assign-layouts`. flash-to-tile writes a kernel's
// register tiles without layouts; this pass chooses the CTA's warps and
// where every tile lives on them:
//
//  1. The kernel's MMAs give the tile's rows R, the batch B of matrices
//     (kv warps: 3-D tiles) and the widest operand or accumulator. From
//     those and GPUSchedule's rule (or the `rows-per-warp` option) come the
//     rows per warp and the warps: R / rows-per-warp x B.
//  2. Every MMA accumulates in `#flash_tile.mma<warps = [R/rpw, B]>` (2-D)
//     or `<warps = [B, R/rpw, 1]>` (a batch), its operands in the A and B
//     operand layouts of it. Operands read from shared memory (local_load),
//     splats and broadcasts take the layout their MMA needs.
//  3. The other tiles follow, to a fixed point: a reduction leaves a slice
//     of its source's layout, a fold and a rescale keep it, a map takes
//     its inputs', a batch reduction leaves the 2-D layout of its batch, a
//     broadcast the batched one; loop-carried values and branch results
//     take the layout that reaches them; a splat takes its users'.
//  4. Where a value's layout is not the one its user needs (an S
//     accumulator used as P's A operand), a `flash_tile.convert_layout` is
//     inserted.
//  5. Copies without a layout get the blocked copy layout for the warps,
//     and the function records its threads as `flash.block`.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/Transforms/Passes.h"

#include "flashc/Core/GPUSchedule.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"
#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "flash-tile-assign-layouts"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash_tile {
#define GEN_PASS_DEF_FLASHTILEASSIGNLAYOUTS
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"
} // namespace flash_tile
} // namespace mlir

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

/// Whether `v` is a tile that has no layout in its type.
bool isUnassigned(Value v) {
  auto tile = dyn_cast<TileType>(v.getType());
  return tile && !tile.hasLayout();
}

/// The layouts of one kernel: its MMA layout family and what each tile got.
class Assignment {
public:
  Assignment(FunctionOpInterface fn, int64_t rowsPerWarp)
      : fn(fn), ctx(fn->getContext()), rowsPerWarp(rowsPerWarp) {}

  /// Chooses the warps and every tile's layout, inserting conversions;
  /// fails with a diagnostic on `fn`.
  LogicalResult run();

  int64_t getThreads() const { return 32 * warps; }
  int64_t getNumConversions() const { return numConversions; }
  int64_t getNumTiles() const { return numTiles; }

private:
  FunctionOpInterface fn;
  MLIRContext *ctx;
  int64_t rowsPerWarp;
  // The kernel's MMA tile: rows, batch and the warps over the rows.
  int64_t rows = 0, batch = 1, rowWarps = 0, warps = 0;
  int64_t numConversions = 0, numTiles = 0;
  llvm::DenseMap<Value, Attribute> chosen;
  // The conversions inserted, one per value and layout.
  llvm::DenseMap<std::pair<Value, Attribute>, Value> conversions;
  bool changed = false;

  template <typename OpT>
  void forEach(function_ref<void(OpT)> f) {
    fn->walk([&](OpT op) {
      if (op->template getParentOfType<FunctionOpInterface>() == fn)
        f(op);
    });
  }

  LogicalResult chooseWarps();

  /// The accumulator layout of a tile of `rank` (3: a batch).
  MmaLayoutAttr acc(int64_t rank) const {
    if (rank == 3)
      return MmaLayoutAttr::get(ctx, {batch, rowWarps, 1}, {16, 8, 16});
    return MmaLayoutAttr::get(ctx, {rowWarps, batch}, {16, 8, 16});
  }
  OperandLayoutAttr operand(OperandKind kind, int64_t rank) const {
    return OperandLayoutAttr::get(ctx, kind, acc(rank));
  }
  /// The layout of one matrix of the batch a batched layout holds, as the
  /// batch's 2-D tile has it (flash_tile.batch_reduce's result), or the
  /// batched layout of a 2-D one (flash_tile.broadcast's): null for
  /// layouts outside the kernel's MMA family.
  Attribute rebatch(Attribute layout, bool toBatch) const;

  /// The layout of what is left of a tile of `parent`'s layout without its
  /// dimension `dim` (its rows' values), or null where `parent` has no such
  /// slice (an operand layout).
  Attribute sliceOf(int64_t dim, Attribute parent) const {
    auto layout = dyn_cast_or_null<LayoutAttrInterface>(parent);
    if (!layout)
      return {};
    auto blocked = dyn_cast<BlockedLayoutAttr>(parent);
    if (!isa<MmaLayoutAttr>(parent) &&
        !(blocked && blocked.getSize().size() == 2))
      return {};
    return SliceLayoutAttr::get(ctx, dim, layout);
  }

  /// The layout `v` has or was given, or null.
  Attribute known(Value v) const {
    if (auto tile = dyn_cast<TileType>(v.getType()); tile && tile.hasLayout())
      return tile.getLayout();
    return chosen.lookup(v);
  }
  /// Gives `v` (a tile without a layout) `layout`, once.
  void assign(Value v, Attribute layout) {
    if (!layout || !isUnassigned(v) || chosen.count(v))
      return;
    chosen[v] = layout;
    changed = true;
  }
  /// An MMA needs `v` in `layout`: values made for it (shared-memory reads,
  /// splats, broadcasts of those) get it.
  void require(Value v, Attribute layout);
  /// One round of the propagation rules over the kernel.
  void propagate();
  /// The layout a user needs of a splat's `use`, or null.
  Attribute fromUse(OpOperand &use) const;

  /// Writes the layouts into the types and converts where a user needs
  /// another layout.
  LogicalResult apply();
  Value convertTo(Value v, Attribute layout);
  void setCopyLayouts();
};

LogicalResult Assignment::chooseWarps() {
  // The widest operand or accumulator, and the narrowest and widest
  // accumulators (S's keys and O's Dv in an attention kernel).
  int64_t widest = 0, minAcc = 0, maxAcc = 0;
  std::optional<int64_t> mmaRows, mmaBatch;
  Operation *first = nullptr;
  // Whether a warpgroup MMA holds the kernel to 16 rows per warp.
  Operation *warpgroup = nullptr;
  WalkResult walk = fn->walk([&](Operation *op) {
    // A nested function chooses its own.
    if (!isa<MmaOp, WarpgroupMmaOp>(op) ||
        op->getParentOfType<FunctionOpInterface>() != fn)
      return WalkResult::advance();
    ArrayRef<int64_t> c = cast<TileType>(op->getResult(0).getType()).getShape();
    int64_t k, n = c.back();
    std::string bShape;
    if (auto mma = dyn_cast<MmaOp>(op)) {
      k = mma.getA().getType().getShape().back();
      bShape = formatShape(mma.getB().getType().getShape().take_back(2));
    } else {
      k = cast<WarpgroupMmaOp>(op).getMNK()[2];
      bShape = formatShape({k, n});
      warpgroup = op;
    }
    int64_t r = c[c.size() - 2];
    int64_t bt = c.size() == 3 ? c[0] : 1;
    if (!first) {
      first = op;
      mmaRows = r;
      mmaBatch = bt;
    } else if (r != *mmaRows || bt != *mmaBatch) {
      op->emitError() << "flash-tile-assign-layouts: the kernel's MMAs "
                         "accumulate "
                      << *mmaBatch << " x " << *mmaRows
                      << " rows (batch x rows) and " << bt << " x " << r
                      << "; one layout serves one tile of rows";
      return WalkResult::interrupt();
    }
    // The layouts are of mma.sync.m16n8k16: K in steps of 16, N of 8.
    if (k % 16 != 0 || n % 8 != 0) {
      op->emitError() << "flash-tile-assign-layouts: an MMA of "
                      << formatShape({r, k}) << " by " << bShape
                      << " does not split into m16n8k16 instructions (K a "
                         "multiple of 16, N of 8)";
      return WalkResult::interrupt();
    }
    widest = std::max({widest, k, n});
    minAcc = minAcc ? std::min(minAcc, n) : n;
    maxAcc = std::max(maxAcc, n);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (!first)
    return fn->emitError() << "flash-tile-assign-layouts: @" << fn.getName()
                           << " has tiles without layouts and no "
                              "flash_tile.mma to choose its warps from";
  rows = *mmaRows;
  batch = *mmaBatch;
  if (rows % 16 != 0)
    return first->emitError()
           << "flash-tile-assign-layouts: the MMAs accumulate " << rows
           << " rows, not whole 16-row MMA tiles";
  // A warpgroup's instruction spreads its 64 rows over its 4 warps.
  if (warpgroup && rowsPerWarp > 16)
    return warpgroup->emitError()
           << "flash-tile-assign-layouts: a warpgroup MMA gives each warp 16 "
              "rows, not rows-per-warp = "
           << rowsPerWarp;
  int64_t perWarp =
      warpgroup ? 1
      : rowsPerWarp
          ? rowsPerWarp / 16
          : flashc::chooseRowTilesPerWarp(rows, batch, widest, minAcc + maxAcc);
  if (rows % (16 * perWarp) != 0)
    return first->emitError()
           << "flash-tile-assign-layouts: " << 16 * perWarp
           << " rows per warp do not divide the tile's " << rows << " rows";
  rowWarps = rows / (16 * perWarp);
  warps = rowWarps * batch;
  // The copies spread a block's rows over every warp in powers of two.
  if (!llvm::isPowerOf2_64(warps) || warps > 32)
    return first->emitError()
           << "flash-tile-assign-layouts: " << rowWarps << " row warps x "
           << batch << " kv warps is " << warps
           << " warps; a CTA takes a power of two of at most 32";
  LLVM_DEBUG(DBGS() << "@" << fn.getName() << ": " << rows << " rows, batch "
                    << batch << ", widest " << widest << ": "
                    << 16 * perWarp << " rows per warp, " << warps
                    << " warps\n");
  return success();
}

Attribute Assignment::rebatch(Attribute layout, bool toBatch) const {
  if (auto mma = dyn_cast<MmaLayoutAttr>(layout)) {
    if (mma.isBatched() == toBatch)
      return {};
    return toBatch ? acc(3) : acc(2);
  }
  if (auto op = dyn_cast<OperandLayoutAttr>(layout)) {
    auto parent = cast_or_null<MmaLayoutAttr>(rebatch(op.getParent(), toBatch));
    return parent ? OperandLayoutAttr::get(ctx, op.getKind(), parent)
                  : Attribute();
  }
  if (auto slice = dyn_cast<SliceLayoutAttr>(layout)) {
    Attribute parent = rebatch(slice.getParent(), toBatch);
    if (!parent)
      return {};
    return SliceLayoutAttr::get(ctx, slice.getDim() + (toBatch ? 1 : -1),
                                cast<LayoutAttrInterface>(parent));
  }
  return {};
}

void Assignment::require(Value v, Attribute layout) {
  if (!isUnassigned(v) || chosen.count(v))
    return;
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<LocalLoadOp, SplatOp>(def)) {
    assign(v, layout);
  } else if (auto broadcast = dyn_cast_or_null<BroadcastOp>(def)) {
    assign(v, layout);
    require(broadcast.getSource(), rebatch(layout, /*toBatch=*/false));
  }
}

Attribute Assignment::fromUse(OpOperand &use) const {
  Operation *user = use.getOwner();
  unsigned i = use.getOperandNumber();
  if (auto mma = dyn_cast<MmaOp>(user))
    return i == mma.getAccMutable().getOperandNumber()
               ? Attribute(acc(mma.getAcc().getType().getRank()))
               : Attribute();
  if (auto mma = dyn_cast<WarpgroupMmaOp>(user))
    return i == mma.getAccMutable().getOperandNumber() ? Attribute(acc(2))
                                                       : Attribute();
  if (auto rescale = dyn_cast<RescaleOp>(user)) {
    Attribute result = known(rescale.getResult());
    if (!result || i == 0)
      return result;
    return sliceOf(rescale.getFactor().getType().getRank(), result);
  }
  if (auto map = dyn_cast<MapOp>(user)) {
    Attribute result = known(map.getResult());
    if (!result)
      return {};
    auto type = cast<TileType>(use.get().getType());
    if (type.getRank() == map.getResult().getType().getRank())
      return result;
    return sliceOf(type.getRank(), result);
  }
  if (auto loop = dyn_cast<scf::ForOp>(user)) {
    if (i < loop.getNumControlOperands())
      return {};
    return known(loop.getRegionIterArgs()[i - loop.getNumControlOperands()]);
  }
  if (auto yield = dyn_cast<scf::YieldOp>(user))
    return known(yield->getParentOp()->getResult(i));
  return {};
}

void Assignment::propagate() {
  fn->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op->getParentOfType<FunctionOpInterface>() != fn)
      return;
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](MmaOp mma) {
          assign(mma.getResult(), acc(mma.getResult().getType().getRank()));
        })
        .Case([&](WarpgroupMmaOp mma) { assign(mma.getResult(), acc(2)); })
        .Case([&](ReduceOp reduce) {
          if (Attribute src = known(reduce.getSource()))
            assign(reduce.getResult(),
                   sliceOf(reduce.getResult().getType().getRank(), src));
        })
        .Case([&](FoldOp fold) {
          assign(fold.getResult(), known(fold.getSource()));
        })
        .Case([&](RescaleOp rescale) {
          assign(rescale.getResult(), known(rescale.getAcc()));
        })
        .Case([&](BatchReduceOp reduce) {
          if (Attribute src = known(reduce.getSource()))
            assign(reduce.getResult(), rebatch(src, /*toBatch=*/false));
        })
        .Case([&](BroadcastOp broadcast) {
          if (Attribute src = known(broadcast.getSource()))
            assign(broadcast.getResult(), rebatch(src, /*toBatch=*/true));
          else if (Attribute result = known(broadcast.getResult()))
            require(broadcast.getSource(), rebatch(result, /*toBatch=*/false));
        })
        .Case([&](MapOp map) {
          int64_t rank = map.getResult().getType().getRank();
          for (Value in : map.getInputs()) {
            Attribute l = known(in);
            if (!l)
              continue;
            if (cast<TileType>(in.getType()).getRank() == rank) {
              assign(map.getResult(), l);
            } else if (auto slice = dyn_cast<SliceLayoutAttr>(l);
                       slice && slice.getDim() == rank - 1) {
              assign(map.getResult(), slice.getParent());
            }
          }
        })
        .Case([&](SplatOp splat) {
          for (OpOperand &use : splat.getResult().getUses())
            assign(splat.getResult(), fromUse(use));
        })
        .Case([&](scf::ForOp loop) {
          auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
          for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
            Value result = loop.getResult(i);
            Attribute l = known(arg);
            if (!l)
              l = known(loop.getInitArgs()[i]);
            if (!l)
              l = known(yield.getOperand(i));
            if (!l)
              l = known(result);
            assign(arg, l);
            assign(result, l);
          }
        })
        .Case([&](scf::IfOp branch) {
          for (auto [i, result] : llvm::enumerate(branch.getResults()))
            for (Region *region : {&branch.getThenRegion(),
                                   &branch.getElseRegion()})
              if (!region->empty())
                assign(result, known(cast<scf::YieldOp>(
                                         region->front().getTerminator())
                                         .getOperand(i)));
        });
  });
}

/// `v` in `layout`: a conversion right after `v` is defined (so that a
/// value defined outside a loop converts once), shared by every user that
/// needs that layout.
Value Assignment::convertTo(Value v, Attribute layout) {
  auto type = cast<TileType>(v.getType());
  if (type.getLayout() == layout)
    return v;
  Value &converted = conversions[{v, layout}];
  if (!converted) {
    OpBuilder b(ctx);
    b.setInsertionPointAfterValue(v);
    converted =
        ConvertLayoutOp::create(b, v.getLoc(), type.withLayout(layout), v);
    ++numConversions;
  }
  return converted;
}

LogicalResult Assignment::apply() {
  // Every tile must have its layout now.
  Value missing;
  fn->walk([&](Operation *op) {
    auto check = [&](Value v) {
      if (!missing && isUnassigned(v) && !chosen.count(v))
        missing = v;
    };
    for (Value v : op->getResults())
      check(v);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Value v : block.getArguments())
          check(v);
  });
  if (missing) {
    Operation *at = missing.getDefiningOp();
    InFlightDiagnostic diag =
        (at ? at->emitError() : fn->emitError())
        << "flash-tile-assign-layouts: no layout follows for a tile of "
        << formatShape(cast<TileType>(missing.getType()).getShape())
        << " from the kernel's MMAs";
    return diag;
  }
  for (auto [v, layout] : chosen) {
    v.setType(cast<TileType>(v.getType()).withLayout(layout));
    ++numTiles;
  }

  // Conversions where a user needs another layout than its operand has.
  auto fix = [&](OpOperand &use, Attribute layout) {
    if (layout)
      use.set(convertTo(use.get(), layout));
  };
  forEach<MmaOp>([&](MmaOp mma) {
    int64_t rank = mma.getAcc().getType().getRank();
    fix(mma.getAMutable(), operand(OperandKind::A, rank));
    fix(mma.getBMutable(), operand(OperandKind::B, rank));
    fix(mma.getAccMutable(), acc(rank));
  });
  forEach<WarpgroupMmaOp>([&](WarpgroupMmaOp mma) {
    if (!mma.isSharedA())
      fix(mma.getAMutable(), operand(OperandKind::A, 2));
    fix(mma.getAccMutable(), acc(2));
  });
  forEach<MapOp>([&](MapOp map) {
    auto result = map.getResult().getType();
    for (OpOperand &use : map.getInputsMutable()) {
      auto type = cast<TileType>(use.get().getType());
      fix(use, type.getRank() == result.getRank()
                   ? result.getLayout()
                   : sliceOf(type.getRank(), result.getLayout()));
    }
  });
  forEach<RescaleOp>([&](RescaleOp rescale) {
    auto acc = rescale.getAcc().getType();
    fix(rescale.getFactorMutable(),
        sliceOf(acc.getRank() - 1, acc.getLayout()));
  });
  forEach<scf::ForOp>([&](scf::ForOp loop) {
    for (auto [i, use] : llvm::enumerate(loop.getInitArgsMutable()))
      if (auto tile = dyn_cast<TileType>(loop.getRegionIterArgs()[i].getType()))
        fix(use, tile.getLayout());
  });
  forEach<scf::YieldOp>([&](scf::YieldOp yield) {
    Operation *parent = yield->getParentOp();
    if (!isa<scf::ForOp, scf::IfOp>(parent))
      return;
    for (OpOperand &use : yield->getOpOperands())
      if (auto tile = dyn_cast<TileType>(
              parent->getResult(use.getOperandNumber()).getType()))
        fix(use, tile.getLayout());
  });
  return success();
}

void Assignment::setCopyLayouts() {
  forEach<AsyncCopyOp>([&](AsyncCopyOp copy) {
    if (copy.getLayoutAttr())
      return;
    SharedType buffer = copy.getBuffer().getType();
    copy.setLayoutAttr(
        getCopyLayout(ctx, buffer.getRows(), buffer.getColumns(),
                      copy.getSource().getType().getShape().back(),
                      buffer.getElementType().getIntOrFloatBitWidth() / 8,
                      warps, copy.getAlignment().value_or(16)));
  });
}

LogicalResult Assignment::run() {
  if (failed(chooseWarps()))
    return failure();
  forEach<MmaOp>([&](MmaOp mma) {
    int64_t rank = mma.getAcc().getType().getRank();
    require(mma.getA(), operand(OperandKind::A, rank));
    require(mma.getB(), operand(OperandKind::B, rank));
    require(mma.getAcc(), acc(rank));
  });
  forEach<WarpgroupMmaOp>([&](WarpgroupMmaOp mma) {
    if (!mma.isSharedA())
      require(mma.getA(), operand(OperandKind::A, 2));
    require(mma.getAcc(), acc(2));
  });
  // Each round gives at least one more value its layout, or ends.
  do {
    changed = false;
    propagate();
  } while (changed);
  if (failed(apply()))
    return failure();
  setCopyLayouts();
  return success();
}

struct AssignLayoutsPass
    : flash_tile::impl::FlashTileAssignLayoutsBase<AssignLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t rows = rowsPerWarp;
    if (rows != 0 && rows != 16 && rows != 32) {
      getOperation()->emitError()
          << "flash-tile-assign-layouts: rows-per-warp is 16, 32 or 0 (the "
             "schedule's choice), not "
          << rows;
      return signalPassFailure();
    }
    flash::FlashDialect::BlockAttrHelper block(&getContext());
    WalkResult result = getOperation()->walk([&](FunctionOpInterface fn) {
      if (!needsLayouts(fn))
        return WalkResult::advance();
      Assignment assignment(fn, rows);
      if (failed(assignment.run()))
        return WalkResult::interrupt();
      block.setAttr(fn, Builder(&getContext())
                            .getI64IntegerAttr(assignment.getThreads()));
      ++numKernels;
      numTiles += assignment.getNumTiles();
      numConversions += assignment.getNumConversions();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  /// Whether `fn` has a tile or a copy without a layout.
  static bool needsLayouts(FunctionOpInterface fn) {
    WalkResult found = fn->walk([&](Operation *op) {
      if (op->getParentOfType<FunctionOpInterface>() != fn)
        return WalkResult::advance();
      if (auto copy = dyn_cast<AsyncCopyOp>(op); copy && !copy.getLayoutAttr())
        return WalkResult::interrupt();
      if (llvm::any_of(op->getResults(), isUnassigned))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return found.wasInterrupted();
  }
};

} // namespace
