//===- LayoutUtils.cpp - Questions about pairs of layouts -----------------===//
//
// Implements getInThreadPermutation and getFoldTargets from the layouts'
// coordinates, getThreadOffsets, getOwnerConditions and formatShape.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::flash_tile;

std::optional<SmallVector<int64_t>>
mlir::flash_tile::getInThreadPermutation(LayoutAttrInterface from,
                                         LayoutAttrInterface to,
                                         ArrayRef<int64_t> shape) {
  if (from.getNumWarps() != to.getNumWarps())
    return std::nullopt;
  int64_t threads = 32 * from.getNumWarps();
  int64_t fromValues = from.getElementsPerThread(shape);
  int64_t toValues = to.getElementsPerThread(shape);
  auto key = [&](ArrayRef<int64_t> c) {
    int64_t k = 0;
    for (auto [ci, di] : llvm::zip_equal(c, shape))
      k = k * di + ci;
    return k;
  };
  std::optional<SmallVector<int64_t>> permutation;
  for (int64_t t = 0; t < threads; ++t) {
    // Where this thread holds each element in `from`.
    llvm::DenseMap<int64_t, int64_t> held;
    for (int64_t e = 0; e < fromValues; ++e)
      held.try_emplace(key(from.getCoordinates(shape, t, e)), e);
    SmallVector<int64_t> mine;
    for (int64_t e = 0; e < toValues; ++e) {
      auto it = held.find(key(to.getCoordinates(shape, t, e)));
      if (it == held.end())
        return std::nullopt;
      mine.push_back(it->second);
    }
    if (!permutation)
      permutation = std::move(mine);
    else if (*permutation != mine)
      return std::nullopt;
  }
  return permutation;
}

std::optional<SmallVector<int64_t>>
mlir::flash_tile::getFoldTargets(LayoutAttrInterface layout,
                                 ArrayRef<int64_t> sourceShape,
                                 ArrayRef<int64_t> resultShape) {
  int64_t threads = 32 * layout.getNumWarps();
  int64_t width = resultShape[1];
  std::optional<SmallVector<int64_t>> targets;
  for (int64_t t = 0; t < threads; ++t) {
    // Where this thread holds each element of the result.
    llvm::DenseMap<int64_t, int64_t> held;
    for (int64_t e = 0, n = layout.getElementsPerThread(resultShape); e < n;
         ++e) {
      SmallVector<int64_t> c = layout.getCoordinates(resultShape, t, e);
      held.try_emplace(c[0] * width + c[1], e);
    }
    SmallVector<int64_t> mine;
    for (int64_t e = 0, n = layout.getElementsPerThread(sourceShape); e < n;
         ++e) {
      SmallVector<int64_t> c = layout.getCoordinates(sourceShape, t, e);
      auto it = held.find(c[0] * width + c[1] % width);
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

SmallVector<AffineExpr>
mlir::flash_tile::getThreadOffsets(LayoutAttrInterface layout,
                                   ArrayRef<int64_t> shape) {
  MLIRContext *ctx = layout.getContext();
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
    ArrayRef<int64_t> warps = slice.getParent().getWarps();
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
  AffineExpr t = getAffineDimExpr(0, layout.getContext());
  AffineExpr lane = t % 32, warp = t.floorDiv(32);
  SmallVector<AffineExpr> conditions;
  if (auto slice = dyn_cast<SliceLayoutAttr>(layout)) {
    int64_t w1 = slice.getParent().getWarps()[1];
    if (slice.getDim() == 1)
      conditions = {lane % 4, warp % w1};
    else
      conditions = {lane.floorDiv(4), warp.floorDiv(w1)};
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

std::string mlir::flash_tile::formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}
