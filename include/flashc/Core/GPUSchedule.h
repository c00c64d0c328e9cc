//===- GPUSchedule.h - The CTA shape of flashc's GPU kernels ----*- C++ -*-===//
//
// One place decides how a GPU attention kernel is laid out, so that the
// tiling pass (which fixes Br and Bc in the IR), the NVGPU conversion (which
// builds the warps) and the cost report agree:
//
//  - A CTA computes a Q tile of G x Br rows (the G query heads of a GQA
//    group packed as rows), cut into 16-row MMA tiles ("row tiles").
//  - Each warp owns one row tile (or two: "wide warps", 32 rows each, on
//    the flash_tile path) and a share of the KV block's columns: prefill
//    tiles have 4 (or more) row tiles and one warp per row tile or pair, so
//    no softmax state is shared between warps; decode tiles have one or two
//    row tiles and split the KV block's columns between "kv warps", whose
//    partial states are merged through shared memory at the end.
//  - K and V blocks of Bc keys are double-buffered in shared memory; Q is
//    kept in registers for head dims up to 128 and re-read from shared
//    memory per KV block beyond that (the flash_tile path keeps it in
//    registers throughout). An sm_90a TMA store of O stages it in the Q
//    region where its rows are Q's; every other output goes from registers
//    to global memory, so the shared memory is Q's rows and the K and V
//    stages (the f32 partials of a split KV loop take none).
//
// Dependency-free (C++17), like the runtime that reads the same figures.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TARGET_GPUSCHEDULE_H
#define FLASHC_TARGET_GPUSCHEDULE_H

#include <algorithm>
#include <cstdint>
#include <string>

