//===- Mbarrier.h - The state of a shared-memory mbarrier -------*- C++ -*-===//
//
// An mbarrier (PTX ISA, "Parallel Synchronization and Communication
// Instructions: mbarrier") is a 64-bit object in shared memory that counts
// the arrivals of threads and the bytes of asynchronous transactions (TMA
// copies) of its current phase. A phase completes when both counts reach
// zero: the phase number advances (waiters on its parity are released), the
// pending arrival count is reset to the expected count, and the next phase
// begins. This class is that state machine; the interpreter keeps one per
// initialised mbarrier, keyed by its shared-memory offset, and reports what
// the hardware leaves undefined (an arrival the phase does not expect, a
// transaction count out of range) as a fault with the reason this returns.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_MBARRIER_H
#define FLASHC_LIB_SIMULATOR_MBARRIER_H

#include <cstdint>
#include <string>

namespace flashc {
namespace sim {
namespace detail {

class Mbarrier {
public:
  /// The largest expected arrival count and the bound of the transaction
  /// count (PTX ISA: [1, 2^20 - 1] and [-(2^20 - 1), 2^20 - 1]).
  static constexpr int64_t kMaxCount = (1 << 20) - 1;

  /// mbarrier.init: phase 0, `count` arrivals expected. Empty on success,
  /// else why the count is invalid.
  std::string init(uint64_t count) {
    if (count < 1 || count > uint64_t(kMaxCount))
      return "mbarrier.init count " + std::to_string(count) +
             " is not between 1 and 2^20 - 1";
    expected = pending = static_cast<uint32_t>(count);
    tx = 0;
    phase = 0;
    return "";
  }

  /// The expect-tx operation: `bytes` more transaction bytes this phase.
  std::string expectTx(uint64_t bytes) {
    return addTx(int64_t(bytes), "expect_tx");
  }

  /// The complete-tx operation of an asynchronous copy that landed.
  std::string completeTx(uint64_t bytes) {
    std::string why = addTx(-int64_t(bytes), "complete_tx");
    if (why.empty())
      maybeComplete();
    return why;
  }

  /// An arrive-on operation of `count` arrivals. The returned state
  /// (mbarrier.arrive's result) is the phase the arrival belongs to.
  std::string arrive(uint64_t count, uint64_t &state) {
    state = phase;
    if (count < 1 || count > pending)
      return "an arrival of " + std::to_string(count) +
             " on an mbarrier with " + std::to_string(pending) + " of " +
             std::to_string(expected) + " arrivals pending in phase " +
             std::to_string(phase) + " (more arrivals than the phase expects)";
    pending -= static_cast<uint32_t>(count);
    maybeComplete();
    return "";
  }

  /// try_wait.parity / test_wait.parity: whether the phase of parity
  /// `parity` has completed, i.e. the current phase has the other parity.
  bool parityComplete(uint32_t parity) const {
    return (phase & 1) != (parity & 1);
  }
  /// try_wait / test_wait with the state an arrive returned: whether the
  /// phase that state names has completed.
  bool stateComplete(uint64_t state) const { return phase != state; }

  uint64_t currentPhase() const { return phase; }
  uint32_t pendingArrivals() const { return pending; }
  uint32_t expectedArrivals() const { return expected; }
  int64_t txCount() const { return tx; }

  /// For messages: "phase 3: 1 of 2 arrivals and 8192 transaction bytes
  /// pending".
  std::string describe() const {
    return "phase " + std::to_string(phase) + ": " + std::to_string(pending) +
           " of " + std::to_string(expected) + " arrivals and " +
           std::to_string(tx) + " transaction bytes pending";
  }

private:
  std::string addTx(int64_t delta, const char *what) {
    int64_t next = tx + delta;
    if (next > kMaxCount || next < -kMaxCount)
      return std::string(what) + " of " +
             std::to_string(delta < 0 ? -delta : delta) +
             " bytes takes the mbarrier's transaction count to " +
             std::to_string(next) + ", beyond +-(2^20 - 1)";
    tx = next;
    return "";
  }
  void maybeComplete() {
    if (pending == 0 && tx == 0) {
      ++phase;
      pending = expected;
    }
  }

  uint32_t expected = 0;
  uint32_t pending = 0;
  int64_t tx = 0;
  uint64_t phase = 0;
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_MBARRIER_H
