//===- InstructionTest.cpp - Single-thread PTX instruction semantics ------===//
//
// Each case is a small hand-written PTX body run by one thread: it loads its
// operands from 8-byte input slots, executes the instruction under test and
// stores the result to an output slot, which is compared bit for bit with a
// value the test states (a literal with its derivation, or C++'s own IEEE
// arithmetic where that is exact). The families: integer arithmetic and
// bit manipulation, setp with every comparison (NaN included), selp and
// predicate logic, cvt between every kind of type with the rounding and
// saturation rules, mov packing, floating-point arithmetic with directed
// rounding and fma fused-ness, ld/st of every width and state space,
// predicated execution, branches and loops. The .approx transcendental
// instructions are compared with std:: functions within the maxima that
// the PTX ISA documents.
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <ostream>

using namespace flashc;
using namespace flashc::sim::test;

namespace {

//===----------------------------------------------------------------------===//
// Building one-instruction bodies
//===----------------------------------------------------------------------===//

struct ScalarCase {
  std::string name;
  std::string body;
  std::vector<uint64_t> in;
  std::vector<uint64_t> expect;
};

void PrintTo(const ScalarCase &c, std::ostream *os) { *os << c.name; }

unsigned widthOf(const std::string &ty) {
  if (ty == "pred")
    return 1;
  if (ty == "b8" || ty == "u8" || ty == "s8")
    return 8;
  if (ty == "b16" || ty == "u16" || ty == "s16" || ty == "f16" || ty == "bf16")
    return 16;
  if (ty == "b64" || ty == "u64" || ty == "s64" || ty == "f64")
    return 64;
  return 32;
}

/// The register (of the wrapper's families) holding a value of type `ty`.
std::string reg(const std::string &ty, int i) {
  std::string n = std::to_string(i);
  if (ty == "pred")
    return "%p" + n;
  if (ty == "f32")
    return "%f" + n;
  if (ty == "f64")
    return "%fd" + n;
  switch (widthOf(ty)) {
  case 8:
  case 16:
    return "%rs" + n;
  case 64:
    return "%rd" + n;
  default:
    return "%r" + n;
  }
}

/// The ld/st type of a value of type `ty` (ld/st have no f16 types).
std::string memType(const std::string &ty) {
  if (ty == "f16" || ty == "bf16")
    return "b16";
  if (ty == "f16x2" || ty == "bf16x2")
    return "b32";
  return ty;
}

uint64_t maskTo(const std::string &ty, uint64_t v) {
  unsigned w = widthOf(ty);
  return w == 64 ? v : v & ((1ull << w) - 1);
}

std::string slot(const char *base, size_t i) {
  return "[" + std::string(base) + "+" + std::to_string(8 * i) + "]";
}

/// `opcode d, s1, s2, ...` with source i of type srcTys[i] from input slot
/// i and the destination of type `dstTy` stored to output slot 0.
/// Predicates travel as 0/1 words; 8-bit sources load their full 16-bit
/// register.
ScalarCase op(std::string name, const std::string &opcode,
              const std::string &dstTy, const std::vector<std::string> &srcTys,
              std::vector<uint64_t> in, uint64_t expect) {
  std::string body, operands;
  for (size_t i = 0; i < srcTys.size(); ++i) {
    const std::string &ty = srcTys[i];
    std::string r = reg(ty, 1 + static_cast<int>(i));
    if (ty == "pred") {
      std::string w = "%r" + std::to_string(9 + i);
      body += "  ld.global.u32 " + w + ", " + slot("%rd15", i) + ";\n";
      body += "  setp.ne.u32 " + r + ", " + w + ", 0;\n";
    } else {
      std::string lt = widthOf(ty) == 8 ? "b16" : memType(ty);
      body += "  ld.global." + lt + " " + r + ", " + slot("%rd15", i) + ";\n";
    }
    operands += ", " + r;
  }
  std::string d = reg(dstTy, 8);
  body += "  " + opcode + " " + d + operands + ";\n";
  if (dstTy == "pred") {
    body += "  selp.u32 %r8, 1, 0, %p8;\n";
    body += "  st.global.u32 " + slot("%rd14", 0) + ", %r8;\n";
  } else {
    body += "  st.global." + memType(dstTy) + " " + slot("%rd14", 0) + ", " +
            d + ";\n";
  }
  return {std::move(name), body, std::move(in), {maskTo(dstTy, expect)}};
}

ScalarCase bin(std::string name, const std::string &opcode,
               const std::string &ty, uint64_t a, uint64_t b, uint64_t r) {
  return op(std::move(name), opcode, ty, {ty, ty}, {a, b}, r);
}

ScalarCase un(std::string name, const std::string &opcode,
              const std::string &ty, uint64_t a, uint64_t r) {
  return op(std::move(name), opcode, ty, {ty}, {a}, r);
}

uint64_t u32(int64_t v) { return static_cast<uint32_t>(v); }
uint64_t u64(int64_t v) { return static_cast<uint64_t>(v); }
uint64_t F(float f) { return f32Bits(f); }
uint64_t D(double d) { return f64Bits(d); }
/// 1 + k * 2^e as f32 or f64 (exact in the cases used).
float onePlus(float k, int e) { return 1.0f + std::ldexp(k, e); }
double onePlusD(double k, int e) { return 1.0 + std::ldexp(k, e); }

class ScalarTest : public ::testing::TestWithParam<ScalarCase> {};

TEST_P(ScalarTest, Computes) {
  const ScalarCase &c = GetParam();
  auto out = runBody(c.body, c.in, c.expect.size());
  ASSERT_TRUE(ok(out)) << c.body;
  for (size_t i = 0; i < c.expect.size(); ++i) {
    char got[32], want[32];
    std::snprintf(got, sizeof(got), "0x%llx",
                  static_cast<unsigned long long>((*out)[i]));
    std::snprintf(want, sizeof(want), "0x%llx",
                  static_cast<unsigned long long>(c.expect[i]));
    EXPECT_EQ((*out)[i], c.expect[i]) << "output slot " << i << ": got " << got
                                      << ", expected " << want << "\n"
                                      << c.body;
  }
}

std::string testName(const ::testing::TestParamInfo<ScalarCase> &info) {
  return info.param.name;
}

//===----------------------------------------------------------------------===//
// Integer arithmetic
//===----------------------------------------------------------------------===//

uint32_t brev32(uint32_t x) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i)
    if (x & (1u << i))
      r |= 1u << (31 - i);
  return r;
}

std::vector<ScalarCase> integerCases() {
  const int64_t IMIN = INT32_MIN, IMAX = INT32_MAX;
  std::vector<ScalarCase> c = {
      bin("AddS32Wraps", "add.s32", "s32", u32(IMAX), 1, u32(IMIN)),
      bin("AddU64Carry", "add.u64", "u64", ~0ull, 2, 1),
      bin("AddU16Wraps", "add.u16", "u16", 0xffff, 2, 1),
      bin("AddSatS32High", "add.sat.s32", "s32", u32(IMAX), 1, u32(IMAX)),
      bin("AddSatS32Low", "add.sat.s32", "s32", u32(IMIN), u32(-1), u32(IMIN)),
      bin("SubS32", "sub.s32", "s32", 5, 7, u32(-2)),
      bin("SubSatS32", "sub.sat.s32", "s32", u32(IMIN), 1, u32(IMIN)),
      bin("SubS64", "sub.s64", "s64", 0, 1, ~0ull),
      bin("MulLoS32", "mul.lo.s32", "s32", u32(-3), 7, u32(-21)),
      bin("MulLoU32", "mul.lo.u32", "u32", 0x10000, 0x10001, 0x10000),
      bin("MulLoS64", "mul.lo.s64", "s64", 0x100000001ull, 0x100000001ull,
          0x200000001ull),
      bin("MulHiU32", "mul.hi.u32", "u32", 0xffffffff, 0xffffffff, 0xfffffffe),
      bin("MulHiS32Negative", "mul.hi.s32", "s32", u32(-2), 3, 0xffffffff),
      bin("MulHiS32MinMin", "mul.hi.s32", "s32", u32(IMIN), u32(IMIN),
          0x40000000),
      bin("MulHiU64", "mul.hi.u64", "u64", ~0ull, ~0ull, ~0ull - 1),
      bin("MulHiS64", "mul.hi.s64", "s64", u64(-1), 1, ~0ull),
      bin("MulHiU16", "mul.hi.u16", "u16", 0xffff, 0xffff, 0xfffe),
      op("MulWideU32", "mul.wide.u32", "u64", {"u32", "u32"},
         {0xffffffff, 0xffffffff}, 0xffffffffull * 0xffffffffull),
      op("MulWideS32", "mul.wide.s32", "s64", {"s32", "s32"},
         {u32(-2), u32(IMAX)}, u64(-2 * IMAX)),
      op("MulWideS16", "mul.wide.s16", "s32", {"s16", "s16"}, {0xfffe, 300},
         u32(-600)),
      op("MulWideU16", "mul.wide.u16", "u32", {"u16", "u16"}, {0xffff, 0xffff},
         0xfffe0001),
      op("MadLoS32", "mad.lo.s32", "s32", {"s32", "s32", "s32"},
         {u32(-3), 4, 5}, u32(-7)),
      op("MadLoU32Wraps", "mad.lo.u32", "u32", {"u32", "u32", "u32"},
         {0x80000000, 2, 5}, 5),
      op("MadHiU32", "mad.hi.u32", "u32", {"u32", "u32", "u32"},
         {0xffffffff, 2, 5}, 6),
      op("MadHiS32", "mad.hi.s32", "s32", {"s32", "s32", "s32"},
         {u32(-1), 1, 1}, 0),
      op("MadWideS32", "mad.wide.s32", "s64", {"s32", "s32", "s64"},
         {u32(-2), 3, 100}, 94),
      op("MadWideU32", "mad.wide.u32", "u64", {"u32", "u32", "u64"},
         {0xffffffff, 2, 1}, 0xffffffffull * 2 + 1),
      // Division truncates toward zero; the remainder takes the dividend's
      // sign.
      bin("DivS32PosPos", "div.s32", "s32", 7, 2, 3),
      bin("DivS32NegPos", "div.s32", "s32", u32(-7), 2, u32(-3)),
      bin("DivS32PosNeg", "div.s32", "s32", 7, u32(-2), u32(-3)),
      bin("DivS32NegNeg", "div.s32", "s32", u32(-7), u32(-2), 3),
      bin("DivU32Large", "div.u32", "u32", 0xfffffffe, 3, 0x55555554),
      bin("DivS64Neg", "div.s64", "s64", u64(-9), 4, u64(-2)),
      bin("DivU64", "div.u64", "u64", ~0ull, 1ull << 32, 0xffffffff),
      bin("DivS16Neg", "div.s16", "s16", 0xfff9, 2, 0xfffd),
      bin("RemS32PosPos", "rem.s32", "s32", 7, 3, 1),
      bin("RemS32NegPos", "rem.s32", "s32", u32(-7), 3, u32(-1)),
      bin("RemS32PosNeg", "rem.s32", "s32", 7, u32(-3), 1),
      bin("RemS32NegNeg", "rem.s32", "s32", u32(-7), u32(-3), u32(-1)),
      bin("RemU32Large", "rem.u32", "u32", 0xffffffff, 10, 5),
      bin("RemS64Neg", "rem.s64", "s64", u64(-9), 4, u64(-1)),
      bin("RemU16", "rem.u16", "u16", 0xffff, 7, 0xffff % 7),
      bin("MinS32", "min.s32", "s32", u32(-1), 1, u32(-1)),
      bin("MinU32", "min.u32", "u32", 0xffffffff, 1, 1),
      bin("MaxS32", "max.s32", "s32", u32(-1), 1, 1),
      bin("MaxU32", "max.u32", "u32", 0xffffffff, 1, 0xffffffff),
      bin("MinS16", "min.s16", "s16", 0x8000, 1, 0x8000),
      bin("MaxS64", "max.s64", "s64", u64(-5), u64(-7), u64(-5)),
      bin("MinU64", "min.u64", "u64", ~0ull, 3, 3),
      un("AbsS32", "abs.s32", "s32", u32(-5), 5),
      un("AbsS32Min", "abs.s32", "s32", u32(IMIN), u32(IMIN)),
      un("AbsS16", "abs.s16", "s16", 0xfffb, 5),
      un("NegS32", "neg.s32", "s32", 5, u32(-5)),
      un("NegS64", "neg.s64", "s64", 1, ~0ull),
  };
  return c;
}

