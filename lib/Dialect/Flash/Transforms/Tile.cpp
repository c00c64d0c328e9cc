//===- Tile.cpp - Tile the online attention loop to SRAM ------------------===//
//
// Implements `flash-tile`. The input is the online form produced by
// flash-online-softmax: a KV loop over [B, Hkv, G, Nq, *] state followed by
// one flash.finalize. The pass rebuilds it in one of the two loop orders of
// the FlashAttention papers with blocks of Br query rows (per head) and Bc
// keys chosen from the target's SRAM capacity:
//
//  - FA2: scf.forall (b, h, q-block) { state tile; KV loop; finalize tile }
//  - algorithm 1: KV loop { scf.forall (b, h, q-block) { update state tile } }
//    then finalize.
//
// In both, the step ops work on one [G, Br, D] Q tile (the G heads of a GQA
// group packed as rows) against one [Bc, D] K and [Bc, Dv] V block.
//
//===----------------------------------------------------------------------===//

#include "AttentionUtils.h"

#include "flashc/Analysis/AttentionSchedule.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"
#include "flashc/Support/Sizes.h"
#include "flashc/Target/TargetInfo.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Debug.h"

#include <limits>
#include <tuple>

#define DEBUG_TYPE "flash-tile"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHTILE
#include "flashc/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// The pieces of an untiled online attention, as flash-online-softmax
/// builds it.
struct OnlineAttention {
  scf::ForOp loop;
  AttentionStepOp step;
  FinalizeOp finalize;
  Value query; // [B, Hkv, G, Nq, D]
  Value key;   // [B, Hkv, Nk, D]
  Value value; // [B, Hkv, Nk, Dv]
  bool causal;
  FloatAttr scale;
  Value scaleFactor; // the run-time factor of the scale, or null
};

/// Matches the online form rooted at a KV loop; returns std::nullopt (and
/// leaves the IR alone) for anything else.
std::optional<OnlineAttention> matchOnline(scf::ForOp loop) {
  if (!FlashDialect::KvLoopAttrHelper(loop.getContext()).isAttrPresent(loop) ||
      loop.getNumResults() != 3)
    return std::nullopt;
  AttentionStepOp step = getKVLoopStep(loop);
  if (!step || cast<ShapedType>(step.getQuery().getType()).getRank() != 5 ||
      !isa<RankedTensorType>(step.getQuery().getType()))
    return std::nullopt;
  auto kSlice = step.getKey().getDefiningOp<tensor::ExtractSliceOp>();
  auto vSlice = step.getValue().getDefiningOp<tensor::ExtractSliceOp>();
  if (!kSlice || !vSlice || !loop.isDefinedOutsideOfLoop(step.getQuery()) ||
      !loop.isDefinedOutsideOfLoop(kSlice.getSource()) ||
      !loop.isDefinedOutsideOfLoop(vSlice.getSource()) ||
      (step.getScaleFactor() &&
       !loop.isDefinedOutsideOfLoop(step.getScaleFactor())))
    return std::nullopt;
  FinalizeOp finalize;
  for (Operation *user : loop->getUsers()) {
    auto f = dyn_cast<FinalizeOp>(user);
    if (!f || (finalize && finalize != f))
      return std::nullopt;
    finalize = f;
  }
  if (!finalize || finalize.getAcc() != loop.getResult(0) ||
      finalize.getMax() != loop.getResult(1) ||
      finalize.getSum() != loop.getResult(2))
    return std::nullopt;
  return OnlineAttention{loop,
                         step,
                         finalize,
                         step.getQuery(),
                         kSlice.getSource(),
                         vSlice.getSource(),
                         static_cast<bool>(step.getMaskOffset()),
                         step.getScaleAttr(), step.getScaleFactor()};
}

