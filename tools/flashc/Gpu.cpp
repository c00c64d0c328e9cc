//===- Gpu.cpp - GPU pieces of the flashc driver --------------------------===//
//
// See Gpu.h.
//
//===----------------------------------------------------------------------===//

#include "Gpu.h"
#include "Options.h"

#include "flashc/Core/GPUSchedule.h"
#include "flashc/Runtime/Runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir::flash;
using namespace flashc;
namespace rt = flashc::runtime;

namespace {

llvm::Error toError(const flashc::Status &s) {
  return llvm::createStringError(s.message());
}

/// A tensor's copy in device memory (or the tensor itself, for the
/// simulator).
struct DeviceBuffer {
  rt::Device *device = nullptr;
  void *data = nullptr;
  bool owned = false;
  ~DeviceBuffer() {
    if (owned)
      (void)device->release(data, nullptr);
  }
};

} // namespace

llvm::Expected<GPURunTimes>
flashc::runGPUKernel(const Kernel &kernel, HostTensor &q, HostTensor &k,
                     HostTensor &v, HostTensor &out, HostTensor *lse,
                     bool simulate, int64_t iters) {
  const KernelMetadata &meta = kernel.getMetadata();
  std::shared_ptr<rt::Device> device;
  if (simulate) {
    device = rt::getSimulatorDevice(meta.target);
  } else {
    flashc::Result<std::shared_ptr<rt::Device>> cuda = rt::getCudaDevice(0);
    if (!cuda)
      return llvm::createStringError(cuda.message() +
                                     "; add --simulate to run the kernel in "
                                     "the PTX simulator");
    device = *cuda;
  }
  bool host = device->isSimulator();
  // Buffers where the device reads them.
  HostTensor *tensors[] = {&q, &k, &v, &out, lse};
  DeviceBuffer buffers[5];
  std::vector<TensorRef> refs;
  for (int i = 0; i < 5; ++i) {
    HostTensor *t = tensors[i];
    if (!t) {
      refs.emplace_back();
      continue;
    }
    TensorRef ref = t->ref();
    buffers[i].device = device.get();
    if (!host) {
      uint64_t bytes = static_cast<uint64_t>(t->getNumElements()) *
                       ::flashc::getElementBytes(t->getDType());
      flashc::Result<void *> p = device->allocate(bytes, nullptr);
      if (!p)
        return toError(p.status());
      buffers[i].data = *p;
      buffers[i].owned = true;
      if (flashc::Status s =
              device->copyToDevice(*p, t->data(), bytes, nullptr))
        return toError(s);
      ref.data = *p;
      ref.onDevice = true;
    }
    refs.push_back(ref);
  }
  RunOptions options;
  options.device = device;
  GPURunTimes times;
  times.device = device->describe();
  auto runOnce = [&]() -> llvm::Error {
    if (llvm::Error e = kernel.run(refs[0], refs[1], refs[2], refs[3],
                                   lse ? &refs[4] : nullptr, options))
      return e;
    if (flashc::Status s = device->synchronize(nullptr))
      return toError(s);
    return llvm::Error::success();
  };
  auto counters = [&]() -> std::optional<rt::SimulatorCounters> {
    flashc::Result<rt::SimulatorCounters> c = rt::getSimulatorCounters(*device);
    return c.ok() ? std::optional<rt::SimulatorCounters>(*c) : std::nullopt;
  };
  for (int64_t i = 0; i <= std::max<int64_t>(iters, 1); ++i) {
    std::optional<rt::SimulatorCounters> before;
    if (i == 0 && host)
      before = counters();
    auto t0 = std::chrono::steady_clock::now();
    if (llvm::Error e = runOnce())
      return std::move(e);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                             t0)
                   .count();
    // The first run's share of the simulator's running totals.
    if (before)
      if (std::optional<rt::SimulatorCounters> after = counters())
        times.counters = *after - *before;
    if (i > 0 || iters == 0)
      times.seconds.push_back(t);
  }
  if (!host) {
    for (int i : {3, 4}) {
      HostTensor *t = tensors[i];
      if (!t)
        continue;
      uint64_t bytes = static_cast<uint64_t>(t->getNumElements()) *
                       ::flashc::getElementBytes(t->getDType());
      if (flashc::Status s =
              device->copyToHost(t->data(), buffers[i].data, bytes, nullptr))
        return toError(s);
    }
    if (flashc::Status s = device->synchronize(nullptr))
      return toError(s);
  }
  return times;
}

