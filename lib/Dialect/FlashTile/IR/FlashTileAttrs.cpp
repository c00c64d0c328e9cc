//===- FlashTileAttrs.cpp - flash_tile layouts ----------------------------===//
//
// Verifies the layout attributes of the flash_tile dialect and implements
// their interface: which tile shapes a layout holds, over how many warps,
// and how many elements each thread keeps.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"
#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::flash_tile;

#include "flashc/Dialect/FlashTile/IR/FlashTileAttrInterfaces.cpp.inc"
#include "flashc/Dialect/FlashTile/IR/FlashTileEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "flashc/Dialect/FlashTile/IR/FlashTileAttrs.cpp.inc"

void FlashTileDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "flashc/Dialect/FlashTile/IR/FlashTileAttrs.cpp.inc"
      >();
}

/// The warps of a CTA: 1024 threads.
static constexpr int64_t kMaxWarps = 32;
/// A thread's run of a blocked layout: far beyond any register budget.
static constexpr int64_t kMaxRun = 1 << 16;

/// Checks that the positive warp counts of layout `name` fit a CTA: their
/// product, computed without overflowing, is at most kMaxWarps.
static LogicalResult
verifyWarpsFitACTA(function_ref<InFlightDiagnostic()> emitError, StringRef name,
                   ArrayRef<int64_t> warps) {
  int64_t p = 1;
  for (int64_t w : warps) {
    p = w > kMaxWarps ? kMaxWarps + 1 : p * w;
    if (p > kMaxWarps)
      return emitError() << name << " spreads a tile over at most " << kMaxWarps
                         << " warps (1024 threads), not [" << warps << "]";
  }
  return success();
}

static int64_t product(ArrayRef<int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values)
    p *= v;
  return p;
}

/// Checks that `shape` is 2-D and that its extents are multiples of
/// `quanta`; `what` names the layout in the message.
static LogicalResult
verifyMultiples(function_ref<InFlightDiagnostic()> emitError,
                ArrayRef<int64_t> shape, ArrayRef<int64_t> quanta,
                StringRef what) {
  if (shape.size() != quanta.size())
    return emitError() << what << " holds " << quanta.size()
                       << "-D tiles, not a tile of " << formatShape(shape);
  for (auto [extent, quantum] : llvm::zip_equal(shape, quanta))
    if (extent % quantum != 0)
      return emitError() << what << " needs a tile whose extents are "
                         << "multiples of " << formatShape(quanta)
                         << ", not " << formatShape(shape);
  return success();
}

//===----------------------------------------------------------------------===//
// Batches
//===----------------------------------------------------------------------===//

/// The coordinates of a batched layout's value: warp w holds matrix
/// w mod B, as the layout's 2-D form `matrix` places it over warp w / B.
/// (The batch varies fastest: warps that hold one value of a 2-D tile
/// replicated over its column warps hold it in every matrix of the batch.)
static SmallVector<int64_t>
getBatchedCoordinates(LayoutAttrInterface matrix, ArrayRef<int64_t> shape,
                      int64_t thread, int64_t element) {
  int64_t batch = shape[0], warp = thread / 32, lane = thread % 32;
  SmallVector<int64_t> coords = {warp % batch};
  llvm::append_range(coords,
                     matrix.getCoordinates(shape.drop_front(),
                                           (warp / batch) * 32 + lane,
                                           element));
  return coords;
}

/// Checks the batch extent of a tile of a batched layout, then its matrix
/// shape against the 2-D form.
static LogicalResult
verifyBatchedShape(function_ref<InFlightDiagnostic()> emitError,
                   LayoutAttrInterface matrix, int64_t batch,
                   ArrayRef<int64_t> shape, StringRef what) {
  if (shape.empty() || shape[0] != batch)
    return emitError() << what << " holds a batch of " << batch
                       << " matrices, a tile of " << batch << "x..., not "
                       << formatShape(shape);
  return matrix.verifyShape(emitError, shape.drop_front());
}

//===----------------------------------------------------------------------===//
// MmaLayoutAttr
//===----------------------------------------------------------------------===//

