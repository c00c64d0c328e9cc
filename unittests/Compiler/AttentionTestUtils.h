//===- AttentionTestUtils.h - Inputs and checks for kernel tests -*- C++ -*-===//
//
// Fresh random inputs for one attention problem, outputs poisoned with NaN
// (a row the kernel forgets shows), and the comparison with the float64
// reference, shared by the CPU and GPU kernel tests.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_UNITTESTS_COMPILER_ATTENTIONTESTUTILS_H
#define FLASHC_UNITTESTS_COMPILER_ATTENTIONTESTUTILS_H

#include "flashc/Compiler/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace flashc_test {

using mlir::flash::AttentionSpec;
using mlir::flash::ElementType;
using mlir::flash::HostTensor;

/// FLASHC_TEST_SEED when set (to rerun a failure), else a fresh seed.
inline unsigned freshSeed() {
  if (const char *env = std::getenv("FLASHC_TEST_SEED"))
    return static_cast<unsigned>(std::strtoul(env, nullptr, 10));
  return std::random_device{}();
}

/// Q, K ~ N(0, magnitude^2) and V ~ N(0, 1) of `spec`'s shapes; O and LSE
/// filled with NaN.
struct AttentionBuffers {
  AttentionBuffers(const AttentionSpec &spec, std::mt19937 &rng,
                   double magnitude = 1.0)
      : q(spec.dtype, {spec.batch, spec.heads, spec.seqQ, spec.headDim}),
        k(spec.dtype, {spec.batch, spec.kvHeads, spec.seqKV, spec.headDim}),
        v(spec.dtype, {spec.batch, spec.kvHeads, spec.seqKV, spec.valueDim()}),
        out(spec.dtype, {spec.batch, spec.heads, spec.seqQ, spec.valueDim()}),
        lse(ElementType::F32, {spec.batch, spec.heads, spec.seqQ}) {
    std::normal_distribution<double> normal(0.0, 1.0);
    for (HostTensor *t : {&q, &k})
      for (int64_t i = 0; i < t->getNumElements(); ++i)
        t->set(i, magnitude * normal(rng));
    for (int64_t i = 0; i < v.getNumElements(); ++i)
      v.set(i, normal(rng));
    for (HostTensor *t : {&out, &lse})
      for (int64_t i = 0; i < t->getNumElements(); ++i)
        t->set(i, NAN);
  }
  HostTensor q, k, v, out, lse;
};

/// Expects `b.out` (and `b.lse` when `spec.withLse`) to match the float64
/// reference: outputs within getOutputTolerance(dtype) * toleranceScale
/// (absolute), finite LSEs within (lseAbs + lseRel |lse|) * toleranceScale,
/// and -inf exactly where a row sees no key.
inline void expectMatchesReference(const AttentionSpec &spec,
                                   const AttentionBuffers &b,
                                   double toleranceScale = 1.0,
                                   double lseAbs = 1e-3, double lseRel = 1e-5) {
  std::vector<double> refLse;
  std::vector<double> ref =
      mlir::flash::referenceAttention(spec, b.q, b.k, b.v, &refLse);
  EXPECT_LE(mlir::flash::maxAbsError(ref, b.out),
            mlir::flash::getOutputTolerance(spec.dtype) * toleranceScale);
  if (!spec.withLse)
    return;
  for (int64_t i = 0; i < b.lse.getNumElements(); ++i) {
    double expected = refLse[i], got = b.lse.get(i);
    if (std::isinf(expected)) {
      EXPECT_EQ(got, expected) << "lse row " << i << " sees no key";
      continue;
    }
    EXPECT_LE(std::fabs(got - expected),
              (lseAbs + lseRel * std::fabs(expected)) * toleranceScale)
        << "lse row " << i << ": " << got << ", expected " << expected;
  }
}

/// A copy of the rank-4 `t` with its middle two dimensions swapped
/// ([B, H, N, D] <-> [B, N, H, D]), for buffers passed as strided views.
inline HostTensor swapMiddleDims(const HostTensor &t) {
  const std::vector<int64_t> &s = t.getSizes();
  HostTensor r(t.getDType(), {s[0], s[2], s[1], s[3]});
  for (int64_t b = 0; b < s[0]; ++b)
    for (int64_t h = 0; h < s[1]; ++h)
      for (int64_t n = 0; n < s[2]; ++n)
        for (int64_t d = 0; d < s[3]; ++d)
          r.set(((b * s[2] + n) * s[1] + h) * s[3] + d,
                t.get(((b * s[1] + h) * s[2] + n) * s[3] + d));
  return r;
}

/// The sizes a size-free kernel is run with; `kvHeads` (0: the base
/// spec's) KV heads with the base spec's group of query heads each.
struct Sizes {
  int64_t batch, seqQ, seqKV;
  int64_t kvHeads = 0;
};

/// `base` with the batch, lengths and (when given) KV heads of `sizes`.
inline AttentionSpec resized(const AttentionSpec &base, Sizes sizes) {
  AttentionSpec spec = base;
  spec.batch = sizes.batch;
  spec.seqQ = sizes.seqQ;
  spec.seqKV = sizes.seqKV;
  if (sizes.kvHeads) {
    spec.heads = base.heads / base.kvHeads * sizes.kvHeads;
    spec.kvHeads = sizes.kvHeads;
  }
  return spec;
}

/// Runs `kernel` on fresh inputs of `base` resized to `sizes`, with the LSE
/// when `base.withLse`, and checks O and LSE against the float64 reference.
inline void checkRun(const mlir::flash::Kernel &kernel,
                     const AttentionSpec &base, Sizes sizes, std::mt19937 &rng,
                     const mlir::flash::RunOptions &options = {}) {
  AttentionSpec spec = resized(base, sizes);
  SCOPED_TRACE(spec.str());
  AttentionBuffers b(spec, rng);
  mlir::flash::TensorRef lseRef = b.lse.ref();
  llvm::Error err = kernel.run(b.q.ref(), b.k.ref(), b.v.ref(), b.out.ref(),
                               spec.withLse ? &lseRef : nullptr, options);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  expectMatchesReference(spec, b);
}

/// checkRun for each of `sizes`, on inputs from one fresh seed (printed on
/// failure), up to the first failure.
inline void checkSizes(const mlir::flash::Kernel &kernel,
                       const AttentionSpec &base,
                       std::initializer_list<Sizes> sizes) {
  unsigned seed = freshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (rerun with FLASHC_TEST_SEED)");
  std::mt19937 rng(seed);
  for (Sizes s : sizes) {
    checkRun(kernel, base, s, rng);
    if (::testing::Test::HasFailure())
      return;
  }
}

} // namespace flashc_test

#endif // FLASHC_UNITTESTS_COMPILER_ATTENTIONTESTUTILS_H
