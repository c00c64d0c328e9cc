//===- FakeCudaDriver.cpp - libcuda.so.1 over the PTX simulator -----------===//
//
// A stand-in for the CUDA driver, built as `libcuda.so.1` in its own
// directory of the build tree. A test that puts that directory first on
// LD_LIBRARY_PATH makes the runtime's `dlopen("libcuda.so.1")` find it, so
// the runtime's CUDA device path (driver loading, contexts, module loading
// with the cubin-to-PTX fallback, the dynamic shared-memory opt-in,
// argument packing for cuLaunchKernel, device allocations and copies) runs
// on a machine without a GPU. Kernels execute in flashc's PTX simulator
// over "device memory": host memory that cuMemAllocAsync maps into the
// simulator's address space and returns the simulated address of, each
// allocation in a region of its own between unmapped guard gaps. Device
// pointers are not host pointers, as on a GPU: copies translate them, and
// the runtime cannot dereference them by mistake.
//
// It is strict where the real driver is, so that the runtime's mistakes
// show:
// - every call but initialisation, device queries and error strings needs
//   a current context on the calling thread (CUDA_ERROR_INVALID_CONTEXT);
// - a kernel's global accesses must fall inside live allocations (the
//   simulator's bounds check; CUDA_ERROR_ILLEGAL_ADDRESS), and copies must
//   stay inside one allocation; an access past the end of an allocation
//   never reaches the next one (the guard gaps), and no address is handed
//   out twice, so a freed allocation stays illegal;
// - two CTAs of a launch storing to one byte is an error too (the
//   simulator's write-ownership check), as is a thread running more than
//   100 million instructions;
// - more than 48 KB of dynamic shared memory needs
//   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first, within the
//   chip's opt-in limit; blocks are checked against the kernel's .maxntid;
// - PTX for sm_90a loads on compute capability 9.0 only, and cubins not at
//   all (it cannot run SASS): CUDA_ERROR_NO_BINARY_FOR_GPU, with a line in
//   the JIT error log.
//
// cuTensorMapEncodeTiled writes the simulator's own tensor-map format
// (flashc/Simulator/TensorMap.h), which the simulator's TMA reads, after
// the checks cuda.h documents; it prints why it refuses a map.
//
// FLASHC_FAKE_CUDA_CC ("8.0" or "9.0", default 9.0) picks the chip it
// claims to be. cuLaunchKernelEx takes programmatic stream serialization
// (counted for flashcFakeCudaLaunchStats), or refuses it with
// CUDA_ERROR_NOT_SUPPORTED under FLASHC_FAKE_CUDA_NO_PROGRAMMATIC_LAUNCH=1,
// read at each call; FLASHC_FAKE_CUDA_NO_TENSOR_MAPS=1 likewise makes
// cuTensorMapEncodeTiled refuse every map (CUDA_ERROR_NOT_SUPPORTED).
// FLASHC_FAKE_CUDA_SKIP_LAUNCHES=1 checks each launch and its arguments but
// runs nothing (for timing the runtime's own host work, `flashc-gpucheck
// hosttime`). Errors of a launch are printed on stderr.
// FLASHC_FAKE_CUDA_HANG_AT=N makes the Nth launch (from 1) a kernel that
// never finishes, as one waiting on a barrier nothing arrives at would on
// a GPU: it runs nothing, cuStreamQuery answers CUDA_ERROR_NOT_READY from
// then on, cuStreamSynchronize waits for ever, and the launches and
// copies queued after it never run. FLASHC_FAKE_CUDA_FAULT_AT=N makes the
// Nth launch a kernel that faults: it answers CUDA_ERROR_ILLEGAL_ADDRESS,
// and so does every launch, copy and wait after it (a sticky error).
//
//===----------------------------------------------------------------------===//

#include "CudaDriverApi.h"

#include "flashc/Simulator/Simulator.h"
#include "flashc/Simulator/TensorMap.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sim = flashc::sim;
using namespace flashc::cuda;

