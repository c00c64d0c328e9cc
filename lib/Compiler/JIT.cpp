//===- JIT.cpp - Compile, cache and run attention kernels -----------------===//
//
// Implements the C++ API: the kernel module of an AttentionSpec, the staged
// compilation through flashc's pipeline to LLVM, the MLIR ExecutionEngine
// with the host CPU's features, buffer checking, and the content-addressed
// cache.
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"

#include "CompilerUtils.h"
#include "ScratchAllocator.h"

#include "flashc/Analysis/CostModel.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"
#include "flashc/InitFlashc.h"
#include "flashc/Support/Sizes.h"
#include "flashc/Target/TargetInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

//===----------------------------------------------------------------------===//
// ElementType and AttentionSpec
//===----------------------------------------------------------------------===//

llvm::Error AttentionSpec::validate() const {
  if (flashc::Status status = check())
    return llvm::createStringError(status.message());
  return llvm::Error::success();
}

llvm::Error mlir::flash::checkScale(double scale) {
  if (flashc::Status status = flashc::checkScale(scale))
    return llvm::createStringError(status.message());
  return llvm::Error::success();
}

::flashc::AttentionProblem AttentionSpec::shape() const {
  ::flashc::AttentionProblem s = *this;
  s.headDimV = valueDim();
  return s;
}

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

AttentionSpec mlir::flash::detail::groupKernelSpec(const AttentionSpec &spec) {
  AttentionSpec k = spec;
  k.heads = spec.heads / spec.kvHeads;
  k.kvHeads = 1;
  return k;
}

std::string mlir::flash::detail::cpuKernelKey(const AttentionSpec &spec,
                                              const PipelineConfig &c) {
  // Neither the sizes nor the scale (an argument) are in the code.
  AttentionSpec sizeFree = groupKernelSpec(spec);
  sizeFree.batch = sizeFree.seqQ = sizeFree.seqKV = 0;
  sizeFree.scale = std::nullopt;
  sizeFree.layout = flashc::Layout::BHND;
  return "cpu " + sizeFree.str() + " | " + c.str();
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

const DialectRegistry &mlir::flash::detail::getRegistry() {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    registerFlashcDialects(*r);
    registerFlashcTranslations(*r);
    registerFlashcPasses();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return r;
  }();
  return *registry;
}

std::string mlir::flash::detail::printOp(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

/// Runs `body` so that a crash (a signal, an abort) inside it returns here.
/// Returns false when it crashed. The first call installs LLVM's crash
/// recovery signal handlers for the process.
static bool runRecoveringCrashes(llvm::function_ref<void()> body) {
  static std::once_flag enabled;
  std::call_once(enabled, [] { llvm::CrashRecoveryContext::Enable(); });
  llvm::CrashRecoveryContext context;
  return context.RunSafely(body);
}

/// Saves `contents` as a reproducer; the error names what crashed and
/// where the reproducer is.
static llvm::Error crashError(llvm::StringRef what, llvm::StringRef contents,
                              llvm::StringRef suffix) {
  llvm::SmallString<128> path;
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "flashc-crash", suffix, fd, path))
    return llvm::createStringError(what + " (and no reproducer could be "
                                          "saved: " +
                                   ec.message() + ")");
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << contents;
    os.flush();
    if (os.has_error())
      os.clear_error();
  }
  return llvm::createStringError(what + "; reproducer: " + path);
}

