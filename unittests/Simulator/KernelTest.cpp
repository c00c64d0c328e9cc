//===- KernelTest.cpp - nvcc's kernels against CPU references -------------===//
//
// Runs the kernels of kernels/SimTestKernels.cu on fresh random inputs (the
// seed is printed on failure) and compares them with references computed
// here. Where the operations are exact or correctly rounded (saxpy's fma,
// the tree reduction replayed in the same order, the integer and float
// conversion kernels) the comparison is bit for bit. approxOps is compared
// within the PTX ISA's documented maxima; gemmF16 with a float64 reference
// within 2^-20 * sum_k |a_ik b_kj|, which allows a few f32 roundings of the
// accumulator per output (one per mma.sync step) with ample margin.
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <ostream>

using namespace flashc;
using namespace flashc::sim::test;

namespace {

sim::LaunchConfig launchConfig(sim::Dim3 grid, sim::Dim3 block,
                               unsigned workers = 1) {
  sim::LaunchConfig config;
  config.grid = grid;
  config.block = block;
  config.workers = workers;
  return config;
}

TEST(NvccKernelTest, Saxpy) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  std::uniform_int_distribution<int> size(1000, 3000);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  const int n = size(rng.engine);
  const float a = dist(rng.engine);
  std::vector<float> x(n), y(n), expect(n);
  for (int i = 0; i < n; ++i) {
    x[i] = dist(rng.engine);
    y[i] = dist(rng.engine);
    // nvcc contracts a * x + y into fma.rn.f32.
    expect[i] = std::fma(a, x[i], y[i]);
  }
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, x, "x")));
  ASSERT_TRUE(ok(registerVector(device, y, "y")));
  ASSERT_TRUE(ok(device.launch(
      *module, "saxpy", launchConfig({(n + 127u) / 128u}, {128}, 2),
      {sim::KernelArg::pointer(x.data()), sim::KernelArg::pointer(y.data()),
       sim::KernelArg::f32(a), sim::KernelArg::s32(n)})));
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(f32Bits(y[i]), f32Bits(expect[i])) << "y[" << i << "], n = " << n;
}

struct ReduceCase {
  uint32_t block, grid;
  unsigned workers;
};

void PrintTo(const ReduceCase &c, std::ostream *os) {
  *os << "block " << c.block << ", grid " << c.grid << ", workers "
      << c.workers;
}

class NvccReduceTest : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(NvccReduceTest, MatchesTheSameTreeInFloat) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  const ReduceCase &c = GetParam();
  FLASHC_SEEDED_RNG(rng);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  // A partial last CTA: the kernel pads with zeros.
  const int n =
      static_cast<int>(c.block * c.grid) - static_cast<int>(c.block / 3);
  std::vector<float> x(n), out(c.grid, 0.0f);
  for (float &v : x)
    v = dist(rng.engine);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, x, "x")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  ASSERT_TRUE(ok(device.launch(
      *module, "blockReduce", launchConfig({c.grid}, {c.block}, c.workers),
      {sim::KernelArg::pointer(x.data()), sim::KernelArg::pointer(out.data()),
       sim::KernelArg::s32(n)})));
  for (uint32_t b = 0; b < c.grid; ++b) {
    std::vector<float> buf(c.block);
    for (uint32_t t = 0; t < c.block; ++t) {
      int i = static_cast<int>(b * c.block + t);
      buf[t] = i < n ? x[i] : 0.0f;
    }
    for (uint32_t s = c.block / 2; s > 0; s >>= 1)
      for (uint32_t t = 0; t < s; ++t)
        buf[t] += buf[t + s];
    EXPECT_EQ(f32Bits(out[b]), f32Bits(buf[0])) << "CTA " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Nvcc, NvccReduceTest,
                         ::testing::Values(ReduceCase{256, 1, 1},
                                           ReduceCase{128, 3, 2},
                                           ReduceCase{64, 7, 2},
                                           ReduceCase{256, 5, 1},
                                           ReduceCase{32, 4, 2}));

