//===- flashc.cpp - The flashc command-line driver ------------------------===//
//
// flashc's main job: compile an attention problem, run it, check it against
// a float64 reference and report its cost. Subcommands:
//
//   flashc run       compile, run, check, time, and print the cost report
//                    (GPU targets: on the CUDA device, or --simulate); with
//                    no sizes and no input files, a built-in example
//   flashc compile   --emit mlir|llvm|ptx|cubin|manifest [-o FILE]
//                    [--stop-after STAGE]
//   flashc cost      [--sram-bytes N] [--json] [--target cpu|sm_80|sm_90a]
//   flashc bundle    compile GPU kernel variants into a runtime bundle
//
// `flashc COMMAND --help` lists a command's options; with no arguments (or
// --help) flashc lists its commands and exits 0, and --version prints the
// version. Options with no command are a run. Bad flags or shapes get a
// one-line error and exit code 1 (2 for a failed numerical check). The
// benchmark against OpenBLAS is a tool of its own, flashc-bench.
//
//===----------------------------------------------------------------------===//

#include "Gpu.h"
#include "Npy.h"
#include "Options.h"
#include "Tool.h"

#include "flashc/Analysis/CostModel.h"
#include "flashc/Compiler/Reference.h"
#include "flashc/Target/TargetInfo.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace mlir::flash;
using namespace flashc;

