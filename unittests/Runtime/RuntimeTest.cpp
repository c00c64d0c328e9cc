//===- RuntimeTest.cpp - The LLVM-free runtime: manifests, checks, runs ---===//
//
// Tests flashc's runtime on its own, without the compiler: grids,
// manifest entries and bundle directories (and every way a manifest can be
// malformed), the CUDA device on a machine without a driver, the argument
// checks of launchAttention and the launches it makes (recorded by a fake
// device), and attention calls that the PTX simulator runs with kernels
// from a bundle `flashc bundle` built with this build (FLASHC_TEST_BUNDLE),
// compared with a float64 reference. Links FlashcRuntime only: no LLVM.
//
// The inputs are fresh random values; each test prints its seed, and
// FLASHC_TEST_SEED=<seed> repeats a run. FLASHC_TEST_BUNDLE=<dir> in the
// environment runs the tests on another bundle of the same variants (say,
// deliberately broken kernels, to see the tests fail).
//
//===----------------------------------------------------------------------===//

#include "flashc/Runtime/Runtime.h"
#include "flashc/Runtime/flashc_runtime.h"
#include "flashc/Support/Float16.h"
#include "flashc/Support/Sizes.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace flashc;
using namespace flashc::runtime;

#ifndef FLASHC_TEST_BUNDLE
#error "FLASHC_TEST_BUNDLE must name the bundle built for these tests"
#endif

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The seed of this process's random inputs: FLASHC_TEST_SEED, or a fresh
/// one. Printed once, so that a failure can be repeated.
unsigned getSeed() {
  static const unsigned seed = [] {
    unsigned s = std::random_device{}();
    if (const char *env = std::getenv("FLASHC_TEST_SEED"))
      s = static_cast<unsigned>(std::strtoul(env, nullptr, 10));
    std::printf("RuntimeTest: seed %u (FLASHC_TEST_SEED=%u repeats it)\n", s,
                s);
    return s;
  }();
  return seed;
}

/// Host memory the simulator reads: 256-byte aligned, zeroed.
class HostBuffer {
public:
  explicit HostBuffer(uint64_t bytes)
      : size((bytes + 255) / 256 * 256 + 256),
        data(static_cast<char *>(std::aligned_alloc(256, size))) {
    std::memset(data, 0, size);
  }
  ~HostBuffer() { std::free(data); }
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;

  char *get() const { return data; }
  uint64_t bytes() const { return size; }

private:
  uint64_t size;
  char *data;
};

/// A temporary directory, removed with its files at the end of the test.
class TempDir {
public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "flashc-runtime-XXXXXX";
    path = ::mkdtemp(pattern.data()) ? pattern : std::string();
  }
  ~TempDir() {
    if (!path.empty())
      (void)std::system(("rm -rf '" + path + "'").c_str());
  }
  const std::string &str() const { return path; }

private:
  std::string path;
};

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// The element offset of index (i0, i1, i2[, i3]) in a view.
int64_t offsetOf(const TensorView &t, std::initializer_list<int64_t> index) {
  int64_t offset = 0, d = 0;
  for (int64_t i : index)
    offset += i * t.strides[d++];
  return offset;
}

/// The bundle built for these tests: f16, D = 64, four query heads per KV
/// head, causal or not, with LSE or not, prefill and decode, for sm_80.
const Bundle &getTestBundle() {
  static const Bundle *bundle = [] {
    const char *path = std::getenv("FLASHC_TEST_BUNDLE");
    Result<Bundle> loaded = Bundle::load(path ? path : FLASHC_TEST_BUNDLE);
    if (!loaded) {
      std::fprintf(stderr, "cannot load the test bundle: %s\n",
                   loaded.message().c_str());
      std::abort();
    }
    return new Bundle(std::move(*loaded));
  }();
  return *bundle;
}

AttentionQuery testQuery(bool decode, bool causal, bool lse) {
  AttentionQuery q;
  q.target = "sm_80";
  q.dtype = ElementType::F16;
  q.group = 4;
  q.headDim = q.headDimV = 64;
  q.mask = causal ? Mask::causal() : Mask::none();
  q.withLse = lse;
  q.decode = decode;
  return q;
}

const KernelVariant &testVariant(bool decode, bool causal, bool lse) {
  const KernelVariant *v = getTestBundle().find(testQuery(decode, causal, lse));
  if (!v) {
    std::fprintf(stderr, "the test bundle lacks a %s%s%s variant\n",
                 decode ? "decode" : "prefill", causal ? " causal" : "",
                 lse ? " LSE" : "");
    std::abort();
  }
  return *v;
}

//===----------------------------------------------------------------------===//
// Grids
//===----------------------------------------------------------------------===//

/// A grid factor from its operands (a size's name, or an integer's digits)
/// and its divisor.
GridFactor factor(std::initializer_list<const char *> product,
                  int64_t ceilDiv = 1) {
  GridFactor f;
  f.ceilDiv = ceilDiv;
  for (const char *o : product) {
    GridFactor::Operand operand;
    if (std::isdigit(static_cast<unsigned char>(o[0])))
      operand.value = std::stoll(o);
    else
      operand.size = o;
    f.product.push_back(operand);
  }
  return f;
}

KernelGrid gridOf(std::initializer_list<GridFactor> factors) {
  return KernelGrid{factors};
}

struct GridCase {
  KernelGrid grid;
  GridSizes sizes;
  int64_t expected;
};

void PrintTo(const GridCase &c, std::ostream *os) { *os << c.grid.str(); }

class GridTest : public ::testing::TestWithParam<GridCase> {};

TEST_P(GridTest, Evaluates) {
  const GridCase &c = GetParam();
  Result<int64_t> v = c.grid.evaluate(c.sizes);
  ASSERT_TRUE(v.ok()) << c.grid.str() << ": " << v.message();
  EXPECT_EQ(*v, c.expected) << c.grid.str();
  // The manifest's form holds the same grid.
  Result<KernelGrid> back = KernelGrid::fromJson(c.grid.toJson());
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->str(), c.grid.str());
  Result<int64_t> w = back->evaluate(c.sizes);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Runtime, GridTest,
    ::testing::Values(
        GridCase{gridOf({factor({"7"})}), {1, 1, 1, 1}, 7},
        GridCase{gridOf({factor({"B"})}), {5, 1, 1, 1}, 5},
        GridCase{gridOf({factor({"B", "Nq", "Nk", "splits"})}),
                 {2, 3, 5, 7},
                 210},
        // The forward kernels' grids: B' x Q blocks (x splits).
        GridCase{gridOf({factor({"B"}), factor({"Nq"}, 64)}), {4, 129, 1, 1},
                 12},
        GridCase{gridOf({factor({"B"}), factor({"Nq"}, 64)}), {4, 128, 1, 1},
                 8},
        GridCase{gridOf({factor({"B"}), factor({"Nq"}, 16), factor({"splits"})}),
                 {3, 1, 999, 5},
                 15},
        // The combine's grid: one warp per row, four warps per CTA.
        GridCase{gridOf({factor({"B", "4", "Nq"}, 4)}), {3, 5, 1, 1}, 15},
        GridCase{gridOf({factor({"0"}, 8)}), {1, 1, 1, 1}, 0},
        GridCase{gridOf({factor({"Nq"}, 64)}), {1, 0, 1, 1}, 0},
        // Large but in range.
        GridCase{gridOf({factor({"B"}), factor({"Nq"})}),
                 {int64_t(1) << 31, int64_t(1) << 31, 1, 1},
                 int64_t(1) << 62},
        GridCase{gridOf({factor({"4611686018427387904"}), factor({"B"})}),
                 {1, 1, 1, 1},
                 int64_t(1) << 62}),
    [](const ::testing::TestParamInfo<GridCase> &info) {
      return "Case" + std::to_string(info.index);
    });

TEST(GridTest, PrintsAsTheCompilerWroteIt) {
  EXPECT_EQ(gridOf({factor({"B"}), factor({"Nq"}, 16), factor({"splits"})})
                .str(),
            "B*ceildiv(Nq,16)*splits");
  EXPECT_EQ(gridOf({factor({"B", "1", "Nq"}, 4)}).str(), "ceildiv(B*1*Nq,4)");
  JsonValue json = gridOf({factor({"B", "4", "Nq"}, 4)}).toJson();
  EXPECT_EQ(json.print(), R"([{"ceildiv": 4, "product": ["B", 4, "Nq"]}])");
}

TEST(GridTest, OverflowIsAnError) {
  struct Case {
    KernelGrid grid;
    GridSizes sizes;
  } cases[] = {
      {gridOf({factor({"B", "Nq", "Nk"})}),
       {int64_t(1) << 31, int64_t(1) << 31, 4, 1}},
      {gridOf({factor({"B", "Nq"}, 2)}),
       {std::numeric_limits<int64_t>::max(), 2, 1, 1}},
      {gridOf({factor({"B"}), factor({"Nq"}), factor({"Nk"})}),
       {int64_t(1) << 31, int64_t(1) << 31, 4, 1}},
  };
  for (const Case &c : cases) {
    Result<int64_t> v = c.grid.evaluate(c.sizes);
    ASSERT_FALSE(v.ok()) << c.grid.str() << " evaluated to " << *v;
    EXPECT_EQ(v.message(), "grid " + c.grid.str() + ": overflows 64 bits");
  }
  // A size the launch computed wrongly is not multiplied silently.
  Result<int64_t> v = gridOf({factor({"splits"})}).evaluate({1, 1, 1, -2});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.message(), "grid splits: splits is -2");
}

struct GridJsonCase {
  const char *name;
  const char *json;
  const char *message;
};

void PrintTo(const GridJsonCase &c, std::ostream *os) { *os << c.name; }

class GridJsonTest : public ::testing::TestWithParam<GridJsonCase> {};

TEST_P(GridJsonTest, IsRefused) {
  const GridJsonCase &c = GetParam();
  Result<JsonValue> json = JsonValue::parse(c.json);
  ASSERT_TRUE(json.ok()) << json.message();
  Result<KernelGrid> grid = KernelGrid::fromJson(*json);
  ASSERT_FALSE(grid.ok()) << c.json << " was accepted as " << grid->str();
  EXPECT_EQ(grid.message(), std::string("manifest: grid: ") + c.message);
}

INSTANTIATE_TEST_SUITE_P(
    Runtime, GridJsonTest,
    ::testing::Values(
        GridJsonCase{"String", R"j("B*ceildiv(Nq,64)")j",
                     "expected an array of 1 to 8 factors"},
        GridJsonCase{"Empty", "[]", "expected an array of 1 to 8 factors"},
        GridJsonCase{"TooManyFactors",
                     R"j([{"product": ["B"]}, {"product": ["B"]},
                         {"product": ["B"]}, {"product": ["B"]},
                         {"product": ["B"]}, {"product": ["B"]},
                         {"product": ["B"]}, {"product": ["B"]},
                         {"product": ["B"]}])j",
                     "expected an array of 1 to 8 factors"},
        GridJsonCase{"FactorNotAnObject", R"j(["B"])j",
                     "a factor's 'product' is not an array of 1 to 8 "
                     "operands"},
        GridJsonCase{"EmptyProduct", R"j([{"product": []}])j",
                     "a factor's 'product' is not an array of 1 to 8 "
                     "operands"},
        GridJsonCase{"UnknownSize", R"j([{"product": ["B", "H"]}])j",
                     "'H' is not a size this runtime knows (B, Nq, Nk, "
                     "splits)"},
        GridJsonCase{"ControlBytes", R"j([{"product": ["B\u0001\u001b[2J"]}])j",
                     "'B\\x01\\x1b[2J' is not a size this runtime knows (B, "
                     "Nq, Nk, splits)"},
        GridJsonCase{"NegativeOperand", R"j([{"product": [-4]}])j",
                     "an operand is neither a size nor a non-negative "
                     "integer"},
        GridJsonCase{"FractionalOperand", R"j([{"product": [2.5]}])j",
                     "an operand is neither a size nor a non-negative "
                     "integer"},
        GridJsonCase{"ZeroDivisor", R"j([{"product": ["B"], "ceildiv": 0}])j",
                     "'ceildiv' is not a positive integer"},
        GridJsonCase{"DivisorAsString",
                     R"j([{"product": ["B"], "ceildiv": "4"}])j",
                     "'ceildiv' is not a positive integer"}),
    [](const ::testing::TestParamInfo<GridJsonCase> &info) {
      return std::string(info.param.name);
    });

//===----------------------------------------------------------------------===//
// Manifest entries
//===----------------------------------------------------------------------===//

/// PTX that declares `v`'s kernels as flashc's do (its parameters, each a
/// .u64 or an .f32, `.reqntid` the block) with empty bodies, and the
/// descriptor the compiler appends: what Bundle::load checks a manifest
/// against.
std::string fakePtx(const KernelVariant &v) {
  std::string ptx =
      ".version 8.0\n.target " + v.query.target + "\n.address_size 64\n";
  for (const KernelEntry *e : {&v.forward, v.combine ? &*v.combine : nullptr}) {
    if (!e)
      continue;
    ptx += ".visible .entry " + e->name + "(\n";
    for (size_t i = 0; i < v.parameters.size(); ++i)
      ptx += std::string(i ? ",\n" : "") + "\t.param " +
             (v.parameters[i].bits == 1024 ? ".align 64 .b8 "
              : v.parameters[i].bits == 64 ? ".u64 "
                                           : ".f32 ") +
             e->name + "_param_" + std::to_string(i) +
             (v.parameters[i].bits == 1024 ? "[128]" : "");
    // A kernel launched early waits for its predecessor before it reads.
    ptx += "\n)\n.reqntid " + std::to_string(e->block) + ", 1, 1\n{\n" +
           (e->programmaticLaunch ? "\tld.param.u64 %rd1, [" + e->name +
                                        "_param_0];\n\tgriddepcontrol.wait;\n"
                                        "\tld.global.f32 %f1, [%rd1];\n"
                                  : std::string()) +
           "\tret;\n}\n";
  }
  return ptx + getVariantDescriptor(v);
}

