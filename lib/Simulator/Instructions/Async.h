//===- Async.h - Asynchronous copies ----------------------------*- C++ -*-===//
//
// The descriptions of cp.async, cp.async.commit_group and
// cp.async.wait_group / wait_all (see Instructions.def). A cp.async reads
// its source when issued and holds the bytes in its thread's pending
// copies; they land in shared memory when a wait retires their group (or
// the thread exits). Until then the destination is in flight: touching it
// is a race.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_ASYNC_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_ASYNC_H

#include "../Decode.h"
#include "../Exec.h"

#include <cstring>
#include <string>

namespace flashc {
namespace sim {
namespace detail {

/// cp.async.ca/cg.shared.global [dst], [src], cp-size (Inst::target: 4, 8
/// or 16) with an optional src-size (kSrcSize) or ignore-src predicate
/// (kIgnoreSrc) and cache policy.
struct CpAsyncInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"cp.async"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::CpAsync;
    bool dstShared = false, srcGlobal = false;
    for (std::string_view m : p.rest) {
      if (m == "ca" || m == "cg")
        continue;
      if (std::optional<Space> s = parseSpace(m)) {
        if (*s == Space::Shared && !dstShared)
          dstShared = true;
        else if (*s == Space::Global && dstShared)
          srcGlobal = true;
        else
          return kUnsupported;
        continue;
      }
      if (isHint(m))
        continue;
      return kUnsupported;
    }
    return dstShared && srcGlobal && p.types.empty() ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(3, 5));
    FLASHC_SIM_TRY(r.addAddr(0, Space::Shared));
    FLASHC_SIM_TRY(r.addAddr(1, Space::Global));
    Operand size;
    FLASHC_SIM_TRY(r.readScalar(2, Ty::U32, size));
    if (size.kind != OperandKind::Imm ||
        !(size.imm == 4 || size.imm == 8 || size.imm == 16))
      return r.bad("cp-size must be 4, 8 or 16");
    inst.target = static_cast<uint32_t>(size.imm);
    if (r.size() >= 4) {
      // src-size (an integer) or ignore-src (a predicate); a trailing cache
      // policy is ignored.
      Operand extra;
      FLASHC_SIM_TRY(r.readScalar(3, Ty::U32, extra));
      bool isPred = r.isPredicate(extra);
      if (r.opcode().find("cache_hint") != std::string::npos && r.size() == 4) {
        // [dst], [src], size, policy
      } else {
        inst.flags |= isPred ? kIgnoreSrc : kSrcSize;
        r.add(extra);
      }
    }
    return Status::success();
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &inst = S.I;
    Thread &t = S.t;
    X &x = S.x;
    uint64_t dst = S.address(0);
    uint64_t src = S.address(1);
    uint32_t size = inst.target;
    uint32_t srcSize = size;
    if (inst.flags & kSrcSize) {
      srcSize = static_cast<uint32_t>(S.src(2));
      if (srcSize > size)
        return S.fault(ErrorCode::OutOfBounds,
                       "cp.async src-size " + std::to_string(srcSize) +
                           " exceeds cp-size " + std::to_string(size));
    } else if (inst.flags & kIgnoreSrc) {
      if (S.src(2) & 1)
        srcSize = 0;
    }
    if (dst & (size - 1))
      return S.fault(ErrorCode::Misaligned,
                     "cp.async destination " + hex(dst) + " is not " +
                         std::to_string(size) + "-byte aligned");
    if (src & (size - 1))
      return S.fault(ErrorCode::Misaligned,
                     "cp.async source " + hex(src) + " is not " +
                         std::to_string(size) + "-byte aligned");
    if (dst > x.sharedSize || size > x.sharedSize - dst)
      return S.fault(ErrorCode::OutOfBounds,
                     "cp.async of " + std::to_string(size) +
                         " bytes to shared address " + hex(dst) +
                         " beyond the " + std::to_string(x.sharedSize) +
                         " bytes of shared memory");
    if (x.copiesInFlight >= kMaxCopiesInFlight)
      return S.fault(ErrorCode::Trap,
                     "more than " + std::to_string(kMaxCopiesInFlight) +
                         " cp.async copies are in flight in the CTA (issued "
                         "and not retired by cp.async.wait_group)");
    PendingCopy copy;
    copy.dst = static_cast<uint32_t>(dst);
    copy.bytes = size;
    copy.group = t.groupsCommitted;
    copy.line = inst.line;
    std::memset(copy.data, 0, sizeof(copy.data));
    if (srcSize > 0) {
      if (!x.checkGridDependency(inst, t))
        return Next::Stop;
      const auto *buf = x.findGlobal(src, srcSize);
      if (!buf)
        return S.fault(ErrorCode::OutOfBounds,
                       "cp.async reads " + std::to_string(srcSize) +
                           " bytes at global address " + hex(src) +
                           " outside every registered buffer" +
                           x.nearestBuffer(src));
      std::memcpy(copy.data, buf->translate(src), srcSize);
    }
    // The destination is written: check it like a store, then mark it in
    // flight until the copy lands.
    if (!x.beginInflightWrite(inst, t, copy.dst, size))
      return Next::Stop;
    x.noteSharedRequest(inst, t, copy.dst, size);
    t.pending.push_back(copy);
    ++x.copiesInFlight;
    return Next::Advance;
  }
};

/// cp.async.commit_group: the copies issued since the last commit form a
/// group.
struct CpAsyncCommitInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"cp.async.commit_group"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::CpAsyncCommit;
    return p.rest.empty() && p.types.empty() ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) { return r.count(0, 0); }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    S.t.groupsCommitted++;
    return Next::Advance;
  }
};

/// cp.async.wait_group N lands every group but the newest N (Inst::target);
/// cp.async.wait_all (Inst::mode 1) lands every copy, committed or not.
struct CpAsyncWaitInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"cp.async.wait_group",
                                                   "cp.async.wait_all"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::CpAsyncWait;
    if (!p.rest.empty() || !p.types.empty())
      return kUnsupported;
    if (p.spelling == "cp.async.wait_all") {
      inst.target = 0;
      inst.mode = 1; // wait_all: no operand
    }
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    if (inst.mode == 1)
      return r.count(0, 0);
    return groupCountOperand(r, inst);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    Thread &t = S.t;
    // wait_all: everything, committed or not.
    uint32_t limit = UINT32_MAX;
    if (I.mode != 1) {
      uint32_t keep = I.target;
      limit = t.groupsCommitted > keep ? t.groupsCommitted - keep : 0;
    }
    return S.x.landCopies(t, limit, I) ? Next::Advance : Next::Stop;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_ASYNC_H