llvm::Expected<OwningOpRef<ModuleOp>> mlir::flash::detail::runStages(
    MLIRContext &ctx, llvm::StringRef source, const PipelineConfig &config,
    llvm::StringRef last,
    std::vector<std::pair<std::string, std::string>> *stageIR,
    llvm::function_ref<void(llvm::StringRef, ModuleOp)> afterStage) {
  DiagnosticCollector diags(ctx);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &ctx);
  if (!module)
    return llvm::createStringError("cannot parse the kernel module: " +
                                   diags.messages);
  if (llvm::Error e = config.validate())
    return e;
  for (llvm::StringRef stage : pipelineStages(config.target)) {
    PassManager pm(&ctx);
    // The IR is verified once per stage rather than after every pass: the
    // GPU stages run a dozen passes over kernels of thousands of ops, and
    // per-pass verification was a tenth of the compile time. (flashc-opt
    // and the lit tests keep verifying after each pass.)
    pm.enableVerifier(false);
    if (llvm::Error e = buildStage(pm, stage, config))
      return e;
    LogicalResult ran = failure();
    if (!runRecoveringCrashes([&] { ran = pm.run(*module); }))
      return crashError("stage '" + stage.str() +
                            "' crashed (a bug in MLIR or flashc); the "
                            "reproducer is the pipeline's input, for "
                            "flashc-opt with `" +
                            config.str() + "`",
                        source, "mlir");
    if (failed(ran))
      return llvm::createStringError("stage '" + stage + "' failed: " +
                                     diags.messages);
    if (failed(verify(*module)))
      return llvm::createStringError("stage '" + stage +
                                     "' produced invalid IR: " +
                                     diags.messages);
    if (stageIR)
      stageIR->emplace_back(stage.str(), printOp(*module));
    if (afterStage)
      afterStage(stage, *module);
    if (stage == last)
      break;
  }
  return module;
}

llvm::Expected<OwningOpRef<ModuleOp>> mlir::flash::detail::runCPUKernelStages(
    MLIRContext &ctx, const AttentionSpec &spec, const PipelineConfig &config,
    llvm::StringRef last,
    std::vector<std::pair<std::string, std::string>> *stageIR,
    llvm::function_ref<void(llvm::StringRef, ModuleOp)> afterStage) {
  // One GQA group over any batch (times KV heads) and length, and a split
  // count chosen at every run (a fixed count in `config` is passed at every
  // call instead).
  PipelineConfig c = config;
  c.splits = 0;
  c.dynamicSplits = true;
  // Heap buffers through the JIT's scratch allocator (jitEntry binds it).
  c.allocHooks = true;
  return runStages(ctx,
                   groupKernelSpec(spec).toMLIR(/*dynamicSizes=*/true,
                                                /*cpuKernel=*/true),
                   c, last, stageIR, afterStage);
}

Kernel::Kernel() : code(std::make_shared<Code>()) {}
Kernel::~Kernel() = default;
Kernel::Code::Code() = default;
Kernel::Code::~Code() = default;

llvm::Expected<std::string> Compiler::lowerToStage(const AttentionSpec &spec,
                                                   const PipelineConfig &config,
                                                   llvm::StringRef stage) {
  if (llvm::Error e = spec.validate())
    return e;
  if (!stage.empty())
    if (llvm::Error e = checkStage(stage, config.target))
      return e;
  // GPU kernels serve every batch and length: their IR has dynamic sizes.
  bool gpu = config.isGPU();
  bool sharedStage = stage == "fuse" || stage == "online" || stage == "tiled";
  if (gpu && !sharedStage)
    if (llvm::Error e = checkGPUSpec(spec, config.target))
      return e;
  MLIRContext ctx(getRegistry(), MLIRContext::Threading::DISABLED);
  llvm::Expected<OwningOpRef<ModuleOp>> module =
      gpu ? runStages(ctx, groupKernelSpec(spec).toMLIR(/*dynamicSizes=*/true),
                      gpuConfig(spec, config), stage, nullptr)
          : runCPUKernelStages(ctx, spec, config, stage, nullptr);
  if (!module)
    return module.takeError();
  return printOp(**module);
}

/// The host's target machine, for LLVM's optimisation and code generation.
static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createHostTargetMachine() {
  auto tmBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!tmBuilder)
    return tmBuilder.takeError();
  tmBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return tmBuilder->createTargetMachine();
}

llvm::Expected<std::string> Compiler::emitLLVMIR(const AttentionSpec &spec,
                                                 const PipelineConfig &config) {
  if (llvm::Error e = spec.validate())
    return e;
  MLIRContext ctx(getRegistry(), MLIRContext::Threading::DISABLED);
  if (config.isGPU())
    return llvm::createStringError(
        "LLVM IR is emitted for the CPU; GPU kernels are PTX (emit ptx)");
  // The module a CPU kernel is built from: any batch and length.
  llvm::Expected<OwningOpRef<ModuleOp>> module =
      runCPUKernelStages(ctx, spec, config, "", nullptr);
  if (!module)
    return module.takeError();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(**module, llvmContext);
  if (!llvmModule)
    return llvm::createStringError("translation to LLVM IR failed");
  auto tm = createHostTargetMachine();
  if (!tm)
    return tm.takeError();
  llvmModule->setDataLayout((*tm)->createDataLayout());
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  if (llvm::Error e =
          makeOptimizingTransformer(3, 0, tm->get())(llvmModule.get()))
    return e;
  std::string s;
  llvm::raw_string_ostream os(s);
  llvmModule->print(os, nullptr);
  return s;
}