/// A decode variant with every field set to a value of its own.
KernelVariant sampleVariant() {
  KernelVariant v;
  v.id = "sm_90a-bf16-g4-d96dv80-causal-lse-decode";
  v.query.target = "sm_90a";
  v.query.dtype = ElementType::BF16;
  v.query.group = 4;
  v.query.headDim = 96;
  v.query.headDimV = 80;
  v.query.mask = Mask::causal();
  v.query.withLse = true;
  v.query.decode = true;
  v.blockQ = 16;
  v.blockKV = 96;
  v.forward = {"attn_fwd",
               gridOf({factor({"B"}), factor({"Nq"}, 16), factor({"splits"})}),
               128, 45056, 168, 0};
  v.forward.finalAtOneSplit = true;
  v.combine = KernelEntry{"attn_combine", gridOf({factor({"B", "4", "Nq"}, 4)}),
                          128, 0, 40, 8};
  v.combine->programmaticLaunch = true;
  v.config = "target=sm_90a block-q=16";
  v.compileSeconds = 1.25;
  for (const KernelParameter &p : getKnownKernelParameters()) {
    v.parameters.push_back({p.name, "the " + p.name, p.bits});
    // A tensor map names its tensor and box.
    if (p.bits == 1024) {
      v.parameters.back().tensor = p.name.substr(0, p.name.find('_'));
      v.parameters.back().box = {64, 32, 4, 1};
    }
  }
  v.ptx = fakePtx(v);
  return v;
}

void expectSameEntry(const KernelEntry &a, const KernelEntry &b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.grid.str(), b.grid.str());
  EXPECT_EQ(a.block, b.block);
  EXPECT_EQ(a.sharedBytes, b.sharedBytes);
  EXPECT_EQ(a.registers, b.registers);
  EXPECT_EQ(a.spillBytes, b.spillBytes);
  EXPECT_EQ(a.finalAtOneSplit, b.finalAtOneSplit);
  EXPECT_EQ(a.programmaticLaunch, b.programmaticLaunch);
}

/// Every manifest field of two variants (not the PTX and cubin, which live
/// in files).
void expectSameVariant(const KernelVariant &a, const KernelVariant &b) {
  EXPECT_EQ(a.id, b.id);
  ASSERT_EQ(a.parameters.size(), b.parameters.size());
  for (size_t i = 0; i < a.parameters.size(); ++i) {
    EXPECT_EQ(a.parameters[i].name, b.parameters[i].name);
    EXPECT_EQ(a.parameters[i].meaning, b.parameters[i].meaning);
    EXPECT_EQ(a.parameters[i].bits, b.parameters[i].bits);
    EXPECT_EQ(a.parameters[i].tensor, b.parameters[i].tensor);
    EXPECT_EQ(a.parameters[i].box, b.parameters[i].box);
  }
  EXPECT_EQ(a.query.target, b.query.target);
  EXPECT_EQ(a.query.dtype, b.query.dtype);
  EXPECT_EQ(a.query.group, b.query.group);
  EXPECT_EQ(a.query.headDim, b.query.headDim);
  EXPECT_EQ(a.query.headDimV, b.query.headDimV);
  EXPECT_EQ(a.query.mask, b.query.mask);
  EXPECT_EQ(a.query.withLse, b.query.withLse);
  EXPECT_EQ(a.query.decode, b.query.decode);
  EXPECT_EQ(a.blockQ, b.blockQ);
  EXPECT_EQ(a.blockKV, b.blockKV);
  expectSameEntry(a.forward, b.forward);
  ASSERT_EQ(a.combine.has_value(), b.combine.has_value());
  if (a.combine)
    expectSameEntry(*a.combine, *b.combine);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.compileSeconds, b.compileSeconds);
}

TEST(ManifestTest, KernelEntryRoundTrip) {
  KernelEntry e{"k", gridOf({factor({"B"}), factor({"Nq"}, 128)}), 256, 98304,
                255, 16};
  Result<KernelEntry> back = KernelEntry::fromJson(e.toJson());
  ASSERT_TRUE(back.ok()) << back.message();
  expectSameEntry(e, *back);

  // registers and spill_bytes are optional: -1 (unknown) without them.
  JsonValue json = e.toJson();
  json.getObject().erase("registers");
  json.getObject().erase("spill_bytes");
  back = KernelEntry::fromJson(json);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->registers, -1);
  EXPECT_EQ(back->spillBytes, -1);
}

TEST(ManifestTest, VariantRoundTripThroughText) {
  for (bool decode : {true, false}) {
    KernelVariant v = sampleVariant();
    if (!decode) {
      v.query.decode = false;
      v.combine.reset();
      v.id = "prefill";
    }
    // Through printed and parsed text, as a bundle stores it.
    Result<JsonValue> json = JsonValue::parse(v.toJson().printPretty());
    ASSERT_TRUE(json.ok()) << json.message();
    Result<KernelVariant> back = KernelVariant::fromJson(*json);
    ASSERT_TRUE(back.ok()) << back.message();
    expectSameVariant(v, *back);
    const JsonValue *ptx = json->get("ptx");
    ASSERT_TRUE(ptx && ptx->getKind() == JsonValue::Kind::String);
    EXPECT_EQ(ptx->getString(), v.id + ".ptx");
    EXPECT_EQ(json->get("cubin"), nullptr) << "no cubin, no cubin file";
  }
}

TEST(ManifestTest, AFixedScaleIsFromAnOlderRuntime) {
  // Kernels take the softmax scale as an argument; a manifest entry that
  // names one was built when the scale was in the code, for a runtime that
  // passed one parameter fewer.
  KernelVariant v = sampleVariant();
  JsonValue json = v.toJson();
  EXPECT_EQ(json.get("scale"), nullptr);
  Result<JsonValue> parsed = JsonValue::parse(json.print());
  ASSERT_TRUE(parsed.ok());
  JsonValue::Object o = parsed->getObject();
  o["scale"] = std::string("0x1p-3");
  Result<KernelVariant> back = KernelVariant::fromJson(JsonValue(o));
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.message().find("has a fixed softmax scale"), std::string::npos)
      << back.message();
}

/// One way to spoil a valid manifest entry, and the error it gives.
struct MalformedCase {
  const char *name;
  std::function<void(JsonValue::Object &variant)> spoil;
  std::string message;
};

JsonValue::Object &kernelsOf(JsonValue::Object &v) {
  return v["kernels"].getObject();
}
JsonValue::Object &forwardOf(JsonValue::Object &v) {
  return kernelsOf(v)["forward"].getObject();
}

const std::string kMissing = "manifest: missing or malformed ";
const std::string kNotAFileName =
    "is not a plain file name (letters, digits, '_', '-' and '.', not "
    "starting with '.', at most 200)";

void PrintTo(const MalformedCase &c, std::ostream *os) { *os << c.name; }

class MalformedManifestTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedManifestTest, IsAnError) {
  const MalformedCase &c = GetParam();
  // A fresh tree: JsonValue copies share their objects.
  JsonValue json = sampleVariant().toJson();
  ASSERT_TRUE(KernelVariant::fromJson(json).ok());
  c.spoil(json.getObject());
  Result<KernelVariant> v = KernelVariant::fromJson(json);
  ASSERT_FALSE(v.ok()) << c.name << " was accepted";
  EXPECT_EQ(v.message(), c.message) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Runtime, MalformedManifestTest,
    ::testing::Values(
        MalformedCase{"NoId", [](auto &v) { v.erase("id"); },
                      "manifest: missing or malformed 'id'"},
        MalformedCase{"EmptyId", [](auto &v) { v["id"] = ""; },
                      "manifest: variant id '' " + kNotAFileName},
        MalformedCase{"IdWithSlash", [](auto &v) { v["id"] = "../x"; },
                      "manifest: variant id '../x' " + kNotAFileName},
        MalformedCase{"IdParent", [](auto &v) { v["id"] = ".."; },
                      "manifest: variant id '..' " + kNotAFileName},
        MalformedCase{"IdWithNul",
                      [](auto &v) { v["id"] = std::string("a\0b", 3); },
                      "manifest: variant id 'a\\x00b' " + kNotAFileName},
        MalformedCase{"IdWithNewline", [](auto &v) { v["id"] = "a\nb"; },
                      "manifest: variant id 'a\\x0ab' " + kNotAFileName},
        MalformedCase{"NumericId", [](auto &v) { v["id"] = 3; },
                      "manifest: missing or malformed 'id'"},
        MalformedCase{"OddAlignment", [](auto &v) { v["alignment"] = 3; },
                      "manifest: variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' has "
                      "'alignment' 3; expected 16, 8, 4 or 2 bytes"},
        MalformedCase{"TextAlignment",
                      [](auto &v) { v["alignment"] = "16"; },
                      "manifest: variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' has "
                      "'alignment' that is not an integer; expected 16, 8, "
                      "4 or 2 bytes"},
        MalformedCase{"TensorMapBelowSixteen",
                      [](auto &v) { v["alignment"] = 4; },
                      "manifest: variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' has "
                      "'q_map', a tensor map, but 'alignment' 4: tensor "
                      "maps need 16-byte aligned tensors"},
        MalformedCase{"NoTarget", [](auto &v) { v.erase("target"); },
                      "manifest: missing or malformed 'target'"},
        MalformedCase{"UnknownTarget", [](auto &v) { v["target"] = "sm_75"; },
                      "manifest: variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' has target "
                      "'sm_75'; this runtime runs sm_80 and sm_90a"},
        MalformedCase{"NoDtype", [](auto &v) { v.erase("dtype"); },
                      "manifest: missing or malformed 'dtype'"},
        MalformedCase{"BadDtype", [](auto &v) { v["dtype"] = "f64"; },
                      "manifest: missing or malformed 'dtype'"},
        MalformedCase{"NoGroup", [](auto &v) { v.erase("group"); },
                      "manifest: missing or malformed 'group'"},
        MalformedCase{"ZeroGroup", [](auto &v) { v["group"] = 0; },
                      "manifest: 'group' is 0, outside 1 to 1024"},
        MalformedCase{"LargeGroup", [](auto &v) { v["group"] = 5000; },
                      "manifest: 'group' is 5000, outside 1 to 1024"},
        MalformedCase{"HugeGroup", [](auto &v) { v["group"] = 1e300; },
                      "manifest: missing or malformed 'group'"},
        MalformedCase{"FractionalHeadDim",
                      [](auto &v) { v["head_dim"] = 63.5; },
                      "manifest: missing or malformed 'head_dim'"},
        MalformedCase{"HugeHeadDim", [](auto &v) { v["head_dim"] = 9e18; },
                      "manifest: 'head_dim' is 9000000000000000000, outside "
                      "1 to 256"},
        MalformedCase{"NegativeHeadDimV",
                      [](auto &v) { v["head_dim_v"] = -64; },
                      "manifest: 'head_dim_v' is -64, outside 1 to 256"},
        MalformedCase{"HeadDimAsString", [](auto &v) { v["head_dim"] = "64"; },
                      "manifest: missing or malformed 'head_dim'"},
        MalformedCase{"MaskAsBool", [](auto &v) { v["mask"] = true; },
                      "manifest: missing or malformed 'mask'"},
        MalformedCase{"UnknownMask", [](auto &v) { v["mask"] = "sliding"; },
                      "manifest: variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' has mask "
                      "'sliding'; this runtime knows none, causal"},
        MalformedCase{"NoLse", [](auto &v) { v.erase("lse"); },
                      "manifest: missing or malformed 'lse, decode'"},
        MalformedCase{"DecodeAsNumber", [](auto &v) { v["decode"] = 1; },
                      "manifest: missing or malformed 'lse, decode'"},
        MalformedCase{"AnyScale", [](auto &v) { v["scale"] = "0x1p-3"; },
                      "manifest: variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' has a fixed "
                      "softmax scale: it was built for an older runtime "
                      "(kernels now take the scale as an argument); rebuild "
                      "the bundle with this flashc"},
        MalformedCase{"NoBlockQ", [](auto &v) { v.erase("block_q"); },
                      "manifest: missing or malformed 'block_q'"},
        MalformedCase{"HugeBlockKV", [](auto &v) { v["block_kv"] = 1e15; },
                      "manifest: 'block_kv' is 1000000000000000, outside 1 "
                      "to 65536"},
        MalformedCase{"CompileSecondsNegative",
                      [](auto &v) { v["compile_seconds"] = -1; },
                      "manifest: missing or malformed 'compile_seconds'"},
        MalformedCase{"KernelsNotAnObject", [](auto &v) { v["kernels"] = 3; },
                      "manifest: missing or malformed 'kernels.forward'"},
        MalformedCase{"ForwardNotAnObject",
                      [](auto &v) { kernelsOf(v)["forward"] = "k"; },
                      "manifest: a kernel entry is not an object"},
        MalformedCase{"KernelNameNotAnIdentifier",
                      [](auto &v) { forwardOf(v)["name"] = "k(); trap"; },
                      "manifest: kernel name 'k(); trap' is not a PTX "
                      "identifier"},
        MalformedCase{"GridAsAFormula",
                      [](auto &v) {
                        forwardOf(v)["grid"] = "B*ceildiv(Nq,16)*splits";
                      },
                      "manifest: kernel attn_fwd has a grid formula in "
                      "text: it was built by an older flashc (grids are now "
                      "lists of factors); rebuild the bundle with this "
                      "flashc"},
        MalformedCase{"GridNotAList",
                      [](auto &v) { forwardOf(v)["grid"] = 4; },
                      "manifest: grid: expected an array of 1 to 8 factors "
                      "(kernel attn_fwd)"},
        MalformedCase{"SharedBytesPast32Bits",
                      [](auto &v) { forwardOf(v)["shared_bytes"] = 4294967296.0 + 1024; },
                      "manifest: 'shared_bytes' is 4294968320, outside 0 to "
                      "232448"},
        MalformedCase{"SharedBytesPastTheTarget",
                      [](auto &v) {
                        v["target"] = "sm_80";
                        forwardOf(v)["shared_bytes"] = 200000;
                      },
                      "manifest: kernel attn_fwd of variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' asks "
                      "200000 bytes of shared memory; sm_80 allows 166912"},
        MalformedCase{"TooManyRegisters",
                      [](auto &v) { forwardOf(v)["registers"] = 256; },
                      "manifest: 'registers' is 256, outside -1 to 255"},
        MalformedCase{"OneKernelTwice",
                      [](auto &v) {
                        kernelsOf(v)["combine"].getObject()["name"] =
                            "attn_fwd";
                      },
                      "manifest: variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' names one "
                      "kernel twice"},
        MalformedCase{"NoKernels", [](auto &v) { v.erase("kernels"); },
                      "manifest: missing or malformed 'kernels.forward'"},
        MalformedCase{"NoForward",
                      [](auto &v) { kernelsOf(v).erase("forward"); },
                      "manifest: missing or malformed 'kernels.forward'"},
        MalformedCase{"ForwardWithoutName",
                      [](auto &v) { forwardOf(v).erase("name"); },
                      "manifest: missing or malformed 'name'"},
        MalformedCase{"ForwardWithoutGrid",
                      [](auto &v) { forwardOf(v).erase("grid"); },
                      "manifest: missing or malformed 'grid'"},
        MalformedCase{"ForwardBlockZero",
                      [](auto &v) { forwardOf(v)["block"] = 0; },
                      "manifest: 'block' is 0, outside 1 to 1024"},
        MalformedCase{"ForwardBlockTooLarge",
                      [](auto &v) { forwardOf(v)["block"] = 2048; },
                      "manifest: 'block' is 2048, outside 1 to 1024"},
        MalformedCase{"ForwardNegativeShared",
                      [](auto &v) { forwardOf(v)["shared_bytes"] = -1; },
                      "manifest: 'shared_bytes' is -1, outside 0 to 232448"},
        MalformedCase{"NoArguments", [](auto &v) { v.erase("arguments"); },
                      "manifest: missing or malformed 'arguments'"},
        MalformedCase{"ArgumentWithoutName",
                      [](auto &v) {
                        v["arguments"].getArray()[2] =
                            JsonValue(JsonValue::Object{});
                      },
                      "manifest: missing or malformed 'arguments'"},
        // A tensor map's tensor and box: the last four arguments are
        // q_map, k_map, v_map and out_map.
        MalformedCase{"TensorMapWithoutBox",
                      [](auto &v) {
                        auto &args = v["arguments"].getArray();
                        args[args.size() - 2].getObject().erase("box");
                      },
                      "manifest: tensor map argument 'v_map' of variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' needs its "
                      "'tensor' and a 4-dimensional 'box'"},
        MalformedCase{"TensorMapOfAnotherTensor",
                      [](auto &v) {
                        auto &args = v["arguments"].getArray();
                        args[args.size() - 3].getObject()["tensor"] = "q";
                      },
                      "manifest: tensor map argument 'k_map' of variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' needs its "
                      "'tensor' and a 4-dimensional 'box'"},
        MalformedCase{"TensorMapBoxTooWide",
                      [](auto &v) {
                        auto &args = v["arguments"].getArray();
                        args[args.size() - 4].getObject()["box"] =
                            JsonValue(JsonValue::Array{
                                JsonValue(64), JsonValue(512), JsonValue(1),
                                JsonValue(1)});
                      },
                      "manifest: tensor map argument 'q_map' of variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' has a box "
                      "dimension that is not 1 to 256"},
        // A map swizzles its box's rows: 32, 64 or 128 bytes (24 bf16 are
        // 48).
        MalformedCase{"TensorMapBoxRowNotASwizzle",
                      [](auto &v) {
                        auto &args = v["arguments"].getArray();
                        args[args.size() - 3].getObject()["box"] =
                            JsonValue(JsonValue::Array{
                                JsonValue(24), JsonValue(32), JsonValue(1),
                                JsonValue(1)});
                      },
                      "manifest: tensor map argument 'k_map' of variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' has a box "
                      "row of 48 bytes; a swizzled box's row is 32, 64 or "
                      "128 bytes"},
        MalformedCase{"CompileSecondsAsString",
                      [](auto &v) { v["compile_seconds"] = "fast"; },
                      "manifest: missing or malformed 'compile_seconds'"},
        MalformedCase{"FractionalRegisters",
                      [](auto &v) { forwardOf(v)["registers"] = 12.5; },
                      "manifest: missing or malformed 'registers'"},
        MalformedCase{"SpillBytesAsString",
                      [](auto &v) { forwardOf(v)["spill_bytes"] = "0"; },
                      "manifest: missing or malformed 'spill_bytes'"},
        MalformedCase{
            "CombineWithoutGrid",
            [](auto &v) { kernelsOf(v)["combine"].getObject().erase("grid"); },
            "manifest: missing or malformed 'grid'"},
        MalformedCase{"DecodeWithoutCombine",
                      [](auto &v) { kernelsOf(v).erase("combine"); },
                      "manifest: variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' must have "
                      "a combine kernel exactly when it is a decode variant"},
        MalformedCase{"PrefillWithCombine",
                      [](auto &v) { v["decode"] = false; },
                      "manifest: variant "
                      "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' must have "
                      "a combine kernel exactly when it is a decode "
                      "variant"}),
    [](const ::testing::TestParamInfo<MalformedCase> &info) {
      return std::string(info.param.name);
    });

