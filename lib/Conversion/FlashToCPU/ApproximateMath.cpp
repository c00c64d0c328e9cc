//===- ApproximateMath.cpp - Polynomial exp/log for the CPU ---------------===//
//
// Implements `flash-approximate-math` on top of MLIR's polynomial
// approximation patterns.
//
//===----------------------------------------------------------------------===//

#include "flashc/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-approximate-math"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHAPPROXIMATEMATH
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;

namespace {
struct FlashApproximateMathPass
    : flash::impl::FlashApproximateMathBase<FlashApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // The predicate sees operation names ("math.exp").
    auto wanted = [](StringRef name) {
      name.consume_front("math.");
      return name == "exp" || name == "log" || name == "exp2";
    };
    populateMathF32ExpansionPatterns(patterns, wanted);
    populateMathPolynomialApproximationPatterns(patterns, wanted);
    // The exponentials and logarithms a polynomial did not replace.
    auto remaining = [&]() {
      int64_t count = 0;
      getOperation()->walk([&](Operation *op) {
        if (op->getDialect() && op->getDialect()->getNamespace() == "math" &&
            wanted(op->getName().getStringRef()))
          ++count;
      });
      return count;
    };
    (void)remaining;
    LLVM_DEBUG(DBGS() << remaining() << " math.exp, exp2 and log ops\n");
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation()->emitError("flash-approximate-math did not converge");
      return signalPassFailure();
    }
    LLVM_DEBUG(DBGS() << remaining() << " left after the approximations\n");
  }
};
} // namespace
