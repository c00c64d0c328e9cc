//===- Reference.cpp - float64 reference attention and conversions --------===//
//
// Straightforward loops in double precision; clarity over speed.
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/Reference.h"

#include "flashc/Support/Sizes.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir::flash;


llvm::Expected<HostTensor> HostTensor::allocate(ElementType dtype,
                                                std::vector<int64_t> sizes) {
  std::string shapeText;
  for (int64_t v : sizes)
    shapeText += (shapeText.empty() ? "" : "x") + std::to_string(v);
  std::optional<int64_t> count = 1;
  for (int64_t s : sizes)
    count = (count && s >= 0) ? flashc::checkedMul(*count, s) : std::nullopt;
  std::optional<int64_t> bytes =
      count ? flashc::checkedMul(*count, ::flashc::getElementBytes(dtype)) : std::nullopt;
  if (!bytes)
    return llvm::createStringError("a " + shapeText +
                                   " tensor overflows 64-bit sizes");
  HostTensor t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  t.numElements = *count;
  // calloc: an allocation that cannot succeed is an error, not an abort.
  t.storage.reset(static_cast<uint8_t *>(
      std::calloc(static_cast<size_t>(std::max<int64_t>(*bytes, 1)), 1)));
  if (!t.storage)
    return llvm::createStringError(
        "cannot allocate " + std::to_string(*bytes) + " bytes for a " +
        shapeText + " " + std::string(::flashc::stringify(dtype)) + " tensor");
  return t;
}

HostTensor::HostTensor(ElementType dtype, std::vector<int64_t> sizes) {
  llvm::Expected<HostTensor> t = allocate(dtype, std::move(sizes));
  if (!t)
    llvm::report_fatal_error(t.takeError());
  *this = std::move(*t);
}

double HostTensor::get(int64_t i) const {
  switch (dtype) {
  case ElementType::F32: {
    float f;
    std::memcpy(&f, storage.get() + 4 * i, 4);
    return f;
  }
  case ElementType::F16: {
    uint16_t b;
    std::memcpy(&b, storage.get() + 2 * i, 2);
    return halfToFloat(b);
  }
  case ElementType::BF16: {
    uint16_t b;
    std::memcpy(&b, storage.get() + 2 * i, 2);
    return bfloat16ToFloat(b);
  }
  }
  return 0;
}

void HostTensor::set(int64_t i, double value) {
  float f = static_cast<float>(value);
  switch (dtype) {
  case ElementType::F32:
    std::memcpy(storage.get() + 4 * i, &f, 4);
    return;
  case ElementType::F16: {
    uint16_t b = floatToHalf(f);
    std::memcpy(storage.get() + 2 * i, &b, 2);
    return;
  }
  case ElementType::BF16: {
    uint16_t b = floatToBFloat16(f);
    std::memcpy(storage.get() + 2 * i, &b, 2);
    return;
  }
  }
}

TensorRef HostTensor::ref() {
  return TensorRef::contiguous(storage.get(), dtype, sizes);
}

double mlir::flash::referenceAttentionRow(const AttentionSpec &spec,
                                          const HostTensor &q,
                                          const HostTensor &k,
                                          const HostTensor &v, int64_t b,
                                          int64_t h, int64_t i, double *out) {
  const int64_t hq = spec.heads, hkv = spec.kvHeads;
  const int64_t nq = spec.seqQ, nk = spec.seqKV, d = spec.headDim;
  const int64_t dv = spec.valueDim(), g = h / (hq / hkv);
  const double scale = spec.effectiveScale();
  std::fill(out, out + dv, 0.0);
  // Keys j <= i + (nk - nq) are visible under the causal mask.
  int64_t visible =
      spec.isCausal() ? std::clamp<int64_t>(i + nk - nq + 1, 0, nk) : nk;
  if (visible == 0)
    return -std::numeric_limits<double>::infinity();
  std::vector<double> s(static_cast<size_t>(visible));
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < visible; ++j) {
    double dot = 0;
    for (int64_t t = 0; t < d; ++t)
      dot += q.get(((b * hq + h) * nq + i) * d + t) *
             k.get(((b * hkv + g) * nk + j) * d + t);
    s[j] = scale * dot;
    mx = std::max(mx, s[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j < visible; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum += s[j];
  }
  for (int64_t j = 0; j < visible; ++j)
    for (int64_t t = 0; t < dv; ++t)
      out[t] += s[j] / sum * v.get(((b * hkv + g) * nk + j) * dv + t);
  return mx + std::log(sum);
}

std::vector<double> mlir::flash::referenceAttention(const AttentionSpec &spec,
                                                    const HostTensor &q,
                                                    const HostTensor &k,
                                                    const HostTensor &v,
                                                    std::vector<double> *lse) {
  const int64_t hq = spec.heads, nq = spec.seqQ, dv = spec.valueDim();
  std::vector<double> out(static_cast<size_t>(spec.batch * hq * nq * dv));
  if (lse)
    lse->resize(static_cast<size_t>(spec.batch * hq * nq));
  for (int64_t b = 0; b < spec.batch; ++b)
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < nq; ++i) {
        int64_t row = (b * hq + h) * nq + i;
        double l = referenceAttentionRow(spec, q, k, v, b, h, i,
                                         &out[static_cast<size_t>(row * dv)]);
        if (lse)
          (*lse)[static_cast<size_t>(row)] = l;
      }
  return out;
}

double mlir::flash::getOutputTolerance(ElementType dtype) {
  switch (dtype) {
  case ElementType::F32:
    return 2e-4;
  case ElementType::F16:
    return 4e-3;
  case ElementType::BF16:
    return 3e-2;
  }
  return 0;
}

double mlir::flash::elementError(double expected, double got) {
  // A NaN where the reference is NaN too is the answer (a row whose
  // scores include NaN); a NaN on one side only is an infinite error.
  if (std::isnan(got) && std::isnan(expected))
    return 0.0;
  if (std::isnan(got) || std::isnan(expected))
    return std::numeric_limits<double>::infinity();
  if (std::isinf(expected) || std::isinf(got))
    return expected == got ? 0.0 : std::numeric_limits<double>::infinity();
  return std::fabs(expected - got);
}

double mlir::flash::maxAbsError(const std::vector<double> &expected,
                                const HostTensor &got) {
  double err = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    err = std::max(err, elementError(expected[i], got.get(i)));
  return err;
}

double mlir::flash::maxAbsError(const std::vector<double> &expected,
                                const std::vector<float> &got) {
  double err = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    err = std::max(err, elementError(expected[i], got[i]));
  return err;
}
