//===- Interpreter.cpp - Executing decoded PTX ----------------------------===//
//
// Runs a grid of CTAs. Within a CTA every thread runs on its own until it
// reaches a warp-collective instruction (mma.sync, ldmatrix, shfl.sync,
// vote.sync, redux.sync, bar.warp.sync), a CTA barrier or its end; then the
// scheduler completes whatever rendezvous is complete: a collective once
// every lane of its member mask waits at one, a barrier once every thread
// of the CTA waits at it. This is one legal schedule under Volta's
// independent thread scheduling. When no thread can move, the CTA is
// deadlocked and the error says who waits where.
//
// Memory checking: global accesses must fall inside one buffer (mapped
// buffers sit apart, between unmapped guard gaps, in a simulated address
// space that is translated to host memory on each access); shared accesses
// inside the static plus dynamic size; vector and cp.async accesses must be
// aligned to their size. Race checking keeps, per byte of shared memory,
// the last writer and reader with the barrier epoch of the access: two
// accesses by different threads in one epoch, one a write, are a race
// (bar.warp.sync orders the lanes of one warp). A cp.async copy lands when
// the wait that retires its group executes; touching its destination before
// then is a race too. Write ownership keeps, per global byte stored to in a
// launch, the CTA that stored it (in chunks allocated on the first store
// into them, updated by compare-and-exchange since CTAs run on several host
// threads): a store by another CTA is a race.
//
// Independent CTAs run on several host threads, as many as the memory
// budget allows.
//
// What each instruction does is its description's executor (the registry
// Instructions.def, the descriptions under Instructions/); the dispatch
// switches here are generated from the registry, and the CTARunner
// (Runner.h) gives the executors the CTA's state and checked memory.
//
//===----------------------------------------------------------------------===//

#include "Instructions.h"
#include "Runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <new>
#include <sstream>
#include <system_error>
#include <thread>
#include <type_traits>

using namespace flashc;
using namespace flashc::sim;
using namespace flashc::sim::detail;

namespace {

/// Where mapBuffer places buffers: from 2^60 (above any user-space pointer
/// of x86-64 or AArch64) to the local window.
constexpr uint64_t kMappedBase = 1ull << 60;
constexpr uint64_t kMappedEnd = kLocalWindow;

/// Executes `Code` of description `D` in one thread: a warp collective
/// waits for its lanes.
template <typename D, Op Code, typename X>
FLASHC_SIM_INLINE Next execOf(const ThreadStep<X> &s) {
  if constexpr (isWarpCollective<D>) {
    s.t.state = State::AtWarpOp;
    return Next::Stop;
  } else {
    return D::template exec<Code>(s);
  }
}

/// Executes warp collective `Code` of description `D` for its warp.
template <typename D, Op Code, typename X>
bool execWarpOf(const WarpStep<X> &s) {
  if constexpr (isWarpCollective<D>)
    return D::template execWarp<Code>(s);
  else
    return s.x.fail(ErrorCode::Unsupported, "internal: not a warp operation");
}

template <typename D> constexpr bool alignedCollectiveOf() {
  if constexpr (isWarpCollective<D>)
    return D::alignedCollective;
  else
    return false;
}

template <typename D> constexpr unsigned maskOperandOf() {
  if constexpr (isWarpCollective<D>)
    return D::maskOperand;
  else
    return 0;
}

/// Per operation: whether it is an .aligned warp collective, else the
/// index of its member mask operand.
constexpr bool kAlignedCollective[] = {
#define FLASHC_SIM_OP(Name, Description) alignedCollectiveOf<Description>(),
#include "Instructions.def"
};
constexpr unsigned kMaskOperand[] = {
#define FLASHC_SIM_OP(Name, Description) maskOperandOf<Description>(),
#include "Instructions.def"
};

} // namespace

//===----------------------------------------------------------------------===//
// The scheduler
//===----------------------------------------------------------------------===//

