//===- LimitsTest.cpp - Hostile PTX and launches: errors, never crashes ---===//
//
// PTX text and launches are untrusted input. Each case here once crashed,
// aborted or hung the simulator (a 2^32 alignment used as a divisor, sizes
// wrapped at 32 bits, allocations without a bound, runaway loops, control
// bytes echoed into messages); now each is one clear error of the right
// code: Parse for bad text, InvalidArgument for bad launches, Limit beyond the
// simulator's budgets, a Trap fault for a thread over its instruction
// budget.
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include "gtest/gtest.h"

using namespace flashc;
using namespace flashc::sim::test;

namespace {

/// A kernel `k` around `body`, after `decls` in its body.
std::string kernelText(const std::string &decls, const std::string &body,
                       const std::string &params = "") {
  return std::string(kPtxHeader) + ".visible .entry k(" + params + ")\n{\n" +
         decls + "\n" + body + "\n  ret;\n}\n";
}

/// Expects `text` to fail to parse with `code` and a message mentioning
/// every string of `mentions`.
void expectParseError(const std::string &text,
                      const std::vector<std::string> &mentions,
                      ErrorCode code = ErrorCode::Parse) {
  auto module = sim::Module::parse(text, "limits.ptx");
  ASSERT_FALSE(module) << "parsed:\n" << text.substr(0, 2000);
  EXPECT_EQ(module.status().code(), code) << module.status().message();
  EXPECT_FALSE(module.status().isFault());
  for (const std::string &s : mentions)
    EXPECT_NE(module.status().message().find(s), std::string::npos)
        << "'" << module.status().message() << "' does not mention '" << s
        << "'";
}

//===----------------------------------------------------------------------===//
// Sizes, offsets and alignments of the text
//===----------------------------------------------------------------------===//

/// `.align 2^32` was cut to 32 bits (0) and used as a divisor: SIGFPE.
TEST(LimitsTest, AlignmentsArePowersOfTwoUpToTheLimit) {
  for (const char *align : {"4294967296", "0x100000000", "18446744073709551616",
                            "0", "3", "12", "131072"}) {
    SCOPED_TRACE(align);
    std::string a = align;
    expectParseError(kernelText("  .shared .align " + a + " .b8 s[16];", ""),
                     {"limits.ptx:6", "bad .align '" + a + "'",
                      "power of two from 1 to 65536"});
    expectParseError(kernelText("  .local .align " + a + " .b8 l[16];", ""),
                     {"bad .align '" + a + "'"});
    expectParseError(std::string(kPtxHeader) +
                         ".visible .entry k(.param .align " + a +
                         " .b8 p[16])\n{\n  ret;\n}\n",
                     {"bad .align '" + a + "'"});
  }
  // The largest alignment is accepted and honoured.
  auto module =
      sim::Module::parse(kernelText("  .shared .align 4 .b8 a[4];\n"
                                    "  .shared .align 65536 .b8 b[4];",
                                    ""),
                         "limits.ptx");
  ASSERT_TRUE(ok(module));
  EXPECT_EQ((*module)->getKernel("k")->staticSharedBytes, 65540u);
}

TEST(LimitsTest, ArraySizesAreCheckedIn64Bits) {
  // 2^32 x 2^32 elements wrapped to 0 bytes.
  expectParseError(
      kernelText("  .shared .b8 s[4294967296][4294967296];", ""),
      {"variable 's' is larger than the limit of 1073741824 bytes"});
  expectParseError(kernelText("  .local .b32 l[268435457];", ""),
                   {"variable 'l' is larger than the limit"});
  expectParseError(
      std::string(kPtxHeader) +
          ".visible .entry k(.param .b8 p[4294967296][4294967296])\n{\n"
          "  ret;\n}\n",
      {"the parameters of 'k' take more than 65536 bytes"});
  expectParseError(
      std::string(kPtxHeader) +
          ".visible .entry k(.param .b8 p[40000], .param .b8 q[40000])\n{\n"
          "  ret;\n}\n",
      {"the parameters of 'k' take more than 65536 bytes"});
}

/// Layout offsets of `.local` variables wrapped at 32 bits: the fifth of
/// five variables (four of 1 GiB) aliased the first.
TEST(LimitsTest, LocalLayoutDoesNotWrap) {
  expectParseError(kernelText("  .local .align 4 .b8 a[1073741824];\n"
                              "  .local .align 4 .b8 b[1073741824];\n"
                              "  .local .align 4 .b8 c[1073741824];\n"
                              "  .local .align 4 .b8 d[1073741824];\n"
                              "  .local .align 4 .b8 e[16];",
                              ""),
                   {"the local variables of 'k' take more than 1073741824"});
  expectParseError(kernelText("  .shared .align 4 .b8 a[1073741824];\n"
                              "  .shared .align 4 .b8 b[16];",
                              ""),
                   {"the shared variables of 'k' take more than 1073741824"});
  // Two local variables are distinct memory.
  auto out = runBody("  st.local.u32 [a], 11;\n"
                     "  st.local.u32 [b], 22;\n"
                     "  ld.local.u32 %r1, [a];\n"
                     "  ld.local.u32 %r2, [b];\n"
                     "  st.global.u32 [%rd14], %r1;\n"
                     "  st.global.u32 [%rd14+8], %r2;\n",
                     {}, 2, 1,
                     ".local .align 4 .b8 a[4];\n"
                     "  .local .align 4 .b8 b[4];");
  ASSERT_TRUE(ok(out));
  EXPECT_EQ((*out)[0], 11u);
  EXPECT_EQ((*out)[1], 22u);
}

/// Many large `.reg` declarations allocated without a bound.
TEST(LimitsTest, RegistersAreBounded) {
  std::string decls;
  for (int i = 0; i < 20; ++i)
    decls += "  .reg .b32 %r" + std::string(1, char('a' + i)) + "<100000>;\n";
  expectParseError(kernelText(decls, ""),
                   {"kernel 'k' declares more than 1048576 registers"});
  expectParseError(kernelText("  .reg .b32 %r<1048577>;", ""),
                   {"declares more than 1048576 registers"});
  expectParseError(kernelText("  .reg .b32 %r<99999999999999999999>;", ""),
                   {"bad register count"});
  EXPECT_TRUE(
      ok(sim::Module::parse(kernelText("  .reg .b32 %r<1048576>;", ""))));
}

TEST(LimitsTest, BlockDirectivesAreBounded) {
  for (const char *n : {"4294967297", "0", "1025"}) {
    SCOPED_TRACE(n);
    expectParseError(std::string(kPtxHeader) + ".visible .entry k() .maxntid " +
                         n + ", 1, 1\n{\n  ret;\n}\n",
                     {"bad .maxntid: each size is 1 to 1024"});
    expectParseError(std::string(kPtxHeader) +
                         ".visible .entry k() .reqntid 32, " + n +
                         "\n{\n  ret;\n}\n",
                     {"bad .reqntid"});
  }
}

TEST(LimitsTest, TheTextIsBounded) {
  std::string text = kernelText("", "");
  text.resize(sim::kMaxPtxBytes + 1, '\n');
  expectParseError(text,
                   {"a PTX text of 33554433 bytes",
                    "over the simulator's limit of 33554432"},
                   ErrorCode::Limit);
  auto ops = sim::listOpcodes(text);
  ASSERT_FALSE(ops);
  EXPECT_EQ(ops.status().code(), ErrorCode::Limit);
  // Tokens are bounded too (a text of 1-byte tokens).
  std::string dense(sim::kMaxPtxTokens + 1, ';');
  expectParseError(dense, {"more than 8388608 tokens"}, ErrorCode::Limit);
}

/// Control bytes of the input came back raw in messages.
TEST(LimitsTest, ControlBytesInMessagesAreEscaped) {
  std::string text = std::string(kPtxHeader) + "\x01\x1b[31m\n";
  auto module = sim::Module::parse(text, "evil\x07.ptx");
  ASSERT_FALSE(module);
  const std::string &msg = module.status().message();
  EXPECT_NE(msg.find("evil\\x07.ptx:4: unexpected '\\x01'"), std::string::npos)
      << msg;
  for (char c : msg)
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << int(c) << " in " << msg;
  // Unknown names in a launch (the caller's), and bytes from 0x7f up.
  auto good = sim::Module::parse(kernelText("", ""), "ok.ptx");
  ASSERT_TRUE(ok(good));
  sim::Device device;
  auto r = device.launch(**good, "k\n\x7f\xc3\xa9", sim::LaunchConfig(), {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("no kernel 'k\\x0a\\x7f\\xc3\\xa9'"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(sim::escapeText("a\\b\"c'\t"), "a\\b\"c'\\x09");
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

class LaunchLimitTest : public ::testing::Test {
protected:
  Result<sim::LaunchStats> launch(const std::string &decls,
                                  const std::string &body,
                                  const sim::LaunchConfig &config) {
    auto module = sim::Module::parse(kernelText(decls, body), "limits.ptx");
    if (!module)
      return module.status();
    return device.launch(**module, "k", config, {});
  }
  void expectError(const Result<sim::LaunchStats> &r, ErrorCode code,
                   const std::vector<std::string> &mentions) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), code) << r.status().message();
    for (const std::string &s : mentions)
      EXPECT_NE(r.status().message().find(s), std::string::npos)
          << "'" << r.status().message() << "' does not mention '" << s << "'";
  }
  sim::Device device;
};

TEST_F(LaunchLimitTest, GridsAndBlocksWithinCudaLimits) {
  sim::LaunchConfig config;
  config.grid = {0x80000000u};
  expectError(launch("", "", config), ErrorCode::InvalidArgument,
              {"grid (2147483648,1,1) exceeds CUDA's limits",
               "x up to 2147483647, y and z up to 65535"});
  config.grid = {1, 1, 65536};
  expectError(launch("", "", config), ErrorCode::InvalidArgument,
              {"grid (1,1,65536)"});
  config.grid = {1, 0xffffffffu, 0xffffffffu}; // the count overflows
  expectError(launch("", "", config), ErrorCode::InvalidArgument,
              {"exceeds CUDA's limits"});
  config.grid = {1};
  config.block = {1, 1, 65};
  expectError(launch("", "", config), ErrorCode::InvalidArgument,
              {"block (1,1,65) exceeds CUDA's limits", "z up to 64"});
  config.block = {2048, 1, 1};
  expectError(launch("", "", config), ErrorCode::InvalidArgument,
              {"a block of 2048 threads exceeds 1024"});
  config.block = {32, 32};
  EXPECT_TRUE(ok(launch("", "", config)));
}

/// A 1 GiB `.local` array: an uncaught bad_alloc (abort).
TEST_F(LaunchLimitTest, LocalMemoryIsWithinTheBudget) {
  std::string decls = "  .local .align 4 .b8 a[1073741824];";
  std::string body = "  st.local.u32 [a+1073741820], 1;";
  sim::LaunchConfig config;
  config.block = {32};
  expectError(launch(decls, body, config), ErrorCode::Limit,
              {"the launch of kernel 'k' needs ",
               " bytes of simulator memory for one CTA", "32 threads",
               "1073741824 bytes of local memory per thread",
               "over its budget of 2147483648 bytes"});
  // 1 MiB per thread: 32 MiB per CTA, over a budget of 16 MiB, and then
  // within one of 40 MiB, where only one CTA is in flight at a time.
  decls = "  .local .align 4 .b8 a[1048576];";
  body = "  st.local.u32 [a+1048572], 1;";
  config.memoryBudgetBytes = 16u << 20;
  expectError(launch(decls, body, config), ErrorCode::Limit,
              {"over its budget of 16777216 bytes"});
  config.memoryBudgetBytes = 40u << 20;
  config.workers = 4;
  config.grid = {3};
  EXPECT_TRUE(ok(launch(decls, body, config)));
}

TEST_F(LaunchLimitTest, RegistersAreWithinTheBudget) {
  const char *decls = "  .reg .b32 %r<1000000>;";
  sim::LaunchConfig config;
  config.block = {1024};
  expectError(launch(decls, "  mov.u32 %r999999, 1;", config), ErrorCode::Limit,
              {"1024 threads x 1000000 registers", "over its budget"});
  config.memoryBudgetBytes = 16ull << 30;
  config.block = {4};
  EXPECT_TRUE(ok(launch(decls, "  mov.u32 %r999999, 1;", config)));
}

/// A budget too small for every CTA at once runs fewer in parallel.
TEST_F(LaunchLimitTest, TheBudgetBoundsTheCTAsInFlight) {
  sim::LaunchConfig config;
  config.grid = {16};
  config.block = {256};
  config.workers = 8;
  config.memoryBudgetBytes = 12u << 20; // 8 MiB of locals per CTA
  EXPECT_TRUE(ok(launch("  .local .align 4 .b8 a[32768];",
                        "  st.local.u32 [a+32764], 1;", config)));
  config.memoryBudgetBytes = 4u << 20;
  expectError(launch("  .local .align 4 .b8 a[32768];", "", config),
              ErrorCode::Limit, {"over its budget of 4194304 bytes"});
}

TEST_F(LaunchLimitTest, RunawayLoopsExceedTheInstructionBudget) {
  sim::LaunchConfig config;
  config.block = {64};
  config.maxInstructionsPerThread = 5000;
  auto r = launch("", "LOOP:\n  bra.uni LOOP;", config);
  expectError(r, ErrorCode::Trap,
              {"trap: the thread exceeded 5000 instructions", "a runaway loop",
               "kernel 'k'", "limits.ptx:8"});
  EXPECT_TRUE(r.status().isFault());
}

/// Parameter and shared addresses near 2^64 wrapped past the bounds
/// checks.
TEST_F(LaunchLimitTest, AddressesNear2To64AreOutOfBounds) {
  auto param = runBody("  mov.u64 %rd1, 0xfffffffffffffffc;\n"
                       "  ld.param.u32 %r1, [%rd1];\n",
                       {}, 1);
  ASSERT_FALSE(param);
  EXPECT_EQ(param.status().code(), ErrorCode::OutOfBounds)
      << param.status().message();
  auto copy = runBody("  mov.u64 %rd1, 0xfffffffffffffff0;\n"
                      "  cp.async.ca.shared.global [%rd1], [%rd15], 16;\n"
                      "  cp.async.wait_all;\n",
                      {0, 0}, 1, 1, ".shared .align 16 .b8 s[16];");
  ASSERT_FALSE(copy);
  EXPECT_EQ(copy.status().code(), ErrorCode::OutOfBounds)
      << copy.status().message();
}

/// cp.async copies never retired by a wait pile up: bounded per CTA.
TEST_F(LaunchLimitTest, CopiesInFlightAreBounded) {
  sim::LaunchConfig config;
  config.checkRaces = false; // the copies overlap
  expectError(launch("  .shared .align 16 .b8 s[16];\n"
                     "  .reg .b32 %r<2>;\n"
                     "  .reg .b64 %rd<2>;",
                     "  mov.u32 %r1, s;\n"
                     "LOOP:\n"
                     "  cp.async.ca.shared.global [%r1], [%rd1], 16, 0;\n"
                     "  bra.uni LOOP;",
                     config),
              ErrorCode::Trap,
              {"more than 65536 cp.async copies are in flight"});
}

} // namespace
