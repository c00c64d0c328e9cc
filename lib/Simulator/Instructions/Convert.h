//===- Convert.h - Moves and conversions ------------------------*- C++ -*-===//
//
// The descriptions of mov (with the packing and unpacking of vectors) and
// cvt (see Instructions.def).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_CONVERT_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_CONVERT_H

#include "../Decode.h"
#include "../Exec.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace flashc {
namespace sim {
namespace detail {

/// mov: a copy (Mov), or `mov.bN d, {a, b, ...}` packing (MovPack) and
/// `mov.bN {a, b, ...}, d` unpacking (MovUnpack) 2 or 4 parts.
struct MovInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"mov"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Mov;
    return p.rest.empty() && p.oneType(inst) ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    Ty t = inst.type;
    FLASHC_SIM_TRY(r.count(2, 2));
    if (r.isVector(0)) {
      inst.op = Op::MovUnpack;
      size_t n = r.vectorSize(0);
      if (n != 2 && n != 4)
        return r.bad("unpacking needs 2 or 4 destinations");
      Ty part = partType(t, n);
      inst.type2 = part;
      inst.vec = static_cast<uint8_t>(n);
      FLASHC_SIM_TRY(r.addVector(0, part, n, true));
      return r.addScalar(1, t);
    }
    if (r.isVector(1)) {
      inst.op = Op::MovPack;
      size_t n = r.vectorSize(1);
      if (n != 2 && n != 4)
        return r.bad("packing needs 2 or 4 sources");
      Ty part = partType(t, n);
      inst.type2 = part;
      inst.vec = static_cast<uint8_t>(n);
      FLASHC_SIM_TRY(r.addReg(0, t));
      return r.addVector(1, part, n, false);
    }
    FLASHC_SIM_TRY(r.addReg(0, t));
    return r.addScalar(1, t);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    Ty ty = I.type;
    switch (Code) {
    case Op::Mov:
      S.dst(0, maskTo(ty, S.src(1)));
      break;
    case Op::MovPack: {
      unsigned partBits = 8 * sizeOf(I.type2);
      uint64_t v = 0;
      for (unsigned i = 0; i < I.vec; ++i)
        v |= (S.src(1 + i) & ((1ull << partBits) - 1)) << (partBits * i);
      S.dst(0, v);
      break;
    }
    case Op::MovUnpack: {
      unsigned partBits = 8 * sizeOf(I.type2);
      uint64_t v = S.src(I.vec);
      for (unsigned i = 0; i < I.vec; ++i)
        S.dst(i, (v >> (partBits * i)) & ((1ull << partBits) - 1));
      break;
    }
    default:
      break;
    }
    return Next::Advance;
  }

private:
  /// The type of each of the `n` parts of a `t`.
  static Ty partType(Ty t, size_t n) {
    return sizeOf(t) / n == 2 ? Ty::B16 : sizeOf(t) / n == 4 ? Ty::B32 : Ty::B8;
  }
};