std::vector<ScalarCase> bitCases() {
  std::vector<ScalarCase> c = {
      bin("AndB32", "and.b32", "b32", 0xff00ff00, 0x0ff00ff0, 0x0f000f00),
      bin("OrB32", "or.b32", "b32", 0xff00ff00, 0x0ff00ff0, 0xfff0fff0),
      bin("XorB32", "xor.b32", "b32", 0xff00ff00, 0x0ff00ff0, 0xf0f0f0f0),
      bin("AndB64", "and.b64", "b64", 0xff00ff00ff00ff00ull, ~0ull,
          0xff00ff00ff00ff00ull),
      bin("XorB16", "xor.b16", "b16", 0xffff, 0x00ff, 0xff00),
      un("NotB32", "not.b32", "b32", 0x0f0f0f0f, 0xf0f0f0f0),
      un("NotB64", "not.b64", "b64", 0, ~0ull),
      un("CnotZero", "cnot.b32", "b32", 0, 1),
      un("CnotNonZero", "cnot.b32", "b32", 5, 0),
      // shl/shr: the shift amount is a u32 and clamps at the width.
      op("ShlB32", "shl.b32", "b32", {"b32", "u32"}, {1, 31}, 0x80000000),
      op("ShlB32By32", "shl.b32", "b32", {"b32", "u32"}, {1, 32}, 0),
      op("ShlB32By100", "shl.b32", "b32", {"b32", "u32"}, {3, 100}, 0),
      op("ShlB64", "shl.b64", "b64", {"b64", "u32"}, {1, 63}, 1ull << 63),
      op("ShlB16", "shl.b16", "b16", {"b16", "u32"}, {3, 15}, 0x8000),
      op("ShrU32Logical", "shr.u32", "u32", {"u32", "u32"}, {0x80000000, 31},
         1),
      op("ShrB32Logical", "shr.b32", "b32", {"b32", "u32"}, {0x80000000, 4},
         0x08000000),
      op("ShrS32Arithmetic", "shr.s32", "s32", {"s32", "u32"}, {0x80000000, 31},
         0xffffffff),
      op("ShrS32Negative", "shr.s32", "s32", {"s32", "u32"}, {u32(-8), 1},
         u32(-4)),
      op("ShrS32By40", "shr.s32", "s32", {"s32", "u32"}, {u32(-8), 40},
         0xffffffff),
      op("ShrS32PositiveBy40", "shr.s32", "s32", {"s32", "u32"},
         {0x7fffffff, 40}, 0),
      op("ShrU32By40", "shr.u32", "u32", {"u32", "u32"}, {0x80000000, 40}, 0),
      op("ShrS64", "shr.s64", "s64", {"s64", "u32"}, {u64(-1) << 40, 8},
         u64(-1) << 32),
      op("ShrU64", "shr.u64", "u64", {"u64", "u32"}, {1ull << 63, 63}, 1),
      op("ShrS16", "shr.s16", "s16", {"s16", "u32"}, {0x8000, 3}, 0xf000),
      // bfe: d = bits [pos, pos + len) of a, zero- or sign-extended from the
      // field's top bit (bit min(pos + len - 1, msb) of a for .s32).
      op("BfeU32", "bfe.u32", "u32", {"u32", "u32", "u32"}, {0x12345678, 4, 8},
         0x67),
      op("BfeU32PastMsb", "bfe.u32", "u32", {"u32", "u32", "u32"},
         {0x12345678, 28, 8}, 0x1),
      op("BfeS32Negative", "bfe.s32", "s32", {"s32", "u32", "u32"},
         {0x00000f00, 8, 4}, 0xffffffff),
      op("BfeS32Positive", "bfe.s32", "s32", {"s32", "u32", "u32"},
         {0x12345678, 4, 8}, 0x67),
      op("BfeS32PastMsb", "bfe.s32", "s32", {"s32", "u32", "u32"},
         {0x80000000, 28, 8}, 0xfffffff8),
      op("BfeS32LenZero", "bfe.s32", "s32", {"s32", "u32", "u32"},
         {0xffffffff, 4, 0}, 0),
      op("BfeU64", "bfe.u64", "u64", {"u64", "u32", "u32"},
         {0xabcdef0123456789ull, 36, 12}, 0xef0),
      op("BfeS64", "bfe.s64", "s64", {"s64", "u32", "u32"},
         {0x0000800000000000ull, 40, 8}, ~0ull << 7),
      // bfi: the low len bits of a replace bits [pos, pos + len) of b.
      op("BfiB32", "bfi.b32", "b32", {"b32", "b32", "u32", "u32"},
         {0xff, 0x12345678, 8, 4}, 0x12345f78),
      op("BfiB32PastMsb", "bfi.b32", "b32", {"b32", "b32", "u32", "u32"},
         {0xffffffff, 0, 30, 8}, 0xc0000000),
      op("BfiB64", "bfi.b64", "b64", {"b64", "b64", "u32", "u32"},
         {0x5, ~0ull, 60, 3}, 0xdfffffffffffffffull),
      // prmt: byte i of d is byte selector_i of {b, a} (a the low word); a
      // selector with bit 3 set replicates the chosen byte's sign bit.
      op("PrmtSelect", "prmt.b32", "b32", {"b32", "b32", "b32"},
         {0x33221100, 0x77665544, 0x5140}, 0x55114400),
      op("PrmtSignReplicate", "prmt.b32", "b32", {"b32", "b32", "b32"},
         {0x80112233, 0, 0x321b}, 0x801122ff),
      op("PopcB32", "popc.b32", "u32", {"b32"}, {0xf0f0f0f1}, 17),
      op("PopcB64", "popc.b64", "u32", {"b64"}, {~0ull}, 64),
      op("ClzB32One", "clz.b32", "u32", {"b32"}, {1}, 31),
      op("ClzB32Zero", "clz.b32", "u32", {"b32"}, {0}, 32),
      op("ClzB32Top", "clz.b32", "u32", {"b32"}, {0x80000000}, 0),
      op("ClzB64", "clz.b64", "u32", {"b64"}, {1ull << 40}, 23),
      un("BrevB32One", "brev.b32", "b32", 1, 0x80000000),
      un("BrevB32", "brev.b32", "b32", 0x12345678, brev32(0x12345678)),
      un("BrevB64", "brev.b64", "b64", 1, 1ull << 63),
      // Predicate logic.
      op("AndPred", "and.pred", "pred", {"pred", "pred"}, {1, 0}, 0),
      op("OrPred", "or.pred", "pred", {"pred", "pred"}, {1, 0}, 1),
      op("XorPred", "xor.pred", "pred", {"pred", "pred"}, {1, 1}, 0),
      op("NotPred", "not.pred", "pred", {"pred"}, {0}, 1),
      // selp: a when the predicate is true, else b.
      op("SelpTrue", "selp.b32", "b32", {"b32", "b32", "pred"}, {11, 22, 1},
         11),
      op("SelpFalse", "selp.b32", "b32", {"b32", "b32", "pred"}, {11, 22, 0},
         22),
      op("SelpB64", "selp.b64", "b64", {"b64", "b64", "pred"},
         {1ull << 40, 7, 1}, 1ull << 40),
      op("SelpF32", "selp.f32", "f32", {"f32", "f32", "pred"},
         {F(1.5f), F(-2.f), 0}, F(-2.f)),
  };
  return c;
}

INSTANTIATE_TEST_SUITE_P(Integer, ScalarTest,
                         ::testing::ValuesIn(integerCases()), testName);
INSTANTIATE_TEST_SUITE_P(Bits, ScalarTest, ::testing::ValuesIn(bitCases()),
                         testName);

//===----------------------------------------------------------------------===//
// setp
//===----------------------------------------------------------------------===//

/// The comparison `cmp` by its PTX definition: ordered comparisons are false
/// when either operand is NaN, the unordered (`u`) ones true.
bool compareFloats(const std::string &cmp, double x, double y) {
  bool unordered = std::isnan(x) || std::isnan(y);
  if (cmp == "num")
    return !unordered;
  if (cmp == "nan")
    return unordered;
  bool u = cmp.size() == 3 && cmp.back() == 'u';
  if (unordered)
    return u;
  std::string base = u ? cmp.substr(0, 2) : cmp;
  if (base == "eq")
    return x == y;
  if (base == "ne")
    return x != y;
  if (base == "lt")
    return x < y;
  if (base == "le")
    return x <= y;
  if (base == "gt")
    return x > y;
  return x >= y; // ge
}

