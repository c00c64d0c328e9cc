//===- Npy.cpp - NumPy .npy files without dependencies --------------------===//
//
// Parses the header dictionary {'descr': ..., 'fortran_order': ...,
// 'shape': (...)} and moves the payload in and out unchanged.
//
//===----------------------------------------------------------------------===//

#include "flashc/Support/Npy.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

using namespace flashc;

size_t NpyArray::elementBytes() const {
  if (descr.size() < 3)
    return 0;
  char kind = descr[1];
  if (!std::strchr("fiubV", kind))
    return 0;
  return static_cast<size_t>(std::atoi(descr.c_str() + 2));
}

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string flashc::npyDescrOf(const std::string &dtype) {
  static const std::pair<const char *, const char *> table[] = {
      {"f32", "<f4"}, {"f16", "<f2"}, {"bf16", "<u2"}, {"f64", "<f8"},
      {"s8", "|i1"},  {"s16", "<i2"}, {"s32", "<i4"},  {"s64", "<i8"},
      {"u8", "|u1"},  {"u16", "<u2"}, {"u32", "<u4"},  {"u64", "<u8"}};
  for (auto &[name, descr] : table)
    if (dtype == name)
      return descr;
  return "";
}

namespace {

/// The text after `'key':` in the header, or empty.
std::string field(const std::string &header, const std::string &key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return "";
  size_t colon = header.find(':', at + key.size() + 2);
  if (colon == std::string::npos)
    return "";
  size_t start = header.find_first_not_of(' ', colon + 1);
  return start == std::string::npos ? "" : header.substr(start);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

} // namespace

bool flashc::readNpy(const std::string &path, NpyArray &array,
                     std::string &error) {
  auto fail = [&](const std::string &msg) {
    error = path + ": " + msg;
    return false;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("cannot open");
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0)
    return fail("not a .npy file");
  unsigned major = static_cast<uint8_t>(data[6]);
  size_t headerLen = 0, offset = 0;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(data[8]) |
                (static_cast<size_t>(static_cast<uint8_t>(data[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12)
      return fail("truncated header");
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<uint8_t>(data[8 + i]))
                   << (8 * i);
    offset = 12;
  } else {
    return fail("unsupported .npy version " + std::to_string(major));
  }
  if (offset + headerLen > data.size())
    return fail("truncated header");
  std::string header = data.substr(offset, headerLen);
  std::string descr = field(header, "descr");
  std::string order = field(header, "fortran_order");
  std::string shape = field(header, "shape");
  if (descr.size() < 2 || order.empty() || shape.empty() || shape[0] != '(')
    return fail("malformed header");
  if (order.compare(0, 5, "False") != 0)
    return fail("Fortran-ordered arrays are not supported");
  char quote = descr[0];
  size_t end = descr.find(quote, 1);
  if (end == std::string::npos)
    return fail("malformed descr");
  array.descr = descr.substr(1, end - 1);
  if (array.elementBytes() == 0 || array.descr[0] == '>')
    return fail("unsupported dtype '" + array.descr + "'");
  array.shape.clear();
  size_t close = shape.find(')');
  if (close == std::string::npos)
    return fail("malformed shape");
  std::stringstream dims(shape.substr(1, close - 1));
  std::string part;
  while (std::getline(dims, part, ',')) {
    size_t first = part.find_first_not_of(' ');
    if (first == std::string::npos)
      continue;
    char *stop = nullptr;
    long long v = std::strtoll(part.c_str() + first, &stop, 10);
    if (v < 0 || (*stop && *stop != ' ' && *stop != 'L'))
      return fail("malformed shape " + shape.substr(0, close + 1));
    array.shape.push_back(v);
  }
  // Element counts of real files are far below 2^62; reject anything else.
  uint64_t elems = 1;
  for (int64_t d : array.shape) {
    if (d != 0 && elems > (uint64_t(1) << 62) / static_cast<uint64_t>(d))
      return fail("shape " + shapeString(array.shape) + " is too large");
    elems *= static_cast<uint64_t>(d);
  }
  uint64_t bytes = elems * array.elementBytes();
  size_t payload = data.size() - offset - headerLen;
  if (payload < bytes)
    return fail("truncated data: " + std::to_string(payload) + " bytes for " +
                std::to_string(bytes));
  array.data.assign(data.begin() + static_cast<long>(offset + headerLen),
                    data.begin() + static_cast<long>(offset + headerLen + bytes));
  return true;
}

bool flashc::writeNpy(const std::string &path, const NpyArray &array,
                      std::string &error) {
  std::string header = "{'descr': '" + array.descr +
                       "', 'fortran_order': False, 'shape': " +
                       shapeString(array.shape) + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = path + ": cannot write";
    return false;
  }
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(header.size() & 0xff),
                 static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(reinterpret_cast<const char *>(array.data.data()),
            static_cast<std::streamsize>(array.data.size()));
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}