/// The 16 functions of integerOps, by their C definitions.
std::vector<uint32_t> integerReference(uint32_t x, uint32_t y) {
  int32_t sx = static_cast<int32_t>(x), sy = static_cast<int32_t>(y);
  uint64_t wide = static_cast<uint64_t>(x) * y;
  int64_t swide = static_cast<int64_t>(sx) * sy;
  auto brev = [](uint32_t v) {
    uint32_t r = 0;
    for (int i = 0; i < 32; ++i)
      r |= ((v >> i) & 1u) << (31 - i);
    return r;
  };
  auto popc = [](uint32_t v) {
    uint32_t n = 0;
    for (; v; v &= v - 1)
      ++n;
    return n;
  };
  auto clz = [](uint32_t v) {
    uint32_t n = 0;
    for (uint32_t bit = 1u << 31; bit && !(v & bit); bit >>= 1)
      ++n;
    return n;
  };
  // __byte_perm(x, y, s): byte i of the result is byte (s >> 4i) & 7 of the
  // 8-byte value y:x.
  auto bytePerm = [](uint32_t lo, uint32_t hi, uint32_t s) {
    uint64_t v = (static_cast<uint64_t>(hi) << 32) | lo;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i)
      r |= static_cast<uint32_t>((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff)
           << (8 * i);
    return r;
  };
  uint32_t pos = y & 15;
  uint32_t field = (x >> pos) & 0x1ff; // 9 bits at pos
  uint32_t sbits = (x >> pos) & 0x7f;  // 7 bits at pos, sign-extended
  uint32_t sfield = (sbits & 0x40) ? (sbits | 0xffffff80u) : sbits;
  uint32_t ipos = x & 15, mask = 0x3fu << ipos;
  uint32_t ins = (y & ~mask) | ((x << ipos) & mask);
  return {
      x * y + (x >> 3),
      static_cast<uint32_t>(wide >> 32),
      static_cast<uint32_t>(static_cast<uint64_t>(swide) >> 32),
      y ? x / y : 0,
      // INT_MIN % -1 is undefined in C++ and 0 in PTX's rem.s32.
      sy == 0    ? 0
      : sy == -1 ? 0
                 : static_cast<uint32_t>(sx % sy),
      popc(x) + 64u * clz(y),
      brev(x),
      bytePerm(x, y, 0x5140),
      static_cast<uint32_t>(sx >> (y & 31)),
      x << (y & 31),
      std::min(x, y) ^ static_cast<uint32_t>(std::max(sx, sy)),
      static_cast<uint32_t>(wide >> 32) ^ static_cast<uint32_t>(wide),
      field,
      sfield,
      ins,
      static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(x))) +
          (sx < sy ? 1u : 0u),
  };
}

TEST(NvccKernelTest, IntegerOpsBitExact) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  std::vector<uint32_t> a = {0,           1, 0xffffffffu, 0x80000000u,
                             0x7fffffffu, 5, 0x80000000u, 12345},
                        b = {0,           0,           1,           0xffffffffu,
                             0x80000000u, 0xfffffff9u, 0xffffffffu, 0x10001};
  std::uniform_int_distribution<uint32_t> bits;
  while (a.size() < 300) {
    a.push_back(bits(rng.engine));
    // Mix in small divisors and shift amounts.
    b.push_back(a.size() % 3 ? bits(rng.engine) : bits(rng.engine) % 64);
  }
  const int n = static_cast<int>(a.size());
  std::vector<uint32_t> out(16 * n, 0xdeadbeef);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, a, "a")));
  ASSERT_TRUE(ok(registerVector(device, b, "b")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  ASSERT_TRUE(ok(device.launch(
      *module, "integerOps", launchConfig({(n + 63u) / 64u}, {64}, 2),
      {sim::KernelArg::pointer(a.data()), sim::KernelArg::pointer(b.data()),
       sim::KernelArg::pointer(out.data()), sim::KernelArg::s32(n)})));
  for (int i = 0; i < n; ++i) {
    std::vector<uint32_t> expect = integerReference(a[i], b[i]);
    for (int j = 0; j < 16; ++j)
      EXPECT_EQ(out[16 * i + j], expect[j])
          << "function " << j << " of a = 0x" << std::hex << a[i] << ", b = 0x"
          << b[i];
  }
}

/// Float-to-int conversion with PTX's saturation (NaN gives 0).
int32_t toInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 2147483647.0)
    return INT32_MAX;
  if (v <= -2147483648.0)
    return INT32_MIN;
  return static_cast<int32_t>(v);
}

