//===- main.cpp - Compile and run a CPU attention kernel with flashc ------===//
//
// Uses flashc's C++ API (flashc/Compiler/JIT.h) from outside flashc's
// tree: compiles a causal grouped-query attention for the CPU, runs it on
// random f32 inputs and compares every output element with a float64
// reference computed here. Exits 0 when all of them are within
// 2e-4 * (1 + |reference|), 1 otherwise. FLASHC_EXAMPLE_SEED repeats a
// run's inputs (the seed is printed).
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"

#include "llvm/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

using namespace mlir::flash;

namespace {

/// O = softmax(Q K^T / sqrt(D)) V in float64, [B, H, N, D] order, query
/// head h reading KV head h / (H / Hkv); the causal mask shows key j to
/// query i when j <= i + Nk - Nq.
std::vector<double> reference(const AttentionSpec &s,
                              const std::vector<float> &q,
                              const std::vector<float> &k,
                              const std::vector<float> &v) {
  const int64_t d = s.headDim, group = s.heads / s.kvHeads;
  std::vector<double> out(s.batch * s.heads * s.seqQ * d, 0.0);
  std::vector<double> scores(s.seqKV);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.seqQ; ++i) {
        const float *qr = &q[((b * s.heads + h) * s.seqQ + i) * d];
        const int64_t kvBase = (b * s.kvHeads + h / group) * s.seqKV;
        int64_t visible = s.seqKV;
        if (s.isCausal())
          visible = std::max<int64_t>(
              0, std::min<int64_t>(s.seqKV, i + s.seqKV - s.seqQ + 1));
        double max = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          const float *kr = &k[(kvBase + j) * d];
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += double(qr[e]) * double(kr[e]);
          scores[j] = dot / std::sqrt(double(d));
          max = std::max(max, scores[j]);
        }
        double *o = &out[((b * s.heads + h) * s.seqQ + i) * d];
        for (int64_t j = 0; j < visible; ++j) {
          double p = std::exp(scores[j] - max);
          sum += p;
          const float *vr = &v[(kvBase + j) * d];
          for (int64_t e = 0; e < d; ++e)
            o[e] += p * double(vr[e]);
        }
        for (int64_t e = 0; e < d && sum > 0; ++e)
          o[e] /= sum;
      }
  return out;
}

} // namespace

int main() {
  AttentionSpec spec;
  spec.batch = 2;
  spec.heads = 8;
  spec.kvHeads = 2;
  spec.seqQ = 37;
  spec.seqKV = 53;
  spec.headDim = 64;
  spec.dtype = ElementType::F32;
  spec.mask = Mask::causal();

  llvm::Expected<std::shared_ptr<const Kernel>> kernel =
      Compiler::global().compile(spec, "cpu");
  if (!kernel) {
    std::fprintf(stderr, "jit-attention: compile failed: %s\n",
                 llvm::toString(kernel.takeError()).c_str());
    return 1;
  }

  uint64_t seed = std::random_device{}();
  if (const char *s = std::getenv("FLASHC_EXAMPLE_SEED"))
    seed = std::strtoull(s, nullptr, 10);
  std::printf("jit-attention: seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  auto randomTensor = [&](int64_t heads, int64_t seq) {
    std::vector<float> t(spec.batch * heads * seq * spec.headDim);
    for (float &x : t)
      x = normal(rng);
    return t;
  };
  std::vector<float> q = randomTensor(spec.heads, spec.seqQ);
  std::vector<float> k = randomTensor(spec.kvHeads, spec.seqKV);
  std::vector<float> v = randomTensor(spec.kvHeads, spec.seqKV);
  // NaN: an element the kernel does not write shows.
  std::vector<float> out(q.size(), std::numeric_limits<float>::quiet_NaN());

  auto ref = [&](std::vector<float> &data, int64_t heads, int64_t seq) {
    return TensorRef::contiguous(data.data(), ElementType::F32,
                                 {spec.batch, heads, seq, spec.headDim});
  };
  if (llvm::Error e = (*kernel)->run(
          ref(q, spec.heads, spec.seqQ), ref(k, spec.kvHeads, spec.seqKV),
          ref(v, spec.kvHeads, spec.seqKV), ref(out, spec.heads, spec.seqQ))) {
    std::fprintf(stderr, "jit-attention: run failed: %s\n",
                 llvm::toString(std::move(e)).c_str());
    return 1;
  }

  std::vector<double> expected = reference(spec, q, k, v);
  double worst = 0;
  int64_t bad = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    double err = std::fabs(double(out[i]) - expected[i]);
    if (!(err <= 2e-4 * (1 + std::fabs(expected[i])))) {
      if (bad++ < 5)
        std::fprintf(stderr, "jit-attention: out[%zu] = %g, expected %g\n", i,
                     double(out[i]), expected[i]);
    }
    if (!(err <= worst))
      worst = err;
  }
  std::printf("jit-attention: %zu outputs, largest error %.3g, %lld "
              "outside 2e-4 * (1 + |ref|)\n",
              out.size(), worst, (long long)bad);
  return bad == 0 ? 0 : 1;
}
