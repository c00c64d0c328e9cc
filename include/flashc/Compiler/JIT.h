//===- JIT.h - Compile, cache and run attention kernels ---------*- C++ -*-===//
//
// The C++ API of flashc. Describe an attention problem with an
// AttentionSpec (or hand in an MLIR module holding one attention), compile
// it for a target, and run the resulting Kernel on caller-owned buffers:
//
//   flash::AttentionSpec spec;
//   spec.batch = 2; spec.heads = 8; spec.seqQ = spec.seqKV = 1024;
//   spec.headDim = 64; spec.dtype = flash::ElementType::F16;
//   spec.mask = flash::Mask::causal();
//   auto kernel = flash::Compiler::global().compile(spec, "cpu");
//   if (!kernel) ... llvm::toString(kernel.takeError()) ...
//   if (llvm::Error e = (*kernel)->run(q, k, v, out)) ...
//
// Kernels are compiled per (dtype, head dims, mask, GQA group size,
// LSE, scale, schedule options): batch, head counts and sequence lengths
// are kernel arguments. On GPU targets (sm_80, sm_90a) the spec's sizes
// only choose the variant (decode when Nq <= 16); a CPU kernel has both
// entry points and picks one per run. A GPU kernel runs on device memory
// through the CUDA driver, or on host memory in the PTX simulator
// (RunOptions::simulate).
//
// Compilation is content-addressed and thread-safe: the same spec, target
// and options compile once per process; GPU kernels can also be cached in a
// directory (a runtime bundle) across processes.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_COMPILER_JIT_H
#define FLASHC_COMPILER_JIT_H

#include "flashc/Analysis/AttentionSchedule.h"
#include "flashc/Pipelines/Pipelines.h"
#include "flashc/Runtime/Runtime.h"
#include "flashc/Support/Layout.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir {
class ExecutionEngine;

namespace flash {

/// The element types and masks of flashc/Core/Problem.h.
using ::flashc::ElementType;
using ::flashc::Mask;
using ::flashc::MaskKind;

/// Writes `contents` to `path` ("-": standard output), checking the open,
/// every write and the close (a full disk shows only when the file is
/// flushed); the error names the file.
llvm::Error writeFile(llvm::StringRef path, llvm::StringRef contents);

/// An error unless `scale` is a softmax scale the kernels take: finite,
/// positive and a normal f32 (flashc::checkScale).
llvm::Error checkScale(double scale);

/// One attention problem (flashc/Core/Problem.h, whose fields it has) and
/// what the compiler makes of it. The scale, when set, is the default
/// scale of a Kernel's runs (RunOptions::scale overrides it), not part of
/// its code. The layout is not part of a kernel either: RunOptions::layout
/// says how a run's buffers are ordered.
struct AttentionSpec : ::flashc::AttentionProblem {
  AttentionSpec() = default;
  AttentionSpec(const ::flashc::AttentionProblem &problem)
      : ::flashc::AttentionProblem(problem) {}

  /// Checks sizes, the GQA ratio and the scale; the error names the field.
  llvm::Error validate() const;
  /// The problem with the head dims explicit (headDimV set), as the
  /// tile-size and cost models take it.
  ::flashc::AttentionProblem shape() const;
  /// True when a GPU kernel for this spec is the decode variant (split-KV
  /// with a combine): Nq <= 16.
  bool isDecode() const {
    return seqQ <= ::flashc::runtime::kMaxDecodeSeqQ;
  }
  /// The runtime's identity of the GPU kernel computing this spec.
  flashc::runtime::AttentionQuery gpuQuery(llvm::StringRef target) const;

  /// Reads the spec of the single flash.attention (or naive graph, which is
  /// fused first) of `source`, whose operands must be static function
  /// arguments. The error explains what did not fit.
  static llvm::Expected<AttentionSpec> fromMLIR(llvm::StringRef source);

private:
  static llvm::Expected<AttentionSpec>
  fromMLIRUnguarded(llvm::StringRef source);
};

/// A caller-owned strided buffer. Sizes and strides are in elements (not
/// bytes), in the order RunOptions::layout names ([B, H, N, D] by
/// default).
struct TensorRef {
  void *data = nullptr;
  ElementType dtype = ElementType::F32;
  llvm::SmallVector<int64_t, 4> sizes;
  llvm::SmallVector<int64_t, 4> strides;
  /// GPU device memory (CUDA). CPU kernels and the simulator take host
  /// memory.
  bool onDevice = false;

