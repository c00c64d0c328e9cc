//===- FlashAttrs.cpp - flash dialect attributes --------------------------===//
//
// The attributes of the flash dialect: their syntax and verifiers.
//
//===----------------------------------------------------------------------===//

#include "flashc/Dialect/Flash/IR/FlashDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::flash;

#define GET_ATTRDEF_CLASSES
#include "flashc/Dialect/Flash/IR/FlashAttrs.cpp.inc"

void FlashDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "flashc/Dialect/Flash/IR/FlashAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// GridFactorAttr
//===----------------------------------------------------------------------===//

LogicalResult
GridFactorAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       ArrayAttr product, int64_t ceilDiv) {
  if (!product || product.empty())
    return emitError() << "a grid factor needs at least one operand";
  for (Attribute a : product) {
    if (auto name = dyn_cast<StringAttr>(a)) {
      StringRef text = name.getValue();
      bool identifier = !text.empty() && !llvm::isDigit(text[0]) &&
                        llvm::all_of(text, [](char c) {
                          return llvm::isAlnum(c) || c == '_';
                        });
      if (!identifier)
        return emitError() << "a grid factor names the size \"" << text
                           << "\"; expected an identifier";
      continue;
    }
    auto value = dyn_cast<IntegerAttr>(a);
    if (!value || !value.getType().isSignlessInteger(64))
      return emitError() << "a grid factor's operands are size names and "
                            "i64 integers, not "
                         << a;
    if (value.getInt() < 0)
      return emitError() << "a grid factor's integer " << value.getInt()
                         << " is negative";
  }
  if (ceilDiv < 1)
    return emitError() << "a grid factor divides by " << ceilDiv
                       << "; expected a positive integer";
  return success();
}

/// `<` (`ceildiv` `(` product `,` int `)` | product) `>`, where product is
/// `operand (* operand)*` and an operand an integer or a bare name.
Attribute GridFactorAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  Builder b(ctx);
  if (parser.parseLess())
    return {};
  bool ceil = succeeded(parser.parseOptionalKeyword("ceildiv"));
  if (ceil && parser.parseLParen())
    return {};
  SmallVector<Attribute> product;
  do {
    int64_t value = 0;
    OptionalParseResult integer = parser.parseOptionalInteger(value);
    if (integer.has_value()) {
      if (failed(*integer))
        return {};
      product.push_back(b.getI64IntegerAttr(value));
      continue;
    }
    StringRef name;
    if (parser.parseKeyword(&name))
      return {};
    product.push_back(b.getStringAttr(name));
  } while (succeeded(parser.parseOptionalStar()));
  int64_t ceilDiv = 1;
  if (ceil && (parser.parseComma() || parser.parseInteger(ceilDiv) ||
               parser.parseRParen()))
    return {};
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    ctx, b.getArrayAttr(product), ceilDiv);
}

void GridFactorAttr::print(AsmPrinter &printer) const {
  printer << "<";
  if (getCeilDiv() != 1)
    printer << "ceildiv(";
  llvm::interleave(
      getProduct(), printer,
      [&](Attribute a) {
        if (auto name = dyn_cast<StringAttr>(a))
          printer << name.getValue();
        else
          printer << cast<IntegerAttr>(a).getInt();
      },
      " * ");
  if (getCeilDiv() != 1)
    printer << ", " << getCeilDiv() << ")";
  printer << ">";
}

//===----------------------------------------------------------------------===//
// MaskAttr
//===----------------------------------------------------------------------===//

/// `<` kind `>`, the kind as flashc::Mask names it.
Attribute MaskAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseLess() || parser.parseKeyword(&name))
    return {};
  std::optional<::flashc::Mask> mask = ::flashc::Mask::parse(name);
  if (!mask) {
    parser.emitError(loc) << "unknown mask '" << name << "'; expected one of "
                          << ::flashc::getMaskKindNames();
    return {};
  }
  if (parser.parseGreater())
    return {};
  return MaskAttr::get(parser.getContext(), *mask);
}

void MaskAttr::print(AsmPrinter &printer) const {
  printer << "<" << getValue().str() << ">";
}
