//===- Runner.h - The executor of a CTA -------------------------*- C++ -*-===//
//
// What a launch shares between its worker threads (LaunchEnv) and the
// CTARunner, which runs the CTAs handed to one worker: its scheduler
// (Interpreter.cpp) runs each thread until it waits, completes the warp
// collectives and barriers every member waits at, and detects deadlocks.
// The CTARunner is the executor `X` of the instructions' descriptions
// (Exec.h): its public part is what they may use, the CTA's state and the
// checked accesses to registers and memory.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_SIMULATOR_RUNNER_H
#define FLASHC_LIB_SIMULATOR_RUNNER_H

#include "AsyncExecutor.h"
#include "Exec.h"
#include "SharedBanks.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <vector>

namespace flashc {
namespace sim {
namespace detail {

/// Write-ownership records come in chunks of this many bytes' worth.
constexpr unsigned kOwnerChunkBits = 16;

/// Race-checking state of one byte of shared memory that every access
/// reads: the barrier epochs (mod 2^16) and threads of the last write and
/// of this epoch's reads. Threads fit 15 bits (at most 1024 per CTA); the
/// top bit of `writeThread` marks a cp.async in flight into the byte, that
/// of `readThread` more than one reader in the epoch.
struct ShadowByte {
  uint16_t writeEpoch = 0;
  uint16_t readEpoch = 0;
  uint16_t writeThread = 0;
  uint16_t readThread = 0;
};
constexpr uint16_t kInflightBit = 0x8000;
constexpr uint16_t kMultipleReadersBit = 0x8000;
constexpr uint16_t kThreadMask = 0x7fff;

/// The rest of a byte's race-checking state, touched when an access is
/// recorded or reported: source lines, and the warp's bar.warp.sync count
/// at each access (which orders lanes of one warp). A copy in flight is
/// found in its thread's pending copies when it is reported.
struct ShadowDetail {
  uint32_t writeLine = 0;
  uint32_t readLine = 0;
  uint32_t writeWarpSync = 0;
  uint32_t readWarpSync = 0;
};

using Buffer = Device::Buffer;

/// The write-ownership records of one buffer: per byte, 0 or the id of the
/// CTA that stored to it (ownerId), in chunks of 2^kOwnerChunkBits bytes
/// allocated on the first store into them.
struct OwnerTable {
  std::unique_ptr<std::atomic<std::atomic<uint32_t> *>[]> chunks;
  size_t numChunks = 0;
};

/// The write-ownership id of CTA `index`, never 0. Exact for grids of fewer
/// than 2^32 - 1 CTAs; beyond, two CTAs may share an id (a conflict between
/// them goes unseen, and none is reported falsely).
inline uint32_t ownerId(uint64_t index) {
  return static_cast<uint32_t>(index % 0xffffffffu) + 1;
}

/// Everything a launch shares between its worker threads.
struct LaunchEnv {
  const KernelProgram &kernel;
  std::string sourceName;
  Dim3 grid, block;
  uint32_t dynamicShared = 0;
  std::vector<uint8_t> params;
  std::vector<Buffer> buffers;    // sorted by begin
  std::vector<OwnerTable> owners; // by buffer, when checking global writes
  bool checkRaces = true;
  bool checkGlobalWrites = true;
  bool programmatic = false;
  uint64_t maxInstructions = 0;
  /// The memory budget and what the launch holds of it.
  uint64_t memoryBudget = 0;
  std::atomic<uint64_t> memoryUsed{0};
  std::atomic<uint64_t> nextCTA{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> instructions{0};
  std::atomic<uint64_t> ldmatrixMatrices{0}, ldmatrixExtraWavefronts{0};
  std::atomic<uint64_t> sharedRequests{0}, sharedExtraWavefronts{0};
  std::atomic<uint64_t> wgmmaInstructions{0};
  std::atomic<uint64_t> tensorLoads{0};
  std::atomic<uint64_t> tensorStores{0};
  std::atomic<uint64_t> setmaxnregInstructions{0};
  std::atomic<uint64_t> barrierArrivals{0};
  /// Serialises atomics (atom, red) on global memory across workers.
  std::mutex atomicMutex;
  std::mutex errorMutex;
  uint64_t errorCTA = UINT64_MAX;
  Status error;

  LaunchEnv(const KernelProgram &k) : kernel(k) {}
  ~LaunchEnv() {
    for (OwnerTable &table : owners)
      for (size_t c = 0; c < table.numChunks; ++c)
        delete[] table.chunks[c].load();
  }

  /// Takes `bytes` of the memory budget; false when they do not fit.
  bool reserve(uint64_t bytes) {
    uint64_t used = memoryUsed.load();
    do {
      if (bytes > memoryBudget || used > memoryBudget - bytes)
        return false;
    } while (!memoryUsed.compare_exchange_weak(used, used + bytes));
    return true;
  }

  /// The records of chunk `c` of buffer `b`, allocated (zeroed) on first
  /// use; null when the memory budget or the host cannot hold them.
  std::atomic<uint32_t> *ownerChunk(size_t b, size_t c) {
    OwnerTable &table = owners[b];
    std::atomic<uint32_t> *chunk =
        table.chunks[c].load(std::memory_order_acquire);
    if (chunk)
      return chunk;
    uint64_t entries = std::min<uint64_t>(uint64_t(1) << kOwnerChunkBits,
                                          buffers[b].end - buffers[b].begin -
                                              (uint64_t(c) << kOwnerChunkBits));
    uint64_t bytes = entries * sizeof(std::atomic<uint32_t>);
    if (!reserve(bytes))
      return nullptr;
    auto *fresh = new (std::nothrow) std::atomic<uint32_t>[entries]();
    if (!fresh) {
      memoryUsed -= bytes;
      return nullptr;
    }
    if (table.chunks[c].compare_exchange_strong(chunk, fresh,
                                                std::memory_order_acq_rel))
      return fresh;
    delete[] fresh; // another worker was first
    memoryUsed -= bytes;
    return chunk;
  }

  void report(uint64_t cta, Status e) {
    std::lock_guard<std::mutex> lock(errorMutex);
    if (cta < errorCTA) {
      errorCTA = cta;
      error = std::move(e);
    }
    stop = true;
  }
};

/// Executes the CTAs handed to one worker. It is the executor of the
/// instructions' descriptions, which use its public members.
class CTARunner {
public:
  CTARunner(LaunchEnv &env) : env(env), k(env.kernel) {
    nthreads = static_cast<uint32_t>(env.block.count());
    nwarps = (nthreads + 31) / 32;
    regs.assign(static_cast<size_t>(nthreads) * std::max(1u, k.numRegs), 0);
    threads.resize(nthreads);
    sharedSize = k.dynamicSharedOffset + env.dynamicShared;
    if (env.dynamicShared == 0)
      sharedSize = std::max(sharedSize, k.info.staticSharedBytes);
    shared.assign(sharedSize, 0);
    if (env.checkRaces) {
      shadow.assign(sharedSize, ShadowByte());
      detail.assign(sharedSize, ShadowDetail());
    }
    local.assign(static_cast<size_t>(nthreads) * k.localBytes, 0);
    warpSync.assign(nwarps, 0);
    setmaxnregHistory.resize((nwarps + 3) / 4);
    setmaxnregExecuted.resize(nwarps);
    wgmmaInFlight.resize(nwarps);
    wgmmaCommitted.resize(nwarps);
    configureAsync();
    sharedSite.assign(k.code.size(), -1);
    for (size_t pc = 0; pc < k.code.size(); ++pc) {
      const Inst &inst = k.code[pc];
      if (isSharedSite(inst))
        sharedSite[pc] = static_cast<int32_t>(numSharedSites++);
      usesAsync |=
          inst.op == Op::MbarrierInit || inst.op == Op::CpAsyncBulkTensor ||
          inst.op == Op::CpAsyncBulkTensorStore || inst.op == Op::WgmmaMmaAsync;
    }
  }