/// Erases the LLVM-dialect functions of the CPU kernel's entry point
/// `name` from `module`: its body and its C-interface wrapper.
static void eraseEntry(ModuleOp module, llvm::StringRef name) {
  std::string wrapper = ("_mlir_ciface_" + name).str();
  for (auto func :
       llvm::make_early_inc_range(module.getOps<LLVM::LLVMFuncOp>()))
    if (func.getSymName() == name || func.getSymName() == wrapper)
      func.erase();
}

/// JIT-compiles `module` for the host, optimised by `transformer`, and
/// looks up the C-interface entry `name`.
static llvm::Expected<std::pair<std::unique_ptr<ExecutionEngine>, void *>>
jitEntry(ModuleOp module,
         const std::function<llvm::Error(llvm::Module *)> &transformer,
         llvm::StringRef name) {
  static const llvm::StringRef libraries[] = {FLASHC_OPENMP_LIBRARY,
                                              FLASHC_RUNNER_UTILS_LIBRARY};
  ExecutionEngineOptions options;
  options.sharedLibPaths = libraries;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener =
      std::getenv("FLASHC_PERF_JIT") != nullptr;
  DiagnosticCollector diags(*module.getContext());
  auto engine = ExecutionEngine::create(module, options);
  if (!engine)
    return llvm::createStringError(
        "JIT compilation failed: " + llvm::toString(engine.takeError()) +
        (diags.messages.empty() ? "" : "; " + diags.messages));
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    auto bind = [&](llvm::StringRef symbol, auto *function) {
      symbols[interner(symbol)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                                   llvm::JITSymbolFlags::Exported};
    };
    bind("_mlir_memref_to_llvm_alloc", &flash::detail::scratchAlloc);
    bind("_mlir_memref_to_llvm_aligned_alloc",
         &flash::detail::scratchAlignedAlloc);
    bind("_mlir_memref_to_llvm_free", &flash::detail::scratchFree);
    return symbols;
  });
  auto entry = (*engine)->lookup(("_mlir_ciface_" + name).str());
  if (!entry)
    return entry.takeError();
  return std::make_pair(std::move(*engine), *entry);
}

llvm::Expected<void *> Kernel::getDecodeEntry() const {
  Code &c = *code;
  std::lock_guard<std::mutex> lock(c.decodeMutex);
  if (c.decodeEntry)
    return c.decodeEntry;
  MLIRContext ctx(getRegistry(), MLIRContext::Threading::DISABLED);
  DiagnosticCollector diags(ctx);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(c.decodeIR, &ctx);
  if (!module)
    return llvm::createStringError("the decode entry's IR does not parse: " +
                                   diags.messages);
  auto jitted = jitEntry(*module, c.transformer, "flash_attention_decode");
  if (!jitted)
    return llvm::createStringError("compiling the decode entry: " +
                                   llvm::toString(jitted.takeError()));
  c.decodeEngine = std::move(jitted->first);
  c.decodeEntry = jitted->second;
  return c.decodeEntry;
}

llvm::Error Kernel::prepare(int64_t seqQ) const {
  if (isGPU() || seqQ > maxSeqQ)
    return llvm::Error::success();
  return getDecodeEntry().takeError();
}

