//===- CausalSkip.cpp - Skip fully masked KV blocks -----------------------===//
//
// Implements `flash-causal-skip`. A KV loop whose step carries the causal
// offset o(j) = c - j (key j + t is visible to row r iff t <= r + o(j)) is
// replaced by two loops over the same state:
//
//   [lb, fullEnd)   blocks every row of the Q block sees entirely: no mask
//   [fullEnd, end)  diagonal blocks: mask kept
//
// with end = min(ub, max(lb, c + Br)) (no row sees a key at or past c + Br)
// and fullEnd = min(end, lb + max(0, c + 1 - lb) floordiv Bc * Bc), or end
// when every key below ub is visible to the first row. Inside
// each loop, the block size min(Bc, ub - j) is clamped to the new upper
// bound, so no key past `end` is read. Where the `split-diagonal` option
// says not to split (`never`; `decode` outside functions marked
// flash.decode: the CPU's prefill, whose masked step costs no more than its
// unmasked one on a block every row sees; `prefill` in the loops over one
// KV split of a flash-decoding kernel: the GPU's decode, whose masked step
// skips the mask on a block every row sees), the loop is only bounded: one
// loop over [lb, end) of masked steps, and one copy of the step's code.
//
// Where the bounds are constants, or functions of the induction variables
// of the enclosing tile loop (static shapes), the pass also counts the
// blocks that run without the mask, with it, and not at all, over every
// tile: the statistics, and the -debug-only=flash-causal-skip output.
//
//===----------------------------------------------------------------------===//

#include "AttentionUtils.h"

#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#include <array>
#include <limits>
#include <tuple>

#define DEBUG_TYPE "flash-causal-skip"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHCAUSALSKIP
#include "flashc/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// Clones `loop` over [lb, ub) starting from `inits`; uses of the old upper
/// bound inside the body (the block-size computation) see `ub`. Drops the
/// step's mask when `unmasked`.
scf::ForOp cloneWithBounds(RewriterBase &rewriter, scf::ForOp loop, Value lb,
                           Value ub, ValueRange inits, bool unmasked) {
  IRMapping mapping;
  mapping.map(loop.getUpperBound(), ub);
  auto clone = cast<scf::ForOp>(rewriter.clone(*loop, mapping));
  clone.getLowerBoundMutable().assign(lb);
  clone.getUpperBoundMutable().assign(ub);
  clone.getInitArgsMutable().assign(inits);
  if (unmasked) {
    AttentionStepOp step = getKVLoopStep(clone);
    Value offset = step.getMaskOffset();
    step.getMaskOffsetMutable().clear();
    if (Operation *def = offset.getDefiningOp())
      if (def->use_empty() && def->getParentOp() == clone)
        rewriter.eraseOp(def);
  }
  return clone;
}

/// The offset `c` at key 0 of a masked KV loop whose step's mask offset is
/// `c - j`, with `c` and the query defined outside the loop; null for any
/// other mask, which the pass cannot analyse.
Value getCausalBase(scf::ForOp loop, AttentionStepOp step) {
  auto sub = step.getMaskOffset().getDefiningOp<arith::SubIOp>();
  if (!sub || sub.getRhs() != loop.getInductionVar() ||
      !loop.isDefinedOutsideOfLoop(sub.getLhs()) ||
      !loop.isDefinedOutsideOfLoop(step.getQuery()))
    return nullptr;
  return sub.getLhs();
}

//===----------------------------------------------------------------------===//
// Counting the blocks, where the bounds are known when compiling
//===----------------------------------------------------------------------===//

/// Values bound to numbers: the induction variables of a parallel loop.
using Bindings = llvm::DenseMap<Value, int64_t>;

std::optional<int64_t> evaluate(Value v, const Bindings &env,
                                llvm::SetVector<Value> &unbound, int depth);

/// Size `i` of the tensor `shaped` under `env`: static, or the size of the
/// slice that defines it.
std::optional<int64_t> evaluateDim(Value shaped, int64_t i, const Bindings &env,
                                   llvm::SetVector<Value> &unbound, int depth) {
  auto type = dyn_cast<RankedTensorType>(shaped.getType());
  if (!type || i < 0 || i >= type.getRank())
    return std::nullopt;
  if (!type.isDynamicDim(i))
    return type.getDimSize(i);
  auto slice = shaped.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return std::nullopt;
  // Result dimension i of a rank-reducing slice is its i-th kept size.
  llvm::SmallBitVector dropped = slice.getDroppedDims();
  int64_t kept = -1;
  for (auto [d, size] : llvm::enumerate(slice.getMixedSizes())) {
    if (dropped[d] || ++kept != i)
      continue;
    if (std::optional<int64_t> cst = getConstantIntValue(size))
      return *cst;
    return evaluate(cast<Value>(size), env, unbound, depth + 1);
  }
  return std::nullopt;
}

