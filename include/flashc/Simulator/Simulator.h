//===- Simulator.h - A functional simulator for PTX -------------*- C++ -*-===//
//
// flashc's PTX simulator executes the PTX that the GPU backend emits (and
// PTX from nvcc) on the CPU, so that GPU kernels run, and are checked, on a
// machine without a GPU:
//
//   auto module = sim::Module::parse(ptxText);          // decode once
//   sim::Device device;
//   auto q = device.mapBuffer(hostQ, bytesQ, "q");      // global memory
//   sim::LaunchConfig config;
//   config.grid = {16, 8}; config.block = {128};
//   config.dynamicSharedBytes = 81920;
//   auto stats = device.launch(**module, "flash_fwd", config,
//                              {sim::KernelArg::u64(*q), ...});
//   if (!stats) ... stats.status().code() ... stats.message() ...
//
// Global memory is the caller's host memory, seen through a simulated
// address space: mapBuffer places each buffer in a region of its own,
// surrounded by unmapped guard gaps, and a kernel receives that simulated
// address. Every global access must fall inside one mapped buffer, so an
// access past the end of a buffer faults even where the host memory next to
// it belongs to another buffer. (registerBuffer maps a buffer at its own
// host address instead, for callers that pass host pointers.) Threads follow
// independent-thread-scheduling semantics; warp-collective instructions
// rendezvous over their member masks and `bar.sync` over the CTA. The
// simulator reports out-of-bounds and misaligned accesses, shared-memory
// races (including reads of cp.async destinations before their wait),
// global bytes stored to by two CTAs of one launch, and barrier deadlocks as
// errors naming the kernel, the PTX line, the thread and the address.
//
// Hopper's mbarriers and TMA tensor loads (cp.async.bulk.tensor, with
// tensor maps in the format of flashc/Simulator/TensorMap.h) run on an
// asynchronous executor beside the threads, which orders warps through
// their mbarrier arrivals and waits (lib/Simulator/AsyncExecutor.h). A read
// of a TMA destination before the mbarrier phase that covers it, a copy
// into a stage whose readers have not released it, and a wait that can
// never complete are reported as races and deadlocks like the others.
//
// Input is untrusted: PTX text, launch shapes and arguments never crash the
// simulator or exhaust memory. Sizes, offsets and alignments from the text
// are checked in 64 bits against the parser's limits (below); a launch's
// own memory (registers, local and shared memory of the CTAs in flight,
// checking records) is bounded by LaunchConfig::memoryBudgetBytes, and
// LaunchConfig::maxInstructionsPerThread bounds a runaway kernel (set it:
// 0, the default, means no bound). Every error is one line, with the bytes
// that are not printable ASCII escaped as \xNN.
//
// Numerics, and where they differ from the hardware: f32 arithmetic is IEEE
// with PTX's rounding modifiers (`fma` fused); f16/bf16 conversions round
// to nearest even. The `.approx` instructions (ex2, lg2, rcp, sqrt, ...)
// are computed in double and rounded once to f32, so they are at least as
// accurate as the hardware's (ex2.approx: 2 ulp; rcp/sqrt.approx: 1 ulp).
// `mma.sync` sums each output element in double (C first, then k in order)
// and rounds once to f32, where the tensor cores truncate partial sums in
// an unspecified order. Tests against a float64 reference must allow for
// both differences, which are far below any f16/bf16 tolerance.
//
// This library is plain C++17: it depends on neither LLVM nor MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SIMULATOR_SIMULATOR_H
#define FLASHC_SIMULATOR_SIMULATOR_H

#include "flashc/Support/Status.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flashc {
namespace sim {

/// `text` safe to print on one line: bytes below 0x20 and from 0x7f up are
/// written as `\xNN` (a backslash stays as it is).
std::string escapeText(std::string_view text);

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

/// One kernel parameter, as the bytes of its `.param` slot.
struct KernelArg {
  std::vector<uint8_t> bytes;