/// Builds the kernel for `spec` (no caching).
llvm::Expected<std::unique_ptr<Kernel>>
KernelBuilder::build(const AttentionSpec &spec, const PipelineConfig &config) {
  auto start = std::chrono::steady_clock::now();
  auto kernel = std::unique_ptr<Kernel>(new Kernel());
  kernel->spec = spec;
  kernel->metadata.target = config.target;
  kernel->metadata.config = config.str();
  MLIRContext ctx(getRegistry(), MLIRContext::Threading::DISABLED);
  KernelMetadata &meta = kernel->metadata;
  // The kernel serves every batch and length (they are its arguments), and
  // its split count is chosen at every run unless the configuration fixes
  // it. The tile sizes are the model's for unknown lengths, as flash-tile
  // chooses them; the KV block is read off the tiled IR.
  AttentionProblem shape = groupKernelSpec(spec).shape();
  shape.batch = 1;
  shape.seqQ = shape.seqKV = 4096;
  meta.tiles = chooseTileSizes(*TargetInfo::get(config.target), shape,
                               *parseLoopOrder(config.loopOrder));
  if (config.blockQ)
    meta.tiles.blockQ = config.blockQ;
  if (config.blockKV)
    meta.tiles.blockKV = config.blockKV;
  meta.splits = config.splits;
  kernel->fixedSplits = config.splits;
  kernel->maxSeqQ = config.maxSeqQ;
  kernel->threads = config.getNumThreads();
  auto inspect = [&](llvm::StringRef stage, ModuleOp module) {
    if (stage != "tiled")
      return;
    FlashDialect::KvLoopAttrHelper kvLoop(module.getContext());
    module->walk([&](scf::ForOp loop) {
      if (!kvLoop.isAttrPresent(loop))
        return;
      if (std::optional<int64_t> step = getConstantIntValue(loop.getStep()))
        meta.tiles.blockKV = *step;
    });
  };
  // vdpbf16ps and vscalefps cannot be selected for a host without them.
  if (config.bf16Dot == "on" || config.scalef == "on") {
    llvm::Expected<TargetInfo> host = TargetInfo::get("cpu");
    if (!host)
      return host.takeError();
    if (config.bf16Dot == "on" && !host->bf16DotProduct)
      return llvm::createStringError(
          "bf16-dot=on: this host has no AVX512_BF16 (vdpbf16ps); use host "
          "or off");
    // The host's vectors are 16 lanes exactly when it has AVX-512.
    if (config.scalef == "on" && host->vectorLanes != 16)
      return llvm::createStringError(
          "scalef=on: this host has no AVX-512 (vscalefps); use host or off");
  }
  llvm::Expected<OwningOpRef<ModuleOp>> module =
      runCPUKernelStages(ctx, spec, config, "", &meta.stageIR, inspect);
  if (!module)
    return module.takeError();

  auto tm = createHostTargetMachine();
  if (!tm)
    return tm.takeError();
  Kernel::Code &code = *kernel->code;
  code.targetMachine = std::move(*tm);
  code.transformer = makeOptimizingTransformer(
      /*optLevel=*/3, /*sizeLevel=*/0, code.targetMachine.get());
  // The decode entry goes into a module of its own, compiled at its first
  // use (getDecodeEntry); the prefill entry is compiled now.
  OwningOpRef<ModuleOp> decodeModule = (**module).clone();
  eraseEntry(*decodeModule, "flash_attention");
  eraseEntry(**module, "flash_attention_decode");
  code.decodeIR = printOp(*decodeModule);
  auto jitted = jitEntry(**module, code.transformer, "flash_attention");
  if (!jitted)
    return jitted.takeError();
  code.engine = std::move(jitted->first);
  code.entry = jitted->second;
  meta.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return kernel;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

namespace {

template <int N> struct MemRefDescriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

llvm::Error checkBuffer(const TensorRef &t, llvm::StringRef name, ElementType dtype,
                        llvm::ArrayRef<int64_t> sizes) {
  auto shapeStr = [](llvm::ArrayRef<int64_t> s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i)
      r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  };
  if (!t.data)
    return llvm::createStringError(name + " buffer is null");
  if (t.dtype != dtype)
    return llvm::createStringError(
        llvm::formatv("{0} has element type {1}, expected {2}", name,
                      ::flashc::stringify(t.dtype), ::flashc::stringify(dtype))
            .str());
  if (llvm::ArrayRef<int64_t>(t.sizes) != sizes)
    return llvm::createStringError(
        llvm::formatv("{0} has shape {1}, expected {2}", name,
                      shapeStr(t.sizes), shapeStr(sizes))
            .str());
  if (t.strides.size() != sizes.size())
    return llvm::createStringError(
        llvm::formatv("{0} has {1} strides for rank {2}", name,
                      t.strides.size(), sizes.size())
            .str());
  if (t.strides.back() != 1)
    return llvm::createStringError(
        llvm::formatv("{0} must have unit stride in its last dimension, got "
                      "strides {1}",
                      name, shapeStr(t.strides))
            .str());
  for (int64_t s : t.strides)
    if (s < 0)
      return llvm::createStringError(
          llvm::formatv("{0} has a negative stride: {1}", name,
                        shapeStr(t.strides))
              .str());
  if (!flashc::getStridedExtentBytes(t.sizes.data(), t.strides.data(),
                                     static_cast<int>(t.sizes.size()),
                                     ::flashc::getElementBytes(t.dtype)))
    return llvm::createStringError(
        llvm::formatv("{0} with shape {1} and strides {2} addresses more "
                      "than 2^60 bytes",
                      name, shapeStr(t.sizes), shapeStr(t.strides))
            .str());
  return llvm::Error::success();
}

/// An error when an output (out, lse) shares bytes with another tensor of
/// the call: the kernels read their inputs while they write, so an output
/// over an input gives wrong results.
llvm::Error checkOutputsApart(
    llvm::ArrayRef<std::pair<const TensorRef *, const char *>> tensors,
    size_t firstOutput) {
  auto extent = [](const TensorRef &t) -> uint64_t {
    return flashc::getStridedExtentBytes(t.sizes.data(), t.strides.data(),
                                         static_cast<int>(t.sizes.size()),
                                         ::flashc::getElementBytes(t.dtype))
        .value_or(0);
  };
  for (size_t i = firstOutput; i < tensors.size(); ++i) {
    const TensorRef *o = tensors[i].first;
    if (!o)
      continue;
    for (size_t j = 0; j < tensors.size(); ++j) {
      const TensorRef *t = tensors[j].first;
      if (j == i || !t || t->onDevice != o->onDevice)
        continue;
      if (flashc::rangesOverlap(o->data, extent(*o), t->data, extent(*t)))
        return llvm::createStringError(
            llvm::formatv("{0} overlaps {1} in memory; outputs must not share "
                          "memory with another tensor of the call",
                          tensors[i].second, tensors[j].second)
                .str());
    }
  }
  return llvm::Error::success();
}

} // namespace

