//===- Pipelines.cpp - flashc's named pass pipelines ----------------------===//
//
// Builds the stages of Pipelines.h. The flash passes are created through
// their generated constructors; the upstream ones by name, which keeps this
// file free of the heavy conversion headers.
//
//===----------------------------------------------------------------------===//

#include "flashc/Pipelines/Pipelines.h"

#include "flashc/Analysis/AttentionSchedule.h"
#include "flashc/Conversion/Passes.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"
#include "flashc/Dialect/FlashTile/Transforms/Passes.h"
#include "flashc/Support/Sizes.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Core/GPUTargets.h"
#include "flashc/Target/TargetInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <thread>
#include <tuple>

using namespace mlir;
using namespace mlir::flash;

int64_t PipelineConfig::getNumThreads() const {
  if (numThreads > 0)
    return numThreads;
  unsigned cores = std::thread::hardware_concurrency();
  return cores ? cores : 1;
}

bool PipelineConfig::isGPU() const {
  llvm::Expected<TargetInfo> t = TargetInfo::get(target);
  if (!t) {
    llvm::consumeError(t.takeError());
    return false;
  }
  return t->isGPU();
}

//===----------------------------------------------------------------------===//
// The options table
//===----------------------------------------------------------------------===//

static llvm::Error parseOptionValue(llvm::StringRef name, llvm::StringRef text,
                                    int64_t &value) {
  if (text.getAsInteger(10, value))
    return llvm::createStringError(name + " expects an integer, got '" + text +
                                   "'");
  return llvm::Error::success();
}

static llvm::Error parseOptionValue(llvm::StringRef name, llvm::StringRef text,
                                    bool &value) {
  if (text == "1" || text == "true" || text == "on")
    value = true;
  else if (text == "0" || text == "false" || text == "off")
    value = false;
  else
    return llvm::createStringError(name + " must be on or off, got '" + text +
                                   "'");
  return llvm::Error::success();
}

static llvm::Error parseOptionValue(llvm::StringRef, llvm::StringRef text,
                                    std::string &value) {
  value = text.str();
  return llvm::Error::success();
}

static std::string printOptionValue(int64_t value) {
  return std::to_string(value);
}
static std::string printOptionValue(bool value) { return value ? "1" : "0"; }
static std::string printOptionValue(const std::string &value) {
  return value;
}

template <typename T> struct OptionKind;
template <> struct OptionKind<int64_t> {
  static constexpr auto value = PipelineOptionInfo::Kind::Integer;
};
template <> struct OptionKind<bool> {
  static constexpr auto value = PipelineOptionInfo::Kind::Bool;
};
template <> struct OptionKind<std::string> {
  static constexpr auto value = PipelineOptionInfo::Kind::String;
};

llvm::ArrayRef<PipelineOptionInfo> mlir::flash::getPipelineOptions() {
  static const PipelineOptionInfo options[] = {
#define FLASHC_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES, DESC, A, C, \
                               G, D)                                          \
  {NAME,                                                                       \
   OptionKind<TYPE>::value,                                                    \
   VALUES,                                                                     \
   DESC,                                                                       \
   A,                                                                          \
   C,                                                                          \
   G,                                                                          \
   D,                                                                          \
   [](PipelineConfig &c, llvm::StringRef text) {                               \
     return parseOptionValue(NAME, text, c.FIELD);                             \
   },                                                                          \
   [](const PipelineConfig &c) { return printOptionValue(c.FIELD); }},
#include "flashc/Pipelines/PipelineOptions.def"
  };
  return options;
}

const PipelineOptionInfo *
mlir::flash::findPipelineOption(llvm::StringRef name) {
  for (const PipelineOptionInfo &o : getPipelineOptions())
    if (o.name == name)
      return &o;
  return nullptr;
}

std::string PipelineConfig::str() const {
  // The target, then every option of its pipeline: a cache key, and what
  // a kernel's metadata says of how it was built.
  bool gpu = isGPU();
  std::string s = "target=" + target;
  for (const PipelineOptionInfo &o : getPipelineOptions())
    if (o.name != "target" && (gpu ? o.gpuPipeline : o.cpuPipeline))
      s += " " + o.name.str() + "=" + o.get(*this);
  return s;
}

