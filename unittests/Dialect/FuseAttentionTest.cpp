//===- FuseAttentionTest.cpp - Table-driven tests of attention fusion -----===//
//
// Runs `flash-fuse-attention` on small graphs through the C++ pass API and
// checks whether the chain was fused, and with which scale and mask.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include <ostream>
#include <string>

using namespace mlir;
using namespace mlir::flash;

namespace {

struct FusionCase {
  const char *name;
  /// The ops between the function arguments %q, %k, %v (tensor<1x2x8x16xf32>)
  /// and `return %o`.
  const char *body;
  bool fuses;
  double expectedScale;
  bool expectedCausal;
  /// The type of %k; Q . K^T needs [B, H, Nk, D], Q . K needs [B, H, D, Nk].
  const char *keyType = "tensor<1x2x8x16xf32>";
};

/// Names the case in test output instead of dumping its bytes.
void PrintTo(const FusionCase &c, std::ostream *os) { *os << c.name; }

std::string wrap(const FusionCase &c) {
  return std::string("func.func @f(%q: tensor<1x2x8x16xf32>, %k: ") +
         c.keyType + ", %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {\n" +
         c.body + "\n  return %o : tensor<1x2x8x16xf32>\n}\n";
}

#define QK                                                                     \
  "%s = flash.matmul %q, %k transpose_b : tensor<1x2x8x16xf32>, "              \
  "tensor<1x2x8x16xf32> -> tensor<1x2x8x8xf32>\n"
#define PV                                                                     \
  "%o = flash.matmul %p, %v : tensor<1x2x8x8xf32>, "                           \
  "tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>\n"
#define CST(x) "%c = arith.constant dense<" x "> : tensor<1x2x8x8xf32>\n"
#define SOFTMAX(in, attrs)                                                     \
  "%p = flash.softmax " in " " attrs                                           \
  " : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>\n"

const FusionCase kCases[] = {
    {"Plain", QK SOFTMAX("%s", "") PV, true, 1.0, false},
    {"SoftmaxScaleCausal", QK SOFTMAX("%s", "scale = 2.500000e-01 causal") PV,
     true, 0.25, true},
    {"MulByConstant",
     QK CST("0.5") "%t = arith.mulf %s, %c : tensor<1x2x8x8xf32>\n" SOFTMAX(
         "%t", "") PV,
     true, 0.5, false},
    {"ConstantTimesScores",
     QK CST("0.5") "%t = arith.mulf %c, %s : tensor<1x2x8x8xf32>\n" SOFTMAX(
         "%t", "scale = 5.000000e-01") PV,
     true, 0.25, false},
    {"DivByConstant",
     QK CST("4.0") "%t = arith.divf %s, %c : tensor<1x2x8x8xf32>\n" SOFTMAX(
         "%t", "") PV,
     true, 0.25, false},
    {"NegativeScale", QK SOFTMAX("%s", "scale = -1.000000e+00") PV, false, 0,
     false},
    {"ConstantDividedByScores",
     QK CST("4.0") "%t = arith.divf %c, %s : tensor<1x2x8x8xf32>\n" SOFTMAX(
         "%t", "") PV,
     false, 0, false},
    {"SoftmaxOnDim2", QK SOFTMAX("%s", "dim = 2") PV, false, 0, false},
    {"KNotTransposed",
     "%s = flash.matmul %q, %k : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>"
     " -> tensor<1x2x8x8xf32>\n" SOFTMAX("%s", "") PV,
     false, 0, false, "tensor<1x2x16x8xf32>"},
};

class FuseAttentionTest : public ::testing::TestWithParam<FusionCase> {};

TEST_P(FuseAttentionTest, FusesOnlyWhatItShould) {
  const FusionCase &c = GetParam();
  MLIRContext context;
  context.loadDialect<FlashDialect, arith::ArithDialect, func::FuncDialect>();
  std::string source = wrap(c);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module) << source;

  PassManager pm(&context);
  pm.addPass(createFlashFuseAttention());
  ASSERT_TRUE(succeeded(pm.run(*module)));

  SmallVector<AttentionOp> fused;
  module->walk([&](AttentionOp op) { fused.push_back(op); });
  int64_t leftMatmuls = 0;
  module->walk([&](MatmulOp) { ++leftMatmuls; });
  if (!c.fuses) {
    EXPECT_TRUE(fused.empty());
    EXPECT_EQ(leftMatmuls, 2);
    return;
  }
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(leftMatmuls, 0);
  EXPECT_DOUBLE_EQ(fused[0].getEffectiveScale(), c.expectedScale);
  EXPECT_EQ(fused[0].getMask().isCausal(), c.expectedCausal);
  // Nothing of the chain is left behind.
  int64_t others = 0;
  module->walk([&](Operation *op) {
    if (isa<SoftmaxOp, arith::ConstantOp, arith::MulFOp, arith::DivFOp>(op))
      ++others;
  });
  EXPECT_EQ(others, 0);
}

INSTANTIATE_TEST_SUITE_P(Graphs, FuseAttentionTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<FusionCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
