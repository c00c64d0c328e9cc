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

std::string flashc::checkAttentionSizes(const AttentionSizes &s) {
  const std::pair<int64_t, const char *> fields[] = {
      {s.batch, "batch"},   {s.heads, "heads"},       {s.kvHeads, "kv-heads"},
      {s.seqQ, "seq-q"},    {s.seqKV, "seq-kv"},      {s.headDim, "head-dim"},
      {s.headDimV, "head-dim-v"}};
  for (auto [value, name] : fields)
    if (value <= 0)
      return std::string(name) + " must be positive, got " +
             std::to_string(value);
  for (auto [value, name] : {fields[5], fields[6]})
    if (value > kMaxHeadDim)
      return std::string(name) + " " + std::to_string(value) +
             " exceeds the largest head dim flashc compiles (" +
             std::to_string(kMaxHeadDim) + ")";
  if (s.heads % s.kvHeads != 0)
    return "heads (" + std::to_string(s.heads) +
           ") must be a multiple of kv-heads (" + std::to_string(s.kvHeads) +
           ")";
  const struct {
    const char *name;
    std::optional<int64_t> bytes;
  } tensors[] = {
      {"q", checkedProduct({s.batch, s.heads, s.seqQ, s.headDim,
                            s.elementBytes})},
      {"k", checkedProduct({s.batch, s.kvHeads, s.seqKV, s.headDim,
                            s.elementBytes})},
      {"v", checkedProduct({s.batch, s.kvHeads, s.seqKV, s.headDimV,
                            s.elementBytes})},
      {"out", checkedProduct({s.batch, s.heads, s.seqQ, s.headDimV,
                              s.elementBytes})},
      {"lse", checkedProduct({s.batch, s.heads, s.seqQ, 4})}};
  for (const auto &t : tensors)
    if (!t.bytes || *t.bytes > kMaxTensorBytes)
      return "the shape is too large: " + std::string(t.name) +
             " would exceed 2^60 bytes (batch " + std::to_string(s.batch) +
             ", heads " + std::to_string(s.heads) + ", kv-heads " +
             std::to_string(s.kvHeads) + ", seq-q " + std::to_string(s.seqQ) +
             ", seq-kv " + std::to_string(s.seqKV) + ", head dims " +
             std::to_string(s.headDim) + "/" + std::to_string(s.headDimV) +
             ")";
  return "";
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
