//===- AttentionSchedule.cpp - Tile sizes from SRAM capacity --------------===//
//
// Implements the block-size rules of the FlashAttention papers on top of a
// TargetInfo.
//
//===----------------------------------------------------------------------===//

#include "flashc/Analysis/AttentionSchedule.h"

#include "flashc/Support/Sizes.h"
#include "flashc/Core/GPUSchedule.h"

#include "llvm/Support/raw_ostream.h"

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

std::optional<::flashc::ElementType> mlir::flash::toElementType(Type type) {
  if (type.isF32())
    return ::flashc::ElementType::F32;
  if (type.isF16())
    return ::flashc::ElementType::F16;
  if (type.isBF16())
    return ::flashc::ElementType::BF16;
  return std::nullopt;
}

llvm::Expected<AttentionProblem>
mlir::flash::getStaticAttentionProblem(RankedTensorType q, RankedTensorType k,
                                       RankedTensorType v,
                                       ::flashc::Mask mask) {
  struct Dim {
    RankedTensorType type;
    unsigned index;
    const char *name;
  };
  for (Dim dim : {Dim{q, 0, "batch B (query dimension 0)"},
                  Dim{q, 1, "query heads Hq (query dimension 1)"},
                  Dim{k, 1, "kv heads Hkv (key dimension 1)"},
                  Dim{q, 2, "query length Nq (query dimension 2)"},
                  Dim{k, 2, "key length Nk (key dimension 2)"},
                  Dim{q, 3, "head dimension D (query dimension 3)"},
                  Dim{v, 3, "value head dimension Dv (value dimension 3)"}}) {
    if (dim.type.isDynamicDim(dim.index)) {
      std::string type;
      llvm::raw_string_ostream os(type);
      os << dim.type;
      return llvm::createStringError(std::string("the ") + dim.name + " of '" +
                                     type + "' is dynamic");
    }
  }
  AttentionProblem shape;
  shape.batch = q.getDimSize(0);
  shape.heads = q.getDimSize(1);
  shape.kvHeads = k.getDimSize(1);
  shape.seqQ = q.getDimSize(2);
  shape.seqKV = k.getDimSize(2);
  shape.headDim = q.getDimSize(3);
  shape.headDimV = v.getDimSize(3);
  shape.mask = mask;
  Type elementType = q.getElementType();
  if (std::optional<::flashc::ElementType> t = toElementType(elementType)) {
    shape.dtype = *t;
  } else {
    std::string type;
    llvm::raw_string_ostream os(type);
    os << elementType;
    return llvm::createStringError("unsupported element type " + type +
                                   ", expected f32, f16 or bf16");
  }
  return shape;
}

using flashc::ceilDiv;

TileSizes mlir::flash::chooseTileSizes(const TargetInfo &target,
                                       const AttentionProblem &shape,
                                       LoopOrder order, bool wideWarps,
                                       int64_t stages, bool warpgroupMma,
                                       int64_t alignment) {
  int64_t bytes = target.isGPU() ? shape.elementBytes() : 4;
  int64_t m = std::max<int64_t>(target.sramBytes / bytes, 1);
  int64_t d = std::max(shape.headDim, shape.valueDim());
  TileSizes tiles;
  tiles.order = order;
  if (order == LoopOrder::Algorithm1) {
    tiles.blockKV = ceilDiv(m, 4 * d);
    tiles.blockQ = std::min(tiles.blockKV, d);
  } else if (target.isGPU()) {
    // The GPU kernels' own tiles (flashc/Core/GPUSchedule.h): a decode
    // tile when every query of a step fits one, halving the KV block while
    // the shared memory of its `stages` K and V buffers does not fit, down
    // to 16 keys (makeGPUTileConfig then gives the block as many kv warps
    // as take 16 keys each at least). Bc is not clamped to Nk: the kernels
    // mask the tail of a block.
    // On sm_90a the tiles are the warpgroup MMAs' with mma.sync too (the
    // same tiles, for comparison), but mma.sync kernels pad their rows as
    // on sm_80, and only the warpgroup MMAs' kernels align their buffers
    // and hold mbarriers (in as many bytes more: flash-tile-allocate-shared).
    bool decode = shape.seqQ <= 16;
    bool warpgroupTiles = target.hasWarpgroupMma();
    bool warpgroup = warpgroupMma && warpgroupTiles;
    auto place = [&](flashc::GPUTileConfig c) {
      c.warpgroupRows = c.warpgroupRows && warpgroup;
      c.stages = stages;
      return c;
    };
    flashc::GPUTileConfig c = place(flashc::chooseGPUTiles(
        shape.group(), shape.headDim, shape.valueDim(), shape.elementBytes(),
        decode, wideWarps, warpgroupTiles, alignment));
    int64_t budget =
        target.sramBytes -
        (warpgroup ? flashc::getWarpgroupSharedReserve(stages) : 0);
    while (c.sharedBytes() > budget && c.blockKV >= 2 * 16) {
      c = place(flashc::makeGPUTileConfig(
          c.group, c.headDim, c.headDimV, c.elementBytes, c.blockQ,
          c.blockKV / 2, c.outputBytes, wideWarps, warpgroupTiles));
    }
    tiles.blockQ = std::min(c.blockQ, shape.seqQ);
    tiles.blockKV = c.blockKV;
    return tiles;
  } else {
    // The G heads of a GQA group are packed into one block of G x Br rows.
    int64_t g = std::max<int64_t>(shape.group(), 1);
    auto fit = [&](int64_t rows) {
      int64_t br = std::max<int64_t>(rows / g, 1);
      int64_t packed = br * g;
      // Q block + accumulator (packed x d each), K and V blocks (2 x Bc x
      // d) and the score block (packed x Bc) must fit in M.
      int64_t avail = m - 2 * packed * d;
      int64_t bc = avail > 0 ? avail / (2 * d + packed) : 16;
      return std::pair(br, std::clamp<int64_t>(bc / 16 * 16, 16, 256));
    };
    // With AVX-512, 128 rows where the budget still gives the largest KV
    // block: each block of K and V is read from L2 by twice the rows.
    int64_t rows =
        target.vectorLanes == 16 && fit(128).second == 256 ? 128 : 64;
    auto [br, bc] = fit(rows);
    tiles.blockQ = br;
    tiles.blockKV = bc;
  }
  tiles.blockQ = std::clamp<int64_t>(tiles.blockQ, 1, shape.seqQ);
  tiles.blockKV = std::clamp<int64_t>(tiles.blockKV, 1, shape.seqKV);
  return tiles;
}
