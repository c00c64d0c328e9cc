//===- KernelModule.cpp - The module a kernel is compiled from ------------===//
//
// Builds the kernel module of an AttentionSpec with the dialects' builders
// (KernelModule.h describes its form), and makes a caller's module the
// kernel module of the single attention it holds.
//
//===----------------------------------------------------------------------===//

#include "KernelModule.h"

#include "CompilerUtils.h"

#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <initializer_list>
#include <optional>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {

/// The types of a kernel entry point's operands, as tensors and as the
/// memrefs the entry point takes.
struct EntryTypes {
  RankedTensorType q, k, v, out, lse;

  EntryTypes(MLIRContext *ctx, const AttentionSpec &spec) {
    constexpr int64_t dyn = ShapedType::kDynamic;
    Type element = spec.dtype == ElementType::F16 ? Type(Float16Type::get(ctx))
                   : spec.dtype == ElementType::BF16
                       ? Type(BFloat16Type::get(ctx))
                       : Type(Float32Type::get(ctx));
    auto tensor = [&](int64_t heads, int64_t dim) {
      return RankedTensorType::get({dyn, heads, dyn, dim}, element);
    };
    q = tensor(spec.heads, spec.headDim);
    k = tensor(spec.kvHeads, spec.headDim);
    v = tensor(spec.kvHeads, spec.valueDim());
    out = tensor(spec.heads, spec.valueDim());
    lse = RankedTensorType::get({dyn, spec.heads, dyn}, Float32Type::get(ctx));
  }

  /// `tensor` as a memref with any offset and strides but a unit innermost
  /// one.
  static MemRefType memref(RankedTensorType tensor) {
    constexpr int64_t dyn = ShapedType::kDynamic;
    SmallVector<int64_t> strides(tensor.getRank(), dyn);
    strides.back() = 1;
    return MemRefType::get(
        tensor.getShape(), tensor.getElementType(),
        StridedLayoutAttr::get(tensor.getContext(), dyn, strides));
  }
};

/// Creates the attention of an entry point from its Q, K and V tensors and
/// its scale argument.
using AttentionBuilder = llvm::function_ref<Operation *(
    OpBuilder &, Location, Value q, Value k, Value v, Value scale)>;

/// Builds the entry point `name` at `b`'s insertion point: the memref
/// arguments as tensors, the attention `makeAttention` creates, and its
/// results written into the output memrefs.
void buildEntry(OpBuilder &b, Location loc, llvm::StringRef name,
                const EntryTypes &types, bool withLse, KernelKind kind,
                bool decode, AttentionBuilder makeAttention) {
  MLIRContext *ctx = b.getContext();
  SmallVector<Type> arguments = {
      EntryTypes::memref(types.q), EntryTypes::memref(types.k),
      EntryTypes::memref(types.v), EntryTypes::memref(types.out)};
  if (withLse)
    arguments.push_back(EntryTypes::memref(types.lse));
  arguments.push_back(b.getF32Type());
  if (kind == KernelKind::CPU)
    arguments.push_back(b.getIndexType());
  auto func =
      func::FuncOp::create(b, loc, name, b.getFunctionType(arguments, {}));
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  if (decode)
    FlashDialect::DecodeAttrHelper(ctx).setAttr(func, b.getUnitAttr());
  if (kind == KernelKind::CPU)
    func.setArgAttr(arguments.size() - 1,
                    FlashDialect::SplitCountAttrHelper::getNameStr(),
                    b.getUnitAttr());

  Block *body = func.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);
  auto toTensor = [&](RankedTensorType type, unsigned argument) -> Value {
    return bufferization::ToTensorOp::create(b, loc, type,
                                             body->getArgument(argument),
                                             /*restrict=*/true);
  };
  Value q = toTensor(types.q, 0);
  Value k = toTensor(types.k, 1);
  Value v = toTensor(types.v, 2);
  Value scale = body->getArgument(withLse ? 5 : 4);
  Operation *attention = makeAttention(b, loc, q, k, v, scale);
  for (unsigned i = 0, e = withLse ? 2 : 1; i < e; ++i)
    bufferization::MaterializeInDestinationOp::create(
        b, loc, /*result=*/Type(), attention->getResult(i),
        body->getArgument(3 + i), /*restrict=*/true, /*writable=*/true);
  func::ReturnOp::create(b, loc);
}

