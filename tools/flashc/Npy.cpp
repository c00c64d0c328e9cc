//===- Npy.cpp - Reading and writing .npy files ---------------------------===//
//
// Parses the version 1/2/3 header ({'descr': ..., 'fortran_order': ...,
// 'shape': (...)}) and moves the raw data in and out of a HostTensor.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir::flash;

namespace {

llvm::Error fail(llvm::StringRef path, const llvm::Twine &msg) {
  return llvm::createStringError((path + ": " + msg).str());
}

/// Returns the value text of `key` in the header dictionary.
std::optional<llvm::StringRef> field(llvm::StringRef header,
                                     llvm::StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  llvm::StringRef rest = header.drop_front(at + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  return rest.ltrim();
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

} // namespace

llvm::Error flashc::readNpy(llvm::StringRef path, HostTensor &tensor) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return fail(path, "cannot read: " + buffer.getError().message());
  llvm::StringRef data = (*buffer)->getBuffer();
  if (!data.starts_with("\x93NUMPY") || data.size() < 10)
    return fail(path, "not a .npy file");
  uint8_t major = static_cast<uint8_t>(data[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(data[8]) |
                (static_cast<size_t>(static_cast<uint8_t>(data[9])) << 8);
    offset = 10;
  } else {
    if (data.size() < 12)
      return fail(path, "truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<uint8_t>(data[8 + i]))
                   << (8 * i);
    offset = 12;
  }
  if (offset + headerLen > data.size())
    return fail(path, "truncated header");
  llvm::StringRef header = data.substr(offset, headerLen);
  llvm::StringRef payload = data.drop_front(offset + headerLen);

  std::optional<llvm::StringRef> descr = field(header, "descr");
  std::optional<llvm::StringRef> order = field(header, "fortran_order");
  std::optional<llvm::StringRef> shapeText = field(header, "shape");
  if (!descr || !order || !shapeText)
    return fail(path, "malformed header");
  if (!order->starts_with("False"))
    return fail(path, "Fortran-ordered arrays are not supported");
  int64_t width;
  if (descr->starts_with("'<f4'"))
    width = 4;
  else if (descr->starts_with("'<f2'"))
    width = 2;
  else
    return fail(path, "unsupported dtype " + descr->take_until([](char c) {
      return c == ',';
    }) + "; expected '<f4' or '<f2'");

  llvm::StringRef dims =
      shapeText->drop_front().take_until([](char c) { return c == ')'; });
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<llvm::StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef part : parts) {
    int64_t value;
    if (part.trim().getAsInteger(10, value))
      return fail(path, "malformed shape " + *shapeText);
    shape.push_back(value);
  }
  if (llvm::ArrayRef<int64_t>(shape) != llvm::ArrayRef(tensor.getSizes()))
    return fail(path, "has shape " + shapeString(shape) + ", expected " +
                          shapeString(tensor.getSizes()));
  if (payload.size() < static_cast<size_t>(tensor.getNumElements() * width))
    return fail(path, "truncated data");
  for (int64_t i = 0; i < tensor.getNumElements(); ++i) {
    if (width == 4) {
      float f;
      std::memcpy(&f, payload.data() + 4 * i, 4);
      tensor.set(i, f);
    } else {
      uint16_t bits;
      std::memcpy(&bits, payload.data() + 2 * i, 2);
      tensor.set(i, halfToFloat(bits));
    }
  }
  return llvm::Error::success();
}

llvm::Error flashc::writeNpy(llvm::StringRef path, const HostTensor &tensor) {
  bool half = tensor.getDType() == DType::F16;
  std::string header =
      llvm::formatv("{{'descr': '{0}', 'fortran_order': False, 'shape': {1}, }",
                    half ? "<f2" : "<f4", shapeString(tensor.getSizes()))
          .str();
  // Pad so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return fail(path, "cannot write: " + ec.message());
  os << "\x93NUMPY" << '\x01' << '\x00';
  os << static_cast<char>(header.size() & 0xff)
     << static_cast<char>(header.size() >> 8) << header;
  for (int64_t i = 0; i < tensor.getNumElements(); ++i) {
    if (half) {
      uint16_t bits = floatToHalf(static_cast<float>(tensor.get(i)));
      os.write(reinterpret_cast<const char *>(&bits), 2);
    } else {
      float f = static_cast<float>(tensor.get(i));
      os.write(reinterpret_cast<const char *>(&f), 4);
    }
  }
  return llvm::Error::success();
}