/// Describes the problem for the tile-size model; dynamic sizes are
/// replaced by a representative length.
AttentionProblem describe(OnlineAttention a) {
  auto q = cast<RankedTensorType>(a.query.getType());
  auto k = cast<RankedTensorType>(a.key.getType());
  auto v = cast<RankedTensorType>(a.value.getType());
  auto orDefault = [](int64_t size, int64_t dflt) {
    return ShapedType::isDynamic(size) ? dflt : size;
  };
  AttentionProblem s;
  s.batch = orDefault(q.getDimSize(0), 1);
  s.kvHeads = q.getDimSize(1);
  s.heads = q.getDimSize(1) * q.getDimSize(2);
  s.seqQ = orDefault(q.getDimSize(3), 4096);
  s.seqKV = orDefault(k.getDimSize(2), 4096);
  s.headDim = q.getDimSize(4);
  s.headDimV = v.getDimSize(3);
  s.mask = a.causal ? ::flashc::Mask::causal() : ::flashc::Mask::none();
  s.dtype = toElementType(q.getElementType()).value_or(s.dtype);
  return s;
}

/// Index values shared by both loop orders.
struct Dims {
  OpFoldResult batch, nq, nk;
  int64_t hkv, g, d, dv;
  Value diag; // Nk - Nq, when causal
};

Dims getDims(OpBuilder &b, Location loc, OnlineAttention a) {
  auto q = cast<RankedTensorType>(a.query.getType());
  Dims dims;
  dims.batch = getDim(b, loc, a.query, 0);
  dims.nq = getDim(b, loc, a.query, 3);
  dims.nk = getDim(b, loc, a.key, 2);
  dims.hkv = q.getDimSize(1);
  dims.g = q.getDimSize(2);
  dims.d = q.getDimSize(4);
  dims.dv = cast<RankedTensorType>(a.value.getType()).getDimSize(3);
  if (a.causal)
    dims.diag = arith::SubIOp::create(b, loc, toValue(b, loc, dims.nk),
                                      toValue(b, loc, dims.nq));
  return dims;
}

/// The causal offset of the Q block starting at `q0` at key 0:
/// (Nk - Nq) + q0, or null without a mask.
Value causalBase(OpBuilder &b, Location loc, const Dims &dims, Value q0) {
  if (!dims.diag)
    return nullptr;
  return arith::AddIOp::create(b, loc, dims.diag, q0);
}

/// Builds the step of one Q tile against the KV block at `j`: slices K and V
/// of head `h` of batch `bIdx`, computes the causal offset `base - j` and
/// creates the step on `state`. Returns the step's results.
ValueRange buildTileStep(OpBuilder &b, Location loc, OnlineAttention a,
                         const Dims &dims, Value qTile, Value bIdx, Value h,
                         Value base, Value j, Value n, ValueRange state) {
  auto idx = [&](int64_t i) -> OpFoldResult { return b.getIndexAttr(i); };
  Value kb = extractSlice(b, loc, a.key, {bIdx, h, j, idx(0)},
                          {idx(1), idx(1), n, idx(dims.d)}, {0, 1});
  Value vb = extractSlice(b, loc, a.value, {bIdx, h, j, idx(0)},
                          {idx(1), idx(1), n, idx(dims.dv)}, {0, 1});
  Value offset;
  if (base)
    offset = arith::SubIOp::create(b, loc, base, j);
  auto step =
      AttentionStepOp::create(b, loc, TypeRange(state), qTile, kb, vb, offset,
                              state[0], state[1], state[2], a.scaleFactor,
                              a.scale);
  return step.getResults();
}

/// The start and size of Q block `qi`.
std::pair<Value, Value> qBlock(OpBuilder &b, Location loc, const Dims &dims,
                               Value qi, int64_t blockQ) {
  Value bq = arith::ConstantIndexOp::create(b, loc, blockQ);
  Value q0 = arith::MulIOp::create(b, loc, qi, bq);
  Value rest = arith::SubIOp::create(b, loc, toValue(b, loc, dims.nq), q0);
  return {q0, minIndex(b, loc, bq, rest)};
}

/// The parallel iteration space (B, Hkv, ceil(Nq / Br)).
SmallVector<OpFoldResult> tileSpace(OpBuilder &b, Location loc,
                                    const Dims &dims, int64_t blockQ) {
  Value bq = arith::ConstantIndexOp::create(b, loc, blockQ);
  Value tq = arith::CeilDivSIOp::create(b, loc, toValue(b, loc, dims.nq), bq);
  return {dims.batch, b.getIndexAttr(dims.hkv), tq};
}

