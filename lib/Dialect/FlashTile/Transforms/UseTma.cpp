//===- UseTma.cpp - Copy a kernel's blocks by TMA -------------------------===//
//
// Implements `flash-tile-use-tma`: the cp.async copies of a pipelined
// sm_90a kernel become TMA copies of tensor maps the kernel takes as
// arguments, each stage of a buffer so filled guarded by an mbarrier whose
// phases the KV loops track.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/Transforms/Passes.h"

#include "StagePhases.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"
#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-tile-use-tma"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash_tile {
#define GEN_PASS_DEF_FLASHTILEUSETMA
#include "flashc/Dialect/FlashTile/Transforms/Passes.h.inc"
} // namespace flash_tile
} // namespace mlir

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

/// A copy as a TMA copy: the kernel argument it reads (`q`, `k` or `v`),
/// where its source starts in that tensor (b, h, row), and the box.
struct TmaCopy {
  AsyncCopyOp op;
  /// The TMA copy that replaces `op`.
  TmaLoadOp load;
  unsigned argument;
  std::string tensor;
  SmallVector<OpFoldResult> origin;
  SmallVector<int64_t> box;
};

/// What a tensor map of `tensor` describes, for its flash.param.
std::string describeMap(StringRef tensor) {
  std::string upper = tensor.upper();
  return "TMA tensor map of " + upper + " (" + upper +
         (tensor == "q"     ? ": batch x G query heads x Nq x D"
          : tensor == "out" ? ": batch x G query heads x Nq x Dv"
                            : ": batch x 1 KV head x Nk x D") +
         ", as dimensions (D, N, heads, batch) innermost first), built at "
         "launch";
}

/// Whether a copy's or store's `groups` operand leaves out no group of its
/// 3-D matrix of `groups` groups, only the tile's rows past the last one
/// (a GQA tile's padding, GPUTileConfig::groupRows): a box of the groups'
/// rows then moves every row that is read or written, and leaves the
/// padding rows alone.
bool onlyPaddingCut(Value operand, int64_t groups) {
  return operand && getConstantIntValue(operand) == groups;
}

/// `copy` as a TMA copy, or why not.
FailureOr<TmaCopy> matchCopy(FunctionOpInterface fn, AsyncCopyOp copy,
                             std::string &why) {
  SharedType buffer = copy.getBuffer().getType();
  int64_t bytes = buffer.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t swizzle =
      flashc::getWarpgroupSwizzleBytes(buffer.getColumns() * bytes);
  if (bytes != 2 || !swizzle)
    return why = "its stage's rows are not 16-bit rows of a multiple of 32 "
                 "bytes",
           failure();
  // A tensor map's strides are multiples of 16 bytes: rows of whole 16-byte
  // units, whose strides the runtime requires to be such (rows of other
  // widths may be packed, which TMA cannot describe; they keep cp.async).
  int64_t sourceColumns = copy.getSource().getType().getShape().back();
  if (ShapedType::isDynamic(sourceColumns) ||
      !flashc::hasWholeChunkRows(sourceColumns, bytes))
    return why = "its source's rows are not whole 16-byte units", failure();
  if (std::optional<int64_t> alignment = copy.getAlignment();
      alignment && *alignment < 16)
    return why = "its source is " + std::to_string(*alignment) +
                 "-byte aligned; a tensor map needs 16",
           failure();
  auto sub = copy.getSource().getDefiningOp<memref::SubViewOp>();
  auto cast = sub ? sub.getSource().getDefiningOp<memref::ReinterpretCastOp>()
                  : memref::ReinterpretCastOp();
  auto arg = cast ? dyn_cast<BlockArgument>(cast.getSource()) : BlockArgument();
  if (!arg || arg.getOwner() != &fn.getFunctionBody().front() ||
      sub.getSourceType().getRank() != 4)
    return why = "its source is not a subview of a kernel argument's 4-D "
                 "tensor",
           failure();
  auto param = fn.getArgAttrOfType<DictionaryAttr>(
      arg.getArgNumber(),
      flash::FlashDialect::ParamAttrHelper(fn->getContext()).getName());
  auto name = param ? param.getAs<StringAttr>("name") : StringAttr();
  if (!name || !llvm::is_contained({"q", "k", "v"}, name.getValue()))
    return why = "its source is not the kernel's q, k or v", failure();
  for (OpFoldResult stride : sub.getMixedStrides())
    if (getConstantIntValue(stride) != 1)
      return why = "its source is a strided subview", failure();
  TmaCopy t;
  t.op = copy;
  t.argument = arg.getArgNumber();
  t.tensor = name.getValue().str();
  SmallVector<OpFoldResult> offsets = sub.getMixedOffsets();
  if (getConstantIntValue(offsets[3]) != 0)
    return why = "its source starts inside a row", failure();
  t.origin.assign(offsets.begin(), offsets.begin() + 3);
  // The box: one row of the buffer's swizzle (128, 64 or 32 bytes of
  // columns), and the stage's rows, as G groups of a 3-D source.
  int64_t groups = copy.getSource().getType().getRank() == 3
                       ? copy.getSource().getType().getShape()[0]
                       : 1;
  if (ShapedType::isDynamic(groups) ||
      (buffer.getRows() % groups && !onlyPaddingCut(copy.getGroups(), groups)))
    return why = "its groups do not divide the stage's rows", failure();
  // A box moves every group: a copy that zero-fills some (a count below
  // the matrix's) is not one.
  if (copy.getGroups() && !onlyPaddingCut(copy.getGroups(), groups))
    return why = "it zero-fills groups of its source", failure();
  t.box = {swizzle / bytes, buffer.getRows() / groups, groups, 1};
  return t;
}

