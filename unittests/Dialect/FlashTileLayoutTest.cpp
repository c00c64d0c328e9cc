//===- FlashTileLayoutTest.cpp - flash_tile layouts through their API -----===//
//
// The layout interface's figures (warps, elements per thread) for the
// layouts of FA2-style schedules, and the tile type's checks through the
// C++ API (getChecked reports, never asserts).
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"
#include "flashc/Dialect/FlashTile/IR/LayoutUtils.h"

#include "flashc/Simulator/Simulator.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/APFloat.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace mlir;
using namespace mlir::flash_tile;

namespace {

class FlashTileLayoutTest : public ::testing::Test {
protected:
  FlashTileLayoutTest() { ctx.loadDialect<FlashTileDialect>(); }

  MmaLayoutAttr mma(int64_t rows, int64_t cols, int64_t k = 16) {
    return MmaLayoutAttr::get(&ctx, {rows, cols}, {16, 8, k});
  }

  /// The message of the first diagnostic `body` emits, or "".
  std::string diagnosticOf(llvm::function_ref<void()> body) {
    std::string message;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (message.empty())
        message = d.str();
      return success();
    });
    body();
    return message;
  }

  MLIRContext ctx;
};

TEST_F(FlashTileLayoutTest, AccumulatorSplitsOverEveryWarp) {
  // 64 x 64 f32 over 4 warps of 32 lanes: 32 values a thread, as the
  // sm_80 kernels hold S and O (16 rows x 64 columns a warp).
  MmaLayoutAttr acc = mma(4, 1);
  EXPECT_EQ(acc.getNumWarps(), 4);
  EXPECT_EQ(acc.getElementsPerThread({64, 64}), 32);
  EXPECT_EQ(acc.getElementsPerThread({128, 128}), 128);
  // Two warps per row block, two per column block.
  MmaLayoutAttr grid = mma(2, 2);
  EXPECT_EQ(grid.getNumWarps(), 4);
  EXPECT_EQ(grid.getElementsPerThread({64, 64}), 32);
}

TEST_F(FlashTileLayoutTest, OperandsAreReplicatedOverTheOtherWarps) {
  MmaLayoutAttr grid = mma(2, 2);
  auto a = OperandLayoutAttr::get(&ctx, OperandKind::A, grid);
  auto b = OperandLayoutAttr::get(&ctx, OperandKind::B, grid);
  // A (64 x 32) is split over the 2 row warps only: each warp holds 32 x
  // 32, 32 values a lane.
  EXPECT_EQ(a.getElementsPerThread({64, 32}), 32);
  // B (32 x 64) over the 2 column warps.
  EXPECT_EQ(b.getElementsPerThread({32, 64}), 32);
  EXPECT_EQ(a.getNumWarps(), 4);
  // With all warps on the rows, B is whole in every warp: K^T of 64 keys x
  // d = 64 is 128 values a lane.
  auto bRows = OperandLayoutAttr::get(&ctx, OperandKind::B, mma(4, 1));
  EXPECT_EQ(bRows.getElementsPerThread({64, 64}), 128);
}

TEST_F(FlashTileLayoutTest, RowSlicesAreHeldByQuads) {
  // A row of the accumulator is held by the 4 lanes of a quad: a lane
  // holds 2 of each 16 rows of its warp.
  auto rows = SliceLayoutAttr::get(&ctx, 1, mma(4, 1));
  EXPECT_EQ(rows.getElementsPerThread({64}), 2);
  EXPECT_EQ(rows.getElementsPerThread({128}), 4);
  auto cols = SliceLayoutAttr::get(&ctx, 0, mma(1, 4));
  // 64 columns over 4 column warps: 16 a warp, 2 of each 8 a lane.
  EXPECT_EQ(cols.getElementsPerThread({64}), 4);
}

