//===- FlashToTile.cpp - GPU kernels from the tiled IR -------------------===//
//
// Implements `flash-to-tile`. The input is the tiled IR every backend
// shares (after flash-tile, flash-split-kv and flash-causal-skip, on
// tensors):
//
//   scf.forall (b, h, qi[, s]) {flash.tile_loop} shared_outs(out[, lse]) {
//     Q tile = extract_slice Q[...]
//     scf.for j {flash.kv_loop} { flash.attention_step Q tile, K[j], V[j] }
//     ... (an unmasked and a masked loop when causal)
//     flash.finalize into slices of the shared outputs
//   }
//   [flash.combine of the split partials]
//
// The pass builds one `gpu.module @flash_kernels` holding, per function,
// the forward kernel `<func>_fwd` (one CTA per iteration of the forall) and,
// when the KV loop is split, `<func>_combine`; then it erases the host
// function, whose launches the runtime performs.
//
// The algorithm is not re-derived here: the kernel evaluates the tiled IR's
// own index computations. Its loop bounds, the causal mask offsets, the
// split ranges and the tile offsets are the tiled IR's scalar arithmetic,
// cloned into the kernel with the forall's induction variables bound to the
// block index and the tensor sizes bound to kernel arguments. Only the
// block-level ops become flash_tile ops (TileKernel.cpp), whose warps and
// layouts flash-tile-assign-layouts chooses, whose buffers
// flash-tile-allocate-shared places and which flash-tile-to-nvgpu lowers.
//
// Every kernel has the same arguments, so that the runtime passes one list
// to all of them:
//
//   q, k, v, out : memref<N x f16|bf16>    (bare pointers, 16-byte aligned)
//   lse, ws_out, ws_lse : memref<N x f32>   (null when unused)
//   batch, seq_q, seq_kv, splits : i64
//   strides (batch, head, row) of q, k, v, out : 12 x i64  (unit innermost)
//
// and carries its launch in attributes: `flash.grid` (the CTA count, as
// factors over the sizes B, Nq, Nk and splits), `flash.block` threads
// (the forward kernel's once flash-tile-assign-layouts has chosen its
// warps) and `flash.shared_bytes`.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernel.h"

#include "flashc/Conversion/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/TiledLoopNest.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Target/TargetInfo.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-to-tile"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHTOTILE
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_kernel;

namespace {

/// A static size large enough for any buffer: the bare-pointer convention
/// needs static memref types, and the kernels index them with i64.
constexpr int64_t kBufferElements = int64_t(1) << 40;

/// causal-order=auto: a causal kernel runs its heaviest CTAs first where a
/// head (of packed query rows) has at least this many rows, its lightest
/// first within each head below. On an H200 (docs/PERFORMANCE.md, "Causal
/// CTA order", runs 6 and 7) heaviest first was 4 - 13% faster from 2048
/// rows on, and 10 - 14% slower below at D = 128, where every head's last
/// block runs at once and the heads' K and V stop sharing the L2.
constexpr int64_t kHeaviestFromRows = 2048;

enum class Role { Q, K, V, Out, Lse, WsOut, WsLse };

/// The kernel arguments, in ABI order.
enum Arg : unsigned {
  ArgQ,
  ArgK,
  ArgV,
  ArgOut,
  ArgLse,
  ArgWsOut,
  ArgWsLse,
  ArgBatch,
  ArgSeqQ,
  ArgSeqKV,
  ArgSplits,
  ArgStrides,                 // 12 strides: q, k, v, out x (batch, head, row)
  ArgScale = ArgStrides + 12, // the run-time softmax scale (f32)
  kNumArgs,
};

/// What each argument is, by Arg: the `flash.param` of the kernels'
/// arguments, from which a bundle's manifest lists them for the runtime.
struct KernelParam {
  const char *name;
  const char *meaning;
};
constexpr KernelParam kKernelParams[] = {
    {"q", "Q: batch x G query heads x Nq x D elements (one KV head's group)"},
    {"k", "K: batch x Nk x D elements"},
    {"v", "V: batch x Nk x Dv elements"},
    {"out", "O: batch x G x Nq x Dv elements"},
    {"lse", "log-sum-exp, f32, batch x G x Nq (read only by lse variants)"},
    {"ws_out", "split partial outputs, f32 (decode variants)"},
    {"ws_lse", "split partial log-sum-exps, f32 (decode variants)"},
    {"B", "batch: the call's batch x KV heads when they fold"},
    {"Nq", "query rows per head"},
    {"Nk", "keys"},
    {"splits", "KV splits (decode variants; 1 otherwise)"},
    {"q_stride_b", "elements between batch entries of q"},
    {"q_stride_h", "elements between query heads of q"},
    {"q_stride_n", "elements between rows of q"},
    {"k_stride_b", "elements between batch entries of k"},
    {"k_stride_h", "elements between heads of k"},
    {"k_stride_n", "elements between rows of k"},
    {"v_stride_b", "elements between batch entries of v"},
    {"v_stride_h", "elements between heads of v"},
    {"v_stride_n", "elements between rows of v"},
    {"out_stride_b", "elements between batch entries of out"},
    {"out_stride_h", "elements between query heads of out"},
    {"out_stride_n", "elements between rows of out"},
    {"scale", "the softmax scale"},
};
static_assert(std::size(kKernelParams) == kNumArgs,
              "one description per kernel argument");

/// The pieces of one tiled attention.
struct TiledAttention {
  func::FuncOp func;
  scf::ForallOp forall;
  SmallVector<scf::ForOp> loops;
  SmallVector<AttentionStepOp> steps;
  FinalizeOp finalize;
  CombineOp combine; // null when not split
  tensor::ExtractSliceOp qSlice;
  /// The tensors the kernel reads and writes, by role: function arguments
  /// (or their to_tensor), and the initial values of the forall's shared
  /// outputs and of the combine's destinations.
  DenseMap<Value, Role> roots;
  Value qRoot, kRoot, vRoot;
  /// The forall output feeding each finalize destination, and its role.
  SmallVector<Role> outputRoles;
};

/// Strips bufferization.to_tensor.
Value stripToTensor(Value v) {
  if (auto t = v.getDefiningOp<bufferization::ToTensorOp>())
    return t.getBuffer();
  return v;
}

/// Diagnoses unsupported structure with the op at fault.
struct MatchError {
  Operation *op = nullptr;
  std::string message;
};

FailureOr<TiledAttention> analyze(func::FuncOp func, scf::ForallOp forall,
                                  MatchError &err) {
  auto fail = [&](Operation *op, const Twine &msg) {
    err.op = op;
    err.message = msg.str();
    return failure();
  };
  TiledAttention t;
  t.func = func;
  t.forall = forall;
  // The tile loop is over (batch, kv-head, q-block[, split]), less any
  // dimension of one iteration that canonicalization folded away; the
  // kernel delinearises the CTA index over whatever bounds remain.
  TiledLoopNestMismatch mismatch;
  FailureOr<TiledLoopNest> nest = matchTiledLoopNest(forall, mismatch);
  if (failed(nest))
    return fail(mismatch.op, mismatch.message);
  t.loops = nest->kvLoops;
  t.steps = nest->steps;
  t.finalize = nest->finalize;
  AttentionStepOp first = t.steps.front();
  if (!isa<RankedTensorType>(first.getQuery().getType()))
    return fail(first, "flash-to-tile runs on tensors, before "
                       "bufferization");
  for (AttentionStepOp step : t.steps)
    if (step.getKeyTransposed())
      return fail(step, "the GPU kernels read K untransposed; do not run "
                        "flash-cpu-transpose-keys");
  t.qSlice = first.getQuery().getDefiningOp<tensor::ExtractSliceOp>();
  if (!t.qSlice || !forall->isAncestor(t.qSlice))
    return fail(first, "the Q tile must be a slice of the query taken in the "
                       "tile loop");

  // Inputs.
  t.qRoot = stripToTensor(t.qSlice.getSource());
  for (auto [loop, step] : llvm::zip(t.loops, t.steps)) {
    for (Value operand : {step.getKey(), step.getValue()}) {
      auto slice = operand.getDefiningOp<tensor::ExtractSliceOp>();
      if (!slice || slice->getParentOp() != loop)
        return fail(step, "K and V blocks must be slices taken in the KV "
                          "loop");
    }
    Value k = stripToTensor(
        step.getKey().getDefiningOp<tensor::ExtractSliceOp>().getSource());
    Value v = stripToTensor(
        step.getValue().getDefiningOp<tensor::ExtractSliceOp>().getSource());
    if ((t.kRoot && t.kRoot != k) || (t.vRoot && t.vRoot != v))
      return fail(step, "the KV loops of a tile must read one K and one V");
    t.kRoot = k;
    t.vRoot = v;
  }
  for (Value root : {t.qRoot, t.kRoot, t.vRoot}) {
    auto arg = dyn_cast<BlockArgument>(root);
    if (!arg || arg.getOwner()->getParentOp() != func)
      return fail(first, "Q, K and V must be arguments of the function");
  }
  t.roots[t.qRoot] = Role::Q;
  t.roots[t.kRoot] = Role::K;
  t.roots[t.vRoot] = Role::V;

  // Outputs: the finalize writes slices of the forall's shared outputs
  // (matchTiledLoopNest); their roles follow.
  for (Operation *user : forall->getUsers())
    if (auto c = dyn_cast<CombineOp>(user))
      t.combine = c;
  unsigned nOut = forall.getNumResults();
  if (t.combine) {
    if (nOut != 2 || t.combine.getParts() != forall.getResult(0) ||
        t.combine.getPartLse() != forall.getResult(1))
      return fail(t.combine, "the combine must merge the tile loop's two "
                             "outputs");
    t.outputRoles = {Role::WsOut, Role::WsLse};
    t.roots[forall.getOutputs()[0]] = Role::WsOut;
    t.roots[forall.getOutputs()[1]] = Role::WsLse;
    t.roots[t.combine.getOut()] = Role::Out;
    if (t.combine.getLse())
      t.roots[t.combine.getLse()] = Role::Lse;
  } else {
    if (nOut < 1 || nOut > 2)
      return fail(forall, "expected one or two shared outputs");
    t.outputRoles = {Role::Out};
    t.roots[forall.getOutputs()[0]] = Role::Out;
    if (nOut == 2) {
      t.outputRoles.push_back(Role::Lse);
      t.roots[forall.getOutputs()[1]] = Role::Lse;
    }
  }
  return t;
}

//===----------------------------------------------------------------------===//
// Lifting host values into the kernel
//===----------------------------------------------------------------------===//

/// A buffer the kernel addresses: its argument, per-dimension strides
/// (elements) and sizes, as kernel values.
struct Buffer {
  Value memref;
  SmallVector<Value> strides;
};

/// Clones the tiled IR's scalar index computations into the kernel.
class Lifter {
public:
  Lifter(ImplicitLocOpBuilder &b, TiledAttention &t, ValueRange args,
         MatchError &err)
      : b(b), t(t), args(args), err(err) {}

