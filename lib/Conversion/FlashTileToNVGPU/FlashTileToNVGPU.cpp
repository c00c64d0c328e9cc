//===- FlashTileToNVGPU.cpp - flash_tile to NVGPU, NVVM and GPU ops -------===//
//
// One conversion pattern per flash_tile op, for sm_80's instructions
// (mma.sync, ldmatrix, cp.async). A register tile becomes the vector of the
// values one thread holds, numbered as its layout's getCoordinates numbers
// them; a shared buffer becomes a 1-D view of the dynamic shared memory.
//
// Where a thread's values are: every layout's coordinates split into a
// part that depends on the thread (getThreadOffsets, affine in
// gpu.thread_id) and constants per value. The thread part is computed once
// per kernel at its entry, where it is loop-invariant by construction; each
// value adds its constants. Shared-memory addresses do the same through the
// swizzle: when a row's elements are a power of two and a constant column
// offset has no chunk bit in common with the thread's own column, the
// swizzled index of the offset column is the thread's index XOR the offset.
//
//===----------------------------------------------------------------------===//

#include "flashc/Conversion/MmaSync.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Conversion/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"
#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

#include <array>
#include <map>

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHTILETONVGPU
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

/// `threads` threads meeting at named barrier `id` (an i32): each waits
/// there for the others (`bar.sync`) or, without `wait`, counts towards
/// the barrier and goes on (`bar.arrive`).
void namedBarrier(OpBuilder &b, Location loc, Value id, int64_t threads,
                  bool wait) {
  Value count = arith::ConstantIntOp::create(b, loc, threads, 32);
  if (wait)
    NVVM::BarrierOp::create(b, loc, /*res=*/Type(), id, count,
                            NVVM::BarrierReductionAttr(),
                            /*reductionPredicate=*/Value());
  else
    NVVM::BarrierArriveOp::create(b, loc, id, count);
}

//===----------------------------------------------------------------------===//
// Per-kernel values
//===----------------------------------------------------------------------===//

/// What the patterns compute once per function, at its entry: the thread
/// index, the dynamic shared memory, and the thread-dependent offsets of
/// each (layout, shape) and of each shared-memory access pattern.
class KernelValues {
public:
  /// Creates the thread index at the entry of every function that holds a
  /// flash_tile op.
  void prepare(ModuleOp module) {
    module.walk([&](FunctionOpInterface fn) {
      if (fn.isExternal())
        return;
      // The operand types as they are before the conversion: by the time a
      // pattern sees an op, its operands may already be converted values.
      bool hasTileOps = false, warpgroup = false, stores = false;
      llvm::SetVector<Value> tmaBuffers, releasedBuffers;
      fn.walk([&](Operation *op) {
        if (!isa<FlashTileDialect>(op->getDialect()))
          return;
        hasTileOps = true;
        warpgroup |= isa<WarpgroupMmaOp, TmaLoadOp, TmaStoreOp>(op);
        stores |= isa<TmaStoreOp>(op);
        if (auto load = dyn_cast<TmaLoadOp>(op))
          tmaBuffers.insert(load.getBuffer());
        if (auto release = dyn_cast<StageReleaseOp>(op))
          releasedBuffers.insert(release.getBuffer());
        if (isa<TurnWaitOp>(op))
          takesTurns.insert(op->getParentOfType<WarpSpecializeOp>());
        if (auto specialize = dyn_cast<WarpSpecializeOp>(op)) {
          specialize.getProducer().walk(
              [&](Operation *nested) { producerOps.insert(nested); });
          specialize.getConsumers().walk([&](Operation *nested) {
            consumerThreads[nested] = specialize.getConsumerThreads();
          });
        }
        if (auto alloc = dyn_cast<AllocOp>(op))
          if (std::optional<int64_t> offset = alloc.getOffset())
            allocOffsets[alloc.getBuffer()] = *offset;
        // A view starts where its source does.
        if (auto view = dyn_cast<ViewOp>(op))
          if (auto it = allocOffsets.find(view.getSource());
              it != allocOffsets.end())
            allocOffsets[view.getResult()] = it->second;
        operandTypes[op] = llvm::to_vector(op->getOperandTypes());
      });
      if (!hasTileOps)
        return;
      OpBuilder b = OpBuilder::atBlockBegin(&fn.getFunctionBody().front());
      State &s = functions[fn];
      s.tid = gpu::ThreadIdOp::create(b, fn.getLoc(), gpu::Dimension::x);
      s.warpgroup = warpgroup;
      if (tmaBuffers.empty() && !stores)
        return;
      Location loc = fn.getLoc();
      MLIRContext *ctx = fn->getContext();
      s.firstThread =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, s.tid,
                                arith::ConstantIndexOp::create(b, loc, 0));
      if (tmaBuffers.empty())
        return;
      // One mbarrier per stage of each buffer a TMA copy fills, initialised
      // for one arrival (the copying thread's arrive.expect_tx) by the first
      // thread, before any thread uses one.
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      for (Value buffer : tmaBuffers) {
        auto type = cast<SharedType>(buffer.getType());
        auto group = nvgpu::MBarrierGroupType::get(
            ctx, gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup),
            type.getStages());
        Value bars = nvgpu::MBarrierCreateOp::create(b, loc, group);
        for (int64_t stage = 0; stage < type.getStages(); ++stage)
          nvgpu::MBarrierInitOp::create(
              b, loc, bars, one, arith::ConstantIndexOp::create(b, loc, stage),
              s.firstThread);
        s.barriers[buffer] = bars;
      }
      // In a warp-specialised kernel, one more per stage of each buffer its
      // consumers release, for an arrival of every consumer thread.
      for (Value buffer : releasedBuffers) {
        auto type = cast<SharedType>(buffer.getType());
        Operation *release =
            *llvm::find_if(buffer.getUsers(),
                           [](Operation *u) { return isa<StageReleaseOp>(u); });
        Value consumers = arith::ConstantIndexOp::create(
            b, loc, consumerThreads.lookup(release));
        auto group = nvgpu::MBarrierGroupType::get(
            ctx, gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup),
            type.getStages());
        Value bars = nvgpu::MBarrierCreateOp::create(b, loc, group);
        for (int64_t stage = 0; stage < type.getStages(); ++stage)
          nvgpu::MBarrierInitOp::create(
              b, loc, bars, consumers,
              arith::ConstantIndexOp::create(b, loc, stage), s.firstThread);
        s.releaseBarriers[buffer] = bars;
      }
      gpu::BarrierOp::create(b, loc);
    });
  }

  /// The mbarriers on which the consumers release the stages of `buffer`
  /// (a warp-specialised kernel's ring buffer), or null.
  Value releaseBarriers(Operation *op, Value buffer) {
    return state(op).releaseBarriers.lookup(buffer);
  }

  /// The thread index of the function holding `op`.
  Value threadId(Operation *op) { return state(op).tid; }

  /// The registers of A an async warpgroup MMA reads until it is waited
  /// for (recorded by its lowering, read by its wait's).
  SmallVector<Value> &asyncOperands(Operation *mma) {
    return asyncRegisters[mma];
  }

  /// The result of a warpgroup MMA whose instructions the lowering of the
  /// one before it emitted, or null.
  Value startedMma(Operation *mma) const { return started.lookup(mma); }
  void setStartedMma(Operation *mma, Value result) { started[mma] = result; }

  /// Whether `op` is in the producer region of a flash_tile.warp_specialize.
  bool inProducer(Operation *op) const { return producerOps.contains(op); }

  /// A barrier of the threads that execute `op`: the CTA's, or in the
  /// consumer region of a flash_tile.warp_specialize, a named barrier (1)
  /// of the consumer threads only, which the producer's warps never meet.
  void createBarrier(Operation *op, OpBuilder &b, Location loc) const {
    int64_t consumers = consumerThreads.lookup(op);
    if (!consumers) {
      gpu::BarrierOp::create(b, loc);
      return;
    }
    Value id =
        arith::ConstantIntOp::create(b, loc, flashc::kConsumerBarrierId, 32);
    namedBarrier(b, loc, id, consumers, /*wait=*/true);
  }

  /// The consumer threads of the flash_tile.warp_specialize whose consumer
  /// region holds `op`, or 0.
  int64_t consumerThreadsOf(Operation *op) const {
    return consumerThreads.lookup(op);
  }

  /// The named barrier of the turns of `op`'s consumer warpgroup `offset`
  /// places after the executing thread's (wrapping around), as an i32: the
  /// one it waits on for its turn (0) or the next warpgroup's (1).
  Value turnBarrier(Operation *op, RewriterBase &b, Location loc,
                    int64_t offset) {
    AffineExpr warpgroup =
        getAffineDimExpr(0, b.getContext()).floorDiv(flashc::kWarpgroupThreads);
    if (offset)
      warpgroup = (warpgroup + offset) %
                  (consumerThreadsOf(op) / flashc::kWarpgroupThreads);
    Value id =
        atEntry(op, {warpgroup + flashc::kFirstTurnBarrierId}, b).front();
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), id);
  }

  /// Whether the consumer warpgroups of `specialize` take turns.
  bool takeTurns(WarpSpecializeOp specialize) const {
    return takesTurns.contains(specialize);
  }

  /// The mbarriers of the stages of `buffer` (a TMA copy's), or null.
  Value stageBarriers(Operation *op, Value buffer) {
    return state(op).barriers.lookup(buffer);
  }

  /// `tid == 0` of the function holding `op`: the thread that issues its
  /// TMA copies.
  Value firstThread(Operation *op) { return state(op).firstThread; }

  /// The byte offset of `buffer` (a placed flash_tile.alloc's, or a
  /// flash_tile.view of one) in the kernel's shared buffers, or -1.
  int64_t allocOffset(Value buffer) const {
    auto it = allocOffsets.find(buffer);
    return it == allocOffsets.end() ? -1 : it->second;
  }

  /// Whether `op` was seen by prepare(): a flash_tile op in a function
  /// (one outside any function has no thread index to start from).
  bool covers(Operation *op) const { return operandTypes.count(op); }

  /// The type operand `i` of the flash_tile op `op` had before the
  /// conversion.
  template <typename T> T operandType(Operation *op, unsigned i) const {
    return cast<T>(operandTypes.lookup(op)[i]);
  }

  /// Evaluates `exprs` (of the thread index d0) at the entry of `op`'s
  /// function, each distinct expression once.
  SmallVector<Value> atEntry(Operation *op, ArrayRef<AffineExpr> exprs,
                             RewriterBase &rewriter) {
    State &s = state(op);
    SmallVector<Value> values;
    for (AffineExpr e : exprs) {
      Value &v = s.exprs[e];
      if (!v) {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointAfterValue(s.tid);
        v = expand(rewriter, s.tid.getLoc(), e, s.tid);
      }
      values.push_back(v);
    }
    return values;
  }

  /// `gpu.dynamic_shared_memory` of the function holding `op`.
  Value dynamicShared(Operation *op, RewriterBase &rewriter) {
    State &s = state(op);
    if (!s.shared) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointAfterValue(s.tid);
      MLIRContext *ctx = rewriter.getContext();
      auto type = MemRefType::get(
          {ShapedType::kDynamic}, rewriter.getI8Type(), AffineMap(),
          gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
      s.shared =
          gpu::DynamicSharedMemoryOp::create(rewriter, s.tid.getLoc(), type);
    }
    return s.shared;
  }

  /// Whether the function holding `op` has a warpgroup MMA: its shared
  /// buffers are read by the asynchronous proxy, from a base aligned to
  /// the 1024 bytes of the 128-byte swizzle's period.
  bool usesWarpgroupMma(Operation *op) { return state(op).warpgroup; }

  /// The bytes from the dynamic shared memory to where the function's
  /// buffers start: 0 (null), or for a function with a warpgroup MMA what
  /// aligns the start to 1024 bytes (flash-tile-allocate-shared counts
  /// 1024 bytes more for it).
  Value sharedPadding(Operation *op, RewriterBase &rewriter) {
    State &s = state(op);
    if (!s.warpgroup)
      return {};
    if (!s.padding) {
      Value shared = dynamicShared(op, rewriter);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointAfterValue(shared);
      Location loc = shared.getLoc();
      Value at =
          memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, shared);
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      s.padding = arith::AndIOp::create(
          rewriter, loc, arith::SubIOp::create(rewriter, loc, zero, at),
          arith::ConstantIndexOp::create(
              rewriter, loc, flashc::kWarpgroupSharedAlignment - 1));
    }
    return s.padding;
  }

private:
  struct State {
    Value tid, shared, padding, firstThread;
    bool warpgroup = false;
    llvm::DenseMap<Value, Value> barriers, releaseBarriers;
    llvm::DenseMap<AffineExpr, Value> exprs;
  };
  /// The ops of producer regions, and those of consumer regions with the
  /// consumers' thread count (ops keep their identity when a pattern moves
  /// them).
  llvm::DenseSet<Operation *> producerOps;
  llvm::DenseMap<Operation *, int64_t> consumerThreads;
  /// The flash_tile.warp_specialize ops whose consumer warpgroups take
  /// turns (flash_tile.turn_wait).
  llvm::SmallPtrSet<Operation *, 2> takesTurns;
  llvm::DenseMap<Operation *, SmallVector<Value>> asyncRegisters;
  llvm::DenseMap<Operation *, Value> started;
  State &state(Operation *op) {
    auto fn = op->getParentOfType<FunctionOpInterface>();
    auto it = functions.find(fn);
    assert(it != functions.end() && "prepare() saw every function");
    return it->second;
  }

  /// The expression as index arithmetic on a non-negative thread index:
  /// unsigned division and remainder by constants.
  static Value expand(OpBuilder &b, Location loc, AffineExpr e, Value tid) {
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return arith::ConstantIndexOp::create(b, loc, c.getValue());
    if (isa<AffineDimExpr>(e))
      return tid;
    auto bin = cast<AffineBinaryOpExpr>(e);
    Value lhs = expand(b, loc, bin.getLHS(), tid);
    Value rhs = expand(b, loc, bin.getRHS(), tid);
    switch (e.getKind()) {
    case AffineExprKind::Add:
      return arith::AddIOp::create(b, loc, lhs, rhs);
    case AffineExprKind::Mul:
      return arith::MulIOp::create(b, loc, lhs, rhs);
    case AffineExprKind::FloorDiv:
      return arith::DivUIOp::create(b, loc, lhs, rhs);
    case AffineExprKind::Mod:
      return arith::RemUIOp::create(b, loc, lhs, rhs);
    default:
      llvm_unreachable("thread offsets use +, *, floordiv and mod");
    }
  }

  llvm::DenseMap<Operation *, State> functions;
  llvm::DenseMap<Operation *, SmallVector<Type>> operandTypes;
  llvm::DenseMap<Value, int64_t> allocOffsets;
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value addConst(OpBuilder &b, Location loc, Value x, int64_t c) {
  return c == 0 ? x : arith::AddIOp::create(b, loc, x, indexConst(b, loc, c));
}

/// The largest power of two up to `maxRun` that divides `column` (of the
/// thread index) for every thread of `type`'s layout: the longest runs of
/// columns a thread's accesses can start aligned to. A null `column` (a
/// single column offset of 0) allows `maxRun`.
int64_t getThreadColumnAlignment(TileType type, AffineExpr column,
                                 int64_t maxRun) {
  int64_t align = maxRun;
  if (!column)
    return align;
  auto map = AffineMap::get(1, 0, column);
  for (int64_t t = 0, n = 32 * type.getLayoutInterface().getNumWarps(); t < n;
       ++t) {
    int64_t c = map.compose(ArrayRef<int64_t>{t})[0];
    while (c % align != 0)
      align /= 2;
  }
  return align;
}

