//===- TileKernel.cpp - The forward CTA as flash_tile ops -----------------===//
//
// The forward kernel's body written with flash_tile ops instead of warp-level
// code: flash-tile-assign-layouts chooses the warps and the tiles' layouts,
// flash-tile-allocate-shared places the buffers and flash-tile-to-nvgpu
// lowers it. Per CTA:
//
//   Q tile -> shared (async_copy) -> A operand (local_load), once
//   for each KV loop of the tiled IR, for each block j:
//     async_copy block j into stage 0, async_wait
//     S  = Q K^T                     local_load K transposed, mma
//     S  = -inf where masked         map indices (partial / causal blocks)
//     m' = rowmax(S) c if it is above m + t, else m
//                                    reduce max, map   (c = scale log2 e)
//     P  = exp2(S c - m')            map: one FMA and one EX2 per score
//     l' = 2^(m - m') l + rowsum(P)  fold sum (per thread), map; the
//                                    threads' sums reduced after the loop
//     O  = 2^(m - m') O + P V        rescale (skipped by a thread whose
//                                    rows' m did not move), P in f16, mma
//     async_wait: everyone is done with the stage
//   (flash-tile-pipeline then puts the copies of the next blocks in flight
//   in the other stages while block j computes).
//   O / l (and the log-sum-exp) stored by rows below the tile's valid rows.
//
// A GQA tile packs the rows of G query heads (group-major): Q, O and the
// log-sum-exp are 3-D matrices of G groups of rows, laid out for G rounded
// up to a power of two (the padding groups' rows zero-filled, never
// stored), so that the rows fill whole MMA tiles of a power of two of
// warps. The MMAs run over the
// head dims padded to 16: the copies zero-fill Q's, K's and V's padding
// columns in shared memory, and the stores write Dv columns.
//
// A decode tile (few rows) splits each KV block between kv warps: the loop
// runs on batched tiles, one matrix per kv warp (its keys, its m, l and O),
// and after it the states merge as split-KV partials do (batch_reduce
// through the K buffer) into one tile whose columns the kv warps share.
//
// The combine kernel merges split-KV partials: a CTA's rows (a few heads'
// query rows, or a few batch entries' where there is one head) in a blocked
// layout, a warp's lanes over a row's 16-byte runs; the rows' log-sum-exps
// in its slice, every lane of a row holding the row's. One pass over the
// splits' log-sum-exps gives each row's total, a second adds the weighted
// partials.
//
// The forward kernel's register tiles, copies and shared buffers come
// without layouts: flash-tile-assign-layouts chooses the warps (16 or 32
// rows each, times the kv warps) and the MMA, operand and slice layouts,
// and repacks P as PV's A operand; flash-tile-allocate-shared places the
// buffers' rows (swizzled, or padded by a chunk). What stays here is what
// the algorithm decides: the batch of kv warps, Q in registers or re-read
// (a decode tile beyond D = 128 and a wide warp beyond D = 64 read it
// again per block). The combine kernel's blocked layout is tied to its
// tile's padded shape (getCombineTileShape) and is written here.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernel.h"

#include "flashc/Core/GPUSchedule.h"
#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"
#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/Support/MathExtras.h"

#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_kernel;
using namespace mlir::flash_tile;

namespace {

/// The alignment a store of rows of `cols` elements of `type` to a tensor
/// `alignment`-byte aligned may assume: that for rows of a multiple of 16
/// bytes (the runtime checks it of the output, and the split workspace is
/// 16-byte aligned), else none (the element's).
IntegerAttr rowAlignment(OpBuilder &b, int64_t cols, Type type,
                         int64_t alignment) {
  int64_t elementBytes = type.getIntOrFloatBitWidth() / 8;
  int64_t assumed = flashc::getRowAlignment(cols, elementBytes, alignment);
  return assumed > elementBytes ? b.getI64IntegerAttr(assumed) : IntegerAttr();
}

/// The `alignment` of a copy of rows of `cols` elements of `type` from a
/// tensor `alignment`-byte aligned: none where rows of whole 16-byte units
/// may assume 16 bytes (or are copied element by element anyway).
IntegerAttr copyAlignment(OpBuilder &b, int64_t cols, Type type,
                          int64_t alignment) {
  int64_t elementBytes = type.getIntOrFloatBitWidth() / 8;
  if (!flashc::hasWholeChunkRows(cols, elementBytes))
    return IntegerAttr();
  int64_t assumed = flashc::getRowAlignment(cols, elementBytes, alignment);
  return assumed < flashc::kMaxGlobalAlignment ? b.getI64IntegerAttr(assumed)
                                               : IntegerAttr();
}

/// What both kernels' emitters build with: constants and elementwise maps.
class TileBuilder {
protected:
  explicit TileBuilder(ImplicitLocOpBuilder &b)
      : b(b), ctx(b.getContext()), f32(b.getF32Type()) {}

  ImplicitLocOpBuilder &b;
  MLIRContext *ctx;
  Type f32;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32c(double v) {
    return arith::ConstantOp::create(b, f32,
                                     b.getF32FloatAttr(static_cast<float>(v)));
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, cond, x, y);
  }

  /// An elementwise map of `inputs` into a tile of `type`; `body` gets the
  /// region's arguments (indices first with `indices`) and returns the
  /// element.
  template <typename F>
  Value map(TileType type, ValueRange inputs, F body, bool indices = false) {
    auto op = MapOp::create(b, type, inputs, indices);
    OpBuilder::InsertionGuard guard(b);
    Block *block = b.createBlock(&op.getBody());
    if (indices)
      for (int64_t i = 0; i < type.getRank(); ++i)
        block->addArgument(b.getIndexType(), b.getLoc());
    for (Value in : inputs)
      block->addArgument(cast<TileType>(in.getType()).getElementType(),
                         b.getLoc());
    YieldOp::create(b, body(block->getArguments()));
    return op.getResult();
  }
};

