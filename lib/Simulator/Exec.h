//===- Exec.h - What instruction descriptions execute with ------*- C++ -*-===//
//
// The interpreter's side of an instruction description (Instructions.def):
// the state of a simulated thread, what an executor returns, and the steps
// it gets: a ThreadStep for an instruction one thread executes on its own
// (a description deriving from ThreadInst implements `exec`), a WarpStep for
// a warp collective, executed once every lane of its member mask waits at
// it (a description deriving from WarpInst implements `execWarp`).
//
// Executors are templates over the executor `X` (the CTARunner of
// Runner.h), whose helpers they call: val and set (operands), access
// (memory, checked), fault and fail (errors), regsOf, finishThread,
// landCopies and the CTA's state. They are inlined into the interpreter's
// switches, so that dispatching an instruction costs one jump. The base a
// description derives from picks its executor (Interpreter.cpp's execOf
// and execWarpOf); another executor, such as one for asynchronous units,
// would come with a base and a step of its own.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_EXEC_H
#define FLASHC_LIB_SIMULATOR_EXEC_H

#include "Numerics.h"
#include "Program.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

/// Executors are inlined into the interpreter's dispatch.
#define FLASHC_SIM_INLINE __attribute__((always_inline)) inline

namespace flashc {
namespace sim {
namespace detail {

/// Generic addresses of the shared and local windows: far above any user
/// space pointer, so that they never collide with global (host) memory.
constexpr uint64_t kSharedWindow = 0xfe00000000000000ull;
constexpr uint64_t kLocalWindow = 0xfd00000000000000ull;
/// The kernel parameters (cvta.param), read-only.
constexpr uint64_t kParamWindow = 0xfc00000000000000ull;
constexpr uint64_t kWindowSize = 1ull << 40;
/// cp.async copies one CTA may have in flight (issued, not yet landed by a
/// wait): a bound on the memory they hold.
constexpr uint64_t kMaxCopiesInFlight = 1u << 16;

/// Where a thread is: running, waiting at a warp collective, a barrier or
/// an mbarrier's phase (mbarrier.try_wait), or gone.
enum class State : uint8_t { Ready, AtWarpOp, AtBarrier, AtMbarrier, Exited };

struct PendingCopy {
  uint32_t dst = 0;
  uint32_t bytes = 0;
  uint32_t group = 0;
  uint32_t line = 0;
  uint8_t data[16];
};

struct Thread {
  uint32_t pc = 0;
  State state = State::Ready;
  uint32_t linear = 0;
  uint32_t x = 0, y = 0, z = 0;
  uint32_t lane = 0, warp = 0;
  uint64_t executed = 0;
  uint32_t exitLine = 0;
  uint32_t barrierId = 0;
  uint32_t barrierCount = 0;
  /// AtMbarrier: the mbarrier's shared address and the phase parity.
  uint32_t mbarrier = 0;
  uint32_t mbarrierParity = 0;
  /// Whether the thread's warp has wgmmas in flight (whose registers the
  /// thread must not touch).
  bool wgmmaPending = false;
  uint32_t groupsCommitted = 0;
  /// Whether the thread has executed griddepcontrol.wait.
  bool gridWaited = false;
  std::vector<PendingCopy> pending;
};

inline std::string hex(uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

/// What the thread does once an instruction's executor has run.
enum class Next : uint8_t {
  /// On to the next instruction.
  Advance,
  /// On to the instruction at `pc`, which the executor set.
  Jump,
  /// It stops running: it waits (at a barrier), has exited or faulted.
  Stop,
};

/// One thread's execution of one instruction.
template <typename X> struct ThreadStep {
  /// The executor.
  X &x;
  const Inst &I;
  Thread &t;
  /// The thread's registers.
  uint64_t *R;
  /// The instruction's operands.
  const Operand *O;

  /// The value of operand `i`.
  FLASHC_SIM_INLINE uint64_t src(unsigned i) const { return x.val(O[i], t, R); }
  /// Writes `v` to operand `i` (nothing for a sink).
  FLASHC_SIM_INLINE void dst(unsigned i, uint64_t v) const {
    x.set(O[i], R, v);
  }
  /// The address that address operand `i` names.
  FLASHC_SIM_INLINE uint64_t address(unsigned i) const {
    const Operand &a = O[i];
    return (a.reg >= 0 ? R[a.reg] : 0) + a.imm;
  }
  /// Reports a fault of this instruction in this thread.
  Next fault(ErrorCode code, const std::string &what) const {
    x.fault(code, I, t, what);
    return Next::Stop;
  }
};

/// One execution of a warp collective: every lane of its member mask waits
/// at it. The lanes of the mask are released to their next instruction
/// when `execWarp` returns true; it returns false after a fault.
template <typename X> struct WarpStep {
  /// The executor.
  X &x;
  /// The warp.
  uint32_t w;
  /// The member mask (every lane of the warp for an .aligned collective).
  uint32_t mask;
  /// Lane 0 of the warp: `lanes[l]` is lane l.
  Thread *lanes;
  /// The lowest waiting lane, and its instruction (that of every lane for
  /// an .aligned collective).
  Thread &leader;
  const Inst &I;

  bool member(uint32_t l) const { return mask & (1u << l); }
  Thread &lane(uint32_t l) const { return lanes[l]; }
  uint64_t *regs(uint32_t l) const { return x.regsOf(lanes[l]); }
  /// The instruction lane `l` waits at.
  const Inst &inst(uint32_t l) const { return x.instOf(lanes[l]); }
  /// Operand `i` of lane `l`'s instruction, read and written by lane `l`.
  uint64_t src(uint32_t l, unsigned i) const {
    return x.val(x.opnd(inst(l), i), lanes[l], regs(l));
  }
  void dst(uint32_t l, unsigned i, uint64_t v) const {
    x.set(x.opnd(inst(l), i), regs(l), v);
  }
  /// Reports a fault of the collective, in the leader.
  bool fault(ErrorCode code, const std::string &what) const {
    return x.fault(code, I, leader, what);
  }
};

/// The base of a description whose instructions each thread executes on
/// its own:
///
///   template <Op Code, typename X>
///   static FLASHC_SIM_INLINE Next exec(const ThreadStep<X> &s);
///
/// `Code` is the operation executed (one of the description's).
struct ThreadInst {};

/// The base of a warp collective's description. Each thread that reaches
/// it waits; once every lane of the member mask does, the scheduler runs
///
///   template <Op Code, typename X>
///   static bool execWarp(const WarpStep<X> &s);
///
/// once for the warp.
struct WarpInst {
  /// An .aligned collective: every lane of the warp takes part, all at the
  /// same instruction. Else the member mask is operand `maskOperand`, the
  /// same in every lane.
  static constexpr bool alignedCollective = false;
  static constexpr unsigned maskOperand = 0;
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_EXEC_H
