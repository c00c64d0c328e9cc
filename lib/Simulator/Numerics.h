//===- Numerics.h - Bit-exact f16/bf16 conversions and PTX math -*- C++ -*-===//
//
// Bit casts, the 16-bit float formats (flashc/Support/Float16.h: rounding
// to nearest even as `cvt.rn` does), the flush-to-zero helper of `.ftz`,
// integer widths and signs, the directed roundings and the arithmetic of
// packed halves that the instructions' executors share.
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

#include "Program.h"

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

/// The low bytes of `v` that a value of type `t` takes.
inline uint64_t maskTo(Ty t, uint64_t v) {
  switch (sizeOf(t)) {
  case 1:
    return v & 0xffu;
  case 2:
    return v & 0xffffu;
  case 4:
    return v & 0xffffffffu;
  default:
    return v;
  }
}

/// The value of an integer of type `t` held in `v`, sign- or zero-extended.
inline int64_t sext(Ty t, uint64_t v) {
  switch (t) {
  case Ty::S8:
    return static_cast<int8_t>(v);
  case Ty::S16:
    return static_cast<int16_t>(v);
  case Ty::S32:
    return static_cast<int32_t>(v);
  case Ty::S64:
    return static_cast<int64_t>(v);
  default:
    return static_cast<int64_t>(maskTo(t, v));
  }
}

/// Rounds a double to f32 with round-to-odd: a second rounding to a
/// narrower format (f16, bf16) then equals one correct rounding.
inline float toFloatOdd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) != d && std::isfinite(d)) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d))
      f = std::nextafter(f, 0.0f);
    f = bitsFloat(floatBits(f) | 1u);
  }
  return f;
}

/// Rounds `d` to f32 with a PTX rounding mode.
inline float roundToFloat(double d, Round r) {
  switch (r) {
  case Round::RZ:
  case Round::RM:
  case Round::RP: {
    float f = static_cast<float>(d);
    double back = f;
    if (back == d || !std::isfinite(d))
      return f;
    bool up = back < d;
    // f is the nearest; step to the directed neighbour when needed.
    if (r == Round::RZ) {
      if (std::fabs(back) > std::fabs(d))
        f = std::nextafter(f, 0.0f);
    } else if (r == Round::RM) {
      if (!up)
        f = std::nextafter(f, -INFINITY);
    } else {
      if (up)
        f = std::nextafter(f, INFINITY);
    }
    return f;
  }
  default:
    return static_cast<float>(d);
  }
}

/// A half value (f16 or bf16 by `bf`) from 16 bits, and back.
inline float halfValue(uint16_t h, bool bf) {
  return bf ? flashc::bfloat16ToFloat(h) : flashc::halfToFloat(h);
}
inline uint16_t toHalf(float f, bool bf) {
  return bf ? flashc::floatToBFloat16(f) : flashc::floatToHalf(f);
}
inline uint16_t roundHalf(double d, bool bf) {
  return toHalf(toFloatOdd(d), bf);
}

/// D = C + A B for mma.sync, in double: each element summed in k order (the
/// loop order lets the compiler vectorise over columns).
inline void mmaAccumulate(const double (&A)[16][16], const double (&B)[16][8],
                          double (&C)[16][8], uint32_t kDim) {
  for (uint32_t row = 0; row < 16; ++row)
    for (uint32_t kk = 0; kk < kDim; ++kk) {
      double a = A[row][kk];
      for (uint32_t col = 0; col < 8; ++col)
        C[row][col] += a * B[kk][col];
    }
}

/// Applies a scalar float operation to one or two packed halves.
template <typename F>
inline uint64_t halfOp(Ty t, uint64_t a, uint64_t b, uint64_t c, F f) {
  bool bf = t == Ty::BF16 || t == Ty::BF16x2;
  int lanes = (t == Ty::F16x2 || t == Ty::BF16x2) ? 2 : 1;
  uint64_t out = 0;
  for (int i = 0; i < lanes; ++i) {
    double x = halfValue(static_cast<uint16_t>(a >> (16 * i)), bf);
    double y = halfValue(static_cast<uint16_t>(b >> (16 * i)), bf);
    double z = halfValue(static_cast<uint16_t>(c >> (16 * i)), bf);
    uint16_t h = f(x, y, z, bf);
    out |= static_cast<uint64_t>(h) << (16 * i);
  }
  return out;
}

/// Rounds `d` to an integer with cvt's integer rounding (`d` itself
/// without one).
inline double roundIntegral(double d, Round r) {
  switch (r) {
  case Round::RNI:
    return std::nearbyint(d); // default environment: to nearest even
  case Round::RZI:
    return std::trunc(d);
  case Round::RMI:
    return std::floor(d);
  case Round::RPI:
    return std::ceil(d);
  default:
    return d;
  }
}

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_NUMERICS_H
