//===- Sizes.cpp - Attention size limits ----------------------------------===//

#include "flashc/Support/Sizes.h"

#include <utility>

using namespace flashc;

std::string flashc::checkRange(int64_t value, const char *name, int64_t lo,
                               int64_t hi) {
  if (value >= lo && value <= hi)
    return "";
  return std::string(name) + " must be from " + std::to_string(lo) + " to " +
         std::to_string(hi) + ", got " + std::to_string(value);
}

std::optional<int64_t> flashc::getStridedExtentBytes(const int64_t *sizes,
                                                     const int64_t *strides,
                                                     int rank,
                                                     int64_t elementBytes) {
  // 1 + sum (size - 1) * stride elements, in 128-bit arithmetic.
  __int128 last = 0;
  for (int d = 0; d < rank; ++d) {
    if (sizes[d] < 0 || strides[d] < 0)
      return std::nullopt;
    if (sizes[d] == 0)
      return 0;
  }
  for (int d = 0; d < rank; ++d)
    last += static_cast<__int128>(sizes[d] - 1) * strides[d];
  __int128 bytes = (last + 1) * elementBytes;
  if (bytes > kMaxTensorBytes)
    return std::nullopt;
  return static_cast<int64_t>(bytes);
}
