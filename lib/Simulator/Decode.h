//===- Decode.h - What instruction descriptions decode with -----*- C++ -*-===//
//
// The parser's side of an instruction description (Instructions.def): an
// opcode split into its spelling, type suffixes and other modifiers
// (OpcodeParts) for `decode`, the parsers of common modifiers, and the
// OperandReader with which `operands` turns the operands as written into
// pre-classified `Operand`s.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_DECODE_H
#define FLASHC_LIB_SIMULATOR_DECODE_H

#include "Program.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flashc {
namespace sim {
namespace detail {

//===----------------------------------------------------------------------===//
// Modifiers
//===----------------------------------------------------------------------===//

inline std::optional<Ty> parseType(std::string_view s) {
  static const std::pair<const char *, Ty> table[] = {
      {"pred", Ty::Pred}, {"b8", Ty::B8},         {"b16", Ty::B16},
      {"b32", Ty::B32},   {"b64", Ty::B64},       {"u8", Ty::U8},
      {"u16", Ty::U16},   {"u32", Ty::U32},       {"u64", Ty::U64},
      {"s8", Ty::S8},     {"s16", Ty::S16},       {"s32", Ty::S32},
      {"s64", Ty::S64},   {"f16", Ty::F16},       {"f16x2", Ty::F16x2},
      {"bf16", Ty::BF16}, {"bf16x2", Ty::BF16x2}, {"f32", Ty::F32},
      {"f64", Ty::F64}};
  for (auto &[name, ty] : table)
    if (s == name)
      return ty;
  return std::nullopt;
}

inline bool isIntType(Ty t) {
  return t != Ty::None && t != Ty::Pred && !isFloat(t);
}

inline std::optional<Round> parseRound(std::string_view s) {
  static const std::pair<const char *, Round> table[] = {
      {"rn", Round::RN},   {"rz", Round::RZ},   {"rm", Round::RM},
      {"rp", Round::RP},   {"rni", Round::RNI}, {"rzi", Round::RZI},
      {"rmi", Round::RMI}, {"rpi", Round::RPI}};
  for (auto &[name, r] : table)
    if (s == name)
      return r;
  return std::nullopt;
}

inline std::optional<Cmp> parseCmp(std::string_view s) {
  static const std::pair<const char *, Cmp> table[] = {
      {"eq", Cmp::EQ},   {"ne", Cmp::NE},   {"lt", Cmp::LT},
      {"le", Cmp::LE},   {"gt", Cmp::GT},   {"ge", Cmp::GE},
      {"lo", Cmp::LO},   {"ls", Cmp::LS},   {"hi", Cmp::HI},
      {"hs", Cmp::HS},   {"equ", Cmp::EQU}, {"neu", Cmp::NEU},
      {"ltu", Cmp::LTU}, {"leu", Cmp::LEU}, {"gtu", Cmp::GTU},
      {"geu", Cmp::GEU}, {"num", Cmp::NUM}, {"nan", Cmp::NAN_}};
  for (auto &[name, c] : table)
    if (s == name)
      return c;
  return std::nullopt;
}

inline std::optional<Space> parseSpace(std::string_view s) {
  if (s == "global")
    return Space::Global;
  // A CTA is a cluster of one: its shared::cluster window is its own.
  if (s == "shared" || s == "shared::cta" || s == "shared::cluster")
    return Space::Shared;
  if (s == "local")
    return Space::Local;
  if (s == "param")
    return Space::Param;
  if (s == "const")
    return Space::Const;
  return std::nullopt;
}

/// Modifiers that only carry cache or ordering hints.
inline bool isHint(std::string_view s) {
  static const char *hints[] = {
      "ca",       "cg",      "cs",      "lu",      "cv",   "wb",  "wt",  "nc",
      "volatile", "relaxed", "acquire", "release", "weak", "sys", "gpu", "cta",
      "uni",      "sync",    "aligned", "acq_rel", "sc",   "mmio"};
  for (const char *h : hints)
    if (s == h)
      return true;
  return s.rfind("L1::", 0) == 0 || s.rfind("L2::", 0) == 0 ||
         s.rfind("level::", 0) == 0;
}

/// Takes a modifier common to floating-point instructions (`.ftz`, `.sat`,
/// `.approx`, `.full`, a rounding mode) into `inst`; false for any other.
inline bool takeCommonFloatMods(std::string_view m, Inst &inst) {
  if (m == "ftz") {
    inst.flags |= kFtz;
    return true;
  }
  if (m == "sat") {
    inst.flags |= kSat;
    return true;
  }
  if (m == "approx" || m == "full") {
    inst.flags |= kApprox;
    return true;
  }
  if (std::optional<Round> r = parseRound(m)) {
    inst.round = *r;
    return true;
  }
  return false;
}

/// The modifiers of a warp collective: `.sync` and exactly one of `modes`
/// (stored in `inst.mode`); false on anything else.
template <typename Mode>
bool decodeCollectiveModifiers(
    const std::vector<std::string_view> &rest,
    std::initializer_list<std::pair<std::string_view, Mode>> modes,
    Inst &inst) {
  bool sync = false, haveMode = false;
  for (std::string_view m : rest) {
    if (m == "sync") {
      sync = true;
      continue;
    }
    auto it = std::find_if(modes.begin(), modes.end(),
                           [&](const auto &mode) { return mode.first == m; });
    if (it == modes.end() || haveMode)
      return false;
    inst.mode = static_cast<uint8_t>(it->second);
    haveMode = true;
  }
  return sync && haveMode;
}

/// What `decode` returns for an opcode its description does not implement.
inline const std::string kUnsupported = "unsupported instruction";

/// An opcode as a description decodes it: "ld.global.v4.u32" matched by
/// the spelling "ld" has the types {u32} and the rest {global, v4}, each in
/// the order written.
struct OpcodeParts {
  /// The whole opcode.
  std::string_view opcode;
  /// The spelling of the description that matched (one or more leading
  /// components of the opcode).
  std::string_view spelling;
  /// The type suffixes after the spelling.
  std::vector<Ty> types;
  /// The other modifiers after the spelling.
  std::vector<std::string_view> rest;

