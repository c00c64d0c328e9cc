//===- Warp.h - Warp collectives --------------------------------*- C++ -*-===//
//
// The descriptions of bar.warp.sync, shfl.sync, vote.sync, redux.sync,
// mma.sync and ldmatrix (see Instructions.def). Each thread that reaches
// one waits; the scheduler executes it once for the warp when every lane of
// its member mask waits at it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_WARP_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_WARP_H

#include "../Decode.h"
#include "../Exec.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace flashc {
namespace sim {
namespace detail {

/// bar.warp.sync: for the race checker, what the lanes of its mask accessed
/// before it is ordered before what they access after it.
struct BarWarpSyncInst : WarpInst {
  // barrier.warp.sync is accepted too.
  static constexpr std::string_view spellings[] = {"bar.warp", "barrier.warp"};
  static constexpr unsigned maskOperand = 0;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::BarWarpSync;
    return p.rest.size() == 1 && p.rest[0] == "sync" && p.types.empty()
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(1, 1));
    return r.addScalar(0, Ty::U32);
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    S.x.warpSync[S.w]++;
    return true;
  }
};

/// shfl.sync.up/down/bfly/idx.b32 `d[|p], a, b, c, membermask`.
struct ShflInst : WarpInst {
  static constexpr std::string_view spellings[] = {"shfl"};
  static constexpr unsigned maskOperand = 5;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Shfl;
    bool ok = decodeCollectiveModifiers<ShflMode>(p.rest,
                                                  {{"up", ShflMode::Up},
                                                   {"down", ShflMode::Down},
                                                   {"bfly", ShflMode::Bfly},
                                                   {"idx", ShflMode::Idx}},
                                                  inst);
    return ok && p.oneType(inst) && inst.type == Ty::B32 ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(5, 5));
    if (r.isVector(0)) {
      FLASHC_SIM_TRY(r.addVector(0, Ty::B32, 2, true));
      inst.flags |= kHasPred;
    } else {
      FLASHC_SIM_TRY(r.addReg(0, Ty::B32));
      r.addSink();
    }
    for (int i = 1; i < 5; ++i)
      FLASHC_SIM_TRY(r.addScalar(i, Ty::B32));
    return Status::success();
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    uint32_t values[32], out[32];
    bool pred[32];
    for (uint32_t l = 0; l < 32; ++l)
      if (S.member(l))
        values[l] = static_cast<uint32_t>(S.src(l, 2));
    for (uint32_t l = 0; l < 32; ++l) {
      if (!S.member(l))
        continue;
      const Inst &ti = S.inst(l);
      uint64_t *tr = S.regs(l);
      uint32_t b =
          static_cast<uint32_t>(S.x.val(S.x.opnd(ti, 3), S.lane(l), tr)) & 31;
      uint32_t c =
          static_cast<uint32_t>(S.x.val(S.x.opnd(ti, 4), S.lane(l), tr));
      uint32_t cval = c & 31, seg = (c >> 8) & 31;
      int32_t maxLane = static_cast<int32_t>((l & seg) | (cval & ~seg));
      int32_t minLane = static_cast<int32_t>(l & seg);
      int32_t j = static_cast<int32_t>(l);
      bool p = false;
      switch (static_cast<ShflMode>(ti.mode)) {
      case ShflMode::Up:
        j = static_cast<int32_t>(l) - static_cast<int32_t>(b);
        p = j >= maxLane;
        break;
      case ShflMode::Down:
        j = static_cast<int32_t>(l + b);
        p = j <= maxLane;
        break;
      case ShflMode::Bfly:
        j = static_cast<int32_t>(l ^ b);
        p = j <= maxLane;
        break;
      case ShflMode::Idx:
        j = minLane | static_cast<int32_t>(b & ~seg);
        p = j <= maxLane;
        break;
      }
      if (!p)
        j = static_cast<int32_t>(l);
      if (!S.member(j))
        return S.x.fault(ErrorCode::Trap, ti, S.lane(l),
                         "shfl.sync reads lane " + std::to_string(j) +
                             ", outside the member mask " + hex(S.mask));
      out[l] = values[j];
      pred[l] = p;
    }
    for (uint32_t l = 0; l < 32; ++l) {
      if (!S.member(l))
        continue;
      const Inst &ti = S.inst(l);
      uint64_t *tr = S.regs(l);
      S.x.set(S.x.opnd(ti, 0), tr, out[l]);
      S.x.set(S.x.opnd(ti, 1), tr, pred[l] ? 1 : 0);
    }
    return true;
  }
};

