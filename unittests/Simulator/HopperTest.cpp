//===- HopperTest.cpp - mbarriers, TMA and warp specialisation in PTX -----===//
//
// The simulator's Hopper instructions as nvcc writes them: the sm_90a
// kernel tmaPipeline of kernels/SimTestKernelsSm90.cu streams a tensor
// through two shared stages with TMA loads, a producer warpgroup and a
// consumer warpgroup synchronised by mbarriers, and must sum its columns
// as the CPU does, with and without the 128-byte swizzle, rows past the
// tensor filled with zeros. Then the same kernel with each defect of the
// stage protocol planted must fail with the fault that names it.
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include "flashc/Simulator/TensorMap.h"

#include "gtest/gtest.h"

#include <cmath>
#include <vector>

using namespace flashc;
using namespace flashc::sim;
using namespace flashc::sim::test;

namespace {

/// The tensor map of a rows x cols f16 tensor (rows packed) at `data`,
/// boxes of boxRows x cols, as a kernel argument.
KernelArg f16Map(const void *data, uint64_t cols, uint64_t rows,
                 uint32_t boxRows, TensorMapSwizzle swizzle,
                 uint32_t boxCols = 0) {
  uint64_t dims[2] = {cols, rows}, strides[1] = {cols * 2};
  uint32_t box[2] = {boxCols ? boxCols : static_cast<uint32_t>(cols), boxRows},
           steps[2] = {1, 1};
  TensorMapTiledArgs args;
  args.dataType = static_cast<uint32_t>(TensorMapDataType::Float16);
  args.rank = 2;
  args.globalAddress = reinterpret_cast<uint64_t>(data);
  args.globalDim = dims;
  args.globalStrides = strides;
  args.boxDim = box;
  args.elementStrides = steps;
  args.swizzle = static_cast<uint32_t>(swizzle);
  alignas(128) uint8_t bytes[kTensorMapBytes];
  Status e = encodeTensorMapTiled(bytes, args);
  EXPECT_FALSE(e) << e.message();
  KernelArg arg;
  arg.bytes.assign(bytes, bytes + kTensorMapBytes);
  return arg;
}

/// The tensor map swizzle of rows of `bytes` (128, 64 or 32).
TensorMapSwizzle swizzleMode(int bytes) {
  return bytes == 128  ? TensorMapSwizzle::B128
         : bytes == 64 ? TensorMapSwizzle::B64
                       : TensorMapSwizzle::B32;
}

/// A rows x 64 f16 tensor of random values, the map of its 64 x 16 boxes,
/// and the launch of tmaPipeline over `blocks` boxes.
struct Pipeline {
  static constexpr uint32_t kCols = 64;
  uint32_t rows;
  std::vector<uint16_t> tensor;
  std::vector<float> out = std::vector<float>(128, -1.f);
  KernelArg map;

  Pipeline(std::mt19937 &rng, uint32_t rows, bool swizzled) : rows(rows) {
    std::uniform_real_distribution<double> dist(-2.0, 2.0);
    tensor.resize(size_t(rows) * kCols);
    for (uint16_t &h : tensor)
      h = refToHalf(dist(rng));
    map = f16Map(tensor.data(), kCols, rows, 16,
                 swizzled ? TensorMapSwizzle::B128 : TensorMapSwizzle::None);
  }

  Result<LaunchStats> run(const Module &module, int blocks, bool swizzled,
                          int defect, bool programmatic = false) {
    Device device;
    if (Status e = registerVector(device, tensor, "tensor"))
      return e;
    if (Status e = registerVector(device, out, "out"))
      return e;
    LaunchConfig config;
    config.block = {256};
    config.workers = 1;
    config.maxInstructionsPerThread = 1u << 22;
    config.programmatic = programmatic;
    return device.launch(
        module, "tmaPipeline", config,
        {map, KernelArg::pointer(out.data()), KernelArg::s32(blocks),
         KernelArg::s32(swizzled ? 1 : 0), KernelArg::s32(defect)});
  }

