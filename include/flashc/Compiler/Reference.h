//===- Reference.h - float64 reference attention and conversions -*- C++
//-*-===//
//
// The numerical ground truth the kernels are checked against: attention
// computed in float64 with the same semantics as flash.attention (GQA head
// mapping, bottom-right causal alignment, empty rows giving 0 and -inf), and
// conversions between f32 and the 16-bit storage formats.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_COMPILER_REFERENCE_H
#define FLASHC_COMPILER_REFERENCE_H

#include "flashc/Compiler/JIT.h"
#include "flashc/Support/Float16.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace mlir {
namespace flash {

/// IEEE half and bfloat16 from/to f32, rounding to nearest even.
using ::flashc::bfloat16ToFloat;
using ::flashc::floatToBFloat16;
using ::flashc::floatToHalf;
using ::flashc::halfToFloat;

/// A dense row-major host tensor of one of the kernel element types, with
/// its values also available as doubles.
class HostTensor {
public:
  /// A zeroed tensor, or an error naming the sizes when their product
  /// overflows or the memory cannot be allocated.
  static llvm::Expected<HostTensor> allocate(ElementType dtype,
                                             std::vector<int64_t> sizes);
  /// The same for sizes known to be small (tests, fixed benchmarks); a
  /// failure is fatal.
  HostTensor(ElementType dtype, std::vector<int64_t> sizes);
  HostTensor(HostTensor &&) = default;
  HostTensor &operator=(HostTensor &&) = default;

  ElementType getDType() const { return dtype; }
  const std::vector<int64_t> &getSizes() const { return sizes; }
  int64_t getNumElements() const { return numElements; }
  void *data() { return storage.get(); }
  const void *data() const { return storage.get(); }
  /// Element `i` (row-major) as a double / stores a value (rounded to the
  /// element type).
  double get(int64_t i) const;
  void set(int64_t i, double value);
  /// A TensorRef over this tensor's storage.
  TensorRef ref();

private:
  HostTensor() = default;
  struct Free {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  ElementType dtype = ElementType::F32;
  std::vector<int64_t> sizes;
  int64_t numElements = 0;
  std::unique_ptr<uint8_t[], Free> storage;
};

/// The float64 reference for one query row (batch `b`, head `h`, row `i`):
/// writes its Dv outputs to `out` and returns its log-sum-exp (-inf when the
/// row sees no key).
double referenceAttentionRow(const AttentionSpec &spec, const HostTensor &q,
                             const HostTensor &k, const HostTensor &v,
                             int64_t b, int64_t h, int64_t i, double *out);

/// The float64 reference: returns O [B, Hq, Nq, Dv] and, in `lse`,
/// [B, Hq, Nq].
std::vector<double> referenceAttention(const AttentionSpec &spec,
                                       const HostTensor &q, const HostTensor &k,
                                       const HostTensor &v,
                                       std::vector<double> *lse = nullptr);

/// The absolute error allowed on outputs of unit scale (convex combinations
/// of V entries of unit scale): about 4 ulps of the element type at 1.0 plus
/// the f32 accumulation error.
double getOutputTolerance(ElementType dtype);

/// |expected - got|, with equal infinities and NaN against NaN as 0, and
/// a NaN or an infinity on one side only as an infinite error.
double elementError(double expected, double got);

/// The largest |a - b| over elements, treating equal infinities and NaN
/// against NaN as 0, and a NaN on one side only as infinite error.
double maxAbsError(const std::vector<double> &expected, const HostTensor &got);
double maxAbsError(const std::vector<double> &expected,
                   const std::vector<float> &got);

} // namespace flash
} // namespace mlir

#endif // FLASHC_COMPILER_REFERENCE_H