/// Offsets and sizes of the [G, br, ...] tile of (bIdx, h, q0) in `full`,
/// which is either [B, Hkv, G, Nq, ...] (grouped, `h` is the KV head) or
/// [B, Hq, Nq, ...] (head-major, `h` is the first query head of the group).
/// Returns the dimensions a rank-reducing slice drops.
SmallVector<int64_t> tileBox(OpBuilder &b, Location loc, Value full,
                             bool grouped, int64_t g, Value bIdx, Value h,
                             Value q0, Value br,
                             SmallVector<OpFoldResult> &offsets,
                             SmallVector<OpFoldResult> &sizes) {
  auto type = cast<RankedTensorType>(full.getType());
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  if (grouped) {
    offsets = {bIdx, h, zero, q0};
    sizes = {one, one, b.getIndexAttr(g), br};
  } else {
    // Head-major: `h` is the first of the G heads of the group.
    offsets = {bIdx, h, q0};
    sizes = {one, b.getIndexAttr(g), br};
  }
  int64_t lead = offsets.size();
  if (type.getRank() > lead) {
    offsets.push_back(zero);
    sizes.push_back(b.getIndexAttr(type.getDimSize(lead)));
  }
  return grouped ? SmallVector<int64_t>{0, 1} : SmallVector<int64_t>{0};
}

/// Slices the [G, br, ...] tile of (bIdx, h, q0) out of `full`.
Value tileOf(OpBuilder &b, Location loc, Value full, bool grouped, int64_t g,
             Value bIdx, Value h, Value q0, Value br) {
  SmallVector<OpFoldResult> offsets, sizes;
  SmallVector<int64_t> dropped =
      tileBox(b, loc, full, grouped, g, bIdx, h, q0, br, offsets, sizes);
  return extractSlice(b, loc, full, offsets, sizes, dropped);
}

/// Inserts the [G, br, ...] tile into the shared output `dest` of the
/// enclosing scf.forall.
void insertTile(OpBuilder &b, Location loc, Value tile, Value dest,
                bool grouped, int64_t g, Value bIdx, Value h, Value q0,
                Value br) {
  SmallVector<OpFoldResult> offsets, sizes;
  (void)tileBox(b, loc, dest, grouped, g, bIdx, h, q0, br, offsets, sizes);
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  tensor::ParallelInsertSliceOp::create(b, loc, tile, dest, offsets, sizes,
                                        strides);
}

/// If `v` is the [B, Hkv, G, Nq, ...] expansion of a head-major
/// [B, Hq, Nq, ...] tensor, returns that tensor.
Value headMajorSource(Value v) {
  auto expand = v.getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand ||
      expand.getSrcType().getRank() + 1 != expand.getResultType().getRank())
    return nullptr;
  SmallVector<ReassociationIndices> reassoc = expand.getReassociationIndices();
  if (reassoc.size() < 2 || reassoc[1] != ReassociationIndices{1, 2})
    return nullptr;
  return expand.getSrc();
}

/// Erases `root` (which must have no users) and, transitively, the
/// side-effect-free producers it leaves without users.
void eraseWithDeadProducers(RewriterBase &rewriter, Operation *root) {
  SmallVector<Operation *> worklist = {root};
  llvm::SmallPtrSet<Operation *, 16> erased;
  while (!worklist.empty()) {
    Operation *cur = worklist.pop_back_val();
    if (erased.contains(cur) || !cur->use_empty())
      continue;
    // Producers of the values it uses, including inside its regions.
    SmallVector<Operation *> producers;
    cur->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (!cur->isAncestor(def))
            producers.push_back(def);
    });
    erased.insert(cur);
    rewriter.eraseOp(cur);
    for (Operation *def : producers)
      if (!erased.contains(def) && def->use_empty() && isMemoryEffectFree(def))
        worklist.push_back(def);
  }
}