std::vector<ScalarCase> setpCases() {
  std::vector<ScalarCase> c;
  const char *floatCmps[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
                             "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::pair<double, double> pairs[] = {
      {1, 2},   {2, 1},     {1, 1},      {nan, 1},
      {1, nan}, {nan, nan}, {-0.0, 0.0}, {-inf, inf}};
  for (const char *cmp : floatCmps) {
    for (size_t i = 0; i < std::size(pairs); ++i) {
      auto [x, y] = pairs[i];
      bool r = compareFloats(cmp, x, y);
      std::string suffix = std::string(1, static_cast<char>(cmp[0] - 32)) +
                           (cmp + 1) + std::to_string(i);
      c.push_back(op("SetpF32" + suffix, std::string("setp.") + cmp + ".f32",
                     "pred", {"f32", "f32"},
                     {F(static_cast<float>(x)), F(static_cast<float>(y))}, r));
      c.push_back(op("SetpF64" + suffix, std::string("setp.") + cmp + ".f64",
                     "pred", {"f64", "f64"}, {D(x), D(y)}, r));
    }
  }
  // f16 operands are compared by value too: 0x7e00 is NaN, 0xbc00 is -1.
  c.push_back(op("SetpF16Lt", "setp.lt.f16", "pred", {"f16", "f16"},
                 {0xbc00, 0x3c00}, 1));
  c.push_back(op("SetpF16LtNaN", "setp.lt.f16", "pred", {"f16", "f16"},
                 {0x7e00, 0x3c00}, 0));
  c.push_back(op("SetpF16GtuNaN", "setp.gtu.f16", "pred", {"f16", "f16"},
                 {0x7e00, 0x3c00}, 1));
  c.push_back(op("SetpBF16Ge", "setp.ge.bf16", "pred", {"bf16", "bf16"},
                 {0x3f80, 0xbf80}, 1));
  // Integers: signed and unsigned orderings of the same bits differ.
  struct IntCmp {
    const char *cmp, *type;
    uint32_t a, b;
    bool r;
  } ints[] = {
      {"eq", "s32", 5, 5, true},
      {"ne", "s32", 5, 5, false},
      {"lt", "s32", 0xffffffff, 1, true},
      {"lt", "u32", 0xffffffff, 1, false},
      {"le", "s32", 0x80000000, 0x7fffffff, true},
      {"le", "u32", 0x80000000, 0x7fffffff, false},
      {"gt", "s32", 1, 0xffffffff, true},
      {"gt", "u32", 1, 0xffffffff, false},
      {"ge", "s32", 7, 7, true},
      {"ge", "u32", 6, 7, false},
      {"lo", "u32", 1, 0xffffffff, true},
      {"ls", "u32", 7, 7, true},
      {"hi", "u32", 0xffffffff, 1, true},
      {"hs", "u32", 6, 7, false},
      {"eq", "b32", 0xdeadbeef, 0xdeadbeef, true},
      {"ne", "b32", 0xdeadbeef, 0xdeadbeee, true},
  };
  for (size_t i = 0; i < std::size(ints); ++i) {
    const IntCmp &k = ints[i];
    c.push_back(op("SetpInt" + std::to_string(i) + "_" + k.cmp + "_" + k.type,
                   std::string("setp.") + k.cmp + "." + k.type, "pred",
                   {k.type, k.type}, {k.a, k.b}, k.r));
  }
  c.push_back(
      op("SetpS64", "setp.lt.s64", "pred", {"s64", "s64"}, {u64(-1), 0}, 1));
  c.push_back(
      op("SetpU16", "setp.lt.u16", "pred", {"u16", "u16"}, {0xffff, 0}, 0));
  c.push_back(
      op("SetpS16", "setp.lt.s16", "pred", {"s16", "s16"}, {0xffff, 0}, 1));
  return c;
}

INSTANTIATE_TEST_SUITE_P(Setp, ScalarTest, ::testing::ValuesIn(setpCases()),
                         testName);

/// `setp.CMP.BOOLOP p|q, a, b, c`: p = (a CMP b) BOOLOP c and
/// q = !(a CMP b) BOOLOP c.
TEST(SetpTest, BothDestinationsAndCombiners) {
  struct Case {
    const char *boolOp;
    int32_t a, b;
    bool c, p, q;
  } cases[] = {
      {"and", 1, 2, true, true, false},   {"and", 2, 1, true, false, true},
      {"and", 1, 2, false, false, false}, {"or", 2, 1, false, false, true},
      {"or", 2, 1, true, true, true},     {"xor", 1, 2, true, false, true},
      {"xor", 2, 1, false, false, true},
  };
  for (const Case &k : cases) {
    std::string body = std::string("  ld.global.s32 %r1, [%rd15];\n"
                                   "  ld.global.s32 %r2, [%rd15+8];\n"
                                   "  ld.global.u32 %r3, [%rd15+16];\n"
                                   "  setp.ne.u32 %p3, %r3, 0;\n"
                                   "  setp.lt.") +
                       k.boolOp +
                       ".s32 %p1|%p2, %r1, %r2, %p3;\n"
                       "  selp.u32 %r4, 1, 0, %p1;\n"
                       "  selp.u32 %r5, 1, 0, %p2;\n"
                       "  st.global.u32 [%rd14], %r4;\n"
                       "  st.global.u32 [%rd14+8], %r5;\n";
    auto out = runBody(body, {u32(k.a), u32(k.b), k.c}, 2);
    ASSERT_TRUE(ok(out)) << body;
    EXPECT_EQ((*out)[0], k.p ? 1u : 0u) << body;
    EXPECT_EQ((*out)[1], k.q ? 1u : 0u) << body;
  }
  // Without a combiner, q is the complement of p.
  auto out = runBody("  ld.global.f32 %f1, [%rd15];\n"
                     "  setp.lt.f32 %p1|%p2, %f1, 0f3F800000;\n"
                     "  selp.u32 %r4, 1, 0, %p1;\n"
                     "  selp.u32 %r5, 1, 0, %p2;\n"
                     "  st.global.u32 [%rd14], %r4;\n"
                     "  st.global.u32 [%rd14+8], %r5;\n",
                     {F(0.5f)}, 2);
  ASSERT_TRUE(ok(out));
  EXPECT_EQ((*out)[0], 1u);
  EXPECT_EQ((*out)[1], 0u);
}

//===----------------------------------------------------------------------===//
// cvt
//===----------------------------------------------------------------------===//

ScalarCase cvt(std::string name, const std::string &opcode,
               const std::string &dst, const std::string &src, uint64_t in,
               uint64_t expect) {
  return op(std::move(name), opcode, dst, {src}, {in}, expect);
}

std::vector<ScalarCase> cvtIntCases() {
  return {
      // Widening extends by the source type; narrowing keeps the low bits.
      cvt("S32FromS8", "cvt.s32.s8", "s32", "s8", 0x1280, 0xffffff80),
      cvt("U32FromU8", "cvt.u32.u8", "u32", "u8", 0x1280, 0x80),
      cvt("S32FromS16", "cvt.s32.s16", "s32", "s16", 0x8001, 0xffff8001),
      cvt("S32FromU16", "cvt.s32.u16", "s32", "u16", 0xffff, 0xffff),
      cvt("S64FromS32", "cvt.s64.s32", "s64", "s32", 0xffffffff, ~0ull),
      cvt("U64FromU32", "cvt.u64.u32", "u64", "u32", 0xffffffff, 0xffffffff),
      cvt("U64FromS32", "cvt.u64.s32", "u64", "s32", 0xfffffffe, ~0ull - 1),
      cvt("U16FromU32", "cvt.u16.u32", "u16", "u32", 0x12345, 0x2345),
      cvt("S16FromS32", "cvt.s16.s32", "s16", "s32", u32(-70000),
          u32(-70000) & 0xffff),
      cvt("U32FromU64", "cvt.u32.u64", "u32", "u64", 0x123456789ull,
          0x23456789),
      cvt("U8FromU32", "cvt.u8.u32", "u8", "u32", 0x1ff, 0xff),
      // .sat clamps to the destination's range.
      cvt("SatS16FromS32", "cvt.sat.s16.s32", "s16", "s32", u32(-70000),
          0x8000),
      cvt("SatU16FromS32", "cvt.sat.u16.s32", "u16", "s32", u32(-1), 0),
      cvt("SatU8FromU32", "cvt.sat.u8.u32", "u8", "u32", 300, 255),
      cvt("SatS8FromS32", "cvt.sat.s8.s32", "s8", "s32", 300, 127),
      cvt("SatS32FromU32", "cvt.sat.s32.u32", "s32", "u32", 0xffffffff,
          0x7fffffff),
      cvt("SatU32FromS32", "cvt.sat.u32.s32", "u32", "s32", u32(-5), 0),
      cvt("SatS32FromS64", "cvt.sat.s32.s64", "s32", "s64", 1ull << 40,
          0x7fffffff),
      cvt("SatS32FromS64Low", "cvt.sat.s32.s64", "s32", "s64", u64(-1) << 40,
          0x80000000),
  };
}