/// The kernel's output store as a TMA store from `buffer` (filled once
/// before the KV loops, free after them): of the tile's shape, or with
/// more columns, whose first ones (whole panels) a `flash_tile.view`
/// makes a buffer of the tile's shape.
struct TmaOutput {
  StoreOp op;
  Value buffer;
  bool view = false;
  SmallVector<OpFoldResult> origin;
  SmallVector<int64_t> box;
};

/// `store` as a TMA store through one of `buffers`, or failure.
FailureOr<TmaOutput> matchOutput(FunctionOpInterface fn, StoreOp store,
                                 ArrayRef<Value> buffers) {
  TileType tile = store.getValue().getType();
  if (tile.getRank() != 2)
    return failure();
  int64_t bytes = tile.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t rows = tile.getShape()[0], cols = tile.getShape()[1];
  auto dest = cast<MemRefType>(store.getDest().getType());
  int64_t swizzle = flashc::getWarpgroupSwizzleBytes(cols * bytes);
  if (bytes != 2 || !swizzle || dest.getShape().back() != cols)
    return failure();
  // A tensor map's address and strides are multiples of 16 bytes.
  if (store.getAlignment().value_or(bytes) < 16)
    return failure();
  auto sub = store.getDest().getDefiningOp<memref::SubViewOp>();
  auto whole = sub ? sub.getSource().getDefiningOp<memref::ReinterpretCastOp>()
                   : memref::ReinterpretCastOp();
  auto arg =
      whole ? dyn_cast<BlockArgument>(whole.getSource()) : BlockArgument();
  if (!arg || arg.getOwner() != &fn.getFunctionBody().front() ||
      sub.getSourceType().getRank() != 4)
    return failure();
  auto param = fn.getArgAttrOfType<DictionaryAttr>(
      arg.getArgNumber(),
      flash::FlashDialect::ParamAttrHelper(fn->getContext()).getName());
  auto name = param ? param.getAs<StringAttr>("name") : StringAttr();
  if (!name || name.getValue() != "out")
    return failure();
  SmallVector<OpFoldResult> offsets = sub.getMixedOffsets();
  if (getConstantIntValue(offsets[3]) != 0 ||
      llvm::any_of(sub.getMixedStrides(), [](OpFoldResult stride) {
        return getConstantIntValue(stride) != 1;
      }))
    return failure();
  int64_t groups = dest.getRank() == 3 ? dest.getShape()[0] : 1;
  if (ShapedType::isDynamic(groups) ||
      (store.getGroups() && !onlyPaddingCut(store.getGroups(), groups)) ||
      (rows % groups && !store.getGroups()))
    return failure();
  TmaOutput out;
  out.op = store;
  out.origin.assign(offsets.begin(), offsets.begin() + 3);
  auto fits = [&](Value buffer) {
    auto type = cast<SharedType>(buffer.getType());
    return type.getStages() == 1 && type.getRows() == rows &&
           type.getElementType() == tile.getElementType();
  };
  for (Value buffer : buffers) {
    if (!fits(buffer) ||
        cast<SharedType>(buffer.getType()).getColumns() != cols)
      continue;
    out.buffer = buffer;
    out.box = {swizzle / bytes, rows / groups, groups, 1};
    return out;
  }
  // A wider buffer (Q's where Dv < D) holds the tile in its first panels:
  // rows of the swizzle's row, one after another, each a box of its own.
  // Its placement, the one flash-tile-allocate-shared gives a buffer TMA
  // fills, decides the panels.
  for (Value buffer : buffers) {
    auto type = cast<SharedType>(buffer.getType());
    if (!fits(buffer) || type.getColumns() <= cols)
      continue;
    SwizzledLayoutAttr placement =
        type.hasLayout() ? type.getLayout()
                         : getWarpgroupPlacement(store.getContext(),
                                                 type.getColumns(), bytes);
    int64_t panel = placement ? placement.getPanel() : 0;
    if (!panel || cols % panel != 0)
      continue;
    out.buffer = buffer;
    out.view = true;
    out.box = {panel, rows / groups, groups, 1};
    return out;
  }
  return failure();
}