/// The largest value of `expr` over the threads `[0, threads)`.
int64_t maxOverThreads(AffineExpr expr, int64_t threads) {
  auto map = AffineMap::get(1, 0, expr);
  int64_t best = 0;
  for (int64_t t = 0; t < threads; ++t)
    best = std::max(best, map.compose(ArrayRef<int64_t>{t})[0]);
  return best;
}

/// Addresses into stage buffers of a shared type: element (r, c) of a stage
/// at `r * C + ((c / vec) ^ ((r / rowsPerPhase) % phases)) * vec + c % vec`
/// of the stage,
/// where a row is one panel (C its elements, padding included); with
/// panels of P elements, at `(c / P) * R * P` (R rows a stage) plus that of
/// (r, c % P) in rows of P. An access pattern is a thread part (row and
/// column expressions of the thread index) plus constant offsets per
/// access.
class SharedAddresses {
public:
  /// Indices count units of `scale` elements (a power of two: 1 for
  /// element indices, the element's bytes for byte offsets).
  SharedAddresses(SharedType type, AffineExpr row, AffineExpr col,
                  int64_t threads, int64_t scale = 1)
      : type(type), row(row), col(col), scale(scale) {
    assert(llvm::isPowerOf2_64(scale) && "a power-of-two scale");
    SwizzledLayoutAttr swizzle = type.getLayout();
    vec = swizzle.getVector();
    phases = swizzle.getPhases();
    rowsPerPhase = swizzle.getRowsPerPhase();
    panel = swizzle.getPanel();
    pitch = swizzle.getRowPitch(type.getColumns());
    int64_t maxCol = maxOverThreads(col, threads);
    // The thread's own chunks lie below `chunkBound` (a power of two).
    chunkBound = llvm::PowerOf2Ceil(maxCol / vec + 1);
    // Whether every thread's own columns lie in the first panel, so that
    // a column offset's whole panels add.
    ownPanel = panel == 0 || maxCol < panel;
  }

  /// The index in the 1-D buffer (times the scale) of element
  /// (row + r, col + c) of stage `stage`.
  Value index(OpBuilder &b, Location loc, KernelValues &kv, Operation *op,
              RewriterBase &rewriter, Value stage, int64_t r, int64_t c) {
    // The stage's first element, once per stage value (an op's accesses
    // share it).
    Value &stageBase = stageBases[stage];
    if (!stageBase)
      stageBase = arith::MulIOp::create(
          b, loc, stage,
          indexConst(b, loc, type.getRows() * type.getRowElements() * scale));
    // A column offset of whole panels adds them when every thread's own
    // columns lie in the first; the rest is an offset within a panel.
    int64_t panels = 0;
    if (panel && ownPanel) {
      panels = c / panel;
      c %= panel;
    }
    int64_t panelStart = panels * type.getRows() * panel;
    // Without a swizzle, offsets add; with one, a column offset whose
    // chunks lie above the thread's own is an XOR (see the file comment),
    // and whole swizzle periods of rows add.
    bool additive = phases == 1;
    bool xorable = !additive && llvm::isPowerOf2_64(pitch) &&
                   r % (phases * rowsPerPhase) == 0 && c % vec == 0 &&
                   (c / vec) % chunkBound == 0 && c < pitch &&
                   (ownPanel || c == 0);
    if (additive || xorable) {
      // The stage's start plus the thread's, then a constant: one base per
      // stage for every access without a column XOR.
      Value at = threadIndex(kv, op, rewriter);
      if (scale != 1 && (additive || c == 0)) {
        Value &start = threadStarts[stage];
        if (!start)
          start = arith::AddIOp::create(b, loc, stageBase, at);
        return addConst(b, loc, start,
                        (panelStart + (additive ? r * pitch + c : r * pitch)) *
                            scale);
      }
      if (additive)
        return arith::AddIOp::create(
            b, loc, stageBase,
            addConst(b, loc, at, (panelStart + r * pitch + c) * scale));
      // A power-of-two scale distributes over the XOR.
      if (c != 0)
        at = arith::XOrIOp::create(b, loc, at, indexConst(b, loc, c * scale));
      return arith::AddIOp::create(
          b, loc, stageBase,
          addConst(b, loc, at, (panelStart + r * pitch) * scale));
    }
    SmallVector<Value> rc = kv.atEntry(op, {row, col}, rewriter);
    Value rr = addConst(b, loc, rc[0], r),
          cc = addConst(b, loc, rc[1], c + panels * panel);
    Value within = swizzled(b, loc, rr, cc);
    if (scale != 1)
      within =
          arith::MulIOp::create(b, loc, within, indexConst(b, loc, scale));
    return arith::AddIOp::create(b, loc, stageBase, within);
  }

private:
  Value threadIndex(KernelValues &kv, Operation *op, RewriterBase &rewriter) {
    // The swizzled index of (row, col) as one affine-free computation at
    // the function's entry.
    SmallVector<Value> rc = kv.atEntry(op, {row, col}, rewriter);
    if (!base) {
      // After both, which atEntry placed in the entry block.
      Operation *r = rc[0].getDefiningOp(), *c = rc[1].getDefiningOp();
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointAfter(c->isBeforeInBlock(r) ? r : c);
      Location loc = rc[0].getLoc();
      base = swizzled(rewriter, loc, rc[0], rc[1]);
      if (scale != 1)
        base = arith::MulIOp::create(rewriter, loc, base,
                                     indexConst(rewriter, loc, scale));
    }
    return base;
  }

  Value swizzled(OpBuilder &b, Location loc, Value r, Value c) const {
    Value panelStart;
    if (panel) {
      // The column's panel, and the column within it.
      Value p = indexConst(b, loc, panel);
      panelStart =
          arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, c, p),
                                indexConst(b, loc, type.getRows() * panel));
      c = arith::RemUIOp::create(b, loc, c, p);
    }
    Value rowStart =
        arith::MulIOp::create(b, loc, r, indexConst(b, loc, pitch));
    if (panelStart)
      rowStart = arith::AddIOp::create(b, loc, panelStart, rowStart);
    if (phases == 1)
      return arith::AddIOp::create(b, loc, rowStart, c);
    Value vecC = indexConst(b, loc, vec);
    Value chunk = arith::DivUIOp::create(b, loc, c, vecC);
    Value within = arith::RemUIOp::create(b, loc, c, vecC);
    if (rowsPerPhase != 1)
      r = arith::DivUIOp::create(b, loc, r, indexConst(b, loc, rowsPerPhase));
    Value phase = arith::RemUIOp::create(b, loc, r, indexConst(b, loc, phases));
    Value moved = arith::MulIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, chunk, phase), vecC);
    return arith::AddIOp::create(
        b, loc, rowStart, arith::AddIOp::create(b, loc, moved, within));
  }

  SharedType type;
  AffineExpr row, col;
  int64_t scale = 1;
  int64_t vec = 1, phases = 1, rowsPerPhase = 1, chunkBound = 1, panel = 0,
          pitch = 1;
  bool ownPanel = true;
  Value base;
  llvm::DenseMap<Value, Value> stageBases, threadStarts;
};

/// The thread-0 coordinates of every value a thread holds.
SmallVector<SmallVector<int64_t>> valueOffsets(TileType type) {
  LayoutAttrInterface layout = type.getLayoutInterface();
  SmallVector<SmallVector<int64_t>> offsets;
  for (int64_t e = 0, n = layout.getElementsPerThread(type.getShape()); e < n;
       ++e)
    offsets.push_back(layout.getCoordinates(type.getShape(), 0, e));
  return offsets;
}

/// For each value a thread holds of `full`, the index among its values of
/// `slice` (`full` without dimension `dim`) of the value at the same
/// coordinates without `dim`; failure when one has none.
LogicalResult getSliceSlots(TileType full, TileType slice, int64_t dim,
                            SmallVectorImpl<int64_t> &slots) {
  auto key = [&](ArrayRef<int64_t> c) {
    return linearize(c, slice.getShape());
  };
  llvm::DenseMap<int64_t, int64_t> slot;
  for (auto [j, c] : llvm::enumerate(valueOffsets(slice)))
    slot[key(c)] = j;
  for (SmallVector<int64_t> c : valueOffsets(full)) {
    c.erase(c.begin() + dim);
    auto it = slot.find(key(c));
    if (it == slot.end())
      return failure();
    slots.push_back(it->second);
  }
  return success();
}

VectorType convertTile(TileType type) {
  return VectorType::get(
      {type.getLayoutInterface().getElementsPerThread(type.getShape())},
      type.getElementType());
}

/// The values of a 2-D fragment (vector<4x2xf16>, ...) row-major, into
/// `elems` from `offset` on. Fragments go element by element, which the
/// LLVM lowering of vectors takes without the n-D shape-cast and
/// strided-slice patterns.
void scatterFragment(OpBuilder &b, Location loc, Value v,
                     MutableArrayRef<Value> elems, int64_t offset) {
  auto type = cast<VectorType>(v.getType());
  for (int64_t i = 0; i < type.getDimSize(0); ++i)
    for (int64_t j = 0; j < type.getDimSize(1); ++j)
      elems[offset + i * type.getDimSize(1) + j] =
          vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i, j});
}

/// The fragment of `shape` whose values are `flat`'s from `offset` on.
Value fragmentOf(OpBuilder &b, Location loc, Value flat, int64_t offset,
                 ArrayRef<int64_t> shape) {
  auto type = cast<VectorType>(flat.getType());
  SmallVector<Value> elems;
  for (int64_t i = 0; i < shape[0] * shape[1]; ++i)
    elems.push_back(vector::ExtractOp::create(b, loc, flat,
                                              ArrayRef<int64_t>{offset + i}));
  return vector::FromElementsOp::create(
      b, loc, VectorType::get(shape, type.getElementType()), elems);
}

/// Where row `r` (an index of the tile's rows) of a tile of `rows` rows
/// lies in a global matrix of type `matrix`: its group (null for a 2-D
/// matrix) and its row within the group.
std::pair<Value, Value> groupAndRow(OpBuilder &b, Location loc,
                                    MemRefType matrix, int64_t rows, Value r) {
  if (matrix.getRank() == 2)
    return {Value(), r};
  Value perGroup = indexConst(b, loc, rows / matrix.getDimSize(0));
  return {arith::DivUIOp::create(b, loc, r, perGroup),
          arith::RemUIOp::create(b, loc, r, perGroup)};
}

/// Where row `rowConst` (a constant added to the thread's row) of a load's
/// or a store's tile of `tileRows` rows lies in `matrix`: its group (null
/// for a 2-D matrix), its row in the group, and whether it is written or
/// read: below `valid`, in a group below `groups` when given.
struct RowPlace {
  Value group, inGroup, ok;
};
RowPlace placeRow(OpBuilder &b, Location loc, MemRefType matrix,
                  int64_t tileRows, Value threadRow, int64_t rowConst,
                  Value valid, Value groups) {
  RowPlace place;
  std::tie(place.group, place.inGroup) = groupAndRow(
      b, loc, matrix, tileRows, addConst(b, loc, threadRow, rowConst));
  place.ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                   place.inGroup, valid);
  if (groups)
    place.ok = arith::AndIOp::create(
        b, loc, place.ok,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, place.group,
                              groups));
  return place;
}

/// How an access of `n` columns from `column` (the thread's own column,
/// up to `maxColumn`, added) meets a matrix of `columns` columns: inside
/// for every thread, past for every thread, or inside for some threads
/// only (then each column is checked). Copies, loads and stores of tiles
/// wider than their matrix use it.
enum class ColumnFit { Inside, Past, Straddles };
ColumnFit fitColumns(int64_t column, int64_t n, int64_t maxColumn,
                     int64_t columns) {
  if (column >= columns)
    return ColumnFit::Past;
  return column + maxColumn + n > columns ? ColumnFit::Straddles
                                          : ColumnFit::Inside;
}

/// `c < columns`, for a column that some threads hold past the matrix's.
Value isColumnInside(OpBuilder &b, Location loc, Value c, int64_t columns) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                               indexConst(b, loc, columns));
}

/// A pattern of one flash_tile op, with the kernel's per-thread values.
template <typename Op>
class TilePattern : public OpConversionPattern<Op> {
public:
  using OpAdaptor = typename Op::Adaptor;
  TilePattern(const TypeConverter &converter, MLIRContext *ctx,
              KernelValues &kv)
      : OpConversionPattern<Op>(converter, ctx), kv(kv) {}

  LogicalResult
  matchAndRewrite(Op op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    if (!kv.covers(op))
      return op.emitOpError() << "lowers only inside a function";
    return lower(op, adaptor, rewriter);
  }

protected:
  virtual LogicalResult lower(Op op, OpAdaptor adaptor,
                              ConversionPatternRewriter &rewriter) const = 0;
  KernelValues &kv;
};

//===----------------------------------------------------------------------===//
// alloc
//===----------------------------------------------------------------------===//

struct AllocLowering : TilePattern<AllocOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(AllocOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    std::optional<int64_t> offset = op.getOffset();
    if (!offset)
      return op.emitOpError()
             << "has no shared-memory offset: run flash-tile-allocate-shared "
                "before flash-tile-to-nvgpu";
    auto type = cast<MemRefType>(
        getTypeConverter()->convertType(op.getBuffer().getType()));
    Location loc = op.getLoc();
    Value shared = kv.dynamicShared(op, rewriter);
    Value at = indexConst(rewriter, loc, *offset);
    if (Value padding = kv.sharedPadding(op, rewriter))
      at = arith::AddIOp::create(rewriter, loc, padding, at);
    rewriter.replaceOpWithNewOp<memref::ViewOp>(op, type, shared, at,
                                                ValueRange{});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// view
//===----------------------------------------------------------------------===//

/// The first elements of the source's (its first panels, a stage of one):
/// the same address.
struct ViewLowering : TilePattern<ViewOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(ViewOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto type = cast<MemRefType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, type, adaptor.getSource(), /*offset=*/0,
        /*sizes=*/ArrayRef<int64_t>{type.getShape()[0]},
        /*strides=*/ArrayRef<int64_t>{1});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// async_copy and async_wait
//===----------------------------------------------------------------------===//

/// A global matrix as one thread reads it: the address of the thread's
/// first element of row 0 (of group 0), so that each copy adds an offset
/// the whole CTA shares.
struct ThreadSource {
  /// A global pointer (`!llvm.ptr<1>`).
  Value start;
  /// The bytes between rows and between groups (of a 3-D matrix).
  Value rowBytes, groupBytes;
};

/// Where values defined by `source` and by the function's entry
/// (`entryValues`) are all available: after the source's definition.
void setInsertionPointAfterSource(OpBuilder &b, Value source,
                                  ArrayRef<Value> entryValues) {
  auto arg = dyn_cast<BlockArgument>(source);
  if (!arg || arg.getOwner() != Value(entryValues.front()).getParentBlock()) {
    b.setInsertionPointAfterValue(source);
    return;
  }
  // A function argument: after the entry values.
  Operation *last = nullptr;
  for (Value v : entryValues)
    if (Operation *def = v.getDefiningOp();
        def && (!last || last->isBeforeInBlock(def)))
      last = def;
  b.setInsertionPointAfter(last);
}

/// `base + bytes` as a pointer of `base`'s address space.
Value offsetPointer(OpBuilder &b, Location loc, Value base, Value bytes) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), bytes);
  return LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                             ValueRange{i64});
}