  /// Runs one CTA. Returns false (after reporting) on an error.
  bool run(uint64_t index);
  uint64_t instructions = 0;
  /// 8 x 8 matrices ldmatrix read, and the shared-memory wavefronts beyond
  /// one per matrix that their rows' bank conflicts cost.
  uint64_t ldmatrixMatrices = 0, ldmatrixExtraWavefronts = 0;
  /// The warps' requests of ld/st to shared memory and of cp.async, and
  /// the wavefronts their bank conflicts add (SharedBanks.h).
  SharedBankCounter sharedBanks;
  /// wgmma.mma_async executed, per warp (four per warpgroup instruction).
  uint64_t wgmmaInstructions = 0;
  /// TMA tensor loads (cp.async.bulk.tensor to shared memory) issued.
  uint64_t tensorLoads = 0;
  /// TMA tensor stores (cp.async.bulk.tensor to global memory) issued.
  uint64_t tensorStores = 0;
  /// setmaxnreg executed, per warp.
  uint64_t setmaxnregInstructions = 0;
  /// bar.arrive executed, per thread.
  uint64_t barrierArriveInstructions = 0;

  // The CTA, which executors read and update ------------------------------

  LaunchEnv &env;
  const KernelProgram &k;
  uint32_t nthreads = 0, nwarps = 0;
  std::vector<uint64_t> regs;
  std::vector<Thread> threads;
  std::vector<uint8_t> shared;
  uint32_t sharedSize = 0;
  std::vector<ShadowByte> shadow;
  std::vector<ShadowDetail> detail;
  std::vector<uint8_t> local;
  std::vector<uint32_t> warpSync;
  uint16_t epoch = 0;
  uint64_t copiesInFlight = 0;
  /// mbarriers and TMA copies (Instructions/Bulk.h).
  AsyncExecutor async;
  /// setmaxnreg (Instructions/Warp.h): per warpgroup, the sequence of
  /// (count << 1 | inc) its warps execute; per warp, how many it executed.
  std::vector<std::vector<uint32_t>> setmaxnregHistory;
  std::vector<uint32_t> setmaxnregExecuted;

