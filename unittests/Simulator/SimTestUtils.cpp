//===- SimTestUtils.cpp - Shared helpers of the simulator tests -----------===//
//
// The body runner, the cached nvcc kernels, the seeded engine and the
// reference f16/bf16 conversions declared in SimTestUtils.h.
//
//===----------------------------------------------------------------------===//

#include "SimTestUtils.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace flashc {
namespace sim {
namespace test {

const char *const kPtxHeader = ".version 7.8\n"
                               ".target sm_80\n"
                               ".address_size 64\n";

std::string wrapBody(const std::string &body, const std::string &decls) {
  // Keep the line count in step with kBodyFirstLine.
  return std::string(kPtxHeader) +
         "\n"
         ".visible .entry test(.param .u64 out, .param .u64 in)\n"
         "{\n"
         "  .reg .pred %p<16>;\n"
         "  .reg .b16 %rs<16>;\n"
         "  .reg .b32 %r<16>;\n"
         "  .reg .b64 %rd<16>;\n"
         "  .reg .f32 %f<16>;\n"
         "  .reg .f64 %fd<16>;\n"
         "  " +
         decls +
         "\n"
         "  ld.param.u64 %rd14, [out];\n"
         "  ld.param.u64 %rd15, [in];\n"
         "  mov.u32 %r0, %tid.x;\n" +
         body +
         "\n"
         "  ret;\n"
         "}\n";
}

Result<LaunchStats> launchBody(const std::string &body,
                               std::vector<uint64_t> &in,
                               std::vector<uint64_t> &out, uint32_t threads,
                               const std::string &decls, bool programmatic) {
  auto module = Module::parse(wrapBody(body, decls), "body.ptx");
  if (!module)
    return module.status();
  Device device;
  if (Status e = registerVector(device, in, "in"))
    return e;
  if (Status e = registerVector(device, out, "out"))
    return e;
  LaunchConfig config;
  config.block = {threads};
  config.workers = 1;
  config.maxInstructionsPerThread = 1u << 20;
  config.programmatic = programmatic;
  return device.launch(
      **module, "test", config,
      {KernelArg::pointer(out.data()), KernelArg::pointer(in.data())});
}

Result<std::vector<uint64_t>>
runBody(const std::string &body, const std::vector<uint64_t> &in, size_t numOut,
        uint32_t threads, const std::string &decls, bool programmatic) {
  std::vector<uint64_t> input = in, output(numOut, 0);
  if (input.empty())
    input.push_back(0);
  if (output.empty())
    output.push_back(0);
  Result<LaunchStats> stats =
      launchBody(body, input, output, threads, decls, programmatic);
  if (!stats)
    return stats.status();
  output.resize(numOut);
  return output;
}

namespace {

/// Reads and parses the nvcc-compiled PTX at `path` (empty without nvcc).
NvccKernels loadNvccKernels(const std::string &path, const char *source,
                            const char *name) {
  NvccKernels k;
  if (path.empty()) {
    k.skip = std::string("nvcc was not found when the build was configured, "
                         "so kernels/") +
             source + " was not compiled to PTX";
    return k;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    k.error = "cannot read the nvcc-compiled kernels at '" + path + "'";
    return k;
  }
  k.text.assign(std::istreambuf_iterator<char>(file),
                std::istreambuf_iterator<char>());
  auto parsed = Module::parse(k.text, name);
  if (!parsed) {
    k.error = parsed.status().message();
    return k;
  }
  k.owner = *parsed;
  k.module = k.owner.get();
  return k;
}

} // namespace

const NvccKernels &nvccKernels() {
  static const NvccKernels kernels = loadNvccKernels(
      FLASHC_SIM_KERNELS_PTX, "SimTestKernels.cu", "SimTestKernels.ptx");
  return kernels;
}

const NvccKernels &nvccKernelsSm90() {
  static const NvccKernels kernels =
      loadNvccKernels(FLASHC_SIM_KERNELS_SM90_PTX, "SimTestKernelsSm90.cu",
                      "SimTestKernelsSm90.ptx");
  return kernels;
}

SeededRng::SeededRng() {
  if (const char *env = std::getenv("FLASHC_SIM_TEST_SEED"))
    seed = static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
  else
    seed = std::random_device{}();
  engine.seed(seed);
}

std::string SeededRng::trace() const {
  return "random seed " + std::to_string(seed) +
         " (rerun with FLASHC_SIM_TEST_SEED=" + std::to_string(seed) + ")";
}

namespace {

/// The value nearest to |x| (ties to even) among binary floats with
/// `mantBits` stored mantissa bits and minimum normal exponent `minExp`,
/// with no upper limit; the caller checks for overflow.
double roundMagnitude(double a, int mantBits, int minExp) {
  int e;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, minExp);
  double ulp = std::ldexp(1.0, exp - mantBits);
  return std::nearbyint(a / ulp) * ulp; // the default mode: ties to even
}

} // namespace

uint16_t refToHalf(double x) {
  if (std::isnan(x))
    return 0x7e00;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(x);
  if (std::isinf(a))
    return sign | 0x7c00;
  if (a == 0)
    return sign;
  double r = roundMagnitude(a, 10, -14);
  if (r >= 65536.0)
    return sign | 0x7c00;
  if (r < std::ldexp(1.0, -14)) // subnormal: a multiple of 2^-24
    return sign | static_cast<uint16_t>(std::ldexp(r, 24));
  int e;
  std::frexp(r, &e);
  int exp = e - 1;
  double mant = std::ldexp(r, -exp) - 1.0; // in [0, 1)
  return sign | static_cast<uint16_t>((exp + 15) << 10) |
         static_cast<uint16_t>(std::ldexp(mant, 10));
}

uint16_t refToBFloat(double x) {
  if (std::isnan(x))
    return 0x7fc0;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(x);
  if (std::isinf(a))
    return sign | 0x7f80;
  if (a == 0)
    return sign;
  double r = roundMagnitude(a, 7, -126);
  if (r >= std::ldexp(1.0, 128))
    return sign | 0x7f80;
  // Every bfloat16 value is an f32 whose low 16 bits are zero.
  return sign | static_cast<uint16_t>(f32Bits(static_cast<float>(r)) >> 16);
}

double refHalfValue(uint16_t h) {
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0)
    return sign * std::ldexp(mant, -24);
  if (exp == 31)
    return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(1.0 + mant / 1024.0, exp - 15);
}

