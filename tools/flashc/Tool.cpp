//===- Tool.cpp - What the flashc command-line tools share ----------------===//

#include "Tool.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Config/llvm-config.h"

#include <cerrno>
#include <cstdio>
#include <system_error>

namespace {
const char *toolName = "flashc";
} // namespace

llvm::StringRef flashc::getToolName() { return toolName; }

void flashc::setToolName(const char *name) { toolName = name; }

bool flashc::wantsHelp(llvm::ArrayRef<const char *> args) {
  return llvm::any_of(args, [](const char *a) {
    return llvm::StringRef(a) == "--help" || llvm::StringRef(a) == "-h";
  });
}

void flashc::printVersion(llvm::raw_ostream &os) {
  os << toolName << " " << FLASHC_VERSION << " (LLVM " << LLVM_VERSION_STRING
     << ")\n";
}

int flashc::finishOutput(int status) {
  llvm::outs().flush();
  std::error_code error;
  if (llvm::outs().has_error()) {
    error = llvm::outs().error();
    llvm::outs().clear_error();
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    error = std::error_code(errno ? errno : EIO, std::generic_category());
  if (error && status == 0) {
    llvm::errs() << toolName
                 << ": error: cannot write the output: " << error.message()
                 << "\n";
    status = 1;
  }
  return status;
}
