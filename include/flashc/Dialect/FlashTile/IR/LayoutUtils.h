//===- LayoutUtils.h - Questions about pairs of layouts ---------*- C++ -*-===//
//
// What the lowering of a layout conversion needs to know: whether every
// value a thread holds in one layout is held by the same thread in the
// other, and where. Also how the dialect's messages print a shape.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_DIALECT_FLASHTILE_IR_LAYOUTUTILS_H
#define FLASHC_DIALECT_FLASHTILE_IR_LAYOUTUTILS_H

#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"

#include "mlir/IR/AffineExpr.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir {
namespace flash_tile {

/// For a tile of `shape` converted from layout `from` to layout `to`: when
/// every thread already holds each value it must hold in `to` (the same
/// warps, and for each of the thread's values in `to` a value at the same
/// coordinates in `from`), the index in `from` of each of its values in
/// `to`, which is the same list for every thread. Otherwise (values must
/// move between threads), nullopt.
///
/// The accumulator of an MMA and the A operand of the same MMA are such a
/// pair: FA2's S becomes P's operand by repacking registers.
std::optional<llvm::SmallVector<int64_t>>
getInThreadPermutation(LayoutAttrInterface from, LayoutAttrInterface to,
                       llvm::ArrayRef<int64_t> shape);

/// For a tile of `fromShape` in layout `from` broadcast to a batch of
/// copies, `toShape` = [B] + `fromShape` in layout `to`: when every thread
/// already holds, for each of its values in `to`, the source value at the
/// same coordinates without the batch, the index in `from` of each (the
/// same list for every thread); otherwise nullopt.
std::optional<llvm::SmallVector<int64_t>>
getBroadcastSources(LayoutAttrInterface from, llvm::ArrayRef<int64_t> fromShape,
                    LayoutAttrInterface to, llvm::ArrayRef<int64_t> toShape);

/// For a tile of `sourceShape` folded into `resultShape` (the same leading
/// extents, a divisor of the last one) in the same layout: when every
/// thread holds the result element each of its source values folds into
/// (column c to c mod W), the index among its result values of each of its source
/// values (the same list for every thread); otherwise nullopt.
std::optional<llvm::SmallVector<int64_t>>
getFoldTargets(LayoutAttrInterface layout, llvm::ArrayRef<int64_t> sourceShape,
               llvm::ArrayRef<int64_t> resultShape);

/// The part of a layout's coordinates that depends on the thread: for a
/// tile of `shape`, one expression per dimension of the thread index `d0`
/// (in [0, 32 * warps)) such that the coordinates of a thread's value
/// `element` are these offsets plus `getCoordinates(shape, 0, element)`.
/// Every layout of the dialect splits so; the lowering computes the offsets
/// once per thread and adds constants per value.
llvm::SmallVector<AffineExpr> getThreadOffsets(LayoutAttrInterface layout,
                                               llvm::ArrayRef<int64_t> shape);

/// Where a layout holds each element more than once (a slice in the lanes
/// of a quad, an operand in every warp of the other dimension): conditions
/// on the thread index `d0`, each an expression that is 0 for the one
/// thread of each element's holders that owns it (the one a store lets
/// write). Empty when every element has one holder.
llvm::SmallVector<AffineExpr> getOwnerConditions(LayoutAttrInterface layout);

/// The row-major index of `coords` in a tile of `shape`.
int64_t linearize(llvm::ArrayRef<int64_t> coords,
                  llvm::ArrayRef<int64_t> shape);

/// A shape as the dialect's diagnostics print it: "64x8".
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// The largest power of two, up to a warp's 32 lanes, that divides `runs`:
/// the lanes a warp spreads over a row's runs in a blocked layout.
int64_t getLanesOver(int64_t runs);

/// The blocked layout that copies an `rows x cols` stage of
/// `elementBytes`-byte elements with `warps` warps: runs of 16 bytes, a
/// warp's lanes over a row's runs first (as many as a power of two of them
/// divides), or of 8 or 4 bytes where 16-byte runs do not spread evenly
/// over every thread (16 rows of 12 chunks are 1.5 chunks a thread of 4
/// warps). Rows of `sourceCols` that are not whole 16-byte chunks go
/// element by element. No run is longer than `alignment` bytes, the
/// source's (a run of 2 bytes is an element). Where a stage has too few
/// rows for every warp (16 keys for 8 warps), the warps split its columns
/// too; the first layout, longest runs first, that covers the stage evenly
/// is taken.
BlockedLayoutAttr getCopyLayout(MLIRContext *ctx, int64_t rows, int64_t cols,
                                int64_t sourceCols, int64_t elementBytes,
                                int64_t warps, int64_t alignment = 16);

/// The placement of a shared buffer's rows of `cols` elements of
/// `elementBytes` bytes: 16-byte chunks, XOR-swizzled over 8 rows (in runs
/// of 4 or 2 rows where a row has 2 or 4 chunks) where a row has a power
/// of two of them (one chunk: no swizzle), else each row padded by a chunk
/// (flashc::getSharedRowElements); each puts the 8 rows an ldmatrix reads
/// in 8 different bank groups. Null where the rows are not whole 16-byte
/// chunks.
SwizzledLayoutAttr getSharedPlacement(MLIRContext *ctx, int64_t cols,
                                      int64_t elementBytes);

/// Whether a warpgroup MMA can read rows of `cols` elements of
/// `elementBytes` bytes: whole rows of one of the 128-, 64- or 32-byte
/// swizzles (flashc::getWarpgroupSwizzleBytes), one or several.
bool hasWarpgroupRows(int64_t cols, int64_t elementBytes);

/// The placement of such rows that a warpgroup MMA reads and the TMA fills
/// in the widest of those swizzles that divides them (W bytes): 16-byte
/// chunks swizzled over 8 rows of 128 bytes (W / 16 phases of 128 / W
/// rows), rows wider than W in panels of W bytes.
SwizzledLayoutAttr getWarpgroupPlacement(MLIRContext *ctx, int64_t cols,
                                         int64_t elementBytes);

/// The swizzle in bytes (128, 64 or 32) of a buffer placed by
/// getWarpgroupPlacement, from its placement: its panel's bytes, or its
/// row's where it has one panel. 0 for other placements.
int64_t getWarpgroupSwizzleBytes(SwizzledLayoutAttr layout, int64_t cols,
                                 int64_t elementBytes);

} // namespace flash_tile
} // namespace mlir

#endif // FLASHC_DIALECT_FLASHTILE_IR_LAYOUTUTILS_H