/// cvt between integers and floats of every width (Cvt), and
/// `cvt.rn.f16x2.f32 d, a, b` / `cvt.rn.bf16x2.f32` (CvtPack: `a` in the
/// upper half).
struct CvtInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"cvt"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Cvt;
    for (std::string_view m : p.rest) {
      if (takeCommonFloatMods(m, inst))
        continue;
      if (m == "relu") {
        inst.flags |= kRelu;
        continue;
      }
      if (m == "satfinite") {
        inst.flags |= kSatFinite;
        continue;
      }
      return kUnsupported;
    }
    if (p.types.size() != 2)
      return kUnsupported;
    inst.type = p.types[0];
    inst.type2 = p.types[1];
    if (inst.type == Ty::F16x2 || inst.type == Ty::BF16x2) {
      if (inst.type2 != Ty::F32)
        return kUnsupported;
      inst.op = Op::CvtPack;
    } else if (inst.type2 == Ty::F16x2 || inst.type2 == Ty::BF16x2 ||
               inst.type == Ty::Pred || inst.type2 == Ty::Pred) {
      return kUnsupported;
    }
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    if (inst.op == Op::CvtPack) {
      FLASHC_SIM_TRY(r.count(3, 3));
      FLASHC_SIM_TRY(r.addReg(0, Ty::B32));
      FLASHC_SIM_TRY(r.addScalar(1, Ty::F32));
      return r.addScalar(2, Ty::F32);
    }
    return unaryOperands(r, inst.type, inst.type2);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    switch (Code) {
    case Op::Cvt: {
      Ty dt = I.type, st = I.type2;
      uint64_t a = S.src(1);
      // Read the source as a double (floats) or an integer.
      bool srcFloat = isFloat(st), dstFloat = isFloat(dt);
      double d = 0;
      int64_t si = 0;
      uint64_t ui = 0;
      if (srcFloat) {
        if (st == Ty::F32) {
          float f = bitsFloat(static_cast<uint32_t>(a));
          if (I.flags & kFtz)
            f = flushSubnormal(f);
          d = f;
        } else if (st == Ty::F64) {
          d = bitsDouble(a);
        } else {
          d = halfValue(static_cast<uint16_t>(a), st == Ty::BF16);
        }
      } else {
        si = sext(st, a);
        ui = maskTo(st, a);
      }
      uint64_t r = 0;
      if (dstFloat) {
        double v;
        if (srcFloat) {
          v = roundIntegral(d, I.round);
        } else {
          v = isSigned(st) ? static_cast<double>(si) : static_cast<double>(ui);
          // 64-bit integers to f32 must round once: convert directly.
          if (dt == Ty::F32 && sizeOf(st) == 8) {
            float f =
                isSigned(st) ? static_cast<float>(si) : static_cast<float>(ui);
            v = f;
          }
        }
        if (I.flags & kSat)
          v = std::isnan(v) ? 0.0 : std::min(1.0, std::max(0.0, v));
        if ((I.flags & kRelu) && v < 0)
          v = 0;
        if (dt == Ty::F32) {
          float f = (I.round == Round::RZ || I.round == Round::RM ||
                     I.round == Round::RP)
                        ? roundToFloat(v, I.round)
                        : static_cast<float>(v);
          if (I.flags & kFtz)
            f = flushSubnormal(f);
          r = floatBits(f);
        } else if (dt == Ty::F64) {
          r = doubleBits(v);
        } else {
          bool bf = dt == Ty::BF16;
          uint16_t h;
          if (st == Ty::F32 || st == dt)
            h = toHalf(static_cast<float>(v), bf);
          else
            h = roundHalf(v, bf);
          if (I.round == Round::RZ && !bf) {
            // Toward zero: step back when rounding went away from zero.
            double back = flashc::halfToFloat(h);
            if (std::isfinite(v) && std::fabs(back) > std::fabs(v))
              h = static_cast<uint16_t>(h - 1);
          }
          r = h;
        }
      } else {
        // To an integer.
        unsigned sz = sizeOf(dt);
        bool sgn = isSigned(dt);
        if (srcFloat) {
          double v = roundIntegral(d, I.round == Round::Default ? Round::RZI
                                                                : I.round);
          if (std::isnan(v)) {
            r = 0;
          } else {
            // Float-to-integer conversions saturate.
            double lo = sgn ? -std::ldexp(1.0, 8 * sz - 1) : 0.0;
            double hiv = sgn ? std::ldexp(1.0, 8 * sz - 1) - 1
                             : std::ldexp(1.0, 8 * sz) - 1;
            if (v <= lo)
              r = maskTo(dt, static_cast<uint64_t>(static_cast<int64_t>(lo)));
            else if (v >= hiv)
              // 2^63 - 1 is not a double: saturate 64-bit types directly.
              r = sz == 8 ? (sgn ? static_cast<uint64_t>(INT64_MAX) : ~0ull)
                          : maskTo(dt, static_cast<uint64_t>(
                                           static_cast<int64_t>(hiv)));
            else
              r = maskTo(dt,
                         sgn ? static_cast<uint64_t>(static_cast<int64_t>(v))
                             : static_cast<uint64_t>(v));
          }
        } else {
          uint64_t v = isSigned(st) ? static_cast<uint64_t>(si) : ui;
          if (I.flags & kSat) {
            // Clamp to the destination range.
            if (sgn) {
              int64_t lo = -(1ll << (8 * sz - 1)),
                      hiv = (1ll << (8 * sz - 1)) - 1;
              if (sz == 8) {
                lo = INT64_MIN;
                hiv = INT64_MAX;
              }
              if (isSigned(st))
                v = static_cast<uint64_t>(std::min(hiv, std::max(lo, si)));
              else
                v = ui > static_cast<uint64_t>(hiv) ? static_cast<uint64_t>(hiv)
                                                    : ui;
            } else {
              uint64_t hiv = sz == 8 ? ~0ull : (1ull << (8 * sz)) - 1;
              if (isSigned(st))
                v = si < 0 ? 0
                           : std::min<uint64_t>(hiv, static_cast<uint64_t>(si));
              else
                v = std::min<uint64_t>(hiv, ui);
            }
          }
          r = maskTo(dt, v);
          if (sgn)
            r = maskTo(Ty::U64, static_cast<uint64_t>(sext(dt, r)));
        }
      }
      S.dst(0, r);
      break;
    }
    case Op::CvtPack: {
      bool bf = I.type == Ty::BF16x2;
      float x = bitsFloat(static_cast<uint32_t>(S.src(1)));
      float y = bitsFloat(static_cast<uint32_t>(S.src(2)));
      if (I.flags & kRelu) {
        x = (std::isnan(x) || x > 0) ? x : 0.0f;
        y = (std::isnan(y) || y > 0) ? y : 0.0f;
      }
      uint16_t hx = toHalf(x, bf), hy = toHalf(y, bf);
      if (I.flags & kSatFinite) {
        uint16_t maxFinite = bf ? 0x7f7f : 0x7bff;
        auto clampInf = [&](uint16_t h) -> uint16_t {
          uint16_t expMask = bf ? 0x7f80 : 0x7c00;
          uint16_t mantMask = bf ? 0x007f : 0x03ff;
          if ((h & expMask) == expMask && !(h & mantMask))
            return static_cast<uint16_t>((h & 0x8000) | maxFinite);
          return h;
        };
        hx = clampInf(hx);
        hy = clampInf(hy);
      }
      S.dst(0, (static_cast<uint32_t>(hx) << 16) | hy);
      break;
    }
    default:
      break;
    }
    return Next::Advance;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_CONVERT_H
