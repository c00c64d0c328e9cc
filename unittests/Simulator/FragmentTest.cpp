//===- FragmentTest.cpp - mma and ldmatrix layouts in nvcc's kernels ------===//
//
// The kernels mmaF16, mmaBF16, mmaF16K8 and ldmatrixLayouts of
// kernels/SimTestKernels.cu move fragments between memory and registers by
// the PTX ISA's layout tables, written in CUDA. Here they run with probe
// inputs whose values name their position (A[i][k] = K i + k with a B that
// selects one column of A per output column; distinct B rows selected by a
// one-hot A; distinct C with A = 0; random small integers), so a wrong
// register layout in the simulator shows as a wrong element in D. All
// values and sums are exact in f16, bf16 and f32, so the comparison is
// exact. Expected values are computed from the matrices, never from the
// simulator's layout.
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include "gtest/gtest.h"

#include <ostream>

using namespace flashc;
using namespace flashc::sim::test;

namespace {

struct MmaKernel {
  const char *kernel;
  int k;
  bool bf16;
};

struct FragmentCase {
  MmaKernel kernel;
  /// 0, 1: A probes (columns n + 8 * design of A); 2: B probe; 3: C probe;
  /// 4: random.
  int design;
};

void PrintTo(const FragmentCase &c, std::ostream *os) {
  *os << c.kernel.kernel << "/" << c.design;
}

class NvccMmaTest : public ::testing::TestWithParam<FragmentCase> {};

TEST_P(NvccMmaTest, ProbesMatchTheProduct) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  const MmaKernel &mk = GetParam().kernel;
  const int K = mk.k, design = GetParam().design;
  FLASHC_SEEDED_RNG(rng);
  std::uniform_int_distribution<int> small(-4, 4), wide(-64, 64);
  std::vector<double> A(16 * K, 0), B(K * 8, 0), C(16 * 8, 0);
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < 8; ++n) {
        double &a = A[i * K + k], &b = B[k * 8 + n], &c = C[i * 8 + n];
        if (design <= 1) {
          a = K * i + k;
          b = k == n + 8 * design;
        } else if (design == 2) {
          a = k == i % K;
          b = 8 * k + n + 1;
        } else if (design == 3) {
          b = 1;
          c = 8 * i + n + 0.5;
        } else {
          a = small(rng.engine);
          b = small(rng.engine);
          c = wide(rng.engine);
        }
      }
  auto bits = [&](double v) -> uint16_t {
    return mk.bf16 ? refToBFloat(v) : refToHalf(v);
  };
  std::vector<uint16_t> a16(16 * K), bt16(8 * K);
  std::vector<float> c32(128), d32(128, -1.0f);
  for (int i = 0; i < 16 * K; ++i)
    a16[i] = bits(A[i]);
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < 8; ++n)
      bt16[n * K + k] = bits(B[k * 8 + n]); // B transposed: [8][K]
  for (int i = 0; i < 128; ++i)
    c32[i] = static_cast<float>(C[i]);

  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, a16, "A")));
  ASSERT_TRUE(ok(registerVector(device, bt16, "Bt")));
  ASSERT_TRUE(ok(registerVector(device, c32, "C")));
  ASSERT_TRUE(ok(registerVector(device, d32, "D")));
  sim::LaunchConfig config;
  config.block = {32};
  ASSERT_TRUE(ok(device.launch(*module, mk.kernel, config,
                               {sim::KernelArg::pointer(a16.data()),
                                sim::KernelArg::pointer(bt16.data()),
                                sim::KernelArg::pointer(c32.data()),
                                sim::KernelArg::pointer(d32.data())})));
  for (int i = 0; i < 16; ++i)
    for (int n = 0; n < 8; ++n) {
      double d = C[i * 8 + n];
      for (int k = 0; k < K; ++k)
        d += A[i * K + k] * B[k * 8 + n];
      EXPECT_EQ(d32[i * 8 + n], static_cast<float>(d))
          << "D[" << i << "][" << n << "]";
    }
}

std::vector<FragmentCase> fragmentCases() {
  const MmaKernel kernels[] = {
      {"mmaF16", 16, false}, {"mmaBF16", 16, true}, {"mmaF16K8", 8, false}};
  std::vector<FragmentCase> cases;
  for (const MmaKernel &k : kernels)
    for (int design = 0; design < 5; ++design)
      if (!(k.k == 8 && design == 1))
        cases.push_back({k, design});
  return cases;
}

const char *const kDesignNames[] = {"AProbe0", "AProbe1", "BProbe", "CProbe",
                                    "Random"};

INSTANTIATE_TEST_SUITE_P(
    Nvcc, NvccMmaTest, ::testing::ValuesIn(fragmentCases()),
    [](const ::testing::TestParamInfo<FragmentCase> &info) {
      return std::string(info.param.kernel.kernel) +
             kDesignNames[info.param.design];
    });

/// ldmatrixLayouts: lane l gives the address of row l of a 32x8 tile, so
/// matrix i is rows 8i..8i+7; out[(variant * 32 + lane) * 4 + r] holds
/// register r of x1, x2, x4, x1.trans, x2.trans, x4.trans in turn, unused
/// registers 0xdeadbeef.
TEST(NvccLdmatrixTest, EveryVariantEveryLane) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  std::vector<uint16_t> m(256);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 8; ++c)
      m[r * 8 + c] = static_cast<uint16_t>(0x4000 + 0x100 * r + 0x10 * c);
  std::vector<uint32_t> out(6 * 32 * 4, 0);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, m, "m")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  sim::LaunchConfig config;
  config.block = {32};
  ASSERT_TRUE(ok(device.launch(*module, "ldmatrixLayouts", config,
                               {sim::KernelArg::pointer(m.data()),
                                sim::KernelArg::pointer(out.data())})));
  const int counts[] = {1, 2, 4, 1, 2, 4};
  for (int v = 0; v < 6; ++v) {
    bool trans = v >= 3;
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i) {
        auto elem = [&](int r, int c) -> uint32_t {
          return m[(8 * i + r) * 8 + c];
        };
        uint32_t expect = 0xdeadbeefu;
        if (i < counts[v])
          expect = trans ? elem(2 * (l % 4), l / 4) |
                               elem(2 * (l % 4) + 1, l / 4) << 16
                         : elem(l / 4, 2 * (l % 4)) |
                               elem(l / 4, 2 * (l % 4) + 1) << 16;
        EXPECT_EQ(out[(v * 32 + l) * 4 + i], expect)
            << "x" << counts[v] << (trans ? ".trans" : "") << " lane " << l
            << " r" << i;
      }
  }
}

} // namespace