  // wgmma (Instructions/Wgmma.h, WgmmaExec.cpp) ---------------------------

  /// A wgmma in flight: its commit group (kUncommitted before its commit),
  /// the registers it holds (the accumulator's and register A's, the same
  /// in every lane), the 16-byte shared chunks it read, and its line.
  struct WgmmaInFlight {
    static constexpr uint32_t kUncommitted = 0xffffffffu;
    uint32_t group = kUncommitted;
    std::vector<int32_t> regs;
    std::vector<uint32_t> chunks;
    uint32_t line = 0;
  };
  /// Per warp: the wgmmas in flight and the groups committed.
  std::vector<std::vector<WgmmaInFlight>> wgmmaInFlight;
  std::vector<uint32_t> wgmmaCommitted;
  /// Per thread and register: how many wgmmas in flight hold it
  /// (allocated on a CTA's first wgmma).
  std::vector<uint16_t> wgmmaHeld;

  /// bar.arrive: per barrier id, the arrivals counted towards its next
  /// completion and the thread count they gave.
  uint32_t barrierArrivals[16] = {};
  uint32_t barrierArrivalCount[16] = {};
  void barrierArrive(uint32_t id, uint32_t count, const Thread &t) {
    barrierArrivals[id]++;
    barrierArrivalCount[id] = count;
    ++barrierArriveInstructions;
    async.barrierArrive(id, t.warp);
  }
  /// Scratch for tryBarriers: the warps a barrier releases.
  std::vector<uint32_t> barrierWarps;
  /// Whether the kernel uses mbarriers, TMA or wgmma (then every CTA's
  /// plain shared accesses are tracked by the asynchronous executor).
  bool usesAsync = false;

  bool execWgmma(const WarpStep<CTARunner> &S);
  bool commitWgmma(uint32_t warp);
  bool waitWgmma(const WarpStep<CTARunner> &S, uint32_t keep);
  /// Checks that `inst` in `t` touches no register a wgmma in flight
  /// holds; false after reporting the race.
  bool checkWgmmaRegisters(const Inst &inst, Thread &t);
  Dim3 ctaid;
  uint64_t ctaIndex = 0;
  Status error;
  size_t lastBuffer = 0;

  // Operands and errors ----------------------------------------------------

  /// The registers of `t`.
  uint64_t *regsOf(const Thread &t) {
    return regs.data() + static_cast<size_t>(t.linear) * k.numRegs;
  }
  /// Operand `i` of `inst`.
  const Operand &opnd(const Inst &inst, unsigned i) const {
    return k.operands[inst.firstOp + i];
  }
  /// The instruction `t` is at.
  const Inst &instOf(const Thread &t) const { return k.code[t.pc]; }
  /// The value of operand `o` in thread `t`, whose registers are `r`.
  __attribute__((always_inline)) uint64_t val(const Operand &o, const Thread &t,
                                              const uint64_t *r) {
    if (o.kind == OperandKind::Reg) {
      uint64_t v = r[o.reg];
      return o.negate ? (~v & 1u) : v;
    }
    if (o.kind == OperandKind::Imm)
      return o.imm;
    if (o.kind == OperandKind::Special)
      return special(o.special, t);
    return 0;
  }
  /// Writes `v` to operand `o` (a register, else nothing).
  inline void set(const Operand &o, uint64_t *r, uint64_t v) {
    if (o.kind == OperandKind::Reg)
      r[o.reg] = v;
  }
  /// Reports an error of the CTA (the first counts). Returns false.
  bool fail(ErrorCode code, const std::string &msg) {
    if (!error)
      error = Status::make(code, msg);
    return false;
  }
  /// Reports a fault of `inst` executed by `t`. Returns false.
  bool fault(ErrorCode code, const Inst &inst, const Thread &t,
             const std::string &what) {
    const char *name = code == ErrorCode::OutOfBounds  ? "out-of-bounds"
                       : code == ErrorCode::Misaligned ? "misaligned"
                       : code == ErrorCode::Race       ? "race"
                       : code == ErrorCode::Trap       ? "trap"
                       : code == ErrorCode::Deadlock   ? "deadlock"
                                                       : "error";
    return fail(code, std::string(name) + ": " + what + " in kernel '" +
                          k.info.name + "' at " + at(inst.line) + " ('" +
                          k.opcodeNames[inst.opcodeIndex] + "') by " +
                          where(t));
  }

