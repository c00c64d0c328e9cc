//===- SharedBankTest.cpp - Bank conflicts of ld/st.shared and cp.async ---===//
//
// The simulator groups the lanes' per-thread shared-memory accesses into
// the warp's requests and counts the wavefronts their bank conflicts add
// (lib/Simulator/SharedBanks.h). The model first, on address patterns
// whose wavefronts are known; then kernels whose requests and conflicts
// the launch statistics must show.
//
//===----------------------------------------------------------------------===//

#include "SharedBanks.h"
#include "SimTestUtils.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace flashc;
using namespace flashc::sim;
using namespace flashc::sim::test;
using flashc::sim::detail::SharedBankCounter;

namespace {

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

struct ModelCase {
  const char *name;
  /// Lane l accesses `size` bytes at address(l).
  uint32_t (*address)(uint32_t);
  uint8_t size;
  uint32_t lanes;
  uint32_t wavefronts, fewest;
};

class BankModelTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(BankModelTest, Wavefronts) {
  const ModelCase &c = GetParam();
  std::vector<uint32_t> addr;
  std::vector<uint8_t> size(c.lanes, c.size);
  for (uint32_t l = 0; l < c.lanes; ++l)
    addr.push_back(c.address(l));
  uint32_t fewest = 0;
  EXPECT_EQ(
      SharedBankCounter::wavefronts(c.lanes, addr.data(), size.data(), fewest),
      c.wavefronts);
  EXPECT_EQ(fewest, c.fewest);
}

INSTANTIATE_TEST_SUITE_P(
    SharedBanks, BankModelTest,
    ::testing::Values(
        // One word a lane, back to back: a bank each.
        ModelCase{"Words", [](uint32_t l) { return 4 * l; }, 4, 32, 1, 1},
        // Every other word: 16 banks hold two words each.
        ModelCase{"Stride8", [](uint32_t l) { return 8 * l; }, 4, 32, 2, 1},
        // Rows of 128 bytes: one bank holds every word.
        ModelCase{"Stride128", [](uint32_t l) { return 128 * l; }, 4, 32, 32,
                  1},
        // One word read by every lane: a broadcast.
        ModelCase{"Broadcast", [](uint32_t) { return 64u; }, 4, 32, 1, 1},
        // Lanes in pairs on one word: 16 distinct words in 16 banks.
        ModelCase{"Pairs", [](uint32_t l) { return 4 * (l / 2); }, 4, 32, 1, 1},
        // 16 bytes a lane, back to back: 512 bytes, 4 wavefronts at best.
        ModelCase{"Chunks", [](uint32_t l) { return 16 * l; }, 16, 32, 4, 4},
        // 16 bytes a lane in rows of 256 bytes: every chunk in banks 0-3.
        ModelCase{"ChunkStride256", [](uint32_t l) { return 256 * l; }, 16, 32,
                  32, 4},
        // An MMA accumulator's pairs (row l / 4, columns 2 (l % 4)) in rows
        // of 64 f32: the 8 rows share 8 banks.
        ModelCase{"AccumulatorRows64",
                  [](uint32_t l) { return 256 * (l / 4) + 8 * (l % 4); }, 8, 32,
                  8, 2},
        // ... with the columns XOR-swizzled by 8 (row mod 4), as
        // flash_tile.batch_reduce places them.
        ModelCase{"AccumulatorRows64Swizzled",
                  [](uint32_t l) {
                    return 256 * (l / 4) +
                           4 * ((2 * (l % 4)) ^ (8 * (l / 4 % 4)));
                  },
                  8, 32, 2, 2},
        // Rows of 80 f32 (an odd multiple of 16): rows two apart collide.
        ModelCase{"AccumulatorRows80",
                  [](uint32_t l) { return 320 * (l / 4) + 8 * (l % 4); }, 8, 32,
                  4, 2},
        ModelCase{"AccumulatorRows80Swizzled",
                  [](uint32_t l) {
                    return 320 * (l / 4) +
                           4 * ((2 * (l % 4)) ^ (8 * (l / 4 / 2 % 2)));
                  },
                  8, 32, 2, 2},
        // Eight lanes: fewer words than banks.
        ModelCase{"EightLanes", [](uint32_t l) { return 128 * l; }, 4, 8, 8,
                  1}),
    [](const ::testing::TestParamInfo<ModelCase> &info) {
      return std::string(info.param.name);
    });

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Launches `body` on one CTA of `threads` threads (`%r0` = %tid.x) with a
/// 64 KB shared array `tile` and a global array `in` of 4096 bytes.
Result<LaunchStats> launchBanks(const std::string &body, uint32_t threads) {
  std::vector<uint64_t> in(512, 0), out(1024, 0);
  return launchBody(body, in, out, threads,
                    ".shared .align 16 .b8 tile[65536];");
}

/// `%r1` = the shared address of lane `%r0`'s access at `stride` bytes.
std::string laneAddress(uint32_t stride) {
  return "  mov.u32 %r2, tile;\n"
         "  mul.lo.u32 %r1, %r0, " +
         std::to_string(stride) +
         ";\n"
         "  add.u32 %r1, %r1, %r2;\n";
}

struct KernelCase {
  const char *name;
  std::string body;
  uint32_t threads;
  uint64_t requests, extra;
};

class SharedBankKernelTest : public ::testing::TestWithParam<KernelCase> {};

TEST_P(SharedBankKernelTest, CountsRequestsAndConflicts) {
  const KernelCase &c = GetParam();
  Result<LaunchStats> stats = launchBanks(c.body, c.threads);
  ASSERT_TRUE(ok(stats)) << c.body;
  EXPECT_EQ(stats->sharedRequests, c.requests) << c.body;
  EXPECT_EQ(stats->sharedExtraWavefronts, c.extra) << c.body;
  // ldmatrix is counted apart.
  EXPECT_EQ(stats->ldmatrixMatrices, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    SharedBanks, SharedBankKernelTest,
    ::testing::Values(
        // A store and a load of one word a lane: two requests, no conflict.
        KernelCase{"Words",
                   laneAddress(4) + "  st.shared.u32 [%r1], %r0;\n"
                                    "  ld.shared.u32 %r3, [%r1];\n",
                   32, 2, 0},
        // Rows of 128 bytes: 31 wavefronts more each.
        KernelCase{"Stride128",
                   laneAddress(128) + "  st.shared.u32 [%r1], %r0;\n"
                                      "  ld.shared.u32 %r3, [%r1];\n",
                   32, 2, 62},
        // Two warps: a request each per instruction; 8-byte stride costs
        // one wavefront more.
        KernelCase{"TwoWarps", laneAddress(8) + "  st.shared.u32 [%r1], %r0;\n",
                   64, 2, 2},
        // A partial warp of 8 threads at 128-byte rows: 7 more.
        KernelCase{"PartialWarp",
                   laneAddress(128) + "  st.shared.u32 [%r1], %r0;\n", 8, 1, 7},
        // v4 stores of 16 bytes, back to back: 4 wavefronts, the fewest.
        KernelCase{"Vector16",
                   laneAddress(16) +
                       "  st.shared.v4.u32 [%r1], {%r0, %r0, %r0, %r0};\n",
                   32, 1, 0},
        // ... in rows of 64 bytes: pairs of lanes four apart share banks.
        KernelCase{"Vector16Stride64",
                   laneAddress(64) +
                       "  st.shared.v4.u32 [%r1], {%r0, %r0, %r0, %r0};\n",
                   32, 1, 12},
        // cp.async of 16 bytes a lane, at 256-byte rows (every chunk in
        // banks 0-3: 32 wavefronts for 4).
        KernelCase{"CpAsyncStride256",
                   laneAddress(256) + "  mul.wide.u32 %rd1, %r0, 16;\n"
                                      "  add.s64 %rd2, %rd15, %rd1;\n"
                                      "  cp.async.cg.shared.global [%r1], "
                                      "[%rd2], 16;\n"
                                      "  cp.async.wait_all;\n",
                   32, 1, 28},
        // A loop that runs the store three times: three requests.
        KernelCase{"Loop",
                   laneAddress(128) + "  mov.u32 %r4, 0;\n"
                                      "LOOP:\n"
                                      "  st.shared.u32 [%r1], %r4;\n"
                                      "  add.u32 %r4, %r4, 1;\n"
                                      "  setp.lt.u32 %p1, %r4, 3;\n"
                                      "  @%p1 bra LOOP;\n",
                   32, 3, 93},
        // Half the lanes predicated off: one request of 16 lanes at
        // 128-byte rows (15 more), not one per half.
        KernelCase{"Predicated",
                   laneAddress(128) + "  setp.lt.u32 %p1, %r0, 16;\n"
                                      "  @%p1 st.shared.u32 [%r1], %r0;\n",
                   32, 1, 15},
        // Lanes that diverge and run the store on different paths, then
        // a store after reconvergence: the lanes that took the longer path
        // executed more instructions, and still meet the others in one
        // request at each store (sites are counted, not instructions).
        KernelCase{"Diverged",
                   laneAddress(128) + "  setp.lt.u32 %p1, %r0, 16;\n"
                                      "  @%p1 bra SHORT;\n"
                                      "  add.u32 %r4, %r0, 1;\n"
                                      "  add.u32 %r4, %r4, 1;\n"
                                      "SHORT:\n"
                                      "  st.shared.u32 [%r1], %r0;\n"
                                      "  ld.shared.u32 %r3, [%r1];\n",
                   32, 2, 62},
        // Lanes whose logs differ: the first half stores in a branch the
        // second half skips; then every lane stores. A site's first
        // execution by each lane is one request: 16 lanes, then 32.
        KernelCase{"DivergedSites",
                   laneAddress(128) + "  setp.ge.u32 %p1, %r0, 16;\n"
                                      "  @%p1 bra JOIN;\n"
                                      "  st.shared.u32 [%r1+4], %r0;\n"
                                      "JOIN:\n"
                                      "  st.shared.u32 [%r1], %r0;\n",
                   32, 2, 15 + 31},
        // A warp whose every lane is predicated off issues nothing.
        KernelCase{"AllOff",
                   laneAddress(4) + "  setp.gt.u32 %p1, %r0, 100;\n"
                                    "  @%p1 st.shared.u32 [%r1], %r0;\n",
                   32, 0, 0},
        // Global accesses are not shared requests.
        KernelCase{"Global",
                   "  mul.wide.u32 %rd1, %r0, 8;\n"
                   "  add.s64 %rd2, %rd14, %rd1;\n"
                   "  st.global.u32 [%rd2], %r0;\n",
                   32, 0, 0}),
    [](const ::testing::TestParamInfo<KernelCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
