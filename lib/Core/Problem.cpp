//===- Problem.cpp - The one description of an attention problem ----------===//

#include "flashc/Core/Problem.h"

#include "flashc/Support/Sizes.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

using namespace flashc;

const char *flashc::stringify(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  }
  return "?";
}

std::optional<ElementType> flashc::parseElementType(std::string_view name) {
  if (name == "f32")
    return ElementType::F32;
  if (name == "f16")
    return ElementType::F16;
  if (name == "bf16")
    return ElementType::BF16;
  return std::nullopt;
}

int64_t flashc::getElementBytes(ElementType type) {
  return type == ElementType::F32 ? 4 : 2;
}

const char *flashc::stringify(MaskKind kind) {
  switch (kind) {
  case MaskKind::None:
    return "none";
  case MaskKind::Causal:
    return "causal";
  }
  return "?";
}

std::string flashc::getMaskKindNames() {
  std::string names;
  for (MaskKind kind : kMaskKinds)
    names += (names.empty() ? "" : ", ") + std::string(stringify(kind));
  return names;
}

std::string Mask::str() const { return stringify(kind); }

std::optional<Mask> Mask::parse(std::string_view name) {
  for (MaskKind kind : kMaskKinds)
    if (name == stringify(kind))
      return Mask{kind};
  return std::nullopt;
}

double AttentionProblem::effectiveScale() const {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(headDim));
}

Status flashc::checkScale(double scale) {
  // The kernels multiply by the scale in f32: it must be a positive,
  // finite f32 (1e39 overflows it, 1e-50 underflows to 0).
  char text[32];
  std::snprintf(text, sizeof(text), "%g", scale);
  if (!std::isfinite(scale) || scale <= 0)
    return Status::invalidArgument(
        std::string("scale must be finite and positive, got ") + text);
  float asFloat = static_cast<float>(scale);
  if (!std::isfinite(asFloat) || asFloat < std::numeric_limits<float>::min())
    return Status::invalidArgument(
        std::string("scale ") + text +
        " is not a normal f32 value (the kernels scale in f32: 1.2e-38 to "
        "3.4e+38)");
  return Status::success();
}

std::string flashc::checkProblemSizes(const AttentionProblem &p) {
  if (p.headDimV < 0)
    return "head-dim-v must be positive, got " + std::to_string(p.headDimV);
  int64_t dv = p.valueDim(), eb = p.elementBytes();
  const std::pair<int64_t, const char *> fields[] = {
      {p.batch, "batch"},   {p.heads, "heads"},  {p.kvHeads, "kv-heads"},
      {p.seqQ, "seq-q"},    {p.seqKV, "seq-kv"}, {p.headDim, "head-dim"},
      {dv, "head-dim-v"}};
  for (auto [value, name] : fields)
    if (value <= 0)
      return std::string(name) + " must be positive, got " +
             std::to_string(value);
  for (auto [value, name] : {fields[5], fields[6]})
    if (value > kMaxHeadDim)
      return std::string(name) + " " + std::to_string(value) +
             " exceeds the largest head dim flashc compiles (" +
             std::to_string(kMaxHeadDim) + ")";
  if (p.heads % p.kvHeads != 0)
    return "heads (" + std::to_string(p.heads) +
           ") must be a multiple of kv-heads (" + std::to_string(p.kvHeads) +
           ")";
  const struct {
    const char *name;
    std::optional<int64_t> bytes;
  } tensors[] = {
      {"q", checkedProduct({p.batch, p.heads, p.seqQ, p.headDim, eb})},
      {"k", checkedProduct({p.batch, p.kvHeads, p.seqKV, p.headDim, eb})},
      {"v", checkedProduct({p.batch, p.kvHeads, p.seqKV, dv, eb})},
      {"out", checkedProduct({p.batch, p.heads, p.seqQ, dv, eb})},
      {"lse", checkedProduct({p.batch, p.heads, p.seqQ, 4})}};
  for (const auto &t : tensors)
    if (!t.bytes || *t.bytes > kMaxTensorBytes)
      return "the shape is too large: " + std::string(t.name) +
             " would exceed 2^60 bytes (batch " + std::to_string(p.batch) +
             ", heads " + std::to_string(p.heads) + ", kv-heads " +
             std::to_string(p.kvHeads) + ", seq-q " + std::to_string(p.seqQ) +
             ", seq-kv " + std::to_string(p.seqKV) + ", head dims " +
             std::to_string(p.headDim) + "/" + std::to_string(dv) + ")";
  return "";
}

Status AttentionProblem::check() const {
  std::string problem = checkProblemSizes(*this);
  if (!problem.empty())
    return Status::invalidArgument(problem);
  if (scale)
    return checkScale(*scale);
  return Status::success();
}

std::string AttentionProblem::str() const {
  // The scale in hexadecimal: exact, so that distinct scales never print
  // alike.
  char scaleText[64];
  std::snprintf(scaleText, sizeof(scaleText), "%a", effectiveScale());
  return "b=" + std::to_string(batch) + " hq=" + std::to_string(heads) +
         " hkv=" + std::to_string(kvHeads) + " nq=" + std::to_string(seqQ) +
         " nk=" + std::to_string(seqKV) + " d=" + std::to_string(headDim) +
         " dv=" + std::to_string(valueDim()) + " " + stringify(dtype) +
         " " + stringify(layout) + " mask=" + mask.str() +
         " scale=" + scaleText + " lse=" + (withLse ? "1" : "0");
}
