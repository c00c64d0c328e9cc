//===- Bench.cpp - flashc-bench's measurements ----------------------------===//
//
// Each measurement runs in its own process (`flashc-bench one`): flashc's
// kernel, or the 3-pass baseline S = Q K^T (cblas_sgemm), a row softmax with
// the causal mask, O = P V (cblas_sgemm), one head at a time. Both use the
// same number of threads; OpenBLAS's pool is set explicitly so that the two
// runtimes never share a process. Times are medians; GFLOP/s count the
// useful FLOPs (the visible (query, key) pairs) for both. This file is
// compiled with -ffast-math so that the baseline's softmax loops use glibc's
// vector exponential.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "Options.h"
#include "Tool.h"

#include "flashc/Analysis/CostModel.h"
#include "flashc/Compiler/Reference.h"
#include "flashc/Support/Sizes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <cblas.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <tuple>
#include <sys/resource.h>
#include <unistd.h>

extern "C" void openblas_set_num_threads(int);
extern "C" char *openblas_get_corename(void);

using namespace mlir::flash;
using namespace flashc;

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The median of `times` (not empty).
double median(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FLASHC_PEAK_X86 1

volatile float peakSink;

#define FLASHC_TIMES12(X)                                                      \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define FLASHC_DECLARE(i) __m512 acc##i = _mm512_set1_ps(float(i));
#define FLASHC_FMA(i) acc##i = _mm512_fmadd_ps(a, b, acc##i);
#define FLASHC_DOT(i) acc##i = _mm512_dpbf16_ps(acc##i, a, b);
#define FLASHC_SUM(i) sum = _mm512_add_ps(sum, acc##i);
// The body of a peak measurement: 12 chains of STEP(i) on the operands a
// and b, which the empty asm makes opaque in every round (so that nothing
// is hoisted), timed; the chains' sum goes to peakSink. The chains start
// from different values, so that no compiler merges them.
#define FLASHC_TIMED_CHAINS(STEP)                                              \
  FLASHC_TIMES12(FLASHC_DECLARE)                                               \
  double t0 = now();                                                           \
  for (int64_t r = 0; r < rounds; ++r) {                                       \
    FLASHC_TIMES12(STEP)                                                       \
    asm volatile("" : "+v"(a), "+v"(b));                                       \
  }                                                                            \
  double seconds = now() - t0;                                                 \
  __m512 sum = _mm512_setzero_ps();                                            \
  FLASHC_TIMES12(FLASHC_SUM)                                                   \
  alignas(64) float lanes[16];                                                 \
  _mm512_store_ps(lanes, sum);                                                 \
  peakSink = peakSink + lanes[0];                                              \
  return seconds;

/// Seconds for `rounds` rounds of 12 independent 16-lane FMAs (vfmadd231ps
/// on zmm registers: 32 FLOPs each), enough chains to hide the latency.
__attribute__((target("avx512f"))) double fmaSeconds(int64_t rounds) {
  __m512 a = _mm512_set1_ps(1.0001f), b = _mm512_set1_ps(0.9999f);
  FLASHC_TIMED_CHAINS(FLASHC_FMA)
}

/// Seconds for `rounds` rounds of 12 independent vdpbf16ps (32 bf16 pairs
/// into 16 f32 sums: 64 FLOPs each).
__attribute__((target("avx512f,avx512bf16"))) double
bf16DotSeconds(int64_t rounds) {
  __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80),
           b = (__m512bh)_mm512_set1_epi16(0x3f80);
  FLASHC_TIMED_CHAINS(FLASHC_DOT)
}
#undef FLASHC_TIMED_CHAINS
#undef FLASHC_TIMES12
#undef FLASHC_DECLARE
#undef FLASHC_FMA
#undef FLASHC_DOT
#undef FLASHC_SUM
#endif

/// A comma-separated list of integers in [1, hi] (hi 0: no upper bound)
/// from option `name`, or an error naming the offending entry.
llvm::Expected<std::vector<int64_t>>
integerList(const Options &o, llvm::StringRef name, llvm::StringRef dflt,
            int64_t hi = 0) {
  std::vector<int64_t> values;
  std::string text = o.str(name, dflt);
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(text).split(parts, ',');
  for (llvm::StringRef p : parts) {
    int64_t v;
    if (p.trim().getAsInteger(10, v) || v <= 0 || (hi && v > hi))
      return llvm::createStringError(
          "--" + name +
          (hi ? " expects integers in [1, " + std::to_string(hi) + "]"
              : std::string(" expects positive integers")) +
          ", got '" + p + "'");
    values.push_back(v);
  }
  return values;
}

/// Median time of `fn` over at least `minIters` runs and about `budget`
/// seconds.
template <typename Fn>
double medianTime(Fn fn, int64_t minIters, double budget) {
  std::vector<double> times;
  double total = 0;
  while (static_cast<int64_t>(times.size()) < minIters || total < budget) {
    double t0 = now();
    fn();
    double t = now() - t0;
    times.push_back(t);
    total += t;
    if (times.size() >= 50)
      break;
  }
  return median(std::move(times));
}

/// Standard attention, one head at a time: two sgemms and a row softmax
/// over the full N x N score matrix.
void blasAttention(int64_t heads, int64_t n, int64_t d, bool causal,
                   float scale, const float *q, const float *k, const float *v,
                   float *o, float *s) {
  for (int64_t h = 0; h < heads; ++h) {
    const float *qh = q + h * n * d, *kh = k + h * n * d, *vh = v + h * n * d;
    float *oh = o + h * n * d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, scale, qh, d,
                kh, d, 0.0f, s, n);
    for (int64_t i = 0; i < n; ++i) {
      float *row = s + i * n;
      int64_t visible = causal ? i + 1 : n;
      float mx = -INFINITY;
      for (int64_t j = 0; j < visible; ++j)
        mx = std::max(mx, row[j]);
      // Clamped so that glibc's vector expf stays on its fast path.
      float sum = 0;
      for (int64_t j = 0; j < visible; ++j) {
        row[j] = std::exp(std::max(row[j] - mx, -87.0f));
        sum += row[j];
      }
      float inv = 1.0f / sum;
      for (int64_t j = 0; j < visible; ++j)
        row[j] *= inv;
      for (int64_t j = visible; j < n; ++j)
        row[j] = 0;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0f,
                s, n, vh, d, 0.0f, oh, d);
  }
}

