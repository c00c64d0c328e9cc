//===- Wgmma.h - Warpgroup matrix multiply-accumulate -----------*- C++ -*-===//
//
// The descriptions of wgmma.mma_async (m64nNk16, f32 accumulators, f16 or
// bf16 inputs; A from a shared-memory descriptor or from registers, B from
// a descriptor), wgmma.fence, wgmma.commit_group and wgmma.wait_group (see
// Instructions.def).
//
// A warpgroup's four warps each compute 16 of the 64 rows (warp w of the
// group rows 16 (w % 4) ...), so the simulator executes the instruction per
// warp, as a warp collective. It is asynchronous: the results are computed
// when issued but belong to the program only after a wgmma.wait_group
// retires their commit group. Until then every register of the
// accumulator, and the A registers of a register-A wgmma, are pending: a
// thread touching an accumulator register (or writing an A register)
// before the wait is reported as a race, except the wgmma chain itself,
// which accumulates into pending registers in order. The shared-memory
// operands are read when issued (in flight TMA destinations are races) and
// recorded as read by the warp when the wait retires them, which is when
// a stage may be released.
//
// Shared-memory operands follow the PTX ISA's canonical layouts
// ("Shared Memory Matrix Layout", "Matrix Descriptor"): a descriptor holds
// the start address, the leading- and stride-dimension byte offsets (LBO,
// SBO, in 16-byte units) and the swizzle (none, 32, 64 or 128 bytes),
// which is applied to the address bits as the TMA applies it
// (swizzleAddress).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_WGMMA_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_WGMMA_H

#include "../Decode.h"
#include "../Exec.h"

#include "flashc/Simulator/TensorMap.h"

#include <string>
#include <vector>

namespace flashc {
namespace sim {
namespace detail {

/// A wgmma shared-memory matrix descriptor, decoded.
struct WgmmaDescriptor {
  uint32_t start = 0; // byte address
  uint32_t lbo = 0;   // bytes
  uint32_t sbo = 0;   // bytes
  /// 0: none; else the swizzle span's TensorMapSwizzle (B32, B64, B128).
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
  uint32_t baseOffset = 0;

  static WgmmaDescriptor decode(uint64_t d) {
    WgmmaDescriptor w;
    w.start = static_cast<uint32_t>(d & 0x3fff) << 4;
    w.lbo = static_cast<uint32_t>((d >> 16) & 0x3fff) << 4;
    w.sbo = static_cast<uint32_t>((d >> 32) & 0x3fff) << 4;
    w.baseOffset = static_cast<uint32_t>((d >> 49) & 7);
    switch (d >> 62) {
    case 1:
      w.swizzle = TensorMapSwizzle::B128;
      break;
    case 2:
      w.swizzle = TensorMapSwizzle::B64;
      break;
    case 3:
      w.swizzle = TensorMapSwizzle::B32;
      break;
    default:
      w.swizzle = TensorMapSwizzle::None;
    }
    return w;
  }

