//===- SimulatorDevice.cpp - The PTX simulator as a device ----------------===//
//
// Runs a variant's kernels in flashc's PTX simulator over host memory: each
// pointer argument is mapped on its own, with the extent the runtime gives
// it, at a simulated address between unmapped guard gaps, and the kernel
// receives that address. Arguments are never merged, even when they are
// views of one allocation (the decode workspace's partials and their
// log-sum-exps) or adjacent in host memory, so a kernel that overruns one
// argument into the next faults. Every launch checks bounds, alignment,
// shared-memory races, global bytes stored to by two CTAs and barrier
// deadlocks, within an instruction and a memory budget
// (SimulatorOptions), and an error comes back as a Status naming the
// kernel, PTX line and thread: a fault of the kernel with its own code
// (ErrorCode::OutOfBounds, Race, ...), any other failure a Launch error.
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Runtime.h"
#include "flashc/Simulator/Simulator.h"
#include "flashc/Simulator/TensorMap.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

using namespace flashc;
using namespace flashc::runtime;

namespace {

/// The simulator's error `s` in launching `kernel`, as the device's: a
/// fault of the kernel keeps its code, anything else is a Launch error.
Status launchError(const std::string &kernel, const Status &s) {
  return Status::make(s.isFault() ? s.code() : ErrorCode::Launch,
                      "simulating " + kernel + ": " + s.message());
}

class SimulatorDevice : public Device {
public:
  SimulatorDevice(std::string chip, const SimulatorOptions &options)
      : chip(std::move(chip)), options(options) {}
  ~SimulatorDevice() override {
    for (void *p : allocations)
      std::free(p);
  }

  std::string describe() const override {
    return "flashc PTX simulator (" + chip + ")";
  }
  bool isSimulator() const override { return true; }
  std::string getChip() const override { return chip; }
  int64_t getNumSMs() const override {
    // The figures of the chip it stands for, so that split counts match
    // what the real device would choose.
    return flashc::getWaveTarget(chip).numSMs;
  }
  double getMemoryBandwidthGBs() const override {
    return flashc::getWaveTarget(chip).memoryBandwidthGBs;
  }

  Result<void *> allocate(uint64_t bytes, void *) override {
    void *p = std::aligned_alloc(256, (std::max<uint64_t>(bytes, 1) + 255) /
                                          256 * 256);
    if (!p)
      return Status::error("out of host memory for a " +
                           std::to_string(bytes) + "-byte workspace");
    std::lock_guard<std::mutex> lock(mutex);
    allocations.insert(p);
    return p;
  }

  Status release(void *p, void *) override {
    std::lock_guard<std::mutex> lock(mutex);
    if (!allocations.erase(p))
      return Status::error("releasing memory the simulator did not allocate");
    std::free(p);
    return Status::success();
  }

  Status copyToDevice(void *dst, const void *src, uint64_t bytes,
                      void *) override {
    std::memcpy(dst, src, bytes);
    return Status::success();
  }
  Status copyToHost(void *dst, const void *src, uint64_t bytes,
                    void *) override {
    std::memcpy(dst, src, bytes);
    return Status::success();
  }
  Status synchronize(void *) override { return Status::success(); }

  /// The simulator's own format (flashc/Simulator/TensorMap.h), over the
  /// host address; a launch maps the tensor and rewrites the address.
  Result<TensorMapBytes> encodeTensorMap(const TensorMapSpec &spec) override {
    if (spec.rank < 1 || spec.rank > 5)
      return Status::invalidArgument("a tensor map of rank " +
                                     std::to_string(spec.rank) +
                                     " (1 to 5 are possible)");
    uint32_t elementStrides[5] = {1, 1, 1, 1, 1};
    sim::TensorMapTiledArgs args;
    args.dataType = static_cast<uint32_t>(
        spec.type == ElementType::F16    ? sim::TensorMapDataType::Float16
        : spec.type == ElementType::BF16 ? sim::TensorMapDataType::BFloat16
                                         : sim::TensorMapDataType::Float32);
    args.rank = spec.rank;
    args.globalAddress = reinterpret_cast<uint64_t>(spec.address);
    args.globalDim = spec.dims;
    args.globalStrides = spec.strides;
    args.boxDim = spec.box;
    args.elementStrides = elementStrides;
    args.swizzle = spec.swizzle;
    TensorMapBytes bytes;
    if (Status e = sim::encodeTensorMapTiled(bytes.bytes, args))
      return Status::invalidArgument(e.message());
    return bytes;
  }

