//===- FlashOps.cpp - flash dialect operations ----------------------------===//
//
// Verifiers, builders and helpers of the flash operations. ODS checks element
// types; the rules here relate dimensions of several operands and results,
// and every diagnostic names the dimensions and values involved.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::flash;

namespace {

/// Renders a dimension size for a diagnostic: the size, or `?` if dynamic.
std::string dimStr(int64_t size) {
  return ShapedType::isDynamic(size) ? "?" : std::to_string(size);
}

/// Renders a shape as `[2, 8, ?, 64]`.
std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::interleave(
      shape, [&](int64_t d) { s += dimStr(d); }, [&] { s += ", "; });
  return s + "]";
}

/// Two sizes are compatible unless both are static and differ.
bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Emits an error unless `a` and `b` are compatible; the message reads
/// "<whatA> (<a>) does not match <whatB> (<b>)".
LogicalResult checkSameSize(Operation *op, int64_t a, StringRef whatA,
                            int64_t b, StringRef whatB) {
  if (compatible(a, b))
    return success();
  return op->emitOpError() << whatA << " (" << dimStr(a) << ") does not match "
                           << whatB << " (" << dimStr(b) << ")";
}

/// Emits an error unless `scale` is finite and, if `requirePositive`, > 0.
LogicalResult checkScale(Operation *op, std::optional<APFloat> scale,
                         bool requirePositive) {
  if (!scale)
    return success();
  double value = scale->convertToDouble();
  if (!std::isfinite(value))
    return op->emitOpError() << "scale must be finite, got " << value;
  if (requirePositive && value <= 0.0)
    return op->emitOpError() << "scale must be positive, got " << value;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto lhsType = getLhs().getType();
  auto rhsType = getRhs().getType();
  auto resultType = getResult().getType();
  int64_t rank = lhsType.getRank();
  if (rank < 2)
    return emitOpError() << "lhs must have rank >= 2, got rank " << rank;
  if (rhsType.getRank() != rank)
    return emitOpError() << "rhs rank (" << rhsType.getRank()
                         << ") does not match lhs rank (" << rank << ")";
  if (resultType.getRank() != rank)
    return emitOpError() << "result rank (" << resultType.getRank()
                         << ") does not match lhs rank (" << rank << ")";
  if (lhsType.getElementType() != rhsType.getElementType())
    return emitOpError() << "lhs element type (" << lhsType.getElementType()
                         << ") does not match rhs element type ("
                         << rhsType.getElementType() << ")";

  ArrayRef<int64_t> lhs = lhsType.getShape();
  ArrayRef<int64_t> rhs = rhsType.getShape();
  ArrayRef<int64_t> res = resultType.getShape();
  for (int64_t i = 0; i < rank - 2; ++i) {
    std::string idx = std::to_string(i);
    if (failed(checkSameSize(*this, rhs[i], "rhs batch dimension " + idx,
                             lhs[i], "lhs batch dimension " + idx)) ||
        failed(checkSameSize(*this, res[i], "result batch dimension " + idx,
                             lhs[i], "lhs batch dimension " + idx)))
      return failure();
  }

  bool transposed = getTransposeB();
  int64_t m = lhs[rank - 2], k = lhs[rank - 1];
  int64_t rhsK = transposed ? rhs[rank - 1] : rhs[rank - 2];
  int64_t n = transposed ? rhs[rank - 2] : rhs[rank - 1];
  if (!compatible(k, rhsK))
    return emitOpError() << "contraction dimension of lhs (" << dimStr(k)
                         << ") does not match contraction dimension of rhs ("
                         << dimStr(rhsK) << ")"
                         << (transposed ? " (rhs is transposed)" : "");
  if (!compatible(res[rank - 2], m) || !compatible(res[rank - 1], n))
    return emitOpError() << "result shape " << shapeStr(res)
                         << " is inconsistent with the operands: expected "
                         << "[..., " << dimStr(m) << ", " << dimStr(n) << "]";
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

int64_t SoftmaxOp::getReductionDim() {
  if (std::optional<uint64_t> dim = getDim())
    return static_cast<int64_t>(*dim);
  return getInput().getType().getRank() - 1;
}

double SoftmaxOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0;
}

LogicalResult SoftmaxOp::verify() {
  auto inputType = getInput().getType();
  auto resultType = getResult().getType();
  int64_t rank = inputType.getRank();
  if (rank < 1)
    return emitOpError() << "input must have rank >= 1, got rank 0";
  if (resultType.getRank() != rank)
    return emitOpError() << "result rank (" << resultType.getRank()
                         << ") does not match input rank (" << rank << ")";
  for (int64_t i = 0; i < rank; ++i) {
    if (!compatible(inputType.getDimSize(i), resultType.getDimSize(i)))
      return emitOpError() << "result shape " << shapeStr(resultType.getShape())
                           << " does not match input shape "
                           << shapeStr(inputType.getShape());
  }
  if (auto dimAttr = getDimAttr()) {
    int64_t dim = dimAttr.getValue().getSExtValue();
    if (dim < 0 || dim >= rank)
      return emitOpError() << "softmax dimension " << dim
                           << " is out of range for rank " << rank;
  }
  if (getCausal()) {
    if (rank < 2)
      return emitOpError() << "causal softmax needs scores of rank >= 2 "
                              "([..., Nq, Nk]), got rank "
                           << rank;
    if (getReductionDim() != rank - 1)
      return emitOpError() << "causal softmax must reduce the last dimension ("
                           << rank - 1 << "), got dimension "
                           << getReductionDim();
  }
  return checkScale(*this, getScale(), /*requirePositive=*/false);
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

void AttentionOp::build(OpBuilder &builder, OperationState &state, Value query,
                        Value key, Value value, FloatAttr scale, bool causal,
                        bool withLse) {
  auto qType = cast<RankedTensorType>(query.getType());
  auto vType = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> outShape(qType.getShape());
  if (!outShape.empty() && vType.getRank() > 0)
    outShape.back() = vType.getShape().back();
  SmallVector<Type> resultTypes = {
      RankedTensorType::get(outShape, qType.getElementType())};
  if (withLse) {
    ArrayRef<int64_t> lseShape = qType.getShape().drop_back();
    resultTypes.push_back(
        RankedTensorType::get(lseShape, builder.getF32Type()));
  }
  build(builder, state, resultTypes, query, key, value, scale,
        causal ? builder.getUnitAttr() : UnitAttr());
}

double AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  int64_t headDim = getQuery().getType().getDimSize(3);
  return 1.0 / std::sqrt(static_cast<double>(headDim));
}