TEST_F(FlashTileLayoutTest, BlockedSlicesAreHeldAlongTheRemovedDimension) {
  // The combine's layout: a warp's lanes over a row's 16-byte runs, 4
  // warps over the rows. A row's value is in all 32 lanes of its warp.
  auto rows = BlockedLayoutAttr::get(&ctx, {1, 4}, {1, 32}, {4, 1});
  auto slice = SliceLayoutAttr::get(&ctx, 1, rows);
  EXPECT_EQ(slice.getNumWarps(), 4);
  EXPECT_EQ(slice.getElementsPerThread({4}), 1);
  EXPECT_EQ(slice.getElementsPerThread({8}), 2);
  for (int64_t lane = 0; lane < 32; ++lane)
    EXPECT_EQ(slice.getCoordinates({8}, 2 * 32 + lane, 1)[0], 6);
  // Two rows per warp (16 lanes a row); a column slice of the same.
  auto half = BlockedLayoutAttr::get(&ctx, {1, 4}, {2, 16}, {2, 1});
  EXPECT_EQ(SliceLayoutAttr::get(&ctx, 1, half).getCoordinates({4}, 17, 0)[0],
            1);
  EXPECT_EQ(SliceLayoutAttr::get(&ctx, 0, half).getElementsPerThread({64}), 4);
  // Only MMA and 2-D blocked parents, with a shape of whole runs.
  EXPECT_NE(diagnosticOf([&] {
              (void)SliceLayoutAttr::getChecked(
                  [&] { return emitError(UnknownLoc::get(&ctx)); }, &ctx,
                  int64_t(1),
                  LayoutAttrInterface(
                      BlockedLayoutAttr::get(&ctx, {4}, {32}, {1})));
            }).find("2-D #flash_tile.blocked"),
            std::string::npos);
  EXPECT_NE(diagnosticOf([&] {
              (void)TileType::getChecked(
                  [&] { return emitError(UnknownLoc::get(&ctx)); }, &ctx,
                  ArrayRef<int64_t>{6}, Type(Float32Type::get(&ctx)),
                  Attribute(slice));
            }).find("multiples of 4"),
            std::string::npos);
}

TEST_F(FlashTileLayoutTest, BlockedCountsRunsPerThread) {
  auto copy = BlockedLayoutAttr::get(&ctx, {1, 8}, {4, 8}, {4, 1});
  EXPECT_EQ(copy.getNumWarps(), 4);
  // 64 x 64 f16 over 128 threads: 32 elements, four 16-byte runs.
  EXPECT_EQ(copy.getElementsPerThread({64, 64}), 32);
}

TEST_F(FlashTileLayoutTest, TileTypesAreCheckedAgainstTheirLayout) {
  Type f32 = Float32Type::get(&ctx);
  MmaLayoutAttr acc = mma(4, 1);
  auto loc = UnknownLoc::get(&ctx);
  // A good tile.
  EXPECT_TRUE(TileType::getChecked(
      [&] { return emitError(loc); }, &ctx, ArrayRef<int64_t>{64, 64}, f32,
      Attribute(acc)));
  // 48 rows are not a whole number of 4 warps x 16 rows.
  TileType bad;
  std::string message = diagnosticOf([&] {
    bad = TileType::getChecked([&] { return emitError(loc); }, &ctx,
                               ArrayRef<int64_t>{48, 64}, f32,
                               Attribute(acc));
  });
  EXPECT_FALSE(bad);
  EXPECT_EQ(message, "#flash_tile.mma needs a tile whose extents are "
                     "multiples of 64x8, not 48x64");
  // A shared layout is not a register layout.
  auto swizzled = SwizzledLayoutAttr::get(&ctx, 8, 8, 0);
  message = diagnosticOf([&] {
    bad = TileType::getChecked([&] { return emitError(loc); }, &ctx,
                               ArrayRef<int64_t>{64, 64}, f32,
                               Attribute(swizzled));
  });
  EXPECT_FALSE(bad);
  EXPECT_NE(message.find("a tile's layout is a flash_tile register layout"),
            std::string::npos)
      << message;
}

TEST_F(FlashTileLayoutTest, SharedBuffersKnowTheirSize) {
  auto swizzled = SwizzledLayoutAttr::get(&ctx, 8, 8, 0);
  auto kv = SharedType::get(&ctx, {2, 64, 128}, Float16Type::get(&ctx),
                            swizzled);
  EXPECT_EQ(kv.getStages(), 2);
  EXPECT_EQ(kv.getRows(), 64);
  EXPECT_EQ(kv.getColumns(), 128);
  EXPECT_EQ(kv.getRowElements(), 128);
  EXPECT_EQ(kv.getSizeInBytes(), 2 * 64 * 128 * 2);
  // 96 columns (12 chunks) padded by a chunk: rows of 104 elements.
  auto padded = SharedType::get(&ctx, {2, 64, 96}, Float16Type::get(&ctx),
                                SwizzledLayoutAttr::get(&ctx, 8, 1, 8));
  EXPECT_EQ(padded.getColumns(), 96);
  EXPECT_EQ(padded.getRowElements(), 104);
  EXPECT_EQ(padded.getSizeInBytes(), 2 * 64 * 104 * 2);
}

