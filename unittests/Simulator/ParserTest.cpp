//===- ParserTest.cpp - Parsing PTX, opcode coverage, input errors --------===//
//
// What `Module::parse` makes of a module: kernel names, parameter layout,
// shared-memory sizes and performance directives; that comments and debug
// directives are skipped; that malformed input is a Parse error naming its
// line and that an instruction the simulator lacks is an Unsupported error
// naming the opcode and its line. Last, that every opcode nvcc emitted for
// kernels/SimTestKernels.cu is one the simulator implements.
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include "gtest/gtest.h"

#include <ostream>

using namespace flashc;
using namespace flashc::sim::test;

namespace {

TEST(ParserTest, KernelInfo) {
  std::string ptx = std::string(kPtxHeader) + R"(
.shared .align 16 .b8 moduleTile[100];
.extern .shared .align 16 .b8 dyn[];

.visible .entry first(
    .param .u32 first_n,
    .param .u64 .ptr .global .align 8 first_data,
    .param .align 8 .b8 first_pod[12],
    .param .f32 first_scale
)
.reqntid 64, 2, 1
{
  .reg .b32 %r<2>;
  .shared .align 4 .f32 tile[33];
  .shared .align 2 .b16 odd;
  ret;
}

.visible .entry second(.param .u64 a)
.maxntid 128, 1, 1
{
  ret;
}
)";
  auto module = sim::Module::parse(ptx, "info.ptx");
  ASSERT_TRUE(ok(module));
  const sim::Module &m = **module;
  EXPECT_EQ(m.getSourceName(), "info.ptx");
  EXPECT_EQ(m.kernelNames(), (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(m.getKernel("third"), nullptr);

  const sim::KernelInfo *first = m.getKernel("first");
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(first->params.size(), 4u);
  struct Expect {
    const char *name;
    uint32_t bytes, offset;
    bool pointer;
  } params[] = {{"first_n", 4, 0, false},
                {"first_data", 8, 8, true},
                {"first_pod", 12, 16, false},
                {"first_scale", 4, 28, false}};
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(params[i].name);
    EXPECT_EQ(first->params[i].name, params[i].name);
    EXPECT_EQ(first->params[i].bytes, params[i].bytes);
    EXPECT_EQ(first->params[i].offset, params[i].offset);
    EXPECT_EQ(first->params[i].isPointer, params[i].pointer);
  }
  // moduleTile (100) + pad to 4 + tile (132) + odd (2): 234 bytes.
  EXPECT_EQ(first->staticSharedBytes, 234u);
  EXPECT_EQ(first->requiredBlock.x, 64u);
  EXPECT_EQ(first->requiredBlock.y, 2u);
  EXPECT_EQ(first->maxBlock.x, 0u);

  const sim::KernelInfo *second = m.getKernel("second");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->maxBlock.x, 128u);
  EXPECT_EQ(second->staticSharedBytes, 100u);
  EXPECT_EQ(second->params[0].isPointer, true);
}

TEST(ParserTest, LaunchChecksTheBlockAgainstDirectives) {
  std::string ptx = std::string(kPtxHeader) + R"(
.visible .entry fixed() .reqntid 64, 1, 1 { ret; }
.visible .entry bounded() .maxntid 64, 1, 1 { ret; }
)";
  auto module = sim::Module::parse(ptx);
  ASSERT_TRUE(ok(module));
  sim::Device device;
  sim::LaunchConfig config;
  config.block = {64};
  EXPECT_TRUE(ok(device.launch(**module, "fixed", config, {})));
  EXPECT_TRUE(ok(device.launch(**module, "bounded", config, {})));
  config.block = {32};
  auto fixed = device.launch(**module, "fixed", config, {});
  ASSERT_FALSE(fixed);
  EXPECT_EQ(fixed.status().code(), ErrorCode::InvalidArgument);
  EXPECT_TRUE(ok(device.launch(**module, "bounded", config, {})));
  config.block = {65};
  auto bounded = device.launch(**module, "bounded", config, {});
  ASSERT_FALSE(bounded);
  EXPECT_EQ(bounded.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(bounded.status().message().find(".maxntid"), std::string::npos)
      << bounded.status().message();
}

TEST(ParserTest, SkipsCommentsAndDebugDirectives) {
  std::string ptx = std::string(kPtxHeader) + R"(
// A line comment.
.file 1 "kernel.cu"
/* A block comment
   over two lines. */
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  .loc 1 10 3
  ld.param.u64 %rd1, [out];   // trailing comment
  mov.u32 %r1, 41;
  .pragma "nounroll";
  { // a nested scope with its own register
    .reg .b32 %inner;
    add.u32 %inner, %r1, 1;
    mov.u32 %r2, %inner;
  }
  st.global.u32 [%rd1], %r2;
  ret;
}
.section .debug_str { .b8 0 }
)";
  auto module = sim::Module::parse(ptx);
  ASSERT_TRUE(ok(module));
  std::vector<uint32_t> out(1, 0);
  sim::Device device;
  ASSERT_TRUE(ok(registerVector(device, out, "out")));
  sim::LaunchConfig config;
  ASSERT_TRUE(ok(device.launch(**module, "k", config,
                               {sim::KernelArg::pointer(out.data())})));
  EXPECT_EQ(out[0], 42u);
}

