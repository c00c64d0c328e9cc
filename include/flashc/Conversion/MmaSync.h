//===- MmaSync.h - mma.sync for the GPU lowerings ---------------*- C++ -*-===//
//
// What flash-tile-to-nvgpu needs to emit mma.sync m16n8k16:
// nvgpu.mma.sync takes f16 operands only, so bf16 goes to nvvm.mma.sync
// with its operands packed two to an i32.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CONVERSION_MMASYNC_H
#define FLASHC_CONVERSION_MMASYNC_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>

namespace mlir {
namespace flash {

/// `c + a * b` by one mma.sync m16n8k16: `a` is vector<4x2xT>, `b`
/// vector<2x2xT> (T f16 or bf16), `c` and the result vector<2x2xf32>.
inline Value createMmaSync16816(OpBuilder &b, Location loc, Value a,
                                Value bFrag, Value c) {
  if (cast<VectorType>(a.getType()).getElementType().isF16())
    return nvgpu::MmaSyncOp::create(b, loc, a, bFrag, c,
                                    ArrayRef<int64_t>{16, 8, 16});
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  auto extract = [&](Value v, ArrayRef<int64_t> pos) -> Value {
    return vector::ExtractOp::create(b, loc, v, pos);
  };
  SmallVector<Value> av, bv, cv;
  for (int64_t i = 0; i < 4; ++i)
    av.push_back(LLVM::BitcastOp::create(b, loc, i32, extract(a, {i})));
  for (int64_t i = 0; i < 2; ++i)
    bv.push_back(LLVM::BitcastOp::create(b, loc, i32, extract(bFrag, {i})));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      cv.push_back(extract(c, {i, j}));
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                     {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      b, loc, resultType, av, bv, cv, ArrayRef<int64_t>{16, 8, 16},
      /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                    NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> elems;
  for (int64_t i = 0; i < 4; ++i)
    elems.push_back(
        LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{i}));
  return vector::FromElementsOp::create(b, loc, VectorType::get({2, 2}, f32),
                                        elems);
}

} // namespace flash
} // namespace mlir

#endif // FLASHC_CONVERSION_MMASYNC_H
