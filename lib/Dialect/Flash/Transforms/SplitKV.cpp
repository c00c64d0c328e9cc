//===- SplitKV.cpp - Split-KV (flash-decoding) ----------------------------===//
//
// Implements `flash-split-kv` on the FA2 form built by flash-tile:
//
//   scf.forall (b, h, qi) shared_outs(out[, lse]) {
//     ... KV loop over [0, Nk) ... finalize into tiles of out[, lse]
//   }
//
// becomes
//
//   scf.forall (b, h, qi, s) shared_outs(parts, part_lse) {
//     ... KV loop over [s * chunk, min(Nk, (s + 1) * chunk)) ...
//     finalize into tiles of parts[s], part_lse[s]          (f32)
//   }
//   flash.combine ins(parts, part_lse) outs(out[, lse])
//
// where chunk is a whole number of KV blocks. Each split normalises its own
// partial output and log-sum-exp; the combine merges them by log-sum-exp.
//
//===----------------------------------------------------------------------===//

#include "AttentionUtils.h"

#include "flashc/Analysis/AttentionSchedule.h"
#include "flashc/Analysis/CostModel.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"
#include "flashc/Dialect/Flash/Transforms/TiledLoopNest.h"
#include "flashc/Support/Sizes.h"
#include "flashc/Target/TargetInfo.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"

#include <limits>

#define DEBUG_TYPE "flash-split-kv"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHSPLITKV
#include "flashc/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// The pieces of a tiled FA2 attention with a single KV loop.
struct TiledAttention {
  scf::ForallOp forall;
  scf::ForOp kvLoop;
  AttentionStepOp step;
  FinalizeOp finalize;
  /// The slices of the shared outputs the finalize writes, and the
  /// parallel_insert_slices that publish its results.
  SmallVector<tensor::ExtractSliceOp> outSlices;
  SmallVector<tensor::ParallelInsertSliceOp> inserts;
};

/// A tiled loop nest (matchTiledLoopNest) this pass splits: one KV loop
/// (not yet split by causal skipping) over (batch, kv-head, Q block), from
/// 0 in constant blocks to a bound known outside the tile loop, with the
/// static head counts and head dims the wave model needs.
std::optional<TiledAttention> matchTiled(scf::ForallOp forall) {
  TiledLoopNestMismatch why;
  FailureOr<TiledLoopNest> nest = matchTiledLoopNest(forall, why);
  if (failed(nest)) {
    LLVM_DEBUG(if (FlashDialect::TileLoopAttrHelper(forall.getContext())
                       .isAttrPresent(forall)) DBGS()
               << "tile loop at " << forall.getLoc() << ": " << why.message
               << "\n");
    return std::nullopt;
  }
  if (forall.getRank() != 3 || nest->kvLoops.size() != 1)
    return std::nullopt; // already split, or by causal skipping
  TiledAttention t;
  t.forall = forall;
  t.kvLoop = nest->kvLoops.front();
  t.step = nest->steps.front();
  t.finalize = nest->finalize;
  t.outSlices = nest->outSlices;
  t.inserts = nest->inserts;
  // The wave model needs static head counts and head dims.
  auto q = dyn_cast<RankedTensorType>(t.step.getQuery().getType());
  auto v = dyn_cast<RankedTensorType>(t.step.getValue().getType());
  auto out = dyn_cast<RankedTensorType>(forall.getOutputs()[0].getType());
  if (!q || !v || !out || q.getRank() != 3 || v.getRank() != 2 ||
      out.getRank() < 4 || q.isDynamicDim(0) || q.isDynamicDim(2) ||
      v.isDynamicDim(1) || out.isDynamicDim(1) ||
      (out.getRank() == 5 && out.isDynamicDim(2)))
    return std::nullopt;
  // The KV loop must start at 0 with a constant block size and run to a
  // bound known outside the parallel loop.
  Value ub = t.kvLoop.getUpperBound();
  if (!matchPattern(t.kvLoop.getLowerBound(), m_Zero()) ||
      !getConstantIntValue(t.kvLoop.getStep()) ||
      !(forall.isDefinedOutsideOfLoop(ub) || getConstantIntValue(ub)))
    return std::nullopt;
  return t;
}