llvm::Error mlir::flash::checkChipPTXVersion(llvm::StringRef chip,
                                             llvm::StringRef ptxVersion) {
  // Leading zeros (ptx0080) are malformed too.
  unsigned version = 0;
  if (!ptxVersion.starts_with("ptx") ||
      ptxVersion.drop_front(3).getAsInteger(10, version) || version < 60 ||
      ptxVersion != "ptx" + std::to_string(version))
    return llvm::createStringError(
        "malformed PTX ISA version '" + ptxVersion +
        "'; expected e.g. ptx80 (PTX ISA 8.0)");
  // What this LLVM and CUDA 13's ptxas accept (PTX ISA 7.0 introduced
  // sm_80, 8.0 sm_90a; LLVM 22 emits up to 9.0).
  const flashc::GPUTargetFigures *figures = flashc::findGPUTarget(chip);
  if (!figures)
    return llvm::createStringError("unknown GPU chip '" + chip +
                                   "'; expected sm_80 or sm_90a");
  // Only versions LLVM knows: it ignores an unknown `+ptxNN` feature with
  // a warning and emits its default version instead.
  bool known = (version >= 60 && version <= 65) ||
               (version >= 70 && version <= 78) ||
               (version >= 80 && version <= 88) || version == 90;
  if (!known)
    return llvm::createStringError(
        "unsupported PTX ISA version '" + ptxVersion +
        "'; LLVM emits ptx60 to ptx65, ptx70 to ptx78, ptx80 to ptx88 and "
        "ptx90");
  unsigned minimum = static_cast<unsigned>(figures->minPtxVersion);
  if (version < minimum)
    return llvm::createStringError(
        llvm::formatv("{0} needs a PTX ISA version from ptx{1} to ptx90, got "
                      "{2}",
                      chip, minimum, ptxVersion)
            .str());
  return llvm::Error::success();
}

/// Checks a CPU option `name` that selects AVX-512 instructions: `value`
/// is off, host or on; it must not be set for a GPU target (`onGPU`), and
/// on needs 16-lane vectors.
static llvm::Error checkAVX512Option(llvm::StringRef name,
                                     const std::string &value,
                                     int64_t vectorLanes, bool onGPU) {
  if (value != "host" && value != "on" && value != "off")
    return llvm::createStringError(name + " must be off, host or on, got '" +
                                   value + "'");
  if (onGPU)
    return llvm::createStringError(name + " applies to the CPU target only");
  if (value == "on" && vectorLanes == 8)
    return llvm::createStringError(
        name + "=on needs 16-lane vectors (AVX-512); vector-lanes is 8");
  return llvm::Error::success();
}

