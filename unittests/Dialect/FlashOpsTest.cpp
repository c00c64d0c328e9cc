//===- FlashOpsTest.cpp - Unit tests of the flash operations --------------===//
//
// Builds flash operations through the C++ API and checks result-type
// inference, default attributes and the verifier's diagnostics.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::flash;

namespace {

class FlashOpsTest : public ::testing::Test {
protected:
  FlashOpsTest() : builder(&context) {
    context.loadDialect<FlashDialect, func::FuncDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  /// Creates a function whose arguments have the given types and leaves the
  /// builder inside its body; returns the arguments.
  ValueRange makeFunc(TypeRange argTypes) {
    auto func = func::FuncOp::create(builder, builder.getUnknownLoc(), "f",
                                     builder.getFunctionType(argTypes, {}));
    Block *body = func.addEntryBlock();
    builder.setInsertionPointToEnd(body);
    return body->getArguments();
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type elementType) {
    return RankedTensorType::get(shape, elementType);
  }

  /// Verifies `op` and returns the concatenated diagnostics (empty if valid).
  std::string verifyAndCollect(Operation *op) {
    std::string messages;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      messages += diag.str();
      return success();
    });
    (void)verify(op);
    return messages;
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

TEST_F(FlashOpsTest, AttentionBuilderInfersGqaResultTypes) {
  Type bf16 = builder.getBF16Type();
  int64_t dyn = ShapedType::kDynamic;
  ValueRange args =
      makeFunc({tensor({2, 32, dyn, 128}, bf16), tensor({2, 8, dyn, 128}, bf16),
                tensor({2, 8, dyn, 96}, bf16)});
  auto op = AttentionOp::create(builder, builder.getUnknownLoc(), args[0],
                                args[1], args[2], FloatAttr(),
                                ::flashc::Mask::causal(), /*withLse=*/true);
  EXPECT_EQ(op.getOut().getType(), tensor({2, 32, dyn, 96}, bf16));
  ASSERT_TRUE(op.getLse());
  EXPECT_EQ(op.getLse().getType(), tensor({2, 32, dyn}, builder.getF32Type()));
  EXPECT_TRUE(op.getMask().isCausal());
  EXPECT_EQ(op.getGroupSize(), 4);
  EXPECT_DOUBLE_EQ(op.getEffectiveScale(), 1.0 / std::sqrt(128.0));
  EXPECT_EQ(verifyAndCollect(op), "");
}

TEST_F(FlashOpsTest, AttentionExplicitScaleOverridesDefault) {
  Type f16 = builder.getF16Type();
  ValueRange args =
      makeFunc({tensor({1, 4, 16, 64}, f16), tensor({1, 4, 16, 64}, f16),
                tensor({1, 4, 16, 64}, f16)});
  auto op = AttentionOp::create(builder, builder.getUnknownLoc(), args[0],
                                args[1], args[2], builder.getF32FloatAttr(0.5f),
                                ::flashc::Mask::none(), /*withLse=*/false);
  EXPECT_FALSE(op.getLse());
  EXPECT_FALSE(op.getMask().isCausal());
  EXPECT_DOUBLE_EQ(op.getEffectiveScale(), 0.5);
}

TEST_F(FlashOpsTest, AttentionVerifierNamesMismatchedHeadDims) {
  Type f32 = builder.getF32Type();
  ValueRange args =
      makeFunc({tensor({1, 4, 16, 64}, f32), tensor({1, 4, 16, 128}, f32),
                tensor({1, 4, 16, 64}, f32)});
  auto op = AttentionOp::create(builder, builder.getUnknownLoc(), args[0],
                                args[1], args[2], FloatAttr(),
                                ::flashc::Mask::none(), false);
  std::string messages = verifyAndCollect(op);
  EXPECT_NE(messages.find("head dimension of key (128) does not match head "
                          "dimension of query (64)"),
            std::string::npos)
      << messages;
}

TEST_F(FlashOpsTest, AttentionVerifierRejectsNonPositiveScale) {
  Type f32 = builder.getF32Type();
  ValueRange args =
      makeFunc({tensor({1, 4, 16, 64}, f32), tensor({1, 4, 16, 64}, f32),
                tensor({1, 4, 16, 64}, f32)});
  for (float bad : {0.0f, -0.25f, INFINITY, NAN}) {
    auto op = AttentionOp::create(builder, builder.getUnknownLoc(), args[0],
                                  args[1], args[2],
                                  builder.getF32FloatAttr(bad),
                                  ::flashc::Mask::none(), false);
    std::string messages = verifyAndCollect(op);
    EXPECT_NE(messages.find("scale must be"), std::string::npos)
        << "scale " << bad << ": " << messages;
    op->erase();
  }
}

TEST_F(FlashOpsTest, SoftmaxDefaults) {
  Type f32 = builder.getF32Type();
  ValueRange args = makeFunc({tensor({2, 3, 5}, f32)});
  auto op =
      SoftmaxOp::create(builder, builder.getUnknownLoc(), args[0].getType(),
                        args[0], IntegerAttr(), FloatAttr(), MaskAttr());
  EXPECT_EQ(op.getReductionDim(), 2);
  EXPECT_DOUBLE_EQ(op.getEffectiveScale(), 1.0);
  EXPECT_EQ(verifyAndCollect(op), "");
}

} // namespace