TensorRef TensorRef::contiguous(void *data, ElementType dtype,
                                llvm::ArrayRef<int64_t> sizes) {
  TensorRef t;
  t.data = data;
  t.dtype = dtype;
  t.sizes.assign(sizes.begin(), sizes.end());
  t.strides.resize(sizes.size());
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    t.strides[i] = stride;
    stride *= sizes[i];
  }
  return t;
}

llvm::Error Kernel::run(const TensorRef &q, const TensorRef &k,
                        const TensorRef &v, const TensorRef &out,
                        const TensorRef *lse, const RunOptions &options) const {
  // The kernels index [B, H, N, D]: the tensors in the options' layout are
  // permuted into that order (a view: no copy).
  TensorRef views[4] = {q, k, v, out};
  const char *names[4] = {"query", "key", "value", "output"};
  for (int i = 0; i < 4; ++i) {
    TensorRef &t = views[i];
    if (t.sizes.size() != 4 || t.strides.size() != 4)
      continue; // refused below with the rank or stride count
    std::string error = flashc::toBHND(options.layout, t.sizes.data(),
                                       t.strides.data(), names[i]);
    if (!error.empty())
      return llvm::createStringError(error);
  }
  return runBHND(views[0], views[1], views[2], views[3], lse, options);
}

llvm::Error Kernel::runBHND(const TensorRef &q, const TensorRef &k,
                            const TensorRef &v, const TensorRef &out,
                            const TensorRef *lse,
                            const RunOptions &options) const {
  if (isGPU())
    return runGPU(q, k, v, out, lse, options);
  if (options.simulate || options.device || options.stream)
    return llvm::createStringError(
        "a CPU kernel runs on the host: GPU run options (simulate, device, "
        "stream) do not apply");
  for (const TensorRef *t : {&q, &k, &v, &out, lse})
    if (t && t->onDevice)
      return llvm::createStringError(
          "a CPU kernel cannot read device memory");
  // The batch and lengths are the buffers': the kernel takes any.
  for (auto [t, name] : {std::pair<const TensorRef *, const char *>{&q, "query"},
                         {&k, "key"},
                         {&v, "value"},
                         {&out, "output"}})
    if (t->sizes.size() != 4)
      return llvm::createStringError(
          llvm::formatv("{0} must have rank 4, got rank {1}", name,
                        t->sizes.size())
              .str());
  // The batch, head counts and lengths are the buffers': the kernel serves
  // any, for its group size (query heads per KV head).
  int64_t group = spec.heads / spec.kvHeads;
  AttentionSpec s = spec;
  s.batch = q.sizes[0];
  s.heads = q.sizes[1];
  s.kvHeads = k.sizes[1];
  s.seqQ = q.sizes[2];
  s.seqKV = k.sizes[2];
  if (llvm::Error e = s.validate())
    return llvm::createStringError("the buffers' sizes: " +
                                   llvm::toString(std::move(e)));
  if (s.heads != group * s.kvHeads)
    return llvm::createStringError(
        llvm::formatv("query has {0} heads for {1} key heads, a group of {2}; "
                      "the kernel is compiled for groups of {3} query heads "
                      "per KV head",
                      s.heads, s.kvHeads, s.heads / s.kvHeads, group)
            .str());
  if (llvm::Error e = checkBuffer(q, "query", s.dtype,
                                  {s.batch, s.heads, s.seqQ, s.headDim}))
    return e;
  if (llvm::Error e = checkBuffer(k, "key", s.dtype,
                                  {s.batch, s.kvHeads, s.seqKV, s.headDim}))
    return e;
  if (llvm::Error e = checkBuffer(v, "value", s.dtype,
                                  {s.batch, s.kvHeads, s.seqKV, s.valueDim()}))
    return e;
  if (llvm::Error e = checkBuffer(out, "output", s.dtype,
                                  {s.batch, s.heads, s.seqQ, s.valueDim()}))
    return e;
  if (s.withLse != (lse != nullptr))
    return llvm::createStringError(
        s.withLse ? "the kernel writes an LSE buffer but none was given"
                  : "an LSE buffer was given but the kernel has no LSE "
                    "output");
  if (lse)
    if (llvm::Error e =
            checkBuffer(*lse, "lse", ElementType::F32, {s.batch, s.heads, s.seqQ}))
      return e;
  if (options.splits < 0)
    return llvm::createStringError(
        llvm::formatv("the split count must be positive (0: chosen), got {0}",
                      options.splits)
            .str());
  const double scale = options.scale ? *options.scale : spec.effectiveScale();
  if (llvm::Error e = checkScale(scale))
    return e;
  if (llvm::Error e = checkOutputsApart(
          {{&q, "query"}, {&k, "key"}, {&v, "value"}, {&out, "output"},
           {lse, "lse"}},
          /*firstOutput=*/3))
    return e;
  // Decode shapes take the entry point without the transposed copy of K:
  // each key block is read by one Q tile only.
  void *entry = code->entry;
  if (s.seqQ <= maxSeqQ) {
    llvm::Expected<void *> decode = getDecodeEntry();
    if (!decode)
      return decode.takeError();
    entry = *decode;
  }

  // The kernel sees [B', G, N, D] query/output and [B', 1, N, D] key/value
  // blocks with B' = (batch, KV head) pairs. When every buffer's batch
  // stride is Hkv times its stride per KV head, one call covers B x Hkv;
  // otherwise each batch entry is a call over its Hkv heads.
  int64_t hkv = s.kvHeads;
  auto folds = [&](const TensorRef &t, int64_t perKV) {
    return s.batch == 1 || hkv == 1 ||
           t.strides[0] == hkv * perKV * t.strides[1];
  };
  bool fold = folds(q, group) && folds(out, group) && folds(k, 1) &&
              folds(v, 1) && (!lse || folds(*lse, group));
  // Batch entry `b` (and the `count` - 1 after it when folding) of `t` as
  // `count` blocks of `perKV` heads.
  auto blocks = [&](const TensorRef &t, int64_t perKV, int64_t b, int64_t count,
                    auto &d) {
    constexpr int rank = sizeof(d.sizes) / sizeof(int64_t);
    char *base =
        static_cast<char *>(t.data) + b * t.strides[0] * ::flashc::getElementBytes(t.dtype);
    d.allocated = d.aligned = base;
    d.offset = 0;
    d.sizes[0] = count;
    d.strides[0] = hkv == 1 ? t.strides[0] : perKV * t.strides[1];
    d.sizes[1] = perKV;
    d.strides[1] = t.strides[1];
    for (int i = 2; i < rank; ++i) {
      d.sizes[i] = t.sizes[i];
      d.strides[i] = t.strides[i];
    }
  };
  int64_t count = fold ? s.batch * hkv : hkv;
  int64_t splits = getSplitCount(count, s.seqQ, s.seqKV, options,
                                 /*kvHeads=*/1);
  for (int64_t b = 0; b < s.batch; b += fold ? s.batch : 1) {
    MemRefDescriptor<4> dq, dk, dv, dout;
    blocks(q, group, b, count, dq);
    blocks(k, 1, b, count, dk);
    blocks(v, 1, b, count, dv);
    blocks(out, group, b, count, dout);
    if (lse) {
      MemRefDescriptor<3> dl;
      blocks(*lse, group, b, count, dl);
      auto fn = reinterpret_cast<void (*)(void *, void *, void *, void *,
                                          void *, float, int64_t)>(entry);
      fn(&dq, &dk, &dv, &dout, &dl, static_cast<float>(scale), splits);
    } else {
      auto fn = reinterpret_cast<void (*)(void *, void *, void *, void *, float,
                                          int64_t)>(entry);
      fn(&dq, &dk, &dv, &dout, static_cast<float>(scale), splits);
    }
  }
  return llvm::Error::success();
}

