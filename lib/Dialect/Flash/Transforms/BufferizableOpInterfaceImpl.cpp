//===- BufferizableOpInterfaceImpl.cpp - Bufferization of flash ops -------===//
//
// The online-level flash ops are in destination-passing style: every input
// is read, the inits are read and written in place, and each tensor result
// is tied to its init. Bufferizing one replaces it with the same op on the
// buffers of its operands, returning nothing.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/Flash/Transforms/BufferizableOpInterfaceImpl.h"

#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace {

template <typename OpTy>
struct FlashDstOpInterface
    : public DstBufferizableOpInterfaceExternalModel<FlashDstOpInterface<OpTy>,
                                                     OpTy> {
  /// Replaces the op by the same op on the buffers of its operands, without
  /// results; the inits' buffers stand for the results.
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    SmallVector<Value> operands;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<TensorType>(operand.get().getType())) {
        operands.push_back(operand.get());
        continue;
      }
      FailureOr<Value> buffer =
          getBuffer(rewriter, operand.get(), options, state);
      if (failed(buffer))
        return failure();
      operands.push_back(*buffer);
    }
    auto dst = cast<DestinationStyleOpInterface>(op);
    SmallVector<Value> results;
    for (OpOperand &init : dst.getDpsInitsMutable())
      results.push_back(operands[init.getOperandNumber()]);
    rewriter.setInsertionPoint(op);
    Operation *bufferized =
        rewriter.create(op->getLoc(), op->getName().getIdentifier(), operands,
                        TypeRange{}, op->getAttrs());
    (void)bufferized;
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

} // namespace

void mlir::flash::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, FlashDialect *) {
    AttentionStepOp::attachInterface<FlashDstOpInterface<AttentionStepOp>>(
        *ctx);
    FinalizeOp::attachInterface<FlashDstOpInterface<FinalizeOp>>(*ctx);
    CombineOp::attachInterface<FlashDstOpInterface<CombineOp>>(*ctx);
  });
}
