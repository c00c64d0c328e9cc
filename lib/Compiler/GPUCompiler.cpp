//===- GPUCompiler.cpp - GPU kernels: spec to PTX and launch metadata -----===//
//
// Compiles the GPU kernel variant of an AttentionSpec: the spec's kernel
// module (or one made from a caller's module, Compiler::compileModule) with
// dynamic batch and lengths goes through the GPU stages (fuse, online,
// tiled, tile, gpu, nvvm, binary); the launch
// metadata comes from the kernels' attributes after the gpu stage and the
// PTX from the gpu.binary. The
// result is a runtime KernelVariant, which the LLVM-free runtime launches
// on a CUDA device or in the PTX simulator. Optionally the toolkit's ptxas
// assembles it (a cubin, and each kernel's registers and spills).
//
//===----------------------------------------------------------------------===//

#include "CompilerUtils.h"
#include "KernelModule.h"

#include "flashc/Support/Files.h"
#include "flashc/Core/GPUSchedule.h"
#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Target/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;
namespace rt = flashc::runtime;

flashc::runtime::AttentionQuery
AttentionSpec::gpuQuery(llvm::StringRef target) const {
  return rt::AttentionQuery::of(*this, target.str());
}

std::string mlir::flash::detail::gpuVariantId(const rt::AttentionQuery &q,
                                              int64_t alignment) {
  std::string id = llvm::formatv("{0}-{1}-g{2}-d{3}", q.target,
                                 flashc::stringify(q.dtype), q.group, q.headDim)
                       .str();
  if (q.headDimV != q.headDim)
    id += "dv" + std::to_string(q.headDimV);
  if (!q.mask.isNone())
    id += "-" + q.mask.str();
  if (q.withLse)
    id += "-lse";
  id += q.decode ? "-decode" : "-prefill";
  // A kernel for less aligned tensors (the runtime's fallback).
  if (alignment != flashc::kMaxGlobalAlignment)
    id += "-a" + std::to_string(alignment);
  return id;
}

PipelineConfig mlir::flash::detail::gpuConfig(const AttentionSpec &spec,
                                 const PipelineConfig &c) {
  if (!c.isGPU())
    return c;
  PipelineConfig g = c;
  g.numThreads = 0;
  if (spec.isDecode()) {
    // The decode tile is fixed per variant (it serves every Nq <= 16), so
    // it is chosen for Nq = 16, not for this spec's Nq, within the SRAM
    // asked for (sram-bytes) as flash-tile would.
    llvm::Expected<TargetInfo> target = TargetInfo::get(c.target);
    if (target && c.sramBytes > 0)
      target->sramBytes = c.sramBytes;
    AttentionProblem shape = spec.shape();
    shape.seqQ = 16;
    TileSizes tiles = chooseTileSizes(*target, shape, LoopOrder::FA2,
                                      /*wideWarps=*/true, c.stages,
                                      c.warpgroupMma, c.alignment);
    if (!g.blockQ)
      g.blockQ = tiles.blockQ;
    if (!g.blockKV)
      g.blockKV = tiles.blockKV;
    // One kernel for every split count, as on the CPU: a fixed count in
    // the configuration is passed at every launch (Kernel::fixedSplits).
    g.dynamicSplits = true;
    g.splits = 0;
  } else {
    g.splits = 1;
  }
  return g;
}

llvm::Error mlir::flash::detail::checkGPUSpec(const AttentionSpec &spec,
                                              llvm::StringRef target) {
  if (spec.dtype == ElementType::F32)
    return llvm::createStringError(
        "the GPU kernels take f16 or bf16 inputs (tensor cores); got f32 "
        "for target " +
        target);
  for (auto [d, name] : {std::pair<int64_t, const char *>{spec.headDim, "D"},
                         {spec.valueDim(), "Dv"}}) {
    if (d > flashc::kMaxGPUHeadDim)
      return llvm::createStringError(
          llvm::formatv("head dim {0} = {1} exceeds the {2} the GPU kernels "
                        "support",
                        name, d, flashc::kMaxGPUHeadDim)
              .str());
  }
  return llvm::Error::success();
}

