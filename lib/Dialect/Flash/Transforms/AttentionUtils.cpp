//===- AttentionUtils.cpp - Helpers shared by the flash passes ------------===//
//
// Implements the IR-building helpers of AttentionUtils.h.
//
//===----------------------------------------------------------------------===//

#include "AttentionUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::flash;

OpFoldResult mlir::flash::getDim(OpBuilder &b, Location loc, Value shaped,
                                 int64_t i) {
  auto type = cast<ShapedType>(shaped.getType());
  if (!type.isDynamicDim(i))
    return b.getIndexAttr(type.getDimSize(i));
  if (isa<MemRefType>(type))
    return memref::DimOp::create(b, loc, shaped, i).getResult();
  return tensor::DimOp::create(b, loc, shaped, i).getResult();
}

Value mlir::flash::toValue(OpBuilder &b, Location loc, OpFoldResult ofr) {
  return getValueOrCreateConstantIndexOp(b, loc, ofr);
}

Value mlir::flash::createFilled(OpBuilder &b, Location loc,
                                ArrayRef<OpFoldResult> sizes, Type elementType,
                                double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, elementType);
  Value cst = arith::ConstantOp::create(b, loc, elementType,
                                        b.getFloatAttr(elementType, value));
  return linalg::FillOp::create(b, loc, cst, empty).getResult(0);
}

RankedTensorType mlir::flash::slicedType(ArrayRef<OpFoldResult> sizes,
                                         Type elementType,
                                         ArrayRef<int64_t> dropped) {
  SmallVector<int64_t> shape;
  for (auto [i, size] : llvm::enumerate(sizes)) {
    if (llvm::is_contained(dropped, static_cast<int64_t>(i)))
      continue;
    std::optional<int64_t> cst = getConstantIntValue(size);
    shape.push_back(cst ? *cst : ShapedType::kDynamic);
  }
  return RankedTensorType::get(shape, elementType);
}

Value mlir::flash::extractSlice(OpBuilder &b, Location loc, Value source,
                                ArrayRef<OpFoldResult> offsets,
                                ArrayRef<OpFoldResult> sizes,
                                ArrayRef<int64_t> dropped) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  RankedTensorType type =
      slicedType(sizes, sourceType.getElementType(), dropped);
  return tensor::ExtractSliceOp::create(b, loc, type, source, offsets, sizes,
                                        strides);
}

Value mlir::flash::minIndex(OpBuilder &b, Location loc, Value a, Value c) {
  return arith::MinSIOp::create(b, loc, a, c);
}

Value mlir::flash::maxIndex(OpBuilder &b, Location loc, Value a, Value c) {
  return arith::MaxSIOp::create(b, loc, a, c);
}
