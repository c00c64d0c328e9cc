//===- CudaDevice.cpp - The CUDA driver, found at run time ----------------===//
//
// Resolves the CUDA driver API with dlopen("libcuda.so.1"), so that the
// runtime (and everything linking it) starts on machines without a GPU and
// reports "no CUDA driver" as an error instead. Kernels are loaded from PTX
// (or a cubin for the device's chip) with cuModuleLoadDataEx, once per
// variant; the dynamic shared-memory limit is raised per function before
// its first launch; launches go on the caller's stream, and workspaces are
// stream-ordered allocations from a memory pool of flashc's own that keeps
// its memory across synchronisations (the device's default pool returns it
// to the driver at every synchronise, so that each decode call would map
// its workspace afresh). Kernels marked programmatic_launch go through
// cuLaunchKernelEx with programmatic stream serialization, unless the
// driver lacks or refuses it or FLASHC_CUDA_PROGRAMMATIC_LAUNCH=0.
//
// FLASHC_CUDA_SYNC_TIMEOUT_S=S bounds each synchronisation: a stream whose
// work has not finished S seconds later (a kernel that hangs, such as one
// waiting on a barrier nothing arrives at) is an error instead of a wait
// without end. After it, as after a kernel's fault (a sticky error such as
// an illegal address, which loses the context), the device refuses every
// launch, copy and synchronisation with the error that lost it.
//
//===----------------------------------------------------------------------===//

#include "CudaDriverApi.h"

#include "flashc/Runtime/Runtime.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <map>
#include <mutex>
#include <thread>

using namespace flashc;
using namespace flashc::runtime;
using namespace flashc::cuda;

namespace {

/// The driver entry points flashc uses (CudaDriverApi.h).
struct Driver {
  void *handle = nullptr;
#define FLASHC_CUDA_DECLARE_POINTER(name, symbol, type)                        \
  name##Fn *name = nullptr;
  FLASHC_CUDA_DRIVER_FUNCTIONS(FLASHC_CUDA_DECLARE_POINTER)
  FLASHC_CUDA_DRIVER_OPTIONAL_FUNCTIONS(FLASHC_CUDA_DECLARE_POINTER)
#undef FLASHC_CUDA_DECLARE_POINTER

  std::string error(CUresult r) const {
    const char *s = nullptr;
    if (cuGetErrorString && cuGetErrorString(r, &s) == CUDA_SUCCESS && s)
      return s;
    return "CUDA error " + std::to_string(static_cast<int>(r));
  }
};

/// Loads the driver once; the status says why it is unusable.
const Driver &getDriver(Status &status) {
  static Status loadStatus;
  static Driver driver = [] {
    Driver d{};
    d.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.handle) {
      loadStatus = Status::error(
          "no CUDA driver: cannot load libcuda.so.1 (this machine has no "
          "NVIDIA GPU driver; run GPU kernels in the simulator instead)");
      return d;
    }
    bool ok = true;
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(d.handle, name));
      ok &= fn != nullptr;
    };
#define FLASHC_CUDA_RESOLVE(name, symbol, type) sym(d.name, symbol);
    FLASHC_CUDA_DRIVER_FUNCTIONS(FLASHC_CUDA_RESOLVE)
#undef FLASHC_CUDA_RESOLVE
    // Optional: null where the driver lacks them.
#define FLASHC_CUDA_RESOLVE_OPTIONAL(name, symbol, type)                       \
  d.name = reinterpret_cast<name##Fn *>(dlsym(d.handle, symbol));
    FLASHC_CUDA_DRIVER_OPTIONAL_FUNCTIONS(FLASHC_CUDA_RESOLVE_OPTIONAL)
#undef FLASHC_CUDA_RESOLVE_OPTIONAL
    if (!ok) {
      loadStatus = Status::error("the CUDA driver is too old: it lacks "
                                 "entry points flashc needs (CUDA 11.2+)");
      return d;
    }
    if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS)
      loadStatus = Status::error("cuInit failed: " + d.error(r));
    return d;
  }();
  status = loadStatus;
  return driver;
}

class CudaDevice : public Device {
public:
  CudaDevice(const Driver &driver, CUdevice device, CUcontext context,
             std::string name, int major, int minor, int sms,
             double bandwidthGBs)
      : d(driver), device(device), context(context), name(std::move(name)),
        major(major), minor(minor), sms(sms), bandwidthGBs(bandwidthGBs) {}