/// The attention shape of a tiled attention, for the wave model.
AttentionProblem describe(TiledAttention t) {
  auto q = cast<RankedTensorType>(t.step.getQuery().getType()); // [G, Br, D]
  auto v = cast<RankedTensorType>(t.step.getValue().getType());
  auto out = cast<RankedTensorType>(t.forall.getOutputs()[0].getType());
  auto orDefault = [](int64_t size, int64_t dflt) {
    return ShapedType::isDynamic(size) ? dflt : size;
  };
  AttentionProblem s;
  int64_t g = q.getDimSize(0);
  bool headMajor = out.getRank() == 4;
  s.batch = orDefault(out.getDimSize(0), 1);
  s.heads = headMajor ? out.getDimSize(1) : out.getDimSize(1) * g;
  s.kvHeads = s.heads / g;
  // An unknown query length is not known to be a decode shape.
  s.seqQ = orDefault(out.getDimSize(headMajor ? 2 : 3),
                     std::numeric_limits<int64_t>::max());
  std::optional<int64_t> nk = getConstantIntValue(t.kvLoop.getUpperBound());
  s.seqKV = nk ? *nk : 4096;
  s.headDim = q.getDimSize(2);
  s.headDimV = v.getDimSize(1);
  s.mask = t.step.getMaskOffset() ? ::flashc::Mask::causal()
                                  : ::flashc::Mask::none();
  s.dtype = toElementType(q.getElementType()).value_or(s.dtype);
  return s;
}

/// `[S] ++ sizes` of type f32 (S dynamic when `splits` is kDynamic).
RankedTensorType partsType(int64_t splits, RankedTensorType type) {
  SmallVector<int64_t> shape = {splits};
  llvm::append_range(shape, type.getShape());
  return RankedTensorType::get(shape, Float32Type::get(type.getContext()));
}

