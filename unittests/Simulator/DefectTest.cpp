//===- DefectTest.cpp - Faults, races, deadlocks and usage errors ---------===//
//
// Every planted defect of kernels/SimTestKernels.cu must fail with the right
// ErrorCode and a message that names the fault, the kernel and a PTX line
// (`SimTestKernels.ptx:<line>`), and that line must hold the instruction at
// fault. The same faults in hand-written PTX run without nvcc. Then the
// caller's errors: unknown kernels, wrong arguments, bad launch shapes and
// buffer registration, each an InvalidArgument error that names what is
// wrong.
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include "gtest/gtest.h"

#include <ostream>

using namespace flashc;
using namespace flashc::sim::test;

namespace {

/// Checks that `e` is a fault of `code` whose message mentions every
/// string of `mentions` and a `<source>:<line>` whose line of `text` holds
/// one of `opcodes`.
void expectFault(const Status &e, ErrorCode code,
                 const std::vector<std::string> &mentions,
                 const std::string &source, const std::string &text,
                 const std::vector<std::string> &opcodes) {
  ASSERT_TRUE(static_cast<bool>(e)) << "no error was reported";
  const std::string &msg = e.message();
  EXPECT_EQ(e.code(), code) << msg;
  EXPECT_TRUE(e.isFault()) << msg;
  for (const std::string &s : mentions)
    EXPECT_NE(msg.find(s), std::string::npos)
        << "'" << msg << "' does not mention '" << s << "'";
  std::vector<unsigned> lines = linesIn(msg, source);
  ASSERT_FALSE(lines.empty()) << "'" << msg << "' names no line of " << source;
  bool found = false;
  for (unsigned line : lines)
    for (const std::string &op : opcodes)
      found |= lineOf(text, line).find(op) != std::string::npos;
  EXPECT_TRUE(found) << "no line named by '" << msg
                     << "' holds the faulting instruction";
}

//===----------------------------------------------------------------------===//
// The planted defects of the nvcc kernels
//===----------------------------------------------------------------------===//

struct Defect {
  const char *kernel;
  ErrorCode code;
  std::vector<std::string> mentions;
  /// The line named must hold one of these.
  std::vector<std::string> opcodes;
  uint32_t block;
  /// Whether the launch completes when race checking is off.
  bool raceOnly;
};

void PrintTo(const Defect &d, std::ostream *os) { *os << d.kernel; }

class NvccDefectTest : public ::testing::TestWithParam<Defect> {};

TEST_P(NvccDefectTest, IsReported) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  const Defect &d = GetParam();
  // Buffers large enough for every defect kernel: 4 floats per thread, and
  // an exact-size `out` for defectOutOfBounds (n = block - 28).
  const uint32_t n = d.block - 28;
  std::vector<float> in(4 * d.block + 4, 1.0f), out(d.block, 0.0f),
      small(n, 0.0f);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, in, "in")));
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  ASSERT_TRUE(ok(registerVector(device, small, "small")));
  std::vector<sim::KernelArg> args;
  std::string name = d.kernel;
  if (name == "defectOutOfBounds")
    args = {sim::KernelArg::pointer(small.data()), sim::KernelArg::s32(n)};
  else if (name == "defectDivergentBarrier")
    args = {sim::KernelArg::pointer(out.data())};
  else
    args = {sim::KernelArg::pointer(in.data()),
            sim::KernelArg::pointer(out.data())};
  sim::LaunchConfig config;
  config.block = {d.block};
  auto result = device.launch(*module, d.kernel, config, args);
  ASSERT_FALSE(result) << d.kernel << " ran without an error";
  std::vector<std::string> mentions = d.mentions;
  mentions.push_back("'" + name + "'");
  expectFault(result.status(), d.code, mentions, "SimTestKernels.ptx",
              moduleKernels_.text, d.opcodes);
  if (d.raceOnly) {
    config.checkRaces = false;
    EXPECT_TRUE(ok(device.launch(*module, d.kernel, config, args)))
        << "without race checking the kernel completes";
  }
}

