//===- AsyncExecutor.h - Hopper's asynchronous units in the simulator -*- C++
//-*-===//
//
// The synchronous executor (the interpreter) runs a CTA's threads; this is
// the one beside it for the work that Hopper hands to asynchronous units
// and the synchronisation around it: mbarriers, TMA tensor copies into
// shared memory, and the happens-before order that those establish between
// warps without a CTA-wide barrier.
//
// Order. A pipelined kernel has no `bar.sync` in its main loop: a producer
// warp's TMA fills a stage that consumer warps read after waiting on the
// stage's mbarrier, and refills it after the consumers release it through
// another mbarrier. The interpreter's epoch check (a CTA barrier orders
// everything) cannot see that order, so this executor keeps a vector clock
// per warp, plus one for the TMA unit:
// - an arrive on an mbarrier releases the warp's clock into the mbarrier,
//   and the TMA unit's complete_tx releases the copy's; a phase that
//   completes keeps what was released into it, and a wait that finds the
//   phase complete acquires it into the waiting warp's clock;
// - a barrier (bar.sync, named or not) joins the clocks of its warps.
// Warps are the unit: lanes of one warp are ordered by the interpreter's
// own warp-synchronous checks, and a warp's lanes rendezvous at every warp
// collective.
//
// Records. Shared memory is tracked in 16-byte chunks (a TMA box's rows
// are multiples of 16 bytes): the chunk's last writer (a warp or the TMA
// unit) at its clock, and per warp the clock of its last read. Then:
// - a TMA copy is issued against what its issuing warp knows: every read
//   and write of the chunks it overwrites must be ordered before it (else
//   the copy would overwrite a stage still being consumed);
// - its chunks are in flight until it lands, and any access to them is a
//   race (a read before the mbarrier phase that covers the copy);
// - after it lands, an access must be ordered after the landing through
//   the mbarrier (else the reader waited on the wrong barrier or parity).
//
// Landing. A copy lands as late as the program allows: when a thread waits
// on its mbarrier and the phase needs the copy's bytes, or when no thread
// can run otherwise. So data is never visible earlier than on the
// hardware, and a read that is not ordered after the wait finds the chunk
// in flight.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_ASYNCEXECUTOR_H
#define FLASHC_LIB_SIMULATOR_ASYNCEXECUTOR_H

#include "Mbarrier.h"

#include "flashc/Simulator/TensorMap.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace flashc {
namespace sim {
namespace detail {

/// A vector clock over a CTA's warps and its TMA unit (the last slot).
class VectorClock {
public:
  VectorClock() = default;
  explicit VectorClock(size_t slots) : c(slots, 0) {}
  uint32_t operator[](size_t i) const { return c[i]; }
  uint32_t &operator[](size_t i) { return c[i]; }
  size_t size() const { return c.size(); }
  void join(const VectorClock &o) {
    if (c.size() < o.c.size())
      c.resize(o.c.size(), 0);
    for (size_t i = 0; i < o.c.size(); ++i)
      c[i] = std::max(c[i], o.c[i]);
  }
  void clear() { std::fill(c.begin(), c.end(), 0); }

private:
  std::vector<uint32_t> c;
};

/// Where an operation happened, for messages and the warp's clock: the
/// PTX line, the thread and its warp (`AsyncSite{line, thread, warp}`).
struct AsyncSite {
  uint32_t line = 0;
  uint32_t thread = 0;
  uint32_t warp = 0;
};

class AsyncExecutor {
public:
  /// Shared-memory bytes a chunk record covers.
  static constexpr uint32_t kChunkBytes = 16;
  /// TMA copies a CTA may have in flight: a bound on their memory.
  static constexpr size_t kMaxCopiesInFlight = 4096;

  /// What the interpreter supplies: the names of PTX lines and threads in
  /// messages (it knows the source and the thread coordinates), its
  /// checked global reads, and a notice of shared bytes a copy wrote (so
  /// that its own per-byte records forget their earlier writers).
  struct Hooks {
    std::function<std::string(uint32_t line)> at;
    std::function<std::string(uint32_t thread)> thread;
    /// Reads `bytes` of global memory at `address` into `out`, or says why
    /// it cannot.
    std::function<std::string(uint64_t address, uint32_t bytes, void *out)>
        readGlobal;
    std::function<void(uint32_t off, uint32_t bytes)> landed;
    /// Writes `bytes` at global address `address` from `in`, or says why it
    /// cannot (a TMA store).
    std::function<std::string(uint64_t address, uint32_t bytes, const void *in)>
        writeGlobal;
  };

