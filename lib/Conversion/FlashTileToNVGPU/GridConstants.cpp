//===- GridConstants.cpp - Tensor maps as __grid_constant__ parameters ----===//
//
// Implements `flash-llvm-grid-constants`: the tensor map arguments of a
// lowered kernel (flash.grid_constants) become 128-byte by-value
// parameters read in place, as TMA copies need them.
//
//===----------------------------------------------------------------------===//

#include "flashc/Conversion/Passes.h"

#include "flashc/Dialect/Flash/IR/FlashDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHLLVMGRIDCONSTANTS
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;

namespace {

/// The bytes of a CUtensorMap, and the alignment it is passed with.
constexpr int64_t kTensorMapBytes = 128;
constexpr int64_t kTensorMapAlignment = 64;

struct GridConstantsPass
    : flash::impl::FlashLLVMGridConstantsBase<GridConstantsPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    flash::FlashDialect::GridConstantsAttrHelper gridConstants(ctx);
    Builder b(ctx);
    auto bytes =
        LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), kTensorMapBytes);
    WalkResult result = getOperation()->walk([&](LLVM::LLVMFuncOp fn) {
      DenseI64ArrayAttr positions = gridConstants.getAttr(fn);
      if (!positions)
        return WalkResult::advance();
      for (int64_t i : positions.asArrayRef()) {
        if (i < 0 || i >= static_cast<int64_t>(fn.getNumArguments()) ||
            !isa<LLVM::LLVMPointerType>(fn.getArgument(i).getType())) {
          fn.emitOpError() << "has flash.grid_constants position " << i
                           << ", which is not one of its pointer arguments";
          return WalkResult::interrupt();
        }
        fn.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(bytes));
        fn.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                      b.getI64IntegerAttr(kTensorMapAlignment));
        fn.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                      b.getUnitAttr());
        ++numParameters;
      }
      gridConstants.removeAttr(fn);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
