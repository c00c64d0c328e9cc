//===- SimTestUtils.h - Shared helpers of the simulator tests ---*- C++ -*-===//
//
// What the simulator's tests share: a runner for small hand-written PTX
// bodies (one thread or a few warps over 8-byte input and output slots),
// access to the kernels nvcc compiled from kernels/SimTestKernels.cu (or a
// reason to skip when nvcc was not found), a seeded random engine whose
// seed is printed on failure, and reference conversions to and from f16
// and bf16 written independently of the simulator's own (by scaling and
// rounding in double precision rather than by bit manipulation).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_UNITTESTS_SIMULATOR_SIMTESTUTILS_H
#define FLASHC_UNITTESTS_SIMULATOR_SIMTESTUTILS_H

#include "flashc/Simulator/Simulator.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace flashc {
namespace sim {
namespace test {

//===----------------------------------------------------------------------===//
// Hand-written PTX
//===----------------------------------------------------------------------===//

/// `.version`, `.target sm_80` and `.address_size 64`.
extern const char *const kPtxHeader;

/// The kernel `test(.param .u64 out, .param .u64 in)` around `body`. The body
/// sees `%rd14` = out, `%rd15` = in (global addresses of 8-byte slots),
/// `%r0` = %tid.x and the register families %p<16>, %rs<16>, %r<16>,
/// %rd<14>, %f<16>, %fd<16>. `decls` (e.g. `.shared` arrays) precede the
/// first instruction. The body's first line is line `kBodyFirstLine` of the
/// generated text.
std::string wrapBody(const std::string &body, const std::string &decls = "");
constexpr unsigned kBodyFirstLine = 17;

/// Runs `wrapBody(body, decls)` on one CTA of `threads` threads with
/// `numOut` zeroed output slots and the input slots `in`; returns the output
/// slots or the simulator's error. `programmatic`: as a programmatic
/// dependent launch (LaunchConfig::programmatic).
/// Runs `wrapBody(body, decls)` as runBody does, on the caller's input and
/// output slots (each non-empty), and returns the launch's statistics.
Result<LaunchStats> launchBody(const std::string &body,
                               std::vector<uint64_t> &in,
                               std::vector<uint64_t> &out, uint32_t threads = 1,
                               const std::string &decls = "",
                               bool programmatic = false);

Result<std::vector<uint64_t>> runBody(const std::string &body,
                                      const std::vector<uint64_t> &in,
                                      size_t numOut, uint32_t threads = 1,
                                      const std::string &decls = "",
                                      bool programmatic = false);

//===----------------------------------------------------------------------===//
// The nvcc-compiled kernels
//===----------------------------------------------------------------------===//

/// The kernels of SimTestKernels.ptx, parsed once. `skip` is set when nvcc
/// was not found at configure time; `error` when the file cannot be read or
/// parsed (a failure, not a skip).
struct NvccKernels {
  std::shared_ptr<const Module> owner;
  const Module *module = nullptr;
  std::string text;
  std::string skip;
  std::string error;
};
const NvccKernels &nvccKernels();
/// The sm_90a kernels of SimTestKernelsSm90.ptx, likewise.
const NvccKernels &nvccKernelsSm90();

/// Declares `const sim::Module *VAR` for the nvcc kernels, skipping the test
/// without nvcc and failing it when the PTX is unusable.
#define FLASHC_REQUIRE_NVCC_KERNELS(VAR)                                       \
  const ::flashc::sim::test::NvccKernels &VAR##Kernels_ =                      \
      ::flashc::sim::test::nvccKernels();                                      \
  if (!VAR##Kernels_.skip.empty())                                             \
    GTEST_SKIP() << VAR##Kernels_.skip;                                        \
  ASSERT_TRUE(VAR##Kernels_.error.empty()) << VAR##Kernels_.error;             \
  const ::flashc::sim::Module *VAR = VAR##Kernels_.module
/// The same for the sm_90a kernels.
#define FLASHC_REQUIRE_NVCC_SM90_KERNELS(VAR)                                  \
  const ::flashc::sim::test::NvccKernels &VAR##Kernels_ =                      \
      ::flashc::sim::test::nvccKernelsSm90();                                  \
  if (!VAR##Kernels_.skip.empty())                                             \
    GTEST_SKIP() << VAR##Kernels_.skip;                                        \
  ASSERT_TRUE(VAR##Kernels_.error.empty()) << VAR##Kernels_.error;             \
  const ::flashc::sim::Module *VAR = VAR##Kernels_.module

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

/// Success, or a failure carrying the error's message.
inline ::testing::AssertionResult ok(const Status &e) {
  if (!e)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << e.message();
}
template <typename T> testing::AssertionResult ok(const Result<T> &value) {
  if (value)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << value.status().message();
}

/// Registers `v`'s storage as a global buffer named `name`.
template <typename T>
Status registerVector(Device &device, std::vector<T> &v, std::string name) {
  return device.registerBuffer(v.data(), v.size() * sizeof(T), std::move(name));
}

//===----------------------------------------------------------------------===//
// Random inputs
//===----------------------------------------------------------------------===//

/// A std::mt19937 seeded from std::random_device, or from the environment
/// variable FLASHC_SIM_TEST_SEED to reproduce a failure.
struct SeededRng {
  SeededRng();
  uint32_t seed;
  std::mt19937 engine;
  std::string trace() const;
};

/// Declares `SeededRng VAR` and prints its seed with any failure below.
#define FLASHC_SEEDED_RNG(VAR)                                                 \
  ::flashc::sim::test::SeededRng VAR;                                          \
  SCOPED_TRACE(VAR.trace())

//===----------------------------------------------------------------------===//
// Bits and reference numerics
//===----------------------------------------------------------------------===//

inline uint32_t f32Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline float bitsF32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint64_t f64Bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
inline double bitsF64(uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}

/// IEEE binary16 nearest (ties to even) to `x`; NaN gives 0x7e00.
uint16_t refToHalf(double x);
/// bfloat16 nearest (ties to even) to `x`; NaN gives 0x7fc0.
uint16_t refToBFloat(double x);
double refHalfValue(uint16_t h);
double refBFloatValue(uint16_t b);

/// A PTX source line (1-based) of `text`, or "" when out of range.
std::string lineOf(const std::string &text, unsigned line);

/// The line number N of the first `<source>:N` in `message`, or 0.
unsigned lineIn(const std::string &message, const std::string &source);
/// The line numbers of every `<source>:N` in `message`.
std::vector<unsigned> linesIn(const std::string &message,
                              const std::string &source);

} // namespace test
} // namespace sim
} // namespace flashc

#endif // FLASHC_UNITTESTS_SIMULATOR_SIMTESTUTILS_H