  /// Sets the hooks, and whether the order of accesses is checked (the
  /// launch's race checking): once, before the first CTA.
  void configure(Hooks h, bool checkOrder) {
    hooks = std::move(h);
    checking = checkOrder;
  }
  /// Starts a CTA of `nwarps` warps over `sharedBytes` of shared memory at
  /// `shared`.
  void reset(uint32_t nwarps, uint8_t *shared, uint32_t sharedBytes);

  /// Whether the CTA has used anything this executor tracks (so that the
  /// interpreter can skip it for kernels that do not).
  bool active() const { return used; }
  /// Starts tracking now (at the start of a CTA of a kernel that uses the
  /// asynchronous units, so that every plain access is recorded).
  void activateNow() { activate(); }

  //===--------------------------------------------------------------------===//
  // mbarriers (offsets are shared-memory offsets of the 8-byte objects)
  //===--------------------------------------------------------------------===//

  /// Each returns an empty string, or why the operation is a fault.
  std::string mbarrierInit(uint32_t off, uint64_t count, const AsyncSite &s);
  std::string mbarrierExpectTx(uint32_t off, uint64_t bytes,
                               const AsyncSite &s);
  /// An arrive (after an expect-tx of `txBytes` when nonzero); `state` is
  /// the phase token mbarrier.arrive returns.
  std::string mbarrierArrive(uint32_t off, uint64_t count, uint64_t txBytes,
                             const AsyncSite &s, uint64_t &state);
  /// try_wait.parity: sets `complete`; when complete, the warp acquires the
  /// phase. Lands the mbarrier's copies first if its phase needs them.
  std::string mbarrierTryWaitParity(uint32_t off, uint32_t parity,
                                    const AsyncSite &s, bool &complete);
  /// Whether [off, off + size) overlaps an initialised mbarrier (plain
  /// loads and stores of one are faults).
  bool overlapsMbarrier(uint32_t off, uint32_t size) const;
  /// For deadlock messages: the mbarrier at `off` and its phase.
  std::string describeMbarrier(uint32_t off) const;

  //===--------------------------------------------------------------------===//
  // TMA
  //===--------------------------------------------------------------------===//

  /// A tensor copy global -> shared of `map`'s box at `coords` into shared
  /// offset `dst`, completing on the mbarrier at `mbar`. Checks the
  /// destination and the order of the chunks it overwrites now; the data
  /// moves when the copy lands. On a fault, `code` says its kind
  /// (Misaligned, OutOfBounds, Unsupported, Race or Trap).
  std::string issueTensorLoad(const TensorMap &map, const int32_t *coords,
                              uint32_t dst, uint32_t mbar, const AsyncSite &s,
                              ErrorCode &code);
  /// Lands every copy in flight (the scheduler's last resort before it
  /// declares a deadlock). Returns whether any landed; `error` gets why a
  /// landing faulted.
  bool landAll(std::string &error);
  size_t copiesInFlight() const { return inflight.size(); }

  //===--------------------------------------------------------------------===//
  // Order of plain accesses and barriers
  //===--------------------------------------------------------------------===//

  /// A plain access of warp `s.warp` to shared [off, off + size): checks it
  /// against copies in flight and landed copies, and records it. Empty, or
  /// why it is a race.
  std::string onAccess(uint32_t off, uint32_t size, bool write,
                       const AsyncSite &s);
  /// A barrier arrival (bar.arrive) of warp `warp` at barrier `id`: its
  /// clock is released to the warps that complete the barrier.
  void barrierArrive(uint32_t id, uint32_t warp);
  /// Barrier `id` (bar.sync's id, 0 to 15) completes for `warps`: they
  /// acquire what its arrivals released, and each other's clocks.
  void barrierComplete(uint32_t id, const std::vector<uint32_t> &warps);

  //===--------------------------------------------------------------------===//
  // The asynchronous proxy
  //===--------------------------------------------------------------------===//

  /// fence.proxy.async by warp `warp`: its earlier plain writes to shared
  /// memory become visible to the asynchronous proxy (wgmma, TMA stores).
  void fenceProxyAsync(uint32_t warp);
  /// A read through the asynchronous proxy (a wgmma's shared operands, a
  /// TMA store's source) of shared [off, off + size) on behalf of warp
  /// `s.warp`: not of a copy in flight, ordered after the TMA copy or the
  /// plain writes that wrote it, those writes fenced by their warps.
  /// Records it as the warp's read.
  std::string onAsyncRead(uint32_t off, uint32_t size, const AsyncSite &s);