/// The aligned pointer of `memref`: a shared one (`!llvm.ptr<3>`) for a
/// workgroup memref, else a global one (`!llvm.ptr<1>`, from the generic
/// address the kernel's memrefs hold).
Value alignedPointer(OpBuilder &b, Location loc, Value memref) {
  Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  MLIRContext *ctx = b.getContext();
  auto type = cast<MemRefType>(memref.getType());
  if (isa_and_nonnull<gpu::AddressSpaceAttr>(type.getMemorySpace()))
    return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(ctx, 3),
                                    i64);
  Value generic =
      LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(ctx), i64);
  return LLVM::AddrSpaceCastOp::create(
      b, loc, LLVM::LLVMPointerType::get(ctx, 1), generic);
}

struct AsyncCopyLowering : TilePattern<AsyncCopyOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(AsyncCopyOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto buffer = kv.operandType<SharedType>(op, 2);
    BlockedLayoutAttr layout = op.getLayoutAttr();
    SmallVector<int64_t> shape = {buffer.getRows(), buffer.getColumns()};
    int64_t run = layout.getSize()[1];
    int64_t values = layout.getElementsPerThread(shape);
    int64_t threads = 32 * layout.getNumWarps();
    int64_t elementBytes = buffer.getElementType().getIntOrFloatBitWidth() / 8;
    int64_t bytes = run * elementBytes;

    auto sourceType = cast<MemRefType>(adaptor.getSource().getType());
    SmallVector<AffineExpr> thread = getThreadOffsets(layout, shape);
    SharedAddresses addresses(buffer, thread[0], thread[1], threads,
                              /*scale=*/elementBytes);
    SmallVector<Value> tv = kv.atEntry(op, thread, rewriter);

    // The rows of a group: a thread's row within its group is its own row
    // plus a constant per copy when no copy's rows straddle two groups.
    bool grouped = sourceType.getRank() == 3;
    int64_t perGroup =
        grouped ? shape[0] / sourceType.getDimSize(0) : shape[0];
    int64_t maxRow = maxOverThreads(thread[0], threads);
    bool rowsSplit = true;
    for (int64_t e = 0; e < values; e += run) {
      int64_t r = layout.getCoordinates(shape, 0, e)[0];
      rowsSplit &= r % perGroup + maxRow < perGroup;
    }
    ThreadSource src =
        threadSource(op, adaptor.getSource(), tv, rowsSplit, rewriter);
    Value dstBase = sharedPointer(adaptor.getBuffer(), rewriter);

    // Rows at or past `valid` read nothing: a source size of 0 leaves the
    // address unread. The comparison is of 32-bit row numbers below R. A
    // constant `valid` of R rows or more (a schedule's full blocks) needs
    // no check.
    std::optional<int64_t> constantValid =
        getConstantIntValue(adaptor.getValid());
    bool checked = !constantValid || *constantValid < perGroup;
    Type i32 = rewriter.getI32Type();
    auto toI32 = [&](Value index) -> Value {
      return arith::IndexCastOp::create(rewriter, loc, i32, index);
    };
    // Columns at or past the source's are zero-filled alike: a run lies
    // wholly on one side (the runs divide the source's columns), which
    // side depending on the thread only for runs that some threads hold
    // inside and some past.
    int64_t sourceColumns = sourceType.getShape().back();
    int64_t maxColumn = maxOverThreads(thread[1], threads);
    bool elementRuns = run == 1;
    Value valid, full, none;
    if (checked) {
      valid = toI32(arith::MaxSIOp::create(
          rewriter, loc,
          arith::MinSIOp::create(rewriter, loc, adaptor.getValid(),
                                 indexConst(rewriter, loc, perGroup)),
          indexConst(rewriter, loc, 0)));
    }
    if (checked || sourceColumns < shape[1] || adaptor.getGroups()) {
      full = arith::ConstantIntOp::create(rewriter, loc, i32, bytes);
      none = arith::ConstantIntOp::create(rewriter, loc, i32, 0);
    }
    // The block's first row, the same for every copy of the op.
    Value blockStart =
        arith::MulIOp::create(rewriter, loc, adaptor.getRow(), src.rowBytes);
    // A copy's bytes past the thread's start: `rows` rows, `groups`
    // groups and `columns` columns (the steps between copies, which repeat,
    // once each).
    std::map<std::array<int64_t, 3>, Value> steps;
    auto bytesOf = [&](Value rowCount, int64_t rows, int64_t groups,
                       int64_t columns) {
      Value *step = rowCount ? nullptr : &steps[{rows, groups, columns}];
      if (step && *step)
        return *step;
      Value offset = rowCount;
      auto add = [&](Value term) {
        offset = offset ? arith::AddIOp::create(rewriter, loc, offset, term)
                              .getResult()
                        : term;
      };
      auto times = [&](Value bytes, int64_t n) -> Value {
        return n == 1 ? bytes
                      : arith::MulIOp::create(rewriter, loc, bytes,
                                              indexConst(rewriter, loc, n));
      };
      if (rows != 0)
        add(times(src.rowBytes, rows));
      if (groups != 0)
        add(times(src.groupBytes, groups));
      if (columns != 0 || !offset)
        add(indexConst(rewriter, loc, columns * elementBytes));
      if (step)
        *step = offset;
      return offset;
    };
    Value previous;
    int64_t previousRow = 0, previousGroup = 0, previousColumn = 0;
    for (int64_t e = 0; e < values; e += run) {
      SmallVector<int64_t> at = layout.getCoordinates(shape, 0, e);
      // The copy's row in its group, its group (with `groups`), and its
      // source address.
      Value inGroup, from, groupOf;
      if (rowsSplit) {
        // Each copy's address is the previous one's plus a loop-invariant
        // step, one 64-bit add.
        int64_t row = at[0] % perGroup, group = at[0] / perGroup;
        inGroup = addConst(rewriter, loc, tv[0], row);
        if (adaptor.getGroups())
          groupOf = indexConst(rewriter, loc, group);
        from = previous
                   ? offsetPointer(rewriter, loc, previous,
                                   bytesOf(Value(), row - previousRow,
                                           group - previousGroup,
                                           at[1] - previousColumn))
                   : offsetPointer(rewriter, loc, src.start,
                                   bytesOf(blockStart, row, group, at[1]));
        previous = from;
        previousRow = row, previousGroup = group, previousColumn = at[1];
      } else {
        Value r = addConst(rewriter, loc, tv[0], at[0]);
        Value group;
        std::tie(group, inGroup) =
            groupAndRow(rewriter, loc, sourceType, shape[0], r);
        groupOf = group;
        Value offset = arith::AddIOp::create(
            rewriter, loc, blockStart,
            arith::MulIOp::create(rewriter, loc, inGroup, src.rowBytes));
        if (group)
          offset = arith::AddIOp::create(
              rewriter, loc, offset,
              arith::MulIOp::create(rewriter, loc, group, src.groupBytes));
        from = offsetPointer(
            rewriter, loc, src.start,
            addConst(rewriter, loc, offset, at[1] * elementBytes));
      }
      // Whether the run is read: its row below `valid` and its columns
      // within the source's (null: always; a false constant: never).
      Value read;
      auto both = [&](Value cond) {
        read = read ? arith::AndIOp::create(rewriter, loc, read, cond)
                          .getResult()
                    : cond;
      };
      ColumnFit fit = fitColumns(at[1], run, maxColumn, sourceColumns);
      bool pastColumns = fit == ColumnFit::Past;
      if (pastColumns)
        read = arith::ConstantIntOp::create(rewriter, loc,
                                            rewriter.getI1Type(), 0);
      else if (fit == ColumnFit::Straddles)
        both(isColumnInside(rewriter, loc,
                            addConst(rewriter, loc, tv[1], at[1]),
                            sourceColumns));
      if (checked && !pastColumns)
        both(arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                   toI32(inGroup), valid));
      // Groups from `groups` on are zero-filled (their rows unread).
      if (adaptor.getGroups() && !pastColumns)
        both(arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                   groupOf, adaptor.getGroups()));
      auto dstIndex = [&]() {
        return addresses.index(rewriter, loc, kv, op, rewriter,
                               adaptor.getStage(), at[0], at[1]);
      };
      if (elementRuns) {
        Value dst = dstIndex();
        // A plain load (or a zero) and a shared store.
        Type element = buffer.getElementType();
        Value zero = arith::ConstantOp::create(
            rewriter, loc, element, rewriter.getZeroAttr(element));
        Value x;
        if (!read) {
          x = LLVM::LoadOp::create(rewriter, loc, element, from);
        } else if (pastColumns) {
          x = zero;
        } else {
          auto ifRead = scf::IfOp::create(rewriter, loc, TypeRange{element},
                                          read, /*withElse=*/true);
          OpBuilder::InsertionGuard guard(rewriter);
          rewriter.setInsertionPointToStart(ifRead.thenBlock());
          scf::YieldOp::create(
              rewriter, loc,
              ValueRange{LLVM::LoadOp::create(rewriter, loc, element, from)});
          rewriter.setInsertionPointToStart(ifRead.elseBlock());
          scf::YieldOp::create(rewriter, loc, ValueRange{zero});
          x = ifRead.getResult(0);
        }
        LLVM::StoreOp::create(rewriter, loc, x,
                              offsetPointer(rewriter, loc, dstBase, dst));
        continue;
      }
      // A copy read whole reads all its bytes (no source size).
      Value n = read ? arith::SelectOp::create(rewriter, loc, read, full, none)
                           .getResult()
                     : Value();
      Value dst = dstIndex();
      NVVM::CpAsyncOp::create(
          rewriter, loc, offsetPointer(rewriter, loc, dstBase, dst), from,
          rewriter.getI32IntegerAttr(bytes),
          NVVM::LoadCacheModifierKindAttr::get(
              rewriter.getContext(), bytes == 16
                                         ? NVVM::LoadCacheModifierKind::CG
                                         : NVVM::LoadCacheModifierKind::CA),
          n);
    }
    rewriter.eraseOp(op);
    return success();
  }

private:
  /// The thread's start in `source`, built once per source and layout
  /// where the source is defined (outside the KV loop).
  ThreadSource threadSource(AsyncCopyOp op, Value source, ArrayRef<Value> tv,
                            bool rowInStart,
                            ConversionPatternRewriter &rewriter) const {
    auto key =
        std::make_tuple(source, Attribute(op.getLayoutAttr()),
                        Type(op.getBuffer().getType()), unsigned(rowInStart));
    auto it = sources.find(key);
    if (it != sources.end())
      return it->second;

    OpBuilder::InsertionGuard guard(rewriter);
    setInsertionPointAfterSource(rewriter, source, tv);
    Location loc = source.getLoc();
    auto type = cast<MemRefType>(source.getType());
    int64_t rank = type.getRank();
    Value elementBytes = indexConst(
        rewriter, loc, type.getElementType().getIntOrFloatBitWidth() / 8);
    auto meta = memref::ExtractStridedMetadataOp::create(rewriter, loc, source);
    auto strideBytes = [&](int64_t dim) -> Value {
      return arith::MulIOp::create(rewriter, loc, meta.getStrides()[dim],
                                   elementBytes);
    };
    ThreadSource result;
    result.rowBytes = strideBytes(rank - 2);
    if (rank == 3)
      result.groupBytes = strideBytes(0);
    Value elements = arith::AddIOp::create(
        rewriter, loc, meta.getOffset(),
        arith::MulIOp::create(rewriter, loc, tv[1],
                              meta.getStrides()[rank - 1]));
    Value start = arith::MulIOp::create(rewriter, loc, elements, elementBytes);
    if (rowInStart)
      start = arith::AddIOp::create(
          rewriter, loc, start,
          arith::MulIOp::create(rewriter, loc, tv[0], result.rowBytes));
    result.start = offsetPointer(
        rewriter, loc,
        alignedPointer(rewriter, loc, meta.getBaseBuffer()),
        start);
    sources[key] = result;
    return result;
  }

  /// The aligned pointer of the shared buffer `buffer`, once per buffer.
  Value sharedPointer(Value buffer,
                      ConversionPatternRewriter &rewriter) const {
    Value &ptr = shared[buffer];
    if (!ptr) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointAfterValue(buffer);
      ptr = alignedPointer(rewriter, buffer.getLoc(), buffer);
    }
    return ptr;
  }

  mutable llvm::DenseMap<std::tuple<Value, Attribute, Type, unsigned>,
                         ThreadSource>
      sources;
  mutable llvm::DenseMap<Value, Value> shared;
};