class TileEmitter : TileBuilder {
public:
  // With kv warps the loop runs on a batch of kw matrices (each kv warp's
  // own keys, scores and state), merged after it.
  TileEmitter(ImplicitLocOpBuilder &b, const ForwardKernelSpec &s)
      : TileBuilder(b), s(s), c(s.config), kw(c.kvWarps) {}

  LogicalResult emit(std::string &why);

private:
  const ForwardKernelSpec &s;
  const flashc::GPUTileConfig &c;
  int64_t kw = 1;

  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::slt, x, y);
  }

  /// A tile without a layout: flash-tile-assign-layouts chooses them.
  TileType tile(ArrayRef<int64_t> shape, Type elt) {
    return TileType::get(ctx, shape, elt, Attribute());
  }
  /// A matrix shape, with the batch of kv warps in front when there is one.
  SmallVector<int64_t> batched(ArrayRef<int64_t> shape) {
    SmallVector<int64_t> out = kw > 1 ? SmallVector<int64_t>{kw}
                                      : SmallVector<int64_t>{};
    llvm::append_range(out, shape);
    return out;
  }
  TileType acc(int64_t cols) {
    return tile(batched({c.tileRows(), cols}), f32);
  }
  TileType rows() { return tile(batched({c.tileRows()}), f32); }
  /// An MMA operand of `shape`, a batch of them with `batch`.
  TileType operand(ArrayRef<int64_t> shape, bool batch = true) {
    return tile(batch ? batched(shape) : SmallVector<int64_t>(shape),
                s.elementType);
  }

  /// A shared buffer of `stages` stages of `r x cols` elements, whose
  /// placement (swizzle or padding) flash-tile-allocate-shared chooses.
  SharedType shared(int64_t stages, int64_t r, int64_t cols) {
    return SharedType::get(ctx, {stages, r, cols}, s.elementType,
                           SwizzledLayoutAttr());
  }

  /// The rows of a flat kernel buffer from `base` on, `rowStride` apart, as
  /// a 2-D matrix of `cols` columns; with `groupStride`, G such groups of
  /// rows as a 3-D one (the query heads of a GQA tile).
  Value matrix(Value buffer, Value base, Value rowStride, Value numRows,
               int64_t cols, Type elt, Value groupStride = Value()) {
    int64_t dyn = ShapedType::kDynamic;
    if (!groupStride) {
      auto layout = StridedLayoutAttr::get(ctx, dyn, {dyn, 1});
      auto type = MemRefType::get({dyn, cols}, elt, layout);
      return memref::ReinterpretCastOp::create(
          b, type, buffer, OpFoldResult(base),
          ArrayRef<OpFoldResult>{numRows, b.getIndexAttr(cols)},
          ArrayRef<OpFoldResult>{rowStride, b.getIndexAttr(1)});
    }
    auto layout = StridedLayoutAttr::get(ctx, dyn, {dyn, dyn, 1});
    auto type = MemRefType::get({c.tileGroup, dyn, cols}, elt, layout);
    return memref::ReinterpretCastOp::create(
        b, type, buffer, OpFoldResult(base),
        ArrayRef<OpFoldResult>{b.getIndexAttr(c.tileGroup), numRows,
                               b.getIndexAttr(cols)},
        ArrayRef<OpFoldResult>{groupStride, rowStride, b.getIndexAttr(1)});
  }

  /// The matrix of `numRows` rows (of `groups` heads when given, as a 3-D
  /// matrix) from `o`'s origin on, a subview of its whole tensor.
  Value matrix(const TensorOrigin &o, Value numRows, int64_t cols, Type elt,
               int64_t groups = 0) {
    int64_t dyn = ShapedType::kDynamic;
    auto wholeType =
        MemRefType::get({dyn, dyn, dyn, cols}, elt,
                        StridedLayoutAttr::get(ctx, 0, {dyn, dyn, dyn, 1}));
    Value whole = memref::ReinterpretCastOp::create(
        b, wholeType, o.buffer, OpFoldResult(b.getIndexAttr(0)),
        ArrayRef<OpFoldResult>{o.sizes[0], o.sizes[1], o.sizes[2],
                               b.getIndexAttr(cols)},
        ArrayRef<OpFoldResult>{o.strides[0], o.strides[1], o.strides[2],
                               b.getIndexAttr(1)});
    SmallVector<OpFoldResult> offsets = {o.offsets[0], o.offsets[1],
                                         o.offsets[2], b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                       b.getIndexAttr(groups ? groups : 1),
                                       numRows, b.getIndexAttr(cols)};
    SmallVector<OpFoldResult> unit(4, b.getIndexAttr(1));
    MemRefType type =
        groups
            ? MemRefType::get({groups, dyn, cols}, elt,
                              StridedLayoutAttr::get(ctx, dyn, {dyn, dyn, 1}))
            : MemRefType::get({dyn, cols}, elt,
                              StridedLayoutAttr::get(ctx, dyn, {dyn, 1}));
    return memref::SubViewOp::create(b, type, whole, offsets, sizes, unit);
  }

  /// The group stride of a tile address when the tile packs a GQA group.
  Value groupStrideOf(const TileAddress &t) {
    return c.tileGroup > 1 ? t.groupStride : Value();
  }

  /// The valid groups of a tile with rows past its last group's
  /// (GPUTileConfig::groupRows), else null.
  Value validGroups() { return c.hasPaddingRows() ? idx(c.group) : Value(); }

  Value maxNum(Value x, Value y) { return arith::MaxNumFOp::create(b, x, y); }

  /// Copies the K and V blocks at key `j` into `stage` (keys at or beyond
  /// Nk are zero-filled), unless `j` is -1 (no block).
  void copyKVIfAny(Value j, Value stage);

  Value kMatrix, vMatrix, kBuffer, vBuffer;
};