int64_t peakRssKB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

} // namespace

/// `flashc-bench one --impl peak`: one core's arithmetic peak in f32 FMAs
/// and in AVX512_BF16 dot products, measured in turn (5 times each; the
/// medians), to tell whether vdpbf16ps would be faster than converting
/// bf16 to f32 for the FMAs.
static int peakRates() {
#ifdef FLASHC_PEAK_X86
  llvm::Expected<TargetInfo> host = TargetInfo::get("cpu");
  if (!host)
    return reportError(host.takeError());
  if (!host->bf16DotProduct)
    return reportError(llvm::createStringError(
        "--impl peak needs AVX-512 and AVX512_BF16 on this host"));
  const int64_t rounds = 20'000'000;
  std::vector<double> fma, dot;
  for (int i = 0; i < 5; ++i) {
    fma.push_back(12.0 * 32 * rounds / fmaSeconds(rounds) * 1e-9);
    dot.push_back(12.0 * 64 * rounds / bf16DotSeconds(rounds) * 1e-9);
  }
  llvm::json::Object peak{{"impl", "peak"},
                          {"threads", 1},
                          {"fmaGflops", median(fma)},
                          {"bf16DotGflops", median(dot)}};
  llvm::outs() << llvm::json::Value(std::move(peak)) << "\n";
  return 0;
#else
  return reportError(llvm::createStringError(
      "--impl peak measures x86 AVX-512 instructions only"));
#endif
}

int flashc::benchOneCommand(llvm::ArrayRef<const char *> args) {
  llvm::Expected<Options> o =
      Options::parse(args, {"causal"},
                     {"impl", "seq", "head-dim", "heads", "threads", "iters"});
  if (!o)
    return reportError(o.takeError());
  llvm::Expected<int64_t> n = o->integer("seq", 1024),
                          d = o->integer("head-dim", 64),
                          heads = o->integer("heads", 8),
                          threads = o->integer("threads", 0),
                          iters = o->integer("iters", 3);
  for (auto *e : {&n, &d, &heads, &threads, &iters})
    if (!*e)
      return reportError(e->takeError());
  for (auto [value, name, lo, hi] :
       {std::tuple(*threads, "--threads", int64_t(0), kMaxThreads),
        std::tuple(*iters, "--iters", int64_t(1), int64_t(1000000))})
    if (std::string problem = checkRange(value, name, lo, hi);
        !problem.empty())
      return reportError(llvm::createStringError(problem));
  bool causal = o->has("causal");
  std::string impl = o->str("impl", "flashc");
  if (impl == "peak")
    return peakRates();
  PipelineConfig config;
  config.numThreads = *threads;
  int64_t nthreads = config.getNumThreads();

  AttentionSpec spec;
  spec.heads = spec.kvHeads = *heads;
  spec.seqQ = spec.seqKV = *n;
  spec.headDim = *d;
  spec.mask = causal ? Mask::causal() : Mask::none();
  if (llvm::Error e = spec.validate())
    return reportError(std::move(e));
  std::vector<int64_t> shape = {1, *heads, *n, *d};
  llvm::Expected<HostTensor> qOr = HostTensor::allocate(ElementType::F32, shape),
                             kOr = HostTensor::allocate(ElementType::F32, shape),
                             vOr = HostTensor::allocate(ElementType::F32, shape),
                             outOr = HostTensor::allocate(ElementType::F32, shape);
  for (auto *t : {&qOr, &kOr, &vOr, &outOr})
    if (!*t)
      return reportError(t->takeError());
  HostTensor &q = *qOr, &k = *kOr, &v = *vOr, &out = *outOr;
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  for (HostTensor *t : {&q, &k, &v})
    for (int64_t i = 0; i < t->getNumElements(); ++i)
      t->set(i, normal(rng));

  llvm::json::Object result{{"impl", impl},     {"seq", *n},
                            {"headDim", *d},    {"heads", *heads},
                            {"causal", causal}, {"threads", nthreads}};
  double seconds;
  if (impl == "flashc") {
    double t0 = now();
    auto kernel = Compiler::global().compile(spec, "cpu", config);
    double cold = now() - t0;
    if (!kernel)
      return reportError(kernel.takeError());
    // A cached lookup: the mean of 100.
    t0 = now();
    for (int i = 0; i < 100; ++i)
      (void)Compiler::global().compile(spec, "cpu", config);
    double cached = (now() - t0) / 100;
    result["compileColdMs"] = cold * 1e3;
    result["compileCachedUs"] = cached * 1e6;
    result["blockQ"] = (*kernel)->getMetadata().tiles.blockQ;
    result["blockKV"] = (*kernel)->getMetadata().tiles.blockKV;
    bool ok = true;
    seconds = medianTime(
        [&] {
          if (llvm::Error e =
                  (*kernel)->run(q.ref(), k.ref(), v.ref(), out.ref())) {
            llvm::consumeError(std::move(e));
            ok = false;
          }
        },
        *iters, 1.0);
    if (!ok)
      return reportError(llvm::createStringError("kernel run failed"));
  } else if (impl == "blas") {
    openblas_set_num_threads(static_cast<int>(nthreads));
    // The N x N score matrix the 3-pass baseline materialises.
    llvm::Expected<HostTensor> scores =
        HostTensor::allocate(ElementType::F32, {*n, *n});
    if (!scores)
      return reportError(scores.takeError());
    float *s = static_cast<float *>(scores->data());
    const float *qp = static_cast<const float *>(q.data());
    const float *kp = static_cast<const float *>(k.data());
    const float *vp = static_cast<const float *>(v.data());
    float *op = static_cast<float *>(out.data());
    float scale = static_cast<float>(spec.effectiveScale());
    seconds = medianTime(
        [&] {
          blasAttention(*heads, *n, *d, causal, scale, qp, kp, vp, op, s);
        },
        *iters, 1.0);
  } else if (impl == "sgemm") {
    // The ceiling: one square sgemm of side --seq, no attention.
    openblas_set_num_threads(static_cast<int>(nthreads));
    int64_t m = *n;
    llvm::Expected<HostTensor> a = HostTensor::allocate(ElementType::F32, {m, m}),
                               b = HostTensor::allocate(ElementType::F32, {m, m}),
                               c = HostTensor::allocate(ElementType::F32, {m, m});
    for (auto *t : {&a, &b, &c})
      if (!*t)
        return reportError(t->takeError());
    for (HostTensor *t : {&*a, &*b})
      for (int64_t i = 0; i < t->getNumElements(); ++i)
        t->set(i, normal(rng));
    auto run = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0f,
                  static_cast<const float *>(a->data()), m,
                  static_cast<const float *>(b->data()), m, 0.0f,
                  static_cast<float *>(c->data()), m);
    };
    run();
    seconds = medianTime(run, *iters, 1.0);
    result["seconds"] = seconds;
    result["gflops"] = 2.0 * m * m * m / seconds * 1e-9;
    result["blasCore"] = std::string(openblas_get_corename());
    llvm::outs() << llvm::json::Value(std::move(result)) << "\n";
    return 0;
  } else {
    return reportError(
        llvm::createStringError("--impl must be flashc, blas, sgemm or peak"));
  }
  // A spot check that the two implementations compute the same thing.
  std::vector<double> expected(static_cast<size_t>(*d));
  double err = 0;
  for (int64_t i : {int64_t(0), *n / 2, *n - 1}) {
    referenceAttentionRow(spec, q, k, v, 0, *heads - 1, i, expected.data());
    for (int64_t t = 0; t < *d; ++t)
      err = std::max(err, std::fabs(expected[t] -
                                    out.get(((*heads - 1) * *n + i) * *d + t)));
  }
  double flops = static_cast<double>(getCausalFlops(spec.shape()));
  result["seconds"] = seconds;
  result["gflops"] = flops / seconds * 1e-9;
  result["peakRssMB"] = static_cast<double>(peakRssKB()) / 1024.0;
  result["maxError"] = err;
  llvm::outs() << llvm::json::Value(std::move(result)) << "\n";
  return 0;
}

