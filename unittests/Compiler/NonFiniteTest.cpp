//===- NonFiniteTest.cpp - NaN and infinity propagate per row -------------===//
//
// The numerics contract of flash.attention (FlashOps.td): a row whose
// scores include NaN (a NaN or infinite entry of its query, of a key it
// sees, or a score that overflows f32) produces NaN outputs and a NaN
// log-sum-exp, and every other row is unaffected; -inf in the log-sum-exp
// means only "no visible key". Checked on the CPU kernels (one pass and
// split-KV with a combine) and on the GPU kernels in the PTX simulator
// (prefill, and decode with the split-KV combine kernel), on fresh random
// inputs against the float64 reference.
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/JIT.h"
#include "flashc/Compiler/Reference.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <set>

using namespace mlir::flash;

namespace {

struct Case {
  const char *name;
  const char *target;
  ElementType dtype;
  int64_t seqQ, seqKV;
  int64_t splits; // CPU: the split count; GPU decode: at launch
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class NonFiniteTest : public ::testing::TestWithParam<Case> {};

/// GQA (4 query heads over 2 KV heads), causal, D = 64, with the
/// log-sum-exp. Poisons: one element of a query row with NaN, one with
/// +inf (whose score with key 0 is then +inf: key 0's matching element is
/// made positive), and, in f32, one query row large enough that its scores
/// overflow f32 (where the float64 reference does not overflow, NaN is
/// expected by the contract).
TEST_P(NonFiniteTest, PropagatesPerRow) {
  const Case &c = GetParam();
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 4;
  spec.kvHeads = 2;
  spec.seqQ = c.seqQ;
  spec.seqKV = c.seqKV;
  spec.headDim = 64;
  spec.dtype = c.dtype;
  spec.mask = Mask::causal();
  spec.withLse = true;
  PipelineConfig config;
  bool gpu = std::string(c.target) != "cpu";
  if (!gpu)
    config.splits = c.splits;
  auto kernel = Compiler::global().compile(spec, c.target, config);
  ASSERT_TRUE(static_cast<bool>(kernel)) << llvm::toString(kernel.takeError());

  unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  HostTensor q(spec.dtype, {1, spec.heads, spec.seqQ, spec.headDim});
  HostTensor k(spec.dtype, {1, spec.kvHeads, spec.seqKV, spec.headDim});
  HostTensor v(spec.dtype, {1, spec.kvHeads, spec.seqKV, spec.headDim});
  for (HostTensor *t : {&q, &k, &v})
    for (int64_t i = 0; i < t->getNumElements(); ++i)
      t->set(i, normal(rng));

  // Rows (head, query) to poison; every row sees at least one key.
  int64_t last = spec.seqQ - 1;
  struct Poison {
    int64_t head, row;
    enum { NaNEntry, InfEntry, Overflow } kind;
  };
  std::vector<Poison> poisons = {{0, last, Poison::NaNEntry},
                                 {3, last, Poison::InfEntry}};
  if (spec.seqQ > 1 && c.dtype == ElementType::F32)
    poisons.push_back({1, last - 1, Poison::Overflow});
  std::set<int64_t> poisoned, overflowed;
  for (const Poison &p : poisons) {
    int64_t base = (p.head * spec.seqQ + p.row) * spec.headDim;
    poisoned.insert(p.head * spec.seqQ + p.row);
    switch (p.kind) {
    case Poison::NaNEntry:
      q.set(base + 5, std::numeric_limits<double>::quiet_NaN());
      break;
    case Poison::InfEntry:
      q.set(base + 7, std::numeric_limits<double>::infinity());
      // Key 0 (seen by the last row) then scores +inf, not -inf.
      for (int64_t h = 0; h < spec.kvHeads; ++h)
        k.set(h * spec.seqKV * spec.headDim + 7,
              std::fabs(k.get(h * spec.seqKV * spec.headDim + 7)) + 0.5);
      break;
    case Poison::Overflow:
      // q . k_0 = 64 * 1e37 * 1 > 3.4e38 with key 0 all ones: +inf in f32.
      for (int64_t t = 0; t < spec.headDim; ++t)
        q.set(base + t, 1e37);
      for (int64_t h = 0; h < spec.kvHeads; ++h)
        for (int64_t t = 0; t < spec.headDim; ++t)
          k.set(h * spec.seqKV * spec.headDim + t, 1.0);
      overflowed.insert(p.head * spec.seqQ + p.row);
      break;
    }
  }

  HostTensor out(spec.dtype, {1, spec.heads, spec.seqQ, spec.headDim});
  HostTensor lse(ElementType::F32, {1, spec.heads, spec.seqQ});
  for (int64_t i = 0; i < out.getNumElements(); ++i)
    out.set(i, 12345.0); // any value the kernel must overwrite
  for (int64_t i = 0; i < lse.getNumElements(); ++i)
    lse.set(i, 12345.0);
  RunOptions options;
  options.simulate = gpu;
  if (gpu)
    options.splits = c.splits;
  TensorRef lseRef = lse.ref();
  llvm::Error err =
      (*kernel)->run(q.ref(), k.ref(), v.ref(), out.ref(), &lseRef, options);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));

  std::vector<double> expectedLse;
  std::vector<double> expected =
      referenceAttention(spec, q, k, v, &expectedLse);
  double tol = getOutputTolerance(spec.dtype);
  for (int64_t row = 0; row < spec.heads * spec.seqQ; ++row) {
    SCOPED_TRACE("head " + std::to_string(row / spec.seqQ) + ", query " +
                 std::to_string(row % spec.seqQ));
    bool bad = poisoned.count(row);
    // The float64 reference follows the same contract, except that its
    // scores do not overflow.
    if (!overflowed.count(row)) {
      ASSERT_EQ(std::isnan(expectedLse[row]), bad);
    }
    if (bad) {
      EXPECT_TRUE(std::isnan(lse.get(row))) << "lse " << lse.get(row);
      for (int64_t t = 0; t < spec.headDim; ++t)
        EXPECT_TRUE(std::isnan(out.get(row * spec.headDim + t)))
            << "output " << t << " is " << out.get(row * spec.headDim + t);
      continue;
    }
    if (std::isinf(expectedLse[row]))
      EXPECT_EQ(lse.get(row), expectedLse[row]);
    else
      EXPECT_NEAR(lse.get(row), expectedLse[row],
                  1e-3 * (1 + std::fabs(expectedLse[row])));
    for (int64_t t = 0; t < spec.headDim; ++t)
      EXPECT_NEAR(out.get(row * spec.headDim + t),
                  expected[row * spec.headDim + t], tol);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, NonFiniteTest,
    ::testing::Values(
        // Nq > Nk: the first rows see no key (0 and -inf, never NaN).
        Case{"CpuPrefill", "cpu", ElementType::F32, 12, 9, 1},
        Case{"CpuSplitKV", "cpu", ElementType::F32, 3, 200, 4},
        Case{"CpuF16", "cpu", ElementType::F16, 12, 40, 1},
        Case{"GpuPrefill", "sm_80", ElementType::F16, 40, 33, 0},
        Case{"GpuDecodeSplits", "sm_80", ElementType::F16, 2, 300, 3},
        Case{"GpuDecodeBF16", "sm_90a", ElementType::BF16, 1, 200, 2}),
    [](const ::testing::TestParamInfo<Case> &info) {
      return std::string(info.param.name);
    });

} // namespace
