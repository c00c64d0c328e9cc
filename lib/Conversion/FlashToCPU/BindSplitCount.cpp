//===- BindSplitCount.cpp - The split count as a function argument --------===//
//
// Implements `flash-cpu-bind-split-count`: every `flash.split_count` of a
// function becomes the function's index argument marked
// `{flash.split_count}`, which the CPU runtime fills in at each call.
//
//===----------------------------------------------------------------------===//

#include "flashc/Conversion/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-cpu-bind-split-count"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHCPUBINDSPLITCOUNT
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// The argument attribute that marks the split count: `flash.split_count`.
constexpr llvm::StringLiteral kSplitCountAttr =
    FlashDialect::SplitCountAttrHelper::getNameStr();

struct FlashCPUBindSplitCountPass
    : flash::impl::FlashCPUBindSplitCountBase<FlashCPUBindSplitCountPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<SplitCountOp> uses;
    func.walk([&](SplitCountOp op) { uses.push_back(op); });
    if (uses.empty())
      return;
    if (func.isExternal())
      return;
    BlockArgument bound;
    for (BlockArgument arg : func.getArguments()) {
      if (!func.getArgAttr(arg.getArgNumber(), kSplitCountAttr))
        continue;
      if (bound) {
        func.emitOpError() << "has more than one argument marked "
                           << kSplitCountAttr << " (" << bound.getArgNumber()
                           << " and " << arg.getArgNumber() << ")";
        return signalPassFailure();
      }
      if (!arg.getType().isIndex()) {
        func.emitOpError() << "argument " << arg.getArgNumber() << " marked "
                           << kSplitCountAttr << " must be an index, got "
                           << arg.getType();
        return signalPassFailure();
      }
      bound = arg;
    }
    if (!bound) {
      uses.front().emitOpError()
          << "needs an index argument of its function marked "
          << kSplitCountAttr << " to bind to (the count is chosen by the "
          << "caller on the CPU)";
      return signalPassFailure();
    }
    LLVM_DEBUG(DBGS() << "@" << func.getSymName() << ": " << uses.size()
                      << " flash.split_count bound to argument "
                      << bound.getArgNumber() << "\n");
    for (SplitCountOp op : uses) {
      op.getResult().replaceAllUsesWith(bound);
      op.erase();
      ++numBound;
    }
  }
};

} // namespace