int64_t Kernel::getSplitCount(int64_t batch, int64_t seqQ, int64_t seqKV,
                              const RunOptions &options,
                              int64_t kvHeads) const {
  if (isGPU() || seqQ > maxSeqQ)
    return 1;
  // The kernel's problem: one KV head per (batch, KV head) pair.
  AttentionSpec s = groupKernelSpec(spec);
  s.batch = batch * (kvHeads ? kvHeads : spec.kvHeads);
  s.seqQ = seqQ;
  s.seqKV = seqKV;
  int64_t blockKV = std::max<int64_t>(metadata.tiles.blockKV, 1);
  int64_t most = flashc::ceilDiv(std::max<int64_t>(seqKV, 1), blockKV);
  int64_t splits = fixedSplits ? fixedSplits : options.splits;
  if (splits == 0) {
    // The CTA x wave model over this machine's worker threads, as
    // flash-split-kv would choose it for these sizes.
    llvm::Expected<TargetInfo> target = TargetInfo::get(metadata.target);
    if (!target) {
      llvm::consumeError(target.takeError());
      return 1;
    }
    target->numProcessors = threads;
    TileSizes tiles = metadata.tiles;
    tiles.blockQ = seqQ;
    llvm::Expected<WavePrediction> best =
        chooseSplits(*target, s.shape(), tiles);
    if (!best) {
      llvm::consumeError(best.takeError());
      return 1;
    }
    splits = best->splits;
  }
  return std::clamp<int64_t>(splits, 1, most);
}