bool CTARunner::run(uint64_t index) {
  ctaIndex = index;
  ctaid.x = static_cast<uint32_t>(index % env.grid.x);
  ctaid.y = static_cast<uint32_t>((index / env.grid.x) % env.grid.y);
  ctaid.z = static_cast<uint32_t>(index / (uint64_t(env.grid.x) * env.grid.y));
  error = Status();
  copiesInFlight = 0;
  // A fresh epoch: every record of earlier CTAs is stale.
  advanceEpoch(2);
  // Uninitialised shared memory reads as all-ones bytes (NaN as floats), so
  // that a kernel relying on zeroed shared memory shows it.
  std::fill(shared.begin(), shared.end(), 0xff);
  std::fill(warpSync.begin(), warpSync.end(), 0);
  sharedBanks.reset(nthreads, numSharedSites);
  std::fill(regs.begin(), regs.end(), 0);
  async.reset(nwarps, shared.data(), sharedSize);
  if (usesAsync)
    async.activateNow();
  std::fill(std::begin(barrierArrivals), std::end(barrierArrivals), 0);
  // Sized by the constructor; cleared, keeping their memory.
  for (std::vector<uint32_t> &history : setmaxnregHistory)
    history.clear();
  std::fill(setmaxnregExecuted.begin(), setmaxnregExecuted.end(), 0);
  for (std::vector<WgmmaInFlight> &flights : wgmmaInFlight)
    flights.clear();
  std::fill(wgmmaCommitted.begin(), wgmmaCommitted.end(), 0);
  std::fill(wgmmaHeld.begin(), wgmmaHeld.end(), 0);
  for (uint32_t i = 0; i < nthreads; ++i) {
    Thread &t = threads[i];
    t = Thread();
    t.linear = i;
    t.x = i % env.block.x;
    t.y = (i / env.block.x) % env.block.y;
    t.z = i / (env.block.x * env.block.y);
    t.lane = i % 32;
    t.warp = i / 32;
  }
  while (true) {
    bool progress = false;
    for (uint32_t w = 0; w < nwarps && !error; ++w) {
      uint32_t lo = w * 32, hi = std::min(nthreads, lo + 32);
      while (true) {
        bool ran = false;
        for (uint32_t i = lo; i < hi; ++i) {
          if (threads[i].state == State::Ready) {
            runThread(threads[i]);
            ran = true;
            if (error)
              break;
          }
        }
        if (error)
          break;
        progress |= ran;
        // Every lane of the warp has stopped: its shared-memory accesses
        // since it last met form the warp's requests.
        if (ran)
          sharedBanks.flush(w);
        if (!execWarpOp(w))
          break;
        progress = true;
      }
    }
    if (error)
      break;
    if (tryBarriers())
      continue;
    if (async.active() && retryMbarrierWaits())
      continue;
    if (error)
      break;
    bool allExited = std::all_of(threads.begin(), threads.end(), [](auto &t) {
      return t.state == State::Exited;
    });
    if (allExited) {
      // A named barrier still holding arrivals: a bar.arrive that no
      // bar.sync met, whose arrivals the next use of the barrier would
      // count.
      for (uint32_t id = 0; id < 16; ++id)
        if (barrierArrivals[id]) {
          std::ostringstream os;
          os << "deadlock in kernel '" << k.info.name << "', CTA (" << ctaid.x
             << "," << ctaid.y << "," << ctaid.z << "): the CTA exited with "
             << barrierArrivals[id] << " thread(s) arrived at named barrier "
             << id << " (of " << barrierArrivalCount[id]
             << ") by bar.arrive, which no bar.sync met";
          fail(ErrorCode::Deadlock, os.str());
          break;
        }
      break;
    }
    if (!progress) {
      // Nothing runs: the TMA copies in flight land now, as a last resort,
      // and may complete the phases that threads wait for.
      if (async.copiesInFlight() > 0) {
        std::string why;
        async.landAll(why);
        if (!why.empty()) {
          fail(ErrorCode::OutOfBounds, why);
          break;
        }
        if (retryMbarrierWaits())
          continue;
        if (error)
          break;
      }
      fail(ErrorCode::Deadlock, describeDeadlock());
      break;
    }
  }
  for (Thread &t : threads)
    instructions += t.executed;
  sharedBanks.finish();
  if (error) {
    if (env.checkRaces)
      for (ShadowByte &s : shadow)
        s.writeThread &= kThreadMask;
    env.report(index, std::move(error));
    return false;
  }
  return true;
}