  ImplicitLocOpBuilder &b;
  TiledAttention &t;
  ValueRange args;
  MatchError &err;
  IRMapping map;

  Value arg(unsigned i) { return args[i]; }
  Value index(Value i64) {
    return arith::IndexCastOp::create(b, b.getIndexType(), i64);
  }
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, v); }

  Value fail(Operation *op, const Twine &msg) {
    if (!err.op) {
      err.op = op;
      err.message = msg.str();
    }
    return Value();
  }

  /// The kernel value of a host index value.
  Value get(Value host) {
    if (Value mapped = map.lookupOrNull(host))
      return mapped;
    Operation *def = host.getDefiningOp();
    if (!def)
      return fail(t.forall, "flash-to-tile: a block argument the kernel "
                            "cannot compute");
    Value result;
    if (isa<tensor::DimOp, memref::DimOp>(def)) {
      std::optional<int64_t> i = getConstantIntValue(def->getOperand(1));
      if (!i)
        return fail(def, "a dim with a dynamic index");
      result = dimOf(def->getOperand(0), *i);
    } else if (isa<SplitCountOp>(def)) {
      result = index(arg(ArgSplits));
    } else if (isa<arith::ArithDialect, affine::AffineDialect>(
                   def->getDialect()) &&
               def->getNumRegions() == 0 && isMemoryEffectFree(def)) {
      IRMapping local;
      for (Value operand : def->getOperands()) {
        Value v = get(operand);
        if (!v)
          return Value();
        local.map(operand, v);
      }
      Operation *clone = b.clone(*def, local);
      for (auto [h, k] : llvm::zip(def->getResults(), clone->getResults()))
        map.map(h, k);
      return map.lookup(host);
    } else {
      return fail(def, "flash-to-tile cannot compute this value in the "
                       "kernel");
    }
    if (result)
      map.map(host, result);
    return result;
  }

  Value get(OpFoldResult ofr) {
    if (auto attr = dyn_cast<Attribute>(ofr))
      return cst(cast<IntegerAttr>(attr).getInt());
    return get(cast<Value>(ofr));
  }

  /// Size `i` of a root of role `role` whose type is `type`.
  Value rootDim(Role role, ShapedType type, int64_t i) {
    if (!type.isDynamicDim(i))
      return cst(type.getDimSize(i));
    switch (role) {
    case Role::Q:
    case Role::K:
    case Role::V:
    case Role::Out:
    case Role::Lse:
      if (i == 0)
        return index(arg(ArgBatch));
      if (i == 2)
        return index(arg(role == Role::K || role == Role::V ? ArgSeqKV
                                                            : ArgSeqQ));
      break;
    default:
      break;
    }
    return fail(t.forall, "the GPU kernels need static head counts and head "
                          "dims (dimension " +
                              Twine(i) + " is dynamic)");
  }

  /// The kernel value of size `i` of a host tensor.
  Value dimOf(Value host, int64_t i) {
    auto type = cast<ShapedType>(host.getType());
    if (!type.isDynamicDim(i))
      return cst(type.getDimSize(i));
    Value root = stripToTensor(host);
    if (auto it = t.roots.find(root);
        it != t.roots.end() && isa<BlockArgument>(root))
      return rootDim(it->second, cast<ShapedType>(root.getType()), i);
    if (auto arg = dyn_cast<BlockArgument>(host)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (auto forall = dyn_cast<scf::ForallOp>(owner))
        if (OpOperand *init = forall.getTiedOpOperand(arg))
          return dimOf(init->get(), i);
      if (auto loop = dyn_cast<scf::ForOp>(owner))
        if (OpOperand *init = loop.getTiedLoopInit(arg))
          return dimOf(init->get(), i);
      return fail(t.forall, "the size of a block argument");
    }
    Operation *def = host.getDefiningOp();
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
      llvm::SmallBitVector dropped = slice.getDroppedDims();
      int64_t kept = -1;
      for (int64_t d = 0; d < static_cast<int64_t>(dropped.size()); ++d)
        if (!dropped[d] && ++kept == i)
          return get(slice.getMixedSizes()[d]);
    } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
      return get(expand.getMixedOutputShape()[i]);
    } else if (auto empty = dyn_cast<tensor::EmptyOp>(def)) {
      return get(empty.getMixedSizes()[i]);
    } else if (auto dps = dyn_cast<DestinationStyleOpInterface>(def)) {
      return dimOf(dps.getTiedOpOperand(cast<OpResult>(host))->get(), i);
    } else if (auto forall = dyn_cast<scf::ForallOp>(def)) {
      return dimOf(forall.getOutputs()[cast<OpResult>(host).getResultNumber()],
                   i);
    } else if (auto loop = dyn_cast<scf::ForOp>(def)) {
      return dimOf(loop.getInitArgs()[cast<OpResult>(host).getResultNumber()],
                   i);
    }
    return fail(def, "flash-to-tile cannot compute the sizes of this "
                     "tensor in the kernel");
  }

  /// The buffer of a root.
  Buffer buffer(Value root) {
    Role role = t.roots.lookup(root);
    auto type = cast<ShapedType>(root.getType());
    Buffer buf;
    auto strideArgs = [&](unsigned which) {
      for (unsigned d = 0; d < 3; ++d)
        buf.strides.push_back(index(arg(ArgStrides + 3 * which + d)));
      buf.strides.push_back(cst(1));
    };
    auto contiguous = [&]() {
      SmallVector<Value> strides(type.getRank());
      Value s = cst(1);
      for (int64_t d = type.getRank(); d-- > 0;) {
        strides[d] = s;
        if (d > 0) {
          Value size = dimOf(root, d);
          if (!size)
            return;
          s = arith::MulIOp::create(b, s, size);
        }
      }
      buf.strides = strides;
    };
    switch (role) {
    case Role::Q:
      buf.memref = arg(ArgQ);
      strideArgs(0);
      break;
    case Role::K:
      buf.memref = arg(ArgK);
      strideArgs(1);
      break;
    case Role::V:
      buf.memref = arg(ArgV);
      strideArgs(2);
      break;
    case Role::Out:
      buf.memref = arg(ArgOut);
      strideArgs(3);
      break;
    case Role::Lse:
      buf.memref = arg(ArgLse);
      contiguous();
      break;
    case Role::WsOut:
      buf.memref = arg(ArgWsOut);
      contiguous();
      break;
    case Role::WsLse:
      buf.memref = arg(ArgWsLse);
      contiguous();
      break;
    }
    return buf;
  }

  /// The root a slice source stands for: a function argument, or a forall
  /// shared output (its initial value).
  Value rootOf(Value source) {
    source = stripToTensor(source);
    if (auto arg = dyn_cast<BlockArgument>(source))
      if (auto forall = dyn_cast<scf::ForallOp>(arg.getOwner()->getParentOp()))
        if (OpOperand *init = forall.getTiedOpOperand(arg))
          return init->get();
    return source;
  }

  /// A slice as (buffer, base offset, strides of its kept dimensions). If
  /// `skipDim` >= 0, that dimension's offset is left out of the base (the
  /// caller adds it).
  bool slice(tensor::ExtractSliceOp op, Value &memref, Value &base,
             SmallVector<Value> &keptStrides, int64_t skipDim = -1) {
    Value root = rootOf(op.getSource());
    if (!t.roots.count(root)) {
      fail(op, "a slice of a tensor the kernel has no buffer for");
      return false;
    }
    for (OpFoldResult s : op.getMixedStrides())
      if (getConstantIntValue(s) != 1) {
        fail(op, "the GPU kernels need unit-stride slices");
        return false;
      }
    Buffer buf = buffer(root);
    if (buf.strides.size() != op.getMixedOffsets().size()) {
      fail(op, "a slice of unexpected rank");
      return false;
    }
    memref = buf.memref;
    llvm::SmallBitVector dropped = op.getDroppedDims();
    keptStrides.clear();
    for (size_t d = 0; d < buf.strides.size(); ++d)
      if (!dropped[d])
        keptStrides.push_back(buf.strides[d]);
    base = offsetOf(op.getMixedOffsets(), buf.strides, skipDim);
    return static_cast<bool>(base);
  }

  /// Where a slice of a [B', H, N, C] kernel tensor starts in it (its
  /// dimension `skipDim`, if any, at 0); false (reported) when a size or an
  /// offset is not available in the kernel.
  bool origin(tensor::ExtractSliceOp op, TensorOrigin &o,
              int64_t skipDim = -1) {
    Value root = rootOf(op.getSource());
    Buffer buf = buffer(root);
    SmallVector<OpFoldResult> offsets = op.getMixedOffsets();
    if (buf.strides.size() != 4 || offsets.size() != 4) {
      fail(op, "a slice of unexpected rank");
      return false;
    }
    o.buffer = buf.memref;
    o.sizes.clear();
    o.strides.clear();
    o.offsets.clear();
    for (int64_t d = 0; d < 3; ++d) {
      Value size = dimOf(root, d);
      Value off = d == skipDim ? cst(0) : get(offsets[d]);
      if (!size || !off || !buf.strides[d])
        return false;
      o.sizes.push_back(size);
      o.strides.push_back(buf.strides[d]);
      o.offsets.push_back(off);
    }
    return true;
  }

  /// The element offset sum_d offsets[d] * strides[d] (dimension `skipDim`
  /// left out), computed in the kernel; null when an offset or a stride is
  /// not available there.
  Value offsetOf(ArrayRef<OpFoldResult> offsets, ArrayRef<Value> strides,
                 int64_t skipDim = -1) {
    Value base = cst(0);
    for (auto [d, ofr] : llvm::enumerate(offsets)) {
      if (static_cast<int64_t>(d) == skipDim)
        continue;
      Value off = get(ofr);
      if (!off || !strides[d])
        return Value();
      base = arith::AddIOp::create(
          b, base, arith::MulIOp::create(b, off, strides[d]));
    }
    return base;
  }
};