/// vote.sync.all/any/uni.pred and vote.sync.ballot.b32 `d, p, membermask`.
struct VoteInst : WarpInst {
  static constexpr std::string_view spellings[] = {"vote"};
  static constexpr unsigned maskOperand = 2;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Vote;
    bool ok =
        decodeCollectiveModifiers<VoteMode>(p.rest,
                                            {{"all", VoteMode::All},
                                             {"any", VoteMode::Any},
                                             {"uni", VoteMode::Uni},
                                             {"ballot", VoteMode::Ballot}},
                                            inst);
    if (!ok || !p.oneType(inst))
      return kUnsupported;
    bool ballot = inst.mode == static_cast<uint8_t>(VoteMode::Ballot);
    return (ballot ? inst.type == Ty::B32 : inst.type == Ty::Pred)
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(3, 3));
    FLASHC_SIM_TRY(r.addReg(0, inst.type));
    FLASHC_SIM_TRY(r.addScalar(1, Ty::Pred));
    return r.addScalar(2, Ty::B32);
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    uint32_t ballot = 0;
    for (uint32_t l = 0; l < 32; ++l)
      if (S.member(l) && (S.src(l, 1) & 1))
        ballot |= 1u << l;
    for (uint32_t l = 0; l < 32; ++l) {
      if (!S.member(l))
        continue;
      const Inst &ti = S.inst(l);
      uint64_t r = 0;
      switch (static_cast<VoteMode>(ti.mode)) {
      case VoteMode::Ballot:
        r = ballot;
        break;
      case VoteMode::All:
        r = ballot == S.mask;
        break;
      case VoteMode::Any:
        r = ballot != 0;
        break;
      case VoteMode::Uni:
        r = ballot == 0 || ballot == S.mask;
        break;
      }
      S.dst(l, 0, r);
    }
    return true;
  }
};

/// elect.sync `d|p, membermask`: the lowest lane of the mask is elected;
/// every member gets its lane number in d (b32) and whether it is the
/// elected one in p (either may be `_`).
struct ElectSyncInst : WarpInst {
  static constexpr std::string_view spellings[] = {"elect"};
  static constexpr unsigned maskOperand = 2;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::ElectSync;
    return p.rest.size() == 1 && p.rest[0] == "sync" && p.types.empty()
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(2, 2));
    // d|p reads as a vector of two destinations, registers or `_`.
    FLASHC_SIM_TRY(r.addVector(0, Ty::B32, 2, /*dest=*/true));
    return r.addScalar(1, Ty::B32);
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    uint32_t leader = static_cast<uint32_t>(__builtin_ctz(S.mask));
    for (uint32_t l = 0; l < 32; ++l) {
      if (!S.member(l))
        continue;
      S.dst(l, 0, leader);
      S.dst(l, 1, l == leader);
    }
    return true;
  }
};

