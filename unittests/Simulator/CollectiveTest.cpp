//===- CollectiveTest.cpp - Warp and CTA collectives in hand-written PTX --===//
//
// shfl.sync in every mode with the clamp and segment operand, vote.sync,
// redux.sync, bar.sync (named barriers with counts included),
// bar.warp.sync and atomics, then the register layouts of mma.sync and
// ldmatrix checked lane by lane: each lane loads its fragment registers
// from memory, runs the instruction and stores its result registers, and
// the test builds the fragments and the expected registers from the
// tables of the PTX ISA (mma m16n8k16/m16n8k8 A, B, C/D; ldmatrix row
// addresses from lanes 8i..8i+7, lane l receiving row l/4, columns
// 2(l%4) and 2(l%4)+1, transposed by .trans).
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <ostream>

using namespace flashc;
using namespace flashc::sim::test;

namespace {

//===----------------------------------------------------------------------===//
// shfl.sync
//===----------------------------------------------------------------------===//

enum class Mode { Up, Down, Bfly, Idx };

struct ShflCase {
  const char *name;
  Mode mode;
  /// b and c; b < 0: b is (7 * lane + 3) mod 32, different in every lane.
  int b;
  uint32_t c;
};

void PrintTo(const ShflCase &c, std::ostream *os) { *os << c.name; }

/// The source lane and predicate of `shfl.sync` by the PTX ISA's definition:
/// c holds the clamp value in bits 0-4 and the segment mask in bits 8-12.
std::pair<uint32_t, bool> shflSource(Mode mode, uint32_t lane, uint32_t b,
                                     uint32_t c) {
  int32_t bval = b & 31, cval = c & 31, segmask = (c >> 8) & 31;
  int32_t l = static_cast<int32_t>(lane);
  int32_t maxLane = (l & segmask) | (cval & ~segmask);
  int32_t minLane = l & segmask;
  int32_t j = l;
  bool p = false;
  switch (mode) {
  case Mode::Up:
    j = l - bval;
    p = j >= maxLane;
    break;
  case Mode::Down:
    j = l + bval;
    p = j <= maxLane;
    break;
  case Mode::Bfly:
    j = l ^ bval;
    p = j <= maxLane;
    break;
  case Mode::Idx:
    j = minLane | (bval & ~segmask);
    p = j <= maxLane;
    break;
  }
  return {static_cast<uint32_t>(p ? j : l), p};
}

class ShflTest : public ::testing::TestWithParam<ShflCase> {};

TEST_P(ShflTest, EveryLane) {
  const ShflCase &c = GetParam();
  const char *modes[] = {"up", "down", "bfly", "idx"};
  std::string b = c.b < 0 ? "%r4" : std::to_string(c.b);
  std::string body = "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd15, %rd1;\n"
                     "  ld.global.u32 %r1, [%rd2];\n"
                     "  mad.lo.u32 %r4, %r0, 7, 3;\n"
                     "  and.b32 %r4, %r4, 31;\n"
                     "  shfl.sync." +
                     std::string(modes[static_cast<int>(c.mode)]) +
                     ".b32 %r2|%p1, %r1, " + b + ", " + std::to_string(c.c) +
                     ", 0xffffffff;\n"
                     "  selp.u32 %r3, 1, 0, %p1;\n"
                     "  mul.wide.u32 %rd3, %r0, 16;\n"
                     "  add.s64 %rd4, %rd14, %rd3;\n"
                     "  st.global.u32 [%rd4], %r2;\n"
                     "  st.global.u32 [%rd4+8], %r3;\n";
  std::vector<uint64_t> in(32);
  for (uint32_t l = 0; l < 32; ++l)
    in[l] = 0x1000 + 3 * l;
  auto out = runBody(body, in, 64, 32);
  ASSERT_TRUE(ok(out)) << body;
  for (uint32_t l = 0; l < 32; ++l) {
    uint32_t bl = c.b < 0 ? (7 * l + 3) % 32 : static_cast<uint32_t>(c.b);
    auto [src, p] = shflSource(c.mode, l, bl, c.c);
    EXPECT_EQ((*out)[2 * l], in[src]) << "lane " << l;
    EXPECT_EQ((*out)[2 * l + 1], p ? 1u : 0u) << "predicate of lane " << l;
  }
}

// CUDA's width-w forms pass c = ((32 - w) << 8) for up and
// ((32 - w) << 8) | 31 for the others.
const ShflCase kShflCases[] = {
    {"Up1", Mode::Up, 1, 0},
    {"Up3", Mode::Up, 3, 0},
    {"UpClampAt4", Mode::Up, 2, 4},
    {"UpSegments8", Mode::Up, 2, 0x1800},
    {"Down3", Mode::Down, 3, 0x1f},
    {"DownClampAt15", Mode::Down, 1, 0x0f},
    {"DownSegments8", Mode::Down, 2, 0x181f},
    {"Bfly1", Mode::Bfly, 1, 0x1f},
    {"Bfly16", Mode::Bfly, 16, 0x1f},
    {"Bfly5Segments8", Mode::Bfly, 5, 0x181f},
    {"Bfly8AcrossSegments8", Mode::Bfly, 8, 0x181f},
    {"BflyClampAt20", Mode::Bfly, 12, 20},
    {"Idx5", Mode::Idx, 5, 0x1f},
    {"Idx37WrapsTo5", Mode::Idx, 37, 0x1f},
    {"Idx3Segments8", Mode::Idx, 3, 0x181f},
    {"IdxClampAt10", Mode::Idx, 17, 10},
    {"IdxPerLane", Mode::Idx, -1, 0x1f},
    {"IdxPerLaneSegments4", Mode::Idx, -1, 0x1c1f},
    {"DownPerLane", Mode::Down, -1, 0x1f},
};

INSTANTIATE_TEST_SUITE_P(Collective, ShflTest, ::testing::ValuesIn(kShflCases),
                         [](const ::testing::TestParamInfo<ShflCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(ShflTest, PartialMask) {
  // Lanes 16-31 leave; lanes 0-15 exchange with mask 0xffff.
  std::string body = "  setp.ge.u32 %p2, %r0, 16;\n"
                     "  @%p2 bra DONE;\n"
                     "  add.u32 %r1, %r0, 100;\n"
                     "  shfl.sync.bfly.b32 %r2, %r1, 1, 0x1f, 0xffff;\n"
                     "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd14, %rd1;\n"
                     "  st.global.u32 [%rd2], %r2;\n"
                     "DONE:\n";
  auto out = runBody(body, {}, 32, 32);
  ASSERT_TRUE(ok(out));
  for (uint32_t l = 0; l < 32; ++l)
    EXPECT_EQ((*out)[l], l < 16 ? 100 + (l ^ 1) : 0) << "lane " << l;
}

//===----------------------------------------------------------------------===//
// vote.sync, redux.sync
//===----------------------------------------------------------------------===//

class VoteTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(VoteTest, BallotAllAnyUni) {
  uint32_t pattern = GetParam();
  std::string body = "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd15, %rd1;\n"
                     "  ld.global.u32 %r1, [%rd2];\n"
                     "  setp.ne.u32 %p1, %r1, 0;\n"
                     "  vote.sync.ballot.b32 %r2, %p1, 0xffffffff;\n"
                     "  vote.sync.all.pred %p2, %p1, 0xffffffff;\n"
                     "  vote.sync.any.pred %p3, %p1, 0xffffffff;\n"
                     "  vote.sync.uni.pred %p4, %p1, 0xffffffff;\n"
                     "  vote.sync.ballot.b32 %r3, !%p1, 0xffffffff;\n"
                     "  selp.u32 %r4, 1, 0, %p2;\n"
                     "  selp.u32 %r5, 1, 0, %p3;\n"
                     "  selp.u32 %r6, 1, 0, %p4;\n"
                     "  mul.wide.u32 %rd3, %r0, 40;\n"
                     "  add.s64 %rd4, %rd14, %rd3;\n"
                     "  st.global.u32 [%rd4], %r2;\n"
                     "  st.global.u32 [%rd4+8], %r4;\n"
                     "  st.global.u32 [%rd4+16], %r5;\n"
                     "  st.global.u32 [%rd4+24], %r6;\n"
                     "  st.global.u32 [%rd4+32], %r3;\n";
  std::vector<uint64_t> in(32);
  for (uint32_t l = 0; l < 32; ++l)
    in[l] = (pattern >> l) & 1 ? 1 + l : 0;
  auto out = runBody(body, in, 5 * 32, 32);
  ASSERT_TRUE(ok(out));
  for (uint32_t l = 0; l < 32; ++l) {
    SCOPED_TRACE("lane " + std::to_string(l));
    EXPECT_EQ((*out)[5 * l], pattern);
    EXPECT_EQ((*out)[5 * l + 1], pattern == 0xffffffffu ? 1u : 0u);
    EXPECT_EQ((*out)[5 * l + 2], pattern != 0 ? 1u : 0u);
    EXPECT_EQ((*out)[5 * l + 3],
              pattern == 0 || pattern == 0xffffffffu ? 1u : 0u);
    EXPECT_EQ((*out)[5 * l + 4], ~pattern);
  }
}

INSTANTIATE_TEST_SUITE_P(Collective, VoteTest,
                         ::testing::Values(0xffffffffu, 0u, 0xaaaaaaaau, 1u,
                                           0x80000000u, 0x7fffffffu));

TEST(VoteTest, PartialMask) {
  // Only lanes 0-15 vote; their predicates are all true except lane 0's in
  // the second vote.
  std::string body = "  setp.ge.u32 %p5, %r0, 16;\n"
                     "  @%p5 bra DONE;\n"
                     "  setp.ne.u32 %p1, %r0, 99;\n"
                     "  setp.ne.u32 %p6, %r0, 0;\n"
                     "  vote.sync.ballot.b32 %r2, %p1, 0xffff;\n"
                     "  vote.sync.all.pred %p2, %p1, 0xffff;\n"
                     "  vote.sync.all.pred %p3, %p6, 0xffff;\n"
                     "  vote.sync.any.pred %p4, %p6, 0xffff;\n"
                     "  selp.u32 %r3, 1, 0, %p2;\n"
                     "  selp.u32 %r4, 1, 0, %p3;\n"
                     "  selp.u32 %r5, 1, 0, %p4;\n"
                     "  mul.wide.u32 %rd1, %r0, 32;\n"
                     "  add.s64 %rd2, %rd14, %rd1;\n"
                     "  st.global.u32 [%rd2], %r2;\n"
                     "  st.global.u32 [%rd2+8], %r3;\n"
                     "  st.global.u32 [%rd2+16], %r4;\n"
                     "  st.global.u32 [%rd2+24], %r5;\n"
                     "DONE:\n";
  auto out = runBody(body, {}, 4 * 32, 32);
  ASSERT_TRUE(ok(out));
  for (uint32_t l = 0; l < 16; ++l) {
    SCOPED_TRACE("lane " + std::to_string(l));
    EXPECT_EQ((*out)[4 * l], 0xffffu);
    EXPECT_EQ((*out)[4 * l + 1], 1u);
    EXPECT_EQ((*out)[4 * l + 2], 0u);
    EXPECT_EQ((*out)[4 * l + 3], 1u);
  }
}

TEST(ReduxTest, EveryOperation) {
  std::string body = "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd15, %rd1;\n"
                     "  ld.global.u32 %r1, [%rd2];\n"
                     "  redux.sync.add.s32 %r2, %r1, 0xffffffff;\n"
                     "  redux.sync.min.s32 %r3, %r1, 0xffffffff;\n"
                     "  redux.sync.max.u32 %r4, %r1, 0xffffffff;\n"
                     "  redux.sync.and.b32 %r5, %r1, 0xffffffff;\n"
                     "  redux.sync.or.b32 %r6, %r1, 0xffffffff;\n"
                     "  redux.sync.xor.b32 %r7, %r1, 0xffffffff;\n"
                     "  mul.wide.u32 %rd3, %r0, 48;\n"
                     "  add.s64 %rd4, %rd14, %rd3;\n"
                     "  st.global.u32 [%rd4], %r2;\n"
                     "  st.global.u32 [%rd4+8], %r3;\n"
                     "  st.global.u32 [%rd4+16], %r4;\n"
                     "  st.global.u32 [%rd4+24], %r5;\n"
                     "  st.global.u32 [%rd4+32], %r6;\n"
                     "  st.global.u32 [%rd4+40], %r7;\n";
  FLASHC_SEEDED_RNG(rng);
  std::uniform_int_distribution<int32_t> dist(-100000, 100000);
  std::vector<uint64_t> in(32);
  int32_t sum = 0, mn = INT32_MAX;
  uint32_t mx = 0, andAll = ~0u, orAll = 0, xorAll = 0;
  for (uint64_t &v : in) {
    int32_t x = dist(rng.engine);
    v = static_cast<uint32_t>(x);
    sum += x;
    mn = std::min(mn, x);
    mx = std::max(mx, static_cast<uint32_t>(x));
    andAll &= static_cast<uint32_t>(x);
    orAll |= static_cast<uint32_t>(x);
    xorAll ^= static_cast<uint32_t>(x);
  }
  auto out = runBody(body, in, 6 * 32, 32);
  ASSERT_TRUE(ok(out));
  for (uint32_t l = 0; l < 32; ++l) {
    SCOPED_TRACE("lane " + std::to_string(l));
    EXPECT_EQ((*out)[6 * l], static_cast<uint32_t>(sum));
    EXPECT_EQ((*out)[6 * l + 1], static_cast<uint32_t>(mn));
    EXPECT_EQ((*out)[6 * l + 2], mx);
    EXPECT_EQ((*out)[6 * l + 3], andAll);
    EXPECT_EQ((*out)[6 * l + 4], orAll);
    EXPECT_EQ((*out)[6 * l + 5], xorAll);
  }
}

//===----------------------------------------------------------------------===//
// Barriers and atomics
//===----------------------------------------------------------------------===//

TEST(BarrierTest, RotateThroughSharedMemory) {
  // Three rounds of: write own slot, barrier, read the neighbour's, barrier.
  // The second barrier orders each round's reads before the next writes.
  std::string body = "  mov.u32 %r1, s;\n"
                     "  shl.b32 %r2, %r0, 2;\n"
                     "  add.u32 %r3, %r1, %r2;\n"
                     "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd15, %rd1;\n"
                     "  ld.global.u32 %r4, [%rd2];\n"
                     "  add.u32 %r5, %r0, 1;\n"
                     "  and.b32 %r5, %r5, 127;\n"
                     "  shl.b32 %r5, %r5, 2;\n"
                     "  add.u32 %r5, %r1, %r5;\n"
                     "  mov.u32 %r9, 0;\n"
                     "LOOP:\n"
                     "  st.shared.u32 [%r3], %r4;\n"
                     "  bar.sync 0;\n"
                     "  ld.shared.u32 %r4, [%r5];\n"
                     "  add.u32 %r4, %r4, 1;\n"
                     "  barrier.sync.aligned 0;\n"
                     "  add.u32 %r9, %r9, 1;\n"
                     "  setp.lt.u32 %p1, %r9, 3;\n"
                     "  @%p1 bra LOOP;\n"
                     "  add.s64 %rd3, %rd14, %rd1;\n"
                     "  st.global.u32 [%rd3], %r4;\n";
  std::vector<uint64_t> in(128);
  for (uint32_t t = 0; t < 128; ++t)
    in[t] = 1000 * t;
  auto out = runBody(body, in, 128, 128, ".shared .align 4 .b32 s[128];");
  ASSERT_TRUE(ok(out));
  for (uint32_t t = 0; t < 128; ++t)
    EXPECT_EQ((*out)[t], 1000 * ((t + 3) % 128) + 3) << "thread " << t;
}

TEST(BarrierTest, NamedBarriersWithCounts) {
  // Warps 0-1 synchronise on barrier 1, warps 2-3 on barrier 2, each with
  // 64 threads; each thread reads the slot of its partner in the other warp
  // of its pair.
  std::string body = "  mov.u32 %r1, s;\n"
                     "  shl.b32 %r2, %r0, 2;\n"
                     "  add.u32 %r3, %r1, %r2;\n"
                     "  add.u32 %r4, %r0, 7;\n"
                     "  st.shared.u32 [%r3], %r4;\n"
                     "  setp.lt.u32 %p1, %r0, 64;\n"
                     "  @%p1 bar.sync 1, 64;\n"
                     "  @!%p1 bar.sync 2, 64;\n"
                     "  xor.b32 %r5, %r0, 32;\n"
                     "  shl.b32 %r5, %r5, 2;\n"
                     "  add.u32 %r5, %r1, %r5;\n"
                     "  ld.shared.u32 %r6, [%r5];\n"
                     "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd14, %rd1;\n"
                     "  st.global.u32 [%rd2], %r6;\n";
  auto out = runBody(body, {}, 128, 128, ".shared .align 4 .b32 s[128];");
  ASSERT_TRUE(ok(out));
  for (uint32_t t = 0; t < 128; ++t)
    EXPECT_EQ((*out)[t], (t ^ 32) + 7) << "thread " << t;
}

TEST(BarrierTest, WarpSyncOrdersLanesOfAWarp) {
  std::string body = "  mov.u32 %r1, s;\n"
                     "  shl.b32 %r2, %r0, 2;\n"
                     "  add.u32 %r3, %r1, %r2;\n"
                     "  st.shared.u32 [%r3], %r0;\n"
                     "  bar.warp.sync 0xffffffff;\n"
                     "  xor.b32 %r5, %r0, 1;\n"
                     "  shl.b32 %r5, %r5, 2;\n"
                     "  add.u32 %r5, %r1, %r5;\n"
                     "  ld.shared.u32 %r6, [%r5];\n"
                     "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd14, %rd1;\n"
                     "  st.global.u32 [%rd2], %r6;\n";
  auto out = runBody(body, {}, 32, 32, ".shared .align 4 .b32 s[32];");
  ASSERT_TRUE(ok(out));
  for (uint32_t t = 0; t < 32; ++t)
    EXPECT_EQ((*out)[t], t ^ 1) << "lane " << t;
}

TEST(AtomicTest, SharedAndGlobal) {
  // Every thread adds 1 to a shared counter, 0.5 to a global float, takes
  // the maximum of its index and swaps with compare-and-swap.
  std::string body =
      "  setp.eq.u32 %p1, %r0, 0;\n"
      "  @%p1 st.shared.u32 [cnt], 0;\n"
      "  bar.sync 0;\n"
      "  atom.shared.add.u32 %r1, [cnt], 1;\n"
      "  atom.global.add.f32 %f1, [%rd14+8], 0f3F000000;\n"
      "  atom.global.max.s32 %r2, [%rd14+16], %r0;\n"
      "  atom.global.cas.b32 %r3, [%rd14+24], 0, 77;\n"
      "  red.global.add.u32 [%rd14+32], 2;\n"
      "  bar.sync 0;\n"
      "  @%p1 ld.shared.u32 %r4, [cnt];\n"
      "  @%p1 st.global.u32 [%rd14], %r4;\n"
      // Each thread's old counter value, to check they are all distinct.
      "  mul.wide.u32 %rd1, %r0, 8;\n"
      "  add.s64 %rd2, %rd14, %rd1;\n"
      "  st.global.u32 [%rd2+40], %r1;\n";
  auto out = runBody(body, {}, 5 + 128, 128, ".shared .align 4 .b32 cnt;");
  ASSERT_TRUE(ok(out));
  EXPECT_EQ((*out)[0], 128u);
  EXPECT_EQ(bitsF32(static_cast<uint32_t>((*out)[1])), 64.0f);
  EXPECT_EQ((*out)[2], 127u);
  EXPECT_EQ((*out)[3], 77u);
  EXPECT_EQ((*out)[4], 256u);
  std::vector<uint64_t> olds(out->begin() + 5, out->end());
  std::sort(olds.begin(), olds.end());
  for (uint32_t i = 0; i < 128; ++i)
    EXPECT_EQ(olds[i], i);
}

//===----------------------------------------------------------------------===//
// mma.sync fragments, lane by lane
//===----------------------------------------------------------------------===//

struct MmaShape {
  const char *name;
  const char *opcode;
  int k;
  bool bf16;
};

const MmaShape kMmaShapes[] = {
    {"F16K16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16, false},
    {"BF16K16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 16,
     true},
    {"F16K8", "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 8, false},
};

/// A, B and C of one mma problem (values exact in f16, bf16 and f32).
struct MmaProblem {
  double A[16][16] = {}, B[16][8] = {}, C[16][8] = {};
};

enum class Design { AProbe0, AProbe1, BProbe, CProbe, Random };
const char *const kDesignNames[] = {"AProbe0", "AProbe1", "BProbe", "CProbe",
                                    "Random"};

/// AProbeS: A[i][k] = K i + k and B selects column n + 8S of A, so D[i][n]
/// names the A element that reached it. BProbe: A selects row i mod K of B,
/// whose elements are distinct. CProbe: A = 0, so D = C. Random: small
/// integers.
MmaProblem makeProblem(Design design, int k, std::mt19937 &rng) {
  MmaProblem p;
  std::uniform_int_distribution<int> small(-4, 4), wide(-64, 64);
  for (int i = 0; i < 16; ++i)
    for (int kk = 0; kk < k; ++kk)
      for (int n = 0; n < 8; ++n) {
        switch (design) {
        case Design::AProbe0:
        case Design::AProbe1: {
          int shift = design == Design::AProbe1 ? 8 : 0;
          p.A[i][kk] = k * i + kk;
          p.B[kk][n] = kk == n + shift;
          break;
        }
        case Design::BProbe:
          p.A[i][kk] = kk == i % k;
          p.B[kk][n] = 8 * kk + n + 1;
          break;
        case Design::CProbe:
          p.B[kk][n] = 1;
          p.C[i][n] = 8 * i + n + 0.25;
          break;
        case Design::Random:
          p.A[i][kk] = small(rng);
          p.B[kk][n] = small(rng);
          p.C[i][n] = wide(rng);
          break;
        }
      }
  return p;
}

struct MmaCase {
  MmaShape shape;
  Design design;
};

void PrintTo(const MmaCase &c, std::ostream *os) {
  *os << c.shape.name << "/" << kDesignNames[static_cast<int>(c.design)];
}

class MmaLayoutTest : public ::testing::TestWithParam<MmaCase> {};

TEST_P(MmaLayoutTest, EveryLaneMatchesTheIsaTables) {
  const MmaShape &shape = GetParam().shape;
  const int K = shape.k;
  FLASHC_SEEDED_RNG(rng);
  MmaProblem p = makeProblem(GetParam().design, K, rng.engine);
  auto bits = [&](double v) -> uint32_t {
    return shape.bf16 ? refToBFloat(v) : refToHalf(v);
  };
  auto pack = [&](double lo, double hi) -> uint64_t {
    return bits(lo) | (static_cast<uint64_t>(bits(hi)) << 16);
  };
  // Slots of lane l: a0-a3 at 10l, b0-b1 at 10l + 4, c0-c3 at 10l + 6.
  std::vector<uint64_t> in(320);
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, t = l % 4;
    uint64_t *s = &in[10 * l];
    s[0] = pack(p.A[g][2 * t], p.A[g][2 * t + 1]);
    s[1] = pack(p.A[g + 8][2 * t], p.A[g + 8][2 * t + 1]);
    s[4] = pack(p.B[2 * t][g], p.B[2 * t + 1][g]);
    if (K == 16) {
      s[2] = pack(p.A[g][2 * t + 8], p.A[g][2 * t + 9]);
      s[3] = pack(p.A[g + 8][2 * t + 8], p.A[g + 8][2 * t + 9]);
      s[5] = pack(p.B[2 * t + 8][g], p.B[2 * t + 9][g]);
    }
    s[6] = f32Bits(static_cast<float>(p.C[g][2 * t]));
    s[7] = f32Bits(static_cast<float>(p.C[g][2 * t + 1]));
    s[8] = f32Bits(static_cast<float>(p.C[g + 8][2 * t]));
    s[9] = f32Bits(static_cast<float>(p.C[g + 8][2 * t + 1]));
  }
  std::string operands =
      K == 16 ? "{%r2, %r3, %r4, %r5}, {%r6, %r7}" : "{%r2, %r3}, {%r6}";
  std::string body = "  mul.wide.u32 %rd1, %r0, 80;\n"
                     "  add.s64 %rd2, %rd15, %rd1;\n"
                     "  ld.global.b32 %r2, [%rd2];\n"
                     "  ld.global.b32 %r3, [%rd2+8];\n"
                     "  ld.global.b32 %r4, [%rd2+16];\n"
                     "  ld.global.b32 %r5, [%rd2+24];\n"
                     "  ld.global.b32 %r6, [%rd2+32];\n"
                     "  ld.global.b32 %r7, [%rd2+40];\n"
                     "  ld.global.f32 %f1, [%rd2+48];\n"
                     "  ld.global.f32 %f2, [%rd2+56];\n"
                     "  ld.global.f32 %f3, [%rd2+64];\n"
                     "  ld.global.f32 %f4, [%rd2+72];\n"
                     "  " +
                     std::string(shape.opcode) + " {%f5, %f6, %f7, %f8}, " +
                     operands +
                     ", {%f1, %f2, %f3, %f4};\n"
                     "  mul.wide.u32 %rd3, %r0, 32;\n"
                     "  add.s64 %rd4, %rd14, %rd3;\n"
                     "  st.global.f32 [%rd4], %f5;\n"
                     "  st.global.f32 [%rd4+8], %f6;\n"
                     "  st.global.f32 [%rd4+16], %f7;\n"
                     "  st.global.f32 [%rd4+24], %f8;\n";
  auto out = runBody(body, in, 128, 32);
  ASSERT_TRUE(ok(out)) << body;
  for (int l = 0; l < 32; ++l) {
    int g = l / 4, t = l % 4;
    for (int r = 0; r < 4; ++r) {
      int row = g + (r >= 2 ? 8 : 0), col = 2 * t + (r % 2);
      double d = p.C[row][col];
      for (int kk = 0; kk < K; ++kk)
        d += p.A[row][kk] * p.B[kk][col];
      float got = bitsF32(static_cast<uint32_t>((*out)[4 * l + r]));
      EXPECT_EQ(got, static_cast<float>(d))
          << "lane " << l << " d" << r << " = D[" << row << "][" << col << "]";
    }
  }
}

std::vector<MmaCase> mmaCases() {
  std::vector<MmaCase> cases;
  for (const MmaShape &s : kMmaShapes)
    for (int d = 0; d < 5; ++d)
      if (!(s.k == 8 && static_cast<Design>(d) == Design::AProbe1))
        cases.push_back({s, static_cast<Design>(d)});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    Collective, MmaLayoutTest, ::testing::ValuesIn(mmaCases()),
    [](const ::testing::TestParamInfo<MmaCase> &info) {
      return std::string(info.param.shape.name) +
             kDesignNames[static_cast<int>(info.param.design)];
    });

TEST(MmaTest, AccumulatesInF32) {
  // Products whose sum needs more than f16 precision: the result keeps it.
  std::string body = "  mov.b32 %r2, 0x3c013c01;\n" // A: 1 + 2^-10 everywhere
                     "  mov.b32 %r3, 0x3c013c01;\n"
                     "  mov.b32 %r4, 0x3c013c01;\n"
                     "  mov.b32 %r5, 0x3c013c01;\n"
                     "  mov.b32 %r6, 0x3c013c01;\n" // B: 1 + 2^-10
                     "  mov.b32 %r7, 0x3c013c01;\n"
                     "  mov.f32 %f1, 0f00000000;\n"
                     "  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%f5, %f6, %f7, %f8}, {%r2, %r3, %r4, %r5}, {%r6, %r7}, "
                     "{%f1, %f1, %f1, %f1};\n"
                     "  mul.wide.u32 %rd3, %r0, 8;\n"
                     "  add.s64 %rd4, %rd14, %rd3;\n"
                     "  st.global.f32 [%rd4], %f5;\n";
  auto out = runBody(body, {}, 32, 32);
  ASSERT_TRUE(ok(out));
  double e = 1.0 + std::ldexp(1.0, -10);
  for (int l = 0; l < 32; ++l)
    EXPECT_EQ(bitsF32(static_cast<uint32_t>((*out)[l])),
              static_cast<float>(16 * e * e))
        << "lane " << l;
}

//===----------------------------------------------------------------------===//
// ldmatrix, lane by lane
//===----------------------------------------------------------------------===//

struct LdmatrixCase {
  int num;
  bool trans;
};

void PrintTo(const LdmatrixCase &c, std::ostream *os) {
  *os << "x" << c.num << (c.trans ? ".trans" : "");
}

class LdmatrixLayoutTest : public ::testing::TestWithParam<LdmatrixCase> {};

/// The tile's element (row r, column c).
uint16_t tileValue(int r, int c) { return 0x1000 + 0x100 * r + c; }

TEST_P(LdmatrixLayoutTest, RowAddressesComeFromLanes) {
  const LdmatrixCase &c = GetParam();
  // Lane l names tile row perm(l) = (5l + 3) mod 32, so matrix i's row r is
  // tile row perm(8i + r).
  auto perm = [](int l) { return (5 * l + 3) % 32; };
  std::vector<uint64_t> in(64);
  for (int r = 0; r < 32; ++r)
    for (int j = 0; j < 2; ++j)
      for (int e = 0; e < 4; ++e)
        in[2 * r + j] |= static_cast<uint64_t>(tileValue(r, 4 * j + e))
                         << (16 * e);
  std::string dsts = "{%r6";
  for (int i = 1; i < c.num; ++i)
    dsts += ", %r" + std::to_string(6 + i);
  dsts += "}";
  std::string body = "  mul.wide.u32 %rd1, %r0, 16;\n"
                     "  add.s64 %rd2, %rd15, %rd1;\n"
                     "  ld.global.v2.u64 {%rd3, %rd4}, [%rd2];\n"
                     "  mov.u32 %r1, tile;\n"
                     "  shl.b32 %r2, %r0, 4;\n"
                     "  add.u32 %r3, %r1, %r2;\n"
                     "  st.shared.v2.u64 [%r3], {%rd3, %rd4};\n"
                     "  bar.sync 0;\n"
                     "  mad.lo.u32 %r4, %r0, 5, 3;\n"
                     "  and.b32 %r4, %r4, 31;\n"
                     "  shl.b32 %r4, %r4, 4;\n"
                     "  add.u32 %r5, %r1, %r4;\n"
                     "  ldmatrix.sync.aligned.m8n8.x" +
                     std::to_string(c.num) + (c.trans ? ".trans" : "") +
                     ".shared.b16 " + dsts +
                     ", [%r5];\n"
                     "  mul.wide.u32 %rd5, %r0, 32;\n"
                     "  add.s64 %rd6, %rd14, %rd5;\n";
  for (int i = 0; i < c.num; ++i)
    body += "  st.global.u32 [%rd6+" + std::to_string(8 * i) + "], %r" +
            std::to_string(6 + i) + ";\n";
  auto out = runBody(body, in, 128, 32, ".shared .align 16 .b8 tile[512];");
  ASSERT_TRUE(ok(out)) << body;
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 4; ++i) {
      auto m = [&](int r, int col) {
        return static_cast<uint64_t>(tileValue(perm(8 * i + r), col));
      };
      uint64_t expect = 0;
      if (i < c.num)
        expect = c.trans
                     ? m(2 * (l % 4), l / 4) | m(2 * (l % 4) + 1, l / 4) << 16
                     : m(l / 4, 2 * (l % 4)) | m(l / 4, 2 * (l % 4) + 1) << 16;
      EXPECT_EQ((*out)[4 * l + i], expect) << "lane " << l << " r" << i;
    }
  }
}

/// Bank conflicts of ldmatrix.x4: lane l's row sits at (l * stride) bytes
/// (plus an XOR swizzle of its 16-byte chunk by (l mod 8) when `swizzle`).
/// A matrix's 8 rows are one wavefront when they fall in 8 different
/// 16-byte bank groups; rows sharing one take a wavefront each.
struct BankCase {
  const char *name;
  uint32_t stride;
  bool swizzle;
  /// Lane l names row (l >> shift): lanes share rows when shift > 0.
  uint32_t shift;
  /// Extra wavefronts per matrix.
  uint64_t extra;
};

class LdmatrixBankTest : public ::testing::TestWithParam<BankCase> {};

TEST_P(LdmatrixBankTest, CountsExtraWavefronts) {
  const BankCase &c = GetParam();
  std::string body = "  shr.u32 %r5, %r0, " + std::to_string(c.shift) +
                     ";\n  mul.lo.u32 %r1, %r5, " + std::to_string(c.stride) +
                     ";\n";
  if (c.swizzle)
    body += "  and.b32 %r2, %r0, 7;\n"
            "  shl.b32 %r2, %r2, 4;\n"
            "  xor.b32 %r1, %r1, %r2;\n";
  body += "  mov.u32 %r3, tile;\n"
          "  add.u32 %r4, %r3, %r1;\n"
          "  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r6, %r7, %r8, %r9}, "
          "[%r4];\n";
  auto module = sim::Module::parse(
      wrapBody(body, ".shared .align 16 .b8 tile[16384];"), "bank.ptx");
  ASSERT_TRUE(ok(module));
  std::vector<uint64_t> in(1), out(1);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, in, "in")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  sim::LaunchConfig config;
  config.block = {32};
  config.workers = 1;
  auto stats = device.launch(**module, "test", config,
                             {sim::KernelArg::pointer(out.data()),
                              sim::KernelArg::pointer(in.data())});
  ASSERT_TRUE(ok(stats));
  EXPECT_EQ(stats->ldmatrixMatrices, 4u);
  EXPECT_EQ(stats->ldmatrixExtraWavefronts, 4 * c.extra);
}

INSTANTIATE_TEST_SUITE_P(
    Collective, LdmatrixBankTest,
    ::testing::Values(
        // Rows of 16 bytes back to back: 8 rows cover 128 bytes.
        BankCase{"Packed", 16, false, 0, 0},
        // Rows of 128 bytes: every row in bank group 0.
        BankCase{"Stride128", 128, false, 0, 7},
        // ... unless the chunk is XOR-swizzled by the row.
        BankCase{"Stride128Swizzled", 128, true, 0, 0},
        // Rows of 64 bytes: groups 0 and 4, four rows each.
        BankCase{"Stride64", 64, false, 0, 3},
        // Padded rows of 144 bytes (128 + one chunk).
        BankCase{"Stride144", 144, false, 0, 0},
        // Every lane names the same row: read once.
        BankCase{"OneRow", 128, false, 5, 0},
        // Lanes in pairs: 4 distinct rows per matrix, all in group 0.
        BankCase{"PairsStride128", 128, false, 1, 3}),
    [](const ::testing::TestParamInfo<BankCase> &info) {
      return std::string(info.param.name);
    });

INSTANTIATE_TEST_SUITE_P(
    Collective, LdmatrixLayoutTest,
    ::testing::Values(LdmatrixCase{1, false}, LdmatrixCase{2, false},
                      LdmatrixCase{4, false}, LdmatrixCase{1, true},
                      LdmatrixCase{2, true}, LdmatrixCase{4, true}),
    [](const ::testing::TestParamInfo<LdmatrixCase> &info) {
      return "X" + std::to_string(info.param.num) +
             (info.param.trans ? "Trans" : "");
    });

} // namespace