/// The value of the index `v` under `env`, for the arithmetic that
/// flash-online-softmax, flash-tile and flash-split-kv build bounds and
/// offsets from: constants, add, sub, mul, min, max, floor and ceil
/// division, and tensor sizes. None for anything else, on overflow, or
/// when `v` depends on a block argument that `env` does not bind; those
/// arguments are added to `unbound`.
std::optional<int64_t> evaluate(Value v, const Bindings &env,
                                llvm::SetVector<Value> &unbound,
                                int depth = 0) {
  if (depth > 64)
    return std::nullopt;
  if (std::optional<int64_t> cst = getConstantIntValue(v))
    return *cst;
  if (isa<BlockArgument>(v)) {
    auto it = env.find(v);
    if (it != env.end())
      return it->second;
    unbound.insert(v);
    return std::nullopt;
  }
  Operation *def = v.getDefiningOp();
  if (auto dim = dyn_cast<tensor::DimOp>(def)) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index)
      return std::nullopt;
    return evaluateDim(dim.getSource(), *index, env, unbound, depth);
  }
  if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::MinSIOp,
           arith::MaxSIOp, arith::FloorDivSIOp, arith::CeilDivSIOp>(def))
    return std::nullopt;
  // Both operands, so that `unbound` collects every argument.
  std::optional<int64_t> a =
      evaluate(def->getOperand(0), env, unbound, depth + 1);
  std::optional<int64_t> b =
      evaluate(def->getOperand(1), env, unbound, depth + 1);
  if (!a || !b)
    return std::nullopt;
  auto divide = [&](bool ceil) -> std::optional<int64_t> {
    if (*b == 0 || (*a == std::numeric_limits<int64_t>::min() && *b == -1))
      return std::nullopt;
    return ceil ? llvm::divideCeilSigned(*a, *b)
                : llvm::divideFloorSigned(*a, *b);
  };
  return llvm::TypeSwitch<Operation *, std::optional<int64_t>>(def)
      .Case([&](arith::AddIOp) { return llvm::checkedAdd(*a, *b); })
      .Case([&](arith::SubIOp) { return llvm::checkedSub(*a, *b); })
      .Case([&](arith::MulIOp) { return llvm::checkedMul(*a, *b); })
      .Case([&](arith::MinSIOp) { return std::min(*a, *b); })
      .Case([&](arith::MaxSIOp) { return std::max(*a, *b); })
      .Case([&](arith::FloorDivSIOp) { return divide(/*ceil=*/false); })
      .Case([&](arith::CeilDivSIOp) { return divide(/*ceil=*/true); })
      .Default([](Operation *) { return std::nullopt; });
}

/// How the blocks of a KV loop fall once it is split.
struct BlockCounts {
  int64_t full = 0, masked = 0, skipped = 0;
};

/// The blocks of the loop over [lb, ub) in steps of bc, for a Q block of
/// `rows` rows at offset c: the bounds skipMaskedBlocks computes, with
/// numbers. None for sizes beyond 2^40 (no overflow below that).
std::optional<BlockCounts> classify(int64_t c, int64_t rows, int64_t lb,
                                    int64_t ub, int64_t bc) {
  constexpr int64_t kLimit = int64_t(1) << 40;
  for (int64_t x : {c, rows, lb, ub})
    if (x < -kLimit || x > kLimit)
      return std::nullopt;
  if (bc <= 0 || bc > kLimit)
    return std::nullopt;
  auto blocks = [&](int64_t from, int64_t to) -> int64_t {
    return to > from ? llvm::divideCeilSigned(to - from, bc) : 0;
  };
  int64_t end = std::min(ub, std::max(lb, c + rows));
  int64_t fullEnd =
      std::min(end, lb + std::max<int64_t>(0, c + 1 - lb) / bc * bc);
  if (ub <= c + 1)
    fullEnd = end;
  BlockCounts n;
  n.full = blocks(lb, fullEnd);
  n.masked = blocks(fullEnd, end);
  n.skipped = blocks(lb, ub) - n.full - n.masked;
  return n;
}