/// The most negative 64-bit literal, negated (`-0x8000000000000000`): as
/// an immediate and as an address offset it wraps to itself, with no signed
/// overflow (UBSan's build halts on one).
TEST(ParserTest, MostNegativeLiteral) {
  auto out = runBody("  mov.s64 %rd1, -0x8000000000000000;\n"
                     "  st.global.u64 [%rd14], %rd1;",
                     {}, 1);
  ASSERT_TRUE(ok(out));
  EXPECT_EQ((*out)[0], uint64_t(1) << 63);
  // The offset moves the address by 2^63: outside every buffer.
  auto far =
      runBody("  ld.global.u32 %r1, [%rd14+-0x8000000000000000];", {}, 1);
  ASSERT_FALSE(far);
  EXPECT_TRUE(far.status().isFault()) << far.status().message();
  EXPECT_NE(far.status().message().find("out-of-bounds"), std::string::npos)
      << far.status().message();
}

//===----------------------------------------------------------------------===//
// Errors of the input
//===----------------------------------------------------------------------===//

struct BadInput {
  const char *name;
  /// Lines placed at line 10 of a kernel body (see badModule).
  const char *lines;
  ErrorCode code;
  unsigned line;
  /// Substrings the message must contain.
  std::vector<std::string> mentions;
};

void PrintTo(const BadInput &c, std::ostream *os) { *os << c.name; }

/// A module whose kernel body starts at line 10 with `lines`.
std::string badModule(const std::string &lines) {
  // kPtxHeader is lines 1-3.
  return std::string(kPtxHeader) +
         "\n"
         ".visible .entry broken(\n"
         "    .param .u64 broken_out)\n"
         "{\n"
         "  .reg .b32 %r<4>;\n"
         "  .reg .pred %p<2>;\n" +
         lines +
         "\n"
         "  ret;\n"
         "}\n";
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, NamesTheLine) {
  const BadInput &c = GetParam();
  auto module = sim::Module::parse(badModule(c.lines), "bad.ptx");
  ASSERT_FALSE(module) << "parsed without an error";
  const Status &e = module.status();
  EXPECT_EQ(e.code(), c.code) << e.message();
  EXPECT_FALSE(e.isFault());
  EXPECT_EQ(lineIn(e.message(), "bad.ptx"), c.line) << e.message();
  for (const std::string &s : c.mentions)
    EXPECT_NE(e.message().find(s), std::string::npos)
        << "'" << e.message() << "' does not mention '" << s << "'";
}

using K = ErrorCode;
const BadInput kBadInputs[] = {
    {"UndeclaredRegister",
     "  mov.u32 %r1, 1;\n  add.u32 %r9, %r1, 1;",
     K::Parse,
     11,
     {"undeclared register '%r9'"}},
    {"UnknownLabel",
     "  mov.u32 %r1, 1;\n\n  bra.uni NOWHERE;",
     K::Parse,
     12,
     {"unknown label 'NOWHERE'"}},
    {"LabelTwice",
     "L1:\n  mov.u32 %r1, 1;\nL1:",
     K::Parse,
     12,
     {"label 'L1' defined twice"}},
    {"BadImmediate",
     "  mov.u32 %r1, 12abc;",
     K::Parse,
     10,
     {"bad immediate '12abc'"}},
    {"WrongOperandCount",
     "  add.u32 %r1, %r2;",
     K::Parse,
     10,
     {"add.u32", "operands"}},
    {"BadGuard",
     "  @%r1 mov.u32 %r1, 1;",
     K::Parse,
     10,
     {"bad guard predicate '%r1'"}},
    {"UnknownDirective", "  .frobnicate 3;", K::Parse, 10, {".frobnicate"}},
    {"Texture",
     "  mov.u32 %r1, 0;\n  tex.1d.v4.s32.s32 {%r0, %r1, %r2, %r3}, "
     "[tex, {%r1}];",
     K::Unsupported,
     11,
     {"tex.1d.v4.s32.s32", "broken"}},
    {"IntegerMma",
     "  mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r0, %r1, %r2, "
     "%r3}, {%r0, %r1}, {%r2}, {%r0, %r1, %r2, %r3};",
     K::Unsupported,
     10,
     {"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"}},
    {"BarRed",
     "\n\n  bar.red.popc.u32 %r1, 1, %p1;",
     K::Unsupported,
     12,
     {"bar.red.popc.u32"}},
    {"Call", "  call.uni helper, (%r1);", K::Unsupported, 10, {"call.uni"}},
    {"GriddepcontrolOfAnotherAction",
     "  griddepcontrol.signal;",
     K::Unsupported,
     10,
     {"griddepcontrol.signal"}},
    {"ShuffleWithTwoModes",
     "  shfl.sync.up.down.b32 %r1, %r2, 1, 0, 0xffffffff;",
     K::Unsupported,
     10,
     {"shfl.sync.up.down.b32"}},
    {"VoteWithoutSync",
     "  vote.all.pred %p1, %p2;",
     K::Unsupported,
     10,
     {"vote.all.pred"}},
    // A sign or a negation with no operand after it (the fuzzer's `-1` made
    // `-`): the parser read past the operand's tokens.
    {"MinusWithoutOperand",
     "  shfl.sync.bfly.b32 %r1, %r2, 1, 31, -\t;",
     K::Parse,
     10,
     {"nothing after '-' in an operand"}},
    {"NegationWithoutOperand",
     "  mov.u32 %r1, 1;\n  add.u32 %r2, %r1, !;",
     K::Parse,
     11,
     {"nothing after '!' in an operand"}},
};

