//===- AttentionKernel.h - What a GPU kernel's CTA computes -----*- C++ -*-===//
//
// The interface between the two halves of flash-to-tile. The pass lifts
// what the tiled IR says a CTA computes (its Q tile, its KV loops with
// their bounds and masks, where the result goes) into a ForwardKernelSpec
// of kernel values, and a split-KV merge into a CombineKernelSpec;
// TileKernel.cpp writes the CTA's body from them as flash_tile ops
// (emitForwardTileBody, emitCombineTileBody), for
// flash-tile-allocate-shared and flash-tile-to-nvgpu to place and lower.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHTOTILE_ATTENTIONKERNEL_H
#define FLASHC_LIB_CONVERSION_FLASHTOTILE_ATTENTIONKERNEL_H

#include "flashc/Core/GPUSchedule.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

#include <functional>

namespace mlir {
namespace flash {
namespace gpu_kernel {

/// log2(e) and ln(2): the softmax runs in the log2 domain (exp2, log2).
inline constexpr double kLog2E = 1.4426950408889634;
inline constexpr double kLn2 = 0.6931471805599453;

/// A tile of rows (g, r) inside a flat global buffer: element (g, r, c) is
/// at `base + g * groupStride + r * rowStride + c`.
struct TileAddress {
  Value buffer; // a 1-D memref kernel argument
  Value base;   // index
  Value groupStride, rowStride;
};

/// A kernel tensor [B', H, N, C] (a 1-D memref kernel argument with its
/// strides) and where a tile's matrix starts in it (b, h, row): the tile's
/// matrix is a subview of the whole tensor, from which
/// flash-tile-use-tma reads a TMA copy's tensor and coordinates.
struct TensorOrigin {
  Value buffer;
  llvm::SmallVector<Value, 3> sizes;   // B', H, N
  llvm::SmallVector<Value, 3> strides; // of B', H and N (C's is 1)
  llvm::SmallVector<Value, 3> offsets; // b, h, row
  explicit operator bool() const { return static_cast<bool>(buffer); }
};

/// What the body of one KV loop needs for the iteration at key `j`: the
/// keys of the block that are valid (the rest are masked) and, for a
/// masked (causal diagonal) loop, the mask offset `o` of flash.attention_step
/// (column c is masked for row r when c > r + o).
struct BlockValues {
  Value validKeys;
  Value maskOffset; // null when the loop is not masked
};

struct KVLoop {
  Value lower, upper; // key range, index
  bool masked = false;
  /// Materialises the block values at the current insertion point.
  std::function<BlockValues(ImplicitLocOpBuilder &, Value j)> blockValues;
};

struct ForwardKernelSpec {
  flashc::GPUTileConfig config;
  Type elementType; // f16 or bf16 (Q, K, V)
  Type outType;     // the element type of `out` (elementType, or f32)
  double scale = 1.0;
  /// The kernel's f32 scale argument, multiplying `scale` (null: none).
  Value scaleFactor;
  /// How far (log2) a row's maximum may grow past the one its P and O are
  /// kept against before they are rescaled to the new one (0: whenever it
  /// grows).
  int64_t rescaleThreshold = 0;
  /// The bytes (16 down to 2) that q, k, v and out's addresses and strides
  /// are multiples of: their copies and stores move at most that many at
  /// a time.
  int64_t alignment = 16;

  TileAddress q;
  Value qRows; // valid rows per head of the Q tile
  /// Q, K and V as subviews of their whole tensors (K's and V's at row 0);
  /// when null, the matrices are built from the addresses above.
  TensorOrigin qOrigin, kOrigin, vOrigin;

  /// K and V: the block at key j starts at `base0 + j * rowStride`; keys at
  /// or beyond `seqKV` are never read.
  Value kBuffer, vBuffer;
  Value kBase0, vBase0, kRowStride, vRowStride;
  Value seqKV;

  llvm::SmallVector<KVLoop> loops;

