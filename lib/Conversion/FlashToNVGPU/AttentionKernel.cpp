//===- AttentionKernel.cpp - Warp-level code of the GPU kernels -----------===//
//
// The CTA body of flashc's FlashAttention-2 kernel, written with nvgpu and
// nvvm ops. Per CTA (see flashc/Core/GPUSchedule.h for the shape):
//
//   Q tile  --cp.async-->  smem  --ldmatrix-->  A fragments (registers)
//   for each KV block j (the loops of the tiled IR, in order):
//     barrier; cp.async block j+1 into the other stage      (in flight ...)
//     S  = Q K^T          ldmatrix K, mma.sync m16n8k16, f32 accumulators
//     mask                only in masked loops and partial blocks
//     m' = max(m, rowmax(S) * scale * log2 e)   (quad shuffles)
//     P  = exp2(S * scale * log2 e - m'),  l' = 2^(m - m') l + rowsum(P)
//     O  = 2^(m - m') O + P V    P repacked from the S accumulators as the
//                                A operand; V by ldmatrix.trans
//     wait for block j+1                                     (... landed)
//   O / l, log-sum-exp, staged through smem and stored 16 bytes at a time.
//
// Every warp owns whole 16-row MMA tiles, so softmax statistics need only
// the 4 lanes of a quad (shfl.xor 1, 2). Decode tiles split a KV block's
// columns between "kv warps", merged by log-sum-exp through shared memory.
//
// Fragment layouts (PTX ISA, mma.m16n8k16, g = lane / 4, t = lane % 4):
// A a0..a3 = (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..);
// B b0, b1 = (k 2t..2t+1, n g), (k 2t+8.., n g); C c0..c3 = (g, 2t),
// (g, 2t+1), (g+8, 2t), (g+8, 2t+1). Two adjacent n8 tiles of S in f32 are
// exactly one k16 A fragment of P.
//
// Shared memory rows are XOR-swizzled in 16-byte chunks when a row has a
// power-of-two number of chunks, and padded by one chunk otherwise: either
// way the 8 row addresses of an ldmatrix fall in 8 different bank groups.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernel.h"

#include "flashc/Conversion/MmaSync.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_kernel;

namespace {

/// A shared-memory layout of rows of `cols` elements (see the file comment).
struct SmemLayout {
  int64_t rowElems = 0;   // elements per row, padding included
  int64_t chunkElems = 0; // elements per 16-byte chunk
  int64_t chunks = 0;     // chunks per row, padding excluded
  bool xorSwizzle = false;

  static SmemLayout get(int64_t cols, int64_t elemBytes) {
    SmemLayout l;
    l.chunkElems = 16 / elemBytes;
    l.chunks = cols / l.chunkElems;
    l.xorSwizzle = l.chunks >= 2 && (l.chunks & (l.chunks - 1)) == 0;
    l.rowElems = flashc::getSharedRowElements(cols, elemBytes);
    return l;
  }
};

class Emitter {
public:
  Emitter(ImplicitLocOpBuilder &b) : b(b) {
    f32 = b.getF32Type();
    i32 = b.getI32Type();
  }

  ImplicitLocOpBuilder &b;
  Type f32, i32;

  // Constants ---------------------------------------------------------------
  // Each constant is created once, at the start of the kernel, so that the
  // unrolled code does not carry thousands of duplicates through the
  // lowering.
  Value idx(int64_t v) {
    Value &c = indexConstants[v];
    if (!c)
      c = atEntry([&] { return arith::ConstantIndexOp::create(b, v); });
    return c;
  }
  Value f32c(double v) {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    Value &c = floatConstants[bits];
    if (!c)
      c = atEntry([&] {
        return arith::ConstantOp::create(b, f32, b.getF32FloatAttr(f));
      });
    return c;
  }
  template <typename F> Value atEntry(F create) {
    OpBuilder::InsertionGuard guard(b);
    Block *entry = &b.getInsertionBlock()
                        ->getParent()
                        ->getParentOfType<FunctionOpInterface>()
                        .getFunctionBody()
                        .front();
    b.setInsertionPointToStart(entry);
    return create();
  }
  llvm::DenseMap<int64_t, Value> indexConstants;
  llvm::DenseMap<uint32_t, Value> floatConstants;
  Value negInf() { return f32c(-std::numeric_limits<double>::infinity()); }