/// Builds the entry points of a `kind` kernel at `b`'s insertion point.
void buildEntries(OpBuilder &b, Location loc, const EntryTypes &types,
                  bool withLse, KernelKind kind,
                  AttentionBuilder makeAttention) {
  b.getContext()
      ->loadDialect<bufferization::BufferizationDialect, func::FuncDialect,
                    FlashDialect>();
  buildEntry(b, loc, "flash_attention", types, withLse, kind,
             /*decode=*/false, makeAttention);
  if (kind == KernelKind::CPU)
    buildEntry(b, loc, "flash_attention_decode", types, withLse, kind,
               /*decode=*/true, makeAttention);
}

} // namespace

OwningOpRef<ModuleOp> mlir::flash::detail::buildKernelModule(
    MLIRContext &ctx, const AttentionSpec &spec, KernelKind kind) {
  Location loc = UnknownLoc::get(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
  EntryTypes types(&ctx, spec);
  buildEntries(b, loc, types, spec.withLse, kind,
               [&](OpBuilder &b, Location loc, Value q, Value k, Value v,
                   Value scale) -> Operation * {
                 return AttentionOp::create(
                     b, loc, q, k, v, b.getF32FloatAttr(1.0), spec.mask,
                     spec.withLse, scale);
               });
  return module;
}

//===----------------------------------------------------------------------===//
// A caller's module
//===----------------------------------------------------------------------===//

namespace {

/// Parses `source` and fuses its naive graph (flash-fuse-attention).
llvm::Expected<OwningOpRef<ModuleOp>> parseAndFuse(MLIRContext &ctx,
                                                   llvm::StringRef source) {
  DiagnosticCollector diags(ctx);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &ctx);
  if (!module)
    return llvm::createStringError("cannot parse the module: " +
                                   diags.messages);
  PassManager pm(&ctx);
  pm.addPass(createFlashFuseAttention());
  if (failed(pm.run(*module)))
    return llvm::createStringError("fusion failed: " + diags.messages);
  return module;
}

/// The single flash.attention of `module`, whose operands must be
/// arguments of its function.
llvm::Expected<AttentionOp> findAttention(ModuleOp module) {
  SmallVector<AttentionOp> ops;
  module->walk([&](AttentionOp op) { ops.push_back(op); });
  if (ops.size() != 1)
    return llvm::createStringError(
        llvm::formatv("expected exactly one attention (flash.attention or a "
                      "fusable matmul-softmax-matmul chain), found {0}",
                      ops.size())
            .str());
  AttentionOp op = ops.front();
  auto func = op->getParentOfType<func::FuncOp>();
  for (Value operand : op->getOperands()) {
    auto argument = dyn_cast<BlockArgument>(operand);
    if (!func || !argument ||
        argument.getOwner() != &func.getFunctionBody().front())
      return llvm::createStringError(
          "the attention's operands must be function arguments");
  }
  return op;
}

/// The problem of `op`, with its static sizes; a dynamic batch reads as 1
/// and a dynamic length as 4096 (ImportedModule::spec).
AttentionSpec readSpec(AttentionOp op) {
  RankedTensorType q = op.getQuery().getType(), k = op.getKey().getType(),
                   v = op.getValue().getType();
  // The first static size of those the verifier keeps equal.
  auto size = [](std::initializer_list<int64_t> sizes, int64_t dynamic) {
    for (int64_t s : sizes)
      if (!ShapedType::isDynamic(s))
        return s;
    return dynamic;
  };
  AttentionSpec spec;
  spec.batch = size({q.getDimSize(0), k.getDimSize(0), v.getDimSize(0),
                     op.getOut().getType().getDimSize(0)},
                    1);
  spec.heads = q.getDimSize(1);
  spec.kvHeads = k.getDimSize(1);
  spec.seqQ =
      size({q.getDimSize(2), op.getOut().getType().getDimSize(2)}, 4096);
  spec.seqKV = size({k.getDimSize(2), v.getDimSize(2)}, 4096);
  spec.headDim = q.getDimSize(3);
  spec.headDimV = v.getDimSize(3);
  // The verifier admits these three only.
  Type element = q.getElementType();
  spec.dtype = element.isF16()    ? ElementType::F16
               : element.isBF16() ? ElementType::BF16
                                  : ElementType::F32;
  spec.mask = op.getMask();
  spec.scale = op.getEffectiveScale();
  spec.withLse = static_cast<bool>(op.getLse());
  return spec;
}

/// Replaces the function holding `op` with the entry points of a `kind`
/// kernel for `group` (the attention's KV head group), each holding a copy
/// of `op` on the entry point's operands.
llvm::Error makeKernelModule(ModuleOp module, AttentionOp op,
                             const AttentionSpec &group, KernelKind kind) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!SymbolTable::symbolKnownUseEmpty(func, module))
    return llvm::createStringError(
        "@" + func.getSymName() +
        " holds the attention and is used elsewhere in the module; the "
        "kernel's entry points take its place");
  SmallVector<llvm::StringRef, 2> entries = {"flash_attention"};
  if (kind == KernelKind::CPU)
    entries.push_back("flash_attention_decode");
  for (llvm::StringRef name : entries) {
    Operation *other = SymbolTable::lookupSymbolIn(module, name);
    if (other && other != func)
      return llvm::createStringError(
          "the module has a symbol @" + name +
          " besides the attention's function; the kernel's entry point "
          "takes that name");
  }
  OpBuilder b(func);
  EntryTypes types(module.getContext(), group);
  buildEntries(b, func.getLoc(), types, group.withLse, kind,
               [&](OpBuilder &b, Location, Value q, Value k, Value v,
                   Value scale) -> Operation * {
                 auto attention = cast<AttentionOp>(b.clone(*op));
                 attention.getQueryMutable().assign(q);
                 attention.getKeyMutable().assign(k);
                 attention.getValueMutable().assign(v);
                 attention.getScaleFactorMutable().assign(scale);
                 attention.setScaleAttr(b.getF32FloatAttr(1.0));
                 attention.getOut().setType(types.out);
                 if (Value lse = attention.getLse())
                   lse.setType(types.lse);
                 return attention;
               });
  func.erase();
  return llvm::Error::success();
}

} // namespace

