//===- Pipelines.h - flashc's named pass pipelines --------------*- C++ -*-===//
//
// The stages of flashc and their options. `PipelineConfig` is the one
// options struct: the C++ API fills it directly, and `flashc-opt` parses it
// from `--flash-cpu-pipeline="target=cpu block-kv=128 ..."`.
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
//   gpu         gpu.module of nvgpu/nvvm kernels       (flash-to-nvgpu)
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

/// Options of every stage. Zero means "choose automatically".
struct PipelineConfig {
  /// cpu, sm_80 or sm_90a: sizes the tiles and drives the split model.
  std::string target = "cpu";
  /// fa2 or algorithm1.
  std::string loopOrder = "fa2";
  int64_t blockQ = 0;
  int64_t blockKV = 0;
  int64_t sramBytes = 0;
  /// KV splits for decode shapes; 0: wave model, 1: never split.
  int64_t splits = 0;
  /// Split only when Nq is at most this.
  int64_t maxSeqQ = 16;
  /// Block size of the untiled online loop (re-chosen by flash-tile).
  int64_t kvBlock = 128;
  /// Worker threads of the CPU code; 0: all cores.
  int64_t numThreads = 0;
  /// CPU: f32 lanes of one vector register the kernels are blocked for,
  /// 16 (AVX-512, 32 registers) or 8 (AVX2, 16 registers); 0: the host's.
  int64_t vectorLanes = 0;
  /// CPU: decode's S for bf16 Q and K by AVX512_BF16's vdpbf16ps: "off"
  /// (the default: it measured no faster, decode being bound by reading K),
  /// "host" (where the host has it and vectors are 16 lanes) or "on".
  std::string bf16Dot = "off";
  /// CPU: the softmax's 2^x of 16-lane vectors by AVX-512's vreduceps
  /// and vscalefps: "host" (the default: where the host has AVX-512 and
  /// vectors are 16 lanes), "on" or "off" (2^n built in the exponent
  /// bits, as with 8 lanes).
  std::string scalef = "host";
  /// CPU prefill: S for the columns every row of a 64-row super-block sees
  /// chunk by chunk across its row blocks, each chunk of the transposed K
  /// read from L1 by all of them (false: row block by row block).
  bool ktReuse = true;
  /// CPU, for measurement only: phases of the attention step to leave out
  /// (flash-expand-to-cpu's `ablate`: qk, softmax, pv); wrong results.
  std::string ablate;
  /// Split with a count chosen at launch (flash.split_count) instead of a
  /// fixed one: every attention on the CPU (the count is the kernel's
  /// argument marked {flash.split_count}), decode shapes on the GPU.
  bool dynamicSplits = false;
  /// CPU: heap buffers through finalize-memref-to-llvm's generic functions
  /// (`_mlir_memref_to_llvm_alloc`, `_mlir_memref_to_llvm_free`) instead of
  /// malloc and free. The JIT binds them to an allocator that keeps large
  /// scratch buffers for the next call.
  bool allocHooks = false;
  /// GPU: the PTX ISA version, e.g. "ptx80"; empty: the default for the
  /// chip (ptx80).
  std::string ptxVersion;
  /// GPU: "isa" (PTX text) or "bin" (a cubin, assembled by the toolkit's
  /// ptxas) in the final gpu.binary.
  std::string binaryFormat = "isa";
  /// GPU: the CUDA toolkit (ptxas, libdevice).
  std::string toolkitPath = FLASHC_DEFAULT_CUDA_TOOLKIT;

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

/// The textual form of PipelineConfig for `flashc-opt`.
struct FlashPipelineOptions : public PassPipelineOptions<FlashPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("cpu, sm_80 or sm_90a"),
                             llvm::cl::init("cpu")};
  Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("GPU chip (sm_80, sm_90a); sets the target"),
      llvm::cl::init("")};
  Option<std::string> loopOrder{*this, "loop-order",
                                llvm::cl::desc("fa2 or algorithm1"),
                                llvm::cl::init("fa2")};
  Option<int64_t> blockQ{*this, "block-q",
                         llvm::cl::desc("Query rows per block (0: auto)"),
                         llvm::cl::init(0)};
  Option<int64_t> blockKV{*this, "block-kv",
                          llvm::cl::desc("Keys per block (0: auto)"),
                          llvm::cl::init(0)};
  Option<int64_t> sramBytes{*this, "sram-bytes",
                            llvm::cl::desc("SRAM capacity (0: target's)"),
                            llvm::cl::init(0)};
  Option<int64_t> splits{*this, "splits",
                         llvm::cl::desc("KV splits (0: wave model)"),
                         llvm::cl::init(0)};
  Option<int64_t> maxSeqQ{*this, "max-seq-q",
                          llvm::cl::desc("Split only when Nq <= this"),
                          llvm::cl::init(16)};
  Option<int64_t> numThreads{*this, "num-threads",
                             llvm::cl::desc("CPU threads (0: all cores)"),
                             llvm::cl::init(0)};
  Option<int64_t> vectorLanes{
      *this, "vector-lanes",
      llvm::cl::desc("CPU: f32 lanes per vector register, 16 or 8 (0: the "
                     "host's)"),
      llvm::cl::init(0)};
  Option<std::string> bf16Dot{
      *this, "bf16-dot",
      llvm::cl::desc("CPU: bf16 decode's S by vdpbf16ps: off, host (where "
                     "the host has AVX512_BF16) or on"),
      llvm::cl::init("off")};
  Option<std::string> scalef{
      *this, "scalef",
      llvm::cl::desc("CPU: the softmax's 2^x by AVX-512's vreduceps and "
                     "vscalefps: off, "
                     "host (where the host has AVX-512 and vectors are 16 "
                     "lanes) or on"),
      llvm::cl::init("host")};
  Option<bool> ktReuse{
      *this, "kt-reuse",
      llvm::cl::desc("CPU prefill: S chunk by chunk of the transposed K "
                     "across the row blocks (false: row block by row block)"),
      llvm::cl::init(true)};
  Option<std::string> ablate{
      *this, "ablate",
      llvm::cl::desc("CPU, measurement only: step phases to leave out "
                     "(qk,softmax,pv); the results are wrong"),
      llvm::cl::init("")};
  Option<bool> dynamicSplits{
      *this, "dynamic-splits",
      llvm::cl::desc("Split with a count chosen at launch (CPU: every "
                     "attention, the count an argument; GPU: decode)"),
      llvm::cl::init(false)};
  Option<bool> allocHooks{
      *this, "alloc-hooks",
      llvm::cl::desc("CPU: heap buffers through _mlir_memref_to_llvm_alloc "
                     "and _mlir_memref_to_llvm_free (the JIT's scratch "
                     "allocator) instead of malloc and free"),
      llvm::cl::init(false)};
  Option<std::string> ptxVersion{
      *this, "ptx", llvm::cl::desc("GPU: PTX ISA version (e.g. ptx80)"),
      llvm::cl::init("")};
  Option<std::string> binaryFormat{
      *this, "format", llvm::cl::desc("GPU: isa (PTX) or bin (cubin)"),
      llvm::cl::init("isa")};
  Option<std::string> toolkitPath{
      *this, "toolkit", llvm::cl::desc("GPU: CUDA toolkit path"),
      llvm::cl::init(FLASHC_DEFAULT_CUDA_TOOLKIT)};

  PipelineConfig toConfig() const;
};

/// Registers `flash-attention-pipeline` (graph to tiled tensors),
/// `flash-cpu-pipeline` (graph to the LLVM dialect) and
/// `flash-gpu-pipeline` (graph to a gpu.binary) with flashc-opt.
void registerFlashPipelines();

} // namespace flash
} // namespace mlir

#endif // FLASHC_PIPELINES_PIPELINES_H