std::vector<ScalarCase> cvtFloatIntCases() {
  const float nanF = std::numeric_limits<float>::quiet_NaN();
  const float infF = std::numeric_limits<float>::infinity();
  return {
      // Integer rounding of floats: rni ties to even.
      cvt("RniHalfEven", "cvt.rni.s32.f32", "s32", "f32", F(2.5f), 2),
      cvt("RniHalfOdd", "cvt.rni.s32.f32", "s32", "f32", F(3.5f), 4),
      cvt("RniNegHalf", "cvt.rni.s32.f32", "s32", "f32", F(-2.5f), u32(-2)),
      cvt("RniNegHalfOdd", "cvt.rni.s32.f32", "s32", "f32", F(-3.5f), u32(-4)),
      cvt("RniBelowHalf", "cvt.rni.s32.f32", "s32", "f32", F(0.49999997f), 0),
      cvt("RziNeg", "cvt.rzi.s32.f32", "s32", "f32", F(-2.7f), u32(-2)),
      cvt("RziPos", "cvt.rzi.s32.f32", "s32", "f32", F(2.7f), 2),
      cvt("RmiNeg", "cvt.rmi.s32.f32", "s32", "f32", F(-2.1f), u32(-3)),
      cvt("RmiPos", "cvt.rmi.s32.f32", "s32", "f32", F(2.9f), 2),
      cvt("RpiPos", "cvt.rpi.s32.f32", "s32", "f32", F(2.1f), 3),
      cvt("RpiNeg", "cvt.rpi.s32.f32", "s32", "f32", F(-2.9f), u32(-2)),
      // Float-to-integer conversions saturate; NaN gives 0.
      cvt("SatS32High", "cvt.rzi.s32.f32", "s32", "f32", F(3e9f), 0x7fffffff),
      cvt("SatS32Low", "cvt.rzi.s32.f32", "s32", "f32", F(-3e9f), 0x80000000),
      cvt("SatS32Inf", "cvt.rni.s32.f32", "s32", "f32", F(infF), 0x7fffffff),
      cvt("SatS32NaN", "cvt.rni.s32.f32", "s32", "f32", F(nanF), 0),
      cvt("SatU32Negative", "cvt.rzi.u32.f32", "u32", "f32", F(-1.5f), 0),
      cvt("SatU32High", "cvt.rzi.u32.f32", "u32", "f32", F(5e9f), 0xffffffff),
      cvt("SatU8", "cvt.rni.u8.f32", "u8", "f32", F(300.f), 255),
      cvt("SatS8", "cvt.rni.s8.f32", "s8", "f32", F(-200.f), 0x80),
      cvt("SatS16", "cvt.rni.s16.f32", "s16", "f32", F(40000.f), 0x7fff),
      cvt("SatS64High", "cvt.rzi.s64.f32", "s64", "f32", F(1e30f),
          0x7fffffffffffffffull),
      cvt("SatS64Low", "cvt.rzi.s64.f32", "s64", "f32", F(-1e30f),
          0x8000000000000000ull),
      cvt("SatS64HighF64", "cvt.rzi.s64.f64", "s64", "f64", D(9.3e18),
          0x7fffffffffffffffull),
      cvt("SatU64High", "cvt.rzi.u64.f32", "u64", "f32", F(1e30f), ~0ull),
      cvt("SatU64Negative", "cvt.rzi.u64.f64", "u64", "f64", D(-1.0), 0),
      cvt("RniS64F64", "cvt.rni.s64.f64", "s64", "f64", D(-4.5), u64(-4)),
      cvt("RziS64F64Large", "cvt.rzi.s64.f64", "s64", "f64",
          D(std::ldexp(1.0, 62) + 1024.0), (1ull << 62) + 1024),
      // Integers to floats round once, by the rounding modifier.
      // 2^24 + 1 and 2^24 + 3 lie halfway between f32 neighbours 2 apart.
      cvt("RnF32FromS32Tie", "cvt.rn.f32.s32", "f32", "s32", 16777217,
          0x4b800000),
      cvt("RnF32FromS32TieUp", "cvt.rn.f32.s32", "f32", "s32", 16777219,
          0x4b800002),
      cvt("RzF32FromS32", "cvt.rz.f32.s32", "f32", "s32", 16777219, 0x4b800001),
      cvt("RmF32FromS32", "cvt.rm.f32.s32", "f32", "s32", 16777219, 0x4b800001),
      cvt("RpF32FromS32", "cvt.rp.f32.s32", "f32", "s32", 16777217, 0x4b800001),
      cvt("RmF32FromS32Neg", "cvt.rm.f32.s32", "f32", "s32", u32(-16777219),
          0xcb800002),
      cvt("RnF32FromU32", "cvt.rn.f32.u32", "f32", "u32", 0xffffffff,
          0x4f800000),
      cvt("RzF32FromU32", "cvt.rz.f32.u32", "f32", "u32", 0xffffffff,
          0x4f7fffff),
      // 2^62 + 2^38 + 1 is just above the midpoint 2^62 + 2^38 of the f32
      // neighbours 2^62 and 2^62 + 2^39: one rounding goes up; rounding
      // through f64 first (to 2^62 + 2^38, a tie) would go down.
      cvt("RnF32FromS64NoDoubleRounding", "cvt.rn.f32.s64", "f32", "s64",
          (1ull << 62) + (1ull << 38) + 1, 0x5e800001),
      cvt("RnF32FromU64Max", "cvt.rn.f32.u64", "f32", "u64", ~0ull, 0x5f800000),
      cvt("RnF64FromS64Tie", "cvt.rn.f64.s64", "f64", "s64", (1ull << 53) + 1,
          D(std::ldexp(1.0, 53))),
      cvt("RnF64FromS32", "cvt.rn.f64.s32", "f64", "s32", u32(-7), D(-7.0)),
      // f16 from integers: 2049 is a tie (neighbours 2048, 2050), to even.
      cvt("RnF16FromS32Tie", "cvt.rn.f16.s32", "f16", "s32", 2049, 0x6800),
      cvt("RnF16FromU32TieUp", "cvt.rn.f16.u32", "f16", "u32", 2051, 0x6802),
      cvt("RnF16FromS32Overflow", "cvt.rn.f16.s32", "f16", "s32", 70000,
          0x7c00),
  };
}

std::vector<ScalarCase> cvtFloatCases() {
  const float infF = std::numeric_limits<float>::infinity();
  const float tiny = std::ldexp(1.0f, -130); // an f32 subnormal
  return {
      // f32 -> f16, round to nearest even. 1 + 2^-11 is halfway between 1
      // and 1 + 2^-10.
      cvt("F16TieToEvenDown", "cvt.rn.f16.f32", "f16", "f32",
          F(onePlus(1, -11)), 0x3c00),
      cvt("F16TieToEvenUp", "cvt.rn.f16.f32", "f16", "f32", F(onePlus(3, -11)),
          0x3c02),
      cvt("F16AboveTie", "cvt.rn.f16.f32", "f16", "f32",
          F(onePlus(1, -11) + std::ldexp(1.0f, -20)), 0x3c01),
      cvt("F16Max", "cvt.rn.f16.f32", "f16", "f32", F(65504.f), 0x7bff),
      cvt("F16BelowOverflowTie", "cvt.rn.f16.f32", "f16", "f32", F(65519.f),
          0x7bff),
      cvt("F16OverflowTie", "cvt.rn.f16.f32", "f16", "f32", F(65520.f), 0x7c00),
      cvt("F16NegOverflow", "cvt.rn.f16.f32", "f16", "f32", F(-65520.f),
          0xfc00),
      cvt("F16Inf", "cvt.rn.f16.f32", "f16", "f32", F(infF), 0x7c00),
      cvt("F16NegZero", "cvt.rn.f16.f32", "f16", "f32", F(-0.0f), 0x8000),
      cvt("F16MinNormal", "cvt.rn.f16.f32", "f16", "f32",
          F(std::ldexp(1.0f, -14)), 0x0400),
      // Subnormal f16 results are multiples of 2^-24.
      cvt("F16MinSubnormal", "cvt.rn.f16.f32", "f16", "f32",
          F(std::ldexp(1.0f, -24)), 0x0001),
      cvt("F16HalfMinSubnormalTie", "cvt.rn.f16.f32", "f16", "f32",
          F(std::ldexp(1.0f, -25)), 0x0000),
      cvt("F16AboveHalfMinSubnormal", "cvt.rn.f16.f32", "f16", "f32",
          F(std::ldexp(1.0f, -25) + std::ldexp(1.0f, -35)), 0x0001),
      cvt("F16SubnormalTieUp", "cvt.rn.f16.f32", "f16", "f32",
          F(std::ldexp(3.0f, -25)), 0x0002),
      cvt("F16SubnormalTieDown", "cvt.rn.f16.f32", "f16", "f32",
          F(std::ldexp(5.0f, -25)), 0x0002),
      cvt("F16SubnormalToNormalTie", "cvt.rn.f16.f32", "f16", "f32",
          F(std::ldexp(2047.0f, -25)), 0x0400),
      cvt("F16NegSubnormal", "cvt.rn.f16.f32", "f16", "f32",
          F(-std::ldexp(7.0f, -24)), 0x8007),
      cvt("F16Underflow", "cvt.rn.f16.f32", "f16", "f32", F(tiny), 0x0000),
      cvt("F16RoundTowardZero", "cvt.rz.f16.f32", "f16", "f32",
          F(onePlus(3, -11)), 0x3c01),
      cvt("F16RoundTowardZeroOverflow", "cvt.rz.f16.f32", "f16", "f32", F(1e6f),
          0x7bff),
      // f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is above the tie, but
      // rounding through f32 would drop the 2^-40 and make it one.
      cvt("F16FromF64NoDoubleRounding", "cvt.rn.f16.f64", "f16", "f64",
          D(onePlusD(1, -11) + std::ldexp(1.0, -40)), 0x3c01),
      // f16 -> f32 is exact, subnormals included.
      cvt("F32FromF16MinSubnormal", "cvt.f32.f16", "f32", "f16", 0x0001,
          F(std::ldexp(1.0f, -24))),
      cvt("F32FromF16MaxSubnormal", "cvt.f32.f16", "f32", "f16", 0x03ff,
          F(std::ldexp(1023.0f, -24))),
      cvt("F32FromF16NegMinNormal", "cvt.f32.f16", "f32", "f16", 0x8400,
          F(-std::ldexp(1.0f, -14))),
      cvt("F32FromF16Max", "cvt.f32.f16", "f32", "f16", 0x7bff, F(65504.f)),
      cvt("F32FromF16NegInf", "cvt.f32.f16", "f32", "f16", 0xfc00, F(-infF)),
      cvt("F32FromF16", "cvt.f32.f16", "f32", "f16", 0x3555,
          F(static_cast<float>(refHalfValue(0x3555)))),
      cvt("F64FromF16", "cvt.f64.f16", "f64", "f16", 0xc001,
          D(refHalfValue(0xc001))),
      // f32 -> bf16, round to nearest even: 1 + 2^-8 is halfway between 1
      // and 1 + 2^-7.
      cvt("BF16TieToEvenDown", "cvt.rn.bf16.f32", "bf16", "f32",
          F(onePlus(1, -8)), 0x3f80),
      cvt("BF16TieToEvenUp", "cvt.rn.bf16.f32", "bf16", "f32",
          F(onePlus(3, -8)), 0x3f82),
      cvt("BF16AboveTie", "cvt.rn.bf16.f32", "bf16", "f32", 0x3f808001, 0x3f81),
      cvt("BF16Overflow", "cvt.rn.bf16.f32", "bf16", "f32", 0x7f7fffff, 0x7f80),
      cvt("BF16Negative", "cvt.rn.bf16.f32", "bf16", "f32", F(-1.0f), 0xbf80),
      cvt("BF16SubnormalTieUp", "cvt.rn.bf16.f32", "bf16", "f32", 0x00018000,
          0x0002),
      cvt("BF16SubnormalTieDown", "cvt.rn.bf16.f32", "bf16", "f32", 0x00008000,
          0x0000),
      cvt("BF16FromF64NoDoubleRounding", "cvt.rn.bf16.f64", "bf16", "f64",
          D(onePlusD(1, -8) + std::ldexp(1.0, -40)), 0x3f81),
      cvt("F32FromBF16", "cvt.f32.bf16", "f32", "bf16", 0x3f81, 0x3f810000),
      cvt("F32FromBF16Subnormal", "cvt.f32.bf16", "f32", "bf16", 0x8001,
          0x80010000),
      // f64 <-> f32.
      cvt("F32FromF64Tie", "cvt.rn.f32.f64", "f32", "f64", D(onePlusD(1, -24)),
          F(1.0f)),
      cvt("F32FromF64AboveTie", "cvt.rn.f32.f64", "f32", "f64",
          D(onePlusD(1, -24) + std::ldexp(1.0, -50)), 0x3f800001),
      cvt("F32FromF64TowardZero", "cvt.rz.f32.f64", "f32", "f64",
          D(1.0 - std::ldexp(1.0, -40)), 0x3f7fffff),
      cvt("F32FromF64Up", "cvt.rp.f32.f64", "f32", "f64",
          D(1.0 + std::ldexp(1.0, -40)), 0x3f800001),
      cvt("F32FromF64Down", "cvt.rm.f32.f64", "f32", "f64",
          D(-1.0 - std::ldexp(1.0, -40)), 0xbf800001),
      cvt("F64FromF32", "cvt.f64.f32", "f64", "f32", F(0.1f),
          D(static_cast<double>(0.1f))),
      // Integer rounding within a float type.
      cvt("RniF32", "cvt.rni.f32.f32", "f32", "f32", F(2.5f), F(2.0f)),
      cvt("RziF32", "cvt.rzi.f32.f32", "f32", "f32", F(-2.7f), F(-2.0f)),
      cvt("RmiF32", "cvt.rmi.f32.f32", "f32", "f32", F(-2.1f), F(-3.0f)),
      cvt("RpiF32", "cvt.rpi.f32.f32", "f32", "f32", F(2.1f), F(3.0f)),
      cvt("RniF64NegHalf", "cvt.rni.f64.f64", "f64", "f64", D(-0.5), D(-0.0)),
      // .sat clamps to [0, 1]; .ftz flushes subnormals to zero.
      cvt("SatF32High", "cvt.sat.f32.f32", "f32", "f32", F(1.5f), F(1.0f)),
      cvt("SatF32Low", "cvt.sat.f32.f32", "f32", "f32", F(-0.5f), F(0.0f)),
      cvt("FtzF32", "cvt.ftz.f32.f32", "f32", "f32", F(tiny), F(0.0f)),
      cvt("NoFtzF32", "cvt.f32.f32", "f32", "f32", F(tiny), F(tiny)),
  };
}