  // Index arithmetic ----------------------------------------------------------
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }
  Value mul(Value x, int64_t y) { return y == 1 ? x : mul(x, idx(y)); }
  Value div(Value x, int64_t y) {
    return y == 1 ? x : arith::DivUIOp::create(b, x, idx(y));
  }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, x, idx(y)); }
  Value minI(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value maxI(Value x, Value y) { return arith::MaxSIOp::create(b, x, y); }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::slt, x, y);
  }
  Value lt(Value x, int64_t y) { return lt(x, idx(y)); }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
  Value xorI(Value x, Value y) { return arith::XOrIOp::create(b, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, c, x, y);
  }

  // Float arithmetic ---------------------------------------------------------
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value fdiv(Value x, Value y) { return arith::DivFOp::create(b, x, y); }
  /// max(x, y), the number when one is NaN: LLVM's maxnum (max.f32).
  /// arith.maxnumf would become a call to libdevice's __nv_fmaxf, which
  /// only a toolkit's libdevice resolves.
  Value fmax(Value x, Value y) { return LLVM::MaxNumOp::create(b, x, y); }
  Value fcmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, p, x, y);
  }
  Value intrinsic(StringRef name, Value x) {
    return LLVM::CallIntrinsicOp::create(b, f32, b.getStringAttr(name),
                                         ValueRange{x})
        .getResult(0);
  }
  /// 2^x with the hardware approximation (exp2, not libdevice).
  Value exp2(Value x) { return intrinsic("llvm.nvvm.ex2.approx.ftz.f32", x); }
  Value log2(Value x) { return intrinsic("llvm.nvvm.lg2.approx.f", x); }
  /// 1/x within an ulp. The IEEE-exact division has a slow path that SASS
  /// makes a subroutine call (a stack frame and a spill in small kernels).
  Value rcp(Value x) { return intrinsic("llvm.nvvm.rcp.approx.ftz.f", x); }
  Value shflXor(Value x, int32_t offset) {
    return gpu::ShuffleOp::create(b, x, offset, 32, gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }

  // Vectors -------------------------------------------------------------------
  Value extract(Value v, ArrayRef<int64_t> pos) {
    return vector::ExtractOp::create(b, v, pos);
  }
  Value fromElements(VectorType type, ValueRange elems) {
    return vector::FromElementsOp::create(b, type, elems);
  }

  /// The element index of (row, col) in `layout`; `col` is a multiple of
  /// the chunk size or within a chunk.
  Value smemIndex(const SmemLayout &layout, Value row, Value col) {
    if (!layout.xorSwizzle)
      return add(mul(row, layout.rowElems), col);
    Value chunk = div(col, layout.chunkElems);
    Value within = rem(col, layout.chunkElems);
    Value f;
    if (layout.chunks >= 8)
      f = rem(row, 8);
    else
      f = rem(div(row, 8 / layout.chunks), layout.chunks);
    Value swz = xorI(chunk, f);
    return add(add(mul(row, layout.rowElems), mul(swz, layout.chunkElems)),
               within);
  }

  /// The index of column `col0 + offset` of a row whose index at `col0` is
  /// `base`, where col0 is one of the first two chunks and `offset` a
  /// multiple of two chunks: with the XOR swizzle (chunk' = chunk ^ f(row),
  /// rows a power of two of chunks wide) that is base ^ offset, since the
  /// chunk bits of col0 and offset do not overlap. Computing every ldmatrix
  /// address of a row from one base keeps them from being hoisted out of
  /// the KV loop as separate 64-bit registers.
  Value offsetColumn(const SmemLayout &layout, Value base, int64_t offset) {
    if (offset == 0)
      return base;
    return layout.xorSwizzle ? xorI(base, idx(offset)) : add(base, offset);
  }

  /// A typed 1-D view of `bytes` bytes of shared memory at `offset`.
  Value smemView(Value shared, int64_t offset, int64_t bytes, Type elem) {
    auto space = cast<MemRefType>(shared.getType()).getMemorySpace();
    int64_t n = bytes / (elem.getIntOrFloatBitWidth() / 8);
    auto type = MemRefType::get({n}, elem, MemRefLayoutAttrInterface(), space);
    return memref::ViewOp::create(b, type, shared, idx(offset), ValueRange{});
  }

  /// Emits `body` for i in [0, count) when count is small and static: the
  /// loops of cooperative copies are unrolled.
  template <typename F> void unrolled(int64_t count, F body) {
    for (int64_t i = 0; i < count; ++i)
      body(i);
  }

  /// `if (cond) then()` with no results.
  template <typename F> void ifThen(Value cond, F then) {
    auto op = scf::IfOp::create(b, TypeRange{}, cond, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.thenBlock());
    then();
  }
};

//===----------------------------------------------------------------------===//
// The forward kernel
//===----------------------------------------------------------------------===//

class ForwardEmitter : public Emitter {
public:
  ForwardEmitter(ImplicitLocOpBuilder &b, const ForwardKernelSpec &spec)
      : Emitter(b), s(spec), c(spec.config) {
    elt = s.elementType;
    bf16 = elt.isBF16();
    eb = c.elementBytes;
    outBytes = s.outType.getIntOrFloatBitWidth() / 8;
    qLayout = SmemLayout::get(c.paddedHeadDim, eb);
    kLayout = SmemLayout::get(c.paddedHeadDim, eb);
    vLayout = SmemLayout::get(c.paddedHeadDimV, eb);
    stageLayout = SmemLayout::get(c.paddedHeadDimV, outBytes);
    accTiles = c.paddedHeadDimV / 8;
    sTiles = c.warpKeys() / 8;
  }

  void emit(Value shared);

private:
  const ForwardKernelSpec &s;
  const flashc::GPUTileConfig &c;
  Type elt;
  bool bf16;
  int64_t eb, outBytes;
  SmemLayout qLayout, kLayout, vLayout, stageLayout;
  int64_t accTiles, sTiles;

  // Per-thread values.
  Value tid, lane, rowTile, kvPart, quadRow, quadCol;
  // Shared memory views.
  Value qSmem, kSmem, vSmem, stageSmem, mergeSmem;

  /// The loop-carried state of the online softmax.
  struct State {
    SmallVector<Value> acc; // accTiles x vector<2x2xf32>
    Value m[2], l[2];       // rows g and g + 8 (m in the log2 domain)
    Value stage;            // 0 or 1
    SmallVector<Value> flatten() const {
      SmallVector<Value> v(acc);
      v.append({m[0], m[1], l[0], l[1], stage});
      return v;
    }
    static State unflatten(ValueRange v, int64_t accTiles) {
      State st;
      st.acc.assign(v.begin(), v.begin() + accTiles);
      st.m[0] = v[accTiles];
      st.m[1] = v[accTiles + 1];
      st.l[0] = v[accTiles + 2];
      st.l[1] = v[accTiles + 3];
      st.stage = v[accTiles + 4];
      return st;
    }
  };

  VectorType accType() { return VectorType::get({2, 2}, f32); }
  VectorType aType() { return VectorType::get({4, 2}, elt); }
  VectorType bType() { return VectorType::get({2, 2}, elt); }

  /// Packed row p -> (head g, row r) of the Q tile, and whether it is a
  /// valid row.
  void packedRow(Value p, Value &g, Value &r, Value &valid) {
    g = div(p, c.blockQ);
    r = rem(p, c.blockQ);
    valid = andI(lt(p, c.rows()), lt(r, s.qRows));
  }

  void issueQ();
  void issueKV(Value j, Value has, Value stage);
  void copyChunk(Value smem, Value dst, Value buffer, Value src, Value valid,
                 Value col, int64_t dim);
  SmallVector<Value> loadQFragments();
  Value mma(Value a, Value bFrag, Value acc);
  std::pair<Value, Value> splitB(Value x4);
  /// How one KV block is masked: keys at or beyond `validKeys` always;
  /// with `maskOffset`, column c of row r also when c > r + o, for every
  /// block (`causal` null) or when `causal` (an i1) holds.
  struct BlockMask {
    Value validKeys;
    Value maskOffset;
    Value causal;
  };
  State step(const State &in, Value j, const BlockMask &mask,
             ArrayRef<Value> qFrags, Value nextJ, Value hasNext);
  void epilogue(const State &st);
  void storeTile(Value srcSmem, const SmemLayout &layout, bool summed);
};