namespace flashc {

/// The largest head dimension (D or Dv) the GPU kernels support.
inline constexpr int64_t kMaxGPUHeadDim = 256;
/// The largest number of query rows (G x Br) of one CTA's tile.
inline constexpr int64_t kMaxGPUTileRows = 128;
/// A row of the 128-byte swizzle, the widest that sm_90a's warpgroup MMAs
/// (and the TMA) read shared memory in: rows of whole 128-byte rows are
/// read as they are, wider ones in panels of 128 bytes.
inline constexpr int64_t kWarpgroupRowBytes = 128;
/// The swizzle, in bytes, of a buffer whose rows of `rowBytes` warpgroup
/// MMAs read and the TMA fills: the widest of the 128-, 64- and 32-byte
/// swizzles whose row divides the buffer's (rows wider than it are stored
/// as panels of its width), or 0 where none does (rows that are not whole
/// 32-byte units, a k-step of 16 16-bit elements).
inline int64_t getWarpgroupSwizzleBytes(int64_t rowBytes) {
  for (int64_t bytes = kWarpgroupRowBytes; bytes >= 32; bytes /= 2)
    if (rowBytes > 0 && rowBytes % bytes == 0)
      return bytes;
  return 0;
}
/// The swizzle's period of 8 such rows, which the buffers a warpgroup MMA
/// reads start on (the lowering aligns the kernel's buffers to it at run
/// time, within as many bytes more of shared memory).
inline constexpr int64_t kWarpgroupSharedAlignment = 8 * kWarpgroupRowBytes;
/// The bytes of an mbarrier.
inline constexpr int64_t kMbarrierBytes = 8;
/// The most an sm_90a kernel's shared memory holds beyond its buffers
/// (GPUTileConfig::sharedBytes) with `stages` K and V stages: the
/// warpgroup MMAs' alignment, and the mbarriers of the TMA copies (Q's
/// one, each K and V stage's) and of the stages the consumers release.
inline int64_t getWarpgroupSharedReserve(int64_t stages) {
  return kWarpgroupSharedAlignment + kMbarrierBytes * (4 * stages + 1);
}
/// The threads of a warpgroup (four warps), the unit of sm_90a's warpgroup
/// MMAs and of `setmaxnreg`.
inline constexpr int64_t kWarpgroupThreads = 128;
/// An SM's 32-bit registers, which the warpgroups of a CTA that
/// redistributes them (`setmaxnreg`) share.
inline constexpr int64_t kRegistersPerSM = 65536;
/// The per-thread register counts `setmaxnreg` sets: multiples of 8 from 24
/// to 256.
inline constexpr int64_t kMinSetMaxRegisters = 24;
inline constexpr int64_t kMaxSetMaxRegisters = 256;
inline bool isSetMaxRegisterCount(int64_t registers) {
  return registers >= kMinSetMaxRegisters && registers <= kMaxSetMaxRegisters &&
         registers % 8 == 0;
}
/// The named barriers of a warp-specialised kernel's consumers: 0 is the
/// CTA's (`bar.sync 0`), 1 meets every consumer thread (a
/// `flash_tile.barrier` in their region), and from 2 on one a consumer
/// warpgroup, on which it waits for its turn at the tensor cores
/// (`flash_tile.turn_wait`) and which the warpgroup before it arrives on
/// when it passes the turn (`flash_tile.turn_pass`).
inline constexpr int64_t kConsumerBarrierId = 1;
inline constexpr int64_t kFirstTurnBarrierId = 2;
/// PTX's named barriers a CTA: ids 0 to 15.
inline constexpr int64_t kNamedBarriers = 16;
/// Rows of one MMA tile (mma.m16n8k16).
inline constexpr int64_t kMmaRows = 16;
/// The stages of the K and V buffers that a kernel's KV loop is pipelined
/// over (flash-tile-pipeline): from double buffering to four.
inline constexpr int64_t kMinPipelineStages = 2;
inline constexpr int64_t kMaxPipelineStages = 4;
inline bool isPipelineStageCount(int64_t stages) {
  return stages >= kMinPipelineStages && stages <= kMaxPipelineStages;
}
/// Why `stages` is not a stage count ("stages is 2 to 4, not 5"), or an
/// empty string when it is one: the `stages` options' message.
inline std::string whyNotPipelineStageCount(int64_t stages) {
  if (isPipelineStageCount(stages))
    return "";
  return "stages is " + std::to_string(kMinPipelineStages) + " to " +
         std::to_string(kMaxPipelineStages) + ", not " + std::to_string(stages);
}

/// The byte alignment a GPU kernel assumes of the addresses of q, k, v and
/// out and of their row, head and batch strides (the `alignment` option):
/// 16, which TMA and 16-byte cp.async need, down to 2, one f16 or bf16
/// element, read element by element.
inline constexpr int64_t kMaxGlobalAlignment = 16;
inline constexpr int64_t kMinGlobalAlignment = 2;
inline bool isGlobalAlignment(int64_t bytes) {
  return bytes >= kMinGlobalAlignment && bytes <= kMaxGlobalAlignment &&
         (bytes & (bytes - 1)) == 0;
}
/// Why `bytes` is not an alignment option, or an empty string.
inline std::string whyNotGlobalAlignment(int64_t bytes) {
  if (isGlobalAlignment(bytes))
    return "";
  return "alignment is 16, 8, 4 or 2 bytes, not " + std::to_string(bytes);
}
/// Whether rows of `cols` elements of `elementBytes` are whole 16-byte
/// units: the GPU kernels copy and store such rows in runs of up to 16
/// bytes (by TMA on sm_90a), and the runtime checks the alignment of the
/// tensors that hold them; other rows go element by element.
inline bool hasWholeChunkRows(int64_t cols, int64_t elementBytes) {
  return cols * elementBytes % kMaxGlobalAlignment == 0;
}
/// What a kernel built for `alignment` may assume of the address and
/// strides of a tensor with rows of `cols` elements of `elementBytes`:
/// that alignment (at least an element) for rows of whole 16-byte units,
/// an element's for others.
inline int64_t getRowAlignment(int64_t cols, int64_t elementBytes,
                               int64_t alignment) {
  return hasWholeChunkRows(cols, elementBytes)
             ? std::clamp(alignment, elementBytes, kMaxGlobalAlignment)
             : elementBytes;
}
/// The largest power of two, at most 16, that divides `bytes` (16 for 0).
inline int64_t getAlignmentOf(uint64_t bytes) {
  int64_t a = kMaxGlobalAlignment;
  while (a > 1 && bytes % static_cast<uint64_t>(a) != 0)
    a /= 2;
  return a;
}

/// How far (in log2 units) the GPU kernels let a row's running maximum
/// grow past the maximum its P and O are kept against before rescaling
/// them: P = 2^(s - m) then stays at most 2^threshold, which f16 holds up
/// to 2^15. 0 rescales whenever the maximum grows.
inline constexpr int64_t kMaxRescaleThreshold = 15;
/// Why `threshold` is not a rescale threshold, or an empty string.
inline std::string whyNotRescaleThreshold(int64_t threshold) {
  if (threshold >= 0 && threshold <= kMaxRescaleThreshold)
    return "";
  return "rescale-threshold is 0 to " + std::to_string(kMaxRescaleThreshold) +
         " (log2 of how far P may grow past 1 before O is rescaled), not " +
         std::to_string(threshold);
}

/// Elements per shared-memory row holding `cols` elements of `elementBytes`:
/// rows with a power-of-two number of 16-byte chunks keep their width
/// (XOR-swizzled from 2 chunks on; 8 rows of one chunk are 128 contiguous
/// bytes); others are padded by one chunk. Each puts the 8 rows an
/// ldmatrix reads in 8 different bank groups.
inline int64_t getSharedRowElements(int64_t cols, int64_t elementBytes) {
  int64_t chunkElems = 16 / elementBytes;
  int64_t chunks = cols / chunkElems;
  bool pow2 = chunks >= 1 && (chunks & (chunks - 1)) == 0;
  return pow2 ? cols : cols + chunkElems;
}

struct GPUTileConfig {
  int64_t group = 1;     // G: query heads packed into one tile
  /// The groups the tile's rows are laid out for (G): head-major, each
  /// group's rows groupRows() apart. On the flash_tile path a GQA tile's
  /// row tiles are rounded up to a power of two (a power of two of
  /// warps): rows past G x groupRows() belong to no group and are padding,
  /// neither read nor written. G = 3 in 128 rows packs 3 x 42.
  int64_t tileGroup = 1;
  int64_t blockQ = 0;    // Br: query rows per head
  int64_t blockKV = 0;   // Bc: keys per block
  /// 16-row MMA tiles of the tileGroup x Br rows (a GQA tile's rounded up
  /// to a power of two on the flash_tile path: tileRowTiles).
  int64_t rowTiles = 0;
  int64_t kvWarps = 1;   // warps sharing one KV block
  int64_t rowTilesPerWarp = 1; // row tiles one warp owns (2: 32 rows)
  int64_t headDim = 0, headDimV = 0;             // D, Dv
  int64_t paddedHeadDim = 0, paddedHeadDimV = 0; // multiples of 16
  int64_t elementBytes = 2;
  /// Bytes of the forward kernel's output element: the input's, or 4 for
  /// the f32 partials of a split KV loop.
  int64_t outputBytes = 4;
  int64_t stages = 2;
  bool qInRegisters = true;
  /// Whether sm_90a's warpgroup MMAs read Q, K and V from shared memory (a
  /// tile of 64 rows or more on a chip with them): their rows are placed
  /// in panels of a swizzle's row (getWarpgroupSwizzleBytes), never
  /// padded. (A kernel built without the warpgroup MMAs pads them, as on
  /// sm_80: chooseTileSizes and flash-to-tile clear it for one.)
  bool warpgroupRows = false;