  /// What consumer thread t sums: column 16 (t / 32) + t % 16 over the
  /// rows r < 16 blocks with r % 2 == (t % 32) / 16.
  double expected(uint32_t t, int blocks) const {
    uint32_t col = 16 * (t / 32) + t % 16, parity = (t % 32) / 16;
    double sum = 0;
    for (uint32_t r = parity; r < uint32_t(blocks) * 16; r += 2)
      if (r < rows)
        sum += refHalfValue(tensor[size_t(r) * kCols + col]);
    return sum;
  }
};

TEST(HopperTest, TmaPipelineSumsTheTensor) {
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  for (bool swizzled : {false, true}) {
    SCOPED_TRACE(swizzled ? "128-byte swizzle" : "no swizzle");
    // 5 boxes of 16 rows over 71 rows: the last box has 7 rows in bounds.
    Pipeline p(rng.engine, 71, swizzled);
    auto stats = p.run(*module, 5, swizzled, 0);
    ASSERT_TRUE(ok(stats));
    for (uint32_t t = 0; t < 128; ++t) {
      // 40 f16 terms summed in f32 in row order: well within 1e-4.
      double want = p.expected(t, 5);
      EXPECT_NEAR(p.out[t], want, 1e-4 * (1 + std::fabs(want))) << "t " << t;
    }
  }
}

TEST(HopperTest, TmaPipelineDefectsAreCaught) {
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  struct Defect {
    int id;
    const char *what;
    const char *mention;
  };
  const Defect defects[] = {
      {1, "no expect_tx", "is in flight"},
      {2, "a wait on the wrong parity", "is in flight"},
      {3, "a read before the wait", "is in flight"},
      {4, "a refill before the release", "has not seen consumed"},
  };
  for (const Defect &d : defects) {
    SCOPED_TRACE(d.what);
    Pipeline p(rng.engine, 64, false);
    auto stats = p.run(*module, 4, false, d.id);
    ASSERT_FALSE(stats) << "the defect went unnoticed";
    const std::string &msg = stats.status().message();
    EXPECT_EQ(stats.status().code(), ErrorCode::Race) << msg;
    EXPECT_NE(msg.find(d.mention), std::string::npos) << msg;
    EXPECT_NE(msg.find("SimTestKernelsSm90.ptx:"), std::string::npos) << msg;
  }
}

/// wgmmaGemm of kernels/SimTestKernelsSm90.cu: A and B random f16, their
/// maps (128-byte swizzle, one 64 x 64 box), out = A B by a warpgroup.
struct Gemm {
  std::vector<uint16_t> a, b; // a: [m][k]; b: [n][k] or [k][n]
  std::vector<float> out = std::vector<float>(64 * 64, -7.f);
  KernelArg mapA, mapB;
  bool nMajor;

  static KernelArg map(std::vector<uint16_t> &tensor) {
    return f16Map(tensor.data(), 64, 64, 64, TensorMapSwizzle::B128);
  }

  Gemm(std::mt19937 &rng, bool nMajor) : nMajor(nMajor) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    a.resize(64 * 64);
    b.resize(64 * 64);
    for (uint16_t &h : a)
      h = refToHalf(dist(rng));
    for (uint16_t &h : b)
      h = refToHalf(dist(rng));
    mapA = map(a);
    mapB = map(b);
  }

  double bAt(uint32_t k, uint32_t n) const {
    return refHalfValue(nMajor ? b[k * 64 + n] : b[n * 64 + k]);
  }

  Result<LaunchStats> run(const Module &module, int mode) {
    Device device;
    if (Status e = registerVector(device, a, "a"))
      return e;
    if (Status e = registerVector(device, b, "b"))
      return e;
    if (Status e = registerVector(device, out, "out"))
      return e;
    LaunchConfig config;
    config.block = {128};
    config.workers = 1;
    config.maxInstructionsPerThread = 1u << 22;
    return device.launch(module, "wgmmaGemm", config,
                         {mapA, mapB, KernelArg::pointer(a.data()),
                          KernelArg::pointer(out.data()), KernelArg::s32(mode),
                          KernelArg::s32(128)});
  }
};

TEST(HopperTest, WgmmaMultipliesTmaLoadedTiles) {
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  struct Mode {
    int id;
    const char *what;
  };
  for (Mode mode :
       {Mode{0, "A and B from shared, B K-major"},
        Mode{1, "B N-major (transposed)"}, Mode{2, "A from registers"}}) {
    SCOPED_TRACE(mode.what);
    Gemm gemm(rng.engine, mode.id == 1);
    ASSERT_TRUE(ok(gemm.run(*module, mode.id)));
    for (uint32_t m = 0; m < 64; ++m)
      for (uint32_t n = 0; n < 64; ++n) {
        double want = 0;
        for (uint32_t k = 0; k < 64; ++k)
          want += refHalfValue(gemm.a[m * 64 + k]) * gemm.bAt(k, n);
        // Four k-steps each rounded to f32: a few f32 ulps of |sum| <= 64.
        ASSERT_NEAR(gemm.out[m * 64 + n], want, 1e-4)
            << "element (" << m << ", " << n << ")";
      }
  }
}

