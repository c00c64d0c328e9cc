//===- CPUKernel.cpp - CPU kernels: the JIT and the split count -----------===//
//
// Builds a CPU kernel: each entry point's module through the CPU stages to
// the LLVM dialect, then LLVM's optimisation (makeEntryTransformer) and
// code generation for the host in an MLIR ExecutionEngine, with the OpenMP
// runtime and the scratch allocator bound into the session. The entry
// point the spec's query length takes (prefill, or decode for Nq <=
// max-seq-q) is compiled at once, the other at its first use. Also the KV
// split count a run of a CPU kernel takes (the CTA x wave model over the
// worker threads).
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"

#include "CompilerUtils.h"
#include "KernelModule.h"
#include "ScratchAllocator.h"

#include "flashc/Analysis/CostModel.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Support/Sizes.h"
#include "flashc/Target/TargetInfo.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/OptBisect.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

Kernel::Code::Code() = default;
Kernel::Code::~Code() = default;

namespace {
/// Skips LoopLoadElimination in the modules whose LLVMContext it is set on:
/// 7-12% of the optimisation pipeline, and the CPU stages' IR comes out of
/// the pipeline the same without it.
struct EntryPassGate : llvm::OptPassGate {
  bool shouldRunPass(llvm::StringRef pass, llvm::StringRef) const override {
    return pass != "LoopLoadEliminationPass";
  }
  bool isEnabled() const override { return true; }
};
} // namespace

/// LLVM's optimisation of an entry point's module for the host `tm`,
/// without LoopLoadElimination (EntryPassGate). The prefill entry takes the
/// O3 pipeline: O2 would neither unroll nor SLP-vectorise its K transpose
/// and conversion loops. The decode entry takes the O2 pipeline without
/// loop unrolling, which leaves its IR as O3 makes it (there is nothing to
/// unroll) in 15% less time.
static std::function<llvm::Error(llvm::Module *)>
makeEntryTransformer(llvm::TargetMachine *tm) {
  return [tm](llvm::Module *m) -> llvm::Error {
    static EntryPassGate gate;
    m->getContext().setOptPassGate(gate);
    bool decode = m->getFunction(kDecodeEntryName) != nullptr;
    llvm::PipelineTuningOptions tuning;
    tuning.LoopUnrolling = !decode;
    tuning.LoopInterleaving = true;
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm, tuning);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm =
        pb.buildPerModuleDefaultPipeline(decode ? llvm::OptimizationLevel::O2
                                                : llvm::OptimizationLevel::O3);
    mpm.run(*m, mam);
    return llvm::Error::success();
  };
}

/// JIT-compiles `module` for the host, optimised by `transformer`, and
/// looks up the C-interface entry `name`.
static llvm::Expected<std::pair<std::unique_ptr<ExecutionEngine>, void *>>
jitEntry(ModuleOp module,
         const std::function<llvm::Error(llvm::Module *)> &transformer,
         llvm::StringRef name, const JITOptions &jit) {
  static const llvm::StringRef libraries[] = {FLASHC_OPENMP_LIBRARY,
                                              FLASHC_RUNNER_UTILS_LIBRARY};
  ExecutionEngineOptions options;
  options.sharedLibPaths = libraries;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = jit.perfProfiling;
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

llvm::Error KernelBuilder::compileCPUEntry(
    Kernel::Code &code, ModuleOp module, bool decode,
    std::vector<std::pair<std::string, std::string>> *stageIR,
    llvm::function_ref<void(llvm::StringRef, ModuleOp)> afterStage) {
  if (llvm::Error e = runCPUEntryStages(module, code.config, decode, "",
                                        stageIR, afterStage))
    return e;
  auto jitted = jitEntry(module, code.transformer,
                         decode ? kDecodeEntryName : kPrefillEntryName,
                         code.jit);
  if (!jitted)
    return jitted.takeError();
  Kernel::Code::Entry &entry = decode ? code.decode : code.prefill;
  entry.engine = std::move(jitted->first);
  entry.address = jitted->second;
  entry.ir.clear();
  return llvm::Error::success();
}

llvm::Expected<void *> Kernel::getEntry(int64_t seqQ) const {
  bool decode = seqQ <= maxSeqQ;
  Code &c = *code;
  Code::Entry &entry = decode ? c.decode : c.prefill;
  std::lock_guard<std::mutex> lock(entry.mutex);
  if (entry.address)
    return entry.address;
  llvm::StringRef which = decode ? "decode" : "prefill";
  MLIRContext ctx(getRegistry(), MLIRContext::Threading::DISABLED);
  DiagnosticCollector diags(ctx);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(entry.ir, &ctx);
  if (!module)
    return llvm::createStringError("the " + which +
                                   " entry's module does not parse: " +
                                   diags.messages);
  if (llvm::Error e = KernelBuilder::compileCPUEntry(c, *module, decode))
    return llvm::createStringError("compiling the " + which +
                                   " entry: " + llvm::toString(std::move(e)));
  return entry.address;
}

llvm::Error Kernel::prepare(int64_t seqQ) const {
  if (isGPU())
    return llvm::Error::success();
  return getEntry(seqQ).takeError();
}

llvm::Expected<std::unique_ptr<Kernel>>
KernelBuilder::build(const AttentionSpec &spec, const PipelineConfig &config,
                     const JITOptions &jit, ModuleOp module) {
  auto start = std::chrono::steady_clock::now();
  auto kernel = std::unique_ptr<Kernel>(new Kernel());
  kernel->spec = spec;
  kernel->metadata.target = config.target;
  kernel->metadata.config = config.str();
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
  // The spec's kernel module, unless the caller has one.
  std::optional<MLIRContext> ownContext;
  OwningOpRef<ModuleOp> ownModule;
  if (!module) {
    ownContext.emplace(getRegistry(), MLIRContext::Threading::DISABLED);
    ownModule =
        buildKernelModule(*ownContext, groupKernelSpec(spec), KernelKind::CPU);
    module = *ownModule;
  }
  auto tm = createHostTargetMachine();
  if (!tm)
    return tm.takeError();
  Kernel::Code &code = *kernel->code;
  code.config = config;
  code.jit = jit;
  code.targetMachine = std::move(*tm);
  code.transformer = makeEntryTransformer(code.targetMachine.get());
  // Each entry point is compiled from a module of its own: the one the
  // spec's query length takes now, the other at its first use (getEntry).
  bool decode = spec.seqQ <= config.maxSeqQ;
  OwningOpRef<ModuleOp> decodeModule = splitCPUEntries(module);
  (decode ? code.prefill : code.decode).ir =
      printOp(decode ? module : *decodeModule);
  if (llvm::Error e = compileCPUEntry(code, decode ? *decodeModule : module,
                                      decode, &meta.stageIR, inspect))
    return e;
  meta.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return kernel;
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
