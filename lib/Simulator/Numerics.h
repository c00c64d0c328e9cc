//===- Numerics.h - Bit-exact f16/bf16 conversions and PTX math -*- C++ -*-===//
//
// Conversions between f32 and the 16-bit float formats, rounding to nearest
// even as `cvt.rn` does, and the flush-to-zero helper of `.ftz`.
//
// The `.approx` transcendental instructions (ex2, lg2, rcp, sqrt, rsqrt,
// sin, cos, tanh) are computed here in double precision and rounded once to
// f32: they are at least as accurate as the hardware's, whose documented
// maximum errors are 2 ulp (ex2.approx.ftz.f32), 2^-22.6 absolute (lg2
// near 1), 1 ulp (rcp.approx, sqrt.approx), 2^-20.9 absolute (sin, cos) and
// 2^-10.987 relative (tanh.approx). Tests comparing simulated kernels with
// the float64 reference must allow for that difference, which is far below
// the tolerance any f16/bf16 kernel needs.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_NUMERICS_H
#define FLASHC_LIB_SIMULATOR_NUMERICS_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace flashc {
namespace sim {
namespace detail {

inline uint32_t floatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline float bitsFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint64_t doubleBits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
inline double bitsDouble(uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}

/// Flushes a subnormal f32 to a zero of the same sign.
inline float flushSubnormal(float f) {
  uint32_t b = floatBits(f);
  if ((b & 0x7f800000u) == 0 && (b & 0x007fffffu) != 0)
    return bitsFloat(b & 0x80000000u);
  return f;
}

/// f32 -> IEEE binary16, round to nearest even.
inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) // inf or NaN (NaN keeps a quiet payload bit)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 31)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    // Subnormal half (or zero): shift the full significand.
    if (e < -10)
      return static_cast<uint16_t>(sign);
    uint32_t m = mant | 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t h = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1)))
      ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
    ++h; // may carry into the exponent, up to infinity: correct
  return static_cast<uint16_t>(sign | h);
}

/// IEEE binary16 -> f32 (exact).
inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
             ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  return bitsFloat(bits);
}

/// f32 -> bfloat16, round to nearest even.
inline uint16_t floatToBFloat(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return static_cast<uint16_t>((x >> 16) | 0x40u); // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

inline float bfloatToFloat(uint16_t b) {
  return bitsFloat(static_cast<uint32_t>(b) << 16);
}

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_NUMERICS_H
