//===- LayoutUtils.cpp - Questions about pairs of layouts -----------------===//
//
// Implements getInThreadPermutation and getFoldTargets from the layouts'
// coordinates, getThreadOffsets, getOwnerConditions, formatShape and the
// copy layouts.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "flashc/Core/GPUSchedule.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::flash_tile;

/// For each value a thread holds of a `toShape` tile in `to`, the index of
/// the value it holds of a `fromShape` tile in `from` at the same
/// coordinates, the first `dropped` of the `to` coordinates left out: the
/// same list for every thread, or nullopt when some thread lacks a value.
static std::optional<SmallVector<int64_t>>
getInThreadSources(LayoutAttrInterface from, ArrayRef<int64_t> fromShape,
                   LayoutAttrInterface to, ArrayRef<int64_t> toShape,
                   size_t dropped) {
  if (from.getNumWarps() != to.getNumWarps())
    return std::nullopt;
  int64_t threads = 32 * from.getNumWarps();
  auto key = [&](ArrayRef<int64_t> c) { return linearize(c, fromShape); };
  std::optional<SmallVector<int64_t>> sources;
  for (int64_t t = 0; t < threads; ++t) {
    // Where this thread holds each element in `from`.
    llvm::DenseMap<int64_t, int64_t> held;
    for (int64_t e = 0, n = from.getElementsPerThread(fromShape); e < n; ++e)
      held.try_emplace(key(from.getCoordinates(fromShape, t, e)), e);
    SmallVector<int64_t> mine;
    for (int64_t e = 0, n = to.getElementsPerThread(toShape); e < n; ++e) {
      SmallVector<int64_t> c = to.getCoordinates(toShape, t, e);
      auto it = held.find(key(ArrayRef<int64_t>(c).drop_front(dropped)));
      if (it == held.end())
        return std::nullopt;
      mine.push_back(it->second);
    }
    if (!sources)
      sources = std::move(mine);
    else if (*sources != mine)
      return std::nullopt;
  }
  return sources;
}

std::optional<SmallVector<int64_t>>
mlir::flash_tile::getInThreadPermutation(LayoutAttrInterface from,
                                         LayoutAttrInterface to,
                                         ArrayRef<int64_t> shape) {
  return getInThreadSources(from, shape, to, shape, /*dropped=*/0);
}

std::optional<SmallVector<int64_t>>
mlir::flash_tile::getBroadcastSources(LayoutAttrInterface from,
                                      ArrayRef<int64_t> fromShape,
                                      LayoutAttrInterface to,
                                      ArrayRef<int64_t> toShape) {
  return getInThreadSources(from, fromShape, to, toShape, /*dropped=*/1);
}

std::optional<SmallVector<int64_t>>
mlir::flash_tile::getFoldTargets(LayoutAttrInterface layout,
                                 ArrayRef<int64_t> sourceShape,
                                 ArrayRef<int64_t> resultShape) {
  int64_t threads = 32 * layout.getNumWarps();
  int64_t width = resultShape.back();
  // An element's place in the result, its last coordinate taken mod W.
  auto key = [&](SmallVector<int64_t> c) {
    c.back() %= width;
    return linearize(c, resultShape);
  };
  std::optional<SmallVector<int64_t>> targets;
  for (int64_t t = 0; t < threads; ++t) {
    // Where this thread holds each element of the result.
    llvm::DenseMap<int64_t, int64_t> held;
    for (int64_t e = 0, n = layout.getElementsPerThread(resultShape); e < n;
         ++e)
      held.try_emplace(key(layout.getCoordinates(resultShape, t, e)), e);
    SmallVector<int64_t> mine;
    for (int64_t e = 0, n = layout.getElementsPerThread(sourceShape); e < n;
         ++e) {
      SmallVector<int64_t> c = layout.getCoordinates(sourceShape, t, e);
      auto it = held.find(key(c));
      if (it == held.end())
        return std::nullopt;
      mine.push_back(it->second);
    }
    if (!targets)
      targets = std::move(mine);
    else if (*targets != mine)
      return std::nullopt;
  }
  return targets;
}