llvm::Error PipelineConfig::validate() const {
  if (llvm::Expected<TargetInfo> t = TargetInfo::get(target); !t)
    return t.takeError();
  if (!parseLoopOrder(loopOrder))
    return llvm::createStringError("unknown loop order '" + loopOrder +
                                   "'; expected fa2 or algorithm1");
  if (!mlir::flash::isCausalOrder(causalOrder))
    return llvm::createStringError(
        "unknown causal order '" + causalOrder + "'; expected " +
        mlir::flash::getCausalOrderNames().str());
  if (!flashc::isPipelineStageCount(stages))
    return llvm::createStringError(
        llvm::formatv("stages must be {0} to {1}, got {2}",
                      flashc::kMinPipelineStages, flashc::kMaxPipelineStages,
                      stages)
            .str());
  if (std::string why = flashc::whyNotRescaleThreshold(rescaleThreshold);
      !why.empty())
    return llvm::createStringError(why);
  if (std::string why = flashc::whyNotGlobalAlignment(alignment); !why.empty())
    return llvm::createStringError(why);
  auto check = [](int64_t v, llvm::StringRef name) -> llvm::Error {
    if (v < 0)
      return llvm::createStringError(
          llvm::formatv("{0} must be non-negative, got {1}", name, v).str());
    return llvm::Error::success();
  };
  for (auto [v, name] : {std::pair<int64_t, const char *>{blockQ, "block-q"},
                         {blockKV, "block-kv"},
                         {sramBytes, "sram-bytes"},
                         {splits, "splits"},
                         {maxSeqQ, "max-seq-q"},
                         {numThreads, "num-threads"}})
    if (llvm::Error e = check(v, name))
      return e;
  if (onlineBlockKV <= 0)
    return llvm::createStringError(
        llvm::formatv("online-block-kv must be positive, got {0}",
                      onlineBlockKV)
            .str());
  // Upper bounds (flashc/Support/Sizes.h); 0 keeps meaning "choose".
  for (auto [v, name, hi] :
       {std::tuple<int64_t, const char *, int64_t>{blockQ, "block-q",
                                                   flashc::kMaxBlockSize},
        {blockKV, "block-kv", flashc::kMaxBlockSize},
        {onlineBlockKV, "online-block-kv", flashc::kMaxBlockSize},
        {splits, "splits", flashc::kMaxSplits},
        {numThreads, "num-threads", flashc::kMaxThreads},
        {sramBytes, "sram-bytes", flashc::kMaxSramBytes}}) {
    std::string problem = flashc::checkRange(v, name, 0, hi);
    if (!problem.empty())
      return llvm::createStringError(problem);
  }
  if (isGPU()) {
    if (llvm::Error e = checkChipPTXVersion(
            target, ptxVersion))
      return e;
    if (binaryFormat != "isa" && binaryFormat != "bin")
      return llvm::createStringError("unknown binary format '" +
                                     binaryFormat + "'; expected isa or bin");
  }
  if (vectorLanes != 0 && vectorLanes != 8 && vectorLanes != 16)
    return llvm::createStringError(
        llvm::formatv("vector-lanes must be 0 (the host's), 8 or 16, got {0}",
                      vectorLanes)
            .str());
  // bf16-dot's default is off, so any other value names the CPU; scalef's
  // is host, so only on does.
  if (llvm::Error e = checkAVX512Option("bf16-dot", bf16Dot, vectorLanes,
                                        bf16Dot != "off" && isGPU()))
    return e;
  if (llvm::Error e = checkAVX512Option("scalef", scalef, vectorLanes,
                                        scalef == "on" && isGPU()))
    return e;
  if (!ktReuse && isGPU())
    return llvm::createStringError("kt-reuse applies to the CPU target only");
  if (!ablate.empty()) {
    if (isGPU())
      return llvm::createStringError("ablate applies to the CPU target only");
    llvm::SmallVector<llvm::StringRef> phases;
    llvm::StringRef(ablate).split(phases, ',');
    for (llvm::StringRef phase : phases)
      if (phase != "qk" && phase != "softmax" && phase != "pv")
        return llvm::createStringError(
            "unknown phase '" + phase +
            "' in ablate; expected a comma-separated list of qk, softmax, pv");
  }
  if (dynamicSplits && splits != 0)
    return llvm::createStringError(
        llvm::formatv("dynamic-splits excludes a fixed split count ({0})",
                      splits)
            .str());
  return llvm::Error::success();
}

llvm::ArrayRef<llvm::StringRef>
mlir::flash::pipelineStages(llvm::StringRef target) {
  static const llvm::StringRef cpu[] = {"fuse",       "online", "tiled",
                                        "bufferized", "cpu",    "llvm"};
  static const llvm::StringRef gpu[] = {"fuse", "online", "tiled", "tile",
                                        "gpu",  "nvvm",   "binary"};
  if (target == "sm_80" || target == "sm_90a")
    return gpu;
  return cpu;
}

llvm::Error mlir::flash::checkStage(llvm::StringRef stage,
                                    llvm::StringRef target) {
  llvm::ArrayRef<llvm::StringRef> stages = pipelineStages(target);
  if (llvm::is_contained(stages, stage))
    return llvm::Error::success();
  std::string names;
  for (auto [i, s] : llvm::enumerate(stages))
    names += (i == 0 ? "" : i + 1 == stages.size() ? " or " : ", ") + s.str();
  return llvm::createStringError("unknown stage '" + stage + "' for target " +
                                 target + "; expected " + names);
}

llvm::Error mlir::flash::checkStopStage(llvm::StringRef stage,
                                        const PipelineConfig &config) {
  return checkStage(stage, config.target);
}

/// Appends an upstream textual pipeline (a comma-separated pass list
/// anchored on the module) to `pm`.
static llvm::Error addTextual(OpPassManager &pm, llvm::StringRef text) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(parsePassPipeline(text, pm, os)))
    return llvm::createStringError("invalid pipeline '" + text +
                                   "': " + errors);
  return llvm::Error::success();
}

