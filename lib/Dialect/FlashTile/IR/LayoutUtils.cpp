//===- LayoutUtils.cpp - Questions about pairs of layouts -----------------===//
//
// Implements getInThreadPermutation from the layouts' coordinates, and
// formatShape.
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

std::string mlir::flash_tile::formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}
