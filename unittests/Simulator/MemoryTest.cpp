//===- MemoryTest.cpp - Guard gaps and write ownership --------------------===//
//
// Two classes of kernel bug the simulator, the only thing that executes
// these kernels here, once let through:
// - an access past the end of one buffer into the host memory of the next
//   (buffers were registered at their host addresses, and the runtime
//   merged the ranges of arguments that touched): now every buffer has a
//   region of its own in a simulated address space, between unmapped
//   guard gaps;
// - two CTAs storing to the same global bytes (the result depends on the
//   schedule): now each launch records which CTA stored each byte.
// Both are checked in the library, in the runtime's simulator device and in
// the fake CUDA driver the runtime's CUDA path is tested on.
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include "flashc/Runtime/Runtime.h"

#include "gtest/gtest.h"

#include <dlfcn.h>

#include <cstdlib>
#include <numeric>

using namespace flashc;
using namespace flashc::sim::test;

namespace {

const std::string kKernels = std::string(kPtxHeader) + R"(
// out[tid] = tid for tid < n.
.visible .entry fill(.param .u64 out, .param .u64 next, .param .u32 n)
{
  .reg .pred %p1;
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
DONE:
  ret;
}

// out[tid] = ctaid.x, by every CTA: a store of each byte per CTA.
.visible .entry everyCta(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}

// The same through a generic address.
.visible .entry everyCtaGeneric(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.u32 [%rd3], %r2;
  ret;
}

// out[blockDim * ctaid + tid] = ctaid, twice, by two threads of the CTA:
// disjoint across CTAs.
.visible .entry perCta(.param .u64 out)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.u32 %r4, %r2, %r3, %r1;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  and.b32 %r4, %r4, -2;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}

// A loop with a barrier in it, for ever.
.visible .entry spin(.param .u64 out)
{
SPIN:
  bar.sync 0;
  bra.uni SPIN;
}

// Every thread of every CTA adds 1 to out[0] and out[1].
.visible .entry atomics(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  atom.global.add.u32 %r1, [%rd1], 1;
  red.global.add.u32 [%rd1+4], 1;
  ret;
}
)";

std::shared_ptr<const sim::Module> kernels() {
  static std::shared_ptr<const sim::Module> module = [] {
    auto parsed = sim::Module::parse(kKernels, "memory.ptx");
    EXPECT_TRUE(ok(parsed));
    return parsed ? *parsed : nullptr;
  }();
  return module;
}

//===----------------------------------------------------------------------===//
// The simulated address space
//===----------------------------------------------------------------------===//