llvm::Error mlir::flash::buildStage(OpPassManager &pm, llvm::StringRef stage,
                                    const PipelineConfig &c) {
  if (stage == "fuse") {
    pm.addPass(createFlashFuseAttention());
    return llvm::Error::success();
  }
  if (stage == "online") {
    FlashOnlineSoftmaxOptions o;
    o.blockKV = c.onlineBlockKV;
    pm.addPass(createFlashOnlineSoftmax(o));
    return llvm::Error::success();
  }
  if (stage == "tiled") {
    FlashTileOptions tile;
    tile.target = c.target;
    tile.loopOrder = c.loopOrder;
    tile.blockQ = c.blockQ;
    tile.blockKV = c.blockKV;
    tile.sramBytes = c.sramBytes;
    // The GPU kernels give a warp 32 rows where they can.
    tile.wideWarps = c.isGPU();
    // Bc fits the shared memory of the kernels' K and V stages, whose rows
    // the warpgroup MMAs leave unpadded.
    tile.stages = c.stages;
    tile.warpgroupMma = c.warpgroupMma;
    tile.alignment = c.alignment;
    pm.addPass(createFlashTile(tile));
    // Split before bounding: flash-causal-skip clamps whatever KV range each
    // split loop covers.
    FlashSplitKVOptions split;
    split.target = c.target;
    split.splits = c.splits;
    split.maxSeqQ = c.maxSeqQ;
    split.dynamicSplits = c.dynamicSplits;
    pm.addPass(createFlashSplitKV(split));
    // The CPU's prefill step costs no more masked than unmasked on a block
    // every row sees, so its prefill keeps one copy of the step, one masked
    // loop; its decode step pays for a mask per score and is split. The
    // GPU's masked step masks only a block some row does not see whole,
    // at a comparison a block: its decode kernels (whose rows all end
    // within a block or two of the keys' end) keep one masked loop, half
    // the code; its prefill kernels split, their main loop free of even
    // that.
    FlashCausalSkipOptions skip;
    skip.splitDiagonal = c.isGPU() ? "prefill" : "decode";
    pm.addPass(createFlashCausalSkip(skip));
    // Fold the index arithmetic the three passes left, so that later passes
    // (and readers) see constant trip counts where shapes are static.
    pm.addPass(createCanonicalizerPass());
    return llvm::Error::success();
  }
  if (stage == "bufferized") {
    // A launch-time split count (dynamic-splits) is the kernel's argument.
    pm.addNestedPass<func::FuncOp>(createFlashCPUBindSplitCount());
    // Backend layout choices on tensors come first: the CPU kernels read f32
    // copies of f16/bf16 operands and one transposed copy of K.
    pm.addPass(createFlashCPUWidenOperands());
    pm.addPass(createFlashCPUTransposeKeys());
    // Empty-tensor elimination must see the destinations before
    // canonicalization folds reshapes of tensor.empty away. No CSE before
    // bufferization: it may merge distinct tensor.empty scratch tensors.
    return addTextual(
        pm, "eliminate-empty-tensors,canonicalize,"
            "one-shot-bufferize{bufferize-function-boundaries "
            "function-boundary-type-conversion=identity-layout-map},"
            "canonicalize,cse,canonicalize,buffer-deallocation-pipeline");
  }
  if (stage == "cpu") {
    FlashExpandToCPUOptions expand;
    expand.vectorLanes = c.vectorLanes;
    expand.ablate = c.ablate;
    llvm::Expected<TargetInfo> t = TargetInfo::get(c.target);
    if (!t)
      return t.takeError();
    if (expand.vectorLanes == 0)
      expand.vectorLanes = t->vectorLanes;
    if (c.bf16Dot == "on" && expand.vectorLanes != 16)
      return llvm::createStringError(
          "bf16-dot=on needs 16-lane vectors (AVX-512); vector-lanes is " +
          std::to_string(expand.vectorLanes));
    expand.bf16Dot =
        c.bf16Dot == "on" ||
        (c.bf16Dot == "host" && t->bf16DotProduct && expand.vectorLanes == 16);
    // The host's vectors are 16 lanes exactly when it has AVX-512.
    expand.scalef = expand.vectorLanes == 16 &&
                    (c.scalef == "on" ||
                     (c.scalef == "host" && t->vectorLanes == 16));
    expand.ktReuse = c.ktReuse;
    // With one split at run time the tiles finalize into the output.
    pm.addPass(createFlashCPUDirectFinalize());
    pm.addPass(createFlashExpandToCPU(expand));
    return addTextual(
        pm, llvm::formatv("convert-linalg-to-loops,scf-forall-to-parallel,"
                          "convert-scf-to-openmp{{num-threads={0}},"
                          "flash-cpu-dynamic-schedule,"
                          "flash-approximate-math,canonicalize",
                          c.getNumThreads())
                .str());
  }
  if (stage == "llvm") {
    // memref.alloca_scope (from scf-to-openmp) must be lowered while its
    // body is still one block, so memref-to-llvm runs before scf-to-cf.
    return addTextual(
        pm, llvm::formatv(
                "lower-affine,convert-vector-to-scf,expand-strided-metadata,"
                "lower-affine,finalize-memref-to-llvm{{use-generic-functions="
                "{0}},convert-scf-to-cf,"
                "convert-vector-to-llvm{{vector-transpose-lowering="
                "shuffle16x16},convert-math-to-llvm,"
                "convert-openmp-to-llvm,convert-to-llvm,"
                "reconcile-unrealized-casts",
                c.allocHooks ? 1 : 0)
                .str());
  }
  if ((stage == "tile" || stage == "gpu") &&
      parseLoopOrder(c.loopOrder) == LoopOrder::Algorithm1)
    return llvm::createStringError(
        "the GPU kernels are built in the fa2 loop order; loop-order "
        "algorithm1 is for the CPU backend and the cost model");
  if (stage == "tile") {
    // The kernels as flash_tile ops, their warps and layouts chosen, their
    // KV copies pipelined over the buffers' stages, their shared memory
    // placed.
    FlashToTileOptions o;
    o.target = c.target;
    o.causalOrder = c.causalOrder;
    o.stages = c.stages;
    o.rescaleThreshold = c.rescaleThreshold;
    o.alignment = c.alignment;
    o.warpgroupMma = c.warpgroupMma;
    pm.addPass(createFlashToTile(o));
    if (c.target == "sm_90a" && c.warpgroupMma)
      pm.addPass(flash_tile::createFlashTileUseWarpgroupMma());
    pm.addPass(flash_tile::createFlashTileAssignLayouts());
    pm.addPass(flash_tile::createFlashTilePipeline());
    if (c.target == "sm_90a" && c.tma) {
      pm.addPass(flash_tile::createFlashTileUseTma());
      if (c.warpSpecialize) {
        pm.addPass(flash_tile::createFlashTileWarpSpecialize());
        if (c.overlapSoftmax)
          pm.addPass(flash_tile::createFlashTileOverlapSoftmax());
        if (c.pingpong)
          pm.addPass(flash_tile::createFlashTilePingPong());
      }
    }
    // The kernel's shared memory within the SRAM asked for (0: the chip's).
    flash_tile::FlashTileAllocateSharedOptions shared;
    shared.chip = c.target;
    shared.sharedBytes = c.sramBytes;
    pm.addPass(flash_tile::createFlashTileAllocateShared(shared));
    return llvm::Error::success();
  }
  if (stage == "gpu") {
    // The kernels' flash_tile IR (the "tile" stage) lowers here.
    pm.addPass(createFlashTileToNVGPU());
    return llvm::Error::success();
  }
  if (stage == "nvvm") {
    // The upstream GPU-to-NVVM lowering for device code only (no host code
    // is left: the runtime launches the kernels), with bare pointers. The
    // walks over the kernel are kept to the ones that change it:
    // - convert-vector-to-scf is not run: the kernels hold no vector
    //   transfers, and one left over would fail the conversion loudly.
    // - convert-gpu-to-nvvm converts arith, index, cf, memref and NVVM's own
    //   PTX-builder ops through their ConvertToLLVM interfaces in the same
    //   walk, so the separate arith and index passes are not run;
    //   convert-nvvm-to-llvm then turns the predicated mbarrier and TMA
    //   ops (which that walk leaves) into their inline PTX.
    // - flash-llvm-grid-constants passes the TMA kernels' tensor maps as
    //   __grid_constant__ parameters.
    // - No canonicalize or cse: LLVM's -O3 does that work again before the
    //   NVPTX back end, and the PTX comes out the same without them.
    // Together that is about a third of the MLIR side of a D = 256 kernel.
    const std::string &ptx = c.ptxVersion;
    return addTextual(
        pm, llvm::formatv(
                "convert-nvgpu-to-nvvm,convert-scf-to-cf,"
                "expand-strided-metadata,"
                "nvvm-attach-target{{chip={0} features=+{1} O=3},lower-affine,"
                "gpu.module(convert-gpu-to-nvvm{{"
                "use-bare-ptr-memref-call-conv=true index-bitwidth=64},"
                "convert-nvvm-to-llvm,reconcile-unrealized-casts),"
                "flash-llvm-grid-constants",
                c.target, ptx)
                .str());
  }
  if (stage == "binary") {
    // A cubin needs the toolkit's ptxas; without this check a wrong path
    // fails in gpu-module-to-binary with the whole module as a note. PTX
    // needs no toolkit.
    if (c.binaryFormat == "bin" && !llvm::sys::fs::is_directory(c.toolkitPath))
      return llvm::createStringError(
          "the CUDA toolkit path '" + c.toolkitPath +
          "' is not a directory (toolkit=; format=bin assembles with its "
          "ptxas)");
    return addTextual(
        pm, llvm::formatv("gpu-module-to-binary{{format={0} toolkit={1}}",
                          c.binaryFormat, c.toolkitPath)
                .str());
  }
  return checkStage(stage, c.target);
}