/// A static upper bound of an index value built from constants, min, max
/// and select (the tile pass bounds a tile's rows by min(Br, Nq - q0)).
std::optional<int64_t> getStaticUpperBound(OpFoldResult ofr) {
  if (std::optional<int64_t> c = getConstantIntValue(ofr))
    return c;
  Operation *def = cast<Value>(ofr).getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<arith::MinSIOp, arith::MinUIOp>(def)) {
    std::optional<int64_t> a = getStaticUpperBound(def->getOperand(0));
    std::optional<int64_t> b = getStaticUpperBound(def->getOperand(1));
    if (a && b)
      return std::min(*a, *b);
    return a ? a : b;
  }
  if (isa<arith::MaxSIOp, arith::MaxUIOp>(def) || isa<arith::SelectOp>(def)) {
    unsigned first = isa<arith::SelectOp>(def) ? 1 : 0;
    std::optional<int64_t> a = getStaticUpperBound(def->getOperand(first));
    std::optional<int64_t> b = getStaticUpperBound(def->getOperand(first + 1));
    if (a && b)
      return std::max(*a, *b);
    return std::nullopt;
  }
  if (auto min = dyn_cast<affine::AffineMinOp>(def)) {
    std::optional<int64_t> best;
    for (AffineExpr e : min.getAffineMap().getResults())
      if (auto c = dyn_cast<AffineConstantExpr>(e))
        best = best ? std::min(*best, c.getValue()) : c.getValue();
    return best;
  }
  return std::nullopt;
}

