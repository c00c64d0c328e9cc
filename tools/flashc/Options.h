//===- Options.h - Command-line options of the flashc driver ----*- C++ -*-===//
//
// A small parser for `--name value`, `--name=value` and `--flag`, so that a
// bad flag or value gives one line naming it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TOOLS_FLASHC_OPTIONS_H
#define FLASHC_TOOLS_FLASHC_OPTIONS_H

#include "flashc/Compiler/JIT.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <set>
#include <string>

namespace flashc {

/// Prints `flashc: error: <message>` (the tool's name: `getToolName`) and
/// returns the exit code 1.
int reportError(llvm::Error error);

/// Parsed `--name[=value]` arguments.
class Options {
public:
  /// Parses `args`; `flags` take no value, `valued` take one. Anything else
  /// is an error.
  static llvm::Expected<Options> parse(llvm::ArrayRef<const char *> args,
                                       const std::set<std::string> &flags,
                                       const std::set<std::string> &valued);

  bool has(llvm::StringRef name) const { return values.count(name); }
  /// Sets `--name value` as if the command line had it (`flashc run` takes
  /// sizes from its input files this way).
  void set(llvm::StringRef name, llvm::StringRef value) {
    values[name] = value.str();
  }
  std::string str(llvm::StringRef name, llvm::StringRef dflt = "") const;
  llvm::Expected<int64_t> integer(llvm::StringRef name, int64_t dflt) const;
  llvm::Expected<double> real(llvm::StringRef name, double dflt) const;

private:
  llvm::StringMap<std::string> values;
};

/// The flags every subcommand that describes a problem accepts.
const std::set<std::string> &shapeFlags();
const std::set<std::string> &shapeValued();

/// Reads the problem (--batch ... --dtype ... --causal ...) and the pipeline
/// options (those of PipelineOptions.def the driver takes, --block-q ...
/// --num-threads) from `options`.
llvm::Error readSpec(const Options &options, mlir::flash::AttentionSpec &spec);
llvm::Error readConfig(const Options &options,
                       mlir::flash::PipelineConfig &config);

/// `--help` lines of the driver's pipeline options: those the CPU pipeline
/// (`cpu`) or the GPU pipeline (`gpu`) takes, with their values.
std::string describePipelineOptions(bool cpu, bool gpu);

} // namespace flashc

#endif // FLASHC_TOOLS_FLASHC_OPTIONS_H
