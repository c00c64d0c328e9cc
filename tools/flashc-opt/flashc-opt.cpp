//===- flashc-opt.cpp - The flashc optimizer driver -----------------------===//
//
// An mlir-opt style driver with the flash dialect, the upstream dialects the
// later stages of flashc lower through, and every flash and upstream pass
// registered.
//
// It behaves like mlir-opt, with one addition: the input is first parsed on
// its own under crash recovery. MLIR 22's parser has a few inputs on which
// it crashes after reporting an error (docs/Robustness.md lists them);
// flashc-opt turns those into the diagnostics the parser printed plus one
// error line and exit status 1, rather than a dead process. A crash in a
// pass is still a crash, and `--mlir-pass-pipeline-crash-reproducer` works
// as it does in mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "flashc/InitFlashc.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

using namespace mlir;

/// Parses each chunk of `input` (split like the real run splits it) in a
/// scratch context with crash recovery on. Diagnostics are held back: the
/// real run reports them again. Returns failure, after printing what the
/// parser said and one error line, when the parser crashed.
static LogicalResult checkParserSurvives(const llvm::MemoryBuffer &input,
                                         DialectRegistry &registry,
                                         const MlirOptMainConfig &config) {
  llvm::CrashRecoveryContext::Enable();
  std::string heldBack;
  bool crashed = false;
  auto parseChunk = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                        raw_ostream &) -> LogicalResult {
    // Leaked on purpose when the parser crashes: its state is unknown.
    auto *context = new MLIRContext(registry,
                                    MLIRContext::Threading::DISABLED);
    context->allowUnregisteredDialects(config.shouldAllowUnregisteredDialects());
    auto sourceMgr = std::make_shared<llvm::SourceMgr>();
    sourceMgr->AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
    std::string text;
    bool survived;
    {
      llvm::raw_string_ostream os(text);
      SourceMgrDiagnosticHandler handler(*sourceMgr, context, os);
      llvm::CrashRecoveryContext crc;
      survived = crc.RunSafely([&] {
        OwningOpRef<ModuleOp> module =
            parseSourceFile<ModuleOp>(*sourceMgr, ParserConfig(context));
      });
    }
    if (survived) {
      delete context;
      return success();
    }
    crashed = true;
    heldBack += text;
    return failure();
  };
  std::unique_ptr<llvm::MemoryBuffer> copy =
      llvm::MemoryBuffer::getMemBufferCopy(input.getBuffer(),
                                           input.getBufferIdentifier());
  (void)splitAndProcessBuffer(std::move(copy), parseChunk, llvm::nulls(),
                              config.inputSplitMarker(), "");
  if (!crashed)
    return success();
  llvm::errs() << heldBack
               << "flashc-opt: error: MLIR's parser crashed on this input"
               << (heldBack.empty() ? "" : " after the diagnostics above")
               << " (a defect in upstream MLIR 22); the input is rejected\n";
  return failure();
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::flash::registerFlashcPasses();

  DialectRegistry registry;
  mlir::flash::registerFlashcDialects(registry);
  // flash-gpu-pipeline serialises gpu.modules to PTX.
  mlir::flash::registerFlashcTranslations(registry);

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "flashc optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(llvm::outs(), llvm::MemoryBuffer::getMemBuffer(""),
                    registry, config));

  if (inputFilename == "-" &&
      llvm::sys::Process::FileDescriptorIsDisplayed(fileno(stdin)))
    llvm::errs() << "(processing input from stdin now, hit ctrl-c/ctrl-d to "
                    "interrupt)\n";
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &errorMessage);
  if (!file) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  if (failed(checkParserSurvives(*file, registry, config)))
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(file), registry, config)))
    return 1;
  output->keep();
  return 0;
}
