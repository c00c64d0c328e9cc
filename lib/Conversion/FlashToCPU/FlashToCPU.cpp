//===- FlashToCPU.cpp - Expand block-level flash ops for the CPU ----------===//
//
// Implements `flash-expand-to-cpu`: flash.attention_step, flash.finalize and
// flash.combine on memrefs become vector-dialect loops. The step follows the
// register-blocked shape recorded in DESIGN.md ("CPU lowering"): K is
// transposed once per step into an f32 scratch, S = Q . K^T is computed
// 4 rows x 64 columns at a time with accumulators carried through the head
// dimension loop, the online softmax runs row by row on vector<16xf32>, and
// P . V accumulates into the f32 state with the alpha rescale folded into the
// accumulator load.
//
//===----------------------------------------------------------------------===//

#include "flashc/Conversion/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Support/Sizes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHEXPANDTOCPU
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// f32 lanes of one vector register (AVX-512).
constexpr int64_t kLanes = 16;
/// Query rows per register block of S = Q . K^T.
constexpr int64_t kRowBlock = 4;
/// Vectors per row in one register block (4 x 16 = 64 columns).
constexpr int64_t kColVectors = 4;

/// Emits the CPU code of the block-level ops. Holds the builder and small
/// helpers for constants, element-type conversion and chunked loops.
class Emitter {
public:
  explicit Emitter(ImplicitLocOpBuilder &b) : b(b), f32(b.getF32Type()) {}

  void expandStep(AttentionStepOp op);
  void expandKeyTranspose(linalg::TransposeOp op);
  void expandFinalize(FinalizeOp op);
  void expandCombine(CombineOp op);

private:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32Const(double v) {
    return arith::ConstantOp::create(b, f32, b.getF32FloatAttr(v));
  }
  VectorType vec(int64_t width) { return VectorType::get({width}, f32); }
  Value vecConst(int64_t width, double v) {
    return arith::ConstantOp::create(
        b, vec(width),
        DenseElementsAttr::get(vec(width), b.getF32FloatAttr(v)));
  }
  Value splat(Value scalar, int64_t width) {
    return vector::BroadcastOp::create(b, vec(width), scalar);
  }
  Value negInf() { return f32Const(-std::numeric_limits<double>::infinity()); }

  Value dim(Value mem, int64_t i) {
    auto type = cast<MemRefType>(mem.getType());
    if (!type.isDynamicDim(i))
      return idx(type.getDimSize(i));
    return memref::DimOp::create(b, mem, i);
  }

  /// Loads `width` elements of `mem` at `indices` as vector<width x f32>.
  Value loadVec(Value mem, ValueRange indices, int64_t width) {
    Type elt = cast<MemRefType>(mem.getType()).getElementType();
    Value v =
        vector::LoadOp::create(b, VectorType::get({width}, elt), mem, indices);
    return elt == f32 ? v : arith::ExtFOp::create(b, vec(width), v);
  }
  /// Stores an f32 vector, converting it to `mem`'s element type.
  void storeVec(Value v, Value mem, ValueRange indices) {
    Type elt = cast<MemRefType>(mem.getType()).getElementType();
    if (elt != f32)
      v = arith::TruncFOp::create(
          b, VectorType::get(cast<VectorType>(v.getType()).getShape(), elt), v);
    vector::StoreOp::create(b, v, mem, indices);
  }
  /// Loads 16 elements with the lanes off in `mask` reading as 0.
  Value loadVecMasked(Value mem, ValueRange indices, Value mask) {
    Type elt = cast<MemRefType>(mem.getType()).getElementType();
    auto type = VectorType::get({kLanes}, elt);
    Value zero = arith::ConstantOp::create(
        b, type, DenseElementsAttr::get(type, b.getFloatAttr(elt, 0.0)));
    Value v = vector::MaskedLoadOp::create(b, type, mem, indices, mask, zero);
    return elt == f32 ? v : arith::ExtFOp::create(b, vec(kLanes), v);
  }
  Value loadScalar(Value mem, ValueRange indices) {
    Value v = memref::LoadOp::create(b, mem, indices);
    return v.getType() == f32 ? v : arith::ExtFOp::create(b, f32, v);
  }
  void storeScalar(Value v, Value mem, ValueRange indices) {
    Type elt = cast<MemRefType>(mem.getType()).getElementType();
    if (elt != f32)
      v = arith::TruncFOp::create(b, elt, v);
    memref::StoreOp::create(b, v, mem, indices);
  }