namespace {

/// What `flashc`, `flashc --help` and `flashc help` print.
const char *kOverview =
    "usage: flashc COMMAND [options]\n"
    "\n"
    "Compiles attention kernels for the CPU and for NVIDIA GPUs (sm_80,\n"
    "sm_90a), runs them, checks them against a float64 reference and reports\n"
    "their cost.\n"
    "\n"
    "commands:\n"
    "  run        compile, run, check and time one problem, then print its\n"
    "             cost report (no sizes: the built-in example)\n"
    "  compile    print the IR after a stage, LLVM IR, PTX, a cubin or a\n"
    "             kernel manifest\n"
    "  cost       the cost model's report: FLOPs, HBM traffic, GPU wave model\n"
    "  bundle     compile GPU kernel variants into a runtime bundle\n"
    "\n"
    "`flashc COMMAND --help` lists a command's options; `flashc --version`\n"
    "prints the version. Exit status: 0 on success (and for this text), 1 for\n"
    "a bad option, shape or file (one `flashc: error:` line), 2 when a\n"
    "numerical check failed. The benchmark against OpenBLAS is a tool of its\n"
    "own: flashc-bench.\n";

/// The problem options of run, compile and cost. `lse` is how --lse reads
/// for the command.
std::string problemHelp(llvm::StringRef lse) {
  return (llvm::Twine(
              "problem (defaults: batch 1, heads 1, kv-heads = heads, seq-q "
              "1,\n"
              "seq-kv = seq-q, head-dim 64, head-dim-v = head-dim, f32, cpu):\n"
              "  --batch B --heads H --kv-heads HKV --seq-q NQ --seq-kv NK\n"
              "  --head-dim D --head-dim-v DV --dtype f32|f16|bf16\n"
              "  --mask none|causal  which keys a query sees (causal: keys up "
              "to the\n"
              "                      query, bottom-right aligned)\n"
              "  --causal            --mask causal\n"
              "  --scale S           softmax scale (default 1/sqrt(D))\n"
              "  --target cpu|sm_80|sm_90a\n") +
          lse + "\n\n")
      .str();
}

/// The schedule options, from the pipeline options table
/// (flashc/Pipelines/PipelineOptions.def).
std::string scheduleHelp() {
  return "schedule:\n" +
         describePipelineOptions(/*cpu=*/true, /*gpu=*/true) + "\n";
}

/// One subcommand's `--help`.
std::string commandHelp(llvm::StringRef command) {
  if (command == "run")
    return "usage: flashc run [options]\n"
           "\n"
           "Compiles the kernel, runs it on random inputs (or on .npy "
           "files),\n"
           "checks it against a float64 reference, times it and prints the "
           "cost\n"
           "report. With no sizes and no input files: the built-in example, "
           "causal\n"
           "GQA, batch 2, 8 heads over 2 KV heads, 1024 tokens, head dim 64, "
           "f32\n"
           "(the other options apply to it).\n"
           "\n" +
           problemHelp("  --lse F.npy         also compute the row log-sum-exp "
                       "and write it") +
           scheduleHelp() +
           "run:\n"
           "  --q F.npy --k F.npy --v F.npy\n"
           "                      inputs, [B, H, NQ, D], [B, HKV, NK, D] and\n"
           "                      [B, HKV, NK, DV], f4 or f2; sizes and the "
           "dtype\n"
           "                      not on the command line are read from them\n"
           "  --out F.npy         write the output\n"
           "  --iters N           timed runs (default: about half a second)\n"
           "  --check-rows N      rows checked (default 256; 0: all)\n"
           "  --seed N            of the random inputs and the rows checked\n"
           "  --simulate          GPU targets: run in the PTX simulator\n"
           "  --perf-jit          CPU: register the kernel's code with perf "
           "(for\n"
           "                      perf record -k 1 and perf inject --jit)\n"
           "  --versus 'OPTIONS'  CPU: also time a kernel with those "
           "schedule\n"
           "                      options, in turn with the first, and check "
           "both\n"
           "  (--ablate, a schedule option, times the kernel without checking it)\n";
  if (command == "compile")
    return "usage: flashc compile [options]\n"
           "\n"
           "Prints the kernel of a problem: the IR after a pipeline stage, "
           "the\n"
           "CPU's LLVM IR, or a GPU kernel's PTX, cubin or manifest.\n"
           "\n" +
           problemHelp("  --lse               also compute the row "
                       "log-sum-exp") +
           scheduleHelp() +
           "compile:\n"
           "  --emit mlir|llvm|ptx|cubin|manifest   (default mlir)\n"
           "  --stop-after STAGE  mlir: the IR after STAGE\n"
           "  -o FILE             write there (default: standard output)\n";
  if (command == "cost")
    return "usage: flashc cost [options]\n"
           "\n"
           "Prints the cost model's report of a problem: FLOPs, HBM traffic "
           "of\n"
           "standard attention and of both loop orders, the chosen schedule, "
           "and\n"
           "on GPU targets the CTA x wave model's predicted time.\n"
           "\n" +
           problemHelp("  --lse               also compute the row "
                       "log-sum-exp") +
           scheduleHelp() +
           "cost:\n"
           "  --json              the report as JSON\n";
  if (command == "bundle")
    return "usage: flashc bundle -o DIR [options]\n"
           "\n"
           "Compiles one GPU kernel variant per combination of the lists "
           "below\n"
           "and writes them with a manifest.json that the runtime loads "
           "without\n"
           "the compiler.\n"
           "\n"
           "  -o DIR              the bundle directory\n"
           "  --targets sm_80,sm_90a   --dtypes f16,bf16\n"
           "  --head-dims 64,128,256   --groups 1,4   (query heads per KV "
           "head)\n"
           "  --head-dim-v DV     V's head dim (default: each head dim)\n"
           "  --masks none,causal (default: every mask)   --lse yes|no|both "
           "(default no)\n"
           "  --causal yes|no|both  the same as --masks causal, none or "
           "both\n"
           "  --variants prefill,decode\n"
           "  --causal-order auto|lightest|heaviest|heaviest-per-head\n"
           "                      a causal kernel's CTAs: the fewest keys "
           "first\n"
           "                      within each head, the most first, or "
           "(auto,\n"
           "                      the default) the most first from 2048 "
           "rows a head\n"
           "  --stages N          the K and V stages each kernel's KV loop is\n"
           "                      pipelined over, 2 to 4 (default 2)\n"
           "  --rescale-threshold N  how far (log2) a row's maximum may grow "
           "before\n"
           "                      O is rescaled, 0 to 15 (default 8)\n"
           "  --warpgroup-mma on|off  --tma on|off  sm_90a: wgmma from "
           "shared memory,\n"
           "                      and TMA copies (default on); off: "
           "mma.sync, cp.async\n"
           "  --warp-specialize on|off  sm_90a: a producer warp copies "
           "for the\n"
           "                      consumer warpgroups (default on)\n"
           "  --overlap-softmax on|off  sm_90a: each block's softmax while "
           "the\n"
           "                      previous block's PV runs (default off)\n"
           "  --pingpong on|off   sm_90a: the consumer warpgroups take "
           "turns at\n"
           "                      the tensor cores (default on)\n"
           "  --block-q N  --block-kv N  a prefill kernel's query rows and "
           "keys a block\n"
           "                      (default 0: chosen for the target's "
           "shared memory)\n"
           "  --alignments 16,4,2  each variant for tensors of these byte "
           "alignments\n"
           "                      (default 16); the runtime runs the "
           "largest a call's\n"
           "                      addresses and strides have\n"
           "  --add               keep the variants of the bundle already in "
           "DIR\n"
           "  --no-assemble       PTX only (no ptxas: registers unknown)\n";
  return "";
}

/// The built-in example: causal GQA prefill, 2 x 8 heads (2 KV heads) x
/// 1024 tokens x 64, f32.
AttentionSpec builtinExample() {
  AttentionSpec spec;
  spec.batch = 2;
  spec.heads = 8;
  spec.kvHeads = 2;
  spec.seqQ = spec.seqKV = 1024;
  spec.headDim = 64;
  spec.mask = Mask::causal();
  spec.withLse = true;
  return spec;
}

/// Parses the options of a subcommand that describes a problem. A name in
/// `extraValued` that is also a shape flag (`--lse`) takes a value here.
llvm::Expected<Options> parseProblemOptions(
    llvm::ArrayRef<const char *> args, const std::set<std::string> &extraFlags,
    const std::set<std::string> &extraValued) {
  std::set<std::string> flags = shapeFlags(), valued = shapeValued();
  flags.insert(extraFlags.begin(), extraFlags.end());
  valued.insert(extraValued.begin(), extraValued.end());
  for (const std::string &name : extraValued)
    flags.erase(name);
  return Options::parse(args, flags, valued);
}

/// Parses the options of a subcommand and the problem they describe.
llvm::Error parseProblem(llvm::ArrayRef<const char *> args,
                         const std::set<std::string> &extraFlags,
                         const std::set<std::string> &extraValued,
                         Options &options, AttentionSpec &spec,
                         PipelineConfig &config) {
  llvm::Expected<Options> parsed =
      parseProblemOptions(args, extraFlags, extraValued);
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
      ::flashc::stringify(s.dtype), s.mask.isNone() ? "" : ", " + s.mask.str(),
      s.effectiveScale());
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
  options.stages = config.stages;
  options.warpgroupMma = config.warpgroupMma;
  options.alignment = config.alignment;
  // Like flash-split-kv, never more splits than KV blocks.
  if (options.splits > 0) {
    TileSizes tiles = chooseTileSizes(*target, spec.shape(), options.order,
                                      /*wideWarps=*/true, config.stages,
                                      config.warpgroupMma, config.alignment);
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
  std::set<std::string> scheduleOptions;
  for (const PipelineOptionInfo &o : getPipelineOptions())
    if (o.driver && o.name != "target")
      scheduleOptions.insert(o.name.str());
  llvm::Expected<Options> parsed = Options::parse(args, {}, scheduleOptions);
  if (!parsed)
    return llvm::createStringError("in --versus: " +
                                   llvm::toString(parsed.takeError()));
  PipelineConfig config = base;
  if (llvm::Error e = readConfig(*parsed, config))
    return llvm::createStringError("in --versus: " +
                                   llvm::toString(std::move(e)));
  return config;
}

/// An input file of `flashc run` (--q, --k or --v) and the array it holds.
struct InputFile {
  const char *flag;
  std::string path;
  NpyArray array;
};

/// Takes the sizes and the dtype of the problem from the input files. Each
/// file's dimensions are sizes of the problem: q is [batch, heads, seq-q,
/// head-dim], k [batch, kv-heads, seq-kv, head-dim] and v [batch, kv-heads,
/// seq-kv, head-dim-v]. A size given on the command line must agree with
/// every file that has it, and the files with each other; the error names
/// both. Sizes the command line leaves out are set in `o` from the files,
/// and so is the dtype (f4 files are f32, f2 files f16) unless --dtype
/// converts them.
llvm::Error takeSizesFromInputs(Options &o,
                                llvm::ArrayRef<InputFile> inputs) {
  static const std::map<std::string, std::array<const char *, 4>> kDims = {
      {"q", {"batch", "heads", "seq-q", "head-dim"}},
      {"k", {"batch", "kv-heads", "seq-kv", "head-dim"}},
      {"v", {"batch", "kv-heads", "seq-kv", "head-dim-v"}}};
  // Per size, its value and the file it came from.
  std::map<std::string, std::pair<int64_t, const InputFile *>> fromFiles;
  auto describe = [](const InputFile &file) {
    return "--" + std::string(file.flag) + " " + file.path + " (shape " +
           formatNpyShape(file.array.shape) + ")";
  };
  for (const InputFile &file : inputs) {
    const std::array<const char *, 4> &dims = kDims.at(file.flag);
    if (file.array.shape.size() != 4)
      return llvm::createStringError(llvm::formatv(
          "{0} has {1} dimensions; --{2} takes [{3}, {4}, {5}, {6}]",
          describe(file), file.array.shape.size(), file.flag, dims[0], dims[1],
          dims[2], dims[3]));
    for (size_t i = 0; i < 4; ++i) {
      int64_t value = file.array.shape[i];
      llvm::StringRef name = dims[i];
      if (o.has(name)) {
        llvm::Expected<int64_t> given = o.integer(name, 0);
        if (!given)
          return given.takeError();
        if (*given != value)
          return llvm::createStringError(llvm::formatv(
              "--{0} {1} disagrees with {2}, whose {0} is {3}", name, *given,
              describe(file), value));
        continue;
      }
      auto [it, inserted] = fromFiles.try_emplace(name.str(), value, &file);
      if (!inserted && it->second.first != value)
        return llvm::createStringError(llvm::formatv(
            "{0} has {1} {2}, but {3} has {1} {4}", describe(*it->second.second),
            name, it->second.first, describe(file), value));
    }
  }
  for (const auto &[name, value] : fromFiles)
    o.set(name, std::to_string(value.first));
  if (!o.has("dtype") && !inputs.empty()) {
    const InputFile &first = inputs.front();
    for (const InputFile &file : inputs)
      if (file.array.descr != first.array.descr)
        return llvm::createStringError(
            describe(first) + " holds '" + first.array.descr + "' elements, " +
            describe(file) + " '" + file.array.descr +
            "'; give --dtype to convert both");
    o.set("dtype", std::string(::flashc::stringify(getNpyDType(first.array))));
  }
  return llvm::Error::success();
}

/// One line about a kernel: its target, dtype, head dims, GQA group and
/// options, e.g. "cpu, f32, head-dim 64, 4 query heads per KV head, causal".
std::string describeKernel(const AttentionSpec &spec,
                           const PipelineConfig &config) {
  std::string text = config.target + ", " + std::string(::flashc::stringify(spec.dtype)) +
                     ", head-dim " + std::to_string(spec.headDim);
  if (spec.valueDim() != spec.headDim)
    text += "/" + std::to_string(spec.valueDim());
  int64_t group = spec.heads / spec.kvHeads;
  text += group == 1 ? std::string(", 1 query head per KV head")
                     : llvm::formatv(", {0} query heads per KV head", group)
                           .str();
  if (!spec.mask.isNone())
    text += ", " + spec.mask.str();
  if (spec.withLse)
    text += ", log-sum-exp";
  if (config.isGPU())
    text += spec.isDecode() ? ", decode" : ", prefill";
  return text;
}

/// Compiles the kernel of `spec` through the process's JIT, which compiles
/// a kernel at its first use and caches it by (spec, target, schedule
/// options); batch, head counts and lengths are arguments of the kernel.
/// A first use takes a while and says so on stderr first; `what` tells two
/// kernels of one run apart.
llvm::Expected<std::shared_ptr<const Kernel>>
compileAnnounced(const AttentionSpec &spec, const PipelineConfig &config,
                 llvm::StringRef what = "") {
  // The configurations asked for in this process. The driver asks for at
  // most two kernels of one spec, and nothing else fills the JIT's cache,
  // so a configuration not asked for before is compiled.
  static std::set<std::string> asked;
  Compiler &jit = Compiler::global();
  if (asked.insert(config.str()).second) {
    // What is printed before comes first, when both go to one place.
    llvm::outs().flush();
    llvm::errs() << "compiling attention kernel for "
                 << describeKernel(spec, config) << what << " (first use)\n";
    llvm::errs().flush();
  }
  return jit.compile(spec, config.target, config);
}

int runCommand(llvm::ArrayRef<const char *> args) {
  llvm::Expected<Options> parsed =
      parseProblemOptions(args, {"simulate", "perf-jit"},
                          {"q", "k", "v", "out", "lse", "iters", "check-rows",
                           "seed", "versus"});
  if (!parsed)
    return reportError(parsed.takeError());
  Options &o = *parsed;
  // Input files, read whole before anything is sized: their shapes give
  // the sizes the command line leaves out.
  std::vector<InputFile> inputs;
  for (const char *flag : {"q", "k", "v"}) {
    if (!o.has(flag))
      continue;
    llvm::Expected<NpyArray> array = readNpyInput(o.str(flag));
    if (!array)
      return reportError(array.takeError());
    inputs.push_back({flag, o.str(flag), std::move(*array)});
  }
  // No sizes and no input files: the built-in example, with whatever else
  // the command line says applied to it.
  bool builtin =
      inputs.empty() && llvm::none_of(std::initializer_list<const char *>{
                                          "batch", "heads", "kv-heads", "seq-q",
                                          "seq-kv", "head-dim", "head-dim-v"},
                                      [&](const char *n) { return o.has(n); });
  if (llvm::Error e = takeSizesFromInputs(o, inputs))
    return reportError(std::move(e));
  AttentionSpec spec = builtin ? builtinExample() : AttentionSpec();
  PipelineConfig config;
  if (llvm::Error e = readSpec(o, spec))
    return reportError(std::move(e));
  if (llvm::Error e = readConfig(o, config))
    return reportError(std::move(e));
  bool gpu = config.isGPU();
  if (o.has("simulate") && !gpu)
    return reportError(llvm::createStringError(
        "--simulate runs GPU kernels; the target is " + config.target));
  if (o.has("perf-jit")) {
    if (gpu)
      return reportError(llvm::createStringError(
          "--perf-jit registers CPU kernels with perf; the target is " +
          config.target));
    JITOptions jit = Compiler::global().getJITOptions();
    jit.perfProfiling = true;
    Compiler::global().setJITOptions(jit);
  }
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
      HostTensor::allocate(ElementType::F32, {spec.batch, spec.heads, spec.seqQ});
  if (!lseAlloc)
    return reportError(lseAlloc.takeError());
  HostTensor &q = *qAlloc, &k = *kAlloc, &v = *vAlloc, &out = *outAlloc,
             &lse = *lseAlloc;

  if (builtin)
    llvm::outs() << "flashc: running the built-in example (see `flashc run "
                    "--help` for options)\n";
  printSpec(spec, llvm::outs());
  unsigned seed =
      *seedOpt >= 0 ? static_cast<unsigned>(*seedOpt) : std::random_device{}();
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  for (auto [name, tensor] :
       {std::pair<const char *, HostTensor *>{"q", &q}, {"k", &k}, {"v", &v}}) {
    auto file = llvm::find_if(
        inputs, [&](const InputFile &f) { return f.flag == name; });
    if (file != inputs.end()) {
      if (llvm::Error e = copyNpy(file->path, file->array, *tensor))
        return reportError(std::move(e));
      file->array = NpyArray();
      continue;
    }
    for (int64_t i = 0; i < tensor->getNumElements(); ++i)
      tensor->set(i, normal(rng));
  }

  auto start = std::chrono::steady_clock::now();
  auto kernel = compileAnnounced(spec, config);
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
    if (const std::optional<flashc::runtime::SimulatorCounters> &c =
            times->counters)
      llvm::outs() << llvm::formatv(
          "simulator: {0} thread instructions; ldmatrix {1} matrices, {2} "
          "extra shared-memory wavefronts from bank conflicts; ld/st.shared "
          "and cp.async {3} warp requests, {4} extra wavefronts; {5} wgmma "
          "(per warp), {6} TMA loads, {7} TMA stores (first run)\n",
          c->threadInstructions, c->ldmatrixMatrices,
          c->ldmatrixExtraWavefronts, c->sharedRequests,
          c->sharedExtraWavefronts, c->wgmmaInstructions, c->tensorLoads,
          c->tensorStores);
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
          compileAnnounced(spec, *versus, ", --versus '" + versusText + "'");
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
  // No arguments: what flashc does, not a run (`flashc run` runs the
  // built-in example).
  if (args.empty()) {
    llvm::outs() << kOverview;
    return 0;
  }
  llvm::StringRef command = args[0];
  if (command == "--version") {
    printVersion(llvm::outs());
    return 0;
  }
  if (command == "--help" || command == "-h" ||
      (command == "help" && args.size() == 1)) {
    llvm::outs() << kOverview;
    return 0;
  }
  // `flashc help COMMAND`, `flashc COMMAND --help`.
  bool help = command == "help" || wantsHelp(args.drop_front());
  if (command == "help")
    command = args[1];
  // Options with no command: a run.
  if (command.starts_with("--"))
    command = "run";
  else
    args = args.drop_front();
  // The benchmark left the driver for a tool of its own.
  if (command == "bench" || command == "bench-one")
    return reportError(llvm::createStringError(
        "the benchmark is a tool of its own now: run flashc-bench" +
        llvm::StringRef(command == "bench" ? "" : " one") +
        " (see flashc-bench --help)"));
  std::string text = commandHelp(command);
  if (text.empty())
    return reportError(llvm::createStringError(
        "unknown command '" + command +
        "'; expected run, compile, cost or bundle (see flashc --help)"));
  if (help) {
    llvm::outs() << text;
    return 0;
  }
  if (command == "run")
    return runCommand(args);
  if (command == "compile")
    return compileCommand(args);
  if (command == "cost")
    return costCommand(args);
  return bundleCommand(args);
}

} // namespace

int main(int argc, char **argv) {
  return finishOutput(dispatch(argc, argv));
}
