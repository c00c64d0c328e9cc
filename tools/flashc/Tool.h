//===- Tool.h - What the flashc command-line tools share --------*- C++ -*-===//
//
// The pieces every flashc command-line tool (flashc, flashc-bench) has in
// common, so that they behave alike: the program name their error lines
// start with, --help and --version, and the check that their output was
// written.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TOOLS_FLASHC_TOOL_H
#define FLASHC_TOOLS_FLASHC_TOOL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace flashc {

/// The name the tool's messages start with (`NAME: error: ...`): "flashc"
/// unless the tool set its own.
llvm::StringRef getToolName();

/// Sets the name `getToolName` returns; `name` must outlive the tool's run
/// (a string literal).
void setToolName(const char *name);

/// True when `args` ask for help: --help or -h anywhere.
bool wantsHelp(llvm::ArrayRef<const char *> args);

/// Prints `NAME VERSION (LLVM VERSION)`, the answer to --version.
void printVersion(llvm::raw_ostream &os);

/// The exit status of a tool whose command returned `status`: output that
/// could not be written (a full disk, a closed pipe) is a failure, reported
/// once as one error line, not LLVM's fatal error when stdout is destroyed,
/// and not exit 0 with the output lost.
int finishOutput(int status);

} // namespace flashc

#endif // FLASHC_TOOLS_FLASHC_TOOL_H