llvm::Error mlir::flash::buildPipeline(OpPassManager &pm,
                                       const PipelineConfig &config,
                                       llvm::StringRef last) {
  if (llvm::Error e = config.validate())
    return e;
  if (!last.empty())
    if (llvm::Error e = checkStopStage(last, config))
      return e;
  for (llvm::StringRef stage : pipelineStages(config.target)) {
    if (llvm::Error e = buildStage(pm, stage, config))
      return e;
    if (stage == last)
      break;
  }
  return llvm::Error::success();
}

PipelineConfig AttentionPipelineOptions::toConfig() const {
  PipelineConfig c;
#define FLASHC_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES, DESC, A, C, \
                               G, D)                                          \
  FLASHC_WHEN(A, c.FIELD = FIELD;)
#include "flashc/Pipelines/PipelineOptions.def"
  return c;
}

PipelineConfig CPUPipelineOptions::toConfig() const {
  PipelineConfig c;
  c.target = "cpu";
#define FLASHC_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES, DESC, A, C, \
                               G, D)                                          \
  FLASHC_WHEN(C, c.FIELD = FIELD;)
#include "flashc/Pipelines/PipelineOptions.def"
  return c;
}

PipelineConfig GPUPipelineOptions::toConfig() const {
  PipelineConfig c;
  c.target = chip;
#define FLASHC_PIPELINE_OPTION(FIELD, TYPE, NAME, DEFAULT, VALUES, DESC, A, C, \
                               G, D)                                          \
  FLASHC_WHEN(G, c.FIELD = FIELD;)