  /// Splits a static extent into vector widths: groups of up to
  /// `kColVectors` full vectors, then one narrower tail.
  static SmallVector<SmallVector<int64_t>> chunkGroups(int64_t extent) {
    SmallVector<SmallVector<int64_t>> groups;
    int64_t full = extent / kLanes, tail = extent % kLanes;
    for (int64_t i = 0; i < full; i += kColVectors) {
      SmallVector<int64_t> group(std::min(kColVectors, full - i), kLanes);
      groups.push_back(group);
    }
    if (tail) {
      if (!groups.empty() && groups.back().size() < kColVectors)
        groups.back().push_back(tail);
      else
        groups.push_back({tail});
    }
    return groups;
  }

  /// Emits `body(indices)` inside a loop nest over the dimensions of `mem`
  /// except the last `keep` ones.
  void forEachRow(Value mem, int64_t keep,
                  function_ref<void(SmallVector<Value> &)> body) {
    int64_t rank = cast<MemRefType>(mem.getType()).getRank() - keep;
    SmallVector<Value> ivs;
    std::function<void(int64_t)> nest = [&](int64_t d) {
      if (d == rank) {
        body(ivs);
        return;
      }
      auto loop = scf::ForOp::create(b, idx(0), dim(mem, d), idx(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      ivs.push_back(loop.getInductionVar());
      nest(d + 1);
      ivs.pop_back();
    };
    nest(0);
  }

  void rowBlock(AttentionStepOp op, Value kt, Value s, Value n, Value br,
                Value f0, int64_t rows);
  void transposeKeys(Value k, Value kt, Value n, int64_t d,
                     ValueRange prefix = {});

  ImplicitLocOpBuilder &b;
  Type f32;
};

//===----------------------------------------------------------------------===//
// attention_step
//===----------------------------------------------------------------------===//

void Emitter::expandStep(AttentionStepOp op) {
  Value q = op.getQuery(), k = op.getKey();
  int64_t g = cast<MemRefType>(q.getType()).getDimSize(0);
  int64_t d = cast<MemRefType>(q.getType()).getDimSize(2);

  // The scratch buffers are stack allocations released when the step is
  // done (a memref.alloca_scope would be the natural form, but its
  // single-block region does not survive scf-to-cf).
  Value stack =
      LLVM::StackSaveOp::create(b, LLVM::LLVMPointerType::get(b.getContext()));

  Value lanes = idx(kLanes);
  Value kt, n;
  if (op.getKeyTransposed()) {
    // K is already [D, Bc]: read it in place.
    kt = k;
    n = dim(k, 1);
  } else {
    // Kt[d, c] = K[c, d] in f32: 16 x 16 blocks through registers
    // (vector.transpose), then the remaining rows and columns one by one.
    n = dim(k, 0);
    auto ktType = MemRefType::get({d, ShapedType::kDynamic}, f32);
    kt = memref::AllocaOp::create(b, ktType, ValueRange{n});
    transposeKeys(k, kt, n, d);
  }
  Value npad =
      arith::MulIOp::create(b, arith::CeilDivSIOp::create(b, n, lanes), lanes);

  auto sType = MemRefType::get({kRowBlock, ShapedType::kDynamic}, f32);
  Value s = memref::AllocaOp::create(b, sType, ValueRange{npad});

  // The G x Br rows of the tile (the query heads of a GQA group, then the
  // rows of each) are processed as one row space, four at a time, so that
  // packed heads share every load of K and V.
  Value br = dim(q, 1);
  Value total = arith::MulIOp::create(b, idx(g), br);
  Value total4 = arith::MulIOp::create(
      b, arith::DivSIOp::create(b, total, idx(kRowBlock)), idx(kRowBlock));
  scf::ForOp::create(b, idx(0), total4, idx(kRowBlock), ValueRange{},
                     [&](OpBuilder &, Location, Value f0, ValueRange) {
                       rowBlock(op, kt, s, n, br, f0, kRowBlock);
                       scf::YieldOp::create(b);
                     });
  scf::ForOp::create(b, total4, total, idx(1), ValueRange{},
                     [&](OpBuilder &, Location, Value f0, ValueRange) {
                       rowBlock(op, kt, s, n, br, f0, 1);
                       scf::YieldOp::create(b);
                     });
  LLVM::StackRestoreOp::create(b, stack);
}

/// Writes Kt[d, c] = K[c, d] for the n x d key block `k`, converting to
/// Kt's element type.
void Emitter::transposeKeys(Value k, Value kt, Value n, int64_t d,
                            ValueRange prefix) {
  // Indices of K[c, dd] and Kt[dd, c] behind the leading `prefix`.
  auto at = [&](Value first, Value second) {
    SmallVector<Value> indices(prefix.begin(), prefix.end());
    indices.push_back(first);
    indices.push_back(second);
    return indices;
  };
  auto scalarLoop = [&](Value cLb, Value cUb, int64_t dLb, int64_t dUb) {
    scf::ForOp::create(b, cLb, cUb, idx(1), ValueRange{},
                       [&](OpBuilder &, Location, Value c, ValueRange) {
                         scf::ForOp::create(
                             b, idx(dLb), idx(dUb), idx(1), ValueRange{},
                             [&](OpBuilder &, Location, Value dd, ValueRange) {
                               storeScalar(loadScalar(k, at(c, dd)), kt,
                                           at(dd, c));
                               scf::YieldOp::create(b);
                             });
                         scf::YieldOp::create(b);
                       });
  };
  Value n16 = arith::MulIOp::create(
      b, arith::DivSIOp::create(b, n, idx(kLanes)), idx(kLanes));
  int64_t d16 = d / kLanes * kLanes;
  auto blockType = VectorType::get({kLanes, kLanes}, f32);
  // Loops, not unrolled code: the 16 x 16 block is large once lowered to
  // shuffles, and compile time matters to a JIT.
  scf::ForOp::create(
      b, idx(0), n16, idx(kLanes), ValueRange{},
      [&](OpBuilder &, Location, Value c0, ValueRange) {
        scf::ForOp::create(
            b, idx(0), idx(d16), idx(kLanes), ValueRange{},
            [&](OpBuilder &, Location, Value d0, ValueRange) {
              Value block = arith::ConstantOp::create(
                  b, blockType,
                  DenseElementsAttr::get(blockType, b.getF32FloatAttr(0.0)));
              for (int64_t i = 0; i < kLanes; ++i) {
                Value row = loadVec(
                    k, at(arith::AddIOp::create(b, c0, idx(i)), d0), kLanes);
                block = vector::InsertOp::create(b, row, block, i);
              }
              Value t = vector::TransposeOp::create(b, block, {1, 0});
              for (int64_t j = 0; j < kLanes; ++j)
                storeVec(vector::ExtractOp::create(b, t, j), kt,
                         at(arith::AddIOp::create(b, d0, idx(j)), c0));
              scf::YieldOp::create(b);
            });
        scf::YieldOp::create(b);
      });
  if (d16 < d)
    scalarLoop(idx(0), n16, d16, d);
  scalarLoop(n16, n, 0, d);
}

/// Processes `rows` query rows of the tile starting at flat row `f0` (row
/// f is row f mod Br of head f div Br): S = Q . Kt, the online softmax
/// update of (m, l), and acc += P . V.
void Emitter::rowBlock(AttentionStepOp op, Value kt, Value s, Value n, Value br,
                       Value f0, int64_t rows) {
  Value q = op.getQuery(), v = op.getValue();
  Value acc = op.getAcc(), mMem = op.getMax(), lMem = op.getSum();
  int64_t d = cast<MemRefType>(q.getType()).getDimSize(2);
  int64_t dv = cast<MemRefType>(v.getType()).getDimSize(1);
  // Head and row of each of the `rows` flat rows.
  int64_t heads = cast<MemRefType>(q.getType()).getDimSize(0);
  SmallVector<Value> gs, rs;
  for (int64_t r = 0; r < rows; ++r) {
    Value f = r == 0 ? f0 : Value(arith::AddIOp::create(b, f0, idx(r)));
    gs.push_back(heads == 1 ? idx(0) : Value(arith::DivUIOp::create(b, f, br)));
    rs.push_back(heads == 1 ? f : Value(arith::RemUIOp::create(b, f, br)));
  }

  Value scaleVec = splat(f32Const(op.getScale().convertToDouble()), kLanes);
  Value ninf = negInf();
  Value ninfVec = splat(ninf, kLanes);
  auto indexVec = VectorType::get({kLanes}, b.getIndexType());
  Value laneIds = vector::StepOp::create(b, indexVec);

  // Columns [0, end_r) are visible to row r: n, or min(n, row + offset + 1)
  // under a causal mask, clamped at 0. Columns no row of the block sees are
  // neither computed nor read.
  Value offset = op.getMaskOffset();
  SmallVector<Value> ends, endVecs;
  Value visible = n;
  for (int64_t r = 0; r < rows; ++r) {
    Value end = n;
    if (offset) {
      Value lim = arith::AddIOp::create(
          b, arith::AddIOp::create(b, rs[r], offset), idx(1));
      end =
          arith::MaxSIOp::create(b, arith::MinSIOp::create(b, n, lim), idx(0));
      visible = r == 0 ? end : Value(arith::MaxSIOp::create(b, visible, end));
    }
    ends.push_back(end);
    endVecs.push_back(vector::BroadcastOp::create(b, indexVec, end));
  }

  // 1. S[r, :] = scale * Q[g_r, row_r, :] . Kt, in column chunks of `cols`
  // vectors, with masked columns set to -inf and the row maxima carried
  // along. The last partial chunk of 16 uses masked loads (`tailMask`) so
  // that no key column at or past the visible ones is read.
  auto qkChunks = [&](Value lb, Value ub, int64_t cols, Value tailMask,
                      ValueRange maxima) -> SmallVector<Value> {
    bool selectColumns = offset || tailMask;
    auto chunkLoop = scf::ForOp::create(
        b, lb, ub, idx(cols * kLanes), maxima,
        [&](OpBuilder &, Location, Value c0, ValueRange rowMax) {
          SmallVector<Value> init(rows * cols, vecConst(kLanes, 0.0));
          auto dLoop = scf::ForOp::create(
              b, idx(0), idx(d), idx(1), init,
              [&](OpBuilder &, Location, Value dd, ValueRange accs) {
                SmallVector<Value> kv;
                for (int64_t c = 0; c < cols; ++c) {
                  Value col = arith::AddIOp::create(b, c0, idx(c * kLanes));
                  kv.push_back(tailMask ? loadVecMasked(kt, {dd, col}, tailMask)
                                        : loadVec(kt, {dd, col}, kLanes));
                }
                SmallVector<Value> next;
                for (int64_t r = 0; r < rows; ++r) {
                  Value qs = splat(loadScalar(q, {gs[r], rs[r], dd}), kLanes);
                  for (int64_t c = 0; c < cols; ++c)
                    next.push_back(vector::FMAOp::create(b, qs, kv[c],
                                                         accs[r * cols + c]));
                }
                scf::YieldOp::create(b, next);
              });
          SmallVector<Value> nextMax(rowMax.begin(), rowMax.end());
          for (int64_t c = 0; c < cols; ++c) {
            Value col = arith::AddIOp::create(b, c0, idx(c * kLanes));
            Value colIds;
            if (selectColumns)
              colIds = arith::AddIOp::create(
                  b, laneIds, vector::BroadcastOp::create(b, indexVec, col));
            for (int64_t r = 0; r < rows; ++r) {
              Value sv = arith::MulFOp::create(b, dLoop.getResult(r * cols + c),
                                               scaleVec);
              if (selectColumns) {
                Value inRange = arith::CmpIOp::create(
                    b, arith::CmpIPredicate::slt, colIds, endVecs[r]);
                sv = arith::SelectOp::create(b, inRange, sv, ninfVec);
              }
              vector::StoreOp::create(b, sv, s, ValueRange{idx(r), col});
              nextMax[r] = arith::MaximumFOp::create(b, nextMax[r], sv);
            }
          }
          scf::YieldOp::create(b, nextMax);
        });
    return SmallVector<Value>(chunkLoop.getResults());
  };
  Value colsPad = arith::MulIOp::create(
      b, arith::CeilDivSIOp::create(b, visible, idx(kLanes)), idx(kLanes));
  Value wide = idx(kColVectors * kLanes);
  Value colsWide =
      arith::MulIOp::create(b, arith::DivSIOp::create(b, visible, wide), wide);
  Value colsFull = arith::MulIOp::create(
      b, arith::DivSIOp::create(b, visible, idx(kLanes)), idx(kLanes));
  SmallVector<Value> maxima(rows, ninfVec);
  maxima = qkChunks(idx(0), colsWide, kColVectors, nullptr, maxima);
  maxima = qkChunks(colsWide, colsFull, 1, nullptr, maxima);
  Value mask = vector::CreateMaskOp::create(
      b, VectorType::get({kLanes}, b.getI1Type()),
      ValueRange{arith::SubIOp::create(b, visible, colsFull)});
  maxima = qkChunks(colsFull, colsPad, 1, mask, maxima);

  // 2. Online softmax, one row at a time.
  Value zeroF = f32Const(0.0);
  SmallVector<Value> alphas;
  for (int64_t r = 0; r < rows; ++r) {
    Value g = gs[r], row = rs[r];
    Value rIdx = idx(r);
    Value rowMax = vector::ReductionOp::create(
        b, vector::CombiningKind::MAXIMUMF, maxima[r]);
    Value mOld = memref::LoadOp::create(b, mMem, ValueRange{g, row});
    Value lOld = memref::LoadOp::create(b, lMem, ValueRange{g, row});
    Value mNew = arith::MaximumFOp::create(b, mOld, rowMax);
    // A row with no visible key so far keeps m = -inf; subtract 0 instead
    // so that exp(-inf - m) is 0 rather than NaN.
    Value mIsInf =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mNew, ninf);
    Value mUse = arith::SelectOp::create(b, mIsInf, zeroF, mNew);
    Value oldIsInf =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mOld, ninf);
    Value alpha = arith::SelectOp::create(
        b, oldIsInf, zeroF,
        math::ExpOp::create(b, arith::SubFOp::create(b, mOld, mUse)));
    Value mUseVec = splat(mUse, kLanes);
    Value floorVec = vecConst(kLanes, -87.0);
    Value zeroVec = vecConst(kLanes, 0.0);
    auto sumLoop = scf::ForOp::create(
        b, idx(0), colsPad, idx(kLanes), ValueRange{zeroVec},
        [&](OpBuilder &, Location, Value c0, ValueRange iter) {
          Value sv =
              vector::LoadOp::create(b, vec(kLanes), s, ValueRange{rIdx, c0});
          Value masked =
              arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sv, ninfVec);
          Value x = arith::MaximumFOp::create(
              b, arith::SubFOp::create(b, sv, mUseVec), floorVec);
          Value p = arith::SelectOp::create(b, masked, zeroVec,
                                            math::ExpOp::create(b, x));
          vector::StoreOp::create(b, p, s, ValueRange{rIdx, c0});
          scf::YieldOp::create(
              b, ValueRange{arith::AddFOp::create(b, iter[0], p)});
        });
    Value rowSum = vector::ReductionOp::create(b, vector::CombiningKind::ADD,
                                               sumLoop.getResult(0));
    Value lNew =
        arith::AddFOp::create(b, arith::MulFOp::create(b, alpha, lOld), rowSum);
    memref::StoreOp::create(b, mNew, mMem, ValueRange{g, row});
    memref::StoreOp::create(b, lNew, lMem, ValueRange{g, row});
    alphas.push_back(alpha);
  }

  // 3. acc[g_r, row_r, :] = alpha_r * acc + P[r, :] . V, in column groups.
  int64_t d0 = 0;
  for (const SmallVector<int64_t> &group : chunkGroups(dv)) {
    SmallVector<int64_t> offsets;
    for (int64_t w : group) {
      offsets.push_back(d0);
      d0 += w;
    }
    SmallVector<Value> init;
    for (int64_t r = 0; r < rows; ++r)
      for (auto [w, off] : llvm::zip(group, offsets)) {
        Value a = loadVec(acc, {gs[r], rs[r], idx(off)}, w);
        init.push_back(arith::MulFOp::create(b, a, splat(alphas[r], w)));
      }
    int64_t cols = group.size();
    auto cLoop = scf::ForOp::create(
        b, idx(0), visible, idx(1), init,
        [&](OpBuilder &, Location, Value c, ValueRange accs) {
          SmallVector<Value> vv;
          for (auto [w, off] : llvm::zip(group, offsets))
            vv.push_back(loadVec(v, {c, idx(off)}, w));
          SmallVector<Value> next;
          for (int64_t r = 0; r < rows; ++r) {
            Value p = memref::LoadOp::create(b, s, ValueRange{idx(r), c});
            for (int64_t j = 0; j < cols; ++j)
              next.push_back(vector::FMAOp::create(b, splat(p, group[j]), vv[j],
                                                   accs[r * cols + j]));
          }
          scf::YieldOp::create(b, next);
        });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j)
        storeVec(cLoop.getResult(r * cols + j), acc,
                 {gs[r], rs[r], idx(offsets[j])});
  }
}