LogicalResult MmaLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                    ArrayRef<int64_t> warps,
                                    ArrayRef<int64_t> instr) {
  if ((warps.size() != 2 && warps.size() != 3) ||
      llvm::any_of(warps, [](int64_t w) { return w < 1; }))
    return emitError() << "#flash_tile.mma needs two positive warp counts "
                          "(rows, columns), or three (batch, rows, columns), "
                          "not ["
                       << warps << "]";
  if (failed(verifyWarpsFitACTA(emitError, "#flash_tile.mma", warps)))
    return failure();
  if (instr.size() != 3 || instr[0] != 16 || instr[1] != 8 ||
      (instr[2] != 16 && instr[2] != 8))
    return emitError() << "#flash_tile.mma's instruction shape is [16, 8, "
                          "16] or [16, 8, 8], not ["
                       << instr << "]";
  return success();
}

MmaLayoutAttr MmaLayoutAttr::getMatrixLayout() const {
  if (!isBatched())
    return *this;
  return MmaLayoutAttr::get(getContext(), getMatrixWarps(), getInstr());
}

LogicalResult
MmaLayoutAttr::verifyShape(function_ref<InFlightDiagnostic()> emitError,
                           ArrayRef<int64_t> shape) const {
  if (isBatched())
    return verifyBatchedShape(emitError, getMatrixLayout(), getBatch(), shape,
                              "a batched #flash_tile.mma");
  return verifyMultiples(emitError, shape,
                         {getInstr()[0] * getWarps()[0],
                          getInstr()[1] * getWarps()[1]},
                         "#flash_tile.mma");
}

int64_t MmaLayoutAttr::getNumWarps() const { return product(getWarps()); }

int64_t MmaLayoutAttr::getElementsPerThread(ArrayRef<int64_t> shape) const {
  return product(shape) / (32 * getNumWarps());
}

// A thread's values, in order: its instruction tiles row-major over the
// warp's block, and in each the four values of mma.sync's accumulator
// fragment, c0 c1 (row lane / 4, columns 2 * (lane % 4) + 0, 1) and c2 c3
// (8 rows below).
SmallVector<int64_t> MmaLayoutAttr::getCoordinates(ArrayRef<int64_t> shape,
                                                   int64_t thread,
                                                   int64_t element) const {
  if (isBatched())
    return getBatchedCoordinates(getMatrixLayout(), shape, thread, element);
  ArrayRef<int64_t> warps = getWarps();
  int64_t warp = thread / 32, lane = thread % 32;
  int64_t rowsPerWarp = shape[0] / warps[0], colsPerWarp = shape[1] / warps[1];
  int64_t nTiles = colsPerWarp / getInstr()[1];
  int64_t tile = element / 4, value = element % 4;
  int64_t row = (warp / warps[1]) * rowsPerWarp + (tile / nTiles) * 16 +
                lane / 4 + (value / 2) * 8;
  int64_t col = (warp % warps[1]) * colsPerWarp + (tile % nTiles) * 8 +
                2 * (lane % 4) + value % 2;
  return {row, col};
}

//===----------------------------------------------------------------------===//
// OperandLayoutAttr
//===----------------------------------------------------------------------===//

LogicalResult
OperandLayoutAttr::verifyShape(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape) const {
  MmaLayoutAttr p = getParent();
  if (p.isBatched())
    return verifyBatchedShape(
        emitError,
        OperandLayoutAttr::get(getContext(), getKind(), p.getMatrixLayout()),
        p.getBatch(), shape, "a batched operand layout");
  ArrayRef<int64_t> instr = p.getInstr();
  if (getKind() == OperandKind::A)
    return verifyMultiples(emitError, shape,
                           {instr[0] * p.getWarps()[0], instr[2]},
                           "an A operand layout");
  return verifyMultiples(emitError, shape,
                         {instr[2], instr[1] * p.getWarps()[1]},
                         "a B operand layout");
}

int64_t OperandLayoutAttr::getNumWarps() const {
  return getParent().getNumWarps();
}

int64_t OperandLayoutAttr::getElementsPerThread(ArrayRef<int64_t> shape) const {
  // An A tile is split over the row warps and replicated over the column
  // warps; a B tile the other way round. A batch gives each matrix its own
  // warps.
  MmaLayoutAttr p = getParent();
  ArrayRef<int64_t> warps = p.getMatrixWarps();
  int64_t split = getKind() == OperandKind::A ? warps[0] : warps[1];
  return product(shape) / (32 * split * p.getBatch());
}