namespace {

struct Function {
  std::shared_ptr<const sim::Module> module;
  const sim::KernelInfo *info = nullptr;
  /// Dynamic shared memory a launch may ask for (48 KB until raised).
  int maxDynamicShared = 48 * 1024;
};

struct ModuleHandle {
  std::shared_ptr<const sim::Module> module;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

struct State {
  std::mutex mutex;
  bool initialised = false;
  int major = 9, minor = 0, sms = 132;
  /// FLASHC_FAKE_CUDA_SKIP_LAUNCHES: launches are checked, not run.
  bool skipLaunches = false;
  /// Device memory: every live allocation mapped at its device address.
  sim::Device memory;
  /// Live allocations: device address -> host memory.
  std::map<uint64_t, void *> allocations;
  /// Memory pools (their addresses are the handles) and what was asked of
  /// them, for flashcFakeCudaPoolStats.
  std::vector<std::unique_ptr<unsigned long long>> poolThresholds;
  unsigned long long defaultPoolAllocations = 0, poolAllocations = 0;
  /// Launches, and those with programmatic stream serialization
  /// (cuLaunchKernelEx), for flashcFakeCudaLaunchStats.
  unsigned long long launches = 0, programmaticLaunches = 0;
  /// FLASHC_FAKE_CUDA_HANG_AT's launch came: nothing finishes any more.
  bool hung = false;
  /// FLASHC_FAKE_CUDA_FAULT_AT's launch came: the context is lost.
  bool faulted = false;
  std::vector<std::unique_ptr<ModuleHandle>> modules;
};

State &state() {
  static State s;
  return s;
}

/// The one (primary) context: its address is the handle.
int primaryContext;
thread_local CUcontext current = nullptr;

CUcontext primary() { return reinterpret_cast<CUcontext>(&primaryContext); }

int optInSharedLimit(const State &s) {
  return s.major == 9 ? 227 * 1024 : 163 * 1024;
}

bool hasContext() { return current == primary(); }

/// Whether calls about `device` can be answered: after cuInit, device 0.
CUresult checkDevice(int device) {
  if (!state().initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/// The host memory of device addresses [addr, addr + bytes) when one
/// allocation holds them, else null.
uint8_t *hostOf(const State &s, uint64_t addr, uint64_t bytes) {
  const sim::Device::Buffer *buffer = s.memory.findBuffer(addr, bytes);
  return buffer ? buffer->translate(addr) : nullptr;
}

void writeLog(unsigned numOptions, CUjit_option *options, void **values,
              const std::string &message) {
  char *buffer = nullptr;
  size_t size = 0;
  for (unsigned i = 0; i < numOptions; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      buffer = static_cast<char *>(values[i]);
    else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      size = reinterpret_cast<size_t>(values[i]);
  }
  if (buffer && size) {
    std::strncpy(buffer, message.c_str(), size - 1);
    buffer[size - 1] = 0;
  }
}

} // namespace

extern "C" {

// Every entry point the runtime looks up, under the symbol it looks up (a
// definition below that does not match the runtime's type for it does not
// compile).
#define FLASHC_FAKE_CUDA_DECLARE(name, symbol, type)                           \
  name##Fn name __asm__(symbol);
FLASHC_CUDA_DRIVER_FUNCTIONS(FLASHC_FAKE_CUDA_DECLARE)
FLASHC_CUDA_DRIVER_OPTIONAL_FUNCTIONS(FLASHC_FAKE_CUDA_DECLARE)
#undef FLASHC_FAKE_CUDA_DECLARE

CUresult cuInit(unsigned flags) {
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (const char *cc = std::getenv("FLASHC_FAKE_CUDA_CC")) {
    if (std::strcmp(cc, "8.0") == 0) {
      s.major = 8;
      s.minor = 0;
      s.sms = 108;
    } else if (std::strcmp(cc, "9.0") != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (const char *skip = std::getenv("FLASHC_FAKE_CUDA_SKIP_LAUNCHES"))
    s.skipLaunches = std::strcmp(skip, "1") == 0;
  s.initialised = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  if (!state().initialised)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (CUresult r = checkDevice(ordinal))
    return r;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice device) {
  if (CUresult r = checkDevice(device))
    return r;
  State &s = state();
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = s.major;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = s.minor;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = s.sms;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = optInSharedLimit(s);
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
  if (CUresult r = checkDevice(device))
    return r;
  std::snprintf(name, length, "flashc fake CUDA driver (PTX simulator)");
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  if (CUresult r = checkDevice(device))
    return r;
  *context = primary();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
  *context = current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
  if (context && context != primary())
    return CUDA_ERROR_INVALID_CONTEXT;
  current = context;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned numOptions, CUjit_option *options,
                            void **values) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  const char *text = static_cast<const char *>(image);
  if (std::memcmp(text,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    writeLog(numOptions, options, values,
             "the fake CUDA driver runs PTX, not cubins");
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  State &s = state();
  // `.target sm_NN[a]`: no newer chip than the device, and an `a` target
  // only on its own chip.
  if (const char *t = std::strstr(text, ".target sm_")) {
    int chip = std::atoi(t + 11);
    const char *end = t + 11;
    while (*end >= '0' && *end <= '9')
      ++end;
    int own = s.major * 10 + s.minor;
    if (chip > own || (*end == 'a' && chip != own)) {
      writeLog(numOptions, options, values,
               "PTX for sm_" + std::to_string(chip) + (*end == 'a' ? "a" : "") +
                   " on a device of compute capability " +
                   std::to_string(s.major) + "." + std::to_string(s.minor));
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
  }
  flashc::Result<std::shared_ptr<const sim::Module>> parsed =
      sim::Module::parse(text, "module.ptx");
  if (!parsed) {
    writeLog(numOptions, options, values, parsed.status().message());
    return CUDA_ERROR_INVALID_PTX;
  }
  auto handle = std::make_unique<ModuleHandle>();
  handle->module = *parsed;
  std::lock_guard<std::mutex> lock(s.mutex);
  *module = reinterpret_cast<CUmodule>(handle.get());
  s.modules.push_back(std::move(handle));
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                             const char *name) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  auto *handle = reinterpret_cast<ModuleHandle *>(module);
  const sim::KernelInfo *info = handle->module->getKernel(name);
  if (!info)
    return CUDA_ERROR_NOT_FOUND;
  std::lock_guard<std::mutex> lock(state().mutex);
  std::unique_ptr<Function> &f = handle->functions[name];
  if (!f) {
    f = std::make_unique<Function>();
    f->module = handle->module;
    f->info = info;
  }
  *function = reinterpret_cast<CUfunction>(f.get());
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute,
                            int value) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  auto *f = reinterpret_cast<Function *>(function);
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return CUDA_ERROR_NOT_SUPPORTED;
  State &s = state();
  if (value < 0 || value + static_cast<int>(f->info->staticSharedBytes) >
                       optInSharedLimit(s))
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(s.mutex);
  f->maxDynamicShared = value;
  return CUDA_SUCCESS;
}

/// A launch of either entry point, after its own checks.
static CUresult launch(CUfunction function, unsigned gridX, unsigned gridY,
                       unsigned gridZ, unsigned blockX, unsigned blockY,
                       unsigned blockZ, unsigned sharedBytes, CUstream,
                       void **params, void **extra, bool programmatic);

CUresult cuLaunchKernel(CUfunction function, unsigned gridX, unsigned gridY,
                        unsigned gridZ, unsigned blockX, unsigned blockY,
                        unsigned blockZ, unsigned sharedBytes, CUstream stream,
                        void **params, void **extra) {
  return launch(function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                sharedBytes, stream, params, extra, /*programmatic=*/false);
}

/// cuLaunchKernel with launch attributes: programmatic stream
/// serialization (0 or 1) is the one it knows, on compute capability 9.0
/// (the kernels run one after the other all the same: a kernel's
/// griddepcontrol.wait is always met).
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction function,
                          void **params, void **extra) {
  if (!config || (config->numAttrs && !config->attrs))
    return CUDA_ERROR_INVALID_VALUE;
  // FLASHC_FAKE_CUDA_NO_PROGRAMMATIC_LAUNCH=1: a driver that refuses it.
  if (const char *no = std::getenv("FLASHC_FAKE_CUDA_NO_PROGRAMMATIC_LAUNCH");
      no && std::strcmp(no, "1") == 0 && config->numAttrs)
    return CUDA_ERROR_NOT_SUPPORTED;
  bool programmatic = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute &a = config->attrs[i];
    if (a.id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      return CUDA_ERROR_NOT_SUPPORTED;
    int allowed = a.value.programmaticStreamSerializationAllowed;
    if (allowed != 0 && allowed != 1)
      return CUDA_ERROR_INVALID_VALUE;
    if (allowed && state().major < 9)
      return CUDA_ERROR_NOT_SUPPORTED;
    programmatic |= allowed == 1;
  }
  return launch(function, config->gridDimX, config->gridDimY, config->gridDimZ,
                config->blockDimX, config->blockDimY, config->blockDimZ,
                config->sharedMemBytes, config->hStream, params, extra,
                programmatic);
}

/// What flashc's runtime asked of the launches so far: all of them, and
/// those with programmatic stream serialization.
void flashcFakeCudaLaunchStats(unsigned long long *launches,
                               unsigned long long *programmatic) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *launches = s.launches;
  *programmatic = s.programmaticLaunches;
}

static CUresult launch(CUfunction function, unsigned gridX, unsigned gridY,
                       unsigned gridZ, unsigned blockX, unsigned blockY,
                       unsigned blockZ, unsigned sharedBytes, CUstream,
                       void **params, void **extra, bool programmatic) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  auto *f = reinterpret_cast<Function *>(function);
  const sim::KernelInfo &info = *f->info;
  if (extra || (!params && !info.params.empty()))
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t threads = uint64_t(blockX) * blockY * blockZ;
  if (gridX == 0 || gridY == 0 || gridZ == 0 || threads == 0 ||
      threads > 1024 || gridX > 0x7fffffffu || gridY > 65535 || gridZ > 65535 ||
      blockZ > 64)
    return CUDA_ERROR_INVALID_VALUE;
  if (info.maxBlock.x && threads > info.maxBlock.count())
    return CUDA_ERROR_INVALID_VALUE;
  if (static_cast<int>(sharedBytes) > f->maxDynamicShared)
    return CUDA_ERROR_INVALID_VALUE;
  // Each parameter is as many bytes as the kernel declares, read from
  // where `params[i]` points (as the driver does).
  std::vector<sim::KernelArg> args(info.params.size());
  for (size_t i = 0; i < info.params.size(); ++i) {
    args[i].bytes.resize(info.params[i].bytes);
    std::memcpy(args[i].bytes.data(), params[i], info.params[i].bytes);
  }
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.faulted)
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  ++s.launches;
  s.programmaticLaunches += programmatic;
  if (const char *at = std::getenv("FLASHC_FAKE_CUDA_HANG_AT");
      at && std::strtoull(at, nullptr, 10) == s.launches)
    s.hung = true;
  if (const char *at = std::getenv("FLASHC_FAKE_CUDA_FAULT_AT");
      at && std::strtoull(at, nullptr, 10) == s.launches) {
    s.faulted = true;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  if (s.skipLaunches || s.hung)
    return CUDA_SUCCESS;
  sim::LaunchConfig config;
  config.grid = sim::Dim3{gridX, gridY, gridZ};
  config.block = sim::Dim3{blockX, blockY, blockZ};
  config.dynamicSharedBytes = sharedBytes;
  config.maxInstructionsPerThread = 100000000;
  config.programmatic = programmatic;
  flashc::Result<sim::LaunchStats> stats =
      s.memory.launch(*f->module, info.name, config, args);
  if (!stats) {
    std::fprintf(stderr, "fake CUDA driver: %s: %s\n", info.name.c_str(),
                 stats.status().message().c_str());
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  return CUDA_SUCCESS;
}

/// An allocation from any pool: host memory mapped at a fresh address,
/// counted in `counter`.
static CUresult allocate(CUdeviceptr *pointer, size_t bytes,
                         unsigned long long State::*counter) {
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (bytes > (uint64_t(1) << 48))
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  flashc::Result<uint64_t> address =
      s.memory.mapBuffer(p, bytes, "allocation " + std::to_string(bytes));
  if (!address) {
    std::free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  s.allocations[*address] = p;
  *pointer = static_cast<CUdeviceptr>(*address);
  ++(s.*counter);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr *pointer, size_t bytes, CUstream) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  return allocate(pointer, bytes, &State::defaultPoolAllocations);
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      props->win32SecurityAttributes)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkDevice(props->location.id))
    return r;
  for (unsigned char byte : props->reserved)
    if (byte)
      return CUDA_ERROR_INVALID_VALUE;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.poolThresholds.push_back(std::make_unique<unsigned long long>(0));
  *pool = reinterpret_cast<CUmemoryPool>(s.poolThresholds.back().get());
  return CUDA_SUCCESS;
}

/// The release threshold of `pool`, or null when no pool has that handle.
static unsigned long long *findPool(State &s, CUmemoryPool pool) {
  for (const std::unique_ptr<unsigned long long> &p : s.poolThresholds)
    if (reinterpret_cast<CUmemoryPool>(p.get()) == pool)
      return p.get();
  return nullptr;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                               void *value) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  unsigned long long *threshold = findPool(s, pool);
  if (!threshold || !value)
    return CUDA_ERROR_INVALID_VALUE;
  if (attribute != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    return CUDA_ERROR_NOT_SUPPORTED;
  *threshold = *static_cast<unsigned long long *>(value);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *pointer, size_t bytes,
                                 CUmemoryPool pool, CUstream) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!findPool(s, pool))
      return CUDA_ERROR_INVALID_VALUE;
  }
  return allocate(pointer, bytes, &State::poolAllocations);
}