#include "flashc/Pipelines/PipelineOptions.def"
  return c;
}

namespace {
/// Stands in for a pipeline whose options were invalid: fails with the
/// message when run, so that flashc-opt reports it as a diagnostic.
struct InvalidPipelinePass
    : public PassWrapper<InvalidPipelinePass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InvalidPipelinePass)
  explicit InvalidPipelinePass(std::string message)
      : message(std::move(message)) {}
  StringRef getArgument() const final { return "flash-invalid-pipeline"; }
  void runOnOperation() override {
    getOperation()->emitError(message);
    signalPassFailure();
  }
  std::string message;
};
} // namespace

/// A pipeline builder running every stage up to `last` with the options
/// of `Options` (one of the three option structs).
template <typename Options> static auto buildUpTo(llvm::StringRef last) {
  return [last](OpPassManager &pm, const Options &options) {
    PipelineConfig config = options.toConfig();
    if (llvm::Error e = buildPipeline(pm, config, last)) {
      pm.clear();
      pm.addPass(std::make_unique<InvalidPipelinePass>(
          "invalid flash pipeline options: " + llvm::toString(std::move(e))));
    }
  };
}

void mlir::flash::registerFlashPipelines() {
  PassPipelineRegistration<AttentionPipelineOptions>(
      "flash-attention-pipeline",
      "Fuse, rewrite into online softmax, tile, split and bound causal "
      "loops (tensor level, target-independent)",
      buildUpTo<AttentionPipelineOptions>("tiled"));
  PassPipelineRegistration<CPUPipelineOptions>(
      "flash-cpu-pipeline",
      "The whole CPU pipeline: the naive graph or flash.attention to the "
      "LLVM dialect",
      buildUpTo<CPUPipelineOptions>("llvm"));
  PassPipelineRegistration<GPUPipelineOptions>(
      "flash-gpu-pipeline",
      "The whole GPU pipeline: the naive graph or flash.attention to a "
      "gpu.binary of PTX kernels (chip=sm_80 by default, or sm_90a)",
      buildUpTo<GPUPipelineOptions>("binary"));
}
