//===- flashc.cpp - The flashc command-line driver ------------------------===//
//
// flashc's main job: compile an attention problem, run it, check it against
// a float64 reference and report its cost. Subcommands:
//
//   flashc [run]   compile, run, check, time, and print the cost report
//                  (GPU targets: on the CUDA device, or --simulate)
//   flashc compile --emit mlir|llvm|ptx|cubin|manifest [-o FILE]
//                  [--stop-after STAGE]
//   flashc cost    [--sram-bytes N] [--json] [--target cpu|sm_80|sm_90a]
//   flashc bench   flashc's CPU kernel against a 3-pass OpenBLAS attention
//   flashc bundle  compile GPU kernel variants into a runtime bundle
//
// With no arguments it runs a built-in example. Bad flags or shapes get a
// one-line error and exit code 1 (2 for a failed numerical check).
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "Gpu.h"
#include "Npy.h"
#include "Options.h"

#include "flashc/Analysis/CostModel.h"
#include "flashc/Compiler/Reference.h"
#include "flashc/Target/TargetInfo.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

using namespace mlir::flash;
using namespace flashc;

namespace {

const char *kUsage =
    "usage: flashc [run|compile|cost|bench|bundle] [options]\n"
    "  problem: --batch B --heads H --kv-heads HKV --seq-q NQ --seq-kv NK\n"
    "           --head-dim D [--head-dim-v DV] --dtype f32|f16|bf16\n"
    "           [--causal] [--scale S] [--target cpu|sm_80|sm_90a]\n"
    "           [--lse] (run: --lse F.npy writes the log-sum-exp)\n"
    "  schedule: [--loop-order fa2|algorithm1] [--block-q N] [--block-kv N]\n"
    "            [--splits N] [--threads N] [--sram-bytes N]\n"
    "            [--vector-lanes 8|16] (CPU; default: the host's)\n"
    "            [--bf16-dot off|host|on] (CPU: bf16 decode by vdpbf16ps)\n"
    "            [--scalef off|host|on] (CPU: softmax 2^x by vscalefps)\n"
    "            [--kt-reuse on|off] (CPU prefill: S chunk by chunk of K^T\n"
    "            across the row blocks, or row block by row block)\n"
    "            [--ablate qk,softmax,pv] (CPU, run: time the kernel with "
    "those\n"
    "            phases left out; no check, the results are wrong)\n"
    "  run:     [--q F.npy --k F.npy --v F.npy] [--out F.npy] [--lse "
    "F.npy]\n"
    "           [--iters N] [--check-rows N] [--seed N]\n"
    "           [--simulate] (GPU targets: run in the PTX simulator)\n"
    "           [--versus 'SCHEDULE OPTIONS'] (CPU: time a second kernel\n"
    "            with those options, runs interleaved, and check both)\n"
    "  compile: --emit mlir|llvm|ptx|cubin|manifest [-o FILE] [--stop-after "
    "STAGE]\n"
    "  cost:    [--json]\n"
    "  bench:   [--sizes 512,1024,...] [--head-dims 64,128] [--heads H]\n"
    "           [--iters N] [--rounds R] [--adjacent] [--json FILE]\n"
    "           | --decode-loop STEPS [--seq-kv START]\n"
    "           | --decode [--seq-kv 32768,65536] [--threads T] [--iters N]\n"
    "  bundle:  -o DIR [--targets sm_80,sm_90a] [--dtypes f16,bf16]\n"
    "           [--head-dims 64,128,256] [--groups 1,4]\n"
    "           [--causal yes|no|both] [--lse yes|no|both]\n"
    "           [--variants prefill,decode] [--no-assemble]\n";

/// The built-in example: causal GQA prefill, 2 x 8 heads (2 KV heads) x
/// 1024 tokens x 64, f32.
AttentionSpec builtinExample() {
  AttentionSpec spec;
  spec.batch = 2;
  spec.heads = 8;
  spec.kvHeads = 2;
  spec.seqQ = spec.seqKV = 1024;
  spec.headDim = 64;
  spec.causal = true;
  spec.withLse = true;
  return spec;
}

/// Parses the options of a subcommand and the problem they describe. A name
/// in `extraValued` that is also a shape flag (`--lse`) takes a value here.
llvm::Error parseProblem(llvm::ArrayRef<const char *> args,
                         const std::set<std::string> &extraFlags,
                         const std::set<std::string> &extraValued,
                         Options &options, AttentionSpec &spec,
                         PipelineConfig &config) {
  std::set<std::string> flags = shapeFlags(), valued = shapeValued();
  flags.insert(extraFlags.begin(), extraFlags.end());
  valued.insert(extraValued.begin(), extraValued.end());
  for (const std::string &name : extraValued)
    flags.erase(name);
  llvm::Expected<Options> parsed = Options::parse(args, flags, valued);
  if (!parsed)
    return parsed.takeError();
  options = std::move(*parsed);
  if (llvm::Error e = readSpec(options, spec))
    return e;
  return readConfig(options, config);
}

void printSpec(const AttentionSpec &s, llvm::raw_ostream &os) {
  os << llvm::formatv(
      "attention: batch {0}, heads {1} (kv-heads {2}), seq-q "
      "{3}, seq-kv {4}, head-dim {5}/{6}, {7}{8}, scale {9:f6}\n",
      s.batch, s.heads, s.kvHeads, s.seqQ, s.seqKV, s.headDim, s.valueDim(),
      stringifyDType(s.dtype), s.causal ? ", causal" : "", s.effectiveScale());
}

llvm::Expected<CostReport> costReport(const AttentionSpec &spec,
                                      const PipelineConfig &config) {
  llvm::Expected<TargetInfo> target = TargetInfo::get(config.target);
  if (!target)
    return target.takeError();
  if (config.sramBytes)
    target->sramBytes = config.sramBytes;
  CostOptions options;
  options.order = *parseLoopOrder(config.loopOrder);
  options.blockQ = config.blockQ;
  options.blockKV = config.blockKV;
  options.splits = config.splits;
  // Like flash-split-kv, never more splits than KV blocks.
  if (options.splits > 0) {
    TileSizes tiles = chooseTileSizes(*target, spec.shape(), options.order);
    int64_t blockKV = config.blockKV ? config.blockKV : tiles.blockKV;
    options.splits =
        std::min(options.splits, getMaxSplits(spec.shape(), blockKV));
  }
  return computeCostReport(*target, spec.shape(), options);
}

//===----------------------------------------------------------------------===//
// run
//===----------------------------------------------------------------------===//

/// The schedule of `flashc run --versus 'OPTIONS'`: `base` with the schedule
/// options in `text` (space-separated, as on the command line) applied. The
/// problem and the target stay those of the run.
llvm::Expected<PipelineConfig> parseVersus(llvm::StringRef text,
                                           const PipelineConfig &base) {
  if (base.isGPU())
    return llvm::createStringError(
        "--versus compares CPU kernels; the target is " + base.target);
  llvm::SmallVector<llvm::StringRef> words;
  text.split(words, ' ', -1, /*KeepEmpty=*/false);
  std::vector<std::string> storage(words.begin(), words.end());
  std::vector<const char *> args;
  for (const std::string &w : storage)
    args.push_back(w.c_str());
  if (args.empty())
    return llvm::createStringError(
        "--versus expects schedule options, e.g. --versus '--block-kv 128'");
  llvm::Expected<Options> parsed = Options::parse(
      args, {},
      {"block-q", "block-kv", "splits", "loop-order", "threads", "sram-bytes",
       "vector-lanes", "ablate", "bf16-dot", "scalef", "kt-reuse"});
  if (!parsed)
    return llvm::createStringError("in --versus: " +
                                   llvm::toString(parsed.takeError()));
  PipelineConfig config = base;
  if (llvm::Error e = readConfig(*parsed, config))
    return llvm::createStringError("in --versus: " +
                                   llvm::toString(std::move(e)));
  return config;
}

int runCommand(llvm::ArrayRef<const char *> args, bool builtin) {
  Options o;
  AttentionSpec spec = builtin ? builtinExample() : AttentionSpec();
  PipelineConfig config;
  if (llvm::Error e = parseProblem(args, {"simulate"},
                                   {"q", "k", "v", "out", "lse", "iters",
                                    "check-rows", "seed", "versus"},
                                   o, spec, config))
    return reportError(std::move(e));
  bool gpu = config.isGPU();
  if (o.has("simulate") && !gpu)
    return reportError(llvm::createStringError(
        "--simulate runs GPU kernels; the target is " + config.target));
  // --versus: a second CPU kernel for the same problem, built with other
  // schedule options, timed in turn with the first.
  std::optional<PipelineConfig> versus;
  std::string versusText = o.str("versus", "");
  if (o.has("versus")) {
    llvm::Expected<PipelineConfig> other = parseVersus(versusText, config);
    if (!other)
      return reportError(other.takeError());
    versus = *other;
  }
  llvm::Expected<int64_t> iters = o.integer("iters", 0);
  llvm::Expected<int64_t> checkRows = o.integer("check-rows", 256);
  llvm::Expected<int64_t> seedOpt = o.integer("seed", -1);
  if (!iters)
    return reportError(iters.takeError());
  if (*iters < 0)
    return reportError(llvm::createStringError(
        "--iters must be non-negative (0: time for about half a second), "
        "got " +
        std::to_string(*iters)));
  if (!checkRows)
    return reportError(checkRows.takeError());
  if (!seedOpt)
    return reportError(seedOpt.takeError());

  // Inputs: .npy files, or fresh random values. Allocations that cannot
  // succeed are errors.
  llvm::Expected<HostTensor> qAlloc = HostTensor::allocate(
      spec.dtype, {spec.batch, spec.heads, spec.seqQ, spec.headDim});
  if (!qAlloc)
    return reportError(qAlloc.takeError());
  llvm::Expected<HostTensor> kAlloc = HostTensor::allocate(
      spec.dtype, {spec.batch, spec.kvHeads, spec.seqKV, spec.headDim});
  if (!kAlloc)
    return reportError(kAlloc.takeError());
  llvm::Expected<HostTensor> vAlloc = HostTensor::allocate(
      spec.dtype, {spec.batch, spec.kvHeads, spec.seqKV, spec.valueDim()});
  if (!vAlloc)
    return reportError(vAlloc.takeError());
  llvm::Expected<HostTensor> outAlloc = HostTensor::allocate(
      spec.dtype, {spec.batch, spec.heads, spec.seqQ, spec.valueDim()});
  if (!outAlloc)
    return reportError(outAlloc.takeError());
  llvm::Expected<HostTensor> lseAlloc =
      HostTensor::allocate(DType::F32, {spec.batch, spec.heads, spec.seqQ});
  if (!lseAlloc)
    return reportError(lseAlloc.takeError());
  HostTensor &q = *qAlloc, &k = *kAlloc, &v = *vAlloc, &out = *outAlloc,
             &lse = *lseAlloc;

  if (builtin)
    llvm::outs() << "flashc: running the built-in example (see `flashc "
                    "--help` for options)\n";
  printSpec(spec, llvm::outs());
  unsigned seed =
      *seedOpt >= 0 ? static_cast<unsigned>(*seedOpt) : std::random_device{}();
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  for (auto [name, tensor] :
       {std::pair<const char *, HostTensor *>{"q", &q}, {"k", &k}, {"v", &v}}) {
    if (o.has(name)) {
      if (llvm::Error e = readNpy(o.str(name), *tensor))
        return reportError(std::move(e));
      continue;
    }
    for (int64_t i = 0; i < tensor->getNumElements(); ++i)
      tensor->set(i, normal(rng));
  }

  auto start = std::chrono::steady_clock::now();
  auto kernel = Compiler::global().compile(spec, config.target, config);
  double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!kernel)
    return reportError(kernel.takeError());
  // A cached lookup: the mean of 100.
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i)
    (void)Compiler::global().compile(spec, config.target, config);
  double cachedSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() /
      100;
  const KernelMetadata &meta = (*kernel)->getMetadata();
  // --versus: the other CPU kernel, run on the same tensors.
  std::shared_ptr<const Kernel> other;
  TensorRef lseRef = lse.ref();
  auto runKernel = [&](const Kernel &kern) {
    return kern.run(q.ref(), k.ref(), v.ref(), out.ref(),
                    spec.withLse ? &lseRef : nullptr);
  };

  if (gpu) {
    // GPU kernels: on the CUDA device, or in the PTX simulator.
    llvm::Expected<GPURunTimes> times =
        runGPUKernel(**kernel, q, k, v, out, spec.withLse ? &lse : nullptr,
                     o.has("simulate"), *iters);
    if (!times)
      return reportError(times.takeError());
    std::vector<double> sorted = times->seconds;
    std::sort(sorted.begin(), sorted.end());
    double median = sorted[sorted.size() / 2];
    const flashc::runtime::KernelVariant &variant = *meta.gpu;
    llvm::outs() << llvm::formatv(
        "schedule: target {0}, {1} kernel, Q tile {2} head(s) x {3} rows, "
        "Bc {4}, {5} threads, {6} bytes of shared memory{7}\n",
        meta.target, variant.query.decode ? "decode (split-KV)" : "prefill",
        variant.query.group, variant.blockQ, variant.blockKV,
        variant.forward.block, variant.forward.sharedBytes,
        !variant.query.decode ? std::string()
        : meta.splits > 0
            ? ", " + std::to_string(meta.splits) +
                  " split(s) asked at every launch (at most one per KV block)"
            : std::string(", splits chosen at launch"));
    llvm::outs() << llvm::formatv(
        "compile: {0:f1} ms cold, {1:f1} us cached\n", compileSeconds * 1e3,
        cachedSeconds * 1e6);
    llvm::outs() << llvm::formatv(
        "time: {0:f3} ms on {1} (median of {2} runs){3}\n", median * 1e3,
        times->device, sorted.size(),
        o.has("simulate") ? "; a simulator's time says nothing of the GPU's"
                          : llvm::formatv(", {0:f1} TFLOP/s",
                                          getCausalFlops(spec.shape()) /
                                              median * 1e-12)
                                .str());
  } else {
    // The decode entry is compiled at its first use: count it as compile
    // time, not as the first run's.
    auto p0 = std::chrono::steady_clock::now();
    if (llvm::Error e = (*kernel)->prepare(spec.seqQ))
      return reportError(std::move(e));
    compileSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - p0)
            .count();
    if (llvm::Error e = runKernel(**kernel))
      return reportError(std::move(e));
    if (versus) {
      llvm::Expected<std::shared_ptr<const Kernel>> k2 =
          Compiler::global().compile(spec, versus->target, *versus);
      if (!k2)
        return reportError(k2.takeError());
      other = *k2;
      if (llvm::Error e = other->prepare(spec.seqQ))
        return reportError(std::move(e));
      if (llvm::Error e = runKernel(*other))
        return reportError(std::move(e));
    }
    auto timed = [&](const Kernel &kern) -> llvm::Expected<double> {
      auto t0 = std::chrono::steady_clock::now();
      if (llvm::Error e = runKernel(kern))
        return std::move(e);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           t0)
          .count();
    };
    // Time: at least 3 runs and about half a second, or --iters. With
    // --versus, each round runs both kernels, in turn first, so that a
    // host whose speed drifts slows both alike; their ratio is per round.
    std::vector<double> times, otherTimes, ratios;
    double total = 0;
    while ((*iters > 0 && static_cast<int64_t>(times.size()) < *iters) ||
           (*iters == 0 && (times.size() < 3 || total < 0.5))) {
      bool otherFirst = other && times.size() % 2 == 1;
      double t = 0, u = 0;
      for (int turn = 0; turn < (other ? 2 : 1); ++turn) {
        bool runOther = (turn == 0) == otherFirst;
        llvm::Expected<double> seconds = timed(runOther ? *other : **kernel);
        if (!seconds)
          return reportError(seconds.takeError());
        (runOther ? u : t) = *seconds;
      }
      times.push_back(t);
      total += t + u;
      if (other) {
        otherTimes.push_back(u);
        ratios.push_back(u / t);
      }
      if (times.size() >= 1000)
        break;
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    double flops = static_cast<double>(getCausalFlops(spec.shape()));
    int64_t threads = config.getNumThreads();
    int64_t splits =
        (*kernel)->getSplitCount(spec.batch, spec.seqQ, spec.seqKV);

    llvm::outs() << llvm::formatv(
        "schedule: target {0}, {1} order, Br {2} x Bc {3}{4}, {5} split{6}"
        "{7}, threads {8}\n",
        meta.target, stringifyLoopOrder(meta.tiles.order), meta.tiles.blockQ,
        meta.tiles.blockKV,
        spec.heads > spec.kvHeads
            ? llvm::formatv(" ({0} query heads packed per tile)",
                            spec.heads / spec.kvHeads)
                  .str()
            : std::string(),
        splits, splits == 1 ? "" : "s",
        meta.splits ? "" : " (chosen per run from the sizes)", threads);
    llvm::outs() << llvm::formatv(
        "compile: {0:f1} ms cold, {1:f1} us cached\n", compileSeconds * 1e3,
        cachedSeconds * 1e6);
    llvm::outs() << llvm::formatv(
        "time: {0:f3} ms (median of {1} runs), {2:f1} GFLOP/s ({3:f1} per "
        "thread); fastest {4:f3} ms, {5:f1} GFLOP/s\n",
        median * 1e3, times.size(), flops / median * 1e-9,
        flops / median * 1e-9 / threads, times.front() * 1e3,
        flops / times.front() * 1e-9);
    if (other) {
      std::sort(otherTimes.begin(), otherTimes.end());
      std::sort(ratios.begin(), ratios.end());
      double otherMedian = otherTimes[otherTimes.size() / 2];
      llvm::outs() << llvm::formatv(
          "versus '{0}': {1:f3} ms (median of {2} runs, in turn with the "
          "above), {3:f1} GFLOP/s; fastest {4:f3} ms, {5:f1} GFLOP/s\n",
          versusText, otherMedian * 1e3, otherTimes.size(),
          flops / otherMedian * 1e-9, otherTimes.front() * 1e3,
          flops / otherTimes.front() * 1e-9);
      llvm::outs() << llvm::formatv(
          "versus time / time, per round: median {0:f3} (quartiles {1:f3} "
          "to {2:f3})\n",
          ratios[ratios.size() / 2], ratios[ratios.size() / 4],
          ratios[(3 * ratios.size()) / 4]);
    }
  }

  // A kernel with phases left out computes wrong results by design.
  if (!config.ablate.empty()) {
    llvm::outs() << "check: skipped (--ablate " << config.ablate
                 << " leaves phases out; the results are wrong by design)\n";
    return 0;
  }

  // Check against the float64 reference, on every row or a sample: the
  // kernel's output, then (--versus) the other kernel's.
  int64_t rows = spec.batch * spec.heads * spec.seqQ;
  std::vector<int64_t> picked;
  if (*checkRows <= 0 || *checkRows >= rows) {
    for (int64_t r = 0; r < rows; ++r)
      picked.push_back(r);
  } else {
    std::uniform_int_distribution<int64_t> pick(0, rows - 1);
    for (int64_t i = 0; i < *checkRows; ++i)
      picked.push_back(pick(rng));
  }
  double tolerance = getOutputTolerance(spec.dtype);
  std::vector<double> expected(static_cast<size_t>(spec.valueDim()));
  auto check = [&](llvm::StringRef label) {
    double worst = 0, worstLse = 0;
    for (int64_t r : picked) {
      int64_t i = r % spec.seqQ, h = (r / spec.seqQ) % spec.heads,
              b = r / (spec.seqQ * spec.heads);
      double l = referenceAttentionRow(spec, q, k, v, b, h, i, expected.data());
      for (int64_t t = 0; t < spec.valueDim(); ++t) {
        // NaN where the reference is NaN (a row whose scores include NaN)
        // and equal infinities are the answer.
        worst = std::max(worst, elementError(expected[t],
                                             out.get(r * spec.valueDim() + t)));
      }
      if (spec.withLse) {
        double got = lse.get(r);
        double err = std::isnan(got) && std::isnan(l) ? 0
                     : std::isinf(l) || std::isnan(l)
                         ? (got == l ? 0 : INFINITY)
                     : std::isfinite(got)
                         ? std::fabs(got - l) / (1 + std::fabs(l))
                         : INFINITY;
        worstLse = std::max(worstLse, err);
      }
    }
    bool pass = worst <= tolerance && worstLse <= 1e-3;
    llvm::outs() << llvm::formatv(
        "{7}: max |error| {0:e2} on {1} of {2} rows vs float64 reference "
        "(tolerance {3:e1}, seed {4}){5}: {6}\n",
        worst, picked.size(), rows, tolerance, seed,
        spec.withLse
            ? llvm::formatv(", lse relative error {0:e2}", worstLse).str()
            : std::string(),
        pass ? "PASS" : "FAIL", label);
    return pass;
  };
  // The timed rounds may have ended with the other kernel: the output
  // checked (and written) is this kernel's.
  if (other)
    if (llvm::Error e = runKernel(**kernel))
      return reportError(std::move(e));
  bool ok = check("check");

  if (o.has("out"))
    if (llvm::Error e = writeNpy(o.str("out"), out))
      return reportError(std::move(e));
  if (o.has("lse"))
    if (llvm::Error e = writeNpy(o.str("lse"), lse))
      return reportError(std::move(e));
  if (other) {
    if (!versus->ablate.empty()) {
      llvm::outs() << "check (versus): skipped (--ablate " << versus->ablate
                   << " leaves phases out)\n";
    } else {
      if (llvm::Error e = runKernel(*other))
        return reportError(std::move(e));
      ok = check("check (versus)") && ok;
    }
  }

  llvm::Expected<CostReport> report = costReport(spec, config);
  if (!report)
    return reportError(report.takeError());
  llvm::outs() << "\n";
  printCostReport(*report, llvm::outs());
  return ok ? 0 : 2;
}