namespace {

/// Runs ptxas on the variant's PTX: a cubin, and registers and spill bytes
/// per kernel.
llvm::Error assemble(rt::KernelVariant &variant, const std::string &toolkit) {
  std::string ptxas = toolkit + "/bin/ptxas";
  if (!llvm::sys::fs::can_execute(ptxas))
    return llvm::createStringError("cannot assemble: no ptxas at " + ptxas);
  llvm::SmallString<128> ptxPath, cubinPath, logPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("flashc", "ptx", ptxPath))
    return llvm::createStringError("temporary file: " + ec.message());
  llvm::sys::fs::createTemporaryFile("flashc", "cubin", cubinPath);
  llvm::sys::fs::createTemporaryFile("flashc", "log", logPath);
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove(ptxPath);
    llvm::sys::fs::remove(cubinPath);
    llvm::sys::fs::remove(logPath);
  });
  if (llvm::Error e = writeFile(ptxPath, variant.ptx))
    return e;
  std::string arch = "-arch=" + variant.query.target;
  llvm::StringRef argv[] = {ptxas, arch, "-v", "-o", cubinPath, ptxPath};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath, logPath};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ptxas, argv, std::nullopt, redirects, 0,
                                     0, &message);
  auto log = llvm::MemoryBuffer::getFile(logPath);
  std::string text = log ? (*log)->getBuffer().str() : "";
  if (rc != 0)
    return llvm::createStringError("ptxas failed on " + variant.id + ": " +
                                   message + "\n" + text);
  // "Compiling entry function 'NAME'", then "N bytes spill stores" and
  // "Used R registers" lines for it.
  rt::KernelEntry *current = nullptr;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(text).split(lines, '\n');
  llvm::Regex entry("Compiling entry function '([^']+)'");
  llvm::Regex spills("([0-9]+) bytes spill stores");
  llvm::Regex regs("Used ([0-9]+) registers");
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef> m;
    if (entry.match(line, &m)) {
      current = m[1] == variant.forward.name ? &variant.forward
                : variant.combine && m[1] == variant.combine->name
                    ? &*variant.combine
                    : nullptr;
    } else if (current && spills.match(line, &m)) {
      m[1].getAsInteger(10, current->spillBytes);
    } else if (current && regs.match(line, &m)) {
      m[1].getAsInteger(10, current->registers);
    }
  }
  auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
  if (!cubin)
    return llvm::createStringError("ptxas wrote no cubin for " + variant.id);
  variant.cubin = (*cubin)->getBuffer().str();
  variant.updateImageHash();
  return llvm::Error::success();
}

} // namespace

llvm::Error Compiler::assembleGPUVariant(rt::KernelVariant &variant,
                                         llvm::StringRef toolkitPath) {
  return assemble(variant, toolkitPath.str());
}

llvm::Expected<rt::KernelVariant> Compiler::compileGPUVariant(
    const AttentionSpec &spec, const PipelineConfig &config, bool assembleIt,
    std::vector<std::pair<std::string, std::string>> *stageIR) {
  return detail::compileGPUVariant(spec, config, assembleIt, stageIR,
                                   ModuleOp());
}