/// Copies the 8 elements at global `src` (columns col.. of a row of `dim`
/// elements; `valid` false for rows outside the tensor) to shared `dst`,
/// zero-filling what is outside. Rows of a multiple of 8 elements are
/// 16-byte aligned and go by cp.async; others element by element (and
/// synchronously), clamping the address of every skipped element.
void ForwardEmitter::copyChunk(Value smem, Value dst, Value buffer, Value src,
                               Value valid, Value col, int64_t dim) {
  if (dim % 8 == 0) {
    Value n = select(andI(valid, lt(col, dim)),
                     minI(sub(idx(dim), col), idx(8)), idx(0));
    src = select(valid, src, idx(0));
    nvgpu::DeviceAsyncCopyOp::create(b, smem, ValueRange{dst}, buffer,
                                     ValueRange{src}, b.getIndexAttr(8), n,
                                     b.getUnitAttr());
    return;
  }
  SmallVector<Value> elems;
  Value zero = arith::ConstantOp::create(b, elt, b.getZeroAttr(elt));
  for (int64_t e = 0; e < 8; ++e) {
    Value ok = andI(valid, lt(add(col, e), dim));
    Value at = select(ok, add(src, e), idx(0));
    Value v = memref::LoadOp::create(b, buffer, ValueRange{at});
    elems.push_back(select(ok, v, zero));
  }
  vector::StoreOp::create(b, fromElements(VectorType::get({8}, elt), elems),
                          smem, ValueRange{dst});
}

void ForwardEmitter::issueQ() {
  int64_t chunksPerRow = c.paddedHeadDim / 8;
  int64_t total = c.tileRows() * chunksPerRow;
  int64_t threads = c.threads();
  unrolled((total + threads - 1) / threads, [&](int64_t it) {
    Value ci = add(tid, it * threads);
    auto body = [&]() {
      Value p = div(ci, chunksPerRow), ch = rem(ci, chunksPerRow);
      Value g, r, valid;
      packedRow(p, g, r, valid);
      Value col = mul(ch, 8);
      Value src = add(add(add(s.q.base, mul(g, s.q.groupStride)),
                          mul(r, s.q.rowStride)),
                      col);
      copyChunk(qSmem, smemIndex(qLayout, p, col), s.q.buffer, src, valid,
                col, c.headDim);
    };
    if ((it + 1) * threads <= total)
      body();
    else
      ifThen(lt(ci, total), body);
  });
}

void ForwardEmitter::issueKV(Value j, Value has, Value stage) {
  // Keys at or beyond Nk are zero-filled, not read.
  Value rows = select(has, maxI(minI(sub(s.seqKV, j), idx(c.blockKV)), idx(0)),
                      idx(0));
  Value j0 = select(has, j, idx(0));
  Value rowBase = mul(stage, c.blockKV);
  int64_t threads = c.threads();
  for (int which = 0; which < 2; ++which) {
    int64_t width = which == 0 ? c.paddedHeadDim : c.paddedHeadDimV;
    int64_t dim = which == 0 ? c.headDim : c.headDimV;
    const SmemLayout &layout = which == 0 ? kLayout : vLayout;
    Value smem = which == 0 ? kSmem : vSmem;
    Value buffer = which == 0 ? s.kBuffer : s.vBuffer;
    Value base = add(which == 0 ? s.kBase0 : s.vBase0,
                     mul(j0, which == 0 ? s.kRowStride : s.vRowStride));
    Value rowStride = which == 0 ? s.kRowStride : s.vRowStride;
    int64_t chunksPerRow = width / 8;
    int64_t total = c.blockKV * chunksPerRow;
    if (threads % chunksPerRow == 0 && total % threads == 0) {
      // Every thread copies the same chunk column of rows r0, r0 + R, ...:
      // addresses advance by constants, so few registers stay live.
      int64_t rowsPerIter = threads / chunksPerRow;
      Value r0 = div(tid, chunksPerRow);
      Value col = mul(rem(tid, chunksPerRow), 8);
      Value src = add(add(base, mul(r0, rowStride)), col);
      Value srcStep = mul(rowStride, rowsPerIter);
      bool constantSwizzle = !layout.xorSwizzle || rowsPerIter % 8 == 0;
      Value dst0 = smemIndex(layout, add(rowBase, r0), col);
      for (int64_t it = 0; it < total / threads; ++it) {
        Value r = add(r0, it * rowsPerIter);
        Value dst = constantSwizzle
                        ? add(dst0, it * rowsPerIter * layout.rowElems)
                        : smemIndex(layout, add(rowBase, r), col);
        copyChunk(smem, dst, buffer, src, lt(r, rows), col, dim);
        src = add(src, srcStep);
      }
      continue;
    }
    unrolled((total + threads - 1) / threads, [&](int64_t it) {
      Value ci = add(tid, it * threads);
      auto body = [&]() {
        Value r = div(ci, chunksPerRow), ch = rem(ci, chunksPerRow);
        Value col = mul(ch, 8);
        copyChunk(smem, smemIndex(layout, add(rowBase, r), col), buffer,
                  add(add(base, mul(r, rowStride)), col), lt(r, rows), col,
                  dim);
      };
      if ((it + 1) * threads <= total)
        body();
      else
        ifThen(lt(ci, total), body);
    });
  }
}

SmallVector<Value> ForwardEmitter::loadQFragments() {
  SmallVector<Value> frags;
  Value row = add(mul(rowTile, 16), rem(lane, 16));
  Value colOff = mul(div(lane, 16), 8);
  Value base = smemIndex(qLayout, row, colOff);
  for (int64_t kc = 0; kc < c.paddedHeadDim / 16; ++kc) {
    Value index = offsetColumn(qLayout, base, kc * 16);
    frags.push_back(nvgpu::LdMatrixOp::create(b, aType(), qSmem,
                                              ValueRange{index},
                                              /*transpose=*/false, 4u));
  }
  return frags;
}

