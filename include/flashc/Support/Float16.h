//===- Float16.h - IEEE half and bfloat16 conversions -----------*- C++ -*-===//
//
// Conversions between f32 and the 16-bit storage formats, rounding to
// nearest even (as cvt.rn does on the GPU). Header-only and dependency-free:
// the float64 reference, the runtime and the PTX simulator share them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SUPPORT_FLOAT16_H
#define FLASHC_SUPPORT_FLOAT16_H

#include <cstdint>
#include <cstring>

namespace flashc {

/// f32 -> IEEE binary16, round to nearest even; NaN stays a quiet NaN.
inline uint16_t floatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 31)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    // A subnormal half (or zero): shift the full significand.
    if (e < -10)
      return static_cast<uint16_t>(sign);
    uint32_t m = mant | 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t h = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1)))
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
inline float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      // Subnormal: normalise.
      int32_t e = -1;
      do {
        mant <<= 1;
        ++e;
      } while (!(mant & 0x400u));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
          ((mant & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// f32 -> bfloat16, round to nearest even; NaN stays a quiet NaN.
inline uint16_t floatToBFloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

/// bfloat16 -> f32 (exact).
inline float bfloat16ToFloat(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

} // namespace flashc

#endif // FLASHC_SUPPORT_FLOAT16_H
