//===- FlashToCPU.cpp - Expand block-level flash ops for the CPU ----------===//
//
// Implements `flash-expand-to-cpu`: flash.attention_step, flash.finalize and
// flash.combine on memrefs become vector-dialect loops. The step follows the
// register-blocked shape recorded in DESIGN.md ("CPU lowering"). With K
// pre-transposed (prefill), S = Q . Kt is computed 4 rows x up to 4 vectors
// of columns at a time with accumulators carried through the head dimension
// loop; the columns every row of 64 sees go chunk by chunk across all their
// row blocks, so that each chunk of Kt is read from L1. Otherwise (decode)
// K is read in place, row by row: each (row, key) pair gets one accumulator
// along the head dimension, and one vector's worth of them is summed at
// once by a shuffle tree. The online softmax runs row by row. Rows are
// taken 64 at a time: their S and softmax first, then the alpha rescale of
// the f32 state, then P . V in blocks of keys small enough for their V rows
// to stay in L1 while every row block reads them. Vector width and register
// blocks follow the `vector-lanes` option (16 for AVX-512's 32 registers, 8
// for AVX2's 16).
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

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

#define DEBUG_TYPE "flash-expand-to-cpu"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHEXPANDTOCPU
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// Query rows per register block of S = Q . K^T.
constexpr int64_t kRowBlock = 4;
/// At most this many vectors per row in one register block.
constexpr int64_t kMaxColVectors = 4;
/// How many keys ahead decode prefetches the rows of K.
constexpr int64_t kPrefetchKeys = 16;
/// Rows whose scores are kept at once: P . V then runs over them key block
/// by key block, so that each block of V is read from L1 by all of them.
constexpr int64_t kSuperRows = 64;
/// Bytes of V one key block of P . V may take (an L1 share).
constexpr int64_t kValueBlockBytes = 32 * 1024;
/// The most keys a step's S is laid out for with a constant row stride.
constexpr int64_t kMaxStaticKeys = 4096;
/// Side of the square blocks the transposed copy of K is built from.
constexpr int64_t kTransposeBlock = 16;

/// Phases of the attention step left out for measurement (the pass's
/// `ablate` option).
struct Ablation {
  bool qk = false, softmax = false, pv = false;
};

/// A constant upper bound of the index `v` where its definition shows one:
/// a constant, the minimum of values one of which is bounded, or the
/// extent of a subview whose size is bounded. Tiling makes the
/// key block's length min(Bc, rest), so that a step's scratch can be laid
/// out for Bc keys.
static std::optional<int64_t> constantUpperBound(Value v, int depth = 0) {
  if (depth > 8)
    return std::nullopt;
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return c;
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<arith::MinSIOp, arith::MinUIOp>(def)) {
    std::optional<int64_t> best;
    for (Value operand : def->getOperands())
      if (std::optional<int64_t> ub = constantUpperBound(operand, depth + 1))
        best = best ? std::min(*best, *ub) : *ub;
    return best;
  }
  if (auto dimOp = dyn_cast<memref::DimOp>(def)) {
    std::optional<int64_t> index = dimOp.getConstantIndex();
    if (!index)
      return std::nullopt;
    Value source = dimOp.getSource();
    auto type = cast<MemRefType>(source.getType());
    if (!type.isDynamicDim(*index))
      return type.getDimSize(*index);
    if (auto view = source.getDefiningOp<memref::SubViewOp>()) {
      // The result's dynamic dims are the non-dropped sizes, in order.
      llvm::SmallBitVector dropped = view.getDroppedDims();
      int64_t seen = -1;
      for (auto [i, size] : llvm::enumerate(view.getMixedSizes())) {
        if (dropped.test(i))
          continue;
        if (++seen != *index)
          continue;
        if (std::optional<int64_t> c = getConstantIntValue(size))
          return c;
        return constantUpperBound(cast<Value>(size), depth + 1);
      }
    }
  }
  return std::nullopt;
}

/// Emits the CPU code of the block-level ops. Holds the builder and small
/// helpers for constants, element-type conversion and chunked loops.
class Emitter {
public:
  /// `lanes` (8 or 16) is the f32 width of one vector register; the
  /// register file is taken to hold 2 x lanes of them (AVX2, AVX-512), and
  /// a register block keeps at most `lanes` accumulators.
  Emitter(ImplicitLocOpBuilder &b, int64_t lanes, bool bf16Dot, bool scalef,
          bool ktReuse, Ablation ablation)
      : b(b), f32(b.getF32Type()), kLanes(lanes), bf16Dot(bf16Dot),
        scalef(scalef), ktReuse(ktReuse), ablation(ablation) {}

  void expandStep(AttentionStepOp op);
  void expandKeyTranspose(linalg::TransposeOp op);
  void expandWiden(linalg::CopyOp op);
  void expandFinalize(FinalizeOp op);
  void expandCombine(CombineOp op);

  /// True when the last step expanded computes S by vdpbf16ps.
  bool usedDotProduct() const { return dotProduct; }

private:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  /// The index `base + r` (`base` itself for r = 0).
  Value plus(Value base, int64_t r) {
    return r == 0 ? base : Value(arith::AddIOp::create(b, base, idx(r)));
  }
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

  /// Asks LLVM to leave every loop in `root` as written
  /// (llvm.loop.disable_nonforced on its back edge): no unrolling, full or
  /// partial, and no vectorization. For the loops this pass writes, whose
  /// bodies are vector code blocked already, which LLVM would only copy at a
  /// cost in compile time.
  void leaveLoopsAsWritten(Operation *root) {
    MLIRContext *ctx = b.getContext();
    auto asWritten = LLVM::LoopAnnotationAttr::get(
        ctx, /*disableNonforced=*/BoolAttr::get(ctx, true), {}, {}, {}, {}, {},
        {}, {}, {}, {}, {}, {}, {}, {}, {});
    root->walk(
        [&](scf::ForOp loop) { loop->setAttr(kLoopAnnotation, asWritten); });
  }
  /// scf-to-cf copies a loop's attributes to its back edge's cf.br and
  /// cf-to-llvm those to llvm.br, where this name is its loop annotation.
  static constexpr StringLiteral kLoopAnnotation = "loop_annotation";