/// Every element of a `shape` tile is held `copies` times over all
/// threads and their values, and every coordinate is inside the tile.
static void expectCoverage(LayoutAttrInterface layout,
                           ArrayRef<int64_t> shape, int64_t copies) {
  std::map<std::vector<int64_t>, int64_t> seen;
  int64_t threads = 32 * layout.getNumWarps();
  int64_t values = layout.getElementsPerThread(shape);
  for (int64_t t = 0; t < threads; ++t)
    for (int64_t e = 0; e < values; ++e) {
      SmallVector<int64_t> c = layout.getCoordinates(shape, t, e);
      ASSERT_EQ(c.size(), shape.size());
      for (size_t i = 0; i < c.size(); ++i)
        ASSERT_TRUE(c[i] >= 0 && c[i] < shape[i])
            << "thread " << t << " value " << e << " dim " << i << ": "
            << c[i];
      ++seen[std::vector<int64_t>(c.begin(), c.end())];
    }
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  EXPECT_EQ(static_cast<int64_t>(seen.size()), elements);
  for (auto &[coords, count] : seen)
    EXPECT_EQ(count, copies);
}

TEST_F(FlashTileLayoutTest, EveryLayoutCoversItsTile) {
  for (auto [w0, w1] : {std::pair<int64_t, int64_t>{4, 1}, {2, 2}, {1, 4}}) {
    SCOPED_TRACE(testing::Message() << "warps " << w0 << " x " << w1);
    MmaLayoutAttr acc = mma(w0, w1);
    expectCoverage(acc, {64, 64}, 1);
    expectCoverage(acc, {128, 32}, 1);
    // A is replicated over the column warps, B over the row warps.
    expectCoverage(OperandLayoutAttr::get(&ctx, OperandKind::A, acc),
                   {64, 32}, w1);
    expectCoverage(OperandLayoutAttr::get(&ctx, OperandKind::B, acc),
                   {32, 64}, w0);
    // A row is held by a quad of lanes in each column warp; a column by the
    // 8 lane groups of each row warp.
    expectCoverage(SliceLayoutAttr::get(&ctx, 1, acc), {64}, 4 * w1);
    expectCoverage(SliceLayoutAttr::get(&ctx, 0, acc), {64}, 8 * w0);
  }
  MmaLayoutAttr k8 = mma(2, 2, 8);
  expectCoverage(OperandLayoutAttr::get(&ctx, OperandKind::A, k8), {32, 16}, 2);
  expectCoverage(OperandLayoutAttr::get(&ctx, OperandKind::B, k8), {16, 32}, 2);
  expectCoverage(BlockedLayoutAttr::get(&ctx, {1, 8}, {4, 8}, {4, 1}),
                 {64, 64}, 1);
  expectCoverage(BlockedLayoutAttr::get(&ctx, {2, 4}, {8, 4}, {1, 2}),
                 {32, 64}, 1);
  expectCoverage(BlockedLayoutAttr::get(&ctx, {4}, {32}, {2}), {512}, 1);
  // A blocked layout's row held by its lanes and warps over the columns.
  auto blocked = BlockedLayoutAttr::get(&ctx, {1, 4}, {4, 8}, {2, 2});
  expectCoverage(SliceLayoutAttr::get(&ctx, 1, blocked), {16}, 8 * 2);
  expectCoverage(SliceLayoutAttr::get(&ctx, 0, blocked), {128}, 4 * 2);
  expectCoverage(SliceLayoutAttr::get(
                     &ctx, 0, BlockedLayoutAttr::get(&ctx, {2, 4}, {8, 4},
                                                     {1, 2})),
                 {64}, 8);
}