llvm::Expected<rt::KernelVariant> mlir::flash::detail::compileGPUVariant(
    const AttentionSpec &spec, const PipelineConfig &config, bool assembleIt,
    std::vector<std::pair<std::string, std::string>> *stageIR,
    ModuleOp module) {
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error e = spec.validate())
    return std::move(e);
  if (!config.isGPU())
    return llvm::createStringError("target '" + config.target +
                                   "' is not a GPU");
  if (llvm::Error e = checkGPUSpec(spec, config.target))
    return std::move(e);
  PipelineConfig g = gpuConfig(spec, config);
  if (llvm::Error e = g.validate())
    return std::move(e);
  if (g.binaryFormat != "isa")
    return llvm::createStringError(
        "GPU kernels are compiled to PTX (format isa); assemble them with "
        "ptxas for a cubin");

  rt::KernelVariant variant;
  variant.query = spec.gpuQuery(g.target);
  variant.alignment = g.alignment;
  variant.id = gpuVariantId(variant.query, g.alignment);
  variant.config = g.str();

  // The launch metadata the conversion recorded on each kernel.
  std::string metadataError;
  auto readKernels = [&](llvm::StringRef stage, ModuleOp module) {
    if (stage != "gpu")
      return;
    MLIRContext *ctx = module.getContext();
    module->walk([&](gpu::GPUFuncOp fn) {
      auto grid = FlashDialect::GridAttrHelper(ctx).getAttr(fn);
      auto block = FlashDialect::BlockAttrHelper(ctx).getAttr(fn);
      auto shared = FlashDialect::SharedBytesAttrHelper(ctx).getAttr(fn);
      if (!grid || !block || !shared) {
        metadataError = "kernel " + fn.getName().str() +
                        " lacks its launch metadata";
        return;
      }
      // Each argument's flash.param says what the runtime passes there.
      std::vector<rt::KernelParameter> parameters;
      StringAttr paramName = FlashDialect::ParamAttrHelper(ctx).getName();
      for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
        auto param = fn.getArgAttrOfType<DictionaryAttr>(i, paramName);
        auto name = param ? param.getAs<StringAttr>("name") : StringAttr();
        auto meaning =
            param ? param.getAs<StringAttr>("meaning") : StringAttr();
        if (!name || !meaning) {
          metadataError = "kernel " + fn.getName().str() + ": argument " +
                          std::to_string(i) + " lacks its flash.param";
          return;
        }
        Type type = fn.getArgument(i).getType();
        rt::KernelParameter p{name.str(), meaning.str(),
                              type.isF32() ? 32 : 64};
        // A tensor map (flash-tile-use-tma): its tensor and box.
        if (auto tensor = param.getAs<StringAttr>("tensor")) {
          auto box = param.getAs<DenseI64ArrayAttr>("box");
          if (!box) {
            metadataError = "kernel " + fn.getName().str() + ": argument " +
                            std::to_string(i) +
                            " is a tensor map without "
                            "its box";
            return;
          }
          p.bits = 1024;
          p.tensor = tensor.str();
          p.box.assign(box.asArrayRef().begin(), box.asArrayRef().end());
        }
        parameters.push_back(std::move(p));
      }
      if (variant.parameters.empty()) {
        variant.parameters = std::move(parameters);
      } else if (variant.parameters.size() != parameters.size() ||
                 !std::equal(parameters.begin(), parameters.end(),
                             variant.parameters.begin(),
                             [](const rt::KernelParameter &a,
                                const rt::KernelParameter &b) {
                               return a.name == b.name && a.bits == b.bits;
                             })) {
        metadataError = "the kernels of one variant take different arguments";
        return;
      }
      rt::KernelEntry e;
      e.name = fn.getName().str();
      for (Attribute a : grid) {
        auto factor = dyn_cast<GridFactorAttr>(a);
        if (!factor) {
          metadataError = "kernel " + fn.getName().str() +
                          ": its flash.grid is not a list of grid factors";
          return;
        }
        rt::GridFactor f;
        f.ceilDiv = factor.getCeilDiv();
        for (Attribute operand : factor.getProduct()) {
          rt::GridFactor::Operand o;
          if (auto name = dyn_cast<StringAttr>(operand))
            o.size = name.str();
          else
            o.value = cast<IntegerAttr>(operand).getInt();
          f.product.push_back(std::move(o));
        }
        e.grid.factors.push_back(std::move(f));
      }
      e.block = block.getInt();
      e.sharedBytes = shared.getInt();
      e.programmaticLaunch =
          FlashDialect::ProgrammaticLaunchAttrHelper(ctx).isAttrPresent(fn);
      if (llvm::StringRef(e.name).ends_with("_combine")) {
        variant.combine = e;
      } else {
        variant.forward = e;
        variant.forward.finalAtOneSplit =
            FlashDialect::FinalAtOneSplitAttrHelper(ctx).isAttrPresent(fn);
        if (auto tile = FlashDialect::TileAttrHelper(ctx).getAttr(fn)) {
          variant.blockQ = tile[1];
          variant.blockKV = tile[2];
        }
      }
    });
  };
  // The kernels are built for one KV head and its group of query heads; the
  // runtime folds a call's KV heads into the batch.
  AttentionSpec kernelSpec = groupKernelSpec(spec);
  std::optional<MLIRContext> ctx;
  OwningOpRef<ModuleOp> ownModule;
  if (!module) {
    ctx.emplace(getRegistry(), MLIRContext::Threading::DISABLED);
    ownModule = buildKernelModule(*ctx, kernelSpec, KernelKind::GPU);
    module = *ownModule;
  }
  if (llvm::Error e = runStages(module, g, "", stageIR, readKernels))
    return std::move(e);
  if (!metadataError.empty())
    return llvm::createStringError(metadataError);
  if (variant.forward.name.empty() ||
      variant.query.decode != variant.combine.has_value())
    return llvm::createStringError(
        "the GPU pipeline built an unexpected set of kernels for " +
        variant.id);
  module->walk([&](gpu::BinaryOp binary) {
    for (Attribute a : binary.getObjectsAttr())
      variant.ptx = cast<gpu::ObjectAttr>(a).getObject().getValue().str();
  });
  if (variant.ptx.empty())
    return llvm::createStringError("the GPU pipeline produced no PTX for " +
                                   variant.id);
  // What the manifest must say of this PTX, as comments in it: a loaded
  // bundle is checked against them (rt::checkVariantAgainstPTX).
  if (!variant.ptx.empty() && variant.ptx.back() != '\n')
    variant.ptx += '\n';
  variant.ptx += rt::getVariantDescriptor(variant);
  // What a bundle's loader checks of it (its launch metadata against its
  // code; a kernel launched early waits before it reads), checked here
  // too: the JIT's kernels never reach the loader.
  if (flashc::Status s = rt::checkVariantAgainstPTX(variant))
    return llvm::createStringError(
        "flashc built a kernel its runtime would refuse: " + s.message());
  variant.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  variant.updateImageHash();
  if (assembleIt)
    if (llvm::Error e = assemble(variant, g.toolkitPath))
      return std::move(e);
  return variant;
}