std::vector<uint32_t> floatReference(float x, float y) {
  uint32_t h2 = static_cast<uint32_t>(refToHalf(x)) << 16 | refToHalf(y);
  uint32_t b2 = static_cast<uint32_t>(refToBFloat(x)) << 16 | refToBFloat(y);
  float x100 = x * 100.0f, y100 = y * 100.0f, x10 = x * 10.0f, y10 = y * 10.0f;
  return {
      f32Bits(std::fma(x, y, x)),
      static_cast<uint32_t>(toInt(std::nearbyint(x100))),
      static_cast<uint32_t>(toInt(std::trunc(y100))),
      static_cast<uint32_t>(toInt(std::floor(x10))) ^
          static_cast<uint32_t>(toInt(std::ceil(y10))),
      h2,
      b2,
      f32Bits(std::fmax(x, y) - std::fmin(x, y)),
      f32Bits(x / y),
  };
}

TEST(NvccKernelTest, FloatOpsBitExact) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  std::vector<float> a = {0.0f,
                          -0.0f,
                          2.5f,
                          -2.5f,
                          0.025f,
                          1e30f,
                          -1e30f,
                          1.0f + std::ldexp(1.0f, -11),
                          65520.0f,
                          std::ldexp(3.0f, -25),
                          1.0f + std::ldexp(1.0f, -8),
                          3e38f},
                     b = {1.0f,
                          3.0f,
                          -0.35f,
                          0.35f,
                          1e-30f,
                          7.0f,
                          -1e30f,
                          1.0f + std::ldexp(3.0f, -11),
                          -65519.0f,
                          std::ldexp(5.0f, -25),
                          1.0f + std::ldexp(3.0f, -8),
                          -3e38f};
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 40);
  while (a.size() < 300) {
    a.push_back(std::ldexp(unit(rng.engine), exponent(rng.engine)));
    float v = 0;
    while (v == 0)
      v = std::ldexp(unit(rng.engine), exponent(rng.engine));
    b.push_back(v);
  }
  const int n = static_cast<int>(a.size());
  std::vector<uint32_t> out(8 * n, 0xdeadbeef);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, a, "a")));
  ASSERT_TRUE(ok(registerVector(device, b, "b")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  ASSERT_TRUE(ok(device.launch(
      *module, "floatOps", launchConfig({(n + 127u) / 128u}, {128}),
      {sim::KernelArg::pointer(a.data()), sim::KernelArg::pointer(b.data()),
       sim::KernelArg::pointer(out.data()), sim::KernelArg::s32(n)})));
  for (int i = 0; i < n; ++i) {
    std::vector<uint32_t> expect = floatReference(a[i], b[i]);
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(out[8 * i + j], expect[j])
          << "function " << j << " of a = " << a[i] << ", b = " << b[i];
  }
}

/// ex2.approx.ftz 2 ulp, lg2.approx 2^-22.6 absolute near 1 and 2 ulp
/// otherwise, rcp.approx and sqrt.approx 1 ulp.
TEST(NvccKernelTest, ApproxOpsWithinDocumentedErrors) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  std::uniform_real_distribution<float> dist(-20.0f, 20.0f);
  std::vector<float> x = {0.0f, 1.0f, -1.0f, 0.5f, -19.5f, 19.5f};
  while (x.size() < 256)
    x.push_back(dist(rng.engine));
  const int n = static_cast<int>(x.size());
  std::vector<float> out(4 * n);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, x, "x")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  ASSERT_TRUE(ok(device.launch(
      *module, "approxOps", launchConfig({(n + 127u) / 128u}, {128}),
      {sim::KernelArg::pointer(x.data()), sim::KernelArg::pointer(out.data()),
       sim::KernelArg::s32(n)})));
  const double ulp = std::ldexp(1.0, -23);
  for (int i = 0; i < n; ++i) {
    SCOPED_TRACE("x = " + std::to_string(x[i]));
    double e = std::exp2(static_cast<double>(x[i]));
    double l = std::log2(static_cast<double>(std::fabs(x[i]) + 1.0f));
    double r = 1.0 / static_cast<double>(x[i] + 100.0f);
    double s = std::sqrt(static_cast<double>(std::fabs(x[i])));
    EXPECT_NEAR(out[4 * i], e, 2 * ulp * e) << "ex2";
    EXPECT_NEAR(out[4 * i + 1], l,
                std::max(std::ldexp(1.0, -22), 2 * ulp * std::fabs(l)))
        << "lg2";
    EXPECT_NEAR(out[4 * i + 2], r, ulp * std::fabs(r)) << "rcp";
    EXPECT_NEAR(out[4 * i + 3], s, ulp * s) << "sqrt";
  }
}

