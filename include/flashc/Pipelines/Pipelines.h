//===- Pipelines.h - flashc's named pass pipelines --------------*- C++ -*-===//
//
// The stages of flashc and their options. The options are declared once,
// in PipelineOptions.def: `PipelineConfig` holds them all (the C++ API
// fills it directly), each of flashc-opt's three pipelines has an option
// struct with its own (`--flash-cpu-pipeline="block-kv=128 ..."`), and the
// driver and Python read the table (getPipelineOptions).
//
// Stages, in order (each name is also a `--stop-after` point). Shared:
//   fuse        graph -> flash.attention               (flash-fuse-attention)
//   online      flash.attention -> online KV loop      (flash-online-softmax)
//   tiled       tiles, splits and causal bounds        (flash-tile,
//                                                       flash-split-kv,
//                                                       flash-causal-skip)
// then for the CPU:
//   bufferized  tensors -> memrefs, deallocations      (one-shot-bufferize)
//   cpu         block ops -> vector code, OpenMP       (flash-expand-to-cpu)
//   llvm        LLVM dialect                           (convert-to-llvm)
// or for a GPU (sm_80, sm_90a):
//   tile        gpu.module of flash_tile kernels       (flash-to-tile,
//                                                       flash-tile-allocate-shared)
//   gpu         the kernels in nvgpu/nvvm ops          (flash-tile-to-nvgpu)
//   nvvm        the kernels in the LLVM/NVVM dialects  (convert-gpu-to-nvvm)
//   binary      gpu.binary holding PTX (or a cubin)    (gpu-module-to-binary)
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_PIPELINES_PIPELINES_H
#define FLASHC_PIPELINES_PIPELINES_H

#include "flashc/Config.h"

#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mlir {
class OpPassManager;

namespace flash {

/// Options of every stage, as PipelineOptions.def declares them. Zero
/// means "choose automatically".
struct PipelineConfig {
#define FLASHC_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES, DESC, A, C, \
                               G, D)                                          \
  TYPE FIELD = DEFAULT;
#include "flashc/Pipelines/PipelineOptions.def"

  bool isGPU() const;

  /// The worker threads the CPU code uses: numThreads, or every core.
  int64_t getNumThreads() const;
  /// A canonical one-line form, used as part of cache keys and in
  /// metadata.
  std::string str() const;
  /// Checks the values; the error names the offending option.
  llvm::Error validate() const;
};

/// The stage names of `target`'s pipeline, in order.
llvm::ArrayRef<llvm::StringRef> pipelineStages(llvm::StringRef target = "cpu");

/// Fails, naming the stages, unless `stage` is one of `target`'s.
llvm::Error checkStage(llvm::StringRef stage, llvm::StringRef target = "cpu");

/// Fails unless the pipeline of `config` can stop after `stage`: one of its
/// target's stages.
llvm::Error checkStopStage(llvm::StringRef stage, const PipelineConfig &config);

/// Checks that `chip` (sm_80, sm_90a) accepts PTX ISA `ptxVersion`
/// ("ptx80"); LLVM would otherwise abort the process.
llvm::Error checkChipPTXVersion(llvm::StringRef chip,
                                llvm::StringRef ptxVersion);

/// Adds the passes of one stage to `pm` (anchored on the module).
llvm::Error buildStage(OpPassManager &pm, llvm::StringRef stage,
                       const PipelineConfig &config);

/// Adds every stage up to and including `last` (all when empty).
llvm::Error buildPipeline(OpPassManager &pm, const PipelineConfig &config,
                          llvm::StringRef last = "");