llvm::Expected<std::unique_ptr<Kernel>>
KernelBuilder::buildGPU(const AttentionSpec &spec, const PipelineConfig &config,
                        const std::string &cacheDirectory, ModuleOp module) {
  auto start = std::chrono::steady_clock::now();
  auto kernel = std::unique_ptr<Kernel>(new Kernel());
  kernel->spec = spec;
  kernel->config = config;
  kernel->cacheDirectory = cacheDirectory;
  KernelMetadata &meta = kernel->metadata;
  PipelineConfig g = gpuConfig(spec, config);
  meta.target = g.target;
  meta.config = g.str();

  // The disk cache: a bundle whose entries were built with the same
  // options.
  std::shared_ptr<rt::KernelVariant> variant;
  static std::mutex diskMutex;
  if (!cacheDirectory.empty()) {
    std::lock_guard<std::mutex> lock(diskMutex);
    // Its kernels run as this user's code: the directory must be this
    // user's and writable by nobody else (created 0700).
    if (flashc::Status s = flashc::makePrivateDirectory(
            cacheDirectory, "kernel cache directory"))
      return llvm::createStringError(s.message());
    flashc::Result<rt::Bundle> bundle = rt::Bundle::load(cacheDirectory);
    if (bundle)
      if (const rt::KernelVariant *v =
              bundle->find(spec.gpuQuery(g.target), g.alignment))
        if (v->config == g.str())
          variant = std::make_shared<rt::KernelVariant>(*v);
  }
  if (!variant) {
    llvm::Expected<rt::KernelVariant> built = detail::compileGPUVariant(
        spec, config, /*assemble=*/false, &meta.stageIR, module);
    if (!built)
      return built.takeError();
    variant = std::make_shared<rt::KernelVariant>(std::move(*built));
    if (!cacheDirectory.empty()) {
      std::lock_guard<std::mutex> lock(diskMutex);
      flashc::Result<rt::Bundle> bundle = rt::Bundle::load(cacheDirectory);
      rt::Bundle updated = bundle ? std::move(*bundle) : rt::Bundle();
      updated.add(*variant);
      if (flashc::Status s = updated.save(cacheDirectory))
        return llvm::createStringError("kernel cache: " + s.message());
    }
  }
  meta.tiles.blockQ = variant->blockQ;
  meta.tiles.blockKV = variant->blockKV;
  meta.tiles.order = LoopOrder::FA2;
  // Decode kernels choose their split count at launch, unless the
  // configuration fixed one.
  if (variant->query.decode)
    kernel->fixedSplits = config.splits;
  meta.splits = variant->query.decode ? config.splits : 1;
  meta.gpu = variant;
  meta.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return kernel;
}