int64_t AttentionOp::getGroupSize() {
  return getQuery().getType().getDimSize(1) / getKey().getType().getDimSize(1);
}

LogicalResult AttentionOp::verify() {
  auto qType = getQuery().getType();
  auto kType = getKey().getType();
  auto vType = getValue().getType();
  auto oType = getOut().getType();

  // Ranks: every operand and the output are [batch, heads, seq, head_dim].
  struct Named {
    RankedTensorType type;
    StringRef name;
    StringRef layout;
  };
  for (Named t : {Named{qType, "query", "[B, Hq, Nq, D]"},
                  Named{kType, "key", "[B, Hkv, Nk, D]"},
                  Named{vType, "value", "[B, Hkv, Nk, Dv]"},
                  Named{oType, "result", "[B, Hq, Nq, Dv]"}}) {
    if (t.type.getRank() != 4)
      return emitOpError() << t.name << " must have rank 4 " << t.layout
                           << ", got rank " << t.type.getRank();
  }

  Type elementType = qType.getElementType();
  if (kType.getElementType() != elementType ||
      vType.getElementType() != elementType)
    return emitOpError() << "element types of query (" << elementType
                         << "), key (" << kType.getElementType()
                         << ") and value (" << vType.getElementType()
                         << ") must match";
  if (oType.getElementType() != elementType)
    return emitOpError() << "result element type (" << oType.getElementType()
                         << ") does not match the operand element type ("
                         << elementType << ")";

  // Head counts and head dimensions determine the kernel and must be static.
  int64_t hq = qType.getDimSize(1), hkv = kType.getDimSize(1);
  int64_t d = qType.getDimSize(3), dv = vType.getDimSize(3);
  if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) ||
      ShapedType::isDynamic(vType.getDimSize(1)))
    return emitOpError() << "head counts must be static, got query "
                         << shapeStr(qType.getShape()) << ", key "
                         << shapeStr(kType.getShape()) << ", value "
                         << shapeStr(vType.getShape());
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(kType.getDimSize(3)) ||
      ShapedType::isDynamic(dv))
    return emitOpError() << "head dimensions must be static, got query "
                         << shapeStr(qType.getShape()) << ", key "
                         << shapeStr(kType.getShape()) << ", value "
                         << shapeStr(vType.getShape());
  if (hq == 0 || hkv == 0 || d == 0 || dv == 0)
    return emitOpError() << "head counts and head dimensions must be "
                            "non-zero, got Hq = "
                         << hq << ", Hkv = " << hkv << ", D = " << d
                         << ", Dv = " << dv;

  if (failed(checkSameSize(*this, kType.getDimSize(0), "batch size of key",
                           qType.getDimSize(0), "batch size of query")) ||
      failed(checkSameSize(*this, vType.getDimSize(0), "batch size of value",
                           qType.getDimSize(0), "batch size of query")) ||
      failed(checkSameSize(*this, kType.getDimSize(3), "head dimension of key",
                           d, "head dimension of query")) ||
      failed(checkSameSize(*this, vType.getDimSize(1), "number of value heads",
                           hkv, "number of key heads")) ||
      failed(checkSameSize(*this, vType.getDimSize(2),
                           "sequence length of value", kType.getDimSize(2),
                           "sequence length of key")))
    return failure();
  if (hq % hkv != 0)
    return emitOpError() << "number of query heads (" << hq
                         << ") is not a multiple of the number of key/value "
                            "heads ("
                         << hkv << ")";

  // The output is [B, Hq, Nq, Dv].
  SmallVector<int64_t> expected = {qType.getDimSize(0), hq, qType.getDimSize(2),
                                   dv};
  for (int64_t i = 0; i < 4; ++i) {
    if (!compatible(oType.getDimSize(i), expected[i]))
      return emitOpError() << "result shape " << shapeStr(oType.getShape())
                           << " is inconsistent with the operands: expected "
                           << shapeStr(expected) << " ([B, Hq, Nq, Dv])";
  }
  if (Value lse = getLse()) {
    auto lseType = cast<RankedTensorType>(lse.getType());
    ArrayRef<int64_t> lseExpected = ArrayRef<int64_t>(expected).drop_back();
    bool ok = lseType.getRank() == 3 &&
              llvm::all_of(llvm::seq<int64_t>(0, 3), [&](int64_t i) {
                return compatible(lseType.getDimSize(i), lseExpected[i]);
              });
    if (!ok)
      return emitOpError() << "lse result shape "
                           << shapeStr(lseType.getShape())
                           << " is inconsistent with the operands: expected "
                           << shapeStr(lseExpected) << " ([B, Hq, Nq])";
  }
  return checkScale(*this, getScale(), /*requirePositive=*/true);
}

#define GET_OP_CLASSES
#include "flashc/Dialect/Flash/IR/FlashOps.cpp.inc"
