//===- Npy.h - NumPy .npy files without dependencies ------------*- C++ -*-===//
//
// Reads and writes NumPy's .npy format (versions 1-3, C order,
// little-endian) as raw bytes plus a dtype descriptor and a shape. Plain
// C++17, so that LLVM-free tools (the PTX simulator, the runtime's tests)
// can use it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SUPPORT_NPY_H
#define FLASHC_SUPPORT_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace flashc {

struct NpyArray {
  /// NumPy's descriptor: "<f4", "<f2", "<f8", "<i4", "<u2", "|u1", ...
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  /// Bytes per element of `descr` (0 when unknown).
  size_t elementBytes() const;
  int64_t numElements() const;
};

/// The descriptor of a short dtype name: f32 -> "<f4", f16 -> "<f2",
/// bf16 -> "<u2" (NumPy has no bfloat16; its bits travel as uint16),
/// f64, s8/s16/s32/s64, u8/u16/u32/u64. Empty when unknown.
std::string npyDescrOf(const std::string &dtype);

/// Reads `path`. On failure returns false and sets `error` to a message
/// that names the file. The header must be well formed, the data exactly
/// as long as the shape says (no trailing bytes). With `expectedShape`, a
/// different shape is an error before any data is read.
bool readNpy(const std::string &path, NpyArray &array, std::string &error,
             const std::vector<int64_t> *expectedShape = nullptr);

/// Writes `array` to `path`, the data starting on a 64-byte boundary.
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);

} // namespace flashc

#endif // FLASHC_SUPPORT_NPY_H