TEST(NvccKernelTest, WarpShuffles) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  std::uniform_int_distribution<int> dist(-1000000, 1000000);
  const int warps = 3;
  std::vector<int> x(32 * warps), out(192 * warps, 0x5a5a5a5a);
  for (int &v : x)
    v = dist(rng.engine);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, x, "x")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  ASSERT_TRUE(ok(device.launch(*module, "warpShuffles",
                               launchConfig({1}, {32u * warps}),
                               {sim::KernelArg::pointer(x.data()),
                                sim::KernelArg::pointer(out.data())})));
  // CUDA's semantics: a lane whose source is out of range (or, with a
  // width, in a later segment) keeps its own value.
  for (int w = 0; w < warps; ++w) {
    const int *v = &x[32 * w];
    int sum = 0;
    uint32_t ballot = 0;
    for (int l = 0; l < 32; ++l) {
      sum += v[l];
      ballot |= static_cast<uint32_t>(v[l] & 1) << l;
    }
    const int *o = &out[192 * w];
    for (int l = 0; l < 32; ++l) {
      SCOPED_TRACE("warp " + std::to_string(w) + " lane " + std::to_string(l));
      EXPECT_EQ(o[l], sum) << "xor-butterfly sum";
      EXPECT_EQ(o[32 + l], l >= 1 ? v[l - 1] : v[l]) << "shfl.up 1";
      EXPECT_EQ(o[64 + l], l + 3 < 32 ? v[l + 3] : v[l]) << "shfl.down 3";
      EXPECT_EQ(o[96 + l], v[(l * 7) % 32]) << "shfl.idx";
      EXPECT_EQ(static_cast<uint32_t>(o[128 + l]), ballot) << "ballot";
      EXPECT_EQ(o[160 + l], v[l ^ 5]) << "shfl.xor 5 width 8";
    }
  }
}

struct CopyCase {
  int n, valid;
  uint32_t block;
};

void PrintTo(const CopyCase &c, std::ostream *os) {
  *os << "n " << c.n << ", valid " << c.valid << ", block " << c.block;
}

class NvccCpAsyncTest : public ::testing::TestWithParam<CopyCase> {};

TEST_P(NvccCpAsyncTest, CopiesAndZeroFillsTheTail) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  const CopyCase &c = GetParam();
  FLASHC_SEEDED_RNG(rng);
  std::uniform_real_distribution<float> dist(-5.0f, 5.0f);
  // `in` holds exactly the valid floats: a read past them is out of bounds.
  std::vector<float> in(std::max(c.valid, 32)), out(c.n, -1.0f),
      out4(32, -1.0f);
  for (float &v : in)
    v = dist(rng.engine);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, in, "in")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  ASSERT_TRUE(ok(registerVector(device, out4, "out4")));
  ASSERT_TRUE(ok(device.launch(
      *module, "cpAsyncCopy", launchConfig({1}, {c.block}),
      {sim::KernelArg::pointer(in.data()), sim::KernelArg::pointer(out.data()),
       sim::KernelArg::pointer(out4.data()), sim::KernelArg::s32(c.n),
       sim::KernelArg::s32(c.valid)})));
  for (int i = 0; i < c.n; ++i)
    EXPECT_EQ(f32Bits(out[i]), f32Bits(i < c.valid ? in[i] : 0.0f))
        << "out[" << i << "]";
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(f32Bits(out4[i]), f32Bits(in[i])) << "out4[" << i << "]";
}