  // Memory -----------------------------------------------------------------

  /// In a programmatic dependent launch, a thread reaches global memory
  /// only after its griddepcontrol.wait (the kernel launched before may
  /// still be writing it); false after reporting the race.
  bool checkGridDependency(const Inst &inst, Thread &t) {
    if (!env.programmatic || t.gridWaited)
      return true;
    fault(ErrorCode::Race, inst, t,
          "global memory accessed before griddepcontrol.wait in a "
          "programmatic dependent launch (the kernel launched before it may "
          "still be writing)");
    return false;
  }

  /// Counts thread `t`'s part of the warp's request of `size` bytes at
  /// shared address `addr` (0 bytes: predicated off) for the bank-conflict
  /// count, when `inst` is one of its sites. Out of line: the scheduler's
  /// loop calls it for a predicated-off instruction.
  __attribute__((noinline)) void noteSharedRequest(const Inst &inst,
                                                   const Thread &t,
                                                   uint32_t addr,
                                                   uint32_t size) {
    int32_t site = sharedSite[&inst - k.code.data()];
    if (site >= 0)
      sharedBanks.note(t.linear, static_cast<uint32_t>(site), addr, size);
  }
  /// Whether `inst` is a site of the bank-conflict count: ld.shared,
  /// st.shared or cp.async (generic accesses are not counted).
  static bool isSharedSite(const Inst &inst) {
    return inst.op == Op::CpAsync ||
           ((inst.op == Op::Ld || inst.op == Op::St) &&
            inst.space == Space::Shared);
  }
  /// The bank-conflict count's site of each instruction (ld.shared,
  /// st.shared, cp.async), or -1.
  std::vector<int32_t> sharedSite;
  uint32_t numSharedSites = 0;

  /// Resolves an access of `size` bytes at `addr` in `space` to host
  /// memory, checking bounds, alignment and (for shared memory) races.
  uint8_t *access(const Inst &inst, Thread &t, Space space, uint64_t addr,
                  uint32_t size, uint32_t align, bool write,
                  bool checkRace = true) {
    if (align > 1 && (addr & (align - 1))) {
      fault(ErrorCode::Misaligned, inst, t,
            std::to_string(size) + "-byte access at address " + hex(addr) +
                " is not " + std::to_string(align) + "-byte aligned");
      return nullptr;
    }
    if (space == Space::Generic) {
      if (addr >= kSharedWindow && addr < kSharedWindow + kWindowSize) {
        space = Space::Shared;
        addr -= kSharedWindow;
      } else if (addr >= kLocalWindow && addr < kLocalWindow + kWindowSize) {
        space = Space::Local;
        addr -= kLocalWindow;
      } else if (addr >= kParamWindow && addr < kParamWindow + kWindowSize) {
        space = Space::Param;
        addr -= kParamWindow;
      } else {
        space = Space::Global;
      }
    }
    if (space == Space::Global && !checkGridDependency(inst, t))
      return nullptr;
    switch (space) {
    case Space::Global:
    case Space::Const: {
      const Buffer *buf = findGlobal(addr, size);
      if (!buf) {
        fault(ErrorCode::OutOfBounds, inst, t,
              std::string(write ? "store" : "load") + " of " +
                  std::to_string(size) + " bytes at global address " +
                  hex(addr) + " outside every registered buffer" +
                  nearestBuffer(addr));
        return nullptr;
      }
      // Plain stores record their CTA (atomics pass checkRace = false).
      if (write && checkRace && env.checkGlobalWrites &&
          !recordStore(inst, t, *buf, addr, size))
        return nullptr;
      return buf->translate(addr);
    }
    case Space::Shared:
      if (addr + size > sharedSize || addr + size < addr) {
        fault(ErrorCode::OutOfBounds, inst, t,
              std::string(write ? "store" : "load") + " of " +
                  std::to_string(size) + " bytes at shared address " +
                  hex(addr) + " beyond the " + std::to_string(sharedSize) +
                  " bytes of shared memory (" +
                  std::to_string(k.info.staticSharedBytes) + " static + " +
                  std::to_string(env.dynamicShared) + " dynamic)");
        return nullptr;
      }
      if (checkRace &&
          !checkShared(static_cast<uint32_t>(addr), size, write, inst, t))
        return nullptr;
      if (async.active() &&
          !checkAsyncOrder(static_cast<uint32_t>(addr), size, write, inst, t))
        return nullptr;
      if (inst.op == Op::Ld || inst.op == Op::St)
        noteSharedRequest(inst, t, static_cast<uint32_t>(addr), size);
      return shared.data() + addr;
    case Space::Local:
      if (addr + size > k.localBytes || addr + size < addr) {
        fault(ErrorCode::OutOfBounds, inst, t,
              "access of " + std::to_string(size) + " bytes at local address " +
                  hex(addr) + " beyond the " + std::to_string(k.localBytes) +
                  " bytes of local memory");
        return nullptr;
      }
      return local.data() + static_cast<size_t>(t.linear) * k.localBytes + addr;
    case Space::Param:
      if (write || addr > env.params.size() ||
          size > env.params.size() - addr) {
        fault(ErrorCode::OutOfBounds, inst, t,
              std::string(write ? "store to" : "load beyond") +
                  " the kernel parameters at offset " + hex(addr));
        return nullptr;
      }
      return const_cast<uint8_t *>(env.params.data()) + addr;
    default:
      fail(ErrorCode::Unsupported, "unsupported state space");
      return nullptr;
    }
  }