/// One option of PipelineOptions.def, for interfaces that read the table
/// at run time (the driver, Python).
struct PipelineOptionInfo {
  enum class Kind { Integer, Bool, String };
  llvm::StringRef name;
  Kind kind;
  /// Enum-like values ("fa2|algorithm1"), or empty.
  llvm::StringRef values;
  llvm::StringRef description;
  /// Which interfaces take it (see PipelineOptions.def).
  bool attentionPipeline, cpuPipeline, gpuPipeline, driver;
  /// Sets the option in `config` from its text: an integer, a boolean
  /// (true/false, 1/0, on/off) or a string. The error names the option.
  llvm::Error (*set)(PipelineConfig &config, llvm::StringRef text);
  /// The option's value in `config`, as text.
  std::string (*get)(const PipelineConfig &config);
};

/// Every option of PipelineOptions.def, in declaration order.
llvm::ArrayRef<PipelineOptionInfo> getPipelineOptions();

/// The option named `name`, or null.
const PipelineOptionInfo *findPipelineOption(llvm::StringRef name);

namespace detail {
/// How `--help` shows an option's value: its values, else its type.
template <typename T> const char *valueDesc(const char *values);
template <> inline const char *valueDesc<int64_t>(const char *values) {
  return values[0] ? values : "int";
}
template <> inline const char *valueDesc<bool>(const char *values) {
  return values[0] ? values : "bool";
}
template <> inline const char *valueDesc<std::string>(const char *values) {
  return values[0] ? values : "string";
}
} // namespace detail

// Declares, in an option struct, the options whose flag FLAG is 1.
#define FLASHC_WHEN_0(...)
#define FLASHC_WHEN_1(...) __VA_ARGS__
#define FLASHC_WHEN(FLAG, ...) FLASHC_WHEN_##FLAG(__VA_ARGS__)
#define FLASHC_PIPELINE_MEMBER(FIELD, TYPE, NAME, DEFAULT, VALUES, DESC)       \
  Option<TYPE> FIELD{*this, NAME, llvm::cl::desc(DESC),                        \
                     llvm::cl::value_desc(detail::valueDesc<TYPE>(VALUES)),   \
                     llvm::cl::init(DEFAULT)};

/// `flash-attention-pipeline`: the tensor-level stages (to `tiled`).
struct AttentionPipelineOptions
    : public PassPipelineOptions<AttentionPipelineOptions> {
#define FLASHC_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES, DESC, A, C, \
                               G, D)                                          \
  FLASHC_WHEN(A, FLASHC_PIPELINE_MEMBER(FIELD, TYPE, NAME, DEFAULT, VALUES,    \
                                        DESC))
#include "flashc/Pipelines/PipelineOptions.def"
  PipelineConfig toConfig() const;
};

/// `flash-cpu-pipeline`: every stage of the CPU target (to `llvm`).
struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
#define FLASHC_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES, DESC, A, C, \
                               G, D)                                          \
  FLASHC_WHEN(C, FLASHC_PIPELINE_MEMBER(FIELD, TYPE, NAME, DEFAULT, VALUES,    \
                                        DESC))
#include "flashc/Pipelines/PipelineOptions.def"
  PipelineConfig toConfig() const;
};

/// `flash-gpu-pipeline`: every stage of a GPU chip (to `binary`).
struct GPUPipelineOptions : public PassPipelineOptions<GPUPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("The GPU chip the kernels are built "
                                          "for"),
                           llvm::cl::value_desc("sm_80|sm_90a"),
                           llvm::cl::init("sm_80")};
#define FLASHC_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES, DESC, A, C, \
                               G, D)                                          \
  FLASHC_WHEN(G, FLASHC_PIPELINE_MEMBER(FIELD, TYPE, NAME, DEFAULT, VALUES,    \
                                        DESC))
#include "flashc/Pipelines/PipelineOptions.def"
  PipelineConfig toConfig() const;
};

#undef FLASHC_PIPELINE_MEMBER

/// Registers `flash-attention-pipeline` (graph to tiled tensors),
/// `flash-cpu-pipeline` (graph to the LLVM dialect) and
/// `flash-gpu-pipeline` (graph to a gpu.binary) with flashc-opt.
void registerFlashPipelines();

} // namespace flash
} // namespace mlir

#endif // FLASHC_PIPELINES_PIPELINES_H