  /// A densely packed row-major tensor.
  static TensorRef contiguous(void *data, ElementType dtype,
                              llvm::ArrayRef<int64_t> sizes);
};

/// What the compiler chose, and the IR after each stage.
struct KernelMetadata {
  std::string target;
  std::string config;
  TileSizes tiles;
  /// The KV split count: fixed by the configuration, or 0 when it is
  /// chosen at every run from the actual sizes (Kernel::getSplitCount).
  int64_t splits = 1;
  double compileSeconds = 0;
  /// (stage, IR after it), in pipeline order. A CPU kernel's is the module
  /// of the entry point compiled with it (Kernel::prepare).
  std::vector<std::pair<std::string, std::string>> stageIR;
  /// GPU kernels: the PTX and launch metadata (null for the CPU).
  std::shared_ptr<const flashc::runtime::KernelVariant> gpu;
};

/// How a kernel runs.
struct RunOptions {
  /// GPU kernels: the CUDA stream (null: the default stream).
  void *stream = nullptr;
  /// GPU kernels: run in the PTX simulator on host memory.
  bool simulate = false;
  /// The KV split count of a decode-shaped run (Nq <= 16) when the kernel
  /// chooses it at run time (0: the CTA x wave model's).
  int64_t splits = 0;
  /// GPU kernels: the device (null: CUDA device 0, or the simulator).
  std::shared_ptr<flashc::runtime::Device> device;
  /// The softmax scale of this run (unset: the kernel's spec's). It must
  /// be finite, positive and a normal f32.
  std::optional<double> scale;
  /// The order of q, k, v and out's sizes and strides (the LSE is always
  /// [B, Hq, Nq]): bhnd ([B, H, N, D]) or bnhd ([B, N, H, D]), whose
  /// strides must be that order in memory too, or strided ([B, H, N, D]
  /// sizes, any strides). See flashc/Support/Layout.h.
  flashc::Layout layout = flashc::Layout::BHND;
};

/// How the JIT builds a CPU kernel's machine code (not what it computes).
struct JITOptions {
  /// Registers the code with perf (LLVM's perf JIT event listener): under
  /// `perf record -k 1`, `perf inject --jit` then gives perf the kernels'
  /// functions and instructions (docs/PERFORMANCE.md).
  bool perfProfiling = false;
};

/// A compiled attention kernel for one AttentionSpec.
class Kernel {
public:
  ~Kernel();
  const AttentionSpec &getSpec() const { return spec; }
  const KernelMetadata &getMetadata() const { return metadata; }

  bool isGPU() const { return static_cast<bool>(metadata.gpu); }

  /// Runs the kernel. Every kernel takes any batch, head counts and
  /// sequence lengths: they come from the buffers' sizes. A CPU kernel is
  /// compiled for one GQA group size (the spec's query heads per KV head)
  /// and serves every head count with that ratio, folding the KV heads
  /// into the batch. Checks every buffer's element type, sizes and strides
  /// against the group size, head dims and dtype and against each other
  /// first; a mismatch is an error naming the buffer, not a crash. `lse`
  /// must be given exactly when the spec asks for it.
  llvm::Error run(const TensorRef &q, const TensorRef &k, const TensorRef &v,
                  const TensorRef &out, const TensorRef *lse = nullptr,
                  const RunOptions &options = {}) const;

  /// Compiles now what a run with `seqQ` query rows would otherwise
  /// compile at its start: a CPU kernel compiles the entry point of its
  /// spec's query length with it, the other (decode for Nq <= max-seq-q,
  /// else prefill) at its first use. Nothing to do once it is compiled,
  /// and for GPU kernels.
  llvm::Error prepare(int64_t seqQ) const;

  /// The KV split count a CPU kernel uses for these sizes (`kvHeads` KV
  /// heads; 0: the spec's): the configuration's fixed count, else
  /// `options.splits`, else the CTA x wave model's, for decode shapes
  /// (Nq <= max-seq-q) only; at most one split per KV block. 1 for GPU
  /// kernels (their runtime decides).
  int64_t getSplitCount(int64_t batch, int64_t seqQ, int64_t seqKV,
                        const RunOptions &options = {},
                        int64_t kvHeads = 0) const;

  /// Writes `<NN>-<stage>.mlir` for every stage into `directory`.
  llvm::Error dumpIR(llvm::StringRef directory) const;