  /// The global buffer holding [addr, addr + bytes), or null.
  const Buffer *findGlobal(uint64_t addr, uint64_t bytes) {
    const std::vector<Buffer> &b = env.buffers;
    if (lastBuffer < b.size() && addr >= b[lastBuffer].begin &&
        addr + bytes <= b[lastBuffer].end && addr + bytes >= addr)
      return &b[lastBuffer];
    auto it = std::upper_bound(
        b.begin(), b.end(), addr,
        [](uint64_t a, const Buffer &buf) { return a < buf.begin; });
    if (it == b.begin())
      return nullptr;
    --it;
    if (addr + bytes < addr || addr + bytes > it->end)
      return nullptr;
    lastBuffer = static_cast<size_t>(it - b.begin());
    return &*it;
  }

  /// Where `addr` lies relative to the buffers nearest it, for the message
  /// of an access outside every buffer: "" when none is within a guard gap.
  std::string nearestBuffer(uint64_t addr) const {
    const std::vector<Buffer> &b = env.buffers;
    auto it = std::upper_bound(
        b.begin(), b.end(), addr,
        [](uint64_t a, const Buffer &buf) { return a < buf.begin; });
    auto name = [](const Buffer &buf) {
      return buf.name.empty() ? std::string("a buffer")
                              : "buffer '" + buf.name + "'";
    };
    uint64_t after = UINT64_MAX, before = UINT64_MAX;
    if (it != b.begin() && addr >= std::prev(it)->end)
      after = addr - std::prev(it)->end;
    if (it != b.end())
      before = it->begin - addr;
    if (std::min(after, before) > Device::kGuardGapBytes)
      return "";
    if (after <= before)
      return " (" + std::to_string(after) + " bytes past the end of " +
             name(*std::prev(it)) + ")";
    return " (" + std::to_string(before) + " bytes before " + name(*it) + ")";
  }

