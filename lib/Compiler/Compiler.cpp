//===- Compiler.cpp - The compiler and its kernel cache -------------------===//
//
// Compiler: compiles a spec, or a module holding one attention, for a
// target once per process. Kernels are cached by what their code depends
// on: the spec without its sizes and scale, the target and the options
// (and a module's content, when it says more than its spec). The first
// caller of a key compiles while later ones wait for it; specs differing
// only in their default scale share one kernel's code.
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"

#include "CompilerUtils.h"
#include "KernelModule.h"

#include "flashc/Target/TargetInfo.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <cstdio>
#include <mutex>
#include <optional>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

std::string mlir::flash::detail::cpuKernelKey(const AttentionSpec &spec,
                                              const PipelineConfig &c) {
  // Neither the sizes nor the scale (an argument) are in the code.
  AttentionSpec sizeFree = groupKernelSpec(spec);
  sizeFree.batch = sizeFree.seqQ = sizeFree.seqKV = 0;
  sizeFree.scale = std::nullopt;
  sizeFree.layout = flashc::Layout::BHND;
  return "cpu " + sizeFree.str() + " | " + c.str();
}

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

/// The key of the kernel computing `spec` with `c` (whose target is set):
/// what its code depends on. A kernel serves every batch and length: they
/// are not in its key. A GPU decode kernel's fixed split count is not in
/// its configuration (it is passed at launch) but is the Kernel's, so it is
/// in the key.
static std::string kernelKey(const AttentionSpec &spec,
                             const PipelineConfig &c, const JITOptions &jit) {
  if (!c.isGPU())
    return cpuKernelKey(spec, c) + (jit.perfProfiling ? " | perf" : "");
  return gpuVariantId(spec.gpuQuery(c.target), c.alignment) + " | " +
         gpuConfig(spec, c).str() +
         (spec.isDecode() && c.splits ? " | splits " + std::to_string(c.splits)
                                      : "");
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
  JITOptions jit = getJITOptions();
  return getOrBuild(kernelKey(spec, c, jit), spec.scale, [&] {
    return info->isGPU() ? KernelBuilder::buildGPU(spec, c, cacheDirectory)
                         : KernelBuilder::build(spec, c, jit);
  });
}

llvm::Expected<std::shared_ptr<const Kernel>> Compiler::getOrBuild(
    const std::string &key, std::optional<double> scale,
    llvm::function_ref<llvm::Expected<std::unique_ptr<Kernel>>()> build) {
  // One entry per key; the first caller compiles, the others wait for it.
  std::shared_ptr<PendingCompile> entry;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      ++hits;
      return withScale(it->second, scale);
    }
    std::shared_ptr<PendingCompile> &slot = pending[key];
    if (!slot)
      slot = std::make_shared<PendingCompile>();
    entry = slot;
  }
  std::call_once(entry->once, [&] {
    llvm::Expected<std::unique_ptr<Kernel>> built = build();
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
  return withScale(entry->kernel, scale);
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
  PipelineConfig c = config;
  c.target = target.str();
  // Parsing, fusion and the rewriting into a kernel module see the
  // caller's IR: a crash in them must not take the caller's process down.
  MLIRContext ctx(getRegistry(), MLIRContext::Threading::DISABLED);
  std::optional<llvm::Expected<ImportedModule>> imported;
  if (!runRecoveringCrashes([&] {
        imported.emplace(importModule(
            ctx, source, c.isGPU() ? KernelKind::GPU : KernelKind::CPU));
      }))
    return crashError("crashed while parsing or fusing the module (a bug in "
                      "MLIR or flashc)",
                      source, "mlir");
  if (!*imported)
    return imported->takeError();
  const AttentionSpec &spec = (*imported)->spec;
  ModuleOp module = *(*imported)->module;
  bool described = (*imported)->describedBySpec;
  if (llvm::Error e = c.validate())
    return e;
  llvm::Expected<TargetInfo> info = TargetInfo::get(target);
  if (!info)
    return info.takeError();
  // A module that says no more than its spec is the spec's kernel, in this
  // process and in a kernel cache directory; any other is keyed by its
  // content too, and never stored in or loaded from a directory (whose
  // kernels are found by their spec).
  JITOptions jit = getJITOptions();
  std::string key = kernelKey(spec, c, jit);
  if (!described)
    key += " | module " + llvm::toHex(llvm::SHA256::hash(
                              llvm::arrayRefFromStringRef(printOp(module))));
  return getOrBuild(key, spec.scale,
                    [&]() -> llvm::Expected<std::unique_ptr<Kernel>> {
                      if (!info->isGPU())
                        return KernelBuilder::build(spec, c, jit, module);
                      llvm::Expected<std::unique_ptr<Kernel>> kernel =
                          KernelBuilder::buildGPU(
                              spec, c, described ? cacheDirectory : "", module);
                      // Its fallbacks (Kernel::selectVariant) come from the
                      // module too.
                      if (kernel && !described)
                        (*kernel)->moduleSource = source.str();
                      return kernel;
                    });
}

void Compiler::setJITOptions(const JITOptions &options) {
  std::lock_guard<std::mutex> lock(mutex);
  jitOptions = options;
}

JITOptions Compiler::getJITOptions() const {
  std::lock_guard<std::mutex> lock(mutex);
  return jitOptions;
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