TEST(ManifestTest, KernelParametersAreTheManifests) {
  // A kernel may take any of the values the runtime passes, in any order:
  // the manifest's list, read back as it was written.
  KernelVariant sample = sampleVariant();
  std::reverse(sample.parameters.begin(), sample.parameters.end());
  sample.parameters.erase(sample.parameters.begin() + 3);
  Result<KernelVariant> back = KernelVariant::fromJson(sample.toJson());
  ASSERT_TRUE(back.ok()) << back.message();
  expectSameVariant(*back, sample);
}

TEST(ManifestTest, OtherKernelParametersAreRejected) {
  auto load = [](auto edit) {
    JsonValue json = sampleVariant().toJson();
    edit(json.getObject()["arguments"].getArray());
    return KernelVariant::fromJson(json);
  };
  Result<KernelVariant> unknown = load([](JsonValue::Array &args) {
    args[3].getObject()["name"] = "tma_descriptor";
  });
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.message(),
            "manifest: the kernels of variant "
            "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' take an argument "
            "'tma_descriptor' this runtime does not pass (rebuild the "
            "bundle with this flashc)");
  Result<KernelVariant> narrow = load([](JsonValue::Array &args) {
    args[0].getObject()["bits"] = 32;
  });
  ASSERT_FALSE(narrow.ok());
  EXPECT_EQ(narrow.message(),
            "manifest: argument 'q' of variant "
            "'sm_90a-bf16-g4-d96dv80-causal-lse-decode' has 32 bits; this "
            "runtime passes 64");
  Result<KernelVariant> twice = load([](JsonValue::Array &args) {
    args[1].getObject()["name"] = "q";
  });
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.message(),
            "manifest: variant 'sm_90a-bf16-g4-d96dv80-causal-lse-decode' "
            "names argument 'q' twice");
  Result<KernelVariant> noBits = load([](JsonValue::Array &args) {
    args[5].getObject().erase("bits");
  });
  ASSERT_FALSE(noBits.ok());
  EXPECT_EQ(noBits.message(), "manifest: missing or malformed 'arguments'");
}

TEST(ManifestTest, NonObjectVariantIsAnError) {
  for (JsonValue v : {JsonValue(), JsonValue(3), JsonValue("variant"),
                      JsonValue(JsonValue::Array{})}) {
    Result<KernelVariant> k = KernelVariant::fromJson(v);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.message(), "manifest: a variant is not an object");
  }
}

//===----------------------------------------------------------------------===//
// Bundles
//===----------------------------------------------------------------------===//

TEST(BundleTest, SaveLoadRoundTrip) {
  TempDir dir;
  ASSERT_FALSE(dir.str().empty());
  Bundle bundle;
  KernelVariant decode = sampleVariant();
  decode.ptx = fakePtx(decode) + "// decode\n";
  decode.cubin = std::string("\x7f"
                             "ELF\0\1\2\xff",
                             8); // binary bytes
  KernelVariant prefill = sampleVariant();
  prefill.id = "sm_90a-bf16-g4-d96dv80-causal-lse-prefill";
  prefill.query.decode = false;
  prefill.combine.reset();
  prefill.ptx = fakePtx(prefill) + "// prefill\n";
  bundle.add(decode);
  bundle.add(prefill);
  // Adding an id again replaces that variant.
  decode.blockKV = 64;
  decode.ptx = fakePtx(decode) + "// decode\n";
  bundle.add(decode);
  ASSERT_EQ(bundle.variants.size(), 2u);
  EXPECT_EQ(bundle.variants[0].blockKV, 64);

  std::string path = dir.str() + "/kernels";
  Status s = bundle.save(path);
  ASSERT_FALSE(s) << s.message();
  // Saving over an existing bundle works too.
  s = bundle.save(path);
  ASSERT_FALSE(s) << s.message();
  EXPECT_EQ(readText(path + "/" + decode.id + ".cubin"), decode.cubin);
  EXPECT_NE(readText(path + "/manifest.json").find("\"flashc-bundle-1\""),
            std::string::npos);

  Result<Bundle> loaded = Bundle::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  ASSERT_EQ(loaded->variants.size(), 2u);
  for (const KernelVariant &want : {decode, prefill}) {
    const KernelVariant *got = loaded->find(want.query);
    ASSERT_NE(got, nullptr) << want.id;
    expectSameVariant(want, *got);
    EXPECT_EQ(got->ptx, want.ptx);
    EXPECT_EQ(got->cubin, want.cubin);
  }
  // find matches on every field of the query.
  AttentionQuery other = decode.query;
  other.headDimV = 32;
  EXPECT_EQ(loaded->find(other), nullptr);
  // The miss names the closest variant and the field that differs.
  EXPECT_NE(loaded->explainMiss(other).find(
                "differs in head_dim_v (" +
                std::to_string(decode.query.headDimV) + "; the call needs 32)"),
            std::string::npos)
      << loaded->explainMiss(other);
  other = decode.query;
  other.target = "sm_80";
  EXPECT_EQ(loaded->find(other), nullptr);
  other = decode.query;
  other.group = 1;
  EXPECT_EQ(loaded->find(other), nullptr);
  other = decode.query;
  other.headDimV = other.headDim;
  EXPECT_EQ(loaded->find(other), nullptr);
  // Each field alone: find misses exactly where getMismatchedField names
  // a field.
  std::vector<std::function<void(AttentionQuery &)>> changes = {
      [](AttentionQuery &q) { q.target = "sm_80"; },
      [](AttentionQuery &q) { q.dtype = ElementType::F16; },
      [](AttentionQuery &q) { q.group = 2; },
      [](AttentionQuery &q) { q.headDim = 64; },
      [](AttentionQuery &q) { q.headDimV = 96; },
      [](AttentionQuery &q) { q.mask = Mask::none(); },
      [](AttentionQuery &q) { q.withLse = false; },
      [](AttentionQuery &q) { q.decode = false; }};
  for (size_t i = 0; i < changes.size(); ++i) {
    other = decode.query;
    changes[i](other);
    const KernelVariant *got = loaded->find(other);
    bool anyMatch = false;
    for (const KernelVariant &v : loaded->variants)
      anyMatch |= getMismatchedField(v.query, other).empty();
    EXPECT_EQ(got != nullptr, anyMatch) << "change " << i;
    if (got) {
      EXPECT_EQ(getMismatchedField(got->query, other), "") << "change " << i;
    }
  }
  // Loading sets each variant's image hash (the device's cache key), and
  // other images hash otherwise.
  for (const KernelVariant &v : loaded->variants)
    EXPECT_EQ(v.imageHash, v.computeImageHash()) << v.id;
  EXPECT_NE(loaded->variants[0].imageHash, loaded->variants[1].imageHash);
  KernelVariant moved = decode;
  // The same bytes split otherwise between the two images.
  moved.cubin = moved.ptx.substr(moved.ptx.size() - 1) + moved.cubin;
  moved.ptx.pop_back();
  EXPECT_NE(moved.computeImageHash(), decode.computeImageHash());
}

/// A saved bundle of the sample variant, to spoil.
class BrokenBundleTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(dir.str().empty());
    path = dir.str() + "/b";
    Bundle bundle;
    KernelVariant v = sampleVariant();
    v.cubin = "cubin";
    bundle.add(v);
    Status s = bundle.save(path);
    ASSERT_FALSE(s) << s.message();
    ASSERT_TRUE(Bundle::load(path).ok());
  }

  /// The message of the error loading `path`; its code in `code`.
  std::string loadError() {
    Result<Bundle> b = Bundle::load(path);
    code = b.ok() ? ErrorCode::Success : b.status().code();
    return b.ok() ? "(loaded)" : b.message();
  }

  TempDir dir;
  std::string path;
  ErrorCode code = ErrorCode::Success;
  const std::string id = sampleVariant().id;
};

TEST_F(BrokenBundleTest, MissingPtxFile) {
  ASSERT_EQ(std::remove((path + "/" + id + ".ptx").c_str()), 0);
  EXPECT_EQ(loadError(), "cannot read '" + path + "/" + id +
                             ".ptx': No such file or directory");
  // The bundle is there: a file of it is missing.
  EXPECT_EQ(code, ErrorCode::InvalidBundle);
}

TEST_F(BrokenBundleTest, MissingCubinFile) {
  ASSERT_EQ(std::remove((path + "/" + id + ".cubin").c_str()), 0);
  EXPECT_EQ(loadError(), "cannot read '" + path + "/" + id +
                             ".cubin': No such file or directory");
}

TEST_F(BrokenBundleTest, ChangedPtxFile) {
  writeText(path + "/" + id + ".ptx", sampleVariant().ptx + "// changed\n");
  EXPECT_EQ(loadError(), path + "/" + id +
                             ".ptx does not match its manifest entry (its "
                             "checksum differs)");
}

TEST_F(BrokenBundleTest, ChangedCubinFile) {
  writeText(path + "/" + id + ".cubin", "another cubin");
  EXPECT_EQ(loadError(), path + "/" + id +
                             ".cubin does not match its manifest entry (its "
                             "checksum differs)");
}

TEST_F(BrokenBundleTest, MissingDirectory) {
  path += "/nowhere";
  EXPECT_EQ(loadError(), "not a flashc bundle: cannot read '" + path +
                             "/manifest.json': No such file or directory");
  EXPECT_EQ(code, ErrorCode::NotFound);
  path.clear();
  EXPECT_EQ(loadError(), "bundle path is empty");
  EXPECT_EQ(code, ErrorCode::NotFound);
}

TEST_F(BrokenBundleTest, OtherFormat) {
  std::string manifest = readText(path + "/manifest.json");
  size_t at = manifest.find("flashc-bundle-1");
  ASSERT_NE(at, std::string::npos);
  manifest.replace(at, 15, "flashc-bundle-2");
  writeText(path + "/manifest.json", manifest);
  EXPECT_EQ(loadError(),
            path + "/manifest.json: not a flashc-bundle-1 manifest");
}

