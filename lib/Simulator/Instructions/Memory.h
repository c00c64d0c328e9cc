//===- Memory.h - Loads, stores, atomics, address conversion ----*- C++ -*-===//
//
// The descriptions of ld, st, atom, red and cvta (see Instructions.def).
// Every access goes through the executor's `access`, which checks bounds,
// alignment and races.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_MEMORY_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_MEMORY_H

#include "../Decode.h"
#include "../Exec.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace flashc {
namespace sim {
namespace detail {

/// ld and st of one value or a v2, v4 or v8 vector, in any state space.
struct LdStInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"ld", "st"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = p.spelling == "ld" ? Op::Ld : Op::St;
    for (std::string_view m : p.rest) {
      if (std::optional<Space> s = parseSpace(m))
        inst.space = *s;
      else if (m == "v2" || m == "v4" || m == "v8")
        inst.vec = static_cast<uint8_t>(m[1] - '0');
      else if (!isHint(m))
        return kUnsupported;
    }
    return p.oneType(inst) ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    Ty t = inst.type;
    FLASHC_SIM_TRY(r.count(2, 3)); // an optional cache policy is ignored
    if (inst.op == Op::Ld) {
      if (inst.vec > 1)
        FLASHC_SIM_TRY(r.addVector(0, t, inst.vec, true));
      else
        FLASHC_SIM_TRY(r.addReg(0, t));
      return r.addAddr(1, inst.space);
    }
    FLASHC_SIM_TRY(r.addAddr(0, inst.space));
    if (inst.vec > 1)
      return r.addVector(1, t, inst.vec, false);
    return r.addScalar(1, t);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    Ty ty = I.type;
    constexpr bool isLoad = Code == Op::Ld;
    uint64_t addr = S.address(isLoad ? I.vec : 0);
    unsigned esize = sizeOf(ty);
    unsigned total = esize * I.vec;
    uint8_t *p = S.x.access(I, S.t, I.space, addr, total, total, !isLoad);
    if (!p)
      return Next::Stop;
    for (unsigned i = 0; i < I.vec; ++i) {
      if (isLoad) {
        uint64_t v = 0;
        std::memcpy(&v, p + i * esize, esize);
        if (isSigned(ty))
          v = static_cast<uint64_t>(sext(ty, v));
        S.dst(i, v);
      } else {
        uint64_t v = S.src(1 + i);
        std::memcpy(p + i * esize, &v, esize);
      }
    }
    return Next::Advance;
  }
};

/// cvta: a shared, local or parameter address to a generic one (Inst::mode
/// 0), or with `.to` a generic one to the state space's (mode 1).
/// Parameters are read-only through their generic addresses.
struct CvtaInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"cvta"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Cvta;
    bool to = false;
    for (std::string_view m : p.rest) {
      if (m == "to")
        to = true;
      else if (std::optional<Space> s = parseSpace(m))
        inst.space = *s;
      else
        return kUnsupported;
    }
    // mode 1: generic -> space; 0: space -> generic.
    inst.mode = to ? 1 : 0;
    if (inst.space == Space::Generic)
      return kUnsupported;
    return p.oneType(inst) && (inst.type == Ty::U64 || inst.type == Ty::U32 ||
                               inst.type == Ty::B64)
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    return unaryOperands(r, inst.type, inst.type);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    uint64_t a = S.src(1);
    uint64_t base = I.space == Space::Shared  ? kSharedWindow
                    : I.space == Space::Local ? kLocalWindow
                    : I.space == Space::Param ? kParamWindow
                                              : 0;
    uint64_t r = I.mode ? a - base : a + base;
    S.dst(0, maskTo(I.type, r));
    return Next::Advance;
  }
};