// A's values: its 16 x K instruction tiles row-major over the warp's rows,
// in each the pairs a0 a1 (row lane / 4, columns 2 * (lane % 4) + 0, 1),
// a2 a3 (8 rows below), then for K = 16 a4 .. a7 (8 columns right). B's:
// its K x 8 tiles row-major, in each b0 b1 (rows 2 * (lane % 4) + 0, 1,
// column lane / 4), then for K = 16 b2 b3 (8 rows below).
SmallVector<int64_t> OperandLayoutAttr::getCoordinates(ArrayRef<int64_t> shape,
                                                       int64_t thread,
                                                       int64_t element) const {
  MmaLayoutAttr p = getParent();
  if (p.isBatched())
    return getBatchedCoordinates(
        OperandLayoutAttr::get(getContext(), getKind(), p.getMatrixLayout()),
        shape, thread, element);
  ArrayRef<int64_t> warps = p.getWarps();
  int64_t k = p.getInstr()[2];
  int64_t warp = thread / 32, lane = thread % 32;
  int64_t pair = element % 2;
  if (getKind() == OperandKind::A) {
    int64_t perTile = k / 2; // 8 values (K = 16) or 4 (K = 8)
    int64_t tile = element / perTile, reg = (element % perTile) / 2;
    int64_t kTiles = shape[1] / k;
    int64_t rowsPerWarp = shape[0] / warps[0];
    int64_t row = (warp / warps[1]) * rowsPerWarp + (tile / kTiles) * 16 +
                  lane / 4 + (reg % 2) * 8;
    int64_t col = (tile % kTiles) * k + (reg / 2) * 8 + 2 * (lane % 4) + pair;
    return {row, col};
  }
  int64_t perTile = k / 4; // 4 values (K = 16) or 2 (K = 8)
  int64_t tile = element / perTile, reg = (element % perTile) / 2;
  int64_t colsPerWarp = shape[1] / warps[1];
  int64_t nTiles = colsPerWarp / 8;
  int64_t row = (tile / nTiles) * k + reg * 8 + 2 * (lane % 4) + pair;
  int64_t col = (warp % warps[1]) * colsPerWarp + (tile % nTiles) * 8 +
                lane / 4;
  return {row, col};
}

//===----------------------------------------------------------------------===//
// SliceLayoutAttr
//===----------------------------------------------------------------------===//

LogicalResult
SliceLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t dim, LayoutAttrInterface parent) {
  auto mma = dyn_cast<MmaLayoutAttr>(parent);
  auto blocked = dyn_cast<BlockedLayoutAttr>(parent);
  if (!mma && !(blocked && blocked.getSize().size() == 2))
    return emitError() << "#flash_tile.slice's parent is a #flash_tile.mma "
                          "or a 2-D #flash_tile.blocked layout, not "
                       << parent;
  if (mma && mma.isBatched()) {
    if (dim != 1 && dim != 2)
      return emitError() << "#flash_tile.slice removes dimension 1 or 2 of a "
                            "batched parent (a matrix dimension), not "
                         << dim;
    return success();
  }
  if (dim != 0 && dim != 1)
    return emitError() << "#flash_tile.slice removes dimension 0 or 1 of its "
                          "2-D parent, not "
                       << dim;
  return success();
}

/// The slice of one matrix of a batched parent.
static SliceLayoutAttr getMatrixSlice(SliceLayoutAttr slice) {
  return SliceLayoutAttr::get(slice.getContext(), slice.getDim() - 1,
                              slice.getMmaParent().getMatrixLayout());
}

/// A blocked layout's size, threads and warps along dimension `dim`, and
/// the lane and warp strides of that dimension (the last one fastest).
struct BlockedDim {
  int64_t size, threads, warps, laneStride, warpStride;
};
static BlockedDim getBlockedDim(BlockedLayoutAttr layout, int64_t dim) {
  BlockedDim d{layout.getSize()[dim], layout.getThreads()[dim],
               layout.getWarps()[dim], 1, 1};
  for (int64_t i = dim + 1, n = layout.getSize().size(); i < n; ++i) {
    d.laneStride *= layout.getThreads()[i];
    d.warpStride *= layout.getWarps()[i];
  }
  return d;
}