/// `flashc-bench --decode-loop N`: N decode steps, each one key longer
/// than the last, each asking the compiler for its kernel and running it,
/// as a serving loop does. Prints how many kernels were compiled.
static int decodeLoop(const Options &o) {
  llvm::Expected<int64_t> steps = o.integer("decode-loop", 256);
  llvm::Expected<int64_t> start = o.integer("seq-kv", 4096);
  for (auto *e : {&steps, &start})
    if (!*e)
      return reportError(e->takeError());
  for (auto [value, name, hi] :
       {std::tuple(*steps, "--decode-loop", int64_t(1) << 20),
        std::tuple(*start, "--seq-kv", int64_t(1) << 30)})
    if (std::string problem = checkRange(value, name, 1, hi);
        !problem.empty())
      return reportError(llvm::createStringError(problem));
  AttentionSpec spec;
  spec.heads = 8;
  spec.kvHeads = 2;
  spec.headDim = 128;
  spec.dtype = ElementType::BF16;
  spec.seqQ = 1;
  spec.seqKV = *start + *steps - 1;
  if (llvm::Error e = spec.validate())
    return reportError(std::move(e));
  // The longest cache, filled once; step i reads its first start + i keys.
  std::vector<int64_t> kvShape = {1, spec.kvHeads, spec.seqKV, spec.headDim};
  llvm::Expected<HostTensor> q =
      HostTensor::allocate(spec.dtype, {1, spec.heads, 1, spec.headDim});
  llvm::Expected<HostTensor> k = HostTensor::allocate(spec.dtype, kvShape);
  llvm::Expected<HostTensor> v = HostTensor::allocate(spec.dtype, kvShape);
  llvm::Expected<HostTensor> out =
      HostTensor::allocate(spec.dtype, {1, spec.heads, 1, spec.headDim});
  for (auto *t : {&q, &k, &v, &out})
    if (!*t)
      return reportError(t->takeError());
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  for (HostTensor *t : {&*q, &*k, &*v})
    for (int64_t i = 0; i < t->getNumElements(); ++i)
      t->set(i, normal(rng));
  size_t before = Compiler::global().getCacheSize();
  double first = 0, total = 0;
  for (int64_t i = 0; i < *steps; ++i) {
    spec.seqKV = *start + i;
    double t0 = now();
    auto kernel = Compiler::global().compile(spec, "cpu");
    if (!kernel)
      return reportError(kernel.takeError());
    // Step i's view of the cache: its first Nk keys, the full strides.
    TensorRef kr = k->ref(), vr = v->ref();
    kr.sizes[2] = vr.sizes[2] = spec.seqKV;
    if (llvm::Error e = (*kernel)->run(q->ref(), kr, vr, out->ref()))
      return reportError(std::move(e));
    double t = now() - t0;
    (i == 0 ? first : total) += t;
  }
  size_t compiled = Compiler::global().getCacheSize() - before;
  llvm::outs() << llvm::formatv(
      "decode loop: bf16, 8 query heads over 2 KV heads, d = 128, Nk from "
      "{0} to {1}\n"
      "  {2} steps, {3} kernel{4} compiled\n"
      "  first step {5:f1} ms (compiles), later steps {6:f3} ms each on "
      "average\n",
      *start, spec.seqKV, *steps, compiled, compiled == 1 ? "" : "s",
      first * 1e3, *steps > 1 ? total / (*steps - 1) * 1e3 : 0.0);
  return 0;
}

/// The median time of 9 passes in which each of `threads` threads runs
/// `work(begin, size)` on its share of `count` items, after one untimed
/// pass (which faults the buffers in).
static double
medianPassSeconds(int64_t threads, size_t count,
                  const std::function<void(size_t, size_t)> &work) {
  size_t share = count / static_cast<size_t>(threads);
  auto pass = [&] {
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        size_t begin = static_cast<size_t>(t) * share;
        work(begin, t + 1 == threads ? count - begin : share);
      });
    for (std::thread &th : pool)
      th.join();
  };
  pass();
  std::vector<double> times;
  for (int i = 0; i < 9; ++i) {
    double t0 = now();
    pass();
    times.push_back(now() - t0);
  }
  return median(std::move(times));
}

