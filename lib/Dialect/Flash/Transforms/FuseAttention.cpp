//===- FuseAttention.cpp - Fuse naive attention into flash.attention ------===//
//
// Implements `flash-fuse-attention`: the graph-level chain
// matmul(Q, K^T) -> [elementwise scale] -> softmax -> matmul(., V) becomes
// one flash.attention. The pattern anchors on the final matmul and walks the
// use-def chain upwards; it fuses only when every intermediate is used by
// the chain alone, so no value the program still reads disappears.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#include <cmath>

#define DEBUG_TYPE "flash-fuse-attention"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHFUSEATTENTION
#include "flashc/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// Returns the value of `v` if it is a splat floating-point constant.
std::optional<double> getSplatFloat(Value v) {
  Attribute attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr)) {
    if (dense.isSplat())
      return dense.getSplatValue<APFloat>().convertToDouble();
    return std::nullopt;
  }
  if (auto scalar = dyn_cast<FloatAttr>(attr))
    return scalar.getValueAsDouble();
  return std::nullopt;
}

/// Peels an optional elementwise scale (`x * c`, `c * x` or `x / c` with a
/// splat constant `c`) off `scores`. On success returns the unscaled value
/// and multiplies `scale` by the factor; returns `scores` unchanged when it
/// is not produced by such an op. Returns null when a scale op is present
/// but cannot be folded (a non-constant factor, or another user).
Value peelScale(Value scores, double &scale) {
  Operation *def = scores.getDefiningOp();
  if (!def || !isa<arith::MulFOp, arith::DivFOp>(def))
    return scores;
  if (!scores.hasOneUse())
    return nullptr;
  Value lhs = def->getOperand(0), rhs = def->getOperand(1);
  if (isa<arith::DivFOp>(def)) {
    std::optional<double> c = getSplatFloat(rhs);
    if (!c || *c == 0.0)
      return nullptr;
    scale /= *c;
    return lhs;
  }
  if (std::optional<double> c = getSplatFloat(rhs)) {
    scale *= *c;
    return lhs;
  }
  if (std::optional<double> c = getSplatFloat(lhs)) {
    scale *= *c;
    return rhs;
  }
  return nullptr;
}

/// True if `t` is a rank-4 tensor of f32, f16 or bf16.
bool isAttentionOperand(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.getRank() == 4 &&
         isa<Float32Type, Float16Type, BFloat16Type>(tensor.getElementType());
}

/// Rewrites `matmul(softmax(scale(matmul(Q, K^T))), V)` into
/// `flash.attention(Q, K, V)`.
struct FuseAttentionPattern : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Leaves `pv` alone for the reason `why`.
  static LogicalResult reject(PatternRewriter &rewriter, MatmulOp pv,
                              const char *why) {
    LLVM_DEBUG(DBGS() << "not fused at " << pv.getLoc() << ": " << why << "\n");
    return rewriter.notifyMatchFailure(pv, why);
  }

  LogicalResult matchAndRewrite(MatmulOp pv,
                                PatternRewriter &rewriter) const override {
    if (pv.getTransposeB())
      return reject(rewriter, pv, "P.V reads V transposed");
    auto softmax = pv.getLhs().getDefiningOp<SoftmaxOp>();
    if (!softmax)
      return reject(rewriter, pv, "lhs is not a softmax");
    if (!softmax.getResult().hasOneUse())
      return reject(rewriter, pv, "probabilities have other users");
    int64_t rank = softmax.getInput().getType().getRank();
    if (softmax.getReductionDim() != rank - 1)
      return reject(rewriter, pv, "softmax is not on the last dim");

    double scale = softmax.getEffectiveScale();
    Value scores = peelScale(softmax.getInput(), scale);
    if (!scores)
      return reject(rewriter, pv, "scale is not a foldable splat");
    auto qk = scores.getDefiningOp<MatmulOp>();
    if (!qk)
      return reject(rewriter, pv, "scores are not a matmul");
    if (!qk.getResult().hasOneUse())
      return reject(rewriter, pv, "scores have other users");
    if (!qk.getTransposeB())
      return reject(rewriter, pv, "Q.K does not read K transposed");
    if (!std::isfinite(scale) || scale <= 0.0)
      return reject(rewriter, pv, "scale is not finite positive");

    Value q = qk.getLhs(), k = qk.getRhs(), v = pv.getRhs();
    Type resultType = pv.getResult().getType();
    if (!llvm::all_of(
            ValueRange{q, k, v},
            [](Value x) { return isAttentionOperand(x.getType()); }) ||
        !isAttentionOperand(resultType))
      return reject(rewriter, pv, "not rank-4 f32/f16/bf16");
    Type elementType = getElementTypeOrSelf(q.getType());
    if (getElementTypeOrSelf(v.getType()) != elementType ||
        getElementTypeOrSelf(resultType) != elementType)
      return reject(rewriter, pv, "element types differ");
    auto qType = cast<RankedTensorType>(q.getType());
    auto vType = cast<RankedTensorType>(v.getType());
    if (qType.isDynamicDim(1) || qType.isDynamicDim(3) ||
        vType.isDynamicDim(1) || vType.isDynamicDim(3))
      return reject(rewriter, pv, "dynamic head count or dim");

    LLVM_DEBUG(DBGS() << "fused at " << pv.getLoc() << ": scale " << scale
                      << ", mask " << softmax.getMask().str() << "\n");
    rewriter.replaceOpWithNewOp<AttentionOp>(
        pv, TypeRange{resultType}, q, k, v, /*scale_factor=*/Value(),
        rewriter.getF32FloatAttr(static_cast<float>(scale)),
        softmax.getMaskAttr());
    // The chain is now dead; erase it from the top so each op has no users
    // when it goes.
    Operation *scaleOp = softmax.getInput().getDefiningOp();
    rewriter.eraseOp(softmax);
    if (scaleOp != qk.getOperation())
      rewriter.eraseOp(scaleOp);
    rewriter.eraseOp(qk);
    return success();
  }
};

/// Counts the flash.attention ops the fusion pattern creates.
struct FusionCounter : RewriterBase::Listener {
  explicit FusionCounter(Pass::Statistic &fused) : fused(fused) {}
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (isa<AttentionOp>(op))
      ++fused;
  }
  Pass::Statistic &fused;
};

struct FlashFuseAttentionPass
    : flash::impl::FlashFuseAttentionBase<FlashFuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseAttentionPatterns(patterns);
    FusionCounter counter(numFused);
    GreedyRewriteConfig config;
    config.setListener(&counter);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config))) {
      getOperation()->emitError("flash-fuse-attention did not converge");
      return signalPassFailure();
    }
  }
};

} // namespace

void mlir::flash::populateFuseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAttentionPattern>(patterns.getContext());
}