TEST_F(BrokenBundleTest, NoFormat) {
  writeText(path + "/manifest.json", "{\"variants\": []}");
  EXPECT_EQ(loadError(),
            path + "/manifest.json: not a flashc-bundle-1 manifest");
  writeText(path + "/manifest.json", "[]");
  EXPECT_EQ(loadError(),
            path + "/manifest.json: not a flashc-bundle-1 manifest");
}

TEST_F(BrokenBundleTest, NoVariants) {
  writeText(path + "/manifest.json", "{\"format\": \"flashc-bundle-1\"}");
  EXPECT_EQ(loadError(), path + "/manifest.json: no 'variants' array");
  writeText(path + "/manifest.json",
            "{\"format\": \"flashc-bundle-1\", \"variants\": {}}");
  EXPECT_EQ(loadError(), path + "/manifest.json: no 'variants' array");
  // An empty list is a valid, empty bundle.
  writeText(path + "/manifest.json",
            "{\"format\": \"flashc-bundle-1\", \"variants\": []}");
  Result<Bundle> b = Bundle::load(path);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_TRUE(b->variants.empty());
}

TEST_F(BrokenBundleTest, NotJson) {
  writeText(path + "/manifest.json", "{\"format\": ");
  std::string error = loadError();
  EXPECT_EQ(error.rfind(path + "/manifest.json: ", 0), 0u) << error;
  EXPECT_NE(error, "(loaded)");
  EXPECT_EQ(code, ErrorCode::InvalidBundle);
}

TEST_F(BrokenBundleTest, MalformedVariantNamesTheManifest) {
  std::string manifest = readText(path + "/manifest.json");
  size_t at = manifest.find("\"dtype\": \"bf16\"");
  ASSERT_NE(at, std::string::npos) << manifest;
  manifest.replace(at, 15, "\"dtype\": \"f8\"");
  writeText(path + "/manifest.json", manifest);
  EXPECT_EQ(loadError(), path + "/manifest.json: " + kMissing + "'dtype'");
}

/// Files that are not what a bundle's files should be: each is one error
/// naming the file, never a hang, an exception or an allocation of its
/// size.
TEST_F(BrokenBundleTest, ManifestIsADirectory) {
  std::string manifest = path + "/manifest.json";
  ASSERT_EQ(std::remove(manifest.c_str()), 0);
  ASSERT_EQ(::mkdir(manifest.c_str(), 0700), 0);
  EXPECT_EQ(loadError(), "not a flashc bundle: '" + manifest +
                             "' is not a regular file (a directory)");
  EXPECT_EQ(code, ErrorCode::InvalidBundle);
}

TEST_F(BrokenBundleTest, ManifestIsAFifo) {
  // Opening a FIFO with no writer blocks a plain open for ever.
  std::string manifest = path + "/manifest.json";
  ASSERT_EQ(std::remove(manifest.c_str()), 0);
  ASSERT_EQ(::mkfifo(manifest.c_str(), 0600), 0);
  EXPECT_EQ(loadError(), "not a flashc bundle: '" + manifest +
                             "' is not a regular file (a FIFO)");
}

TEST_F(BrokenBundleTest, ManifestIsDevZero) {
  std::string manifest = path + "/manifest.json";
  ASSERT_EQ(std::remove(manifest.c_str()), 0);
  ASSERT_EQ(::symlink("/dev/zero", manifest.c_str()), 0);
  EXPECT_EQ(loadError(), "not a flashc bundle: '" + manifest +
                             "' is not a regular file (a device)");
}

TEST_F(BrokenBundleTest, PtxIsADirectoryOrDevice) {
  std::string ptx = path + "/" + id + ".ptx";
  ASSERT_EQ(std::remove(ptx.c_str()), 0);
  ASSERT_EQ(::mkdir(ptx.c_str(), 0700), 0);
  EXPECT_EQ(loadError(), "'" + ptx + "' is not a regular file (a directory)");
  ASSERT_EQ(::rmdir(ptx.c_str()), 0);
  ASSERT_EQ(::symlink("/dev/zero", ptx.c_str()), 0);
  EXPECT_EQ(loadError(), "'" + ptx + "' is not a regular file (a device)");
}

TEST_F(BrokenBundleTest, HugeFilesAreRefusedUnread) {
  // Sparse: the size is the file system's word, nothing is written.
  std::string cubin = path + "/" + id + ".cubin";
  ASSERT_EQ(::truncate(cubin.c_str(), int64_t(1) << 40), 0);
  EXPECT_EQ(loadError(), "'" + cubin +
                             "' has 1099511627776 bytes, over the limit of "
                             "67108864");
}

TEST_F(BrokenBundleTest, PathWithNul) {
  Result<Bundle> b = Bundle::load(path + std::string("\0/x", 3));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.message(), "bundle path '" + path + "\\x00/x' contains a NUL byte");
  EXPECT_EQ(b.status().code(), ErrorCode::InvalidArgument);
}

TEST_F(BrokenBundleTest, VariantTwice) {
  std::string manifest = readText(path + "/manifest.json");
  Result<JsonValue> json = JsonValue::parse(manifest);
  ASSERT_TRUE(json.ok());
  JsonValue::Array &list = json->getObject()["variants"].getArray();
  list.push_back(JsonValue::parse(list[0].print()).operator*());
  writeText(path + "/manifest.json", json->printPretty());
  EXPECT_EQ(loadError(), path + "/manifest.json: variant '" + id +
                             "' appears twice");
}

TEST_F(BrokenBundleTest, FileNamedOtherThanItsId) {
  std::string manifest = readText(path + "/manifest.json");
  size_t at = manifest.find(id + ".ptx");
  ASSERT_NE(at, std::string::npos);
  manifest.replace(at, id.size() + 4, "../../etc/passwd");
  writeText(path + "/manifest.json", manifest);
  EXPECT_EQ(loadError(), path + "/manifest.json: variant '" + id +
                             "' names its ptx file other than '" + id +
                             ".ptx'");
}

/// A manifest that disagrees with the kernels it ships: each field the
/// kernel's PTX records, changed in the manifest alone (with the checksum
/// still right), is refused.
struct DisagreementCase {
  const char *name;
  std::function<void(KernelVariant &manifest)> change;
  std::string message;
};

void PrintTo(const DisagreementCase &c, std::ostream *os) { *os << c.name; }

class ManifestAgainstPtxTest
    : public ::testing::TestWithParam<DisagreementCase> {};

TEST_P(ManifestAgainstPtxTest, IsRefused) {
  const DisagreementCase &c = GetParam();
  KernelVariant v = sampleVariant();
  ASSERT_FALSE(checkVariantAgainstPTX(v)) << "the sample is consistent";
  c.change(v);
  Status s = checkVariantAgainstPTX(v);
  ASSERT_TRUE(s) << c.name << " was accepted";
  EXPECT_EQ(s.message(), "variant 'sm_90a-bf16-g4-d96dv80-causal-lse-decode'"
                         ": the manifest disagrees with its PTX: " +
                             c.message);
  // And through a bundle directory, where the checksum matches the PTX.
  TempDir dir;
  Bundle bundle;
  bundle.variants.push_back(v);
  ASSERT_FALSE(bundle.save(dir.str() + "/b"));
  Result<Bundle> loaded = Bundle::load(dir.str() + "/b");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.message().find(c.message), std::string::npos)
      << loaded.message();
}

INSTANTIATE_TEST_SUITE_P(
    Runtime, ManifestAgainstPtxTest,
    ::testing::Values(
        DisagreementCase{"HeadDimV",
                         [](KernelVariant &v) { v.query.headDimV = 128; },
                         "'head_dim_v' is 128 in the manifest but 80 in the "
                         "PTX"},
        DisagreementCase{"Group", [](KernelVariant &v) { v.query.group = 8; },
                         "'group' is 8 in the manifest but 4 in the PTX"},
        DisagreementCase{"Causal",
                         [](KernelVariant &v) { v.query.mask = Mask::none(); },
                         "'causal' is 0 in the manifest but 1 in the PTX"},
        DisagreementCase{
            "Dtype", [](KernelVariant &v) { v.query.dtype = ElementType::F16; },
            "'dtype' is f16 in the manifest but bf16 in the "
            "PTX"},
        DisagreementCase{
            "ProgrammaticLaunchInTheManifestOnly",
            [](KernelVariant &v) { v.forward.programmaticLaunch = true; },
            "kernel attn_fwd: the PTX does not record "
            "'programmatic_launch'"},
        DisagreementCase{"EarlyLaunchWithoutWait",
                         [](KernelVariant &v) {
                           // Neither the wait nor the load after it.
                           size_t at = v.ptx.find("\tgriddepcontrol.wait;\n");
                           v.ptx.erase(at, v.ptx.find("\tret;", at) - at);
                         },
                         ".entry attn_combine is launched early "
                         "(programmatic_launch) but never waits for its "
                         "predecessor (griddepcontrol.wait)"},
        DisagreementCase{"EarlyLaunchWaitsUnderAPredicate",
                         [](KernelVariant &v) {
                           // A wait that may not run is no wait.
                           size_t at = v.ptx.find("\tgriddepcontrol.wait;\n");
                           v.ptx.insert(at + 1, "@%p1 ");
                         },
                         ".entry attn_combine is launched early "
                         "(programmatic_launch) but accesses memory before "
                         "griddepcontrol.wait: 'ld.global.f32 %f1, [%rd1];'"},
        DisagreementCase{"EarlyLaunchReadsBeforeItsWait",
                         [](KernelVariant &v) {
                           size_t at = v.ptx.find("\tgriddepcontrol.wait;\n");
                           v.ptx.erase(at, 21);
                           v.ptx.insert(v.ptx.find("\tret;", at),
                                        "\tgriddepcontrol.wait;\n");
                         },
                         ".entry attn_combine is launched early "
                         "(programmatic_launch) but accesses memory before "
                         "griddepcontrol.wait: 'ld.global.f32 %f1, [%rd1];'"},
        DisagreementCase{"Alignment",
                         [](KernelVariant &v) {
                           v.alignment = 4;
                           v.parameters.erase(
                               std::remove_if(v.parameters.begin(),
                                              v.parameters.end(),
                                              [](const KernelParameter &p) {
                                                return p.isTensorMap();
                                              }),
                               v.parameters.end());
                         },
                         "the PTX does not record 'alignment'"},
        DisagreementCase{"BlockKV", [](KernelVariant &v) { v.blockKV = 32; },
                         "'block_kv' is 32 in the manifest but 96 in the "
                         "PTX"},
        DisagreementCase{"Block",
                         [](KernelVariant &v) { v.forward.block = 64; },
                         "kernel attn_fwd: 'block' is 64 in the manifest but "
                         "128 in the PTX"},
        DisagreementCase{"SharedBytes",
                         [](KernelVariant &v) { v.forward.sharedBytes = 1024; },
                         "kernel attn_fwd: 'shared_bytes' is 1024 in the "
                         "manifest but 45056 in the PTX"},
        DisagreementCase{
            "CombineGrid",
            [](KernelVariant &v) { v.combine->grid = gridOf({factor({"B"})}); },
            "kernel attn_combine: 'grid' is B in the manifest "
            "but ceildiv(B*4*Nq,4) in the PTX"},
        DisagreementCase{"KernelName",
                         [](KernelVariant &v) { v.forward.name = "other"; },
                         "the PTX describes no kernel named other"},
        DisagreementCase{"NoDescriptor",
                         [](KernelVariant &v) {
                           v.ptx = v.ptx.substr(0, v.ptx.find("// flashc-"));
                         },
                         "the PTX holds 0 flashc-variant descriptors, expected "
                         "1 (not a kernel built by this flashc)"},
        DisagreementCase{"BlockInCodeAndDescriptor",
                         [](KernelVariant &v) {
                           // The descriptor agrees, the code does not.
                           KernelVariant other = v;
                           other.forward.block = 64;
                           std::string ptx = fakePtx(other);
                           v.forward.block = 64;
                           std::string code = ptx.substr(0, ptx.find("// flashc-"));
                           std::string tail = ptx.substr(code.size());
                           size_t at = code.find(".reqntid 64");
                           code.replace(at, 11, ".reqntid 128");
                           v.ptx = code + tail;
                         },
                         ".entry attn_fwd requires 128 threads a block "
                         "(.reqntid), the manifest launches 64"},
        DisagreementCase{"NoReqntid",
                         [](KernelVariant &v) {
                           size_t at = v.ptx.find(".reqntid");
                           v.ptx.replace(at, 8, ".maxntid");
                         },
                         ".entry attn_fwd declares no .reqntid"},
        DisagreementCase{
            "FewerParameters",
            [](KernelVariant &v) {
              size_t at = v.ptx.find(",\n\t.param .f32 attn_fwd_param_23");
              v.ptx.erase(
                  at, std::string(",\n\t.param .f32 attn_fwd_param_23").size());
            },
            ".entry attn_fwd takes 27 parameters; the manifest "
            "names 28"},
        DisagreementCase{"TensorMapAsPointer",
                         [](KernelVariant &v) {
                           std::string map =
                               ".align 64 .b8 attn_fwd_param_24[128]";
                           size_t at = v.ptx.find(map);
                           v.ptx.replace(at, map.size(),
                                         ".u64 attn_fwd_param_24");
                         },
                         ".entry attn_fwd: parameter 24 (q_map) is not a "
                         "64-byte aligned .b8 [128] .param"},
        DisagreementCase{"NarrowParameter",
                         [](KernelVariant &v) {
                           size_t at = v.ptx.find(".u64 attn_fwd_param_8");
                           v.ptx.replace(at, 4, ".u32");
                         },
                         ".entry attn_fwd: parameter 8 (Nq) is not a 64-bit "
                         ".param"},
        DisagreementCase{"WideScale",
                         [](KernelVariant &v) {
                           size_t at = v.ptx.find(".f32 attn_fwd_param_23");
                           v.ptx.replace(at, 4, ".u64");
                         },
                         ".entry attn_fwd: parameter 23 (scale) is not a "
                         ".f32 .param"},
        DisagreementCase{"DuplicateParameter",
                         [](KernelVariant &v) {
                           size_t at = v.ptx.find("attn_fwd_param_5,");
                           v.ptx.replace(at, 16, "attn_fwd_param_6");
                         },
                         ".entry attn_fwd declares parameter attn_fwd_param_6 "
                         "twice"},
        DisagreementCase{"NoEntry",
                         [](KernelVariant &v) {
                           size_t at = v.ptx.find(".entry attn_combine");
                           v.ptx.replace(at, 6, ".func ");
                         },
                         "the PTX has no .entry attn_combine"}),
    [](const ::testing::TestParamInfo<DisagreementCase> &info) {
      return std::string(info.param.name);
    });

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