  int64_t rows() const { return group * blockQ; }
  int64_t warps() const { return rowTiles / rowTilesPerWarp * kvWarps; }
  int64_t threads() const { return 32 * warps(); }
  /// Keys of one KV block that each kv warp handles.
  int64_t warpKeys() const { return blockKV / kvWarps; }
  /// Elements per shared-memory row of the Q/staging region.
  int64_t tileRows() const { return kMmaRows * rowTiles; }
  /// Rows of one group in the tile's layout (at least Br): the rows of
  /// group g are g x groupRows() on.
  int64_t groupRows() const { return tileRows() / tileGroup; }
  /// Whether the tile has rows past its last group's (padding rows).
  bool hasPaddingRows() const { return tileGroup * groupRows() < tileRows(); }
  /// Whether `kw` kv warps can merge their states: each takes 8-column
  /// runs of Dv, and their f32 accumulators fit the K or V stages they
  /// merge through.
  static bool kvWarpsSplitDv(int64_t paddedHeadDimV, int64_t kw) {
    return paddedHeadDimV % (8 * kw) == 0;
  }
  bool kvWarpsFitStages(int64_t kw) const {
    return kw * tileRows() * paddedHeadDimV * 4 <=
           stages * blockKV * std::max(paddedHeadDim, paddedHeadDimV) *
               elementBytes;
  }