  /// A step's scale as an f32 value: its `scale`, times its run-time
  /// `scale_factor` when it has one.
  Value stepScale(AttentionStepOp op) {
    double scale = op.getScale().convertToDouble();
    Value factor = op.getScaleFactor();
    if (!factor)
      return f32Const(scale);
    return scale == 1.0 ? factor
                        : Value(arith::MulFOp::create(b, f32Const(scale),
                                                      factor));
  }
  /// Whether a step's scale is positive: its `scale` is checked by the
  /// verifier, a run-time factor by the runtime before each call.
  static bool hasPositiveScale(AttentionStepOp op) {
    return op.getScale().convertToDouble() > 0.0;
  }

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
  /// A vector of floating-point zeros of `type`.
  Value zeros(VectorType type) {
    return arith::ConstantOp::create(
        b, type,
        DenseElementsAttr::get(type,
                               b.getFloatAttr(type.getElementType(), 0.0)));
  }
  /// Loads 16 elements with the lanes off in `mask` reading as 0.
  Value loadVecMasked(Value mem, ValueRange indices, Value mask) {
    Type elt = cast<MemRefType>(mem.getType()).getElementType();
    auto type = VectorType::get({kLanes}, elt);
    Value v = vector::MaskedLoadOp::create(b, type, mem, indices, mask,
                                           zeros(type));
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

  /// Vectors per row of a register block of `rows` rows: `kLanes`
  /// accumulators in all, at most kMaxColVectors per row.
  int64_t colVectors(int64_t rows) const {
    return std::clamp<int64_t>(kLanes / rows, 1, kMaxColVectors);
  }

  /// Splits a static extent into vector widths: groups of up to `cols` full
  /// vectors, then one narrower tail.
  SmallVector<SmallVector<int64_t>> chunkGroups(int64_t extent,
                                                int64_t cols) const {
    SmallVector<SmallVector<int64_t>> groups;
    int64_t full = extent / kLanes, tail = extent % kLanes;
    for (int64_t i = 0; i < full; i += cols) {
      SmallVector<int64_t> group(std::min(cols, full - i), kLanes);
      groups.push_back(group);
    }
    if (tail) {
      if (!groups.empty() && (int64_t)groups.back().size() < cols)
        groups.back().push_back(tail);
      else
        groups.push_back({tail});
    }
    return groups;
  }

  /// Emits `body(indices)` inside a loop nest over the dimensions of `mem`
  /// except the last `keep` ones, and except the first ones when `outer`
  /// gives their indices.
  void forEachRow(Value mem, int64_t keep,
                  function_ref<void(SmallVector<Value> &)> body,
                  ValueRange outer = {}) {
    int64_t rank = cast<MemRefType>(mem.getType()).getRank() - keep;
    SmallVector<Value> ivs(outer.begin(), outer.end());
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
    nest(static_cast<int64_t>(outer.size()));
  }

  std::pair<Value, Value> headAndRow(AttentionStepOp op, Value f, Value br);
  Value rowsOf(AttentionStepOp op, Value n, Value br, Value f0, int64_t rows,
               SmallVector<Value> &gs, SmallVector<Value> &rs,
               SmallVector<Value> &ends);
  void rowBlock(AttentionStepOp op, Value kt, Value s, Value n, Value br,
                Value f0, int64_t rows, Value alphaMem, Value a0, Value done,
                Value maxMem);
  Value sharedColumns(AttentionStepOp op, Value n, Value br, Value sb0,
                      Value count, int64_t chunk);
  void sharedScores(AttentionStepOp op, Value kt, Value s, Value br, Value sb0,
                    Value count4, Value shared, Value maxMem);
  SmallVector<Value> qkBlock(Value q, Value kt, Value s, ArrayRef<Value> sRows,
                             ArrayRef<Value> gs, ArrayRef<Value> rs,
                             ArrayRef<Value> cols, Value tailMask);
  void pvBlock(AttentionStepOp op, Value s, Value n, Value br, Value f0,
               int64_t rows, Value lo, Value hi, Value alphaMem, Value a0,
               bool prefetchV);
  SmallVector<Value> scoresByKeyRows(AttentionStepOp op, Value s,
                                     ArrayRef<Value> gs, ArrayRef<Value> rs,
                                     ArrayRef<Value> ends, Value visible,
                                     Value colsPad);
  Value sumEach(ArrayRef<Value> parts);
  Value maxOf(Value x, Value y);
  Value reduceLanes(Value v, function_ref<Value(Value, Value)> combine);
  Value reduceMax(Value v);
  Value reduceSum(Value v);
  Value exp2Vec(Value x);
  void prefetchRows(Value mem, Value first, int64_t count, uint32_t locality);
  void transposeKeys(Value k, Value kt, Value n, int64_t d,
                     ValueRange prefix = {});
  SmallVector<Value> transposeBlock(ArrayRef<Value> rows);

  ImplicitLocOpBuilder &b;
  Type f32;
  /// f32 lanes of one vector register.
  const int64_t kLanes;
  /// AVX512_BF16's vdpbf16ps may compute decode's S for bf16 Q and K.
  const bool bf16Dot;
  /// 2^x of 16-lane vectors by AVX-512's vreduceps and vscalefps.
  const bool scalef;
  /// S's shared columns go chunk by chunk across the row blocks
  /// (sharedScores).
  const bool ktReuse;
  /// Phases whose loops run zero times (measurement only).
  const Ablation ablation;
  /// This step's decode S uses vdpbf16ps (packedQuery then holds bf16).
  bool dotProduct = false;
  /// The [4, D padded] f32 scratch of `scoresByKeyRows`.
  Value packedQuery;
};

//===----------------------------------------------------------------------===//
// attention_step
//===----------------------------------------------------------------------===//

void Emitter::expandStep(AttentionStepOp op) {
  Value q = op.getQuery(), k = op.getKey();
  int64_t g = cast<MemRefType>(q.getType()).getDimSize(0);

  // The scratch buffers are stack allocations released when the step is
  // done (a memref.alloca_scope would be the natural form, but its
  // single-block region does not survive scf-to-cf).
  Value stack =
      LLVM::StackSaveOp::create(b, LLVM::LLVMPointerType::get(b.getContext()));

  Value lanes = idx(kLanes);
  // K pre-transposed ([D, Bc]) is read in place by the column-blocked
  // product; otherwise K rows are read in place by the row-by-row product.
  Value kt, n;
  if (op.getKeyTransposed()) {
    kt = k;
    n = dim(k, 1);
  } else {
    n = dim(k, 0);
    // The rows of Q of one row block, padded to whole vectors: in f32, or
    // as bf16 pairs for vdpbf16ps (32 elements a vector).
    auto qType = cast<MemRefType>(q.getType());
    Type bf16 = b.getBF16Type();
    dotProduct = bf16Dot && kLanes == 16 && qType.getElementType() == bf16 &&
                 cast<MemRefType>(k.getType()).getElementType() == bf16;
    int64_t width = dotProduct ? 2 * kLanes : kLanes;
    int64_t d = qType.getDimSize(2);
    int64_t dPad = (d + width - 1) / width * width;
    packedQuery = memref::AllocaOp::create(
        b, MemRefType::get({kRowBlock, dPad}, dotProduct ? bf16 : f32));
  }
  Value npad =
      arith::MulIOp::create(b, arith::CeilDivSIOp::create(b, n, lanes), lanes);

  // S (then P) of up to kSuperRows rows, and their alphas. Where the key
  // block's length has a constant bound (Bc), S is laid out for it: with a
  // constant row stride, the rows of a block are one pointer and constant
  // displacements in the loops that read them, not a register each.
  Value s;
  std::optional<int64_t> nBound = constantUpperBound(n);
  if (nBound && *nBound > 0 && *nBound <= kMaxStaticKeys) {
    int64_t cols = (*nBound + kLanes - 1) / kLanes * kLanes;
    s = memref::AllocaOp::create(b, MemRefType::get({kSuperRows, cols}, f32));
  } else {
    auto sType = MemRefType::get({kSuperRows, ShapedType::kDynamic}, f32);
    s = memref::AllocaOp::create(b, sType, ValueRange{npad});
  }
  LLVM_DEBUG(
      DBGS() << "step at " << op.getLoc() << ": "
             << (kt ? "K pre-transposed, column blocks" : "K rows in place")
             << (dotProduct ? ", S by vdpbf16ps" : "") << ", S laid out "
             << (nBound && *nBound > 0 && *nBound <= kMaxStaticKeys
                     ? "for " + std::to_string(*nBound) + " keys"
                     : std::string("with a run-time row stride"))
             << "\n");
  Value alphaMem =
      memref::AllocaOp::create(b, MemRefType::get({kSuperRows}, f32));
  // With S's shared columns computed across the row blocks (sharedScores),
  // each row's running maximum over them, a vector a row.
  Value maxMem;
  if (kt && ktReuse)
    maxMem =
        memref::AllocaOp::create(b, MemRefType::get({kSuperRows, kLanes}, f32));
  auto rowsView = [&](Value i, int64_t rows) -> Value {
    SmallVector<OpFoldResult> offsets = {i, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(rows), npad};
    SmallVector<OpFoldResult> strides = {b.getIndexAttr(1),
                                         b.getIndexAttr(1)};
    return memref::SubViewOp::create(b, s, offsets, sizes, strides);
  };
  // Keys per block of P . V: the block of V stays in L1 while every row
  // block of the super-block reads it.
  Value v = op.getValue();
  auto vType = cast<MemRefType>(v.getType());
  int64_t rowBytes = vType.getDimSize(1) * vType.getElementTypeBitWidth() / 8;
  int64_t pvKeys = std::clamp<int64_t>(
      static_cast<int64_t>(llvm::bit_floor(static_cast<uint64_t>(
          std::max<int64_t>(kValueBlockBytes / rowBytes, 1)))),
      16, 256);
  LLVM_DEBUG(DBGS() << "P . V in blocks of " << pvKeys << " keys (V rows of "
                    << rowBytes << " bytes)\n");

  // The G x Br rows of the tile (the query heads of a GQA group, then the
  // rows of each) are processed as one row space, four at a time, so that
  // packed heads share every load of K and V: kSuperRows rows at a time,
  // first S and the online softmax row block by row block, then
  // acc = alpha acc, then P . V key block by key block.
  Value br = dim(q, 1);
  Value total = arith::MulIOp::create(b, idx(g), br);
  scf::ForOp::create(
      b, idx(0), total, idx(kSuperRows), ValueRange{},
      [&](OpBuilder &, Location, Value sb0, ValueRange) {
        Value count = arith::SubIOp::create(
            b,
            arith::MinSIOp::create(
                b, arith::AddIOp::create(b, sb0, idx(kSuperRows)), total),
            sb0);
        Value count4 = arith::MulIOp::create(
            b, arith::DivSIOp::create(b, count, idx(kRowBlock)),
            idx(kRowBlock));
        // Row blocks of kRowBlock rows, then the rest one at a time.
        auto eachBlock = [&](function_ref<void(Value, Value, int64_t)> body) {
          scf::ForOp::create(b, idx(0), count4, idx(kRowBlock), ValueRange{},
                             [&](OpBuilder &, Location, Value i, ValueRange) {
                               body(i, arith::AddIOp::create(b, sb0, i),
                                    kRowBlock);
                               scf::YieldOp::create(b);
                             });
          scf::ForOp::create(b, count4, count, idx(1), ValueRange{},
                             [&](OpBuilder &, Location, Value i, ValueRange) {
                               body(i, arith::AddIOp::create(b, sb0, i), 1);
                               scf::YieldOp::create(b);
                             });
        };
        // The columns that every row of the super-block sees, in whole
        // chunks: their scores are computed chunk by chunk across the row
        // blocks, so that a chunk of K^T is read from L2 once and from L1
        // by every row block.
        Value shared;
        if (maxMem) {
          shared = sharedColumns(op, n, br, sb0, count,
                                 colVectors(kRowBlock) * kLanes);
          sharedScores(op, kt, s, br, sb0, count4, shared, maxMem);
        }
        eachBlock([&](Value i, Value f0, int64_t rows) {
          bool whole = rows == kRowBlock;
          rowBlock(op, kt, rowsView(i, rows), n, br, f0, rows, alphaMem, i,
                   whole ? shared : Value(), whole ? maxMem : Value());
        });
        scf::ForOp::create(
            b, idx(0), ablation.pv ? idx(0) : n, idx(pvKeys), ValueRange{},
            [&](OpBuilder &, Location, Value k0, ValueRange) {
              Value hi = arith::MinSIOp::create(
                  b, arith::AddIOp::create(b, k0, idx(pvKeys)), n);
              eachBlock([&](Value i, Value f0, int64_t rows) {
                pvBlock(op, rowsView(i, rows), n, br, f0, rows, k0, hi,
                        alphaMem, i, /*prefetchV=*/!kt);
              });
              scf::YieldOp::create(b);
            });
        scf::YieldOp::create(b);
      });
  auto restore = LLVM::StackRestoreOp::create(b, stack);
  // The step's loops are vector code blocked here already; unrolled or
  // vectorized again by LLVM they only compile longer (a sixth of a prefill
  // worker's LLVM time) and run no faster.
  for (Operation *it = stack.getDefiningOp(); it != restore;
       it = it->getNextNode())
    leaveLoopsAsWritten(it);
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
  // The edges that do not fill a block, element by element.
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
  constexpr int64_t t = kTransposeBlock;
  Value n16 = arith::MulIOp::create(b, arith::DivSIOp::create(b, n, idx(t)),
                                    idx(t));
  int64_t d16 = d / t * t;
  // Loops, not unrolled code: the 16 x 16 block is large once lowered to
  // shuffles, and compile time matters to a JIT. expandKeyTranspose asks
  // LLVM to leave these loops and the edges' as written: it would unroll
  // the loop over D, a copy of the block's shuffles per copy, and vectorize
  // the edges, which are not worth the compile time.
  scf::ForOp::create(
      b, idx(0), n16, idx(t), ValueRange{},
      [&](OpBuilder &, Location, Value c0, ValueRange) {
        scf::ForOp::create(
            b, idx(0), idx(d16), idx(t), ValueRange{},
            [&](OpBuilder &, Location, Value d0, ValueRange) {
              SmallVector<Value> rows;
              for (int64_t i = 0; i < t; ++i)
                rows.push_back(loadVec(
                    k, at(arith::AddIOp::create(b, c0, idx(i)), d0), t));
              rows = transposeBlock(rows);
              for (int64_t j = 0; j < t; ++j)
                storeVec(rows[j], kt,
                         at(arith::AddIOp::create(b, d0, idx(j)), c0));
              scf::YieldOp::create(b);
            });
        scf::YieldOp::create(b);
      });
  if (d16 < d)
    scalarLoop(idx(0), n16, d16, d);
  scalarLoop(n16, n, 0, d);
}

/// The transpose of the square block whose rows are `rows` (t vectors of
/// t lanes, t a power of two), in log2(t) rounds of two-source shuffles.
/// The round at bit `h` swaps the off-diagonal h x h blocks of every 2h x
/// 2h diagonal block: rows r and r + h (r without bit h) exchange the lanes
/// j with bit h set in row r for the lanes j - h of row r + h. Together the
/// rounds exchange every bit of the row index with that of the lane index:
/// t log2(t) shuffles (64 for 16 x 16), each one x86 instruction. A
/// vector.transpose of a 2-D vector lowers to t x t element moves, which
/// LLVM takes longer to turn back into shuffles than the whole transposed
/// copy takes to compile this way.
SmallVector<Value> Emitter::transposeBlock(ArrayRef<Value> rows) {
  int64_t t = rows.size();
  assert(llvm::isPowerOf2_64(t) && "a power-of-two block");
  SmallVector<Value> cur(rows);
  for (int64_t h = t / 2; h >= 1; h /= 2) {
    // Lanes of the pair (a = row r, b = row r + h) as two-source indices:
    // a's lane j is j, b's lane j is t + j.
    SmallVector<int64_t> low, high;
    for (int64_t j = 0; j < t; ++j) {
      bool upper = j & h;
      low.push_back(upper ? t + j - h : j);
      high.push_back(upper ? t + j : j + h);
    }
    for (int64_t r = 0; r < t; ++r) {
      if (r & h)
        continue;
      Value a = cur[r], bRow = cur[r + h];
      cur[r] = vector::ShuffleOp::create(b, a, bRow, low);
      cur[r + h] = vector::ShuffleOp::create(b, a, bRow, high);
    }
  }
  return cur;
}

/// Prefetches rows [first, first + count) of the [n, D] block `mem`
/// (clamped to its last row), one prefetch per 64-byte line.
void Emitter::prefetchRows(Value mem, Value first, int64_t count,
                           uint32_t locality) {
  auto type = cast<MemRefType>(mem.getType());
  int64_t width = type.getShape().back();
  int64_t perLine =
      std::max<int64_t>(1, 64 / (type.getElementTypeBitWidth() / 8));
  Value last = arith::SubIOp::create(b, dim(mem, 0), idx(1));
  for (int64_t j = 0; j < count; ++j) {
    Value row = arith::MinSIOp::create(
        b, arith::AddIOp::create(b, first, idx(j)), last);
    for (int64_t col = 0; col < width; col += perLine)
      memref::PrefetchOp::create(b, mem, ValueRange{row, idx(col)},
                                 /*isWrite=*/false, locality,
                                 /*isDataCache=*/true);
  }
}

/// Returns one vector whose lane i is the sum of the lanes of `parts[i]`
/// (kLanes vectors of kLanes lanes). Pairs of vectors are halved with
/// two-source shuffles: each step adds the first and second halves of
/// every lane group, so log2(kLanes) steps of kLanes - 1 additions in all
/// replace kLanes separate reductions. The shuffles keep each output
/// 128-bit block within the same block of the inputs once groups are that
/// small, where x86 shuffles are cheapest.
Value Emitter::sumEach(ArrayRef<Value> parts) {
  int64_t n = kLanes;
  assert((int64_t)parts.size() == n && "one vector per lane");
  // The masks of one step, on groups of `size` lanes: within each block of
  // max(size, 4) lanes, the first halves of the first operand's groups,
  // then the second operand's (`lo`); `hi` has the second halves.
  auto masks = [&](int64_t size) {
    SmallVector<int64_t> lo, hi;
    int64_t block = std::max<int64_t>(size, 4), half = size / 2;
    for (int64_t start = 0; start < n; start += block)
      for (int64_t operand : {int64_t(0), n})
        for (int64_t lane = start; lane < start + block; ++lane)
          if (lane % size < half) {
            lo.push_back(operand + lane);
            hi.push_back(operand + lane + half);
          }
    return std::make_pair(lo, hi);
  };
  // Where each input ends up: follow the owners of the lanes.
  SmallVector<SmallVector<int64_t>> owners;
  for (int64_t i = 0; i < n; ++i)
    owners.push_back(SmallVector<int64_t>(n, i));
  for (int64_t size = n; size > 1; size /= 2) {
    SmallVector<int64_t> lo = masks(size).first;
    SmallVector<SmallVector<int64_t>> next;
    for (size_t i = 0; i < owners.size(); i += 2) {
      SmallVector<int64_t> merged;
      for (int64_t m : lo)
        merged.push_back(m < n ? owners[i][m] : owners[i + 1][m - n]);
      next.push_back(merged);
    }
    owners = std::move(next);
  }
  // Feed the inputs so that lane i ends up with parts[i].
  SmallVector<Value> level(n);
  for (int64_t lane = 0; lane < n; ++lane)
    level[owners[0][lane]] = parts[lane];
  for (int64_t size = n; size > 1; size /= 2) {
    auto [lo, hi] = masks(size);
    SmallVector<Value> next;
    for (size_t i = 0; i < level.size(); i += 2) {
      Value a = vector::ShuffleOp::create(b, level[i], level[i + 1], lo);
      Value c = vector::ShuffleOp::create(b, level[i], level[i + 1], hi);
      next.push_back(arith::AddFOp::create(b, a, c));
    }
    level = std::move(next);
  }
  // One vector is left (none only for no parts, which callers never pass).
  return level.empty() ? Value() : level.front();
}

/// x > y ? x : y, which is y where either is NaN: one vmaxps (the
/// NaN-propagating arith.maximumf costs five instructions on x86). Row
/// maxima use it with the score as `x`: a NaN score is left out of the
/// maximum, and still turns its row's P, l and output into NaN.
Value Emitter::maxOf(Value x, Value y) {
  Value gt = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, y);
  return arith::SelectOp::create(b, gt, x, y);
}