INSTANTIATE_TEST_SUITE_P(CvtInt, ScalarTest, ::testing::ValuesIn(cvtIntCases()),
                         testName);
INSTANTIATE_TEST_SUITE_P(CvtFloatInt, ScalarTest,
                         ::testing::ValuesIn(cvtFloatIntCases()), testName);
INSTANTIATE_TEST_SUITE_P(CvtFloat, ScalarTest,
                         ::testing::ValuesIn(cvtFloatCases()), testName);

/// `cvt.rn.f16x2.f32 d, a, b` and the bf16x2 form put a in the upper half.
std::vector<ScalarCase> cvtPackCases() {
  auto pack = [](std::string name, const std::string &opcode, float a, float b,
                 uint32_t r) {
    return op(std::move(name), opcode, "b32", {"f32", "f32"}, {F(a), F(b)}, r);
  };
  return {
      pack("F16x2Order", "cvt.rn.f16x2.f32", 1.0f, 2.0f, 0x3c004000),
      pack("F16x2Rounding", "cvt.rn.f16x2.f32", onePlus(3, -11), 65520.f,
           0x3c027c00),
      pack("F16x2Relu", "cvt.rn.relu.f16x2.f32", -1.0f, 2.0f, 0x00004000),
      pack("BF16x2Order", "cvt.rn.bf16x2.f32", 1.0f, -2.0f, 0x3f80c000),
      pack("BF16x2Ties", "cvt.rn.bf16x2.f32", onePlus(1, -8), onePlus(3, -8),
           0x3f803f82),
  };
}

INSTANTIATE_TEST_SUITE_P(CvtPack, ScalarTest,
                         ::testing::ValuesIn(cvtPackCases()), testName);

TEST(CvtTest, NaNStaysNaN) {
  auto out = runBody("  ld.global.f32 %f1, [%rd15];\n"
                     "  cvt.rn.f16.f32 %rs1, %f1;\n"
                     "  cvt.rn.bf16.f32 %rs2, %f1;\n"
                     "  cvt.f32.f16 %f2, %rs1;\n"
                     "  st.global.b16 [%rd14], %rs1;\n"
                     "  st.global.b16 [%rd14+8], %rs2;\n"
                     "  st.global.f32 [%rd14+16], %f2;\n",
                     {F(std::numeric_limits<float>::quiet_NaN())}, 3);
  ASSERT_TRUE(ok(out));
  EXPECT_EQ((*out)[0] & 0x7c00, 0x7c00u);
  EXPECT_NE((*out)[0] & 0x03ff, 0u) << "f16 NaN became infinity";
  EXPECT_EQ((*out)[1] & 0x7f80, 0x7f80u);
  EXPECT_NE((*out)[1] & 0x007f, 0u) << "bf16 NaN became infinity";
  EXPECT_TRUE(std::isnan(bitsF32(static_cast<uint32_t>((*out)[2]))));
}

/// Every f16 bit pattern converts to f32 exactly and back unchanged, and a
/// sweep of f32 values rounds as the reference does.
TEST(CvtTest, HalfSweepMatchesReference) {
  const char *body = "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd15, %rd1;\n"
                     "  add.s64 %rd3, %rd14, %rd1;\n"
                     "  ld.global.f32 %f1, [%rd2];\n"
                     "  cvt.rn.f16.f32 %rs1, %f1;\n"
                     "  cvt.rn.bf16.f32 %rs2, %f1;\n"
                     "  mov.b32 %r1, {%rs1, %rs2};\n"
                     "  st.global.b32 [%rd3], %r1;\n";
  FLASHC_SEEDED_RNG(rng);
  std::uniform_int_distribution<int> exponent(-30, 17);
  std::uniform_int_distribution<uint32_t> mantissa(0, 0x7fffff);
  std::vector<uint64_t> in(1024);
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t bits = (static_cast<uint32_t>(exponent(rng.engine) + 127) << 23) |
                    mantissa(rng.engine) | (i % 2 ? 0x80000000u : 0);
    // Every eighth value sits exactly on an f16 tie.
    if (i % 8 == 0)
      bits = (bits & ~0x1fffu) | 0x1000u;
    in[i] = bits;
  }
  for (size_t start = 0; start < in.size(); start += 256) {
    std::vector<uint64_t> part(in.begin() + start, in.begin() + start + 256);
    auto out = runBody(body, part, 256, 256);
    ASSERT_TRUE(ok(out));
    for (size_t i = 0; i < 256; ++i) {
      float x = bitsF32(static_cast<uint32_t>(part[i]));
      uint32_t got = static_cast<uint32_t>((*out)[i]);
      ASSERT_EQ(got & 0xffff, refToHalf(x)) << "f16 of " << x;
      ASSERT_EQ(got >> 16, refToBFloat(x)) << "bf16 of " << x;
    }
  }
  // f16 -> f32 -> f16 is the identity on every non-NaN pattern.
  const char *roundTrip = "  mul.wide.u32 %rd1, %r0, 8;\n"
                          "  add.s64 %rd2, %rd15, %rd1;\n"
                          "  add.s64 %rd3, %rd14, %rd1;\n"
                          "  ld.global.b16 %rs1, [%rd2];\n"
                          "  cvt.f32.f16 %f1, %rs1;\n"
                          "  cvt.rn.f16.f32 %rs2, %f1;\n"
                          "  st.global.f32 [%rd3], %f1;\n"
                          "  st.global.b16 [%rd3+4], %rs2;\n";
  for (uint32_t start = 0; start < 0x10000; start += 1024) {
    std::vector<uint64_t> part(1024);
    for (uint32_t i = 0; i < 1024; ++i)
      part[i] = start + i;
    auto out = runBody(roundTrip, part, 1024, 1024);
    ASSERT_TRUE(ok(out));
    for (uint32_t i = 0; i < 1024; ++i) {
      uint16_t h = static_cast<uint16_t>(start + i);
      double v = refHalfValue(h);
      float f = bitsF32(static_cast<uint32_t>((*out)[i]));
      if (std::isnan(v)) {
        ASSERT_TRUE(std::isnan(f)) << std::hex << h;
        continue;
      }
      ASSERT_EQ(static_cast<double>(f), v) << std::hex << h;
      ASSERT_EQ((*out)[i] >> 32, h) << std::hex << h;
    }
  }
}

//===----------------------------------------------------------------------===//
// mov
//===----------------------------------------------------------------------===//

TEST(MovTest, PackAndUnpack) {
  auto out = runBody(
      "  ld.global.b64 %rd1, [%rd15];\n"
      "  mov.b64 {%r1, %r2}, %rd1;\n" // %r1 is the low half
      "  st.global.u32 [%rd14], %r1;\n"
      "  st.global.u32 [%rd14+8], %r2;\n"
      "  mov.b64 %rd2, {%r2, %r1};\n" // the first source is the low half
      "  st.global.b64 [%rd14+16], %rd2;\n"
      "  mov.b32 {%rs1, %rs2}, %r1;\n"
      "  st.global.b16 [%rd14+24], %rs1;\n"
      "  st.global.b16 [%rd14+32], %rs2;\n"
      "  mov.b32 %r3, {%rs2, %rs1};\n"
      "  st.global.b32 [%rd14+40], %r3;\n"
      "  mov.b64 {%rs3, %rs4, %rs5, %rs6}, %rd1;\n"
      "  mov.b64 %rd3, {%rs6, %rs5, %rs4, %rs3};\n"
      "  st.global.b64 [%rd14+48], %rd3;\n",
      {0x1122334455667788ull}, 7);
  ASSERT_TRUE(ok(out));
  std::vector<uint64_t> expect = {
      0x55667788, 0x11223344, 0x5566778811223344ull, 0x7788,
      0x5566,     0x77885566, 0x7788556633441122ull};
  EXPECT_EQ(*out, expect);
}

