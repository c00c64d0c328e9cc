//===- Layout.cpp - The dimension order of attention tensors --------------===//

#include "flashc/Support/Layout.h"

#include <utility>

using namespace flashc;

const char *flashc::stringify(Layout layout) {
  switch (layout) {
  case Layout::BHND:
    return "bhnd";
  case Layout::BNHD:
    return "bnhd";
  case Layout::Strided:
    return "strided";
  }
  return "unknown";
}

std::optional<Layout> flashc::parseLayout(const std::string &name) {
  for (Layout layout : {Layout::BHND, Layout::BNHD, Layout::Strided})
    if (name == stringify(layout))
      return layout;
  return std::nullopt;
}

static std::string join(const int64_t values[4]) {
  std::string s = "[";
  for (int d = 0; d < 4; ++d)
    s += (d ? ", " : "") + std::to_string(values[d]);
  return s + "]";
}

std::string flashc::toBHND(Layout layout, int64_t sizes[4], int64_t strides[4],
                           const char *name) {
  if (layout != Layout::Strided) {
    // The dimensions in the order the caller gave them.
    const char *dims = layout == Layout::BHND ? "BHND" : "BNHD";
    int outer = -1;
    for (int d = 0; d < 4; ++d) {
      if (sizes[d] <= 1 || strides[d] == 0)
        continue;
      if (outer >= 0 && strides[d] > strides[outer])
        return std::string(name) + " with sizes " + join(sizes) +
               " and strides " + join(strides) + " is not a " +
               stringify(layout) + " tensor: dimension " + dims[d] +
               " (stride " + std::to_string(strides[d]) +
               ") is outside dimension " + dims[outer] + " (stride " +
               std::to_string(strides[outer]) +
               ") in memory; give the sizes and strides in the order the "
               "layout names, or name the layout that matches (strided "
               "takes any strides in [B, H, N, D] order)";
      outer = d;
    }
  }
  if (layout == Layout::BNHD) {
    std::swap(sizes[1], sizes[2]);
    std::swap(strides[1], strides[2]);
  }
  return "";
}
