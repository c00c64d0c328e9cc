//===- Control.h - Branches, exits, CTA barriers ----------------*- C++ -*-===//
//
// The descriptions of bra, ret, exit, trap, the instructions executed as
// no-ops (membar, fence, nanosleep, prefetch), bar.sync and activemask (see
// Instructions.def).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_INSTRUCTIONS_CONTROL_H
#define FLASHC_LIB_SIMULATOR_INSTRUCTIONS_CONTROL_H

#include "../Decode.h"
#include "../Exec.h"

#include <string>

namespace flashc {
namespace sim {
namespace detail {

/// bra to a label (Inst::target).
struct BraInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"bra"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Bra;
    for (std::string_view m : p.rest)
      if (m != "uni")
        return kUnsupported;
    return p.types.empty() ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(1, 1));
    return r.addLabel(0);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    S.t.pc = S.I.target;
    return Next::Jump;
  }
};

/// ret and exit end the thread (landing its cp.async copies); trap faults.
struct ExitInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"ret", "exit", "trap"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = p.spelling == "trap" ? Op::Trap
                                   : (p.spelling == "ret" ? Op::Ret : Op::Exit);
    for (std::string_view m : p.rest)
      if (m != "uni")
        return kUnsupported;
    return p.types.empty() ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) { return r.count(0, 0); }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    if constexpr (Code == Op::Trap)
      return S.fault(ErrorCode::Trap, "the kernel executed trap");
    S.x.finishThread(S.t, S.I);
    return Next::Stop;
  }
};

/// membar, fence, nanosleep, prefetch and prefetchu: nothing to do in a
/// simulator that runs one thread at a time (modifiers and operands are
/// ignored).
struct NopInst : ThreadInst {
  static constexpr std::string_view spellings[] = {
      "membar", "fence", "nanosleep", "prefetch", "prefetchu"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Nop;
    return "";
  }

  static Status operands(OperandReader &r, Inst &inst) {
    return Status::success();
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    return Next::Advance;
  }
};

/// bar.sync and barrier.sync (.aligned or not) with a barrier id and an
/// optional thread count: the thread waits until the barrier completes.
/// bar.arrive / barrier.arrive with an id and a thread count: the thread
/// counts towards the barrier's completion and goes on (the producer side
/// of a named barrier). bar.red is not implemented.
struct BarSyncInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"bar", "barrier"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    if (p.rest.empty() || (p.rest[0] != "sync" && p.rest[0] != "arrive"))
      return kUnsupported;
    inst.op = p.rest[0] == "sync" ? Op::BarSync : Op::BarArrive;
    for (size_t i = 1; i < p.rest.size(); ++i)
      if (p.rest[i] != "aligned")
        return kUnsupported;
    return p.types.empty() ? "" : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    // bar.arrive needs its thread count.
    FLASHC_SIM_TRY(r.count(inst.op == Op::BarArrive ? 2 : 1, 2));
    FLASHC_SIM_TRY(r.addScalar(0, Ty::U32));
    if (r.size() == 2)
      FLASHC_SIM_TRY(r.addScalar(1, Ty::U32));
    return Status::success();
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    const Inst &I = S.I;
    uint32_t id = static_cast<uint32_t>(S.src(0));
    uint32_t count = I.numOps > 1 ? static_cast<uint32_t>(S.src(1)) : 0;
    if (id >= 16)
      return S.fault(ErrorCode::Trap, "barrier id " + std::to_string(id) +
                                          " is out of range (0-15)");
    if (count && (count % 32 || count > S.x.nthreads))
      return S.fault(ErrorCode::Trap,
                     "barrier thread count " + std::to_string(count) +
                         " is not a multiple of 32 within the CTA's " +
                         std::to_string(S.x.nthreads));
    if constexpr (Code == Op::BarArrive) {
      // Counted towards the barrier's completion; the thread goes on. The
      // arrivals of one use of the barrier give one count.
      if (S.x.barrierArrivals[id] && S.x.barrierArrivalCount[id] != count)
        return S.fault(ErrorCode::Trap,
                       "bar.arrive at named barrier " + std::to_string(id) +
                           " with " + std::to_string(count) + " threads, but " +
                           std::to_string(S.x.barrierArrivals[id]) +
                           " thread(s) arrived at it with " +
                           std::to_string(S.x.barrierArrivalCount[id]) +
                           " (every thread of a barrier's use gives the "
                           "same count)");
      S.x.barrierArrive(id, count, S.t);
      return Next::Advance;
    }
    S.t.state = State::AtBarrier;
    S.t.barrierId = id;
    S.t.barrierCount = count;
    return Next::Stop;
  }
};

/// activemask.b32: the lanes of the warp that have not exited.
struct ActivemaskInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"activemask"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Activemask;
    return p.rest.empty() && p.oneType(inst) && inst.type == Ty::B32
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) {
    FLASHC_SIM_TRY(r.count(1, 1));
    return r.addReg(0, Ty::B32);
  }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    uint32_t lo = S.t.warp * 32, m = 0;
    for (uint32_t l = 0; l < 32 && lo + l < S.x.nthreads; ++l)
      if (S.x.threads[lo + l].state != State::Exited)
        m |= 1u << l;
    S.dst(0, m);
    return Next::Advance;
  }
};

/// griddepcontrol.wait and griddepcontrol.launch_dependents (sm_90's
/// programmatic dependent launch): a kernel waits for the grids its launch
/// depends on, or lets the launches that depend on it start. A device runs
/// its launches one after the other, each once the one before has ended:
/// every wait is already met, and letting a launch start early changes
/// nothing. The wait is recorded (Inst::mode 1): in a programmatic launch
/// a thread's global accesses before it are races (LaunchConfig).
struct GriddepcontrolInst : ThreadInst {
  static constexpr std::string_view spellings[] = {"griddepcontrol"};

  static std::string decode(const OpcodeParts &p, Inst &inst) {
    inst.op = Op::Griddepcontrol;
    inst.mode = p.rest.size() == 1 && p.rest[0] == "wait";
    return p.rest.size() == 1 &&
                   (p.rest[0] == "wait" || p.rest[0] == "launch_dependents") &&
                   p.types.empty()
               ? ""
               : kUnsupported;
  }

  static Status operands(OperandReader &r, Inst &inst) { return r.count(0, 0); }

  template <Op Code, typename X>
  static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &S) {
    if (S.I.mode)
      S.t.gridWaited = true;
    return Next::Advance;
  }
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_INSTRUCTIONS_CONTROL_H