/// FA2 order: one work item per (batch, kv-head, Q block) runs the whole KV
/// loop on a tile-sized state and finalizes its slice of the output. When
/// the output is the expansion of a head-major tensor whose only use is the
/// matching collapse (as flash-online-softmax builds it), the work items
/// write straight into the head-major tensor, so no reshape stands between
/// the loop and the caller's buffer.
void tileFA2(RewriterBase &rewriter, OnlineAttention a, TileSizes tiles) {
  Location loc = a.loop.getLoc();
  FinalizeOp fin = a.finalize;
  rewriter.setInsertionPoint(fin);
  Dims dims = getDims(rewriter, loc, a);

  // Destinations, head-major when possible.
  SmallVector<Value> outs = {fin.getOut()};
  if (fin.getLse())
    outs.push_back(fin.getLse());
  SmallVector<tensor::CollapseShapeOp> collapses;
  for (Value res : fin.getResults()) {
    auto collapse = res.hasOneUse()
                        ? dyn_cast<tensor::CollapseShapeOp>(*res.user_begin())
                        : tensor::CollapseShapeOp();
    if (collapse)
      collapses.push_back(collapse);
  }
  bool headMajor =
      collapses.size() == outs.size() &&
      llvm::all_of(outs, [](Value v) { return headMajorSource(v); });
  if (headMajor)
    for (Value &out : outs)
      out = headMajorSource(out);
  Value q = headMajorSource(a.query);
  bool qHeadMajor = static_cast<bool>(q);
  if (!q)
    q = a.query;

  auto forall = scf::ForallOp::create(
      rewriter, loc, tileSpace(rewriter, loc, dims, tiles.blockQ), outs,
      /*mapping=*/std::nullopt);
  FlashDialect::TileLoopAttrHelper(rewriter.getContext())
      .setAttr(forall, rewriter.getUnitAttr());

  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(forall.getTerminator());
  SmallVector<Value> ivs = forall.getInductionVars();
  Value bIdx = ivs[0], h = ivs[1];
  auto [q0, br] = qBlock(rewriter, loc, dims, ivs[2], tiles.blockQ);
  // The G query heads of KV head h are heads h * G .. h * G + G - 1.
  Value firstHead = arith::MulIOp::create(
      rewriter, loc, h, arith::ConstantIndexOp::create(rewriter, loc, dims.g));
  Value qTile = tileOf(rewriter, loc, q, !qHeadMajor, dims.g, bIdx,
                       qHeadMajor ? firstHead : h, q0, br);

  auto idx = [&](int64_t i) -> OpFoldResult {
    return rewriter.getIndexAttr(i);
  };
  Type f32 = rewriter.getF32Type();
  double negInf = -std::numeric_limits<double>::infinity();
  SmallVector<OpFoldResult> rows = {idx(dims.g), br};
  SmallVector<OpFoldResult> accSizes = {idx(dims.g), br, idx(dims.dv)};
  SmallVector<Value> init = {createFilled(rewriter, loc, accSizes, f32, 0.0),
                             createFilled(rewriter, loc, rows, f32, negInf),
                             createFilled(rewriter, loc, rows, f32, 0.0)};

  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value bc = arith::ConstantIndexOp::create(rewriter, loc, tiles.blockKV);
  Value nk = toValue(rewriter, loc, dims.nk);
  Value base = causalBase(rewriter, loc, dims, q0);
  auto kvLoop = scf::ForOp::create(
      rewriter, loc, zero, nk, bc, init,
      [&](OpBuilder &b, Location loc, Value j, ValueRange state) {
        Value n = minIndex(b, loc, bc, arith::SubIOp::create(b, loc, nk, j));
        scf::YieldOp::create(
            b, loc,
            buildTileStep(b, loc, a, dims, qTile, bIdx, h, base, j, n, state));
      });
  FlashDialect::KvLoopAttrHelper(rewriter.getContext())
      .setAttr(kvLoop, rewriter.getUnitAttr());

  SmallVector<Value> shared(forall.getRegionIterArgs());
  SmallVector<Value> tileOuts;
  for (Value out : shared)
    tileOuts.push_back(tileOf(rewriter, loc, out, !headMajor, dims.g, bIdx,
                              headMajor ? firstHead : h, q0, br));
  auto tileFin = FinalizeOp::create(
      rewriter, loc, TypeRange(ValueRange(tileOuts)), kvLoop.getResult(0),
      kvLoop.getResult(1), kvLoop.getResult(2), tileOuts[0],
      tileOuts.size() > 1 ? tileOuts[1] : Value());

  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [res, dest] : llvm::zip(tileFin.getResults(), shared))
    insertTile(rewriter, loc, res, dest, !headMajor, dims.g, bIdx,
               headMajor ? firstHead : h, q0, br);

  if (headMajor) {
    for (auto [collapse, res] : llvm::zip(collapses, forall.getResults()))
      rewriter.replaceOp(collapse, res);
  } else {
    rewriter.replaceAllUsesWith(fin.getResults(), forall.getResults());
  }
  // The finalize, the untiled loop and its initial state are now dead.
  eraseWithDeadProducers(rewriter, fin);
}