std::pair<Value, Value> ForwardEmitter::splitB(Value x4) {
  Value poison = ub::PoisonOp::create(b, bType());
  Value halves[2];
  for (int64_t h = 0; h < 2; ++h) {
    Value v = poison;
    for (int64_t i = 0; i < 2; ++i)
      v = vector::InsertOp::create(b, extract(x4, {2 * h + i}), v,
                                   ArrayRef<int64_t>{i});
    halves[h] = v;
  }
  return {halves[0], halves[1]};
}

Value ForwardEmitter::mma(Value a, Value bFrag, Value acc) {
  return createMmaSync16816(b, b.getLoc(), a, bFrag, acc);
}

ForwardEmitter::State ForwardEmitter::step(const State &in, Value j,
                                           const BlockMask &mask,
                                           ArrayRef<Value> qFrags,
                                           Value nextJ, Value hasNext) {
  int64_t warpKeys = c.warpKeys();
  Value stageRow = mul(in.stage, c.blockKV);
  Value warpCol = mul(kvPart, warpKeys);

  // Everyone is done with the other stage (read in the previous
  // iteration) and sees this stage landed: prefetch into the other one.
  gpu::BarrierOp::create(b);
  Value other = sub(idx(1), in.stage);
  issueKV(nextJ, hasNext, other);
  // Commit the prefetch as one group (the copies' tokens are not needed:
  // some live in scf.if regions).
  NVVM::CpAsyncCommitGroupOp::create(b);

  // S = Q K^T over this warp's keys.
  Value zero = arith::ConstantOp::create(
      b, accType(), DenseElementsAttr::get(accType(), b.getF32FloatAttr(0)));
  SmallVector<Value> S(sTiles, zero);
  Value kRowLane = add(rem(lane, 8), mul(div(lane, 16), 8));
  Value kColLane = mul(rem(div(lane, 8), 2), 8);
  Value qRowLane = add(mul(rowTile, 16), rem(lane, 16));
  Value qColLane = mul(div(lane, 16), 8);
  // One base index per 16-key row group and for Q; columns by XOR.
  SmallVector<Value> kBase;
  for (int64_t np = 0; np < warpKeys / 16; ++np)
    kBase.push_back(smemIndex(
        kLayout, add(add(stageRow, warpCol), add(kRowLane, np * 16)),
        kColLane));
  Value qBase = c.qInRegisters ? Value()
                               : smemIndex(qLayout, qRowLane, qColLane);
  for (int64_t kc = 0; kc < c.paddedHeadDim / 16; ++kc) {
    Value a = c.qInRegisters
                  ? qFrags[kc]
                  : nvgpu::LdMatrixOp::create(
                        b, aType(), qSmem,
                        ValueRange{offsetColumn(qLayout, qBase, kc * 16)},
                        false, 4u)
                        .getResult();
    for (int64_t np = 0; np < warpKeys / 16; ++np) {
      Value index = offsetColumn(kLayout, kBase[np], kc * 16);
      Value x4 = nvgpu::LdMatrixOp::create(b, aType(), kSmem, ValueRange{index},
                                           false, 4u);
      auto [b0, b1] = splitB(x4);
      S[2 * np] = mma(a, b0, S[2 * np]);
      S[2 * np + 1] = mma(a, b1, S[2 * np + 1]);
    }
  }

  // Scores as scalars: sv[h][2 * nt + cc] is row g + 8h, key 8 nt + 2t + cc
  // of this warp's keys.
  SmallVector<Value> sv[2];
  for (int64_t nt = 0; nt < sTiles; ++nt)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t cc = 0; cc < 2; ++cc)
        sv[h].push_back(extract(S[nt], {h, cc}));

  // A run-time factor is positive (the runtime checks it): it keeps the
  // order of the scores.
  bool scaleFirst = !(s.scale > 0);
  Value scaleLog2 = f32c(s.scale * kLog2E);
  if (s.scaleFactor)
    scaleLog2 = fmul(scaleLog2, s.scaleFactor);
  if (scaleFirst)
    for (int64_t h = 0; h < 2; ++h)
      for (Value &v : sv[h])
        v = fmul(v, scaleLog2);

  // Mask keys past the block's valid ones and, in a masked loop, keys past
  // the causal diagonal: column c of row r is masked when c > r + o.
  auto applyMask = [&]() {
    Value colBase = add(warpCol, mul(quadCol, 2));
    SmallVector<Value> out[2];
    for (int64_t h = 0; h < 2; ++h) {
      Value limit = mask.validKeys;
      if (mask.maskOffset) {
        Value p = add(add(mul(rowTile, 16), quadRow), h * 8);
        Value r = rem(p, c.blockQ);
        Value causalLimit =
            minI(limit, add(add(r, mask.maskOffset), idx(1)));
        limit = mask.causal ? select(mask.causal, causalLimit, limit)
                            : causalLimit;
      }
      // colBase + offset < limit  <=>  offset < limit - colBase: one
      // subtraction, then comparisons with constants (nothing for LLVM to
      // hoist into registers).
      Value room = sub(limit, colBase);
      Value ninf = negInf();
      for (int64_t k = 0; k < static_cast<int64_t>(sv[h].size()); ++k) {
        int64_t nt = k / 2, cc = k % 2;
        Value visible = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt,
                                              room, idx(nt * 8 + cc));
        out[h].push_back(select(visible, sv[h][k], ninf));
      }
    }
    return std::make_pair(out[0], out[1]);
  };
  if (mask.maskOffset && !mask.causal) {
    // Every block of a masked loop is masked.
    auto [m0, m1] = applyMask();
    sv[0] = m0;
    sv[1] = m1;
  } else {
    // Only partial blocks, and causal ones, need the selects.
    SmallVector<Type> types(2 * sv[0].size(), f32);
    Value needed = lt(mask.validKeys, c.blockKV);
    if (mask.causal)
      needed = arith::OrIOp::create(b, needed, mask.causal);
    auto ifOp = scf::IfOp::create(b, types, needed, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      auto [m0, m1] = applyMask();
      SmallVector<Value> yielded(m0);
      yielded.append(m1.begin(), m1.end());
      scf::YieldOp::create(b, yielded);
      b.setInsertionPointToStart(ifOp.elseBlock());
      SmallVector<Value> same(sv[0]);
      same.append(sv[1].begin(), sv[1].end());
      scf::YieldOp::create(b, same);
    }
    size_t n = sv[0].size();
    for (size_t k = 0; k < n; ++k) {
      sv[0][k] = ifOp.getResult(k);
      sv[1][k] = ifOp.getResult(n + k);
    }
  }

  // Online softmax, two rows per thread.
  State out;
  out.stage = other;
  Value alpha[2];
  SmallVector<Value> p[2];
  for (int64_t h = 0; h < 2; ++h) {
    Value mx = sv[h][0];
    for (size_t k = 1; k < sv[h].size(); ++k)
      mx = fmax(mx, sv[h][k]);
    mx = fmax(mx, shflXor(mx, 1));
    mx = fmax(mx, shflXor(mx, 2));
    Value mNew = fmax(in.m[h], scaleFirst ? mx : fmul(mx, scaleLog2));
    // A row that has seen only masked keys keeps m = -inf; subtract 0
    // instead so that exp2 gives 0, not NaN.
    Value isInf = fcmp(arith::CmpFPredicate::OEQ, mNew, negInf());
    Value mUse = select(isInf, f32c(0), mNew);
    alpha[h] = exp2(fsub(in.m[h], mUse));
    Value sum = f32c(0);
    for (Value v : sv[h]) {
      Value e = exp2(fsub(scaleFirst ? v : fmul(v, scaleLog2), mUse));
      p[h].push_back(e);
      sum = fadd(sum, e);
    }
    out.l[h] = fadd(fmul(in.l[h], alpha[h]), sum);
    out.m[h] = mNew;
  }
  Value alphaVec = fromElements(accType(), {alpha[0], alpha[0], alpha[1], alpha[1]});
  for (Value acc : in.acc)
    out.acc.push_back(arith::MulFOp::create(b, acc, alphaVec));

  // O += P V: P's accumulators repacked as A fragments, V by ldmatrix.trans.
  VectorType pairF32 = VectorType::get({2}, f32);
  VectorType pairElt = VectorType::get({2}, elt);
  Value vRowLane = add(rem(lane, 8), mul(rem(div(lane, 8), 2), 8));
  Value vColLane = mul(div(lane, 16), 8);
  for (int64_t kc = 0; kc < warpKeys / 16; ++kc) {
    Value a = ub::PoisonOp::create(b, aType());
    // a0 = (g, keys 16kc + 2t..), a1 = (g+8, ..), a2 = (g, +8..), a3 = (g+8, +8..)
    int64_t order[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}}; // (h, tile offset)
    for (int64_t i = 0; i < 4; ++i) {
      int64_t h = order[i][0], nt = 2 * kc + order[i][1];
      Value pair = fromElements(pairF32, {p[h][2 * nt], p[h][2 * nt + 1]});
      Value packed = arith::TruncFOp::create(b, pairElt, pair);
      a = vector::InsertOp::create(b, packed, a, ArrayRef<int64_t>{i});
    }
    Value vBase = smemIndex(
        vLayout, add(add(stageRow, warpCol), add(vRowLane, kc * 16)), vColLane);
    for (int64_t dp = 0; dp < c.paddedHeadDimV / 16; ++dp) {
      Value index = offsetColumn(vLayout, vBase, dp * 16);
      Value x4 = nvgpu::LdMatrixOp::create(b, aType(), vSmem, ValueRange{index},
                                           /*transpose=*/true, 4u);
      auto [b0, b1] = splitB(x4);
      out.acc[2 * dp] = mma(a, b0, out.acc[2 * dp]);
      out.acc[2 * dp + 1] = mma(a, b1, out.acc[2 * dp + 1]);
    }
  }

  // The next block has landed before the next iteration starts.
  NVVM::CpAsyncWaitGroupOp::create(b, b.getI32IntegerAttr(0));
  return out;
}

