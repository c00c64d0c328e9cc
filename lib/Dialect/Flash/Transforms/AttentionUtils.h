//===- AttentionUtils.h - Helpers shared by the flash passes ----*- C++ -*-===//
//
// Small IR-building helpers shared by the flash passes. The attributes by
// which they recognise the loops that earlier passes created are declared
// on the dialect (FlashDialect::KvLoopAttrHelper, TileLoopAttrHelper).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_DIALECT_FLASH_TRANSFORMS_ATTENTIONUTILS_H
#define FLASHC_LIB_DIALECT_FLASH_TRANSFORMS_ATTENTIONUTILS_H

#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir {
namespace flash {

/// Size `i` of a ranked tensor or memref value as an OpFoldResult: an
/// attribute when static, a `tensor.dim`/`memref.dim` otherwise.
OpFoldResult getDim(OpBuilder &b, Location loc, Value shaped, int64_t i);

/// Materialises an OpFoldResult as an index value.
Value toValue(OpBuilder &b, Location loc, OpFoldResult ofr);

/// A tensor of `sizes` x `elementType` filled with `value`
/// (`linalg.fill` of a `tensor.empty`).
Value createFilled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   Type elementType, double value);

/// The type of a slice of `sizes` with the dimensions in `dropped` removed.
RankedTensorType slicedType(ArrayRef<OpFoldResult> sizes, Type elementType,
                            ArrayRef<int64_t> dropped);

/// `tensor.extract_slice` of `source` at `offsets` with `sizes` and unit
/// strides, dropping the (unit) dimensions listed in `dropped`.
Value extractSlice(OpBuilder &b, Location loc, Value source,
                   ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
                   ArrayRef<int64_t> dropped);

/// `min(a, b)` and `max(a, b)` of index values.
Value minIndex(OpBuilder &b, Location loc, Value a, Value c);
Value maxIndex(OpBuilder &b, Location loc, Value a, Value c);

} // namespace flash
} // namespace mlir

#endif // FLASHC_LIB_DIALECT_FLASH_TRANSFORMS_ATTENTIONUTILS_H