//===----------------------------------------------------------------------===//
// finalize and combine
//===----------------------------------------------------------------------===//

void Emitter::expandFinalize(FinalizeOp op) {
  Value acc = op.getAcc(), out = op.getOut(), lse = op.getLse();
  int64_t dv = cast<MemRefType>(acc.getType()).getShape().back();
  forEachRow(acc, 1, [&](SmallVector<Value> &row) {
    Value l = memref::LoadOp::create(b, op.getSum(), row);
    // l == 0: no visible key (output 0, lse -inf). A NaN l (NaN or inf in
    // the row's scores) propagates into both.
    Value positive =
        arith::CmpFOp::create(b, arith::CmpFPredicate::UNE, l, f32Const(0.0));
    Value inv = arith::SelectOp::create(
        b, positive, arith::DivFOp::create(b, f32Const(1.0), l), f32Const(0.0));
    int64_t d0 = 0;
    for (const SmallVector<int64_t> &group : chunkGroups(dv))
      for (int64_t w : group) {
        SmallVector<Value> at(row);
        at.push_back(idx(d0));
        Value x = arith::MulFOp::create(b, loadVec(acc, at, w), splat(inv, w));
        storeVec(x, out, at);
        d0 += w;
      }
    if (lse) {
      Value m = memref::LoadOp::create(b, op.getMax(), row);
      Value value = arith::SelectOp::create(
          b, positive, arith::AddFOp::create(b, m, math::LogOp::create(b, l)),
          negInf());
      memref::StoreOp::create(b, value, lse, row);
    }
  });
}