void TileEmitter::copyKVIfAny(Value j, Value stage) {
  auto ifAny = scf::IfOp::create(
      b, TypeRange{},
      arith::CmpIOp::create(b, arith::CmpIPredicate::sge, j, idx(0)),
      /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifAny.thenBlock());
  // A full block (every block but a ragged last one) copies with a
  // constant count, which lowers without per-row checks; a ragged one with
  // the keys left (async_copy clamps the count to [0, Bc]).
  Value left = arith::SubIOp::create(b, s.seqKV, j);
  auto ifFull = scf::IfOp::create(
      b, TypeRange{},
      arith::CmpIOp::create(b, arith::CmpIPredicate::sge, left,
                            idx(c.blockKV)),
      /*withElse=*/true);
  auto copies = [&](Value valid) {
    AsyncCopyOp::create(
        b, kMatrix, j, kBuffer, stage, valid, Value(), BlockedLayoutAttr(),
        copyAlignment(b, c.headDim, s.elementType, s.alignment));
    AsyncCopyOp::create(
        b, vMatrix, j, vBuffer, stage, valid, Value(), BlockedLayoutAttr(),
        copyAlignment(b, c.headDimV, s.elementType, s.alignment));
  };
  b.setInsertionPointToStart(ifFull.thenBlock());
  copies(idx(c.blockKV));
  b.setInsertionPointToStart(ifFull.elseBlock());
  copies(left);
}