struct AsyncWaitLowering : TilePattern<AsyncWaitOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(AsyncWaitOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NVVM::CpAsyncCommitGroupOp::create(rewriter, loc);
    NVVM::CpAsyncWaitGroupOp::create(
        rewriter, loc, rewriter.getI32IntegerAttr(op.getPending()));
    // A warpgroup MMA reads shared memory through the asynchronous proxy,
    // which sees the copies (and stores) this thread made only after a
    // proxy fence; the barrier then orders every thread's.
    if (kv.usesWarpgroupMma(op))
      NVVM::FenceProxyOp::create(
          rewriter, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(rewriter.getContext(),
                                     NVVM::SharedSpace::shared_cta));
    kv.createBarrier(op, rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// tma_load, stage_wait and barrier
//===----------------------------------------------------------------------===//

/// The boxes of a TMA copy between a stage and a tensor map: the map as a
/// descriptor of the box with the swizzle of the box's row (128, 64 or 32
/// bytes) and zeros out of bounds, and per panel of the stage the box's
/// view of shared memory and its coordinates (the inner one a box further
/// each panel).
class TmaBoxes {
public:
  TmaBoxes(ConversionPatternRewriter &rewriter, Location loc, SharedType buffer,
           Value map, ArrayRef<int64_t> box)
      : buffer(buffer), box(box) {
    MLIRContext *ctx = rewriter.getContext();
    // The box as the descriptor's tensor and each view: outermost first.
    SmallVector<int64_t> shape(llvm::reverse(box));
    boxType = MemRefType::get(
        shape, buffer.getElementType(), AffineMap(),
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
    int64_t rowBytes =
        box[0] * (buffer.getElementType().getIntOrFloatBitWidth() / 8);
    auto descType = nvgpu::TensorMapDescriptorType::get(
        ctx, boxType,
        rowBytes == 128  ? nvgpu::TensorMapSwizzleKind::SWIZZLE_128B
        : rowBytes == 64 ? nvgpu::TensorMapSwizzleKind::SWIZZLE_64B
                         : nvgpu::TensorMapSwizzleKind::SWIZZLE_32B,
        nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
        nvgpu::TensorMapOOBKind::OOB_ZERO,
        nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
    desc = UnrealizedConversionCastOp::create(rewriter, loc, descType, map)
               .getResult(0);
  }

  int64_t getStageBytes() const {
    return buffer.getSizeInBytes() / buffer.getStages();
  }
  int64_t getNumBoxes() const { return buffer.getColumns() / box[0]; }
  /// The bytes the boxes move: the stage's, or fewer where a box of groups
  /// leaves the stage's padding rows out.
  int64_t getBoxesBytes() const {
    int64_t elements = 1;
    for (int64_t d : box)
      elements *= d;
    return elements * (buffer.getElementType().getIntOrFloatBitWidth() / 8) *
           getNumBoxes();
  }

  /// Sets the byte offset of stage `stage` of the buffer at `offset` in
  /// the kernel's buffers, at the rewriter's insertion point.
  void setStage(ConversionPatternRewriter &rewriter, Location loc,
                KernelValues &kv, Operation *op, int64_t offset, Value stage) {
    at = arith::AddIOp::create(
        rewriter, loc, indexConst(rewriter, loc, offset),
        arith::MulIOp::create(rewriter, loc, stage,
                              indexConst(rewriter, loc, getStageBytes())));
    if (Value padding = kv.sharedPadding(op, rewriter))
      at = arith::AddIOp::create(rewriter, loc, padding, at);
    shared = kv.dynamicShared(op, rewriter);
  }

  /// Box `p`'s view of the stage (after setStage).
  Value view(OpBuilder &b, Location loc, int64_t p) const {
    return memref::ViewOp::create(
        b, loc, boxType, shared,
        addConst(b, loc, at, p * (getStageBytes() / getNumBoxes())),
        ValueRange{});
  }

  /// Box `p`'s coordinates, of the box at `coordinates`.
  SmallVector<Value> coordinatesOf(OpBuilder &b, Location loc,
                                   ValueRange coordinates, int64_t p) const {
    SmallVector<Value> c(coordinates);
    c[0] = addConst(b, loc, c[0], p * box[0]);
    return c;
  }

  Value desc;

private:
  SharedType buffer;
  ArrayRef<int64_t> box;
  MemRefType boxType;
  Value at, shared;
};

struct TmaLoadLowering : TilePattern<TmaLoadOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(TmaLoadOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value bars = kv.stageBarriers(op, op.getBuffer());
    int64_t offset = kv.allocOffset(op.getBuffer());
    if (!bars || offset < 0)
      return op.emitOpError() << "fills a buffer that is not a placed "
                                 "flash_tile.alloc of its kernel: run "
                                 "flash-tile-allocate-shared first";
    TmaBoxes boxes(
        rewriter, loc,
        kv.operandType<SharedType>(op, 1 + op.getCoordinates().size()),
        adaptor.getMap(), op.getBox());
    // The first thread copies; the other warps branch over it. In a
    // producer region only its warp runs the op, which elects a thread.
    Value issuer = kv.firstThread(op);
    if (kv.inProducer(op))
      issuer = NVVM::ElectSyncOp::create(rewriter, loc, rewriter.getI1Type(),
                                         /*membermask=*/Value());
    auto ifFirst = scf::IfOp::create(rewriter, loc, TypeRange{}, issuer,
                                     /*withElse=*/false);
    rewriter.setInsertionPointToStart(ifFirst.thenBlock());
    Value stage = adaptor.getStage();
    nvgpu::MBarrierArriveExpectTxOp::create(
        rewriter, loc, bars, indexConst(rewriter, loc, boxes.getBoxesBytes()),
        stage, /*predicate=*/Value());
    boxes.setStage(rewriter, loc, kv, op, offset, stage);
    for (int64_t p = 0; p < boxes.getNumBoxes(); ++p) {
      Value dst = boxes.view(rewriter, loc, p);
      nvgpu::TmaAsyncLoadOp::create(
          rewriter, loc, dst, bars, boxes.desc,
          boxes.coordinatesOf(rewriter, loc, adaptor.getCoordinates(), p),
          stage, /*multicastMask=*/Value(), /*predicate=*/Value());
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct TmaStoreLowering : TilePattern<TmaStoreOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(TmaStoreOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    int64_t offset = kv.allocOffset(op.getBuffer());
    if (offset < 0)
      return op.emitOpError() << "stores a buffer that is not a placed "
                                 "flash_tile.alloc of its kernel (or a "
                                 "view of one): run "
                                 "flash-tile-allocate-shared first";
    TmaBoxes boxes(rewriter, loc, kv.operandType<SharedType>(op, 0),
                   adaptor.getMap(), op.getBox());
    // Every thread's writes of the stage, for the asynchronous proxy; then
    // every thread's, for the storing thread.
    NVVM::FenceProxyOp::create(
        rewriter, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    kv.createBarrier(op, rewriter, loc);
    boxes.setStage(rewriter, loc, kv, op, offset, adaptor.getStage());
    auto ifFirst = scf::IfOp::create(rewriter, loc, TypeRange{},
                                     kv.firstThread(op), /*withElse=*/false);
    rewriter.setInsertionPointToStart(ifFirst.thenBlock());
    for (int64_t p = 0; p < boxes.getNumBoxes(); ++p) {
      Value src = boxes.view(rewriter, loc, p);
      nvgpu::TmaAsyncStoreOp::create(
          rewriter, loc, src, boxes.desc,
          boxes.coordinatesOf(rewriter, loc, adaptor.getCoordinates(), p),
          /*predicate=*/Value());
    }
    // The stage may be reused once the stores have read it.
    NVVM::CpAsyncBulkCommitGroupOp::create(rewriter, loc);
    NVVM::CpAsyncBulkWaitGroupOp::create(
        rewriter, loc, rewriter.getI32IntegerAttr(0), rewriter.getUnitAttr());
    rewriter.setInsertionPointAfter(ifFirst);
    rewriter.eraseOp(op);
    return success();
  }
};

/// Waits until mbarrier `stage` of `bars` has completed its phase of
/// `parity`; the suspend-time hint of each try is what CUTLASS's pipelines
/// pass.
void waitForPhase(OpBuilder &b, Location loc, Value bars, Value stage,
                  Value parity) {
  nvgpu::MBarrierTryWaitParityOp::create(b, loc, bars, parity,
                                         indexConst(b, loc, 0x989680), stage);
}

struct StageWaitLowering : TilePattern<StageWaitOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(StageWaitOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Value bars = kv.stageBarriers(op, op.getBuffer());
    if (!bars)
      return op.emitOpError()
             << "waits on a buffer that no flash_tile.tma_load fills";
    waitForPhase(rewriter, op.getLoc(), bars, adaptor.getStage(),
                 adaptor.getParity());
    rewriter.eraseOp(op);
    return success();
  }
};

struct BarrierLowering : TilePattern<BarrierOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(BarrierOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    kv.createBarrier(op, rewriter, op.getLoc());
    rewriter.eraseOp(op);
    return success();
  }
};

struct StageAcquireLowering : TilePattern<StageAcquireOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(StageAcquireOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Value bars = kv.releaseBarriers(op, op.getBuffer());
    if (!bars)
      return op.emitOpError()
             << "waits for a buffer whose stages no flash_tile.stage_release "
                "releases";
    waitForPhase(rewriter, op.getLoc(), bars, adaptor.getStage(),
                 adaptor.getParity());
    rewriter.eraseOp(op);
    return success();
  }
};

struct StageReleaseLowering : TilePattern<StageReleaseOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(StageReleaseOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Value bars = kv.releaseBarriers(op, op.getBuffer());
    assert(bars && "prepare() made the barriers of every released buffer");
    // Every consumer thread arrives; the phase completes with the last.
    Location loc = op.getLoc();
    nvgpu::MBarrierArriveOp::create(
        rewriter, loc, nvgpu::MBarrierTokenType::get(rewriter.getContext()),
        bars, adaptor.getStage());
    rewriter.eraseOp(op);
    return success();
  }
};

/// The threads that meet at a turn's named barrier: the warpgroup waiting
/// for its turn and the one before it, arriving.
constexpr int64_t kTurnBarrierThreads = 2 * flashc::kWarpgroupThreads;

struct TurnWaitLowering : TilePattern<TurnWaitOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(TurnWaitOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value id = kv.turnBarrier(op, rewriter, loc, 0);
    namedBarrier(rewriter, loc, id, kTurnBarrierThreads, /*wait=*/true);
    rewriter.eraseOp(op);
    return success();
  }
};

struct TurnPassLowering : TilePattern<TurnPassOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(TurnPassOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value id = kv.turnBarrier(op, rewriter, loc, 1);
    namedBarrier(rewriter, loc, id, kTurnBarrierThreads, /*wait=*/false);
    rewriter.eraseOp(op);
    return success();
  }
};

struct WarpSpecializeLowering : TilePattern<WarpSpecializeOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(WarpSpecializeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto fn = op->getParentOfType<FunctionOpInterface>();
    IntegerAttr block =
        flash::FlashDialect::BlockAttrHelper(op->getContext()).getAttr(fn);
    if (!block || block.getInt() != op.getBlockThreads())
      return op.emitOpError()
             << "needs a block of " << op.getBlockThreads()
             << " threads (its consumers and a producer warpgroup); its "
                "kernel's flash.block is "
             << (block ? std::to_string(block.getInt()) : "absent");
    // The consumers' warpgroups first, as the layouts were chosen for; the
    // producer's warpgroup last, its first warp copying.
    Value tid = kv.threadId(op);
    Value isConsumer = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ult, tid,
        indexConst(rewriter, loc, op.getConsumerThreads()));
    auto split = scf::IfOp::create(rewriter, loc, TypeRange{}, isConsumer,
                                   /*withElse=*/true);
    rewriter.setInsertionPointToStart(split.thenBlock());
    NVVM::SetMaxRegisterOp::create(rewriter, loc, op.getConsumerRegisters(),
                                   NVVM::SetMaxRegisterAction::increase);
    // Where the consumer warpgroups take turns, the first holds the first
    // one: it arrives on its own barrier for the warpgroup before it. The
    // last turn's pass is an arrival on that barrier too, which the first
    // warpgroup waits for as the consumers end: no arrival is left when
    // the CTA exits.
    bool turns = kv.takeTurns(op);
    Value isFirst;
    auto firstWarpgroup = [&](bool wait) {
      auto first = scf::IfOp::create(rewriter, loc, TypeRange{}, isFirst,
                                     /*withElse=*/false);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(first.thenBlock());
      Value id = arith::ConstantIntOp::create(rewriter, loc,
                                              flashc::kFirstTurnBarrierId, 32);
      namedBarrier(rewriter, loc, id, kTurnBarrierThreads, wait);
    };
    if (turns) {
      isFirst = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, tid,
          indexConst(rewriter, loc, flashc::kWarpgroupThreads));
      firstWarpgroup(/*wait=*/false);
    }
    rewriter.inlineBlockBefore(&op.getConsumersBlock(),
                               split.thenBlock()->getTerminator());
    if (turns) {
      rewriter.setInsertionPoint(split.thenBlock()->getTerminator());
      firstWarpgroup(/*wait=*/true);
    }
    rewriter.setInsertionPointToStart(split.elseBlock());
    NVVM::SetMaxRegisterOp::create(rewriter, loc, op.getProducerRegisters(),
                                   NVVM::SetMaxRegisterAction::decrease);
    Value firstWarp = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ult, tid,
        indexConst(rewriter, loc, op.getConsumerThreads() + 32));
    auto producer = scf::IfOp::create(rewriter, loc, TypeRange{}, firstWarp,
                                      /*withElse=*/false);
    rewriter.inlineBlockBefore(&op.getProducerBlock(),
                               producer.thenBlock()->getTerminator());
    rewriter.eraseOp(op);
    return success();
  }
};