TEST(AddressSpaceTest, MappedBuffersSitApartAndTranslate) {
  std::vector<uint8_t> host(256);
  sim::Device device;
  auto a = device.mapBuffer(host.data(), 128, "a");
  auto b = device.mapBuffer(host.data() + 128, 128, "b");
  auto view = device.mapBuffer(host.data(), 256, "view"); // overlaps both
  ASSERT_TRUE(ok(a));
  ASSERT_TRUE(ok(b));
  ASSERT_TRUE(ok(view));
  // Far from host addresses, and a guard gap apart.
  EXPECT_GE(*a, uint64_t(1) << 60);
  EXPECT_GE(*b, *a + 128 + sim::Device::kGuardGapBytes);
  EXPECT_GE(*view, *b + 128 + sim::Device::kGuardGapBytes);
  const sim::Device::Buffer *buffer = device.findBuffer(*b + 8, 8);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(buffer->name, "b");
  EXPECT_EQ(buffer->translate(*b + 8), host.data() + 136);
  EXPECT_EQ(device.findBuffer(*a + 120, 16), nullptr) << "past the end of a";
  EXPECT_EQ(device.findBuffer(*a - 8, 8), nullptr) << "before a";
  EXPECT_EQ(device.findBuffer(UINT64_MAX - 4, 8), nullptr);
  // Addresses are not used twice.
  ASSERT_TRUE(ok(device.unmapBuffer(*a)));
  EXPECT_EQ(device.findBuffer(*a, 8), nullptr);
  auto again = device.mapBuffer(host.data(), 128, "again");
  ASSERT_TRUE(ok(again));
  EXPECT_GT(*again, *view);
  EXPECT_EQ(device.unmapBuffer(*a).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(device.mapBuffer(host.data(), 0).status().code(),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(device.mapBuffer(reinterpret_cast<void *>(~uint64_t(0) - 8), 64)
                .status()
                .code(),
            ErrorCode::InvalidArgument);
  auto huge = device.mapBuffer(host.data(), uint64_t(15) << 60);
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.status().code(), ErrorCode::Limit) << huge.status().message();
}

/// A kernel writing past the end of `out` into `next`, the bytes after it
/// in host memory: 16 elements too many.
class NeighbourTest : public ::testing::Test {
protected:
  std::vector<uint32_t> host = std::vector<uint32_t>(64, 0xdead);
  uint32_t *out = host.data(), *next = host.data() + 32;
  sim::LaunchConfig config() {
    sim::LaunchConfig c;
    c.block = {48};
    return c;
  }
};

TEST_F(NeighbourTest, AnOverflowIntoTheNextBufferIsOutOfBounds) {
  sim::Device device;
  auto o = device.mapBuffer(out, 32 * 4, "out");
  auto n = device.mapBuffer(next, 32 * 4, "next");
  ASSERT_TRUE(ok(o));
  ASSERT_TRUE(ok(n));
  auto r = device.launch(*kernels(), "fill", config(),
                         {sim::KernelArg::u64(*o), sim::KernelArg::u64(*n),
                          sim::KernelArg::u32(48)});
  ASSERT_FALSE(r) << "the overflow went unseen";
  EXPECT_EQ(r.status().code(), ErrorCode::OutOfBounds);
  EXPECT_NE(r.status().message().find(
                "outside every registered buffer (0 bytes past the end of "
                "buffer 'out')"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("by thread (32,0,0)"), std::string::npos)
      << r.status().message();
  for (uint32_t i = 32; i < 64; ++i)
    EXPECT_EQ(host[i], 0xdeadu) << "next[" << i - 32 << "] was written";
  // Within its bounds, the kernel writes the host memory.
  ASSERT_TRUE(
      ok(device.launch(*kernels(), "fill", config(),
                       {sim::KernelArg::u64(*o), sim::KernelArg::u64(*n),
                        sim::KernelArg::u32(32)})));
  for (uint32_t i = 0; i < 32; ++i)
    EXPECT_EQ(host[i], i);
}

/// What the guard gaps prevent: buffers registered at their host
/// addresses are adjacent, and the same overflow lands in `next`.
TEST_F(NeighbourTest, AdjacentHostRegistrationsHideTheOverflow) {
  sim::Device device;
  ASSERT_TRUE(ok(device.registerBuffer(out, 32 * 4, "out")));
  ASSERT_TRUE(ok(device.registerBuffer(next, 32 * 4, "next")));
  ASSERT_TRUE(ok(
      device.launch(*kernels(), "fill", config(),
                    {sim::KernelArg::pointer(out),
                     sim::KernelArg::pointer(next), sim::KernelArg::u32(48)})));
  EXPECT_EQ(host[32], 32u) << "the overflow wrote next[0]";
}

//===----------------------------------------------------------------------===//
// Write ownership
//===----------------------------------------------------------------------===//

class OwnershipTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto o = device.mapBuffer(out.data(), out.size() * 4, "out");
    ASSERT_TRUE(ok(o));
    address = *o;
  }
  Result<sim::LaunchStats> launch(const char *kernel, uint32_t grid,
                                  unsigned workers = 1, bool check = true) {
    sim::LaunchConfig config;
    config.grid = {grid};
    config.block = {32};
    config.workers = workers;
    config.checkGlobalWrites = check;
    return device.launch(*kernels(), kernel, config,
                         {sim::KernelArg::u64(address)});
  }
  std::vector<uint32_t> out = std::vector<uint32_t>(256, 0);
  sim::Device device;
  uint64_t address = 0;
};