/// Stores the CTA's rows from shared memory to the output, 16 bytes per
/// access. `summed`: the rows are the kv warps' f32 partials in the merge
/// area, to be summed on the way (decode tiles).
void ForwardEmitter::storeTile(Value srcSmem, const SmemLayout &layout,
                               bool summed) {
  // 16 bytes per access when rows are 16-byte multiples, else elements.
  int64_t vec = c.headDimV % (16 / outBytes) == 0 ? 16 / outBytes : 1;
  int64_t chunksPerRow = c.paddedHeadDimV / vec;
  int64_t total = c.tileRows() * chunksPerRow;
  int64_t threads = c.threads();
  VectorType outVec = VectorType::get({vec}, s.outType);
  VectorType f32Vec = VectorType::get({vec}, f32);
  unrolled((total + threads - 1) / threads, [&](int64_t it) {
    Value ci = add(tid, it * threads);
    Value p = div(ci, chunksPerRow), ch = rem(ci, chunksPerRow);
    Value g, r, valid;
    packedRow(p, g, r, valid);
    Value col = mul(ch, vec);
    valid = andI(valid, lt(col, c.headDimV));
    if ((it + 1) * threads > total)
      valid = andI(valid, lt(ci, total));
    ifThen(valid, [&]() {
      Value v;
      if (summed) {
        // mergeO[w][p][col]: kvWarps blocks of tileRows x Dvp f32.
        int64_t plane = c.tileRows() * c.paddedHeadDimV;
        Value sum;
        for (int64_t w = 0; w < c.kvWarps; ++w) {
          Value index = add(add(mul(p, c.paddedHeadDimV), col), w * plane);
          Value part = vector::LoadOp::create(b, f32Vec, srcSmem,
                                              ValueRange{index});
          sum = sum ? arith::AddFOp::create(b, sum, part).getResult() : part;
        }
        v = s.outType.isF32() ? sum
                              : arith::TruncFOp::create(b, outVec, sum)
                                    .getResult();
      } else {
        v = vector::LoadOp::create(b, outVec, srcSmem,
                                   ValueRange{smemIndex(layout, p, col)});
      }
      Value dst = add(add(add(s.out.base, mul(g, s.out.groupStride)),
                          mul(r, s.out.rowStride)),
                      col);
      vector::StoreOp::create(b, v, s.out.buffer, ValueRange{dst},
                              /*nontemporal=*/false,
                              llvm::MaybeAlign(vec * outBytes));
    });
  });
}