/// Algorithm-1 order: a sequential loop over KV blocks around a parallel
/// loop over Q tiles that update the full-size state; the finalize stays.
void tileAlgorithm1(RewriterBase &rewriter, OnlineAttention a,
                    TileSizes tiles) {
  Location loc = a.loop.getLoc();
  rewriter.setInsertionPoint(a.loop);
  Dims dims = getDims(rewriter, loc, a);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value bc = arith::ConstantIndexOp::create(rewriter, loc, tiles.blockKV);
  Value nk = toValue(rewriter, loc, dims.nk);
  SmallVector<OpFoldResult> space =
      tileSpace(rewriter, loc, dims, tiles.blockQ);

  auto outer = scf::ForOp::create(
      rewriter, loc, zero, nk, bc, a.loop.getInitArgs(),
      [&](OpBuilder &b, Location loc, Value j, ValueRange state) {
        Value n = minIndex(b, loc, bc, arith::SubIOp::create(b, loc, nk, j));
        auto forall = scf::ForallOp::create(b, loc, space, state,
                                            /*mapping=*/std::nullopt);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(forall.getTerminator());
        SmallVector<Value> ivs = forall.getInductionVars();
        auto [q0, br] = qBlock(b, loc, dims, ivs[2], tiles.blockQ);
        Value qTile =
            tileOf(b, loc, a.query, true, dims.g, ivs[0], ivs[1], q0, br);
        SmallVector<Value> tileState;
        for (Value s : forall.getRegionIterArgs())
          tileState.push_back(
              tileOf(b, loc, s, true, dims.g, ivs[0], ivs[1], q0, br));
        ValueRange updated =
            buildTileStep(b, loc, a, dims, qTile, ivs[0], ivs[1],
                          causalBase(b, loc, dims, q0), j, n, tileState);
        b.setInsertionPointToStart(forall.getTerminator().getBody());
        for (auto [res, dest] : llvm::zip(updated, forall.getRegionIterArgs()))
          insertTile(b, loc, res, dest, true, dims.g, ivs[0], ivs[1], q0, br);
        b.setInsertionPointAfter(forall);
        scf::YieldOp::create(b, loc, forall.getResults());
      });
  FlashDialect::KvLoopAttrHelper(rewriter.getContext())
      .setAttr(outer, rewriter.getUnitAttr());
  rewriter.replaceAllUsesWith(a.loop.getResults(), outer.getResults());
  eraseWithDeadProducers(rewriter, a.loop);
}

struct FlashTilePass : flash::impl::FlashTileBase<FlashTilePass> {
  using Base::Base;