/// The coordinates of every value of every thread are the thread's offsets
/// (getThreadOffsets, evaluated) plus thread 0's coordinates of the value.
static void expectThreadOffsetsSplit(LayoutAttrInterface layout,
                                     ArrayRef<int64_t> shape) {
  SmallVector<AffineExpr> exprs = getThreadOffsets(layout, shape);
  ASSERT_EQ(exprs.size(), shape.size());
  auto map = AffineMap::get(1, 0, exprs, layout.getContext());
  int64_t values = layout.getElementsPerThread(shape);
  for (int64_t t = 0; t < 32 * layout.getNumWarps(); ++t) {
    SmallVector<int64_t> offsets = map.compose(ArrayRef<int64_t>{t});
    for (int64_t e = 0; e < values; ++e) {
      SmallVector<int64_t> expected = layout.getCoordinates(shape, t, e);
      SmallVector<int64_t> first = layout.getCoordinates(shape, 0, e);
      for (size_t i = 0; i < shape.size(); ++i)
        ASSERT_EQ(offsets[i] + first[i], expected[i])
            << "thread " << t << " value " << e << " dim " << i;
    }
  }
}

TEST_F(FlashTileLayoutTest, ThreadOffsetsSplitFromValueOffsets) {
  for (auto [w0, w1] : {std::pair<int64_t, int64_t>{4, 1}, {2, 2}, {1, 4}}) {
    SCOPED_TRACE(testing::Message() << "warps " << w0 << " x " << w1);
    MmaLayoutAttr acc = mma(w0, w1);
    expectThreadOffsetsSplit(acc, {64, 64});
    expectThreadOffsetsSplit(acc, {128, 32});
    expectThreadOffsetsSplit(OperandLayoutAttr::get(&ctx, OperandKind::A, acc),
                             {64, 32});
    expectThreadOffsetsSplit(OperandLayoutAttr::get(&ctx, OperandKind::B, acc),
                             {32, 64});
    expectThreadOffsetsSplit(SliceLayoutAttr::get(&ctx, 1, acc), {64});
    expectThreadOffsetsSplit(SliceLayoutAttr::get(&ctx, 0, acc), {64});
  }
  MmaLayoutAttr k8 = mma(2, 2, 8);
  expectThreadOffsetsSplit(OperandLayoutAttr::get(&ctx, OperandKind::A, k8),
                           {32, 16});
  expectThreadOffsetsSplit(OperandLayoutAttr::get(&ctx, OperandKind::B, k8),
                           {16, 32});
  expectThreadOffsetsSplit(BlockedLayoutAttr::get(&ctx, {1, 8}, {4, 8}, {4, 1}),
                           {64, 64});
  expectThreadOffsetsSplit(BlockedLayoutAttr::get(&ctx, {2, 4}, {8, 4}, {1, 2}),
                           {32, 64});
  expectThreadOffsetsSplit(BlockedLayoutAttr::get(&ctx, {4}, {32}, {2}), {512});
  auto blocked = BlockedLayoutAttr::get(&ctx, {2, 4}, {8, 4}, {1, 2});
  expectThreadOffsetsSplit(SliceLayoutAttr::get(&ctx, 1, blocked), {32});
  expectThreadOffsetsSplit(SliceLayoutAttr::get(&ctx, 0, blocked), {64});
  expectThreadOffsetsSplit(
      SliceLayoutAttr::get(&ctx, 1,
                           BlockedLayoutAttr::get(&ctx, {1, 4}, {2, 16},
                                                  {2, 1})),
      {8});
}

/// Every element of a `shape` tile has exactly one holder that meets the
/// layout's owner conditions.
static void expectOneOwner(LayoutAttrInterface layout, ArrayRef<int64_t> shape) {
  SmallVector<AffineExpr> conditions = getOwnerConditions(layout);
  auto map = AffineMap::get(1, 0, conditions, layout.getContext());
  std::map<std::vector<int64_t>, int64_t> owners;
  int64_t values = layout.getElementsPerThread(shape);
  for (int64_t t = 0; t < 32 * layout.getNumWarps(); ++t) {
    SmallVector<int64_t> c = map.compose(ArrayRef<int64_t>{t});
    bool owner = llvm::all_of(c, [](int64_t v) { return v == 0; });
    for (int64_t e = 0; e < values; ++e) {
      SmallVector<int64_t> at = layout.getCoordinates(shape, t, e);
      owners[std::vector<int64_t>(at.begin(), at.end())] += owner;
    }
  }
  for (auto &[at, count] : owners)
    ASSERT_EQ(count, 1) << "element (" << at[0] << ", ...)";
}

