//===- KernelModule.cpp - The module a kernel is compiled from ------------===//
//
// The kernel module of an AttentionSpec (the entry points of a GPU or a CPU
// kernel around one flash.attention), and the spec of the single attention a
// caller's module holds.
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"

#include "CompilerUtils.h"

#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

std::string AttentionSpec::toMLIR(bool dynamicSizes, bool cpuKernel) const {
  std::string t = std::string(::flashc::stringify(dtype));
  auto size = [&](int64_t v) {
    return dynamicSizes ? std::string("?") : std::to_string(v);
  };
  std::string b = size(batch), nq = size(seqQ), nk = size(seqKV);
  auto tensor = [&](int64_t h, const std::string &n, int64_t d) {
    return llvm::formatv("{0}x{1}x{2}x{3}x{4}", b, h, n, d, t).str();
  };
  std::string q = tensor(heads, nq, headDim);
  std::string k = tensor(kvHeads, nk, headDim);
  std::string v = tensor(kvHeads, nk, valueDim());
  std::string o = tensor(heads, nq, valueDim());
  std::string l = llvm::formatv("{0}x{1}x{2}xf32", b, heads, nq).str();
  const char *strided4 = ", strided<[?, ?, ?, 1], offset: ?>";
  const char *strided3 = ", strided<[?, ?, 1], offset: ?>";
  auto mem = [&](const std::string &shape, bool rank3 = false) {
    return "memref<" + shape + (rank3 ? strided3 : strided4) + ">";
  };
  std::string s;
  llvm::raw_string_ostream os(s);
  auto function = [&](const char *name, bool decode) {
    os << "func.func @" << name << "(%qm: " << mem(q) << ", %km: " << mem(k)
       << ", %vm: " << mem(v) << ", %om: " << mem(o);
    if (withLse)
      os << ", %lm: " << mem(l, true);
    os << ", %scale: f32";
    if (cpuKernel)
      os << ", %splits: index {"
         << FlashDialect::SplitCountAttrHelper::getNameStr() << "}";
    os << ") attributes {llvm.emit_c_interface";
    if (decode)
      os << ", " << FlashDialect::DecodeAttrHelper::getNameStr();
    os << "} {\n";
    auto toTensor = [&](const char *name, const std::string &shape, bool r3) {
      os << "  %" << name << " = bufferization.to_tensor %" << name
         << "m restrict : " << mem(shape, r3) << " to tensor<" << shape
         << ">\n";
    };
    toTensor("q", q, false);
    toTensor("k", k, false);
    toTensor("v", v, false);
    os << "  " << (withLse ? "%o, %l" : "%o")
       << " = flash.attention %q, %k, %v scale = 1.0 scale_factor(%scale)"
       << (isCausal() ? " causal" : "") << " : tensor<" << q << ">, tensor<" << k
       << ">, tensor<" << v << "> -> tensor<" << o << ">"
       << (withLse ? ", tensor<" + l + ">" : "") << "\n";
    os << "  bufferization.materialize_in_destination %o in restrict writable "
          "%om : (tensor<"
       << o << ">, " << mem(o) << ") -> ()\n";
    if (withLse)
      os << "  bufferization.materialize_in_destination %l in restrict "
            "writable %lm : (tensor<"
         << l << ">, " << mem(l, true) << ") -> ()\n";
    os << "  return\n}\n";
  };
  function("flash_attention", /*decode=*/false);
  if (cpuKernel)
    function("flash_attention_decode", /*decode=*/true);
  return s;
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
  DiagnosticCollector diags(ctx);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &ctx);
  if (!module)
    return llvm::createStringError("cannot parse the module: " +
                                   diags.messages);
  PassManager pm(&ctx);
  pm.addPass(createFlashFuseAttention());
  if (failed(pm.run(*module)))
    return llvm::createStringError("fusion failed: " + diags.messages);
  SmallVector<AttentionOp> ops;
  module->walk([&](AttentionOp op) { ops.push_back(op); });
  if (ops.size() != 1)
    return llvm::createStringError(
        llvm::formatv("expected exactly one attention (flash.attention or a "
                      "fusable matmul-softmax-matmul chain), found {0}",
                      ops.size())
            .str());
  AttentionOp op = ops.front();
  for (Value operand : op->getOperands())
    if (!isa<BlockArgument>(operand))
      return llvm::createStringError(
          "the attention's operands must be function arguments");
  llvm::Expected<AttentionProblem> shape =
      getStaticAttentionProblem(op.getQuery().getType(), op.getKey().getType(),
                                op.getValue().getType(), op.getMask());
  if (!shape)
    return llvm::createStringError("cannot build a kernel: " +
                                   llvm::toString(shape.takeError()));
  AttentionSpec spec = *shape;
  spec.scale = op.getEffectiveScale();
  spec.withLse = static_cast<bool>(op.getLse());
  if (llvm::Error e = spec.validate())
    return e;
  return spec;
}