struct AsyncCommitLowering : TilePattern<AsyncCommitOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(AsyncCommitOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::CpAsyncCommitGroupOp>(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// local_load
//===----------------------------------------------------------------------===//

struct LocalLoadLowering : TilePattern<LocalLoadOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(LocalLoadOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TileType result = op.getResult().getType();
    auto buffer = kv.operandType<SharedType>(op, 0);
    auto operand = dyn_cast<OperandLayoutAttr>(result.getLayout());
    if (!operand)
      return op.emitOpError()
             << "lowers to ldmatrix only into an MMA operand layout, not "
             << result.getLayout();
    MmaLayoutAttr mma = operand.getParent();
    if (mma.getInstr()[2] != 16)
      return op.emitOpError() << "lowers only for m16n8k16 operands";
    if (buffer.getElementType().getIntOrFloatBitWidth() != 16)
      return op.emitOpError() << "lowers to ldmatrix only for 16-bit "
                                 "elements";
    int64_t vec = buffer.getLayout().getVector();
    if ((vec * 2) % 16 != 0)
      return op.emitOpError()
             << "needs swizzle chunks of whole 16-byte ldmatrix rows, not "
             << vec << " elements";
    bool isA = operand.getKind() == OperandKind::A;
    if (isA && op.getTranspose())
      return op.emitOpError() << "cannot lower a transposed A operand yet";

    // A batch's matrix b (of warps w with w mod B = b) reads the stage's
    // b-th block of rows (of its columns' rows when transposed); within
    // it, warp w / B is the matrix's warp as in a 2-D tile.
    ArrayRef<int64_t> shape = result.getShape().take_back(2);
    ArrayRef<int64_t> warps = mma.getMatrixWarps();
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr t = getAffineDimExpr(0, ctx);
    int64_t batch = mma.getBatch();
    AffineExpr lane = t % 32, warp = t.floorDiv(32).floorDiv(batch);
    AffineExpr batchRows = (t.floorDiv(32) % batch) *
                           (op.getTranspose() ? shape[1] : shape[0]);
    int64_t threads = 32 * mma.getNumWarps();
    VectorType x4 = VectorType::get({4, 2}, buffer.getElementType());
    VectorType x2 = VectorType::get({2, 2}, buffer.getElementType());
    auto flatType = convertTile(result);
    SmallVector<Value> elems(flatType.getNumElements());

    // The lane addresses of one ldmatrix (row and column of the stage) and
    // the constant offsets of each; `count` matrices (4 or 2), whose values
    // land at `element` of the thread's values.
    auto load = [&](SharedAddresses &addr, int64_t r, int64_t c, bool trans,
                    int64_t count, int64_t element) {
      Value index = addr.index(rewriter, loc, kv, op, rewriter,
                               adaptor.getStage(), r, c);
      Value frag = nvgpu::LdMatrixOp::create(
          rewriter, loc, count == 4 ? x4 : x2, adaptor.getBuffer(),
          ValueRange{index}, trans, static_cast<uint32_t>(count));
      scatterFragment(rewriter, loc, frag, elems, element);
    };

    if (isA) {
      // Matrices 0..3: rows +0 and +8, columns +0 and +8 (a0 .. a7); lane l
      // points at row l % 16, column 8 * (l / 16).
      int64_t mTiles = shape[0] / (16 * warps[0]), kTiles = shape[1] / 16;
      AffineExpr row = batchRows +
                       warp.floorDiv(warps[1]) * (shape[0] / warps[0]) +
                       lane % 16;
      AffineExpr col = lane.floorDiv(16) * 8;
      SharedAddresses addr(buffer, row, col, threads);
      // k-major, the order the multiply uses them in.
      for (int64_t ki = 0; ki < kTiles; ++ki)
        for (int64_t mi = 0; mi < mTiles; ++mi)
          load(addr, mi * 16, ki * 16, /*trans=*/false, 4,
               (mi * kTiles + ki) * 8);
    } else {
      // B (K x N): two n8 tiles per ldmatrix.x4, matrices (k +0, n +0),
      // (k +8, n +0), (k +0, n +8), (k +8, n +8); lane l points at matrix
      // l / 8, its row l % 8.
      int64_t kTiles = shape[0] / 16, nTiles = shape[1] / (8 * warps[1]);
      AffineExpr warpCol = (warp % warps[1]) * (shape[1] / warps[1]);
      AffineExpr kPart = (lane.floorDiv(8) % 2) * 8;
      AffineExpr nPart = lane.floorDiv(16) * 8;
      bool fromColumns = op.getTranspose(); // the stage holds N x K (K rows)
      AffineExpr row = batchRows + (fromColumns ? warpCol + nPart + lane % 8
                                                : kPart + lane % 8);
      AffineExpr col = fromColumns ? kPart : warpCol + nPart;
      SharedAddresses addr(buffer, row, col, threads);
      for (int64_t kt = 0; kt < kTiles; ++kt)
        for (int64_t nt = 0; nt < nTiles; nt += 2) {
          int64_t count = nt + 1 < nTiles ? 4 : 2;
          int64_t r = fromColumns ? nt * 8 : kt * 16;
          int64_t c = fromColumns ? kt * 16 : nt * 8;
          load(addr, r, c, /*trans=*/!fromColumns, count,
               (kt * nTiles + nt) * 4);
        }
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, flatType, elems);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// splat
//===----------------------------------------------------------------------===//

struct SplatLowering : TilePattern<SplatOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(SplatOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(
        op, convertTile(op.getResult().getType()), adaptor.getValue());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// convert_layout
//===----------------------------------------------------------------------===//

/// Replaces `op` by the thread's values of `source` at `sources` (a
/// register gather), or reports `why` when some values live in other
/// threads (no sources).
LogicalResult replaceByGather(Operation *op, Value source,
                              std::optional<SmallVector<int64_t>> sources,
                              StringRef why,
                              ConversionPatternRewriter &rewriter) {
  if (!sources)
    return op->emitOpError() << why;
  rewriter.replaceOpWithNewOp<vector::ShuffleOp>(op, source, source,
                                                 *sources);
  return success();
}

struct ConvertLayoutLowering : TilePattern<ConvertLayoutOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(ConvertLayoutOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    auto from = kv.operandType<TileType>(op, 0);
    TileType to = op.getResult().getType();
    return replaceByGather(
        op, adaptor.getSource(),
        getInThreadPermutation(from.getLayoutInterface(),
                               to.getLayoutInterface(), from.getShape()),
        "moves values between threads; only conversions that keep every "
        "value on its thread lower yet",
        rewriter);
  }
};

//===----------------------------------------------------------------------===//
// mma
//===----------------------------------------------------------------------===//

struct MmaLowering : TilePattern<MmaOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(MmaOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TileType accType = op.getResult().getType();
    auto mma = cast<MmaLayoutAttr>(accType.getLayout());
    if (mma.getInstr()[2] != 16)
      return op.emitOpError() << "lowers only m16n8k16 multiplies";
    auto aType = kv.operandType<TileType>(op, 0);
    // A batch gives each warp one matrix: its values are those of a 2-D
    // multiply of the matrix's shape.
    ArrayRef<int64_t> warps = mma.getMatrixWarps();
    ArrayRef<int64_t> accShape = accType.getShape().take_back(2);
    int64_t mTiles = accShape[0] / (16 * warps[0]);
    int64_t nTiles = accShape[1] / (8 * warps[1]);
    int64_t kTiles = aType.getShape().back() / 16;

    // The operand fragments, each once: A per (m, k) tile, B per (k, n).
    SmallVector<Value> aFrags, bFrags;
    for (int64_t i = 0; i < mTiles * kTiles; ++i)
      aFrags.push_back(fragmentOf(rewriter, loc, adaptor.getA(), i * 8, {4, 2}));
    for (int64_t i = 0; i < kTiles * nTiles; ++i)
      bFrags.push_back(fragmentOf(rewriter, loc, adaptor.getB(), i * 4, {2, 2}));
    VectorType resultType = convertTile(accType);
    SmallVector<Value> out(resultType.getNumElements());
    // k outermost: a k-step's fragments are last used within it (a warp
    // of several row tiles reuses each B fragment across them, which the
    // other order would keep live over the whole multiply), and
    // consecutive mma.sync accumulate into different tiles.
    SmallVector<Value> acc;
    for (int64_t i = 0; i < mTiles * nTiles; ++i)
      acc.push_back(fragmentOf(rewriter, loc, adaptor.getAcc(), i * 4, {2, 2}));
    for (int64_t ki = 0; ki < kTiles; ++ki)
      for (int64_t mi = 0; mi < mTiles; ++mi)
        for (int64_t ni = 0; ni < nTiles; ++ni) {
          Value &c = acc[mi * nTiles + ni];
          c = flash::createMmaSync16816(rewriter, loc,
                                        aFrags[mi * kTiles + ki],
                                        bFrags[ki * nTiles + ni], c);
        }
    for (int64_t i = 0; i < mTiles * nTiles; ++i)
      scatterFragment(rewriter, loc, acc[i], out, i * 4);
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, resultType, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// warpgroup_mma
//===----------------------------------------------------------------------===//

/// For each thread-0 coordinate in `coords`, the index of the value of a
/// tile of `type` that a thread holds there; failure when it holds none.
LogicalResult valueIndices(TileType type,
                           ArrayRef<std::array<int64_t, 2>> coords,
                           SmallVectorImpl<int64_t> &indices) {
  llvm::DenseMap<std::pair<int64_t, int64_t>, int64_t> at;
  for (auto [e, c] : llvm::enumerate(valueOffsets(type)))
    at[{c[0], c[1]}] = e;
  for (auto [r, c] : coords) {
    auto it = at.find({r, c});
    if (it == at.end())
      return failure();
    indices.push_back(it->second);
  }
  return success();
}

/// The 64-bit shared-memory matrix descriptor of the `swizzle`-byte
/// swizzle (128, 64 or 32) whose start address (bytes, in the shared
/// window) is `address`: bits 0-13 the address / 16, 16-29 the leading and
/// 32-45 the stride byte offset / 16, 62-63 the swizzle (1, 2, 3: 128, 64,
/// 32 bytes).
Value matrixDescriptor(OpBuilder &b, Location loc, Value address,
                       int64_t leading, int64_t stride, int64_t swizzle) {
  assert((swizzle == 128 || swizzle == 64 || swizzle == 32) &&
         "a swizzle of 128, 64 or 32 bytes");
  Type i64 = b.getI64Type();
  auto constant = [&](uint64_t v) {
    return arith::ConstantOp::create(
        b, loc, i64, b.getI64IntegerAttr(static_cast<int64_t>(v)));
  };
  Value field = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, address, constant(4)),
      constant(0x3fff));
  uint64_t mode = swizzle == 128 ? 1 : swizzle == 64 ? 2 : 3;
  uint64_t fixed = (uint64_t(leading / 16) << 16) |
                   (uint64_t(stride / 16) << 32) | (mode << 62);
  return arith::OrIOp::create(b, loc, field, constant(fixed));
}

/// What a warpgroup MMA's instructions read, computed before its fence:
/// the accumulator's registers in the instruction's order, and each
/// k-step's A (a descriptor or registers) and B descriptor.
struct PreparedMma {
  Type element;
  bool transB = false, zeroAcc = false;
  SmallVector<Value> acc;
  SmallVector<int64_t> accIndex;
  SmallVector<Value> aDescs, bDescs;
  SmallVector<SmallVector<Value>> aRegs;
  VectorType resultType;
};

/// Prepares `op`'s multiply from its converted operands.
FailureOr<PreparedMma> prepareMma(WarpgroupMmaOp op, Value aValue, Value aStage,
                                  Value bValue, Value bStage, Value accValue,
                                  KernelValues &kv,
                                  ConversionPatternRewriter &rewriter) {
  Location loc = op.getLoc();
  TileType accType = op.getResult().getType();
  // The operands may be converted already: A's kind and B's position
  // come from the stage A has when it is a buffer.
  bool sharedA = static_cast<bool>(op.getAStage());
  auto b = kv.operandType<SharedType>(op, sharedA ? 2 : 1);
  int64_t n = accType.getShape()[1];
  int64_t kSteps =
      (sharedA ? kv.operandType<SharedType>(op, 0).getColumns()
               : kv.operandType<TileType>(op, 0).getShape().back()) /
      16;
  PreparedMma p;
  p.element = b.getElementType();
  // Each buffer's swizzle, in bytes: the row of its 8-row atoms (the
  // placement flash-tile-allocate-shared gave it), and of its panels.
  int64_t elementBytes = p.element.getIntOrFloatBitWidth() / 8;
  auto swizzleOf = [&](SharedType type) {
    return getWarpgroupSwizzleBytes(type.getLayout(), type.getColumns(),
                                    elementBytes);
  };
  int64_t bSwizzle = swizzleOf(b);
  int64_t aSwizzle =
      sharedA ? swizzleOf(kv.operandType<SharedType>(op, 0)) : bSwizzle;
  if (!bSwizzle || !aSwizzle)
    return op.emitOpError() << "reads a buffer without the placement of a "
                               "warpgroup MMA's operand: run "
                               "flash-tile-allocate-shared first";

  // The instruction's accumulator register i of a thread is row
  // 8 * ((i % 4) / 2) and column 8 * (i / 4) + i % 2 from the thread's
  // first (as mma.sync's m16n8 tiles, n8 after n8); A's register j (a
  // pair of 16-bit values) row 8 * (j % 2), column 8 * (j / 2) + {0, 1}
  // of its k-step.
  SmallVector<std::array<int64_t, 2>> accAt;
  for (int64_t i = 0; i < n / 2; ++i)
    accAt.push_back({8 * ((i % 4) / 2), 8 * (i / 4) + i % 2});
  if (failed(valueIndices(accType, accAt, p.accIndex)))
    return op.emitOpError() << "has an accumulator layout that does not "
                               "hold the instruction's registers";
  SmallVector<int64_t> aIndex;
  if (!sharedA) {
    SmallVector<std::array<int64_t, 2>> aAt;
    for (int64_t k = 0; k < kSteps; ++k)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t h = 0; h < 2; ++h)
          aAt.push_back({8 * (j % 2), 16 * k + 8 * (j / 2) + h});
    if (failed(valueIndices(kv.operandType<TileType>(op, 0), aAt, aIndex)))
      return op.emitOpError() << "has an A layout that does not hold the "
                                 "instruction's registers";
  }

  // Shared addresses, bytes in the shared window, as i64.
  Type i64 = rewriter.getI64Type();
  auto stageStart = [&](Value buffer, Value stage, SharedType type) {
    Value at =
        memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer);
    Value bytes = arith::MulIOp::create(
        rewriter, loc, stage,
        indexConst(rewriter, loc, type.getSizeInBytes() / type.getStages()));
    return arith::IndexCastOp::create(
        rewriter, loc, i64, arith::AddIOp::create(rewriter, loc, at, bytes));
  };
  auto plus = [&](Value v, int64_t c) -> Value {
    if (c == 0)
      return v;
    return arith::AddIOp::create(
        rewriter, loc, v,
        arith::ConstantOp::create(rewriter, loc, i64,
                                  rewriter.getI64IntegerAttr(c)));
  };
  // A buffer's rows are panels of its swizzle's row, W bytes (one, or
  // several stored one after the other): a panel of a stage is its rows x
  // W bytes.
  auto panelBytes = [&](SharedType type, int64_t swizzle) {
    return type.getRows() * swizzle;
  };
  // The bytes from a K-major operand's first k-step to its k-th: 32 a
  // step within a panel's rows, whole panels beyond.
  auto kMajorStep = [&](SharedType type, int64_t swizzle, int64_t k) {
    int64_t bytes = 32 * k;
    return bytes / swizzle * panelBytes(type, swizzle) + bytes % swizzle;
  };
  // B: K rows of N (N-major: k-steps of 16 rows, 8-row groups 8 W bytes
  // apart, panels of W / 2 columns a panel apart), or N rows of K
  // (K-major, 8-row groups 8 W bytes apart).
  Value bStart = stageStart(bValue, bStage, b);
  p.transB = !op.getTransposeB();
  int64_t bLeading = p.transB ? panelBytes(b, bSwizzle) : 16;
  Value bDesc =
      matrixDescriptor(rewriter, loc, bStart, bLeading, 8 * bSwizzle, bSwizzle);
  auto bStep = [&](int64_t k) {
    return p.transB ? 16 * bSwizzle * k : kMajorStep(b, bSwizzle, k);
  };
  Value aDesc;
  SharedType a;
  if (sharedA) {
    // Each warpgroup's 64 rows of A.
    a = kv.operandType<SharedType>(op, 0);
    Value aStart = stageStart(aValue, aStage, a);
    AffineExpr t = getAffineDimExpr(0, rewriter.getContext());
    Value group =
        kv.atEntry(op, {t.floorDiv(128) * (64 * aSwizzle)}, rewriter)[0];
    aStart = arith::AddIOp::create(
        rewriter, loc, aStart,
        arith::IndexCastOp::create(rewriter, loc, i64, group));
    aDesc = matrixDescriptor(rewriter, loc, aStart, 16, 8 * aSwizzle, aSwizzle);
  }

  // An accumulator of zeros (S's) is not read: the first k-step does not
  // scale it in, and no instruction writes its registers.
  auto splat = op.getAcc().getDefiningOp<SplatOp>();
  p.zeroAcc = splat && matchPattern(splat.getValue(), m_AnyZeroFloat());
  for (int64_t e : p.accIndex)
    p.acc.push_back(p.zeroAcc
                        ? Value()
                        : Value(vector::ExtractOp::create(
                              rewriter, loc, accValue, ArrayRef<int64_t>{e})));
  // A's registers, every k-step's (pairs of 16-bit values), and the
  // descriptors' addresses, all before the fence: a register the
  // multiplies read that is written after it would make ptxas fence again
  // before that multiply.
  auto pairType = VectorType::get({2}, p.element);
  p.aRegs.resize(kSteps);
  for (int64_t k = 0; k < kSteps; ++k) {
    for (int64_t j = 0; !aDesc && j < 4; ++j) {
      Value lo = vector::ExtractOp::create(
          rewriter, loc, aValue, ArrayRef<int64_t>{aIndex[(k * 4 + j) * 2]});
      Value hi = vector::ExtractOp::create(
          rewriter, loc, aValue,
          ArrayRef<int64_t>{aIndex[(k * 4 + j) * 2 + 1]});
      Value pair = vector::FromElementsOp::create(rewriter, loc, pairType,
                                                  ValueRange{lo, hi});
      p.aRegs[k].push_back(
          LLVM::BitcastOp::create(rewriter, loc, rewriter.getI32Type(), pair));
    }
    // Descriptor addresses count 16 bytes: a step adds step / 16.
    p.aDescs.push_back(aDesc ? plus(aDesc, kMajorStep(a, aSwizzle, k) / 16)
                             : Value());
    p.bDescs.push_back(plus(bDesc, bStep(k) / 16));
  }
  p.resultType = convertTile(accType);
  return p;
}

