//===- FlashDialect.cpp - The flash dialect -------------------------------===//
//
// Registers the operations of the flash dialect.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

using namespace mlir;
using namespace mlir::flash;

#include "flashc/Dialect/Flash/IR/FlashOpsDialect.cpp.inc"

void FlashDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "flashc/Dialect/Flash/IR/FlashOps.cpp.inc"
      >();
}
