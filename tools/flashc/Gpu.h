//===- Gpu.h - GPU pieces of the flashc driver ------------------*- C++ -*-===//
//
// Running a compiled GPU kernel on a CUDA device or in the PTX simulator
// (host buffers copied in and out, timed), and the `bundle` subcommand that
// compiles a grid of kernel variants into a runtime bundle.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TOOLS_FLASHC_GPU_H
#define FLASHC_TOOLS_FLASHC_GPU_H

#include "flashc/Compiler/Reference.h"
#include "flashc/Runtime/Runtime.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <vector>

namespace flashc {

/// The seconds of each timed run, and where it ran.
struct GPURunTimes {
  std::vector<double> seconds;
  std::string device;
  int64_t splits = 1;
  /// The simulator's counters over the first run (none on a CUDA device).
  std::optional<flashc::runtime::SimulatorCounters> counters;
};

/// Runs a GPU `kernel` once for its result (left in `out` and `lse`) and
/// then `iters` more times for timing (at least once). On a CUDA device the
/// host tensors are copied in and out; the simulator reads them in place.
llvm::Expected<GPURunTimes> runGPUKernel(const mlir::flash::Kernel &kernel,
                                         mlir::flash::HostTensor &q,
                                         mlir::flash::HostTensor &k,
                                         mlir::flash::HostTensor &v,
                                         mlir::flash::HostTensor &out,
                                         mlir::flash::HostTensor *lse,
                                         bool simulate, int64_t iters);

/// `flashc bundle`.
int bundleCommand(llvm::ArrayRef<const char *> args);

} // namespace flashc

#endif // FLASHC_TOOLS_FLASHC_GPU_H
