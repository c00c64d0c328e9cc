//===- TensorMap.h - TMA tensor maps in the simulator's format --*- C++ -*-===//
//
// A Hopper kernel copies tiles between global and shared memory with the
// tensor memory accelerator (`cp.async.bulk.tensor`), which reads the shape
// of the global tensor, the tile ("box") and the shared-memory swizzle from
// a 128-byte tensor map that the host builds with the CUDA driver's
// cuTensorMapEncodeTiled. The hardware's encoding of those 128 bytes is
// opaque; the simulator uses its own (TensorMap below), which the stand-in
// CUDA driver's cuTensorMapEncodeTiled writes (encodeTensorMapTiled) and
// the simulator's TMA reads (decodeTensorMap). Both check the rules that
// cuda.h documents for cuTensorMapEncodeTiled, so a map that the simulator
// accepts is one that the driver accepts.
//
// What the simulator implements: tiled maps of rank 1 to 5 over the integer
// and floating-point element types (not the packed 4- and 6-bit ones),
// without interleave, with no swizzle or the 32-, 64- and 128-byte swizzles
// (not the 128-byte swizzles of 32- and 64-byte atoms), out-of-bounds
// elements filled with zeros or NaN. Anything else is reported as
// unsupported, never encoded wrongly.
//
// Plain C++17, like the rest of the simulator.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SIMULATOR_TENSORMAP_H
#define FLASHC_SIMULATOR_TENSORMAP_H

#include "flashc/Support/Status.h"

#include <cstdint>

namespace flashc {
namespace sim {

/// cuda.h's CUtensorMapDataType values.
enum class TensorMapDataType : uint32_t {
  UInt8 = 0,
  UInt16,
  UInt32,
  Int32,
  UInt64,
  Int64,
  Float16,
  Float32,
  Float64,
  BFloat16,
  Float32Ftz,
  TFloat32,
  TFloat32Ftz,
  // 13-15: the packed 4- and 6-bit types (not simulated).
};

/// cuda.h's CUtensorMapSwizzle values the simulator implements (4-6, the
/// 128-byte swizzles of 32- and 64-byte atoms, are not).
enum class TensorMapSwizzle : uint32_t { None = 0, B32, B64, B128 };

/// cuda.h's CUtensorMapFloatOOBfill values.
enum class TensorMapOobFill : uint32_t { None = 0, NaNRequestZeroFma };

/// The most dimensions a tensor map has.
constexpr unsigned kTensorMapMaxRank = 5;
/// The size and alignment the driver API gives a CUtensorMap.
constexpr unsigned kTensorMapBytes = 128;
/// The alignment cuTensorMapEncodeTiled requires of the map it writes.
constexpr unsigned kTensorMapAlign = 64;

/// The simulator's encoding of a tiled tensor map (the first bytes of the
/// 128; the rest are zero).
struct TensorMap {
  static constexpr uint32_t kMagic = 0x414d5446; // "FTMA", little-endian
  uint32_t magic = 0;
  uint8_t rank = 0;
  uint8_t elementBytes = 0;
  uint8_t dataType = 0;
  uint8_t swizzle = 0;
  uint8_t oobFill = 0;
  uint8_t l2Promotion = 0;
  uint8_t reserved[6] = {};
  uint64_t globalAddress = 0;
  /// Elements along each dimension, innermost first.
  uint64_t globalDim[kTensorMapMaxRank] = {};
  /// Bytes between consecutive indices of each dimension; [0] is the
  /// element size.
  uint64_t globalStride[kTensorMapMaxRank] = {};
  /// The box: elements traversed along each dimension.
  uint16_t boxDim[kTensorMapMaxRank] = {};
  /// The traversal step along each dimension ([0] is ignored, as by the
  /// hardware without interleave).
  uint8_t elementStrides[kTensorMapMaxRank] = {};

