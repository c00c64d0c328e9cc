//===- Arith.h - Integer and floating-point arithmetic ----------*- C++ -*-===//
//
// The descriptions of add, sub, mul, mad, fma, div, rem, abs, neg, min, max;
// and, or, xor, not, cnot, shl, shr, popc, clz, brev, bfe, bfi, copysign;
// prmt, setp and selp (see Instructions.def).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_ARITH_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_ARITH_H

#include "../Decode.h"
#include "../Exec.h"

#include <algorithm>
#include <cfenv>
#include <climits>
#include <cmath>

namespace flashc {
namespace sim {
namespace detail {

/// add, sub, mul, mad, fma, div, rem, abs, neg, min and max, on integers
/// and floats (f16, bf16 and their pairs: add, sub, mul, fma, neg, min, max
/// and abs).
struct ArithInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"add", "sub", "mul", "mad",
                                                   "fma", "div", "rem", "abs",
                                                   "neg", "min", "max"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    static const std::pair<const char *, Op> ops[] = {
        {"add", Op::Add}, {"sub", Op::Sub}, {"mul", Op::Mul}, {"mad", Op::Mad},
        {"fma", Op::Fma}, {"div", Op::Div}, {"rem", Op::Rem}, {"abs", Op::Abs},
        {"neg", Op::Neg}, {"min", Op::Min}, {"max", Op::Max}};
    for (auto &[name, op] : ops)
      if (p.spelling == name)
        inst.op = op;
    for (std::string_view m : p.rest) {
      if (takeCommonFloatMods(m, inst))
        continue;
      if (m == "lo")
        continue;
      if (m == "hi") {
        inst.flags |= kHi;
        continue;
      }
      if (m == "wide") {
        inst.flags |= kWide;
        continue;
      }
      if (m == "NaN") {
        inst.flags |= kPropagateNaN;
        continue;
      }
      if (m == "relu") {
        inst.flags |= kRelu;
        continue;
      }
      return kUnsupported;
    }
    if (!p.oneType(inst))
      return kUnsupported;
    Ty t = inst.type;
    bool half =
        t == Ty::F16 || t == Ty::F16x2 || t == Ty::BF16 || t == Ty::BF16x2;
    if (half &&
        !(inst.op == Op::Add || inst.op == Op::Sub || inst.op == Op::Mul ||
          inst.op == Op::Fma || inst.op == Op::Neg || inst.op == Op::Min ||
          inst.op == Op::Max || inst.op == Op::Abs))
      return kUnsupported;
    if ((inst.op == Op::Rem) && !isIntType(t))
      return kUnsupported;
    if ((inst.op == Op::Fma) && !isFloat(t))
      return kUnsupported;
    if (inst.flags & (kWide | kHi)) {
      if (!(inst.op == Op::Mul || inst.op == Op::Mad) || !isIntType(t))
        return kUnsupported;
      if ((inst.flags & kWide) && sizeOf(t) == 8)
        return kUnsupported;
    }
    if (inst.op == Op::Mad && isFloat(t))
      inst.op = Op::Fma; // mad.rn.f32 is fused
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    Ty t = inst.type;
    switch (inst.op) {
    case Op::Abs:
    case Op::Neg:
      return unaryOperands(r, t, t);
    case Op::Mul:
    case Op::Mad:
    case Op::Fma: {
      bool mul = inst.op == Op::Mul;
      FLASHC_SIM_TRY(r.count(mul ? 3 : 4, mul ? 3 : 4));
      Ty dt = t;
      if (inst.flags & kWide)
        dt = sizeOf(t) == 2 ? (isSigned(t) ? Ty::S32 : Ty::U32)
                            : (isSigned(t) ? Ty::S64 : Ty::U64);
      FLASHC_SIM_TRY(r.addReg(0, dt));
      FLASHC_SIM_TRY(r.addScalar(1, t));
      FLASHC_SIM_TRY(r.addScalar(2, t));
      if (!mul)
        FLASHC_SIM_TRY(r.addScalar(3, dt));
      return Status::success();
    }
    default: // add, sub, div, rem, min, max
      return binaryOperands(r, t);
    }
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    Ty ty = I.type;
    switch (Code) {
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Fma:
    case Op::Div:
    case Op::Min:
    case Op::Max: {
      uint64_t a = S.src(1), b = S.src(2);
      uint64_t c = Code == Op::Fma ? S.src(3) : 0;
      if (ty == Ty::F32) {
        float x = bitsFloat(static_cast<uint32_t>(a));
        float y = bitsFloat(static_cast<uint32_t>(b));
        float z = bitsFloat(static_cast<uint32_t>(c));
        bool ftz = I.flags & kFtz;
        if (ftz) {
          x = flushSubnormal(x);
          y = flushSubnormal(y);
          z = flushSubnormal(z);
        }
        float r;
        switch (Code) {
        case Op::Add:
          r = I.round <= Round::RN
                  ? x + y
                  : roundToFloat(static_cast<double>(x) + y, I.round);
          break;
        case Op::Sub:
          r = I.round <= Round::RN
                  ? x - y
                  : roundToFloat(static_cast<double>(x) - y, I.round);
          break;
        case Op::Mul:
          r = I.round <= Round::RN
                  ? x * y
                  : roundToFloat(static_cast<double>(x) * y, I.round);
          break;
        case Op::Fma:
          if (I.round <= Round::RN) {
            r = std::fma(x, y, z);
          } else {
            int old = std::fegetround();
            std::fesetround(I.round == Round::RZ   ? FE_TOWARDZERO
                            : I.round == Round::RM ? FE_DOWNWARD
                                                   : FE_UPWARD);
            r = std::fma(x, y, z);
            std::fesetround(old);
          }
          break;
        case Op::Div:
          r = x / y;
          break;
        case Op::Min:
        case Op::Max:
          if ((I.flags & kPropagateNaN) && (std::isnan(x) || std::isnan(y)))
            r = NAN;
          else if (Code == Op::Min)
            r = (x == y) ? bitsFloat(floatBits(x) | floatBits(y))
                         : std::fmin(x, y);
          else
            r = (x == y) ? bitsFloat(floatBits(x) & floatBits(y))
                         : std::fmax(x, y);
          break;
        default:
          r = 0;
        }
        if (std::isnan(r)) { // which NaN operand propagates (nanOperand)
          if ((Code == Op::Add || Code == Op::Mul) && I.round > Round::RN)
            r = nanOperand(r, y, x);
          else if (!((Code == Op::Min || Code == Op::Max) &&
                     (I.flags & kPropagateNaN)))
            r = nanOperand(r, x, y, z);
        }
        if (ftz)
          r = flushSubnormal(r);
        if (I.flags & kSat)
          r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));
        S.dst(0, floatBits(r));
      } else if (ty == Ty::F64) {
        double x = bitsDouble(a), y = bitsDouble(b), z = bitsDouble(c), r;
        switch (Code) {
        case Op::Add:
          r = x + y;
          break;
        case Op::Sub:
          r = x - y;
          break;
        case Op::Mul:
          r = x * y;
          break;
        case Op::Fma:
          r = std::fma(x, y, z);
          break;
        case Op::Div:
          r = x / y;
          break;
        case Op::Min:
          r = std::fmin(x, y);
          break;
        case Op::Max:
          r = std::fmax(x, y);
          break;
        default:
          r = 0;
        }
        if (std::isnan(r)) // which NaN operand propagates (nanOperand)
          r = Code == Op::Min || Code == Op::Max ? nanOperand(r, y, x)
                                                 : nanOperand(r, x, y, z);
        S.dst(0, doubleBits(r));
      } else if (isFloat(ty)) {
        bool nanProp = I.flags & kPropagateNaN;
        bool relu = I.flags & kRelu;
        uint64_t r =
            halfOp(ty, a, b, c, [&](double x, double y, double z, bool bf) {
              double v = 0;
              bool nan = std::isnan(x) || std::isnan(y);
              switch (Code) {
              case Op::Add:
                v = x + y;
                break;
              case Op::Sub:
                v = x - y;
                break;
              case Op::Mul:
                v = x * y;
                break;
              case Op::Fma:
                v = std::fma(x, y, z);
                break;
              case Op::Min:
                v = nanProp && nan ? NAN : halfMin(x, y);
                break;
              case Op::Max:
                v = nanProp && nan ? NAN : halfMax(x, y);
                break;
              default:
                break;
              }
              if (std::isnan(v) && Code != Op::Min && Code != Op::Max)
                v = Code == Op::Fma ? nanOperand(v, y, x, z)
                                    : nanOperand(v, x, y);
              if (relu && v < 0)
                v = 0;
              return roundHalf(v, bf);
            });
        S.dst(0, r);
      } else {
        // Integers.
        bool sgn = isSigned(ty);
        unsigned sz = sizeOf(ty);
        uint64_t r = 0;
        switch (Code) {
        case Op::Add:
          if ((I.flags & kSat) && ty == Ty::S32) {
            int64_t sum = static_cast<int64_t>(static_cast<int32_t>(a)) +
                          static_cast<int32_t>(b);
            r = static_cast<uint32_t>(static_cast<int32_t>(std::min<int64_t>(
                INT32_MAX, std::max<int64_t>(INT32_MIN, sum))));
          } else {
            r = maskTo(ty, a + b);
          }
          break;
        case Op::Sub:
          if ((I.flags & kSat) && ty == Ty::S32) {
            int64_t diff = static_cast<int64_t>(static_cast<int32_t>(a)) -
                           static_cast<int32_t>(b);
            r = static_cast<uint32_t>(static_cast<int32_t>(std::min<int64_t>(
                INT32_MAX, std::max<int64_t>(INT32_MIN, diff))));
          } else {
            r = maskTo(ty, a - b);
          }
          break;
        case Op::Mul:
          if (I.flags & kWide) {
            if (sgn)
              r = static_cast<uint64_t>(sext(ty, a) * sext(ty, b));
            else
              r = maskTo(ty, a) * maskTo(ty, b);
            r = sz == 2 ? (r & 0xffffffffu) : r;
          } else if (I.flags & kHi) {
            if (sz == 8) {
              if (sgn)
                r = static_cast<uint64_t>(
                    (static_cast<__int128>(static_cast<int64_t>(a)) *
                     static_cast<int64_t>(b)) >>
                    64);
              else
                r = static_cast<uint64_t>(
                    (static_cast<unsigned __int128>(a) * b) >> 64);
            } else {
              int64_t p =
                  sgn ? sext(ty, a) * sext(ty, b)
                      : static_cast<int64_t>(maskTo(ty, a) * maskTo(ty, b));
              r = maskTo(ty, static_cast<uint64_t>(p >> (8 * sz)));
            }
          } else {
            r = maskTo(ty, a * b);
          }
          break;
        case Op::Div:
          if (maskTo(ty, b) == 0) {
            r = maskTo(ty, ~0ull);
          } else if (sgn) {
            int64_t x = sext(ty, a), y = sext(ty, b);
            r = (y == -1) ? maskTo(ty, static_cast<uint64_t>(0) -
                                           static_cast<uint64_t>(x))
                          : maskTo(ty, static_cast<uint64_t>(x / y));
          } else {
            r = maskTo(ty, a) / maskTo(ty, b);
          }
          break;
        case Op::Min:
          r = sgn ? maskTo(ty, static_cast<uint64_t>(
                                   std::min(sext(ty, a), sext(ty, b))))
                  : std::min(maskTo(ty, a), maskTo(ty, b));
          break;
        case Op::Max:
          r = sgn ? maskTo(ty, static_cast<uint64_t>(
                                   std::max(sext(ty, a), sext(ty, b))))
                  : std::max(maskTo(ty, a), maskTo(ty, b));
          break;
        default:
          break;
        }
        S.dst(0, r);
      }
      break;
    }
    case Op::Mad: {
      uint64_t a = S.src(1), b = S.src(2), c = S.src(3);
      bool sgn = isSigned(ty);
      unsigned sz = sizeOf(ty);
      uint64_t r;
      if (I.flags & kWide) {
        uint64_t p = sgn ? static_cast<uint64_t>(sext(ty, a) * sext(ty, b))
                         : maskTo(ty, a) * maskTo(ty, b);
        r = p + c;
        r = sz == 2 ? (r & 0xffffffffu) : r;
      } else if (I.flags & kHi) {
        uint64_t hiPart;
        if (sz == 8)
          hiPart = sgn ? static_cast<uint64_t>(
                             (static_cast<__int128>(static_cast<int64_t>(a)) *
                              static_cast<int64_t>(b)) >>
                             64)
                       : static_cast<uint64_t>(
                             (static_cast<unsigned __int128>(a) * b) >> 64);
        else {
          int64_t p = sgn ? sext(ty, a) * sext(ty, b)
                          : static_cast<int64_t>(maskTo(ty, a) * maskTo(ty, b));
          hiPart = static_cast<uint64_t>(p >> (8 * sz));
        }
        r = maskTo(ty, hiPart + c);
      } else {
        r = maskTo(ty, a * b + c);
      }
      S.dst(0, r);
      break;
    }
    case Op::Rem: {
      uint64_t a = S.src(1), b = S.src(2), r;
      if (maskTo(ty, b) == 0)
        r = maskTo(ty, a);
      else if (isSigned(ty)) {
        int64_t y = sext(ty, b);
        r = y == -1 ? 0 : maskTo(ty, static_cast<uint64_t>(sext(ty, a) % y));
      } else
        r = maskTo(ty, a) % maskTo(ty, b);
      S.dst(0, r);
      break;
    }
    case Op::Abs:
    case Op::Neg: {
      uint64_t a = S.src(1);
      bool isAbs = Code == Op::Abs;
      if (ty == Ty::F32) {
        float x = bitsFloat(static_cast<uint32_t>(a));
        if (I.flags & kFtz)
          x = flushSubnormal(x);
        uint32_t b = floatBits(x);
        S.dst(0, isAbs ? (b & 0x7fffffffu) : (b ^ 0x80000000u));
      } else if (ty == Ty::F64) {
        S.dst(0, isAbs ? (a & ~(1ull << 63)) : (a ^ (1ull << 63)));
      } else if (ty == Ty::F16 || ty == Ty::BF16) {
        S.dst(0, isAbs ? (a & 0x7fffu) : ((a ^ 0x8000u) & 0xffffu));
      } else if (ty == Ty::F16x2 || ty == Ty::BF16x2) {
        S.dst(0, isAbs ? (a & 0x7fff7fffu) : ((a ^ 0x80008000u) & 0xffffffffu));
      } else {
        int64_t x = sext(ty, a);
        S.dst(0,
              maskTo(ty, static_cast<uint64_t>(isAbs ? (x < 0 ? -x : x) : -x)));
      }
      break;
    }
    default:
      break;
    }
    return Next::Advance;
  }