  Status launch(const KernelVariant &variant, const KernelEntry &kernel,
                uint64_t grid, const std::vector<LaunchArg> &args,
                void *) override {
    Result<std::shared_ptr<const sim::Module>> module = getModule(variant);
    if (!module)
      return module.status();
    // Arguments are 8-byte slots; like the CUDA driver, pass each
    // parameter as many bytes as it declares (the low ones).
    const sim::KernelInfo *info = (*module)->getKernel(kernel.name);
    if (!info)
      return Status::error("no kernel '" + kernel.name + "' in " + variant.id);
    if (info->params.size() != args.size())
      return Status::error(kernel.name + " takes " +
                           std::to_string(info->params.size()) +
                           " parameters, " + std::to_string(args.size()) +
                           " given");
    // Global memory: each pointer argument its own buffer of its extent,
    // named after its parameter. A null pointer stays null; a pointer
    // with no extent keeps its host value, which no buffer holds.
    sim::Device device;
    std::vector<sim::KernelArg> simArgs;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].tensorMap) {
        // The map holds a host address: map the tensor's extent as a
        // buffer of its own and point the map at it.
        Result<sim::TensorMap> map = sim::decodeTensorMap(args[i].tensorMap);
        if (!map)
          return launchError(kernel.name, map.status());
        uint64_t extent = map->elementBytes;
        for (unsigned d = 0; d < map->rank; ++d)
          extent += (map->globalDim[d] - 1) * map->globalStride[d];
        Result<uint64_t> address =
            device.mapBuffer(reinterpret_cast<void *>(map->globalAddress),
                             extent, info->params[i].name + " (tensor map)");
        if (!address)
          return launchError(kernel.name, address.status());
        map->globalAddress = *address;
        sim::KernelArg arg;
        arg.bytes.assign(sim::kTensorMapBytes, 0);
        std::memcpy(arg.bytes.data(), &*map, sizeof(sim::TensorMap));
        simArgs.push_back(std::move(arg));
        continue;
      }
      uint64_t value = args[i].value;
      if (args[i].isPointer && value && args[i].extentBytes) {
        Result<uint64_t> address =
            device.mapBuffer(reinterpret_cast<void *>(value),
                             args[i].extentBytes, info->params[i].name);
        if (!address)
          return launchError(kernel.name, address.status());
        value = *address;
      }
      sim::KernelArg arg = sim::KernelArg::u64(value);
      arg.bytes.resize(std::min<size_t>(8, info->params[i].bytes));
      simArgs.push_back(arg);
    }
    sim::LaunchConfig config;
    if (grid > sim::kMaxGridX)
      return Status::make(ErrorCode::Launch,
                          "a grid of " + std::to_string(grid) +
                              " CTAs exceeds CUDA's limit of " +
                              std::to_string(sim::kMaxGridX));
    if (kernel.block <= 0 || kernel.block > sim::kMaxBlockThreads ||
        kernel.sharedBytes < 0 || kernel.sharedBytes > UINT32_MAX)
      return Status::make(ErrorCode::Launch,
                          "simulating " + kernel.name + ": a block of " +
                              std::to_string(kernel.block) + " threads with " +
                              std::to_string(kernel.sharedBytes) +
                              " bytes of shared memory cannot be launched");
    config.grid = sim::Dim3{static_cast<uint32_t>(grid), 1, 1};
    config.block = sim::Dim3{static_cast<uint32_t>(kernel.block), 1, 1};
    config.dynamicSharedBytes = static_cast<uint32_t>(kernel.sharedBytes);
    config.workers = options.workers;
    config.checkRaces = options.checkRaces;
    config.maxInstructionsPerThread = options.maxInstructionsPerThread;
    config.memoryBudgetBytes = options.memoryBudgetBytes;
    // A kernel launched early on a GPU must wait before touching memory.
    config.programmatic = kernel.programmaticLaunch;
    Result<sim::LaunchStats> stats =
        device.launch(**module, kernel.name, config, simArgs);
    if (!stats)
      return launchError(kernel.name, stats.status());
    std::lock_guard<std::mutex> lock(mutex);
    counters.threadInstructions += stats->threadInstructions;
    counters.seconds += stats->seconds;
    counters.ldmatrixMatrices += stats->ldmatrixMatrices;
    counters.wgmmaInstructions += stats->wgmmaInstructions;
    counters.tensorLoads += stats->tensorLoads;
    counters.tensorStores += stats->tensorStores;
    counters.setmaxnregInstructions += stats->setmaxnregInstructions;
    counters.barrierArrivals += stats->barrierArrivals;
    counters.ldmatrixExtraWavefronts += stats->ldmatrixExtraWavefronts;
    counters.sharedRequests += stats->sharedRequests;
    counters.sharedExtraWavefronts += stats->sharedExtraWavefronts;
    return Status::success();
  }

  SimulatorCounters getCounters() {
    std::lock_guard<std::mutex> lock(mutex);
    return counters;
  }