/// `v`'s lanes combined by `combine`, halving the vector each step.
Value Emitter::reduceLanes(Value v, function_ref<Value(Value, Value)> combine) {
  for (int64_t w = cast<VectorType>(v.getType()).getNumElements(); w > 1;
       w /= 2) {
    SmallVector<int64_t> lo, hi;
    for (int64_t i = 0; i < w / 2; ++i) {
      lo.push_back(i);
      hi.push_back(w / 2 + i);
    }
    v = combine(vector::ShuffleOp::create(b, v, v, hi),
                vector::ShuffleOp::create(b, v, v, lo));
  }
  return vector::ExtractOp::create(b, v, 0);
}

/// The largest lane of `v` by `maxOf`.
Value Emitter::reduceMax(Value v) {
  return reduceLanes(v, [&](Value x, Value y) { return maxOf(x, y); });
}

/// The sum of `v`'s lanes as a tree (vector.reduction's f32 add is ordered:
/// a chain of 15 scalar adds for 16 lanes).
Value Emitter::reduceSum(Value v) {
  return reduceLanes(v, [&](Value x, Value y) -> Value {
    return arith::AddFOp::create(b, x, y);
  });
}

/// 2^x for a vector x <= 0 (or NaN), the exponential of the softmax.
///
/// With `scalef` (16 lanes, AVX-512): x = floor(x) + f with f = x -
/// floor(x) in [0, 1] from vreduceps (rounding down), 2^f from a degree-5
/// polynomial fitted to 2^f on [0, 1] for relative error (1.5e-7 evaluated
/// in f32), and the factor 2^floor(x) applied by vscalefps, which takes the
/// floor of its exponent operand itself: 7 vector operations. vreduceps
/// gives f = 0 for -inf and vscalefps a factor of 0, so masked scores give
/// exactly 0 with no clamp; NaN stays NaN.
///
/// Otherwise x is clamped below at -127 and split as x = n + f with n =
/// round(x) and |f| <= 1/2; 2^f comes from a degree-5 polynomial (relative
/// error 2.4e-7 evaluated in f32; its coefficients fit 2^f on [-1/2, 1/2]
/// for relative error) and 2^n is built in the exponent bits. The rounding
/// is one add: t = x + (1.5 * 2^23 + 127) holds n + 127 in its low mantissa
/// bits (f32 rounds to nearest even, as roundeven would), so t - that
/// constant is n, and t's bits shifted left by 23 are the bits of 2^n. At
/// n = -127 those bits are 0, so 2^x is exactly 0 for x < -126.5, -inf
/// included: masked scores need no select (2^-126 and below do not matter
/// to a softmax whose largest term is 1). A NaN x stays NaN: the clamp
/// keeps it, and the polynomial of NaN is NaN.
Value Emitter::exp2Vec(Value x) {
  auto type = cast<VectorType>(x.getType());
  int64_t w = type.getNumElements();
  auto polynomial = [&](Value f, ArrayRef<double> coeffs) {
    Value p = vecConst(w, coeffs.back());
    for (double c : llvm::reverse(coeffs.drop_back()))
      p = vector::FMAOp::create(b, p, f, vecConst(w, c));
    return p;
  };
  if (scalef && w == 16) {
    static constexpr double kUnitCoeffs[] = {
        0.9999999403953552,  0.6931530833244324,   0.24015361070632935,
        0.05582631751894951, 0.008989340625703335, 0.0018775766948238015};
    Value all = arith::ConstantOp::create(b, b.getI16IntegerAttr(-1));
    Value currentRounding =
        arith::ConstantOp::create(b, b.getI32IntegerAttr(4));
    // vreduceps' imm8: keep no fraction bits (M = 0), round down (01), and
    // suppress the precision exception (bit 3).
    Value floorReduce = arith::ConstantOp::create(b, b.getI32IntegerAttr(9));
    Value f =
        LLVM::CallIntrinsicOp::create(
            b, type, b.getStringAttr("llvm.x86.avx512.mask.reduce.ps.512"),
            ValueRange{x, floorReduce, x, all, currentRounding})
            .getResult(0);
    Value p = polynomial(f, kUnitCoeffs);
    return LLVM::CallIntrinsicOp::create(
               b, type, b.getStringAttr("llvm.x86.avx512.mask.scalef.ps.512"),
               ValueRange{p, x, p, all, currentRounding})
        .getResult(0);
  }
  static constexpr double kCoeffs[] = {1.0,
                                       0.6931469440460205,
                                       0.24022120237350464,
                                       0.05550713092088699,
                                       0.009675533510744572,
                                       0.0013276446843519807};
  Value lo = vecConst(w, -127.0);
  Value below = arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x, lo);
  x = arith::SelectOp::create(b, below, lo, x);
  constexpr double kRound = 12582912.0 + 127.0; // 1.5 * 2^23 + bias
  Value roundConst = vecConst(w, kRound);
  Value t = arith::AddFOp::create(b, x, roundConst);
  Value n = arith::SubFOp::create(b, t, roundConst);
  Value p = polynomial(arith::SubFOp::create(b, x, n), kCoeffs);
  auto i32 = VectorType::get({w}, b.getI32Type());
  Value bits = arith::ShLIOp::create(
      b, arith::BitcastOp::create(b, i32, t),
      arith::ConstantOp::create(
          b, i32, DenseElementsAttr::get(i32, b.getI32IntegerAttr(23))));
  return arith::MulFOp::create(b, p, arith::BitcastOp::create(b, type, bits));
}

