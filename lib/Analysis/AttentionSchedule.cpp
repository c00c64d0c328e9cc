//===- AttentionSchedule.cpp - Tile sizes from SRAM capacity --------------===//
//
// Implements the block-size rules of the FlashAttention papers on top of a
// TargetInfo.
//
//===----------------------------------------------------------------------===//

#include "flashc/Analysis/AttentionSchedule.h"

#include <algorithm>

using namespace mlir::flash;

llvm::StringRef mlir::flash::stringifyLoopOrder(LoopOrder order) {
  return order == LoopOrder::Algorithm1 ? "algorithm1" : "fa2";
}

std::optional<LoopOrder> mlir::flash::parseLoopOrder(llvm::StringRef name) {
  if (name == "algorithm1" || name == "alg1")
    return LoopOrder::Algorithm1;
  if (name == "fa2")
    return LoopOrder::FA2;
  return std::nullopt;
}

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

TileSizes mlir::flash::chooseTileSizes(const TargetInfo &target,
                                       const AttentionShape &shape,
                                       LoopOrder order) {
  int64_t bytes = target.isGPU() ? shape.elementBytes : 4;
  int64_t m = std::max<int64_t>(target.sramBytes / bytes, 1);
  int64_t d = std::max(shape.headDim, shape.headDimV);
  TileSizes tiles;
  tiles.order = order;
  if (order == LoopOrder::Algorithm1) {
    tiles.blockKV = ceilDiv(m, 4 * d);
    tiles.blockQ = std::min(tiles.blockKV, d);
  } else {
    int64_t rows = target.isGPU() ? 128 : 64;
    // The G heads of a GQA group are packed into one block of G x Br rows.
    int64_t g = std::max<int64_t>(shape.groupSize(), 1);
    int64_t br = std::max<int64_t>(rows / g, 1);
    int64_t packed = br * g;
    // Q block + accumulator (packed x d each), K and V blocks (2 x Bc x d)
    // and the score block (packed x Bc) must fit in M.
    int64_t avail = m - 2 * packed * d;
    int64_t bc = avail > 0 ? avail / (2 * d + packed) : 16;
    bc = std::clamp<int64_t>(bc / 16 * 16, 16, 256);
    tiles.blockQ = br;
    tiles.blockKV = bc;
  }
  tiles.blockQ = std::clamp<int64_t>(tiles.blockQ, 1, shape.seqQ);
  tiles.blockKV = std::clamp<int64_t>(tiles.blockKV, 1, shape.seqKV);
  return tiles;
}