  /// A GPU kernel run on tensors less aligned than its variant assumes
  /// (KernelVariant::alignment; a 16-byte one copies by TMA or 16-byte
  /// cp.async) runs the variant built with their alignment instead,
  /// compiled at the first such run by the process-wide compiler with
  /// this kernel's options (from its module, for a kernel compiled from
  /// one its spec does not describe). One record per alignment met so
  /// far.
  struct Fallback {
    /// The alignment of the run's tensors (rt::getCallAlignment).
    int64_t alignment = 0;
    std::shared_ptr<const flashc::runtime::KernelVariant> variant;
    /// Why: "the tensors are only 4-byte aligned; <id> needs 16".
    std::string reason;
  };
  std::vector<Fallback> getFallbacks() const;

private:
  friend class Compiler;
  friend struct KernelBuilder;
  Kernel();
  /// run() with the four tensors in [B, H, N, D] order.
  llvm::Error runBHND(const TensorRef &q, const TensorRef &k,
                      const TensorRef &v, const TensorRef &out,
                      const TensorRef *lse, const RunOptions &options) const;
  /// runBHND() on the CPU (CPULaunch.cpp) and on a GPU (GPUCompiler.cpp).
  llvm::Error runCPU(const TensorRef &q, const TensorRef &k,
                     const TensorRef &v, const TensorRef &out,
                     const TensorRef *lse, const RunOptions &options) const;
  llvm::Error runGPU(const TensorRef &q, const TensorRef &k,
                     const TensorRef &v, const TensorRef &out,
                     const TensorRef *lse, const RunOptions &options) const;
  AttentionSpec spec;
  KernelMetadata metadata;
  /// A GPU kernel's options (as given to the compiler), and its fallbacks
  /// by alignment.
  PipelineConfig config;
  /// The module a kernel was compiled from when its spec does not
  /// describe it (Compiler::compileModule): its fallbacks are compiled
  /// from it too.
  std::string moduleSource;
  /// The kernel cache directory of the compiler that built a GPU kernel
  /// (empty: none): its fallbacks are kept there too.
  std::string cacheDirectory;
  /// One alignment's fallback: compiled once, by the first run that needs
  /// it (others wait for it; runs at other alignments do not).
  struct FallbackEntry {
    std::mutex compile;
    /// Set under `compile` once the fields below are (they do not change
    /// after): getFallbacks reads them without the lock.
    std::atomic<bool> done{false};
    std::shared_ptr<const Kernel> kernel; // null: the compile failed
    std::string reason;
    std::string error; // a failed compile, kept: it is not retried
  };
  struct Fallbacks {
    std::mutex mutex;
    std::map<int64_t, std::shared_ptr<FallbackEntry>> byAlignment;
  };
  /// Shared by the views of this kernel with other default scales.
  std::shared_ptr<Fallbacks> fallbacks = std::make_shared<Fallbacks>();
  /// The variant that runs `call`: this kernel's, or its fallback for the
  /// call's alignment (compiled now when new).
  llvm::Expected<std::shared_ptr<const flashc::runtime::KernelVariant>>
  selectVariant(const flashc::runtime::AttentionCall &call) const;
  /// The configuration's fixed split count (0: chosen per run; GPU decode
  /// kernels pass it at launch); on the CPU also the largest Nq that is
  /// split and the worker threads.
  int64_t fixedSplits = 0;
  int64_t maxSeqQ = 16;
  int64_t threads = 1;
  /// A CPU kernel's JIT-compiled code, shared by the Kernels whose specs
  /// differ only in their (default) scale.
  struct Code {
    Code();
    ~Code();
    /// What the entry points are lowered and JIT-compiled with.
    PipelineConfig config;
    JITOptions jit;
    // The engines keep using the target machine and the IR transformer
    // (for code they compile at teardown), so they are declared first and
    // outlive them.
    std::unique_ptr<llvm::TargetMachine> targetMachine;
    std::function<llvm::Error(llvm::Module *)> transformer;
    /// An entry point: the prefill one, or the decode one (Nq <=
    /// maxSeqQ). The one the spec's query length takes is compiled with
    /// the kernel; the other from `ir` (its kernel module, before the
    /// pipeline) at its first use, so that a kernel only ever run on one
    /// kind of shape never pays for the other.
    struct Entry {
      std::string ir;
      std::mutex mutex;
      std::unique_ptr<ExecutionEngine> engine;
      void *address = nullptr;
    };
    Entry prefill, decode;
  };
  std::shared_ptr<Code> code;
  /// The entry point a run with `seqQ` query rows takes, compiled now if
  /// it has not been.
  llvm::Expected<void *> getEntry(int64_t seqQ) const;
};

/// Compiles specs into kernels, caching them by (spec, target, options).
class Compiler {
public:
  /// The process-wide compiler.
  static Compiler &global();