/// The 2-D form of a layout of the batched MMA family (its matrix's
/// layout), or null when `layout` is not batched.
static LayoutAttrInterface getMatrixForm(LayoutAttrInterface layout) {
  MLIRContext *ctx = layout.getContext();
  if (auto mma = dyn_cast<MmaLayoutAttr>(layout))
    return mma.isBatched() ? mma.getMatrixLayout() : nullptr;
  if (auto operand = dyn_cast<OperandLayoutAttr>(layout))
    return operand.getParent().isBatched()
               ? OperandLayoutAttr::get(ctx, operand.getKind(),
                                        operand.getParent().getMatrixLayout())
               : nullptr;
  if (auto slice = dyn_cast<SliceLayoutAttr>(layout))
    return slice.isBatched()
               ? SliceLayoutAttr::get(ctx, slice.getDim() - 1,
                                      slice.getMmaParent().getMatrixLayout())
               : nullptr;
  return nullptr;
}

/// `exprs` of a thread's index in its matrix of a batch of `batch`, as
/// expressions of the CTA's thread index t: warp w holds matrix w mod B as
/// warp w / B of the matrix's layout.
static SmallVector<AffineExpr> inMatrix(ArrayRef<AffineExpr> exprs,
                                        int64_t batch, MLIRContext *ctx) {
  AffineExpr t = getAffineDimExpr(0, ctx);
  AffineExpr matrixThread = t.floorDiv(32).floorDiv(batch) * 32 + t % 32;
  SmallVector<AffineExpr> out;
  for (AffineExpr e : exprs)
    out.push_back(e.replace(t, matrixThread));
  return out;
}

/// The batch of a batched layout.
static int64_t getBatch(LayoutAttrInterface layout, LayoutAttrInterface matrix) {
  return layout.getNumWarps() / matrix.getNumWarps();
}

SmallVector<AffineExpr>
mlir::flash_tile::getThreadOffsets(LayoutAttrInterface layout,
                                   ArrayRef<int64_t> shape) {
  MLIRContext *ctx = layout.getContext();
  if (LayoutAttrInterface matrix = getMatrixForm(layout)) {
    // The matrix is the warp's index mod B; the rest, the matrix's offsets
    // for the thread's index in it.
    int64_t batch = getBatch(layout, matrix);
    SmallVector<AffineExpr> offsets = {
        getAffineDimExpr(0, ctx).floorDiv(32) % batch};
    llvm::append_range(
        offsets,
        inMatrix(getThreadOffsets(matrix, shape.drop_front()), batch, ctx));
    return offsets;
  }
  AffineExpr t = getAffineDimExpr(0, ctx);
  AffineExpr lane = t % 32, warp = t.floorDiv(32);
  // The warp's row and column in an MMA layout's warp grid, and the rows
  // and columns each warp owns of a tile of `shape`.
  auto mmaWarp = [&](MmaLayoutAttr mma, int64_t rows, int64_t cols) {
    ArrayRef<int64_t> warps = mma.getWarps();
    return std::make_pair(warp.floorDiv(warps[1]) * (rows / warps[0]),
                          (warp % warps[1]) * (cols / warps[1]));
  };
  if (auto mma = dyn_cast<MmaLayoutAttr>(layout)) {
    auto [r, c] = mmaWarp(mma, shape[0], shape[1]);
    return {r + lane.floorDiv(4), c + (lane % 4) * 2};
  }
  if (auto operand = dyn_cast<OperandLayoutAttr>(layout)) {
    auto [r, c] = mmaWarp(operand.getParent(), shape[0], shape[1]);
    if (operand.getKind() == OperandKind::A)
      return {r + lane.floorDiv(4), (lane % 4) * 2};
    return {(lane % 4) * 2, c + lane.floorDiv(4)};
  }
  if (auto slice = dyn_cast<SliceLayoutAttr>(layout)) {
    // Of a blocked parent, its offsets along the kept dimension.
    if (auto blocked = dyn_cast<BlockedLayoutAttr>(slice.getParent()))
      return {getThreadOffsets(blocked, {1, 1})[1 - slice.getDim()]};
    ArrayRef<int64_t> warps = slice.getMmaParent().getWarps();
    if (slice.getDim() == 1)
      return {warp.floorDiv(warps[1]) * (shape[0] / warps[0]) +
              lane.floorDiv(4)};
    return {(warp % warps[1]) * (shape[0] / warps[1]) + (lane % 4) * 2};
  }
  auto blocked = cast<BlockedLayoutAttr>(layout);
  ArrayRef<int64_t> size = blocked.getSize(), threads = blocked.getThreads(),
                    warps = blocked.getWarps();
  SmallVector<AffineExpr> offsets(size.size());
  int64_t laneStride = 1, warpStride = 1;
  for (size_t i = size.size(); i-- > 0;) {
    AffineExpr laneIdx = lane.floorDiv(laneStride) % threads[i];
    AffineExpr warpIdx = warp.floorDiv(warpStride) % warps[i];
    laneStride *= threads[i];
    warpStride *= warps[i];
    offsets[i] = (warpIdx * threads[i] + laneIdx) * size[i];
  }
  return offsets;
}

