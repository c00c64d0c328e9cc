//===- FlashDialect.cpp - The flash dialect -------------------------------===//
//
// Registers the operations and attributes of the flash dialect, and
// verifies its discardable attributes where they are used.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::flash;

#include "flashc/Dialect/Flash/IR/FlashOpsDialect.cpp.inc"

void FlashDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "flashc/Dialect/Flash/IR/FlashOps.cpp.inc"
      >();
  registerAttributes();
}

/// `flash.grid`: a non-empty array of grid factors; on a function whose
/// arguments carry `flash.param`s (a kernel before its lowering to LLVM
/// rewrites them), every size a factor names is the `flash.param` name of
/// an integer argument, so that the runtime knows the value it multiplies.
static LogicalResult verifyGrid(Operation *op, Attribute attr) {
  auto grid = dyn_cast<ArrayAttr>(attr);
  if (!grid || grid.empty() ||
      !llvm::all_of(grid, llvm::IsaPred<GridFactorAttr>))
    return op->emitOpError() << "'flash.grid' must be a non-empty array of "
                                "#flash.grid_factor, not "
                             << attr;
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return success();
  StringAttr paramName = FlashDialect::ParamAttrHelper(op->getContext())
                             .getName();
  bool hasParams = false;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    hasParams |= static_cast<bool>(fn.getArgAttr(i, paramName));
  if (!hasParams)
    return success();
  auto isIntegerParam = [&](StringRef name) {
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      auto param = fn.getArgAttrOfType<DictionaryAttr>(i, paramName);
      auto n = param ? param.getAs<StringAttr>("name") : StringAttr();
      if (n && n.getValue() == name)
        return fn.getArgumentTypes()[i].isSignlessInteger();
    }
    return false;
  };
  for (Attribute a : grid)
    for (Attribute operand : cast<GridFactorAttr>(a).getProduct())
      if (auto name = dyn_cast<StringAttr>(operand))
        if (!isIntegerParam(name.getValue()))
          return op->emitOpError()
                 << "'flash.grid' names the size '" << name.getValue()
                 << "', which no integer argument's flash.param names";
  return success();
}

LogicalResult FlashDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() == GridAttrHelper(op->getContext()).getName())
    return verifyGrid(op, attr.getValue());
  if (attr.getName() == MaxRegistersAttrHelper(op->getContext()).getName()) {
    auto registers = dyn_cast<IntegerAttr>(attr.getValue());
    if (!registers || registers.getValue().getSignificantBits() > 64 ||
        registers.getValue().getSExtValue() < 16 ||
        registers.getValue().getSExtValue() > 255)
      return op->emitOpError()
             << "'flash.max_registers' is " << attr.getValue()
             << "; a thread's registers are an integer from 16 to 255";
  }
  return success();
}
