//===- AsyncExecutorTest.cpp - mbarriers, TMA and their order -------------===//
//
// The simulator's asynchronous executor driven directly, as the
// interpreter drives it: a producer warp and consumer warps running the
// stage protocol of a pipelined kernel (the full mbarrier with a
// transaction count, the empty mbarrier the consumers release), once
// correctly and once with each defect planted: a missing expect_tx, a read
// before the wait, a wait on the wrong parity, a refill of a stage still
// being consumed. Each defect must be reported, and the correct protocol
// must not be. Then the data a copy lands: the box with its out-of-bounds
// elements and the swizzle, against values computed here from the tensor's
// definition.
//
//===----------------------------------------------------------------------===//

#include "AsyncExecutor.h"

#include "gtest/gtest.h"

#include <cstring>
#include <string>
#include <vector>

using namespace flashc;
using namespace flashc::sim;
using namespace flashc::sim::detail;

namespace {

/// A CTA of `warps` warps with 16 KB of shared memory over a global f16
/// tensor of 64 x 40 elements (rows 128 bytes apart) at address 0x1000.
struct Fixture {
  static constexpr uint64_t kBase = 0x1000;
  static constexpr uint32_t kRows = 40, kCols = 64;
  std::vector<uint8_t> shared = std::vector<uint8_t>(16384, 0xee);
  std::vector<uint16_t> global = std::vector<uint16_t>(kRows * kCols);
  AsyncExecutor x;
  TensorMap map;
  std::vector<std::pair<uint32_t, uint32_t>> landed;