/// One block of inline PTX that fences the registers, issues each
/// multiply's k-steps (`wgmma.mma_async` m64nNk16 with f32 accumulators: A
/// as a descriptor or four registers of f16 pairs, B as a descriptor,
/// N-major when `transB`, the PTX's imm-trans-b = 1) and commits each
/// multiply as a group of its own; with `wait`, it then waits for them
/// all. Every register the multiplies read is an operand of the block, so
/// that whatever copies them does so before the fence (ptxas serializes
/// every multiply of a kernel in which an instruction writes a multiply's
/// register between its fence and its wait). An accumulator of zeros
/// (`zeroAcc`) is not read: its first k-step does not scale it in.
/// Returns each multiply's accumulator registers, in its instruction's
/// order.
SmallVector<SmallVector<Value>> warpgroupMmas(OpBuilder &b, Location loc,
                                              ArrayRef<PreparedMma *> mmas,
                                              bool wait) {
  std::string text = "{\n.reg .pred p<2>;\nsetp.ne.b32 p0, 0, 0;\n"
                     "setp.ne.b32 p1, 1, 0;\nwgmma.fence.sync.aligned;\n";
  std::string constraints;
  SmallVector<Value> operands;
  SmallVector<int64_t> firstOutput;
  int64_t outputs = 0;
  for (PreparedMma *p : mmas) {
    firstOutput.push_back(outputs);
    for (size_t i = 0; i < p->acc.size(); ++i)
      constraints += (outputs + i ? ",=f" : "=f");
    outputs += p->acc.size();
  }
  int64_t next = outputs;
  for (auto [m, p] : llvm::enumerate(mmas)) {
    if (p->zeroAcc)
      continue;
    for (size_t i = 0; i < p->acc.size(); ++i) {
      constraints += "," + std::to_string(firstOutput[m] + i);
      operands.push_back(p->acc[i]);
      ++next;
    }
  }
  for (auto [m, p] : llvm::enumerate(mmas)) {
    int64_t count = p->acc.size();
    std::string type = p->element.isF16() ? "f16" : "bf16";
    std::string accList = "{";
    for (int64_t i = 0; i < count; ++i)
      accList += (i ? ", $" : "$") + std::to_string(firstOutput[m] + i);
    accList += "}";
    for (size_t k = 0; k < p->bDescs.size(); ++k) {
      text += "wgmma.mma_async.sync.aligned.m64n" + std::to_string(2 * count) +
              "k16.f32." + type + "." + type + " " + accList + ", ";
      if (p->aDescs[k]) {
        text += "$" + std::to_string(next++);
        constraints += ",l";
        operands.push_back(p->aDescs[k]);
      } else {
        text += "{";
        for (auto [i, r] : llvm::enumerate(p->aRegs[k])) {
          text += (i ? ", $" : "$") + std::to_string(next++);
          constraints += ",r";
          operands.push_back(r);
        }
        text += "}";
      }
      text += ", $" + std::to_string(next++);
      constraints += ",l";
      operands.push_back(p->bDescs[k]);
      text += (p->zeroAcc && k == 0) ? ", p0, 1, 1" : ", p1, 1, 1";
      // imm-trans-a exists for an A descriptor only.
      text += p->aDescs[k] ? ", 0" : "";
      text += p->transB ? ", 1;\n" : ", 0;\n";
    }
    text += "wgmma.commit_group.sync.aligned;\n";
  }
  if (wait)
    text += "wgmma.wait_group.sync.aligned 0;\n";
  text += "}\n";
  MLIRContext *ctx = b.getContext();
  auto result = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(outputs, b.getF32Type()));
  auto asmOp = LLVM::InlineAsmOp::create(
      b, loc, result, operands, text, constraints, /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  SmallVector<SmallVector<Value>> out;
  for (auto [m, p] : llvm::enumerate(mmas)) {
    out.emplace_back();
    for (size_t i = 0; i < p->acc.size(); ++i)
      out.back().push_back(LLVM::ExtractValueOp::create(b, loc, asmOp.getRes(),
                                                        firstOutput[m] + i));
  }
  return out;
}

/// A multiply's result from its accumulator registers.
FailureOr<Value> mmaResult(WarpgroupMmaOp op, PreparedMma &p,
                           ArrayRef<Value> acc,
                           ConversionPatternRewriter &rewriter) {
  SmallVector<Value> out(p.resultType.getNumElements());
  for (auto [i, e] : llvm::enumerate(p.accIndex))
    out[e] = acc[i];
  if (llvm::any_of(out, [](Value v) { return !v; }))
    return op.emitOpError() << "has an accumulator layout whose values "
                               "the instruction does not all write";
  return Value(
      vector::FromElementsOp::create(rewriter, op.getLoc(), p.resultType, out));
}

struct WarpgroupMmaLowering : TilePattern<WarpgroupMmaOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(WarpgroupMmaOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    // Started with the multiply before it (below).
    if (Value done = kv.startedMma(op)) {
      rewriter.replaceOp(op, done);
      return success();
    }
    Location loc = op.getLoc();
    FailureOr<PreparedMma> self =
        prepareMma(op, adaptor.getA(), adaptor.getAStage(), adaptor.getB(),
                   adaptor.getBStage(), adaptor.getAcc(), kv, rewriter);
    if (failed(self))
      return failure();
    // An async multiply that another async multiply follows (S, then the
    // previous block's P V): both start in one block, under one fence,
    // each its own group.
    auto next = dyn_cast_or_null<WarpgroupMmaOp>(op->getNextNode());
    if (!op.getAsync() || !next || !next.getAsync())
      next = {};
    FailureOr<PreparedMma> second = failure();
    SmallVector<PreparedMma *> mmas{&*self};
    if (next) {
      auto remap = [&](Value v) {
        return v ? rewriter.getRemappedValue(v) : Value();
      };
      second = prepareMma(next, remap(next.getA()), remap(next.getAStage()),
                          remap(next.getB()), remap(next.getBStage()),
                          remap(next.getAcc()), kv, rewriter);
      if (failed(second))
        return failure();
      mmas.push_back(&*second);
    }
    // A synchronous multiply waits in the same block: nothing reads its
    // registers before the wait. An async one is waited for by its
    // flash_tile.warpgroup_wait, which its A registers live until.
    SmallVector<SmallVector<Value>> acc =
        warpgroupMmas(rewriter, loc, mmas, /*wait=*/!op.getAsync());
    FailureOr<Value> result = mmaResult(op, *self, acc[0], rewriter);
    if (failed(result))
      return failure();
    if (op.getAsync())
      for (ArrayRef<Value> regs : self->aRegs)
        llvm::append_range(kv.asyncOperands(op), regs);
    if (next) {
      FailureOr<Value> nextResult = mmaResult(next, *second, acc[1], rewriter);
      if (failed(nextResult))
        return failure();
      for (ArrayRef<Value> regs : second->aRegs)
        llvm::append_range(kv.asyncOperands(next), regs);
      kv.setStartedMma(next, *nextResult);
    }
    rewriter.replaceOp(op, *result);
    return success();
  }
};

struct WarpgroupWaitLowering : TilePattern<WarpgroupWaitOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(WarpgroupWaitOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    // `wgmma.wait_group N` as inline PTX through which the accumulator's
    // registers pass (tied): what reads them after the wait reads the
    // asm's results, which no compiler moves above it, as it could a read
    // of the multiply's own results past a wait that does not name them.
    Location loc = op.getLoc();
    Value acc = adaptor.getPendingResult();
    auto type = cast<VectorType>(acc.getType());
    int64_t count = type.getNumElements();
    std::string constraints;
    SmallVector<Value> values;
    for (int64_t i = 0; i < count; ++i) {
      constraints += (i ? ",=f" : "=f");
      values.push_back(
          vector::ExtractOp::create(rewriter, loc, acc, ArrayRef<int64_t>{i}));
    }
    for (int64_t i = 0; i < count; ++i)
      constraints += "," + std::to_string(i);
    // The registers of A (P) the multiply reads until now: as inputs of
    // the wait, they live until it, and no value written meanwhile (the
    // next block's P) takes them.
    SmallVector<Value> operands(values);
    if (auto mma = op.getPendingResult().getDefiningOp<WarpgroupMmaOp>())
      for (Value r : kv.asyncOperands(mma)) {
        constraints += ",r";
        operands.push_back(r);
      }
    MLIRContext *ctx = rewriter.getContext();
    auto result = LLVM::LLVMStructType::getLiteral(
        ctx, SmallVector<Type>(count, rewriter.getF32Type()));
    auto asmOp = LLVM::InlineAsmOp::create(
        rewriter, loc, result, operands,
        "wgmma.wait_group.sync.aligned " + std::to_string(op.getPending()) +
            ";",
        constraints, /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::tailcallkind::TailCallKind::None,
        LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
        /*operand_attrs=*/ArrayAttr());
    SmallVector<Value> out;
    for (int64_t i = 0; i < count; ++i)
      out.push_back(
          LLVM::ExtractValueOp::create(rewriter, loc, asmOp.getRes(), i));
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, type, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

/// max(x, y), the number when one is NaN (max.f32): arith.maxnumf would
/// become a libdevice call.
Value maxNum(OpBuilder &b, Location loc, Value x, Value y) {
  return LLVM::MaxNumOp::create(b, loc, x, y);
}

/// The maximum or sum of `x` and `y`, as a reduction of `kind` combines.
Value combineValues(OpBuilder &b, Location loc, ReduceKind kind, Value x,
                    Value y) {
  return kind == ReduceKind::Max
             ? maxNum(b, loc, x, y)
             : Value(arith::AddFOp::create(b, loc, x, y));
}

/// A thread's values of `source` (a converted tile) combined into `count`
/// partials, value e into partial `targets[e]`: their maximum or sum. A
/// partial no value lands in is null.
SmallVector<Value> combineWithinThread(OpBuilder &b, Location loc,
                                       Value source, ArrayRef<int64_t> targets,
                                       int64_t count, ReduceKind kind) {
  SmallVector<Value> partial(count);
  for (auto [e, j] : llvm::enumerate(targets)) {
    Value x = vector::ExtractOp::create(b, loc, source,
                                        ArrayRef<int64_t>{int64_t(e)});
    Value &p = partial[j];
    p = p ? combineValues(b, loc, kind, p, x) : x;
  }
  return partial;
}

struct ReduceLowering : TilePattern<ReduceOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(ReduceOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto source = kv.operandType<TileType>(op, 0);
    TileType result = op.getResult().getType();
    auto slice = cast<SliceLayoutAttr>(result.getLayout());
    auto mma = dyn_cast<MmaLayoutAttr>(source.getLayout());
    if (!mma)
      return op.emitOpError() << "lowers only reductions of MMA accumulators";
    int64_t dim = slice.getDim();
    // The matrix dimension reduced (0: rows, 1: columns).
    int64_t matrixDim = dim - (mma.isBatched() ? 1 : 0);
    if (mma.getMatrixWarps()[matrixDim] != 1)
      return op.emitOpError()
             << "reduces across " << mma.getMatrixWarps()[matrixDim]
             << " warps; only reductions within a warp lower yet";
    // Which value of the result each of the thread's values goes to: the
    // same kept coordinates (thread 0's coordinates suffice, the thread
    // part being the same for both layouts).
    SmallVector<int64_t> target;
    if (failed(getSliceSlots(source, result, dim, target)))
      return op.emitOpError() << "has a value with no place in the result";
    VectorType resultType = convertTile(result);
    SmallVector<Value> partial =
        combineWithinThread(rewriter, loc, adaptor.getSource(), target,
                            resultType.getNumElements(), op.getKind());
    // Lanes that share a row differ in lane % 4; a column, in lane / 4.
    SmallVector<int32_t> offsets = matrixDim == 1
                                       ? SmallVector<int32_t>{1, 2}
                                       : SmallVector<int32_t>{4, 8, 16};
    for (Value &p : partial)
      for (int32_t offset : offsets)
        p = combineValues(rewriter, loc, op.getKind(), p,
                          gpu::ShuffleOp::create(rewriter, loc, p, offset, 32,
                                                 gpu::ShuffleMode::XOR)
                              .getShuffleResult());
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, resultType,
                                                        partial);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// fold
//===----------------------------------------------------------------------===//

struct FoldLowering : TilePattern<FoldOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(FoldOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto source = kv.operandType<TileType>(op, 0);
    TileType result = op.getResult().getType();
    std::optional<SmallVector<int64_t>> targets =
        getFoldTargets(source.getLayoutInterface(), source.getShape(),
                       result.getShape());
    if (!targets)
      return op.emitOpError()
             << "folds values that other threads hold; only folds within "
                "each thread lower";
    SmallVector<Value> partial = combineWithinThread(
        rewriter, loc, adaptor.getSource(), *targets,
        convertTile(result).getNumElements(), op.getKind());
    if (llvm::is_contained(partial, Value()))
      return op.emitOpError()
             << "has a result value that no value of the source folds into";
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, convertTile(result), partial);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// broadcast and batch_reduce
//===----------------------------------------------------------------------===//

/// Whether the thread owns the values it holds of `layout` (of each
/// element's holders, the one that writes it), or null when every thread
/// owns its values.
Value ownerOf(Operation *op, LayoutAttrInterface layout, KernelValues &kv,
              RewriterBase &rewriter) {
  SmallVector<AffineExpr> conditions = getOwnerConditions(layout);
  if (conditions.empty())
    return Value();
  Location loc = op->getLoc();
  Value owner;
  Value zero = indexConst(rewriter, loc, 0);
  for (Value c : kv.atEntry(op, conditions, rewriter)) {
    Value isZero = arith::CmpIOp::create(rewriter, loc,
                                         arith::CmpIPredicate::eq, c, zero);
    owner = owner ? arith::AndIOp::create(rewriter, loc, owner, isZero)
                        .getResult()
                  : isZero;
  }
  return owner;
}

struct BroadcastLowering : TilePattern<BroadcastOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(BroadcastOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    auto source = kv.operandType<TileType>(op, 0);
    TileType result = op.getResult().getType();
    return replaceByGather(
        op, adaptor.getSource(),
        getBroadcastSources(source.getLayoutInterface(), source.getShape(),
                            result.getLayoutInterface(), result.getShape()),
        "needs values that other threads hold; only broadcasts whose every "
        "thread holds its matrix lower yet",
        rewriter);
  }
};

/// Where batch_reduce puts the elements of its batch in the scratch (f32):
/// row-major, with a row's columns XOR-swizzled by its row in runs of 8
/// (32 bytes). Without the swizzle, rows of a multiple of 32 columns all
/// start in bank 0 (of 16 modulo 32, in two banks), and the 8 rows x 4
/// column pairs an accumulator's store or load covers take 8 (4)
/// wavefronts instead of 2: column c of row r goes to c xor 8 f(r), with
/// f(r) = r mod 4 for rows of a multiple of 32 columns, (r / 2) mod 2 for
/// an odd multiple of 16, and 0 otherwise (and for a batch of vectors, whose
/// rows are its matrices). The
/// xor keeps a column's low three bits, so an aligned run of up to 8
/// columns stays contiguous.
struct ScratchPlace {
  ScratchPlace(ArrayRef<int64_t> shape) : shape(shape) {
    int64_t columns = shape.back();
    if (shape.size() >= 3 && columns % 16 == 0) {
      rowShift = columns % 32 == 0 ? 0 : 1;
      rowMask = columns % 32 == 0 ? 3 : 1;
    }
  }

  /// The affine expressions a thread's part of the place needs, of its
  /// offsets `thread` (one per dimension): the linear offset of its row
  /// (every dimension but the last), its row and its column.
  SmallVector<AffineExpr> threadExprs(ArrayRef<AffineExpr> thread) const {
    MLIRContext *ctx = thread.front().getContext();
    AffineExpr lead = getAffineConstantExpr(0, ctx);
    for (size_t d = 0; d + 1 < shape.size(); ++d)
      lead = lead * shape[d] + thread[d];
    AffineExpr row = thread[shape.size() - 2];
    return {lead * shape.back(), row, thread.back()};
  }

  /// The index of the element at the thread's part (`parts`, the values of
  /// threadExprs) plus the constant coordinates `c`. The swizzle takes the
  /// row modulo 4 and flips column bits below `period` (32 or 16), so
  /// (t + c) xor m = ((t + c mod period) xor m) + (c - c mod period): the
  /// thread's swizzled part depends on c modulo those only, a few values
  /// shared by all of its elements, and the rest of c is an offset.
  Value index(OpBuilder &b, Location loc, ArrayRef<Value> parts,
              ArrayRef<int64_t> c) const {
    int64_t lead = 0;
    for (size_t d = 0; d + 1 < shape.size(); ++d)
      lead = lead * shape[d] + c[d];
    int64_t offset = lead * shape.back();
    int64_t column = c.back();
    Value low = parts[2];
    if (rowMask) {
      int64_t period = 8 * (rowMask + 1);
      Value row = addConst(b, loc, parts[1], c[shape.size() - 2] % 4);
      if (rowShift)
        row = arith::ShRUIOp::create(b, loc, row, indexConst(b, loc, rowShift));
      Value bits =
          arith::AndIOp::create(b, loc, row, indexConst(b, loc, rowMask));
      bits = arith::ShLIOp::create(b, loc, bits, indexConst(b, loc, 3));
      low = arith::XOrIOp::create(b, loc,
                                  addConst(b, loc, low, column % period), bits);
      column -= column % period;
    }
    return addConst(b, loc, arith::AddIOp::create(b, loc, parts[0], low),
                    offset + column);
  }

