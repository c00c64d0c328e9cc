//===- CompilerUtils.h - Shared pieces of the compile drivers ---*- C++ -*-===//
//
// What the files of the compiler share: the registry, diagnostics capture,
// crash recovery and the staged pipeline runner (Stages.cpp), the spec of
// a KV head group (AttentionSpec.cpp), the CPU kernel's key (Compiler.cpp)
// and the GPU kernels' options and limits (GPUCompiler.cpp), and the
// builders of CPU (CPUKernel.cpp) and GPU kernels.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_COMPILER_COMPILERUTILS_H
#define FLASHC_LIB_COMPILER_COMPILERUTILS_H

#include "flashc/Compiler/JIT.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
namespace flash {
namespace detail {

/// The dialects and translations every compilation needs, built once.
const DialectRegistry &getRegistry();

/// Collects the diagnostics emitted while it lives, as one line:
/// "message (at file:line:col); message ..." (errors and warnings; a
/// diagnostic's own line breaks become spaces). An error built from it is
/// one line, as flashc's driver reports it.
struct DiagnosticCollector {
  explicit DiagnosticCollector(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Note ||
              diag.getSeverity() == DiagnosticSeverity::Remark)
            return success();
          std::string text = diag.str();
          for (char &c : text)
            if (c == '\n' || c == '\r')
              c = ' ';
          llvm::raw_string_ostream os(messages);
          if (!messages.empty())
            os << "; ";
          os << llvm::StringRef(text).trim();
          if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
            os << " (at " << file.getFilename().getValue() << ":"
               << file.getLine() << ":" << file.getColumn() << ")";
          return success();
        }) {}
  std::string messages;
  ScopedDiagnosticHandler handler;
};

std::string printOp(Operation *op);

/// Runs `body` so that a crash (a signal, an abort) inside it returns here.
/// Returns false when it crashed. The first call installs LLVM's crash
/// recovery signal handlers for the process.
bool runRecoveringCrashes(llvm::function_ref<void()> body);

/// Saves `contents` as a reproducer; the error names what crashed and
/// where the reproducer is.
llvm::Error crashError(llvm::StringRef what, llvm::StringRef contents,
                       llvm::StringRef suffix);

/// The host's target machine, for LLVM's optimisation and code generation.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createHostTargetMachine();

/// Runs `config.target`'s stages on `module` up to `last` (all when
/// empty), recording the IR after each into `stageIR` when it is non-null
/// and calling `afterStage` after each.
llvm::Error runStages(
    ModuleOp module, const PipelineConfig &config, llvm::StringRef last,
    std::vector<std::pair<std::string, std::string>> *stageIR,
    llvm::function_ref<void(llvm::StringRef, ModuleOp)> afterStage = nullptr);

/// The pipeline options a GPU kernel for `spec` is built with: the decode
/// variant (Nq <= 16) gets the decode tiles and a launch-time split count,
/// the prefill variant never splits. CPU configurations come back as given.
PipelineConfig gpuConfig(const AttentionSpec &spec, const PipelineConfig &c);

/// The pipeline options a CPU kernel's entry point is lowered with: the
/// decode entry's split count is chosen at every run (dynamic-splits; a
/// fixed count in `config` is passed at every call instead), the prefill
/// entry is never split; heap buffers come from the JIT's scratch
/// allocator.
PipelineConfig cpuEntryConfig(const PipelineConfig &config, bool decode);

/// runStages on a module holding one entry point of a CPU kernel (the
/// decode entry when `decode`), with cpuEntryConfig.
llvm::Error runCPUEntryStages(
    ModuleOp module, const PipelineConfig &config, bool decode,
    llvm::StringRef last,
    std::vector<std::pair<std::string, std::string>> *stageIR,
    llvm::function_ref<void(llvm::StringRef, ModuleOp)> afterStage = nullptr);

/// Splits the module of a CPU kernel (KernelKind::CPU) in two: `module`
/// keeps the prefill entry point and the returned copy the decode entry
/// point, each with the rest of the module.
OwningOpRef<ModuleOp> splitCPUEntries(ModuleOp module);

/// Lowers the module of a CPU kernel up to `last` (all stages when empty)
/// as the JIT does: each entry point in a module of its own
/// (runCPUEntryStages), the two merged into `module` after the last stage.
llvm::Error runCPUKernelStages(ModuleOp module, const PipelineConfig &config,
                               llvm::StringRef last);

/// The cache key of a CPU kernel for `spec`: its groupKernelSpec without
/// the batch and sequence lengths, which are the kernel's arguments.
std::string cpuKernelKey(const AttentionSpec &spec, const PipelineConfig &c);

/// The GPU kernels' limits on a spec (f16/bf16, head dims), checked before
/// any MLIR runs.
llvm::Error checkGPUSpec(const AttentionSpec &spec, llvm::StringRef target);

/// The spec a kernel is compiled from: one KV head and its group of query
/// heads. A run folds the KV heads into the batch (the GPU runtime and
/// Kernel::run for the CPU), so one kernel serves every head count of a
/// group size.
AttentionSpec groupKernelSpec(const AttentionSpec &spec);

/// Compiler::compileGPUVariant, on `module` when it is not null (see
/// KernelBuilder).
llvm::Expected<flashc::runtime::KernelVariant> compileGPUVariant(
    const AttentionSpec &spec, const PipelineConfig &config, bool assemble,
    std::vector<std::pair<std::string, std::string>> *stageIR, ModuleOp module);

/// The runtime's id of the GPU variant computing `query` (also the file
/// stem of its PTX in a bundle).
std::string gpuVariantId(const flashc::runtime::AttentionQuery &query,
                         int64_t alignment = 16);

} // namespace detail

/// Builds kernels; the only code that fills a Kernel's private state.
/// Each builds the kernel module of `spec` (KernelModule.h), or compiles
/// `module` when one is given: the kernel module of `spec`'s attention,
/// made from a caller's module (importModule).
struct KernelBuilder {
  /// CPU kernels (CPUKernel.cpp), JIT-compiled with `jit`.
  static llvm::Expected<std::unique_ptr<Kernel>>
  build(const AttentionSpec &spec, const PipelineConfig &config,
        const JITOptions &jit = {}, ModuleOp module = {});
  /// Lowers `module`, which holds the entry point of a CPU kernel's `code`
  /// that `decode` names, and JIT-compiles that entry (CPUKernel.cpp);
  /// records the IR after each stage into `stageIR` when it is non-null
  /// and calls `afterStage` after each.
  static llvm::Error compileCPUEntry(
      Kernel::Code &code, ModuleOp module, bool decode,
      std::vector<std::pair<std::string, std::string>> *stageIR = nullptr,
      llvm::function_ref<void(llvm::StringRef, ModuleOp)> afterStage =
          nullptr);
  /// GPU kernels (GPUCompiler.cpp), found in or added to the bundle at
  /// `cacheDirectory` when it is not empty.
  static llvm::Expected<std::unique_ptr<Kernel>>
  buildGPU(const AttentionSpec &spec, const PipelineConfig &config,
           const std::string &cacheDirectory, ModuleOp module = {});
};

} // namespace flash
} // namespace mlir

#endif // FLASHC_LIB_COMPILER_COMPILERUTILS_H