/// atom (Inst::mode: the AtomOp) and red (kAligned marks it: no
/// destination), on 32- and 64-bit integers and f32 (add, exch).
struct AtomInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"atom", "red"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Atom;
    inst.flags |= p.spelling == "red" ? kAligned : 0; // kAligned marks `red`
    bool haveOp = false;
    for (std::string_view m : p.rest) {
      static const std::pair<const char *, AtomOp> ops[] = {
          {"add", AtomOp::Add}, {"min", AtomOp::Min}, {"max", AtomOp::Max},
          {"inc", AtomOp::Inc}, {"dec", AtomOp::Dec}, {"and", AtomOp::And},
          {"or", AtomOp::Or},   {"xor", AtomOp::Xor}, {"exch", AtomOp::Exch},
          {"cas", AtomOp::Cas}};
      bool found = false;
      for (auto &[name, op] : ops)
        if (m == name) {
          inst.mode = static_cast<uint8_t>(op);
          found = haveOp = true;
        }
      if (found)
        continue;
      if (std::optional<Space> s = parseSpace(m)) {
        inst.space = *s;
        continue;
      }
      if (isHint(m))
        continue;
      return kUnsupported;
    }
    if (!haveOp || !p.oneType(inst))
      return kUnsupported;
    Ty t = inst.type;
    if (t == Ty::F32 && inst.mode != static_cast<uint8_t>(AtomOp::Add) &&
        inst.mode != static_cast<uint8_t>(AtomOp::Exch))
      return kUnsupported;
    if (isFloat(t) && t != Ty::F32)
      return kUnsupported;
    if (sizeOf(t) < 4)
      return kUnsupported;
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    bool isRed = inst.flags & kAligned;
    bool cas = inst.mode == static_cast<uint8_t>(AtomOp::Cas);
    size_t want = (isRed ? 2 : 3) + (cas ? 1 : 0);
    FLASHC_SIM_TRY(r.count(want, want));
    size_t i = 0;
    if (!isRed)
      FLASHC_SIM_TRY(r.addReg(i++, inst.type));
    else
      r.addSink();
    FLASHC_SIM_TRY(r.addAddr(i++, inst.space));
    for (; i < r.size(); ++i)
      FLASHC_SIM_TRY(r.addScalar(i, inst.type));
    return Status::success();
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    Ty ty = I.type;
    uint64_t addr = S.address(1);
    unsigned sz = sizeOf(ty);
    // Atomics are not plain accesses for the race checker, and need a
    // lock: other workers' CTAs may update the same global bytes.
    uint8_t *p = S.x.access(I, S.t, I.space, addr, sz, sz, true,
                            /*checkRace=*/false);
    if (!p)
      return Next::Stop;
    std::lock_guard<std::mutex> lock(S.x.env.atomicMutex);
    uint64_t old = 0;
    std::memcpy(&old, p, sz);
    uint64_t b = S.src(2), r = old;
    switch (static_cast<AtomOp>(I.mode)) {
    case AtomOp::Add:
      if (ty == Ty::F32)
        r = floatBits(bitsFloat(static_cast<uint32_t>(old)) +
                      bitsFloat(static_cast<uint32_t>(b)));
      else
        r = old + b;
      break;
    case AtomOp::Min:
      r = isSigned(ty)
              ? static_cast<uint64_t>(std::min(sext(ty, old), sext(ty, b)))
              : std::min(maskTo(ty, old), maskTo(ty, b));
      break;
    case AtomOp::Max:
      r = isSigned(ty)
              ? static_cast<uint64_t>(std::max(sext(ty, old), sext(ty, b)))
              : std::max(maskTo(ty, old), maskTo(ty, b));
      break;
    case AtomOp::Inc:
      r = maskTo(ty, old) >= maskTo(ty, b) ? 0 : old + 1;
      break;
    case AtomOp::Dec:
      r = (maskTo(ty, old) == 0 || maskTo(ty, old) > maskTo(ty, b)) ? b
                                                                    : old - 1;
      break;
    case AtomOp::And:
      r = old & b;
      break;
    case AtomOp::Or:
      r = old | b;
      break;
    case AtomOp::Xor:
      r = old ^ b;
      break;
    case AtomOp::Exch:
      r = b;
      break;
    case AtomOp::Cas:
      r = maskTo(ty, old) == maskTo(ty, b) ? S.src(3) : old;
      break;
    }
    r = maskTo(ty, r);
    std::memcpy(p, &r, sz);
    S.dst(0, maskTo(ty, old));
    return Next::Advance;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_MEMORY_H