TEST(MovTest, ImmediatesAndSpecialRegisters) {
  std::string ptx = std::string(kPtxHeader) + R"(
.visible .entry special(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  .reg .pred %p1;
  .reg .f32 %f1;
  .reg .f64 %fd1;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.y;
  mov.u32 %r3, %tid.z;
  mov.u32 %r4, %ntid.x;
  mad.lo.u32 %r5, %r2, %r4, %r1;
  mov.u32 %r6, %ntid.y;
  mul.lo.u32 %r6, %r6, %r4;
  mad.lo.u32 %r5, %r3, %r6, %r5;      // linear thread index
  mov.u32 %r7, %ctaid.x;
  mov.u32 %r8, %ctaid.y;
  mov.u32 %r9, %nctaid.x;
  mad.lo.u32 %r10, %r8, %r9, %r7;     // linear CTA index
  mov.u32 %r11, %ntid.z;
  mul.lo.u32 %r11, %r11, %r6;         // threads per CTA
  mad.lo.u32 %r12, %r10, %r11, %r5;   // global thread index
  mul.wide.u32 %rd2, %r12, 32;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r13, %laneid;
  mov.u32 %r14, %nctaid.y;
  st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r13};
  st.global.v4.u32 [%rd3+16], {%r7, %r8, %r9, %r14};
  mov.u32 %r1, -5;
  mov.u32 %r2, 0xfffffff0;
  mov.f32 %f1, 0f3FC00000;
  mov.f64 %fd1, 0dC000000000000000;
  mov.b32 %r3, %f1;
  setp.eq.u32 %p1, %r12, 0;
  @!%p1 bra DONE;
  st.global.v2.u32 [%rd1], {%r1, %r2};
  st.global.v2.u32 [%rd1+8], {%r3, %r3};
  st.global.f64 [%rd1+16], %fd1;
DONE:
  ret;
}
)";
  auto module = sim::Module::parse(ptx);
  ASSERT_TRUE(ok(module));
  sim::LaunchConfig config;
  config.grid = {2, 3};
  config.block = {4, 3, 3}; // 36 threads: two warps, the second partial
  const uint32_t threads = 36, ctas = 6;
  std::vector<uint32_t> out(threads * ctas * 8, 0xdeadbeef);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  ASSERT_TRUE(ok(device.launch(**module, "special", config,
                               {sim::KernelArg::pointer(out.data())})));
  for (uint32_t cta = 0; cta < ctas; ++cta) {
    for (uint32_t t = 0; t < threads; ++t) {
      const uint32_t *o = &out[(cta * threads + t) * 8];
      SCOPED_TRACE("CTA " + std::to_string(cta) + " thread " +
                   std::to_string(t));
      if (cta == 0 && t == 0) {
        EXPECT_EQ(o[0], static_cast<uint32_t>(-5));
        EXPECT_EQ(o[1], 0xfffffff0u);
        EXPECT_EQ(o[2], 0x3fc00000u);
        EXPECT_EQ(o[3], 0x3fc00000u);
        EXPECT_EQ(o[4], 0u);
        EXPECT_EQ(o[5], 0xc0000000u); // -2.0 as f64, high word
        continue;
      }
      EXPECT_EQ(o[0], t % 4);
      EXPECT_EQ(o[1], t / 4 % 3);
      EXPECT_EQ(o[2], t / 12);
      EXPECT_EQ(o[3], t % 32);
      EXPECT_EQ(o[4], cta % 2);
      EXPECT_EQ(o[5], cta / 2);
      EXPECT_EQ(o[6], 2u);
      EXPECT_EQ(o[7], 3u);
    }
  }
}

//===----------------------------------------------------------------------===//
// Floating-point arithmetic
//===----------------------------------------------------------------------===//

std::vector<ScalarCase> floatCases() {
  const float x = 1.0f, y = std::ldexp(1.5f, -23); // 1 + y is 1.5 ulp above 1
  const float nextUp = onePlus(1, -23);            // 1 + 1 ulp
  const float tiny = std::ldexp(1.0f, -130);
  return {
      bin("AddF32", "add.f32", "f32", F(0.1f), F(0.2f), F(0.1f + 0.2f)),
      bin("SubF32", "sub.f32", "f32", F(0.1f), F(0.3f), F(0.1f - 0.3f)),
      bin("MulF32", "mul.rn.f32", "f32", F(0.1f), F(3.0f), F(0.1f * 3.0f)),
      bin("DivRnF32", "div.rn.f32", "f32", F(1.0f), F(3.0f), F(1.0f / 3.0f)),
      bin("AddF64", "add.f64", "f64", D(0.1), D(0.2), D(0.1 + 0.2)),
      bin("MulF64", "mul.rn.f64", "f64", D(0.1), D(3.0), D(0.1 * 3.0)),
      bin("DivF64", "div.rn.f64", "f64", D(1.0), D(3.0), D(1.0 / 3.0)),
      // Directed rounding: 1 + 1.5 ulp rounds to 1 + 2 ulp (nearest, even)
      // or 1 + 1 ulp (toward zero or minus infinity).
      bin("AddRn", "add.rn.f32", "f32", F(x), F(y), 0x3f800002),
      bin("AddRz", "add.rz.f32", "f32", F(x), F(y), 0x3f800001),
      bin("AddRm", "add.rm.f32", "f32", F(x), F(y), 0x3f800001),
      bin("AddRp", "add.rp.f32", "f32", F(x), F(y), 0x3f800002),
      bin("SubRmNegative", "sub.rm.f32", "f32", F(-x), F(y), 0xbf800002),
      bin("SubRpNegative", "sub.rp.f32", "f32", F(-x), F(y), 0xbf800001),
      // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46.
      bin("MulRn", "mul.rn.f32", "f32", F(nextUp), F(nextUp), 0x3f800002),
      bin("MulRz", "mul.rz.f32", "f32", F(nextUp), F(nextUp), 0x3f800002),
      bin("MulRp", "mul.rp.f32", "f32", F(nextUp), F(nextUp), 0x3f800003),
      // fma rounds once: (1 + 2^-23)^2 - (1 + 2^-22) = 2^-46 exactly, where
      // mul then add gives 0. mad.rn.f32 is the same fused operation.
      op("FmaFused", "fma.rn.f32", "f32", {"f32", "f32", "f32"},
         {F(nextUp), F(nextUp), F(-onePlus(1, -22))}, F(std::ldexp(1.0f, -46))),
      op("MadRnFused", "mad.rn.f32", "f32", {"f32", "f32", "f32"},
         {F(nextUp), F(nextUp), F(-onePlus(1, -22))}, F(std::ldexp(1.0f, -46))),
      op("FmaF64Fused", "fma.rn.f64", "f64", {"f64", "f64", "f64"},
         {D(onePlusD(1, -52)), D(onePlusD(1, -52)), D(-onePlusD(1, -51))},
         D(std::ldexp(1.0, -104))),
      op("FmaRz", "fma.rz.f32", "f32", {"f32", "f32", "f32"},
         {F(nextUp), F(nextUp), F(0.0f)}, 0x3f800002),
      op("FmaRp", "fma.rp.f32", "f32", {"f32", "f32", "f32"},
         {F(nextUp), F(nextUp), F(0.0f)}, 0x3f800003),
      // min/max return the non-NaN operand; -0 < +0.
      bin("MinNaN", "min.f32", "f32", F(NAN), F(1.0f), F(1.0f)),
      bin("MaxNaN", "max.f32", "f32", F(1.0f), F(NAN), F(1.0f)),
      bin("MinSignedZero", "min.f32", "f32", F(0.0f), F(-0.0f), F(-0.0f)),
      bin("MaxSignedZero", "max.f32", "f32", F(-0.0f), F(0.0f), F(0.0f)),
      bin("MinF32", "min.f32", "f32", F(-3.0f), F(2.0f), F(-3.0f)),
      bin("MaxF64", "max.f64", "f64", D(-3.0), D(2.0), D(2.0)),
      // .ftz flushes subnormal inputs and results; .sat clamps to [0, 1].
      bin("AddFtz", "add.ftz.f32", "f32", F(tiny), F(0.0f), F(0.0f)),
      bin("AddNoFtz", "add.f32", "f32", F(tiny), F(0.0f), F(tiny)),
      bin("MulFtzResult", "mul.rn.ftz.f32", "f32", F(std::ldexp(1.0f, -100)),
          F(std::ldexp(1.0f, -30)), F(0.0f)),
      bin("AddSat", "add.sat.f32", "f32", F(0.7f), F(0.7f), F(1.0f)),
      bin("SubSat", "sub.sat.f32", "f32", F(0.2f), F(0.7f), F(0.0f)),
      un("NegF32", "neg.f32", "f32", F(1.5f), F(-1.5f)),
      un("AbsF32", "abs.f32", "f32", F(-1.5f), F(1.5f)),
      un("NegF64", "neg.f64", "f64", D(0.0), D(-0.0)),
      // Correctly rounded rcp, sqrt.
      un("RcpRnF32", "rcp.rn.f32", "f32", F(3.0f), F(1.0f / 3.0f)),
      un("SqrtRnF32", "sqrt.rn.f32", "f32", F(2.0f), F(std::sqrt(2.0f))),
      un("RcpRnF64", "rcp.rn.f64", "f64", D(3.0), D(1.0 / 3.0)),
      un("SqrtRnF64", "sqrt.rn.f64", "f64", D(2.0), D(std::sqrt(2.0))),
      // Half precision: each lane rounds once to nearest even.
      bin("AddF16Tie", "add.rn.f16", "f16", 0x3c00, 0x1000, 0x3c00),
      bin("AddF16x2", "add.rn.f16x2", "f16x2", 0x3c004000, 0x3c003c00,
          0x40004200),
      // (1 + 2^-10)^2 - (1 + 2^-9) = 2^-20 exactly (an f16 subnormal);
      // mul then add would give 0.
      op("FmaF16Fused", "fma.rn.f16", "f16", {"f16", "f16", "f16"},
         {0x3c01, 0x3c01, 0xbc02}, refToHalf(std::ldexp(1.0, -20))),
      op("FmaBF16x2", "fma.rn.bf16x2", "bf16x2", {"bf16x2", "bf16x2", "bf16x2"},
         {0x3f80c000, 0x40004000, 0x3f803f80}, 0x4040c040),
      bin("MulF16Overflow", "mul.rn.f16", "f16", 0x7bff, 0x4000, 0x7c00),
      bin("MaxF16x2", "max.f16x2", "f16x2", 0x3c00bc00, 0xbc003c00, 0x3c003c00),
  };
}