/// S[r, c] = scale * Q[g_r, row_r, :] . K[c, :] for the `rows` rows of a
/// block and the columns c < visible, reading K rows in place (decode:
/// no transposed copy of K). The rows of Q are first packed into an f32
/// scratch padded with zeros to whole vectors. Keys are taken
/// kLanes / rows at a time: one accumulator per (row, key) along the head
/// dimension, summed into one vector by `sumEach`; the keys past the last
/// whole group one at a time. Columns at or past a row's end are -inf, and
/// S is filled with -inf up to `colsPad`. Returns the row maxima.
SmallVector<Value> Emitter::scoresByKeyRows(AttentionStepOp op, Value s,
                                            ArrayRef<Value> gs,
                                            ArrayRef<Value> rs,
                                            ArrayRef<Value> ends,
                                            Value visible, Value colsPad) {
  Value q = op.getQuery(), k = op.getKey();
  int64_t rows = gs.size();
  int64_t d = cast<MemRefType>(q.getType()).getDimSize(2);
  // Elements of a K row per vector: kLanes in f32, twice that as the bf16
  // pairs of vdpbf16ps.
  int64_t width = dotProduct ? 2 * kLanes : kLanes;
  int64_t dFull = d / width * width, dTail = d % width;
  Value offset = op.getMaskOffset();
  Value ninf = negInf();

  // 1. Qp[r, :] = Q[g_r, row_r, :] in f32 (bf16 for vdpbf16ps, as it is),
  // zero-padded. The scale is applied to the sums, as in the column-blocked
  // product, so that both round (and overflow) alike.
  Value qp = packedQuery;
  Type qpElt = cast<MemRefType>(qp.getType()).getElementType();
  auto qpVec = [&](int64_t w) { return VectorType::get({w}, qpElt); };
  // `w` elements of Q in Qp's element type.
  auto loadQ = [&](Value r, Value g, Value dd, int64_t w) -> Value {
    if (dotProduct)
      return vector::LoadOp::create(b, qpVec(w), q, ValueRange{g, r, dd});
    return loadVec(q, {g, r, dd}, w);
  };
  Value scale = stepScale(op);
  for (int64_t r = 0; r < rows; ++r) {
    scf::ForOp::create(
        b, idx(0), idx(dFull), idx(width), ValueRange{},
        [&](OpBuilder &, Location, Value dd, ValueRange) {
          vector::StoreOp::create(b, loadQ(rs[r], gs[r], dd, width), qp,
                                  ValueRange{idx(r), dd});
          scf::YieldOp::create(b);
        });
    if (dTail) {
      vector::StoreOp::create(b, loadQ(rs[r], gs[r], idx(dFull), dTail), qp,
                              ValueRange{idx(r), idx(dFull)});
      vector::StoreOp::create(b, zeros(qpVec(width - dTail)), qp,
                              ValueRange{idx(r), idx(dFull + dTail)});
    }
  }
  // acc + the sums of the products of adjacent bf16 pairs of qv and kv.
  auto dotBF16 = [&](Value acc, Value qv, Value kv) -> Value {
    return LLVM::CallIntrinsicOp::create(
               b, vec(kLanes),
               b.getStringAttr("llvm.x86.avx512bf16.dpbf16ps.512"),
               ValueRange{acc, qv, kv})
        .getResult(0);
  };

  // The dot products of `keys` consecutive keys from `c0` with every row:
  // accumulator r * keys + j holds row r against key c0 + j, one vector
  // along the head dimension. The last partial vector of a K row is read
  // with a constant mask (zeros against Qp's zero padding).
  auto dots = [&](Value c0, int64_t keys) -> SmallVector<Value> {
    SmallVector<Value> keyIdx;
    for (int64_t j = 0; j < keys; ++j)
      keyIdx.push_back(j == 0 ? c0 : Value(arith::AddIOp::create(b, c0, idx(j))));
    auto step = [&](Value dd, ValueRange accs, Value tailMask) {
      SmallVector<Value> qv, next(accs.begin(), accs.end());
      for (int64_t r = 0; r < rows; ++r)
        qv.push_back(
            vector::LoadOp::create(b, qpVec(width), qp,
                                   ValueRange{idx(r), dd}));
      for (int64_t j = 0; j < keys; ++j) {
        Value kv;
        if (!dotProduct)
          kv = tailMask ? loadVecMasked(k, {keyIdx[j], dd}, tailMask)
                        : loadVec(k, {keyIdx[j], dd}, kLanes);
        else if (!tailMask)
          kv = vector::LoadOp::create(b, qpVec(width), k,
                                      ValueRange{keyIdx[j], dd});
        else
          kv = vector::MaskedLoadOp::create(b, qpVec(width), k,
                                            ValueRange{keyIdx[j], dd},
                                            tailMask, zeros(qpVec(width)));
        for (int64_t r = 0; r < rows; ++r)
          next[r * keys + j] =
              dotProduct
                  ? dotBF16(next[r * keys + j], qv[r], kv)
                  : vector::FMAOp::create(b, qv[r], kv, next[r * keys + j]);
      }
      return next;
    };
    SmallVector<Value> init(rows * keys, vecConst(kLanes, 0.0));
    auto dLoop = scf::ForOp::create(
        b, idx(0), idx(ablation.qk ? 0 : dFull), idx(width), init,
        [&](OpBuilder &, Location, Value dd, ValueRange accs) {
          scf::YieldOp::create(b, step(dd, accs, nullptr));
        });
    SmallVector<Value> accs(dLoop.getResults());
    if (dTail && !ablation.qk) {
      Value mask = vector::ConstantMaskOp::create(
          b, VectorType::get({width}, b.getI1Type()),
          ArrayRef<int64_t>{dTail});
      accs = step(idx(dFull), accs, mask);
    }
    return accs;
  };

  // 2. Whole groups of kLanes / rows keys, one shuffle tree each.
  int64_t keys = kLanes / rows;
  Value groupEnd = arith::MulIOp::create(
      b, arith::DivSIOp::create(b, visible, idx(keys)), idx(keys));
  auto indexVec = VectorType::get({kLanes}, b.getIndexType());
  // The lanes of row r in a vector laid out like the group sums.
  auto rowLanes = [&](Value x, int64_t r) -> Value {
    if (keys == kLanes)
      return x;
    return vector::ExtractStridedSliceOp::create(
        b, x, ArrayRef<int64_t>{r * keys}, ArrayRef<int64_t>{keys},
        ArrayRef<int64_t>{1});
  };
  Value laneKey, laneEnd;
  if (offset) {
    // Lane r * keys + j is key j of row r: its column offset and row end.
    SmallVector<Value> keyOffsets, rowEnds;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < keys; ++j) {
        keyOffsets.push_back(idx(j));
        rowEnds.push_back(ends[r]);
      }
    laneKey = vector::FromElementsOp::create(b, indexVec, keyOffsets);
    laneEnd = vector::FromElementsOp::create(b, indexVec, rowEnds);
  }
  Value ninfVec = splat(ninf, kLanes);
  // Decode streams K and V from memory once: the rows of K a few groups
  // ahead are prefetched, and the same rows of V into L2, so that two
  // streams are in flight while S is computed (one core reads more than
  // one stream at a time faster than one) and P . V reads V from L2.
  auto groupLoop = scf::ForOp::create(
      b, idx(0), groupEnd, idx(keys), ValueRange{ninfVec},
      [&](OpBuilder &, Location, Value c0, ValueRange maxVec) {
        Value ahead = arith::AddIOp::create(b, c0, idx(kPrefetchKeys));
        prefetchRows(k, ahead, keys, /*locality=*/3);
        prefetchRows(op.getValue(), ahead, keys, /*locality=*/2);
        Value sv = arith::MulFOp::create(b, sumEach(dots(c0, keys)),
                                         splat(scale, kLanes));
        if (offset) {
          Value cols = arith::AddIOp::create(
              b, laneKey, vector::BroadcastOp::create(b, indexVec, c0));
          Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                                cols, laneEnd);
          sv = arith::SelectOp::create(b, inRange, sv, ninfVec);
        }
        for (int64_t r = 0; r < rows; ++r)
          vector::StoreOp::create(b, rowLanes(sv, r), s, ValueRange{idx(r), c0});
        scf::YieldOp::create(
            b, ValueRange{maxOf(sv, maxVec[0])});
      });
  Value maxVec = groupLoop.getResult(0);
  SmallVector<Value> rowMax;
  for (int64_t r = 0; r < rows; ++r)
    rowMax.push_back(reduceMax(rowLanes(maxVec, r)));

  // 3. The remaining keys one at a time.
  auto keyLoop = scf::ForOp::create(
      b, groupEnd, visible, idx(1), rowMax,
      [&](OpBuilder &, Location, Value c, ValueRange maxima) {
        SmallVector<Value> accs = dots(c, 1);
        SmallVector<Value> next;
        for (int64_t r = 0; r < rows; ++r) {
          Value x = arith::MulFOp::create(
              b,
              reduceSum(accs[r]),
              scale);
          if (offset) {
            Value inRange = arith::CmpIOp::create(
                b, arith::CmpIPredicate::slt, c, ends[r]);
            x = arith::SelectOp::create(b, inRange, x, ninf);
          }
          memref::StoreOp::create(b, x, s, ValueRange{idx(r), c});
          next.push_back(maxOf(x, maxima[r]));
        }
        scf::YieldOp::create(b, next);
      });

  // 4. -inf up to the whole vectors the softmax reads.
  scf::ForOp::create(b, visible, colsPad, idx(1), ValueRange{},
                     [&](OpBuilder &, Location, Value c, ValueRange) {
                       for (int64_t r = 0; r < rows; ++r)
                         memref::StoreOp::create(b, ninf, s,
                                                 ValueRange{idx(r), c});
                       scf::YieldOp::create(b);
                     });
  return SmallVector<Value>(keyLoop.getResults());
}

