//===- FlashTileDialect.cpp - The flash_tile dialect ----------------------===//
//
// Registers the flash_tile dialect's attributes, types and operations.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::flash_tile;

#include "flashc/Dialect/FlashTile/IR/FlashTileOpsDialect.cpp.inc"

namespace {
/// Short aliases for the layouts, which tile types repeat: `#mma`,
/// `#mma_a`, `#slice`, `#blocked`, `#swizzled` (numbered when several).
struct FlashTileAsmInterface : OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (isa<MmaLayoutAttr>(attr))
      os << "mma";
    else if (auto operand = dyn_cast<OperandLayoutAttr>(attr))
      os << (operand.getKind() == OperandKind::A ? "mma_a" : "mma_b");
    else if (isa<SliceLayoutAttr>(attr))
      os << "slice";
    else if (isa<BlockedLayoutAttr>(attr))
      os << "blocked";
    else if (isa<SwizzledLayoutAttr>(attr))
      os << "swizzled";
    else
      return AliasResult::NoAlias;
    return AliasResult::OverridableAlias;
  }
};
} // namespace

void FlashTileDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "flashc/Dialect/FlashTile/IR/FlashTileOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
  addInterfaces<FlashTileAsmInterface>();
}