llvm::Expected<ImportedModule>
mlir::flash::detail::importModule(MLIRContext &ctx, llvm::StringRef source,
                                  KernelKind kind) {
  llvm::Expected<OwningOpRef<ModuleOp>> module = parseAndFuse(ctx, source);
  if (!module)
    return module.takeError();
  llvm::Expected<AttentionOp> op = findAttention(**module);
  if (!op)
    return op.takeError();
  ImportedModule imported;
  imported.spec = readSpec(*op);
  if (llvm::Error e = imported.spec.validate())
    return std::move(e);
  AttentionSpec group = groupKernelSpec(imported.spec);
  if (llvm::Error e = makeKernelModule(**module, *op, group, kind))
    return std::move(e);
  imported.module = std::move(*module);
  OwningOpRef<ModuleOp> described = buildKernelModule(ctx, group, kind);
  imported.describedBySpec = printOp(*described) == printOp(*imported.module);
  return imported;
}

llvm::Expected<AttentionSpec> AttentionSpec::fromMLIR(llvm::StringRef source) {
  // Parsing and fusion see the caller's IR: a crash in them must not take
  // the caller's process down.
  std::optional<llvm::Expected<AttentionSpec>> result;
  if (!runRecoveringCrashes([&] { result.emplace(fromMLIRUnguarded(source)); }))
    return crashError("crashed while parsing or fusing the module (a bug in "
                      "MLIR or flashc)",
                      source, "mlir");
  return std::move(*result);
}

llvm::Expected<AttentionSpec>
AttentionSpec::fromMLIRUnguarded(llvm::StringRef source) {
  MLIRContext ctx(getRegistry(), MLIRContext::Threading::DISABLED);
  llvm::Expected<OwningOpRef<ModuleOp>> module = parseAndFuse(ctx, source);
  if (!module)
    return module.takeError();
  llvm::Expected<AttentionOp> op = findAttention(**module);
  if (!op)
    return op.takeError();
  // A spec has sizes: the module's must be static.
  llvm::Expected<AttentionProblem> problem = getStaticAttentionProblem(
      op->getQuery().getType(), op->getKey().getType(),
      op->getValue().getType(), op->getMask());
  if (!problem)
    return llvm::createStringError("cannot build a kernel: " +
                                   llvm::toString(problem.takeError()));
  AttentionSpec spec = readSpec(*op);
  if (llvm::Error e = spec.validate())
    return std::move(e);
  return spec;
}