/// setmaxnreg.inc/dec.sync.aligned.u32 N: the warp's register allotment
/// becomes N (24 to 256, a multiple of 8). The warps of a warpgroup must
/// execute the same sequence of setmaxnreg, and the CTA's warpgroups must
/// fit the SM's 65536 registers; the register file itself is not modelled.
struct SetmaxnregInst : WarpInst {
  static constexpr std::string_view spellings[] = {"setmaxnreg"};
  static constexpr bool alignedCollective = true;
  static constexpr uint32_t kRegisterFile = 65536;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Setmaxnreg;
    bool kind = false, sync = false, aligned = false;
    for (std::string_view m : p.rest) {
      if ((m == "inc" || m == "dec") && !kind) {
        inst.mode = m == "inc";
        kind = true;
      } else if (m == "sync") {
        sync = true;
      } else if (m == "aligned") {
        aligned = true;
      } else {
        return kUnsupported;
      }
    }
    return kind && sync && aligned && p.types.size() == 1 &&
                   p.types[0] == Ty::U32
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(1, 1));
    Operand n;
    FLASHC_SIM_TRY(r.readScalar(0, Ty::U32, n));
    if (n.kind != OperandKind::Imm)
      return r.bad("the register count must be an immediate");
    if (n.imm < 24 || n.imm > 256 || n.imm % 8)
      return r.bad("the register count " + std::to_string(n.imm) +
                   " is not a multiple of 8 from 24 to 256");
    inst.target = static_cast<uint32_t>(n.imm);
    return Status::success();
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    X &x = S.x;
    const Inst &I = S.I;
    uint32_t group = S.w / 4;
    ++x.setmaxnregInstructions;
    auto &history = x.setmaxnregHistory[group];
    uint32_t index = x.setmaxnregExecuted[S.w]++;
    uint32_t entry = (I.target << 1) | I.mode;
    if (index < history.size()) {
      if (history[index] != entry)
        return S.fault(ErrorCode::Trap,
                       "the warps of warpgroup " + std::to_string(group) +
                           " execute different setmaxnreg (" +
                           std::string(I.mode ? "inc" : "dec") + " " +
                           std::to_string(I.target) + " where another warp " +
                           ((history[index] & 1) ? "increased" : "decreased") +
                           " to " + std::to_string(history[index] >> 1) +
                           "): it is .aligned over the warpgroup");
      return true;
    }
    history.push_back(entry);
    // The allotments of the warpgroups that have set one.
    uint64_t total = 0;
    for (uint32_t g = 0; g < x.setmaxnregHistory.size(); ++g)
      if (!x.setmaxnregHistory[g].empty()) {
        uint32_t warps = std::min(4u, x.nwarps - 4 * g);
        total += uint64_t(x.setmaxnregHistory[g].back() >> 1) * 32 * warps;
      }
    if (total > kRegisterFile)
      return S.fault(
          ErrorCode::Trap,
          "setmaxnreg " + std::to_string(I.target) + " in warpgroup " +
              std::to_string(group) + " takes the CTA's warpgroups to " +
              std::to_string(total) + " registers, more than the SM's " +
              std::to_string(kRegisterFile));
    return true;
  }
};

/// redux.sync.add/min/max/and/or/xor on 32-bit integers `d, a, membermask`.
struct ReduxInst : WarpInst {
  static constexpr std::string_view spellings[] = {"redux"};
  static constexpr unsigned maskOperand = 2;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Redux;
    bool ok = decodeCollectiveModifiers<AtomOp>(p.rest,
                                                {{"add", AtomOp::Add},
                                                 {"min", AtomOp::Min},
                                                 {"max", AtomOp::Max},
                                                 {"and", AtomOp::And},
                                                 {"or", AtomOp::Or},
                                                 {"xor", AtomOp::Xor}},
                                                inst);
    return ok && p.oneType(inst) &&
                   (inst.type == Ty::U32 || inst.type == Ty::S32 ||
                    inst.type == Ty::B32)
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(3, 3));
    FLASHC_SIM_TRY(r.addReg(0, inst.type));
    FLASHC_SIM_TRY(r.addScalar(1, inst.type));
    return r.addScalar(2, Ty::B32);
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    const Inst &li = S.I;
    bool isSigned = li.type == Ty::S32;
    int64_t acc = 0;
    bool firstValue = true;
    for (uint32_t l = 0; l < 32; ++l) {
      if (!S.member(l))
        continue;
      uint32_t v32 = static_cast<uint32_t>(S.src(l, 1));
      int64_t v = isSigned ? static_cast<int64_t>(static_cast<int32_t>(v32))
                           : static_cast<int64_t>(v32);
      if (firstValue) {
        acc = v;
        firstValue = false;
        continue;
      }
      switch (static_cast<AtomOp>(li.mode)) {
      case AtomOp::Add:
        acc += v;
        break;
      case AtomOp::Min:
        acc = std::min(acc, v);
        break;
      case AtomOp::Max:
        acc = std::max(acc, v);
        break;
      case AtomOp::And:
        acc &= v;
        break;
      case AtomOp::Or:
        acc |= v;
        break;
      case AtomOp::Xor:
        acc ^= v;
        break;
      default:
        break;
      }
    }
    for (uint32_t l = 0; l < 32; ++l)
      if (S.member(l))
        S.dst(l, 0, static_cast<uint32_t>(acc));
    return true;
  }
};