private:
  std::string chip;
  SimulatorOptions options;
  std::mutex mutex;
  std::set<void *> allocations;
  /// Parsed modules by variant id (the PTX is decoded once).
  std::map<std::string, std::pair<std::string, std::shared_ptr<const sim::Module>>>
      modules;
  SimulatorCounters counters;

  Result<std::shared_ptr<const sim::Module>>
  getModule(const KernelVariant &variant) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = modules.find(variant.id);
    if (it != modules.end() && it->second.first == variant.ptx)
      return it->second.second;
    Result<std::shared_ptr<const sim::Module>> parsed =
        sim::Module::parse(variant.ptx, variant.id + ".ptx");
    if (!parsed)
      return parsed.status();
    modules[variant.id] = {variant.ptx, *parsed};
    return *parsed;
  }
};

} // namespace

std::shared_ptr<Device>
runtime::getSimulatorDevice(const std::string &chip,
                            const SimulatorOptions &options) {
  return std::make_shared<SimulatorDevice>(chip, options);
}

SimulatorCounters
SimulatorCounters::operator-(const SimulatorCounters &earlier) const {
  SimulatorCounters d;
  d.threadInstructions = threadInstructions - earlier.threadInstructions;
  d.seconds = seconds - earlier.seconds;
  d.ldmatrixMatrices = ldmatrixMatrices - earlier.ldmatrixMatrices;
  d.ldmatrixExtraWavefronts =
      ldmatrixExtraWavefronts - earlier.ldmatrixExtraWavefronts;
  d.sharedRequests = sharedRequests - earlier.sharedRequests;
  d.sharedExtraWavefronts =
      sharedExtraWavefronts - earlier.sharedExtraWavefronts;
  d.wgmmaInstructions = wgmmaInstructions - earlier.wgmmaInstructions;
  d.tensorLoads = tensorLoads - earlier.tensorLoads;
  d.tensorStores = tensorStores - earlier.tensorStores;
  d.setmaxnregInstructions =
      setmaxnregInstructions - earlier.setmaxnregInstructions;
  d.barrierArrivals = barrierArrivals - earlier.barrierArrivals;
  return d;
}

Result<SimulatorCounters> runtime::getSimulatorCounters(const Device &device) {
  auto *sim = dynamic_cast<const SimulatorDevice *>(&device);
  if (!sim)
    return Status::error(device.describe() + " is not the simulator");
  return const_cast<SimulatorDevice *>(sim)->getCounters();
}