  /// Checks an access to shared bytes [off, off + size) for races and,
  /// when `record`, records it. `write` marks stores.
  bool checkShared(uint32_t off, uint32_t size, bool write, const Inst &inst,
                   const Thread &t, bool record = true) {
    if (!env.checkRaces)
      return true;
    const uint16_t me = static_cast<uint16_t>(t.linear);
    const uint16_t ep = epoch;
    ShadowByte *hot = shadow.data() + off;
    // Fast path: the bytes of a vector access usually share one record
    // (one thread wrote them, the same threads read them). When they do
    // and that record allows the access without consulting the per-byte
    // details, there is nothing to check byte by byte.
    bool uniform = size > 1;
    for (uint32_t i = 1; i < size && uniform; ++i)
      uniform = std::memcmp(&hot[i], &hot[0], sizeof(ShadowByte)) == 0;
    if (uniform) {
      const ShadowByte &s = hot[0];
      uniform = !(s.writeThread & kInflightBit) &&
                !(s.writeEpoch == ep && s.writeThread != me) &&
                !(write && s.readEpoch == ep && s.readThread != me);
    }
    for (uint32_t i = 0; i < size && !uniform; ++i) {
      ShadowByte &s = hot[i];
      if (s.writeThread & kInflightBit)
        return reportRace(off + i, write, inst, t, RaceWith::Inflight);
      if (s.writeEpoch == ep && s.writeThread != me &&
          !orderedInWarp(t, s.writeThread, detail[off + i].writeWarpSync))
        return reportRace(off + i, write, inst, t, RaceWith::Write);
      if (write && s.readEpoch == ep && s.readThread != me &&
          !orderedInWarp(t, s.readThread & kThreadMask,
                         detail[off + i].readWarpSync))
        return reportRace(off + i, write, inst, t, RaceWith::Read);
    }
    if (!record)
      return true;
    const uint32_t mySync = warpSync[t.warp];
    ShadowDetail *cold = detail.data() + off;
    if (uniform) {
      // Every byte gets the same update.
      ShadowByte s = hot[0];
      bool first = false;
      if (write) {
        s.writeEpoch = ep;
        s.writeThread = me;
      } else if (s.readEpoch != ep) {
        s.readEpoch = ep;
        s.readThread = me;
        first = true;
      } else if ((s.readThread & kThreadMask) != me) {
        s.readThread |= kMultipleReadersBit;
      }
      for (uint32_t i = 0; i < size; ++i)
        hot[i] = s;
      if (write)
        for (uint32_t i = 0; i < size; ++i) {
          cold[i].writeLine = inst.line;
          cold[i].writeWarpSync = mySync;
        }
      else if (first)
        for (uint32_t i = 0; i < size; ++i) {
          cold[i].readLine = inst.line;
          cold[i].readWarpSync = mySync;
        }
      return true;
    }
    for (uint32_t i = 0; i < size; ++i) {
      ShadowByte &s = hot[i];
      if (write) {
        s.writeEpoch = ep;
        s.writeThread = me;
        cold[i].writeLine = inst.line;
        cold[i].writeWarpSync = mySync;
      } else if (s.readEpoch != ep) {
        s.readEpoch = ep;
        s.readThread = me;
        cold[i].readLine = inst.line;
        cold[i].readWarpSync = mySync;
      } else if ((s.readThread & kThreadMask) != me) {
        s.readThread |= kMultipleReadersBit;
      }
    }
    return true;
  }

  /// Checks a write into shared bytes [dst, dst + bytes) that lands later
  /// (a cp.async copy) as a store, and marks the bytes in flight until
  /// landCopies lands it: touching them before is a race.
  bool beginInflightWrite(const Inst &inst, const Thread &t, uint32_t dst,
                          uint32_t bytes) {
    if (!env.checkRaces)
      return true;
    if (!checkShared(dst, bytes, true, inst, t, /*record=*/false))
      return false;
    for (uint32_t b = 0; b < bytes; ++b)
      shadow[dst + b].writeThread |= kInflightBit;
    return true;
  }

  /// Lands the cp.async copies of `t` whose group is below `limit`. A
  /// copy lands as a plain (generic-proxy) write of the thread's warp: an
  /// asynchronous-proxy read of it (wgmma, a TMA store) needs a
  /// fence.proxy.async after the wait that landed it. False (after
  /// reporting at `inst`) when the asynchronous executor finds a race.
  bool landCopies(Thread &t, uint32_t limit, const Inst &inst) {
    size_t keep = 0;
    for (size_t i = 0; i < t.pending.size(); ++i) {
      PendingCopy &c = t.pending[i];
      if (c.group < limit) {
        std::memcpy(shared.data() + c.dst, c.data, c.bytes);
        if (async.active()) {
          std::string why = async.onAccess(c.dst, c.bytes, /*write=*/true,
                                           AsyncSite{c.line, t.linear, t.warp});
          if (!why.empty())
            return fault(ErrorCode::Race, inst, t,
                         "the cp.async copy issued at line " +
                             std::to_string(c.line) + " landing: " + why);
        }
        if (env.checkRaces) {
          for (uint32_t b = 0; b < c.bytes; ++b) {
            ShadowByte &s = shadow[c.dst + b];
            ShadowDetail &d = detail[c.dst + b];
            s.writeEpoch = epoch;
            s.writeThread = static_cast<uint16_t>(t.linear);
            d.writeLine = c.line;
            d.writeWarpSync = warpSync[t.warp];
          }
        }
      } else {
        t.pending[keep++] = c;
      }
    }
    copiesInFlight -= t.pending.size() - keep;
    t.pending.resize(keep);
    return true;
  }