/// Appends the operands of the product `ofr` computes (integers and the
/// sizes B, Nq, Nk and splits, as their kernel parameters are named) to
/// `product`.
LogicalResult appendGridProduct(TiledAttention &t, OpFoldResult ofr,
                                SmallVectorImpl<Attribute> &product,
                                MatchError &err) {
  Builder b(t.forall.getContext());
  if (std::optional<int64_t> c = getConstantIntValue(ofr)) {
    product.push_back(b.getI64IntegerAttr(*c));
    return success();
  }
  Value v = cast<Value>(ofr);
  Operation *def = v.getDefiningOp();
  auto fail = [&](const Twine &msg) {
    err.op = def ? def : t.forall.getOperation();
    err.message = msg.str();
    return failure();
  };
  auto size = [&](StringRef name) {
    product.push_back(b.getStringAttr(name));
    return success();
  };
  if (!def)
    return fail("a tile-loop bound the runtime cannot compute");
  if (isa<SplitCountOp>(def))
    return size("splits");
  if (isa<tensor::DimOp, memref::DimOp>(def)) {
    Value source = def->getOperand(0);
    std::optional<int64_t> i = getConstantIntValue(def->getOperand(1));
    if (!i)
      return fail("a tile-loop bound the runtime cannot compute");
    // Follow reshapes of Q back to its sizes.
    if (auto expand = source.getDefiningOp<tensor::ExpandShapeOp>())
      return appendGridProduct(t, expand.getMixedOutputShape()[*i], product,
                               err);
    auto it = t.roots.find(stripToTensor(source));
    if (it == t.roots.end())
      return fail("a tile-loop bound the runtime cannot compute");
    if (*i == 0)
      return size("B");
    if (*i == 2)
      return size(it->second == Role::K || it->second == Role::V ? "Nk"
                                                                 : "Nq");
    return fail("a tile-loop bound over a static dimension");
  }
  if (auto mul = dyn_cast<arith::MulIOp>(def)) {
    if (failed(appendGridProduct(t, mul.getLhs(), product, err)))
      return failure();
    return appendGridProduct(t, mul.getRhs(), product, err);
  }
  return fail("a tile-loop bound the runtime cannot compute (a grid factor "
              "is a product of sizes and integers, divided by an integer)");
}