const Defect kDefects[] = {
    {"defectOutOfBounds",
     ErrorCode::OutOfBounds,
     {"out-of-bounds", "store of 4 bytes", "outside every registered buffer"},
     {"st.global"},
     128,
     false},
    {"defectMissingBarrier",
     ErrorCode::Race,
     {"race", "shared address", "no barrier"},
     {"st.shared", "ld.shared"},
     128,
     true},
    {"defectEarlyCpAsyncRead",
     ErrorCode::Race,
     {"race", "cp.async", "in flight"},
     {"ld.shared"},
     32,
     true},
    {"defectDivergentBarrier",
     ErrorCode::Deadlock,
     {"deadlock", "bar.sync", "exited"},
     {"bar.sync"},
     128,
     false},
    {"defectMisalignedVector",
     ErrorCode::Misaligned,
     {"misaligned", "16-byte", "not 16-byte aligned"},
     {"ld.global.v4"},
     32,
     false},
};

INSTANTIATE_TEST_SUITE_P(Nvcc, NvccDefectTest, ::testing::ValuesIn(kDefects),
                         [](const ::testing::TestParamInfo<Defect> &info) {
                           return std::string(info.param.kernel);
                         });

//===----------------------------------------------------------------------===//
// The same faults in hand-written PTX
//===----------------------------------------------------------------------===//

struct HandFault {
  const char *name;
  const char *decls;
  const char *body;
  uint32_t threads;
  ErrorCode code;
  std::vector<std::string> mentions;
  std::vector<std::string> opcodes;
};

void PrintTo(const HandFault &f, std::ostream *os) { *os << f.name; }

class HandFaultTest : public ::testing::TestWithParam<HandFault> {};

TEST_P(HandFaultTest, IsReported) {
  const HandFault &f = GetParam();
  auto out = runBody(f.body, {0, 0}, 2, f.threads, f.decls);
  ASSERT_FALSE(out) << "no error for\n" << f.body;
  std::vector<std::string> mentions = f.mentions;
  mentions.push_back("'test'");
  expectFault(out.status(), f.code, mentions, "body.ptx",
              wrapBody(f.body, f.decls), f.opcodes);
}

