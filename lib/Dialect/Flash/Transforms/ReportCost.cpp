//===- ReportCost.cpp - Print the cost model of each flash.attention ------===//
//
// Implements `flash-report-cost`, an analysis pass: for every
// flash.attention it builds the problem's AttentionProblem, resolves the
// target and the schedule options, and prints the CostModel report (text or
// JSON) to stdout. Each report is headed by the op's index, in walk order
// within the operation the pass runs on, and its enclosing function (in
// JSON, the extra keys `index` and `function`).
// The IR is left untouched.
//
//===----------------------------------------------------------------------===//

#include "flashc/Analysis/CostModel.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Flash/Transforms/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "flash-report-cost"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHREPORTCOST
#include "flashc/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;
using namespace mlir::flash;

namespace {

/// Reads the sizes of `op` into an AttentionProblem; reports a dynamic size on
/// `op` and fails (the verifier guarantees the element type).
FailureOr<AttentionProblem> getAttentionShape(AttentionOp op) {
  llvm::Expected<AttentionProblem> shape =
      getStaticAttentionProblem(op.getQuery().getType(), op.getKey().getType(),
                              op.getValue().getType(), op.getMask());
  if (!shape)
    return op.emitError() << "flash-report-cost needs static sizes: "
                          << llvm::toString(shape.takeError());
  return *shape;
}

struct FlashReportCostPass
    : flash::impl::FlashReportCostBase<FlashReportCostPass> {
  using Base::Base;

  void runOnOperation() override;
};

void FlashReportCostPass::runOnOperation() {
  Operation *root = getOperation();
  markAllAnalysesPreserved();

  llvm::Expected<TargetInfo> targetInfo = TargetInfo::get(target);
  if (!targetInfo) {
    root->emitError() << "flash-report-cost: "
                      << llvm::toString(targetInfo.takeError());
    return signalPassFailure();
  }
  if (sramBytes < 0) {
    root->emitError() << "flash-report-cost: sram-bytes must be positive (or "
                         "0 for the target's), got "
                      << static_cast<int64_t>(sramBytes);
    return signalPassFailure();
  }
  if (sramBytes > 0)
    targetInfo->sramBytes = sramBytes;
  std::optional<LoopOrder> order = parseLoopOrder(loopOrder);
  if (!order) {
    root->emitError() << "flash-report-cost: unknown loop order '" << loopOrder
                      << "'; expected fa2 or algorithm1";
    return signalPassFailure();
  }

  CostOptions options;
  options.order = *order;
  options.blockQ = blockQ;
  options.blockKV = blockKV;
  options.splits = splits;

  // The reports go to stdout in one write, so that instances of the pass
  // running on several functions in parallel do not interleave their lines.
  std::string buffer;
  llvm::raw_string_ostream os(buffer);
  bool anyFailed = false;
  int64_t index = 0;
  root->walk([&](AttentionOp op) {
    int64_t opIndex = index++;
    FailureOr<AttentionProblem> shape = getAttentionShape(op);
    if (failed(shape)) {
      anyFailed = true;
      return;
    }
    llvm::Expected<CostReport> report =
        computeCostReport(*targetInfo, *shape, options);
    if (!report) {
      op.emitError() << "flash-report-cost: "
                     << llvm::toString(report.takeError());
      anyFailed = true;
      return;
    }

    std::string function;
    if (auto func = op->getParentOfType<FunctionOpInterface>())
      function = func.getName().str();
    LLVM_DEBUG(DBGS() << "attention #" << opIndex << " at " << op.getLoc()
                      << ": B=" << shape->batch << " Hq=" << shape->heads
                      << " Hkv=" << shape->kvHeads << " Nq=" << shape->seqQ
                      << " Nk=" << shape->seqKV << " D=" << shape->headDim
                      << " on " << targetInfo->name << "\n");
    ++numReported;
    if (json) {
      llvm::json::Object object = costReportToJSON(*report);
      object["function"] = function;
      object["index"] = opIndex;
      os << llvm::formatv("{0:2}\n", llvm::json::Value(std::move(object)));
      return;
    }
    os << "flash.attention #" << opIndex;
    if (!function.empty())
      os << " in @" << function;
    os << ":\n";
    printCostReport(*report, os);
  });
  llvm::outs() << os.str();
  llvm::outs().flush();
  if (anyFailed)
    signalPassFailure();
}

} // namespace