/// mma.sync.aligned.m16n8k16 and m16n8k8 .row.col, f32 accumulators over
/// f16 or bf16 inputs (Inst::type2), in the fragment layouts of the PTX ISA.
struct MmaInst : WarpInst {
  static constexpr std::string_view spellings[] = {"mma"};
  static constexpr bool alignedCollective = true;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    // mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (and bf16, m16n8k8)
    inst.op = Op::Mma;
    bool sync = false, aligned = false, row = false, col = false, shape = false;
    for (std::string_view m : p.rest) {
      if (m == "sync") {
        sync = true;
      } else if (m == "aligned") {
        aligned = true;
      } else if (m == "row") {
        row = true;
      } else if (m == "col") {
        col = true;
      } else if (m == "m16n8k16") {
        inst.mode = M16N8K16;
        shape = true;
      } else if (m == "m16n8k8") {
        inst.mode = M16N8K8;
        shape = true;
      } else {
        return kUnsupported;
      }
    }
    const std::vector<Ty> &types = p.types;
    if (!sync || !aligned || !row || !col || !shape || types.size() != 4)
      return kUnsupported;
    // D, A, B, C types: f32 accumulate over f16 or bf16 inputs.
    if (types[0] != Ty::F32 || types[3] != Ty::F32 || types[1] != types[2] ||
        !(types[1] == Ty::F16 || types[1] == Ty::BF16))
      return kUnsupported;
    inst.type = Ty::F32;
    inst.type2 = types[1];
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(4, 4));
    size_t na = inst.mode == M16N8K16 ? 4 : 2;
    size_t nb = inst.mode == M16N8K16 ? 2 : 1;
    FLASHC_SIM_TRY(r.addVector(0, Ty::F32, 4, true));
    FLASHC_SIM_TRY(r.addVector(1, Ty::B32, na, false));
    FLASHC_SIM_TRY(r.addVector(2, Ty::B32, nb, false));
    return r.addVector(3, Ty::F32, 4, false);
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    const Inst &li = S.I;
    bool bf = li.type2 == Ty::BF16;
    bool k16 = li.mode == M16N8K16;
    uint32_t kDim = k16 ? 16 : 8;
    uint32_t na = k16 ? 4 : 2, nb = k16 ? 2 : 1;
    if (S.mask != 0xffffffffu)
      return S.fault(ErrorCode::Trap,
                     "mma.sync needs all 32 lanes of the warp");
    double A[16][16], B[16][8], C[16][8];
    for (uint32_t l = 0; l < 32; ++l) {
      uint32_t g = l / 4, tq = l % 4;
      uint64_t *tr = S.regs(l);
      auto half = [&](unsigned opIndex, unsigned which)
          __attribute__((always_inline)) {
        uint32_t v = static_cast<uint32_t>(
            S.x.val(S.x.opnd(li, opIndex), S.lane(l), tr));
        return static_cast<double>(
            halfValue(static_cast<uint16_t>(v >> (16 * which)), bf));
      };
      unsigned aBase = 4, bBase = 4 + na, cBase = 4 + na + nb;
      for (unsigned h = 0; h < 2; ++h) {
        A[g][2 * tq + h] = half(aBase + 0, h);
        A[g + 8][2 * tq + h] = half(aBase + 1, h);
        if (k16) {
          A[g][2 * tq + 8 + h] = half(aBase + 2, h);
          A[g + 8][2 * tq + 8 + h] = half(aBase + 3, h);
        }
        B[2 * tq + h][g] = half(bBase + 0, h);
        if (k16)
          B[2 * tq + 8 + h][g] = half(bBase + 1, h);
      }
      for (unsigned i = 0; i < 4; ++i) {
        float c = bitsFloat(static_cast<uint32_t>(
            S.x.val(S.x.opnd(li, cBase + i), S.lane(l), tr)));
        C[g + (i >= 2 ? 8 : 0)][2 * tq + (i & 1)] = c;
      }
    }
    mmaAccumulate(A, B, C, kDim);
    for (uint32_t l = 0; l < 32; ++l) {
      uint32_t g = l / 4, tq = l % 4;
      uint64_t *tr = S.regs(l);
      for (unsigned i = 0; i < 4; ++i) {
        uint32_t row = g + (i >= 2 ? 8 : 0), col = 2 * tq + (i & 1);
        S.x.set(S.x.opnd(li, i), tr,
                floatBits(static_cast<float>(C[row][col])));
      }
    }
    return true;
  }
};