SmallVector<AffineExpr>
mlir::flash_tile::getOwnerConditions(LayoutAttrInterface layout) {
  if (LayoutAttrInterface matrix = getMatrixForm(layout))
    return inMatrix(getOwnerConditions(matrix), getBatch(layout, matrix),
                    layout.getContext());
  AffineExpr t = getAffineDimExpr(0, layout.getContext());
  AffineExpr lane = t % 32, warp = t.floorDiv(32);
  SmallVector<AffineExpr> conditions;
  if (auto slice = dyn_cast<SliceLayoutAttr>(layout)) {
    if (auto blocked = dyn_cast<BlockedLayoutAttr>(slice.getParent())) {
      // The first lane and warp along the removed dimension own.
      ArrayRef<int64_t> threads = blocked.getThreads(),
                        warps = blocked.getWarps();
      int64_t removed = slice.getDim();
      int64_t laneStride = removed == 0 ? threads[1] : 1;
      int64_t warpStride = removed == 0 ? warps[1] : 1;
      conditions = {lane.floorDiv(laneStride) % threads[removed],
                    warp.floorDiv(warpStride) % warps[removed]};
    } else {
      int64_t w1 = slice.getMmaParent().getWarps()[1];
      if (slice.getDim() == 1)
        conditions = {lane % 4, warp % w1};
      else
        conditions = {lane.floorDiv(4), warp.floorDiv(w1)};
    }
  } else if (auto operand = dyn_cast<OperandLayoutAttr>(layout)) {
    int64_t w1 = operand.getParent().getWarps()[1];
    conditions = {operand.getKind() == OperandKind::A ? warp % w1
                                                      : warp.floorDiv(w1)};
  }
  // Conditions that hold for every thread (a single warp column: x mod 1).
  llvm::erase_if(conditions, [](AffineExpr e) {
    auto c = dyn_cast<AffineConstantExpr>(e);
    return c && c.getValue() == 0;
  });
  return conditions;
}

int64_t mlir::flash_tile::linearize(ArrayRef<int64_t> coords,
                                    ArrayRef<int64_t> shape) {
  int64_t index = 0;
  for (auto [c, extent] : llvm::zip_equal(coords, shape))
    index = index * extent + c;
  return index;
}

std::string mlir::flash_tile::formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

int64_t mlir::flash_tile::getLanesOver(int64_t runs) {
  int64_t lanes = 1;
  while (lanes < 32 && runs % (2 * lanes) == 0)
    lanes *= 2;
  return lanes;
}