double refBFloatValue(uint16_t b) {
  double sign = (b & 0x8000) ? -1.0 : 1.0;
  int exp = (b >> 7) & 0xff, mant = b & 0x7f;
  if (exp == 0)
    return sign * std::ldexp(mant, -133);
  if (exp == 255)
    return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(1.0 + mant / 128.0, exp - 127);
}

std::string lineOf(const std::string &text, unsigned line) {
  std::istringstream in(text);
  std::string s;
  for (unsigned i = 1; std::getline(in, s); ++i)
    if (i == line)
      return s;
  return "";
}

std::vector<unsigned> linesIn(const std::string &message,
                              const std::string &source) {
  std::vector<unsigned> lines;
  std::string key = source + ":";
  for (size_t at = message.find(key); at != std::string::npos;
       at = message.find(key, at)) {
    at += key.size();
    unsigned n = 0;
    bool digits = false;
    while (at < message.size() && message[at] >= '0' && message[at] <= '9') {
      n = n * 10 + (message[at++] - '0');
      digits = true;
    }
    if (digits)
      lines.push_back(n);
  }
  return lines;
}

unsigned lineIn(const std::string &message, const std::string &source) {
  std::vector<unsigned> lines = linesIn(message, source);
  return lines.empty() ? 0 : lines.front();
}

} // namespace test
} // namespace sim
} // namespace flashc