  ArrayRef<int64_t> shape;
  int64_t rowShift = 0, rowMask = 0;
};

/// The runs of a thread's values of `type` along its last dimension: values
/// of equal other coordinates and consecutive columns, up to 4 (16 bytes of
/// f32) and aligned to their length for every thread (`column`: the
/// thread's column offset). Each run lists the values' indices.
SmallVector<SmallVector<int64_t>> getColumnRuns(TileType type,
                                                AffineExpr column) {
  int64_t threadAlign = getThreadColumnAlignment(type, column, 4);
  SmallVector<SmallVector<int64_t>> coords = valueOffsets(type);
  SmallVector<int64_t> order = llvm::to_vector(
      llvm::seq<int64_t>(0, static_cast<int64_t>(coords.size())));
  llvm::sort(order,
             [&](int64_t a, int64_t b) { return coords[a] < coords[b]; });
  auto follows = [&](int64_t a, int64_t b) {
    ArrayRef<int64_t> x = coords[a], y = coords[b];
    return x.drop_back() == y.drop_back() && y.back() == x.back() + 1;
  };
  SmallVector<SmallVector<int64_t>> runs;
  for (size_t i = 0; i < order.size();) {
    int64_t n = threadAlign;
    while (n > 1) {
      bool fits = coords[order[i]].back() % n == 0 && i + n <= order.size();
      for (int64_t k = 1; fits && k < n; ++k)
        fits = follows(order[i + k - 1], order[i + k]);
      if (fits)
        break;
      n /= 2;
    }
    runs.emplace_back(order.begin() + i, order.begin() + i + n);
    i += n;
  }
  return runs;
}

/// Through shared memory: every thread writes its values of the batch at
/// their place in the scratch (ScratchPlace), a run of columns at a time,
/// then reads, for each run of its values of the result, the batch's
/// values at that place and combines them. A barrier before (the scratch's
/// last readers are done) and after the writes.
struct BatchReduceLowering : TilePattern<BatchReduceOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(BatchReduceOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto source = kv.operandType<TileType>(op, 0);
    TileType result = op.getResult().getType();
    auto alloc = op.getScratch().getDefiningOp<AllocOp>();
    if (!alloc || !alloc.getOffset())
      return op.emitOpError() << "needs its scratch from a flash_tile.alloc "
                                 "with an offset (flash-tile-allocate-shared)";
    Type f32 = rewriter.getF32Type();
    ArrayRef<int64_t> shape = source.getShape();
    int64_t matrix = 1;
    for (int64_t extent : shape.drop_front())
      matrix *= extent;
    Value scratch = memref::ViewOp::create(
        rewriter, loc,
        MemRefType::get({shape[0] * matrix}, f32, AffineMap(),
                        gpu::AddressSpaceAttr::get(
                            rewriter.getContext(),
                            gpu::AddressSpace::Workgroup)),
        kv.dynamicShared(op, rewriter),
        indexConst(rewriter, loc, *alloc.getOffset()), ValueRange{});
    // The batch as one tile of the source's shape: its matrices are the
    // leading dimension's rows.
    ScratchPlace place(shape);
    auto vectorOf = [&](int64_t n) { return VectorType::get({n}, f32); };

    kv.createBarrier(op, rewriter, loc);
    {
      // Of a value's holders (the lanes of a quad share a row's value),
      // its owner writes.
      OpBuilder::InsertionGuard guard(rewriter);
      if (Value owner = ownerOf(op, source.getLayoutInterface(), kv,
                                rewriter)) {
        auto ifOwner = scf::IfOp::create(rewriter, loc, owner,
                                         /*withElse=*/false);
        rewriter.setInsertionPointToStart(ifOwner.thenBlock());
      }
      SmallVector<AffineExpr> thread =
          getThreadOffsets(source.getLayoutInterface(), shape);
      SmallVector<Value> parts =
          kv.atEntry(op, place.threadExprs(thread), rewriter);
      SmallVector<SmallVector<int64_t>> coords = valueOffsets(source);
      for (ArrayRef<int64_t> run : getColumnRuns(source, thread.back())) {
        SmallVector<Value> xs;
        for (int64_t e : run)
          xs.push_back(vector::ExtractOp::create(
              rewriter, loc, adaptor.getSource(), ArrayRef<int64_t>{e}));
        Value at = place.index(rewriter, loc, parts, coords[run.front()]);
        int64_t n = run.size();
        if (n == 1) {
          memref::StoreOp::create(rewriter, loc, xs[0], scratch,
                                  ValueRange{at});
          continue;
        }
        vector::StoreOp::create(
            rewriter, loc,
            vector::FromElementsOp::create(rewriter, loc, vectorOf(n), xs),
            scratch, ValueRange{at}, /*nontemporal=*/false,
            llvm::MaybeAlign(4 * n));
      }
    }
    kv.createBarrier(op, rewriter, loc);

    SmallVector<AffineExpr> thread =
        getThreadOffsets(result.getLayoutInterface(), result.getShape());
    // The result's coordinates with the batch in front.
    thread.insert(thread.begin(), getAffineConstantExpr(0, op.getContext()));
    SmallVector<Value> parts =
        kv.atEntry(op, place.threadExprs(thread), rewriter);
    SmallVector<SmallVector<int64_t>> coords = valueOffsets(result);
    SmallVector<Value> values(coords.size());
    for (ArrayRef<int64_t> run : getColumnRuns(result, thread.back())) {
      int64_t n = run.size();
      SmallVector<Value> acc(n);
      for (int64_t b = 0; b < shape[0]; ++b) {
        SmallVector<int64_t> c = {b};
        llvm::append_range(c, coords[run.front()]);
        Value at = place.index(rewriter, loc, parts, c);
        Value v = n == 1 ? Value()
                         : vector::LoadOp::create(rewriter, loc, vectorOf(n),
                                                  scratch, ValueRange{at},
                                                  /*nontemporal=*/false,
                                                  llvm::MaybeAlign(4 * n));
        for (int64_t k = 0; k < n; ++k) {
          Value x = n == 1 ? memref::LoadOp::create(rewriter, loc, scratch,
                                                    ValueRange{at})
                                 .getResult()
                           : vector::ExtractOp::create(rewriter, loc, v,
                                                       ArrayRef<int64_t>{k})
                                 .getResult();
          acc[k] = acc[k]
                       ? combineValues(rewriter, loc, op.getKind(), acc[k], x)
                       : x;
        }
      }
      for (int64_t k = 0; k < n; ++k)
        values[run[k]] = acc[k];
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, convertTile(result), values);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// map
//===----------------------------------------------------------------------===//

struct MapLowering : TilePattern<MapOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(MapOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TileType result = op.getResult().getType();
    SmallVector<SmallVector<int64_t>> coords = valueOffsets(result);

    // For each input, which of its values goes with each result value.
    SmallVector<SmallVector<int64_t>> pick;
    for (unsigned i = 0, n = op.getInputs().size(); i < n; ++i) {
      auto type = kv.operandType<TileType>(op, i);
      SmallVector<int64_t> &p = pick.emplace_back();
      // An input of the result's shape and layout (its element type may
      // differ) goes value by value.
      if (type.getShape() == result.getShape() &&
          type.getLayout() == result.getLayout()) {
        for (int64_t e = 0, n = coords.size(); e < n; ++e)
          p.push_back(e);
        continue;
      }
      // A slice broadcast along its removed dimension.
      auto slice = cast<SliceLayoutAttr>(type.getLayout());
      if (failed(getSliceSlots(result, type, slice.getDim(), p)))
        return op.emitOpError() << "broadcasts a slice that does not hold "
                                   "the rows its result needs";
    }

    SmallVector<Value> thread;
    if (op.getIndices())
      thread = kv.atEntry(
          op, getThreadOffsets(result.getLayoutInterface(), result.getShape()),
          rewriter);
    Block &body = op.getBody().front();
    SmallVector<Value> values;
    for (auto [e, c] : llvm::enumerate(coords)) {
      IRMapping mapping;
      unsigned arg = 0;
      if (op.getIndices())
        for (auto [d, v] : llvm::enumerate(thread))
          mapping.map(body.getArgument(arg++), addConst(rewriter, loc, v, c[d]));
      for (auto [i, input] : llvm::enumerate(adaptor.getInputs()))
        mapping.map(body.getArgument(arg++),
                    vector::ExtractOp::create(rewriter, loc, input,
                                              ArrayRef<int64_t>{pick[i][e]}));
      for (Operation &inner : body.without_terminator())
        rewriter.clone(inner, mapping);
      values.push_back(
          mapping.lookupOrDefault(cast<YieldOp>(body.getTerminator()).getValue()));
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, convertTile(result), values);
    return success();
  }
};

/// `rescale`: each value times its row's factor, in a branch that a thread
/// whose factors are all 1 skips (its values stay as they are).
struct RescaleLowering : TilePattern<RescaleOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(RescaleOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TileType acc = op.getAcc().getType();
    auto factor = kv.operandType<TileType>(op, 1);
    SmallVector<int64_t> pick;
    if (failed(getSliceSlots(acc, factor, acc.getRank() - 1, pick)))
      return op.emitOpError() << "takes factors that do not hold the rows of "
                                 "its accumulator's values";
    VectorType type = convertTile(acc);
    Value one = arith::ConstantOp::create(rewriter, loc,
                                          rewriter.getF32FloatAttr(1.0f));
    // The thread's factors, and whether any of them is not 1.
    SmallVector<Value> factors;
    Value any;
    for (int64_t i = 0, n = convertTile(factor).getNumElements(); i < n; ++i) {
      factors.push_back(vector::ExtractOp::create(
          rewriter, loc, adaptor.getFactor(), ArrayRef<int64_t>{i}));
      Value notOne = arith::CmpFOp::create(
          rewriter, loc, arith::CmpFPredicate::UNE, factors.back(), one);
      any = any ? arith::OrIOp::create(rewriter, loc, any, notOne) : notOne;
    }
    auto ifAny = scf::IfOp::create(rewriter, loc, TypeRange{type}, any,
                                   /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(ifAny.thenBlock());
    SmallVector<Value> values;
    for (int64_t e = 0, n = type.getNumElements(); e < n; ++e)
      values.push_back(arith::MulFOp::create(
          rewriter, loc,
          vector::ExtractOp::create(rewriter, loc, adaptor.getAcc(),
                                    ArrayRef<int64_t>{e}),
          factors[pick[e]]));
    scf::YieldOp::create(
        rewriter, loc,
        ValueRange{vector::FromElementsOp::create(rewriter, loc, type, values)
                       .getResult()});
    rewriter.setInsertionPointToStart(ifAny.elseBlock());
    scf::YieldOp::create(rewriter, loc, ValueRange{adaptor.getAcc()});
    rewriter.replaceOp(op, ifAny.getResults());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// load and store
//===----------------------------------------------------------------------===//

/// How a thread's values of a tile meet the rows of a global matrix: by
/// row, and in each row the accesses, runs of consecutive columns that are
/// one vector load or store.
struct RowAccesses {
  struct Access {
    int64_t column;                 // the first column's constant part
    SmallVector<int64_t> elements;  // the thread's values, in column order
  };
  int64_t row; // the row's constant part
  SmallVector<Access> accesses;
};

/// The accesses of a thread's values of `type`, each at most `alignment`
/// bytes (and 16) and aligned to its size: a run's start is aligned when
/// its constant part and every thread's column offset (`column`, of the
/// thread index) are multiples of the run.
SmallVector<RowAccesses> getRowAccesses(TileType type, AffineExpr column,
                                        std::optional<int64_t> alignment) {
  int64_t elementBytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t maxRun = std::max<int64_t>(
      1, std::min<int64_t>(alignment.value_or(elementBytes), 16) /
             elementBytes);
  int64_t threadAlign = getThreadColumnAlignment(type, column, maxRun);
  SmallVector<SmallVector<int64_t>> coords = valueOffsets(type);
  llvm::MapVector<int64_t, SmallVector<std::pair<int64_t, int64_t>>> byRow;
  for (auto [e, c] : llvm::enumerate(coords))
    byRow[c[0]].push_back({c.size() == 2 ? c[1] : 0, int64_t(e)});
  SmallVector<RowAccesses> rows;
  for (auto &[r, values] : byRow) {
    llvm::sort(values);
    RowAccesses &row = rows.emplace_back();
    row.row = r;
    for (size_t i = 0; i < values.size();) {
      // The longest aligned power-of-two run from here.
      int64_t start = values[i].first, n = threadAlign;
      while (n > 1) {
        bool fits = start % n == 0 && i + n <= values.size();
        for (int64_t k = 1; fits && k < n; ++k)
          fits = values[i + k].first == start + k;
        if (fits)
          break;
        n /= 2;
      }
      RowAccesses::Access &access = row.accesses.emplace_back();
      access.column = start;
      for (int64_t k = 0; k < n; ++k)
        access.elements.push_back(values[i + k].second);
      i += n;
    }
  }
  return rows;
}

struct LoadLowering : TilePattern<LoadOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(LoadOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TileType type = op.getResult().getType();
    LayoutAttrInterface layout = type.getLayoutInterface();
    SmallVector<AffineExpr> offsets = getThreadOffsets(layout, type.getShape());
    SmallVector<Value> thread = kv.atEntry(op, offsets, rewriter);
    bool is2D = type.getRank() == 2;
    Type element = type.getElementType();
    auto sourceType = cast<MemRefType>(adaptor.getSource().getType());
    int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
    VectorType vectorType = convertTile(type);
    SmallVector<Value> values(vectorType.getNumElements());
    // A matrix narrower than the tile fills its first columns; the rest
    // are zeros (accesses that some threads hold inside and some past go
    // element by element, each checked).
    int64_t sourceColumns = sourceType.getShape().back();
    int64_t maxColumn =
        is2D ? maxOverThreads(offsets[1], 32 * layout.getNumWarps()) : 0;
    Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                           rewriter.getZeroAttr(element));
    for (const RowAccesses &row :
         getRowAccesses(type, is2D ? offsets[1] : AffineExpr(),
                        op.getAlignment())) {
      // The row's values, or zeros for a row at or past `valid`.
      int64_t count = 0;
      for (const RowAccesses::Access &access : row.accesses)
        count += access.elements.size();
      auto rowType = VectorType::get({count}, element);
      // A clamped load reads the last valid row (group) for those past it,
      // unconditionally; otherwise they are zeros, in a branch.
      Value group, inGroup;
      scf::IfOp ifOp;
      if (op.getClamp()) {
        std::tie(group, inGroup) =
            groupAndRow(rewriter, loc, sourceType, type.getShape()[0],
                        addConst(rewriter, loc, thread[0], row.row));
        auto last = [&](Value bound) {
          return arith::SubIOp::create(rewriter, loc, bound,
                                       indexConst(rewriter, loc, 1));
        };
        inGroup = arith::MinSIOp::create(rewriter, loc, inGroup,
                                         last(adaptor.getValid()));
        if (group && adaptor.getGroups())
          group = arith::MinSIOp::create(rewriter, loc, group,
                                         last(adaptor.getGroups()));
      } else {
        RowPlace place =
            placeRow(rewriter, loc, sourceType, type.getShape()[0], thread[0],
                     row.row, adaptor.getValid(), adaptor.getGroups());
        group = place.group;
        inGroup = place.inGroup;
        ifOp = scf::IfOp::create(rewriter, loc, TypeRange{rowType}, place.ok,
                                 /*withElse=*/true);
      }
      Value rowValues;
      {
        OpBuilder::InsertionGuard guard(rewriter);
        if (ifOp)
          rewriter.setInsertionPointToStart(ifOp.thenBlock());
        Value at = arith::AddIOp::create(rewriter, loc, adaptor.getRow(),
                                         inGroup);
        SmallVector<Value> loaded;
        for (const RowAccesses::Access &access : row.accesses) {
          int64_t n = access.elements.size();
          ColumnFit fit =
              is2D ? fitColumns(access.column, n, maxColumn, sourceColumns)
                   : ColumnFit::Inside;
          if (fit == ColumnFit::Past) {
            loaded.append(n, zero);
            continue;
          }
          Value col = is2D ? addConst(rewriter, loc, thread[1], access.column)
                           : indexConst(rewriter, loc, 0);
          SmallVector<Value> indices = {at, col};
          if (group)
            indices.insert(indices.begin(), group);
          if (fit == ColumnFit::Straddles) {
            for (int64_t k = 0; k < n; ++k) {
              Value c = addConst(rewriter, loc, col, k);
              auto inside = scf::IfOp::create(
                  rewriter, loc, TypeRange{element},
                  isColumnInside(rewriter, loc, c, sourceColumns),
                  /*withElse=*/true);
              OpBuilder::InsertionGuard inner(rewriter);
              rewriter.setInsertionPointToStart(inside.thenBlock());
              indices.back() = c;
              scf::YieldOp::create(
                  rewriter, loc,
                  ValueRange{memref::LoadOp::create(
                      rewriter, loc, adaptor.getSource(), indices)});
              rewriter.setInsertionPointToStart(inside.elseBlock());
              scf::YieldOp::create(rewriter, loc, ValueRange{zero});
              loaded.push_back(inside.getResult(0));
            }
            continue;
          }
          if (n == 1) {
            loaded.push_back(memref::LoadOp::create(
                rewriter, loc, adaptor.getSource(), indices));
            continue;
          }
          Value v = vector::LoadOp::create(
              rewriter, loc, VectorType::get({n}, element),
              adaptor.getSource(), indices, /*nontemporal=*/false,
              llvm::MaybeAlign(n * elementBytes));
          for (int64_t k = 0; k < n; ++k)
            loaded.push_back(vector::ExtractOp::create(
                rewriter, loc, v, ArrayRef<int64_t>{k}));
        }
        rowValues =
            vector::FromElementsOp::create(rewriter, loc, rowType, loaded);
        if (ifOp) {
          scf::YieldOp::create(rewriter, loc, ValueRange{rowValues});
          rewriter.setInsertionPointToStart(ifOp.elseBlock());
          Value zeros = arith::ConstantOp::create(
              rewriter, loc, rowType,
              DenseElementsAttr::get(rowType, rewriter.getZeroAttr(element)));
          scf::YieldOp::create(rewriter, loc, ValueRange{zeros});
          rowValues = ifOp.getResult(0);
        }
      }
      int64_t k = 0;
      for (const RowAccesses::Access &access : row.accesses)
        for (int64_t e : access.elements)
          values[e] = vector::ExtractOp::create(rewriter, loc, rowValues,
                                                ArrayRef<int64_t>{k++});
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, vectorType,
                                                        values);
    return success();
  }
};