/// The modifiers of ldmatrix and stmatrix: .sync.aligned.m8n8.x1/x2/x4
/// (Inst::vec), an optional .trans and .shared (else generic addresses),
/// .b16.
inline std::string decodeMatrixModifiers(const OpcodeParts &p, Inst &inst) {
  bool sync = false, aligned = false, shape = false, num = false;
  inst.space = Space::Generic;
  for (std::string_view m : p.rest) {
    if (m == "sync") {
      sync = true;
    } else if (m == "aligned") {
      aligned = true;
    } else if (m == "m8n8") {
      shape = true;
    } else if (m == "x1" || m == "x2" || m == "x4") {
      inst.vec = static_cast<uint8_t>(m[1] - '0');
      num = true;
    } else if (m == "trans") {
      inst.flags |= kTrans;
    } else if (std::optional<Space> s = parseSpace(m);
               s && *s == Space::Shared) {
      inst.space = Space::Shared;
    } else {
      return kUnsupported;
    }
  }
  return sync && aligned && shape && num && p.oneType(inst) &&
                 inst.type == Ty::B16
             ? ""
             : kUnsupported;
}

/// The shared-memory offset of the row address that lane `l` gives in
/// address operand `i` of an ldmatrix or stmatrix; false after a fault.
template <typename X>
bool matrixRowAddress(const WarpStep<X> &S, uint32_t l, unsigned i,
                      uint64_t &addr, const char *what) {
  const Inst &li = S.I;
  const Operand &a = S.x.opnd(li, i);
  addr = (a.reg >= 0 ? S.regs(l)[a.reg] : 0) + a.imm;
  if (li.space == Space::Generic) {
    if (addr < kSharedWindow || addr >= kSharedWindow + kWindowSize)
      return S.x.fault(ErrorCode::OutOfBounds, li, S.lane(l),
                       std::string(what) + " row address " + hex(addr) +
                           " is not in shared memory");
    addr -= kSharedWindow;
  }
  return true;
}