std::string CTARunner::describeDeadlock() {
  std::ostringstream os;
  os << "deadlock in kernel '" << k.info.name << "', CTA (" << ctaid.x << ","
     << ctaid.y << "," << ctaid.z << "):";
  // Group the waiting threads by where they wait.
  std::map<std::pair<int, uint32_t>, std::vector<uint32_t>> groups;
  uint32_t exited = 0, firstExited = UINT32_MAX;
  for (const Thread &t : threads) {
    if (t.state == State::Exited) {
      ++exited;
      firstExited = std::min(firstExited, t.linear);
      continue;
    }
    groups[{static_cast<int>(t.state), k.code[t.pc].line}].push_back(t.linear);
  }
  bool first = true;
  for (auto &[key, members] : groups) {
    const Thread &t = threads[members[0]];
    const Inst &inst = k.code[t.pc];
    os << (first ? " " : "; ") << members.size() << " thread(s) wait at '"
       << k.opcodeNames[inst.opcodeIndex] << "' (" << at(key.second)
       << ", e.g. " << threadName(members[0]) << ")";
    if (t.state == State::AtMbarrier)
      os << " for the phase of parity " << t.mbarrierParity << " of "
         << async.describeMbarrier(t.mbarrier);
    first = false;
  }
  if (exited)
    os << "; " << exited << " thread(s) have exited (e.g. "
       << threadName(firstExited) << " at "
       << at(threads[firstExited].exitLine)
       << ") and can never reach the barrier";
  os << "; a barrier or warp-collective that some threads can never reach";
  return os.str();
}

bool CTARunner::tryBarriers() {
  // Threads wait at barriers by id; a barrier completes when its expected
  // number of threads (the whole CTA unless given) waits at it.
  // bar.arrive's arrivals count too.
  uint32_t waiting[16] = {0};
  uint32_t expected[16] = {0};
  // Who gave each barrier's count: a waiting thread, or (UINT32_MAX)
  // bar.arrive. Every thread of one use of a barrier must give the same
  // count (PTX leaves other counts undefined).
  uint32_t countedBy[16];
  bool any = false;
  for (uint32_t id = 0; id < 16; ++id)
    if (barrierArrivals[id]) {
      expected[id] = barrierArrivalCount[id];
      countedBy[id] = UINT32_MAX;
      any = true;
    }
  for (const Thread &t : threads) {
    if (t.state != State::AtBarrier)
      continue;
    any = true;
    uint32_t id = t.barrierId;
    uint32_t want = t.barrierCount ? t.barrierCount : nthreads;
    if (expected[id] && expected[id] != want)
      return fault(
          ErrorCode::Trap, k.code[t.pc], t,
          "named barrier " + std::to_string(id) + " is waited for with " +
              std::to_string(want) + " threads, but " +
              (countedBy[id] == UINT32_MAX
                   ? std::to_string(barrierArrivals[id]) +
                         " thread(s) arrived at it by bar.arrive with " +
                         std::to_string(expected[id])
                   : threadName(countedBy[id]) + " waits with " +
                         std::to_string(expected[id])) +
              " (every thread of a barrier's use gives the same count)");
    waiting[id]++;
    if (!expected[id])
      countedBy[id] = t.linear;
    expected[id] = want;
  }
  if (!any)
    return false;
  bool released = false;
  for (uint32_t id = 0; id < 16; ++id) {
    uint32_t arrived = std::min(barrierArrivals[id], expected[id]);
    if (!expected[id] || waiting[id] + arrived < expected[id])
      continue;
    barrierArrivals[id] -= arrived;
    expected[id] -= arrived;
    uint32_t count = 0;
    // The warps released, for the asynchronous executor's clocks (only
    // when it tracks the CTA).
    const bool clocks = async.active();
    barrierWarps.clear();
    for (Thread &t : threads) {
      if (t.state == State::AtBarrier && t.barrierId == id &&
          count < expected[id]) {
        t.state = State::Ready;
        t.pc++;
        ++count;
        if (clocks && (barrierWarps.empty() || barrierWarps.back() != t.warp))
          barrierWarps.push_back(t.warp);
      }
    }
    if (clocks)
      async.barrierComplete(id, barrierWarps);
    released = true;
  }
  if (released)
    advanceEpoch(1); // accesses after the barrier are ordered after those before
  return released;
}