  void runOnOperation() override {
    llvm::Expected<TargetInfo> targetInfo = TargetInfo::get(target);
    if (!targetInfo) {
      getOperation()->emitError()
          << "flash-tile: " << llvm::toString(targetInfo.takeError());
      return signalPassFailure();
    }
    if (sramBytes < 0 || blockQ < 0 || blockKV < 0) {
      getOperation()->emitError()
          << "flash-tile: sram-bytes, block-q and block-kv must be "
             "non-negative, got "
          << static_cast<int64_t>(sramBytes) << ", "
          << static_cast<int64_t>(blockQ) << ", "
          << static_cast<int64_t>(blockKV);
      return signalPassFailure();
    }
    for (auto [v, name, hi] :
         {std::tuple<int64_t, const char *, int64_t>{
              blockQ, "block-q", flashc::kMaxBlockSize},
          {blockKV, "block-kv", flashc::kMaxBlockSize},
          {sramBytes, "sram-bytes", flashc::kMaxSramBytes}}) {
      std::string problem = flashc::checkRange(v, name, 0, hi);
      if (!problem.empty()) {
        getOperation()->emitError() << "flash-tile: " << problem;
        return signalPassFailure();
      }
    }
    if (std::string why = flashc::whyNotPipelineStageCount(stages);
        !why.empty()) {
      getOperation()->emitError() << "flash-tile: " << why;
      return signalPassFailure();
    }
    if (std::string why = flashc::whyNotGlobalAlignment(alignment);
        !why.empty()) {
      getOperation()->emitError() << "flash-tile: " << why;
      return signalPassFailure();
    }
    if (sramBytes > 0)
      targetInfo->sramBytes = sramBytes;
    std::optional<LoopOrder> order = parseLoopOrder(loopOrder);
    if (!order) {
      getOperation()->emitError()
          << "flash-tile: unknown loop-order '" << loopOrder
          << "'; expected fa2 or algorithm1";
      return signalPassFailure();
    }

    SmallVector<OnlineAttention> matches;
    getOperation()->walk([&](scf::ForOp loop) {
      if (std::optional<OnlineAttention> m = matchOnline(loop))
        matches.push_back(*m);
    });
    // Head counts and head dims decide the tiles and the loop structure:
    // they must be static (flash.attention's verifier requires it; a
    // hand-written online loop might not).
    for (OnlineAttention &a : matches) {
      auto q = cast<RankedTensorType>(a.query.getType());
      auto v = cast<RankedTensorType>(a.value.getType());
      if (q.isDynamicDim(1) || q.isDynamicDim(2) || q.isDynamicDim(4) ||
          v.isDynamicDim(3)) {
        a.loop->emitError()
            << "flash-tile: head counts and head dims must be static, got "
               "query "
            << q << " and value " << v;
        return signalPassFailure();
      }
    }
    IRRewriter rewriter(&getContext());
    for (OnlineAttention &a : matches) {
      AttentionProblem shape = describe(a);
      TileSizes tiles = chooseTileSizes(*targetInfo, shape, *order, wideWarps,
                                        stages, warpgroupMma, alignment);
      LLVM_DEBUG(DBGS() << "loop at " << a.loop.getLoc()
                        << ": the model's shape B=" << shape.batch
                        << " Hq=" << shape.heads << " Hkv=" << shape.kvHeads
                        << " Nq=" << shape.seqQ << " Nk=" << shape.seqKV
                        << " D=" << shape.headDim << " Dv=" << shape.valueDim()
                        << "; " << targetInfo->name << " ("
                        << targetInfo->sramBytes << " bytes of SRAM) gives Br="
                        << tiles.blockQ << " Bc=" << tiles.blockKV << "\n");
      if (blockQ > 0)
        tiles.blockQ = blockQ;
      if (blockKV > 0)
        tiles.blockKV = blockKV;
      LLVM_DEBUG(DBGS() << "tiles Br=" << tiles.blockQ
                        << " Bc=" << tiles.blockKV << " ("
                        << (blockQ > 0 || blockKV > 0 ? "options override"
                                                      : "from the target")
                        << "), "
                        << (*order == LoopOrder::FA2 ? "FA2" : "algorithm-1")
                        << " order\n");
      if (*order == LoopOrder::FA2) {
        tileFA2(rewriter, a, tiles);
        ++numTiledFA2;
      } else {
        tileAlgorithm1(rewriter, a, tiles);
        ++numTiledAlgorithm1;
      }
    }
  }
};

} // namespace