/// The head and row of flat row `f` of the tile: row f mod Br of head
/// f div Br.
std::pair<Value, Value> Emitter::headAndRow(AttentionStepOp op, Value f,
                                            Value br) {
  int64_t heads = cast<MemRefType>(op.getQuery().getType()).getDimSize(0);
  if (heads == 1)
    return {idx(0), f};
  return {arith::DivUIOp::create(b, f, br), arith::RemUIOp::create(b, f, br)};
}

/// The head and row of each of the `rows` flat rows from `f0` (headAndRow),
/// and the end of each row's visible columns: [0, end_r) is n, or
/// min(n, row + offset + 1) under a causal mask, clamped at 0. Returns the
/// largest end.
Value Emitter::rowsOf(AttentionStepOp op, Value n, Value br, Value f0,
                      int64_t rows, SmallVector<Value> &gs,
                      SmallVector<Value> &rs, SmallVector<Value> &ends) {
  for (int64_t r = 0; r < rows; ++r) {
    Value f = plus(f0, r);
    auto [g, row] = headAndRow(op, f, br);
    gs.push_back(g);
    rs.push_back(row);
  }
  Value offset = op.getMaskOffset();
  auto endOf = [&](Value row) -> Value {
    Value lim =
        arith::AddIOp::create(b, arith::AddIOp::create(b, row, offset), idx(1));
    return arith::MaxSIOp::create(b, arith::MinSIOp::create(b, n, lim),
                                  idx(0));
  };
  for (int64_t r = 0; r < rows; ++r)
    ends.push_back(offset ? endOf(rs[r]) : n);
  if (!offset)
    return n;
  // The end is monotonic in the row: the largest is the largest row's. (A
  // short expression: LLVM may recompute it inside the loops it bounds.)
  Value maxRow = rs[0];
  for (int64_t r = 1; r < rows; ++r)
    maxRow = arith::MaxSIOp::create(b, maxRow, rs[r]);
  return endOf(maxRow);
}

