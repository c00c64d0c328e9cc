//===- Bench.h - flashc-bench's measurements --------------------*- C++ -*-===//
//
// The benchmark of flashc's CPU kernel against standard 3-pass attention on
// OpenBLAS, measured in the same run.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TOOLS_FLASHC_BENCH_BENCH_H
#define FLASHC_TOOLS_FLASHC_BENCH_BENCH_H

#include "llvm/ADT/ArrayRef.h"

namespace flashc {

/// `flashc-bench`: runs every configuration in a child process (so that its
/// peak RSS is its own) and prints a table.
int benchCommand(llvm::ArrayRef<const char *> args, const char *argv0);

/// `flashc-bench one`: one measurement, printed as one JSON line.
int benchOneCommand(llvm::ArrayRef<const char *> args);

} // namespace flashc

#endif // FLASHC_TOOLS_FLASHC_BENCH_BENCH_H