  template <typename T> static KernelArg scalar(T value) {
    KernelArg arg;
    arg.bytes.resize(sizeof(T));
    std::memcpy(arg.bytes.data(), &value, sizeof(T));
    return arg;
  }
  static KernelArg u32(uint32_t v) { return scalar(v); }
  static KernelArg s32(int32_t v) { return scalar(v); }
  static KernelArg u64(uint64_t v) { return scalar(v); }
  static KernelArg s64(int64_t v) { return scalar(v); }
  static KernelArg f32(float v) { return scalar(v); }
  static KernelArg pointer(const void *p) {
    return scalar(reinterpret_cast<uint64_t>(p));
  }
};

/// A kernel's `.param` as declared (offsets and sizes are bounded by the
/// parser: parameters take at most kMaxParamBytes).
struct ParamInfo {
  std::string name;
  uint32_t bytes = 0;
  uint32_t offset = 0;
  bool isPointer = false;
};

/// What a parsed `.entry` declares.
struct KernelInfo {
  std::string name;
  std::vector<ParamInfo> params;
  uint32_t staticSharedBytes = 0;
  /// `.reqntid` / `.maxntid` when present (0 otherwise).
  Dim3 requiredBlock{0, 0, 0};
  Dim3 maxBlock{0, 0, 0};
};

namespace detail {
struct Program;
} // namespace detail

/// Limits of the parser on a PTX module. Beyond them, parsing fails with a
/// Parse error (Limit for the size of the text) naming the limit.
/// The largest PTX text, in bytes (flashc's kernels take under 1 MiB), and
/// the most tokens in it (their decoding takes 32 bytes each).
constexpr uint64_t kMaxPtxBytes = 32ull << 20;
constexpr uint64_t kMaxPtxTokens = 8ull << 20;
/// Registers a kernel may declare (virtual registers, summed over every
/// `.reg` declaration of its body).
constexpr uint64_t kMaxRegisters = 1u << 20;
/// The largest `.align`; alignments must be powers of two.
constexpr uint64_t kMaxAlign = 1u << 16;
/// The bytes of one variable, and of a kernel's static shared and local
/// variables together.
constexpr uint64_t kMaxVariableBytes = 1ull << 30;
/// The bytes of a kernel's parameters together.
constexpr uint64_t kMaxParamBytes = 1u << 16;

/// A parsed and decoded PTX module.
class Module {
public:
  ~Module();
  /// Parses `ptx`. Errors name the line; an instruction the simulator does
  /// not implement is an Unsupported error naming it and its line.
  static Result<std::shared_ptr<const Module>>
  parse(std::string_view ptx, std::string sourceName = "<ptx>");

  std::vector<std::string> kernelNames() const;
  /// Null when there is no such `.entry`.
  const KernelInfo *getKernel(std::string_view name) const;
  /// The distinct opcodes (with their modifiers) of every kernel body.
  const std::set<std::string> &getOpcodes() const;
  const std::string &getSourceName() const;