void ForwardEmitter::epilogue(const State &st) {
  // Row sums were kept per thread; complete them across the quad.
  Value l[2];
  for (int64_t h = 0; h < 2; ++h) {
    Value v = fadd(st.l[h], shflXor(st.l[h], 1));
    l[h] = fadd(v, shflXor(v, 2));
  }
  Value rowBase = add(mul(rowTile, 16), quadRow);
  Value rowsOf[2] = {rowBase, add(rowBase, 8)};
  Value zero = f32c(0);
  auto writeLse = [&](int64_t h, Value m, Value sum) {
    if (!s.lse.buffer)
      return;
    Value g, r, valid;
    packedRow(rowsOf[h], g, r, valid);
    // lse = ln(2^m * sum) = (m + log2 sum) * ln 2; -inf for an empty row
    // (sum == 0), NaN for a row whose scores held NaN (sum is NaN).
    Value positive = fcmp(arith::CmpFPredicate::UNE, sum, zero);
    Value lse = select(positive, fmul(fadd(m, log2(sum)), f32c(kLn2)),
                       negInf());
    ifThen(valid, [&]() {
      Value dst = add(add(s.lse.base, mul(g, s.lse.groupStride)),
                      mul(r, s.lse.rowStride));
      memref::StoreOp::create(b, lse, s.lse.buffer, ValueRange{dst});
    });
  };
  Value quadLeader = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                           quadCol, idx(0));

  if (c.kvWarps == 1) {
    Value inv[2];
    for (int64_t h = 0; h < 2; ++h) {
      Value positive = fcmp(arith::CmpFPredicate::UNE, l[h], zero);
      inv[h] = select(positive, rcp(l[h]), zero);
    }
    // The staging area is the Q region: every warp is done reading Q.
    gpu::BarrierOp::create(b);
    VectorType pairF32 = VectorType::get({2}, f32);
    VectorType pairOut = VectorType::get({2}, s.outType);
    for (int64_t nt = 0; nt < accTiles; ++nt) {
      for (int64_t h = 0; h < 2; ++h) {
        Value v0 = fmul(extract(st.acc[nt], {h, 0}), inv[h]);
        Value v1 = fmul(extract(st.acc[nt], {h, 1}), inv[h]);
        Value pair = fromElements(pairF32, {v0, v1});
        if (!s.outType.isF32())
          pair = arith::TruncFOp::create(b, pairOut, pair);
        Value col = add(mul(quadCol, 2), nt * 8);
        vector::StoreOp::create(b, pair, stageSmem,
                                ValueRange{smemIndex(stageLayout, rowsOf[h], col)});
      }
    }
    ifThen(quadLeader, [&]() {
      for (int64_t h = 0; h < 2; ++h)
        writeLse(h, st.m[h], l[h]);
    });
    gpu::BarrierOp::create(b);
    storeTile(stageSmem, stageLayout, /*summed=*/false);
    return;
  }

  // Decode tiles: merge the kv warps' states by log-sum-exp. Layout of the
  // merge area (f32): O partials [kvWarps][tileRows][Dvp], then m and l
  // [kvWarps][tileRows] each.
  int64_t rows = c.tileRows();
  int64_t plane = rows * c.paddedHeadDimV;
  int64_t mOff = c.kvWarps * plane, lOff = mOff + c.kvWarps * rows;
  // Every warp is done reading K and V, which the merge area overlays.
  gpu::BarrierOp::create(b);
  ifThen(quadLeader, [&]() {
    for (int64_t h = 0; h < 2; ++h) {
      Value at = add(mul(kvPart, rows), rowsOf[h]);
      memref::StoreOp::create(b, st.m[h], mergeSmem, ValueRange{add(at, mOff)});
      memref::StoreOp::create(b, l[h], mergeSmem, ValueRange{add(at, lOff)});
    }
  });
  gpu::BarrierOp::create(b);
  Value factor[2];
  for (int64_t h = 0; h < 2; ++h) {
    SmallVector<Value> ms, ls;
    Value mMax = negInf();
    for (int64_t w = 0; w < c.kvWarps; ++w) {
      Value at = add(rowsOf[h], w * rows);
      ms.push_back(memref::LoadOp::create(b, mergeSmem, ValueRange{add(at, mOff)}));
      ls.push_back(memref::LoadOp::create(b, mergeSmem, ValueRange{add(at, lOff)}));
      mMax = fmax(mMax, ms.back());
    }
    Value isInf = fcmp(arith::CmpFPredicate::OEQ, mMax, negInf());
    Value mUse = select(isInf, zero, mMax);
    Value total = zero;
    for (int64_t w = 0; w < c.kvWarps; ++w)
      total = fadd(total, fmul(ls[w], exp2(fsub(ms[w], mUse))));
    Value positive = fcmp(arith::CmpFPredicate::UNE, total, zero);
    factor[h] =
        select(positive, fmul(exp2(fsub(st.m[h], mUse)), rcp(total)), zero);
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kvPart,
                                        idx(0));
    ifThen(andI(first, quadLeader), [&]() { writeLse(h, mMax, total); });
  }
  VectorType pairF32 = VectorType::get({2}, f32);
  for (int64_t nt = 0; nt < accTiles; ++nt) {
    for (int64_t h = 0; h < 2; ++h) {
      Value v0 = fmul(extract(st.acc[nt], {h, 0}), factor[h]);
      Value v1 = fmul(extract(st.acc[nt], {h, 1}), factor[h]);
      Value col = add(mul(quadCol, 2), nt * 8);
      Value index = add(add(mul(kvPart, plane),
                            mul(rowsOf[h], c.paddedHeadDimV)),
                        col);
      vector::StoreOp::create(b, fromElements(pairF32, {v0, v1}), mergeSmem,
                              ValueRange{index});
    }
  }
  gpu::BarrierOp::create(b);
  storeTile(mergeSmem, stageLayout, /*summed=*/true);
}