  explicit Fixture(uint32_t warps = 2,
                   TensorMapSwizzle swizzle = TensorMapSwizzle::None) {
    for (uint32_t i = 0; i < global.size(); ++i)
      global[i] = static_cast<uint16_t>(i * 7 + 1);
    AsyncExecutor::Hooks hooks;
    hooks.at = [](uint32_t line) { return "line " + std::to_string(line); };
    hooks.thread = [](uint32_t t) { return "thread " + std::to_string(t); };
    hooks.readGlobal = [this](uint64_t address, uint32_t bytes,
                              void *out) -> std::string {
      uint64_t end = kBase + global.size() * 2;
      if (address < kBase || address + bytes > end)
        return "out of bounds";
      std::memcpy(
          out, reinterpret_cast<uint8_t *>(global.data()) + (address - kBase),
          bytes);
      return "";
    };
    hooks.landed = [this](uint32_t off, uint32_t bytes) {
      landed.push_back({off, bytes});
    };
    x.configure(hooks, /*checkOrder=*/true);
    x.reset(warps, shared.data(), static_cast<uint32_t>(shared.size()));
    uint64_t dims[2] = {kCols, kRows}, strides[1] = {kCols * 2};
    uint32_t box[2] = {64, 16}, steps[2] = {1, 1};
    TensorMapTiledArgs args;
    args.dataType = static_cast<uint32_t>(TensorMapDataType::Float16);
    args.rank = 2;
    args.globalAddress = kBase;
    args.globalDim = dims;
    args.globalStrides = strides;
    args.boxDim = box;
    args.elementStrides = steps;
    args.swizzle = static_cast<uint32_t>(swizzle);
    alignas(128) uint8_t bytes[kTensorMapBytes];
    EXPECT_FALSE(encodeTensorMapTiled(bytes, args));
    map = *decodeTensorMap(bytes);
  }
};

AsyncSite site(uint32_t warp, uint32_t line) {
  AsyncSite s;
  s.warp = warp;
  s.thread = warp * 32;
  s.line = line;
  return s;
}

constexpr uint32_t kFull = 0, kEmpty = 8, kStage = 1024;
/// The kind of the last fault issueTensorLoad reported.
ErrorCode code = ErrorCode::Success;
constexpr uint32_t kStageBytes = 64 * 16 * 2;

/// Sets up the two mbarriers; the producer (warp 0) fills the stage with
/// rows [row, row + 16).
void produce(Fixture &f, int32_t row, bool expectTx = true) {
  uint64_t state;
  ASSERT_EQ(f.x.mbarrierArrive(kFull, 1, expectTx ? kStageBytes : 0,
                               site(0, 10), state),
            "");
  int32_t coords[2] = {0, row};
  ASSERT_EQ(
      f.x.issueTensorLoad(f.map, coords, kStage, kFull, site(0, 11), code), "");
}

void init(Fixture &f) {
  ASSERT_EQ(f.x.mbarrierInit(kFull, 1, site(0, 1)), "");
  ASSERT_EQ(f.x.mbarrierInit(kEmpty, 1, site(0, 2)), "");
  f.x.barrierComplete(0, {0, 1});
}

TEST(AsyncExecutorTest, TheStageProtocolRunsClean) {
  Fixture f;
  init(f);
  for (int32_t it = 0; it < 3; ++it) {
    SCOPED_TRACE(it);
    uint32_t parity = static_cast<uint32_t>(it & 1);
    if (it > 0) {
      // The producer waits for the consumer to release the stage.
      bool done = false;
      ASSERT_EQ(
          f.x.mbarrierTryWaitParity(kEmpty, parity ^ 1, site(0, 12), done), "");
      ASSERT_TRUE(done);
    }
    produce(f, it * 8);
    bool done = false;
    ASSERT_EQ(f.x.mbarrierTryWaitParity(kFull, parity, site(1, 20), done), "");
    ASSERT_TRUE(done) << "the wait lands the copy its phase needs";
    ASSERT_EQ(f.x.onAccess(kStage, kStageBytes, false, site(1, 21)), "");
    // The data is the box: rows it*8 .. it*8+15 of the tensor.
    const uint16_t *s = reinterpret_cast<const uint16_t *>(&f.shared[kStage]);
    for (uint32_t r = 0; r < 16; ++r)
      for (uint32_t c = 0; c < 64; ++c)
        ASSERT_EQ(s[r * 64 + c], f.global[(it * 8 + r) * 64 + c]);
    uint64_t state;
    ASSERT_EQ(f.x.mbarrierArrive(kEmpty, 1, 0, site(1, 22), state), "");
  }
  EXPECT_EQ(f.x.copiesInFlight(), 0u);
  EXPECT_EQ(f.landed.size(), 3u);
}

TEST(AsyncExecutorTest, AReadBeforeTheWaitIsARace) {
  Fixture f;
  init(f);
  produce(f, 0);
  std::string why = f.x.onAccess(kStage + 64, 4, false, site(1, 21));
  EXPECT_NE(why.find("read of shared address 0x440 while the TMA copy into "
                     "it issued at line 11 by thread 0 is in flight"),
            std::string::npos)
      << why;
}

TEST(AsyncExecutorTest, AMissingExpectTxLetsTheWaitPassTooEarly) {
  Fixture f;
  init(f);
  produce(f, 0, /*expectTx=*/false);
  // The arrival alone completed the phase: the wait passes, and the data
  // has not landed.
  bool done = false;
  ASSERT_EQ(f.x.mbarrierTryWaitParity(kFull, 0, site(1, 20), done), "");
  EXPECT_TRUE(done);
  std::string why = f.x.onAccess(kStage, 16, false, site(1, 21));
  EXPECT_NE(why.find("is in flight"), std::string::npos) << why;
  // When it lands, its bytes take the transaction count below zero: the
  // next phase is corrupt, which a deadlock or a race then shows.
  std::string error;
  EXPECT_TRUE(f.x.landAll(error));
  EXPECT_EQ(error, "");
  EXPECT_NE(f.x.describeMbarrier(kFull).find("-2048 transaction bytes"),
            std::string::npos)
      << f.x.describeMbarrier(kFull);
}

TEST(AsyncExecutorTest, AWaitOnTheWrongParityIsCaught) {
  Fixture f;
  init(f);
  produce(f, 0);
  // Parity 1 names the phase before phase 0, which counts as complete.
  bool done = false;
  ASSERT_EQ(f.x.mbarrierTryWaitParity(kFull, 1, site(1, 20), done), "");
  EXPECT_TRUE(done);
  EXPECT_NE(f.x.onAccess(kStage, 16, false, site(1, 21)).find("in flight"),
            std::string::npos);
  // Landed by another warp's wait, the data is still not ordered before
  // the read of a warp that did not wait.
  Fixture g(3);
  init(g);
  g.x.barrierComplete(0, {0, 1, 2});
  produce(g, 0);
  ASSERT_EQ(g.x.mbarrierTryWaitParity(kFull, 0, site(2, 30), done), "");
  ASSERT_TRUE(done);
  std::string why = g.x.onAccess(kStage, 16, false, site(1, 21));
  EXPECT_NE(why.find("without a wait on the mbarrier phase that covers it"),
            std::string::npos)
      << why;
}

TEST(AsyncExecutorTest, RefillingAStageStillBeingConsumedIsCaught) {
  Fixture f;
  init(f);
  produce(f, 0);
  bool done = false;
  ASSERT_EQ(f.x.mbarrierTryWaitParity(kFull, 0, site(1, 20), done), "");
  ASSERT_TRUE(done);
  ASSERT_EQ(f.x.onAccess(kStage + 256, 16, false, site(1, 21)), "");
  // The producer refills the stage without waiting on the empty barrier.
  uint64_t state;
  ASSERT_EQ(f.x.mbarrierArrive(kFull, 1, kStageBytes, site(0, 10), state), "");
  int32_t coords[2] = {0, 8};
  std::string why =
      f.x.issueTensorLoad(f.map, coords, kStage, kFull, site(0, 11), code);
  EXPECT_NE(why.find("bytes that warp 1 read at line 21 and has not released "
                     "to the issuing thread (a stage still being consumed)"),
            std::string::npos)
      << why;

  // Issuing over a copy still in flight is caught too.
  Fixture g;
  init(g);
  produce(g, 0);
  why = g.x.issueTensorLoad(g.map, coords, kStage, kFull, site(0, 13), code);
  EXPECT_NE(why.find("which is still in flight"), std::string::npos) << why;
}

TEST(AsyncExecutorTest, ABarrierOrdersReadsBeforeARefill) {
  Fixture f;
  init(f);
  produce(f, 0);
  bool done = false;
  ASSERT_EQ(f.x.mbarrierTryWaitParity(kFull, 0, site(1, 20), done), "");
  ASSERT_EQ(f.x.onAccess(kStage, kStageBytes, false, site(1, 21)), "");
  f.x.barrierComplete(0, {0, 1});
  // The producer knows the landing through the barrier, too.
  produce(f, 8);
}

TEST(AsyncExecutorTest, AWriteAfterAnotherWarpsReadNeedsABarrier) {
  // Warp 1 reads a chunk through the asynchronous proxy (a wgmma operand)
  // after a fenced write of warp 0 and a barrier; warp 0's next write of
  // it is a race until a barrier orders the read before it. (The
  // mbarriers' initialisation starts the executor.)
  auto rewrite = [](bool barrier) {
    Fixture f;
    init(f);
    EXPECT_EQ(f.x.onAccess(kStage, 16, true, site(0, 30)), "");
    f.x.fenceProxyAsync(0);
    f.x.barrierComplete(0, {0, 1});
    EXPECT_EQ(f.x.onAsyncRead(kStage, 16, site(1, 31)), "");
    if (barrier)
      f.x.barrierComplete(0, {0, 1});
    return f.x.onAccess(kStage, 16, true, site(0, 32));
  };
  std::string why = rewrite(false);
  EXPECT_NE(why.find("which warp 1 read at line 31 with no barrier between "
                     "that read and this write"),
            std::string::npos)
      << why;
  EXPECT_EQ(rewrite(true), "");
}

TEST(AsyncExecutorTest, ReportsMisuse) {
  Fixture f;
  AsyncSite s = site(0, 5);
  uint64_t state;
  bool done;
  EXPECT_NE(f.x.mbarrierArrive(64, 1, 0, s, state).find("holds no mbarrier"),
            std::string::npos);
  EXPECT_NE(f.x.mbarrierTryWaitParity(64, 0, s, done).find("no mbarrier"),
            std::string::npos);
  EXPECT_NE(f.x.mbarrierInit(4, 1, s).find("8-byte aligned"),
            std::string::npos);
  ASSERT_EQ(f.x.mbarrierInit(kFull, 1, s), "");
  int32_t coords[2] = {0, 0};
  EXPECT_NE(f.x.issueTensorLoad(f.map, coords, kStage + 16, kFull, s, code)
                .find("not 128-byte aligned"),
            std::string::npos);
  EXPECT_EQ(code, ErrorCode::Misaligned);
  EXPECT_NE(f.x.issueTensorLoad(f.map, coords, 16384 - 1024, kFull, s, code)
                .find("extend past"),
            std::string::npos);
  EXPECT_EQ(code, ErrorCode::OutOfBounds);
  EXPECT_NE(f.x.issueTensorLoad(f.map, coords, kStage, 512, s, code)
                .find("holds no mbarrier"),
            std::string::npos);
  EXPECT_NE(f.x.issueTensorLoad(f.map, coords, 0, kFull, s, code)
                .find("overlaps an mbarrier"),
            std::string::npos);
  EXPECT_TRUE(f.x.overlapsMbarrier(4, 8));
  EXPECT_FALSE(f.x.overlapsMbarrier(8, 8));
}

TEST(AsyncExecutorTest, LandsTheBoxWithItsFillAndSwizzle) {
  Fixture f(2, TensorMapSwizzle::B128);
  ASSERT_EQ(f.x.mbarrierInit(kFull, 1, site(0, 1)), "");
  uint64_t state;
  ASSERT_EQ(f.x.mbarrierArrive(kFull, 1, kStageBytes, site(0, 10), state), "");
  // Rows 30 .. 45 of a 40-row tensor: the last 6 rows are out of bounds.
  int32_t coords[2] = {0, 30};
  ASSERT_EQ(
      f.x.issueTensorLoad(f.map, coords, kStage, kFull, site(0, 11), code), "");
  bool done = false;
  ASSERT_EQ(f.x.mbarrierTryWaitParity(kFull, 0, site(1, 20), done), "");
  ASSERT_TRUE(done);
  for (uint32_t r = 0; r < 16; ++r)
    for (uint32_t c = 0; c < 64; ++c) {
      // Row r of the box is 128 bytes at kStage + 128 r; its 16-byte chunk
      // c / 8 lands at chunk (c / 8) ^ (r % 8) (kStage is 1024-aligned).
      uint32_t at = kStage + r * 128 + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2;
      uint16_t v;
      std::memcpy(&v, &f.shared[at], 2);
      uint16_t expected = 30 + r < 40 ? f.global[(30 + r) * 64 + c] : 0;
      ASSERT_EQ(v, expected) << "row " << r << " column " << c;
    }
}

TEST(AsyncExecutorTest, DescribesAStuckBarrier) {
  Fixture f;
  init(f);
  uint64_t state;
  ASSERT_EQ(f.x.mbarrierArrive(kFull, 1, kStageBytes, site(0, 10), state), "");
  bool done = true;
  ASSERT_EQ(f.x.mbarrierTryWaitParity(kFull, 0, site(1, 20), done), "");
  EXPECT_FALSE(done) << "no copy was issued: the bytes never come";
  EXPECT_NE(f.x.describeMbarrier(kFull).find(
                "phase 0: 0 of 1 arrivals and 2048 transaction bytes pending"),
            std::string::npos)
      << f.x.describeMbarrier(kFull);
  std::string error;
  EXPECT_FALSE(f.x.landAll(error));
}

} // namespace