  /// True, storing it in `inst.type`, when there is exactly one type.
  bool oneType(Inst &inst) const {
    if (types.size() != 1)
      return false;
    inst.type = types[0];
    return true;
  }
};

//===----------------------------------------------------------------------===//
// Operands
//===----------------------------------------------------------------------===//

class FunctionParser;
struct RawOperand;

/// Reads the operands of one instruction as written (scalars, `{...}`
/// vectors, `[...]` addresses; `p|q` is a vector of two) into the decoded
/// operand list, in order. Errors name the source line and the opcode.
class OperandReader {
public:
  OperandReader(FunctionParser &parser, const std::string &opcode,
                const std::vector<RawOperand> &raw, uint32_t line);

  /// The number of operands written.
  size_t size() const;
  /// Whether operand `i` is a scalar (neither a vector nor an address).
  bool isScalar(size_t i) const;
  /// Whether operand `i` is a `{...}` vector (or `p|q`), and its elements.
  bool isVector(size_t i) const;
  size_t vectorSize(size_t i) const;
  /// An error unless there are `lo` to `hi` operands.
  Status count(size_t lo, size_t hi) const;
  /// A Parse error about this instruction.
  Status bad(const std::string &what) const;

  /// Adds operand `i`, a scalar of type `type` (register, special
  /// register, immediate or symbol).
  Status addScalar(size_t i, Ty type);
  /// Adds operand `i`, a destination register (or `_`).
  Status addReg(size_t i, Ty type);
  /// Adds the `n` elements of vector operand `i`, registers (or `_`) when
  /// `dest`.
  Status addVector(size_t i, Ty type, size_t n, bool dest);
  /// Adds operand `i`, an address in `space`.
  Status addAddr(size_t i, Space space);
  /// Whether operand `i` is a tensor operand `[map, {c0, ...}]`.
  bool isTensorAddress(size_t i) const;
  /// Adds tensor operand `i`: the map's generic address (an address
  /// operand), then its `rank` s32 coordinates.
  Status addTensorAddress(size_t i, size_t rank);
  /// Adds a destination that discards its value.
  void addSink();
  /// Adds an operand read with readScalar.
  void add(const Operand &o) { ops.push_back(o); }
  /// Reads operand `i` (its first element) as a scalar without adding it.
  Status readScalar(size_t i, Ty type, Operand &out) const;
  /// Operand `i`, a label: the parser stores the index of its instruction
  /// in Inst::target once the body is parsed.
  Status addLabel(size_t i);
  /// Whether `o` is a predicate register.
  bool isPredicate(const Operand &o) const;

  const std::string &opcode() const { return op; }
  /// The operands added so far.
  const std::vector<Operand> &operands() const { return ops; }

private:
  FunctionParser &parser;
  const std::string &op;
  const std::vector<RawOperand> &raw;
  uint32_t line;
  std::vector<Operand> ops;
};

/// Returns the error of a Status-returning expression, if any.
#define FLASHC_SIM_TRY(x)                                                      \
  do {                                                                         \
    if (Status e = (x))                                                        \
      return e;                                                                \
  } while (false)

/// `d, a`: a destination register of type `dt`, a source of type `t`.
inline Status unaryOperands(OperandReader &r, Ty dt, Ty t) {
  FLASHC_SIM_TRY(r.count(2, 2));
  FLASHC_SIM_TRY(r.addReg(0, dt));
  return r.addScalar(1, t);
}

/// The one operand of a wait on commit groups (cp.async.wait_group,
/// cp.async.bulk.wait_group, wgmma.wait_group): the number of groups that
/// may stay in flight, an immediate, stored in Inst::target.
inline Status groupCountOperand(OperandReader &r, Inst &inst) {
  FLASHC_SIM_TRY(r.count(1, 1));
  Operand n;
  FLASHC_SIM_TRY(r.readScalar(0, Ty::U32, n));
  if (n.kind != OperandKind::Imm || n.imm > 0xffffffffu)
    return r.bad("the group count must be an immediate");
  inst.target = static_cast<uint32_t>(n.imm);
  return Status::success();
}

/// `d, a, b`, all of type `t`.
inline Status binaryOperands(OperandReader &r, Ty t) {
  FLASHC_SIM_TRY(r.count(3, 3));
  FLASHC_SIM_TRY(r.addReg(0, t));
  FLASHC_SIM_TRY(r.addScalar(1, t));
  return r.addScalar(2, t);
}

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_DECODE_H