/// Every CTA stores to out[tid]: the last CTA to run wins, which depends on
/// the schedule.
TEST_F(OwnershipTest, TwoCTAsStoringOneByteIsARace) {
  for (const char *kernel : {"everyCta", "everyCtaGeneric"})
    for (unsigned workers : {1u, 2u, 4u}) {
      SCOPED_TRACE(std::string(kernel) + ", " + std::to_string(workers) +
                   " workers");
      auto r = launch(kernel, 2, workers);
      ASSERT_FALSE(r) << "no error";
      EXPECT_EQ(r.status().code(), ErrorCode::Race);
      EXPECT_TRUE(r.status().isFault());
      const std::string &msg = r.status().message();
      EXPECT_NE(msg.find("race: global address 0x"), std::string::npos) << msg;
      EXPECT_NE(msg.find("of buffer 'out') is stored to by CTA (0,0,0) and "
                         "by CTA (1,0,0), which run in no fixed order"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("in kernel '" + std::string(kernel) + "'"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("memory.ptx:"), std::string::npos) << msg;
    }
  // Without the check, the launch completes.
  EXPECT_TRUE(ok(launch("everyCta", 4, 1, false)));
  // One CTA is no race, nor are two launches storing to the same bytes.
  EXPECT_TRUE(ok(launch("everyCta", 1)));
  EXPECT_TRUE(ok(launch("everyCta", 1)));
}

/// Disjoint CTAs pass, threads of one CTA storing to one byte included;
/// atom and red are exempt.
TEST_F(OwnershipTest, DisjointStoresAndAtomicsPass) {
  for (unsigned workers : {1u, 3u}) {
    ASSERT_TRUE(ok(launch("perCta", 8, workers)));
    for (uint32_t i = 0; i < 256; ++i)
      EXPECT_EQ(out[i], i / 32) << i;
    std::fill(out.begin(), out.end(), 0);
    ASSERT_TRUE(ok(launch("atomics", 8, workers)));
    EXPECT_EQ(out[0], 256u);
    EXPECT_EQ(out[1], 256u);
    std::fill(out.begin(), out.end(), 0);
  }
}

/// The records count in the memory budget.
TEST_F(OwnershipTest, RecordsAreWithinTheBudget) {
  std::vector<uint32_t> big(1 << 20);
  auto b = device.mapBuffer(big.data(), big.size() * 4, "big");
  ASSERT_TRUE(ok(b));
  sim::LaunchConfig config;
  config.grid = {1024};
  config.block = {1024};
  config.memoryBudgetBytes = 16u << 20; // the records take 16 MiB
  auto r =
      device.launch(*kernels(), "perCta", config, {sim::KernelArg::u64(*b)});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), ErrorCode::Limit) << r.status().message();
  EXPECT_NE(r.status().message().find("write-ownership records"),
            std::string::npos)
      << r.status().message();
  config.checkGlobalWrites = false;
  EXPECT_TRUE(ok(
      device.launch(*kernels(), "perCta", config, {sim::KernelArg::u64(*b)})));
  config.checkGlobalWrites = true;
  config.memoryBudgetBytes = 64u << 20;
  EXPECT_TRUE(ok(
      device.launch(*kernels(), "perCta", config, {sim::KernelArg::u64(*b)})));
}

//===----------------------------------------------------------------------===//
// The runtime's simulator device
//===----------------------------------------------------------------------===//

runtime::LaunchArg pointerArg(const void *p, uint64_t bytes) {
  runtime::LaunchArg a;
  a.value = reinterpret_cast<uint64_t>(p);
  a.isPointer = true;
  a.extentBytes = bytes;
  return a;
}

runtime::LaunchArg scalarArg(uint64_t v) {
  runtime::LaunchArg a;
  a.value = v;
  return a;
}

class SimulatorDeviceTest : public ::testing::Test {
protected:
  Status launch(const char *kernel, uint64_t grid, int64_t block,
                const std::vector<runtime::LaunchArg> &args,
                runtime::SimulatorOptions options = {}) {
    runtime::KernelVariant variant;
    variant.id = "memory-test";
    variant.ptx = kKernels;
    runtime::KernelEntry entry;
    entry.name = kernel;
    entry.block = block;
    return runtime::getSimulatorDevice("sm_80", options)
        ->launch(variant, entry, grid, args, nullptr);
  }
  std::vector<uint32_t> host = std::vector<uint32_t>(64, 0xdead);
};