  const detail::Program &getProgram() const { return *program; }

private:
  Module() = default;
  std::unique_ptr<detail::Program> program;
};

/// True when the simulator implements `opcode` (as spelled in PTX, e.g.
/// "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32").
bool isSupportedOpcode(std::string_view opcode);

/// The distinct opcodes of `ptx` without decoding it (for coverage tests).
Result<std::set<std::string>> listOpcodes(std::string_view ptx);

/// What a launch may be: CUDA's limits on grids and blocks.
constexpr uint32_t kMaxGridX = 0x7fffffffu;
constexpr uint32_t kMaxGridYZ = 65535;
constexpr uint32_t kMaxBlockThreads = 1024;
constexpr uint32_t kMaxBlockZ = 64;

struct LaunchConfig {
  /// x < 2^31, y and z < 2^16.
  Dim3 grid;
  /// At most 1024 threads, x and y up to 1024, z up to 64.
  Dim3 block;
  uint32_t dynamicSharedBytes = 0;
  /// Host threads that run CTAs in parallel; 0: up to the cores available.
  /// Fewer run when the memory budget does not allow as many CTAs at once.
  unsigned workers = 0;
  /// Shared-memory race checking (on by default; off only for speed).
  bool checkRaces = true;
  /// Write ownership: a global byte stored to (st, generic st included) by
  /// two CTAs of one launch is a Race fault, since CTAs run in no fixed
  /// order. atom and red are exempt. The record takes 4 bytes of memory per
  /// global byte stored to, counted in the memory budget.
  bool checkGlobalWrites = true;
  /// Guard against runaway kernels: a thread that executes more than this
  /// many instructions is reported as a trap ("exceeded N instructions").
  /// 0: no limit.
  uint64_t maxInstructionsPerThread = 0;
  /// Host memory the launch may use beyond the caller's buffers: registers,
  /// local memory and shared memory (with its race-checking records) of the
  /// CTAs in flight, and the write-ownership records. A launch that cannot
  /// run one CTA within it, or whose records outgrow it, fails with a Limit
  /// error naming both figures.
  uint64_t memoryBudgetBytes = 2ull << 30;
  /// A programmatic dependent launch (sm_90): on a GPU the kernel may
  /// start before the one launched before it has finished, and sees that
  /// kernel's results only once it has executed griddepcontrol.wait. A
  /// thread's access to global memory (ld, st, atom, cp.async, TMA) before
  /// its griddepcontrol.wait is then a Race fault. Launches here run one
  /// after the other, so this is the only way such a race shows.
  bool programmatic = false;
};

struct LaunchStats {
  /// Instructions executed, summed over every thread.
  uint64_t threadInstructions = 0;
  /// 8 x 8 matrices read by ldmatrix, and the shared-memory wavefronts
  /// beyond one per matrix that bank conflicts among their rows cost (two
  /// distinct rows of one matrix in the same 16-byte bank group, that is
  /// equal addresses modulo 128, take a wavefront each). 0 extra
  /// wavefronts: conflict-free.
  uint64_t ldmatrixMatrices = 0;
  uint64_t ldmatrixExtraWavefronts = 0;
  /// The warps' requests of ld and st to shared memory and of cp.async
  /// (its shared-memory writes): the lanes of a warp at one instruction
  /// executed together, as a GPU issues it. And the wavefronts beyond the
  /// fewest each request could take that bank conflicts cost: a request
  /// takes as many wavefronts as the most distinct 4-byte words one of the
  /// 32 banks holds, and could take its distinct words / 32 rounded up.
  /// stmatrix, atomics, TMA and wgmma are not counted.
  uint64_t sharedRequests = 0;
  uint64_t sharedExtraWavefronts = 0;
  /// wgmma.mma_async instructions executed, counted per warp (four for
  /// each instruction of a warpgroup).
  uint64_t wgmmaInstructions = 0;
  /// TMA tensor loads (cp.async.bulk.tensor to shared memory) issued.
  uint64_t tensorLoads = 0;
  /// TMA tensor stores (cp.async.bulk.tensor to global memory) issued.
  uint64_t tensorStores = 0;
  /// setmaxnreg instructions executed, counted per warp.
  uint64_t setmaxnregInstructions = 0;
  /// bar.arrive instructions executed (arrivals on a named barrier without
  /// waiting), counted per thread.
  uint64_t barrierArrivals = 0;
  double seconds = 0;
};

/// A simulated GPU: the set of global allocations and the launcher.
class Device {
public:
  Device();
  ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  /// Maps `[host, host + bytes)` at a simulated global address that the
  /// device chooses, with the host address's offset within
  /// kMappedAlignment bytes, and returns that address, which a kernel
  /// receives as the buffer's pointer. Each mapping has a region of its own,
  /// far from any host address, with at least kGuardGapBytes of unmapped
  /// addresses on either side; no address is used twice by one Device. Host
  /// ranges may overlap (views of one allocation): each mapping is still its
  /// own buffer, so an access through one view never reaches another.
  Result<uint64_t> mapBuffer(void *host, uint64_t bytes, std::string name = "");
  /// Forgets the buffer mapped (or registered) at `address`.
  Status unmapBuffer(uint64_t address);
  /// The unmapped addresses around every mapBuffer region, at least.
  static constexpr uint64_t kGuardGapBytes = 1ull << 32;
  /// A mapped address and its host address agree modulo this (the
  /// alignment of CUDA's allocations).
  static constexpr uint64_t kMappedAlignment = 256;

  /// Makes `[data, data + bytes)` addressable as global memory at its own
  /// host address: a kernel receives `data` itself as the buffer's address.
  /// Buffers adjacent in host memory are adjacent here too.
  Status registerBuffer(void *data, uint64_t bytes, std::string name = "");
  Status unregisterBuffer(void *data);
  /// Forgets every registered and mapped buffer.
  void clearBuffers();

  /// Runs `kernel` of `module` over the grid. Arguments must match the
  /// kernel's parameters in number and size.
  Result<LaunchStats> launch(const Module &module, std::string_view kernel,
                             const LaunchConfig &config,
                             const std::vector<KernelArg> &args);

  /// A buffer: simulated addresses `[begin, end)` hold the host bytes from
  /// `host` on.
  struct Buffer {
    uint64_t begin = 0, end = 0;
    uint8_t *host = nullptr;
    std::string name;
    /// The host address of simulated address `addr` of this buffer.
    uint8_t *translate(uint64_t addr) const { return host + (addr - begin); }
  };
  /// The buffer holding `[addr, addr + bytes)`, or null. The pointer stays
  /// valid until that buffer is unmapped.
  const Buffer *findBuffer(uint64_t addr, uint64_t bytes) const;

private:
  Status insert(uint64_t begin, uint64_t bytes, void *host, std::string name);

  std::map<uint64_t, Buffer> buffers; // keyed by begin
  /// Where the next mapBuffer region may start.
  uint64_t nextMapped;
  mutable std::mutex mutex;
};

} // namespace sim
} // namespace flashc

#endif // FLASHC_SIMULATOR_SIMULATOR_H