bool CTARunner::retryMbarrierWaits() {
  bool released = false;
  for (Thread &t : threads) {
    if (t.state != State::AtMbarrier)
      continue;
    const Inst &inst = k.code[t.pc];
    bool complete = false;
    std::string why = async.mbarrierTryWaitParity(
        t.mbarrier, t.mbarrierParity, AsyncSite{inst.line, t.linear, t.warp},
        complete);
    if (!why.empty())
      return fault(ErrorCode::Trap, inst, t, why);
    if (!complete)
      continue;
    set(opnd(inst, 0), regsOf(t), 1); // the try_wait's predicate
    t.state = State::Ready;
    t.pc++;
    released = true;
  }
  return released;
}

void CTARunner::configureAsync() {
  AsyncExecutor::Hooks hooks;
  hooks.at = [this](uint32_t line) { return at(line); };
  hooks.thread = [this](uint32_t linear) { return threadName(linear); };
  hooks.readGlobal = [this](uint64_t address, uint32_t bytes,
                            void *out) -> std::string {
    const Buffer *buf = findGlobal(address, bytes);
    if (!buf)
      return "it reads " + std::to_string(bytes) + " bytes at global address " +
             hex(address) + " outside every registered buffer" +
             nearestBuffer(address);
    std::memcpy(out, buf->translate(address), bytes);
    return "";
  };
  hooks.writeGlobal = [this](uint64_t address, uint32_t bytes,
                             const void *in) -> std::string {
    const Buffer *buf = findGlobal(address, bytes);
    if (!buf)
      return "it writes " + std::to_string(bytes) +
             " bytes at global address " + hex(address) +
             " outside every registered buffer" + nearestBuffer(address);
    std::memcpy(buf->translate(address), in, bytes);
    return "";
  };
  hooks.landed = [this](uint32_t off, uint32_t bytes) {
    // The copy's bytes have no thread as their writer: the executor orders
    // them. (Records of earlier plain accesses would be stale.)
    if (!env.checkRaces)
      return;
    for (uint32_t b = off; b < off + bytes && b < shadow.size(); ++b)
      shadow[b] = ShadowByte();
  };
  async.configure(std::move(hooks), env.checkRaces);
}

bool CTARunner::execWarpOp(uint32_t w) {
  uint32_t lo = w * 32, hi = std::min(nthreads, lo + 32);
  uint32_t leader = UINT32_MAX;
  for (uint32_t i = lo; i < hi; ++i)
    if (threads[i].state == State::AtWarpOp) {
      leader = i;
      break;
    }
  if (leader == UINT32_MAX)
    return false;
  Thread &lt = threads[leader];
  const Inst &li = k.code[lt.pc];
  uint64_t *lr = regsOf(lt);
  uint32_t existing = hi - lo == 32 ? 0xffffffffu : ((1u << (hi - lo)) - 1);
  uint32_t mask;
  bool aligned = kAlignedCollective[static_cast<size_t>(li.op)];
  if (aligned) {
    mask = existing;
  } else {
    unsigned maskIndex = kMaskOperand[static_cast<size_t>(li.op)];
    mask = static_cast<uint32_t>(val(opnd(li, maskIndex), lt, lr));
  }
  if (!(mask & (1u << lt.lane))) {
    return fault(ErrorCode::Trap, li, lt,
                 "the member mask " + hex(mask) +
                     " of a warp-synchronous instruction excludes the "
                     "executing lane");
  }
  if (mask & ~existing)
    return fault(ErrorCode::Trap, li, lt,
                 "the member mask " + hex(mask) +
                     " names lanes that do not exist in this warp");
  // Every lane of the mask must wait at the same kind of operation.
  for (uint32_t l = 0; l < 32; ++l) {
    if (!(mask & (1u << l)))
      continue;
    Thread &t = threads[lo + l];
    if (t.state == State::Exited)
      return fault(ErrorCode::Deadlock, li, lt,
                   "lane " + std::to_string(l) +
                       " of the member mask has exited (at " + at(t.exitLine) +
                       ") and can never join this warp-collective");
    if (t.state != State::AtWarpOp)
      return false; // not yet (or deadlocked: decided by the scheduler)
    const Inst &ti = k.code[t.pc];
    if (ti.op != li.op)
      return fault(ErrorCode::Trap, li, lt,
                   "lanes of one mask wait at different warp-collectives ('" +
                       k.opcodeNames[ti.opcodeIndex] + "' at " + at(ti.line) +
                       ")");
    if (aligned && t.pc != lt.pc)
      return fault(ErrorCode::Trap, li, lt,
                   "an .aligned warp-collective reached at different "
                   "instructions by the lanes of a warp (lane " +
                       std::to_string(l) + " at " + at(ti.line) + ")");
    if (!aligned) {
      uint64_t *tr = regsOf(t);
      unsigned maskIndex = kMaskOperand[static_cast<size_t>(ti.op)];
      uint32_t m = static_cast<uint32_t>(val(opnd(ti, maskIndex), t, tr));
      if (m != mask)
        return fault(ErrorCode::Trap, li, lt,
                     "lanes of one warp-collective give different member "
                     "masks (" +
                         hex(mask) + " and " + hex(m) + ")");
    }
  }

  const WarpStep<CTARunner> step{*this, w, mask, &threads[lo], lt, li};
  bool done = false;
  switch (li.op) {
#define FLASHC_SIM_OP(Name, Description)                                       \
  case Op::Name:                                                               \
    done = execWarpOf<Description, Op::Name>(step);                            \
    break;
#include "Instructions.def"
  }
  if (!done)
    return false;
  for (uint32_t l = 0; l < 32; ++l) {
    if (!(mask & (1u << l)))
      continue;
    threads[lo + l].state = State::Ready;
    threads[lo + l].pc++;
  }
  return true;
}