TEST(DeviceTest, CudaDeviceWithoutDriverIsAnError) {
  // Where the driver is present this machine may have a GPU; the test is
  // about machines without one.
  if (void *handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(handle);
    GTEST_SKIP() << "libcuda.so.1 is present";
  }
  for (int ordinal : {0, 1}) {
    Result<std::shared_ptr<Device>> device = getCudaDevice(ordinal);
    ASSERT_FALSE(device.ok());
    EXPECT_NE(device.message().find("libcuda.so.1"), std::string::npos)
        << device.message();
  }
}

TEST(DeviceTest, SimulatorDescribesItself) {
  for (const char *chip : {"sm_80", "sm_90a"}) {
    std::shared_ptr<Device> sim = getSimulatorDevice(chip);
    EXPECT_TRUE(sim->isSimulator());
    EXPECT_EQ(sim->getChip(), chip);
    EXPECT_EQ(sim->getNumSMs(), getWaveTarget(chip, 0).numSMs);
    EXPECT_NE(sim->describe().find(chip), std::string::npos) << sim->describe();
    Result<void *> p = sim->allocate(1000, nullptr);
    ASSERT_TRUE(p.ok()) << p.message();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % 16, 0u);
    EXPECT_FALSE(sim->release(*p, nullptr));
    // Memory it did not allocate.
    void *other = std::malloc(16);
    EXPECT_TRUE(sim->release(other, nullptr));
    std::free(other);
  }
}

//===----------------------------------------------------------------------===//
// Attention calls: tensors of a test case
//===----------------------------------------------------------------------===//

enum class Layout {
  /// Densely packed [B, H, N, D].
  Dense,
  /// Allocated as [B, N, H, D] and viewed as [B, H, N, D]: the batch and
  /// head strides do not fold together.
  SequenceMajor,
};

/// The tensors of one call in host memory, their values as float64 in
/// logical [B, H, N, D] order, and views in the chosen layout.
struct Problem {
  int64_t batch = 1, heads = 8, kvHeads = 2, seqQ = 1, seqKV = 1;
  int64_t headDim = 64;
  std::vector<double> q, k, v;
  std::unique_ptr<HostBuffer> qMem, kMem, vMem, outMem, lseMem;
  AttentionCall call;
  TensorView lse;

  /// Allocates the tensors and fills Q, K, V with normal values (rounded
  /// to f16); the output is filled with NaN, the LSE with a sentinel, so
  /// that an unwritten element is seen.
  void init(Layout layout, bool withLse, std::mt19937 &rng) {
    auto view = [&](std::unique_ptr<HostBuffer> &mem, int64_t h, int64_t n,
                    int64_t d) {
      mem = std::make_unique<HostBuffer>(batch * h * n * d * 2);
      if (layout == Layout::Dense)
        return TensorView::contiguous(mem->get(), ElementType::F16,
                                      {batch, h, n, d});
      TensorView t = TensorView::contiguous(mem->get(), ElementType::F16,
                                            {batch, n, h, d});
      std::swap(t.sizes[1], t.sizes[2]);
      std::swap(t.strides[1], t.strides[2]);
      return t;
    };
    call.q = view(qMem, heads, seqQ, headDim);
    call.k = view(kMem, kvHeads, seqKV, headDim);
    call.v = view(vMem, kvHeads, seqKV, headDim);
    call.out = view(outMem, heads, seqQ, headDim);
    std::normal_distribution<double> normal;
    auto fill = [&](const TensorView &t, std::vector<double> &values) {
      values.resize(t.sizes[0] * t.sizes[1] * t.sizes[2] * t.sizes[3]);
      auto *data = static_cast<uint16_t *>(t.data);
      size_t i = 0;
      for (int64_t a = 0; a < t.sizes[0]; ++a)
        for (int64_t b = 0; b < t.sizes[1]; ++b)
          for (int64_t c = 0; c < t.sizes[2]; ++c)
            for (int64_t d = 0; d < t.sizes[3]; ++d) {
              uint16_t h = floatToHalf(static_cast<float>(normal(rng)));
              data[offsetOf(t, {a, b, c, d})] = h;
              values[i++] = halfToFloat(h);
            }
    };
    fill(call.q, q);
    fill(call.k, k);
    fill(call.v, v);
    auto *out = reinterpret_cast<uint16_t *>(outMem->get());
    for (int64_t i = 0; i < batch * heads * seqQ * headDim; ++i)
      out[i] = 0x7e00; // NaN
    if (withLse) {
      lseMem = std::make_unique<HostBuffer>(batch * heads * seqQ * 4);
      lse = TensorView::contiguous(lseMem->get(), ElementType::F32,
                                   {batch, heads, seqQ});
      auto *l = reinterpret_cast<float *>(lseMem->get());
      for (int64_t i = 0; i < batch * heads * seqQ; ++i)
        l[i] = 12345.0f;
      call.lse = &lse;
    }
  }

  /// Row (b, h, i) of softmax(scale Q K^T) V in float64, with the causal
  /// mask aligned to the bottom right (key j is visible to query i when
  /// j <= i + Nk - Nq). Returns the log-sum-exp: -inf, with a zero row,
  /// when the row sees no key.
  double reference(int64_t b, int64_t h, int64_t i, bool causal, double scale,
                   std::vector<double> &row) const {
    int64_t hk = h / (heads / kvHeads);
    int64_t visible =
        causal ? std::clamp<int64_t>(i + seqKV - seqQ + 1, 0, seqKV) : seqKV;
    row.assign(headDim, 0.0);
    if (visible == 0)
      return -std::numeric_limits<double>::infinity();
    const double *qr = &q[((b * heads + h) * seqQ + i) * headDim];
    std::vector<double> s(visible);
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < visible; ++j) {
      const double *kr = &k[((b * kvHeads + hk) * seqKV + j) * headDim];
      double dot = 0;
      for (int64_t d = 0; d < headDim; ++d)
        dot += qr[d] * kr[d];
      s[j] = scale * dot;
      mx = std::max(mx, s[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < visible; ++j) {
      double p = std::exp(s[j] - mx);
      sum += p;
      const double *vr = &v[((b * kvHeads + hk) * seqKV + j) * headDim];
      for (int64_t d = 0; d < headDim; ++d)
        row[d] += p * vr[d];
    }
    for (double &x : row)
      x /= sum;
    return mx + std::log(sum);
  }
};

/// A device that records launches instead of running them.
class RecordingDevice : public Device {
public:
  struct Launch {
    std::string kernel;
    uint64_t grid;
    std::vector<LaunchArg> args;
  };
  std::vector<Launch> launches;
  std::set<void *> live;
  int64_t allocations = 0;

  std::string describe() const override { return "recording device"; }
  bool isSimulator() const override { return true; }
  std::string getChip() const override { return "sm_80"; }
  int64_t getNumSMs() const override { return 108; }
  Result<void *> allocate(uint64_t bytes, void *) override {
    void *p = std::malloc(std::max<uint64_t>(bytes, 1));
    live.insert(p);
    ++allocations;
    return p;
  }
  Status release(void *p, void *) override {
    if (!live.erase(p))
      return Status::error("unknown pointer");
    std::free(p);
    return Status::success();
  }
  Status launch(const KernelVariant &, const KernelEntry &kernel, uint64_t grid,
                const std::vector<LaunchArg> &args, void *) override {
    launches.push_back({kernel.name, grid, args});
    return Status::success();
  }
  Status copyToDevice(void *, const void *, uint64_t, void *) override {
    return Status::success();
  }
  Status copyToHost(void *, const void *, uint64_t, void *) override {
    return Status::success();
  }
  Status synchronize(void *) override { return Status::success(); }
};

//===----------------------------------------------------------------------===//
// Attention calls: argument checks
//===----------------------------------------------------------------------===//

/// One way to spoil a valid call (B = 1, Hq = 8, Hkv = 2, Nq = 5, Nk = 7,
/// D = 64, dense), the variant it goes to, and the error it gives.
struct ArgumentCase {
  const char *name;
  bool decode, lse;
  std::function<void(Problem &)> spoil;
  const char *message;
};

void PrintTo(const ArgumentCase &c, std::ostream *os) { *os << c.name; }

class ArgumentCheckTest : public ::testing::TestWithParam<ArgumentCase> {};

TEST_P(ArgumentCheckTest, RejectsTheCall) {
  const ArgumentCase &c = GetParam();
  std::mt19937 rng(getSeed());
  Problem p;
  p.seqQ = 5;
  p.seqKV = 7;
  p.init(Layout::Dense, c.lse, rng);
  c.spoil(p);
  std::shared_ptr<Device> sim = getSimulatorDevice("sm_80");
  LaunchReport report;
  report.launches = -7;
  Status s = launchAttention(*sim, testVariant(c.decode, false, c.lse), p.call,
                             &report);
  ASSERT_TRUE(s) << c.name << " was accepted";
  EXPECT_EQ(s.message(), c.message) << c.name;
  EXPECT_EQ(report.launches, -7) << "a failed call leaves the report alone";
}

/// Sets dimension `d` of a view to `size`, keeping the strides.
void resize(TensorView &t, int d, int64_t size) { t.sizes[d] = size; }

INSTANTIATE_TEST_SUITE_P(
    Runtime, ArgumentCheckTest,
    ::testing::Values(
        ArgumentCase{"QueryRank3", false, false,
                     [](Problem &p) { p.call.q.rank = 3; },
                     "query must have rank 4 [B, H, N, D], got rank 3"},
        ArgumentCase{"OutputRank0", false, false,
                     [](Problem &p) { p.call.out.rank = 0; },
                     "output must have rank 4 [B, H, N, D], got rank 0"},
        ArgumentCase{"KeyBF16", false, false,
                     [](Problem &p) { p.call.k.dtype = ElementType::BF16; },
                     "key has element type bf16, the kernel takes f16"},
        ArgumentCase{"ValueF32", false, false,
                     [](Problem &p) { p.call.v.dtype = ElementType::F32; },
                     "value has element type f32, the kernel takes f16"},
        ArgumentCase{"ValueHeadDim", false, false,
                     [](Problem &p) { resize(p.call.v, 3, 32); },
                     "value has shape [1, 2, 7, 32], expected [1, 2, 7, 64]"},
        ArgumentCase{"ValueLength", false, false,
                     [](Problem &p) { resize(p.call.v, 2, 6); },
                     "value has shape [1, 2, 6, 64], expected [1, 2, 7, 64]"},
        ArgumentCase{"KeyBatch", false, false,
                     [](Problem &p) { resize(p.call.k, 0, 2); },
                     "key has shape [2, 2, 7, 64], expected [1, 2, 7, 64]"},
        ArgumentCase{"QueryHeadDim", false, false,
                     [](Problem &p) { resize(p.call.q, 3, 128); },
                     "query has shape [1, 8, 5, 128], expected [1, 8, 5, 64]"},
        ArgumentCase{"OutputRows", false, false,
                     [](Problem &p) { resize(p.call.out, 2, 4); },
                     "output has shape [1, 8, 4, 64], expected [1, 8, 5, 64]"},
        ArgumentCase{"OutputInnerStride", false, false,
                     [](Problem &p) { p.call.out.strides[3] = 2; },
                     "output must have unit stride in its last dimension, "
                     "got strides [2560, 320, 64, 2]"},
        ArgumentCase{"KeyNegativeStride", false, false,
                     [](Problem &p) { p.call.k.strides[2] = -64; },
                     "key has a negative stride: [896, 448, -64, 1]"},
        ArgumentCase{"QueryMisaligned", false, false,
                     [](Problem &p) {
                       p.call.q.data = static_cast<char *>(p.call.q.data) + 2;
                     },
                     "query is at an address that is not 16-byte aligned; "
                     "kernel sm_80-f16-g4-d64-prefill needs 16 (a variant "
                     "built for 2 bytes takes it: the compile option "
                     "--alignment 2, or flashc bundle --alignments 16,2)"},
        ArgumentCase{"OutputMisaligned", true, false,
                     [](Problem &p) {
                       p.call.out.data =
                           static_cast<char *>(p.call.out.data) + 8;
                     },
                     "output is at an address that is not 16-byte aligned; "
                     "kernel sm_80-f16-g4-d64-decode needs 16 (a variant "
                     "built for 8 bytes takes it: the compile option "
                     "--alignment 8, or flashc bundle --alignments 16,8)"},
        ArgumentCase{"ValueRowStride", false, false,
                     [](Problem &p) { p.call.v.strides[2] = 68; },
                     "value has strides [896, 448, 68, 1] (elements of 2 "
                     "bytes) that are not multiples of 16 bytes; kernel "
                     "sm_80-f16-g4-d64-prefill needs 16 (a variant "
                     "built for 8 bytes takes it: the compile option "
                     "--alignment 8, or flashc bundle --alignments 16,8)"},
        ArgumentCase{"KeyHeadStride", true, false,
                     [](Problem &p) { p.call.k.strides[1] = 450; },
                     "key has strides [896, 450, 64, 1] (elements of 2 "
                     "bytes) that are not multiples of 16 bytes; kernel "
                     "sm_80-f16-g4-d64-decode needs 16 (a variant "
                     "built for 4 bytes takes it: the compile option "
                     "--alignment 4, or flashc bundle --alignments 16,4)"},
        ArgumentCase{"QueryNull", false, false,
                     [](Problem &p) { p.call.q.data = nullptr; },
                     "query is null"},
        ArgumentCase{"HeadsNotAGroupMultiple", false, false,
                     [](Problem &p) {
                       resize(p.call.q, 1, 6);
                       resize(p.call.out, 1, 6);
                     },
                     "the kernel packs 4 query head(s) per KV head, but the "
                     "call has 6 query heads over 2 KV heads"},
        ArgumentCase{"GroupOfTwo", true, false,
                     [](Problem &p) {
                       resize(p.call.q, 1, 4);
                       resize(p.call.out, 1, 4);
                     },
                     "the kernel packs 4 query head(s) per KV head, but the "
                     "call has 4 query heads over 2 KV heads"},
        ArgumentCase{"EmptyKeys", false, false,
                     [](Problem &p) {
                       resize(p.call.k, 2, 0);
                       resize(p.call.v, 2, 0);
                     },
                     "batch, KV heads, query length and key length must be "
                     "positive, got B=1 Hkv=2 Nq=5 Nk=0"},
        ArgumentCase{"LseToKernelWithoutLse", false, false,
                     [](Problem &p) {
                       p.lseMem = std::make_unique<HostBuffer>(1024);
                       p.lse = TensorView::contiguous(
                           p.lseMem->get(), ElementType::F32, {1, 8, 5});
                       p.call.lse = &p.lse;
                     },
                     "an LSE buffer was given but the kernel has no LSE "
                     "output"},
        ArgumentCase{"NoLseToKernelWithLse", true, true,
                     [](Problem &p) { p.call.lse = nullptr; },
                     "the kernel writes an LSE buffer but none was given"},
        ArgumentCase{"LseNotContiguous", false, true,
                     [](Problem &p) {
                       p.lse.strides[0] = 80;
                       p.lse.strides[1] = 10;
                     },
                     "lse must be contiguous, got strides [80, 10, 1]"},
        ArgumentCase{"LseF16", true, true,
                     [](Problem &p) { p.lse.dtype = ElementType::F16; },
                     "lse has element type f16, the kernel takes f32"},
        ArgumentCase{"LseShape", false, true,
                     [](Problem &p) { resize(p.lse, 2, 4); },
                     "lse has shape [1, 8, 4], expected [1, 8, 5]"},
        ArgumentCase{"SplitsOnPrefill", false, false,
                     [](Problem &p) { p.call.splits = 2; },
                     "a prefill kernel does not split its KV loop (2 splits "
                     "asked)"},
        ArgumentCase{"NegativeSplits", true, false,
                     [](Problem &p) { p.call.splits = -1; },
                     "splits must be non-negative, got -1"}),
    [](const ::testing::TestParamInfo<ArgumentCase> &info) {
      return std::string(info.param.name);
    });

/// The launches of a valid call: recorded, not run.
class LaunchTest : public ::testing::Test {
protected:
  std::mt19937 rng{getSeed()};
  RecordingDevice device;