  /// Checks a plain access to shared bytes [off, off + size) against the
  /// asynchronous executor: never to an mbarrier, and ordered with its TMA
  /// copies.
  bool checkAsyncOrder(uint32_t off, uint32_t size, bool write,
                       const Inst &inst, const Thread &t) {
    if (async.overlapsMbarrier(off, size))
      return fault(ErrorCode::Trap, inst, t,
                   std::string(write ? "a store to" : "a load of") +
                       " shared address " + hex(off) +
                       ", which holds an mbarrier (only mbarrier instructions "
                       "may access one)");
    std::string why = async.onAccess(off, size, write,
                                     AsyncSite{inst.line, t.linear, t.warp});
    if (!why.empty())
      return fault(ErrorCode::Race, inst, t, why);
    return true;
  }

  // Threads ----------------------------------------------------------------

  /// Ends thread `t` at `inst` (ret, exit), landing its copies in flight;
  /// false when landing them races.
  bool finishThread(Thread &t, const Inst &inst) {
    if (!landCopies(t, UINT32_MAX, inst))
      return false;
    t.state = State::Exited;
    t.exitLine = inst.line;
    return true;
  }

private:
  std::string where(const Thread &t) const {
    std::ostringstream os;
    os << "thread (" << t.x << "," << t.y << "," << t.z << ") of CTA ("
       << ctaid.x << "," << ctaid.y << "," << ctaid.z << ")";
    return os.str();
  }
  std::string threadName(uint32_t linear) const {
    return where(threads[linear]).substr(0, where(threads[linear]).find(" of"));
  }
  std::string at(uint32_t line) const {
    return env.sourceName + ":" + std::to_string(line);
  }

  __attribute__((noinline)) uint64_t special(Special s, const Thread &t) const {
    switch (s) {
    case Special::TidX:
      return t.x;
    case Special::TidY:
      return t.y;
    case Special::TidZ:
      return t.z;
    case Special::NtidX:
      return env.block.x;
    case Special::NtidY:
      return env.block.y;
    case Special::NtidZ:
      return env.block.z;
    case Special::CtaidX:
      return ctaid.x;
    case Special::CtaidY:
      return ctaid.y;
    case Special::CtaidZ:
      return ctaid.z;
    case Special::NctaidX:
      return env.grid.x;
    case Special::NctaidY:
      return env.grid.y;
    case Special::NctaidZ:
      return env.grid.z;
    case Special::LaneId:
      return t.lane;
    case Special::WarpId:
      return t.warp;
    case Special::NWarpId:
      return nwarps;
    case Special::SmId:
      return 0;
    case Special::NSmId:
      return 1;
    case Special::GridId:
      return 0;
    case Special::Clock:
    case Special::Clock64:
    case Special::GlobalTimer:
      return t.executed;
    case Special::LanemaskEq:
      return 1u << t.lane;
    case Special::LanemaskLt:
      return (1u << t.lane) - 1;
    case Special::LanemaskLe:
      return ((1ull << (t.lane + 1)) - 1) & 0xffffffffu;
    case Special::LanemaskGt:
      return (~((1ull << (t.lane + 1)) - 1)) & 0xffffffffu;
    case Special::LanemaskGe:
      return (~((1ull << t.lane) - 1)) & 0xffffffffu;
    case Special::DynamicSmemSize:
      return env.dynamicShared;
    case Special::TotalSmemSize:
      return sharedSize;
    }
    return 0;
  }

  /// The CTA of linear index `index`.
  Dim3 ctaOf(uint64_t index) const {
    Dim3 c;
    c.x = static_cast<uint32_t>(index % env.grid.x);
    c.y = static_cast<uint32_t>((index / env.grid.x) % env.grid.y);
    c.z = static_cast<uint32_t>(index / (uint64_t(env.grid.x) * env.grid.y));
    return c;
  }
  static std::string str(const Dim3 &d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," +
           std::to_string(d.z) + ")";
  }

