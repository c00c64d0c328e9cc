//===- Math.h - Transcendental functions and float classes ------*- C++ -*-===//
//
// The descriptions of ex2, lg2, rcp, sqrt, rsqrt, sin, cos, tanh and testp
// (see Instructions.def; Numerics.h on the accuracy of the .approx forms).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_MATH_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_MATH_H

#include "../Decode.h"
#include "../Exec.h"

#include <cmath>

namespace flashc {
namespace sim {
namespace detail {

/// ex2, lg2, rcp, sqrt, rsqrt, sin, cos and tanh on f32 and f64.
struct MathInst : ThreadInst {
  static constexpr std::string_view spellings[] = {
      "ex2", "lg2", "rcp", "sqrt", "rsqrt", "sin", "cos", "tanh"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    static const std::pair<const char *, Op> ops[] = {
        {"ex2", Op::Ex2},   {"lg2", Op::Lg2},     {"rcp", Op::Rcp},
        {"sqrt", Op::Sqrt}, {"rsqrt", Op::Rsqrt}, {"sin", Op::Sin},
        {"cos", Op::Cos},   {"tanh", Op::Tanh}};
    for (auto &[name, op] : ops)
      if (p.spelling == name)
        inst.op = op;
    for (std::string_view m : p.rest)
      if (!takeCommonFloatMods(m, inst))
        return kUnsupported;
    if (!p.oneType(inst) || !(inst.type == Ty::F32 || inst.type == Ty::F64))
      return kUnsupported;
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    return unaryOperands(r, inst.type, inst.type);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    Ty ty = I.type;
    uint64_t a = S.src(1);
    double x =
        ty == Ty::F32 ? bitsFloat(static_cast<uint32_t>(a)) : bitsDouble(a);
    if (ty == Ty::F32 && (I.flags & kFtz))
      x = flushSubnormal(static_cast<float>(x));
    double r = 0;
    switch (Code) {
    case Op::Ex2:
      r = std::exp2(x);
      break;
    case Op::Lg2:
      r = std::log2(x);
      break;
    case Op::Rcp:
      r = 1.0 / x;
      break;
    case Op::Sqrt:
      r = std::sqrt(x);
      break;
    case Op::Rsqrt:
      r = 1.0 / std::sqrt(x);
      break;
    case Op::Sin:
      r = std::sin(x);
      break;
    case Op::Cos:
      r = std::cos(x);
      break;
    case Op::Tanh:
      r = std::tanh(x);
      break;
    default:
      break;
    }
    if (ty == Ty::F32) {
      float f = Code == Op::Rcp || Code == Op::Sqrt
                    ? (Code == Op::Rcp ? 1.0f / static_cast<float>(x)
                                       : std::sqrt(static_cast<float>(x)))
                    : static_cast<float>(r);
      if (I.flags & kFtz)
        f = flushSubnormal(f);
      S.dst(0, floatBits(f));
    } else {
      S.dst(0, doubleBits(r));
    }
    return Next::Advance;
  }
};

/// testp: whether a float is finite, infinite, a number, not a number,
/// normal or subnormal (Inst::mode, in that order).
struct TestpInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"testp"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Testp;
    static const char *classes[] = {"finite",     "infinite", "number",
                                    "notanumber", "normal",   "subnormal"};
    bool have = false;
    for (std::string_view m : p.rest) {
      bool found = false;
      for (uint8_t c = 0; c < 6; ++c)
        if (m == classes[c]) {
          inst.mode = c;
          found = have = true;
        }
      if (!found)
        return kUnsupported;
    }
    return have && p.oneType(inst) &&
                   (inst.type == Ty::F32 || inst.type == Ty::F64)
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    return unaryOperands(r, Ty::Pred, inst.type);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    Ty ty = I.type;
    uint64_t a = S.src(1);
    double x =
        ty == Ty::F32 ? bitsFloat(static_cast<uint32_t>(a)) : bitsDouble(a);
    int cls = std::fpclassify(x);
    bool r = false;
    switch (I.mode) {
    case 0:
      r = std::isfinite(x);
      break;
    case 1:
      r = std::isinf(x);
      break;
    case 2:
      r = !std::isnan(x);
      break;
    case 3:
      r = std::isnan(x);
      break;
    case 4:
      r = cls == FP_NORMAL;
      break;
    case 5:
      r = cls == FP_SUBNORMAL;
      break;
    }
    if (ty == Ty::F32 && (I.mode == 4 || I.mode == 5)) {
      float f = static_cast<float>(x);
      int fc = std::fpclassify(f);
      r = I.mode == 4 ? fc == FP_NORMAL : fc == FP_SUBNORMAL;
    }
    S.dst(0, r);
    return Next::Advance;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_MATH_H