void Compiler::setCacheDirectory(std::string directory) {
  std::lock_guard<std::mutex> lock(mutex);
  cacheDirectory = std::move(directory);
}

//===----------------------------------------------------------------------===//
// Running GPU kernels
//===----------------------------------------------------------------------===//

namespace {

llvm::Expected<rt::TensorView> toView(const TensorRef &t,
                                      llvm::StringRef name) {
  if (t.sizes.size() != t.strides.size() || t.sizes.empty() ||
      t.sizes.size() > 4)
    return llvm::createStringError(
        llvm::formatv("{0} has rank {1} with {2} strides; expected the same "
                      "number, at most 4",
                      name, t.sizes.size(), t.strides.size())
            .str());
  rt::TensorView v;
  v.data = t.data;
  v.dtype = t.dtype;
  v.rank = static_cast<int>(t.sizes.size());
  for (int d = 0; d < v.rank; ++d) {
    v.sizes[d] = t.sizes[d];
    v.strides[d] = t.strides[d];
  }
  return v;
}

} // namespace

llvm::Error Kernel::runGPU(const TensorRef &q, const TensorRef &k,
                           const TensorRef &v, const TensorRef &out,
                           const TensorRef *lse,
                           const RunOptions &options) const {
  std::shared_ptr<rt::Device> device = options.device;
  if (!device && options.simulate) {
    // One simulator per chip, kept for its parsed modules.
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<rt::Device>> simulators;
    std::lock_guard<std::mutex> lock(mutex);
    std::shared_ptr<rt::Device> &sim = simulators[metadata.target];
    if (!sim)
      sim = rt::getSimulatorDevice(metadata.target);
    device = sim;
  }
  if (!device) {
    flashc::Result<std::shared_ptr<rt::Device>> cuda = rt::getCudaDevice(0);
    if (!cuda)
      return llvm::createStringError(
          cuda.message() + " (RunOptions::simulate runs GPU kernels in the "
                           "PTX simulator)");
    device = *cuda;
  }
  bool host = device->isSimulator();
  rt::AttentionCall call;
  call.scale = options.scale ? *options.scale : spec.effectiveScale();
  if (llvm::Error e = checkScale(call.scale))
    return e;
  call.stream = options.stream;
  call.splits = fixedSplits ? fixedSplits : options.splits;
  rt::TensorView lseView;
  for (auto [ref, view, name] :
       {std::tuple<const TensorRef *, rt::TensorView *, const char *>{
            &q, &call.q, "query"},
        {&k, &call.k, "key"},
        {&v, &call.v, "value"},
        {&out, &call.out, "output"},
        {lse, &lseView, "lse"}}) {
    if (!ref)
      continue;
    if (ref->onDevice == host)
      return llvm::createStringError(
          llvm::formatv("{0} is in {1} memory, but {2} runs on {3} memory",
                        name, ref->onDevice ? "device" : "host",
                        device->describe(), host ? "host" : "device")
              .str());
    llvm::Expected<rt::TensorView> converted = toView(*ref, name);
    if (!converted)
      return converted.takeError();
    *view = *converted;
  }
  if (lse)
    call.lse = &lseView;
  llvm::Expected<std::shared_ptr<const rt::KernelVariant>> variant =
      selectVariant(call);
  if (!variant)
    return variant.takeError();
  if (flashc::Status s = rt::launchAttention(*device, **variant, call))
    return llvm::createStringError(s.message());
  return llvm::Error::success();
}

