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
#include <vector>

namespace flashc {
namespace sim {
namespace detail {

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
    AsyncSite site = AsyncSite{I.line, S.t.linear, S.t.warp};
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
/// completing on the mbarrier with the box's bytes; and
/// cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group
///     [map, {c0, ...}], [src];
/// a TMA store of the box from shared memory, in the thread's bulk group.
/// N is Inst::vec.
struct CpAsyncBulkTensorInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"cp.async.bulk.tensor"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    bool dims = false, tile = false, completeTx = false, bulkGroup = false;
    std::vector<Space> spaces;
    for (std::string_view m : p.rest) {
      if (m.size() == 2 && m[1] == 'd' && m[0] >= '1' && m[0] <= '5') {
        inst.vec = static_cast<uint8_t>(m[0] - '0');
        dims = true;
      } else if (std::optional<Space> s = parseSpace(m)) {
        spaces.push_back(*s);
      } else if (m == "tile") {
        tile = true;
      } else if (m == "mbarrier::complete_tx::bytes") {
        completeTx = true;
      } else if (m == "bulk_group") {
        bulkGroup = true;
      } else {
        return kUnsupported; // im2col, multicast, cache hints
      }
    }
    if (!dims || !tile || !p.types.empty() || spaces.size() != 2)
      return kUnsupported;
    if (spaces[0] == Space::Shared && spaces[1] == Space::Global &&
        completeTx && !bulkGroup) {
      inst.op = Op::CpAsyncBulkTensor;
      return "";
    }
    if (spaces[0] == Space::Global && spaces[1] == Space::Shared && bulkGroup &&
        !completeTx) {
      inst.op = Op::CpAsyncBulkTensorStore;
      return "";
    }
    return kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    if (inst.op == Op::CpAsyncBulkTensorStore) {
      FLASHC_SIM_TRY(r.count(2, 2));
      FLASHC_SIM_TRY(r.addTensorAddress(0, inst.vec));
      return r.addAddr(1, Space::Shared);
    }
    FLASHC_SIM_TRY(r.count(3, 3));
    FLASHC_SIM_TRY(r.addAddr(0, Space::Shared));
    FLASHC_SIM_TRY(r.addTensorAddress(1, inst.vec));
    return r.addAddr(2, Space::Shared);
  }

  /// The tensor map at the generic address of operand `i`: 128 bytes (a
  /// __grid_constant__ parameter through cvta.param, or global memory),
  /// 64-byte aligned, of rank Inst::vec. Sets `ok` to false after a fault.
  template <typename X>
  static TensorMap readMap(const ThreadStep<X> &S, unsigned i, bool &ok) {
    ok = false;
    uint64_t mapAddr = S.address(i);
    if (mapAddr % kTensorMapAlign) {
      S.fault(ErrorCode::Misaligned,
              "the tensor map at " + hex(mapAddr) + " is not 64-byte aligned");
      return TensorMap();
    }
    const uint8_t *bytes = S.x.access(S.I, S.t, Space::Generic, mapAddr,
                                      kTensorMapBytes, 1, false);
    if (!bytes)
      return TensorMap();
    Result<TensorMap> map = decodeTensorMap(bytes);
    if (!map) {
      S.fault(ErrorCode::Trap, "the tensor map at " + hex(mapAddr) + ": " +
                                   map.status().message());
      return TensorMap();
    }
    if (map->rank != S.I.vec) {
      S.fault(ErrorCode::Trap, "a " + std::to_string(S.I.vec) +
                                   "-d tensor copy of a tensor map of rank " +
                                   std::to_string(map->rank));
      return TensorMap();
    }
    ok = true;
    return *map;
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    X &x = S.x;
    const unsigned rank = I.vec;
    bool ok = true;
    ErrorCode code = ErrorCode::Trap;
    std::string why;
    int32_t coords[kTensorMapMaxRank] = {};
    // The copy reads or writes global memory.
    if (!x.checkGridDependency(I, S.t))
      return Next::Stop;
    if constexpr (Code == Op::CpAsyncBulkTensorStore) {
      uint32_t src = sharedOperand(S, 1 + rank, Space::Shared,
                                   "cp.async.bulk.tensor's source", ok);
      if (!ok)
        return Next::Stop;
      TensorMap map = readMap(S, 0, ok);
      if (!ok)
        return Next::Stop;
      for (unsigned d = 0; d < rank; ++d)
        coords[d] = static_cast<int32_t>(S.src(1 + d));
      ++x.tensorStores;
      why = x.async.issueTensorStore(
          map, coords, src, AsyncSite{I.line, S.t.linear, S.t.warp}, code);
    } else {
      uint32_t dst = sharedOperand(S, 0, Space::Shared,
                                   "cp.async.bulk.tensor's destination", ok);
      if (!ok)
        return Next::Stop;
      uint32_t mbar = sharedOperand(S, 2 + rank, Space::Shared,
                                    "cp.async.bulk.tensor's mbarrier", ok);
      if (!ok)
        return Next::Stop;
      TensorMap map = readMap(S, 1, ok);
      if (!ok)
        return Next::Stop;
      for (unsigned d = 0; d < rank; ++d)
        coords[d] = static_cast<int32_t>(S.src(2 + d));
      ++x.tensorLoads;
      why = x.async.issueTensorLoad(map, coords, dst, mbar,
                                    AsyncSite{I.line, S.t.linear, S.t.warp},
                                    code);
    }
    if (!why.empty())
      return S.fault(code, why);
    return Next::Advance;
  }
};

/// cp.async.bulk.commit_group: the thread's TMA stores since its last
/// commit form a bulk group. cp.async.bulk.wait_group(.read) N: every bulk
/// group of the thread but the N newest is retired (Inst::target); the
/// simulator writes a store's global bytes when it is issued, so `.read`
/// and the full wait retire the same.
struct CpAsyncBulkGroupInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"cp.async.bulk.commit_group",
                                                   "cp.async.bulk.wait_group"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    bool commit = p.spelling == "cp.async.bulk.commit_group";
    inst.op = commit ? Op::CpAsyncBulkCommit : Op::CpAsyncBulkWait;
    for (std::string_view m : p.rest)
      if (commit || m != "read")
        return kUnsupported;
    return p.types.empty() ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    if (inst.op == Op::CpAsyncBulkCommit)
      return r.count(0, 0);
    return groupCountOperand(r, inst);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    if constexpr (Code == Op::CpAsyncBulkCommit)
      S.x.async.bulkCommit(S.t.linear);
    else
      S.x.async.bulkWait(S.t.linear, S.I.target);
    return Next::Advance;
  }
};

/// fence.proxy.async{.shared::cta | .shared::cluster | .global}: the
/// thread's plain writes before it are visible to the asynchronous proxy
/// (wgmma, TMA stores) after it. Recorded for the thread's warp.
struct FenceProxyAsyncInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"fence.proxy.async"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::FenceProxyAsync;
    if (p.rest.size() > 1 || !p.types.empty())
      return kUnsupported;
    if (p.rest.size() == 1 && !parseSpace(p.rest[0]))
      return kUnsupported;
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) { return r.count(0, 0); }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    S.x.async.fenceProxyAsync(S.t.warp);
    return Next::Advance;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_BULK_H
