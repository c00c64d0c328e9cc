//===- FlashTileLayoutTest.cpp - flash_tile layouts through their API -----===//
//
// The layout interface's figures (warps, elements per thread) for the
// layouts of FA2-style schedules, and the tile type's checks through the
// C++ API (getChecked reports, never asserts).
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

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
  auto swizzled = SwizzledLayoutAttr::get(&ctx, 8, 8);
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
  auto swizzled = SwizzledLayoutAttr::get(&ctx, 8, 8);
  auto kv = SharedType::get(&ctx, {2, 64, 128}, Float16Type::get(&ctx),
                            swizzled);
  EXPECT_EQ(kv.getStages(), 2);
  EXPECT_EQ(kv.getRows(), 64);
  EXPECT_EQ(kv.getColumns(), 128);
  EXPECT_EQ(kv.getSizeInBytes(), 2 * 64 * 128 * 2);
}

} // namespace