llvm::Error Kernel::dumpIR(llvm::StringRef directory) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError("cannot create '" + directory +
                                   "': " + ec.message());
  int index = 0;
  for (const auto &[stage, ir] : metadata.stageIR) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path,
                            llvm::formatv("{0:2}-{1}.mlir", index++, stage));
    if (llvm::Error e = writeFile(path, ir))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error mlir::flash::writeFile(llvm::StringRef path,
                                   llvm::StringRef contents) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError("cannot write '" + path +
                                   "': " + ec.message());
  os << contents;
  if (path != "-")
    os.close();
  else
    os.flush();
  if (os.has_error()) {
    std::string message = os.error().message();
    // Cleared so that the stream's destructor does not abort the process.
    os.clear_error();
    return llvm::createStringError("writing '" + path + "' failed: " +
                                   message);
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Compiler and cache
//===----------------------------------------------------------------------===//

struct Compiler::PendingCompile {
  std::once_flag once;
  std::shared_ptr<const Kernel> kernel;
  std::string error;
};

Compiler &Compiler::global() {
  // Never destroyed: tearing a JIT session down runs code generation, which
  // must not happen while LLVM's own globals are being destroyed at exit.
  static Compiler *compiler = new Compiler();
  return *compiler;
}

llvm::Expected<std::shared_ptr<const Kernel>>
Compiler::compile(const AttentionSpec &spec, llvm::StringRef target,
                  const PipelineConfig &config) {
  if (llvm::Error e = spec.validate())
    return e;
  PipelineConfig c = config;
  c.target = target.str();
  if (llvm::Error e = c.validate())
    return e;
  llvm::Expected<TargetInfo> info = TargetInfo::get(target);
  if (!info)
    return info.takeError();
  // A kernel serves every batch and length: they are not in its key. A
  // GPU decode kernel's fixed split count is not in its configuration (it
  // is passed at launch) but is the Kernel's, so it is in the key.
  std::string key = info->isGPU()
                        ? gpuVariantId(spec.gpuQuery(target)) + " | " +
                              gpuConfig(spec, c).str() +
                              (spec.isDecode() && c.splits
                                   ? " | splits " + std::to_string(c.splits)
                                   : "")
                        : cpuKernelKey(spec, c);

  // One entry per key; the first caller compiles, the others wait for it.
  std::shared_ptr<PendingCompile> entry;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      ++hits;
      return withScale(it->second, spec.scale);
    }
    std::shared_ptr<PendingCompile> &slot = pending[key];
    if (!slot)
      slot = std::make_shared<PendingCompile>();
    entry = slot;
  }
  std::call_once(entry->once, [&] {
    llvm::Expected<std::unique_ptr<Kernel>> built =
        info->isGPU() ? KernelBuilder::buildGPU(spec, c, cacheDirectory)
                      : KernelBuilder::build(spec, c);
    if (!built) {
      entry->error = llvm::toString(built.takeError());
      return;
    }
    entry->kernel = std::shared_ptr<const Kernel>(std::move(*built));
  });
  std::lock_guard<std::mutex> lock(mutex);
  pending.erase(key);
  if (!entry->kernel)
    return llvm::createStringError(entry->error);
  cache.emplace(key, entry->kernel);
  return withScale(entry->kernel, spec.scale);
}