void CTARunner::runThread(Thread &t) {
  uint64_t *R = regsOf(t);
  const Inst *code = k.code.data();
  const uint64_t limit = env.maxInstructions;
  while (true) {
    const Inst &I = code[t.pc];
    ++t.executed;
    if (limit && t.executed > limit) {
      fault(ErrorCode::Trap, I, t,
            "the thread exceeded " + std::to_string(limit) +
                " instructions (its budget; a runaway loop?)");
      return;
    }
    if (I.guard >= 0 && ((R[I.guard] & 1) == (I.guardNegated ? 1u : 0u))) {
      // A predicated-off access still takes its place in the warp's
      // request (SharedBanks.h).
      if (__builtin_expect(sharedSite[t.pc] >= 0, false))
        noteSharedRequest(I, t, 0, 0);
      t.pc++;
      continue;
    }
    if (__builtin_expect(t.wgmmaPending, false) && I.op != Op::WgmmaMmaAsync &&
        !checkWgmmaRegisters(I, t))
      return;
    const ThreadStep<CTARunner> step{*this, I, t, R,
                                     k.operands.data() + I.firstOp};
    Next next = Next::Advance;
    switch (I.op) {
#define FLASHC_SIM_OP(Name, Description)                                       \
  case Op::Name:                                                               \
    next = execOf<Description, Op::Name>(step);                                \
    break;
#include "Instructions.def"
    }
    if (next == Next::Advance)
      t.pc++;
    else if (next == Next::Stop)
      return;
  }
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

Device::Device() : nextMapped(kMappedBase + kGuardGapBytes) {}
Device::~Device() = default;

Status Device::insert(uint64_t begin, uint64_t bytes, void *host,
                      std::string name) {
  uint64_t end = begin + bytes; // checked by the callers
  auto it = buffers.lower_bound(begin);
  if ((it != buffers.end() && it->second.begin < end) ||
      (it != buffers.begin() && std::prev(it)->second.end > begin))
    return Status::make(ErrorCode::InvalidArgument,
                        "buffer '" + escapeText(name) +
                            "' overlaps a registered buffer");
  buffers[begin] =
      Buffer{begin, end, static_cast<uint8_t *>(host), std::move(name)};
  return Status::success();
}

Status Device::registerBuffer(void *data, uint64_t bytes, std::string name) {
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t begin = reinterpret_cast<uint64_t>(data), end;
  if (!data || bytes == 0)
    return Status::make(
        ErrorCode::InvalidArgument,
        "cannot register an empty buffer" +
            (name.empty() ? "" : " '" + escapeText(name) + "'"));
  if (__builtin_add_overflow(begin, bytes, &end) || end > kMappedBase)
    return Status::make(ErrorCode::InvalidArgument,
                        "buffer '" + escapeText(name) +
                            "' overflows the address space");
  return insert(begin, bytes, data, std::move(name));
}

Result<uint64_t> Device::mapBuffer(void *host, uint64_t bytes,
                                   std::string name) {
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t hostEnd;
  if (!host || bytes == 0)
    return Status::make(
        ErrorCode::InvalidArgument,
        "cannot map an empty buffer" +
            (name.empty() ? "" : " '" + escapeText(name) + "'"));
  if (__builtin_add_overflow(reinterpret_cast<uint64_t>(host), bytes, &hostEnd))
    return Status::make(ErrorCode::InvalidArgument,
                        "buffer '" + escapeText(name) +
                            "' overflows the address space");
  // nextMapped <= kMappedEnd, far below 2^64: the sums cannot overflow
  // once `bytes` fits below kMappedEnd. The address keeps the host
  // address's offset within 256 bytes (CUDA's allocations are 256-byte
  // aligned), so that a view starting inside an allocation is as aligned
  // here as it is there, and a misaligned access faults alike.
  uint64_t offset = reinterpret_cast<uint64_t>(host) % kMappedAlignment;
  if (offset > kMappedEnd - nextMapped)
    return Status::make(ErrorCode::Limit,
                        "no room for a buffer of " + std::to_string(bytes) +
                            " bytes in the simulated address space");
  uint64_t begin = nextMapped + offset;
  if (bytes > kMappedEnd - begin)
    return Status::make(ErrorCode::Limit,
                        "no room for a buffer of " + std::to_string(bytes) +
                            " bytes in the simulated address space");
  uint64_t end = begin + bytes;
  uint64_t next =
      ((end + kGuardGapBytes - 1) & ~(kGuardGapBytes - 1)) + kGuardGapBytes;
  if (Status e = insert(begin, bytes, host, std::move(name)))
    return e;
  nextMapped = std::min(next, kMappedEnd);
  return begin;
}

Status Device::unmapBuffer(uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!buffers.erase(address))
    return Status::make(ErrorCode::InvalidArgument,
                        "no buffer is registered at " + hex(address));
  return Status::success();
}