/// The op of `block` that is or holds `op`.
Operation *inBlock(Block *block, Operation *op) {
  return block->findAncestorOpInBlock(*op);
}

struct UseTmaPass : flash_tile::impl::FlashTileUseTmaBase<UseTmaPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<FunctionOpInterface, unsigned>> fns;
    getOperation()->walk([&](FunctionOpInterface fn) {
      if (!fn.isExternal())
        fns.emplace_back(fn, fn.getNumArguments());
    });
    for (auto [fn, before] : fns)
      if (failed(rewrite(fn)))
        return signalPassFailure();
    // Then the maps go to the kernels that took none of their own.
    for (auto [fn, before] : fns)
      if (fn.getNumArguments() > before)
        shareMaps(fn, before, fns);
  }

  LogicalResult rewrite(FunctionOpInterface fn);
  void shareMaps(
      FunctionOpInterface fn, unsigned before,
      ArrayRef<std::pair<FunctionOpInterface, unsigned>> originalArguments);
};

/// The runtime launches the kernels of one module (a variant's forward
/// kernel and its combine) with one argument list. `fn` took `before`
/// arguments and now also takes tensor maps: each other kernel of its
/// symbol table that took the same arguments, and took no tensor maps of
/// its own (`originalArguments`: each kernel's count before the pass),
/// takes the maps too, unused.
void UseTmaPass::shareMaps(
    FunctionOpInterface fn, unsigned before,
    ArrayRef<std::pair<FunctionOpInterface, unsigned>> originalArguments) {
  Operation *table = SymbolTable::getNearestSymbolTable(fn->getParentOp());
  if (!table)
    return;
  auto sameArguments = [&](FunctionOpInterface other) {
    auto original = llvm::find_if(originalArguments, [&](const auto &entry) {
      return entry.first == other;
    });
    if (original == originalArguments.end() ||
        original->second != other.getNumArguments() ||
        other.getNumArguments() != before)
      return false;
    for (unsigned i = 0; i < before; ++i)
      if (other.getArgument(i).getType() != fn.getArgument(i).getType() ||
          other.getArgAttrDict(i) != fn.getArgAttrDict(i))
        return false;
    return true;
  };
  MLIRContext *ctx = fn->getContext();
  flash::FlashDialect::GridConstantsAttrHelper gridConstants(ctx);
  for (Region &region : table->getRegions())
    for (Block &block : region)
      for (auto other : block.getOps<FunctionOpInterface>()) {
        if (other == fn || other.isExternal() || !sameArguments(other))
          continue;
        SmallVector<int64_t> positions;
        if (DenseI64ArrayAttr have = gridConstants.getAttr(other))
          positions.assign(have.asArrayRef().begin(), have.asArrayRef().end());
        for (unsigned i = before, e = fn.getNumArguments(); i < e; ++i) {
          unsigned index = other.getNumArguments();
          if (failed(other.insertArgument(index, fn.getArgument(i).getType(),
                                          fn.getArgAttrDict(i), fn.getLoc())))
            return;
          positions.push_back(index);
        }
        gridConstants.setAttr(other, DenseI64ArrayAttr::get(ctx, positions));
        LLVM_DEBUG(DBGS() << "@" << other.getName() << " takes @"
                          << fn.getName() << "'s tensor maps, unused\n");
        ++numSharedMaps;
      }
}