  TileAddress out;
  /// `out` as a subview of its whole tensor, when it is the kernel's
  /// output (not split partials); else null.
  TensorOrigin outOrigin;
  /// The log-sum-exp tile (its rowStride used, groupStride per head); null
  /// buffer when not written.
  TileAddress lse;

  /// Of a kernel that writes split-KV partials (`out` and `lse` are
  /// theirs): where the attention's own output and log-sum-exp tiles are,
  /// which the kernel writes instead when the launch has one split
  /// (`splits` = 1), so that no combine needs to run. Null buffers when
  /// not split (or not built so).
  TileAddress finalOut, finalLse;
  Type finalOutType;
  Value splits;
};

/// What of `config` the flash_tile body does not build yet, or "" when it
/// builds it.
std::string whyNoTileBody(const flashc::GPUTileConfig &config);

/// Emits the body of the forward kernel (everything between the CTA's
/// index computations and the return) as flash_tile ops at the builder's
/// insertion point. Fails, saying what in `why` (whyNoTileBody), on a
/// kernel it does not build.
LogicalResult emitForwardTileBody(ImplicitLocOpBuilder &b,
                                  const ForwardKernelSpec &spec,
                                  std::string &why);

struct CombineKernelSpec {
  Type outType;
  int64_t headDimV = 0;
  int64_t warps = 4;
  /// Rows: r = (b * heads + h) * seqQ + n.
  int64_t heads = 0;
  Value batch, seqQ, rows, splits;
  /// parts[s][r][c] at (s * rows + r) * headDimV + c; partLse[s][r] at
  /// s * rows + r.
  Value parts, partLse;
  /// out[b, h, n, c] at b * s0 + h * s1 + n * s2 + c.
  Value out, outStrideB, outStrideH, outStrideN;
  Value lse; // null when not written; contiguous [B, H, Nq]
  /// What `out`'s address and strides are multiples of, in bytes.
  int64_t alignment = 16;
};

/// The CTA of the flash_tile combine kernel: `rows` output rows over
/// `warps` warps, `rowsPerGroup` query rows of each of `groupsPerCTA`
/// heads of one batch entry, or, `overBatch` (one head), of as many batch
/// entries. Its grid is B x heads / groupsPerCTA x ceildiv(Nq,
/// rowsPerGroup), or ceildiv(B, groupsPerCTA) x ceildiv(Nq, rowsPerGroup).
struct CombineTileShape {
  int64_t rows = 0, warps = 0, groupsPerCTA = 0, rowsPerGroup = 0;
  bool overBatch = false;
  /// Each thread's run of columns, and the threads of a warp over rows
  /// and over columns.
  int64_t run = 0, threadRows = 0, threadColumns = 0;
  /// The tile's columns: Dv, or Dv padded to a whole number of a warp's
  /// runs where fewer than 4 lanes would share a row.
  int64_t columns = 0;
  /// The splits a step of the kernel's loop reads, their loads in flight
  /// together: a power of two, up to 8 and to 64 of a thread's partial
  /// values (8 at Dv = 64, 128 and 256, 2 to 4 at 48, 80, 96, 112, 160,
  /// 192 and 224). 13 splits (32768 keys on an H200) are a step of 8 and
  /// a masked step of 5: about 3 round trips to memory instead of 13.
  int64_t splitsPerStep = 0;
};
CombineTileShape getCombineTileShape(int64_t headDimV, int64_t heads);

/// The combine kernel's register budget (`flash.max_registers`), within
/// which ptxas issues every load of a step before their first use (120
/// registers at D = 256 on sm_90a; without it ptxas keeps to 40 and
/// issues the partials of a step 4 or fewer at a time).
constexpr int64_t kCombineMaxRegisters = 128;

/// Emits the body of the combine kernel as flash_tile ops: loads of the
/// partials and their log-sum-exps, maps, and stores, for a CTA of
/// getCombineTileShape's rows.
void emitCombineTileBody(ImplicitLocOpBuilder &b, const CombineKernelSpec &spec);

} // namespace gpu_kernel
} // namespace flash
} // namespace mlir

#endif // FLASHC_LIB_CONVERSION_FLASHTOTILE_ATTENTIONKERNEL_H