private:
  // Which NaN an operation on NaN operands gives (when several are NaN),
  // and which zero the f16 and bf16 min and max of two zeros give, are
  // fixed here rather than left to the order in which the compiler passes
  // the operands of commutative operations; the orders are those the
  // simulator has always used.

  /// The first NaN of `a`, `b` and `c`, quieted; `r` when none is a NaN
  /// (an invalid operation).
  template <typename F> static F nanOperand(F r, F a, F b, F c = F(0)) {
    for (F v : {a, b, c}) {
      if (!std::isnan(v))
        continue;
      if constexpr (sizeof(F) == 4)
        return bitsFloat(floatBits(v) | 0x00400000u);
      else
        return bitsDouble(doubleBits(v) | 0x0008000000000000ull);
    }
    return r;
  }
  /// The f16 and bf16 min and max (computed in double): a NaN operand gives
  /// the other operand (`x` when both are NaN), equal operands (zeros of
  /// either sign) give `y`.
  static double halfMin(double x, double y) {
    if (std::isnan(x) || std::isnan(y))
      return std::isnan(y) ? x : y;
    return x == y ? y : (x < y ? x : y);
  }
  static double halfMax(double x, double y) {
    if (std::isnan(x) || std::isnan(y))
      return std::isnan(y) ? x : y;
    return x == y ? y : (x > y ? x : y);
  }
};