/// Splits `t` into `splits` ranges, or into a launch-time number of ranges
/// (flash.split_count) when `splits` is ShapedType::kDynamic.
void splitKV(RewriterBase &rewriter, TiledAttention t, int64_t splits) {
  scf::ForallOp forall = t.forall;
  Location loc = forall.getLoc();
  rewriter.setInsertionPoint(forall);
  int64_t bc = *getConstantIntValue(t.kvLoop.getStep());
  Value oldNk = t.kvLoop.getUpperBound();
  Value nk = oldNk;
  if (std::optional<int64_t> cst = getConstantIntValue(oldNk))
    nk = arith::ConstantIndexOp::create(rewriter, loc, *cst);
  Value bcVal = arith::ConstantIndexOp::create(rewriter, loc, bc);
  bool dynamic = ShapedType::isDynamic(splits);
  Value sVal = dynamic ? SplitCountOp::create(rewriter, loc, rewriter.getIndexType())
                             .getResult()
                       : arith::ConstantIndexOp::create(rewriter, loc, splits)
                             .getResult();
  OpFoldResult sOfr = dynamic ? OpFoldResult(sVal)
                              : OpFoldResult(rewriter.getIndexAttr(splits));
  // chunk = ceil(ceil(Nk / Bc) / S) * Bc keys per split.
  Value blocks = arith::CeilDivSIOp::create(rewriter, loc, nk, bcVal);
  Value chunk = arith::MulIOp::create(
      rewriter, loc, arith::CeilDivSIOp::create(rewriter, loc, blocks, sVal),
      bcVal);

  // f32 partial outputs with a leading split dimension.
  SmallVector<Value> parts;
  bool withLse = t.finalize.getLse() != nullptr;
  SmallVector<Value> outs(forall.getOutputs());
  for (int64_t i = 0; i < 2; ++i) {
    auto type = cast<RankedTensorType>(outs[0].getType());
    if (i == 1)
      type = RankedTensorType::get(type.getShape().drop_back(),
                                   type.getElementType());
    RankedTensorType ptype = partsType(splits, type);
    SmallVector<OpFoldResult> sizes = {sOfr};
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(getDim(rewriter, loc, outs[0], d));
    parts.push_back(
        tensor::EmptyOp::create(rewriter, loc, sizes, ptype.getElementType()));
  }

  SmallVector<OpFoldResult> ubs = forall.getMixedUpperBound();
  ubs.push_back(sOfr);
  auto split = scf::ForallOp::create(rewriter, loc, ubs, parts,
                                     /*mapping=*/std::nullopt);
  FlashDialect::TileLoopAttrHelper(rewriter.getContext())
      .setAttr(split, rewriter.getUnitAttr());

  // Clone the body: old ivs map to the first three new ones.
  IRMapping mapping;
  SmallVector<Value> newIvs = split.getInductionVars();
  for (auto [oldIv, newIv] : llvm::zip(forall.getInductionVars(), newIvs))
    mapping.map(oldIv, newIv);
  Value s = newIvs.back();
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(split.getTerminator());
    Value lo = arith::MulIOp::create(rewriter, loc, s, chunk);
    Value hi = minIndex(rewriter, loc, nk,
                        arith::AddIOp::create(rewriter, loc, lo, chunk));
    for (Operation &op : forall.getBody()->without_terminator()) {
      if (&op == t.finalize.getOperation() ||
          llvm::is_contained(t.outSlices, &op))
        continue;
      if (&op == t.kvLoop.getOperation()) {
        // The split's range; the block size inside is clamped to `hi`.
        IRMapping loopMapping = mapping;
        loopMapping.map(oldNk, hi);
        auto loop = cast<scf::ForOp>(rewriter.clone(op, loopMapping));
        loop.getLowerBoundMutable().assign(lo);
        mapping.map(t.kvLoop.getResults(), loop.getResults());
        continue;
      }
      rewriter.clone(op, mapping);
    }
    // Tiles of the partial outputs: the old tile boxes behind index s.
    SmallVector<Value> tiles;
    SmallVector<SmallVector<OpFoldResult>> offsetsList, sizesList;
    for (auto [i, slice] : llvm::enumerate(t.outSlices)) {
      SmallVector<OpFoldResult> offsets = {s},
                                sizes = {rewriter.getIndexAttr(1)};
      for (OpFoldResult ofr : slice.getMixedOffsets())
        offsets.push_back(
            isa<Value>(ofr)
                ? OpFoldResult(mapping.lookupOrDefault(cast<Value>(ofr)))
                : ofr);
      for (OpFoldResult ofr : slice.getMixedSizes())
        sizes.push_back(isa<Value>(ofr) ? OpFoldResult(mapping.lookupOrDefault(
                                              cast<Value>(ofr)))
                                        : ofr);
      SmallVector<int64_t> dropped = {0};
      llvm::SmallBitVector oldDropped = slice.getDroppedDims();
      for (int64_t d = 0; d < static_cast<int64_t>(oldDropped.size()); ++d)
        if (oldDropped[d])
          dropped.push_back(d + 1);
      tiles.push_back(extractSlice(rewriter, loc, split.getRegionIterArgs()[i],
                                   offsets, sizes, dropped));
      offsetsList.push_back(offsets);
      sizesList.push_back(sizes);
    }
    if (!withLse) {
      // The LSE tile: the output's box without its last dimension.
      SmallVector<OpFoldResult> offsets(offsetsList[0].begin(),
                                        offsetsList[0].end() - 1);
      SmallVector<OpFoldResult> sizes(sizesList[0].begin(),
                                      sizesList[0].end() - 1);
      SmallVector<int64_t> dropped = {0};
      llvm::SmallBitVector oldDropped = t.outSlices[0].getDroppedDims();
      for (int64_t d = 0; d + 1 < static_cast<int64_t>(oldDropped.size()); ++d)
        if (oldDropped[d])
          dropped.push_back(d + 1);
      tiles.push_back(extractSlice(rewriter, loc, split.getRegionIterArgs()[1],
                                   offsets, sizes, dropped));
      offsetsList.push_back(offsets);
      sizesList.push_back(sizes);
    }
    auto fin = FinalizeOp::create(rewriter, loc, TypeRange(ValueRange(tiles)),
                                  mapping.lookup(t.finalize.getAcc()),
                                  mapping.lookup(t.finalize.getMax()),
                                  mapping.lookup(t.finalize.getSum()), tiles[0],
                                  tiles[1]);
    rewriter.setInsertionPointToStart(split.getTerminator().getBody());
    for (int64_t i = 0; i < 2; ++i) {
      SmallVector<OpFoldResult> strides(offsetsList[i].size(),
                                        rewriter.getIndexAttr(1));
      tensor::ParallelInsertSliceOp::create(
          rewriter, loc, fin.getResult(i), split.getRegionIterArgs()[i],
          offsetsList[i], sizesList[i], strides);
    }
  }

  // Merge the partials into the original destinations.
  rewriter.setInsertionPointAfter(split);
  auto combine = CombineOp::create(rewriter, loc, TypeRange(ValueRange(outs)),
                                   split.getResult(0), split.getResult(1),
                                   outs[0], withLse ? outs[1] : Value());
  rewriter.replaceOp(forall, combine.getResults());
}

struct FlashSplitKVPass : flash::impl::FlashSplitKVBase<FlashSplitKVPass> {
  using Base::Base;