/// wgmmaGemm with the tiles in panels of the 64- and 32-byte
/// swizzles (TMA boxes of 32 or 16 columns, descriptors of those modes),
/// B K-major and N-major; out = A B.
TEST(HopperTest, WgmmaReadsThe64And32ByteSwizzles) {
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int swizzle : {64, 32}) {
    for (bool nMajor : {false, true}) {
      SCOPED_TRACE(std::to_string(swizzle) + "-byte swizzle, B " +
                   (nMajor ? "N-major" : "K-major"));
      std::vector<uint16_t> a(64 * 64), b(64 * 64);
      for (uint16_t &h : a)
        h = refToHalf(dist(rng.engine));
      for (uint16_t &h : b)
        h = refToHalf(dist(rng.engine));
      std::vector<float> out(64 * 64, -7.f);
      KernelArg mapA =
          f16Map(a.data(), 64, 64, 64, swizzleMode(swizzle), swizzle / 2);
      KernelArg mapB =
          f16Map(b.data(), 64, 64, 64, swizzleMode(swizzle), swizzle / 2);
      Device device;
      ASSERT_FALSE(registerVector(device, a, "a"));
      ASSERT_FALSE(registerVector(device, b, "b"));
      ASSERT_FALSE(registerVector(device, out, "out"));
      LaunchConfig config;
      config.block = {128};
      config.workers = 1;
      config.maxInstructionsPerThread = 1u << 22;
      Result<LaunchStats> stats = device.launch(
          *module, "wgmmaGemm", config,
          {mapA, mapB, KernelArg::pointer(a.data()),
           KernelArg::pointer(out.data()), KernelArg::s32(nMajor ? 1 : 0),
           KernelArg::s32(swizzle)});
      ASSERT_TRUE(ok(stats));
      EXPECT_EQ(stats->tensorLoads, 2u * (128 / swizzle));
      for (uint32_t m = 0; m < 64; ++m)
        for (uint32_t n = 0; n < 64; ++n) {
          double want = 0;
          for (uint32_t k = 0; k < 64; ++k)
            want += refHalfValue(a[m * 64 + k]) *
                    refHalfValue(nMajor ? b[k * 64 + n] : b[n * 64 + k]);
          ASSERT_NEAR(out[m * 64 + n], want, 1e-4)
              << "element (" << m << ", " << n << ")";
        }
    }
  }
}

TEST(HopperTest, ReadingAWgmmaAccumulatorBeforeItsWaitIsARace) {
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  Gemm gemm(rng.engine, false);
  auto stats = gemm.run(*module, 3);
  ASSERT_FALSE(stats);
  const std::string &msg = stats.status().message();
  EXPECT_EQ(stats.status().code(), ErrorCode::Race) << msg;
  EXPECT_NE(msg.find("still in flight (no wgmma.wait_group has retired it)"),
            std::string::npos)
      << msg;
}

/// tmaStore: rows [8, 24) of a 20 x 64 tensor get the tile (rows 20-23
/// fall outside and are skipped); the rest keep their poison.
Result<LaunchStats> runTmaStore(const Module &module,
                                std::vector<uint16_t> &out, int defect) {
  out.assign(20 * 64, 0x7c01); // a NaN no value of the tile equals
  KernelArg map = f16Map(out.data(), 64, 20, 16, TensorMapSwizzle::B128);
  Device device;
  if (Status e = registerVector(device, out, "out"))
    return e;
  LaunchConfig config;
  config.block = {128};
  config.workers = 1;
  return device.launch(module, "tmaStore", config,
                       {map, KernelArg::s32(128), KernelArg::s32(defect)});
}

/// The 20 x 64 tensor a tmaStore kernel wrote: rows 8 - 19 hold the tile's
/// first 12 rows, (64 r + c) % 2048; rows 0 - 7 keep their poison.
void expectStoredTile(const std::vector<uint16_t> &out) {
  for (uint32_t r = 0; r < 20; ++r)
    for (uint32_t c = 0; c < 64; ++c) {
      uint16_t want = 0x7c01;
      if (r >= 8)
        want = refToHalf(double((64 * (r - 8) + c) % 2048));
      ASSERT_EQ(out[r * 64 + c], want) << "row " << r << " column " << c;
    }
}

TEST(HopperTest, TmaStoreWritesTheBox) {
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  std::vector<uint16_t> out;
  ASSERT_TRUE(ok(runTmaStore(*module, out, 0)));
  expectStoredTile(out);
}

/// tmaStore with the tile in panels of each swizzle, one TMA store a
/// panel: the same tensor.
TEST(HopperTest, TmaStoreReadsEverySwizzle) {
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  for (int swizzle : {128, 64, 32}) {
    SCOPED_TRACE(std::to_string(swizzle) + "-byte swizzle");
    std::vector<uint16_t> out(20 * 64, 0x7c01);
    KernelArg map =
        f16Map(out.data(), 64, 20, 16, swizzleMode(swizzle), swizzle / 2);
    Device device;
    ASSERT_FALSE(registerVector(device, out, "out"));
    LaunchConfig config;
    config.block = {128};
    config.workers = 1;
    ASSERT_TRUE(
        ok(device.launch(*module, "tmaStore", config,
                         {map, KernelArg::s32(swizzle), KernelArg::s32(0)})));
    expectStoredTile(out);
  }
}

TEST(HopperTest, TmaStoreDefectsAreCaught) {
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  std::vector<uint16_t> out;
  auto unfenced = runTmaStore(*module, out, 1);
  ASSERT_FALSE(unfenced);
  EXPECT_EQ(unfenced.status().code(), ErrorCode::Race);
  EXPECT_NE(unfenced.status().message().find(
                "with no fence.proxy.async between that write and this read "
                "through the asynchronous proxy"),
            std::string::npos)
      << unfenced.status().message();
  auto early = runTmaStore(*module, out, 2);
  ASSERT_FALSE(early);
  EXPECT_EQ(early.status().code(), ErrorCode::Race);
  EXPECT_NE(early.status().message().find(
                "still reads (no cp.async.bulk.wait_group has retired it)"),
            std::string::npos)
      << early.status().message();
}