const HandFault kHandFaults[] = {
    {"GlobalLoadPastTheEnd",
     "",
     "  ld.global.u32 %r1, [%rd15+16];\n",
     1,
     ErrorCode::OutOfBounds,
     {"out-of-bounds", "load of 4 bytes", "thread (0,0,0)"},
     {"ld.global.u32"}},
    {"NullPointer",
     "",
     "  mov.u64 %rd1, 0;\n  st.global.u32 [%rd1], %r0;\n",
     1,
     ErrorCode::OutOfBounds,
     {"out-of-bounds", "0x0"},
     {"st.global.u32"}},
    {"SharedPastStaticSize",
     ".shared .align 4 .b8 s[64];",
     "  mov.u32 %r1, s;\n  st.shared.u32 [%r1+64], %r0;\n",
     1,
     ErrorCode::OutOfBounds,
     {"out-of-bounds", "shared address 0x40", "64 bytes of shared memory"},
     {"st.shared.u32"}},
    {"MisalignedScalar",
     "",
     "  ld.global.u32 %r1, [%rd15+2];\n",
     1,
     ErrorCode::Misaligned,
     {"misaligned", "not 4-byte aligned"},
     {"ld.global.u32"}},
    {"MisalignedVector",
     "",
     "  ld.global.v2.u32 {%r1, %r2}, [%rd15+4];\n",
     1,
     ErrorCode::Misaligned,
     {"misaligned", "not 8-byte aligned"},
     {"ld.global.v2.u32"}},
    {"WriteWriteRace",
     ".shared .align 4 .b32 s;",
     "  st.shared.u32 [s], %r0;\n",
     64,
     ErrorCode::Race,
     {"race", "conflicts with the write"},
     {"st.shared.u32"}},
    {"ReadWriteRace",
     ".shared .align 4 .b32 s[64];",
     "  mov.u32 %r1, s;\n"
     "  setp.eq.u32 %p1, %r0, 40;\n"
     "  @%p1 st.shared.u32 [%r1], %r0;\n"
     "  ld.shared.u32 %r2, [%r1];\n",
     64,
     ErrorCode::Race,
     {"race", "thread (40,0,0)"},
     {"st.shared.u32", "ld.shared.u32"}},
    {"CpAsyncReadBeforeWait",
     ".shared .align 16 .b8 s[16];",
     "  mov.u32 %r1, s;\n"
     "  cp.async.ca.shared.global [%r1], [%rd15], 16;\n"
     "  cp.async.commit_group;\n"
     "  ld.shared.u32 %r2, [%r1+4];\n"
     "  cp.async.wait_group 0;\n",
     1,
     ErrorCode::Race,
     {"race", "cp.async", "in flight"},
     {"ld.shared.u32"}},
    {"CpAsyncOutOfBounds",
     ".shared .align 16 .b8 s[16];",
     "  mov.u32 %r1, s;\n"
     "  cp.async.cg.shared.global [%r1], [%rd15+16], 16;\n",
     1,
     ErrorCode::OutOfBounds,
     {"out-of-bounds", "cp.async reads 16 bytes"},
     {"cp.async"}},
    {"BarrierInDivergentBranch",
     "",
     "  setp.lt.u32 %p1, %r0, 32;\n"
     "  @%p1 bra SKIP;\n"
     "  bar.sync 0;\n"
     "SKIP:\n",
     64,
     ErrorCode::Deadlock,
     {"deadlock", "32 thread(s) wait at 'bar.sync'", "have exited"},
     {"bar.sync"}},
    {"ShuffleWithExitedLane",
     "",
     "  setp.ge.u32 %p1, %r0, 16;\n"
     "  @%p1 bra DONE;\n"
     "  shfl.sync.idx.b32 %r1, %r0, 0, 0x1f, 0xffffffff;\n"
     "DONE:\n",
     32,
     ErrorCode::Deadlock,
     {"deadlock", "lane 16 of the member mask has exited", "can never join"},
     {"shfl.sync"}},
    {"ShuffleMaskWithoutOwnLane",
     "",
     "  shfl.sync.idx.b32 %r1, %r0, 0, 0x1f, 0x1;\n",
     2,
     ErrorCode::Trap,
     {"member mask 0x1", "excludes the executing lane"},
     {"shfl.sync"}},
};

INSTANTIATE_TEST_SUITE_P(Hand, HandFaultTest, ::testing::ValuesIn(kHandFaults),
                         [](const ::testing::TestParamInfo<HandFault> &info) {
                           return std::string(info.param.name);
                         });

/// Barrier epochs are 16-bit in the race checker: 80000 barriers wrap them.
/// Across the wrap, properly ordered accesses stay race-free and a race
/// after it is still found.
std::string epochWrapBody(bool withRace) {
  return std::string("  mov.u32 %r1, s;\n"
                     "  shl.b32 %r2, %r0, 2;\n"
                     "  add.u32 %r3, %r1, %r2;\n"
                     "  add.u32 %r4, %r0, 1;\n"
                     "  and.b32 %r4, %r4, 31;\n"
                     "  shl.b32 %r4, %r4, 2;\n"
                     "  add.u32 %r4, %r1, %r4;\n"
                     "  mov.u32 %r5, 0;\n"
                     // s[32], written once by thread 0 before the loop,
                     // read by thread 1 in every epoch after: a record
                     // of the first epochs must not look current again
                     // once the epochs wrap.
                     "  setp.eq.u32 %p2, %r0, 0;\n"
                     "  setp.eq.u32 %p3, %r0, 1;\n"
                     "  @%p2 st.shared.u32 [%r1+128], %r0;\n"
                     "  bar.sync 0;\n"
                     "LOOP:\n"
                     "  st.shared.u32 [%r3], %r5;\n"
                     "  @%p3 ld.shared.u32 %r7, [%r1+128];\n"
                     "  bar.sync 0;\n"
                     "  ld.shared.u32 %r6, [%r4];\n"
                     "  @%p3 ld.shared.u32 %r7, [%r1+128];\n"
                     "  bar.sync 0;\n"
                     "  add.u32 %r5, %r5, 1;\n"
                     "  setp.lt.u32 %p1, %r5, 40000;\n"
                     "  @%p1 bra LOOP;\n"
                     "  mul.wide.u32 %rd1, %r0, 8;\n"
                     "  add.s64 %rd2, %rd14, %rd1;\n"
                     "  cvt.u64.u32 %rd3, %r6;\n"
                     "  st.global.u64 [%rd2], %rd3;\n") +
         (withRace ? "  st.shared.u32 [%r1], %r0;\n" : "");
}