//===----------------------------------------------------------------------===//
// bundle
//===----------------------------------------------------------------------===//

namespace {

llvm::Expected<std::vector<std::string>> list(const Options &o,
                                              llvm::StringRef name,
                                              llvm::StringRef dflt) {
  std::vector<std::string> items;
  llvm::SmallVector<llvm::StringRef> parts;
  // The text must outlive `parts`, which point into it.
  std::string text = o.has(name) ? o.str(name) : dflt.str();
  llvm::StringRef(text).split(parts, ',');
  for (llvm::StringRef p : parts) {
    if (p.trim().empty())
      return llvm::createStringError("--" + name + ": empty item in '" +
                                     o.str(name) + "'");
    items.push_back(p.trim().str());
  }
  return items;
}

llvm::Expected<std::vector<bool>> both(const Options &o, llvm::StringRef name,
                                       llvm::StringRef dflt) {
  std::string v = o.str(name, dflt);
  if (v == "both")
    return std::vector<bool>{false, true};
  if (v == "yes")
    return std::vector<bool>{true};
  if (v == "no")
    return std::vector<bool>{false};
  return llvm::createStringError("--" + name + " must be yes, no or both, got '" +
                                 v + "'");
}

} // namespace

int flashc::bundleCommand(llvm::ArrayRef<const char *> args) {
  llvm::Expected<Options> parsed = Options::parse(args, {"no-assemble", "add"},
                                                  {"targets",
                                                   "dtypes",
                                                   "head-dims",
                                                   "head-dim-v",
                                                   "groups",
                                                   "causal",
                                                   "masks",
                                                   "lse",
                                                   "variants",
                                                   "causal-order",
                                                   "block-q",
                                                   "block-kv",
                                                   "stages",
                                                   "rescale-threshold",
                                                   "warpgroup-mma",
                                                   "tma",
                                                   "warp-specialize",
                                                   "overlap-softmax",
                                                   "pingpong",
                                                   "alignments",
                                                   "o"});
  if (!parsed)
    return reportError(parsed.takeError());
  const Options &o = *parsed;
  if (!o.has("o"))
    return reportError(
        llvm::createStringError("bundle needs -o DIR, the bundle directory"));
  auto targets = list(o, "targets", "sm_80,sm_90a");
  auto dtypes = list(o, "dtypes", "f16,bf16");
  auto dims = list(o, "head-dims", "64,128,256");
  auto groups = list(o, "groups", "1,4");
  auto variants = list(o, "variants", "prefill,decode");
  // The alignments each variant is built for: 16 (TMA, 16-byte copies)
  // and, for tensors that lack it, the fallbacks (8, 4 or 2).
  auto alignmentNames = list(o, "alignments", "16");
  // The masks: --masks names them (default: every kind flashc knows);
  // --causal yes|no|both is the older spelling of causal, none or both.
  std::vector<Mask> masks;
  if (o.has("masks") && o.has("causal"))
    return reportError(llvm::createStringError(
        "--masks and --causal name the same thing; give one"));
  if (o.has("causal")) {
    llvm::Expected<std::vector<bool>> causal = both(o, "causal", "both");
    if (!causal)
      return reportError(causal.takeError());
    for (bool isCausal : *causal)
      masks.push_back(isCausal ? Mask::causal() : Mask::none());
  } else {
    std::string all;
    for (::flashc::MaskKind kind : ::flashc::kMaskKinds)
      all += (all.empty() ? "" : ",") + std::string(::flashc::stringify(kind));
    llvm::Expected<std::vector<std::string>> names = list(o, "masks", all);
    if (!names)
      return reportError(names.takeError());
    for (const std::string &name : *names) {
      std::optional<Mask> mask = Mask::parse(name);
      if (!mask)
        return reportError(llvm::createStringError(
            "--masks: unknown mask '" + name + "'; expected one of " +
            ::flashc::getMaskKindNames()));
      masks.push_back(*mask);
    }
  }
  auto lse = both(o, "lse", "no");
  if (!targets)
    return reportError(targets.takeError());
  if (!dtypes)
    return reportError(dtypes.takeError());
  if (!dims)
    return reportError(dims.takeError());
  if (!groups)
    return reportError(groups.takeError());
  if (!variants)
    return reportError(variants.takeError());
  if (!lse)
    return reportError(lse.takeError());
  if (!alignmentNames)
    return reportError(alignmentNames.takeError());
  std::vector<int64_t> alignments;
  for (const std::string &text : *alignmentNames) {
    int64_t a = 0;
    if (!llvm::to_integer(text, a) || !::flashc::isGlobalAlignment(a))
      return reportError(llvm::createStringError(
          "--alignments: expected 16, 8, 4 or 2, got '" + text + "'"));
    alignments.push_back(a);
  }
  // V's head dim: one for every variant, or (0) each variant's head dim.
  llvm::Expected<int64_t> headDimV = o.integer("head-dim-v", 0);
  if (!headDimV)
    return reportError(headDimV.takeError());
  if (o.has("head-dim-v") && *headDimV <= 0)
    return reportError(llvm::createStringError(
        "--head-dim-v must be positive, got " + std::to_string(*headDimV)));
  // The pipeline options the bundle takes (--causal-order, --block-q,
  // --block-kv, --stages, --rescale-threshold, --warpgroup-mma, --tma,
  // --warp-specialize, --overlap-softmax, --pingpong), as
  // every command reads them; each variant sets its target.
  PipelineConfig base;
  if (llvm::Error e = readConfig(o, base))
    return reportError(std::move(e));
  // --add keeps the variants of the bundle already there (those of the
  // same id are replaced).
  flashc::runtime::Bundle bundle;
  if (o.has("add")) {
    flashc::Result<flashc::runtime::Bundle> existing =
        flashc::runtime::Bundle::load(o.str("o"));
    if (existing)
      bundle = std::move(*existing);
    else if (existing.status().code() != ::flashc::ErrorCode::NotFound)
      return reportError(toError(existing.status()));
  }
  bool assemble = !o.has("no-assemble");
  for (const std::string &target : *targets) {
    for (const std::string &dtypeName : *dtypes) {
      std::optional<ElementType> dtype = ::flashc::parseElementType(dtypeName);
      if (!dtype)
        return reportError(llvm::createStringError(
            "--dtypes: unknown dtype '" + dtypeName + "'"));
      for (const std::string &dimText : *dims) {
        for (const std::string &groupText : *groups) {
          for (const Mask &mask : masks) {
            for (bool withLse : *lse) {
              for (const std::string &variant : *variants) {
                if (variant != "prefill" && variant != "decode")
                  return reportError(llvm::createStringError(
                      "--variants: expected prefill or decode, got '" +
                      variant + "'"));
                AttentionSpec spec;
                if (llvm::to_integer(dimText, spec.headDim) == false ||
                    llvm::to_integer(groupText, spec.heads) == false)
                  return reportError(llvm::createStringError(
                      "--head-dims and --groups take integers"));
                spec.kvHeads = 1;
                spec.headDimV = *headDimV;
                spec.dtype = *dtype;
                spec.mask = mask;
                spec.withLse = withLse;
                spec.seqQ = variant == "decode" ? 1 : 1024;
                spec.seqKV = 1024;
                for (int64_t alignment : alignments) {
                  PipelineConfig config = base;
                  config.target = target;
                  config.alignment = alignment;
                  llvm::Expected<flashc::runtime::KernelVariant> v =
                      Compiler::compileGPUVariant(spec, config, assemble);
                  if (!v)
                    return reportError(v.takeError());
                  llvm::outs() << llvm::formatv(
                      "{0,-44} {1:f0} ms{2}\n", v->id, v->compileSeconds * 1e3,
                      assemble ? llvm::formatv(", {0} registers, {1} spill "
                                               "bytes",
                                               v->forward.registers,
                                               v->forward.spillBytes)
                                     .str()
                               : std::string());
                  bundle.add(std::move(*v));
                }
              }
            }
          }
        }
      }
    }
  }
  if (flashc::Status s = bundle.save(o.str("o")))
    return reportError(toError(s));
  llvm::outs() << bundle.variants.size() << " kernel variants written to "
               << o.str("o") << "\n";
  return 0;
}