/// The columns [0, result) that every row of the `count` flat rows from
/// `sb0` sees, rounded down to a multiple of `chunk`: all n without a
/// causal mask, else those before the smallest row's end. The smallest row
/// is the first one, or row 0 where the rows reach into the next head.
Value Emitter::sharedColumns(AttentionStepOp op, Value n, Value br, Value sb0,
                             Value count, int64_t chunk) {
  Value minEnd = n;
  if (Value offset = op.getMaskOffset()) {
    Value minRow = sb0;
    if (cast<MemRefType>(op.getQuery().getType()).getDimSize(0) != 1) {
      Value last = arith::SubIOp::create(
          b, arith::AddIOp::create(b, sb0, count), idx(1));
      Value sameHead = arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq, arith::DivUIOp::create(b, sb0, br),
          arith::DivUIOp::create(b, last, br));
      minRow = arith::SelectOp::create(
          b, sameHead, arith::RemUIOp::create(b, sb0, br), idx(0));
    }
    Value lim = arith::AddIOp::create(
        b, arith::AddIOp::create(b, minRow, offset), idx(1));
    minEnd =
        arith::MaxSIOp::create(b, arith::MinSIOp::create(b, n, lim), idx(0));
  }
  return arith::MulIOp::create(b, arith::DivSIOp::create(b, minEnd, idx(chunk)),
                               idx(chunk));
}

/// S[i, c] = Q[g_f, row_f, :] . K^T[:, c] (unscaled: the softmax scales)
/// for the first `count4` rows of the super-block at flat row `sb0`, in
/// blocks of kRowBlock rows, and the columns c < `shared`, which every one
/// of them sees (no mask). Column chunk by column chunk, each across all
/// the row blocks: one chunk of K^T (D x colVectors vectors) stays in L1
/// while every row block reads it. maxMem[i, :] carries row i's running
/// maximum over those columns, lane by lane, for rowBlock: S (a super-block
/// of rows by a key block) is larger than L1, and reading it back for the
/// maxima would be a pass over it from L2.
void Emitter::sharedScores(AttentionStepOp op, Value kt, Value s, Value br,
                           Value sb0, Value count4, Value shared,
                           Value maxMem) {
  int64_t rows = kRowBlock, cols = colVectors(rows);
  // The step's scale is positive (its verifier): S is stored unscaled and
  // the softmax applies the scale (see rowBlock).
  assert(hasPositiveScale(op) && "a step's scale is > 0");
  Value ninfVec = splat(negInf(), kLanes);
  scf::ForOp::create(
      b, idx(0), count4, idx(1), ValueRange{},
      [&](OpBuilder &, Location, Value i, ValueRange) {
        vector::StoreOp::create(b, ninfVec, maxMem, ValueRange{i, idx(0)});
        scf::YieldOp::create(b);
      });
  scf::ForOp::create(
      b, idx(0), shared, idx(cols * kLanes), ValueRange{},
      [&](OpBuilder &, Location, Value c0, ValueRange) {
        scf::ForOp::create(
            b, idx(0), count4, idx(rows), ValueRange{},
            [&](OpBuilder &, Location, Value i, ValueRange) {
              SmallVector<Value> gs, rs, sRows;
              for (int64_t r = 0; r < rows; ++r) {
                Value sRow = plus(i, r);
                auto [g, row] =
                    headAndRow(op, arith::AddIOp::create(b, sb0, sRow), br);
                gs.push_back(g);
                rs.push_back(row);
                sRows.push_back(sRow);
              }
              SmallVector<Value> colIdx;
              for (int64_t c = 0; c < cols; ++c)
                colIdx.push_back(plus(c0, c * kLanes));
              SmallVector<Value> accs =
                  qkBlock(op.getQuery(), kt, s, sRows, gs, rs, colIdx, nullptr);
              for (int64_t r = 0; r < rows; ++r) {
                Value m = vector::LoadOp::create(b, vec(kLanes), maxMem,
                                                 ValueRange{sRows[r], idx(0)});
                for (int64_t c = 0; c < cols; ++c) {
                  vector::StoreOp::create(b, accs[r * cols + c], s,
                                          ValueRange{sRows[r], colIdx[c]});
                  m = maxOf(accs[r * cols + c], m);
                }
                vector::StoreOp::create(b, m, maxMem,
                                        ValueRange{sRows[r], idx(0)});
              }
              scf::YieldOp::create(b);
            });
        scf::YieldOp::create(b);
      });
}

/// The accumulators of S = Q . K^T for the query rows (gs[r], rs[r]) and
/// the column vectors of K^T from each of `cols` (loaded under `tailMask`
/// when given), carried through the head dimension: broadcast Q, one
/// vector.fma per (row, column vector); result r * cols.size() + c. First
/// fetches the S lines (sRows[r], cols[c]) they will be stored to, for
/// writing, while the FMAs run (the previous P . V evicted them).
SmallVector<Value> Emitter::qkBlock(Value q, Value kt, Value s,
                                    ArrayRef<Value> sRows, ArrayRef<Value> gs,
                                    ArrayRef<Value> rs, ArrayRef<Value> cols,
                                    Value tailMask) {
  int64_t d = cast<MemRefType>(q.getType()).getDimSize(2);
  int64_t rows = gs.size(), n = cols.size();
  for (Value row : sRows)
    for (Value col : cols)
      memref::PrefetchOp::create(b, s, ValueRange{row, col}, /*isWrite=*/true,
                                 /*locality=*/3, /*isDataCache=*/true);
  SmallVector<Value> init(rows * n, vecConst(kLanes, 0.0));
  auto dLoop = scf::ForOp::create(
      b, idx(0), idx(ablation.qk ? 0 : d), idx(1), init,
      [&](OpBuilder &, Location, Value dd, ValueRange accs) {
        SmallVector<Value> kv, next;
        for (Value col : cols)
          kv.push_back(tailMask ? loadVecMasked(kt, {dd, col}, tailMask)
                                : loadVec(kt, {dd, col}, kLanes));
        for (int64_t r = 0; r < rows; ++r) {
          Value qs = splat(loadScalar(q, {gs[r], rs[r], dd}), kLanes);
          for (int64_t c = 0; c < n; ++c)
            next.push_back(
                vector::FMAOp::create(b, qs, kv[c], accs[r * n + c]));
        }
        scf::YieldOp::create(b, next);
      });
  return SmallVector<Value>(dLoop.getResults());
}

