//===- Runtime.h - Load and launch flashc's GPU kernels ---------*- C++ -*-===//
//
// The LLVM-free runtime. It knows compiled GPU kernels only as artifacts:
// a KernelVariant is the PTX (and possibly a cubin) of one attention
// configuration plus the launch metadata the compiler recorded. It checks a
// call's tensors, computes the grid and, for decode variants, the split
// count (the CTA x wave model with the device's SM count), and launches on a
// Device: the CUDA driver (resolved with dlopen at run time, so the same
// binary starts on machines without a GPU) or the PTX simulator (host
// memory; slow, but every kernel runs anywhere).
//
//   flashc::Result<flashc::runtime::Bundle> bundle =
//       flashc::runtime::Bundle::load("kernels/");
//   auto device = flashc::runtime::getCudaDevice();
//   const KernelVariant *v = bundle->find(query);
//   AttentionCall call{q, k, v, out};           // device pointers
//   if (Status s = launchAttention(**device, *v, call)) ... s.message() ...
//
// Builds from a C++17 compiler and the CUDA headers alone.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_RUNTIME_RUNTIME_H
#define FLASHC_RUNTIME_RUNTIME_H

#include "flashc/Core/Problem.h"
#include "flashc/Core/WaveModel.h"
#include "flashc/Support/Json.h"
#include "flashc/Support/Status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flashc {
namespace runtime {

/// A strided tensor in device memory (host memory for the simulator).
/// Sizes and strides are in elements.
struct TensorView {
  void *data = nullptr;
  ElementType dtype = ElementType::F16;
  int rank = 0;
  int64_t sizes[4] = {0, 0, 0, 0};
  int64_t strides[4] = {0, 0, 0, 0};

  /// A densely packed row-major tensor.
  static TensorView contiguous(void *data, ElementType dtype,
                               std::initializer_list<int64_t> sizes);
  /// Bytes from `data` to one past the last element the view addresses;
  /// an error when that does not fit 63 bits.
  Result<uint64_t> getExtentBytes() const;
};

/// The sizes a kernel's grid may name, at one launch.
struct GridSizes {
  int64_t batch = 0, seqQ = 0, seqKV = 0, splits = 1;

  /// The size its kernel parameter's name (B, Nq, Nk, splits) names, or
  /// nothing.
  std::optional<int64_t> lookup(const std::string &name) const;
};

/// One factor of a grid: ceildiv(product of `operands`, `ceilDiv`), where
/// each operand is a size named as its kernel parameter (`size`) or, when
/// `size` is empty, the integer `value` (the IR's #flash.grid_factor).
struct GridFactor {
  struct Operand {
    std::string size;
    int64_t value = 0;
  };
  std::vector<Operand> product;
  int64_t ceilDiv = 1;
};

/// A kernel's grid: the product of its factors (the IR's `flash.grid`),
/// one per dimension of the tile loop the kernel runs.
struct KernelGrid {
  std::vector<GridFactor> factors;

  /// The number of CTAs at a launch of `sizes`; an error on overflow.
  Result<int64_t> evaluate(const GridSizes &sizes) const;
  /// "B*ceildiv(Nq,64)*splits": for messages and the PTX's descriptor.
  std::string str() const;
  /// [{"product": ["B"]}, {"product": ["Nq"], "ceildiv": 64}, ...]
  JsonValue toJson() const;
  static Result<KernelGrid> fromJson(const JsonValue &value);
};

/// One kernel of a variant.
struct KernelEntry {
  std::string name;
  /// The number of CTAs, as a function of the launch's sizes.
  KernelGrid grid;
  int64_t block = 0;
  int64_t sharedBytes = 0;
  /// From ptxas when it was run on the PTX (-1: unknown).
  int64_t registers = -1;
  int64_t spillBytes = -1;
  /// A forward kernel of split-KV partials that, launched with one split,
  /// writes the attention's output itself: the runtime launches no
  /// combine then. (False in manifests that predate it, whose combine
  /// runs at every split count.)
  bool finalAtOneSplit = false;
  /// A kernel that waits for the results of the kernel launched before it
  /// on its stream itself (griddepcontrol.wait, sm_90a): the CUDA device
  /// launches it with programmatic stream serialization, so that it may
  /// start while that kernel runs (cuLaunchKernelEx; a driver without it
  /// launches it as any other).
  bool programmaticLaunch = false;