  std::string describe() const override {
    return name + " (sm_" + std::to_string(major) + std::to_string(minor) +
           ", " + std::to_string(sms) + " SMs)";
  }
  bool isSimulator() const override { return false; }
  std::string getChip() const override {
    // sm_90a code runs on compute capability 9.0 only; sm_80 PTX runs on
    // every later chip through the driver's JIT.
    return major == 9 && minor == 0 ? "sm_90a" : "sm_80";
  }
  int64_t getNumSMs() const override { return sms; }
  double getMemoryBandwidthGBs() const override { return bandwidthGBs; }

  Result<void *> allocate(uint64_t bytes, void *stream) override {
    if (Status s = makeCurrent())
      return s;
    CUdeviceptr p = 0;
    if (CUmemoryPool pool = getPool()) {
      if (CUresult r = d.cuMemAllocFromPoolAsync(
              &p, bytes, pool, static_cast<CUstream>(stream));
          r != CUDA_SUCCESS)
        return Status::error("cuMemAllocFromPoolAsync of " +
                             std::to_string(bytes) + " bytes: " + d.error(r));
      return reinterpret_cast<void *>(p);
    }
    if (CUresult r = d.cuMemAllocAsync(&p, bytes, static_cast<CUstream>(stream));
        r != CUDA_SUCCESS)
      return Status::error("cuMemAllocAsync of " + std::to_string(bytes) +
                           " bytes: " + d.error(r));
    return reinterpret_cast<void *>(p);
  }