/// Not a driver entry point: what the tests ask of the stand-in about its
/// pools. The count of pools made, the release threshold of the last one
/// (0 when none), and the allocations from the default pool
/// (cuMemAllocAsync) and from made pools.
void flashcFakeCudaPoolStats(unsigned long long *pools,
                             unsigned long long *lastThreshold,
                             unsigned long long *defaultAllocations,
                             unsigned long long *poolAllocations) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *pools = s.poolThresholds.size();
  *lastThreshold = s.poolThresholds.empty() ? 0 : *s.poolThresholds.back();
  *defaultAllocations = s.defaultPoolAllocations;
  *poolAllocations = s.poolAllocations;
}

CUresult cuMemFreeAsync(CUdeviceptr pointer, CUstream) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(static_cast<uint64_t>(pointer));
  if (it == s.allocations.end())
    return CUDA_ERROR_INVALID_VALUE;
  if (s.memory.unmapBuffer(it->first))
    return CUDA_ERROR_UNKNOWN;
  std::free(it->second);
  s.allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
                           CUstream) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.faulted)
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  uint8_t *host = hostOf(s, dst, bytes);
  if (!host)
    return CUDA_ERROR_INVALID_VALUE;
  if (!s.hung)
    std::memcpy(host, src, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.faulted)
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  const uint8_t *host = hostOf(s, src, bytes);
  if (!host)
    return CUDA_ERROR_INVALID_VALUE;
  if (!s.hung)
    std::memcpy(dst, host, bytes);
  return CUDA_SUCCESS;
}