  JsonValue toJson() const;
  static Result<KernelEntry> fromJson(const JsonValue &value);
};

/// The identity of an attention configuration: what a variant computes.
/// Batch, head counts and sequence lengths are not part of it: a variant is
/// compiled for one KV head and its `group` query heads, and the runtime
/// folds the KV heads of a call into its batch.
struct AttentionQuery {
  std::string target; // sm_80, sm_90a
  ElementType dtype = ElementType::F16;
  /// Query heads per KV head (Hq / Hkv): 1 for MHA.
  int64_t group = 1;
  int64_t headDim = 0, headDimV = 0;
  Mask mask;
  bool withLse = false;
  bool decode = false; // split-KV with a launch-time split count
  // The softmax scale is not part of a variant: every kernel takes it as
  // an argument (AttentionCall::scale).

  /// The variant of `target` computing `problem`: the decode variant when
  /// Nq <= kMaxDecodeSeqQ.
  static AttentionQuery of(const AttentionProblem &problem,
                           const std::string &target);
};

/// The largest Nq a decode variant (split-KV, one or two MMA row tiles)
/// serves.
constexpr int64_t kMaxDecodeSeqQ = 16;

/// The problem one launch of `query`'s kernels computes: `batch` KV heads
/// (the call's batch x KV heads, folded) of `query.group` query heads each.
AttentionProblem getVariantProblem(const AttentionQuery &query, int64_t batch,
                                   int64_t seqQ, int64_t seqKV);

/// The first field in which `variant` differs from `query` ("target",
/// "dtype", "group", "head_dim", "head_dim_v", "mask", "lse" or "decode"),
/// or "" when it matches.
std::string getMismatchedField(const AttentionQuery &variant,
                               const AttentionQuery &query);

/// One parameter of a GPU kernel, as its manifest describes it: the
/// compiler writes the list from the kernel's IR (each argument's
/// `flash.param`), and the runtime passes the values in that order.
struct KernelParameter {
  std::string name;
  std::string meaning;
  /// 64: a pointer or an integer (.u64); 32: an f32; 1024: a tensor map
  /// (`.param .align 64 .b8 [128]`, a __grid_constant__ CUtensorMap).
  int bits = 64;
  /// Of a tensor map: the tensor it describes ("q", "k", "v" or "out", as
  /// [B', heads, N, D] with dimensions (D, N, heads, B') innermost first)
  /// and the box its copies move, innermost first.
  std::string tensor;
  std::vector<int64_t> box;

  bool isTensorMap() const { return !tensor.empty(); }
};

/// The parameters this runtime knows how to pass, by name, with their
/// widths (meanings are the manifest's): q, k, v, out, lse, ws_out,
/// ws_lse, B, Nq, Nk, splits, the (batch, head, row) strides of q, k, v
/// and out, scale, and the tensor maps q_map, k_map, v_map and out_map
/// (built at launch with the box the manifest gives). A kernel takes any of
/// them in any order; a manifest naming another is refused when loaded.
const std::vector<KernelParameter> &getKnownKernelParameters();

/// A compiled GPU attention kernel: one forward kernel and, for decode
/// variants, the combine kernel.
struct KernelVariant {
  std::string id;
  AttentionQuery query;
  int64_t blockQ = 0, blockKV = 0;
  /// The bytes that the addresses of q, k, v and out and their row, head
  /// and batch strides must be multiples of (the `alignment` option it was
  /// built with: 16, 8, 4 or 2), where rows are whole 16-byte units.
  /// Below 16 the kernel copies without TMA, by cp.async of that size (2:
  /// element by element): the variant a call with less aligned tensors
  /// falls back to.
  int64_t alignment = 16;
  KernelEntry forward;
  std::optional<KernelEntry> combine;
  /// The parameters of both kernels, in order.
  std::vector<KernelParameter> parameters;
  std::string ptx;
  /// A cubin for `query.target`, when one was assembled.
  std::string cubin;
  /// How it was built (the pipeline options), and how long it took.
  std::string config;
  double compileSeconds = 0;
  /// The FNV-1a hash of `ptx` and `cubin` together. A device keeps the
  /// kernels it loaded by id and this hash, so that variants of one id
  /// built with other options (two bundles' `sm_90a-bf16-g1-d64-prefill`,
  /// one with 32-key blocks) never share a module. Bundle::load,
  /// Bundle::add and the compiler set it; whoever changes `ptx` or `cubin`
  /// afterwards calls updateImageHash(). 0: not set (a device hashes the
  /// images at each launch).
  uint64_t imageHash = 0;