/// The blocks of `loop` (offset `c` at key 0) summed over every iteration
/// of the enclosing scf.forall, when its bounds, the query tile's rows and
/// `c` are constants or functions of the forall's induction variables
/// (static shapes); none otherwise.
std::optional<BlockCounts> countBlocks(scf::ForOp loop, AttentionStepOp step,
                                       Value c) {
  Value query = step.getQuery();
  int64_t rowDim = cast<ShapedType>(query.getType()).getRank() - 2;
  auto evaluateAll = [&](const Bindings &env, llvm::SetVector<Value> &unbound)
      -> std::optional<std::array<int64_t, 5>> {
    std::optional<int64_t> values[] = {
        evaluate(c, env, unbound), evaluateDim(query, rowDim, env, unbound, 0),
        evaluate(loop.getLowerBound(), env, unbound),
        evaluate(loop.getUpperBound(), env, unbound),
        evaluate(loop.getStep(), env, unbound)};
    std::array<int64_t, 5> result;
    for (auto [i, value] : llvm::enumerate(values)) {
      if (!value)
        return std::nullopt;
      result[i] = *value;
    }
    return result;
  };

  // Which induction variables the bounds depend on.
  llvm::SetVector<Value> ivs;
  (void)evaluateAll(Bindings(), ivs);
  int64_t copies = 1;
  SmallVector<std::tuple<Value, int64_t, int64_t, int64_t>> ranges;
  if (auto forall = loop->getParentOfType<scf::ForallOp>()) {
    for (auto [iv, lbOfr, ubOfr, stepOfr] :
         llvm::zip(forall.getInductionVars(), forall.getMixedLowerBound(),
                   forall.getMixedUpperBound(), forall.getMixedStep())) {
      auto bound = [](OpFoldResult ofr) -> std::optional<int64_t> {
        if (std::optional<int64_t> cst = getConstantIntValue(ofr))
          return cst;
        llvm::SetVector<Value> unused;
        return evaluate(cast<Value>(ofr), Bindings(), unused);
      };
      std::optional<int64_t> lo = bound(lbOfr), hi = bound(ubOfr),
                             st = bound(stepOfr);
      if (!lo || !hi || !st || *st <= 0)
        return std::nullopt;
      int64_t trips = *hi > *lo ? llvm::divideCeilSigned(*hi - *lo, *st) : 0;
      if (ivs.contains(iv)) {
        ranges.emplace_back(iv, *lo, *st, trips);
        ivs.remove(iv);
        continue;
      }
      // The same blocks for every value of an unused induction variable.
      std::optional<int64_t> product = llvm::checkedMul(copies, trips);
      if (!product)
        return std::nullopt;
      copies = *product;
    }
  }
  if (!ivs.empty())
    return std::nullopt; // depends on something other than the forall

  // Every combination of the induction variables used, up to a limit.
  int64_t points = 1;
  for (auto &range : ranges) {
    std::optional<int64_t> product =
        llvm::checkedMul(points, std::get<3>(range));
    if (!product || *product > (int64_t(1) << 16))
      return std::nullopt;
    points = *product;
  }
  BlockCounts total;
  Bindings env;
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    for (auto &[iv, lo, st, trips] : ranges) {
      env[iv] = lo + (rest % trips) * st;
      rest /= trips;
    }
    llvm::SetVector<Value> unbound;
    std::optional<std::array<int64_t, 5>> v = evaluateAll(env, unbound);
    if (!v)
      return std::nullopt;
    std::optional<BlockCounts> n =
        classify((*v)[0], (*v)[1], (*v)[2], (*v)[3], (*v)[4]);
    if (!n)
      return std::nullopt;
    std::optional<int64_t> full = llvm::checkedAdd(total.full, n->full);
    std::optional<int64_t> masked = llvm::checkedAdd(total.masked, n->masked);
    std::optional<int64_t> skipped =
        llvm::checkedAdd(total.skipped, n->skipped);
    if (!full || !masked || !skipped)
      return std::nullopt;
    total = {*full, *masked, *skipped};
  }
  std::optional<int64_t> full = llvm::checkedMul(total.full, copies);
  std::optional<int64_t> masked = llvm::checkedMul(total.masked, copies);
  std::optional<int64_t> skipped = llvm::checkedMul(total.skipped, copies);
  if (!full || !masked || !skipped)
    return std::nullopt;
  return BlockCounts{*full, *masked, *skipped};
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