  /// The shared address of element (mn, k) of a 16-bit operand: K-major
  /// (rows of the M or N dimension, K contiguous) or MN-major (M or N
  /// contiguous). In 16-byte chunks T of 8 elements:
  /// - K-major, no swizzle: core matrices of 8 rows x T, rows 16 bytes
  ///   apart; LBO between the two core matrices along K, SBO between
  ///   groups of 8 rows;
  /// - K-major, swizzled: rows of the swizzle's span (32, 64, 128 bytes)
  ///   holding K, 8 rows a swizzle atom, SBO between atoms (LBO unused);
  /// - MN-major, no swizzle: core matrices of T (MN) x 8 (K) rows 16 bytes
  ///   apart; LBO between core matrices along K, SBO along MN;
  /// - MN-major, swizzled: rows of the span holding MN, one per K, 8 rows
  ///   an atom; LBO between atoms along MN, SBO between atoms along K.
  /// The swizzle permutes the address's 16-byte chunks as the TMA does.
  uint32_t address(bool mnMajor, uint32_t mn, uint32_t k) const {
    uint32_t off;
    unsigned bits = static_cast<unsigned>(swizzle);
    uint32_t span = bits ? 16u << bits : 16; // bytes of a row
    if (!mnMajor) {
      if (!bits)
        off = (mn % 8) * 16 + (mn / 8) * sbo + (k % 8) * 2 + (k / 8) * lbo;
      else
        off = (mn % 8) * span + (mn / 8) * sbo + k * 2;
    } else {
      if (!bits) {
        off = (k % 8) * 16 + (mn % 8) * 2 + (mn / 8) * sbo + (k / 8) * lbo;
      } else {
        uint32_t perRow = span / 2;
        off = (k % 8) * span + (mn % perRow) * 2 + (mn / perRow) * lbo +
              (k / 8) * sbo;
      }
    }
    return swizzleAddress(start + off, swizzle);
  }
};

/// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}
///   {d...}, a-desc | {a0, a1, a2, a3}, b-desc, scale-d, imm-scale-a,
///   imm-scale-b[, imm-trans-a], imm-trans-b;
/// Inst::vec is N / 8; Inst::mode 1 for A in registers; Inst::type2 the
/// input type.
struct WgmmaMmaAsyncInst : WarpInst {
  static constexpr std::string_view spellings[] = {"wgmma.mma_async"};
  static constexpr bool alignedCollective = true;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::WgmmaMmaAsync;
    bool sync = false, aligned = false, shape = false;
    for (std::string_view m : p.rest) {
      if (m == "sync") {
        sync = true;
      } else if (m == "aligned") {
        aligned = true;
      } else if (m.size() > 7 && m.substr(0, 4) == "m64n" &&
                 m.substr(m.size() - 3) == "k16" && !shape) {
        std::string n(m.substr(4, m.size() - 7));
        if (n.empty() || n.size() > 3 ||
            n.find_first_not_of("0123456789") != std::string::npos)
          return kUnsupported;
        unsigned v = static_cast<unsigned>(std::stoul(n));
        if (v < 8 || v > 256 || v % 8)
          return kUnsupported;
        inst.vec = static_cast<uint8_t>(v / 8);
        shape = true;
      } else {
        return kUnsupported;
      }
    }
    if (!sync || !aligned || !shape || p.types.size() != 3)
      return kUnsupported;
    if (p.types[0] != Ty::F32 || p.types[1] != p.types[2] ||
        !(p.types[1] == Ty::F16 || p.types[1] == Ty::BF16))
      return kUnsupported;
    inst.type = Ty::F32;
    inst.type2 = p.types[1];
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    unsigned n = inst.vec * 8u;
    bool regA = r.size() > 1 && r.isVector(1);
    inst.mode = regA;
    // d, a, b, scale-d, scale-a, scale-b, [trans-a], trans-b
    FLASHC_SIM_TRY(r.count(regA ? 7 : 8, regA ? 7 : 8));
    FLASHC_SIM_TRY(r.addVector(0, Ty::F32, n / 2, /*dest=*/true));
    if (regA)
      FLASHC_SIM_TRY(r.addVector(1, Ty::B32, 4, false));
    else
      FLASHC_SIM_TRY(r.addScalar(1, Ty::B64));
    FLASHC_SIM_TRY(r.addScalar(2, Ty::B64));
    FLASHC_SIM_TRY(r.addScalar(3, Ty::Pred));
    for (size_t i = 4; i < r.size(); ++i) {
      Operand imm;
      FLASHC_SIM_TRY(r.readScalar(i, Ty::S32, imm));
      if (imm.kind != OperandKind::Imm)
        return r.bad("the scale and transpose operands must be immediates");
      bool scale = i < 6;
      int64_t v = static_cast<int64_t>(static_cast<int32_t>(imm.imm));
      if (scale ? (v != 1 && v != -1) : (v != 0 && v != 1))
        return r.bad(scale ? "a scale must be 1 or -1"
                           : "a transpose must be 0 or 1");
      r.add(imm);
    }
    return Status::success();
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    ++S.x.wgmmaInstructions;
    return S.x.execWgmma(S);
  }
};

/// wgmma.fence.sync.aligned: orders the warp's register writes before the
/// wgmma that read them (nothing to do here: registers are read at issue).
/// wgmma.commit_group.sync.aligned: the warp's wgmmas since the last commit
/// form a group. wgmma.wait_group.sync.aligned N: every group but the N
/// newest is retired (Inst::target).
struct WgmmaSyncInst : WarpInst {
  static constexpr std::string_view spellings[] = {
      "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group"};
  static constexpr bool alignedCollective = true;

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = p.spelling == "wgmma.fence"          ? Op::WgmmaFence
              : p.spelling == "wgmma.commit_group" ? Op::WgmmaCommitGroup
                                                   : Op::WgmmaWaitGroup;
    bool sync = false, aligned = false;
    for (std::string_view m : p.rest) {
      if (m == "sync")
        sync = true;
      else if (m == "aligned")
        aligned = true;
      else
        return kUnsupported;
    }
    return sync && aligned && p.types.empty() ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    if (inst.op != Op::WgmmaWaitGroup)
      return r.count(0, 0);
    return groupCountOperand(r, inst);
  }

  template <Op Code, typename X> static bool execWarp(const WarpStep<X> &S) {
    if constexpr (Code == Op::WgmmaCommitGroup)
      return S.x.commitWgmma(S.w);
    else if constexpr (Code == Op::WgmmaWaitGroup)
      return S.x.waitWgmma(S, S.I.target);
    return true;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_WGMMA_H