/// Processes `rows` query rows of the tile starting at flat row `f0`, whose
/// S rows are `s`: S = Q . K^T (from the transposed `kt` when there is
/// one) and the online softmax update of (m, l), leaving P in `s` and each
/// row's alpha in alphaMem[a0 + r]. P . V comes after (pvBlock). With
/// `done`, S's columns before it are there already, and their maxima in
/// maxMem[a0 + r, :] (sharedScores).
void Emitter::rowBlock(AttentionStepOp op, Value kt, Value s, Value n, Value br,
                       Value f0, int64_t rows, Value alphaMem, Value a0,
                       Value done, Value maxMem) {
  Value q = op.getQuery();
  Value mMem = op.getMax(), lMem = op.getSum();
  int64_t colBlock = colVectors(rows);
  SmallVector<Value> gs, rs, ends, endVecs;
  Value visible = rowsOf(op, n, br, f0, rows, gs, rs, ends);

  Value ninf = negInf();
  Value ninfVec = splat(ninf, kLanes);
  auto indexVec = VectorType::get({kLanes}, b.getIndexType());
  Value offset = op.getMaskOffset();
  Value colsPad = arith::MulIOp::create(
      b, arith::CeilDivSIOp::create(b, visible, idx(kLanes)), idx(kLanes));

  // 1. S[r, :] = scale * Q[g_r, row_r, :] . K^T with masked columns set to
  // -inf, and the row maxima. From the transposed K with a positive scale
  // (max(scale s) = scale max(s)), S is stored unscaled and the softmax
  // below applies the scale in the FMA it does anyway: one multiply fewer
  // per score vector.
  bool scaleInSoftmax = kt && hasPositiveScale(op);
  Value scale = stepScale(op);
  SmallVector<Value> rowMax;
  if (!kt) {
    rowMax = scoresByKeyRows(op, s, gs, rs, ends, visible, colsPad);
  } else {
    for (int64_t r = 0; r < rows; ++r)
      endVecs.push_back(vector::BroadcastOp::create(b, indexVec, ends[r]));
    Value scaleVec = splat(scale, kLanes);
    Value laneIds = vector::StepOp::create(b, indexVec);
    // In column chunks of `cols` vectors, with the row maxima carried
    // along. The last partial chunk uses masked loads (`tailMask`) so that
    // no key column at or past the visible ones is read.
    auto qkChunks = [&](Value lb, Value ub, int64_t cols, Value tailMask,
                        ValueRange maxima) -> SmallVector<Value> {
      bool selectColumns = offset || tailMask;
      auto chunkLoop = scf::ForOp::create(
          b, lb, ub, idx(cols * kLanes), maxima,
          [&](OpBuilder &, Location, Value c0, ValueRange rowMax) {
            SmallVector<Value> sRows, colIdx;
            for (int64_t r = 0; r < rows; ++r)
              sRows.push_back(idx(r));
            for (int64_t c = 0; c < cols; ++c)
              colIdx.push_back(plus(c0, c * kLanes));
            SmallVector<Value> accs =
                qkBlock(q, kt, s, sRows, gs, rs, colIdx, tailMask);
            SmallVector<Value> nextMax(rowMax.begin(), rowMax.end());
            for (int64_t c = 0; c < cols; ++c) {
              Value col = colIdx[c];
              Value colIds;
              if (selectColumns)
                colIds = arith::AddIOp::create(
                    b, laneIds, vector::BroadcastOp::create(b, indexVec, col));
              for (int64_t r = 0; r < rows; ++r) {
                Value sv = accs[r * cols + c];
                if (!scaleInSoftmax)
                  sv = arith::MulFOp::create(b, sv, scaleVec);
                if (selectColumns) {
                  Value inRange = arith::CmpIOp::create(
                      b, arith::CmpIPredicate::slt, colIds, endVecs[r]);
                  sv = arith::SelectOp::create(b, inRange, sv, ninfVec);
                }
                vector::StoreOp::create(b, sv, s, ValueRange{idx(r), col});
                nextMax[r] = maxOf(sv, nextMax[r]);
              }
            }
            scf::YieldOp::create(b, nextMax);
          });
      return SmallVector<Value>(chunkLoop.getResults());
    };
    Value wide = idx(colBlock * kLanes);
    Value colsWide = arith::MulIOp::create(
        b, arith::DivSIOp::create(b, visible, wide), wide);
    Value colsFull = arith::MulIOp::create(
        b, arith::DivSIOp::create(b, visible, idx(kLanes)), idx(kLanes));
    // The columns before `done` are in S already, and their maxima in
    // maxMem (sharedScores).
    SmallVector<Value> maxima(rows, ninfVec);
    Value start = done ? done : idx(0);
    if (done)
      for (int64_t r = 0; r < rows; ++r)
        maxima[r] = vector::LoadOp::create(b, vec(kLanes), maxMem,
                                           ValueRange{plus(a0, r), idx(0)});
    maxima = qkChunks(start, colsWide, colBlock, nullptr, maxima);
    // Two vectors of the columns left at once where at least two are: a
    // one-vector chunk does as many loads as FMAs plus one.
    Value colsPairs = colsWide;
    if (colBlock > 2) {
      Value pair = idx(2 * kLanes);
      colsPairs = arith::AddIOp::create(
          b, colsWide,
          arith::MulIOp::create(
              b,
              arith::DivSIOp::create(
                  b, arith::SubIOp::create(b, colsFull, colsWide), pair),
              pair));
      maxima = qkChunks(colsWide, colsPairs, 2, nullptr, maxima);
    }
    maxima = qkChunks(colsPairs, colsFull, 1, nullptr, maxima);
    Value mask = vector::CreateMaskOp::create(
        b, VectorType::get({kLanes}, b.getI1Type()),
        ValueRange{arith::SubIOp::create(b, visible, colsFull)});
    maxima = qkChunks(colsFull, colsPad, 1, mask, maxima);
    for (int64_t r = 0; r < rows; ++r) {
      Value m = reduceMax(maxima[r]);
      rowMax.push_back(scaleInSoftmax
                           ? Value(arith::MulFOp::create(b, m, scale))
                           : m);
    }
  }

  // 2. Online softmax. The per-row bookkeeping (the new maximum, alpha by a
  // scalar exp, the row sum's reduction) is a chain of dependent scalar
  // operations; it is emitted for all the rows of the block together,
  // before and after their exponential loops, so that the rows' chains
  // overlap.
  Value zeroF = f32Const(0.0);
  constexpr double kLog2e = 1.4426950408889634;
  // scale log2(e): rounded once from the constant, or in f32 from the
  // run-time factor.
  Value log2eVec =
      !scaleInSoftmax ? vecConst(kLanes, kLog2e)
      : op.getScaleFactor()
          ? splat(arith::MulFOp::create(b, scale, f32Const(kLog2e)), kLanes)
          : vecConst(kLanes, op.getScale().convertToDouble() * kLog2e);
  SmallVector<Value> alphas, lOlds, negMs;
  for (int64_t r = 0; r < rows; ++r) {
    Value g = gs[r], row = rs[r];
    Value mOld = memref::LoadOp::create(b, mMem, ValueRange{g, row});
    lOlds.push_back(memref::LoadOp::create(b, lMem, ValueRange{g, row}));
    Value mNew = arith::MaximumFOp::create(b, mOld, rowMax[r]);
    // A row with no visible key so far keeps m = -inf; subtract 0 instead
    // so that exp(-inf - m) is 0 rather than NaN.
    Value mIsInf =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mNew, ninf);
    Value mUse = arith::SelectOp::create(b, mIsInf, zeroF, mNew);
    Value oldIsInf =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mOld, ninf);
    alphas.push_back(arith::SelectOp::create(
        b, oldIsInf, zeroF,
        math::ExpOp::create(b, arith::SubFOp::create(b, mOld, mUse))));
    // p = exp(s - m) = 2^(s log2(e) - m log2(e)): one FMA, then exp2Vec
    // (with S unscaled, s scale log2(e) - m log2(e)).
    negMs.push_back(
        splat(arith::MulFOp::create(b, mUse, f32Const(-kLog2e)), kLanes));
    memref::StoreOp::create(b, mNew, mMem, ValueRange{g, row});
    memref::StoreOp::create(b, alphas[r], alphaMem, ValueRange{plus(a0, r)});
  }
  SmallVector<Value> sums;
  for (int64_t r = 0; r < rows; ++r) {
    Value rIdx = idx(r);
    auto sumLoop = scf::ForOp::create(
        b, idx(0), ablation.softmax ? idx(0) : colsPad, idx(kLanes),
        ValueRange{vecConst(kLanes, 0.0)},
        [&](OpBuilder &, Location, Value c0, ValueRange iter) {
          Value sv =
              vector::LoadOp::create(b, vec(kLanes), s, ValueRange{rIdx, c0});
          // A masked score (-inf) gives exactly 0 (exp2Vec).
          Value p = exp2Vec(vector::FMAOp::create(b, sv, log2eVec, negMs[r]));
          vector::StoreOp::create(b, p, s, ValueRange{rIdx, c0});
          scf::YieldOp::create(
              b, ValueRange{arith::AddFOp::create(b, iter[0], p)});
        });
    sums.push_back(sumLoop.getResult(0));
  }
  for (int64_t r = 0; r < rows; ++r) {
    Value lNew = arith::AddFOp::create(
        b, arith::MulFOp::create(b, alphas[r], lOlds[r]), reduceSum(sums[r]));
    memref::StoreOp::create(b, lNew, lMem, ValueRange{gs[r], rs[r]});
  }
}