/// The copy bandwidth of `threads` threads, each copying its share of a
/// 256 MiB buffer with memcpy, in GB/s counting the bytes read and the
/// bytes written; the median of 9 copies.
static double copyBandwidthGBs(int64_t threads) {
  const size_t bytes = size_t(256) << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 2);
  double seconds =
      medianPassSeconds(threads, bytes, [&](size_t begin, size_t size) {
        std::memcpy(dst.data() + begin, src.data() + begin, size);
      });
  return 2.0 * static_cast<double>(bytes) / seconds * 1e-9;
}

/// The sum of `n` words, in the host's widest vectors (one clone per
/// instruction set on x86, chosen when the program starts). The words are
/// read as four streams at once, one per quarter: a core reads several
/// streams faster than one, so this is what a kernel that only streams
/// its inputs could reach.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static uint64_t
sumWords(const uint64_t *words, size_t n) {
  constexpr size_t kStreams = 4, kWidth = 8;
  uint64_t s[kStreams][kWidth] = {};
  size_t quarter = n / kStreams / kWidth * kWidth;
  for (size_t i = 0; i < quarter; i += kWidth)
    for (size_t t = 0; t < kStreams; ++t)
      for (size_t j = 0; j < kWidth; ++j)
        s[t][j] += words[t * quarter + i + j];
  uint64_t total = 0;
  for (size_t i = kStreams * quarter; i < n; ++i)
    total += words[i];
  for (auto &stream : s)
    for (uint64_t x : stream)
      total += x;
  return total;
}

/// The read bandwidth of `threads` threads, each summing its share of a
/// 256 MiB buffer (8-byte words, in vectors, four streams at once), in
/// GB/s; the median of 9 passes. What a kernel that only streams its
/// inputs could reach.
static double readBandwidthGBs(int64_t threads) {
  const size_t words = (size_t(256) << 20) / sizeof(uint64_t);
  std::vector<uint64_t> src(words, 1);
  static volatile uint64_t sink;
  double seconds =
      medianPassSeconds(threads, words, [&](size_t begin, size_t size) {
        sink = sink + sumWords(src.data() + begin, size);
      });
  return static_cast<double>(words * sizeof(uint64_t)) / seconds * 1e-9;
}

/// `flashc-bench --decode`: single-token decode over long KV caches (batch
/// 1, 8 query heads over 2 KV heads, d = 128) in f16 and bf16, as a rate of
/// reading the KV cache, against the copy bandwidth and the read bandwidth
/// of the same threads measured in the same process before and after.
/// Each run starts with the caches flushed of the KV cache.
static int decodeBandwidth(const Options &o) {
  llvm::Expected<int64_t> threadsOr =
      o.integer("threads", PipelineConfig().getNumThreads());
  llvm::Expected<int64_t> itersOr = o.integer("iters", 20);
  for (auto *e : {&threadsOr, &itersOr})
    if (!*e)
      return reportError(e->takeError());
  for (auto [value, name, lo, hi] :
       {std::tuple(*threadsOr, "--threads", int64_t(1), kMaxThreads),
        std::tuple(*itersOr, "--iters", int64_t(1), int64_t(1000000))})
    if (std::string problem = checkRange(value, name, lo, hi);
        !problem.empty())
      return reportError(llvm::createStringError(problem));
  llvm::Expected<std::vector<int64_t>> lengths =
      integerList(o, "seq-kv", "32768,65536", int64_t(1) << 24);
  if (!lengths)
    return reportError(lengths.takeError());
  PipelineConfig config;
  config.numThreads = *threadsOr;
  long l3 = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
  l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  std::vector<char> evict(std::max<size_t>(size_t(64) << 20,
                                           l3 > 0 ? 2 * size_t(l3) : 0),
                          1);
  static volatile uint64_t evictSink;

  double copyBefore = copyBandwidthGBs(*threadsOr);
  double readBefore = readBandwidthGBs(*threadsOr);
  llvm::outs() << llvm::formatv(
      "flashc bench --decode: batch 1, Nq = 1, 8 query heads over 2 KV "
      "heads, d = 128, {0} threads\n"
      "copy bandwidth ({0} threads, memcpy, read + write): {1:f1} GB/s\n"
      "read bandwidth ({0} threads, a sum over 256 MiB, 4 streams a thread): "
      "{2:f1} GB/s\n",
      *threadsOr, copyBefore, readBefore);
  llvm::outs() << llvm::formatv(
      "{0,5} {1,8} | {2,9} {3,9} {4,8} {5,8} | {6}\n", "dtype", "Nk", "ms",
      "KV GB/s", "of copy", "of read", "max |error| (tolerance)");
  // The slowest and fastest KV read rates, for the summary line.
  double minGbs = INFINITY, maxGbs = 0;
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  for (ElementType dtype : {ElementType::F16, ElementType::BF16})
    for (int64_t nk : *lengths) {
      AttentionSpec spec;
      spec.heads = 8;
      spec.kvHeads = 2;
      spec.headDim = 128;
      spec.dtype = dtype;
      spec.seqQ = 1;
      spec.seqKV = nk;
      if (llvm::Error e = spec.validate())
        return reportError(std::move(e));
      std::vector<int64_t> kvShape = {1, 2, nk, 128}, qShape = {1, 8, 1, 128};
      llvm::Expected<HostTensor> q = HostTensor::allocate(dtype, qShape),
                                 k = HostTensor::allocate(dtype, kvShape),
                                 v = HostTensor::allocate(dtype, kvShape),
                                 out = HostTensor::allocate(dtype, qShape);
      for (auto *t : {&q, &k, &v, &out})
        if (!*t)
          return reportError(t->takeError());
      for (HostTensor *t : {&*q, &*k, &*v})
        for (int64_t i = 0; i < t->getNumElements(); ++i)
          t->set(i, normal(rng));
      auto kernel = Compiler::global().compile(spec, "cpu", config);
      if (!kernel)
        return reportError(kernel.takeError());
      // Every run starts from memory, not from the last level cache: a
      // buffer twice the L3 is read between runs (not timed; reading leaves
      // no dirty lines to write back during the run).
      std::vector<double> times;
      for (int64_t i = 0; i < *itersOr; ++i) {
        uint64_t sum = 0;
        for (size_t at = 0; at < evict.size(); at += 64)
          sum += static_cast<unsigned char>(evict[at]);
        evictSink = evictSink + sum;
        double t0 = now();
        if (llvm::Error e =
                (*kernel)->run(q->ref(), k->ref(), v->ref(), out->ref()))
          return reportError(std::move(e));
        times.push_back(now() - t0);
      }
      double seconds = median(std::move(times));
      // Every output row against the float64 reference.
      double err = 0;
      std::vector<double> expected(128);
      for (int64_t h = 0; h < 8; ++h) {
        referenceAttentionRow(spec, *q, *k, *v, 0, h, 0, expected.data());
        for (int64_t t = 0; t < 128; ++t)
          err = std::max(err,
                         std::fabs(expected[t] - out->get(h * 128 + t)));
      }
      double tolerance = getOutputTolerance(dtype);
      if (!(err <= tolerance))
        return reportError(llvm::createStringError(llvm::formatv(
            "decode {0}, Nk = {1}: max |error| {2:e} exceeds the tolerance "
            "{3:e}",
            ::flashc::stringify(dtype), nk, err, tolerance)));
      double kvBytes = 2.0 * 2 * static_cast<double>(nk) * 128 *
                       static_cast<double>(::flashc::getElementBytes(dtype));
      double gbs = kvBytes / seconds * 1e-9;
      minGbs = std::min(minGbs, gbs);
      maxGbs = std::max(maxGbs, gbs);
      llvm::outs() << llvm::formatv(
          "{0,5} {1,8} | {2,9:f3} {3,9:f1} {4,7:f0}% {5,7:f0}% | {6:e} "
          "({7:e})\n",
          ::flashc::stringify(dtype), nk, seconds * 1e3, gbs, 100 * gbs / copyBefore,
          100 * gbs / readBefore, err, tolerance);
      llvm::outs().flush();
    }
  double copyAfter = copyBandwidthGBs(*threadsOr);
  double readAfter = readBandwidthGBs(*threadsOr);
  double copyMost = std::max(copyBefore, copyAfter);
  double readMost = std::max(readBefore, readAfter);
  llvm::outs() << llvm::formatv(
      "copy bandwidth again: {0:f1} GB/s; against the larger of the two, the "
      "KV read rates are {1:f0}% to {2:f0}% of it\n"
      "read bandwidth again: {3:f1} GB/s; against the larger of the two, the "
      "KV read rates are {4:f0}% to {5:f0}% of it\n",
      copyAfter, 100 * minGbs / copyMost, 100 * maxGbs / copyMost, readAfter,
      100 * minGbs / readMost, 100 * maxGbs / readMost);
  return 0;
}