std::shared_ptr<const Kernel>
Compiler::withScale(const std::shared_ptr<const Kernel> &kernel,
                    std::optional<double> scale) {
  // The code does not depend on the scale: a kernel whose spec names
  // another default scale shares it. Such views are kept, so that a call
  // with the same spec gets the same Kernel.
  const AttentionSpec &spec = kernel->getSpec();
  auto same = [&](std::optional<double> a, std::optional<double> b) {
    return a.has_value() == b.has_value() && (!a || *a == *b);
  };
  if (same(spec.scale, scale))
    return kernel;
  char text[64] = "default";
  if (scale)
    std::snprintf(text, sizeof(text), "%a", *scale);
  std::shared_ptr<const Kernel> &view = scaled[{kernel.get(), text}];
  if (!view) {
    auto copy = std::shared_ptr<Kernel>(new Kernel(*kernel));
    copy->spec.scale = scale;
    view = std::move(copy);
  }
  return view;
}

llvm::Expected<std::shared_ptr<const Kernel>>
Compiler::compileModule(llvm::StringRef source, llvm::StringRef target,
                        const PipelineConfig &config) {
  llvm::Expected<AttentionSpec> spec = AttentionSpec::fromMLIR(source);
  if (!spec)
    return spec.takeError();
  return compile(*spec, target, config);
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

size_t Compiler::getCacheSize() const {
  std::lock_guard<std::mutex> lock(mutex);
  return cache.size();
}

int64_t Compiler::getCacheHits() const {
  std::lock_guard<std::mutex> lock(mutex);
  return hits;
}

void Compiler::clearCache() {
  std::lock_guard<std::mutex> lock(mutex);
  cache.clear();
  scaled.clear();
  hits = 0;
}