  /// Byte offsets of the shared-memory regions: Q (which a TMA store of
  /// O of the same rows reuses; other outputs go from registers to global
  /// memory), then the K and V stages. The kv-warp merge reuses the K/V
  /// region.
  /// Elements of a shared-memory row of `paddedCols` columns: padded by a
  /// chunk where their chunks are not a power of two, except in the
  /// warpgroup MMAs' panels.
  int64_t sharedRowElements(int64_t paddedCols) const {
    return warpgroupRows ? paddedCols
                         : getSharedRowElements(paddedCols, elementBytes);
  }
  int64_t qRegionBytes() const {
    return tileRows() * sharedRowElements(paddedHeadDim) * elementBytes;
  }
  int64_t kStageBytes() const {
    return blockKV * sharedRowElements(paddedHeadDim) * elementBytes;
  }
  int64_t vStageBytes() const {
    return blockKV * sharedRowElements(paddedHeadDimV) * elementBytes;
  }
  int64_t kvRegionBytes() const {
    return stages * (kStageBytes() + vStageBytes());
  }
  /// f32 partial accumulators, maxima and sums of every kv warp.
  int64_t mergeBytes() const {
    return kvWarps > 1 ? kvWarps * tileRows() * (paddedHeadDimV + 2) * 4 : 0;
  }
  int64_t sharedBytes() const {
    return qRegionBytes() + std::max(kvRegionBytes(), mergeBytes());
  }
};

inline int64_t roundUpTo(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// The largest power of two not above `v` (>= 1).
inline int64_t floorPowerOf2(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v)
    p *= 2;
  return p;
}

/// The smallest power of two not below `v` (>= 1).
inline int64_t ceilPowerOf2(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

/// The 16-row MMA tiles of a tile packing `group` heads' `blockQ` rows
/// each: on the flash_tile path (`wideWarps`), a GQA tile's are rounded up
/// to a power of two (the CTA's warps), the rows past the groups' padding
/// (GPUTileConfig::groupRows).
inline int64_t tileRowTiles(int64_t group, int64_t blockQ, bool wideWarps) {
  int64_t tiles = std::max<int64_t>(
      1, (std::max<int64_t>(group, 1) * blockQ + kMmaRows - 1) / kMmaRows);
  return wideWarps && group > 1 ? ceilPowerOf2(tiles) : tiles;
}

/// The widest matrix (padded head dim or keys of a block) of a prefill
/// tile that gives a warp 32 rows ("wide warps").
inline constexpr int64_t kMaxWideWarpColumns = 128;
/// The most f32 accumulator columns, S's keys and O's Dv, of a wide warp:
/// a thread holds (keys + Dv) of them for 32 rows. ptxas fits 64 + 64
/// (D = 64, Q in registers) and 32 + 128 (D = 128, Q re-read per block) in
/// 255 registers without spilling; 64 + 128 and 128 + 64 spill.
inline constexpr int64_t kMaxWideWarpAccumulatorColumns = 160;

/// The 16-row MMA tiles one warp owns (1 or 2) of a CTA's tile of
/// `tileRows` rows split between `kvWarps` kv warps, whose MMA operands and
/// accumulators have at most `widestColumns` columns (the padded head dims
/// and the keys of a block) and whose S and O accumulators have
/// `accumulatorColumns` columns together (keys + Dv): 2 ("wide warps", 32
/// rows) for a prefill tile of 128 rows within kMaxWideWarpColumns and
/// kMaxWideWarpAccumulatorColumns, so that a warp reads each K and V
/// fragment for two row tiles; 1 otherwise. flash-tile-assign-layouts
/// chooses the warps of a kernel by this rule and the cost model counts
/// them by it.
inline int64_t chooseRowTilesPerWarp(int64_t tileRows, int64_t kvWarps,
                                     int64_t widestColumns,
                                     int64_t accumulatorColumns) {
  return kvWarps == 1 && tileRows == kMaxGPUTileRows &&
                 widestColumns <= kMaxWideWarpColumns &&
                 accumulatorColumns <= kMaxWideWarpAccumulatorColumns
             ? 2
             : 1;
}

/// Completes a configuration from its block sizes: the row tiles, the kv
/// warps (the largest power of two that keeps at most 4 warps busy, divides
/// Bc into multiples of 16 and Dv into multiples of 8, and whose f32
/// accumulators fit the K or V stages they merge through),
/// the row tiles per warp and the padded head dims. `outputBytes` is the
/// forward kernel's output element (4 for split partials, else
/// `elementBytes`). With `wideWarps` (the flash_tile path's schedule, which
/// builds every head dim), a
/// prefill tile of 128 rows within chooseRowTilesPerWarp's limits gives
/// each of its 4 warps two row tiles, and Q stays in registers at every
/// head dim of a prefill tile (at D = 256 too, where ptxas fits Q's
/// fragments without spilling; the builder re-reads Q there) but that of
/// wide warps beyond D = 64, whose 32 rows of Q are read again from
/// shared memory per block. With `warpgroup` (sm_90a), a tile of 64 rows
/// or more has the warpgroup MMAs' unpadded rows (warpgroupRows).
inline GPUTileConfig makeGPUTileConfig(int64_t group, int64_t headDim,
                                       int64_t headDimV, int64_t elementBytes,
                                       int64_t blockQ, int64_t blockKV,
                                       int64_t outputBytes,
                                       bool wideWarps = false,
                                       bool warpgroup = false) {
  GPUTileConfig c;
  c.outputBytes = outputBytes;
  c.group = std::max<int64_t>(group, 1);
  c.tileGroup = c.group;
  c.blockQ = blockQ;
  c.blockKV = blockKV;
  c.headDim = headDim;
  c.headDimV = headDimV;
  c.paddedHeadDim = roundUpTo(std::max<int64_t>(headDim, 1), 16);
  c.paddedHeadDimV = roundUpTo(std::max<int64_t>(headDimV, 1), 16);
  c.elementBytes = elementBytes;
  c.rowTiles = tileRowTiles(c.group, blockQ, wideWarps);
  // sm_90a's warpgroup MMAs take a warpgroup's 64 rows at least.
  c.warpgroupRows = warpgroup && c.tileRows() >= 64;
  // Kv warps: each takes 16-key multiples of the block and, when they
  // merge, 8-column multiples of Dv, and their f32 accumulators must fit
  // the K or V stages they merge through.
  c.kvWarps = 1;
  for (int64_t kw = floorPowerOf2(std::max<int64_t>(1, 4 / c.rowTiles));
       kw > 1; kw /= 2) {
    if (blockKV % (16 * kw) == 0 &&
        GPUTileConfig::kvWarpsSplitDv(c.paddedHeadDimV, kw) &&
        c.kvWarpsFitStages(kw)) {
      c.kvWarps = kw;
      break;
    }
  }
  c.qInRegisters = c.paddedHeadDim <= 128;
  if (wideWarps) {
    c.rowTilesPerWarp = chooseRowTilesPerWarp(
        c.tileRows(), c.kvWarps,
        std::max({c.paddedHeadDim, c.paddedHeadDimV, blockKV}),
        blockKV + c.paddedHeadDimV);
    // A decode tile's kv warps each hold all of Dv's accumulators and
    // their share of K and V: beyond D = 128 Q does not fit beside them.
    // Nor do 32 rows of Q beyond D = 64 beside a wide warp's accumulators.
    c.qInRegisters = (c.kvWarps == 1 || c.paddedHeadDim <= 128) &&
                     !(c.rowTilesPerWarp == 2 && c.paddedHeadDim > 64);
  }
  return c;
}

/// The default tiles of a kernel. `decode` selects the flash-decoding tile:
/// Br small enough that the group's rows of a few queries fill one or two
/// MMA tiles, the KV block split between kv warps; its output is sized as
/// f32 partials (a decode kernel may split its KV loop).
///
/// Prefill KV blocks: 128 keys up to D = 64, 64 up to 128, and 16 beyond.
/// With `wideWarps` (the flash_tile path, see makeGPUTileConfig), up to
/// D = 128 a group of up to 128 heads gets 128 rows (floor(128 / G) per head),
/// 4 warps of 32: in blocks of 64 keys up to D = 64 (the 32 x 64 scores, 32 x
/// 64 accumulators, Q and the fragments fit 255 registers without spilling; 96
/// and 128 keys spill in the causal, log-sum-exp and GQA variants), of 32 keys
/// up to 128 (32 x 32 scores and 32 x 128 accumulators, Q re-read per block; 64
/// keys spill, and their 96 KB of shared memory at D = 128 would leave one CTA
/// per sm_80 SM). Beyond 128 a thread holds 128 f32 accumulators for Dv = 256;
/// with 32 keys ptxas used all 255 registers and spilled in some variants (8
/// bytes in sm_90a causal GQA kernels with the log-sum-exp), with 16 it uses
/// 228 and spills nothing, and the 64 KB of shared memory let two CTAs share an
/// SM on sm_80 and sm_90a.
///
/// With `warpgroup` (sm_90a's warpgroup MMAs, with `wideWarps`), every
/// head dim (padded to 16: rows of one of the 128-, 64- or 32-byte
/// swizzles, getWarpgroupSwizzleBytes) takes 128 rows, 8 warps of 16, in blocks
/// of 128 keys up to D = 128 and 64 beyond: a warpgroup reads its B operand
/// from shared memory for 64 rows, so the wider N halves the bytes read
/// per multiply-accumulate, which at 32 keys bound the D = 128 kernel by
/// shared memory (the static model of docs/KERNELS.md); 16 rows a warp
/// hold 128 x 128 scores and 128 x 128 accumulators in 255 registers (and
/// 64 x 256 at D = 256) without spilling.
inline GPUTileConfig chooseGPUTiles(int64_t group, int64_t headDim,
                                    int64_t headDimV, int64_t elementBytes,
                                    bool decode, bool wideWarps = false,
                                    bool warpgroup = false,
                                    int64_t alignment = kMaxGlobalAlignment) {
  int64_t g = std::max<int64_t>(group, 1);
  int64_t maxD = std::max(roundUpTo(headDim, 16), roundUpTo(headDimV, 16));
  int64_t blockQ, blockKV;
  if (decode) {
    blockQ = g <= kMmaRows ? kMmaRows / g : 1;
    int64_t rowTiles = tileRowTiles(g, blockQ, wideWarps);
    // As many kv warps as keep 4 warps busy and split Dv into 8-column
    // multiples for their merge (makeGPUTileConfig's rule).
    int64_t kvWarps = floorPowerOf2(std::max<int64_t>(1, 4 / rowTiles));
    while (kvWarps > 1 &&
           !GPUTileConfig::kvWarpsSplitDv(roundUpTo(headDimV, 16), kvWarps))
      kvWarps /= 2;
    int64_t warpKeys = maxD <= 64 ? 64 : maxD <= 128 ? 32 : 16;
    // Rows copied element by element (not whole 16-byte chunks, or a
    // kernel for tensors aligned to an element only: cp.async copies 4
    // bytes at least): a thread copies Bc x D / threads elements a block,
    // each a load into a register and a store; 16 keys a warp keep that
    // to the prefill tiles' count.
    auto elementwise = [&](int64_t cols) {
      return getRowAlignment(cols, elementBytes, alignment) < 4;
    };
    if (wideWarps && (elementwise(headDim) || elementwise(headDimV)))
      warpKeys = 16;
    blockKV = warpKeys * kvWarps;
  } else {
    int64_t rows = g <= 64 ? 64 : roundUpTo(g, kMmaRows);
    blockKV = maxD <= 64 ? 128 : maxD <= 128 ? 64 : 16;
    if (wideWarps && maxD <= kMaxWideWarpColumns && g <= kMaxGPUTileRows) {
      rows = kMaxGPUTileRows;
      blockKV = maxD <= 64 ? 64 : 32;
    }
    auto swizzleRows = [&](int64_t d) {
      return getWarpgroupSwizzleBytes(roundUpTo(d, 16) * elementBytes) != 0;
    };
    if (wideWarps && warpgroup && g <= kMaxGPUTileRows &&
        swizzleRows(headDim) && swizzleRows(headDimV)) {
      rows = kMaxGPUTileRows;
      blockKV = maxD <= 128 ? 128 : 64;
    }
    blockQ = std::max<int64_t>(1, rows / g);
  }
  return makeGPUTileConfig(g, headDim, headDimV, elementBytes, blockQ, blockKV,
                           decode ? 4 : elementBytes, wideWarps,
                           warpgroup && wideWarps);
}

/// Why `c` cannot be built within `sharedLimit` bytes of shared memory per
/// block, or an empty string when it can.
inline std::string checkGPUTileConfig(const GPUTileConfig &c,
                                      int64_t sharedLimit) {
  auto str = [](int64_t v) { return std::to_string(v); };
  if (c.headDim > kMaxGPUHeadDim || c.headDimV > kMaxGPUHeadDim)
    return "head dims D=" + str(c.headDim) + ", Dv=" + str(c.headDimV) +
           " exceed the " + str(kMaxGPUHeadDim) +
           " the GPU kernels support";
  if (c.elementBytes != 2)
    return "the GPU kernels take f16 or bf16 inputs, not " +
           str(8 * c.elementBytes) + "-bit floats";
  if (c.blockQ < 1 || c.tileRows() > kMaxGPUTileRows)
    return "a Q tile of " + str(c.group) + " x " + str(c.blockQ) + " rows" +
           (c.tileRows() != c.group * c.blockQ
                ? " (" + str(c.tileRows()) + " with its padding)"
                : std::string()) +
           " is outside 1.." + str(kMaxGPUTileRows) + " rows";
  if (c.blockKV < 16 || c.blockKV % (16 * c.kvWarps) != 0)
    return "a KV block of " + str(c.blockKV) +
           " keys is not a multiple of 16 per kv warp (" + str(c.kvWarps) +
           " kv warps)";
  if (c.warps() > 16)
    return "the tile needs " + str(c.warps()) + " warps, more than 16";
  if (c.sharedBytes() > sharedLimit)
    return "a block of " + str(c.rows()) + " query rows x " +
           str(c.blockKV) + " keys with D=" + str(c.headDim) +
           ", Dv=" + str(c.headDimV) + " needs " + str(c.sharedBytes()) +
           " bytes of shared memory, the target has " + str(sharedLimit);
  return "";
}

} // namespace flashc

#endif // FLASHC_TARGET_GPUSCHEDULE_H