LogicalResult
SliceLayoutAttr::verifyShape(function_ref<InFlightDiagnostic()> emitError,
                             ArrayRef<int64_t> shape) const {
  if (isBatched())
    return verifyBatchedShape(emitError, getMatrixSlice(*this),
                              getMmaParent().getBatch(), shape,
                              "a batched #flash_tile.slice");
  int64_t kept = 1 - getDim();
  if (auto blocked = dyn_cast<BlockedLayoutAttr>(getParent())) {
    BlockedDim d = getBlockedDim(blocked, kept);
    return verifyMultiples(emitError, shape, {d.size * d.threads * d.warps},
                           "#flash_tile.slice");
  }
  MmaLayoutAttr p = getMmaParent();
  return verifyMultiples(emitError, shape,
                         {p.getInstr()[kept] * p.getWarps()[kept]},
                         "#flash_tile.slice");
}

int64_t SliceLayoutAttr::getNumWarps() const {
  return getParent().getNumWarps();
}

int64_t SliceLayoutAttr::getElementsPerThread(ArrayRef<int64_t> shape) const {
  if (isBatched())
    return getMatrixSlice(*this).getElementsPerThread(shape.drop_front());
  if (auto blocked = dyn_cast<BlockedLayoutAttr>(getParent())) {
    // The kept dimension's runs, repeated over the tile.
    BlockedDim d = getBlockedDim(blocked, 1 - getDim());
    return shape[0] / (d.threads * d.warps);
  }
  // Within an instruction tile a lane holds 2 of the 16 rows (a quad of
  // lanes shares them) or 2 of the 8 columns.
  ArrayRef<int64_t> warps = getMmaParent().getWarps();
  if (getDim() == 1)
    return shape[0] / (8 * warps[0]);
  return shape[0] / (4 * warps[1]);
}

// Of an MMA parent, the accumulator's rows a lane holds (lane / 4 and 8
// below, per 16-row tile), or its columns (2 * (lane % 4) + 0, 1, per
// 8-column tile). Of a blocked parent, the kept dimension's coordinates of
// the thread's values, each once.
SmallVector<int64_t> SliceLayoutAttr::getCoordinates(ArrayRef<int64_t> shape,
                                                     int64_t thread,
                                                     int64_t element) const {
  if (isBatched())
    return getBatchedCoordinates(getMatrixSlice(*this), shape, thread,
                                 element);
  int64_t warp = thread / 32, lane = thread % 32;
  if (auto blocked = dyn_cast<BlockedLayoutAttr>(getParent())) {
    BlockedDim d = getBlockedDim(blocked, 1 - getDim());
    int64_t footprint = d.size * d.threads * d.warps;
    int64_t laneIdx = (lane / d.laneStride) % d.threads;
    int64_t warpIdx = (warp / d.warpStride) % d.warps;
    return {(element / d.size) * footprint +
            (warpIdx * d.threads + laneIdx) * d.size + element % d.size};
  }
  ArrayRef<int64_t> warps = getMmaParent().getWarps();
  if (getDim() == 1) {
    int64_t rowsPerWarp = shape[0] / warps[0];
    return {(warp / warps[1]) * rowsPerWarp + (element / 2) * 16 + lane / 4 +
            (element % 2) * 8};
  }
  int64_t colsPerWarp = shape[0] / warps[1];
  return {(warp % warps[1]) * colsPerWarp + (element / 2) * 8 +
          2 * (lane % 4) + element % 2};
}

//===----------------------------------------------------------------------===//
// BlockedLayoutAttr
//===----------------------------------------------------------------------===//

LogicalResult
BlockedLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          ArrayRef<int64_t> size, ArrayRef<int64_t> threads,
                          ArrayRef<int64_t> warps) {
  if (size.empty() || size.size() > 2 || threads.size() != size.size() ||
      warps.size() != size.size())
    return emitError() << "#flash_tile.blocked needs size, threads and warps "
                          "of one rank, 1 or 2";
  for (ArrayRef<int64_t> list : {size, threads, warps})
    if (llvm::any_of(list, [](int64_t v) { return v < 1; }))
      return emitError() << "#flash_tile.blocked's sizes and counts are "
                            "positive";
  if (llvm::any_of(threads, [](int64_t t) { return t > 32; }) ||
      product(threads) != 32)
    return emitError() << "#flash_tile.blocked's threads per warp multiply "
                          "to 32, not ["
                       << threads << "]";
  if (failed(verifyWarpsFitACTA(emitError, "#flash_tile.blocked", warps)))
    return failure();
  if (llvm::any_of(size, [](int64_t s) { return s > kMaxRun; }))
    return emitError() << "#flash_tile.blocked's runs are at most " << kMaxRun
                       << " elements a thread, not [" << size << "]";
  return success();
}