  llvm::Expected<std::shared_ptr<const Kernel>>
  compile(const AttentionSpec &spec, llvm::StringRef target = "cpu",
          const PipelineConfig &config = {});

  /// Compiles the attention of an MLIR module as the module has it: its
  /// single flash.attention (or a naive matmul-softmax-matmul graph, which
  /// is fused first), whose operands must be arguments of its function.
  /// That function gives way to the kernel's entry points, which hold the
  /// attention itself, with every attribute it carries, on a kernel's
  /// operands (any batch and lengths, one KV head group); the rest of the
  /// module is compiled with them. The batch and the lengths may be
  /// dynamic (the Kernel's spec then holds batch 1 and lengths of 4096; on
  /// a GPU target a dynamic query length takes the prefill variant, which
  /// serves every length). A module that says no more than its spec is
  /// compiled into the spec's kernel (compile() shares it); any other is
  /// cached by its content as well. Parsing and the pipeline run under
  /// crash recovery: a crash in MLIR or flashc on this input comes back as
  /// an error naming a file that reproduces it, not as a dead process.
  llvm::Expected<std::shared_ptr<const Kernel>>
  compileModule(llvm::StringRef source, llvm::StringRef target = "cpu",
                const PipelineConfig &config = {});

  /// Runs the pipeline on `spec`'s module up to `stage` (all stages when
  /// empty) and returns the IR, without building a kernel.
  static llvm::Expected<std::string> lowerToStage(const AttentionSpec &spec,
                                                  const PipelineConfig &config,
                                                  llvm::StringRef stage);

  /// Runs the whole pipeline on `spec`'s module and returns the LLVM IR
  /// after LLVM's O3 pipeline for the host CPU.
  static llvm::Expected<std::string> emitLLVMIR(const AttentionSpec &spec,
                                                const PipelineConfig &config);

  /// Compiles the GPU kernel variant computing `spec` on `config.target`
  /// (PTX and launch metadata), without caching. With `assemble`, also runs
  /// the toolkit's ptxas: the variant gets a cubin and each kernel its
  /// registers and spill bytes. `stageIR`, when given, receives the IR after
  /// every stage.
  static llvm::Expected<flashc::runtime::KernelVariant> compileGPUVariant(
      const AttentionSpec &spec, const PipelineConfig &config,
      bool assemble = false,
      std::vector<std::pair<std::string, std::string>> *stageIR = nullptr);

  /// Runs the toolkit's ptxas (under `toolkitPath`) on `variant`'s PTX: the
  /// variant gets a cubin and each kernel its registers and spill bytes.
  static llvm::Error assembleGPUVariant(flashc::runtime::KernelVariant &variant,
                                        llvm::StringRef toolkitPath);

  /// Keeps compiled GPU kernels in `directory` (a runtime bundle): later
  /// compilations, in this or another process, load them from there.
  void setCacheDirectory(std::string directory);

  /// How the JIT builds the CPU kernels compiled from now on (a kernel
  /// built otherwise is not reused for them).
  void setJITOptions(const JITOptions &options);
  JITOptions getJITOptions() const;

  size_t getCacheSize() const;
  int64_t getCacheHits() const;
  void clearCache();

private:
  struct PendingCompile;
  /// The kernel cached under `key`, built by `build` on a miss (once,
  /// however many callers ask at the same time), with `scale` as its
  /// default scale.
  llvm::Expected<std::shared_ptr<const Kernel>> getOrBuild(
      const std::string &key, std::optional<double> scale,
      llvm::function_ref<llvm::Expected<std::unique_ptr<Kernel>>()> build);
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Kernel>> cache;
  /// `kernel` with the default scale `scale` (the code is shared); called
  /// with `mutex` held.
  std::shared_ptr<const Kernel>
  withScale(const std::shared_ptr<const Kernel> &kernel,
            std::optional<double> scale);
  /// Those views, by kernel and scale.
  std::map<std::pair<const Kernel *, std::string>,
           std::shared_ptr<const Kernel>>
      scaled;
  /// Compilations in flight: later callers for the same key wait on them.
  std::map<std::string, std::shared_ptr<PendingCompile>> pending;
  int64_t hits = 0;
  std::string cacheDirectory;
  JITOptions jitOptions;
};

} // namespace flash
} // namespace mlir

#endif // FLASHC_COMPILER_JIT_H