/// Arguments that touch in host memory (here two halves of one
/// allocation) were merged into one buffer: the overflow was silent.
TEST_F(SimulatorDeviceTest, ArgumentsAreNeverMerged) {
  Status s = launch("fill", 1, 48,
                    {pointerArg(host.data(), 128),
                     pointerArg(host.data() + 32, 128), scalarArg(48)});
  ASSERT_TRUE(s) << "the overflow into the next argument went unseen";
  // The simulator's fault keeps its code through the device.
  EXPECT_EQ(s.code(), ErrorCode::OutOfBounds) << s.message();
  EXPECT_NE(s.message().find("out-of-bounds"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("past the end of buffer 'out'"), std::string::npos)
      << s.message();
  EXPECT_EQ(host[32], 0xdeadu);
  // Overlapping views of one allocation both work.
  Status views = launch("fill", 1, 32,
                        {pointerArg(host.data(), 256),
                         pointerArg(host.data(), 256), scalarArg(32)});
  EXPECT_FALSE(views) << views.message();
  EXPECT_EQ(host[31], 31u);
}

TEST_F(SimulatorDeviceTest, TwoCTAsStoringOneByteFail) {
  Status s = launch("everyCta", 2, 32, {pointerArg(host.data(), 256)});
  ASSERT_TRUE(s);
  EXPECT_EQ(s.code(), ErrorCode::Race) << s.message();
  EXPECT_NE(s.message().find("is stored to by CTA (0,0,0) and by CTA (1,0,0)"),
            std::string::npos)
      << s.message();
}

TEST_F(SimulatorDeviceTest, BudgetsComeFromTheOptions) {
  runtime::SimulatorOptions options;
  EXPECT_EQ(options.maxInstructionsPerThread, 100000000u);
  options.memoryBudgetBytes = 4096;
  Status s = launch("everyCta", 1, 32, {pointerArg(host.data(), 256)}, options);
  ASSERT_TRUE(s);
  // Not a fault of the kernel: one of the launch.
  EXPECT_EQ(s.code(), ErrorCode::Launch) << s.message();
  EXPECT_NE(s.message().find("over its budget of 4096 bytes"),
            std::string::npos)
      << s.message();
  // The instruction budget, from the options alone: the library reads no
  // environment variable (the C API and Python set it by call).
  options = {};
  options.maxInstructionsPerThread = 5000;
  Status spin = launch("spin", 1, 128, {pointerArg(host.data(), 256)}, options);
  ASSERT_TRUE(spin);
  EXPECT_EQ(spin.code(), ErrorCode::Trap) << spin.message();
  EXPECT_NE(spin.message().find("exceeded 5000 instructions"),
            std::string::npos)
      << spin.message();
  ASSERT_EQ(setenv("FLASHC_SIM_MAX_INSTRUCTIONS", "3000", 1), 0);
  spin = launch("spin", 1, 128, {pointerArg(host.data(), 256)}, options);
  unsetenv("FLASHC_SIM_MAX_INSTRUCTIONS");
  ASSERT_TRUE(spin);
  EXPECT_NE(spin.message().find("exceeded 5000 instructions"),
            std::string::npos)
      << spin.message();
  Status grid =
      launch("everyCta", uint64_t(1) << 31, 32, {pointerArg(host.data(), 256)});
  ASSERT_TRUE(grid);
  EXPECT_EQ(grid.code(), ErrorCode::Launch) << grid.message();
  EXPECT_NE(grid.message().find("exceeds CUDA's limit"), std::string::npos)
      << grid.message();
}

//===----------------------------------------------------------------------===//
// The fake CUDA driver (unittests/Runtime/FakeCudaDriver.cpp)
//===----------------------------------------------------------------------===//

/// The driver entry points used here, with plain C types.
struct FakeDriver {
  void *library = nullptr;
  int (*init)(unsigned);
  int (*deviceGet)(int *, int);
  int (*retain)(void **, int);
  int (*setCurrent)(void *);
  int (*loadData)(void **, const void *, unsigned, int *, void **);
  int (*getFunction)(void **, void *, const char *);
  int (*alloc)(unsigned long long *, size_t, void *);
  int (*free)(unsigned long long, void *);
  int (*toDevice)(unsigned long long, const void *, size_t, void *);
  int (*toHost)(void *, unsigned long long, size_t, void *);
  int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                unsigned, unsigned, void *, void **, void **);

  template <typename F> bool get(F &f, const char *name) {
    f = reinterpret_cast<F>(dlsym(library, name));
    return f != nullptr;
  }
  bool open() {
    library = dlopen(FLASHC_FAKE_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    return library && get(init, "cuInit") && get(deviceGet, "cuDeviceGet") &&
           get(retain, "cuDevicePrimaryCtxRetain") &&
           get(setCurrent, "cuCtxSetCurrent") &&
           get(loadData, "cuModuleLoadDataEx") &&
           get(getFunction, "cuModuleGetFunction") &&
           get(alloc, "cuMemAllocAsync") && get(free, "cuMemFreeAsync") &&
           get(toDevice, "cuMemcpyHtoDAsync_v2") &&
           get(toHost, "cuMemcpyDtoHAsync_v2") && get(launch, "cuLaunchKernel");
  }
};

constexpr int kSuccess = 0, kInvalidValue = 1, kIllegalAddress = 700;

/// Allocations are simulated addresses between guard gaps: an overflow of
/// one into the next faults, and copies translate.
TEST(FakeCudaDriverTest, AllocationsSitApart) {
  FakeDriver cu;
  ASSERT_TRUE(cu.open()) << FLASHC_FAKE_CUDA_LIBRARY << ": " << dlerror();
  int device = -1;
  void *context = nullptr, *module = nullptr, *fill = nullptr;
  ASSERT_EQ(cu.init(0), kSuccess);
  ASSERT_EQ(cu.deviceGet(&device, 0), kSuccess);
  ASSERT_EQ(cu.retain(&context, device), kSuccess);
  ASSERT_EQ(cu.setCurrent(context), kSuccess);
  ASSERT_EQ(cu.loadData(&module, kKernels.c_str(), 0, nullptr, nullptr),
            kSuccess);
  ASSERT_EQ(cu.getFunction(&fill, module, "fill"), kSuccess);
  unsigned long long out = 0, next = 0;
  ASSERT_EQ(cu.alloc(&out, 128, nullptr), kSuccess);
  ASSERT_EQ(cu.alloc(&next, 128, nullptr), kSuccess);
  EXPECT_GE(next, out + 128 + sim::Device::kGuardGapBytes);
  std::vector<uint32_t> ones(32, 1), back(32, 0);
  ASSERT_EQ(cu.toDevice(next, ones.data(), 128, nullptr), kSuccess);
  EXPECT_EQ(cu.toDevice(next + 64, ones.data(), 128, nullptr), kInvalidValue);

  uint32_t n = 48;
  void *params[] = {&out, &next, &n};
  EXPECT_EQ(cu.launch(fill, 1, 1, 1, 48, 1, 1, 0, nullptr, params, nullptr),
            kIllegalAddress);
  ASSERT_EQ(cu.toHost(back.data(), next, 128, nullptr), kSuccess);
  EXPECT_EQ(back, ones) << "the overflow reached the next allocation";
  n = 32;
  EXPECT_EQ(cu.launch(fill, 1, 1, 1, 48, 1, 1, 0, nullptr, params, nullptr),
            kSuccess);
  ASSERT_EQ(cu.toHost(back.data(), out, 128, nullptr), kSuccess);
  std::vector<uint32_t> iota(32);
  std::iota(iota.begin(), iota.end(), 0u);
  EXPECT_EQ(back, iota);
  // A freed allocation stays illegal: its address is not handed out again.
  ASSERT_EQ(cu.free(out, nullptr), kSuccess);
  unsigned long long again = 0;
  ASSERT_EQ(cu.alloc(&again, 128, nullptr), kSuccess);
  EXPECT_NE(again, out);
  EXPECT_EQ(cu.launch(fill, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
            kIllegalAddress);
  EXPECT_EQ(cu.free(again, nullptr), kSuccess);
  EXPECT_EQ(cu.free(next, nullptr), kSuccess);
}

} // namespace