INSTANTIATE_TEST_SUITE_P(Nvcc, NvccCpAsyncTest,
                         ::testing::Values(CopyCase{1024, 1000, 128},
                                           CopyCase{512, 509, 64},
                                           CopyCase{256, 256, 128},
                                           CopyCase{64, 33, 32},
                                           CopyCase{128, 32, 96}));

struct GemmCase {
  int M, N, K;
  unsigned workers;
};

void PrintTo(const GemmCase &c, std::ostream *os) {
  *os << c.M << "x" << c.N << "x" << c.K << ", workers " << c.workers;
}

class NvccGemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(NvccGemmTest, MatchesFloat64Reference) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  const GemmCase &c = GetParam();
  FLASHC_SEEDED_RNG(rng);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<uint16_t> A(c.M * c.K), B(c.K * c.N);
  for (uint16_t &v : A)
    v = refToHalf(dist(rng.engine));
  for (uint16_t &v : B)
    v = refToHalf(dist(rng.engine));
  std::vector<float> C(c.M * c.N, NAN);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, A, "A")));
  ASSERT_TRUE(ok(registerVector(device, B, "B")));
  ASSERT_TRUE(ok(registerVector(device, C, "C")));
  sim::Dim3 grid{static_cast<uint32_t>(c.N / 64),
                 static_cast<uint32_t>(c.M / 64)};
  auto stats = device.launch(
      *module, "gemmF16", launchConfig(grid, {128}, c.workers),
      {sim::KernelArg::pointer(A.data()), sim::KernelArg::pointer(B.data()),
       sim::KernelArg::pointer(C.data()), sim::KernelArg::s32(c.M),
       sim::KernelArg::s32(c.N), sim::KernelArg::s32(c.K)});
  ASSERT_TRUE(ok(stats));
  EXPECT_GT(stats->threadInstructions, 0u);
  int bad = 0;
  for (int i = 0; i < c.M; ++i)
    for (int j = 0; j < c.N; ++j) {
      double ref = 0, mag = 0;
      for (int k = 0; k < c.K; ++k) {
        double p = refHalfValue(A[i * c.K + k]) * refHalfValue(B[k * c.N + j]);
        ref += p;
        mag += std::fabs(p);
      }
      double tol = std::ldexp(mag, -20);
      if (!(std::fabs(C[i * c.N + j] - ref) <= tol) && bad++ < 10)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << C[i * c.N + j]
                      << ", reference " << ref << ", tolerance " << tol;
    }
  EXPECT_EQ(bad, 0) << "elements outside the tolerance";
}

INSTANTIATE_TEST_SUITE_P(Nvcc, NvccGemmTest,
                         ::testing::Values(GemmCase{128, 128, 64, 1},
                                           GemmCase{128, 128, 64, 2},
                                           GemmCase{64, 192, 96, 2}));

/// The CTAs of a launch are independent: any number of workers gives the
/// same bits.
TEST(NvccKernelTest, GemmIsDeterministicAcrossWorkers) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  const int M = 128, N = 128, K = 32;
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::vector<uint16_t> A(M * K), B(K * N);
  for (uint16_t &v : A)
    v = refToHalf(dist(rng.engine));
  for (uint16_t &v : B)
    v = refToHalf(dist(rng.engine));
  std::vector<float> C1(M * N), C2(M * N);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, A, "A")));
  ASSERT_TRUE(ok(registerVector(device, B, "B")));
  ASSERT_TRUE(ok(registerVector(device, C1, "C1")));
  ASSERT_TRUE(ok(registerVector(device, C2, "C2")));
  for (auto [C, workers] : {std::pair{&C1, 1u}, std::pair{&C2, 2u}})
    ASSERT_TRUE(ok(device.launch(
        *module, "gemmF16", launchConfig({N / 64, M / 64}, {128}, workers),
        {sim::KernelArg::pointer(A.data()), sim::KernelArg::pointer(B.data()),
         sim::KernelArg::pointer(C->data()), sim::KernelArg::s32(M),
         sim::KernelArg::s32(N), sim::KernelArg::s32(K)})));
  for (int i = 0; i < M * N; ++i)
    ASSERT_EQ(f32Bits(C1[i]), f32Bits(C2[i])) << "element " << i;
}

} // namespace