INSTANTIATE_TEST_SUITE_P(Parser, BadInputTest, ::testing::ValuesIn(kBadInputs),
                         [](const ::testing::TestParamInfo<BadInput> &info) {
                           return std::string(info.param.name);
                         });

TEST(ParserTest, UnterminatedBody) {
  std::string ptx =
      std::string(kPtxHeader) + ".visible .entry open()\n{\n  ret;\n";
  auto module = sim::Module::parse(ptx, "open.ptx");
  ASSERT_FALSE(module);
  EXPECT_EQ(module.status().code(), ErrorCode::Parse);
  EXPECT_NE(module.status().message().find("open.ptx:"), std::string::npos)
      << module.status().message();
}

TEST(ParserTest, SupportedOpcodeSpellings) {
  const char *supported[] = {
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
      "cp.async.cg.shared.global",
      "cp.async.wait_group",
      "shfl.sync.bfly.b32",
      "vote.sync.ballot.b32",
      "setp.gtu.f32",
      "cvt.rn.bf16x2.f32",
      "ld.global.nc.v4.u32",
      "ex2.approx.ftz.f32",
      "bar.sync",
      "bar.arrive",
      "mbarrier.try_wait.parity.shared::cta.b64",
      "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64",
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
      "complete_tx::bytes",
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group",
      "cp.async.bulk.wait_group.read",
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
      "wgmma.wait_group.sync.aligned",
      "fence.proxy.async.shared::cta",
      "setmaxnreg.dec.sync.aligned.u32",
      "elect.sync",
  };
  for (const char *op : supported)
    EXPECT_TRUE(sim::isSupportedOpcode(op)) << op;
  const char *unsupported[] = {
      "tex.1d.v4.s32.s32",
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
      "ldmatrix.sync.aligned.m8n8.x4.b8",
      "shfl.up.b32", // the pre-Volta form without .sync
      "vote.ballot.b32",
      "bar.red.popc.u32",
      // Hopper forms the simulator does not implement.
      "cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::"
      "complete_tx::bytes",
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
      "complete_tx::bytes.multicast::cluster",
      "wgmma.mma_async.sync.aligned.m64n12k16.f32.f16.f16",
      "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16",
      "setmaxnreg.sync.aligned.u32",
      "frobnicate.u32",
  };
  for (const char *op : unsupported)
    EXPECT_FALSE(sim::isSupportedOpcode(op)) << op;
}

TEST(ParserTest, ListOpcodesMatchesTheModule) {
  std::string ptx = wrapBody("  @%p1 bra DONE;\n"
                             "  add.s32 %r1, %r0, 1;\n"
                             "  { .reg .b32 %t; mov.b32 %t, %r1; }\n"
                             "DONE:\n"
                             "  @!%p2 st.global.v2.u32 [%rd14], {%r1, %r1};");
  auto listed = sim::listOpcodes(ptx);
  ASSERT_TRUE(ok(listed));
  std::set<std::string> expected = {
      "ld.param.u64", "mov.u32",          "bra", "add.s32",
      "mov.b32",      "st.global.v2.u32", "ret"};
  EXPECT_EQ(*listed, expected);
  auto module = sim::Module::parse(ptx);
  ASSERT_TRUE(ok(module));
  EXPECT_EQ((*module)->getOpcodes(), expected);
}

/// Every opcode in nvcc's PTX for the test kernels is implemented, and
/// listOpcodes agrees with what the parser decoded.
TEST(ParserTest, EveryNvccOpcodeIsSupported) {
  FLASHC_REQUIRE_NVCC_KERNELS(module);
  auto listed = sim::listOpcodes(moduleKernels_.text);
  ASSERT_TRUE(ok(listed));
  EXPECT_GT(listed->size(), 60u) << "suspiciously few opcodes";
  for (const std::string &op : *listed)
    EXPECT_TRUE(sim::isSupportedOpcode(op)) << op;
  EXPECT_EQ(*listed, module->getOpcodes());
  for (const char *expected :
       {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        "cp.async.cg.shared.global", "cp.async.ca.shared.global",
        "cp.async.wait_group", "cp.async.commit_group", "bar.sync",
        "shfl.sync.bfly.b32", "vote.sync.ballot.b32", "cvt.rn.f16x2.f32"})
    EXPECT_EQ(listed->count(expected), 1u) << expected;
  EXPECT_EQ(module->kernelNames().size(), 17u);
}

} // namespace