TEST_F(FlashTileLayoutTest, EveryElementHasOneOwner) {
  for (auto [w0, w1] : {std::pair<int64_t, int64_t>{4, 1}, {2, 2}, {1, 4}}) {
    SCOPED_TRACE(testing::Message() << "warps " << w0 << " x " << w1);
    MmaLayoutAttr acc = mma(w0, w1);
    expectOneOwner(acc, {64, 64});
    expectOneOwner(OperandLayoutAttr::get(&ctx, OperandKind::A, acc), {64, 32});
    expectOneOwner(OperandLayoutAttr::get(&ctx, OperandKind::B, acc), {32, 64});
    expectOneOwner(SliceLayoutAttr::get(&ctx, 1, acc), {64});
    expectOneOwner(SliceLayoutAttr::get(&ctx, 0, acc), {64});
  }
  expectOneOwner(BlockedLayoutAttr::get(&ctx, {1, 8}, {4, 8}, {4, 1}),
                 {64, 64});
  auto blocked = BlockedLayoutAttr::get(&ctx, {2, 4}, {8, 4}, {2, 2});
  expectOneOwner(SliceLayoutAttr::get(&ctx, 1, blocked), {32});
  expectOneOwner(SliceLayoutAttr::get(&ctx, 0, blocked), {64});
  expectOneOwner(SliceLayoutAttr::get(&ctx, 1,
                                      BlockedLayoutAttr::get(&ctx, {1, 4},
                                                             {1, 32}, {4, 1})),
                 {8});
  // One holder: no conditions.
  EXPECT_TRUE(getOwnerConditions(mma(4, 1)).empty());
  EXPECT_EQ(getOwnerConditions(SliceLayoutAttr::get(&ctx, 1, mma(4, 1))).size(),
            1u);
}

TEST_F(FlashTileLayoutTest, FragmentsFollowThePtxTables) {
  // Lane 5 is group 1, thread 1 of its quad (PTX ISA, mma.m16n8k16).
  MmaLayoutAttr acc = mma(1, 1);
  auto a = OperandLayoutAttr::get(&ctx, OperandKind::A, acc);
  auto b = OperandLayoutAttr::get(&ctx, OperandKind::B, acc);
  using C = SmallVector<int64_t>;
  EXPECT_EQ(acc.getCoordinates({16, 8}, 5, 0), (C{1, 2}));
  EXPECT_EQ(acc.getCoordinates({16, 8}, 5, 1), (C{1, 3}));
  EXPECT_EQ(acc.getCoordinates({16, 8}, 5, 3), (C{9, 3}));
  EXPECT_EQ(a.getCoordinates({16, 16}, 5, 0), (C{1, 2}));
  EXPECT_EQ(a.getCoordinates({16, 16}, 5, 2), (C{9, 2}));
  EXPECT_EQ(a.getCoordinates({16, 16}, 5, 5), (C{1, 11}));
  EXPECT_EQ(a.getCoordinates({16, 16}, 5, 6), (C{9, 10}));
  EXPECT_EQ(b.getCoordinates({16, 8}, 5, 1), (C{3, 1}));
  EXPECT_EQ(b.getCoordinates({16, 8}, 5, 2), (C{10, 1}));
  // The second 16-row tile of a 32-row accumulator comes after the first
  // tile's values; the second warp's rows after the first warp's.
  EXPECT_EQ(acc.getCoordinates({32, 8}, 5, 4), (C{17, 2}));
  EXPECT_EQ(mma(2, 1).getCoordinates({32, 8}, 32 + 5, 0), (C{17, 2}));
}