/// and, or, xor, not, cnot, shl, shr, popc, clz, brev, bfe and bfi on
/// integers (not and the bitwise operations on predicates too), and
/// copysign on f32 and f64.
struct BitInst : ThreadInst {
  static constexpr std::string_view spellings[] = {
      "and",  "or",  "xor",  "not", "cnot", "shl",     "shr",
      "popc", "clz", "brev", "bfe", "bfi",  "copysign"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    static const std::pair<const char *, Op> ops[] = {
        {"and", Op::And},          {"or", Op::Or},     {"xor", Op::Xor},
        {"not", Op::Not},          {"cnot", Op::Cnot}, {"shl", Op::Shl},
        {"shr", Op::Shr},          {"popc", Op::Popc}, {"clz", Op::Clz},
        {"brev", Op::Brev},        {"bfe", Op::Bfe},   {"bfi", Op::Bfi},
        {"copysign", Op::Copysign}};
    for (auto &[name, op] : ops)
      if (p.spelling == name)
        inst.op = op;
    if (!p.rest.empty() || !p.oneType(inst))
      return kUnsupported;
    if (inst.op == Op::Copysign &&
        !(inst.type == Ty::F32 || inst.type == Ty::F64))
      return kUnsupported;
    if (inst.op != Op::Copysign && isFloat(inst.type))
      return kUnsupported;
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    Ty t = inst.type;
    switch (inst.op) {
    case Op::Not:
    case Op::Cnot:
    case Op::Brev:
      return unaryOperands(r, t, t);
    case Op::Popc:
    case Op::Clz:
      return unaryOperands(r, Ty::U32, t);
    case Op::Shl:
    case Op::Shr:
      FLASHC_SIM_TRY(r.count(3, 3));
      FLASHC_SIM_TRY(r.addReg(0, t));
      FLASHC_SIM_TRY(r.addScalar(1, t));
      return r.addScalar(2, Ty::U32);
    case Op::Bfe:
      FLASHC_SIM_TRY(r.count(4, 4));
      FLASHC_SIM_TRY(r.addReg(0, t));
      FLASHC_SIM_TRY(r.addScalar(1, t));
      FLASHC_SIM_TRY(r.addScalar(2, Ty::U32));
      return r.addScalar(3, Ty::U32);
    case Op::Bfi:
      FLASHC_SIM_TRY(r.count(5, 5));
      FLASHC_SIM_TRY(r.addReg(0, t));
      FLASHC_SIM_TRY(r.addScalar(1, t));
      FLASHC_SIM_TRY(r.addScalar(2, t));
      FLASHC_SIM_TRY(r.addScalar(3, Ty::U32));
      return r.addScalar(4, Ty::U32);
    default: // and, or, xor, copysign
      return binaryOperands(r, t);
    }
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    Ty ty = I.type;
    switch (Code) {
    case Op::And:
      S.dst(0, maskTo(ty, S.src(1) & S.src(2)));
      break;
    case Op::Or:
      S.dst(0, maskTo(ty, S.src(1) | S.src(2)));
      break;
    case Op::Xor:
      S.dst(0, maskTo(ty, S.src(1) ^ S.src(2)));
      break;
    case Op::Not:
      S.dst(0, ty == Ty::Pred ? (~S.src(1) & 1u) : maskTo(ty, ~S.src(1)));
      break;
    case Op::Cnot:
      S.dst(0, maskTo(ty, S.src(1)) == 0 ? 1 : 0);
      break;
    case Op::Shl: {
      uint64_t a = S.src(1);
      uint32_t s = static_cast<uint32_t>(S.src(2));
      unsigned w = 8 * sizeOf(ty);
      S.dst(0, s >= w ? 0 : maskTo(ty, a << s));
      break;
    }
    case Op::Shr: {
      uint64_t a = S.src(1);
      uint32_t s = static_cast<uint32_t>(S.src(2));
      unsigned w = 8 * sizeOf(ty);
      if (isSigned(ty)) {
        int64_t x = sext(ty, a);
        S.dst(0, maskTo(ty, static_cast<uint64_t>(x >> std::min(s, w - 1))));
      } else {
        S.dst(0, s >= w ? 0 : maskTo(ty, a) >> s);
      }
      break;
    }
    case Op::Copysign: {
      uint64_t a = S.src(1), b = S.src(2);
      if (ty == Ty::F32)
        S.dst(0, (b & 0x7fffffffu) | (a & 0x80000000u));
      else
        S.dst(0, (b & ~(1ull << 63)) | (a & (1ull << 63)));
      break;
    }
    case Op::Popc:
      S.dst(0,
            static_cast<uint64_t>(__builtin_popcountll(maskTo(ty, S.src(1)))));
      break;
    case Op::Clz: {
      uint64_t a = maskTo(ty, S.src(1));
      unsigned w = 8 * sizeOf(ty);
      S.dst(0,
            a == 0 ? w : static_cast<uint64_t>(__builtin_clzll(a) - (64 - w)));
      break;
    }
    case Op::Brev: {
      uint64_t a = S.src(1), r = 0;
      unsigned w = 8 * sizeOf(ty);
      for (unsigned i = 0; i < w; ++i)
        if (a & (1ull << i))
          r |= 1ull << (w - 1 - i);
      S.dst(0, r);
      break;
    }
    case Op::Bfe: {
      uint64_t a = S.src(1);
      uint32_t pos = static_cast<uint32_t>(S.src(2)) & 0xff;
      uint32_t len = static_cast<uint32_t>(S.src(3)) & 0xff;
      unsigned w = 8 * sizeOf(ty);
      uint64_t r = 0;
      bool sgn = isSigned(ty);
      bool sbit = false;
      if (sgn) {
        uint32_t bitPos = std::min(w - 1, pos + len - (len ? 1 : 0));
        sbit = len != 0 && ((a >> bitPos) & 1);
      }
      for (unsigned i = 0; i < w; ++i) {
        bool bit;
        if (i < len && pos + i < w)
          bit = (a >> (pos + i)) & 1;
        else
          bit = sbit;
        if (bit)
          r |= 1ull << i;
      }
      S.dst(0, maskTo(ty, r));
      break;
    }
    case Op::Bfi: {
      uint64_t a = S.src(1), b = S.src(2);
      uint32_t pos = static_cast<uint32_t>(S.src(3)) & 0xff;
      uint32_t len = static_cast<uint32_t>(S.src(4)) & 0xff;
      unsigned w = 8 * sizeOf(ty);
      uint64_t r = b;
      for (unsigned i = 0; i < len && pos + i < w; ++i) {
        r &= ~(1ull << (pos + i));
        r |= ((a >> i) & 1) << (pos + i);
      }
      S.dst(0, maskTo(ty, r));
      break;
    }
    default:
      break;
    }
    return Next::Advance;
  }
};