  uint64_t computeImageHash() const;
  void updateImageHash() { imageHash = computeImageHash(); }

  /// The manifest entry (the PTX and cubin live in files named after id).
  JsonValue toJson() const;
  static Result<KernelVariant> fromJson(const JsonValue &value);
};

/// The lines the compiler appends to a variant's PTX (as PTX comments):
/// what the manifest must say of it (target, dtype, group, head dims,
/// causal, LSE, decode, scale, tiles, and each kernel's name, block,
/// shared memory and grid). A bundle's manifest is checked against them.
std::string getVariantDescriptor(const KernelVariant &variant);

/// Checks `variant` (its manifest fields) against its PTX: the descriptor
/// above, and what the code declares itself: an `.entry` per kernel taking
/// the manifest's parameters (`parameters`, each of its width) and a
/// `.reqntid` equal to the manifest's block. Bundle::load runs it on every
/// variant.
Status checkVariantAgainstPTX(const KernelVariant &variant);

/// An error unless `id` can name a bundle's files: letters, digits, '_',
/// '-' and '.', not starting with '.', at most 200 characters.
Status checkVariantId(const std::string &id);

/// Bounds on what a manifest may say (head dims: flashc::kMaxGPUHeadDim).
constexpr size_t kMaxGridFactors = 8;
constexpr size_t kMaxGridOperands = 8;
constexpr int64_t kMaxGroup = 1024;

/// A tiled tensor map for the TMA (the arguments of the CUDA driver's
/// cuTensorMapEncodeTiled): an f16, bf16 or f32 tensor of `rank` (1 to 5)
/// dimensions at device address `address`, sizes innermost first, the
/// byte strides of dimensions 1 and up (multiples of 16), the box a copy
/// moves, and the shared-memory swizzle (0: none; 1, 2, 3: 32, 64, 128
/// bytes). Elements outside the tensor read as zeros.
struct TensorMapSpec {
  ElementType type = ElementType::F16;
  uint32_t rank = 2;
  const void *address = nullptr;
  uint64_t dims[5] = {};
  uint64_t strides[4] = {};
  uint32_t box[5] = {};
  uint32_t swizzle = 0;
};

/// The 128 bytes of an encoded tensor map: a kernel's __grid_constant__
/// parameter.
struct TensorMapBytes {
  alignas(64) uint8_t bytes[128] = {};
};

/// One argument of a kernel launch.
struct LaunchArg {
  uint64_t value = 0;
  bool isPointer = false;
  /// For pointers: the bytes the kernel may address from `value`.
  uint64_t extentBytes = 0;
  /// A tensor map passed by value (then `value` is unused); the caller
  /// keeps it alive until the launch returns.
  const TensorMapBytes *tensorMap = nullptr;
};


/// Where kernels run.
class Device {
public:
  virtual ~Device();
  virtual std::string describe() const = 0;
  virtual bool isSimulator() const = 0;
  /// The chip whose kernels this device runs best (sm_80, sm_90a).
  virtual std::string getChip() const = 0;
  virtual int64_t getNumSMs() const = 0;
  /// The device's memory bandwidth in GB/s, as the device reports it (0:
  /// unknown, the chip's published figure is used).
  virtual double getMemoryBandwidthGBs() const { return 0; }
  /// Device memory (workspaces, buffers), ordered on `stream`.
  virtual Result<void *> allocate(uint64_t bytes, void *stream) = 0;
  virtual Status release(void *pointer, void *stream) = 0;
  virtual Status launch(const KernelVariant &variant,
                        const KernelEntry &kernel, uint64_t grid,
                        const std::vector<LaunchArg> &args, void *stream) = 0;
  /// Copies between host and device memory, ordered on `stream`.
  virtual Status copyToDevice(void *dst, const void *src, uint64_t bytes,
                              void *stream) = 0;
  virtual Status copyToHost(void *dst, const void *src, uint64_t bytes,
                            void *stream) = 0;
  /// Waits for everything queued on `stream`.
  virtual Status synchronize(void *stream) = 0;
  /// Whether the device runs nothing more in this process: on the CUDA
  /// device, after a synchronisation gave up on work that never finished
  /// (FLASHC_CUDA_SYNC_TIMEOUT_S) or a kernel faulted (a sticky error, which
  /// loses the context). It then refuses every launch, copy and
  /// synchronisation with the error that lost it.
  virtual bool isLost() const { return false; }
  /// Encodes a tensor map of this device's memory (the CUDA driver's
  /// cuTensorMapEncodeTiled, or the simulator's format). An error names
  /// the argument the driver refused, or says the device has none.
  virtual Result<TensorMapBytes> encodeTensorMap(const TensorMapSpec &spec);
};

/// The CUDA driver's device `ordinal`, or a NoDevice error naming why there
/// is none (no libcuda.so.1, no device, an old driver).
Result<std::shared_ptr<Device>> getCudaDevice(int ordinal = 0);

/// How the simulator device runs its launches.
struct SimulatorOptions {
  /// Host threads running CTAs in parallel; 0: every core.
  unsigned workers = 0;
  /// Shared-memory race checking (off only to measure its cost).
  bool checkRaces = true;
  /// A thread that executes more instructions fails the launch (a runaway
  /// kernel); 0: no limit. The C API sets it with
  /// flashc_simulator_set_max_instructions, Python with
  /// flashc._runtime.set_simulator_max_instructions. A runaway loop with a
  /// barrier in it runs every thread of its CTA to the budget (128 threads
  /// x 10^8 instructions: about a minute).
  uint64_t maxInstructionsPerThread = 100000000;
  /// Host memory a launch may use for the simulation itself (registers,
  /// local and shared memory of the CTAs in flight, checking records),
  /// beyond the caller's buffers.
  uint64_t memoryBudgetBytes = 2ull << 30;
};

/// The PTX simulator as a device: kernels run on the host's cores over host
/// memory, with out-of-bounds, race and deadlock checking. `chip` is the
/// target it claims to be (sm_80 or sm_90a).
std::shared_ptr<Device>
getSimulatorDevice(const std::string &chip = "sm_80",
                   const SimulatorOptions &options = SimulatorOptions());

/// What a simulator device has executed since it was made.
struct SimulatorCounters {
  /// Instructions executed, summed over every simulated thread.
  uint64_t threadInstructions = 0;
  /// Wall-clock seconds spent inside launches.
  double seconds = 0;
  /// 8 x 8 matrices read by ldmatrix, and the extra shared-memory
  /// wavefronts their bank conflicts cost (sim::LaunchStats).
  uint64_t ldmatrixMatrices = 0;
  uint64_t ldmatrixExtraWavefronts = 0;
  /// Warp requests of ld/st to shared memory and of cp.async, and the
  /// extra wavefronts their bank conflicts cost (sim::LaunchStats).
  uint64_t sharedRequests = 0;
  uint64_t sharedExtraWavefronts = 0;
  /// wgmma.mma_async executed, per warp (four per warpgroup instruction).
  uint64_t wgmmaInstructions = 0;
  /// TMA tensor loads issued (sim::LaunchStats).
  uint64_t tensorLoads = 0;
  /// TMA tensor stores issued (sim::LaunchStats).
  uint64_t tensorStores = 0;
  /// setmaxnreg executed, per warp: a warp-specialised kernel's warps
  /// redistributing registers.
  uint64_t setmaxnregInstructions = 0;
  /// bar.arrive executed, per thread: consumer warpgroups passing turns
  /// (sim::LaunchStats).
  uint64_t barrierArrivals = 0;