TEST_F(FlashTileLayoutTest, AccumulatorToOperandAIsARegisterRepack) {
  // FA2's P: the accumulator of S = Q K^T, in f16, is the A operand of
  // P V without leaving its thread. A's first 16 x 16 tile takes the first
  // two 16 x 8 accumulator tiles: a0 a1 = c0 c1 of the first, a2 a3 = c2
  // c3, a4 .. a7 = the second tile's.
  for (auto [w0, w1] : {std::pair<int64_t, int64_t>{4, 1}, {1, 1}}) {
    MmaLayoutAttr acc = mma(w0, w1);
    auto a = OperandLayoutAttr::get(&ctx, OperandKind::A, acc);
    int64_t rows = 16 * w0;
    std::optional<SmallVector<int64_t>> perm =
        getInThreadPermutation(acc, a, {rows, 64});
    ASSERT_TRUE(perm.has_value()) << "warps " << w0 << " x " << w1;
    ASSERT_EQ(perm->size(), 32u);
    EXPECT_EQ(SmallVector<int64_t>(perm->begin(), perm->begin() + 8),
              (SmallVector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    // Every value is used once.
    SmallVector<int64_t> sorted = *perm;
    llvm::sort(sorted);
    for (int64_t i = 0; i < 32; ++i)
      EXPECT_EQ(sorted[i], i);
  }
  // With several column warps, A is replicated where the accumulator is
  // split: values must move between warps.
  MmaLayoutAttr grid = mma(2, 2);
  EXPECT_FALSE(getInThreadPermutation(
      grid, OperandLayoutAttr::get(&ctx, OperandKind::A, grid), {32, 64}));
  // The B operand's values sit in other lanes (its rows are A's columns).
  MmaLayoutAttr acc = mma(1, 1);
  EXPECT_FALSE(getInThreadPermutation(
      acc, OperandLayoutAttr::get(&ctx, OperandKind::B, acc), {16, 16}));
  // A layout to itself is the identity.
  std::optional<SmallVector<int64_t>> same =
      getInThreadPermutation(acc, acc, {32, 16});
  ASSERT_TRUE(same.has_value());
  for (int64_t i = 0; i < static_cast<int64_t>(same->size()); ++i)
    EXPECT_EQ((*same)[i], i);
  // A copy layout and the accumulator share no thread mapping.
  EXPECT_FALSE(getInThreadPermutation(
      BlockedLayoutAttr::get(&ctx, {1, 8}, {4, 8}, {1, 1}), acc, {16, 64}));
}

TEST_F(FlashTileLayoutTest, AccumulatorRowsFoldWithinThreads) {
  // FA2's partial row sums: every 8-column block of an accumulator sits in
  // the same lanes, so folding columns c to c mod 8 stays in the thread;
  // value v of n-tile k (and of 16-row tile i) lands on value v of the
  // folded tile's n-tile (of tile i).
  for (auto [w0, rows] :
       {std::pair<int64_t, int64_t>{4, 64}, {4, 128}, {1, 16}}) {
    MmaLayoutAttr acc = mma(w0, 1);
    std::optional<SmallVector<int64_t>> targets =
        getFoldTargets(acc, {rows, 64}, {rows, 8});
    ASSERT_TRUE(targets.has_value()) << rows << " rows, " << w0 << " warps";
    int64_t nTiles = 8, rowTiles = rows / (16 * w0);
    ASSERT_EQ(static_cast<int64_t>(targets->size()), rowTiles * nTiles * 4);
    for (int64_t e = 0; e < static_cast<int64_t>(targets->size()); ++e)
      EXPECT_EQ((*targets)[e], (e / (4 * nTiles)) * 4 + e % 4) << e;
  }
  // Folding to 16 columns keeps two n-tiles: n-tile k lands on k % 2.
  std::optional<SmallVector<int64_t>> two =
      getFoldTargets(mma(4, 1), {64, 64}, {64, 16});
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ((*two)[4 * 3 + 1], 4 * 1 + 1);
  // Warps side by side along the rows hold different columns: column 32
  // (the second warp's) folds into column 0 (the first's).
  EXPECT_FALSE(getFoldTargets(mma(2, 2), {64, 64}, {64, 16}));
}

static uint16_t halfBits(double v) {
  llvm::APFloat f(v);
  bool lost;
  f.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

/// The layouts mean what mma.sync computes: A, B and C are scattered into
/// the lanes' registers by their layouts, one mma.sync runs in the PTX
/// simulator, and D, gathered by the accumulator layout, equals A B + C in
/// double (small integers: every product and sum is exact).
TEST_F(FlashTileLayoutTest, LayoutsMatchTheSimulatorsMmaSync) {
  const char *ptx = R"ptx(
.version 8.0
.target sm_80
.address_size 64
.visible .entry mma16816(.param .u64 out, .param .u64 in) {
  .reg .b32 %r<8>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd1, [in];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 40;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.b32 %r1, [%rd3];
  ld.global.b32 %r2, [%rd3+4];
  ld.global.b32 %r3, [%rd3+8];
  ld.global.b32 %r4, [%rd3+12];
  ld.global.b32 %r5, [%rd3+16];
  ld.global.b32 %r6, [%rd3+20];
  ld.global.f32 %f0, [%rd3+24];
  ld.global.f32 %f1, [%rd3+28];
  ld.global.f32 %f2, [%rd3+32];
  ld.global.f32 %f3, [%rd3+36];
  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f4, %f5, %f6, %f7}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f0, %f1, %f2, %f3};
  mul.wide.u32 %rd4, %r0, 16;
  add.s64 %rd5, %rd0, %rd4;
  st.global.f32 [%rd5], %f4;
  st.global.f32 [%rd5+4], %f5;
  st.global.f32 [%rd5+8], %f6;
  st.global.f32 [%rd5+12], %f7;
  ret;
}
)ptx";
  auto module = flashc::sim::Module::parse(ptx, "mma16816.ptx");
  ASSERT_TRUE(module.ok()) << module.message();

  MmaLayoutAttr acc = mma(1, 1);
  auto aLayout = OperandLayoutAttr::get(&ctx, OperandKind::A, acc);
  auto bLayout = OperandLayoutAttr::get(&ctx, OperandKind::B, acc);
  std::random_device device;
  unsigned seed = device();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-8, 8);
  double A[16][16], B[16][8], Cm[16][8];
  for (auto &row : A)
    for (double &x : row)
      x = small(rng);
  for (auto &row : B)
    for (double &x : row)
      x = small(rng);
  for (auto &row : Cm)
    for (double &x : row)
      x = small(rng) * 4;

  // Per lane: 4 words of A (two halves each, the lower first), 2 of B,
  // 4 floats of C.
  std::vector<uint32_t> in(32 * 10, 0);
  for (int64_t lane = 0; lane < 32; ++lane) {
    uint32_t *words = &in[lane * 10];
    for (int64_t e = 0; e < aLayout.getElementsPerThread({16, 16}); ++e) {
      SmallVector<int64_t> c = aLayout.getCoordinates({16, 16}, lane, e);
      words[e / 2] |= uint32_t(halfBits(A[c[0]][c[1]])) << (16 * (e % 2));
    }
    for (int64_t e = 0; e < bLayout.getElementsPerThread({16, 8}); ++e) {
      SmallVector<int64_t> c = bLayout.getCoordinates({16, 8}, lane, e);
      words[4 + e / 2] |= uint32_t(halfBits(B[c[0]][c[1]])) << (16 * (e % 2));
    }
    for (int64_t e = 0; e < acc.getElementsPerThread({16, 8}); ++e) {
      SmallVector<int64_t> c = acc.getCoordinates({16, 8}, lane, e);
      float f = static_cast<float>(Cm[c[0]][c[1]]);
      std::memcpy(&words[6 + e], &f, 4);
    }
  }
  std::vector<float> out(32 * 4, -1.0f);
  flashc::sim::Device sim;
  ASSERT_FALSE(sim.registerBuffer(in.data(), in.size() * 4, "in"));
  ASSERT_FALSE(sim.registerBuffer(out.data(), out.size() * 4, "out"));
  flashc::sim::LaunchConfig config;
  config.block = {32};
  config.workers = 1;
  auto stats = sim.launch(**module, "mma16816", config,
                          {flashc::sim::KernelArg::pointer(out.data()),
                           flashc::sim::KernelArg::pointer(in.data())});
  ASSERT_TRUE(stats.ok()) << stats.message();

  int checked = 0;
  for (int64_t lane = 0; lane < 32; ++lane)
    for (int64_t e = 0; e < 4; ++e) {
      SmallVector<int64_t> c = acc.getCoordinates({16, 8}, lane, e);
      double expected = Cm[c[0]][c[1]];
      for (int k = 0; k < 16; ++k)
        expected += A[c[0]][k] * B[k][c[1]];
      EXPECT_EQ(out[lane * 4 + e], expected)
          << "lane " << lane << " value " << e << " at (" << c[0] << ", "
          << c[1] << ")";
      ++checked;
    }
  EXPECT_EQ(checked, 16 * 8);
}

