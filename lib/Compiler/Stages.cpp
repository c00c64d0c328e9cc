//===- Stages.cpp - The staged pipeline runner and LLVM IR ----------------===//
//
// Runs a kernel module through the stages of flashc's pipeline, one pass
// manager per stage, each under crash recovery (a crash becomes an error
// naming a reproducer) and verified after it; a CPU kernel's entry points
// each in a module of their own, as the JIT compiles them. Stops after a
// named stage (lowerToStage) or translates the CPU kernel's LLVM dialect
// to LLVM IR optimised for the host (emitLLVMIR). Also the dialect
// registry every compilation shares.
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"

#include "CompilerUtils.h"
#include "KernelModule.h"

#include "flashc/InitFlashc.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Compiler.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

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

bool mlir::flash::detail::runRecoveringCrashes(
    llvm::function_ref<void()> body) {
#if LLVM_ADDRESS_SANITIZER_BUILD
  // A sanitizer's report aborts the process. Recovered, it would become a
  // stage's error, and LeakSanitizer's check at exit would then report
  // again, which AddressSanitizer answers with an endless wait: a finding
  // would hang the test instead of failing it.
  body();
  return true;
#else
  static std::once_flag enabled;
  std::call_once(enabled, [] { llvm::CrashRecoveryContext::Enable(); });
  llvm::CrashRecoveryContext context;
  return context.RunSafely(body);
#endif
}

llvm::Error mlir::flash::detail::crashError(llvm::StringRef what,
                                            llvm::StringRef contents,
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

llvm::Error mlir::flash::detail::runStages(
    ModuleOp module, const PipelineConfig &config, llvm::StringRef last,
    std::vector<std::pair<std::string, std::string>> *stageIR,
    llvm::function_ref<void(llvm::StringRef, ModuleOp)> afterStage) {
  MLIRContext &ctx = *module.getContext();
  DiagnosticCollector diags(ctx);
  if (llvm::Error e = config.validate())
    return e;
  // The pipeline's input, the reproducer of a crash in any stage.
  std::string input = printOp(module);
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
    if (!runRecoveringCrashes([&] { ran = pm.run(module); }))
      return crashError("stage '" + stage.str() +
                            "' crashed (a bug in MLIR or flashc); the "
                            "reproducer is the pipeline's input, for "
                            "flashc-opt with `" +
                            config.str() + "`",
                        input, "mlir");
    if (failed(ran))
      return llvm::createStringError("stage '" + stage + "' failed: " +
                                     diags.messages);
    if (failed(verify(module)))
      return llvm::createStringError("stage '" + stage +
                                     "' produced invalid IR: " +
                                     diags.messages);
    if (stageIR)
      stageIR->emplace_back(stage.str(), printOp(module));
    if (afterStage)
      afterStage(stage, module);
    if (stage == last)
      break;
  }
  return llvm::Error::success();
}

PipelineConfig mlir::flash::detail::cpuEntryConfig(const PipelineConfig &config,
                                                  bool decode) {
  PipelineConfig c = config;
  // The decode entry's split count is chosen at every run (a fixed count in
  // `config` is passed at every call instead). A prefill run (Nq >
  // max-seq-q) always has one split (Kernel::getSplitCount): its entry
  // point is not split at all, rather than split into one part and merged
  // by a combine.
  c.splits = decode ? 0 : 1;
  c.dynamicSplits = decode;
  // Heap buffers through the JIT's scratch allocator (jitEntry binds it).
  c.allocHooks = true;
  return c;
}

llvm::Error mlir::flash::detail::runCPUEntryStages(
    ModuleOp module, const PipelineConfig &config, bool decode,
    llvm::StringRef last,
    std::vector<std::pair<std::string, std::string>> *stageIR,
    llvm::function_ref<void(llvm::StringRef, ModuleOp)> afterStage) {
  return runStages(module, cpuEntryConfig(config, decode), last, stageIR,
                   afterStage);
}

OwningOpRef<ModuleOp>
mlir::flash::detail::splitCPUEntries(ModuleOp module) {
  OwningOpRef<ModuleOp> decode = module.clone();
  auto erase = [](ModuleOp m, llvm::StringRef name) {
    if (Operation *entry = SymbolTable::lookupSymbolIn(m, name))
      entry->erase();
  };
  erase(module, kDecodeEntryName);
  erase(*decode, kPrefillEntryName);
  return decode;
}

llvm::Error mlir::flash::detail::runCPUKernelStages(
    ModuleOp module, const PipelineConfig &config, llvm::StringRef last) {
  // Each entry point is lowered in a module of its own, as the JIT
  // compiles them; the decode entry's module is then merged into `module`
  // (the symbols both modules define, such as the declarations of the
  // runtime functions, are the same and kept once).
  OwningOpRef<ModuleOp> decode = splitCPUEntries(module);
  if (llvm::Error e = runCPUEntryStages(module, config, /*decode=*/false,
                                        last, nullptr))
    return e;
  if (llvm::Error e = runCPUEntryStages(*decode, config, /*decode=*/true,
                                        last, nullptr))
    return e;
  Block *body = module.getBody();
  for (Operation &op :
       llvm::make_early_inc_range(decode->getBody()->getOperations())) {
    auto symbol = dyn_cast<SymbolOpInterface>(op);
    if (symbol) {
      if (Operation *same =
              SymbolTable::lookupSymbolIn(module, symbol.getName())) {
        if (printOp(same) != printOp(&op))
          return llvm::createStringError(
              "the prefill and decode entry points' modules define @" +
              symbol.getName() + " differently");
        continue;
      }
    }
    op.moveBefore(body, body->end());
  }
  return llvm::Error::success();
}

llvm::Expected<std::string> Compiler::lowerToStage(const AttentionSpec &spec,
                                                   const PipelineConfig &config,
                                                   llvm::StringRef stage) {
  if (llvm::Error e = spec.validate())
    return e;
  if (!stage.empty())
    if (llvm::Error e = checkStopStage(stage, config))
      return e;
  // GPU kernels serve every batch and length: their IR has dynamic sizes.
  bool gpu = config.isGPU();
  bool sharedStage = stage == "fuse" || stage == "online" || stage == "tiled";
  if (gpu && !sharedStage)
    if (llvm::Error e = checkGPUSpec(spec, config.target))
      return e;
  MLIRContext ctx(getRegistry(), MLIRContext::Threading::DISABLED);
  OwningOpRef<ModuleOp> module = buildKernelModule(
      ctx, groupKernelSpec(spec), gpu ? KernelKind::GPU : KernelKind::CPU);
  if (llvm::Error e =
          gpu ? runStages(*module, gpuConfig(spec, config), stage, nullptr)
              : runCPUKernelStages(*module, config, stage))
    return e;
  return printOp(*module);
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
mlir::flash::detail::createHostTargetMachine() {
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
  OwningOpRef<ModuleOp> module =
      buildKernelModule(ctx, groupKernelSpec(spec), KernelKind::CPU);
  if (llvm::Error e = runCPUKernelStages(*module, config, ""))
    return e;
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext);
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