TEST(HopperTest, StmatrixStoresTheFragmentLayout) {
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  std::vector<uint32_t> in(32 * 4);
  for (uint32_t &v : in)
    v = rng.engine();
  std::vector<uint16_t> out(512, 0);
  Device device;
  ASSERT_TRUE(ok(registerVector(device, in, "in")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  LaunchConfig config;
  config.block = {32};
  config.workers = 1;
  ASSERT_TRUE(ok(device.launch(
      *module, "stmatrixLayouts", config,
      {KernelArg::pointer(in.data()), KernelArg::pointer(out.data())})));
  // Matrix i's element (row, col): plain, lane 4 row + col / 2 holds it in
  // register i (the low half for even columns); transposed, lane
  // 4 col + row / 2 (the low half for even rows).
  for (uint32_t i = 0; i < 4; ++i)
    for (uint32_t row = 0; row < 8; ++row)
      for (uint32_t col = 0; col < 8; ++col) {
        uint32_t plain = in[4 * (4 * row + col / 2) + i];
        uint32_t trans = in[4 * (4 * col + row / 2) + i];
        uint16_t wantPlain = static_cast<uint16_t>(plain >> (16 * (col % 2)));
        uint16_t wantTrans = static_cast<uint16_t>(trans >> (16 * (row % 2)));
        size_t at = (8 * i + row) * 8 + col;
        EXPECT_EQ(out[at], wantPlain)
            << "matrix " << i << " (" << row << ", " << col << ")";
        EXPECT_EQ(out[256 + at], wantTrans)
            << "transposed matrix " << i << " (" << row << ", " << col << ")";
      }
}

//===----------------------------------------------------------------------===//
// Hand-written PTX
//===----------------------------------------------------------------------===//

/// Stores the 64-bit register `value` to output slot %tid.x.
std::string storeSlot(const std::string &value) {
  return "  mul.wide.u32 %rd12, %r0, 8;\n"
         "  add.s64 %rd13, %rd14, %rd12;\n"
         "  st.global.u64 [%rd13], " +
         value + ";\n";
}

/// Thread 0 initialises the mbarrier `bar` for `count` arrivals; every
/// thread arrives, waits for phase 0 and stores 1 + its lane's phase token.
std::string arriveAndWait(unsigned count) {
  return "  mov.u32 %r1, bar;\n"
         "  setp.ne.u32 %p1, %r0, 0;\n"
         "  @%p1 bra INITED;\n"
         "  mbarrier.init.shared::cta.b64 [%r1], " +
         std::to_string(count) +
         ";\n"
         "INITED:\n"
         "  bar.sync 0;\n"
         "  mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [%r1];\n"
         "  {\n"
         "  .reg .pred done;\n"
         "  WAIT:\n"
         "  mbarrier.try_wait.parity.shared::cta.b64 done, [%r1], 0;\n"
         "  @!done bra WAIT;\n"
         "  }\n"
         "  add.u64 %rd2, %rd1, 1;\n" +
         storeSlot("%rd2");
}

const char *const kBarDecl = ".shared .align 8 .b64 bar;";

TEST(HopperTest, MbarrierPhasesReleaseWaiters) {
  // 64 threads, 64 arrivals expected: every thread passes phase 0, and its
  // arrival belonged to phase 0.
  auto out = runBody(arriveAndWait(64), {}, 64, 64, kBarDecl);
  ASSERT_TRUE(ok(out));
  for (uint64_t v : *out)
    EXPECT_EQ(v, 1u);
}

TEST(HopperTest, AWaitThatCannotCompleteIsADeadlock) {
  // One arrival of the two the phase expects: the wait never completes.
  auto out = runBody(arriveAndWait(2), {}, 1, 1, kBarDecl);
  ASSERT_FALSE(out);
  const std::string &msg = out.status().message();
  EXPECT_EQ(out.status().code(), ErrorCode::Deadlock) << msg;
  EXPECT_NE(msg.find("1 thread(s) wait at "
                     "'mbarrier.try_wait.parity.shared::cta.b64'"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("for the phase of parity 0 of the mbarrier at shared "
                     "address 0x0 (phase 0: 1 of 2 arrivals and 0 "
                     "transaction bytes pending)"),
            std::string::npos)
      << msg;
}

TEST(HopperTest, MbarrierMisuseFaults) {
  struct Case {
    const char *name;
    std::string body;
    const char *mention;
  };
  const Case cases[] = {
      {"an arrival on no mbarrier",
       "  mov.u32 %r1, bar;\n"
       "  mbarrier.arrive.shared.b64 %rd1, [%r1];\n",
       "holds no mbarrier (mbarrier.init was not executed there)"},
      {"a plain load of an mbarrier",
       "  mov.u32 %r1, bar;\n"
       "  mbarrier.init.shared.b64 [%r1], 1;\n"
       "  ld.shared.u64 %rd1, [%r1];\n",
       "which holds an mbarrier"},
      {"a count of zero",
       "  mov.u32 %r1, bar;\n"
       "  mbarrier.init.shared.b64 [%r1], 0;\n",
       "is not between 1 and 2^20 - 1"},
      {"more arrivals than expected",
       "  mov.u32 %r1, bar;\n"
       "  mbarrier.init.shared.b64 [%r1], 1;\n"
       "  mbarrier.expect_tx.shared.b64 [%r1], 16;\n"
       "  mbarrier.arrive.shared.b64 %rd1, [%r1];\n"
       "  mbarrier.arrive.shared.b64 %rd1, [%r1];\n",
       "more arrivals than the phase expects"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    auto out = runBody(c.body, {}, 1, 1, kBarDecl);
    ASSERT_FALSE(out);
    EXPECT_EQ(out.status().code(), ErrorCode::Trap) << out.status().message();
    EXPECT_NE(out.status().message().find(c.mention), std::string::npos)
        << out.status().message();
  }
}

TEST(HopperTest, NamedBarrierArrivalsReleaseTheWaiters) {
  // Warp 0 writes shared memory and arrives at barrier 1 (64 threads);
  // warp 1 waits there and reads what warp 0 wrote. Twice, so the
  // barrier is reused.
  std::string body = "  mov.u32 %r1, buf;\n"
                     "  and.b32 %r2, %r0, 31;\n"
                     "  shl.b32 %r3, %r2, 2;\n"
                     "  add.u32 %r4, %r1, %r3;\n"
                     "  mov.u32 %r7, 0;\n"
                     "  setp.ge.u32 %p1, %r0, 32;\n"
                     "  @%p1 bra CONSUMER;\n"
                     "  st.shared.u32 [%r4], %r0;\n"
                     "  bar.arrive 1, 64;\n"
                     "  bar.sync 2, 64;\n"
                     "  add.u32 %r5, %r0, 100;\n"
                     "  st.shared.u32 [%r4], %r5;\n"
                     "  bar.arrive 1, 64;\n"
                     "  bra.uni DONE;\n"
                     "CONSUMER:\n"
                     "  bar.sync 1, 64;\n"
                     "  ld.shared.u32 %r6, [%r4];\n"
                     "  bar.arrive 2, 64;\n"
                     "  bar.sync 1, 64;\n"
                     "  ld.shared.u32 %r7, [%r4];\n"
                     "  add.u32 %r7, %r7, %r6;\n"
                     "DONE:\n"
                     "  cvt.u64.u32 %rd1, %r7;\n" +
                     storeSlot("%rd1");
  auto out = runBody(body, {}, 64, 64, ".shared .align 4 .b8 buf[128];");
  ASSERT_TRUE(ok(out));
  for (uint32_t t = 32; t < 64; ++t)
    EXPECT_EQ((*out)[t], 2 * (t - 32) + 100) << "thread " << t;
}

TEST(HopperTest, ArrivalsNoWaitMetAtExitAreReported) {
  // Warp 0 arrives at barrier 3 (64 threads) and warp 1 never waits there:
  // the CTA exits with the barrier holding 32 arrivals, which the next use
  // of the barrier would count. With warp 1 waiting, it is clean.
  auto body = [](bool wait) {
    return std::string("  setp.ge.u32 %p1, %r0, 32;\n"
                       "  @%p1 bra CONSUMER;\n"
                       "  bar.arrive 3, 64;\n"
                       "  bra.uni DONE;\n"
                       "CONSUMER:\n") +
           (wait ? "  bar.sync 3, 64;\n" : "") +
           "DONE:\n"
           "  cvt.u64.u32 %rd1, %r0;\n" +
           storeSlot("%rd1");
  };
  ASSERT_TRUE(ok(runBody(body(true), {}, 64, 64)));
  auto out = runBody(body(false), {}, 64, 64);
  ASSERT_FALSE(ok(out));
  EXPECT_EQ(out.status().code(), ErrorCode::Deadlock);
  EXPECT_NE(out.status().message().find(
                "the CTA exited with 32 thread(s) arrived at named barrier 3 "
                "(of 64) by bar.arrive, which no bar.sync met"),
            std::string::npos)
      << out.status().message();
}

TEST(HopperTest, GridDependencyControlIsMetInALaunchOrder) {
  // A device runs its launches one after the other: griddepcontrol.wait
  // (the grids this one depends on have ended) is met at once, and
  // launch_dependents changes nothing; the kernel runs on.
  auto out = runBody("  griddepcontrol.launch_dependents;\n"
                     "  griddepcontrol.wait;\n"
                     "  cvt.u64.u32 %rd1, %r0;\n" +
                         storeSlot("%rd1"),
                     {}, 64, 64);
  ASSERT_TRUE(ok(out)) << out.status().message();
  for (uint64_t i = 0; i < 64; ++i)
    EXPECT_EQ((*out)[i], i);
}

TEST(HopperTest, ATensorCopyBeforeTheGridDependencyWaitIsARace) {
  // tmaPipeline never executes griddepcontrol.wait: launched as a
  // programmatic dependent launch, its producer's first TMA load may read
  // the tensor before the kernel launched before it has written it.
  FLASHC_REQUIRE_NVCC_SM90_KERNELS(module);
  FLASHC_SEEDED_RNG(rng);
  Pipeline p(rng.engine, 64, true);
  ASSERT_TRUE(ok(p.run(*module, 4, true, 0)));
  auto stats = p.run(*module, 4, true, 0, /*programmatic=*/true);
  ASSERT_FALSE(stats) << "the race was missed";
  const std::string &msg = stats.status().message();
  EXPECT_EQ(stats.status().code(), ErrorCode::Race) << msg;
  EXPECT_NE(msg.find("before griddepcontrol.wait"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cp.async.bulk.tensor"), std::string::npos) << msg;
}

TEST(HopperTest, NamedBarrierThreadCountsMustAgree) {
  // Warp 0 arrives at (or waits at) barrier 3 for 96 threads and warps 1
  // and 2 wait there for 96: clean. Warps 1 and 2 waiting for 64 instead,
  // or arriving with another count, is a trap naming both counts.
  auto body = [](const char *first, const char *second) {
    return std::string("  setp.ge.u32 %p1, %r0, 32;\n"
                       "  @%p1 bra SECOND;\n  ") +
           first +
           "\n"
           "  bra.uni DONE;\n"
           "SECOND:\n  " +
           second +
           "\n"
           "DONE:\n"
           "  cvt.u64.u32 %rd1, %r0;\n" +
           storeSlot("%rd1");
  };
  ASSERT_TRUE(
      ok(runBody(body("bar.arrive 3, 96;", "bar.sync 3, 96;"), {}, 96, 96)));
  ASSERT_TRUE(
      ok(runBody(body("bar.sync 3, 96;", "bar.sync 3, 96;"), {}, 96, 96)));
  struct Case {
    const char *first, *second, *message;
  } cases[] = {
      {"bar.arrive 3, 96;", "bar.sync 3, 64;",
       "named barrier 3 is waited for with 64 threads, but 32 thread(s) "
       "arrived at it by bar.arrive with 96"},
      {"bar.sync 3, 96;", "bar.sync 3, 64;",
       "named barrier 3 is waited for with 64 threads, but thread (0,0,0) "
       "waits with 96"},
      {"bar.arrive 3, 96;", "bar.arrive 3, 64;\n  bar.sync 3, 64;",
       "bar.arrive at named barrier 3 with 64 threads, but 32 thread(s) "
       "arrived at it with 96"}};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.first) + " / " + c.second);
    auto out = runBody(body(c.first, c.second), {}, 96, 96);
    ASSERT_FALSE(ok(out));
    EXPECT_EQ(out.status().code(), ErrorCode::Trap);
    EXPECT_NE(out.status().message().find(c.message), std::string::npos)
        << out.status().message();
  }
}

TEST(HopperTest, WgmmaReadsCpAsyncCopiesOnlyAcrossAProxyFence) {
  // Each of 128 threads copies 64 bytes of the input into `buf` by
  // cp.async (8 KiB: 64 rows of 128 bytes), waits, fences the generic
  // proxy's writes for the asynchronous one (or not), and the warpgroup
  // multiplies the rows by descriptors of the 128-byte swizzle: a copy
  // that lands is a plain write of its thread, which wgmma sees only
  // across fence.proxy.async.
  auto body = [](bool fence) {
    std::string s = "  mov.u32 %r1, buf;\n"
                    "  shl.b32 %r2, %r0, 6;\n"
                    "  add.u32 %r3, %r1, %r2;\n"
                    "  cvt.u64.u32 %rd1, %r2;\n"
                    "  add.s64 %rd2, %rd15, %rd1;\n";
    for (int i = 0; i < 4; ++i)
      s += "  add.u32 %r4, %r3, " + std::to_string(16 * i) +
           ";\n"
           "  add.s64 %rd3, %rd2, " +
           std::to_string(16 * i) +
           ";\n"
           "  cp.async.cg.shared.global [%r4], [%rd3], 16;\n";
    s += "  cp.async.wait_all;\n";
    if (fence)
      s += "  fence.proxy.async.shared::cta;\n";
    s += "  bar.sync 0;\n"
         "  cvt.u64.u32 %rd4, %r1;\n"
         "  shr.u64 %rd4, %rd4, 4;\n"
         "  and.b64 %rd4, %rd4, 16383;\n"
         "  or.b64 %rd5, %rd4, 4611686293305360384;\n"
         "  wgmma.fence.sync.aligned;\n"
         "  mov.f32 %f0, 0f00000000;\n"
         "  mov.f32 %f1, 0f00000000;\n"
         "  mov.f32 %f2, 0f00000000;\n"
         "  mov.f32 %f3, 0f00000000;\n"
         "  {\n"
         "  .reg .pred p;\n"
         "  setp.ne.b32 p, 1, 0;\n"
         "  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
         "{%f0, %f1, %f2, %f3}, %rd5, %rd5, p, 1, 1, 0, 0;\n"
         "  }\n"
         "  wgmma.commit_group.sync.aligned;\n"
         "  wgmma.wait_group.sync.aligned 0;\n"
         "  mov.b32 %r5, %f0;\n"
         "  cvt.u64.u32 %rd6, %r5;\n" +
         storeSlot("%rd6");
    return s;
  };
  // f16 1.0 everywhere: every product sums 16 ones.
  std::vector<uint64_t> ones(1024, 0x3c003c003c003c00ull);
  const char *decl = ".shared .align 1024 .b8 buf[8192];";
  auto fenced = runBody(body(true), ones, 128, 128, decl);
  ASSERT_TRUE(ok(fenced));
  for (uint32_t t = 0; t < 128; ++t)
    EXPECT_EQ((*fenced)[t], 0x41800000u) << "thread " << t; // 16.0f
  auto unfenced = runBody(body(false), ones, 128, 128, decl);
  ASSERT_FALSE(unfenced);
  EXPECT_EQ(unfenced.status().code(), ErrorCode::Race);
  EXPECT_NE(unfenced.status().message().find(
                "with no fence.proxy.async between that write and this read "
                "through the asynchronous proxy"),
            std::string::npos)
      << unfenced.status().message();
}

TEST(HopperTest, AWgmmasOperandsAreReadUntilItsWaitRetiresIt) {
  // Each of 128 threads stores 64 bytes of ones into `buf` (64 rows of 128
  // bytes), fences them for the asynchronous proxy, and the warpgroup
  // multiplies by descriptors of it; thread 0 then overwrites the first
  // 16 bytes (B's first rows, which every warp's wgmma reads): after the
  // wgmma.wait_group that retires the multiply and a barrier (the operands
  // are read, by every warp), or between its issue and that wait (a race:
  // the tensor cores may still be reading them).
  auto body = [](bool early) {
    std::string overwrite = "  setp.eq.u32 %p1, %r0, 0;\n"
                            "  @%p1 st.shared.v2.u64 [%r1], {%rd9, %rd9};\n";
    std::string s = "  mov.u32 %r1, buf;\n"
                    "  shl.b32 %r2, %r0, 6;\n"
                    "  add.u32 %r3, %r1, %r2;\n"
                    "  mov.b64 %rd9, 4323521613979991040;\n";
    for (int i = 0; i < 4; ++i)
      s += "  st.shared.v2.u64 [%r3+" + std::to_string(16 * i) +
           "], {%rd9, %rd9};\n";
    s += "  fence.proxy.async.shared::cta;\n"
         "  bar.sync 0;\n"
         "  cvt.u64.u32 %rd4, %r1;\n"
         "  shr.u64 %rd4, %rd4, 4;\n"
         "  and.b64 %rd4, %rd4, 16383;\n"
         "  or.b64 %rd5, %rd4, 4611686293305360384;\n"
         "  wgmma.fence.sync.aligned;\n"
         "  mov.f32 %f0, 0f00000000;\n"
         "  mov.f32 %f1, 0f00000000;\n"
         "  mov.f32 %f2, 0f00000000;\n"
         "  mov.f32 %f3, 0f00000000;\n"
         "  {\n"
         "  .reg .pred p;\n"
         "  setp.ne.b32 p, 1, 0;\n"
         "  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
         "{%f0, %f1, %f2, %f3}, %rd5, %rd5, p, 1, 1, 0, 0;\n"
         "  }\n"
         "  wgmma.commit_group.sync.aligned;\n";
    if (early)
      s += overwrite;
    s += "  wgmma.wait_group.sync.aligned 0;\n";
    if (!early)
      s += "  bar.sync 0;\n" + overwrite;
    s += "  mov.b32 %r5, %f0;\n"
         "  cvt.u64.u32 %rd6, %r5;\n" +
         storeSlot("%rd6");
    return s;
  };
  const char *decl = ".shared .align 1024 .b8 buf[8192];";
  auto after = runBody(body(false), {}, 128, 128, decl);
  ASSERT_TRUE(ok(after));
  for (uint32_t t = 0; t < 128; ++t)
    EXPECT_EQ((*after)[t], 0x41800000u) << "thread " << t; // 16.0f
  auto during = runBody(body(true), {}, 128, 128, decl);
  ASSERT_FALSE(during);
  EXPECT_EQ(during.status().code(), ErrorCode::Race);
  EXPECT_NE(during.status().message().find(
                "still reads (no wgmma.wait_group has retired it)"),
            std::string::npos)
      << during.status().message();
}

TEST(HopperTest, ElectSyncElectsTheLowestMemberLane) {
  // Lanes 4-31 of each warp elect with the mask of themselves: lane 4 is
  // elected. Each stores 2 * elected lane + (whether it is the one).
  std::string body = "  and.b32 %r2, %r0, 31;\n"
                     "  setp.lt.u32 %p1, %r2, 4;\n"
                     "  @%p1 bra SKIP;\n"
                     "  elect.sync %r3|%p2, 0xfffffff0;\n"
                     "  selp.u32 %r4, 1, 0, %p2;\n"
                     "  shl.b32 %r5, %r3, 1;\n"
                     "  add.u32 %r6, %r5, %r4;\n"
                     "  cvt.u64.u32 %rd1, %r6;\n" +
                     storeSlot("%rd1") + "SKIP:\n";
  auto out = runBody(body, {}, 64, 64);
  ASSERT_TRUE(ok(out));
  for (uint32_t t = 0; t < 64; ++t) {
    uint32_t lane = t % 32;
    uint64_t want = lane < 4 ? 0 : 2 * 4 + (lane == 4);
    EXPECT_EQ((*out)[t], want) << "thread " << t;
  }
}

TEST(HopperTest, SetmaxnregChecksWarpgroupsAndTheBudget) {
  // Two warpgroups: one gives registers up, one takes them.
  std::string split = "  setp.lt.u32 %p1, %r0, 128;\n"
                      "  @%p1 bra PRODUCER;\n"
                      "  setmaxnreg.inc.sync.aligned.u32 232;\n"
                      "  bra.uni DONE;\n"
                      "PRODUCER:\n"
                      "  setmaxnreg.dec.sync.aligned.u32 40;\n"
                      "DONE:\n";
  EXPECT_TRUE(ok(runBody(split, {}, 1, 256)));
  // Three warpgroups of 232: 89088 registers.
  auto over = runBody("  setmaxnreg.inc.sync.aligned.u32 232;\n", {}, 1, 384);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.status().code(), ErrorCode::Trap);
  EXPECT_NE(over.status().message().find(
                "takes the CTA's warpgroups to 89088 registers, more than "
                "the SM's 65536"),
            std::string::npos)
      << over.status().message();
  // Warps of one warpgroup that disagree.
  auto differ = runBody("  setp.lt.u32 %p1, %r0, 32;\n"
                        "  @%p1 bra FIRST;\n"
                        "  setmaxnreg.dec.sync.aligned.u32 48;\n"
                        "  bra.uni DONE;\n"
                        "FIRST:\n"
                        "  setmaxnreg.dec.sync.aligned.u32 40;\n"
                        "DONE:\n",
                        {}, 1, 128);
  ASSERT_FALSE(differ);
  EXPECT_NE(differ.status().message().find(
                "the warps of warpgroup 0 execute different setmaxnreg"),
            std::string::npos)
      << differ.status().message();
  // A count that is not a multiple of 8 does not parse.
  auto bad = runBody("  setmaxnreg.inc.sync.aligned.u32 250;\n", {}, 1, 128);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().code(), ErrorCode::Parse);
  EXPECT_NE(bad.status().message().find("not a multiple of 8 from 24 to 256"),
            std::string::npos)
      << bad.status().message();
}

TEST(HopperTest, ParametersHaveGenericAddresses) {
  // A __grid_constant__ parameter's address: cvta.param, then a generic
  // load, reads what ld.param reads.
  std::string body = "  mov.b64 %rd1, in;\n"
                     "  cvta.param.u64 %rd2, %rd1;\n"
                     "  ld.u64 %rd3, [%rd2];\n"
                     "  sub.s64 %rd4, %rd3, %rd15;\n" +
                     storeSlot("%rd4");
  auto out = runBody(body, {}, 1, 1);
  ASSERT_TRUE(ok(out));
  EXPECT_EQ((*out)[0], 0u);
  // They are read-only.
  auto store = runBody("  mov.b64 %rd1, in;\n"
                       "  cvta.param.u64 %rd2, %rd1;\n"
                       "  st.u64 [%rd2], %rd1;\n",
                       {}, 1, 1);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.status().code(), ErrorCode::OutOfBounds);
}