/// ldmatrix.sync.aligned.m8n8.x1/x2/x4[.trans][.shared].b16: lanes 8i to
/// 8i + 7 give the row addresses of matrix i (Inst::vec matrices).
struct LdmatrixInst : WarpInst {
  static constexpr std::string_view spellings[] = {"ldmatrix"};
  static constexpr bool alignedCollective = true;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Ldmatrix;
    return decodeMatrixModifiers(p, inst);
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(2, 2));
    if (inst.vec == 1 && r.isScalar(0))
      FLASHC_SIM_TRY(r.addReg(0, Ty::B32));
    else
      FLASHC_SIM_TRY(r.addVector(0, Ty::B32, inst.vec, true));
    return r.addAddr(1, inst.space == Space::Shared ? Space::Shared
                                                    : Space::Generic);
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    const Inst &li = S.I;
    uint32_t num = li.vec;
    bool trans = li.flags & kTrans;
    uint64_t rowAddr[32];
    // Lanes 8i..8i+7 give the rows of matrix i.
    for (uint32_t l = 0; l < 8 * num; ++l) {
      if (!S.member(l))
        return S.fault(ErrorCode::Trap, "ldmatrix needs lane " +
                                            std::to_string(l) +
                                            " for a row address");
      if (!matrixRowAddress(S, l, num, rowAddr[l], "ldmatrix"))
        return false;
    }
    // Bank conflicts: a matrix's 8 rows of 16 bytes are one wavefront when
    // they fall in 8 different 16-byte bank groups (addresses modulo 128);
    // distinct rows sharing a group take one wavefront each (a repeated
    // row is read once).
    for (uint32_t i = 0; i < num; ++i) {
      const uint64_t *rows = &rowAddr[8 * i];
      uint32_t perGroup[8] = {};
      for (uint32_t r = 0; r < 8; ++r)
        if (std::find(rows, rows + r, rows[r]) == rows + r)
          ++perGroup[(rows[r] / 16) % 8];
      ++S.x.ldmatrixMatrices;
      S.x.ldmatrixExtraWavefronts +=
          *std::max_element(perGroup, perGroup + 8) - 1;
    }
    uint16_t rows[4][8][8];
    for (uint32_t l = 0; l < 8 * num; ++l) {
      uint8_t *p =
          S.x.access(li, S.lane(l), Space::Shared, rowAddr[l], 16, 16, false);
      if (!p)
        return false;
      std::memcpy(rows[l / 8][l % 8], p, 16);
    }
    for (uint32_t l = 0; l < 32; ++l) {
      if (!S.member(l))
        continue;
      uint64_t *tr = S.regs(l);
      for (uint32_t i = 0; i < num; ++i) {
        uint16_t lo16, hi16;
        if (!trans) {
          lo16 = rows[i][l / 4][2 * (l % 4)];
          hi16 = rows[i][l / 4][2 * (l % 4) + 1];
        } else {
          lo16 = rows[i][2 * (l % 4)][l / 4];
          hi16 = rows[i][2 * (l % 4) + 1][l / 4];
        }
        S.x.set(S.x.opnd(li, i), tr,
                lo16 | (static_cast<uint32_t>(hi16) << 16));
      }
    }
    return true;
  }
};

/// stmatrix.sync.aligned.m8n8.x1/x2/x4{.trans}.shared{::cta}.b16 [p], r:
/// the inverse of ldmatrix. Lanes 8i..8i+7 give the row addresses of
/// matrix i; lane l's register i holds (row l/4, columns 2 (l%4), +1) of
/// matrix i (with .trans, of its transpose); each row's 16 bytes are
/// stored.
struct StmatrixInst : WarpInst {
  static constexpr std::string_view spellings[] = {"stmatrix"};
  static constexpr bool alignedCollective = true;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Stmatrix;
    return decodeMatrixModifiers(p, inst);
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(2, 2));
    FLASHC_SIM_TRY(r.addAddr(0, inst.space == Space::Shared ? Space::Shared
                                                            : Space::Generic));
    if (inst.vec == 1 && r.isScalar(1))
      return r.addScalar(1, Ty::B32);
    return r.addVector(1, Ty::B32, inst.vec, false);
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    const Inst &li = S.I;
    uint32_t num = li.vec;
    bool trans = li.flags & kTrans;
    uint16_t rows[4][8][8];
    for (uint32_t l = 0; l < 32; ++l) {
      if (!S.member(l))
        return S.fault(ErrorCode::Trap,
                       "stmatrix needs all 32 lanes of the warp");
      for (uint32_t i = 0; i < num; ++i) {
        uint32_t v = static_cast<uint32_t>(S.src(l, 1 + i));
        uint16_t lo16 = static_cast<uint16_t>(v),
                 hi16 = static_cast<uint16_t>(v >> 16);
        if (!trans) {
          rows[i][l / 4][2 * (l % 4)] = lo16;
          rows[i][l / 4][2 * (l % 4) + 1] = hi16;
        } else {
          rows[i][2 * (l % 4)][l / 4] = lo16;
          rows[i][2 * (l % 4) + 1][l / 4] = hi16;
        }
      }
    }
    for (uint32_t l = 0; l < 8 * num; ++l) {
      uint64_t addr;
      if (!matrixRowAddress(S, l, 0, addr, "stmatrix"))
        return false;
      uint8_t *p = S.x.access(li, S.lane(l), Space::Shared, addr, 16, 16, true);
      if (!p)
        return false;
      std::memcpy(p, rows[l / 8][l % 8], 16);
    }
    return true;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_WARP_H