LogicalResult UseTmaPass::rewrite(FunctionOpInterface fn) {
  MLIRContext *ctx = fn->getContext();
  SmallVector<AsyncCopyOp> copies;
  bool warpgroup = false;
  fn->walk([&](Operation *op) {
    if (op->getParentOfType<FunctionOpInterface>() != fn)
      return;
    if (auto copy = dyn_cast<AsyncCopyOp>(op))
      copies.push_back(copy);
    warpgroup |= isa<WarpgroupMmaOp>(op);
  });
  if (copies.empty())
    return success();
  auto keep = [&](const Twine &why) {
    LLVM_DEBUG(DBGS() << "@" << fn.getName()
                      << " keeps its cp.async copies: " << why << "\n");
    ++numKept;
    return success();
  };
  if (!warpgroup)
    return keep("no warpgroup MMA");

  SmallVector<TmaCopy> tma;
  std::string why;
  for (AsyncCopyOp copy : copies) {
    FailureOr<TmaCopy> t = matchCopy(fn, copy, why);
    if (failed(t))
      return keep(why);
    tma.push_back(std::move(*t));
  }

  // Buffers filled in a KV loop (a ring of stages) and buffers filled once
  // before the loops.
  flash::FlashDialect::KvLoopAttrHelper kvLoop(ctx);
  auto loopOf = [&](Operation *op) -> scf::ForOp {
    for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
         loop = loop->getParentOfType<scf::ForOp>())
      if (kvLoop.isAttrPresent(loop))
        return loop;
    return {};
  };
  llvm::SetVector<Value> ring, once;
  for (TmaCopy &t : tma)
    if (loopOf(t.op))
      ring.insert(t.op.getBuffer());
  for (TmaCopy &t : tma)
    if (!ring.contains(t.op.getBuffer()))
      once.insert(t.op.getBuffer());
  // A buffer filled once has exactly one copy, waited for with parity 0.
  for (Value buffer : once)
    if (llvm::count_if(
            tma, [&](TmaCopy &t) { return t.op.getBuffer() == buffer; }) != 1)
      return keep("a buffer filled more than once before the KV loops");

  // The KV loops and the stage each reads its ring buffers at.
  SmallVector<scf::ForOp> loops;
  fn->walk([&](scf::ForOp loop) {
    if (kvLoop.isAttrPresent(loop))
      loops.push_back(loop);
  });
  struct LoopReads {
    Value stage;
    // Each ring buffer's first read in the body (the op of the body that
    // holds it).
    llvm::MapVector<Value, Operation *> first;
  };
  SmallVector<LoopReads> reads(loops.size());
  bool readsOutside = false;
  auto noteRead = [&](Operation *op, Value buffer, Value stage) {
    if (!ring.contains(buffer))
      return;
    scf::ForOp loop = loopOf(op);
    auto it = llvm::find(loops, loop);
    if (!loop || it == loops.end()) {
      readsOutside = true;
      return;
    }
    LoopReads &r = reads[it - loops.begin()];
    if (r.stage && r.stage != stage)
      readsOutside = true;
    r.stage = stage;
    Operation *at = inBlock(loop.getBody(), op);
    auto [entry, inserted] = r.first.try_emplace(buffer, at);
    if (!inserted && at->isBeforeInBlock(entry->second))
      entry->second = at;
  };
  fn->walk([&](Operation *op) {
    if (auto load = dyn_cast<LocalLoadOp>(op)) {
      noteRead(op, load.getBuffer(), load.getStage());
    } else if (auto mma = dyn_cast<WarpgroupMmaOp>(op)) {
      noteRead(op, mma.getB(), mma.getBStage());
      if (mma.isSharedA())
        noteRead(op, mma.getA(), mma.getAStage());
    } else if (!isa<AsyncCopyOp>(op)) {
      for (Value operand : op->getOperands())
        if (ring.contains(operand))
          readsOutside = true;
    }
  });
  if (readsOutside)
    return keep("a ring buffer used outside the KV loops' stage reads");
  for (auto [loop, r] : llvm::zip(loops, reads)) {
    auto arg = dyn_cast_or_null<BlockArgument>(r.stage);
    if (r.first.empty())
      continue;
    if (!arg || arg.getOwner() != loop.getBody() || arg.getArgNumber() == 0)
      return keep("a KV loop that reads a stage it does not carry");
  }
  SmallVector<AsyncWaitOp> waits;
  SmallVector<AsyncCommitOp> commits;
  fn->walk([&](AsyncWaitOp op) { waits.push_back(op); });
  fn->walk([&](AsyncCommitOp op) { commits.push_back(op); });
  for (AsyncWaitOp wait : waits) {
    scf::ForOp loop = loopOf(wait);
    if (loop && wait->getParentOp() != loop)
      return keep("a wait nested in a KV loop's body");
  }

  for (TmaCopy &t : tma)
    if (once.contains(t.op.getBuffer()) &&
        llvm::none_of(waits, [&](AsyncWaitOp wait) {
          return !loopOf(wait) && wait->getBlock() == t.op->getBlock() &&
                 t.op->isBeforeInBlock(wait);
        }))
      return keep("a buffer filled before the KV loops with no wait after");

  // The output: a store of the kernel's `out` after the KV loops, through a
  // buffer filled once (Q's, which the loops are done reading) of its shape.
  SmallVector<TmaOutput> outputs;
  if (!loops.empty()) {
    SmallVector<StoreOp> stores;
    fn->walk([&](StoreOp op) { stores.push_back(op); });
    SmallVector<Value> free(once.begin(), once.end());
    for (StoreOp store : stores) {
      if (loopOf(store) || store->getBlock() != loops.back()->getBlock() ||
          !loops.back()->isBeforeInBlock(store))
        continue;
      FailureOr<TmaOutput> out = matchOutput(fn, store, free);
      if (failed(out))
        continue;
      llvm::erase(free, out->buffer);
      outputs.push_back(std::move(*out));
    }
  }

  // Everything is checked: the IR changes from here on.
  ++numKernels;
  IRRewriter rewriter(ctx);
  Block &entry = fn.getFunctionBody().front();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  flash::FlashDialect::ParamAttrHelper paramAttr(ctx);
  // One tensor map per (tensor, box).
  std::map<std::pair<std::string, SmallVector<int64_t>>, Value> maps;
  SmallVector<int64_t> gridConstants;
  auto mapOf = [&](const std::string &tensor, ArrayRef<int64_t> box) {
    Value &map = maps[{tensor, SmallVector<int64_t>(box)}];
    if (map)
      return map;
    unsigned index = fn.getNumArguments();
    NamedAttrList attrs;
    attrs.set(
        paramAttr.getName(),
        rewriter.getDictionaryAttr({
            rewriter.getNamedAttr("name",
                                  rewriter.getStringAttr(tensor + "_map")),
            rewriter.getNamedAttr("meaning",
                                  rewriter.getStringAttr(describeMap(tensor))),
            rewriter.getNamedAttr("tensor", rewriter.getStringAttr(tensor)),
            rewriter.getNamedAttr("box", rewriter.getDenseI64ArrayAttr(box)),
        }));
    attrs.set("llvm.align", rewriter.getI64IntegerAttr(64));
    if (failed(fn.insertArgument(index, ptr, rewriter.getDictionaryAttr(attrs),
                                 fn.getLoc())))
      return Value();
    gridConstants.push_back(index);
    map = entry.getArgument(index);
    return map;
  };
  // Coordinates are built once where their values are defined, so that the
  // copies of a full block and of a ragged one (which differed in `valid`
  // only) become the same op, and their branches fold.
  DominanceInfo dominance(fn);
  llvm::DenseMap<int64_t, Value> constants;
  auto atEntry = [&](OpFoldResult ofr) -> Value {
    if (auto v = dyn_cast<Value>(ofr))
      return v;
    Value &c = constants[*getConstantIntValue(ofr)];
    if (!c) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(&entry);
      c = arith::ConstantIndexOp::create(rewriter, fn.getLoc(),
                                         *getConstantIntValue(ofr));
    }
    return c;
  };
  Value zero = atEntry(rewriter.getIndexAttr(0));
  llvm::DenseMap<std::pair<Value, Value>, Value> rows;
  auto rowOf = [&](Value origin, Value row) {
    if (isConstantIntValue(origin, 0))
      return row;
    Value &sum = rows[{origin, row}];
    if (sum)
      return sum;
    OpBuilder::InsertionGuard guard(rewriter);
    Value later = row;
    if (Operation *def = row.getDefiningOp())
      if (!dominance.properlyDominates(origin, def))
        later = origin;
    if (!later.getDefiningOp() && later == origin)
      later = row;
    rewriter.setInsertionPointAfterValue(later);
    sum = arith::AddIOp::create(rewriter, later.getLoc(), origin, row);
    return sum;
  };
  for (TmaCopy &t : tma) {
    Value map = mapOf(t.tensor, t.box);
    if (!map)
      return fn.emitError("flash-tile-use-tma: could not add a tensor map "
                          "argument");
    rewriter.setInsertionPoint(t.op);
    Location loc = t.op.getLoc();
    SmallVector<Value> coordinates = {
        zero, rowOf(atEntry(t.origin[2]), t.op.getRow()), atEntry(t.origin[1]),
        atEntry(t.origin[0])};
    t.load = TmaLoadOp::create(rewriter, loc, map, coordinates,
                               t.op.getBuffer(), t.op.getStage(), t.box);
    rewriter.eraseOp(t.op);
    t.op = {};
    ++numCopies;
  }
  // The output through its buffer: every thread writes its values, then
  // the first thread stores the stage by TMA.
  for (TmaOutput &out : outputs) {
    Value map = mapOf("out", out.box);
    if (!map)
      return fn.emitError("flash-tile-use-tma: could not add a tensor map "
                          "argument");
    rewriter.setInsertionPoint(out.op);
    Location loc = out.op.getLoc();
    Value row = arith::AddIOp::create(rewriter, loc, atEntry(out.origin[2]),
                                      out.op.getRow());
    Value buffer = out.buffer;
    if (out.view) {
      auto type = cast<SharedType>(buffer.getType());
      TileType tile = out.op.getValue().getType();
      buffer = ViewOp::create(
          rewriter, loc,
          SharedType::get(ctx, {1, type.getRows(), tile.getShape()[1]},
                          type.getElementType(), type.getLayout()),
          buffer);
    }
    LocalStoreOp::create(rewriter, loc, out.op.getValue(), buffer, zero);
    TmaStoreOp::create(
        rewriter, loc, buffer, zero, map,
        ValueRange{zero, row, atEntry(out.origin[1]), atEntry(out.origin[0])},
        out.box);
    rewriter.eraseOp(out.op);
    ++numStores;
  }
  flash::FlashDialect::GridConstantsAttrHelper gridConstantsAttr(ctx);
  if (DenseI64ArrayAttr have = gridConstantsAttr.getAttr(fn))
    gridConstants.insert(gridConstants.begin(), have.asArrayRef().begin(),
                         have.asArrayRef().end());
  gridConstantsAttr.setAttr(fn, rewriter.getDenseI64ArrayAttr(gridConstants));

  // The KV loops carry each stage's next parity, one bit per stage; each
  // ring buffer's first read of an iteration waits for its stage.
  Type i32 = rewriter.getI32Type();
  Value phases;
  for (auto [i, loop] : llvm::enumerate(loops)) {
    LoopReads &r = reads[i];
    if (r.first.empty())
      continue;
    if (!phases) {
      rewriter.setInsertionPoint(loops.front());
      phases = arith::ConstantIntOp::create(rewriter, loop.getLoc(), i32, 0);
    }
    unsigned position = loop.getNumRegionIterArgs();
    unsigned stageArg = cast<BlockArgument>(r.stage).getArgNumber();
    rewriter.setInsertionPoint(loop);
    auto grown = loop.replaceWithAdditionalYields(
        rewriter, phases, /*replaceInitOperandUsesInLoop=*/false,
        [](OpBuilder &, Location, ArrayRef<BlockArgument> args) {
          return SmallVector<Value>(args.begin(), args.end());
        });
    if (failed(grown))
      return loop.emitOpError("could not carry the stages' phases");
    auto newLoop = cast<scf::ForOp>(grown->getOperation());
    kvLoop.setAttr(newLoop, rewriter.getUnitAttr());
    Block *body = newLoop.getBody();
    Value stage = body->getArgument(stageArg);
    Value carried = newLoop.getRegionIterArgs()[position];
    Location loc = newLoop.getLoc();
    rewriter.setInsertionPointToStart(body);
    Value bit = stagePhaseBit(rewriter, loc, stage);
    Value parity = stagePhaseParity(rewriter, loc, carried, bit);
    for (auto [buffer, at] : r.first) {
      rewriter.setInsertionPoint(at);
      StageWaitOp::create(rewriter, at->getLoc(), buffer, stage, parity);
    }
    auto yield = cast<scf::YieldOp>(body->getTerminator());
    rewriter.setInsertionPoint(yield);
    yield->setOperand(position, flipStagePhase(rewriter, loc, carried, bit));
    phases = newLoop.getResults()[position];
  }

  // Waits: a KV loop's becomes a barrier; one before the loops waits for
  // the buffers filled once before it.
  llvm::SmallPtrSet<Value, 2> onceWaited;
  for (AsyncWaitOp wait : waits) {
    rewriter.setInsertionPoint(wait);
    Location loc = wait.getLoc();
    if (loopOf(wait)) {
      rewriter.replaceOpWithNewOp<BarrierOp>(wait);
      continue;
    }
    bool waited = false;
    for (TmaCopy &t : tma) {
      Value buffer = t.load.getBuffer();
      if (!once.contains(buffer) || onceWaited.contains(buffer) ||
          t.load->getBlock() != wait->getBlock() ||
          !t.load->isBeforeInBlock(wait))
        continue;
      StageWaitOp::create(
          rewriter, loc, buffer, t.load.getStage(),
          arith::ConstantIntOp::create(rewriter, loc, rewriter.getI1Type(), 0));
      onceWaited.insert(buffer);
      waited = true;
    }
    if (!waited)
      BarrierOp::create(rewriter, loc);
    rewriter.eraseOp(wait);
  }
  for (AsyncCommitOp commit : commits)
    rewriter.eraseOp(commit);

  // A branch between copies that are now the same is no branch.
  SmallVector<scf::IfOp> ifs;
  fn->walk([&](scf::IfOp op) { ifs.push_back(op); });
  for (scf::IfOp op : ifs) {
    if (op.getNumResults() != 0 || op.getElseRegion().empty())
      continue;
    Block *thenBlock = op.thenBlock(), *elseBlock = op.elseBlock();
    // The rows the cp.async copies counted are left unused.
    for (Block *block : {thenBlock, elseBlock})
      for (Operation &inner : llvm::make_early_inc_range(
               llvm::reverse(block->without_terminator())))
        if (isOpTriviallyDead(&inner))
          rewriter.eraseOp(&inner);
    if (thenBlock->getOperations().size() !=
            elseBlock->getOperations().size() ||
        !llvm::all_of(llvm::zip(thenBlock->without_terminator(),
                                elseBlock->without_terminator()),
                      [](auto pair) {
                        auto &[a, b] = pair;
                        return isa<TmaLoadOp>(a) &&
                               OperationEquivalence::isEquivalentTo(
                                   &a, &b,
                                   OperationEquivalence::IgnoreLocations);
                      }))
      continue;
    for (Operation &inner :
         llvm::make_early_inc_range(thenBlock->without_terminator()))
      inner.moveBefore(op);
    rewriter.eraseOp(op);
    ++numFoldedBranches;
  }
  return success();
}

} // namespace