  Status release(void *p, void *stream) override {
    if (Status s = makeCurrent())
      return s;
    if (CUresult r = d.cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(p),
                                      static_cast<CUstream>(stream));
        r != CUDA_SUCCESS)
      return Status::error("cuMemFreeAsync: " + d.error(r));
    return Status::success();
  }

  Status copyToDevice(void *dst, const void *src, uint64_t bytes,
                      void *stream) override {
    if (Status s = makeCurrent())
      return s;
    if (Status s = checkNotLost())
      return s;
    if (CUresult r = d.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst),
                                         src, bytes,
                                         static_cast<CUstream>(stream));
        r != CUDA_SUCCESS)
      return failed(r, "copy to the device");
    return Status::success();
  }

  Status copyToHost(void *dst, const void *src, uint64_t bytes,
                    void *stream) override {
    if (Status s = makeCurrent())
      return s;
    if (Status s = checkNotLost())
      return s;
    if (CUresult r = d.cuMemcpyDtoHAsync(
            dst, reinterpret_cast<CUdeviceptr>(src), bytes,
            static_cast<CUstream>(stream));
        r != CUDA_SUCCESS)
      return failed(r, "copy to the host");
    return Status::success();
  }

  Status synchronize(void *stream) override {
    if (Status s = makeCurrent())
      return s;
    if (Status s = checkNotLost())
      return s;
    Result<double> limit = getSyncTimeout();
    if (!limit)
      return limit.status();
    if (*limit == 0) {
      if (CUresult r = d.cuStreamSynchronize(static_cast<CUstream>(stream));
          r != CUDA_SUCCESS)
        return failed(r, "the stream failed");
      return Status::success();
    }
    // Polls: without pausing for the first millisecond (as the driver's own
    // wait spins), then with pauses growing to a millisecond.
    using Clock = std::chrono::steady_clock;
    Clock::time_point start = Clock::now();
    Clock::time_point deadline =
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(*limit));
    std::chrono::microseconds pause(10);
    while (true) {
      CUresult r = d.cuStreamQuery(static_cast<CUstream>(stream));
      if (r == CUDA_SUCCESS)
        return Status::success();
      if (r != CUDA_ERROR_NOT_READY)
        return failed(r, "the stream failed");
      Clock::time_point now = Clock::now();
      if (now >= deadline) {
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%g", *limit);
        return lose(std::string("the stream's work did not finish within ") +
                    seconds +
                    " s (FLASHC_CUDA_SYNC_TIMEOUT_S): a kernel that never "
                    "completes, such as one waiting on a barrier that nothing "
                    "arrives at");
      }
      if (now - start < std::chrono::milliseconds(1)) {
        std::this_thread::yield();
        continue;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(2 * pause,
                                                  std::chrono::milliseconds(1));
    }
  }
  bool isLost() const override {
    std::lock_guard<std::mutex> lock(mutex);
    return !lost.empty();
  }

  Status launch(const KernelVariant &variant, const KernelEntry &kernel,
                uint64_t grid, const std::vector<LaunchArg> &args,
                void *stream) override {
    if (Status s = makeCurrent())
      return s;
    if (Status s = checkNotLost())
      return s;
    Result<CUfunction> fn = getFunction(variant, kernel);
    if (!fn)
      return fn.status();
    std::vector<uint64_t> values;
    std::vector<void *> pointers;
    values.reserve(args.size());
    for (const LaunchArg &a : args)
      values.push_back(a.value);
    for (size_t i = 0; i < args.size(); ++i)
      pointers.push_back(args[i].tensorMap
                             ? const_cast<uint8_t *>(args[i].tensorMap->bytes)
                             : static_cast<void *>(&values[i]));
    if (grid > 0x7fffffffull)
      return Status::make(ErrorCode::Launch,
                          "a grid of " + std::to_string(grid) +
                              " CTAs exceeds the launch limit");
    CUresult r = CUDA_SUCCESS;
    // FLASHC_CUDA_PROGRAMMATIC_LAUNCH=0 launches every kernel as any other
    // (read at each launch: a benchmark compares the two in one process).
    const char *allowed = std::getenv("FLASHC_CUDA_PROGRAMMATIC_LAUNCH");
    const bool early = kernel.programmaticLaunch && d.cuLaunchKernelEx &&
                       !(allowed && std::strcmp(allowed, "0") == 0);
    if (early) {
      // A kernel that waits for its predecessor's results itself
      // (griddepcontrol.wait) may start while the predecessor runs.
      CUlaunchAttribute attribute{};
      attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attribute.value.programmaticStreamSerializationAllowed = 1;
      CUlaunchConfig config{};
      config.gridDimX = static_cast<unsigned>(grid);
      config.gridDimY = config.gridDimZ = 1;
      config.blockDimX = static_cast<unsigned>(kernel.block);
      config.blockDimY = config.blockDimZ = 1;
      config.sharedMemBytes = static_cast<unsigned>(kernel.sharedBytes);
      config.hStream = static_cast<CUstream>(stream);
      config.attrs = &attribute;
      config.numAttrs = 1;
      r = d.cuLaunchKernelEx(&config, *fn, pointers.data(), nullptr);
    }
    // A driver that refuses the early start (some configurations do not
    // support it) runs the kernel as any other: its wait is then met at
    // once.
    if (!early || r == CUDA_ERROR_NOT_SUPPORTED) {
      r = d.cuLaunchKernel(*fn, static_cast<unsigned>(grid), 1, 1,
                           static_cast<unsigned>(kernel.block), 1, 1,
                           static_cast<unsigned>(kernel.sharedBytes),
                           static_cast<CUstream>(stream), pointers.data(),
                           nullptr);
    }
    if (r != CUDA_SUCCESS)
      return failed(r, "launching " + kernel.name, ErrorCode::Launch);
    return Status::success();
  }

  Result<TensorMapBytes> encodeTensorMap(const TensorMapSpec &spec) override {
    if (!d.cuTensorMapEncodeTiled)
      return Status::make(ErrorCode::NoDevice,
                          "the CUDA driver has no cuTensorMapEncodeTiled "
                          "(tensor maps need a CUDA 12 driver)");
    if (spec.rank < 1 || spec.rank > 5)
      return Status::invalidArgument("a tensor map of rank " +
                                     std::to_string(spec.rank) +
                                     " (1 to 5 are possible)");
    CUtensorMapDataType type =
        spec.type == ElementType::F16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
        : spec.type == ElementType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                         : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    unsigned long long dims[5], strides[4];
    unsigned elementStrides[5] = {1, 1, 1, 1, 1};
    for (unsigned i = 0; i < 5; ++i)
      dims[i] = spec.dims[i];
    for (unsigned i = 0; i < 4; ++i)
      strides[i] = spec.strides[i];
    CUtensorMap map;
    CUresult r = d.cuTensorMapEncodeTiled(
        &map, type, spec.rank, const_cast<void *>(spec.address), dims, strides,
        spec.box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        static_cast<CUtensorMapSwizzle>(spec.swizzle),
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      return Status::invalidArgument("cuTensorMapEncodeTiled refused the "
                                     "tensor map: " +
                                     d.error(r));
    TensorMapBytes bytes;
    static_assert(sizeof(map) == sizeof(bytes.bytes));
    std::memcpy(bytes.bytes, &map, sizeof(map));
    return bytes;
  }

private:
  const Driver &d;
  CUdevice device;
  CUcontext context;
  std::string name;
  int major, minor, sms;
  double bandwidthGBs;
  mutable std::mutex mutex;
  /// Why the device runs nothing more in this process (empty: it does): a
  /// synchronisation gave up on work that never finished, or a kernel
  /// faulted.
  std::string lost;

  /// FLASHC_CUDA_SYNC_TIMEOUT_S, read at each synchronisation: seconds, or
  /// 0 (unset) for no bound.
  static Result<double> getSyncTimeout() {
    const char *text = std::getenv("FLASHC_CUDA_SYNC_TIMEOUT_S");
    if (!text || !*text)
      return 0.0;
    char *end = nullptr;
    double seconds = std::strtod(text, &end);
    if (*end || !(seconds >= 0) || seconds > 1e6)
      return Status::invalidArgument(
          std::string("FLASHC_CUDA_SYNC_TIMEOUT_S is '") + text +
          "': give the seconds a synchronisation may wait (0 to 1e6; 0 or "
          "unset: no bound)");
    return seconds;
  }
  /// Loses the device for `why` (the first reason stays) and returns it.
  Status lose(const std::string &why) {
    std::lock_guard<std::mutex> lock(mutex);
    if (lost.empty())
      lost = why + "; this device runs nothing more in this process";
    return Status::make(ErrorCode::Launch, lost);
  }
  Status checkNotLost() const {
    std::lock_guard<std::mutex> lock(mutex);
    return lost.empty() ? Status::success()
                        : Status::make(ErrorCode::Launch, lost);
  }
  /// The errors after which the CUDA context is unusable (a kernel's fault:
  /// an illegal address or instruction, a misaligned address, a trap, a
  /// launch that failed or timed out).
  static bool isSticky(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
      return true;
    default:
      return false;
    }
  }
  /// The error (of kind `code`) of a driver call `what` that answered
  /// `r`; a sticky one loses the device.
  Status failed(CUresult r, const std::string &what,
                ErrorCode code = ErrorCode::Other) {
    if (isSticky(r))
      return lose(what + ": " + d.error(r) +
                  ": a kernel faulted, and the CUDA context is lost");
    return Status::make(code, what + ": " + d.error(r));
  }
  /// Loaded modules and functions, by variant id and image hash (two
  /// bundles' variants of one id may hold other kernels).
  std::map<std::string, CUmodule> modules;
  std::map<std::string, CUfunction> functions;
  /// The workspaces' pool, made at the first allocation; null when the
  /// device has none (then the default pool serves).
  CUmemoryPool pool = nullptr;
  bool poolTried = false;

  /// A pool on this device that never gives memory back while flashc
  /// runs: workspaces are freed in stream order and reused by the next
  /// call, whatever the caller synchronises in between.
  CUmemoryPool getPool() {
    std::lock_guard<std::mutex> lock(mutex);
    if (poolTried)
      return pool;
    poolTried = true;
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location = {CU_MEM_LOCATION_TYPE_DEVICE, device};
    CUmemoryPool made = nullptr;
    if (d.cuMemPoolCreate(&made, &props) != CUDA_SUCCESS || !made)
      return nullptr;
    // Without the threshold the pool is as good as the default one.
    unsigned long long keep = ~0ull;
    d.cuMemPoolSetAttribute(made, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    pool = made;
    return pool;
  }

  Status makeCurrent() {
    CUcontext current = nullptr;
    d.cuCtxGetCurrent(&current);
    if (current)
      return Status::success();
    if (CUresult r = d.cuCtxSetCurrent(context); r != CUDA_SUCCESS)
      return Status::error("cuCtxSetCurrent: " + d.error(r));
    return Status::success();
  }

  Result<CUfunction> getFunction(const KernelVariant &variant,
                                 const KernelEntry &kernel) {
    uint64_t hash =
        variant.imageHash ? variant.imageHash : variant.computeImageHash();
    std::string moduleKey = variant.id + "#" + std::to_string(hash);
    std::string key = moduleKey + "/" + kernel.name;
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = functions.find(key); it != functions.end())
      return it->second;
    CUmodule module = nullptr;
    if (auto it = modules.find(moduleKey); it != modules.end()) {
      module = it->second;
    } else {
      // A cubin when it was assembled for this device's chip, else PTX
      // (which the driver compiles, and which runs on newer chips too).
      // A cubin the driver refuses (say, from a newer ptxas than the
      // driver knows) falls back to the PTX.
      auto load = [&](const void *image) -> std::string {
        char log[4096] = {0};
        CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
        CUresult r = d.cuModuleLoadDataEx(&module, image, 2, options, values);
        if (r == CUDA_SUCCESS)
          return "";
        return d.error(r) + (log[0] ? ": " : "") + log;
      };
      bool useCubin = !variant.cubin.empty() && variant.query.target == getChip();
      std::string cubinError;
      if (useCubin)
        cubinError = load(variant.cubin.data());
      if (!useCubin || !cubinError.empty()) {
        if (std::string ptxError = load(variant.ptx.c_str()); !ptxError.empty())
          return Status::error(
              "loading the kernels of '" + variant.id + "': " +
              (useCubin ? "cubin: " + cubinError + "; PTX: " : "") + ptxError);
      }
      modules[moduleKey] = module;
    }
    CUfunction fn = nullptr;
    if (CUresult r = d.cuModuleGetFunction(&fn, module, kernel.name.c_str());
        r != CUDA_SUCCESS)
      return Status::error("no kernel '" + kernel.name + "' in '" +
                           variant.id + "': " + d.error(r));
    // Above 48 KB, dynamic shared memory must be opted into.
    if (CUresult r = d.cuFuncSetAttribute(
            fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            static_cast<int>(kernel.sharedBytes));
        r != CUDA_SUCCESS)
      return Status::error(kernel.name + " needs " +
                           std::to_string(kernel.sharedBytes) +
                           " bytes of shared memory: " + d.error(r));
    functions[key] = fn;
    return fn;
  }
};

} // namespace