TEST(HopperTest, ATensorCopyNeedsAMap) {
  // The `in` slots (256 bytes of 7s) hold no tensor map; the copy reads
  // 128 bytes at a 64-byte aligned address inside them, or 8 bytes past.
  auto copy = [](unsigned offset) {
    std::string body = "  mov.u32 %r1, bar;\n"
                       "  mbarrier.init.shared.b64 [%r1], 1;\n"
                       "  mov.u32 %r2, tile;\n"
                       "  mov.u32 %r3, 0;\n"
                       "  add.s64 %rd5, %rd15, 63;\n"
                       "  and.b64 %rd5, %rd5, -64;\n"
                       "  add.s64 %rd5, %rd5, " +
                       std::to_string(offset) +
                       ";\n"
                       "  cp.async.bulk.tensor.2d.shared::cluster.global.tile"
                       ".mbarrier::complete_tx::bytes [%r2], [%rd5, {%r3, "
                       "%r3}], [%r1];\n";
    return runBody(body, std::vector<uint64_t>(32, 7), 1, 1,
                   ".shared .align 8 .b64 bar; .shared .align 128 .b8 "
                   "tile[4096];");
  };
  auto garbage = copy(0);
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.status().code(), ErrorCode::Trap)
      << garbage.status().message();
  EXPECT_NE(garbage.status().message().find("no simulator map signature"),
            std::string::npos)
      << garbage.status().message();
  auto misaligned = copy(8);
  ASSERT_FALSE(misaligned);
  EXPECT_EQ(misaligned.status().code(), ErrorCode::Misaligned)
      << misaligned.status().message();
}

} // namespace