BlockedLayoutAttr
mlir::flash_tile::getCopyLayout(MLIRContext *ctx, int64_t rows, int64_t cols,
                                int64_t sourceCols, int64_t elementBytes,
                                int64_t warps, int64_t alignment) {
  // Runs of 16, 8 or 4 bytes where the rows are whole 16-byte chunks and
  // the source allows them, else of one element.
  SmallVector<int64_t> runs;
  if (flashc::hasWholeChunkRows(sourceCols, elementBytes) && alignment >= 4)
    for (int64_t bytes : {16, 8, 4})
      if (bytes <= alignment && bytes % elementBytes == 0 &&
          cols % (bytes / elementBytes) == 0)
        runs.push_back(bytes / elementBytes);
  runs.push_back(1);
  // The longest runs whose layout covers the stage evenly: a warp's lanes
  // over a row's runs first, its warps over rows, and where the stage has
  // too few rows for every warp (16 keys for 8 warps), warps over columns
  // too.
  BlockedLayoutAttr last;
  for (int64_t vec : runs)
    for (int64_t wc = 1; wc <= warps; wc *= 2) {
      int64_t perRow = cols / vec;
      if (warps % wc != 0 || perRow % wc != 0)
        break;
      int64_t across = getLanesOver(perRow / wc);
      last = BlockedLayoutAttr::get(ctx, {1, vec}, {32 / across, across},
                                    {warps / wc, wc});
      if (rows % (32 / across * (warps / wc)) == 0)
        return last;
    }
  return last;
}

SwizzledLayoutAttr mlir::flash_tile::getSharedPlacement(MLIRContext *ctx,
                                                        int64_t cols,
                                                        int64_t elementBytes) {
  if (elementBytes < 1 || 16 % elementBytes != 0)
    return {};
  int64_t vec = 16 / elementBytes;
  if (cols < 1 || cols % vec != 0)
    return {};
  int64_t padding = flashc::getSharedRowElements(cols, elementBytes) - cols;
  if (padding)
    return SwizzledLayoutAttr::get(ctx, vec, /*phases=*/1, padding);
  // 8 rows of one chunk are 128 contiguous bytes. Rows of 2 or 4 chunks
  // share 128 bytes 4 or 2 at a time and swizzle in runs of as many rows;
  // wider rows swizzle at each row over 8.
  int64_t chunks = cols / vec;
  int64_t phases = std::min<int64_t>(8, chunks);
  return SwizzledLayoutAttr::get(ctx, vec, phases, /*padding=*/0, /*panel=*/0,
                                 /*rowsPerPhase=*/phases == 1 ? 1 : 8 / phases);
}

bool mlir::flash_tile::hasWarpgroupRows(int64_t cols, int64_t elementBytes) {
  return cols > 0 && flashc::getWarpgroupSwizzleBytes(cols * elementBytes);
}

SwizzledLayoutAttr
mlir::flash_tile::getWarpgroupPlacement(MLIRContext *ctx, int64_t cols,
                                        int64_t elementBytes) {
  int64_t swizzle = flashc::getWarpgroupSwizzleBytes(cols * elementBytes);
  if (!swizzle || elementBytes < 1 || 16 % elementBytes != 0)
    return {};
  // A 16-byte chunk moves over swizzle / 16 places, every 128 / swizzle
  // rows (the rows that share 128 bytes).
  int64_t phases = swizzle / 16;
  int64_t rowElements = swizzle / elementBytes;
  return SwizzledLayoutAttr::get(ctx, 16 / elementBytes, phases,
                                 /*padding=*/0,
                                 /*panel=*/cols > rowElements ? rowElements : 0,
                                 /*rowsPerPhase=*/8 / phases);
}

int64_t mlir::flash_tile::getWarpgroupSwizzleBytes(SwizzledLayoutAttr layout,
                                                   int64_t cols,
                                                   int64_t elementBytes) {
  if (!layout || layout.getVector() * elementBytes != 16 ||
      layout.getPadding() != 0 ||
      layout.getPhases() * layout.getRowsPerPhase() != 8)
    return 0;
  int64_t bytes = layout.getRowPitch(cols) * elementBytes;
  return bytes == 16 * layout.getPhases() ? bytes : 0;
}