LogicalResult TileEmitter::emit(std::string &why) {
  why = gpu_kernel::whyNoTileBody(c);
  if (!why.empty())
    return failure();
  // The MMAs run over the head dims padded to 16 (the padding of Q, K and
  // V zero-filled in shared memory), the output keeps Dv columns.
  int64_t R = c.tileRows(), Bc = c.blockKV, D = c.paddedHeadDim,
          Dv = c.paddedHeadDimV;
  // Keys of a block per kv warp (the whole block without kv warps).
  int64_t wk = c.warpKeys();
  Type elt = s.elementType;
  Value zero = idx(0), one = idx(1);

  // The scale in the log2 domain. A positive scale keeps the order of the
  // scores: the maxima are taken unscaled and the scale goes into the
  // exponent's FMA. A run-time factor is positive (the runtime checks it).
  bool scaleFirst = !(s.scale > 0);
  Value scaleLog2 = f32c(s.scale * kLog2E);
  if (s.scaleFactor)
    scaleLog2 = arith::MulFOp::create(b, scaleLog2, s.scaleFactor);

  // Global matrices and shared buffers.
  Value qMatrix = s.qOrigin
                      ? matrix(s.qOrigin, s.qRows, c.headDim, elt,
                               c.tileGroup > 1 ? c.tileGroup : 0)
                      : matrix(s.q.buffer, s.q.base, s.q.rowStride, s.qRows,
                               c.headDim, elt, groupStrideOf(s.q));
  kMatrix = s.kOrigin ? matrix(s.kOrigin, s.seqKV, c.headDim, elt)
                      : matrix(s.kBuffer, s.kBase0, s.kRowStride, s.seqKV,
                               c.headDim, elt);
  vMatrix = s.vOrigin ? matrix(s.vOrigin, s.seqKV, c.headDimV, elt)
                      : matrix(s.vBuffer, s.vBase0, s.vRowStride, s.seqKV,
                               c.headDimV, elt);
  // K and V get the schedule's stages; the loops below use stage 0 only,
  // flash-tile-pipeline spreads the blocks over them.
  Value qBuffer = AllocOp::create(b, shared(1, R, D), IntegerAttr());
  kBuffer = AllocOp::create(b, shared(c.stages, Bc, D), IntegerAttr());
  vBuffer = AllocOp::create(b, shared(c.stages, Bc, Dv), IntegerAttr());

  size_t nLoops = s.loops.size();
  AsyncCopyOp::create(b, qMatrix, zero, qBuffer, zero, s.qRows, validGroups(),
                      BlockedLayoutAttr(),
                      copyAlignment(b, c.headDim, elt, s.alignment));
  AsyncWaitOp::create(b, 0);
  // Q as the A operand (every kv warp's: replicated over them), once, or
  // per block where it does not fit in registers beside the loop's state.
  auto loadQ = [&]() {
    Value q = LocalLoadOp::create(b, operand({R, D}, /*batch=*/false), qBuffer,
                                  zero, /*transpose=*/false);
    if (kw > 1)
      q = BroadcastOp::create(b, operand({R, D}), q);
    return q;
  };
  Value qOnce = c.qInRegisters ? loadQ() : Value();

  Value negInf = f32c(-std::numeric_limits<double>::infinity());
  Value fzero = f32c(0);
  // The loop's state: O, the row maxima and the row sums. The row sums stay
  // partial (each thread's own columns, folded to one MMA tile's 8) until
  // the loop ends: no shuffles per block. The maxima start at the lowest
  // finite float, not -inf: the first block with a valid key moves them
  // (any finite score is above it), a fully masked block (-inf scores)
  // does not, and P = 2^(s - m) and 2^(m_old - m_new) never meet
  // -inf - -inf.
  SmallVector<Value> state = {
      SplatOp::create(b, acc(Dv), fzero),
      SplatOp::create(b, rows(), f32c(-std::numeric_limits<float>::max())),
      SplatOp::create(b, acc(8), fzero)};
  Value sZero = SplatOp::create(b, acc(wk), fzero);
  TileType bType = operand({D, wk});
  TileType vType = operand({wk, Dv});

  // Each KV loop copies its block into stage 0, waits for it, computes,
  // and waits until every thread is done with the stage:
  // flash-tile-pipeline turns that into copies of later blocks in flight
  // while this one computes.
  flash::FlashDialect::KvLoopAttrHelper kvLoop(ctx);
  for (size_t i = 0; i < nLoops; ++i) {
    const KVLoop &loop = s.loops[i];
    auto forOp = scf::ForOp::create(b, loop.lower, loop.upper, idx(Bc), state);
    kvLoop.setAttr(forOp, b.getUnitAttr());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forOp.getBody());
    Value j = forOp.getInductionVar();
    ValueRange in = forOp.getRegionIterArgs();
    Value accIn = in[0], mIn = in[1], lIn = in[2], stage = zero;
    copyKVIfAny(j, stage);
    AsyncWaitOp::create(b, 0);

    // S = Q K^T.
    Value kt = LocalLoadOp::create(b, bType, kBuffer, stage, /*transpose=*/true);
    Value q = qOnce ? qOnce : loadQ();
    Value sc = MmaOp::create(b, acc(wk), q, kt, sZero);
    if (scaleFirst)
      sc = map(acc(wk), sc, [&](ValueRange a) -> Value {
        return arith::MulFOp::create(b, a[0], scaleLog2);
      });

    // Keys past the block's valid ones are -inf; in a masked loop also
    // column c of row r where c > r + o.
    BlockValues values = loop.blockValues(b, j);
    auto masked = [&]() {
      return map(
          acc(wk), sc,
          [&](ValueRange a) -> Value {
            // Indices (kv warp,) row, column; the key within the block.
            ValueRange at = a.take_front(kw > 1 ? 3 : 2);
            Value tileRow = at[at.size() - 2], key = at.back();
            if (kw > 1)
              key = arith::AddIOp::create(
                  b, arith::MulIOp::create(b, at[0], idx(wk)), key);
            Value limit = values.validKeys;
            if (values.maskOffset) {
              // The row within its head (the tile packs G heads' rows).
              Value row = c.tileGroup > 1 ? Value(arith::RemUIOp::create(
                                                b, tileRow, idx(c.groupRows())))
                                          : tileRow;
              Value diag = arith::AddIOp::create(
                  b, arith::AddIOp::create(b, row, values.maskOffset), one);
              limit = arith::MinSIOp::create(b, limit, diag);
            }
            return select(lt(key, limit), a[at.size()], negInf);
          },
          /*indices=*/true);
    };
    // A loop of diagonal blocks (after one of the blocks every row sees)
    // masks each block. Another masks a block only where some row does
    // not see it whole: past its valid keys, or, in a masked loop that is
    // the kernel's only one (flash-causal-skip left it unsplit: a decode
    // kernel's), where row 0's last visible key o + 1 falls inside it.
    bool diagonalOnly =
        loop.masked && llvm::any_of(s.loops, [](const KVLoop &other) {
          return !other.masked;
        });
    if (diagonalOnly) {
      sc = masked();
    } else {
      Value seen = values.validKeys;
      if (values.maskOffset)
        seen = arith::MinSIOp::create(
            b, seen, arith::AddIOp::create(b, values.maskOffset, one));
      auto ifPartial =
          scf::IfOp::create(b, TypeRange{acc(wk)}, lt(seen, idx(Bc)),
                            /*withElse=*/true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(ifPartial.thenBlock());
      scf::YieldOp::create(b, masked());
      b.setInsertionPointToStart(ifPartial.elseBlock());
      scf::YieldOp::create(b, sc);
      sc = ifPartial.getResult(0);
    }

    // The online softmax. m is the maximum a row's P and O are kept
    // against: it moves to the block's maximum only where that is more
    // than the threshold t above it (any growth with t = 0), so that
    // P = 2^(s - m) <= 2^t and, in most blocks, no row's O is rescaled
    // (alpha = 1, which flash_tile.rescale skips). The first block with a
    // valid key sets it. (Where |m| is beyond 2^24, m + t and m itself
    // round by more than 1: P's bound then loosens by as much, as a
    // rounded m loosened it before the threshold.)
    Value mx = ReduceOp::create(b, rows(), ReduceKind::Max, sc);
    Value threshold = f32c(static_cast<double>(s.rescaleThreshold));
    Value mNew = map(rows(), ValueRange{mIn, mx}, [&](ValueRange a) -> Value {
      Value mOld = a[0];
      Value m = scaleFirst
                    ? a[1]
                    : arith::MulFOp::create(b, a[1], scaleLog2).getResult();
      Value moves =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, m,
                                arith::AddFOp::create(b, mOld, threshold));
      return select(moves, m, mOld);
    });
    Value negM = map(rows(), mNew, [&](ValueRange a) -> Value {
      return arith::NegFOp::create(b, a[0]);
    });
    // O's and l's factor 2^(m_old - m_new): exactly 2^0 = 1 where m did not
    // move.
    Value alpha =
        map(rows(), ValueRange{mIn, negM}, [&](ValueRange a) -> Value {
          return math::Exp2Op::create(b, arith::AddFOp::create(b, a[0], a[1]));
        });
    Value factor = scaleFirst ? f32c(1) : scaleLog2;
    Value p = map(acc(wk), ValueRange{sc, negM}, [&](ValueRange a) -> Value {
      return math::Exp2Op::create(
          b, math::FmaOp::create(b, a[0], factor, a[1]));
    });
    Value rowSum = FoldOp::create(b, acc(8), ReduceKind::Sum, p);
    Value lNew = map(acc(8), ValueRange{lIn, alpha, rowSum},
                     [&](ValueRange a) -> Value {
                       return math::FmaOp::create(b, a[0], a[1], a[2]);
                     });
    Value scaled = RescaleOp::create(b, acc(Dv), accIn, alpha);

    // O += P V (flash-tile-assign-layouts repacks P as the A operand).
    Value pA = map(operand({R, wk}), p, [&](ValueRange a) -> Value {
      return arith::TruncFOp::create(b, elt, a[0]);
    });
    Value v = LocalLoadOp::create(b, vType, vBuffer, stage, /*transpose=*/false);
    Value accOut = MmaOp::create(b, acc(Dv), pA, v, scaled);
    AsyncWaitOp::create(b, 0);
    scf::YieldOp::create(b, ValueRange{accOut, mNew, lNew});
    state.assign(forOp.getResults().begin(), forOp.getResults().end());
  }

  // The epilogue: O / l (0 for a row without keys), in the output's type.
  Value accFinal = state[0], mFinal = state[1];
  Value lFinal = ReduceOp::create(b, rows(), ReduceKind::Sum, state[2]);
  TileType outRows = tile({R}, f32);
  if (kw > 1) {
    // The kv warps' states merge as split-KV partials do: M = max m_w,
    // s_w = 2^(m_w - M), l = sum s_w l_w, O = sum s_w O_w, through the K
    // (or V) buffer, which the loop is done with. A warp without keys has
    // l_w = 0 and O_w = 0 (and m_w the lowest float, so s_w = 0 unless no
    // warp had a key).
    // (whyNoTileBody checked that one of them is large enough.)
    int64_t need = kw * R * Dv * 4;
    Value scratch = cast<SharedType>(kBuffer.getType()).getSizeInBytes() >= need
                        ? kBuffer
                        : vBuffer;
    Value mAll =
        BatchReduceOp::create(b, outRows, ReduceKind::Max, mFinal, scratch);
    Value mEach = BroadcastOp::create(b, rows(), mAll);
    Value weight =
        map(rows(), ValueRange{mFinal, mEach}, [&](ValueRange a) -> Value {
          return math::Exp2Op::create(b, arith::SubFOp::create(b, a[0], a[1]));
        });
    auto times = [&](ValueRange a) -> Value {
      return arith::MulFOp::create(b, a[0], a[1]);
    };
    lFinal = BatchReduceOp::create(b, outRows, ReduceKind::Sum,
                                   map(rows(), ValueRange{lFinal, weight}, times),
                                   scratch);
    accFinal = BatchReduceOp::create(
        b, tile({R, Dv}, f32), ReduceKind::Sum,
        map(acc(Dv), ValueRange{accFinal, weight}, times), scratch);
    mFinal = mAll;
  }
  Value inv = map(outRows, lFinal, [&](ValueRange a) -> Value {
    Value positive =
        arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, a[0], fzero);
    return select(positive, arith::DivFOp::create(b, f32c(1), a[0]), fzero);
  });
  // O / l into `out` in `outType`, and the log-sum-exp into `lse`.
  auto storeResults = [&](const TileAddress &out, Type outType,
                          const TileAddress &lseAt,
                          const TensorOrigin &outOrigin) {
    Value o = map(tile({R, Dv}, outType), ValueRange{accFinal, inv},
                  [&](ValueRange a) -> Value {
                    Value x = arith::MulFOp::create(b, a[0], a[1]);
                    if (outType.isF32())
                      return x;
                    return arith::TruncFOp::create(b, outType, x);
                  });
    Value outMatrix = outOrigin
                          ? matrix(outOrigin, s.qRows, c.headDimV, outType,
                                   c.tileGroup > 1 ? c.tileGroup : 0)
                          : matrix(out.buffer, out.base, out.rowStride, s.qRows,
                                   c.headDimV, outType, groupStrideOf(out));
    // The output (f16 or bf16) is the caller's, the f32 partials the
    // runtime's workspace (16-byte aligned).
    StoreOp::create(b, o, outMatrix, zero, s.qRows, validGroups(),
                    rowAlignment(b, c.headDimV, outType,
                                 outType.isF32() ? int64_t(16) : s.alignment));
    if (!lseAt.buffer)
      return;
    // lse = ln(2^m l) = (m + log2 l) ln 2; -inf for an empty row (l = 0),
    // NaN for a row whose scores held NaN.
    Value lse = map(outRows, ValueRange{mFinal, lFinal},
                    [&](ValueRange a) -> Value {
                      Value positive = arith::CmpFOp::create(
                          b, arith::CmpFPredicate::UNE, a[1], fzero);
                      Value v = arith::MulFOp::create(
                          b,
                          arith::AddFOp::create(b, a[0],
                                                math::Log2Op::create(b, a[1])),
                          f32c(kLn2));
                      return select(positive, v, negInf);
                    });
    Value lseMatrix = matrix(lseAt.buffer, lseAt.base, lseAt.rowStride,
                             s.qRows, 1, f32, groupStrideOf(lseAt));
    StoreOp::create(b, lse, lseMatrix, zero, s.qRows, validGroups(),
                    IntegerAttr());
  };
  if (!s.finalOut.buffer) {
    storeResults(s.out, s.outType, s.lse, s.outOrigin);
    return success();
  }
  // A split kernel launched with one split writes the attention's output
  // itself (a partial of one split is the result); with more, partials.
  auto ifOne = scf::IfOp::create(
      b, TypeRange{},
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, s.splits, one),
      /*withElse=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOne.thenBlock());
  storeResults(s.finalOut, s.finalOutType, s.finalLse, TensorOrigin());
  b.setInsertionPointToStart(ifOne.elseBlock());
  storeResults(s.out, s.outType, s.lse, TensorOrigin());
  b.setInsertionPointAfter(ifOne);
  return success();
}

//===----------------------------------------------------------------------===//
// The combine kernel
//===----------------------------------------------------------------------===//

/// The split-KV merge of a CTA's rows as flash_tile ops: rows in a blocked
/// layout (a warp's lanes over a row's columns), each row's log-sum-exps
/// in every lane of the row (a slice of that layout).
class CombineEmitter : TileBuilder {
public:
  CombineEmitter(ImplicitLocOpBuilder &b, const CombineKernelSpec &s)
      : TileBuilder(b), s(s), shape(getCombineTileShape(s.headDimV, s.heads)) {
    layout = BlockedLayoutAttr::get(ctx, {1, shape.run},
                                    {shape.threadRows, shape.threadColumns},
                                    {shape.warps, 1});
    rowLayout = SliceLayoutAttr::get(ctx, 1, layout);
  }

  void emit();

private:
  const CombineKernelSpec &s;
  CombineTileShape shape;
  BlockedLayoutAttr layout;
  SliceLayoutAttr rowLayout;

  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  TileType rows() { return TileType::get(ctx, {shape.rows}, f32, rowLayout); }
  TileType tile(Type elt) {
    return TileType::get(ctx, {shape.rows, shape.columns}, elt, layout);
  }

  /// The CTA's rows of a flat buffer, `groupsPerCTA` groups of rows from
  /// `base` on, `groupStride` and `rowStride` apart, `cols` columns.
  Value matrix(Value buffer, Value base, Value groupStride, Value rowStride,
               int64_t cols) {
    int64_t dyn = ShapedType::kDynamic;
    Type elt = cast<MemRefType>(buffer.getType()).getElementType();
    auto type = MemRefType::get(
        {shape.groupsPerCTA, dyn, cols}, elt,
        StridedLayoutAttr::get(ctx, dyn, {dyn, dyn, 1}));
    return memref::ReinterpretCastOp::create(
        b, type, buffer, OpFoldResult(base),
        ArrayRef<OpFoldResult>{b.getIndexAttr(shape.groupsPerCTA), s.seqQ,
                               b.getIndexAttr(cols)},
        ArrayRef<OpFoldResult>{groupStride, rowStride, b.getIndexAttr(1)});
  }

  /// exp(x - m) as 2^((x - m) log2 e).
  Value expMinus(Value x, Value m) {
    return math::Exp2Op::create(
        b, arith::MulFOp::create(b, arith::SubFOp::create(b, x, m),
                                 f32c(kLog2E)));
  }
};

void CombineEmitter::emit() {
  // The CTA: query rows [n0, n0 + rowsPerGroup) of `groupsPerCTA` heads of
  // batch entry b, or (one head) of as many batch entries from b on; the
  // query block varies fastest.
  int64_t perCTA = shape.groupsPerCTA, rowsPerGroup = shape.rowsPerGroup;
  Value qBlocks = arith::DivUIOp::create(b, add(s.seqQ, idx(rowsPerGroup - 1)),
                                         idx(rowsPerGroup));
  Value linear = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value n0 = mul(arith::RemUIOp::create(b, linear, qBlocks),
                 idx(rowsPerGroup));
  Value rest = arith::DivUIOp::create(b, linear, qBlocks);
  // The CTA's first row of heads (b * H + h0), the stride between its
  // groups in rows of heads, and its first output element and group
  // stride.
  Value bh0, headStride, outBase, outGroupStride, groups;
  if (shape.overBatch) {
    Value b0 = mul(rest, idx(perCTA));
    bh0 = mul(b0, idx(s.heads));
    headStride = idx(s.heads);
    outBase = mul(b0, s.outStrideB);
    outGroupStride = s.outStrideB;
    groups = arith::SubIOp::create(b, s.batch, b0);
  } else {
    int64_t headGroups = s.heads / perCTA;
    Value h0 = mul(arith::RemUIOp::create(b, rest, idx(headGroups)),
                   idx(perCTA));
    Value batch = arith::DivUIOp::create(b, rest, idx(headGroups));
    bh0 = add(mul(batch, idx(s.heads)), h0);
    headStride = idx(1);
    outBase = add(mul(batch, s.outStrideB), mul(h0, s.outStrideH));
    outGroupStride = s.outStrideH;
  }
  Value valid = arith::SubIOp::create(b, s.seqQ, n0);
  Value zero = idx(0), one = idx(1);
  Value negInf = f32c(-std::numeric_limits<double>::infinity());
  Value fzero = f32c(0);

  // Split s's partials of the CTA's rows: parts[s][r] and partLse[s][r]
  // for r = (b * H + h) * Nq + n.
  int64_t dv = s.headDimV;
  Value rowGroupStride = mul(headStride, s.seqQ);
  auto firstRow = [&](Value split) {
    return add(mul(split, s.rows), mul(bh0, s.seqQ));
  };
  // The loads clamp the rows past the last (valid >= 1 and groups >= 1:
  // the grid gives every CTA a row) instead of branching around them, so
  // that the loads of a step's splits are in flight together.
  auto partLse = [&](Value split) {
    return LoadOp::create(
        b, rows(), matrix(s.partLse, firstRow(split), rowGroupStride, one, 1),
        n0, valid, groups, IntegerAttr(), b.getUnitAttr());
  };
  // A row of partials starts every 4 * Dv bytes of a 16-byte aligned
  // buffer.
  int64_t partAlign = std::min<int64_t>(
      16, int64_t(1) << llvm::countr_zero(uint64_t(4 * dv)));
  auto parts = [&](Value split) {
    return LoadOp::create(b, tile(f32),
                          matrix(s.parts, mul(firstRow(split), idx(dv)),
                                 mul(rowGroupStride, idx(dv)), idx(dv), dv),
                          n0, valid, groups, b.getI64IntegerAttr(partAlign),
                          b.getUnitAttr());
  };

  // An online pass over the splits, shape.splitsPerStep a step, as the
  // forward kernel's softmax: m the running maximum of the splits'
  // log-sum-exps, sum the running sum of exp(lse_s - m), acc the running
  // sum of exp(lse_s - m) parts_s, both rescaled by exp(m_old - m) when
  // the maximum grows. While every split so far saw no key (m = -inf), 0
  // is subtracted instead, and a split that saw no key weighs 0. A step
  // reads its splits first, each load independent of the others and of
  // the arithmetic, so that they are in flight together: the combine's
  // time is its loads' round trips (on an H200 one split a step took
  // 4.3 us at 13 splits, whatever the length).
  auto zeroIfNegInf = [&](Value m) {
    Value isInf =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, negInf);
    return select(isInf, fzero, m);
  };
  int64_t perStep = shape.splitsPerStep;
  // One step: the running (m, sum, acc) merged with splits [first, first +
  // perStep). A `masked` step may run past the last split: those splits
  // re-read the last one and count for nothing, their lse -inf and their
  // products not added (an inf partial times a weight of 0 would be NaN).
  Value lastSplit = arith::SubIOp::create(b, s.splits, one);
  auto step = [&](Value first, Value m, Value sum, Value acc,
                  bool masked) -> SmallVector<Value, 3> {
    SmallVector<Value> lses, partials, inRange, at;
    for (int64_t u = 0; u < perStep; ++u) {
      Value split = add(first, idx(u));
      if (!masked) {
        at.push_back(split);
        continue;
      }
      inRange.push_back(
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, split, s.splits));
      at.push_back(arith::MinUIOp::create(b, split, lastSplit));
    }
    for (int64_t u = 0; u < perStep; ++u)
      partials.push_back(parts(at[u]));
    for (int64_t u = 0; u < perStep; ++u)
      lses.push_back(partLse(at[u]));
    // A masked step's first split is always one of the call's.
    for (int64_t u = 1; masked && u < perStep; ++u)
      lses[u] = map(rows(), lses[u], [&](ValueRange a) -> Value {
        return select(inRange[u], a[0], negInf);
      });
    SmallVector<Value> maxInputs = {m};
    llvm::append_range(maxInputs, lses);
    Value mNew = map(rows(), maxInputs, [&](ValueRange a) -> Value {
      Value x = a[0];
      for (Value y : a.drop_front())
        x = arith::MaxNumFOp::create(b, x, y);
      return x;
    });
    Value mUse = map(rows(), mNew, [&](ValueRange a) -> Value {
      return zeroIfNegInf(a[0]);
    });
    // The old terms' factor exp(m - m_new), and the splits' weights.
    Value alpha = map(rows(), ValueRange{m, mUse}, [&](ValueRange a) -> Value {
      return expMinus(a[0], a[1]);
    });
    SmallVector<Value> weights;
    for (Value lse : lses)
      weights.push_back(
          map(rows(), ValueRange{lse, mUse},
              [&](ValueRange a) -> Value { return expMinus(a[0], a[1]); }));
    SmallVector<Value> sumInputs = {sum, alpha};
    llvm::append_range(sumInputs, weights);
    Value sumNew = map(rows(), sumInputs, [&](ValueRange a) -> Value {
      Value x = arith::MulFOp::create(b, a[0], a[1]);
      for (Value w : a.drop_front(2))
        x = arith::AddFOp::create(b, x, w);
      return x;
    });
    // acc alpha + sum_u part_u w_u: inputs acc, alpha, then each split's
    // partial and weight.
    SmallVector<Value> accInputs = {acc, alpha};
    for (int64_t u = 0; u < perStep; ++u) {
      accInputs.push_back(partials[u]);
      accInputs.push_back(weights[u]);
    }
    Value accNew = map(tile(f32), accInputs, [&](ValueRange a) -> Value {
      Value x = arith::MulFOp::create(b, a[0], a[1]);
      for (int64_t u = 0; u < perStep; ++u) {
        Value y = math::FmaOp::create(b, a[2 + 2 * u], a[3 + 2 * u], x);
        x = masked && u > 0 ? select(inRange[u], y, x) : y;
      }
      return x;
    });
    return {mNew, sumNew, accNew};
  };

  // The whole steps in a loop, with nothing to mask (ptxas issues each
  // step's loads before the first use of one: one round trip a step);
  // then the last splits, when they are not a whole step, in a masked
  // step of their own.
  Value wholeSteps = arith::DivUIOp::create(b, s.splits, idx(perStep));
  auto loop =
      scf::ForOp::create(b, zero, wholeSteps, one,
                         ValueRange{SplatOp::create(b, rows(), negInf),
                                    SplatOp::create(b, rows(), fzero),
                                    SplatOp::create(b, tile(f32), fzero)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange state = loop.getRegionIterArgs();
    scf::YieldOp::create(b, step(mul(loop.getInductionVar(), idx(perStep)),
                                 state[0], state[1], state[2],
                                 /*masked=*/false));
  }
  Value partStep = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ne,
      arith::RemUIOp::create(b, s.splits, idx(perStep)), zero);
  auto last = scf::IfOp::create(b, loop.getResultTypes(), partStep,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(last.thenBlock());
    scf::YieldOp::create(b, step(mul(wholeSteps, idx(perStep)),
                                 loop.getResult(0), loop.getResult(1),
                                 loop.getResult(2), /*masked=*/true));
    b.setInsertionPointToStart(last.elseBlock());
    scf::YieldOp::create(b, loop.getResults());
  }
  Value mUse = map(rows(), last.getResult(0),
                   [&](ValueRange a) -> Value { return zeroIfNegInf(a[0]); });
  Value total = last.getResult(1);
  // Empty rows (total = 0) give 0 and -inf; NaN (a split's NaN lse)
  // propagates.
  auto positive = [&](Value x) {
    return arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, x, fzero);
  };
  Value inv = map(rows(), total, [&](ValueRange a) -> Value {
    return select(positive(a[0]), arith::DivFOp::create(b, f32c(1), a[0]),
                  fzero);
  });
  Value scaled = map(tile(f32), ValueRange{last.getResult(2), inv},
                     [&](ValueRange a) -> Value {
                       return arith::MulFOp::create(b, a[0], a[1]);
                     });
  Value out = map(tile(s.outType), scaled,
                  [&](ValueRange a) -> Value {
                    if (s.outType.isF32())
                      return a[0];
                    return arith::TruncFOp::create(b, s.outType, a[0]);
                  });
  // out[b, h, n] at b * sB + h * sH + n * sN.
  StoreOp::create(b, out,
                  matrix(s.out, outBase, outGroupStride, s.outStrideN, dv), n0,
                  valid, groups, rowAlignment(b, dv, s.outType, s.alignment));
  if (s.lse) {
    // (max + log2(sum) ln 2), -inf when empty; lse[b, h, n] contiguous.
    Value lse = map(rows(), ValueRange{mUse, total}, [&](ValueRange a) -> Value {
      Value v = arith::AddFOp::create(
          b, a[0],
          arith::MulFOp::create(b, math::Log2Op::create(b, a[1]), f32c(kLn2)));
      return select(positive(a[1]), v, negInf);
    });
    StoreOp::create(b, lse,
                    matrix(s.lse, mul(bh0, s.seqQ), rowGroupStride, one, 1),
                    n0, valid, groups, IntegerAttr());
  }
}

} // namespace