INSTANTIATE_TEST_SUITE_P(Float, ScalarTest, ::testing::ValuesIn(floatCases()),
                         testName);

TEST(FloatTest, NaNPropagatingMinMax) {
  auto out = runBody("  ld.global.f32 %f1, [%rd15];\n"
                     "  ld.global.f32 %f2, [%rd15+8];\n"
                     "  min.NaN.f32 %f3, %f1, %f2;\n"
                     "  max.NaN.f32 %f4, %f2, %f1;\n"
                     "  st.global.f32 [%rd14], %f3;\n"
                     "  st.global.f32 [%rd14+8], %f4;\n",
                     {F(NAN), F(1.0f)}, 2);
  ASSERT_TRUE(ok(out));
  EXPECT_TRUE(std::isnan(bitsF32(static_cast<uint32_t>((*out)[0]))));
  EXPECT_TRUE(std::isnan(bitsF32(static_cast<uint32_t>((*out)[1]))));
}

/// The .approx instructions against std:: in double, within the maxima the
/// PTX ISA documents: ex2 2 ulp; lg2 2^-22.6 absolute near 1, 2 ulp
/// relative elsewhere; rcp, sqrt 1 ulp; rsqrt 2^-22.9 relative; sin and
/// cos 2^-20.9 absolute on [-pi, pi]; tanh 2^-10.987 relative.
TEST(ApproxTest, WithinDocumentedErrors) {
  const char *body = "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd15, %rd1;\n"
                     "  mul.wide.u32 %rd3, %r0, 64;\n"
                     "  add.s64 %rd4, %rd14, %rd3;\n"
                     "  ld.global.f32 %f1, [%rd2];\n"
                     "  abs.f32 %f2, %f1;\n"
                     "  add.f32 %f2, %f2, 0f3F000000;\n" // |x| + 0.5 > 0
                     "  ex2.approx.ftz.f32 %f3, %f1;\n"
                     "  lg2.approx.f32 %f4, %f2;\n"
                     "  rcp.approx.f32 %f5, %f1;\n"
                     "  sqrt.approx.f32 %f6, %f2;\n"
                     "  rsqrt.approx.f32 %f7, %f2;\n"
                     "  sin.approx.f32 %f8, %f1;\n"
                     "  cos.approx.f32 %f9, %f1;\n"
                     "  tanh.approx.f32 %f10, %f1;\n"
                     "  st.global.f32 [%rd4], %f3;\n"
                     "  st.global.f32 [%rd4+8], %f4;\n"
                     "  st.global.f32 [%rd4+16], %f5;\n"
                     "  st.global.f32 [%rd4+24], %f6;\n"
                     "  st.global.f32 [%rd4+32], %f7;\n"
                     "  st.global.f32 [%rd4+40], %f8;\n"
                     "  st.global.f32 [%rd4+48], %f9;\n"
                     "  st.global.f32 [%rd4+56], %f10;\n";
  FLASHC_SEEDED_RNG(rng);
  std::uniform_real_distribution<float> dist(-3.14159f, 3.14159f);
  std::vector<float> xs = {-3.0f, -1.0f, -0.25f, 0.5f, 1.0f, 2.5f, 3.1f};
  while (xs.size() < 64)
    xs.push_back(dist(rng.engine));
  std::vector<uint64_t> in;
  for (float v : xs)
    in.push_back(F(v));
  auto out = runBody(body, in, 8 * xs.size(), static_cast<uint32_t>(xs.size()));
  ASSERT_TRUE(ok(out));
  const double ulp = std::ldexp(1.0, -23);
  for (size_t i = 0; i < xs.size(); ++i) {
    double x = xs[i], y = std::fabs(xs[i]) + 0.5f;
    auto got = [&](int j) {
      return static_cast<double>(
          bitsF32(static_cast<uint32_t>((*out)[8 * i + j])));
    };
    SCOPED_TRACE("x = " + std::to_string(x));
    EXPECT_NEAR(got(0), std::exp2(x), 2 * ulp * std::exp2(x)) << "ex2";
    EXPECT_NEAR(
        got(1), std::log2(y),
        std::max(std::ldexp(1.0, -22), 2 * ulp * std::fabs(std::log2(y))))
        << "lg2";
    EXPECT_NEAR(got(2), 1.0 / x, ulp * std::fabs(1.0 / x)) << "rcp";
    EXPECT_NEAR(got(3), std::sqrt(y), ulp * std::sqrt(y)) << "sqrt";
    EXPECT_NEAR(got(4), 1.0 / std::sqrt(y), std::ldexp(1.0 / std::sqrt(y), -22))
        << "rsqrt";
    EXPECT_NEAR(got(5), std::sin(x), std::ldexp(1.0, -20)) << "sin";
    EXPECT_NEAR(got(6), std::cos(x), std::ldexp(1.0, -20)) << "cos";
    EXPECT_NEAR(got(7), std::tanh(x), std::ldexp(std::fabs(std::tanh(x)), -10))
        << "tanh";
  }
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// ld/st of every width: narrow loads extend by their type into the wider
/// register, narrow stores write only their bytes, vectors keep their
/// element order.
TEST(MemoryTest, EveryWidth) {
  const uint64_t w0 = 0xf0e0d0c0b0a09080ull; // bytes 80 90 a0 ... f0
  const uint64_t w1 = 0x0706050403020100ull;
  const uint64_t w2 = 0x1716151413121110ull;
  const uint64_t w3 = 0x2726252423222120ull;
  const uint64_t w4 = 0x3736353433323130ull;
  auto out =
      runBody("  ld.global.u8 %r1, [%rd15];\n"
              "  st.global.u32 [%rd14], %r1;\n"
              "  ld.global.s8 %r1, [%rd15];\n"
              "  st.global.u32 [%rd14+8], %r1;\n"
              "  ld.global.u16 %r1, [%rd15];\n"
              "  st.global.u32 [%rd14+16], %r1;\n"
              "  ld.global.s16 %r1, [%rd15];\n"
              "  st.global.u32 [%rd14+24], %r1;\n"
              "  ld.global.u32 %rd1, [%rd15];\n"
              "  st.global.u64 [%rd14+32], %rd1;\n"
              "  ld.global.s32 %rd1, [%rd15];\n"
              "  st.global.u64 [%rd14+40], %rd1;\n"
              "  ld.global.b64 %rd1, [%rd15];\n"
              "  st.global.b64 [%rd14+48], %rd1;\n"
              "  ld.global.f32 %f1, [%rd15+4];\n"
              "  st.global.f32 [%rd14+56], %f1;\n"
              "  ld.global.f64 %fd1, [%rd15];\n"
              "  st.global.f64 [%rd14+64], %fd1;\n"
              "  ld.global.b16 %rs1, [%rd15+6];\n"
              "  st.global.b16 [%rd14+72], %rs1;\n"
              "  ld.global.v2.u32 {%r1, %r2}, [%rd15+8];\n"
              "  st.global.v2.u32 [%rd14+80], {%r2, %r1};\n"
              "  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd15+16];\n"
              "  st.global.v4.u32 [%rd14+96], {%r4, %r3, %r2, %r1};\n"
              "  ld.global.v2.u64 {%rd1, %rd2}, [%rd15+16];\n"
              "  st.global.v2.u64 [%rd14+112], {%rd2, %rd1};\n"
              "  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd15+16];\n"
              "  st.global.v4.f32 [%rd14+128], {%f2, %f1, %f4, %f3};\n"
              "  ld.global.v2.f64 {%fd1, %fd2}, [%rd15+16];\n"
              "  st.global.v2.f64 [%rd14+144], {%fd2, %fd1};\n"
              "  ld.global.v4.u16 {%rs1, %rs2, %rs3, %rs4}, [%rd15+32];\n"
              "  st.global.v4.u16 [%rd14+160], {%rs4, %rs3, %rs2, %rs1};\n"
              "  ld.global.v4.u8 {%rs1, %rs2, %rs3, %rs4}, [%rd15+8];\n"
              "  st.global.v4.u8 [%rd14+168], {%rs4, %rs3, %rs2, %rs1};\n"
              "  ld.global.v2.s8 {%rs1, %rs2}, [%rd15];\n"
              "  st.global.v2.u16 [%rd14+176], {%rs1, %rs2};\n"
              "  mov.u32 %r5, 0x12345678;\n"
              "  st.global.u8 [%rd14+184], %r5;\n"
              "  st.global.u16 [%rd14+186], %r5;\n"
              "  st.global.v2.u8 [%rd14+188], {%r5, %r5};\n",
              {w0, w1, w2, w3, w4}, 24);
  ASSERT_TRUE(ok(out));
  auto swap = [](uint64_t w) { return (w << 32) | (w >> 32); };
  std::vector<uint64_t> expect = {
      0x80,                  // ld.u8
      0xffffff80,            // ld.s8 into a 32-bit register
      0x9080,                // ld.u16
      0xffff9080,            // ld.s16
      0xb0a09080,            // ld.u32 into a 64-bit register
      0xffffffffb0a09080ull, // ld.s32 into a 64-bit register
      w0,                    // b64
      0xf0e0d0c0,            // f32 at +4
      w0,                    // f64
      0xf0e0,                // b16 at +6
      swap(w1),              // v2.u32, elements swapped
      0,                     // untouched
      swap(w3),              // v4.u32, reversed: words 3, 2 ...
      swap(w2),              // ... then words 1, 0
      w3,                    // v2.u64, swapped
      w2,
      swap(w2), // v4.f32, pairs swapped
      swap(w3),
      w3, // v2.f64, swapped
      w2,
      0x3130333235343736ull, // v4.u16 of w4, reversed
      0x00010203,            // v4.u8 of w1, reversed
      0xff90ff80,            // v2.s8 sign-extended to 16 bits
      0x0000787856780078ull, // st.u8, st.u16 and st.v2.u8 of 0x12345678
  };
  EXPECT_EQ(out->size(), expect.size());
  for (size_t i = 0; i < expect.size(); ++i)
    EXPECT_EQ((*out)[i], expect[i])
        << "slot " << i << std::hex << ": got 0x" << (*out)[i];
}

TEST(MemoryTest, SharedLocalAndGenericSpaces) {
  auto out =
      runBody("  ld.global.v2.u32 {%r1, %r2}, [%rd15];\n"
              "  st.shared.v2.u32 [smem+8], {%r1, %r2};\n"
              "  mov.u32 %r3, smem;\n"
              "  ld.shared.u32 %r4, [%r3+12];\n"
              "  st.local.u32 [lmem+4], %r4;\n"
              "  ld.local.u32 %r5, [lmem+4];\n"
              "  st.global.u32 [%rd14], %r5;\n"
              // Generic addresses of shared and local memory, and back.
              "  cvta.shared.u64 %rd1, smem;\n"
              "  ld.u32 %r6, [%rd1+8];\n"
              "  st.global.u32 [%rd14+8], %r6;\n"
              "  cvta.to.shared.u64 %rd2, %rd1;\n"
              "  cvt.u32.u64 %r7, %rd2;\n"
              "  ld.shared.u32 %r8, [%r7+12];\n"
              "  st.global.u32 [%rd14+16], %r8;\n"
              // nvcc's idiom for a stack frame: the local symbol's address.
              "  mov.u64 %rd3, lmem;\n"
              "  cvta.local.u64 %rd4, %rd3;\n"
              "  ld.u32 %r9, [%rd4+4];\n"
              "  st.global.u32 [%rd14+24], %r9;\n"
              "  st.u32 [%rd4+8], %r1;\n"
              "  ld.local.u32 %r10, [%rd3+8];\n"
              "  st.global.u32 [%rd14+32], %r10;\n"
              // A generic address outside the windows is global.
              "  ld.u32 %r11, [%rd15+4];\n"
              "  st.u32 [%rd14+40], %r11;\n",
              {0xbbbbbbbbaaaaaaaaull}, 6, 1,
              ".shared .align 16 .b8 smem[64]; .local .align 8 .b8 lmem[16];");
  ASSERT_TRUE(ok(out));
  std::vector<uint64_t> expect = {0xbbbbbbbb, 0xaaaaaaaa, 0xbbbbbbbb,
                                  0xbbbbbbbb, 0xaaaaaaaa, 0xbbbbbbbb};
  EXPECT_EQ(*out, expect);
}

TEST(MemoryTest, ParametersOfEverySize) {
  std::string ptx = std::string(kPtxHeader) + R"(
.visible .entry params(
    .param .u64 out,
    .param .u8 a,
    .param .u16 b,
    .param .u32 c,
    .param .f32 d,
    .param .align 8 .b8 pod[16],
    .param .f64 e
)
{
  .reg .b16 %rs<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .f32 %f1;
  .reg .f64 %fd1;
  ld.param.u64 %rd1, [out];
  ld.param.u8 %rs1, [a];
  ld.param.u16 %rs2, [b];
  ld.param.u32 %r1, [c];
  ld.param.f32 %f1, [d];
  ld.param.v2.u32 {%r2, %r3}, [pod];
  ld.param.u64 %rd2, [pod+8];
  ld.param.f64 %fd1, [e];
  cvt.u32.u16 %r4, %rs1;
  cvt.u32.u16 %r5, %rs2;
  st.global.v4.u32 [%rd1], {%r4, %r5, %r1, %r2};
  st.global.u32 [%rd1+16], %r3;
  st.global.f32 [%rd1+20], %f1;
  st.global.u64 [%rd1+24], %rd2;
  st.global.f64 [%rd1+32], %fd1;
  ret;
}
)";
  auto module = sim::Module::parse(ptx);
  ASSERT_TRUE(ok(module));
  const sim::KernelInfo *info = (*module)->getKernel("params");
  ASSERT_NE(info, nullptr);
  // out 0, a 8, b 10, c 12, d 16, pod 24 (aligned to 8), e 40.
  std::vector<uint32_t> offsets;
  for (const sim::ParamInfo &p : info->params)
    offsets.push_back(p.offset);
  EXPECT_EQ(offsets, (std::vector<uint32_t>{0, 8, 10, 12, 16, 24, 40}));
  std::vector<uint32_t> out(10, 0);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  sim::KernelArg pod;
  pod.bytes.resize(16);
  uint32_t podWords[4] = {0x11111111, 0x22222222, 0x33333333, 0x44444444};
  std::memcpy(pod.bytes.data(), podWords, 16);
  sim::LaunchConfig config;
  ASSERT_TRUE(ok(device.launch(
      **module, "params", config,
      {sim::KernelArg::pointer(out.data()),
       sim::KernelArg::scalar<uint8_t>(0xab),
       sim::KernelArg::scalar<uint16_t>(0xcdef), sim::KernelArg::u32(7),
       sim::KernelArg::f32(2.5f), pod, sim::KernelArg::scalar(-0.25)})));
  std::vector<uint32_t> expect = {
      0xab,       0xcdef,
      7,          0x11111111,
      0x22222222, f32Bits(2.5f),
      0x33333333, 0x44444444,
      0,          static_cast<uint32_t>(D(-0.25) >> 32)};
  EXPECT_EQ(out, expect);
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

TEST(ControlTest, PredicatedExecution) {
  const char *body = "  ld.global.s32 %r1, [%rd15];\n"
                     "  ld.global.s32 %r2, [%rd15+8];\n"
                     "  setp.lt.s32 %p1, %r1, %r2;\n"
                     "  mov.u32 %r3, 0;\n"
                     "  mov.u32 %r4, 0;\n"
                     "  @%p1 mov.u32 %r3, 1;\n"
                     "  @!%p1 mov.u32 %r4, 1;\n"
                     "  @%p1 st.global.u32 [%rd14+16], %r1;\n"
                     "  @!%p1 st.global.u32 [%rd14+24], %r2;\n"
                     "  st.global.u32 [%rd14], %r3;\n"
                     "  st.global.u32 [%rd14+8], %r4;\n";
  auto lt = runBody(body, {u32(-1), 2}, 4);
  ASSERT_TRUE(ok(lt));
  EXPECT_EQ(*lt, (std::vector<uint64_t>{1, 0, 0xffffffff, 0}));
  auto ge = runBody(body, {3, 2}, 4);
  ASSERT_TRUE(ok(ge));
  EXPECT_EQ(*ge, (std::vector<uint64_t>{0, 1, 0, 2}));
  // A guarded store to a bad address is not executed, so it is no fault.
  auto skipped = runBody("  setp.eq.u32 %p1, %r0, 1;\n"
                         "  mov.u64 %rd1, 0;\n"
                         "  @%p1 st.global.u32 [%rd1], %r0;\n",
                         {}, 1);
  EXPECT_TRUE(ok(skipped));
}

TEST(ControlTest, BranchesAndLoops) {
  // sum = 1 + ... + n by a loop; product of the first m odd numbers by a
  // nested loop that adds.
  const char *body = "  ld.global.u32 %r1, [%rd15];\n"
                     "  mov.u32 %r2, 0;\n"
                     "  mov.u32 %r3, 1;\n"
                     "LOOP:\n"
                     "  setp.gt.u32 %p1, %r3, %r1;\n"
                     "  @%p1 bra DONE;\n"
                     "  add.u32 %r2, %r2, %r3;\n"
                     "  add.u32 %r3, %r3, 1;\n"
                     "  bra.uni LOOP;\n"
                     "DONE:\n"
                     "  st.global.u32 [%rd14], %r2;\n"
                     "  ld.global.u32 %r4, [%rd15+8];\n"
                     "  mov.u32 %r5, 1;\n" // product
                     "  mov.u32 %r6, 0;\n" // i
                     "OUTER:\n"
                     "  setp.ge.u32 %p2, %r6, %r4;\n"
                     "  @%p2 bra END;\n"
                     "  shl.b32 %r7, %r6, 1;\n"
                     "  add.u32 %r7, %r7, 1;\n" // 2i + 1
                     "  mov.u32 %r8, 0;\n"      // product * (2i + 1) by adds
                     "  mov.u32 %r9, 0;\n"
                     "INNER:\n"
                     "  add.u32 %r8, %r8, %r5;\n"
                     "  add.u32 %r9, %r9, 1;\n"
                     "  setp.lt.u32 %p3, %r9, %r7;\n"
                     "  @%p3 bra INNER;\n"
                     "  mov.u32 %r5, %r8;\n"
                     "  add.u32 %r6, %r6, 1;\n"
                     "  bra OUTER;\n"
                     "END:\n"
                     "  st.global.u32 [%rd14+8], %r5;\n";
  struct Case {
    uint32_t n, m, sum, product;
  } cases[] = {
      {0, 0, 0, 1}, {1, 1, 1, 1}, {10, 4, 55, 105}, {1000, 6, 500500, 10395}};
  for (const Case &c : cases) {
    auto out = runBody(body, {c.n, c.m}, 2);
    ASSERT_TRUE(ok(out));
    EXPECT_EQ((*out)[0], c.sum) << "n = " << c.n;
    EXPECT_EQ((*out)[1], c.product) << "m = " << c.m;
  }
}

TEST(ControlTest, DivergentThreadsReconverge) {
  // Odd threads take a longer path; every thread stores its own result.
  const char *body = "  and.b32 %r1, %r0, 1;\n"
                     "  setp.eq.u32 %p1, %r1, 1;\n"
                     "  mov.u32 %r2, %r0;\n"
                     "  @!%p1 bra JOIN;\n"
                     "  mul.lo.u32 %r2, %r2, 3;\n"
                     "  add.u32 %r2, %r2, 1000;\n"
                     "JOIN:\n"
                     "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd14, %rd1;\n"
                     "  st.global.u32 [%rd2], %r2;\n";
  auto out = runBody(body, {}, 100, 100);
  ASSERT_TRUE(ok(out));
  for (uint32_t t = 0; t < 100; ++t)
    EXPECT_EQ((*out)[t], t % 2 ? 3 * t + 1000 : t) << "thread " << t;
}

TEST(ControlTest, InstructionLimitTrapsRunawayLoops) {
  auto out = runBody("SPIN:\n  bra.uni SPIN;\n", {}, 1);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.status().code(), ErrorCode::Trap);
  // runBody's budget: 2^20 instructions per thread.
  EXPECT_NE(out.status().message().find("exceeded 1048576 instructions"),
            std::string::npos)
      << out.status().message();
}

TEST(ControlTest, TrapInstruction) {
  auto out = runBody("  setp.eq.u32 %p1, %r0, 5;\n  @%p1 trap;\n", {}, 1, 32);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.status().code(), ErrorCode::Trap);
  EXPECT_TRUE(out.status().isFault());
  EXPECT_NE(out.status().message().find("thread (5,0,0)"), std::string::npos)
      << out.status().message();
  EXPECT_EQ(lineIn(out.status().message(), "body.ptx"), kBodyFirstLine + 1)
      << out.status().message();
}

} // namespace
