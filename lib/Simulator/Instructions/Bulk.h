//===- Bulk.h - mbarriers and TMA tensor copies -----------------*- C++ -*-===//
//
// The descriptions of the mbarrier instructions (init, arrive, arrive with
// expect_tx, expect_tx, try_wait.parity) and of the TMA tensor load
// cp.async.bulk.tensor (see Instructions.def). They hand their work to the
// CTA's asynchronous executor (AsyncExecutor.h), which keeps the mbarriers,
// the copies in flight and the order between warps; a try_wait whose phase
// has not completed makes its thread wait (State::AtMbarrier) until the
// scheduler finds the phase complete.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_BULK_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_BULK_H

#include "../AsyncExecutor.h"
#include "../Decode.h"
#include "../Exec.h"

#include <cstring>
#include <string>

namespace flashc {
namespace sim {
namespace detail {

/// The executor's site of an instruction: its line, thread and warp.
inline AsyncSite asyncSite(const Inst &inst, const Thread &t) {
  AsyncSite s;
  s.line = inst.line;
  s.thread = t.linear;
  s.warp = t.warp;
  return s;
}

/// The shared-memory offset that address operand `i` of `S` names: a
/// `.shared` address, or a generic one in the shared window. Sets `ok` to
/// false after a fault.
template <typename X>
uint32_t sharedOperand(const ThreadStep<X> &S, unsigned i, Space space,
                       const char *what, bool &ok) {
  uint64_t addr = S.address(i);
  if (space != Space::Shared) {
    if (addr < kSharedWindow || addr >= kSharedWindow + kWindowSize) {
      ok = false;
      S.fault(ErrorCode::OutOfBounds, std::string(what) + " address " +
                                          hex(addr) +
                                          " is not in shared memory");
      return 0;
    }
    addr -= kSharedWindow;
  }
  if (addr >= S.x.sharedSize) {
    ok = false;
    S.fault(ErrorCode::OutOfBounds, std::string(what) + " at shared address " +
                                        hex(addr) + " beyond the " +
                                        std::to_string(S.x.sharedSize) +
                                        " bytes of shared memory");
    return 0;
  }
  ok = true;
  return static_cast<uint32_t>(addr);
}

/// mbarrier.init / arrive / arrive.expect_tx / expect_tx / try_wait.parity,
/// on `.shared` (or `.shared::cta`) or generic addresses of `.b64` objects:
///   mbarrier.init.shared.b64 [addr], count;
///   mbarrier.arrive{.expect_tx}.shared.b64 state, [addr]{, count | tx};
///   mbarrier.expect_tx.shared.b64 [addr], tx;
///   mbarrier.try_wait.parity.shared.b64 done, [addr], parity{, hint};
/// Ordering qualifiers (.release, .acquire, .cta, .relaxed) are accepted:
/// the executor's order is at least as strong.
struct MbarrierInst : ThreadInst {
  static constexpr std::string_view spellings[] = {
      "mbarrier.init", "mbarrier.arrive", "mbarrier.arrive.expect_tx",
      "mbarrier.expect_tx", "mbarrier.try_wait.parity"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    if (p.spelling == "mbarrier.init")
      inst.op = Op::MbarrierInit;
    else if (p.spelling == "mbarrier.arrive")
      inst.op = Op::MbarrierArrive;
    else if (p.spelling == "mbarrier.arrive.expect_tx")
      inst.op = Op::MbarrierArriveExpectTx;
    else if (p.spelling == "mbarrier.expect_tx")
      inst.op = Op::MbarrierExpectTx;
    else
      inst.op = Op::MbarrierTryWaitParity;
    inst.space = Space::Generic;
    for (std::string_view m : p.rest) {
      if (std::optional<Space> s = parseSpace(m); s && *s == Space::Shared)
        inst.space = Space::Shared;
      else if (!isHint(m))
        return kUnsupported;
    }
    return p.types.size() == 1 && p.types[0] == Ty::B64 ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    switch (inst.op) {
    case Op::MbarrierInit:
      FLASHC_SIM_TRY(r.count(2, 2));
      FLASHC_SIM_TRY(r.addAddr(0, inst.space));
      return r.addScalar(1, Ty::U32);
    case Op::MbarrierArrive:
      // state, [addr]{, count}
      FLASHC_SIM_TRY(r.count(2, 3));
      FLASHC_SIM_TRY(r.addReg(0, Ty::B64));
      FLASHC_SIM_TRY(r.addAddr(1, inst.space));
      inst.mode = r.size() == 3;
      if (r.size() == 3)
        FLASHC_SIM_TRY(r.addScalar(2, Ty::U32));
      return Status::success();
    case Op::MbarrierArriveExpectTx:
      FLASHC_SIM_TRY(r.count(3, 3));
      FLASHC_SIM_TRY(r.addReg(0, Ty::B64));
      FLASHC_SIM_TRY(r.addAddr(1, inst.space));
      return r.addScalar(2, Ty::U32);
    case Op::MbarrierExpectTx:
      FLASHC_SIM_TRY(r.count(2, 2));
      FLASHC_SIM_TRY(r.addAddr(0, inst.space));
      return r.addScalar(1, Ty::U32);
    default:
      // done, [addr], parity{, suspend-time hint (ignored)}
      FLASHC_SIM_TRY(r.count(3, 4));
      FLASHC_SIM_TRY(r.addReg(0, Ty::Pred));
      FLASHC_SIM_TRY(r.addAddr(1, inst.space));
      return r.addScalar(2, Ty::U32);
    }
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    AsyncExecutor &async = S.x.async;
    AsyncSite site = asyncSite(I, S.t);
    bool ok = true;
    std::string why;
    if constexpr (Code == Op::MbarrierInit) {
      uint32_t off = sharedOperand(S, 0, I.space, "mbarrier.init", ok);
      if (!ok)
        return Next::Stop;
      why = async.mbarrierInit(off, S.src(1), site);
    } else if constexpr (Code == Op::MbarrierExpectTx) {
      uint32_t off = sharedOperand(S, 0, I.space, "mbarrier.expect_tx", ok);
      if (!ok)
        return Next::Stop;
      why = async.mbarrierExpectTx(off, S.src(1), site);
    } else if constexpr (Code == Op::MbarrierArrive ||
                         Code == Op::MbarrierArriveExpectTx) {
      uint32_t off = sharedOperand(S, 1, I.space, "mbarrier.arrive", ok);
      if (!ok)
        return Next::Stop;
      uint64_t count = 1, tx = 0;
      if (Code == Op::MbarrierArriveExpectTx)
        tx = S.src(2);
      else if (I.mode)
        count = S.src(2);
      uint64_t state = 0;
      why = async.mbarrierArrive(off, count, tx, site, state);
      if (why.empty())
        S.dst(0, state);
    } else {
      uint32_t off = sharedOperand(S, 1, I.space, "mbarrier.try_wait", ok);
      if (!ok)
        return Next::Stop;
      uint32_t parity = static_cast<uint32_t>(S.src(2) & 1);
      bool complete = false;
      why = async.mbarrierTryWaitParity(off, parity, site, complete);
      if (why.empty()) {
        if (complete) {
          S.dst(0, 1);
          return Next::Advance;
        }
        // Waits until the scheduler finds the phase complete.
        S.t.state = State::AtMbarrier;
        S.t.mbarrier = off;
        S.t.mbarrierParity = parity;
        return Next::Stop;
      }
    }
    if (!why.empty())
      return S.fault(ErrorCode::Trap, why);
    return Next::Advance;
  }
};

/// cp.async.bulk.tensor.Nd.shared::cluster.global.tile
///     .mbarrier::complete_tx::bytes [dst], [map, {c0, ...}], [mbar];
/// a TMA load of the box of `map` (a generic address of a tensor map in
/// the parameters or global memory) at the coordinates into shared memory,
/// completing on the mbarrier with the box's bytes. N is Inst::vec.
struct CpAsyncBulkTensorInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"cp.async.bulk.tensor"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::CpAsyncBulkTensor;
    bool dims = false, dstShared = false, srcGlobal = false, tile = false,
         completeTx = false;
    for (std::string_view m : p.rest) {
      if (m.size() == 2 && m[1] == 'd' && m[0] >= '1' && m[0] <= '5') {
        inst.vec = static_cast<uint8_t>(m[0] - '0');
        dims = true;
      } else if (std::optional<Space> s = parseSpace(m)) {
        if (*s == Space::Shared && !dstShared)
          dstShared = true;
        else if (*s == Space::Global && dstShared)
          srcGlobal = true;
        else
          return kUnsupported; // shared -> global stores: not yet
      } else if (m == "tile") {
        tile = true;
      } else if (m == "mbarrier::complete_tx::bytes") {
        completeTx = true;
      } else {
        return kUnsupported; // im2col, multicast, cache hints
      }
    }
    return dims && dstShared && srcGlobal && tile && completeTx &&
                   p.types.empty()
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(3, 3));
    FLASHC_SIM_TRY(r.addAddr(0, Space::Shared));
    FLASHC_SIM_TRY(r.addTensorAddress(1, inst.vec));
    return r.addAddr(2, Space::Shared);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    X &x = S.x;
    unsigned rank = I.vec;
    bool ok = true;
    uint32_t dst = sharedOperand(S, 0, Space::Shared,
                                 "cp.async.bulk.tensor's destination", ok);
    if (!ok)
      return Next::Stop;
    uint32_t mbar = sharedOperand(S, 2 + rank, Space::Shared,
                                  "cp.async.bulk.tensor's mbarrier", ok);
    if (!ok)
      return Next::Stop;
    // The tensor map: 128 bytes at a generic address (a __grid_constant__
    // parameter through cvta.param, or global memory), 64-byte aligned.
    uint64_t mapAddr = S.address(1);
    if (mapAddr % kTensorMapAlign)
      return S.fault(ErrorCode::Misaligned, "the tensor map at " +
                                                hex(mapAddr) +
                                                " is not 64-byte aligned");
    const uint8_t *bytes =
        x.access(I, S.t, Space::Generic, mapAddr, kTensorMapBytes, 1, false);
    if (!bytes)
      return Next::Stop;
    Result<TensorMap> map = decodeTensorMap(bytes);
    if (!map)
      return S.fault(ErrorCode::Trap, "the tensor map at " + hex(mapAddr) +
                                          ": " + map.status().message());
    if (map->rank != rank)
      return S.fault(ErrorCode::Trap,
                     "a " + std::to_string(rank) +
                         "-d tensor copy of a tensor map of rank " +
                         std::to_string(map->rank));
    int32_t coords[kTensorMapMaxRank] = {};
    for (unsigned d = 0; d < rank; ++d)
      coords[d] = static_cast<int32_t>(S.src(2 + d));
    ErrorCode code = ErrorCode::Trap;
    std::string why = x.async.issueTensorLoad(*map, coords, dst, mbar,
                                              asyncSite(I, S.t), code);
    if (!why.empty())
      return S.fault(code, why);
    return Next::Advance;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_BULK_H