CombineTileShape gpu_kernel::getCombineTileShape(int64_t headDimV,
                                                 int64_t heads) {
  CombineTileShape shape;
  // 16-byte runs of f32 partials where a row splits so; a warp's lanes over
  // a row's runs (a power of two of them), the rest over rows.
  shape.run = headDimV % 4 == 0 ? 4 : headDimV % 2 == 0 ? 2 : 1;
  int64_t runs = headDimV / shape.run;
  shape.threadColumns = getLanesOver(runs);
  // Where fewer than 4 lanes would share a row (Dv = 61: one), the tile
  // is padded to a whole number of a warp's runs instead (64 columns);
  // the loads and the store leave the padding alone.
  if (shape.threadColumns < 4 && shape.threadColumns < runs)
    shape.threadColumns =
        std::min<int64_t>(32, int64_t(llvm::PowerOf2Ceil(runs)));
  int64_t footprint = shape.run * shape.threadColumns;
  shape.columns = (headDimV + footprint - 1) / footprint * footprint;
  // A thread holds one row's columns / threadColumns partials a split.
  shape.splitsPerStep =
      std::clamp<int64_t>(int64_t(llvm::bit_floor(uint64_t(
                              64 / (shape.columns / shape.threadColumns)))),
                          1, 8);
  shape.threadRows = 32 / shape.threadColumns;
  // Four rows per CTA where a warp holds fewer, as many as a warp holds
  // otherwise.
  shape.warps = std::max<int64_t>(1, 4 / shape.threadRows);
  shape.rows = shape.threadRows * shape.warps;
  // The CTA's rows: of a few heads of one batch entry, or where there is
  // one head (multi-head attention folds its heads into the batch) of a
  // few batch entries.
  shape.overBatch = heads == 1;
  shape.groupsPerCTA = shape.overBatch ? shape.rows : std::gcd(heads, shape.rows);
  shape.rowsPerGroup = shape.rows / shape.groupsPerCTA;
  return shape;
}