void ForwardEmitter::emit(Value shared) {
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane = rem(tid, 32);
  Value warp = div(tid, 32);
  rowTile = div(warp, c.kvWarps);
  kvPart = rem(warp, c.kvWarps);
  quadRow = div(lane, 4);
  quadCol = rem(lane, 4);

  // Shared memory: the Q / staging region, then the K and V stages (the
  // merge area of decode tiles overlays them).
  int64_t qBytes = c.qRegionBytes();
  qSmem = smemView(shared, 0, qBytes, elt);
  stageSmem = smemView(shared, 0, qBytes, s.outType);
  kSmem = smemView(shared, qBytes, c.stages * c.kStageBytes(), elt);
  vSmem = smemView(shared, qBytes + c.stages * c.kStageBytes(),
                   c.stages * c.vStageBytes(), elt);
  if (c.kvWarps > 1)
    mergeSmem = smemView(shared, qBytes, c.mergeBytes(), f32);

  size_t nLoops = s.loops.size();
  auto [nextStart, first] = getLoopHandOver(b, s.loops);

  // Prologue: Q and the first KV block into stage 0.
  issueQ();
  Value hasFirst = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, first,
                                         idx(0));
  issueKV(first, hasFirst, idx(0));
  NVVM::CpAsyncCommitGroupOp::create(b);
  NVVM::CpAsyncWaitGroupOp::create(b, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b);
  SmallVector<Value> qFrags;
  if (c.qInRegisters)
    qFrags = loadQFragments();

  State st;
  Value zero = arith::ConstantOp::create(
      b, accType(), DenseElementsAttr::get(accType(), b.getF32FloatAttr(0)));
  st.acc.assign(accTiles, zero);
  st.m[0] = st.m[1] = negInf();
  st.l[0] = st.l[1] = f32c(0);
  st.stage = idx(0);

  // Loops that follow each other (one's upper bound is the next's lower
  // bound, as flash-causal-skip builds them) become one kernel loop whose
  // blocks take their mask from the loop they belong to: the unrolled step
  // is emitted once.
  bool contiguous = nLoops > 1;
  for (size_t i = 0; i + 1 < nLoops; ++i)
    contiguous &= s.loops[i].upper == s.loops[i + 1].lower;
  auto emitLoop = [&](Value lower, Value upper, auto maskOf,
                      auto nextOf) {
    auto forOp = scf::ForOp::create(b, lower, upper, idx(c.blockKV),
                                    st.flatten());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(forOp.getBody());
      Value j = forOp.getInductionVar();
      State in = State::unflatten(forOp.getRegionIterArgs(), accTiles);
      Value nextJ = nextOf(j);
      Value hasNext = arith::CmpIOp::create(b, arith::CmpIPredicate::sge,
                                            nextJ, idx(0));
      State out = step(in, j, maskOf(j), qFrags, nextJ, hasNext);
      scf::YieldOp::create(b, out.flatten());
    }
    st = State::unflatten(forOp.getResults(), accTiles);
  };
  if (contiguous) {
    Value upper = s.loops.back().upper;
    emitLoop(
        s.loops.front().lower, upper,
        [&](Value j) {
          // The block values of the loop j lies in: the last loop whose
          // lower bound is at most j.
          BlockMask m;
          Value anyCausal;
          for (size_t i = 0; i < nLoops; ++i) {
            BlockValues v = s.loops[i].blockValues(b, j);
            Value in = i == 0 ? Value()
                              : arith::CmpIOp::create(
                                    b, arith::CmpIPredicate::sge, j,
                                    s.loops[i].lower)
                                    .getResult();
            m.validKeys = in ? select(in, v.validKeys, m.validKeys)
                             : v.validKeys;
            if (!s.loops[i].masked)
              continue;
            m.maskOffset = m.maskOffset && in
                               ? select(in, v.maskOffset, m.maskOffset)
                               : v.maskOffset;
            Value here =
                in ? andI(in, i + 1 < nLoops
                                  ? lt(j, s.loops[i + 1].lower)
                                  : lt(j, upper))
                   : lt(j, i + 1 < nLoops ? s.loops[i + 1].lower : upper);
            anyCausal = anyCausal ? arith::OrIOp::create(b, anyCausal, here)
                                        .getResult()
                                  : here;
          }
          m.causal = anyCausal;
          return m;
        },
        [&](Value j) {
          Value jn = add(j, c.blockKV);
          return select(lt(jn, upper), jn, idx(-1));
        });
  } else {
    for (size_t i = 0; i < nLoops; ++i) {
      const KVLoop &loop = s.loops[i];
      emitLoop(
          loop.lower, loop.upper,
          [&](Value j) {
            BlockValues v = loop.blockValues(b, j);
            return BlockMask{v.validKeys, v.maskOffset, Value()};
          },
          [&](Value j) {
            Value jn = add(j, c.blockKV);
            return select(lt(jn, loop.upper), jn, nextStart[i]);
          });
    }
  }
  epilogue(st);
}

} // namespace

LoopHandOver gpu_kernel::getLoopHandOver(ImplicitLocOpBuilder &b,
                                         ArrayRef<KVLoop> loops) {
  auto startOf = [&](const KVLoop &loop, Value otherwise) -> Value {
    Value nonEmpty = arith::CmpIOp::create(b, arith::CmpIPredicate::slt,
                                           loop.lower, loop.upper);
    return arith::SelectOp::create(b, nonEmpty, loop.lower, otherwise);
  };
  LoopHandOver h;
  Value none = arith::ConstantIndexOp::create(b, -1);
  h.nextStart.resize(loops.size());
  for (size_t i = loops.size(); i-- > 0;)
    h.nextStart[i] = i + 1 == loops.size()
                         ? none
                         : startOf(loops[i + 1], h.nextStart[i + 1]);
  h.first = loops.empty() ? none : startOf(loops[0], h.nextStart[0]);
  return h;
}

void gpu_kernel::emitForwardBody(ImplicitLocOpBuilder &b,
                                 const ForwardKernelSpec &spec, Value shared) {
  ForwardEmitter(b, spec).emit(shared);
}

//===----------------------------------------------------------------------===//
// The combine kernel
//===----------------------------------------------------------------------===//