TEST(FaultTest, RaceCheckingSurvivesEpochWrap) {
  const char *decls = ".shared .align 4 .b32 s[33];";
  auto clean = runBody(epochWrapBody(false), {0}, 32, 32, decls);
  ASSERT_TRUE(ok(clean));
  for (uint64_t v : *clean)
    EXPECT_EQ(v, 39999u);
  auto racy = runBody(epochWrapBody(true), {0}, 32, 32, decls);
  ASSERT_FALSE(racy) << "the race after the epoch wrap was missed";
  EXPECT_EQ(racy.status().code(), ErrorCode::Race) << racy.status().message();
  EXPECT_NE(racy.status().message().find("conflicts with the write"),
            std::string::npos)
      << racy.status().message();
}

/// A programmatic dependent launch may start while the kernel before it
/// still runs: a thread that reads or writes global memory (ld, st, atom,
/// cp.async) before its griddepcontrol.wait races with that kernel. The
/// same code launched as any other is fine, and so is every access after
/// the thread's wait.
TEST(FaultTest, GlobalAccessBeforeGridDependencyWait) {
  struct Case {
    const char *name, *body, *decls;
    uint32_t threads;
    const char *racer; // the thread reported, or null: no race
    const char *instruction;
  };
  const Case cases[] = {
      {"load before the wait",
       "  ld.global.u32 %r1, [%rd15];\n  griddepcontrol.wait;\n", "", 1,
       "thread (0,0,0)", "ld.global.u32"},
      {"store before the wait",
       "  st.global.u32 [%rd14], %r0;\n  griddepcontrol.wait;\n", "", 1,
       "thread (0,0,0)", "st.global.u32"},
      {"atomic before the wait",
       "  atom.global.add.u32 %r1, [%rd14], 1;\n  griddepcontrol.wait;\n", "",
       1, "thread (0,0,0)", "atom.global.add.u32"},
      {"cp.async before the wait",
       "  mov.u32 %r1, s;\n"
       "  cp.async.cg.shared.global [%r1], [%rd15], 16;\n"
       "  cp.async.wait_all;\n  griddepcontrol.wait;\n",
       ".shared .align 16 .b8 s[16];", 1, "thread (0,0,0)", "cp.async"},
      {"launch_dependents is no wait",
       "  griddepcontrol.launch_dependents;\n  ld.global.u32 %r1, [%rd15];\n",
       "", 1, "thread (0,0,0)", "ld.global.u32"},
      {"a thread that branches around the wait",
       "  setp.eq.u32 %p1, %r0, 1;\n"
       "  @%p1 bra SKIP;\n"
       "  griddepcontrol.wait;\n"
       "SKIP:\n"
       "  ld.global.u32 %r1, [%rd15];\n",
       "", 2, "thread (1,0,0)", "ld.global.u32"},
      {"every access after the wait",
       "  griddepcontrol.wait;\n"
       "  ld.global.u32 %r1, [%rd15];\n"
       "  griddepcontrol.launch_dependents;\n"
       "  st.global.u32 [%rd14], %r1;\n",
       "", 1, nullptr, nullptr},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    // Launched as any other kernel, nothing is wrong.
    ASSERT_TRUE(ok(runBody(c.body, {7, 0, 0, 0}, 4, c.threads, c.decls)));
    auto early = runBody(c.body, {7, 0, 0, 0}, 4, c.threads, c.decls,
                         /*programmatic=*/true);
    if (!c.racer) {
      ASSERT_TRUE(ok(early));
      EXPECT_EQ((*early)[0], 7u);
      continue;
    }
    ASSERT_FALSE(early) << "the race was missed";
    const std::string &msg = early.status().message();
    EXPECT_EQ(early.status().code(), ErrorCode::Race) << msg;
    for (const char *part :
         {"global memory accessed before griddepcontrol.wait in a "
          "programmatic dependent launch",
          c.racer, c.instruction})
      EXPECT_NE(msg.find(part), std::string::npos) << part << " in: " << msg;
  }
}