/// acc[g_r, row_r, :] += P[r, c] V[c, :] for the `rows` rows from flat row
/// `f0` (P rows in `s`) and the keys c in [lo, min(hi, visible)), in column
/// groups. The first key block (lo = 0) first scales the accumulators it
/// loads by the rows' alphas (alphaMem[a0 + r]): acc = alpha acc costs no
/// pass of its own. With `prefetchV` (decode, which streams V from memory
/// once), the first group prefetches the V rows a few keys ahead.
void Emitter::pvBlock(AttentionStepOp op, Value s, Value n, Value br, Value f0,
                      int64_t rows, Value lo, Value hi, Value alphaMem,
                      Value a0, bool prefetchV) {
  Value v = op.getValue(), acc = op.getAcc();
  int64_t dv = cast<MemRefType>(v.getType()).getDimSize(1);
  int64_t colBlock = colVectors(rows);
  SmallVector<Value> gs, rs, ends;
  Value visible = rowsOf(op, n, br, f0, rows, gs, rs, ends);
  Value end = arith::MinSIOp::create(b, hi, visible);
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lo, idx(0));
  int64_t d0 = 0;
  for (const SmallVector<int64_t> &group : chunkGroups(dv, colBlock)) {
    SmallVector<int64_t> offsets;
    for (int64_t w : group) {
      offsets.push_back(d0);
      d0 += w;
    }
    SmallVector<Value> loaded;
    for (int64_t r = 0; r < rows; ++r)
      for (auto [w, off] : llvm::zip(group, offsets))
        loaded.push_back(loadVec(acc, {gs[r], rs[r], idx(off)}, w));
    auto scaled = scf::IfOp::create(
        b, first,
        [&](OpBuilder &, Location) {
          SmallVector<Value> values;
          for (int64_t r = 0; r < rows; ++r) {
            Value alpha =
                memref::LoadOp::create(b, alphaMem, ValueRange{plus(a0, r)});
            for (auto [j, w] : llvm::enumerate(group))
              values.push_back(arith::MulFOp::create(
                  b, loaded[r * group.size() + j], splat(alpha, w)));
          }
          scf::YieldOp::create(b, values);
        },
        [&](OpBuilder &, Location) { scf::YieldOp::create(b, loaded); });
    SmallVector<Value> init(scaled.getResults());
    int64_t cols = group.size();
    // One key: acc[r, :] += P[r, c] V[c, :] for every row.
    auto keyStep = [&](Value c, ValueRange accs) {
      if (prefetchV)
        prefetchRows(v, arith::AddIOp::create(b, c, idx(kPrefetchKeys)), 1,
                     /*locality=*/2);
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
      return next;
    };
    // Two keys an iteration, then the odd one: the loop's bookkeeping (and,
    // where its bound is an expression LLVM re-evaluates, that too) is
    // shared by twice the FMAs. (LLVM does not unroll a loop with a trip
    // count known only at run time and a body this large.)
    Value keys =
        arith::MaxSIOp::create(b, arith::SubIOp::create(b, end, lo), idx(0));
    Value mid = arith::AddIOp::create(
        b, lo,
        arith::MulIOp::create(b, arith::DivSIOp::create(b, keys, idx(2)),
                              idx(2)));
    auto pairLoop = scf::ForOp::create(
        b, lo, mid, idx(2), init,
        [&](OpBuilder &, Location, Value c, ValueRange accs) {
          SmallVector<Value> first = keyStep(c, accs);
          scf::YieldOp::create(b, keyStep(plus(c, 1), first));
        });
    auto cLoop = scf::ForOp::create(
        b, mid, end, idx(1), pairLoop.getResults(),
        [&](OpBuilder &, Location, Value c, ValueRange accs) {
          scf::YieldOp::create(b, keyStep(c, accs));
        });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j)
        storeVec(cLoop.getResult(r * cols + j), acc,
                 {gs[r], rs[r], idx(offsets[j])});
    prefetchV = false;
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
    for (const SmallVector<int64_t> &group : chunkGroups(dv, kMaxColVectors))
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
    for (const SmallVector<int64_t> &group : chunkGroups(dv, kMaxColVectors)) {
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
  leaveLoopsAsWritten(forall);
}

/// Returns true for the f16/bf16 -> f32 memref copies that
/// flash-cpu-widen-operands creates (rank 2 or more, a static last
/// dimension).
static bool isWiden(linalg::CopyOp op) {
  if (op.getInputs().size() != 1 || op.getOutputs().size() != 1)
    return false;
  auto in = dyn_cast<MemRefType>(op.getInputs()[0].getType());
  auto out = dyn_cast<MemRefType>(op.getOutputs()[0].getType());
  return in && out && in.getRank() >= 2 &&
         isa<Float16Type, BFloat16Type>(in.getElementType()) &&
         out.getElementType().isF32() && !in.isDynamicDim(in.getRank() - 1);
}

/// The copy as a parallel loop over the two leading dimensions (one for
/// rank 2), loops over the rest but the last, and vectors along the last.
void Emitter::expandWiden(linalg::CopyOp op) {
  Value in = op.getInputs()[0], out = op.getOutputs()[0];
  auto type = cast<MemRefType>(in.getType());
  int64_t rank = type.getRank();
  int64_t last = type.getDimSize(rank - 1);
  int64_t parallel = std::min<int64_t>(2, rank - 1);
  SmallVector<OpFoldResult> space;
  for (int64_t i = 0; i < parallel; ++i)
    space.push_back(getAsOpFoldResult(dim(in, i)));
  auto forall = scf::ForallOp::create(b, space, ValueRange{}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  forEachRow(
      in, 1,
      [&](SmallVector<Value> &row) {
        int64_t d0 = 0;
        for (const SmallVector<int64_t> &group :
             chunkGroups(last, kMaxColVectors))
          for (int64_t w : group) {
            SmallVector<Value> at = row;
            at.push_back(idx(d0));
            storeVec(loadVec(in, at, w), out, at);
            d0 += w;
          }
      },
      forall.getInductionVars());
}

struct FlashExpandToCPUPass
    : flash::impl::FlashExpandToCPUBase<FlashExpandToCPUPass> {
  using Base::Base;

  void runOnOperation() override {
    if (vectorLanes != 8 && vectorLanes != 16) {
      getOperation()->emitError()
          << "flash-expand-to-cpu: vector-lanes must be 8 or 16, got "
          << static_cast<int64_t>(vectorLanes);
      return signalPassFailure();
    }
    Ablation ablation;
    SmallVector<StringRef> phases;
    if (!ablate.empty())
      StringRef(ablate).split(phases, ',');
    for (StringRef phase : phases) {
      bool *flag = llvm::StringSwitch<bool *>(phase)
                       .Case("qk", &ablation.qk)
                       .Case("softmax", &ablation.softmax)
                       .Case("pv", &ablation.pv)
                       .Default(nullptr);
      if (!flag) {
        getOperation()->emitError()
            << "flash-expand-to-cpu: unknown phase '" << phase
            << "' in ablate; expected a comma-separated list of qk, softmax, "
               "pv";
        return signalPassFailure();
      }
      *flag = true;
    }
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
    getOperation()->walk([&](linalg::CopyOp op) {
      if (isWiden(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      ImplicitLocOpBuilder b(op->getLoc(), op);
      Emitter emitter(b, vectorLanes, bf16Dot, scalef, ktReuse, ablation);
      if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
        emitter.expandKeyTranspose(transpose);
        ++numKeyTransposes;
      } else if (auto copy = dyn_cast<linalg::CopyOp>(op)) {
        emitter.expandWiden(copy);
        ++numWidenings;
      } else if (auto step = dyn_cast<AttentionStepOp>(op)) {
        emitter.expandStep(step);
        if (step.getKeyTransposed())
          ++numStepsTransposedK;
        else
          ++numStepsKeyRows;
        if (emitter.usedDotProduct())
          ++numStepsDot;
      } else if (auto fin = dyn_cast<FinalizeOp>(op)) {
        emitter.expandFinalize(fin);
        ++numFinalizes;
      } else {
        emitter.expandCombine(cast<CombineOp>(op));
        ++numCombines;
      }
      op->erase();
    }
  }
};

} // namespace