llvm::Expected<std::shared_ptr<const rt::KernelVariant>>
Kernel::selectVariant(const rt::AttentionCall &call) const {
  int64_t alignment = rt::getCallAlignment(call);
  // Tensors not even aligned to their elements no kernel takes: the
  // launch says so.
  if (alignment >= metadata.gpu->alignment ||
      alignment < flashc::kMinGlobalAlignment)
    return metadata.gpu;
  std::shared_ptr<FallbackEntry> entry;
  {
    std::lock_guard<std::mutex> lock(fallbacks->mutex);
    std::shared_ptr<FallbackEntry> &slot = fallbacks->byAlignment[alignment];
    if (!slot)
      slot = std::make_shared<FallbackEntry>();
    entry = slot;
  }
  std::lock_guard<std::mutex> lock(entry->compile);
  if (!entry->done) {
    PipelineConfig c = config;
    c.alignment = alignment;
    // As the kernel was built: from its module (never cached in a
    // directory), or from its spec through the kernel cache directory of
    // the compiler that built it, if any.
    auto build = [&]() -> llvm::Expected<std::shared_ptr<const Kernel>> {
      if (!moduleSource.empty())
        return Compiler::global().compileModule(moduleSource, metadata.target,
                                                c);
      llvm::Expected<std::unique_ptr<Kernel>> kernel =
          KernelBuilder::buildGPU(spec, c, cacheDirectory);
      if (!kernel)
        return kernel.takeError();
      return std::shared_ptr<const Kernel>(std::move(*kernel));
    };
    llvm::Expected<std::shared_ptr<const Kernel>> built = build();
    if (built) {
      entry->kernel = *built;
      entry->reason =
          llvm::formatv("the tensors' addresses and strides are {0}-byte "
                        "aligned; {1} needs {2}{3}",
                        alignment, metadata.gpu->id, metadata.gpu->alignment,
                        llvm::any_of(metadata.gpu->parameters,
                                     [](const rt::KernelParameter &p) {
                                       return p.isTensorMap();
                                     })
                            ? " (its copies are by TMA)"
                            : "")
              .str();
    } else {
      entry->error =
          llvm::formatv("the tensors are {0}-byte aligned, less than the {1} "
                        "kernel {2} needs, and its fallback did not compile: "
                        "{3}",
                        alignment, metadata.gpu->alignment, metadata.gpu->id,
                        llvm::toString(built.takeError()))
              .str();
    }
    entry->done = true;
  }
  if (!entry->kernel)
    return llvm::createStringError(entry->error);
  return entry->kernel->metadata.gpu;
}

std::vector<Kernel::Fallback> Kernel::getFallbacks() const {
  // Those compiled: a compile in progress is not waited for.
  std::lock_guard<std::mutex> lock(fallbacks->mutex);
  std::vector<Fallback> list;
  for (const auto &[alignment, entry] : fallbacks->byAlignment)
    if (entry->done && entry->kernel)
      list.push_back({alignment, entry->kernel->metadata.gpu, entry->reason});
  return list;
}