void Emitter::expandCombine(CombineOp op) {
  Value parts = op.getParts(), partLse = op.getPartLse();
  Value out = op.getOut(), lse = op.getLse();
  int64_t dv = cast<MemRefType>(parts.getType()).getShape().back();
  Value splits = dim(parts, 0);
  forEachRow(out, 1, [&](SmallVector<Value> &row) {
    auto at = [&](Value s) {
      SmallVector<Value> indices = {s};
      indices.append(row.begin(), row.end());
      return indices;
    };
    Value ninf = negInf();
    auto maxLoop = scf::ForOp::create(
        b, idx(0), splits, idx(1), ValueRange{ninf},
        [&](OpBuilder &, Location, Value s, ValueRange iter) {
          Value x = memref::LoadOp::create(b, partLse, at(s));
          scf::YieldOp::create(
              b, ValueRange{arith::MaximumFOp::create(b, iter[0], x)});
        });
    Value mx = maxLoop.getResult(0);
    Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mx, ninf);
    Value mUse = arith::SelectOp::create(b, empty, f32Const(0.0), mx);
    auto sumLoop = scf::ForOp::create(
        b, idx(0), splits, idx(1), ValueRange{f32Const(0.0)},
        [&](OpBuilder &, Location, Value s, ValueRange iter) {
          Value x = memref::LoadOp::create(b, partLse, at(s));
          Value e = math::ExpOp::create(b, arith::SubFOp::create(b, x, mUse));
          scf::YieldOp::create(
              b, ValueRange{arith::AddFOp::create(b, iter[0], e)});
        });
    Value total = arith::SelectOp::create(
        b, empty, ninf,
        arith::AddFOp::create(b, mUse,
                              math::LogOp::create(b, sumLoop.getResult(0))));
    if (lse)
      memref::StoreOp::create(b, total, lse, row);
    Value totalUse = arith::SelectOp::create(b, empty, f32Const(0.0), total);
    int64_t d0 = 0;
    for (const SmallVector<int64_t> &group : chunkGroups(dv)) {
      SmallVector<int64_t> offsets;
      SmallVector<Value> init;
      for (int64_t w : group) {
        offsets.push_back(d0);
        init.push_back(vecConst(w, 0.0));
        d0 += w;
      }
      auto sLoop = scf::ForOp::create(
          b, idx(0), splits, idx(1), init,
          [&](OpBuilder &, Location, Value s, ValueRange accs) {
            Value x = memref::LoadOp::create(b, partLse, at(s));
            // Empty splits (lse = -inf) get weight exp(-inf) = 0.
            Value isInf =
                arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x, ninf);
            Value weight = arith::SelectOp::create(
                b, isInf, f32Const(0.0),
                math::ExpOp::create(b, arith::SubFOp::create(b, x, totalUse)));
            SmallVector<Value> next;
            for (auto [j, w] : llvm::enumerate(group)) {
              SmallVector<Value> indices = at(s);
              indices.push_back(idx(offsets[j]));
              next.push_back(vector::FMAOp::create(
                  b, splat(weight, w), loadVec(parts, indices, w), accs[j]));
            }
            scf::YieldOp::create(b, next);
          });
      for (auto [j, w] : llvm::enumerate(group)) {
        SmallVector<Value> indices(row);
        indices.push_back(idx(offsets[j]));
        storeVec(sLoop.getResult(j), out, indices);
      }
    }
  });
}

