//===- FlashTileOps.cpp - flash_tile operations ---------------------------===//
//
// Verifiers and folders of the flash_tile operations.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"
#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "flashc/Core/GPUSchedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::flash_tile;

#define GET_OP_CLASSES
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.cpp.inc"

/// Whether every tile among `types` has its layout: an op whose tiles have
/// none yet (flash-to-tile's output, before flash-tile-assign-layouts)
/// checks shapes and element types only.
static bool allHaveLayouts(std::initializer_list<TileType> types) {
  return llvm::all_of(types, [](TileType t) { return t.hasLayout(); });
}

/// `shape` without its last dimension: what reducing a tile without a
/// layout along its rows leaves (a value per row).
static SmallVector<int64_t> dropLast(ArrayRef<int64_t> shape) {
  return llvm::to_vector(shape.drop_back());
}

/// Checks that a global matrix has `columns` static columns of
/// `elementType` (with `atMost`, 1 to `columns`: a tile whose last columns
/// are padding) and, when it is 3-D (groups of rows), a static number of
/// groups that divides the tile's `rows`; `role` names it in the messages.
static LogicalResult verifyGlobalMatrix(Operation *op, MemRefType matrix,
                                        StringRef role, int64_t rows,
                                        int64_t columns, Type elementType,
                                        bool atMost = false,
                                        Value validGroups = Value()) {
  if (matrix.getElementType() != elementType)
    return op->emitOpError()
           << "copies " << elementType << " elements; the " << role
           << " holds " << matrix.getElementType();
  int64_t last = matrix.getRank() - 1;
  int64_t have = matrix.getDimSize(last);
  if (matrix.isDynamicDim(last) ||
      (atMost ? have < 1 || have > columns : have != columns))
    return op->emitOpError()
           << "needs a " << role << " of " << (atMost ? "1 to " : "")
           << columns << " static columns, as the tile has; it has "
           << (matrix.isDynamicDim(last) ? std::string("?")
                                         : std::to_string(have));
  if (matrix.getRank() == 3) {
    int64_t groups = matrix.getDimSize(0);
    if (ShapedType::isDynamic(groups) || groups < 1 || groups > rows)
      return op->emitOpError()
             << "packs the rows of a " << role << " of "
             << (ShapedType::isDynamic(groups) ? std::string("?")
                                               : std::to_string(groups))
             << " groups into " << rows
             << " tile rows; the groups must be static and at most the rows";
    // Rows past the last group's (rows / groups each) are padding, which
    // only a count of valid groups keeps from reading or writing past
    // the matrix.
    if (rows % groups != 0) {
      APInt valid;
      bool constant =
          validGroups && matchPattern(validGroups, m_ConstantInt(&valid));
      if (!validGroups)
        return op->emitOpError()
               << "packs the rows of a " << role << " of " << groups
               << " groups into " << rows << " tile rows, "
               << rows - rows % groups
               << " of them the groups'; the others need a count of valid "
                  "groups (`groups`)";
      if (constant && valid.getSExtValue() > groups)
        return op->emitOpError()
               << "counts " << valid.getSExtValue() << " valid groups of a "
               << role << " of " << groups << "; its padding rows would be "
               << (isa<StoreOp>(op) ? "written" : "read");
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AllocOp
//===----------------------------------------------------------------------===//

LogicalResult AllocOp::verify() {
  if (std::optional<int64_t> offset = getOffset())
    if (*offset < 0 || *offset % 16 != 0)
      return emitOpError() << "offset " << *offset
                           << " is not a non-negative multiple of 16 bytes";
  return success();
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

LogicalResult ViewOp::verify() {
  SharedType source = getSource().getType(), result = getResult().getType();
  if (source.getElementType() != result.getElementType())
    return emitOpError() << "views a buffer of " << source.getElementType()
                         << " as one of " << result.getElementType();
  if (source.getStages() != 1 || result.getStages() != 1)
    return emitOpError() << "views buffers of one stage; the source has "
                         << source.getStages() << " and the view "
                         << result.getStages();
  if (source.getRows() != result.getRows())
    return emitOpError() << "views the " << source.getRows()
                         << " rows of its source as " << result.getRows();
  if (result.getColumns() > source.getColumns())
    return emitOpError() << "views " << result.getColumns()
                         << " columns of a source of " << source.getColumns();
  if (source.getLayout() != result.getLayout()) {
    auto describe = [](SwizzledLayoutAttr layout) {
      std::string text = "none";
      if (layout) {
        text.clear();
        llvm::raw_string_ostream os(text);
        os << layout;
      }
      return text;
    };
    return emitOpError() << "has the placement " << describe(result.getLayout())
                         << ", not its source's "
                         << describe(source.getLayout());
  }
  // The first columns of placed rows are rows of their own only where the
  // rows are panels, one after another.
  SwizzledLayoutAttr layout = source.getLayout();
  if (layout && result.getColumns() < source.getColumns() && !layout.getPanel())
    return emitOpError()
           << "views the first " << result.getColumns() << " of "
           << source.getColumns()
           << " columns of a buffer placed without panels, whose rows "
              "these are not";
  return success();
}

//===----------------------------------------------------------------------===//
// AsyncCopyOp
//===----------------------------------------------------------------------===//

LogicalResult AsyncCopyOp::verify() {
  SharedType buffer = getBuffer().getType();
  Type element = buffer.getElementType();
  if (failed(verifyGlobalMatrix(*this, getSource().getType(), "source",
                                buffer.getRows(), buffer.getColumns(), element,
                                /*atMost=*/true, getGroups())))
    return failure();
  if (getGroups() && getSource().getType().getRank() != 3)
    return emitOpError() << "counts valid groups of a 3-D source; the "
                            "source is "
                         << getSource().getType();
  int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
  bool hasAlignment = getAlignment().has_value();
  int64_t alignment = getAlignment().value_or(0);
  if (hasAlignment && (alignment < elementBytes || alignment > 16 ||
                       !llvm::isPowerOf2_64(alignment)))
    return emitOpError() << "alignment " << alignment
                         << " is not a power of two from the element's "
                         << elementBytes << " bytes to 16";
  // Without a layout, flash-tile-assign-layouts spreads the copy.
  BlockedLayoutAttr layout = getLayoutAttr();
  if (!layout)
    return success();
  if (layout.getSize().size() != 2 || layout.getSize()[0] != 1)
    return emitOpError() << "copies runs within one row: its layout's size "
                            "is [1, n]";
  int64_t run = layout.getSize()[1];
  int64_t runBytes = run * elementBytes;
  if (hasAlignment && run != 1 && runBytes > alignment)
    return emitOpError() << "copies runs of " << runBytes
                         << " bytes from a source aligned to " << alignment;
  if (run != 1 && runBytes != 4 && runBytes != 8 && runBytes != 16)
    return emitOpError() << "copies runs of one element or of 4, 8 or 16 "
                            "bytes; a run of "
                         << run << " x " << element << " is " << runBytes;
  int64_t sourceColumns = getSource().getType().getShape().back();
  if (sourceColumns % run != 0)
    return emitOpError() << "copies runs of " << run
                         << " elements, which do not divide the source's "
                         << sourceColumns << " columns";
  if (buffer.hasLayout() && run > buffer.getLayout().getVector())
    return emitOpError() << "copies runs of " << run
                         << " elements, longer than the buffer's swizzled "
                            "chunks of "
                         << buffer.getLayout().getVector();
  return layout.verifyShape([&] { return emitOpError(); },
                            {buffer.getRows(), buffer.getColumns()});
}

//===----------------------------------------------------------------------===//
// TmaLoadOp
//===----------------------------------------------------------------------===//

/// The rules a TMA copy's box and buffer follow, load or store.
static LogicalResult verifyTmaBox(Operation *op, SharedType buffer,
                                  ArrayRef<int64_t> box,
                                  size_t numCoordinates) {
  auto emitOpError = [&]() { return op->emitOpError(); };
  if (box.empty() || box.size() > 5)
    return emitOpError() << "copies a box of 1 to 5 dimensions, not "
                         << box.size();
  if (numCoordinates != box.size())
    return emitOpError() << "addresses a box of " << box.size()
                         << " dimensions with " << numCoordinates
                         << " coordinates";
  for (int64_t d : box)
    if (d < 1 || d > 256)
      return emitOpError() << "has a box dimension of " << d
                           << "; a TMA box spans 1 to 256 elements a "
                              "dimension";
  Type element = buffer.getElementType();
  if (!element.isF16() && !element.isBF16())
    return emitOpError() << "copies f16 or bf16 elements, not " << element;
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  int64_t rowBytes = box[0] * bytes;
  if (flashc::getWarpgroupSwizzleBytes(rowBytes) != rowBytes)
    return emitOpError() << "copies boxes of rows of 32, 64 or 128 bytes (a "
                            "swizzle's row); a row of "
                         << box[0] << " x " << element << " is " << rowBytes;
  int64_t rows = 1;
  for (int64_t d : box.drop_front())
    rows *= d;
  // A box of G groups of a stage's rows that G does not divide moves the
  // groups' rows, floor(R / G) each; the rows past them are padding.
  bool groupsOfPaddedStage =
      box.size() >= 3 && box[2] > 1 && buffer.getRows() % box[2] != 0 &&
      box[1] == buffer.getRows() / box[2] && rows == box[1] * box[2];
  if (rows != buffer.getRows() && !groupsOfPaddedStage)
    return emitOpError() << "copies boxes of " << rows
                         << " rows into stages of " << buffer.getRows();
  if (buffer.getColumns() % box[0] != 0)
    return emitOpError() << "copies boxes of " << box[0]
                         << " columns, which do not divide the stage's "
                         << buffer.getColumns();
  if (!buffer.hasLayout())
    return success();
  SwizzledLayoutAttr layout = buffer.getLayout();
  if (getWarpgroupSwizzleBytes(layout, buffer.getColumns(), bytes) != rowBytes)
    return emitOpError() << "fills a buffer of " << layout << ", not the "
                         << rowBytes
                         << "-byte swizzle of 16-byte chunks over 8 rows of "
                            "128 bytes, in rows of the "
                         << box[0] << " elements that the copy moves";
  return success();
}

LogicalResult TmaLoadOp::verify() {
  return verifyTmaBox(*this, getBuffer().getType(), getBox(),
                      getCoordinates().size());
}

//===----------------------------------------------------------------------===//
// TmaStoreOp
//===----------------------------------------------------------------------===//

LogicalResult TmaStoreOp::verify() {
  return verifyTmaBox(*this, getBuffer().getType(), getBox(),
                      getCoordinates().size());
}

//===----------------------------------------------------------------------===//
// LocalStoreOp
//===----------------------------------------------------------------------===//

LogicalResult LocalStoreOp::verify() {
  SharedType buffer = getBuffer().getType();
  TileType value = getValue().getType();
  if (value.getElementType() != buffer.getElementType())
    return emitOpError() << "writes a tile of " << value.getElementType()
                         << " into a buffer of " << buffer.getElementType();
  if (value.getRank() != 2 || value.getShape()[0] != buffer.getRows() ||
      value.getShape()[1] != buffer.getColumns())
    return emitOpError() << "writes a tile of " << formatShape(value.getShape())
                         << " into stages of "
                         << formatShape(
                                {buffer.getRows(), buffer.getColumns()});
  return success();
}

//===----------------------------------------------------------------------===//
// WarpgroupWaitOp
//===----------------------------------------------------------------------===//

LogicalResult WarpgroupWaitOp::verify() {
  auto start = getPendingResult().getDefiningOp<WarpgroupMmaOp>();
  if (!start || !start.getAsync() || start->getBlock() != (*this)->getBlock())
    return emitOpError() << "waits for a value that is not the result of an "
                            "async flash_tile.warpgroup_mma in its block";
  // wgmma.wait_group N leaves the N most recent multiplies running: at
  // least N must have started after this one's.
  int64_t later = 0;
  for (Operation *op = start->getNextNode(); op != getOperation();
       op = op->getNextNode())
    op->walk([&](WarpgroupMmaOp mma) { later += mma.getAsync() ? 1 : 0; });
  if (later < static_cast<int64_t>(getPending()))
    return emitOpError() << "leaves " << getPending()
                         << " multiplies pending, but only " << later
                         << " started after the one it waits for";
  return success();
}

//===----------------------------------------------------------------------===//
// Warp specialisation: WarpSpecializeOp, StageAcquireOp, StageReleaseOp,
// TurnWaitOp, TurnPassOp
//===----------------------------------------------------------------------===//

LogicalResult WarpSpecializeOp::verify() {
  int64_t threads = getConsumerThreads();
  if (threads % flashc::kWarpgroupThreads)
    return emitOpError() << "has " << threads
                         << " consumer threads, not whole warpgroups of "
                         << flashc::kWarpgroupThreads;
  for (auto [name, registers] :
       {std::pair<StringRef, int64_t>{"producer", getProducerRegisters()},
        {"consumer", getConsumerRegisters()}})
    if (!flashc::isSetMaxRegisterCount(registers))
      return emitOpError() << "gives the " << name << " threads " << registers
                           << " registers; setmaxnreg sets a multiple of 8 "
                              "from "
                           << flashc::kMinSetMaxRegisters << " to "
                           << flashc::kMaxSetMaxRegisters;
  int64_t total = getProducerRegisters() * flashc::kWarpgroupThreads +
                  getConsumerRegisters() * threads;
  if (total > flashc::kRegistersPerSM)
    return emitOpError() << "allots " << total << " registers ("
                         << getProducerRegisters() << " x "
                         << flashc::kWarpgroupThreads << " producer and "
                         << getConsumerRegisters() << " x " << threads
                         << " consumer threads), more than an SM's "
                         << flashc::kRegistersPerSM;
  return success();
}

LogicalResult WarpSpecializeOp::verifyRegions() {
  WalkResult nested = getProducer().walk([&](Operation *op) {
    if (!isa<FlashTileDialect>(op->getDialect()) ||
        isa<TmaLoadOp, StageAcquireOp>(op))
      return WalkResult::advance();
    op->emitOpError() << "is in a producer region, which only copies "
                         "(flash_tile.tma_load) and waits for free stages "
                         "(flash_tile.stage_acquire)";
    return WalkResult::interrupt();
  });
  if (nested.wasInterrupted())
    return failure();
  WalkResult inner = getConsumers().walk([&](WarpSpecializeOp op) {
    op.emitOpError() << "is nested in another flash_tile.warp_specialize";
    return WalkResult::interrupt();
  });
  return failure(inner.wasInterrupted());
}

/// Whether `op` is in region `index` (0: producer, 1: consumers) of a
/// flash_tile.warp_specialize.
static bool isInSpecializedRegion(Operation *op, unsigned index) {
  auto specialize = op->getParentOfType<WarpSpecializeOp>();
  if (!specialize)
    return false;
  Region *region = &specialize->getRegion(index);
  return region->isAncestor(op->getParentRegion());
}

LogicalResult StageAcquireOp::verify() {
  if (!isInSpecializedRegion(*this, 0))
    return emitOpError() << "is not in the producer region of a "
                            "flash_tile.warp_specialize, whose consumers "
                            "release the stages it waits for";
  return success();
}

LogicalResult StageReleaseOp::verify() {
  if (!isInSpecializedRegion(*this, 1))
    return emitOpError() << "is not in the consumer region of a "
                            "flash_tile.warp_specialize, whose producer "
                            "waits for the stages it releases";
  return success();
}

LogicalResult TurnWaitOp::verify() {
  if (!isInSpecializedRegion(*this, 1))
    return emitOpError() << "is not in the consumer region of a "
                            "flash_tile.warp_specialize, whose warpgroups "
                            "take the turns";
  auto specialize = (*this)->getParentOfType<WarpSpecializeOp>();
  int64_t warpgroups =
      specialize.getConsumerThreads() / flashc::kWarpgroupThreads;
  if (warpgroups < 2)
    return emitOpError() << "takes turns among " << warpgroups
                         << " consumer warpgroup; turns need two or more";
  if (warpgroups > flashc::kNamedBarriers - flashc::kFirstTurnBarrierId)
    return emitOpError() << "takes turns among " << warpgroups
                         << " consumer warpgroups, more than the "
                         << flashc::kNamedBarriers - flashc::kFirstTurnBarrierId
                         << " named barriers left for them";
  for (Operation *op = (*this)->getNextNode(); op; op = op->getNextNode()) {
    if (isa<TurnPassOp>(op))
      return success();
    if (isa<TurnWaitOp>(op))
      return emitOpError() << "begins a turn that another "
                              "flash_tile.turn_wait begins again before its "
                              "flash_tile.turn_pass";
    // What never waits for another warpgroup: anything else (a barrier of
    // the consumers, a wait for a stage, a region holding either) could
    // wait for a warpgroup that waits for the turn.
    bool allowed = isa<WarpgroupMmaOp, WarpgroupWaitOp, StageReleaseOp>(op) ||
                   (op->getNumRegions() == 0 && isMemoryEffectFree(op));
    if (!allowed)
      return emitOpError()
             << "begins a turn that holds '" << op->getName()
             << "'; a turn holds only warpgroup MMAs, their waits, stage "
                "releases and ops without regions or memory effects, which "
                "never wait for a warpgroup waiting for the turn";
  }
  return emitOpError() << "begins a turn that no flash_tile.turn_pass after "
                          "it in its block ends";
}

LogicalResult TurnPassOp::verify() {
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode()) {
    if (isa<TurnWaitOp>(op))
      return success();
    if (isa<TurnPassOp>(op))
      break;
  }
  return emitOpError() << "ends no turn: no flash_tile.turn_wait before it "
                          "in its block since the last flash_tile.turn_pass";
}

//===----------------------------------------------------------------------===//
// LocalLoadOp
//===----------------------------------------------------------------------===//

LogicalResult LocalLoadOp::verify() {
  SharedType buffer = getBuffer().getType();
  TileType result = getResult().getType();
  if (result.getElementType() != buffer.getElementType())
    return emitOpError() << "reads " << buffer.getElementType()
                         << " elements into a tile of "
                         << result.getElementType();
  SmallVector<int64_t> expected = {buffer.getRows(), buffer.getColumns()};
  if (getTranspose())
    std::swap(expected[0], expected[1]);
  if (result.getRank() == 3) {
    // A batch of B matrices from B blocks of the stage's rows.
    int64_t batch = result.getShape()[0];
    int64_t &split = getTranspose() ? expected[1] : expected[0];
    if (split % batch != 0)
      return emitOpError() << "reads a batch of " << batch
                           << " matrices from a stage of "
                           << buffer.getRows() << " rows, which "
                           << batch << " does not divide";
    split /= batch;
    expected.insert(expected.begin(), batch);
  }
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "reads a " << (getTranspose() ? "transposed " : "")
                         << "stage of " << buffer.getRows() << "x"
                         << buffer.getColumns() << " into a tile of "
                         << formatShape(expected) << ", not "
                         << formatShape(result.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// ConvertLayoutOp
//===----------------------------------------------------------------------===//

LogicalResult ConvertLayoutOp::verify() {
  TileType source = getSource().getType();
  TileType result = getResult().getType();
  if (source.getShape() != result.getShape() ||
      source.getElementType() != result.getElementType())
    return emitOpError() << "changes only the layout: " << source
                         << " and " << result
                         << " differ in shape or element type";
  return success();
}

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor) {
  if (getSource().getType() == getResult().getType())
    return getSource();
  // convert(convert(x)) to the layout x has is x.
  if (auto inner = getSource().getDefiningOp<ConvertLayoutOp>())
    if (inner.getSource().getType() == getResult().getType())
      return inner.getSource();
  return {};
}

//===----------------------------------------------------------------------===//
// MmaOp
//===----------------------------------------------------------------------===//

LogicalResult MmaOp::verify() {
  TileType a = getA().getType(), b = getB().getType(), acc = getAcc().getType();
  if (!allHaveLayouts({a, b, acc}))
    return verifyShapes();
  auto mma = dyn_cast<MmaLayoutAttr>(acc.getLayout());
  if (!mma)
    return emitOpError() << "accumulates in a #flash_tile.mma layout, not "
                         << acc.getLayout();
  auto aLayout = dyn_cast<OperandLayoutAttr>(a.getLayout());
  if (!aLayout || aLayout.getKind() != OperandKind::A ||
      aLayout.getParent() != mma)
    return emitOpError() << "needs A in #flash_tile.operand<a, " << mma
                         << ">, not " << a.getLayout();
  auto bLayout = dyn_cast<OperandLayoutAttr>(b.getLayout());
  if (!bLayout || bLayout.getKind() != OperandKind::B ||
      bLayout.getParent() != mma)
    return emitOpError() << "needs B in #flash_tile.operand<b, " << mma
                         << ">, not " << b.getLayout();
  return verifyShapes();
}

LogicalResult MmaOp::verifyShapes() {
  TileType a = getA().getType(), b = getB().getType(), acc = getAcc().getType();
  ArrayRef<int64_t> as = a.getShape(), bs = b.getShape(), cs = acc.getShape();
  // Without layouts, the ranks and a batch's extents are checked here (a
  // batched layout checks them otherwise).
  if (as.size() != cs.size() || bs.size() != cs.size() || cs.size() < 2 ||
      (cs.size() == 3 && (as[0] != cs[0] || bs[0] != cs[0])))
    return emitOpError() << "multiplies " << formatShape(as) << " by "
                         << formatShape(bs) << " into " << formatShape(cs)
                         << ": the tiles are matrices, or batches of as "
                            "many matrices each";
  // A batch's leading extents are equal (the layouts check them).
  auto m = [](ArrayRef<int64_t> shape) { return shape.take_back(2); };
  if (m(as)[1] != m(bs)[0] || m(as)[0] != m(cs)[0] || m(bs)[1] != m(cs)[1])
    return emitOpError() << "multiplies " << formatShape(as) << " by "
                         << formatShape(bs) << " into " << formatShape(cs)
                         << ": the shapes do not chain (M x K, K x N, M x N)";
  Type operand = a.getElementType();
  if (operand != b.getElementType() || !(operand.isF16() || operand.isBF16()))
    return emitOpError() << "multiplies f16 or bf16 operands of one type, "
                            "not "
                         << operand << " and " << b.getElementType();
  if (!acc.getElementType().isF32())
    return emitOpError() << "accumulates in f32, not " << acc.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// WarpgroupMmaOp
//===----------------------------------------------------------------------===//

SmallVector<int64_t, 3> WarpgroupMmaOp::getMNK() {
  ArrayRef<int64_t> acc = getAcc().getType().getShape();
  int64_t k = isSharedA() ? cast<SharedType>(getA().getType()).getColumns()
                          : cast<TileType>(getA().getType()).getShape().back();
  return {acc.front(), acc.back(), k};
}

/// Checks that `buffer` is placed as the tensor cores read it: rows of a
/// 128-, 64- or 32-byte swizzle (16-byte chunks swizzled over 8 rows of 128
/// bytes), wider rows in panels of the swizzle's row. A buffer without its
/// placement yet is checked for its rows only.
static LogicalResult verifyWarpgroupBuffer(WarpgroupMmaOp op, SharedType buffer,
                                           StringRef role) {
  int64_t bytes = buffer.getElementType().getIntOrFloatBitWidth() / 8;
  if (!hasWarpgroupRows(buffer.getColumns(), bytes))
    return op.emitOpError()
           << "reads " << role
           << " from rows of whole rows of the tensor cores' 128-, 64- or "
              "32-byte swizzle, not "
           << buffer.getColumns() << " x " << bytes << " bytes";
  // Whole swizzle rows read as they are lie a swizzle row apart: one each,
  // or panels of them (padding would widen the pitch).
  SwizzledLayoutAttr layout = buffer.getLayout();
  if (layout && !getWarpgroupSwizzleBytes(layout, buffer.getColumns(), bytes))
    return op.emitOpError() << "reads " << role
                            << " swizzled in 16-byte chunks over 8 rows of "
                               "128 bytes without padding, in panels of the "
                               "swizzle's row where rows are wider, not "
                            << layout;
  return success();
}

LogicalResult WarpgroupMmaOp::verify() {
  if (getAsync()) {
    Operation *user =
        getResult().hasOneUse() ? *getResult().getUsers().begin() : nullptr;
    if (!user || !isa<WarpgroupWaitOp>(user) ||
        user->getBlock() != (*this)->getBlock())
      return emitOpError() << "is async: its one use is the "
                              "flash_tile.warpgroup_wait of its result, in "
                              "its block";
  }
  TileType acc = getAcc().getType();
  auto b = cast<SharedType>(getB().getType());
  auto aTile = dyn_cast<TileType>(getA().getType());
  auto aShared = dyn_cast<SharedType>(getA().getType());
  if (static_cast<bool>(aShared) != static_cast<bool>(getAStage()))
    return emitOpError() << (aShared ? "reads A from a shared buffer, which "
                                       "needs a stage"
                                     : "takes A from registers, which have "
                                       "no stage");
  if (acc.getRank() != 2 || (aTile && aTile.getRank() != 2))
    return emitOpError() << "multiplies matrices: the accumulator is "
                         << formatShape(acc.getShape())
                         << (aTile ? " and A " : "")
                         << (aTile ? formatShape(aTile.getShape()) : "");
  int64_t m = acc.getShape()[0], n = acc.getShape()[1];
  SmallVector<int64_t> as =
      aShared ? SmallVector<int64_t>{aShared.getRows(), aShared.getColumns()}
              : llvm::to_vector(aTile.getShape());
  SmallVector<int64_t> bs = {b.getRows(), b.getColumns()};
  if (getTransposeB())
    std::swap(bs[0], bs[1]);
  if (as[0] != m || bs[1] != n || as[1] != bs[0])
    return emitOpError() << "multiplies " << formatShape(as) << " by "
                         << formatShape(bs) << " into " << formatShape({m, n})
                         << ": the shapes do not chain (M x K, K x N, M x N)";
  int64_t k = as[1];
  if (!fitsInstruction(m, n, k))
    return emitOpError() << "multiplies " << m << " x " << k << " by " << k
                         << " x " << n
                         << ": a warpgroup's instruction is m64nNk16, so M is "
                            "a multiple of 64, N of 8 up to 256, K of 16";
  Type operand = aShared ? aShared.getElementType() : aTile.getElementType();
  if (operand != b.getElementType() || !(operand.isF16() || operand.isBF16()))
    return emitOpError() << "multiplies f16 or bf16 operands of one type, not "
                         << operand << " and " << b.getElementType();
  if (!acc.getElementType().isF32())
    return emitOpError() << "accumulates in f32, not " << acc.getElementType();
  if (aShared && failed(verifyWarpgroupBuffer(*this, aShared, "A")))
    return failure();
  if (failed(verifyWarpgroupBuffer(*this, b, "B")))
    return failure();

  if (!acc.hasLayout() && !(aTile && aTile.hasLayout()))
    return success();
  auto mma = dyn_cast_or_null<MmaLayoutAttr>(acc.getLayout());
  if (!mma || mma.isBatched() || mma.getInstr()[2] != 16 ||
      mma.getWarps()[1] != 1 || mma.getWarps()[0] % 4 != 0 ||
      m != 16 * mma.getWarps()[0])
    return emitOpError()
           << "accumulates in a #flash_tile.mma layout of 16 rows per warp, "
              "whole warpgroups of row warps and one column warp, not "
           << acc.getLayout() << " for " << m << " rows";
  if (aTile) {
    auto aLayout = dyn_cast_or_null<OperandLayoutAttr>(aTile.getLayout());
    if (!aLayout || aLayout.getKind() != OperandKind::A ||
        aLayout.getParent() != mma)
      return emitOpError() << "needs A in #flash_tile.operand<a, " << mma
                           << ">, not " << aTile.getLayout();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  TileType source = getSource().getType();
  TileType result = getResult().getType();
  if (source.getElementType() != result.getElementType())
    return emitOpError() << "keeps the element type " << source.getElementType()
                         << ", not " << result.getElementType();
  if (!allHaveLayouts({source, result})) {
    // Without layouts, along the last dimension (a value per row).
    if (source.getRank() < 2 ||
        result.getShape() != ArrayRef<int64_t>(dropLast(source.getShape())))
      return emitOpError() << "reduces a tile without a layout along its "
                              "last dimension, "
                           << formatShape(source.getShape()) << " to "
                           << formatShape(dropLast(source.getShape()))
                           << ", not " << formatShape(result.getShape());
    return success();
  }
  auto slice = dyn_cast<SliceLayoutAttr>(result.getLayout());
  if (!slice || slice.getParent() != source.getLayout())
    return emitOpError() << "leaves a #flash_tile.slice of the source's "
                            "layout "
                         << source.getLayout() << ", not "
                         << result.getLayout();
  SmallVector<int64_t> kept = llvm::to_vector(source.getShape());
  kept.erase(kept.begin() + slice.getDim());
  if (result.getShape() != ArrayRef<int64_t>(kept))
    return emitOpError() << "reduces dimension " << slice.getDim() << " of "
                         << formatShape(source.getShape()) << " to "
                         << formatShape(kept) << ", not "
                         << formatShape(result.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// FoldOp
//===----------------------------------------------------------------------===//

LogicalResult FoldOp::verify() {
  TileType source = getSource().getType();
  TileType result = getResult().getType();
  if (source.getElementType() != result.getElementType() ||
      source.getLayout() != result.getLayout())
    return emitOpError() << "keeps the element type and the layout: "
                         << source << " and " << result << " differ";
  ArrayRef<int64_t> from = source.getShape(), to = result.getShape();
  if (from.size() < 2 || from.size() != to.size() ||
      from.drop_back() != to.drop_back() || from.back() % to.back() != 0)
    return emitOpError() << "folds the columns of a tile into a tile "
                            "of its rows and a divisor of its columns, not "
                         << formatShape(from) << " into " << formatShape(to);
  return success();
}

//===----------------------------------------------------------------------===//
// RescaleOp
//===----------------------------------------------------------------------===//

LogicalResult RescaleOp::verify() {
  TileType acc = getAcc().getType();
  TileType factor = getFactor().getType();
  if (acc.getRank() < 2)
    return emitOpError() << "scales the rows of a matrix or a batch of "
                            "them, not a tile of "
                         << formatShape(acc.getShape());
  if (!acc.getElementType().isF32() || !factor.getElementType().isF32())
    return emitOpError() << "scales f32 accumulators by f32 factors, not "
                         << acc.getElementType() << " by "
                         << factor.getElementType();
  if (factor.getShape() != ArrayRef<int64_t>(dropLast(acc.getShape())))
    return emitOpError() << "takes a factor per row of "
                         << formatShape(acc.getShape()) << ", a tile of "
                         << formatShape(dropLast(acc.getShape())) << ", not "
                         << formatShape(factor.getShape());
  if (!allHaveLayouts({acc, factor}))
    return success();
  auto slice = dyn_cast<SliceLayoutAttr>(factor.getLayout());
  if (!slice || slice.getParent() != acc.getLayout() ||
      slice.getDim() != acc.getRank() - 1)
    return emitOpError() << "takes its factors in the #flash_tile.slice of "
                            "the accumulator's layout without its columns, "
                            "not "
                         << factor.getLayout();
  return success();
}

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  TileType source = getSource().getType();
  TileType result = getResult().getType();
  if (source.getElementType() != result.getElementType() ||
      result.getRank() != source.getRank() + 1 ||
      result.getShape().drop_front() != source.getShape())
    return emitOpError() << "makes a batch of copies of " << source
                         << ": a tile of its element type and of shape "
                            "Bx"
                         << formatShape(source.getShape()) << ", not "
                         << result;
  if (!allHaveLayouts({source, result}))
    return success();
  auto from = source.getLayoutInterface(), to = result.getLayoutInterface();
  if (from.getNumWarps() != to.getNumWarps())
    return emitOpError() << "keeps the tile on its " << from.getNumWarps()
                         << " warps; the result's layout spreads it over "
                         << to.getNumWarps();
  return success();
}

//===----------------------------------------------------------------------===//
// BatchReduceOp
//===----------------------------------------------------------------------===//

LogicalResult BatchReduceOp::verify() {
  TileType source = getSource().getType();
  TileType result = getResult().getType();
  auto batched = [](Attribute layout) -> bool {
    if (auto mma = dyn_cast<MmaLayoutAttr>(layout))
      return mma.isBatched();
    if (auto slice = dyn_cast<SliceLayoutAttr>(layout))
      return slice.isBatched();
    return false;
  };
  bool assigned = allHaveLayouts({source, result});
  if (assigned && !batched(source.getLayout()))
    return emitOpError() << "reduces a batched accumulator or slice, not a "
                            "tile in "
                         << source.getLayout();
  if (source.getElementType() != result.getElementType() ||
      result.getShape() != source.getShape().drop_front())
    return emitOpError() << "reduces " << source
                         << " over its batch: the result is a tile of its "
                            "element type and of shape "
                         << formatShape(source.getShape().drop_front())
                         << ", not " << result;
  if (!result.getElementType().isF32())
    return emitOpError() << "reduces f32 tiles, not "
                         << result.getElementType();
  if (assigned) {
    auto from = source.getLayoutInterface(), to = result.getLayoutInterface();
    if (from.getNumWarps() != to.getNumWarps())
      return emitOpError() << "keeps the tile on its " << from.getNumWarps()
                           << " warps; the result's layout spreads it over "
                           << to.getNumWarps();
  }
  int64_t bytes = 4;
  for (int64_t extent : source.getShape())
    bytes *= extent;
  SharedType scratch = getScratch().getType();
  if (scratch.getSizeInBytes() < bytes)
    return emitOpError() << "needs " << bytes
                         << " bytes of scratch for the batch; the buffer "
                            "has "
                         << scratch.getSizeInBytes();
  return success();
}

//===----------------------------------------------------------------------===//
// MapOp
//===----------------------------------------------------------------------===//

LogicalResult MapOp::verify() {
  TileType result = getResult().getType();
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = cast<TileType>(input.getType());
    if (type.getShape() == result.getShape() &&
        type.getLayout() == result.getLayout())
      continue;
    // Without layouts, a value per row broadcasts along the last dimension.
    if (!allHaveLayouts({type, result})) {
      if (type.getShape() == result.getShape() ||
          type.getShape() == ArrayRef<int64_t>(dropLast(result.getShape())))
        continue;
      return emitOpError() << "input " << i << " (" << type
                           << ") has neither the result's shape nor its "
                              "shape without the last dimension";
    }
    auto slice = dyn_cast<SliceLayoutAttr>(type.getLayout());
    if (slice && slice.getParent() == result.getLayout()) {
      SmallVector<int64_t> kept = llvm::to_vector(result.getShape());
      kept.erase(kept.begin() + slice.getDim());
      if (type.getShape() == ArrayRef<int64_t>(kept))
        continue;
    }
    return emitOpError() << "input " << i << " (" << type
                         << ") has neither the result's shape and layout nor "
                            "is a slice of the result's layout that "
                            "broadcasts to it";
  }
  return success();
}

LogicalResult MapOp::verifyRegions() {
  Block &body = getBody().front();
  TileType result = getResult().getType();
  unsigned numIndices = getIndices() ? result.getRank() : 0;
  if (body.getNumArguments() != numIndices + getInputs().size())
    return emitOpError() << "'s region takes " << numIndices
                         << " indices and one element per input ("
                         << numIndices + getInputs().size()
                         << " arguments), not " << body.getNumArguments();
  for (unsigned i = 0; i < numIndices; ++i)
    if (!body.getArgument(i).getType().isIndex())
      return emitOpError() << "'s region takes the element's indices as "
                              "index arguments first; argument "
                           << i << " is " << body.getArgument(i).getType();
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    Type element = cast<TileType>(input.getType()).getElementType();
    Type arg = body.getArgument(numIndices + i).getType();
    if (arg != element)
      return emitOpError() << "'s region argument " << numIndices + i
                           << " is " << arg << "; input " << i << " holds "
                           << element;
  }
  auto yield = dyn_cast_or_null<YieldOp>(
      body.empty() ? nullptr : &body.back());
  if (!yield)
    return emitOpError() << "'s region ends with flash_tile.yield";
  if (yield.getValue().getType() != result.getElementType())
    return emitOpError() << "'s region yields "
                         << yield.getValue().getType()
                         << "; the result holds " << result.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// StoreOp
//===----------------------------------------------------------------------===//

/// Checks a load's or a store's group count (of a 3-D matrix only) and
/// alignment (a power of two, at least the element's bytes).
static LogicalResult verifyAccess(Operation *op, MemRefType matrix,
                                  Value groups,
                                  std::optional<int64_t> alignment,
                                  Type element) {
  if (groups && matrix.getRank() != 3)
    return op->emitOpError() << "counts valid groups of a 3-D matrix; the "
                                "matrix is "
                             << matrix;
  if (!alignment)
    return success();
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  if (*alignment < bytes || !llvm::isPowerOf2_64(*alignment))
    return op->emitOpError() << "alignment " << *alignment
                             << " is not a power of two of at least the "
                                "element's "
                             << bytes << " bytes";
  return success();
}

LogicalResult LoadOp::verify() {
  TileType result = getResult().getType();
  if (result.getRank() > 2)
    return emitOpError() << "reads a 1-D or 2-D tile, not "
                         << formatShape(result.getShape());
  // A 1-D tile is a column: one value per row.
  int64_t columns = result.getRank() == 2 ? result.getShape()[1] : 1;
  if (failed(verifyGlobalMatrix(
          *this, getSource().getType(), "source", result.getShape()[0], columns,
          result.getElementType(), /*atMost=*/true, getGroups())))
    return failure();
  // A clamped load reads row valid - 1 (group groups - 1) for the rows
  // past them: there must be one.
  if (getClamp())
    for (auto [what, bound] : {std::pair<StringRef, Value>{"valid", getValid()},
                               {"groups", getGroups()}}) {
      APInt c;
      if (bound && matchPattern(bound, m_ConstantInt(&c)) &&
          c.getSExtValue() < 1)
        return emitOpError()
               << "clamps its rows to the last of `" << what << "`, which is "
               << c.getSExtValue() << ": a clamped load needs at least 1";
    }
  return verifyAccess(*this, getSource().getType(), getGroups(),
                      getAlignment(), result.getElementType());
}

LogicalResult StoreOp::verify() {
  TileType value = getValue().getType();
  if (value.getRank() > 2)
    return emitOpError() << "writes a 1-D or 2-D tile, not "
                         << formatShape(value.getShape())
                         << " (reduce a batch first)";
  // A 1-D tile is a column: one value per row.
  int64_t columns = value.getRank() == 2 ? value.getShape()[1] : 1;
  if (failed(verifyGlobalMatrix(
          *this, getDest().getType(), "destination", value.getShape()[0],
          columns, value.getElementType(), /*atMost=*/true, getGroups())))
    return failure();
  return verifyAccess(*this, getDest().getType(), getGroups(), getAlignment(),
                      value.getElementType());
}