void gpu_kernel::emitCombineTileBody(ImplicitLocOpBuilder &b,
                                     const CombineKernelSpec &spec) {
  CombineEmitter(b, spec).emit();
}

std::string gpu_kernel::whyNoTileBody(const flashc::GPUTileConfig &c) {
  int64_t kw = c.kvWarps;
  if (!flashc::isPipelineStageCount(c.stages))
    return std::to_string(c.stages) + " stages (" +
           std::to_string(flashc::kMinPipelineStages) + " to " +
           std::to_string(flashc::kMaxPipelineStages) + " are built)";
  // A single head's rows are whole MMA tiles. A GQA tile's are rounded up
  // to a power of two of them, each head taking groupRows() (the rows past
  // the last head's belong to no head, validGroups): Br must be those, or
  // a TMA box of a head's rows would store rows of the next Q block.
  if (c.tileGroup == 1 && c.tileRows() != c.blockQ)
    return "a tile of 1 x " + std::to_string(c.blockQ) +
           " rows, not whole 16-row MMA tiles";
  if (c.tileGroup > 1 && c.groupRows() != c.blockQ)
    return "a tile of " + std::to_string(c.tileGroup) + " x " +
           std::to_string(c.blockQ) + " rows, laid out in " +
           std::to_string(c.tileRows()) +
           " rows (whole MMA tiles of a power of two of warps) as " +
           std::to_string(c.groupRows()) + " a head: Br must be " +
           std::to_string(c.groupRows());
  // The copies spread a block's rows over every warp.
  if (!llvm::isPowerOf2_64(c.warps()))
    return "tiles of " + std::to_string(c.warps()) + " warps";
  if (kw > 1) {
    if (!flashc::GPUTileConfig::kvWarpsSplitDv(c.paddedHeadDimV, kw))
      return "decode tiles whose Dv does not split into 8 columns per kv "
             "warp";
    // The kv warps' accumulators merge through the K or V buffer.
    if (!c.kvWarpsFitStages(kw))
      return "decode tiles whose kv warps' accumulators outgrow the K and V "
             "buffers";
  }
  return "";
}

LogicalResult gpu_kernel::emitForwardTileBody(ImplicitLocOpBuilder &b,
                                              const ForwardKernelSpec &spec,
                                              std::string &why) {
  return TileEmitter(b, spec).emit(why);
}
