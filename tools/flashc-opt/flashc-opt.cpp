//===- flashc-opt.cpp - The flashc optimizer driver -----------------------===//
//
// An mlir-opt style driver with the flash dialect, the upstream dialects the
// later stages of flashc lower through, and every flash and upstream pass
// registered.
//
//===----------------------------------------------------------------------===//

#include "flashc/InitFlashc.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::flash::registerFlashcPasses();

  mlir::DialectRegistry registry;
  mlir::flash::registerFlashcDialects(registry);
  // flash-gpu-pipeline serialises gpu.modules to PTX.
  mlir::flash::registerFlashcTranslations(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "flashc optimizer driver\n", registry));
}
