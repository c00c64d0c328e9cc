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
//===----------------------------------------------------------------------===//

#include "Numerics.h"
#include "Program.h"

#include <algorithm>
#include <atomic>
#include <cfenv>
#include <chrono>
#include <climits>
#include <cmath>
#include <memory>
#include <new>
#include <sstream>
#include <system_error>
#include <thread>

using namespace flashc;
using namespace flashc::sim;
using namespace flashc::sim::detail;

namespace {

/// Generic addresses of the shared and local windows: far above any user
/// space pointer, so that they never collide with global (host) memory.
constexpr uint64_t kSharedWindow = 0xfe00000000000000ull;
constexpr uint64_t kLocalWindow = 0xfd00000000000000ull;
constexpr uint64_t kWindowSize = 1ull << 40;
/// Where mapBuffer places buffers: from 2^60 (above any user-space pointer
/// of x86-64 or AArch64) to the local window.
constexpr uint64_t kMappedBase = 1ull << 60;
constexpr uint64_t kMappedEnd = kLocalWindow;
/// Write-ownership records come in chunks of this many bytes' worth.
constexpr unsigned kOwnerChunkBits = 16;
/// cp.async copies one CTA may have in flight (issued, not yet landed by a
/// wait): a bound on the memory they hold.
constexpr uint64_t kMaxCopiesInFlight = 1u << 16;

enum class State : uint8_t { Ready, AtWarpOp, AtBarrier, Exited };

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
  uint32_t groupsCommitted = 0;
  std::vector<PendingCopy> pending;
};

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
  std::vector<Buffer> buffers; // sorted by begin
  std::vector<OwnerTable> owners; // by buffer, when checking global writes
  bool checkRaces = true;
  bool checkGlobalWrites = true;
  uint64_t maxInstructions = 0;
  /// The memory budget and what the launch holds of it.
  uint64_t memoryBudget = 0;
  std::atomic<uint64_t> memoryUsed{0};
  std::atomic<uint64_t> nextCTA{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> instructions{0};
  std::atomic<uint64_t> ldmatrixMatrices{0}, ldmatrixExtraWavefronts{0};
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

template <typename T> inline T as(uint64_t v) {
  T r;
  std::memcpy(&r, &v, sizeof(T));
  return r;
}
template <typename T> inline uint64_t bits(T v) {
  uint64_t r = 0;
  std::memcpy(&r, &v, sizeof(T));
  return r;
}

inline uint64_t maskTo(Ty t, uint64_t v) {
  switch (sizeOf(t)) {
  case 1:
    return v & 0xffu;
  case 2:
    return v & 0xffffu;
  case 4:
    return v & 0xffffffffu;
  default:
    return v;
  }
}

/// The value of an integer of type `t` held in `v`, sign- or zero-extended.
inline int64_t sext(Ty t, uint64_t v) {
  switch (t) {
  case Ty::S8:
    return static_cast<int8_t>(v);
  case Ty::S16:
    return static_cast<int16_t>(v);
  case Ty::S32:
    return static_cast<int32_t>(v);
  case Ty::S64:
    return static_cast<int64_t>(v);
  default:
    return static_cast<int64_t>(maskTo(t, v));
  }
}

/// Rounds a double to f32 with round-to-odd: a second rounding to a
/// narrower format (f16, bf16) then equals one correct rounding.
inline float toFloatOdd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) != d && std::isfinite(d)) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d))
      f = std::nextafter(f, 0.0f);
    f = bitsFloat(floatBits(f) | 1u);
  }
  return f;
}

/// Rounds `d` to f32 with a PTX rounding mode.
inline float roundToFloat(double d, Round r) {
  switch (r) {
  case Round::RZ:
  case Round::RM:
  case Round::RP: {
    float f = static_cast<float>(d);
    double back = f;
    if (back == d || !std::isfinite(d))
      return f;
    bool up = back < d;
    // f is the nearest; step to the directed neighbour when needed.
    if (r == Round::RZ) {
      if (std::fabs(back) > std::fabs(d))
        f = std::nextafter(f, 0.0f);
    } else if (r == Round::RM) {
      if (!up)
        f = std::nextafter(f, -INFINITY);
    } else {
      if (up)
        f = std::nextafter(f, INFINITY);
    }
    return f;
  }
  default:
    return static_cast<float>(d);
  }
}

/// A half value (f16 or bf16 by `bf`) from 16 bits, and back.
inline float halfValue(uint16_t h, bool bf) {
  return bf ? flashc::bfloat16ToFloat(h) : flashc::halfToFloat(h);
}
inline uint16_t toHalf(float f, bool bf) {
  return bf ? flashc::floatToBFloat16(f) : flashc::floatToHalf(f);
}
inline uint16_t roundHalf(double d, bool bf) { return toHalf(toFloatOdd(d), bf); }

/// D = C + A B for mma.sync, in double: each element summed in k order (the
/// loop order lets the compiler vectorise over columns).
inline void mmaAccumulate(const double (&A)[16][16], const double (&B)[16][8],
                   double (&C)[16][8], uint32_t kDim) {
  for (uint32_t row = 0; row < 16; ++row)
    for (uint32_t kk = 0; kk < kDim; ++kk) {
      double a = A[row][kk];
      for (uint32_t col = 0; col < 8; ++col)
        C[row][col] += a * B[kk][col];
    }
}

/// Applies a scalar float operation to one or two packed halves.
template <typename F>
uint64_t halfOp(Ty t, uint64_t a, uint64_t b, uint64_t c, F f) {
  bool bf = t == Ty::BF16 || t == Ty::BF16x2;
  int lanes = (t == Ty::F16x2 || t == Ty::BF16x2) ? 2 : 1;
  uint64_t out = 0;
  for (int i = 0; i < lanes; ++i) {
    double x = halfValue(static_cast<uint16_t>(a >> (16 * i)), bf);
    double y = halfValue(static_cast<uint16_t>(b >> (16 * i)), bf);
    double z = halfValue(static_cast<uint16_t>(c >> (16 * i)), bf);
    uint16_t h = f(x, y, z, bf);
    out |= static_cast<uint64_t>(h) << (16 * i);
  }
  return out;
}

double roundIntegral(double d, Round r) {
  switch (r) {
  case Round::RNI:
    return std::nearbyint(d); // default environment: to nearest even
  case Round::RZI:
    return std::trunc(d);
  case Round::RMI:
    return std::floor(d);
  case Round::RPI:
    return std::ceil(d);
  default:
    return d;
  }
}

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

/// Executes the CTAs handed to one worker.
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
  }

  /// Runs one CTA. Returns false (after reporting) on an error.
  bool run(uint64_t index);
  uint64_t instructions = 0;
  /// 8 x 8 matrices ldmatrix read, and the shared-memory wavefronts beyond
  /// one per matrix that their rows' bank conflicts cost.
  uint64_t ldmatrixMatrices = 0, ldmatrixExtraWavefronts = 0;