  /// Elements of the box along `dim` that land in shared memory:
  /// ceil(boxDim / elementStrides) (all of dimension 0).
  uint32_t boxCount(unsigned dim) const;
  /// Bytes the box occupies in shared memory (and a load's transaction
  /// count).
  uint64_t boxBytes() const;
  /// Bytes of one row of the box (dimension 0) in shared memory.
  uint32_t boxRowBytes() const { return boxDim[0] * uint32_t(elementBytes); }
};
static_assert(sizeof(TensorMap) <= kTensorMapBytes, "a map fits 128 bytes");

/// The bytes of an element of `type`, or 0 for a type the simulator does
/// not implement.
unsigned tensorMapElementBytes(uint32_t type);

/// The arguments of cuTensorMapEncodeTiled, with cuda.h's meanings: sizes
/// innermost first; `globalStrides` has rank - 1 entries (byte strides of
/// dimensions 1 and up).
struct TensorMapTiledArgs {
  uint32_t dataType = 0;
  uint32_t rank = 0;
  uint64_t globalAddress = 0;
  const uint64_t *globalDim = nullptr;
  const uint64_t *globalStrides = nullptr;
  const uint32_t *boxDim = nullptr;
  const uint32_t *elementStrides = nullptr;
  uint32_t interleave = 0;
  uint32_t swizzle = 0;
  uint32_t l2Promotion = 0;
  uint32_t oobFill = 0;
};

/// Checks `args` against cuTensorMapEncodeTiled's documented rules and
/// writes the map into the 128 bytes at `out` (which must be 64-byte
/// aligned). The error (InvalidArgument, or Unsupported for what the
/// simulator does not implement) names the argument and the rule.
Status encodeTensorMapTiled(void *out, const TensorMapTiledArgs &args);

/// The map in the 128 bytes at `bytes`, checked again (the bytes come from
/// simulated memory, which a kernel may have overwritten).
Result<TensorMap> decodeTensorMap(const void *bytes);

/// The shared-memory address that byte address `addr` of an unswizzled
/// tile lands at under `swizzle`: the 16-byte chunk index within each
/// span of 32, 64 or 128 bytes is XORed with the span's row within a
/// 256-, 512- or 1024-byte block (address bits [4, 4+n) ^= bits [7, 7+n),
/// n = 1, 2, 3). The function of the address, as in the hardware, so a
/// tile written by TMA and read by wgmma through a descriptor agree
/// wherever the tile is placed; an involution.
inline uint32_t swizzleAddress(uint32_t addr, TensorMapSwizzle swizzle) {
  unsigned bits = static_cast<unsigned>(swizzle); // 0, 1, 2, 3
  if (bits == 0)
    return addr;
  uint32_t mask = (1u << bits) - 1;
  return addr ^ (((addr >> 7) & mask) << 4);
}

/// Calls `f(boxOffset, globalAddress, inBounds)` for each element of the
/// box at `coords` (rank signed element coordinates, innermost first):
/// `boxOffset` is the element's byte offset in the unswizzled shared tile
/// (box elements packed innermost first), `globalAddress` its address in
/// the global tensor when `inBounds`. Visits in order of boxOffset.
template <typename F>
void forEachBoxElement(const TensorMap &map, const int32_t *coords, F &&f) {
  uint32_t count[kTensorMapMaxRank] = {1, 1, 1, 1, 1};
  for (unsigned d = 0; d < map.rank; ++d)
    count[d] = map.boxCount(d);
  uint64_t offset = 0;
  for (uint32_t i4 = 0; i4 < count[4]; ++i4)
    for (uint32_t i3 = 0; i3 < count[3]; ++i3)
      for (uint32_t i2 = 0; i2 < count[2]; ++i2)
        for (uint32_t i1 = 0; i1 < count[1]; ++i1)
          for (uint32_t i0 = 0; i0 < count[0]; ++i0) {
            const uint32_t index[kTensorMapMaxRank] = {i0, i1, i2, i3, i4};
            bool inBounds = true;
            uint64_t address = map.globalAddress;
            for (unsigned d = 0; d < map.rank; ++d) {
              uint32_t step = d == 0 ? 1 : map.elementStrides[d];
              int64_t c = int64_t(coords[d]) + int64_t(index[d]) * step;
              if (c < 0 || uint64_t(c) >= map.globalDim[d]) {
                inBounds = false;
                break;
              }
              address += uint64_t(c) * map.globalStride[d];
            }
            f(offset, address, inBounds);
            offset += map.elementBytes;
          }
}

} // namespace sim
} // namespace flashc

#endif // FLASHC_SIMULATOR_TENSORMAP_H