  static int64_t arg(const RecordingDevice::Launch &l, int i) {
    return static_cast<int64_t>(l.args.at(i).value);
  }
};

TEST_F(LaunchTest, DenseTensorsFoldHeadsIntoOneLaunch) {
  Problem p;
  p.batch = 3;
  p.seqQ = 37;
  p.seqKV = 45;
  p.init(Layout::Dense, /*withLse=*/true, rng);
  const KernelVariant &variant = testVariant(false, true, true);
  LaunchReport report;
  Status s = launchAttention(device, variant, p.call, &report);
  ASSERT_FALSE(s) << s.message();
  ASSERT_EQ(device.launches.size(), 1u);
  EXPECT_EQ(report.launches, 1);
  EXPECT_EQ(report.splits, 1);
  EXPECT_EQ(report.combineGrid, 0);
  const RecordingDevice::Launch &l = device.launches[0];
  EXPECT_EQ(l.kernel, variant.forward.name);
  // 7 pointers, B, Nq, Nk, splits, 12 strides and the scale (an f32 in
  // the low bytes: 1/sqrt(64) when the call names none).
  ASSERT_EQ(l.args.size(), 24u);
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(l.args[i].isPointer, i < 7) << "argument " << i;
  float scale = 0.125f;
  uint32_t bits;
  std::memcpy(&bits, &scale, 4);
  EXPECT_EQ(l.args[23].value, bits);
  EXPECT_EQ(l.args[0].value, reinterpret_cast<uint64_t>(p.call.q.data));
  EXPECT_EQ(l.args[3].value, reinterpret_cast<uint64_t>(p.call.out.data));
  EXPECT_EQ(l.args[4].value, reinterpret_cast<uint64_t>(p.lse.data));
  EXPECT_EQ(l.args[4].extentBytes, 3u * 8 * 37 * 4);
  EXPECT_EQ(l.args[0].extentBytes, 3u * 8 * 37 * 64 * 2);
  EXPECT_EQ(l.args[1].extentBytes, 3u * 2 * 45 * 64 * 2);
  EXPECT_EQ(l.args[5].value, 0u) << "no workspace without splits";
  EXPECT_EQ(arg(l, 7), 3 * 2) << "the KV heads are folded into the batch";
  EXPECT_EQ(arg(l, 8), 37);
  EXPECT_EQ(arg(l, 9), 45);
  EXPECT_EQ(arg(l, 10), 1);
  // (batch', head, row) strides of q, k, v, out.
  int64_t expected[12] = {4 * 37 * 64, 37 * 64, 64, 45 * 64,     45 * 64, 64,
                          45 * 64,     45 * 64, 64, 4 * 37 * 64, 37 * 64, 64};
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(arg(l, 11 + i), expected[i]) << "stride argument " << i;
  Result<int64_t> grid = variant.forward.grid.evaluate({6, 37, 45, 1});
  ASSERT_TRUE(grid.ok()) << grid.message();
  EXPECT_EQ(l.grid, static_cast<uint64_t>(*grid));
  EXPECT_EQ(report.forwardGrid, *grid);
  EXPECT_EQ(device.allocations, 0);
}

TEST_F(LaunchTest, UnfoldedStridesLaunchPerBatchEntry) {
  Problem p;
  p.batch = 3;
  p.seqQ = 37;
  p.seqKV = 45;
  p.init(Layout::SequenceMajor, /*withLse=*/true, rng);
  LaunchReport report;
  Status s =
      launchAttention(device, testVariant(false, false, true), p.call, &report);
  ASSERT_FALSE(s) << s.message();
  ASSERT_EQ(device.launches.size(), 3u);
  EXPECT_EQ(report.launches, 3);
  for (int64_t b = 0; b < 3; ++b) {
    const RecordingDevice::Launch &l = device.launches[b];
    EXPECT_EQ(arg(l, 7), 2) << "one batch entry's KV heads";
    EXPECT_EQ(l.args[0].value,
              reinterpret_cast<uint64_t>(p.call.q.data) + b * 37 * 8 * 64 * 2);
    EXPECT_EQ(l.args[2].value,
              reinterpret_cast<uint64_t>(p.call.v.data) + b * 45 * 2 * 64 * 2);
    EXPECT_EQ(l.args[4].value,
              reinterpret_cast<uint64_t>(p.lse.data) + b * 8 * 37 * 4);
    // q: (4 heads, head, row) = (4 * 64, 64, 8 * 64).
    EXPECT_EQ(arg(l, 11), 4 * 64);
    EXPECT_EQ(arg(l, 12), 64);
    EXPECT_EQ(arg(l, 13), 8 * 64);
    // k: (1 head, head, row) = (64, 64, 2 * 64).
    EXPECT_EQ(arg(l, 14), 64);
    EXPECT_EQ(arg(l, 16), 2 * 64);
  }
}

TEST_F(LaunchTest, OneBatchEntryAlwaysFolds) {
  Problem p;
  p.batch = 1;
  p.seqQ = 20;
  p.seqKV = 20;
  p.init(Layout::SequenceMajor, false, rng);
  LaunchReport report;
  Status s = launchAttention(device, testVariant(false, false, false), p.call,
                             &report);
  ASSERT_FALSE(s) << s.message();
  EXPECT_EQ(report.launches, 1);
  EXPECT_EQ(arg(device.launches.at(0), 7), 2);
}

TEST_F(LaunchTest, DecodeSplitsAndWorkspace) {
  // The compiler's decode variant writes the output itself at one split;
  // one from a manifest that predates that runs the combine at every
  // split count.
  KernelVariant variant = testVariant(true, false, false);
  ASSERT_TRUE(variant.combine.has_value());
  ASSERT_TRUE(variant.forward.finalAtOneSplit);
  ASSERT_GT(variant.blockKV, 0);
  int64_t seqKV = 10 * variant.blockKV + 3; // 11 KV blocks
  // Launches 2 x 3 queries over seqKV keys with `splits` asked.
  auto launch = [&](int64_t splits, LaunchReport &report) {
    device.launches.clear();
    Problem p;
    p.batch = 2;
    p.seqQ = 3;
    p.seqKV = seqKV;
    p.init(Layout::Dense, false, rng);
    p.call.splits = splits;
    return launchAttention(device, variant, p.call, &report);
  };
  for (int i = 0; i < 2; ++i) {
    LaunchReport report;
    Status s = launch(1, report);
    ASSERT_FALSE(s) << s.message();
    EXPECT_EQ(report.splits, 1);
    if (variant.forward.finalAtOneSplit) {
      ASSERT_EQ(device.launches.size(), 1u) << "no combine at one split";
      EXPECT_EQ(report.combineGrid, 0);
      // No workspace either.
      EXPECT_EQ(device.launches[0].args[5].value, 0u);
    } else {
      ASSERT_EQ(device.launches.size(), 2u);
      EXPECT_EQ(device.launches[1].kernel, variant.combine->name);
    }
    variant.forward.finalAtOneSplit = false;
  }
  for (auto [asked, expected] :
       {std::pair<int64_t, int64_t>{3, 3}, {1, 1}, {11, 11}, {1000, 11}}) {
    LaunchReport report;
    Status s = launch(asked, report);
    ASSERT_FALSE(s) << s.message();
    EXPECT_EQ(report.splits, expected) << asked << " splits asked";
    ASSERT_EQ(device.launches.size(), 2u);
    const RecordingDevice::Launch &fwd = device.launches[0];
    const RecordingDevice::Launch &comb = device.launches[1];
    EXPECT_EQ(fwd.kernel, variant.forward.name);
    EXPECT_EQ(comb.kernel, variant.combine->name);
    EXPECT_EQ(arg(fwd, 10), expected);
    // Both kernels get the same arguments, the workspace among them:
    // [S, B', G, Nq, Dv] and [S, B', G, Nq] f32.
    for (int i = 0; i < 24; ++i)
      EXPECT_EQ(fwd.args[i].value, comb.args[i].value) << "argument " << i;
    EXPECT_NE(fwd.args[5].value, 0u);
    EXPECT_EQ(fwd.args[5].extentBytes,
              static_cast<uint64_t>(expected * 4 * 4 * 3 * 64 * 4));
    EXPECT_EQ(fwd.args[6].extentBytes,
              static_cast<uint64_t>(expected * 4 * 4 * 3 * 4));
    Result<int64_t> grid =
        variant.forward.grid.evaluate({4, 3, seqKV, expected});
    Result<int64_t> combineGrid =
        variant.combine->grid.evaluate({4, 3, seqKV, expected});
    ASSERT_TRUE(grid.ok() && combineGrid.ok());
    EXPECT_EQ(fwd.grid, static_cast<uint64_t>(*grid));
    EXPECT_EQ(comb.grid, static_cast<uint64_t>(*combineGrid));
    EXPECT_EQ(report.combineGrid, *combineGrid);
    EXPECT_TRUE(device.live.empty()) << "the workspace is released";
  }
  // Splits chosen by the wave model: one query row of one KV head over
  // 64 blocks of keys leaves the 108 SMs idle unless it splits.
  Problem p;
  p.seqQ = 1;
  p.seqKV = 64 * variant.blockKV;
  p.init(Layout::Dense, false, rng);
  LaunchReport report;
  ASSERT_FALSE(launchAttention(device, variant, p.call, &report));
  EXPECT_GT(report.splits, 1);
  EXPECT_LE(report.splits, 64);
}

TEST_F(LaunchTest, UnalignedRowsNeedNoAlignment) {
  // A variant for D = 59: its rows are copied element by element, so its
  // Q and K need no 16-byte alignment, while its V (Dv = 64) does.
  KernelVariant variant = testVariant(false, false, false);
  variant.id += "-d59";
  variant.query.headDim = 59;
  auto make = [&](int64_t h, int64_t n, int64_t d, int64_t offset) {
    void *base = std::aligned_alloc(256, 1 << 20);
    TensorView t = TensorView::contiguous(static_cast<char *>(base) + offset,
                                          ElementType::F16, {1, h, n, d});
    return std::pair<void *, TensorView>(base, t);
  };
  auto [qBase, q] = make(8, 5, 59, 2);
  auto [kBase, k] = make(2, 7, 59, 6);
  auto [vBase, v] = make(2, 7, 64, 0);
  auto [oBase, o] = make(8, 5, 64, 0);
  AttentionCall call{q, k, v, o};
  Status s = launchAttention(device, variant, call);
  EXPECT_FALSE(s) << s.message();
  EXPECT_EQ(device.launches.size(), 1u);
  call.v.data = static_cast<char *>(call.v.data) + 2;
  s = launchAttention(device, variant, call);
  EXPECT_EQ(s.message(), "value is at an address that is not 16-byte "
                         "aligned; kernel sm_80-f16-g4-d64-prefill-d59 "
                         "needs 16 (a variant "
                         "built for 2 bytes takes it: the compile option "
                         "--alignment 2, or flashc bundle --alignments 16,2)");
  for (void *p : {qBase, kBase, vBase, oBase})
    std::free(p);
}

TEST_F(LaunchTest, OutputsOverlappingAnotherTensorAreRefused) {
  // The kernels read Q, K and V while they write O: `out=v` gave errors of
  // 0.2-0.4 once Nq passed one Q block. Refused, as an argument error.
  Problem p;
  p.batch = 1;
  p.seqQ = 70;
  p.seqKV = 70;
  p.init(Layout::Dense, /*withLse=*/true, rng);
  const KernelVariant &variant = testVariant(false, true, true);
  struct Case {
    const char *name;
    std::function<void(AttentionCall &)> change;
    const char *message;
  };
  TensorView lseOverOut = p.lse;
  lseOverOut.data = p.call.out.data;
  const Case cases[] = {
      {"out=q", [&](AttentionCall &c) { c.out.data = c.q.data; },
       "output overlaps query"},
      {"out inside k",
       [&](AttentionCall &c) {
         c.out.data = static_cast<char *>(c.k.data) + 64;
       },
       "output overlaps"},
      {"lse over out", [&](AttentionCall &c) { c.lse = &lseOverOut; },
       "output overlaps lse"},
  };
  for (const Case &c : cases) {
    AttentionCall call = p.call;
    c.change(call);
    Status s = launchAttention(device, variant, call);
    ASSERT_TRUE(s) << c.name << " was accepted";
    EXPECT_EQ(s.code(), ErrorCode::InvalidArgument) << c.name;
    EXPECT_NE(s.message().find(c.message), std::string::npos)
        << c.name << ": " << s.message();
  }
  EXPECT_TRUE(device.launches.empty());
}

TEST_F(LaunchTest, GridsBeyondOneCTAPerRowAreRefused) {
  // A grid that the manifest and the PTX's descriptor agree on, but
  // that no flashc kernel has: 2^31 - 1 CTAs ran for days in the
  // simulator.
  Problem p;
  p.init(Layout::Dense, /*withLse=*/false, rng);
  KernelVariant variant = testVariant(false, false, false);
  variant.forward.grid = gridOf({factor({"2147483647"})});
  Status s = launchAttention(device, variant, p.call);
  ASSERT_TRUE(s);
  EXPECT_NE(s.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(s.message().find("its grid '2147483647' asks for "
                             "2147483647 CTAs for "),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(device.launches.empty());
}

TEST_F(LaunchTest, TensorsPast2To60BytesAreRefused) {
  Problem p;
  p.init(Layout::Dense, /*withLse=*/false, rng);
  const KernelVariant &variant = testVariant(false, false, false);
  AttentionCall call = p.call;
  // A batch stride that addresses 2^61 bytes from two batch entries.
  call.k.sizes[0] = 2;
  call.v.sizes[0] = 2;
  call.q.sizes[0] = 2;
  call.out.sizes[0] = 2;
  call.k.strides[0] = int64_t(1) << 60;
  Status s = launchAttention(device, variant, call);
  ASSERT_TRUE(s);
  EXPECT_EQ(s.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(s.message().find("more than 2^60 bytes"), std::string::npos)
      << s.message();
}

//===----------------------------------------------------------------------===//
// Attention calls: the simulator against the float64 reference
//===----------------------------------------------------------------------===//

struct RunCase {
  const char *name;
  bool decode, causal, lse;
  int64_t batch, seqQ, seqKV;
  Layout layout;
  /// Decode: the split count asked (0: the wave model's).
  int64_t splits;
};

void PrintTo(const RunCase &c, std::ostream *os) { *os << c.name; }

class SimulatorRunTest : public ::testing::TestWithParam<RunCase> {};

/// Tolerances against float64 on outputs of unit scale.
constexpr double kOutputTolerance = 4e-3; // f16
constexpr double kLseTolerance = 1e-3;    // relative

/// The CUDA device when the tests run under the fake driver
/// (FLASHC_TEST_CUDA=1, with unittests/Runtime/fake-cuda first on
/// LD_LIBRARY_PATH; see FakeCudaDriver.cpp), else null and the test skips.
std::shared_ptr<Device> getFakeCudaDevice() {
  if (!std::getenv("FLASHC_TEST_CUDA"))
    return nullptr;
  Result<std::shared_ptr<Device>> cuda = getCudaDevice(0);
  if (!cuda) {
    ADD_FAILURE() << "FLASHC_TEST_CUDA is set, but: " << cuda.message();
    return nullptr;
  }
  EXPECT_NE((*cuda)->describe().find("fake CUDA driver"), std::string::npos)
      << "the CUDA tests must run on the fake driver, not on "
      << (*cuda)->describe();
  return *cuda;
}

/// The C API's flashc_tensor of a view.
flashc_tensor toCTensor(const TensorView &t) {
  flashc_tensor c{};
  c.data = t.data;
  c.dtype = t.dtype == ElementType::F32   ? FLASHC_F32
            : t.dtype == ElementType::F16 ? FLASHC_F16
                                          : FLASHC_BF16;
  c.rank = static_cast<int32_t>(t.rank);
  for (int d = 0; d < t.rank; ++d) {
    c.sizes[d] = t.sizes[d];
    c.strides[d] = t.strides[d];
  }
  return c;
}

/// The call through the C API (flashc_attention on the CUDA device, the
/// test bundle opened by flashc_bundle_open).
Status launchThroughCApi(const AttentionCall &call, bool causal) {
  static flashc_bundle *bundle = [] {
    flashc_bundle *b = nullptr;
    const char *path = std::getenv("FLASHC_TEST_BUNDLE");
    if (flashc_bundle_open(path ? path : FLASHC_TEST_BUNDLE, &b) != FLASHC_OK)
      ADD_FAILURE() << flashc_last_error();
    return b;
  }();
  if (!bundle)
    return Status::error("the test bundle did not open");
  flashc_tensor q = toCTensor(call.q), k = toCTensor(call.k),
                v = toCTensor(call.v), out = toCTensor(call.out), lse{};
  if (call.lse)
    lse = toCTensor(*call.lse);
  if (flashc_attention(bundle, FLASHC_DEVICE_CUDA, FLASHC_LAYOUT_STRIDED, &q,
                       &k, &v, &out, call.lse ? &lse : nullptr, causal, 0.0,
                       call.stream) != FLASHC_OK)
    return Status::error(flashc_last_error());
  return Status::success();
}

/// Runs the call on `device` with every tensor copied into its memory
/// first (same offsets and strides), and the output and LSE copied back;
/// through the C API when `causal` is given (which the C API takes apart
/// from the variant).
Status launchThroughCopies(Device &device, const KernelVariant &variant,
                           Problem &p, LaunchReport *report,
                           std::optional<bool> cApiCausal = std::nullopt) {
  struct Copy {
    HostBuffer *host;
    void *device = nullptr;
  };
  std::vector<Copy> copies = {
      {p.qMem.get()}, {p.kMem.get()}, {p.vMem.get()}, {p.outMem.get()}};
  if (p.lseMem)
    copies.push_back({p.lseMem.get()});
  auto release = [&] {
    for (Copy &c : copies)
      if (c.device)
        (void)device.release(c.device, nullptr);
  };
  for (Copy &c : copies) {
    Result<void *> mem = device.allocate(c.host->bytes(), nullptr);
    if (!mem) {
      release();
      return mem.status();
    }
    c.device = *mem;
    if (Status s = device.copyToDevice(c.device, c.host->get(), c.host->bytes(),
                                       nullptr)) {
      release();
      return s;
    }
  }
  AttentionCall call = p.call;
  TensorView lse = p.lse;
  auto moved = [&](const TensorView &t, const Copy &c) {
    TensorView m = t;
    m.data = static_cast<char *>(c.device) +
             (static_cast<char *>(t.data) - c.host->get());
    return m;
  };
  call.q = moved(p.call.q, copies[0]);
  call.k = moved(p.call.k, copies[1]);
  call.v = moved(p.call.v, copies[2]);
  call.out = moved(p.call.out, copies[3]);
  if (p.call.lse) {
    lse = moved(p.lse, copies[4]);
    call.lse = &lse;
  }
  Status s = cApiCausal ? launchThroughCApi(call, *cApiCausal)
                        : launchAttention(device, variant, call, report);
  for (size_t i = 3; !s && i < copies.size(); ++i)
    s = device.copyToHost(copies[i].host->get(), copies[i].device,
                          copies[i].host->bytes(), nullptr);
  if (!s)
    s = device.synchronize(nullptr);
  release();
  return s;
}

/// Runs case `c` on the simulator, or on `cuda` through copies into its
/// memory (by the C API when `cApi`), and checks it against the float64
/// reference.
void checkRunCase(const RunCase &c, Device *cuda, bool cApi = false) {
  SCOPED_TRACE(std::string(c.name) + ", seed " + std::to_string(getSeed()));
  std::mt19937 rng(getSeed());
  Problem p;
  p.batch = c.batch;
  p.seqQ = c.seqQ;
  p.seqKV = c.seqKV;
  p.init(c.layout, c.lse, rng);
  p.call.splits = c.splits;
  const KernelVariant &variant = testVariant(c.decode, c.causal, c.lse);
  LaunchReport report;
  Status s = cuda ? launchThroughCopies(*cuda, variant, p, &report,
                                        cApi ? std::optional<bool>(c.causal)
                                             : std::nullopt)
                  : launchAttention(*getSimulatorDevice("sm_80"), variant,
                                    p.call, &report);
  ASSERT_FALSE(s) << s.message();

  // The C API reports no launches, and picks the variant itself.
  bool folds = c.batch == 1 || c.layout == Layout::Dense;
  if (!cApi) {
    EXPECT_EQ(report.launches, folds ? 1 : c.batch);
  }
  if (!cApi && c.decode && c.splits) {
    EXPECT_EQ(report.splits, c.splits);
  }
  if (!cApi && !c.decode) {
    EXPECT_EQ(report.splits, 1);
  }

  const double scale = 0.125;
  std::vector<double> row;
  double worst = 0, worstLse = 0;
  int64_t emptyRows = 0, bad = 0;
  auto *out = static_cast<const uint16_t *>(p.call.out.data);
  const float *lse = c.lse ? static_cast<const float *>(p.lse.data) : nullptr;
  // Reports the first few bad elements, and counts them all.
  auto complain = [&](const std::string &what) {
    if (bad++ < 8)
      ADD_FAILURE() << what;
  };
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < p.seqQ; ++i) {
        double l = p.reference(b, h, i, c.causal, scale, row);
        bool empty = std::isinf(l);
        emptyRows += empty;
        std::string at = "[" + std::to_string(b) + ", " + std::to_string(h) +
                         ", " + std::to_string(i);
        for (int64_t d = 0; d < p.headDim; ++d) {
          double got = halfToFloat(out[offsetOf(p.call.out, {b, h, i, d})]);
          double err = std::isfinite(got) ? std::fabs(got - row[d]) : INFINITY;
          worst = std::max(worst, err);
          if (err > kOutputTolerance || (empty && got != 0.0))
            complain("out" + at + ", " + std::to_string(d) +
                     "] = " + std::to_string(got) + ", expected " +
                     std::to_string(row[d]));
        }
        if (!lse)
          continue;
        double got = lse[(b * p.heads + h) * p.seqQ + i];
        double err = empty ? (got == l ? 0 : INFINITY)
                           : std::fabs(got - l) / std::max(1.0, std::fabs(l));
        if (std::isnan(err))
          err = INFINITY;
        worstLse = std::max(worstLse, err);
        if (err > kLseTolerance)
          complain("lse" + at + "] = " + std::to_string(got) + ", expected " +
                   std::to_string(l));
      }
  std::printf("%s: %lld launch(es), %lld split(s), max |error| %.2e, lse "
              "relative error %.2e, %lld empty rows\n",
              c.name, static_cast<long long>(report.launches),
              static_cast<long long>(report.splits), worst, worstLse,
              static_cast<long long>(emptyRows));
  EXPECT_EQ(bad, 0) << "elements off the reference";
  EXPECT_LE(worst, kOutputTolerance);
  EXPECT_LE(worstLse, kLseTolerance);
  if (c.causal && c.seqKV < c.seqQ) {
    EXPECT_EQ(emptyRows, p.batch * p.heads * (c.seqQ - c.seqKV));
  }
}

/// The fake driver's device: the chip FLASHC_FAKE_CUDA_CC names.
TEST(CudaDriverTest, DescribesTheDevice) {
  std::shared_ptr<Device> cuda = getFakeCudaDevice();
  if (!cuda)
    GTEST_SKIP() << "runs under the fake CUDA driver only";
  const char *cc = std::getenv("FLASHC_FAKE_CUDA_CC");
  bool ampere = cc && std::string(cc) == "8.0";
  EXPECT_FALSE(cuda->isSimulator());
  EXPECT_EQ(cuda->getChip(), ampere ? "sm_80" : "sm_90a");
  EXPECT_EQ(cuda->getNumSMs(), ampere ? 108 : 132);
  EXPECT_NE(cuda->describe().find(ampere ? "sm_80" : "sm_90"),
            std::string::npos)
      << cuda->describe();
  // The same device object for the same ordinal; none for another.
  EXPECT_EQ(getCudaDevice(0)->get(), cuda.get());
  Result<std::shared_ptr<Device>> other = getCudaDevice(1);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.message(), "no CUDA device 1 (1 present)");
}

/// A prefill call of the test bundle's shape, in the fake device's memory.
Status runSmallPrefill(Device &cuda, const KernelVariant &variant) {
  std::mt19937 rng(getSeed());
  Problem p;
  p.seqQ = 20;
  p.seqKV = 40;
  p.init(Layout::Dense, false, rng);
  return launchThroughCopies(cuda, variant, p, nullptr);
}

/// The test bundle's prefill variant under another id, claiming a cubin
/// for `chip` (an ELF header the fake driver refuses).
KernelVariant withCubin(const std::string &suffix, const std::string &chip) {
  KernelVariant variant = testVariant(false, false, false);
  variant.id += suffix;
  variant.query.target = chip;
  variant.cubin = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  return variant;
}

/// A cubin for the device's own chip is tried first; one the driver
/// refuses (the fake driver runs no cubin) falls back to the PTX.
TEST(CudaDriverTest, RefusedCubinFallsBackToPtx) {
  std::shared_ptr<Device> cuda = getFakeCudaDevice();
  if (!cuda)
    GTEST_SKIP() << "runs under the fake CUDA driver only";
  Status s = runSmallPrefill(*cuda, withCubin("-with-cubin", cuda->getChip()));
  EXPECT_FALSE(s) << s.message();
}

/// When neither image loads, the error names both.
TEST(CudaDriverTest, UnloadableKernelsNameBothImages) {
  std::shared_ptr<Device> cuda = getFakeCudaDevice();
  if (!cuda)
    GTEST_SKIP() << "runs under the fake CUDA driver only";
  KernelVariant variant = withCubin("-broken", cuda->getChip());
  variant.ptx = ".version 8.0\n.target sm_80\n.address_size 64\nnonsense\n";
  Status s = runSmallPrefill(*cuda, variant);
  ASSERT_TRUE(s);
  EXPECT_NE(s.message().find("loading the kernels of '" + variant.id +
                             "': cubin: no kernel image is available"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("; PTX: a PTX JIT compilation failed: "),
            std::string::npos)
      << s.message();
}

/// Two variants of one id with other kernels (two bundles built with
/// other options) each run their own: the device keeps what it loaded by
/// id and image hash, not by id alone.
TEST(CudaDriverTest, VariantsOfOneIdKeepTheirOwnKernels) {
  std::shared_ptr<Device> cuda = getFakeCudaDevice();
  if (!cuda)
    GTEST_SKIP() << "runs under the fake CUDA driver only";
  const KernelVariant &loaded = testVariant(false, false, false);
  ASSERT_NE(loaded.imageHash, 0u) << "Bundle::load sets the image hash";
  EXPECT_EQ(loaded.imageHash, loaded.computeImageHash());
  Status first = runSmallPrefill(*cuda, loaded);
  ASSERT_FALSE(first) << first.message();
  // The same id, other PTX: loaded afresh (and refused), not the first
  // variant's module run again.
  KernelVariant other = loaded;
  other.ptx = ".version 8.0\n.target sm_80\n.address_size 64\nnonsense\n";
  other.updateImageHash();
  EXPECT_NE(other.imageHash, loaded.imageHash);
  Status second = runSmallPrefill(*cuda, other);
  ASSERT_TRUE(second) << "ran the other variant's cached kernels";
  EXPECT_NE(second.message().find("loading the kernels of '" + loaded.id +
                                  "'"),
            std::string::npos)
      << second.message();
  // A variant whose hash was never set is hashed at the launch.
  other.imageHash = 0;
  EXPECT_TRUE(runSmallPrefill(*cuda, other));
  KernelVariant unset = loaded;
  unset.imageHash = 0;
  Status third = runSmallPrefill(*cuda, unset);
  EXPECT_FALSE(third) << third.message();
}

/// Host pointers handed to the CUDA device: the launch fails (the fake
/// driver checks every global access against its allocations).
/// Host pointers are an illegal address on the device, a fault that loses
/// the CUDA context: every launch, copy and wait after it is refused with
/// the error that lost it. Runs alone (ctest flashc-runtime-fake-cuda-fault):
/// the device stays lost.
TEST(CudaDriverFaultTest, HostMemoryIsAnIllegalAddressThatLosesTheDevice) {
  std::shared_ptr<Device> cuda = getFakeCudaDevice();
  if (!cuda)
    GTEST_SKIP() << "runs under the fake CUDA driver only";
  std::mt19937 rng(getSeed());
  Problem p;
  p.seqQ = 20;
  p.seqKV = 40;
  p.init(Layout::Dense, false, rng);
  EXPECT_FALSE(cuda->isLost());
  const KernelVariant &variant = testVariant(false, false, false);
  Status s = launchAttention(*cuda, variant, p.call);
  ASSERT_TRUE(s);
  EXPECT_NE(s.message().find("an illegal memory access"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("a kernel faulted, and the CUDA context is lost; "
                             "this device runs nothing more in this process"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(cuda->isLost());
  Status again = launchAttention(*cuda, variant, p.call);
  ASSERT_TRUE(again);
  EXPECT_EQ(again.message(), s.message());
  Status wait = cuda->synchronize(nullptr);
  ASSERT_TRUE(wait);
  EXPECT_EQ(wait.message(), s.message());
  uint16_t host = 0;
  Status copy = cuda->copyToDevice(p.call.out.data, &host, 2, nullptr);
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy.message(), s.message());
}

/// A kernel that never finishes (the fake driver's FLASHC_FAKE_CUDA_HANG_AT=1:
/// the first launch hangs) under FLASHC_CUDA_SYNC_TIMEOUT_S: the wait gives
/// up after the timeout with an error that says so, and the device refuses
/// every launch and wait after it. Runs alone (ctest
/// flashc-runtime-fake-cuda-hang): the fake driver stays hung.
TEST(CudaDriverHangTest, GivesUpOnAKernelThatNeverFinishes) {
  if (!std::getenv("FLASHC_FAKE_CUDA_HANG_AT"))
    GTEST_SKIP() << "runs under the fake CUDA driver with "
                    "FLASHC_FAKE_CUDA_HANG_AT=1 only";
  std::shared_ptr<Device> cuda = getFakeCudaDevice();
  ASSERT_TRUE(cuda);
  std::mt19937 rng(getSeed());
  Problem p;
  p.seqQ = 20;
  p.seqKV = 40;
  p.init(Layout::Dense, false, rng);
  const KernelVariant &variant = testVariant(false, false, false);
  ASSERT_FALSE(launchAttention(*cuda, variant, p.call));
  EXPECT_FALSE(cuda->isLost());

  // A timeout that is not a number of seconds is refused, naming it.
  ASSERT_EQ(setenv("FLASHC_CUDA_SYNC_TIMEOUT_S", "soon", 1), 0);
  Status bad = cuda->synchronize(nullptr);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(bad.message().find("FLASHC_CUDA_SYNC_TIMEOUT_S is 'soon'"),
            std::string::npos)
      << bad.message();

  ASSERT_EQ(setenv("FLASHC_CUDA_SYNC_TIMEOUT_S", "0.25", 1), 0);
  auto start = std::chrono::steady_clock::now();
  Status s = cuda->synchronize(nullptr);
  double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  unsetenv("FLASHC_CUDA_SYNC_TIMEOUT_S");
  ASSERT_TRUE(s);
  EXPECT_EQ(s.code(), ErrorCode::Launch);
  EXPECT_NE(s.message().find("did not finish within 0.25 s "
                             "(FLASHC_CUDA_SYNC_TIMEOUT_S)"),
            std::string::npos)
      << s.message();
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 10.0);
  EXPECT_TRUE(cuda->isLost());

  // Nothing runs after it, and waiting again fails at once (without the
  // timeout set, where the driver's own wait would never return).
  Status again = launchAttention(*cuda, variant, p.call);
  ASSERT_TRUE(again);
  EXPECT_NE(again.message().find("runs nothing more"), std::string::npos)
      << again.message();
  Status wait = cuda->synchronize(nullptr);
  ASSERT_TRUE(wait);
  EXPECT_EQ(wait.message(), s.message());
}

TEST_P(SimulatorRunTest, MatchesFloat64Reference) {
  checkRunCase(GetParam(), nullptr);
}

/// The same calls through the runtime's CUDA device on the fake driver:
/// module loading, the shared-memory opt-in, cuLaunchKernel's arguments,
/// device allocations (the decode workspace) and copies.
class CudaDriverRunTest : public ::testing::TestWithParam<RunCase> {};

TEST_P(CudaDriverRunTest, MatchesFloat64Reference) {
  std::shared_ptr<Device> cuda = getFakeCudaDevice();
  if (!cuda)
    GTEST_SKIP() << "runs under the fake CUDA driver only (ctest "
                    "flashc-runtime-fake-cuda)";
  checkRunCase(GetParam(), cuda.get());
}

/// And through the C API (flashc_attention with FLASHC_DEVICE_CUDA).
TEST_P(CudaDriverRunTest, CApiMatchesFloat64Reference) {
  std::shared_ptr<Device> cuda = getFakeCudaDevice();
  if (!cuda)
    GTEST_SKIP() << "runs under the fake CUDA driver only (ctest "
                    "flashc-runtime-fake-cuda)";
  checkRunCase(GetParam(), cuda.get(), /*cApi=*/true);
}

const RunCase kRunCases[] = {
    // name, decode, causal, lse, B, Nq, Nk, layout, splits
    RunCase{"Prefill", false, false, false, 2, 37, 301, Layout::Dense, 0},
    // Several Q tiles and KV blocks, with the diagonal inside a block.
    RunCase{"PrefillCausalLse", false, true, true, 2, 203, 261, Layout::Dense,
            0},
    // Nk < Nq under the causal mask: the first Nq - Nk rows see no key.
    RunCase{"PrefillCausalShortKeys", false, true, true, 1, 173, 141,
            Layout::Dense, 0},
    RunCase{"PrefillOneQuery", false, true, false, 1, 1, 300, Layout::Dense, 0},
    RunCase{"PrefillSequenceMajor", false, true, true, 2, 33, 150,
            Layout::SequenceMajor, 0},
    RunCase{"Decode", true, false, false, 2, 1, 1001, Layout::Dense, 0},
    RunCase{"DecodeCausalLseSplits", true, true, true, 2, 5, 700, Layout::Dense,
            3},
    RunCase{"DecodeSixteenRows", true, true, false, 1, 16, 300, Layout::Dense,
            0},
    RunCase{"DecodeCausalShortKeys", true, true, true, 1, 7, 3, Layout::Dense,
            0},
    // Rows 0 to 11 see no key of the second split: its partial is
    // empty for them, and the combine must ignore it.
    RunCase{"DecodeCausalEmptySplit", true, true, true, 2, 16, 260,
            Layout::Dense, 2},
    // A decode kernel serves any Nq; only its tile is made for Nq <= 16.
    RunCase{"DecodeLongQuery", true, true, false, 1, 41, 300, Layout::Dense, 2},
    RunCase{"DecodeSequenceMajor", true, true, true, 2, 3, 555,
            Layout::SequenceMajor, 2},
    // Seven splits of one 256-key block each (none empty): the combine's
    // two steps of four, the second reading past the last split.
    RunCase{"DecodeCausalLseSevenSplits", true, true, true, 1, 9, 1700,
            Layout::Dense, 7}};

std::string runCaseName(const ::testing::TestParamInfo<RunCase> &info) {
  return info.param.name;
}

/// Decode workspaces come from one pool of the runtime's own whose
/// release threshold keeps its memory across synchronisations, not from
/// the device's default pool (which gives memory back at each
/// synchronise, so that every call would map its workspace afresh).
TEST(CudaDriverTest, WorkspacesComeFromAPoolThatKeepsItsMemory) {
  std::shared_ptr<Device> cuda = getFakeCudaDevice();
  if (!cuda)
    GTEST_SKIP() << "runs under the fake CUDA driver only (ctest "
                    "flashc-runtime-fake-cuda)";
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(driver, nullptr);
  using StatsFn = void(unsigned long long *, unsigned long long *,
                       unsigned long long *, unsigned long long *);
  auto *stats =
      reinterpret_cast<StatsFn *>(dlsym(driver, "flashcFakeCudaPoolStats"));
  ASSERT_NE(stats, nullptr) << "libcuda.so.1 is not the fake driver";
  unsigned long long pools0, threshold0, default0, pooled0;
  stats(&pools0, &threshold0, &default0, &pooled0);
  const RunCase split{"Split", true, true, true, 2, 5, 700, Layout::Dense, 3};
  checkRunCase(split, cuda.get());
  checkRunCase(split, cuda.get(), /*cApi=*/true);
  unsigned long long pools, threshold, defaults, pooled;
  stats(&pools, &threshold, &defaults, &pooled);
  EXPECT_EQ(pools, 1u) << "one pool for the device's lifetime";
  EXPECT_EQ(threshold, ~0ull);
  // Each call allocates at least its workspace.
  EXPECT_GE(pooled, pooled0 + 2);
  EXPECT_EQ(defaults, default0);
  dlclose(driver);
}

INSTANTIATE_TEST_SUITE_P(Runtime, SimulatorRunTest,
                         ::testing::ValuesIn(kRunCases), runCaseName);
INSTANTIATE_TEST_SUITE_P(Runtime, CudaDriverRunTest,
                         ::testing::ValuesIn(kRunCases), runCaseName);

//===----------------------------------------------------------------------===//
// Checked sizes (flashc/Support/Sizes.h)
//===----------------------------------------------------------------------===//

TEST(SizesTest, CheckedArithmetic) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(checkedMul(1 << 20, 1 << 20), int64_t(1) << 40);
  EXPECT_FALSE(checkedMul(int64_t(1) << 32, int64_t(1) << 31).has_value());
  EXPECT_FALSE(checkedAdd(max, 1).has_value());
  EXPECT_EQ(checkedProduct({2, 3, 7}), 42);
  EXPECT_FALSE(checkedProduct({2, -3}).has_value());
  EXPECT_FALSE(checkedProduct({4611686018427387905, 4}).has_value());
  // (a + b - 1) / b would overflow here.
  EXPECT_EQ(ceilDiv(max, max), 1);
  EXPECT_EQ(ceilDiv(max - 1, 2), max / 2);
  EXPECT_EQ(ceilDiv(0, 7), 0);
  EXPECT_EQ(ceilDiv(15, 4), 4);
  EXPECT_EQ(checkRange(5, "x", 0, 4), "x must be from 0 to 4, got 5");
  EXPECT_EQ(checkRange(4, "x", 0, 4), "");
}

TEST(SizesTest, AttentionLimits) {
  AttentionProblem s;
  s.batch = 2;
  s.heads = 8;
  s.kvHeads = 2;
  s.seqQ = 1024;
  s.seqKV = 1024;
  s.headDim = s.headDimV = 128;
  s.dtype = ElementType::F16;
  EXPECT_EQ(checkProblemSizes(s), "");
  EXPECT_TRUE(s.check().ok());
  AttentionProblem d = s;
  d.headDimV = 513;
  EXPECT_EQ(checkProblemSizes(d),
            "head-dim-v 513 exceeds the largest head dim flashc compiles "
            "(512)");
  AttentionProblem g = s;
  g.kvHeads = 3;
  EXPECT_EQ(checkProblemSizes(g),
            "heads (8) must be a multiple of kv-heads (3)");
  AttentionProblem z = s;
  z.seqKV = 0;
  EXPECT_EQ(checkProblemSizes(z), "seq-kv must be positive, got 0");
  EXPECT_EQ(z.check().code(), ErrorCode::InvalidArgument);
  // The issue's wrapped shapes: B * Hq * Nq * D * 2 overflows, and
  // Nk * D * 2 passes 2^60 bytes.
  AttentionProblem b = s;
  b.batch = 4611686018427387905;
  EXPECT_NE(checkProblemSizes(b).find("q would exceed 2^60 bytes"),
            std::string::npos);
  AttentionProblem n = s;
  n.seqKV = 1152921504606846977;
  EXPECT_NE(checkProblemSizes(n).find("k would exceed 2^60 bytes"),
            std::string::npos);
  // A scale the kernels cannot take in f32.
  AttentionProblem c = s;
  c.scale = 1e39;
  EXPECT_EQ(c.check().message(),
            "scale 1e+39 is not a normal f32 value (the kernels scale in f32: "
            "1.2e-38 to 3.4e+38)");
  // The mask spelled as data.
  EXPECT_EQ(Mask::parse("causal"), Mask::causal());
  EXPECT_EQ(Mask::parse("none"), Mask::none());
  EXPECT_FALSE(Mask::parse("sliding").has_value());
}

} // namespace