private:
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
  Dim3 ctaid;
  uint64_t ctaIndex = 0;
  Status error;
  size_t lastBuffer = 0;

  uint64_t *regsOf(const Thread &t) {
    return regs.data() + static_cast<size_t>(t.linear) * k.numRegs;
  }
  const Operand &opnd(const Inst &inst, unsigned i) const {
    return k.operands[inst.firstOp + i];
  }

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
  bool fail(ErrorCode code, const std::string &msg) {
    if (!error)
      error = Status::make(code, msg);
    return false;
  }
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

  __attribute__((noinline)) uint64_t special(Special s,
                                             const Thread &t) const {
    switch (s) {
    case Special::TidX: return t.x;
    case Special::TidY: return t.y;
    case Special::TidZ: return t.z;
    case Special::NtidX: return env.block.x;
    case Special::NtidY: return env.block.y;
    case Special::NtidZ: return env.block.z;
    case Special::CtaidX: return ctaid.x;
    case Special::CtaidY: return ctaid.y;
    case Special::CtaidZ: return ctaid.z;
    case Special::NctaidX: return env.grid.x;
    case Special::NctaidY: return env.grid.y;
    case Special::NctaidZ: return env.grid.z;
    case Special::LaneId: return t.lane;
    case Special::WarpId: return t.warp;
    case Special::NWarpId: return nwarps;
    case Special::SmId: return 0;
    case Special::NSmId: return 1;
    case Special::GridId: return 0;
    case Special::Clock:
    case Special::Clock64:
    case Special::GlobalTimer: return t.executed;
    case Special::LanemaskEq: return 1u << t.lane;
    case Special::LanemaskLt: return (1u << t.lane) - 1;
    case Special::LanemaskLe: return ((1ull << (t.lane + 1)) - 1) & 0xffffffffu;
    case Special::LanemaskGt: return (~((1ull << (t.lane + 1)) - 1)) & 0xffffffffu;
    case Special::LanemaskGe: return (~((1ull << t.lane) - 1)) & 0xffffffffu;
    case Special::DynamicSmemSize: return env.dynamicShared;
    case Special::TotalSmemSize: return sharedSize;
    }
    return 0;
  }

  __attribute__((always_inline)) uint64_t val(const Operand &o,
                                              const Thread &t,
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
  inline void set(const Operand &o, uint64_t *r, uint64_t v) {
    if (o.kind == OperandKind::Reg)
      r[o.reg] = v;
  }

  // Memory -----------------------------------------------------------------

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
             " by " + threadName(s.writeThread) + " with no barrier between them";
      break;
    case RaceWith::Read:
      what = "write of shared address " + hex(b) +
             " conflicts with the read at " + at(d.readLine) + " by " +
             threadName(s.readThread & kThreadMask) +
             ((s.readThread & kMultipleReadersBit) ? " (and other threads)"
                                                   : "") +
             " with no barrier between them";
      break;
    }
    return fault(ErrorCode::Race, inst, t, what);
  }

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
      } else {
        space = Space::Global;
      }
    }
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

  /// Lands the cp.async copies of `t` whose group is below `limit`.
  void landCopies(Thread &t, uint32_t limit, uint32_t line) {
    (void)line;
    size_t keep = 0;
    for (size_t i = 0; i < t.pending.size(); ++i) {
      PendingCopy &c = t.pending[i];
      if (c.group < limit) {
        std::memcpy(shared.data() + c.dst, c.data, c.bytes);
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
  }

  bool execCpAsync(const Inst &inst, Thread &t, uint64_t *r) {
    const Operand &dstOp = opnd(inst, 0), &srcOp = opnd(inst, 1);
    uint64_t dst = (dstOp.reg >= 0 ? r[dstOp.reg] : 0) + dstOp.imm;
    uint64_t src = (srcOp.reg >= 0 ? r[srcOp.reg] : 0) + srcOp.imm;
    uint32_t size = inst.target;
    uint32_t srcSize = size;
    if (inst.flags & kSrcSize) {
      srcSize = static_cast<uint32_t>(val(opnd(inst, 2), t, r));
      if (srcSize > size)
        return fault(ErrorCode::OutOfBounds, inst, t,
                     "cp.async src-size " + std::to_string(srcSize) +
                         " exceeds cp-size " + std::to_string(size));
    } else if (inst.flags & kIgnoreSrc) {
      if (val(opnd(inst, 2), t, r) & 1)
        srcSize = 0;
    }
    if (dst & (size - 1))
      return fault(ErrorCode::Misaligned, inst, t,
                   "cp.async destination " + hex(dst) + " is not " +
                       std::to_string(size) + "-byte aligned");
    if (src & (size - 1))
      return fault(ErrorCode::Misaligned, inst, t,
                   "cp.async source " + hex(src) + " is not " +
                       std::to_string(size) + "-byte aligned");
    if (dst > sharedSize || size > sharedSize - dst)
      return fault(ErrorCode::OutOfBounds, inst, t,
                   "cp.async of " + std::to_string(size) +
                       " bytes to shared address " + hex(dst) + " beyond the " +
                       std::to_string(sharedSize) + " bytes of shared memory");
    if (copiesInFlight >= kMaxCopiesInFlight)
      return fault(ErrorCode::Trap, inst, t,
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
      const Buffer *buf = findGlobal(src, srcSize);
      if (!buf)
        return fault(ErrorCode::OutOfBounds, inst, t,
                     "cp.async reads " + std::to_string(srcSize) +
                         " bytes at global address " + hex(src) +
                         " outside every registered buffer" +
                         nearestBuffer(src));
      std::memcpy(copy.data, buf->translate(src), srcSize);
    }
    // The destination is written: check it like a store, then mark it in
    // flight until the copy lands.
    if (env.checkRaces) {
      if (!checkShared(copy.dst, size, true, inst, t, /*record=*/false))
        return false;
      for (uint32_t b = 0; b < size; ++b)
        shadow[copy.dst + b].writeThread |= kInflightBit;
    }
    t.pending.push_back(copy);
    ++copiesInFlight;
    return true;
  }

  // Execution --------------------------------------------------------------

  void runThread(Thread &t);
  bool execWarpOp(uint32_t warp);
  bool tryBarriers();
  bool finishThread(Thread &t, uint32_t line) {
    landCopies(t, UINT32_MAX, line);
    t.state = State::Exited;
    t.exitLine = line;
    return true;
  }
  std::string describeDeadlock();
};

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
  std::fill(regs.begin(), regs.end(), 0);
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
        if (!execWarpOp(w))
          break;
        progress = true;
      }
    }
    if (error)
      break;
    if (tryBarriers())
      continue;
    bool allExited = std::all_of(threads.begin(), threads.end(), [](auto &t) {
      return t.state == State::Exited;
    });
    if (allExited)
      break;
    if (!progress) {
      fail(ErrorCode::Deadlock, describeDeadlock());
      break;
    }
  }
  for (Thread &t : threads)
    instructions += t.executed;
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
    const Inst &inst = k.code[threads[members[0]].pc];
    os << (first ? " " : "; ") << members.size() << " thread(s) wait at '"
       << k.opcodeNames[inst.opcodeIndex] << "' (" << at(key.second)
       << ", e.g. " << threadName(members[0]) << ")";
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
  uint32_t waiting[16] = {0};
  uint32_t expected[16] = {0};
  bool any = false;
  for (const Thread &t : threads) {
    if (t.state != State::AtBarrier)
      continue;
    any = true;
    waiting[t.barrierId]++;
    expected[t.barrierId] = t.barrierCount ? t.barrierCount : nthreads;
  }
  if (!any)
    return false;
  bool released = false;
  for (uint32_t id = 0; id < 16; ++id) {
    if (!waiting[id] || waiting[id] < expected[id])
      continue;
    uint32_t count = 0;
    for (Thread &t : threads) {
      if (t.state == State::AtBarrier && t.barrierId == id &&
          count < expected[id]) {
        t.state = State::Ready;
        t.pc++;
        ++count;
      }
    }
    released = true;
  }
  if (released)
    advanceEpoch(1); // accesses after the barrier are ordered after those before
  return released;
}