void gpu_kernel::emitCombineBody(ImplicitLocOpBuilder &b,
                                 const CombineKernelSpec &s) {
  Emitter e(b);
  Type f32 = b.getF32Type();
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value lane = e.rem(tid, 32), warp = e.div(tid, 32);
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value row = e.add(e.mul(block, s.warps), warp);
  e.ifThen(e.lt(row, s.rows), [&]() {
    // lse = log(sum_s exp(lse_s)) in one online pass over the splits
    // (every lane computes it; S is small): m is the running maximum, sum
    // the running sum of 2^((lse_s - m) log2 e).
    Value zero = e.idx(0), one = e.idx(1);
    Value log2e = e.f32c(kLog2E);
    auto lseLoop = scf::ForOp::create(b, zero, s.splits, one,
                                      ValueRange{e.negInf(), e.f32c(0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(lseLoop.getBody());
      Value at = e.add(e.mul(lseLoop.getInductionVar(), s.rows), row);
      Value v = memref::LoadOp::create(b, s.partLse, ValueRange{at});
      Value m = lseLoop.getRegionIterArgs()[0];
      Value sum = lseLoop.getRegionIterArgs()[1];
      Value mNew = e.fmax(m, v);
      // Subtract 0 while every split so far saw no key (m' = -inf).
      Value isInf = e.fcmp(arith::CmpFPredicate::OEQ, mNew, e.negInf());
      Value mUse = e.select(isInf, e.f32c(0), mNew);
      Value scaled = e.fmul(sum, e.exp2(e.fmul(e.fsub(m, mUse), log2e)));
      Value added = e.fadd(scaled, e.exp2(e.fmul(e.fsub(v, mUse), log2e)));
      scf::YieldOp::create(b, ValueRange{mNew, added});
    }
    Value mMax = lseLoop.getResult(0);
    Value total = lseLoop.getResult(1);
    Value isInf = e.fcmp(arith::CmpFPredicate::OEQ, mMax, e.negInf());
    Value mUse = e.select(isInf, e.f32c(0), mMax);
    // Empty rows (total == 0) give 0 and -inf; NaN (a split's NaN lse)
    // propagates.
    Value positive = e.fcmp(arith::CmpFPredicate::UNE, total, e.f32c(0));
    Value inv = e.select(positive, e.rcp(total), e.f32c(0));
    // Row (b, h, n) of the output, divided in 32 bits (a 64-bit division is
    // a long subroutine; the runtime keeps rows below 2^31).
    Type i32 = b.getI32Type();
    auto to32 = [&](Value v) { return arith::IndexCastUIOp::create(b, i32, v); };
    auto toIndex = [&](Value v) {
      return arith::IndexCastUIOp::create(b, b.getIndexType(), v);
    };
    Value row32 = to32(row), seqQ32 = to32(s.seqQ);
    Value n = toIndex(arith::RemUIOp::create(b, row32, seqQ32));
    Value bh32 = arith::DivUIOp::create(b, row32, seqQ32);
    Value heads32 = arith::ConstantOp::create(
        b, i32, b.getI32IntegerAttr(static_cast<int32_t>(s.heads)));
    Value h = toIndex(arith::RemUIOp::create(b, bh32, heads32));
    Value bIndex = toIndex(arith::DivUIOp::create(b, bh32, heads32));
    Value outBase = e.add(e.add(e.mul(bIndex, s.outStrideB),
                                e.mul(h, s.outStrideH)),
                          e.mul(n, s.outStrideN));
    // Each lane merges chunks of 8 (f16/bf16) or 4 (f32) columns, or single
    // columns when rows are not 16-byte multiples.
    int64_t vec = 16 / (s.outType.getIntOrFloatBitWidth() / 8);
    if (s.headDimV % vec != 0)
      vec = 1;
    int64_t chunks = s.headDimV / vec;
    VectorType f32Vec = VectorType::get({vec}, f32);
    VectorType outVec = VectorType::get({vec}, s.outType);
    for (int64_t base = 0; base < chunks; base += 32) {
      Value chunk = e.add(lane, base);
      Value valid = e.lt(chunk, chunks);
      e.ifThen(valid, [&]() {
        Value col = e.mul(chunk, vec);
        Value zeroVec = arith::ConstantOp::create(
            b, f32Vec, DenseElementsAttr::get(f32Vec, b.getF32FloatAttr(0)));
        auto accLoop = scf::ForOp::create(b, zero, s.splits, one,
                                          ValueRange{zeroVec});
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(accLoop.getBody());
          Value sIdx = accLoop.getInductionVar();
          Value at = e.add(e.mul(sIdx, s.rows), row);
          Value v = memref::LoadOp::create(b, s.partLse, ValueRange{at});
          // exp(lse_s - max) / sum: a split that saw no key weighs 0.
          Value w = e.fmul(e.exp2(e.fmul(e.fsub(v, mUse), log2e)), inv);
          Value part = vector::LoadOp::create(
              b, f32Vec, s.parts,
              ValueRange{e.add(e.mul(at, s.headDimV), col)},
              /*nontemporal=*/false, llvm::MaybeAlign(4 * std::min<int64_t>(vec, 4)));
          Value wv = vector::BroadcastOp::create(b, f32Vec, w);
          Value acc = arith::AddFOp::create(
              b, accLoop.getRegionIterArgs()[0],
              arith::MulFOp::create(b, part, wv));
          scf::YieldOp::create(b, ValueRange{acc});
        }
        Value result = accLoop.getResult(0);
        if (!s.outType.isF32())
          result = arith::TruncFOp::create(b, outVec, result);
        vector::StoreOp::create(
            b, result, s.out, ValueRange{e.add(outBase, col)},
            /*nontemporal=*/false,
            llvm::MaybeAlign(vec * (s.outType.getIntOrFloatBitWidth() / 8)));
      });
    }
    if (s.lse) {
      Value leader = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane,
                                           e.idx(0));
      e.ifThen(leader, [&]() {
        // (max + log2(sum 2^((l - max) log2 e))) ln 2, -inf when empty.
        Value lse = e.select(
            positive,
            e.fadd(mUse, e.fmul(e.log2(total), e.f32c(kLn2))), e.negInf());
        memref::StoreOp::create(b, lse, s.lse, ValueRange{row});
      });
    }
  });
}