/// Runs one `flashc-bench one` command line and returns the JSON of its
/// last line; the error names `what` was measured and carries the
/// measuring process's own `flashc-bench: error:` line (else its first
/// line).
static llvm::Expected<llvm::json::Value> measure(const std::string &cmd,
                                                 const std::string &what) {
  FILE *pipe = popen(cmd.c_str(), "r");
  if (!pipe)
    return llvm::createStringError("cannot run " + cmd);
  std::string text;
  char buf[4096];
  while (size_t got = fread(buf, 1, sizeof(buf), pipe))
    text.append(buf, got);
  int status = pclose(pipe);
  // The result is the last line; stderr (merged in) comes before.
  llvm::StringRef last = llvm::StringRef(text).rtrim();
  last = last.substr(last.rfind('\n') + 1);
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(last);
  if (status == 0 && value)
    return value;
  llvm::StringRef all = llvm::StringRef(text).trim();
  llvm::StringRef why = all.take_front(all.find('\n'));
  std::string prefix = (getToolName() + ": error: ").str();
  size_t at = all.find(prefix);
  if (at != llvm::StringRef::npos) {
    why = all.drop_front(at);
    why = why.take_front(why.find('\n'));
  }
  why.consume_front(prefix);
  if (why.empty() && !value)
    why = "no output";
  if (!value)
    llvm::consumeError(value.takeError());
  return llvm::createStringError("the measurement (" + what +
                                 ") failed: " + why);
}

/// The OpenBLAS processes run without this environment's OpenBLAS
/// overrides (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE), which hold OpenBLAS
/// below its speed on some hosts; flashc's processes keep the environment.
static const char *kBlasEnvironment =
    "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ";

/// The OpenBLAS kernel set for this host when OpenBLAS's own detection fell
/// back to a pre-AVX2 one (`detected`), or "" to keep its choice. A CPU model
/// newer than the OpenBLAS release (Debian 12's 0.3.21 does not know family
/// 6 model 207, for one) is run with its Prescott (SSE3) kernels, which
/// would make a ceiling of a fifth of the machine.
static std::string blasCoreOverride(llvm::StringRef detected) {
  static const char *kLegacy[] = {"Prescott", "Core2",    "Penryn",
                                  "Dunnington", "Nehalem", "Atom",
                                  "Katmai",   "Coppermine", "Northwood",
                                  "Banias",   "Barcelona", "Opteron",
                                  "Opteron_SSE3", "Bobcat"};
  if (!llvm::is_contained(kLegacy, detected))
    return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
  return "";
}

