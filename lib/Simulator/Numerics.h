//===- Numerics.h - Bit-exact f16/bf16 conversions and PTX math -*- C++ -*-===//
//
// Bit casts, the 16-bit float formats (flashc/Support/Float16.h: rounding
// to nearest even as `cvt.rn` does), and the flush-to-zero helper of `.ftz`.
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

#include "flashc/Support/Float16.h"

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

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_NUMERICS_H
