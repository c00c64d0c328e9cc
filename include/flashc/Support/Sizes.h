//===- Sizes.h - Checked size arithmetic and attention limits ---*- C++ -*-===//
//
// Every size flashc computes from user input (element counts, byte sizes,
// strides, grid sizes, block counts) goes through these helpers, so that a
// shape too large for 64 bits is an error rather than a wrapped value. The
// limits on attention shapes live here too; flashc::checkProblemSizes
// (flashc/Core/Problem.h) checks a problem against them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SUPPORT_SIZES_H
#define FLASHC_SUPPORT_SIZES_H

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace flashc {

/// a * b, or nothing when it overflows int64.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// a + b, or nothing when it overflows int64.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// The product of non-negative factors, or nothing when one is negative or
/// the product overflows int64.
inline std::optional<int64_t>
checkedProduct(std::initializer_list<int64_t> factors) {
  int64_t r = 1;
  for (int64_t f : factors)
    if (f < 0 || __builtin_mul_overflow(r, f, &r))
      return std::nullopt;
  return r;
}

/// ceil(a / b) for a >= 0 and b > 0, without the overflow of (a + b - 1) / b.
inline int64_t ceilDiv(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

/// The largest head dim (D and Dv) any flashc target compiles: kernels
/// unroll over the head dim, so it must be bounded. GPU kernels support
/// less (256).
constexpr int64_t kMaxHeadDim = 512;

/// The largest tensor flashc addresses, in bytes: offsets within it plus a
/// tile never overflow the kernels' 64-bit index arithmetic.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 60;

/// Bounds on the schedule options (block sizes, split counts, threads):
/// tiles are compile-time buffers and loops, so a block of 2^40 rows is
/// not a schedule but an out-of-memory.
constexpr int64_t kMaxBlockSize = int64_t(1) << 16;
constexpr int64_t kMaxSplits = int64_t(1) << 16;
/// OpenMP aborts the process when it cannot create a worker thread, and
/// 1024 workers' stacks and malloc arenas pass a 4 GiB address-space
/// limit; 256 stay well inside it (and above the hardware threads of one
/// CPU socket).
constexpr int64_t kMaxThreads = 256;
constexpr int64_t kMaxSramBytes = int64_t(1) << 40;

/// Bytes from a strided tensor's first element to one past its last
/// (0 when a size is 0), or nothing when a size or stride is negative or
/// the extent passes kMaxTensorBytes.
std::optional<int64_t> getStridedExtentBytes(const int64_t *sizes,
                                             const int64_t *strides, int rank,
                                             int64_t elementBytes);

/// Whether the byte ranges [a, a + aBytes) and [b, b + bBytes) share a
/// byte.
inline bool rangesOverlap(const void *a, uint64_t aBytes, const void *b,
                          uint64_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes && bBytes && x < y + bBytes && y < x + aBytes;
}

/// "NAME must be from LO to HI, got V", or an empty string when V is in
/// range.
std::string checkRange(int64_t value, const char *name, int64_t lo,
                       int64_t hi);

} // namespace flashc

#endif // FLASHC_SUPPORT_SIZES_H