/// A batched layout: warp w holds matrix w mod B as warp w / B of the 2-D
/// layout, so the batch shares the 2-D machinery (coverage, thread offsets,
/// owners, folds) and a tile replicated over the column warps of the 2-D
/// layout with B column warps broadcasts to the batch without moving.
TEST_F(FlashTileLayoutTest, BatchesGiveEachWarpGroupAMatrix) {
  auto batched = [&](int64_t b, int64_t rows) {
    return MmaLayoutAttr::get(&ctx, {b, rows, 1}, {16, 8, 16});
  };
  for (auto [b, rows] : {std::pair<int64_t, int64_t>{4, 1}, {2, 2}}) {
    SCOPED_TRACE(testing::Message() << "batch " << b << " x " << rows);
    MmaLayoutAttr acc = batched(b, rows);
    int64_t r = 16 * rows;
    EXPECT_EQ(acc.getNumWarps(), b * rows);
    EXPECT_EQ(acc.getElementsPerThread({b, r, 32}), 16);
    auto a = OperandLayoutAttr::get(&ctx, OperandKind::A, acc);
    auto bOp = OperandLayoutAttr::get(&ctx, OperandKind::B, acc);
    auto rowSlice = SliceLayoutAttr::get(&ctx, 2, acc);
    auto colSlice = SliceLayoutAttr::get(&ctx, 1, acc);
    expectCoverage(acc, {b, r, 32}, 1);
    expectCoverage(a, {b, r, 64}, 1);
    expectCoverage(bOp, {b, 64, 32}, rows);
    expectCoverage(rowSlice, {b, r}, 4);
    expectCoverage(colSlice, {b, 32}, 8 * rows);
    expectThreadOffsetsSplit(acc, {b, r, 32});
    expectThreadOffsetsSplit(a, {b, r, 64});
    expectThreadOffsetsSplit(bOp, {b, 64, 32});
    expectThreadOffsetsSplit(rowSlice, {b, r});
    expectOneOwner(acc, {b, r, 32});
    expectOneOwner(rowSlice, {b, r});
    expectOneOwner(bOp, {b, 64, 32});
    // Warp w holds matrix w mod B.
    EXPECT_EQ(acc.getCoordinates({b, r, 32}, 32 * (b + 1) + 5, 0)[0],
              (b + 1) % b);
    // Q, replicated over the B column warps of a 2-D layout, is in every
    // matrix of the batch already; a tile split over the columns is not.
    MmaLayoutAttr flat = mma(rows, b);
    EXPECT_TRUE(getBroadcastSources(
        OperandLayoutAttr::get(&ctx, OperandKind::A, flat), {r, 64}, a,
        {b, r, 64}));
    EXPECT_TRUE(getBroadcastSources(SliceLayoutAttr::get(&ctx, 1, flat), {r},
                                    rowSlice, {b, r}));
    EXPECT_FALSE(getBroadcastSources(flat, {r, 8 * b}, acc, {b, r, 8 * b}));
    // A matrix's columns fold within each thread, as a 2-D tile's do.
    std::optional<SmallVector<int64_t>> targets =
        getFoldTargets(acc, {b, r, 64}, {b, r, 8});
    ASSERT_TRUE(targets);
    EXPECT_EQ(targets->size(), 32u);
  }
  auto loc = UnknownLoc::get(&ctx);
  TileType bad;
  std::string message = diagnosticOf([&] {
    bad = TileType::getChecked([&] { return emitError(loc); }, &ctx,
                               ArrayRef<int64_t>{2, 16, 8},
                               Type(Float32Type::get(&ctx)),
                               Attribute(batched(4, 1)));
  });
  EXPECT_FALSE(bad);
  EXPECT_NE(message.find("a batch of 4 matrices"), std::string::npos)
      << message;
}

} // namespace