/// Bounds the masked KV loop `loop`, whose step has the offset `c - j`, to
/// the blocks its rows see, and with `split` splits off those every row sees
/// in full into a loop of unmasked steps.
void skipMaskedBlocks(RewriterBase &rewriter, scf::ForOp loop,
                      AttentionStepOp step, Value c, bool split) {
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  auto qType = cast<ShapedType>(step.getQuery().getType());
  Value rows =
      toValue(rewriter, loc,
              getDim(rewriter, loc, step.getQuery(), qType.getRank() - 2));
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound();
  Value bc = loop.getStep();
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);

  Value reach = arith::AddIOp::create(rewriter, loc, c, rows);
  Value end = minIndex(rewriter, loc, ub, maxIndex(rewriter, loc, lb, reach));
  if (!split) {
    scf::ForOp bounded = cloneWithBounds(
        rewriter, loop, lb, end, loop.getInitArgs(), /*unmasked=*/false);
    rewriter.replaceOp(loop, bounded.getResults());
    return;
  }
  Value visible = arith::SubIOp::create(
      rewriter, loc, arith::AddIOp::create(rewriter, loc, c, one), lb);
  Value fullBlocks = arith::FloorDivSIOp::create(
      rewriter, loc, maxIndex(rewriter, loc, zero, visible), bc);
  Value fullEnd =
      minIndex(rewriter, loc, end,
               arith::AddIOp::create(
                   rewriter, loc, lb,
                   arith::MulIOp::create(rewriter, loc, fullBlocks, bc)));
  // When every key below ub is visible to row 0 (decode against a cache),
  // the partial last block needs no mask either.
  Value allVisible =
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sle, ub,
                            arith::AddIOp::create(rewriter, loc, c, one));
  fullEnd = arith::SelectOp::create(rewriter, loc, allVisible, end, fullEnd);

  scf::ForOp full = cloneWithBounds(rewriter, loop, lb, fullEnd,
                                    loop.getInitArgs(), /*unmasked=*/true);
  scf::ForOp diagonal =
      cloneWithBounds(rewriter, loop, fullEnd, end, full.getResults(),
                      /*unmasked=*/false);
  rewriter.replaceOp(loop, diagonal.getResults());
}

/// Whether `loop` runs one KV split of a flash-decoding kernel: it lies in
/// a tile loop whose partial results a flash.combine merges.
bool runsOneKVSplit(scf::ForOp loop) {
  auto tiles = loop->getParentOfType<scf::ForallOp>();
  return tiles && llvm::any_of(tiles->getUsers(), [](Operation *user) {
           return isa<CombineOp>(user);
         });
}

struct FlashCausalSkipPass
    : flash::impl::FlashCausalSkipBase<FlashCausalSkipPass> {
  using Base::Base;
  void runOnOperation() override {
    if (!llvm::is_contained({"always", "decode", "prefill", "never"},
                            splitDiagonal)) {
      getOperation()->emitError()
          << "flash-causal-skip: split-diagonal must be always, decode, "
             "prefill or never, got '"
          << splitDiagonal << "'";
      return signalPassFailure();
    }
    FlashDialect::DecodeAttrHelper decodeAttr(&getContext());
    auto splitsIn = [&](scf::ForOp loop) {
      if (splitDiagonal == "prefill")
        return !runsOneKVSplit(loop);
      if (splitDiagonal != "decode")
        return splitDiagonal == "always";
      auto func = loop->getParentOfType<FunctionOpInterface>();
      return func && decodeAttr.isAttrPresent(func);
    };
    SmallVector<scf::ForOp> loops;
    FlashDialect::KvLoopAttrHelper kvLoop(&getContext());
    getOperation()->walk([&](scf::ForOp loop) {
      if (kvLoop.isAttrPresent(loop))
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops) {
      AttentionStepOp step = getKVLoopStep(loop);
      if (!step || !step.getMaskOffset())
        continue;
      Value c = getCausalBase(loop, step);
      if (!c) {
        LLVM_DEBUG(DBGS() << "loop at " << loop.getLoc()
                          << " kept: the mask offset is not c - j with c "
                             "defined outside the loop\n");
        ++numLoopsKept;
        continue;
      }
      bool split = splitsIn(loop);
      [[maybe_unused]] StringRef what = split ? "split" : "bounded";
      if (std::optional<BlockCounts> n = countBlocks(loop, step, c)) {
        // Unsplit, the blocks every row sees run masked too.
        int64_t full = split ? n->full : 0;
        int64_t masked = n->masked + (n->full - full);
        LLVM_DEBUG(DBGS() << "loop at " << loop.getLoc() << " " << what << ": "
                          << full << " full, " << masked << " masked, "
                          << n->skipped << " skipped blocks\n");
        numBlocksFull += full;
        numBlocksMasked += masked;
        numBlocksSkipped += n->skipped;
      } else {
        LLVM_DEBUG(DBGS() << "loop at " << loop.getLoc() << " " << what
                          << "; its bounds are known at run time only\n");
      }
      skipMaskedBlocks(rewriter, loop, step, c, split);
      if (split)
        ++numLoopsSplit;
      else
        ++numLoopsBounded;
    }
  }
};

} // namespace
