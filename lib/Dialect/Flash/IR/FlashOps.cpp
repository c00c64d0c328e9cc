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

/// Refuses a `causal` attribute: the mask is `mask` (#flash.mask), and a
/// stray unit attribute would be ignored, computing an unmasked softmax.
static LogicalResult checkNoCausalAttr(Operation *op) {
  if (op->hasAttr("causal"))
    return op->emitOpError()
           << "has a 'causal' attribute; the mask is written by name after "
              "the operands (`causal`), or as mask = #flash.mask<causal>";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  if (failed(checkNoCausalAttr(*this)))
    return failure();
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
  if (getMask().isCausal()) {
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
                        Value key, Value value, FloatAttr scale, ::flashc::Mask mask,
                        bool withLse, Value scaleFactor) {
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
  build(builder, state, resultTypes, query, key, value, scaleFactor, scale,
        MaskAttr::get(builder.getContext(), mask));
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
  if (failed(checkNoCausalAttr(*this)))
    return failure();
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

//===----------------------------------------------------------------------===//
// Online-level ops: shared helpers
//===----------------------------------------------------------------------===//

namespace {

/// Checks that the shaped operands of `op` are all tensors or all memrefs.
LogicalResult checkUniformBufferKind(Operation *op) {
  bool anyTensor = false, anyMemRef = false;
  for (Type t : op->getOperandTypes()) {
    anyTensor |= isa<RankedTensorType>(t);
    anyMemRef |= isa<MemRefType>(t);
  }
  if (anyTensor && anyMemRef)
    return op->emitOpError()
           << "operands must be all tensors or all memrefs, not a mix";
  return success();
}

/// Emits an error unless `type` has rank `rank`; `what` names the operand and
/// `layout` its expected layout.
LogicalResult checkRank(Operation *op, ShapedType type, int64_t rank,
                        StringRef what, StringRef layout) {
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << what << " must have rank " << rank << " "
                           << layout << ", got rank " << type.getRank();
}

/// Emits an error unless dimension `dimA` of `a` is compatible with `dimB`
/// of `b`.
LogicalResult checkDim(Operation *op, ShapedType a, int64_t dimA,
                       StringRef whatA, ShapedType b, int64_t dimB,
                       StringRef whatB) {
  std::string lhs = (whatA + " dimension " + Twine(dimA)).str();
  std::string rhs = (whatB + " dimension " + Twine(dimB)).str();
  return checkSameSize(op, a.getDimSize(dimA), lhs, b.getDimSize(dimB), rhs);
}

/// Memory effects of a destination-style op on memrefs: inputs are read,
/// inits are read and written. On tensors the op has no effects.
void getDpsEffects(
    DestinationStyleOpInterface op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
    if (op.isDpsInit(&operand))
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// AttentionStepOp
//===----------------------------------------------------------------------===//

MutableOperandRange AttentionStepOp::getDpsInitsMutable() {
  // acc, max and sum: operand groups 4 to 6, one operand each.
  unsigned start = getODSOperandIndexAndLength(4).first;
  return MutableOperandRange(getOperation(), start, 3);
}

void AttentionStepOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getDpsEffects(*this, effects);
}

LogicalResult AttentionStepOp::verify() {
  if (failed(checkUniformBufferKind(*this)))
    return failure();
  auto q = cast<ShapedType>(getQuery().getType());
  auto k = cast<ShapedType>(getKey().getType());
  auto v = cast<ShapedType>(getValue().getType());
  auto acc = cast<ShapedType>(getAcc().getType());
  auto m = cast<ShapedType>(getMax().getType());
  auto l = cast<ShapedType>(getSum().getType());
  if (q.getRank() < 3)
    return emitOpError() << "query must have rank >= 3 ([..., G, Br, D]), got "
                         << "rank " << q.getRank();
  int64_t nb = q.getRank() - 3;
  if (failed(checkRank(*this, k, nb + 2, "key", "([..., Bc, D])")) ||
      failed(checkRank(*this, v, nb + 2, "value", "([..., Bc, Dv])")) ||
      failed(checkRank(*this, acc, nb + 3, "acc", "([..., G, Br, Dv])")) ||
      failed(checkRank(*this, m, nb + 2, "max", "([..., G, Br])")) ||
      failed(checkRank(*this, l, nb + 2, "sum", "([..., G, Br])")))
    return failure();
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return emitOpError() << "element types of query (" << q.getElementType()
                         << "), key (" << k.getElementType() << ") and value ("
                         << v.getElementType() << ") must match";
  for (int64_t i = 0; i < nb; ++i) {
    for (auto [type, name] : {std::pair<ShapedType, StringRef>{k, "key"},
                              {v, "value"},
                              {acc, "acc"},
                              {m, "max"},
                              {l, "sum"}}) {
      if (failed(checkDim(*this, type, i, name, q, i, "query")))
        return failure();
    }
  }
  // K is [..., Bc, D], or [..., D, Bc] when transposed.
  int64_t kRowDim = getKeyTransposed() ? nb + 1 : nb;
  int64_t kHeadDim = getKeyTransposed() ? nb : nb + 1;
  if (failed(checkDim(*this, k, kHeadDim, "key", q, nb + 2, "query")) ||
      failed(checkDim(*this, v, nb, "value", k, kRowDim, "key")) ||
      failed(checkDim(*this, acc, nb, "acc", q, nb, "query")) ||
      failed(checkDim(*this, acc, nb + 1, "acc", q, nb + 1, "query")) ||
      failed(checkDim(*this, acc, nb + 2, "acc", v, nb + 1, "value")))
    return failure();
  for (auto [type, name] :
       {std::pair<ShapedType, StringRef>{m, "max"}, {l, "sum"}}) {
    if (failed(checkDim(*this, type, nb, name, q, nb, "query")) ||
        failed(checkDim(*this, type, nb + 1, name, q, nb + 1, "query")))
      return failure();
  }
  return checkScale(*this, getScale(), /*requirePositive=*/true);
}

//===----------------------------------------------------------------------===//
// FinalizeOp
//===----------------------------------------------------------------------===//

MutableOperandRange FinalizeOp::getDpsInitsMutable() {
  return getLse() ? MutableOperandRange(getOperation(), 3, 2)
                  : MutableOperandRange(getOperation(), 3, 1);
}

void FinalizeOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getDpsEffects(*this, effects);
}

/// Checks that `rows` has the shape of `full` without its last dimension.
static LogicalResult checkRowShape(Operation *op, ShapedType rows,
                                   StringRef rowsName, ShapedType full,
                                   StringRef fullName) {
  if (rows.getRank() != full.getRank() - 1)
    return op->emitOpError()
           << rowsName << " must have rank " << full.getRank() - 1
           << " (the rank of " << fullName << " without its last dimension), "
           << "got rank " << rows.getRank();
  for (int64_t i = 0; i < rows.getRank(); ++i)
    if (failed(checkDim(op, rows, i, rowsName, full, i, fullName)))
      return failure();
  return success();
}

LogicalResult FinalizeOp::verify() {
  if (failed(checkUniformBufferKind(*this)))
    return failure();
  auto acc = cast<ShapedType>(getAcc().getType());
  auto out = cast<ShapedType>(getOut().getType());
  if (acc.getRank() < 1)
    return emitOpError() << "acc must have rank >= 1, got rank 0";
  if (out.getRank() != acc.getRank())
    return emitOpError() << "out rank (" << out.getRank()
                         << ") does not match acc rank (" << acc.getRank()
                         << ")";
  for (int64_t i = 0; i < acc.getRank(); ++i)
    if (failed(checkDim(*this, out, i, "out", acc, i, "acc")))
      return failure();
  if (failed(checkRowShape(*this, cast<ShapedType>(getMax().getType()), "max",
                           acc, "acc")) ||
      failed(checkRowShape(*this, cast<ShapedType>(getSum().getType()), "sum",
                           acc, "acc")))
    return failure();
  if (Value lse = getLse())
    return checkRowShape(*this, cast<ShapedType>(lse.getType()), "lse", acc,
                         "acc");
  return success();
}

//===----------------------------------------------------------------------===//
// CombineOp
//===----------------------------------------------------------------------===//

MutableOperandRange CombineOp::getDpsInitsMutable() {
  return getLse() ? MutableOperandRange(getOperation(), 2, 2)
                  : MutableOperandRange(getOperation(), 2, 1);
}

void CombineOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getDpsEffects(*this, effects);
}

LogicalResult CombineOp::verify() {
  if (failed(checkUniformBufferKind(*this)))
    return failure();
  auto parts = cast<ShapedType>(getParts().getType());
  auto partLse = cast<ShapedType>(getPartLse().getType());
  auto out = cast<ShapedType>(getOut().getType());
  if (parts.getRank() < 2)
    return emitOpError() << "parts must have rank >= 2 ([S, ..., Dv]), got "
                         << "rank " << parts.getRank();
  if (failed(checkRowShape(*this, partLse, "part_lse", parts, "parts")))
    return failure();
  if (out.getRank() != parts.getRank() - 1)
    return emitOpError() << "out must have rank " << parts.getRank() - 1
                         << " (parts without the split dimension), got rank "
                         << out.getRank();
  for (int64_t i = 0; i < out.getRank(); ++i)
    if (failed(checkDim(*this, out, i, "out", parts, i + 1, "parts")))
      return failure();
  if (Value lse = getLse())
    return checkRowShape(*this, cast<ShapedType>(lse.getType()), "lse", out,
                         "out");
  return success();
}

AttentionStepOp mlir::flash::getKVLoopStep(Operation *loop) {
  if (loop->getNumRegions() == 0 || loop->getRegion(0).empty())
    return nullptr;
  AttentionStepOp step;
  for (Operation &op : loop->getRegion(0).front()) {
    if (auto s = dyn_cast<AttentionStepOp>(op)) {
      if (step)
        return nullptr;
      step = s;
    }
  }
  return step;
}

//===----------------------------------------------------------------------===//
// The mask in the ops' syntax
//===----------------------------------------------------------------------===//

/// An optional mask name after the operands (`causal`); `none` is the
/// default and is not printed.
static ParseResult parseMask(OpAsmParser &parser, MaskAttr &mask) {
  for (::flashc::MaskKind kind : ::flashc::kMaskKinds) {
    ::flashc::Mask m{kind};
    if (succeeded(parser.parseOptionalKeyword(m.str()))) {
      mask = MaskAttr::get(parser.getContext(), m);
      return success();
    }
  }
  return success();
}

static void printMask(OpAsmPrinter &printer, Operation *, MaskAttr mask) {
  if (mask && !mask.getValue().isNone())
    printer << mask.getValue().str();
}

#define GET_OP_CLASSES
#include "flashc/Dialect/Flash/IR/FlashOps.cpp.inc"
