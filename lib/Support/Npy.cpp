//===- Npy.cpp - NumPy .npy files without dependencies --------------------===//
//
// Parses the header dictionary {'descr': ..., 'fortran_order': ...,
// 'shape': (...)} and moves the payload in and out unchanged.
//
//===----------------------------------------------------------------------===//

#include "flashc/Support/Npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

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

namespace {

/// Parses NumPy's shape tuple `(d0, d1, ...)` exactly: integers separated by
/// commas (a trailing one allowed), nothing else, closed by ')'.
bool parseShape(const std::string &text, std::vector<int64_t> &shape,
                size_t &closeAt) {
  shape.clear();
  if (text.empty() || text[0] != '(')
    return false;
  size_t i = 1;
  auto skipSpaces = [&] {
    while (i < text.size() && text[i] == ' ')
      ++i;
  };
  while (true) {
    skipSpaces();
    if (i < text.size() && text[i] == ')') {
      closeAt = i;
      return true;
    }
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i])))
      return false;
    int64_t v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (__builtin_mul_overflow(v, 10, &v) ||
          __builtin_add_overflow(v, text[i] - '0', &v))
        return false;
      ++i;
    }
    if (i < text.size() && text[i] == 'L') // Python 2's long suffix
      ++i;
    shape.push_back(v);
    skipSpaces();
    if (i < text.size() && text[i] == ',') {
      ++i;
      continue;
    }
    if (i < text.size() && text[i] == ')') {
      closeAt = i;
      return true;
    }
    return false;
  }
}

} // namespace

bool flashc::readNpy(const std::string &path, NpyArray &array,
                     std::string &error,
                     const std::vector<int64_t> *expectedShape) {
  auto fail = [&](const std::string &msg) {
    error = path + ": " + msg;
    return false;
  };
  // A regular file only: a FIFO would block the open for ever, a device
  // such as /dev/zero never ends.
  {
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
      return fail("cannot open");
    struct stat st;
    bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    ::close(fd);
    if (!regular)
      return fail("not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("cannot open");
  // The fixed prefix, then the header: nothing is read beyond what the
  // header announces (a device such as /dev/zero never ends).
  char prefix[12];
  if (!in.read(prefix, 10) || std::memcmp(prefix, "\x93NUMPY", 6) != 0)
    return fail("not a .npy file");
  unsigned major = static_cast<uint8_t>(prefix[6]);
  size_t headerLen = 0;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(prefix[8]) |
                (static_cast<size_t>(static_cast<uint8_t>(prefix[9])) << 8);
  } else if (major == 2 || major == 3) {
    if (!in.read(prefix + 10, 2))
      return fail("truncated header");
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<uint8_t>(prefix[8 + i]))
                   << (8 * i);
    if (headerLen > (size_t(1) << 20))
      return fail("header of " + std::to_string(headerLen) +
                  " bytes is implausibly large");
  } else {
    return fail("unsupported .npy version " + std::to_string(major));
  }
  std::string header(headerLen, '\0');
  if (!in.read(&header[0], static_cast<std::streamsize>(headerLen)))
    return fail("truncated header");
  std::string descr = field(header, "descr");
  std::string order = field(header, "fortran_order");
  std::string shape = field(header, "shape");
  if (descr.size() < 2 || order.empty() || shape.empty())
    return fail("malformed header");
  if (order.compare(0, 5, "False") != 0)
    return fail("Fortran-ordered arrays are not supported");
  char quote = descr[0];
  size_t end = descr.find(quote, 1);
  if ((quote != '\'' && quote != '"') || end == std::string::npos)
    return fail("malformed descr");
  array.descr = descr.substr(1, end - 1);
  if (array.elementBytes() == 0 || array.descr[0] == '>')
    return fail("unsupported dtype '" + array.descr + "'");
  size_t close = 0;
  if (!parseShape(shape, array.shape, close))
    return fail("malformed shape " +
                shape.substr(0, std::min<size_t>(shape.find('}'), 64)));
  // Element counts of real files are far below 2^62; reject anything else.
  uint64_t elems = 1;
  for (int64_t d : array.shape) {
    if (d != 0 && elems > (uint64_t(1) << 62) / static_cast<uint64_t>(d))
      return fail("shape " + shapeString(array.shape) + " is too large");
    elems *= static_cast<uint64_t>(d);
  }
  if (expectedShape && array.shape != *expectedShape)
    return fail("has shape " + shapeString(array.shape) + ", expected " +
                shapeString(*expectedShape));
  uint64_t bytes = elems * array.elementBytes();
  if (bytes > (uint64_t(1) << 62) / 2)
    return fail("shape " + shapeString(array.shape) + " is too large");
  // Read in chunks: a file shorter than its header claims is an error, not
  // an allocation of the claimed size.
  array.data.clear();
  constexpr uint64_t kChunk = uint64_t(1) << 24;
  while (array.data.size() < bytes) {
    uint64_t want = std::min<uint64_t>(kChunk, bytes - array.data.size());
    size_t at = array.data.size();
    array.data.resize(at + want);
    in.read(reinterpret_cast<char *>(array.data.data() + at),
            static_cast<std::streamsize>(want));
    if (static_cast<uint64_t>(in.gcount()) != want)
      return fail("truncated data: " +
                  std::to_string(at + static_cast<uint64_t>(in.gcount())) +
                  " bytes for " + std::to_string(bytes));
  }
  if (in.peek() != std::char_traits<char>::eof())
    return fail("trailing bytes after the " + std::to_string(bytes) +
                " bytes of data");
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
    error = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(header.size() & 0xff),
                 static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(reinterpret_cast<const char *>(array.data.data()),
            static_cast<std::streamsize>(array.data.size()));
  // Closing flushes: a full disk (/dev/full) shows only here.
  out.close();
  if (!out) {
    error = path + ": write failed: " + std::strerror(errno);
    return false;
  }
  return true;
}