/// One factor of the grid: the tile-loop bound `ofr` as ceildiv(product,
/// integer), for the runtime.
FailureOr<GridFactorAttr> getGridFactor(TiledAttention &t, OpFoldResult ofr,
                                        MatchError &err) {
  MLIRContext *ctx = t.forall.getContext();
  SmallVector<Attribute> product;
  int64_t ceilDiv = 1;
  Value v = dyn_cast<Value>(ofr);
  Operation *def = v ? v.getDefiningOp() : nullptr;
  if (def && isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(def)) {
    std::optional<int64_t> d = getConstantIntValue(def->getOperand(1));
    if (!d || *d < 1) {
      err.op = def;
      err.message = "a tile-loop bound divided by a value that is not a "
                    "positive constant";
      return failure();
    }
    ceilDiv = *d;
    ofr = def->getOperand(0);
  }
  if (failed(appendGridProduct(t, ofr, product, err)))
    return failure();
  return GridFactorAttr::get(ctx, ArrayAttr::get(ctx, product), ceilDiv);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct FlashToTilePass
    : public flash::impl::FlashToTileBase<FlashToTilePass> {
  using Base::Base;

  void runOnOperation() override;

  /// Builds the kernels of one tiled attention into `gpuModule`.
  LogicalResult build(TiledAttention &t, gpu::GPUModuleOp gpuModule,
                      const TargetInfo &target);
};

/// The function type shared by every kernel.
FunctionType kernelType(MLIRContext *ctx, Type elt) {
  Type eltMem = MemRefType::get({kBufferElements}, elt);
  Type f32Mem = MemRefType::get({kBufferElements}, Float32Type::get(ctx));
  Type i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> inputs = {eltMem, eltMem, eltMem, eltMem,
                              f32Mem, f32Mem, f32Mem};
  inputs.append(4 + 12, i64);
  inputs.push_back(Float32Type::get(ctx));
  return FunctionType::get(ctx, inputs, {});
}

/// The alignment of q, k, v and out (in ArgQ..ArgOut order) that kernels
/// of head dims `headDim` and `headDimV` may assume: `alignment` where rows
/// are whole 16-byte units (the runtime checks it), else the element's.
SmallVector<int64_t, 4> getDataAlignment(Type elt, int64_t headDim,
                                         int64_t headDimV, int64_t alignment) {
  int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
  int64_t d = flashc::getRowAlignment(headDim, bytes, alignment),
          dv = flashc::getRowAlignment(headDimV, bytes, alignment);
  return {d, d, dv, dv};
}

/// `griddepcontrol.<action>` (sm_90's programmatic dependent launch) as
/// inline PTX with side effects that clobbers memory, as CUTLASS writes it
/// (LLVM's intrinsic is modelled as touching no memory, which would let
/// the combine's loads of the partials move above its wait). The back end
/// keeps memory accesses on their side of it; the runtime checks the PTX
/// of a kernel it launches early (checkVariantAgainstPTX).
void gridDependency(ImplicitLocOpBuilder &b, StringRef action) {
  LLVM::InlineAsmOp::create(
      b, /*res=*/Type(), ValueRange(), ("griddepcontrol." + action + ";").str(),
      "~{memory}", /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
}

/// Makes `kernel`, whose body `b` is at the start of, a programmatic
/// dependent launch: it waits for the kernel launched before it on the
/// stream before anything else, and the runtime launches it so that it may
/// start while that kernel runs (`flash.programmatic_launch`).
void waitForPredecessor(ImplicitLocOpBuilder &b, gpu::GPUFuncOp kernel) {
  gridDependency(b, "wait");
  FlashDialect::ProgrammaticLaunchAttrHelper(b.getContext())
      .setAttr(kernel, UnitAttr::get(b.getContext()));
}

/// A kernel of the common signature. Its `flash.block` (threads) is set
/// by the caller for the combine kernel and by flash-tile-assign-layouts
/// for the forward one; flash-tile-to-nvgpu makes it the kernel's
/// `.reqntid`.
gpu::GPUFuncOp createKernel(OpBuilder &b, Location loc, StringRef name,
                            Type elt, ArrayRef<int64_t> dataAlignment) {
  auto fn = gpu::GPUFuncOp::create(b, loc, name,
                                   kernelType(b.getContext(), elt));
  fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  StringAttr param = FlashDialect::ParamAttrHelper(b.getContext()).getName();
  for (auto [i, p] : llvm::enumerate(kKernelParams))
    fn.setArgAttr(i, param,
                  b.getDictionaryAttr(
                      {b.getNamedAttr("name", b.getStringAttr(p.name)),
                       b.getNamedAttr("meaning", b.getStringAttr(p.meaning))}));
  // q, k, v and out as aligned as the caller's tensors are; the LSE (the
  // caller's, checked for its f32 elements) and the partials' LSE (after
  // the partials in the runtime's workspace) 4 bytes; the partials 16.
  for (unsigned i = 0; i < ArgBatch; ++i) {
    int64_t align = i <= ArgOut ? dataAlignment[i] : i == ArgWsOut ? 16 : 4;
    fn.setArgAttr(i, "llvm.align", b.getI64IntegerAttr(align));
    fn.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
    if (i <= ArgV)
      fn.setArgAttr(i, "llvm.readonly", b.getUnitAttr());
  }
  return fn;
}

LogicalResult FlashToTilePass::build(TiledAttention &t,
                                      gpu::GPUModuleOp gpuModule,
                                      const TargetInfo &target) {
  MLIRContext *ctx = &getContext();
  MatchError err;
  auto report = [&]() {
    (err.op ? err.op : t.forall.getOperation())->emitError()
        << "flash-to-tile: " << err.message;
    return failure();
  };

  // The roots are the function's memref arguments (under to_tensor).
  auto qType = cast<ShapedType>(t.qRoot.getType());
  auto vType = cast<ShapedType>(t.vRoot.getType());
  Type elt = qType.getElementType();
  if (!elt.isF16() && !elt.isBF16())
    return t.steps[0].emitError()
           << "flash-to-tile: the GPU kernels take f16 or bf16 inputs, not "
           << elt;
  auto tileType = cast<RankedTensorType>(t.steps[0].getQuery().getType());
  if (tileType.getRank() != 3)
    return t.steps[0].emitError()
           << "flash-to-tile: expected a [G, Br, D] Q tile, found "
           << tileType;
  int64_t group = tileType.getDimSize(0);
  int64_t headDim = qType.getDimSize(3), headDimV = vType.getDimSize(3);
  if (ShapedType::isDynamic(group) || ShapedType::isDynamic(headDim) ||
      ShapedType::isDynamic(headDimV) || qType.isDynamicDim(1))
    return t.steps[0].emitError()
           << "flash-to-tile: the GPU kernels need static head counts and "
              "head dims";
  // Br: the static bound of the Q tile's rows; Bc: the KV loops' step.
  int64_t blockQ = tileType.getDimSize(1);
  if (ShapedType::isDynamic(blockQ)) {
    std::optional<int64_t> bound =
        getStaticUpperBound(t.qSlice.getMixedSizes()[2]);
    if (!bound)
      return t.qSlice.emitError()
             << "flash-to-tile: the Q tile's rows have no static bound";
    blockQ = *bound;
  }
  std::optional<int64_t> blockKV = getConstantIntValue(t.loops[0].getStep());
  for (scf::ForOp loop : t.loops)
    if (getConstantIntValue(loop.getStep()) != blockKV)
      return loop.emitError()
             << "flash-to-tile: the KV loops must step by one constant "
                "block size";
  if (!blockKV)
    return t.loops[0].emitError()
           << "flash-to-tile: the KV loops must step by one constant block "
              "size";
  // The forward kernel writes f32 partials when the KV loop is split, else
  // the output in the inputs' type (which flash.attention's verifier
  // requires of its result).
  flashc::GPUTileConfig config = flashc::makeGPUTileConfig(
      group, headDim, headDimV, 2, blockQ, *blockKV, t.combine ? 4 : 2,
      /*wideWarps=*/true, warpgroupMma && target.hasWarpgroupMma());
  // More stages only leave the kv warps' merge more room.
  config.stages = stages;
  if (std::string notYet = whyNoTileBody(config); !notYet.empty())
    return t.forall.emitError()
           << "flash-to-tile: the flash_tile body does not build " << notYet
           << " (G=" << config.group << ", Br=" << config.blockQ
           << ", Bc=" << config.blockKV << ")";
  std::string why = flashc::checkGPUTileConfig(config, target.sramBytes);
  LLVM_DEBUG(DBGS() << "@" << t.func.getSymName() << " on " << target.name
                    << ": G=" << config.group << " Br=" << config.blockQ
                    << " Bc=" << config.blockKV << " D=" << config.headDim
                    << " Dv=" << config.headDimV << ", " << config.rowTiles
                    << " row tiles x " << config.kvWarps
                    << " KV warps = " << config.threads() << " threads, "
                    << config.sharedBytes() << " bytes of shared memory"
                    << (t.combine ? ", f32 partials for the combine" : "")
                    << (why.empty() ? "" : "; rejected: " + why) << "\n");
  if (!why.empty())
    return t.forall.emitError() << "flash-to-tile: " << why << " on "
                                << target.name;

  // Launch geometry: one CTA per iteration of the tile loop.
  SmallVector<Attribute> gridFactors;
  for (OpFoldResult ub : t.forall.getMixedUpperBound()) {
    FailureOr<GridFactorAttr> factor = getGridFactor(t, ub, err);
    if (failed(factor))
      return report();
    gridFactors.push_back(*factor);
  }
  ArrayAttr grid = ArrayAttr::get(ctx, gridFactors);
  LLVM_DEBUG(DBGS() << "grid " << grid << "\n");

  OpBuilder ob(ctx);
  ob.setInsertionPointToEnd(gpuModule.getBody());
  Location loc = t.forall.getLoc();
  std::string name = t.func.getSymName().str();
  gpu::GPUFuncOp fwd =
      createKernel(ob, loc, name + "_fwd", elt,
                   getDataAlignment(elt, headDim, headDimV, alignment));
  FlashDialect::GridAttrHelper gridAttr(ctx);
  FlashDialect::BlockAttrHelper blockAttr(ctx);
  FlashDialect::SharedBytesAttrHelper sharedBytesAttr(ctx);
  gridAttr.setAttr(fwd, grid);
  sharedBytesAttr.setAttr(fwd, ob.getI64IntegerAttr(config.sharedBytes()));
  FlashDialect::TileAttrHelper(ctx).setAttr(
      fwd, ob.getDenseI64ArrayAttr({config.group, config.blockQ, config.blockKV,
                                    config.rowTiles, config.kvWarps}));
  {
    ImplicitLocOpBuilder b(loc, ob);
    b.setInsertionPointToStart(&fwd.getBody().front());
    // On sm_90a this kernel is a programmatic dependent launch too: it may
    // start while the kernel before it on the stream (the previous call's
    // combine, which lets it in as it starts, or any other) runs, and
    // waits for that kernel's results before its first access to memory.
    // Its launch then overlaps the previous kernel's end.
    if (this->target == "sm_90a")
      waitForPredecessor(b, fwd);
    // On sm_90a the combine may launch as soon as every CTA of this kernel
    // has started (it waits for this kernel's partials itself): its launch
    // overlaps this kernel's run. With one split no combine runs, and the
    // kernel after this one is not let in early.
    if (t.combine && this->target == "sm_90a") {
      Value split = arith::CmpIOp::create(
          b, arith::CmpIPredicate::sgt, fwd.getArgument(ArgSplits),
          arith::ConstantIntOp::create(b, b.getI64Type(), 1));
      auto ifSplit = scf::IfOp::create(b, split, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifSplit.thenBlock());
      gridDependency(b, "launch_dependents");
    }
    ValueRange args = fwd.getArguments();
    Lifter lift(b, t, args, err);

    // The CTA's iteration of the tile loop: the last induction variable
    // varies fastest.
    SmallVector<Value> ubs;
    for (OpFoldResult ub : t.forall.getMixedUpperBound()) {
      Value v = lift.get(ub);
      if (!v)
        return report();
      ubs.push_back(v);
    }
    Value total = ubs[0];
    for (size_t i = 1; i < ubs.size(); ++i)
      total = arith::MulIOp::create(b, total, ubs[i]);
    Value linear = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, linear,
                                          total);
    auto guard = scf::IfOp::create(b, TypeRange{}, inRange, false);
    b.setInsertionPointToStart(guard.thenBlock());
    // The forall is (batch and heads..., Q block[, split]). Lightest
    // first: the Q block varies faster than the heads, ascending. Heaviest
    // first (a causal kernel's last Q blocks see the most keys): the Q
    // block varies slowest, descending. Heaviest per head: the Q block
    // varies faster than the heads, descending. Auto: heaviest first where
    // a head has at least kHeaviestFromRows query rows, lightest first
    // below (chosen per launch, from the grid).
    size_t qDim = ubs.size() - (t.combine ? 2 : 1);
    bool masked = llvm::any_of(t.steps, [](AttentionStepOp step) {
      return static_cast<bool>(step.getMaskOffset());
    });
    StringRef order = masked ? StringRef(causalOrder) : "lightest";
    // A split kernel serves short queries (flash-split-kv's max-seq-q,
    // decode): auto is lightest first there, chosen when compiling.
    if (order == "auto" && t.combine)
      order = "lightest";
    // The tile loop's induction variables for the CTA `linear`, the Q
    // block varying slowest when `qSlowest`, reversed when `descending`.
    auto decompose = [&](bool qSlowest, bool descending) {
      SmallVector<size_t> dims; // slowest first
      if (qSlowest)
        dims.push_back(qDim);
      for (size_t i = 0; i < ubs.size(); ++i)
        if (!qSlowest || i != qDim)
          dims.push_back(i);
      Value rest = linear;
      SmallVector<Value> ivs(ubs.size());
      for (size_t k = dims.size(); k-- > 0;) {
        size_t i = dims[k];
        ivs[i] = k == 0 ? rest
                        : arith::RemUIOp::create(b, rest, ubs[i]).getResult();
        if (k > 0)
          rest = arith::DivUIOp::create(b, rest, ubs[i]);
      }
      if (descending)
        ivs[qDim] = arith::SubIOp::create(
            b, arith::SubIOp::create(b, ubs[qDim], lift.cst(1)), ivs[qDim]);
      return ivs;
    };
    SmallVector<Value> ivs;
    if (order == "auto") {
      SmallVector<Value> lightest = decompose(false, false);
      SmallVector<Value> heaviest = decompose(true, true);
      Value rows = arith::MulIOp::create(b, ubs[qDim], lift.cst(config.blockQ));
      Value useHeaviest =
          arith::CmpIOp::create(b, arith::CmpIPredicate::uge, rows,
                                lift.cst(kHeaviestFromRows));
      for (auto [l, h] : llvm::zip(lightest, heaviest))
        ivs.push_back(arith::SelectOp::create(b, useHeaviest, h, l));
    } else {
      ivs = decompose(order == "heaviest", order != "lightest");
    }
    for (auto [hostIv, iv] : llvm::zip(t.forall.getInductionVars(), ivs))
      lift.map.map(hostIv, iv);

    ForwardKernelSpec spec;
    spec.config = config;
    spec.elementType = elt;
    spec.rescaleThreshold = rescaleThreshold;
    spec.alignment = alignment;
    spec.scale = t.steps[0].getScale().convertToDouble();
    // A run-time factor of the scale is the kernel's scale argument: it
    // must be an argument of the host function, the same for every step.
    if (Value factor = t.steps[0].getScaleFactor()) {
      auto arg = dyn_cast<BlockArgument>(factor);
      if (!arg || arg.getOwner() != &t.func.getBody().front())
        return t.steps[0].emitError()
               << "flash-to-tile: the scale factor must be an argument of "
                  "the function (the kernel takes it as its scale)";
      spec.scaleFactor = lift.arg(ArgScale);
    }
    for (AttentionStepOp step : t.steps)
      if (step.getScaleFactor() != t.steps[0].getScaleFactor() ||
          step.getScale() != t.steps[0].getScale())
        return step.emitError() << "flash-to-tile: the attention steps of "
                                   "one kernel must share their scale";

    // The Q tile.
    SmallVector<Value> strides;
    if (!lift.slice(t.qSlice, spec.q.buffer, spec.q.base, strides))
      return report();
    if (strides.size() != 3)
      return t.qSlice.emitError()
             << "flash-to-tile: expected a [G, Br, D] slice of Q";
    spec.q.groupStride = strides[0];
    spec.q.rowStride = strides[1];
    spec.qRows = lift.get(t.qSlice.getMixedSizes()[2]);
    if (!spec.qRows || !lift.origin(t.qSlice, spec.qOrigin))
      return report();

    // K and V: the block at j starts at base0 + j * rowStride.
    auto kSlice = t.steps[0].getKey().getDefiningOp<tensor::ExtractSliceOp>();
    auto vSlice = t.steps[0].getValue().getDefiningOp<tensor::ExtractSliceOp>();
    for (auto [loop, step] : llvm::zip(t.loops, t.steps)) {
      for (auto s : {step.getKey().getDefiningOp<tensor::ExtractSliceOp>(),
                     step.getValue().getDefiningOp<tensor::ExtractSliceOp>()}) {
        SmallVector<OpFoldResult> offsets = s.getMixedOffsets();
        if (offsets.size() != 4 ||
            dyn_cast<Value>(offsets[2]) != loop.getInductionVar() ||
            getConstantIntValue(offsets[3]) != 0)
          return s.emitError() << "flash-to-tile: expected K and V blocks "
                                  "at [b, h, j, 0] of the KV loop";
        for (int64_t d = 0; d < 2; ++d) {
          SmallVector<OpFoldResult> first =
              (s.getSource() == kSlice.getSource() ? kSlice : vSlice)
                  .getMixedOffsets();
          if (offsets[d] != first[d])
            return s.emitError() << "flash-to-tile: the KV loops must "
                                    "address K and V alike";
        }
      }
    }
    {
      SmallVector<Value> kStrides, vStrides;
      if (!lift.slice(kSlice, spec.kBuffer, spec.kBase0, kStrides, 2) ||
          !lift.slice(vSlice, spec.vBuffer, spec.vBase0, vStrides, 2) ||
          !lift.origin(kSlice, spec.kOrigin, 2) ||
          !lift.origin(vSlice, spec.vOrigin, 2))
        return report();
      spec.kRowStride = lift.buffer(t.kRoot).strides[2];
      spec.vRowStride = lift.buffer(t.vRoot).strides[2];
      spec.seqKV = lift.dimOf(t.kRoot, 2);
      if (!spec.seqKV)
        return report();
    }

    // The KV loops: bounds from the tiled IR, block values per iteration.
    for (auto [loop, step] : llvm::zip(t.loops, t.steps)) {
      KVLoop kv;
      kv.lower = lift.get(loop.getLowerBound());
      kv.upper = lift.get(loop.getUpperBound());
      if (!kv.lower || !kv.upper)
        return report();
      kv.masked = static_cast<bool>(step.getMaskOffset());
      scf::ForOp hostLoop = loop;
      AttentionStepOp hostStep = step;
      Lifter *lifter = &lift;
      kv.blockValues = [hostLoop, hostStep, lifter](ImplicitLocOpBuilder &,
                                                    Value j) mutable {
        // A scope of its own: values depending on j are not reused.
        IRMapping saved = lifter->map;
        lifter->map.map(hostLoop.getInductionVar(), j);
        auto kBlock =
            hostStep.getKey().getDefiningOp<tensor::ExtractSliceOp>();
        BlockValues values;
        values.validKeys = lifter->get(kBlock.getMixedSizes()[2]);
        if (Value off = hostStep.getMaskOffset())
          values.maskOffset = lifter->get(off);
        lifter->map = saved;
        return values;
      };
      spec.loops.push_back(kv);
    }

    // Where the finalize writes.
    for (auto [i, dest] : llvm::enumerate(t.finalize.getDpsInits())) {
      auto slice = dest.getDefiningOp<tensor::ExtractSliceOp>();
      TileAddress tile;
      SmallVector<Value> st;
      if (!lift.slice(slice, tile.buffer, tile.base, st))
        return report();
      if (i == 0) {
        if (st.size() != 3)
          return slice.emitError()
                 << "flash-to-tile: expected a [G, Br, Dv] output tile";
        tile.groupStride = st[0];
        tile.rowStride = st[1];
        spec.out = tile;
        // The attention's own output (not split partials) as a subview.
        if (!t.combine && !lift.origin(slice, spec.outOrigin))
          return report();
        spec.outType = cast<ShapedType>(slice.getType()).getElementType();
        if (spec.outType.getIntOrFloatBitWidth() / 8 > config.outputBytes)
          return slice.emitError()
                 << "flash-to-tile: an output tile of " << spec.outType
                 << " is wider than the " << config.outputBytes
                 << "-byte staging area";
      } else {
        if (st.size() != 2)
          return slice.emitError()
                 << "flash-to-tile: expected a [G, Br] log-sum-exp tile";
        tile.groupStride = st[0];
        tile.rowStride = st[1];
        spec.lse = tile;
      }
    }
    // A split kernel also writes the attention's own output when its
    // launch has a single split: the partial tiles' offsets less the split.
    if (t.combine) {
      auto finalTile = [&](Value partial, Value root) {
        auto slice = partial.getDefiningOp<tensor::ExtractSliceOp>();
        Buffer buf = lift.buffer(root);
        TileAddress tile;
        tile.buffer = buf.memref;
        SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
        if (offsets.size() != buf.strides.size() + 1) {
          lift.fail(slice, "a split partial tile of unexpected rank");
          return tile;
        }
        tile.base =
            lift.offsetOf(ArrayRef<OpFoldResult>(offsets).drop_front(),
                          buf.strides);
        tile.groupStride = buf.strides[1];
        tile.rowStride = buf.strides[2];
        return tile;
      };
      ValueRange inits = t.finalize.getDpsInits();
      spec.finalOut = finalTile(inits[0], lift.rootOf(t.combine.getOut()));
      spec.finalOutType =
          cast<ShapedType>(t.combine.getOut().getType()).getElementType();
      if (t.combine.getLse() && inits.size() > 1)
        spec.finalLse = finalTile(inits[1], lift.rootOf(t.combine.getLse()));
      spec.splits = lift.index(lift.arg(ArgSplits));
    }
    if (err.op)
      return report();

    std::string why;
    if (failed(emitForwardTileBody(b, spec, why)))
      return t.forall.emitError()
             << "flash-to-tile: the flash_tile body does not build " << why;
    if (spec.finalOut.buffer)
      FlashDialect::FinalAtOneSplitAttrHelper(ctx).setAttr(
          fwd, UnitAttr::get(ctx));
    b.setInsertionPointToEnd(&fwd.getBody().front());
    gpu::ReturnOp::create(b);
  }

  if (!t.combine)
    return success();

  // The combine kernel: CTAs of a few rows of a few heads
  // (getCombineTileShape).
  auto outType = cast<ShapedType>(t.combine.getOut().getType());
  if (outType.getRank() != 4)
    return t.combine.emitError()
           << "flash-to-tile: expected a [B, H, Nq, Dv] output";
  int64_t heads = outType.getDimSize(1);
  auto rowSize = [&](unsigned dim, StringRef name) -> Attribute {
    if (outType.isDynamicDim(dim))
      return ob.getStringAttr(name);
    return ob.getI64IntegerAttr(outType.getDimSize(dim));
  };
  // B x heads / groupsPerCTA, or ceildiv(B, groupsPerCTA); then
  // ceildiv(Nq, rowsPerGroup).
  CombineTileShape shape = getCombineTileShape(headDimV, heads);
  int64_t combineThreads = 32 * shape.warps;
  SmallVector<Attribute> combineGrid = {
      GridFactorAttr::get(ctx, ob.getArrayAttr({rowSize(0, "B")}),
                          shape.overBatch ? shape.groupsPerCTA : 1)};
  if (!shape.overBatch && heads > shape.groupsPerCTA)
    combineGrid.push_back(GridFactorAttr::get(
        ctx,
        ob.getArrayAttr({ob.getI64IntegerAttr(heads / shape.groupsPerCTA)}),
        1));
  combineGrid.push_back(GridFactorAttr::get(
      ctx, ob.getArrayAttr({rowSize(2, "Nq")}), shape.rowsPerGroup));
  gpu::GPUFuncOp comb =
      createKernel(ob, loc, name + "_combine", elt,
                   getDataAlignment(elt, headDim, headDimV, alignment));
  gridAttr.setAttr(comb, ob.getArrayAttr(combineGrid));
  blockAttr.setAttr(comb, ob.getI64IntegerAttr(combineThreads));
  sharedBytesAttr.setAttr(comb, ob.getI64IntegerAttr(0));
  // Registers for a step's loads: ptxas, left to itself, gives the combine
  // 40 and issues the partials of a step's splits a few at a time (one
  // round trip to memory each) where they do not fit.
  FlashDialect::MaxRegistersAttrHelper(ctx).setAttr(
      comb, ob.getI64IntegerAttr(kCombineMaxRegisters));
  {
    ImplicitLocOpBuilder b(loc, ob);
    b.setInsertionPointToStart(&comb.getBody().front());
    // A programmatic dependent launch on sm_90a: the kernel may start
    // while the forward kernel runs, and waits for its partials here. It
    // then lets the next kernel launch (the next call's forward kernel,
    // which waits for this one's output itself).
    if (this->target == "sm_90a") {
      waitForPredecessor(b, comb);
      gridDependency(b, "launch_dependents");
    }
    ValueRange args = comb.getArguments();
    Lifter lift(b, t, args, err);
    CombineKernelSpec spec;
    spec.outType = outType.getElementType();
    spec.headDimV = headDimV;
    spec.warps = combineThreads / 32;
    spec.heads = heads;
    spec.alignment = alignment;
    spec.batch = lift.dimOf(t.combine.getOut(), 0);
    spec.seqQ = lift.dimOf(t.combine.getOut(), 2);
    spec.splits = lift.dimOf(t.combine.getParts(), 0);
    if (!spec.batch || !spec.seqQ || !spec.splits)
      return report();
    spec.rows = arith::MulIOp::create(
        b, arith::MulIOp::create(b, spec.batch, lift.cst(heads)), spec.seqQ);
    spec.parts = args[ArgWsOut];
    spec.partLse = args[ArgWsLse];
    spec.out = args[ArgOut];
    Buffer out = lift.buffer(lift.rootOf(t.combine.getOut()));
    spec.outStrideB = out.strides[0];
    spec.outStrideH = out.strides[1];
    spec.outStrideN = out.strides[2];
    if (t.combine.getLse())
      spec.lse = args[ArgLse];
    if (err.op)
      return report();
    emitCombineTileBody(b, spec);
    b.setInsertionPointToEnd(&comb.getBody().front());
    gpu::ReturnOp::create(b);
  }
  return success();
}

void FlashToTilePass::runOnOperation() {
  ModuleOp module = getOperation();
  llvm::Expected<TargetInfo> target = TargetInfo::getGPU(this->target);
  if (!target) {
    module.emitError() << "flash-to-tile: "
                       << llvm::toString(target.takeError());
    return signalPassFailure();
  }
  if (!isCausalOrder(causalOrder)) {
    module.emitError() << "flash-to-tile: causal-order is "
                       << getCausalOrderNames() << ", not '" << causalOrder
                       << "'";
    return signalPassFailure();
  }
  if (std::string why = flashc::whyNotPipelineStageCount(stages);
      !why.empty()) {
    module.emitError() << "flash-to-tile: " << why;
    return signalPassFailure();
  }
  if (std::string why = flashc::whyNotRescaleThreshold(rescaleThreshold);
      !why.empty()) {
    module.emitError() << "flash-to-tile: " << why;
    return signalPassFailure();
  }
  if (std::string why = flashc::whyNotGlobalAlignment(alignment);
      !why.empty()) {
    module.emitError() << "flash-to-tile: " << why;
    return signalPassFailure();
  }

  SmallVector<TiledAttention, 1> work;
  bool failedMatch = false;
  FlashDialect::TileLoopAttrHelper tileLoop(&getContext());
  for (auto func : module.getOps<func::FuncOp>()) {
    SmallVector<scf::ForallOp> foralls;
    func.walk([&](scf::ForallOp f) {
      if (tileLoop.isAttrPresent(f))
        foralls.push_back(f);
    });
    if (foralls.empty()) {
      LLVM_DEBUG(DBGS() << "@" << func.getSymName() << " has no "
                        << tileLoop.getNameStr() << "\n");
      // A tile loop of a single iteration may have been folded away.
      WalkResult steps = func.walk([](AttentionStepOp) {
        return WalkResult::interrupt();
      });
      if (steps.wasInterrupted()) {
        func.emitError() << "flash-to-tile: attention steps outside a "
                         << tileLoop.getNameStr()
                         << " (a tile loop of one iteration is folded away "
                            "for static shapes of one tile; give the batch "
                            "or the lengths dynamically)";
        failedMatch = true;
      }
      continue;
    }
    if (foralls.size() > 1) {
      foralls[1].emitError() << "flash-to-tile: one attention per function";
      failedMatch = true;
      continue;
    }
    MatchError err;
    FailureOr<TiledAttention> t = analyze(func, foralls[0], err);
    if (failed(t)) {
      (err.op ? err.op : foralls[0].getOperation())->emitError()
          << "flash-to-tile: " << err.message;
      failedMatch = true;
      continue;
    }
    work.push_back(*t);
  }
  if (failedMatch)
    return signalPassFailure();
  if (work.empty())
    return;

  OpBuilder b(&getContext());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "flash_kernels");
  b.setInsertionPointToStart(gpuModule.getBody());
  // The kernels' dynamic shared memory: the lowering of
  // gpu.dynamic_shared_memory (flash-tile-to-nvgpu) takes this extern
  // array rather than declaring one of its own.
  auto space = gpu::AddressSpaceAttr::get(&getContext(),
                                          gpu::AddressSpace::Workgroup);
  memref::GlobalOp::create(
      b, module.getLoc(), "flash_smem", b.getStringAttr("public"),
      MemRefType::get({0}, b.getI8Type(), MemRefLayoutAttrInterface(), space),
      Attribute(), /*constant=*/false, b.getI64IntegerAttr(16));
  for (TiledAttention &t : work) {
    if (failed(build(t, gpuModule, *target)))
      return signalPassFailure();
    ++numForwardKernels;
    if (t.combine)
      ++numCombineKernels;
    t.func.erase();
  }
}

} // namespace

bool mlir::flash::isCausalOrder(StringRef name) {
  return llvm::is_contained(
      {StringRef("auto"), StringRef("lightest"), StringRef("heaviest"),
       StringRef("heaviest-per-head")},
      name);
}

StringRef mlir::flash::getCausalOrderNames() {
  return "auto, lightest, heaviest or heaviest-per-head";
}