/// prmt.b32: a byte permutation (the default mode).
struct PrmtInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"prmt"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Prmt;
    return p.rest.empty() && p.oneType(inst) && inst.type == Ty::B32
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    Ty t = inst.type;
    FLASHC_SIM_TRY(r.count(4, 4));
    FLASHC_SIM_TRY(r.addReg(0, t));
    FLASHC_SIM_TRY(r.addScalar(1, t));
    FLASHC_SIM_TRY(r.addScalar(2, t));
    return r.addScalar(3, t);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    uint64_t a = S.src(1), b = S.src(2), c = S.src(3);
    uint64_t bytes = (maskTo(Ty::U32, b) << 32) | maskTo(Ty::U32, a);
    uint32_t r = 0;
    for (unsigned i = 0; i < 4; ++i) {
      uint32_t sel = (c >> (4 * i)) & 0xf;
      uint32_t byte = (bytes >> (8 * (sel & 7))) & 0xff;
      if (sel & 8) // replicate the sign bit
        byte = (byte & 0x80) ? 0xff : 0;
      r |= byte << (8 * i);
    }
    S.dst(0, r);
    return Next::Advance;
  }
};

/// setp: a comparison into a predicate (and its negation with `p|q`),
/// optionally combined with a predicate operand.
struct SetpInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"setp"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Setp;
    bool haveCmp = false;
    for (std::string_view m : p.rest) {
      if (std::optional<Cmp> c = parseCmp(m); c && !haveCmp) {
        inst.cmp = *c;
        haveCmp = true;
      } else if (m == "and") {
        inst.boolOp = BoolOp::And;
      } else if (m == "or") {
        inst.boolOp = BoolOp::Or;
      } else if (m == "xor") {
        inst.boolOp = BoolOp::Xor;
      } else if (m == "ftz") {
        inst.flags |= kFtz;
      } else {
        return kUnsupported;
      }
    }
    if (!haveCmp || !p.oneType(inst))
      return kUnsupported;
    if (inst.type == Ty::F16x2 || inst.type == Ty::BF16x2)
      return kUnsupported;
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    Ty t = inst.type;
    FLASHC_SIM_TRY(r.count(3, 4));
    if (r.isVector(0)) {
      FLASHC_SIM_TRY(r.addVector(0, Ty::Pred, 2, true));
      inst.flags |= kHasPred;
    } else {
      FLASHC_SIM_TRY(r.addReg(0, Ty::Pred));
      r.addSink();
    }
    FLASHC_SIM_TRY(r.addScalar(1, t));
    FLASHC_SIM_TRY(r.addScalar(2, t));
    if (r.size() == 4) {
      if (inst.boolOp == BoolOp::None)
        return r.bad("a fourth operand needs .and, .or or .xor");
      FLASHC_SIM_TRY(r.addScalar(3, Ty::Pred));
    } else if (inst.boolOp != BoolOp::None) {
      return r.bad("missing the predicate operand of the boolean combiner");
    }
    return Status::success();
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    Ty ty = I.type;
    uint64_t a = S.src(2), b = S.src(3);
    bool r = false;
    if (isFloat(ty)) {
      double x, y;
      if (ty == Ty::F32) {
        float fx = bitsFloat(static_cast<uint32_t>(a));
        float fy = bitsFloat(static_cast<uint32_t>(b));
        if (I.flags & kFtz) {
          fx = flushSubnormal(fx);
          fy = flushSubnormal(fy);
        }
        x = fx;
        y = fy;
      } else if (ty == Ty::F64) {
        x = bitsDouble(a);
        y = bitsDouble(b);
      } else {
        bool bf = ty == Ty::BF16;
        x = halfValue(static_cast<uint16_t>(a), bf);
        y = halfValue(static_cast<uint16_t>(b), bf);
      }
      bool unordered = std::isnan(x) || std::isnan(y);
      switch (I.cmp) {
      case Cmp::EQ:
        r = !unordered && x == y;
        break;
      case Cmp::NE:
        r = !unordered && x != y;
        break;
      case Cmp::LT:
        r = !unordered && x < y;
        break;
      case Cmp::LE:
        r = !unordered && x <= y;
        break;
      case Cmp::GT:
        r = !unordered && x > y;
        break;
      case Cmp::GE:
        r = !unordered && x >= y;
        break;
      case Cmp::EQU:
        r = unordered || x == y;
        break;
      case Cmp::NEU:
        r = unordered || x != y;
        break;
      case Cmp::LTU:
        r = unordered || x < y;
        break;
      case Cmp::LEU:
        r = unordered || x <= y;
        break;
      case Cmp::GTU:
        r = unordered || x > y;
        break;
      case Cmp::GEU:
        r = unordered || x >= y;
        break;
      case Cmp::NUM:
        r = !unordered;
        break;
      case Cmp::NAN_:
        r = unordered;
        break;
      default:
        r = false;
      }
    } else {
      bool sgn = isSigned(ty);
      int64_t sx = sext(ty, a), sy = sext(ty, b);
      uint64_t ux = maskTo(ty, a), uy = maskTo(ty, b);
      switch (I.cmp) {
      case Cmp::EQ:
        r = ux == uy;
        break;
      case Cmp::NE:
        r = ux != uy;
        break;
      case Cmp::LT:
        r = sgn ? sx < sy : ux < uy;
        break;
      case Cmp::LE:
        r = sgn ? sx <= sy : ux <= uy;
        break;
      case Cmp::GT:
        r = sgn ? sx > sy : ux > uy;
        break;
      case Cmp::GE:
        r = sgn ? sx >= sy : ux >= uy;
        break;
      case Cmp::LO:
        r = ux < uy;
        break;
      case Cmp::LS:
        r = ux <= uy;
        break;
      case Cmp::HI:
        r = ux > uy;
        break;
      case Cmp::HS:
        r = ux >= uy;
        break;
      default:
        r = false;
      }
    }
    bool p = r, q = !r;
    if (I.boolOp != BoolOp::None) {
      bool c = S.src(4) & 1;
      switch (I.boolOp) {
      case BoolOp::And:
        p = r && c;
        q = !r && c;
        break;
      case BoolOp::Or:
        p = r || c;
        q = !r || c;
        break;
      case BoolOp::Xor:
        p = r != c;
        q = (!r) != c;
        break;
      default:
        break;
      }
    }
    S.dst(0, p);
    S.dst(1, q);
    return Next::Advance;
  }
};

/// selp: a choice between two values by a predicate.
struct SelpInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"selp"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Selp;
    return p.rest.empty() && p.oneType(inst) ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    Ty t = inst.type;
    FLASHC_SIM_TRY(r.count(4, 4));
    FLASHC_SIM_TRY(r.addReg(0, t));
    FLASHC_SIM_TRY(r.addScalar(1, t));
    FLASHC_SIM_TRY(r.addScalar(2, t));
    return r.addScalar(3, Ty::Pred);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    S.dst(0, (S.src(3) & 1) ? S.src(1) : S.src(2));
    return Next::Advance;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_ARITH_H
