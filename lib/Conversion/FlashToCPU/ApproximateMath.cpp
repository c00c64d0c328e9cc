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
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation()->emitError("flash-approximate-math did not converge");
      signalPassFailure();
    }
  }
};
} // namespace