Status Device::unregisterBuffer(void *data) {
  return unmapBuffer(reinterpret_cast<uint64_t>(data));
}

void Device::clearBuffers() {
  std::lock_guard<std::mutex> lock(mutex);
  buffers.clear();
}

const Device::Buffer *Device::findBuffer(uint64_t addr, uint64_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = buffers.upper_bound(addr);
  if (it == buffers.begin())
    return nullptr;
  --it;
  uint64_t end;
  if (__builtin_add_overflow(addr, bytes, &end) || end > it->second.end)
    return nullptr;
  return &it->second;
}

Result<LaunchStats> Device::launch(const Module &module,
                                   std::string_view kernelName,
                                   const LaunchConfig &config,
                                   const std::vector<KernelArg> &args) {
  // Messages quote the caller's names and the PTX text: escape them.
  auto escaped = [](const Status &e) {
    return Status::make(e.code(), escapeText(e.message()));
  };
  const Program &prog = module.getProgram();
  const KernelProgram *kernel = nullptr;
  for (const KernelProgram &k : prog.kernels)
    if (k.info.name == kernelName)
      kernel = &k;
  if (!kernel) {
    std::string known;
    for (const KernelProgram &k : prog.kernels)
      known += (known.empty() ? "" : ", ") + k.info.name;
    return escaped(Status::make(ErrorCode::InvalidArgument,
                                "no kernel '" + std::string(kernelName) +
                                    "' in " + prog.sourceName +
                                    " (kernels: " + known + ")"));
  }
  const KernelInfo &info = kernel->info;
  if (args.size() != info.params.size())
    return Status::make(ErrorCode::InvalidArgument,
                        "kernel '" + info.name + "' takes " +
                            std::to_string(info.params.size()) +
                            " parameters, " + std::to_string(args.size()) +
                            " given");
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].bytes.size() != info.params[i].bytes)
      return escaped(Status::make(
          ErrorCode::InvalidArgument,
          "parameter " + std::to_string(i) + " ('" + info.params[i].name +
              "') of '" + info.name + "' has " +
              std::to_string(info.params[i].bytes) + " bytes, the argument " +
              std::to_string(args[i].bytes.size())));
  const Dim3 &g = config.grid, &b = config.block;
  auto str = [](const Dim3 &d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," +
           std::to_string(d.z) + ")";
  };
  if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z)
    return Status::make(ErrorCode::InvalidArgument, "empty grid or block");
  if (b.count() > kMaxBlockThreads)
    return Status::make(ErrorCode::InvalidArgument,
                        "a block of " + std::to_string(b.count()) +
                            " threads exceeds " +
                            std::to_string(kMaxBlockThreads));
  if (b.x > kMaxBlockThreads || b.y > kMaxBlockThreads || b.z > kMaxBlockZ)
    return Status::make(ErrorCode::InvalidArgument,
                        "block " + str(b) +
                            " exceeds CUDA's limits: x and y up to " +
                            std::to_string(kMaxBlockThreads) + ", z up to " +
                            std::to_string(kMaxBlockZ));
  if (g.x > kMaxGridX || g.y > kMaxGridYZ || g.z > kMaxGridYZ)
    return Status::make(ErrorCode::InvalidArgument,
                        "grid " + str(g) + " exceeds CUDA's limits: x up to " +
                            std::to_string(kMaxGridX) + ", y and z up to " +
                            std::to_string(kMaxGridYZ));
  auto checkBound = [&](const Dim3 &bound, const char *what) -> Status {
    if (bound.x && (b.x > bound.x || b.y > bound.y || b.z > bound.z))
      return Status::make(ErrorCode::InvalidArgument,
                          "block " + str(b) + " exceeds the kernel's " + what +
                              " " + str(bound));
    return Status::success();
  };
  if (Status e = checkBound(info.maxBlock, ".maxntid"))
    return e;
  if (info.requiredBlock.x &&
      (b.x != info.requiredBlock.x || b.y != info.requiredBlock.y ||
       b.z != info.requiredBlock.z))
    return Status::make(ErrorCode::InvalidArgument,
                        "the block does not match the "
                        "kernel's .reqntid");
  uint64_t sharedTotal =
      uint64_t(kernel->dynamicSharedOffset) + config.dynamicSharedBytes;
  if (sharedTotal > 256 * 1024)
    return Status::make(ErrorCode::InvalidArgument,
                        "the kernel needs " + std::to_string(sharedTotal) +
                            " bytes of shared memory, more than any GPU has");

  try {
    LaunchEnv env(*kernel);
    env.sourceName = prog.sourceName;
    env.grid = g;
    env.block = b;
    env.dynamicShared = config.dynamicSharedBytes;
    env.checkRaces = config.checkRaces;
    env.checkGlobalWrites = config.checkGlobalWrites;
    env.programmatic = config.programmatic;
    env.maxInstructions = config.maxInstructionsPerThread;
    env.memoryBudget = config.memoryBudgetBytes;
    env.params.assign(kernel->paramBytes, 0);
    for (size_t i = 0; i < args.size(); ++i)
      std::memcpy(env.params.data() + info.params[i].offset,
                  args[i].bytes.data(), args[i].bytes.size());
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto &[begin, buf] : buffers)
        env.buffers.push_back(buf);
    }

    // The memory of the launch: its parameters and write-ownership tables,
    // then per CTA in flight its registers, local memory, shared memory
    // with the race checker's records, threads and cp.async copies in
    // flight. Every factor is bounded (threads by 1024, registers by
    // kMaxRegisters, local and shared bytes by kMaxVariableBytes), so
    // none of the sums overflows.
    uint64_t fixed = env.params.size();
    if (env.checkGlobalWrites) {
      env.owners.resize(env.buffers.size());
      for (size_t i = 0; i < env.buffers.size(); ++i) {
        uint64_t bytes = env.buffers[i].end - env.buffers[i].begin;
        uint64_t chunks =
            (bytes >> kOwnerChunkBits) +
            ((bytes & ((uint64_t(1) << kOwnerChunkBits) - 1)) != 0);
        fixed += chunks * sizeof(void *);
      }
    }
    const uint64_t threads = b.count();
    const uint64_t sharedSize =
        std::max<uint64_t>(sharedTotal, info.staticSharedBytes);
    const uint64_t shadowPerByte =
        env.checkRaces ? sizeof(ShadowByte) + sizeof(ShadowDetail) : 0;
    const uint64_t sharedSites = static_cast<uint64_t>(std::count_if(
        kernel->code.begin(), kernel->code.end(), CTARunner::isSharedSite));
    const uint64_t perCTA =
        threads *
            (std::max(1u, kernel->numRegs) * uint64_t(8) + kernel->localBytes +
             sizeof(Thread) +
             (sharedSites ? SharedBankCounter::kLogLimit * sizeof(uint64_t)
                          : 0)) +
        sharedSize * (1 + shadowPerByte) +
        kMaxCopiesInFlight * sizeof(PendingCopy) + sizeof(CTARunner);
    if (fixed > env.memoryBudget || perCTA > env.memoryBudget - fixed)
      return escaped(Status::make(
          ErrorCode::Limit,
          "the launch of kernel '" + info.name + "' needs " +
              std::to_string(fixed + perCTA) +
              " bytes of simulator memory for one CTA (" +
              std::to_string(threads) + " threads x " +
              std::to_string(kernel->numRegs) + " registers, " +
              std::to_string(kernel->localBytes) +
              " bytes of local memory per thread, " +
              std::to_string(sharedSize) +
              " bytes of shared memory and their checking records), over "
              "its budget of " +
              std::to_string(env.memoryBudget) + " bytes"));
    if (env.checkGlobalWrites)
      for (size_t i = 0; i < env.buffers.size(); ++i) {
        uint64_t bytes = env.buffers[i].end - env.buffers[i].begin;
        OwnerTable &table = env.owners[i];
        table.numChunks = static_cast<size_t>(
            (bytes >> kOwnerChunkBits) +
            ((bytes & ((uint64_t(1) << kOwnerChunkBits) - 1)) != 0));
        table.chunks.reset(
            new std::atomic<std::atomic<uint32_t> *>[table.numChunks]());
      }

    uint64_t total = g.count();
    unsigned workers = config.workers;
    if (!workers)
      workers = std::max(1u, std::thread::hardware_concurrency());
    workers = static_cast<unsigned>(std::min<uint64_t>(
        {workers, total, (env.memoryBudget - fixed) / perCTA}));
    env.memoryUsed = fixed + workers * perCTA;
    auto start = std::chrono::steady_clock::now();
    auto work = [&env, total]() {
      uint64_t index = 0;
      try {
        CTARunner runner(env);
        while (!env.stop) {
          index = env.nextCTA.fetch_add(1);
          if (index >= total)
            break;
          if (!runner.run(index))
            break;
        }
        env.instructions += runner.instructions;
        env.ldmatrixMatrices += runner.ldmatrixMatrices;
        env.ldmatrixExtraWavefronts += runner.ldmatrixExtraWavefronts;
        env.sharedRequests += runner.sharedBanks.requests;
        env.sharedExtraWavefronts += runner.sharedBanks.extraWavefronts;
        env.wgmmaInstructions += runner.wgmmaInstructions;
        env.tensorLoads += runner.tensorLoads;
        env.tensorStores += runner.tensorStores;
        env.setmaxnregInstructions += runner.setmaxnregInstructions;
        env.barrierArrivals += runner.barrierArriveInstructions;
      } catch (const std::bad_alloc &) {
        env.report(index, Status::make(ErrorCode::Limit,
                                       "the host ran out of memory simulating "
                                       "kernel '" +
                                           env.kernel.info.name + "'"));
      }
    };
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < workers; ++i) {
      try {
        pool.emplace_back(work);
      } catch (const std::system_error &) {
        break; // run on the workers there are
      }
    }
    work();
    for (std::thread &th : pool)
      th.join();
    auto end = std::chrono::steady_clock::now();
    if (env.error)
      return escaped(env.error);
    LaunchStats stats;
    stats.threadInstructions = env.instructions;
    stats.ldmatrixMatrices = env.ldmatrixMatrices;
    stats.ldmatrixExtraWavefronts = env.ldmatrixExtraWavefronts;
    stats.sharedRequests = env.sharedRequests;
    stats.sharedExtraWavefronts = env.sharedExtraWavefronts;
    stats.wgmmaInstructions = env.wgmmaInstructions;
    stats.tensorLoads = env.tensorLoads;
    stats.tensorStores = env.tensorStores;
    stats.setmaxnregInstructions = env.setmaxnregInstructions;
    stats.barrierArrivals = env.barrierArrivals;
    stats.seconds = std::chrono::duration<double>(end - start).count();
    return stats;
  } catch (const std::bad_alloc &) {
    return escaped(Status::make(
        ErrorCode::Limit,
        "the host ran out of memory launching kernel '" + info.name + "'"));
  }
}