  void runOnOperation() override {
    llvm::Expected<TargetInfo> targetInfo = TargetInfo::get(target);
    if (!targetInfo) {
      getOperation()->emitError()
          << "flash-split-kv: " << llvm::toString(targetInfo.takeError());
      return signalPassFailure();
    }
    if (splits < 0 || maxSeqQ < 0) {
      getOperation()->emitError()
          << "flash-split-kv: splits and max-seq-q must be non-negative, got "
          << static_cast<int64_t>(splits) << " and "
          << static_cast<int64_t>(maxSeqQ);
      return signalPassFailure();
    }
    if (splits > flashc::kMaxSplits) {
      getOperation()->emitError()
          << "flash-split-kv: "
          << flashc::checkRange(splits, "splits", 0, flashc::kMaxSplits);
      return signalPassFailure();
    }
    if (dynamicSplits && splits != 0) {
      getOperation()->emitError()
          << "flash-split-kv: dynamic-splits excludes a fixed count (splits = "
          << static_cast<int64_t>(splits) << ")";
      return signalPassFailure();
    }
    SmallVector<TiledAttention> matches;
    FlashDialect::TileLoopAttrHelper tileLoop(&getContext());
    getOperation()->walk([&](scf::ForallOp forall) {
      if (std::optional<TiledAttention> t = matchTiled(forall)) {
        matches.push_back(*t);
      } else if (tileLoop.isAttrPresent(forall)) {
        LLVM_DEBUG(DBGS() << "tile loop at " << forall.getLoc()
                          << " left as it is: not one KV loop from 0 and a "
                             "finalize into its shared outputs, as "
                             "flash-tile builds them\n");
        ++numUnmatched;
      }
    });
    IRRewriter rewriter(&getContext());
    for (TiledAttention &t : matches) {
      if (dynamicSplits) {
        LLVM_DEBUG(DBGS() << "tile loop at " << t.forall.getLoc()
                          << ": split count chosen at launch\n");
        splitKV(rewriter, t, ShapedType::kDynamic);
        ++numDynamic;
        continue;
      }
      AttentionProblem shape = describe(t);
      if (shape.seqQ > maxSeqQ) {
        LLVM_DEBUG({
          DBGS() << "tile loop at " << t.forall.getLoc()
                 << " left whole: Nq = ";
          if (shape.seqQ == std::numeric_limits<int64_t>::max())
            llvm::dbgs() << "(dynamic)";
          else
            llvm::dbgs() << shape.seqQ;
          llvm::dbgs() << " > max-seq-q = " << maxSeqQ << "\n";
        });
        ++numWhole;
        continue;
      }
      int64_t bc = *getConstantIntValue(t.kvLoop.getStep());
      int64_t count = splits;
      if (count == 0) {
        TileSizes tiles;
        tiles.blockQ = shape.seqQ;
        tiles.blockKV = bc;
        llvm::Expected<WavePrediction> best =
            chooseSplits(*targetInfo, shape, tiles);
        if (!best) {
          std::string why = llvm::toString(best.takeError());
          LLVM_DEBUG(DBGS() << "tile loop at " << t.forall.getLoc()
                            << " left whole: the wave model has no answer ("
                            << why << ")\n");
          (void)why;
          ++numWhole;
          continue;
        }
        count = best->splits;
        LLVM_DEBUG(DBGS() << "tile loop at " << t.forall.getLoc()
                          << ": the wave model on " << targetInfo->name
                          << " picks " << count << " splits (B=" << shape.batch
                          << " Hq=" << shape.heads << " Nq=" << shape.seqQ
                          << " Nk=" << shape.seqKV << " Bc=" << bc << ")\n");
      }
      // Every split keeps at least one KV block when Nk is known.
      if (std::optional<int64_t> nk =
              getConstantIntValue(t.kvLoop.getUpperBound())) {
        int64_t blocks = flashc::ceilDiv(*nk, bc);
        if (count > blocks)
          LLVM_DEBUG(DBGS() << "capped at " << blocks << " splits, the KV "
                            << "blocks of " << *nk << " keys\n");
        count = std::min(count, blocks);
      }
      if (count <= 1) {
        LLVM_DEBUG(DBGS() << "tile loop at " << t.forall.getLoc()
                          << " left whole: " << count << " split\n");
        ++numWhole;
        continue;
      }
      LLVM_DEBUG(DBGS() << "tile loop at " << t.forall.getLoc() << " split "
                        << count << " ways\n");
      splitKV(rewriter, t, count);
      ++numSplit;
      numSplits += count;
    }
  }
};

} // namespace