/// With several CTAs failing, the error is the first CTA's whatever the
/// number of workers.
TEST(FaultTest, FirstFailingCTAIsReported) {
  std::string ptx = wrapBody("  mov.u32 %r1, %ctaid.x;\n"
                             "  setp.lt.u32 %p1, %r1, 5;\n"
                             "  @%p1 bra DONE;\n"
                             "  mov.u64 %rd1, 0;\n"
                             "  st.global.u32 [%rd1], %r1;\n"
                             "DONE:\n");
  auto module = sim::Module::parse(ptx, "ctas.ptx");
  ASSERT_TRUE(ok(module));
  std::vector<uint64_t> buf(1);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, buf, "buf")));
  for (unsigned workers : {1u, 2u, 4u}) {
    sim::LaunchConfig config;
    config.grid = {12};
    config.block = {64};
    config.workers = workers;
    auto result = device.launch(**module, "test", config,
                                {sim::KernelArg::pointer(buf.data()),
                                 sim::KernelArg::pointer(buf.data())});
    ASSERT_FALSE(result);
    EXPECT_NE(result.status().message().find("CTA (5,0,0)"), std::string::npos)
        << result.status().message();
  }
}

TEST(FaultTest, DynamicSharedMemoryBounds) {
  std::string ptx = std::string(kPtxHeader) + R"(
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u32 k_off)
{
  .reg .b32 %r<4>;
  ld.param.u32 %r1, [k_off];
  mov.u32 %r2, dyn;
  add.u32 %r2, %r2, %r1;
  st.shared.u32 [%r2], %r1;
  ret;
}
)";
  auto module = sim::Module::parse(ptx, "dyn.ptx");
  ASSERT_TRUE(ok(module));
  sim::Device device;
  sim::LaunchConfig config;
  config.dynamicSharedBytes = 256;
  EXPECT_TRUE(
      ok(device.launch(**module, "k", config, {sim::KernelArg::u32(252)})));
  auto past = device.launch(**module, "k", config, {sim::KernelArg::u32(256)});
  ASSERT_FALSE(past);
  EXPECT_EQ(past.status().code(), ErrorCode::OutOfBounds);
  EXPECT_NE(past.status().message().find("256 dynamic"), std::string::npos)
      << past.status().message();
  EXPECT_EQ(lineIn(past.status().message(), "dyn.ptx"), 12u)
      << past.status().message();
}

//===----------------------------------------------------------------------===//
// Errors of the caller: InvalidArgument
//===----------------------------------------------------------------------===//

class UsageTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto parsed = sim::Module::parse(wrapBody(""), "usage.ptx");
    ASSERT_TRUE(ok(parsed));
    module = *parsed;
    ASSERT_TRUE(ok(registerVector(device, buf, "buf")));
  }
  Result<sim::LaunchStats> launch(const sim::LaunchConfig &config,
                                  std::vector<sim::KernelArg> args,
                                  const char *kernel = "test") {
    return device.launch(*module, kernel, config, args);
  }
  std::vector<sim::KernelArg> goodArgs() {
    return {sim::KernelArg::pointer(buf.data()),
            sim::KernelArg::pointer(buf.data())};
  }
  void expectUsage(const Result<sim::LaunchStats> &r,
                   const std::vector<std::string> &mentions) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ErrorCode::InvalidArgument)
        << r.status().message();
    EXPECT_FALSE(r.status().isFault());
    for (const std::string &s : mentions)
      EXPECT_NE(r.status().message().find(s), std::string::npos)
          << "'" << r.status().message() << "' does not mention '" << s << "'";
  }
  std::shared_ptr<const sim::Module> module;
  sim::Device device;
  std::vector<uint64_t> buf = std::vector<uint64_t>(4);
};

TEST_F(UsageTest, GoodLaunch) {
  EXPECT_TRUE(ok(launch(sim::LaunchConfig(), goodArgs())));
}

TEST_F(UsageTest, UnknownKernel) {
  expectUsage(launch(sim::LaunchConfig(), goodArgs(), "nosuch"),
              {"no kernel 'nosuch'", "usage.ptx", "kernels: test"});
}

TEST_F(UsageTest, WrongArgumentCount) {
  expectUsage(
      launch(sim::LaunchConfig(), {sim::KernelArg::pointer(buf.data())}),
      {"'test' takes 2 parameters, 1 given"});
}

TEST_F(UsageTest, WrongArgumentSize) {
  expectUsage(launch(sim::LaunchConfig(), {sim::KernelArg::pointer(buf.data()),
                                           sim::KernelArg::u32(1)}),
              {"parameter 1 ('in')", "has 8 bytes, the argument 4"});
}

TEST_F(UsageTest, BadLaunchShapes) {
  sim::LaunchConfig config;
  config.block = {1025};
  expectUsage(launch(config, goodArgs()), {"1025 threads exceeds 1024"});
  config.block = {32, 32, 2};
  expectUsage(launch(config, goodArgs()), {"2048 threads exceeds 1024"});
  config.block = {0};
  expectUsage(launch(config, goodArgs()), {"empty grid or block"});
  config.block = {32};
  config.grid = {1, 70000};
  expectUsage(launch(config, goodArgs()), {"65535"});
  config.grid = {1};
  config.dynamicSharedBytes = 300 * 1024;
  expectUsage(launch(config, goodArgs()), {"bytes of shared memory"});
}

TEST_F(UsageTest, BufferRegistration) {
  std::vector<uint64_t> other(4);
  EXPECT_TRUE(ok(device.registerBuffer(other.data(), 32, "other")));
  Status overlap = device.registerBuffer(buf.data() + 1, 8, "inner");
  EXPECT_EQ(overlap.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(overlap.message().find("'inner' overlaps"), std::string::npos)
      << overlap.message();
  Status empty = device.registerBuffer(other.data(), 0, "empty");
  EXPECT_EQ(empty.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(device.findBuffer(reinterpret_cast<uint64_t>(other.data()) + 8, 8),
            nullptr);
  EXPECT_EQ(device.findBuffer(reinterpret_cast<uint64_t>(other.data()) + 28, 8),
            nullptr);
  EXPECT_TRUE(ok(device.unregisterBuffer(other.data())));
  EXPECT_EQ(device.unregisterBuffer(other.data()).code(),
            ErrorCode::InvalidArgument);
  // A kernel touching an unregistered buffer faults.
  auto module = sim::Module::parse(wrapBody("  st.global.u32 [%rd14], %r0;\n"));
  ASSERT_TRUE(ok(module));
  auto r = device.launch(**module, "test", sim::LaunchConfig(),
                         {sim::KernelArg::pointer(other.data()),
                          sim::KernelArg::pointer(buf.data())});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), ErrorCode::OutOfBounds);
  device.clearBuffers();
  EXPECT_EQ(device.findBuffer(reinterpret_cast<uint64_t>(buf.data()), 8),
            nullptr);
}

} // namespace