  /// What was counted since `earlier`, the same device's counters read
  /// before these.
  SimulatorCounters operator-(const SimulatorCounters &earlier) const;
};

/// The counters of a device from getSimulatorDevice; an error for any other
/// device.
Result<SimulatorCounters> getSimulatorCounters(const Device &device);

/// One attention call: O = softmax(scale Q K^T) V (and its log-sum-exp).
struct AttentionCall {
  TensorView q, k, v, out;
  /// [B, Hq, Nq] f32, contiguous; exactly when the variant writes it.
  const TensorView *lse = nullptr;
  /// The softmax scale (0: 1/sqrt(D)); finite, positive and a normal f32.
  double scale = 0;
  void *stream = nullptr;
  /// Decode variants: the KV split count; 0: the CTA x wave model's.
  int64_t splits = 0;
};

/// What a launch did.
struct LaunchReport {
  /// Launches of the forward kernel (1, or B when the batch and head
  /// strides do not fold together).
  int64_t launches = 1;
  int64_t splits = 1;
  int64_t forwardGrid = 0;
  int64_t combineGrid = 0;
};

/// The alignment (16, 8, 4 or 2 bytes; 1 for an address or stride that is
/// not even a multiple of the element's 2) that the addresses and the
/// strides of the call's tensors with rows of whole 16-byte units have in
/// common: a variant built with this `alignment` or less takes the call
/// (KernelVariant::alignment, Bundle::find).
int64_t getCallAlignment(const AttentionCall &call);

/// Checks the call's tensors against the variant (element types, shapes,
/// unit innermost strides, the variant's alignment of rows) and launches
/// it. The
/// call's Hkv KV heads become part of the kernels' batch: one launch over
/// B * Hkv when the strides allow it (as for densely packed tensors), else
/// one launch per batch entry. Errors name the offending tensor
/// (InvalidArgument); a kernel that cannot be launched is a Launch error, a
/// fault the simulator finds has its code (ErrorCode::OutOfBounds, Race,
/// ...), and other failures of the device other codes.
Status launchAttention(Device &device, const KernelVariant &variant,
                       const AttentionCall &call,
                       LaunchReport *report = nullptr);

/// The wave model's figures of `device`: its chip's, with its SM count and
/// memory bandwidth.
WaveTarget getWaveTarget(const Device &device);

/// The KV split count a launch of `variant` over `batch` KV heads (the
/// call's batch x KV heads), Nq = seqQ and Nk = seqKV uses on `device`: 1
/// for a prefill variant; `requested` (capped so that every split keeps a
/// KV block) when positive; else the CTA x wave model's choice
/// (flashc::chooseSplitCount), the same the cost report makes.
int64_t getLaunchSplitCount(const Device &device, const KernelVariant &variant,
                            int64_t batch, int64_t seqQ, int64_t seqKV,
                            int64_t requested = 0);

/// A directory of kernels: `manifest.json` and one `<id>.ptx` (and
/// `<id>.cubin`) per variant. The JIT's disk cache has the same format.
/// Each entry records an FNV-1a checksum of its files.
class Bundle {
public:
  /// Fails on a file whose checksum differs from its manifest entry's. The
  /// error is NotFound where the directory or its manifest does not exist,
  /// else InvalidBundle.
  static Result<Bundle> load(const std::string &directory);
  /// Writes the manifest and every variant's files, each whole (through a
  /// temporary file renamed into place), the manifest last.
  Status save(const std::string &directory) const;
  /// The variant computing `query`, or null. Of several (built with
  /// other `alignment`s), the one with the largest alignment up to
  /// `alignment`, the call's (getCallAlignment), else the one with the
  /// smallest.
  const KernelVariant *find(const AttentionQuery &query,
                            int64_t alignment = 16) const;
  /// Why find(query) found nothing: the variant that matches the most
  /// fields (in the order target, dtype, group, head_dim, head_dim_v,
  /// mask, lse, decode) and the first field in which it differs, with
  /// both values. `matchedFields`, when given, receives how many leading
  /// fields the closest variant matches.
  std::string explainMiss(const AttentionQuery &query,
                          size_t *matchedFields = nullptr) const;
  /// Adds or replaces the variant with the same id.
  void add(KernelVariant variant);

  std::vector<KernelVariant> variants;
};

} // namespace runtime
} // namespace flashc

#endif // FLASHC_RUNTIME_RUNTIME_H