//===----------------------------------------------------------------------===//
// compile and cost
//===----------------------------------------------------------------------===//

int compileCommand(llvm::ArrayRef<const char *> args) {
  Options o;
  AttentionSpec spec;
  PipelineConfig config;
  if (llvm::Error e =
          parseProblem(args, {}, {"emit", "o", "stop-after"}, o, spec, config))
    return reportError(std::move(e));
  std::string emit = o.str("emit", "mlir");
  std::string text;
  if (emit == "ptx" || emit == "cubin" || emit == "manifest") {
    if (!config.isGPU())
      return reportError(llvm::createStringError(
          "--emit " + emit + " needs a GPU target (--target sm_80 or "
          "sm_90a), not " + config.target));
    if (o.has("stop-after"))
      return reportError(
          llvm::createStringError("--stop-after applies to --emit mlir only"));
    if (emit == "cubin" && o.str("o", "-") == "-")
      return reportError(
          llvm::createStringError("--emit cubin writes a binary: give -o FILE"));
    llvm::Expected<flashc::runtime::KernelVariant> variant =
        Compiler::compileGPUVariant(spec, config,
                                    /*assemble=*/emit != "ptx");
    if (!variant)
      return reportError(variant.takeError());
    text = emit == "ptx"     ? variant->ptx
           : emit == "cubin" ? variant->cubin
                             : variant->toJson().printPretty();
  } else if (emit == "mlir") {
    llvm::Expected<std::string> ir =
        Compiler::lowerToStage(spec, config, o.str("stop-after"));
    if (!ir)
      return reportError(ir.takeError());
    text = std::move(*ir);
  } else if (emit == "llvm") {
    if (config.isGPU())
      return reportError(llvm::createStringError(
          "--emit llvm is the CPU's host code; GPU targets emit mlir, ptx, "
          "cubin or manifest"));
    if (o.has("stop-after"))
      return reportError(
          llvm::createStringError("--stop-after applies to --emit mlir only"));
    llvm::Expected<std::string> ir = Compiler::emitLLVMIR(spec, config);
    if (!ir)
      return reportError(ir.takeError());
    text = std::move(*ir);
  } else {
    return reportError(llvm::createStringError(
        "--emit must be mlir, llvm, ptx, cubin or manifest, got '" + emit +
        "'"));
  }
  if (llvm::Error e = writeFile(o.str("o", "-"), text))
    return reportError(std::move(e));
  return 0;
}