LogicalResult
BlockedLayoutAttr::verifyShape(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape) const {
  SmallVector<int64_t> quanta;
  for (auto [s, t, w] : llvm::zip_equal(getSize(), getThreads(), getWarps()))
    quanta.push_back(s * t * w);
  return verifyMultiples(emitError, shape, quanta, "#flash_tile.blocked");
}

int64_t BlockedLayoutAttr::getNumWarps() const { return product(getWarps()); }

int64_t BlockedLayoutAttr::getElementsPerThread(ArrayRef<int64_t> shape) const {
  return product(shape) / (32 * getNumWarps());
}

// A thread's values: its run (size elements, row-major), repeated over the
// tile, the last dimension's repetitions fastest. Lanes and warps are
// numbered with the last dimension fastest.
SmallVector<int64_t> BlockedLayoutAttr::getCoordinates(ArrayRef<int64_t> shape,
                                                       int64_t thread,
                                                       int64_t element) const {
  ArrayRef<int64_t> size = getSize(), threads = getThreads(),
                    warps = getWarps();
  size_t rank = size.size();
  int64_t run = product(size);
  int64_t inRun = element % run, rep = element / run;
  int64_t lane = thread % 32, warp = thread / 32;
  SmallVector<int64_t> coords(rank);
  for (size_t i = rank; i-- > 0;) {
    int64_t footprint = size[i] * threads[i] * warps[i];
    int64_t reps = shape[i] / footprint;
    int64_t laneIdx = lane % threads[i], warpIdx = warp % warps[i];
    lane /= threads[i];
    warp /= warps[i];
    int64_t runIdx = inRun % size[i], repIdx = rep % reps;
    inRun /= size[i];
    rep /= reps;
    coords[i] = repIdx * footprint + (warpIdx * threads[i] + laneIdx) * size[i] +
                runIdx;
  }
  return coords;
}

//===----------------------------------------------------------------------===//
// SwizzledLayoutAttr
//===----------------------------------------------------------------------===//

LogicalResult
SwizzledLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t vector, int64_t phases, int64_t padding,
                           int64_t panel, int64_t rowsPerPhase) {
  if (padding < 0 || padding % std::max<int64_t>(vector, 1) != 0)
    return emitError() << "#flash_tile.swizzled's padding is a whole number "
                          "of chunks of "
                       << vector << ", not " << padding;
  if (padding != 0 && phases != 1)
    return emitError() << "#flash_tile.swizzled pads rows or swizzles "
                          "them, not both: "
                       << phases << " phases and a padding of " << padding;
  if (vector < 1 || vector > 64 || !llvm::isPowerOf2_64(vector))
    return emitError() << "#flash_tile.swizzled's vector is a power of two "
                          "up to 64, not "
                       << vector;
  if (padding > 16 * vector)
    return emitError() << "#flash_tile.swizzled pads a row by at most 16 "
                          "chunks, not "
                       << padding << " elements";
  if (phases < 1 || phases > 8 || !llvm::isPowerOf2_64(phases))
    return emitError() << "#flash_tile.swizzled's phases are 1, 2, 4 or 8, "
                          "not "
                       << phases;
  if (rowsPerPhase < 1 || rowsPerPhase > 8 ||
      !llvm::isPowerOf2_64(rowsPerPhase))
    return emitError() << "#flash_tile.swizzled's rowsPerPhase is 1, 2, 4 "
                          "or 8, not "
                       << rowsPerPhase;
  if (rowsPerPhase != 1 && phases == 1)
    return emitError() << "#flash_tile.swizzled without a swizzle (1 phase) "
                          "has 1 row a phase, not "
                       << rowsPerPhase;
  if (panel != 0 &&
      (panel < 0 || !llvm::isPowerOf2_64(panel) || panel % vector != 0 ||
       padding != 0 || (panel / vector) % phases != 0))
    return emitError() << "#flash_tile.swizzled's panel is a power of two of "
                          "whole chunks, a multiple of the phases' chunks, "
                          "without padding; not "
                       << panel << " elements (vector " << vector << ", phases "
                       << phases << ", padding " << padding << ")";
  return success();
}
