//===- Layout.h - The dimension order of attention tensors ------*- C++ -*-===//
//
// Attention tensors are 4-D. flashc's kernels index them as [B, H, N, D]
// (batch, heads, tokens, head dim) through strides, so any order in memory
// works without a copy; what a caller must say is which dimension is which.
// A `Layout` names the order in which a caller gives a tensor's sizes and
// strides:
//
//   bhnd     [B, H, N, D], PyTorch's scaled_dot_product_attention
//   bnhd     [B, N, H, D], FlashAttention's flash_attn_func
//   strided  [B, H, N, D] sizes with any strides (a permuted view)
//
// For bhnd and bnhd the strides must also be that order in memory: over
// the dimensions of more than one element (and a non-zero stride), the
// strides do not grow from the outermost to the innermost. A tensor whose
// strides say otherwise was most likely described in the other order, a
// silent wrong answer if taken as given, so it is refused. `strided` takes
// any strides, for callers whose tensors describe themselves (numpy arrays,
// DLPack tensors).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SUPPORT_LAYOUT_H
#define FLASHC_SUPPORT_LAYOUT_H

#include <cstdint>
#include <optional>
#include <string>

namespace flashc {

enum class Layout { BHND, BNHD, Strided };

/// "bhnd", "bnhd" or "strided".
const char *stringify(Layout layout);
/// The layout named `name` (as stringify prints it), or nothing.
std::optional<Layout> parseLayout(const std::string &name);

/// Turns a rank-4 tensor's `sizes` and `strides`, given in `layout`'s
/// order, into [B, H, N, D] order in place. Returns an error message naming
/// the tensor (`name`) when the strides are not `layout`'s order in memory
/// (see above), or "" on success.
std::string toBHND(Layout layout, int64_t sizes[4], int64_t strides[4],
                   const char *name);

} // namespace flashc

#endif // FLASHC_SUPPORT_LAYOUT_H