int costCommand(llvm::ArrayRef<const char *> args) {
  Options o;
  AttentionSpec spec;
  PipelineConfig config;
  if (llvm::Error e = parseProblem(args, {"json"}, {}, o, spec, config))
    return reportError(std::move(e));
  llvm::Expected<CostReport> report = costReport(spec, config);
  if (!report)
    return reportError(report.takeError());
  if (o.has("json")) {
    llvm::outs() << llvm::formatv("{0:2}",
                                  llvm::json::Value(costReportToJSON(*report)))
                 << "\n";
    return 0;
  }
  printSpec(spec, llvm::outs());
  printCostReport(*report, llvm::outs());
  return 0;
}

} // namespace

namespace {

int dispatch(int argc, char **argv) {
  llvm::ArrayRef<const char *> args(const_cast<const char **>(argv) + 1,
                                    argc - 1);
  if (!args.empty() && (llvm::StringRef(args[0]) == "--help" ||
                        llvm::StringRef(args[0]) == "-h" ||
                        llvm::StringRef(args[0]) == "help")) {
    llvm::outs() << kUsage;
    return 0;
  }
  if (args.empty())
    return runCommand({}, /*builtin=*/true);
  llvm::StringRef command = args[0];
  if (command.starts_with("--"))
    return runCommand(args, /*builtin=*/false);
  args = args.drop_front();
  if (command == "run")
    return runCommand(args, /*builtin=*/args.empty());
  if (command == "compile")
    return compileCommand(args);
  if (command == "cost")
    return costCommand(args);
  if (command == "bench")
    return benchCommand(args, argv[0]);
  if (command == "bench-one")
    return benchOneCommand(args);
  if (command == "bundle")
    return bundleCommand(args);
  return reportError(llvm::createStringError(
      "unknown command '" + command +
      "'; expected run, compile, cost, bench or bundle (see flashc --help)"));
}

} // namespace

int main(int argc, char **argv) {
  int status = dispatch(argc, argv);
  // Output that could not be written (a full disk, a closed pipe) is a
  // failure, reported once: not LLVM's fatal error when stdout is
  // destroyed, and not exit 0 with the output lost.
  llvm::outs().flush();
  std::error_code error;
  if (llvm::outs().has_error()) {
    error = llvm::outs().error();
    llvm::outs().clear_error();
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    error = std::error_code(errno ? errno : EIO, std::generic_category());
  if (error && status == 0) {
    llvm::errs() << "flashc: error: cannot write the output: "
                 << error.message() << "\n";
    status = 1;
  }
  return status;
}