static Result<std::shared_ptr<Device>> openCudaDevice(int ordinal) {
  Status status;
  const Driver &d = getDriver(status);
  if (status)
    return status;
  int count = 0;
  if (CUresult r = d.cuDeviceGetCount(&count); r != CUDA_SUCCESS || count == 0)
    return Status::error("no CUDA device is present");
  if (ordinal < 0 || ordinal >= count)
    return Status::error("no CUDA device " + std::to_string(ordinal) + " (" +
                         std::to_string(count) + " present)");
  CUdevice device;
  if (CUresult r = d.cuDeviceGet(&device, ordinal); r != CUDA_SUCCESS)
    return Status::error("cuDeviceGet: " + d.error(r));
  int major = 0, minor = 0, sms = 0;
  d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                         device);
  d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                         device);
  d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                         device);
  // Peak bandwidth: two transfers per memory clock (kHz) over the bus
  // (bits); 0 (the chip's published figure) when the driver says neither.
  int memoryKHz = 0, busBits = 0;
  d.cuDeviceGetAttribute(&memoryKHz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
                         device);
  d.cuDeviceGetAttribute(&busBits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
                         device);
  double bandwidthGBs = 2.0 * memoryKHz * 1e3 * (busBits / 8.0) / 1e9;
  if (major < 8)
    return Status::error("flashc's GPU kernels need compute capability 8.0 "
                         "or newer, device " +
                         std::to_string(ordinal) + " has " +
                         std::to_string(major) + "." + std::to_string(minor));
  char name[256] = {0};
  d.cuDeviceGetName(name, sizeof(name), device);
  CUcontext context = nullptr;
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&context, device);
      r != CUDA_SUCCESS)
    return Status::error("cuDevicePrimaryCtxRetain: " + d.error(r));
  return std::shared_ptr<Device>(
      new CudaDevice(d, device, context, name, major, minor, sms,
                     bandwidthGBs));
}

Result<std::shared_ptr<Device>> runtime::getCudaDevice(int ordinal) {
  // One device object per ordinal, so that loaded kernels are shared.
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<Device>> devices;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = devices.find(ordinal); it != devices.end())
    return it->second;
  Result<std::shared_ptr<Device>> device = openCudaDevice(ordinal);
  if (!device)
    return Status::make(ErrorCode::NoDevice, device.message());
  devices[ordinal] = *device;
  return device;
}