  /// A TMA store of the box of `map` at `coords` from shared offset `src`
  /// (cp.async.bulk.tensor ... global.shared::cta.bulk_group). The global
  /// bytes are written now (elements outside the tensor are skipped); the
  /// shared source stays held, so that writing it is a race, until a
  /// cp.async.bulk.wait_group(.read) of the issuing thread retires the
  /// store's bulk group.
  std::string issueTensorStore(const TensorMap &map, const int32_t *coords,
                               uint32_t src, const AsyncSite &s,
                               ErrorCode &code);
  /// A wgmma of warp `warp` issued at `line` reads shared chunk `chunk`
  /// until a wgmma.wait_group of the warp retires it: writing the chunk in
  /// between (a plain store, a landing copy, a TMA copy issued over it) is
  /// a race. releaseWgmmaRead ends the hold.
  void holdWgmmaRead(uint32_t chunk, uint32_t warp, uint32_t line);
  void releaseWgmmaRead(uint32_t chunk);
  /// cp.async.bulk.commit_group of thread `thread`.
  void bulkCommit(uint32_t thread);
  /// cp.async.bulk.wait_group of thread `thread`: retires every bulk group
  /// but the `keep` newest.
  void bulkWait(uint32_t thread, uint32_t keep);

private:
  struct Chunk {
    /// The last writer: a warp, or `tmaSlot()`; kNone when never written.
    uint32_t writer = kNone;
    uint32_t writeClock = 0;
    uint32_t writeLine = 0;
    /// The id of the copy in flight into the chunk, or kNone.
    uint32_t inflightCopy = kNone;
    /// TMA stores in flight that read the chunk.
    uint32_t heldByStores = 0;
    /// wgmmas in flight (issued, not retired by a wait) that read the
    /// chunk, and the warp and line of the last of them.
    uint32_t heldByWgmma = 0;
    uint32_t wgmmaWarp = 0, wgmmaLine = 0;
  };
  struct Store {
    static constexpr uint32_t kUncommitted = 0xffffffffu;
    uint32_t thread = 0;
    uint32_t group = kUncommitted;
    uint32_t first = 0, last = 0; // chunks
    uint32_t line = 0;
  };
  static constexpr uint32_t kNone = 0xffffffffu;

  struct Barrier {
    Mbarrier state;
    /// What arrivals and landed copies released this phase and before.
    VectorClock released;
    /// `released` when the last phase completed: what a wait acquires.
    VectorClock completed;
    uint64_t completedPhase = 0;
    uint32_t initLine = 0;
  };

  struct Copy {
    uint32_t id = 0;
    TensorMap map;
    int32_t coords[kTensorMapMaxRank] = {};
    uint32_t dst = 0;
    uint32_t bytes = 0;
    uint32_t mbar = 0;
    AsyncSite site;
    VectorClock issuer;
  };

  uint32_t tmaSlot() const { return nwarps; }
  const Copy *findCopy(uint32_t id) const;
  /// Why an access of `kind` ("read of", "write of") at `addr` races with
  /// the TMA copies of chunk `ch`: one in flight, or one landed that the
  /// accessing warp (clock `me`) has not acquired. Empty when it does not.
  std::string checkCopies(const Chunk &ch, uint32_t addr, const char *kind,
                          const VectorClock &me) const;
  /// Records chunk `chunk` as read by `s`'s warp at its clock.
  void recordRead(uint32_t chunk, const AsyncSite &s);
  /// Checks a TMA box at shared offset `off` (its `role`: destination or
  /// source): aligned, inside shared memory, a swizzle the simulator
  /// implements. Empty, or why not with its kind in `code`.
  std::string checkBox(const TensorMap &map, uint32_t off, const char *role,
                       ErrorCode &code) const;
  Barrier *findBarrier(uint32_t off);
  std::string noBarrier(uint32_t off, const char *what) const;
  void noteComplete(Barrier &b, uint64_t phaseBefore);
  std::string land(Copy &c);
  /// Lands, in issue order, the copies completing on `mbar`.
  std::string landFor(uint32_t mbar, bool &any);
  std::string hex(uint64_t v) const;

  uint32_t nwarps = 0;
  uint8_t *shared = nullptr;
  uint32_t sharedBytes = 0;
  Hooks hooks;
  bool checking = true;
  bool used = false;
  std::vector<VectorClock> clocks; // per warp, and the TMA unit's
  std::vector<Chunk> chunks;
  /// Per chunk, per warp: the clock of the warp's last read (0: none).
  std::vector<uint32_t> readClocks;
  std::vector<uint32_t> readLines;
  std::map<uint32_t, Barrier> barriers;
  std::deque<Copy> inflight;
  uint32_t nextCopyId = 0;
  /// Per warp: its clock at its last fence.proxy.async (0: none).
  std::vector<uint32_t> fenceClocks;
  /// Per barrier id: what bar.arrive released to its next completion.
  VectorClock arrivals[16];
  std::vector<Store> stores;
  std::map<uint32_t, uint32_t> bulkCommitted; // per thread

  void activate();
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_ASYNCEXECUTOR_H