  /// Records that this CTA stores to global bytes [addr, addr + size) of
  /// buffer `buf`; a byte another CTA stored to in this launch is a race.
  bool recordStore(const Inst &inst, const Thread &t, const Buffer &buf,
                   uint64_t addr, uint32_t size) {
    const size_t b = static_cast<size_t>(&buf - env.buffers.data());
    const uint32_t me = ownerId(ctaIndex);
    const uint64_t mask = (uint64_t(1) << kOwnerChunkBits) - 1;
    std::atomic<uint32_t> *chunk = nullptr;
    size_t chunkIndex = SIZE_MAX;
    for (uint32_t i = 0; i < size; ++i) {
      uint64_t off = addr + i - buf.begin;
      if ((off >> kOwnerChunkBits) != chunkIndex) {
        chunkIndex = static_cast<size_t>(off >> kOwnerChunkBits);
        chunk = env.ownerChunk(b, chunkIndex);
        if (!chunk)
          return fail(ErrorCode::Limit,
                      "the launch of kernel '" + k.info.name +
                          "' needs more than its memory budget of " +
                          std::to_string(env.memoryBudget) +
                          " bytes of simulator memory: the write-ownership "
                          "records of the global bytes it stores to take 4 "
                          "bytes per byte (" +
                          std::to_string(env.memoryUsed.load()) +
                          " bytes in use)");
      }
      std::atomic<uint32_t> &slot = chunk[off & mask];
      uint32_t owner = slot.load(std::memory_order_relaxed);
      if (owner == me)
        continue;
      if (owner == 0 &&
          slot.compare_exchange_strong(owner, me, std::memory_order_relaxed))
        continue;
      if (owner == me)
        continue;
      // Name the two CTAs in grid order, whichever stored first.
      uint64_t other = owner - 1;
      std::string first = str(ctaOf(std::min(other, ctaIndex)));
      std::string second = str(ctaOf(std::max(other, ctaIndex)));
      return fault(ErrorCode::Race, inst, t,
                   "global address " + hex(addr + i) + " (byte " +
                       std::to_string(off) + " of " +
                       (buf.name.empty() ? std::string("a buffer")
                                         : "buffer '" + buf.name + "'") +
                       ") is stored to by CTA " + first + " and by CTA " +
                       second + ", which run in no fixed order,");
    }
    return true;
  }

  /// Starts a new barrier epoch: accesses after it are ordered after
  /// those before. Epochs are 16-bit; when they wrap, every record is made
  /// stale (epoch 0 is never current).
  void advanceEpoch(unsigned by) {
    if (static_cast<unsigned>(epoch) + by <= 0xffff) {
      epoch = static_cast<uint16_t>(epoch + by);
      return;
    }
    for (ShadowByte &b : shadow)
      b.writeEpoch = b.readEpoch = 0;
    epoch = 1;
  }

  /// Whether an access of thread `other` of this warp, made at its warp's
  /// bar.warp.sync count `sync`, is ordered before the current one.
  bool orderedInWarp(const Thread &t, uint32_t other, uint32_t sync) const {
    return threads[other].warp == t.warp && sync < warpSync[t.warp];
  }

  enum class RaceWith { Inflight, Write, Read };
  /// Reports the race of an access to shared byte `b` (kept out of line).
  bool reportRace(uint32_t b, bool write, const Inst &inst, const Thread &t,
                  RaceWith with) {
    const ShadowByte &s = shadow[b];
    const ShadowDetail &d = detail[b];
    std::string what;
    switch (with) {
    case RaceWith::Inflight: {
      uint32_t line = 0, issuer = 0;
      for (const Thread &other : threads)
        for (const PendingCopy &c : other.pending)
          if (b >= c.dst && b < c.dst + c.bytes) {
            line = c.line;
            issuer = other.linear;
          }
      what = std::string(write ? "write to" : "read of") + " shared address " +
             hex(b) + " while a cp.async into it is in flight (issued at " +
             at(line) + " by " + threadName(issuer) +
             ", not yet retired by cp.async.wait_group)";
      break;
    }
    case RaceWith::Write:
      what = std::string(write ? "write" : "read") + " of shared address " +
             hex(b) + " conflicts with the write at " + at(d.writeLine) +
             " by " + threadName(s.writeThread) +
             " with no barrier between them";
      break;
    case RaceWith::Read:
      what =
          "write of shared address " + hex(b) + " conflicts with the read at " +
          at(d.readLine) + " by " + threadName(s.readThread & kThreadMask) +
          ((s.readThread & kMultipleReadersBit) ? " (and other threads)" : "") +
          " with no barrier between them";
      break;
    }
    return fault(ErrorCode::Race, inst, t, what);
  }

  /// Runs `t` until it waits, exits or faults.
  void runThread(Thread &t);
  /// Completes one warp collective of warp `warp` if every lane of its
  /// member mask waits at one. Returns true when it did.
  bool execWarpOp(uint32_t warp);
  bool tryBarriers();
  /// Releases the threads waiting at an mbarrier whose phase completed.
  /// Returns true when one was.
  bool retryMbarrierWaits();
  std::string describeDeadlock();
  /// Gives the asynchronous executor its hooks (once).
  void configureAsync();
};

} // namespace detail
} // namespace sim
} // namespace flashc

#endif // FLASHC_LIB_SIMULATOR_RUNNER_H