int flashc::benchCommand(llvm::ArrayRef<const char *> args, const char *argv0) {
  llvm::Expected<Options> o =
      Options::parse(args, {"decode", "adjacent"},
                     {"sizes", "head-dims", "heads", "threads", "iters", "json",
                      "decode-loop", "seq-kv", "rounds"});
  if (!o)
    return reportError(o.takeError());
  if (o->has("decode-loop") && o->has("decode"))
    return reportError(llvm::createStringError(
        "--decode and --decode-loop are separate benchmarks; pass one"));
  for (const char *option : {"rounds", "adjacent"})
    if (o->has(option) && (o->has("decode-loop") || o->has("decode")))
      return reportError(llvm::createStringError(
          llvm::formatv("--{0} applies to the prefill table only, not to "
                        "--decode or --decode-loop",
                        option)
              .str()));
  if (o->has("decode-loop"))
    return decodeLoop(*o);
  if (o->has("decode"))
    return decodeBandwidth(*o);
  auto sizes = integerList(*o, "sizes", "512,1024,2048,4096,8192");
  if (!sizes)
    return reportError(sizes.takeError());
  auto dims = integerList(*o, "head-dims", "64,128");
  if (!dims)
    return reportError(dims.takeError());
  // Checked here, not only in the measuring processes: they go into a shell
  // command line, and a failure there should be this one error.
  llvm::Expected<int64_t> headsOr = o->integer("heads", 8),
                          itersOr = o->integer("iters", 3),
                          roundsOr = o->integer("rounds", 1),
                          threadsOr = o->integer(
                              "threads", PipelineConfig().getNumThreads());
  for (auto *e : {&headsOr, &itersOr, &roundsOr, &threadsOr})
    if (!*e)
      return reportError(e->takeError());
  for (auto [value, name, lo, hi] :
       {std::tuple(*headsOr, "--heads", int64_t(1), int64_t(1) << 20),
        std::tuple(*threadsOr, "--threads", int64_t(1), kMaxThreads),
        std::tuple(*itersOr, "--iters", int64_t(1), int64_t(1000000)),
        std::tuple(*roundsOr, "--rounds", int64_t(1), int64_t(100))})
    if (std::string problem = checkRange(value, name, lo, hi);
        !problem.empty())
      return reportError(llvm::createStringError(problem));
  for (int64_t n : *sizes)
    for (int64_t d : *dims) {
      AttentionSpec spec;
      spec.heads = spec.kvHeads = *headsOr;
      spec.seqQ = spec.seqKV = n;
      spec.headDim = d;
      if (llvm::Error e = spec.validate())
        return reportError(std::move(e));
    }
  std::string heads = std::to_string(*headsOr),
              iters = std::to_string(*itersOr),
              threads = std::to_string(*threadsOr);
  // What the run will do, before its first measurement: each row is a
  // kernel compiled and run, and the same problem on OpenBLAS.
  int64_t rows = static_cast<int64_t>(sizes->size() * dims->size()) * 2;
  int64_t rowRuns = rows * *roundsOr;
  llvm::outs() << llvm::formatv(
      "flashc bench: {0} configuration{1} to compile and run ({2} size{3} x "
      "{4} head dim{5} x causal or not){6}, each by flashc and by OpenBLAS in "
      "a process of its own; progress on stderr\n",
      rows, rows == 1 ? "" : "s", sizes->size(), sizes->size() == 1 ? "" : "s",
      dims->size(), dims->size() == 1 ? "" : "s",
      *roundsOr > 1
          ? llvm::formatv(", {0} rounds: {1} rows measured", *roundsOr, rowRuns)
                .str()
          : std::string());
  llvm::outs().flush();
  std::string self =
      llvm::sys::fs::getMainExecutable(argv0, (void *)&flashc::reportError);

  // The ceiling the per-thread figures are read against: OpenBLAS sgemm on
  // one core, in its own process, measured in this run. Where OpenBLAS does
  // not recognise the CPU, it and the baseline run with the host's kernels.
  std::string blasEnv = kBlasEnvironment;
  auto sgemmRun =
      [&](const std::string &sgemmThreads) -> llvm::Expected<llvm::json::Value> {
    return measure(blasEnv + "'" + self +
                       "' one --impl sgemm --seq 2048 --threads " +
                       sgemmThreads + " --iters 5 2>&1",
                   "sgemm on " + sgemmThreads + " thread(s)");
  };
  auto ceilingRun = [&] { return sgemmRun("1"); };
  // On more threads, what OpenBLAS itself gets per thread: on a host whose
  // threads share a core's units, the one-core ceiling is out of reach.
  auto perThreadSgemm = [&]() -> llvm::Expected<double> {
    llvm::Expected<llvm::json::Value> v = sgemmRun(threads);
    if (!v)
      return v.takeError();
    return v->getAsObject()->getNumber("gflops").value_or(NAN) /
           static_cast<double>(*threadsOr);
  };
  llvm::Expected<llvm::json::Value> ceilingValue = ceilingRun();
  if (!ceilingValue)
    return reportError(ceilingValue.takeError());
  std::string detected =
      ceilingValue->getAsObject()->getString("blasCore").value_or("").str();
  std::string core = blasCoreOverride(detected);
  if (!core.empty()) {
    blasEnv += "OPENBLAS_CORETYPE=" + core + " ";
    ceilingValue = ceilingRun();
    if (!ceilingValue)
      return reportError(ceilingValue.takeError());
  }
  auto gflopsOf = [](const llvm::json::Value &v) {
    return v.getAsObject()->getNumber("gflops").value_or(NAN);
  };
  // Every measurement of the one-core ceiling (and of OpenBLAS per thread
  // on `threads`) in this run: before each round and once after the rows.
  std::vector<double> ceilings = {gflopsOf(*ceilingValue)};
  std::vector<double> sgemmPerThreads;
  if (*threadsOr > 1) {
    llvm::Expected<double> v = perThreadSgemm();
    if (!v)
      return reportError(v.takeError());
    sgemmPerThreads.push_back(*v);
  }
  int64_t rounds = *roundsOr;
  llvm::outs() << llvm::formatv(
      "flashc bench: f32, batch 1, {0} heads, {1} threads for both; GFLOP/s "
      "count visible (query, key) pairs\n"
      "one-core sgemm ceiling (OpenBLAS, 2048^3, 1 thread): {2:f1} GFLOP/s; "
      "'of ceil' is flashc's GFLOP/s per thread over it\n",
      heads, threads, ceilings[0]);
  if (*threadsOr > 1)
    llvm::outs() << llvm::formatv(
        "sgemm on {0} threads (OpenBLAS, 2048^3): {1:f1} GFLOP/s per thread\n",
        threads, sgemmPerThreads[0]);
  if (!core.empty())
    llvm::outs() << llvm::formatv(
        "OpenBLAS did not recognise this CPU (it chose its {0} kernels); the "
        "ceiling and the baseline run with OPENBLAS_CORETYPE={1}\n",
        detected, core);
  llvm::outs().flush();
  // With --adjacent, the one-core ceiling is also measured between every
  // two rows, and each row is read against the two around it ('of adj').
  bool adjacentOn = o->has("adjacent");
  auto printHeader = [&] {
    llvm::outs() << llvm::formatv(
        "{0,6} {1,4} {2,7} | {3,10} {4,8} {5,8} {13,7}{14} | {6,10} {7,8} "
        "| {8,7} | {9,8} {10,8} | {11,9} {12,9}\n",
        "N", "d", "causal", "flashc ms", "GFLOP/s", "/thread", "BLAS ms",
        "GFLOP/s", "speedup", "RSS MB", "BLAS MB", "cold ms", "cached us",
        "of ceil", adjacentOn ? "  of adj" : "");
  };
  // A flashc measurement's GFLOP/s per thread.
  auto perThreadOf = [&](const llvm::json::Value &flashc) {
    return flashc.getAsObject()->getNumber("gflops").value_or(NAN) /
           static_cast<double>(*threadsOr);
  };
  // One table row: `row` holds the flashc and blas measurements; the
  // fraction is read against `ceiling`, and the row's "adjacentFraction"
  // follows it.
  auto printRow = [&](const llvm::json::Object &row, double ceiling) {
    auto get = [&](const char *impl, const char *key) {
      return row.getObject(impl)->getNumber(key).value_or(NAN);
    };
    double perThread = perThreadOf(*row.get("flashc"));
    llvm::outs() << llvm::formatv(
        "{0,6} {1,4} {2,7} | {3,10:f2} {4,8:f1} {5,8:f1} {13,6:f0}%{14} "
        "| {6,10:f2} {7,8:f1} | {8,7:f2} | {9,8:f1} {10,8:f1} | {11,9:f1} "
        "{12,9:f1}\n",
        *row.getInteger("seq"), *row.getInteger("headDim"),
        *row.getBoolean("causal") ? "yes" : "no",
        get("flashc", "seconds") * 1e3, get("flashc", "gflops"), perThread,
        get("blas", "seconds") * 1e3, get("blas", "gflops"),
        get("blas", "seconds") / get("flashc", "seconds"),
        get("flashc", "peakRssMB"), get("blas", "peakRssMB"),
        get("flashc", "compileColdMs"), get("flashc", "compileCachedUs"),
        100 * perThread / ceiling,
        adjacentOn ? llvm::formatv(
                         " {0,6:f0}%",
                         100 * row.getNumber("adjacentFraction").value_or(NAN))
                         .str()
                   : std::string());
    llvm::outs().flush();
  };
  // Each row keeps its fastest flashc and fastest BLAS run over the rounds;
  // the table of those comes at the end. The host's speed drifts: with
  // --adjacent the one-core ceiling is also measured between every two rows
  // (it is always measured before each round and after the last row), and
  // each row is read against the larger of the two measurements around it
  // ('of adj', the median over the rounds).
  llvm::json::Array all;
  // Per row, its flashc GFLOP/s per thread over the ceilings around it, one
  // a round (with --adjacent).
  std::vector<std::vector<double>> adjacent;
  // The row measured since the last ceiling, and its GFLOP/s per thread.
  std::vector<std::pair<size_t, double>> pendingAdjacent;
  // A new ceiling measurement; the rows measured since the last one are
  // read against it and the one before them.
  auto ceilingAfter = [&](double gflops) {
    ceilings.push_back(gflops);
    for (auto [row, perThread] : pendingAdjacent)
      adjacent[row].push_back(perThread /
                              std::max(ceilings[ceilings.size() - 2], gflops));
    pendingAdjacent.clear();
  };
  int64_t rowsDone = 0;
  for (int64_t round = 0; round < rounds; ++round) {
    if (round > 0) {
      llvm::Expected<llvm::json::Value> c = ceilingRun();
      if (!c)
        return reportError(c.takeError());
      ceilingAfter(gflopsOf(*c));
      std::string perThreadText;
      if (*threadsOr > 1) {
        llvm::Expected<double> v = perThreadSgemm();
        if (!v)
          return reportError(v.takeError());
        sgemmPerThreads.push_back(*v);
        perThreadText =
            llvm::formatv("; on {0} threads, {1:f1} per thread", threads, *v)
                .str();
      }
      llvm::outs() << llvm::formatv(
          "round {0} of {1}: one-core sgemm ceiling {2:f1} GFLOP/s{3}\n",
          round + 1, rounds, ceilings.back(), perThreadText);
      llvm::outs().flush();
    }
    size_t index = 0;
    for (int64_t d : *dims)
      for (int64_t n : *sizes)
        for (bool causal : {false, true}) {
          if (adjacentOn && (index > 0 || (round == 0 && !all.empty()))) {
            llvm::Expected<llvm::json::Value> c = ceilingRun();
            if (!c)
              return reportError(c.takeError());
            ceilingAfter(gflopsOf(*c));
          }
          // Progress on stderr, one line a row (the table comes at the end,
          // once every ceiling is measured): the row as it starts, its
          // times when it is done.
          llvm::errs() << llvm::formatv(
              "[{0}/{1}] N = {2}, d = {3}{4}{5}: ", ++rowsDone, rowRuns, n, d,
              causal ? ", causal" : "",
              rounds > 1
                  ? llvm::formatv(" (round {0} of {1})", round + 1, rounds)
                        .str()
                  : std::string());
          llvm::json::Object measured;
          for (const char *impl : {"flashc", "blas"}) {
            std::string cmd =
                (std::strcmp(impl, "blas") == 0 ? blasEnv : std::string()) +
                "'" + self + "' one --impl " + impl + " --seq " +
                std::to_string(n) + " --head-dim " + std::to_string(d) +
                " --heads " + heads + " --threads " + threads + " --iters " +
                iters + (causal ? " --causal" : "") + " 2>&1";
            std::string what = llvm::formatv("{0}, N = {1}, d = {2}{3}", impl,
                                             n, d, causal ? ", causal" : "");
            llvm::Expected<llvm::json::Value> value = measure(cmd, what);
            if (!value) {
              llvm::errs() << "failed\n";
              return reportError(value.takeError());
            }
            measured[impl] = std::move(*value);
          }
          auto msOf = [&](const char *impl) {
            return measured.getObject(impl)
                       ->getNumber("seconds")
                       .value_or(NAN) *
                   1e3;
          };
          llvm::errs() << llvm::formatv("flashc {0:f2} ms, OpenBLAS {1:f2} ms\n",
                                        msOf("flashc"), msOf("blas"));
          size_t rowIndex = round == 0 ? all.size() : index;
          if (round == 0)
            adjacent.emplace_back();
          if (adjacentOn)
            pendingAdjacent.emplace_back(rowIndex,
                                         perThreadOf(*measured.get("flashc")));
          if (round == 0) {
            llvm::json::Object row;
            row["seq"] = n;
            row["headDim"] = d;
            row["causal"] = causal;
            row["rounds"] = rounds;
            row["blasCore"] = core.empty() ? detected : core;
            for (const char *impl : {"flashc", "blas"})
              row[impl] = std::move(*measured.get(impl));
            all.push_back(std::move(row));
            continue;
          }
          // Keep the faster of this round's and the best so far, per impl.
          llvm::json::Object &row = *all[index++].getAsObject();
          for (const char *impl : {"flashc", "blas"}) {
            auto seconds = [&](const llvm::json::Value &v) {
              return v.getAsObject()->getNumber("seconds").value_or(INFINITY);
            };
            if (seconds(*measured.get(impl)) < seconds(*row.get(impl)))
              row[impl] = std::move(*measured.get(impl));
          }
        }
  }
  // On a shared host the machine's speed drifts over a run: the ceiling
  // again at the end, and every row against the largest measurement.
  llvm::Expected<llvm::json::Value> againValue = ceilingRun();
  if (!againValue)
    return reportError(againValue.takeError());
  double again = gflopsOf(*againValue);
  ceilingAfter(again);
  auto largestOf = [](size_t count) {
    return count == 2 ? std::string("the larger of the two")
                      : llvm::formatv("the largest of the {0}", count).str();
  };
  double largest = *llvm::max_element(ceilings);
  for (auto [v, fractions] : llvm::zip(all, adjacent)) {
    if (fractions.empty())
      continue;
    llvm::json::Object &row = *v.getAsObject();
    row["adjacentFractions"] = llvm::json::Array(fractions);
    llvm::sort(fractions);
    size_t k = fractions.size();
    row["adjacentFraction"] =
        k % 2 ? fractions[k / 2]
              : (fractions[k / 2 - 1] + fractions[k / 2]) / 2;
  }
  llvm::outs() << llvm::formatv(
      "{0}'of ceil' against {1} one-core ceilings measured ({2:f1} "
      "GFLOP/s){3}\n",
      rounds > 1
          ? llvm::formatv("fastest of {0} rounds per row; ", rounds).str()
          : std::string(),
      largestOf(ceilings.size()), largest,
      !adjacentOn ? std::string()
                  : std::string("; 'of adj' against the larger of the two "
                                "measured around the row") +
                        (rounds > 1 ? " (the median over the rounds)" : ""));
  printHeader();
  for (const llvm::json::Value &v : all)
    printRow(*v.getAsObject(), largest);
  // Each row's flashc GFLOP/s per thread over `reference`, stored in the
  // row under `key`; the smallest and the largest of them.
  auto fractionsOf = [&](double reference, const char *key) {
    double lo = INFINITY, hi = -INFINITY;
    for (llvm::json::Value &v : all) {
      llvm::json::Object &row = *v.getAsObject();
      double f = perThreadOf(*row.get("flashc")) / reference;
      row[key] = f;
      lo = std::min(lo, f);
      hi = std::max(hi, f);
    }
    return std::pair(lo, hi);
  };
  for (llvm::json::Value &v : all) {
    llvm::json::Object &row = *v.getAsObject();
    row["speedup"] =
        row.getObject("blas")->getNumber("seconds").value_or(NAN) /
        row.getObject("flashc")->getNumber("seconds").value_or(NAN);
    row["sgemmCeilingGflops"] = ceilings[0];
    row["sgemmCeilingAgainGflops"] = again;
    row["sgemmCeilingsGflops"] = llvm::json::Array(ceilings);
  }
  fractionsOf(ceilings[0], "fractionOfCeiling");
  auto [lo, hi] = fractionsOf(largest, "fractionOfLargerCeiling");
  llvm::outs() << llvm::formatv(
      "sgemm ceiling again: {0:f1} GFLOP/s; against {1}, the rows are {2:f0}% "
      "to {3:f0}% of it per thread\n",
      again, largestOf(ceilings.size()), 100 * lo, 100 * hi);
  if (*threadsOr > 1) {
    llvm::Expected<double> v = perThreadSgemm();
    if (!v)
      return reportError(v.takeError());
    sgemmPerThreads.push_back(*v);
    double larger = *llvm::max_element(sgemmPerThreads);
    for (llvm::json::Value &value : all)
      (*value.getAsObject())["sgemmPerThreadGflops"] = larger;
    auto [tlo, thi] = fractionsOf(larger, "fractionOfSgemmPerThread");
    llvm::outs() << llvm::formatv(
        "sgemm on {0} threads again: {1:f1} GFLOP/s per thread; against {2}, "
        "the rows are {3:f0}% to {4:f0}% of it per thread\n",
        threads, *v, largestOf(sgemmPerThreads.size()), 100 * tlo, 100 * thi);
  }
  if (o->has("json")) {
    if (llvm::Error e = writeFile(
            o->str("json"),
            llvm::formatv("{0:2}\n", llvm::json::Value(std::move(all))).str()))
      return reportError(std::move(e));
  }
  return 0;
}