/// Completes one warp-collective operation of warp `w` if every lane of its
/// member mask waits at one. Returns true when it did.
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
  bool aligned = li.op == Op::Mma || li.op == Op::Ldmatrix;
  if (aligned) {
    mask = existing;
  } else {
    unsigned maskIndex = li.op == Op::Shfl ? 5 : li.op == Op::BarWarpSync ? 0 : 2;
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
      unsigned maskIndex =
          ti.op == Op::Shfl ? 5 : ti.op == Op::BarWarpSync ? 0 : 2;
      uint32_t m = static_cast<uint32_t>(val(opnd(ti, maskIndex), t, tr));
      if (m != mask)
        return fault(ErrorCode::Trap, li, lt,
                     "lanes of one warp-collective give different member "
                     "masks (" +
                         hex(mask) + " and " + hex(m) + ")");
    }
  }

  auto lane = [&](uint32_t l) -> Thread & { return threads[lo + l]; };
  auto laneInst = [&](uint32_t l) -> const Inst & { return k.code[lane(l).pc]; };

  switch (li.op) {
  case Op::Shfl: {
    uint32_t values[32], out[32];
    bool pred[32];
    for (uint32_t l = 0; l < 32; ++l)
      if (mask & (1u << l))
        values[l] = static_cast<uint32_t>(
            val(opnd(laneInst(l), 2), lane(l), regsOf(lane(l))));
    for (uint32_t l = 0; l < 32; ++l) {
      if (!(mask & (1u << l)))
        continue;
      const Inst &ti = laneInst(l);
      uint64_t *tr = regsOf(lane(l));
      uint32_t b = static_cast<uint32_t>(val(opnd(ti, 3), lane(l), tr)) & 31;
      uint32_t c = static_cast<uint32_t>(val(opnd(ti, 4), lane(l), tr));
      uint32_t cval = c & 31, seg = (c >> 8) & 31;
      int32_t maxLane = static_cast<int32_t>((l & seg) | (cval & ~seg));
      int32_t minLane = static_cast<int32_t>(l & seg);
      int32_t j = static_cast<int32_t>(l);
      bool p = false;
      switch (static_cast<ShflMode>(ti.mode)) {
      case ShflMode::Up:
        j = static_cast<int32_t>(l) - static_cast<int32_t>(b);
        p = j >= maxLane;
        break;
      case ShflMode::Down:
        j = static_cast<int32_t>(l + b);
        p = j <= maxLane;
        break;
      case ShflMode::Bfly:
        j = static_cast<int32_t>(l ^ b);
        p = j <= maxLane;
        break;
      case ShflMode::Idx:
        j = minLane | static_cast<int32_t>(b & ~seg);
        p = j <= maxLane;
        break;
      }
      if (!p)
        j = static_cast<int32_t>(l);
      if (!(mask & (1u << j)))
        return fault(ErrorCode::Trap, ti, lane(l),
                     "shfl.sync reads lane " + std::to_string(j) +
                         ", outside the member mask " + hex(mask));
      out[l] = values[j];
      pred[l] = p;
    }
    for (uint32_t l = 0; l < 32; ++l) {
      if (!(mask & (1u << l)))
        continue;
      const Inst &ti = laneInst(l);
      uint64_t *tr = regsOf(lane(l));
      set(opnd(ti, 0), tr, out[l]);
      set(opnd(ti, 1), tr, pred[l] ? 1 : 0);
    }
    break;
  }
  case Op::Vote: {
    uint32_t ballot = 0;
    for (uint32_t l = 0; l < 32; ++l)
      if ((mask & (1u << l)) &&
          (val(opnd(laneInst(l), 1), lane(l), regsOf(lane(l))) & 1))
        ballot |= 1u << l;
    for (uint32_t l = 0; l < 32; ++l) {
      if (!(mask & (1u << l)))
        continue;
      const Inst &ti = laneInst(l);
      uint64_t r = 0;
      switch (static_cast<VoteMode>(ti.mode)) {
      case VoteMode::Ballot: r = ballot; break;
      case VoteMode::All: r = ballot == mask; break;
      case VoteMode::Any: r = ballot != 0; break;
      case VoteMode::Uni: r = ballot == 0 || ballot == mask; break;
      }
      set(opnd(ti, 0), regsOf(lane(l)), r);
    }
    break;
  }
  case Op::Redux: {
    bool isSigned = li.type == Ty::S32;
    int64_t acc = 0;
    bool firstValue = true;
    for (uint32_t l = 0; l < 32; ++l) {
      if (!(mask & (1u << l)))
        continue;
      uint32_t v32 = static_cast<uint32_t>(
          val(opnd(laneInst(l), 1), lane(l), regsOf(lane(l))));
      int64_t v = isSigned ? static_cast<int64_t>(static_cast<int32_t>(v32))
                           : static_cast<int64_t>(v32);
      if (firstValue) {
        acc = v;
        firstValue = false;
        continue;
      }
      switch (static_cast<AtomOp>(li.mode)) {
      case AtomOp::Add: acc += v; break;
      case AtomOp::Min: acc = std::min(acc, v); break;
      case AtomOp::Max: acc = std::max(acc, v); break;
      case AtomOp::And: acc &= v; break;
      case AtomOp::Or: acc |= v; break;
      case AtomOp::Xor: acc ^= v; break;
      default: break;
      }
    }
    for (uint32_t l = 0; l < 32; ++l)
      if (mask & (1u << l))
        set(opnd(laneInst(l), 0), regsOf(lane(l)),
            static_cast<uint32_t>(acc));
    break;
  }
  case Op::BarWarpSync:
    warpSync[w]++;
    break;
  case Op::Ldmatrix: {
    uint32_t num = li.vec;
    bool trans = li.flags & kTrans;
    uint64_t rowAddr[32];
    // Lanes 8i..8i+7 give the rows of matrix i.
    for (uint32_t l = 0; l < 8 * num; ++l) {
      if (!(mask & (1u << l)))
        return fault(ErrorCode::Trap, li, lt,
                     "ldmatrix needs lane " + std::to_string(l) +
                         " for a row address");
      const Operand &a = opnd(li, num);
      uint64_t *tr = regsOf(lane(l));
      uint64_t addr = (a.reg >= 0 ? tr[a.reg] : 0) + a.imm;
      if (li.space == Space::Generic) {
        if (addr < kSharedWindow || addr >= kSharedWindow + kWindowSize)
          return fault(ErrorCode::OutOfBounds, li, lane(l),
                       "ldmatrix row address " + hex(addr) +
                           " is not in shared memory");
        addr -= kSharedWindow;
      }
      rowAddr[l] = addr;
    }
    // Bank conflicts: a matrix's 8 rows of 16 bytes are one wavefront when
    // they fall in 8 different 16-byte bank groups (addresses modulo 128);
    // distinct rows sharing a group take one wavefront each (a repeated
    // row is read once).
    for (uint32_t i = 0; i < num; ++i) {
      const uint64_t *rows = &rowAddr[8 * i];
      uint32_t perGroup[8] = {};
      for (uint32_t r = 0; r < 8; ++r)
        if (std::find(rows, rows + r, rows[r]) == rows + r)
          ++perGroup[(rows[r] / 16) % 8];
      ++ldmatrixMatrices;
      ldmatrixExtraWavefronts += *std::max_element(perGroup, perGroup + 8) - 1;
    }
    uint16_t rows[4][8][8];
    for (uint32_t l = 0; l < 8 * num; ++l) {
      uint8_t *p = access(li, lane(l), Space::Shared, rowAddr[l], 16, 16, false);
      if (!p)
        return false;
      std::memcpy(rows[l / 8][l % 8], p, 16);
    }
    for (uint32_t l = 0; l < 32; ++l) {
      if (!(mask & (1u << l)))
        continue;
      uint64_t *tr = regsOf(lane(l));
      for (uint32_t i = 0; i < num; ++i) {
        uint16_t lo16, hi16;
        if (!trans) {
          lo16 = rows[i][l / 4][2 * (l % 4)];
          hi16 = rows[i][l / 4][2 * (l % 4) + 1];
        } else {
          lo16 = rows[i][2 * (l % 4)][l / 4];
          hi16 = rows[i][2 * (l % 4) + 1][l / 4];
        }
        set(opnd(li, i), tr, lo16 | (static_cast<uint32_t>(hi16) << 16));
      }
    }
    break;
  }
  case Op::Mma: {
    bool bf = li.type2 == Ty::BF16;
    bool k16 = li.mode == M16N8K16;
    uint32_t kDim = k16 ? 16 : 8;
    uint32_t na = k16 ? 4 : 2, nb = k16 ? 2 : 1;
    if (mask != 0xffffffffu)
      return fault(ErrorCode::Trap, li, lt,
                   "mma.sync needs all 32 lanes of the warp");
    double A[16][16], B[16][8], C[16][8];
    for (uint32_t l = 0; l < 32; ++l) {
      uint32_t g = l / 4, tq = l % 4;
      uint64_t *tr = regsOf(lane(l));
      auto half = [&](unsigned opIndex, unsigned which)
                      __attribute__((always_inline)) {
        uint32_t v = static_cast<uint32_t>(val(opnd(li, opIndex), lane(l), tr));
        return static_cast<double>(
            halfValue(static_cast<uint16_t>(v >> (16 * which)), bf));
      };
      unsigned aBase = 4, bBase = 4 + na, cBase = 4 + na + nb;
      for (unsigned h = 0; h < 2; ++h) {
        A[g][2 * tq + h] = half(aBase + 0, h);
        A[g + 8][2 * tq + h] = half(aBase + 1, h);
        if (k16) {
          A[g][2 * tq + 8 + h] = half(aBase + 2, h);
          A[g + 8][2 * tq + 8 + h] = half(aBase + 3, h);
        }
        B[2 * tq + h][g] = half(bBase + 0, h);
        if (k16)
          B[2 * tq + 8 + h][g] = half(bBase + 1, h);
      }
      for (unsigned i = 0; i < 4; ++i) {
        float c = bitsFloat(static_cast<uint32_t>(val(opnd(li, cBase + i), lane(l), tr)));
        C[g + (i >= 2 ? 8 : 0)][2 * tq + (i & 1)] = c;
      }
    }
    mmaAccumulate(A, B, C, kDim);
    for (uint32_t l = 0; l < 32; ++l) {
      uint32_t g = l / 4, tq = l % 4;
      uint64_t *tr = regsOf(lane(l));
      for (unsigned i = 0; i < 4; ++i) {
        uint32_t row = g + (i >= 2 ? 8 : 0), col = 2 * tq + (i & 1);
        set(opnd(li, i), tr, floatBits(static_cast<float>(C[row][col])));
      }
    }
    break;
  }
  default:
    return fail(ErrorCode::Unsupported, "internal: not a warp operation");
  }
  for (uint32_t l = 0; l < 32; ++l) {
    if (!(mask & (1u << l)))
      continue;
    lane(l).state = State::Ready;
    lane(l).pc++;
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
      t.pc++;
      continue;
    }
    const Operand *O = k.operands.data() + I.firstOp;
    auto src = [&](unsigned i) __attribute__((always_inline)) -> uint64_t {
      return val(O[i], t, R);
    };
    auto dst = [&](unsigned i, uint64_t v) __attribute__((always_inline)) {
      set(O[i], R, v);
    };
    Ty ty = I.type;
    switch (I.op) {
    case Op::Mov:
      dst(0, maskTo(ty, src(1)));
      break;
    case Op::MovPack: {
      unsigned partBits = 8 * sizeOf(I.type2);
      uint64_t v = 0;
      for (unsigned i = 0; i < I.vec; ++i)
        v |= (src(1 + i) & ((1ull << partBits) - 1)) << (partBits * i);
      dst(0, v);
      break;
    }
    case Op::MovUnpack: {
      unsigned partBits = 8 * sizeOf(I.type2);
      uint64_t v = src(I.vec);
      for (unsigned i = 0; i < I.vec; ++i)
        dst(i, (v >> (partBits * i)) & ((1ull << partBits) - 1));
      break;
    }
    case Op::Ld:
    case Op::St: {
      bool isLoad = I.op == Op::Ld;
      const Operand &a = O[isLoad ? I.vec : 0];
      uint64_t addr = (a.reg >= 0 ? R[a.reg] : 0) + a.imm;
      unsigned esize = sizeOf(ty);
      unsigned total = esize * I.vec;
      uint8_t *p = access(I, t, I.space, addr, total, total, !isLoad);
      if (!p)
        return;
      for (unsigned i = 0; i < I.vec; ++i) {
        if (isLoad) {
          uint64_t v = 0;
          std::memcpy(&v, p + i * esize, esize);
          if (isSigned(ty))
            v = static_cast<uint64_t>(sext(ty, v));
          dst(i, v);
        } else {
          uint64_t v = src(1 + i);
          std::memcpy(p + i * esize, &v, esize);
        }
      }
      break;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Fma:
    case Op::Div:
    case Op::Min:
    case Op::Max: {
      uint64_t a = src(1), b = src(2);
      uint64_t c = I.op == Op::Fma ? src(3) : 0;
      if (ty == Ty::F32) {
        float x = bitsFloat(static_cast<uint32_t>(a));
        float y = bitsFloat(static_cast<uint32_t>(b));
        float z = bitsFloat(static_cast<uint32_t>(c));
        bool ftz = I.flags & kFtz;
        if (ftz) {
          x = flushSubnormal(x);
          y = flushSubnormal(y);
          z = flushSubnormal(z);
        }
        float r;
        switch (I.op) {
        case Op::Add:
          r = I.round <= Round::RN ? x + y
                                   : roundToFloat(static_cast<double>(x) + y,
                                                  I.round);
          break;
        case Op::Sub:
          r = I.round <= Round::RN ? x - y
                                   : roundToFloat(static_cast<double>(x) - y,
                                                  I.round);
          break;
        case Op::Mul:
          r = I.round <= Round::RN
                  ? x * y
                  : roundToFloat(static_cast<double>(x) * y, I.round);
          break;
        case Op::Fma:
          if (I.round <= Round::RN) {
            r = std::fma(x, y, z);
          } else {
            int old = std::fegetround();
            std::fesetround(I.round == Round::RZ   ? FE_TOWARDZERO
                            : I.round == Round::RM ? FE_DOWNWARD
                                                   : FE_UPWARD);
            r = std::fma(x, y, z);
            std::fesetround(old);
          }
          break;
        case Op::Div:
          r = x / y;
          break;
        case Op::Min:
        case Op::Max:
          if ((I.flags & kPropagateNaN) && (std::isnan(x) || std::isnan(y)))
            r = NAN;
          else if (I.op == Op::Min)
            r = (x == y) ? bitsFloat(floatBits(x) | floatBits(y))
                         : std::fmin(x, y);
          else
            r = (x == y) ? bitsFloat(floatBits(x) & floatBits(y))
                         : std::fmax(x, y);
          break;
        default:
          r = 0;
        }
        if (ftz)
          r = flushSubnormal(r);
        if (I.flags & kSat)
          r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));
        dst(0, floatBits(r));
      } else if (ty == Ty::F64) {
        double x = bitsDouble(a), y = bitsDouble(b), z = bitsDouble(c), r;
        switch (I.op) {
        case Op::Add: r = x + y; break;
        case Op::Sub: r = x - y; break;
        case Op::Mul: r = x * y; break;
        case Op::Fma: r = std::fma(x, y, z); break;
        case Op::Div: r = x / y; break;
        case Op::Min: r = std::fmin(x, y); break;
        case Op::Max: r = std::fmax(x, y); break;
        default: r = 0;
        }
        dst(0, doubleBits(r));
      } else if (isFloat(ty)) {
        Op op = I.op;
        bool nanProp = I.flags & kPropagateNaN;
        bool relu = I.flags & kRelu;
        uint64_t r = halfOp(ty, a, b, c, [&](double x, double y, double z, bool bf) {
          double v = 0;
          switch (op) {
          case Op::Add: v = x + y; break;
          case Op::Sub: v = x - y; break;
          case Op::Mul: v = x * y; break;
          case Op::Fma: v = std::fma(x, y, z); break;
          case Op::Min: v = (nanProp && (std::isnan(x) || std::isnan(y))) ? NAN : std::fmin(x, y); break;
          case Op::Max: v = (nanProp && (std::isnan(x) || std::isnan(y))) ? NAN : std::fmax(x, y); break;
          default: break;
          }
          if (relu && v < 0)
            v = 0;
          return roundHalf(v, bf);
        });
        dst(0, r);
      } else {
        // Integers.
        bool sgn = isSigned(ty);
        unsigned sz = sizeOf(ty);
        uint64_t r = 0;
        switch (I.op) {
        case Op::Add:
          if ((I.flags & kSat) && ty == Ty::S32) {
            int64_t s = static_cast<int64_t>(static_cast<int32_t>(a)) +
                        static_cast<int32_t>(b);
            r = static_cast<uint32_t>(static_cast<int32_t>(
                std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, s))));
          } else {
            r = maskTo(ty, a + b);
          }
          break;
        case Op::Sub:
          if ((I.flags & kSat) && ty == Ty::S32) {
            int64_t s = static_cast<int64_t>(static_cast<int32_t>(a)) -
                        static_cast<int32_t>(b);
            r = static_cast<uint32_t>(static_cast<int32_t>(
                std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, s))));
          } else {
            r = maskTo(ty, a - b);
          }
          break;
        case Op::Mul:
          if (I.flags & kWide) {
            if (sgn)
              r = static_cast<uint64_t>(sext(ty, a) * sext(ty, b));
            else
              r = maskTo(ty, a) * maskTo(ty, b);
            r = sz == 2 ? (r & 0xffffffffu) : r;
          } else if (I.flags & kHi) {
            if (sz == 8) {
              if (sgn)
                r = static_cast<uint64_t>(
                    (static_cast<__int128>(static_cast<int64_t>(a)) *
                     static_cast<int64_t>(b)) >> 64);
              else
                r = static_cast<uint64_t>(
                    (static_cast<unsigned __int128>(a) * b) >> 64);
            } else {
              int64_t p = sgn ? sext(ty, a) * sext(ty, b)
                              : static_cast<int64_t>(maskTo(ty, a) * maskTo(ty, b));
              r = maskTo(ty, static_cast<uint64_t>(p >> (8 * sz)));
            }
          } else {
            r = maskTo(ty, a * b);
          }
          break;
        case Op::Div:
          if (maskTo(ty, b) == 0) {
            r = maskTo(ty, ~0ull);
          } else if (sgn) {
            int64_t x = sext(ty, a), y = sext(ty, b);
            r = (y == -1) ? maskTo(ty, static_cast<uint64_t>(0) - static_cast<uint64_t>(x))
                          : maskTo(ty, static_cast<uint64_t>(x / y));
          } else {
            r = maskTo(ty, a) / maskTo(ty, b);
          }
          break;
        case Op::Min:
          r = sgn ? maskTo(ty, static_cast<uint64_t>(std::min(sext(ty, a), sext(ty, b))))
                  : std::min(maskTo(ty, a), maskTo(ty, b));
          break;
        case Op::Max:
          r = sgn ? maskTo(ty, static_cast<uint64_t>(std::max(sext(ty, a), sext(ty, b))))
                  : std::max(maskTo(ty, a), maskTo(ty, b));
          break;
        default:
          break;
        }
        dst(0, r);
      }
      break;
    }
    case Op::Mad: {
      uint64_t a = src(1), b = src(2), c = src(3);
      bool sgn = isSigned(ty);
      unsigned sz = sizeOf(ty);
      uint64_t r;
      if (I.flags & kWide) {
        uint64_t p = sgn ? static_cast<uint64_t>(sext(ty, a) * sext(ty, b))
                         : maskTo(ty, a) * maskTo(ty, b);
        r = p + c;
        r = sz == 2 ? (r & 0xffffffffu) : r;
      } else if (I.flags & kHi) {
        uint64_t hiPart;
        if (sz == 8)
          hiPart = sgn ? static_cast<uint64_t>(
                             (static_cast<__int128>(static_cast<int64_t>(a)) *
                              static_cast<int64_t>(b)) >> 64)
                       : static_cast<uint64_t>(
                             (static_cast<unsigned __int128>(a) * b) >> 64);
        else {
          int64_t p = sgn ? sext(ty, a) * sext(ty, b)
                          : static_cast<int64_t>(maskTo(ty, a) * maskTo(ty, b));
          hiPart = static_cast<uint64_t>(p >> (8 * sz));
        }
        r = maskTo(ty, hiPart + c);
      } else {
        r = maskTo(ty, a * b + c);
      }
      dst(0, r);
      break;
    }
    case Op::Rem: {
      uint64_t a = src(1), b = src(2), r;
      if (maskTo(ty, b) == 0)
        r = maskTo(ty, a);
      else if (isSigned(ty)) {
        int64_t y = sext(ty, b);
        r = y == -1 ? 0 : maskTo(ty, static_cast<uint64_t>(sext(ty, a) % y));
      } else
        r = maskTo(ty, a) % maskTo(ty, b);
      dst(0, r);
      break;
    }
    case Op::Abs:
    case Op::Neg: {
      uint64_t a = src(1);
      bool isAbs = I.op == Op::Abs;
      if (ty == Ty::F32) {
        float x = bitsFloat(static_cast<uint32_t>(a));
        if (I.flags & kFtz)
          x = flushSubnormal(x);
        uint32_t b = floatBits(x);
        dst(0, isAbs ? (b & 0x7fffffffu) : (b ^ 0x80000000u));
      } else if (ty == Ty::F64) {
        dst(0, isAbs ? (a & ~(1ull << 63)) : (a ^ (1ull << 63)));
      } else if (ty == Ty::F16 || ty == Ty::BF16) {
        dst(0, isAbs ? (a & 0x7fffu) : ((a ^ 0x8000u) & 0xffffu));
      } else if (ty == Ty::F16x2 || ty == Ty::BF16x2) {
        dst(0, isAbs ? (a & 0x7fff7fffu) : ((a ^ 0x80008000u) & 0xffffffffu));
      } else {
        int64_t x = sext(ty, a);
        dst(0, maskTo(ty, static_cast<uint64_t>(isAbs ? (x < 0 ? -x : x) : -x)));
      }
      break;
    }
    case Op::And:
      dst(0, maskTo(ty, src(1) & src(2)));
      break;
    case Op::Or:
      dst(0, maskTo(ty, src(1) | src(2)));
      break;
    case Op::Xor:
      dst(0, maskTo(ty, src(1) ^ src(2)));
      break;
    case Op::Not:
      dst(0, ty == Ty::Pred ? (~src(1) & 1u) : maskTo(ty, ~src(1)));
      break;
    case Op::Cnot:
      dst(0, maskTo(ty, src(1)) == 0 ? 1 : 0);
      break;
    case Op::Shl: {
      uint64_t a = src(1);
      uint32_t s = static_cast<uint32_t>(src(2));
      unsigned w = 8 * sizeOf(ty);
      dst(0, s >= w ? 0 : maskTo(ty, a << s));
      break;
    }
    case Op::Shr: {
      uint64_t a = src(1);
      uint32_t s = static_cast<uint32_t>(src(2));
      unsigned w = 8 * sizeOf(ty);
      if (isSigned(ty)) {
        int64_t x = sext(ty, a);
        dst(0, maskTo(ty, static_cast<uint64_t>(x >> std::min(s, w - 1))));
      } else {
        dst(0, s >= w ? 0 : maskTo(ty, a) >> s);
      }
      break;
    }
    case Op::Setp: {
      uint64_t a = src(2), b = src(3);
      bool r = false;
      if (isFloat(ty)) {
        double x, y;
        if (ty == Ty::F32) {
          float fx = bitsFloat(static_cast<uint32_t>(a));
          float fy = bitsFloat(static_cast<uint32_t>(b));
          if (I.flags & kFtz) {
            fx = flushSubnormal(fx);
            fy = flushSubnormal(fy);
          }
          x = fx;
          y = fy;
        } else if (ty == Ty::F64) {
          x = bitsDouble(a);
          y = bitsDouble(b);
        } else {
          bool bf = ty == Ty::BF16;
          x = halfValue(static_cast<uint16_t>(a), bf);
          y = halfValue(static_cast<uint16_t>(b), bf);
        }
        bool unordered = std::isnan(x) || std::isnan(y);
        switch (I.cmp) {
        case Cmp::EQ: r = !unordered && x == y; break;
        case Cmp::NE: r = !unordered && x != y; break;
        case Cmp::LT: r = !unordered && x < y; break;
        case Cmp::LE: r = !unordered && x <= y; break;
        case Cmp::GT: r = !unordered && x > y; break;
        case Cmp::GE: r = !unordered && x >= y; break;
        case Cmp::EQU: r = unordered || x == y; break;
        case Cmp::NEU: r = unordered || x != y; break;
        case Cmp::LTU: r = unordered || x < y; break;
        case Cmp::LEU: r = unordered || x <= y; break;
        case Cmp::GTU: r = unordered || x > y; break;
        case Cmp::GEU: r = unordered || x >= y; break;
        case Cmp::NUM: r = !unordered; break;
        case Cmp::NAN_: r = unordered; break;
        default: r = false;
        }
      } else {
        bool sgn = isSigned(ty);
        int64_t sx = sext(ty, a), sy = sext(ty, b);
        uint64_t ux = maskTo(ty, a), uy = maskTo(ty, b);
        switch (I.cmp) {
        case Cmp::EQ: r = ux == uy; break;
        case Cmp::NE: r = ux != uy; break;
        case Cmp::LT: r = sgn ? sx < sy : ux < uy; break;
        case Cmp::LE: r = sgn ? sx <= sy : ux <= uy; break;
        case Cmp::GT: r = sgn ? sx > sy : ux > uy; break;
        case Cmp::GE: r = sgn ? sx >= sy : ux >= uy; break;
        case Cmp::LO: r = ux < uy; break;
        case Cmp::LS: r = ux <= uy; break;
        case Cmp::HI: r = ux > uy; break;
        case Cmp::HS: r = ux >= uy; break;
        default: r = false;
        }
      }
      bool p = r, q = !r;
      if (I.boolOp != BoolOp::None) {
        bool c = src(4) & 1;
        switch (I.boolOp) {
        case BoolOp::And: p = r && c; q = !r && c; break;
        case BoolOp::Or: p = r || c; q = !r || c; break;
        case BoolOp::Xor: p = r != c; q = (!r) != c; break;
        default: break;
        }
      }
      dst(0, p);
      dst(1, q);
      break;
    }
    case Op::Selp:
      dst(0, (src(3) & 1) ? src(1) : src(2));
      break;
    case Op::Cvt: {
      Ty dt = I.type, st = I.type2;
      uint64_t a = src(1);
      // Read the source as a double (floats) or an integer.
      bool srcFloat = isFloat(st), dstFloat = isFloat(dt);
      double d = 0;
      int64_t si = 0;
      uint64_t ui = 0;
      if (srcFloat) {
        if (st == Ty::F32) {
          float f = bitsFloat(static_cast<uint32_t>(a));
          if (I.flags & kFtz)
            f = flushSubnormal(f);
          d = f;
        } else if (st == Ty::F64) {
          d = bitsDouble(a);
        } else {
          d = halfValue(static_cast<uint16_t>(a), st == Ty::BF16);
        }
      } else {
        si = sext(st, a);
        ui = maskTo(st, a);
      }
      uint64_t r = 0;
      if (dstFloat) {
        double v;
        if (srcFloat) {
          v = roundIntegral(d, I.round);
        } else {
          v = isSigned(st) ? static_cast<double>(si) : static_cast<double>(ui);
          // 64-bit integers to f32 must round once: convert directly.
          if (dt == Ty::F32 && sizeOf(st) == 8) {
            float f = isSigned(st) ? static_cast<float>(si)
                                   : static_cast<float>(ui);
            v = f;
          }
        }
        if (I.flags & kSat)
          v = std::isnan(v) ? 0.0 : std::min(1.0, std::max(0.0, v));
        if ((I.flags & kRelu) && v < 0)
          v = 0;
        if (dt == Ty::F32) {
          float f = (I.round == Round::RZ || I.round == Round::RM ||
                     I.round == Round::RP)
                        ? roundToFloat(v, I.round)
                        : static_cast<float>(v);
          if (I.flags & kFtz)
            f = flushSubnormal(f);
          r = floatBits(f);
        } else if (dt == Ty::F64) {
          r = doubleBits(v);
        } else {
          bool bf = dt == Ty::BF16;
          uint16_t h;
          if (st == Ty::F32 || st == dt)
            h = toHalf(static_cast<float>(v), bf);
          else
            h = roundHalf(v, bf);
          if (I.round == Round::RZ && !bf) {
            // Toward zero: step back when rounding went away from zero.
            double back = flashc::halfToFloat(h);
            if (std::isfinite(v) && std::fabs(back) > std::fabs(v))
              h = static_cast<uint16_t>(h - 1);
          }
          r = h;
        }
      } else {
        // To an integer.
        unsigned sz = sizeOf(dt);
        bool sgn = isSigned(dt);
        if (srcFloat) {
          double v = roundIntegral(d, I.round == Round::Default ? Round::RZI
                                                                : I.round);
          if (std::isnan(v)) {
            r = 0;
          } else {
            // Float-to-integer conversions saturate.
            double lo = sgn ? -std::ldexp(1.0, 8 * sz - 1) : 0.0;
            double hiv = sgn ? std::ldexp(1.0, 8 * sz - 1) - 1
                             : std::ldexp(1.0, 8 * sz) - 1;
            if (v <= lo)
              r = maskTo(dt, static_cast<uint64_t>(static_cast<int64_t>(lo)));
            else if (v >= hiv)
              // 2^63 - 1 is not a double: saturate 64-bit types directly.
              r = sz == 8 ? (sgn ? static_cast<uint64_t>(INT64_MAX) : ~0ull)
                          : maskTo(dt, static_cast<uint64_t>(
                                           static_cast<int64_t>(hiv)));
            else
              r = maskTo(dt, sgn ? static_cast<uint64_t>(static_cast<int64_t>(v))
                                 : static_cast<uint64_t>(v));
          }
        } else {
          uint64_t v = isSigned(st) ? static_cast<uint64_t>(si) : ui;
          if (I.flags & kSat) {
            // Clamp to the destination range.
            if (sgn) {
              int64_t lo = -(1ll << (8 * sz - 1)) , hiv = (1ll << (8 * sz - 1)) - 1;
              if (sz == 8) { lo = INT64_MIN; hiv = INT64_MAX; }
              if (isSigned(st))
                v = static_cast<uint64_t>(std::min(hiv, std::max(lo, si)));
              else
                v = ui > static_cast<uint64_t>(hiv) ? static_cast<uint64_t>(hiv) : ui;
            } else {
              uint64_t hiv = sz == 8 ? ~0ull : (1ull << (8 * sz)) - 1;
              if (isSigned(st))
                v = si < 0 ? 0 : std::min<uint64_t>(hiv, static_cast<uint64_t>(si));
              else
                v = std::min<uint64_t>(hiv, ui);
            }
          }
          r = maskTo(dt, v);
          if (sgn)
            r = maskTo(Ty::U64, static_cast<uint64_t>(sext(dt, r)));
        }
      }
      dst(0, r);
      break;
    }
    case Op::CvtPack: {
      bool bf = I.type == Ty::BF16x2;
      float x = bitsFloat(static_cast<uint32_t>(src(1)));
      float y = bitsFloat(static_cast<uint32_t>(src(2)));
      if (I.flags & kRelu) {
        x = (std::isnan(x) || x > 0) ? x : 0.0f;
        y = (std::isnan(y) || y > 0) ? y : 0.0f;
      }
      uint16_t hx = toHalf(x, bf), hy = toHalf(y, bf);
      if (I.flags & kSatFinite) {
        uint16_t maxFinite = bf ? 0x7f7f : 0x7bff;
        auto clampInf = [&](uint16_t h) -> uint16_t {
          uint16_t expMask = bf ? 0x7f80 : 0x7c00;
          uint16_t mantMask = bf ? 0x007f : 0x03ff;
          if ((h & expMask) == expMask && !(h & mantMask))
            return static_cast<uint16_t>((h & 0x8000) | maxFinite);
          return h;
        };
        hx = clampInf(hx);
        hy = clampInf(hy);
      }
      dst(0, (static_cast<uint32_t>(hx) << 16) | hy);
      break;
    }
    case Op::Cvta: {
      uint64_t a = src(1);
      uint64_t base = I.space == Space::Shared ? kSharedWindow
                      : I.space == Space::Local ? kLocalWindow
                                                : 0;
      uint64_t r = I.mode ? a - base : a + base;
      dst(0, maskTo(ty, r));
      break;
    }
    case Op::Bra:
      t.pc = I.target;
      continue;
    case Op::Ret:
    case Op::Exit:
      finishThread(t, I.line);
      return;
    case Op::Trap:
      fault(ErrorCode::Trap, I, t, "the kernel executed trap");
      return;
    case Op::Nop:
      break;
    case Op::BarSync: {
      uint32_t id = static_cast<uint32_t>(src(0));
      uint32_t count = I.numOps > 1 ? static_cast<uint32_t>(src(1)) : 0;
      if (id >= 16) {
        fault(ErrorCode::Trap, I, t,
              "barrier id " + std::to_string(id) + " is out of range (0-15)");
        return;
      }
      if (count && (count % 32 || count > nthreads)) {
        fault(ErrorCode::Trap, I, t,
              "barrier thread count " + std::to_string(count) +
                  " is not a multiple of 32 within the CTA's " +
                  std::to_string(nthreads));
        return;
      }
      t.state = State::AtBarrier;
      t.barrierId = id;
      t.barrierCount = count;
      return;
    }
    case Op::BarWarpSync:
    case Op::Shfl:
    case Op::Vote:
    case Op::Redux:
    case Op::Mma:
    case Op::Ldmatrix:
      t.state = State::AtWarpOp;
      return;
    case Op::Activemask: {
      uint32_t lo = t.warp * 32, m = 0;
      for (uint32_t l = 0; l < 32 && lo + l < nthreads; ++l)
        if (threads[lo + l].state != State::Exited)
          m |= 1u << l;
      dst(0, m);
      break;
    }
    case Op::CpAsync:
      if (!execCpAsync(I, t, R))
        return;
      break;
    case Op::CpAsyncCommit:
      t.groupsCommitted++;
      break;
    case Op::CpAsyncWait:
      if (I.mode == 1) { // wait_all: everything, committed or not
        landCopies(t, UINT32_MAX, I.line);
      } else {
        uint32_t keep = I.target;
        uint32_t limit =
            t.groupsCommitted > keep ? t.groupsCommitted - keep : 0;
        landCopies(t, limit, I.line);
      }
      break;
    case Op::Ex2:
    case Op::Lg2:
    case Op::Rcp:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh: {
      uint64_t a = src(1);
      double x = ty == Ty::F32 ? bitsFloat(static_cast<uint32_t>(a))
                               : bitsDouble(a);
      if (ty == Ty::F32 && (I.flags & kFtz))
        x = flushSubnormal(static_cast<float>(x));
      double r = 0;
      switch (I.op) {
      case Op::Ex2: r = std::exp2(x); break;
      case Op::Lg2: r = std::log2(x); break;
      case Op::Rcp: r = 1.0 / x; break;
      case Op::Sqrt: r = std::sqrt(x); break;
      case Op::Rsqrt: r = 1.0 / std::sqrt(x); break;
      case Op::Sin: r = std::sin(x); break;
      case Op::Cos: r = std::cos(x); break;
      case Op::Tanh: r = std::tanh(x); break;
      default: break;
      }
      if (ty == Ty::F32) {
        float f = I.op == Op::Rcp || I.op == Op::Sqrt
                      ? (I.op == Op::Rcp ? 1.0f / static_cast<float>(x)
                                         : std::sqrt(static_cast<float>(x)))
                      : static_cast<float>(r);
        if (I.flags & kFtz)
          f = flushSubnormal(f);
        dst(0, floatBits(f));
      } else {
        dst(0, doubleBits(r));
      }
      break;
    }
    case Op::Copysign: {
      uint64_t a = src(1), b = src(2);
      if (ty == Ty::F32)
        dst(0, (b & 0x7fffffffu) | (a & 0x80000000u));
      else
        dst(0, (b & ~(1ull << 63)) | (a & (1ull << 63)));
      break;
    }
    case Op::Popc:
      dst(0, static_cast<uint64_t>(__builtin_popcountll(maskTo(ty, src(1)))));
      break;
    case Op::Clz: {
      uint64_t a = maskTo(ty, src(1));
      unsigned w = 8 * sizeOf(ty);
      dst(0, a == 0 ? w : static_cast<uint64_t>(__builtin_clzll(a) - (64 - w)));
      break;
    }
    case Op::Brev: {
      uint64_t a = src(1), r = 0;
      unsigned w = 8 * sizeOf(ty);
      for (unsigned i = 0; i < w; ++i)
        if (a & (1ull << i))
          r |= 1ull << (w - 1 - i);
      dst(0, r);
      break;
    }
    case Op::Bfe: {
      uint64_t a = src(1);
      uint32_t pos = static_cast<uint32_t>(src(2)) & 0xff;
      uint32_t len = static_cast<uint32_t>(src(3)) & 0xff;
      unsigned w = 8 * sizeOf(ty);
      uint64_t r = 0;
      bool sgn = isSigned(ty);
      bool sbit = false;
      if (sgn) {
        uint32_t bitPos = std::min(w - 1, pos + len - (len ? 1 : 0));
        sbit = len != 0 && ((a >> bitPos) & 1);
      }
      for (unsigned i = 0; i < w; ++i) {
        bool bit;
        if (i < len && pos + i < w)
          bit = (a >> (pos + i)) & 1;
        else
          bit = sbit;
        if (bit)
          r |= 1ull << i;
      }
      dst(0, maskTo(ty, r));
      break;
    }
    case Op::Bfi: {
      uint64_t a = src(1), b = src(2);
      uint32_t pos = static_cast<uint32_t>(src(3)) & 0xff;
      uint32_t len = static_cast<uint32_t>(src(4)) & 0xff;
      unsigned w = 8 * sizeOf(ty);
      uint64_t r = b;
      for (unsigned i = 0; i < len && pos + i < w; ++i) {
        r &= ~(1ull << (pos + i));
        r |= ((a >> i) & 1) << (pos + i);
      }
      dst(0, maskTo(ty, r));
      break;
    }
    case Op::Prmt: {
      uint64_t a = src(1), b = src(2), c = src(3);
      uint64_t bytes = (maskTo(Ty::U32, b) << 32) | maskTo(Ty::U32, a);
      uint32_t r = 0;
      for (unsigned i = 0; i < 4; ++i) {
        uint32_t sel = (c >> (4 * i)) & 0xf;
        uint32_t byte = (bytes >> (8 * (sel & 7))) & 0xff;
        if (sel & 8) // replicate the sign bit
          byte = (byte & 0x80) ? 0xff : 0;
        r |= byte << (8 * i);
      }
      dst(0, r);
      break;
    }
    case Op::Testp: {
      uint64_t a = src(1);
      double x = ty == Ty::F32 ? bitsFloat(static_cast<uint32_t>(a))
                               : bitsDouble(a);
      int cls = std::fpclassify(x);
      bool r = false;
      switch (I.mode) {
      case 0: r = std::isfinite(x); break;
      case 1: r = std::isinf(x); break;
      case 2: r = !std::isnan(x); break;
      case 3: r = std::isnan(x); break;
      case 4: r = cls == FP_NORMAL; break;
      case 5: r = cls == FP_SUBNORMAL; break;
      }
      if (ty == Ty::F32 && (I.mode == 4 || I.mode == 5)) {
        float f = static_cast<float>(x);
        int fc = std::fpclassify(f);
        r = I.mode == 4 ? fc == FP_NORMAL : fc == FP_SUBNORMAL;
      }
      dst(0, r);
      break;
    }
    case Op::Atom: {
      const Operand &a = O[1];
      uint64_t addr = (a.reg >= 0 ? R[a.reg] : 0) + a.imm;
      unsigned sz = sizeOf(ty);
      // Atomics are not plain accesses for the race checker, and need a
      // lock: other workers' CTAs may update the same global bytes.
      uint8_t *p = access(I, t, I.space, addr, sz, sz, true,
                          /*checkRace=*/false);
      if (!p)
        return;
      std::lock_guard<std::mutex> lock(env.atomicMutex);
      uint64_t old = 0;
      std::memcpy(&old, p, sz);
      uint64_t b = src(2), r = old;
      switch (static_cast<AtomOp>(I.mode)) {
      case AtomOp::Add:
        if (ty == Ty::F32)
          r = floatBits(bitsFloat(static_cast<uint32_t>(old)) +
                        bitsFloat(static_cast<uint32_t>(b)));
        else
          r = old + b;
        break;
      case AtomOp::Min:
        r = isSigned(ty) ? static_cast<uint64_t>(std::min(sext(ty, old), sext(ty, b)))
                         : std::min(maskTo(ty, old), maskTo(ty, b));
        break;
      case AtomOp::Max:
        r = isSigned(ty) ? static_cast<uint64_t>(std::max(sext(ty, old), sext(ty, b)))
                         : std::max(maskTo(ty, old), maskTo(ty, b));
        break;
      case AtomOp::Inc:
        r = maskTo(ty, old) >= maskTo(ty, b) ? 0 : old + 1;
        break;
      case AtomOp::Dec:
        r = (maskTo(ty, old) == 0 || maskTo(ty, old) > maskTo(ty, b)) ? b : old - 1;
        break;
      case AtomOp::And: r = old & b; break;
      case AtomOp::Or: r = old | b; break;
      case AtomOp::Xor: r = old ^ b; break;
      case AtomOp::Exch: r = b; break;
      case AtomOp::Cas:
        r = maskTo(ty, old) == maskTo(ty, b) ? src(3) : old;
        break;
      }
      r = maskTo(ty, r);
      std::memcpy(p, &r, sz);
      dst(0, maskTo(ty, old));
      break;
    }
    }
    t.pc++;
  }
}

} // namespace

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
  // once `bytes` fits below kMappedEnd.
  uint64_t begin = nextMapped;
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
    const uint64_t perCTA =
        threads * (std::max(1u, kernel->numRegs) * uint64_t(8) +
                   kernel->localBytes + sizeof(Thread)) +
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
    stats.seconds = std::chrono::duration<double>(end - start).count();
    return stats;
  } catch (const std::bad_alloc &) {
    return escaped(Status::make(
        ErrorCode::Limit,
        "the host ran out of memory launching kernel '" + info.name + "'"));
  }
}
