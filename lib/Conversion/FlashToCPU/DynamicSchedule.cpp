//===- DynamicSchedule.cpp - Work items handed out as threads free up -----===//
//
// Implements `flash-cpu-dynamic-schedule`: every `omp.wsloop` gets
// `schedule(dynamic)`, so that the CPU kernels' work items (the tiles of
// the attention, the heads of the transposed K) go to whichever thread is
// free instead of being split into equal static ranges up front.
//
//===----------------------------------------------------------------------===//

#include "flashc/Conversion/Passes.h"

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flash-cpu-dynamic-schedule"
#define DBGS() (llvm::dbgs() << "[" DEBUG_TYPE "] ")

namespace mlir {
namespace flash {
#define GEN_PASS_DEF_FLASHCPUDYNAMICSCHEDULE
#include "flashc/Conversion/Passes.h.inc"
} // namespace flash
} // namespace mlir

using namespace mlir;

namespace {

struct FlashCPUDynamicSchedulePass
    : flash::impl::FlashCPUDynamicScheduleBase<FlashCPUDynamicSchedulePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    getOperation()->walk([&](omp::WsloopOp loop) {
      if (loop.getScheduleKind()) {
        LLVM_DEBUG(DBGS() << "wsloop at " << loop.getLoc()
                          << " keeps its schedule\n");
        return;
      }
      loop.setScheduleKindAttr(omp::ClauseScheduleKindAttr::get(
          ctx, omp::ClauseScheduleKind::Dynamic));
      ++numScheduled;
    });
  }
};

} // namespace