struct StoreLowering : TilePattern<StoreOp> {
  using TilePattern::TilePattern;
  LogicalResult
  lower(StoreOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = kv.operandType<TileType>(op, 0);
    LayoutAttrInterface layout = type.getLayoutInterface();
    SmallVector<AffineExpr> offsets = getThreadOffsets(layout, type.getShape());
    SmallVector<Value> thread = kv.atEntry(op, offsets, rewriter);
    // A 1-D tile is column 0; of an element's holders, its owner writes.
    bool is2D = type.getRank() == 2;
    Value owner = ownerOf(op, layout, kv, rewriter);
    int64_t elementBytes = type.getElementType().getIntOrFloatBitWidth() / 8;
    auto destType = cast<MemRefType>(adaptor.getDest().getType());
    // A matrix narrower than the tile takes its first columns: accesses
    // past them are dropped, and those that some threads hold inside and
    // some past go element by element, each checked.
    int64_t destColumns = destType.getShape().back();
    int64_t maxColumn =
        is2D ? maxOverThreads(offsets[1], 32 * layout.getNumWarps()) : 0;
    // The values of one row share a predicate.
    for (const RowAccesses &row :
         getRowAccesses(type, is2D ? offsets[1] : AffineExpr(),
                        op.getAlignment())) {
      auto [group, inGroup, ok] =
          placeRow(rewriter, loc, destType, type.getShape()[0], thread[0],
                   row.row, adaptor.getValid(), adaptor.getGroups());
      if (owner)
        ok = arith::AndIOp::create(rewriter, loc, ok, owner);
      auto ifOp = scf::IfOp::create(rewriter, loc, ok, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifOp.thenBlock());
      Value at = arith::AddIOp::create(rewriter, loc, adaptor.getRow(), inGroup);
      for (const RowAccesses::Access &access : row.accesses) {
        int64_t n = access.elements.size();
        ColumnFit fit =
            is2D ? fitColumns(access.column, n, maxColumn, destColumns)
                 : ColumnFit::Inside;
        if (fit == ColumnFit::Past)
          continue;
        SmallVector<Value> xs;
        for (int64_t e : access.elements)
          xs.push_back(vector::ExtractOp::create(
              rewriter, loc, adaptor.getValue(), ArrayRef<int64_t>{e}));
        Value col = is2D ? addConst(rewriter, loc, thread[1], access.column)
                         : indexConst(rewriter, loc, 0);
        SmallVector<Value> indices = {at, col};
        if (group)
          indices.insert(indices.begin(), group);
        if (fit == ColumnFit::Straddles) {
          for (auto [k, x] : llvm::enumerate(xs)) {
            Value c = addConst(rewriter, loc, col, k);
            auto inside = scf::IfOp::create(
                rewriter, loc, isColumnInside(rewriter, loc, c, destColumns),
                /*withElse=*/false);
            OpBuilder::InsertionGuard inner(rewriter);
            rewriter.setInsertionPointToStart(inside.thenBlock());
            indices.back() = c;
            memref::StoreOp::create(rewriter, loc, x, adaptor.getDest(),
                                    indices);
          }
          continue;
        }
        if (n == 1) {
          memref::StoreOp::create(rewriter, loc, xs[0], adaptor.getDest(),
                                  indices);
          continue;
        }
        Value v = vector::FromElementsOp::create(
            rewriter, loc, VectorType::get({n}, type.getElementType()), xs);
        vector::StoreOp::create(rewriter, loc, v, adaptor.getDest(), indices,
                                /*nontemporal=*/false,
                                llvm::MaybeAlign(n * elementBytes));
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// local_store: each thread's runs of a row (at most a swizzle chunk, which
/// stays contiguous) as one vector store into the stage at the buffer's
/// swizzled and paneled addresses.
struct LocalStoreLowering : TilePattern<LocalStoreOp> {
  using TilePattern::TilePattern;
  LogicalResult lower(LocalStoreOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = kv.operandType<TileType>(op, 0);
    auto buffer = kv.operandType<SharedType>(op, 1);
    LayoutAttrInterface layout = type.getLayoutInterface();
    if (!layout)
      return op.emitOpError() << "writes a tile without a layout";
    if (!buffer.hasLayout())
      return op.emitOpError() << "writes a buffer without a placement";
    SmallVector<AffineExpr> offsets = getThreadOffsets(layout, type.getShape());
    SharedAddresses addr(buffer, offsets[0], offsets[1],
                         32 * layout.getNumWarps());
    Value owner = ownerOf(op, layout, kv, rewriter);
    int64_t elementBytes = type.getElementType().getIntOrFloatBitWidth() / 8;
    int64_t chunkBytes = buffer.getLayout().getVector() * elementBytes;
    OpBuilder::InsertionGuard guard(rewriter);
    if (owner) {
      auto ifOwner = scf::IfOp::create(rewriter, loc, TypeRange{}, owner,
                                       /*withElse=*/false);
      rewriter.setInsertionPointToStart(ifOwner.thenBlock());
    }
    for (const RowAccesses &row :
         getRowAccesses(type, offsets[1], chunkBytes)) {
      for (const RowAccesses::Access &access : row.accesses) {
        int64_t n = access.elements.size();
        SmallVector<Value> xs;
        for (int64_t e : access.elements)
          xs.push_back(vector::ExtractOp::create(
              rewriter, loc, adaptor.getValue(), ArrayRef<int64_t>{e}));
        Value index = addr.index(rewriter, loc, kv, op, rewriter,
                                 adaptor.getStage(), row.row, access.column);
        Value v = vector::FromElementsOp::create(
            rewriter, loc, VectorType::get({n}, type.getElementType()), xs);
        vector::StoreOp::create(rewriter, loc, v, adaptor.getBuffer(),
                                ValueRange{index}, /*nontemporal=*/false,
                                llvm::MaybeAlign(n * elementBytes));
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The target's math
//===----------------------------------------------------------------------===//

/// f32 math of map regions as the hardware approximations (the upstream
/// lowering would call libdevice, which only a toolkit resolves).
template <typename Op>
struct ApproxLowering : OpConversionPattern<Op> {
  ApproxLowering(MLIRContext *ctx, StringRef intrinsic)
      : OpConversionPattern<Op>(ctx), intrinsic(intrinsic) {}
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type f32 = rewriter.getF32Type();
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(
        op, f32, rewriter.getStringAttr(intrinsic),
        ValueRange{adaptor.getOperand()});
    return success();
  }
  std::string intrinsic;
};

struct FmaLowering : OpConversionPattern<math::FmaOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(math::FmaOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<LLVM::FMAOp>(op, adaptor.getA(), adaptor.getB(),
                                             adaptor.getC());
    return success();
  }
};

struct MaxLowering : OpConversionPattern<arith::MaxNumFOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::MaxNumFOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, maxNum(rewriter, op.getLoc(), adaptor.getLhs(),
                                  adaptor.getRhs()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct FlashTileToNVGPUPass
    : public flash::impl::FlashTileToNVGPUBase<FlashTileToNVGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Every tile and copy has its layout: flash-tile-assign-layouts chose
    // them.
    // Every shared buffer has its placement: flash-tile-allocate-shared
    // chose it.
    WalkResult unplaced = module.walk([&](Operation *op) {
      auto copy = dyn_cast<AsyncCopyOp>(op);
      SmallVector<Type> types = llvm::to_vector(op->getResultTypes());
      if (auto fn = dyn_cast<FunctionOpInterface>(op))
        llvm::append_range(types, fn.getArgumentTypes());
      bool tile = llvm::any_of(types, [](Type t) {
        auto tile = dyn_cast<TileType>(t);
        return tile && !tile.hasLayout();
      });
      bool buffer = llvm::any_of(types, [](Type t) {
        auto shared = dyn_cast<SharedType>(t);
        return shared && !shared.hasLayout();
      });
      if (buffer) {
        op->emitError() << "flash-tile-to-nvgpu: a shared buffer without the "
                           "placement of its rows; run "
                           "flash-tile-allocate-shared first";
        return WalkResult::interrupt();
      }
      if (!tile && !(copy && !copy.getLayoutAttr()))
        return WalkResult::advance();
      op->emitError() << "flash-tile-to-nvgpu: " << (tile ? "a tile" : "a copy")
                      << " without a layout; run flash-tile-assign-layouts "
                         "first";
      return WalkResult::interrupt();
    });
    if (unplaced.wasInterrupted())
      return signalPassFailure();
    // `.reqntid`: a kernel runs with exactly the block its layouts were
    // chosen for (a launch with another is refused), which the runtime
    // checks a manifest against. LLVM bounds %tid from it as it would from
    // known_block_size's `.maxntid`, and PTX allows only one of the two.
    // `.maxnreg` where the kernel asks for a register budget.
    flash::FlashDialect::BlockAttrHelper block(ctx);
    flash::FlashDialect::MaxRegistersAttrHelper maxRegisters(ctx);
    module.walk([&](gpu::GPUFuncOp fn) {
      IntegerAttr threads = block.getAttr(fn);
      if (threads && !fn->hasAttr(NVVM::NVVMDialect::getReqntidAttrName()))
        fn->setAttr(NVVM::NVVMDialect::getReqntidAttrName(),
                    DenseI32ArrayAttr::get(
                        ctx, {static_cast<int32_t>(threads.getInt()), 1, 1}));
      if (IntegerAttr registers = maxRegisters.getAttr(fn))
        fn->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
                    IntegerAttr::get(IntegerType::get(ctx, 32),
                                     registers.getValue().getSExtValue()));
    });
    KernelValues kv;
    kv.prepare(module);

    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion([](TileType t) -> Type { return convertTile(t); });
    converter.addConversion([ctx](SharedType t) -> Type {
      return MemRefType::get(
          {t.getStages() * t.getRows() * t.getRowElements()}, t.getElementType(),
          AffineMap(),
          gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
    });

    ConversionTarget target(*ctx);
    target.addIllegalDialect<FlashTileDialect>();
    target.addLegalDialect<arith::ArithDialect, gpu::GPUDialect,
                           LLVM::LLVMDialect, memref::MemRefDialect,
                           nvgpu::NVGPUDialect, NVVM::NVVMDialect,
                           vector::VectorDialect, scf::SCFDialect>();
    target.addDynamicallyLegalOp<math::Exp2Op, math::Log2Op, math::FmaOp,
                                 arith::MaxNumFOp>(
        [](Operation *op) { return !op->getResultTypes()[0].isF32(); });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp fn) {
      return converter.isSignatureLegal(fn.getFunctionType()) &&
             converter.isLegal(&fn.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [&](func::ReturnOp op) { return converter.isLegal(op); });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });

    RewritePatternSet patterns(ctx);
    patterns.add<
        AllocLowering, ViewLowering, AsyncCopyLowering, AsyncCommitLowering,
        AsyncWaitLowering, TmaLoadLowering, TmaStoreLowering, StageWaitLowering,
        BarrierLowering, StageAcquireLowering, StageReleaseLowering,
        TurnWaitLowering, TurnPassLowering, WarpSpecializeLowering,
        WarpgroupWaitLowering, LocalLoadLowering, LocalStoreLowering,
        SplatLowering, ConvertLayoutLowering, MmaLowering, WarpgroupMmaLowering,
        ReduceLowering, FoldLowering, BroadcastLowering, BatchReduceLowering,
        MapLowering, RescaleLowering, LoadLowering, StoreLowering>(converter,
                                                                   ctx, kv);
    patterns.add<ApproxLowering<math::Exp2Op>>(ctx,
                                               "llvm.nvvm.ex2.approx.ftz.f32");
    patterns.add<ApproxLowering<math::Log2Op>>(ctx, "llvm.nvvm.lg2.approx.f");
    patterns.add<MaxLowering, FmaLowering>(ctx);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