//===----------------------------------------------------------------------===//
// The transposed copy of K
//===----------------------------------------------------------------------===//

/// Returns true for the [B, H, N, D] -> [B, H, D, N] memref transposes that
/// flash-cpu-transpose-keys creates.
static bool isKeyTranspose(linalg::TransposeOp op) {
  auto in = dyn_cast<MemRefType>(op.getInput().getType());
  auto out = dyn_cast<MemRefType>(op.getInit().getType());
  return in && out && in.getRank() == 4 &&
         op.getPermutation() == ArrayRef<int64_t>{0, 1, 3, 2} &&
         !in.isDynamicDim(3);
}

void Emitter::expandKeyTranspose(linalg::TransposeOp op) {
  Value in = op.getInput(), out = op.getInit();
  int64_t d = cast<MemRefType>(in.getType()).getDimSize(3);
  Value n = dim(in, 2);
  // One work item per (batch, head), run in parallel like the tiles.
  SmallVector<OpFoldResult> space = {getAsOpFoldResult(dim(in, 0)),
                                     getAsOpFoldResult(dim(in, 1))};
  auto forall = scf::ForallOp::create(b, space, ValueRange{}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  SmallVector<Value> ivs = forall.getInductionVars();
  transposeKeys(in, out, n, d, ivs);
}

struct FlashExpandToCPUPass
    : flash::impl::FlashExpandToCPUBase<FlashExpandToCPUPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    bool failedAny = false;
    getOperation()->walk([&](Operation *op) {
      if (!isa<AttentionStepOp, FinalizeOp, CombineOp>(op))
        return;
      if (op->getNumResults() != 0) {
        op->emitOpError("must be bufferized (on memrefs) before "
                        "flash-expand-to-cpu");
        failedAny = true;
        return;
      }
      if (auto step = dyn_cast<AttentionStepOp>(op)) {
        int64_t rank = cast<MemRefType>(step.getQuery().getType()).getRank();
        if (rank != 3) {
          op->emitOpError() << "query must be a [G, Br, D] tile (rank 3) for "
                               "the CPU expansion, got rank "
                            << rank << "; run flash-tile first";
          failedAny = true;
          return;
        }
      }
      // The kernels are unrolled over the head dimensions: the innermost
      // size of Q, K (untransposed), V, acc, out and parts must be static.
      SmallVector<Value> headDimOperands;
      if (auto step = dyn_cast<AttentionStepOp>(op)) {
        headDimOperands = {step.getQuery(), step.getValue(), step.getAcc()};
        if (!step.getKeyTransposed())
          headDimOperands.push_back(step.getKey());
      } else if (auto fin = dyn_cast<FinalizeOp>(op)) {
        headDimOperands = {fin.getAcc(), fin.getOut()};
      } else {
        auto combine = cast<CombineOp>(op);
        headDimOperands = {combine.getParts(), combine.getOut()};
      }
      for (Value operand : headDimOperands) {
        auto type = cast<MemRefType>(operand.getType());
        if (type.isDynamicDim(type.getRank() - 1)) {
          op->emitOpError() << "needs static head dimensions for the CPU "
                               "expansion, got "
                            << type;
          failedAny = true;
          return;
        }
        if (type.getShape().back() > flashc::kMaxHeadDim) {
          op->emitOpError() << "head dimension " << type.getShape().back()
                            << " exceeds the " << flashc::kMaxHeadDim
                            << " the CPU kernels unroll";
          failedAny = true;
          return;
        }
        // These are read and written with vector loads and stores.
        int64_t offset;
        SmallVector<int64_t> strides;
        if (type.getShape().back() != 1 &&
            (failed(type.getStridesAndOffset(strides, offset)) ||
             strides.back() != 1)) {
          op->emitOpError() << "needs unit stride in the innermost "
                               "dimension, got "
                            << type;
          failedAny = true;
          return;
        }
      }
      ops.push_back(op);
    });
    if (failedAny)
      return signalPassFailure();
    getOperation()->walk([&](linalg::TransposeOp op) {
      if (isKeyTranspose(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      ImplicitLocOpBuilder b(op->getLoc(), op);
      Emitter emitter(b);
      if (auto transpose = dyn_cast<linalg::TransposeOp>(op))
        emitter.expandKeyTranspose(transpose);
      else if (auto step = dyn_cast<AttentionStepOp>(op))
        emitter.expandStep(step);
      else if (auto fin = dyn_cast<FinalizeOp>(op))
        emitter.expandFinalize(fin);
      else
        emitter.expandCombine(cast<CombineOp>(op));
      op->erase();
    }
  }
};

} // namespace
