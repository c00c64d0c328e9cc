//===- FlashTileTypes.cpp - flash_tile types ------------------------------===//
//
// Parses, prints and verifies the register tile and the shared-memory
// buffer types.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/FlashTile/IR/FlashTileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::flash_tile;

#define GET_TYPEDEF_CLASSES
#include "flashc/Dialect/FlashTile/IR/FlashTileOpsTypes.cpp.inc"

void FlashTileDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "flashc/Dialect/FlashTile/IR/FlashTileOpsTypes.cpp.inc"
      >();
}

/// Parses `<` dims `x` element-type (`,` attribute)? `>`; without the
/// attribute, `layout` is null.
static ParseResult parseShapedBody(AsmParser &parser,
                                   SmallVectorImpl<int64_t> &shape,
                                   Type &elementType, Attribute &layout) {
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return failure();
  if (succeeded(parser.parseOptionalComma()) && parser.parseAttribute(layout))
    return failure();
  return parser.parseGreater();
}

static void printShapedBody(AsmPrinter &printer, ArrayRef<int64_t> shape,
                            Type elementType, Attribute layout) {
  printer << "<";
  for (int64_t d : shape)
    printer << d << "x";
  printer << elementType;
  if (layout)
    printer << ", " << layout;
  printer << ">";
}

/// The most elements a tile or a buffer holds: a CTA's registers hold 2^18
/// 32-bit values and its shared memory 227 KB, so no real one comes near,
/// and sizes computed from the extents stay far from overflowing.
static constexpr int64_t kMaxElements = int64_t(1) << 24;

/// Checks the extents and the element type shared by both types.
static LogicalResult
verifyShapeAndElement(function_ref<InFlightDiagnostic()> emitError,
                      StringRef what, ArrayRef<int64_t> shape,
                      Type elementType) {
  if (llvm::any_of(shape, [](int64_t d) { return d < 1; }))
    return emitError() << what << "'s extents are positive";
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d > kMaxElements || elements * d > kMaxElements)
      return emitError() << what << " holds at most " << kMaxElements
                         << " elements";
    elements *= d;
  }
  if (!elementType.isIntOrFloat() || elementType.getIntOrFloatBitWidth() % 8)
    return emitError() << what << "'s elements are integers or floats of "
                          "whole bytes, not "
                       << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// TileType
//===----------------------------------------------------------------------===//

Type TileType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  Attribute layout;
  if (parseShapedBody(parser, shape, elementType, layout))
    return {};
  return parser.getChecked<TileType>(parser.getContext(), shape, elementType,
                                     layout);
}

void TileType::print(AsmPrinter &printer) const {
  printShapedBody(printer, getShape(), getElementType(), getLayout());
}

LogicalResult TileType::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape, Type elementType,
                               Attribute layout) {
  if (shape.empty() || shape.size() > 3)
    return emitError() << "a flash_tile tile is 1-D or 2-D, or a batch of "
                          "them (3-D at most), not "
                       << shape.size() << "-D";
  if (failed(verifyShapeAndElement(emitError, "a tile", shape, elementType)))
    return failure();
  // A tile without a layout is one flash-tile-assign-layouts has still to
  // place.
  if (!layout)
    return success();
  auto interface = dyn_cast<LayoutAttrInterface>(layout);
  if (!interface)
    return emitError() << "a tile's layout is a flash_tile register layout "
                          "(mma, operand, slice or blocked), not "
                       << layout;
  return interface.verifyShape(emitError, shape);
}

ShapedType TileType::cloneWith(std::optional<ArrayRef<int64_t>> shape,
                               Type elementType) const {
  return TileType::get(getContext(), shape ? *shape : getShape(),
                       elementType ? elementType : getElementType(),
                       getLayout());
}

//===----------------------------------------------------------------------===//
// SharedType
//===----------------------------------------------------------------------===//

Type SharedType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  Attribute layout;
  SMLoc loc = parser.getCurrentLocation();
  if (parseShapedBody(parser, shape, elementType, layout))
    return {};
  // Without a layout, flash-tile-allocate-shared places the rows.
  auto swizzled = dyn_cast_if_present<SwizzledLayoutAttr>(layout);
  if (layout && !swizzled) {
    parser.emitError(loc) << "a shared buffer's layout is a "
                             "#flash_tile.swizzled, not "
                          << layout;
    return {};
  }
  return parser.getChecked<SharedType>(parser.getContext(), shape,
                                       elementType, swizzled);
}

void SharedType::print(AsmPrinter &printer) const {
  printShapedBody(printer, getShape(), getElementType(), getLayout());
}

LogicalResult SharedType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> shape, Type elementType,
                                 SwizzledLayoutAttr layout) {
  if (shape.size() != 3)
    return emitError() << "a shared buffer is stages x rows x columns, not "
                       << shape.size() << "-D";
  if (failed(verifyShapeAndElement(emitError, "a shared buffer", shape,
                                   elementType)))
    return failure();
  if (!layout)
    return success();
  int64_t vector = layout.getVector();
  int64_t chunkBits = vector * elementType.getIntOrFloatBitWidth();
  if (chunkBits != 32 && chunkBits != 64 && chunkBits != 128)
    return emitError() << "a shared buffer's chunk of " << vector << " x "
                       << elementType << " is " << chunkBits / 8
                       << " bytes; a chunk is 4, 8 or 16 bytes";
  if (shape[2] % vector != 0)
    return emitError() << "a shared buffer's " << shape[2]
                       << " columns are not a whole number of chunks of "
                       << vector;
  if (layout.getPanel() && shape[2] % layout.getPanel() != 0)
    return emitError() << "a shared buffer's " << shape[2]
                       << " columns are not a whole number of panels of "
                       << layout.getPanel();
  // chunk XOR (row mod phases) stays within the row only when the phases
  // divide its chunks.
  if ((shape[2] / vector) % layout.getPhases() != 0)
    return emitError() << "a swizzle of " << layout.getPhases()
                       << " phases needs rows of a multiple of as many "
                          "chunks; a row has "
                       << shape[2] / vector;
  return success();
}

ShapedType SharedType::cloneWith(std::optional<ArrayRef<int64_t>> shape,
                                 Type elementType) const {
  return SharedType::get(getContext(), shape ? *shape : getShape(),
                         elementType ? elementType : getElementType(),
                         getLayout());
}

int64_t SharedType::getSizeInBytes() const {
  return getElementType().getIntOrFloatBitWidth() / 8 * getStages() *
         getRows() * getRowElements();
}