static bool isHung() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.hung;
}

static bool isFaulted() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.faulted;
}

CUresult cuStreamSynchronize(CUstream) {
  // Launches and copies run to completion when made, but for a kernel that
  // hangs.
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (isFaulted())
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (isHung()) {
    std::fprintf(stderr, "fake CUDA driver: cuStreamSynchronize waits for a "
                         "kernel that never finishes\n");
    while (true)
      std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream) {
  if (!hasContext())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (isFaulted())
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  return isHung() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult cuTensorMapEncodeTiled(
    CUtensorMap *map, CUtensorMapDataType type, unsigned rank, void *address,
    const unsigned long long *dims, const unsigned long long *strides,
    const unsigned *box, const unsigned *elementStrides,
    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oobFill) {
  // The simulator's own encoding (flashc/Simulator/TensorMap.h), which its
  // TMA reads. Like the real driver, this needs no context and does not
  // check that the address is an allocation.
  if (const char *no = std::getenv("FLASHC_FAKE_CUDA_NO_TENSOR_MAPS");
      no && std::strcmp(no, "1") == 0)
    return CUDA_ERROR_NOT_SUPPORTED;
  static_assert(sizeof(unsigned long long) == sizeof(uint64_t));
  sim::TensorMapTiledArgs args;
  args.dataType = static_cast<uint32_t>(type);
  args.rank = rank;
  args.globalAddress = reinterpret_cast<uint64_t>(address);
  args.globalDim = reinterpret_cast<const uint64_t *>(dims);
  args.globalStrides = reinterpret_cast<const uint64_t *>(strides);
  args.boxDim = box;
  args.elementStrides = elementStrides;
  args.interleave = static_cast<uint32_t>(interleave);
  args.swizzle = static_cast<uint32_t>(swizzle);
  args.l2Promotion = static_cast<uint32_t>(l2);
  args.oobFill = static_cast<uint32_t>(oobFill);
  if (flashc::Status e = sim::encodeTensorMapTiled(map, args)) {
    std::fprintf(stderr, "fake CUDA driver: cuTensorMapEncodeTiled: %s\n",
                 e.message().c_str());
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  switch (error) {
  case CUDA_SUCCESS:
    *text = "no error";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE:
    *text = "invalid argument";
    return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *text = "out of memory";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_INITIALIZED:
    *text = "initialization error";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_DEVICE:
    *text = "invalid device ordinal";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    *text = "no kernel image is available for execution on the device";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_CONTEXT:
    *text = "invalid device context";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_PTX:
    *text = "a PTX JIT compilation failed";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND:
    *text = "named symbol not found";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_READY:
    *text = "device not ready";
    return CUDA_SUCCESS;
  case CUDA_ERROR_ILLEGAL_ADDRESS:
    *text = "an illegal memory access was encountered";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_SUPPORTED:
    *text = "operation not supported";
    return CUDA_SUCCESS;
  default:
    *text = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
}

} // extern "C"
