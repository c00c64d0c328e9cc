//===- Json.cpp - A small JSON value, parser and printer ------------------===//
//
// A recursive-descent parser with positions in its error messages, and a
// printer that escapes control characters and prints integral numbers
// without a fraction.
//
//===----------------------------------------------------------------------===//

#include "flashc/Support/Json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace flashc;

const JsonValue *JsonValue::get(const std::string &key) const {
  if (kind != Kind::Object)
    return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &it->second;
}

static void printString(std::string &out, const std::string &s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  out += '"';
}

void JsonValue::printTo(std::string &out, int indent, int level) const {
  auto newline = [&](int l) {
    if (indent) {
      out += '\n';
      out.append(static_cast<size_t>(indent * l), ' ');
    }
  };
  switch (kind) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Bool:
    out += boolean ? "true" : "false";
    return;
  case Kind::Number: {
    char buf[32];
    if (std::isfinite(number) && number == std::floor(number) &&
        std::fabs(number) < 9.007199254740992e15)
      std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(number));
    else
      std::snprintf(buf, sizeof(buf), "%.17g", number);
    out += buf;
    return;
  }
  case Kind::String:
    printString(out, string);
    return;
  case Kind::Array: {
    out += '[';
    for (size_t i = 0; i < array->size(); ++i) {
      if (i)
        out += indent ? "," : ", ";
      newline(level + 1);
      (*array)[i].printTo(out, indent, level + 1);
    }
    if (!array->empty())
      newline(level);
    out += ']';
    return;
  }
  case Kind::Object: {
    out += '{';
    bool first = true;
    for (const auto &[key, value] : *object) {
      if (!first)
        out += indent ? "," : ", ";
      first = false;
      newline(level + 1);
      printString(out, key);
      out += ": ";
      value.printTo(out, indent, level + 1);
    }
    if (!object->empty())
      newline(level);
    out += '}';
    return;
  }
  }
}

std::string JsonValue::print() const {
  std::string out;
  printTo(out, 0, 0);
  return out;
}

std::string JsonValue::printPretty() const {
  std::string out;
  printTo(out, 2, 0);
  out += '\n';
  return out;
}

namespace {

class Parser {
public:
  explicit Parser(const std::string &text) : s(text) {}

  Result<JsonValue> parseDocument() {
    Result<JsonValue> v = value(0);
    if (!v)
      return v;
    skipSpace();
    if (pos != s.size())
      return fail("trailing characters");
    return v;
  }

private:
  const std::string &s;
  size_t pos = 0;

  Status fail(const std::string &what) {
    return Status::make(ErrorCode::Parse,
                        "JSON: " + what + " at offset " + std::to_string(pos));
  }
  void skipSpace() {
    while (pos < s.size() &&
           (s[pos] == ' ' || s[pos] == '\n' || s[pos] == '\t' || s[pos] == '\r'))
      ++pos;
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (s.compare(pos, n, word) == 0) {
      pos += n;
      return true;
    }
    return false;
  }

  Result<std::string> str() {
    if (pos >= s.size() || s[pos] != '"')
      return fail("expected a string");
    ++pos;
    std::string out;
    while (pos < s.size() && s[pos] != '"') {
      char c = s[pos++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= s.size())
        return fail("unterminated escape");
      char e = s[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        if (pos + 4 > s.size())
          return fail("bad \\u escape");
        unsigned code = static_cast<unsigned>(
            std::strtoul(s.substr(pos, 4).c_str(), nullptr, 16));
        pos += 4;
        // Only the ASCII range is needed here; encode the rest as UTF-8.
        if (code < 0x80) {
          out += static_cast<char>(code);
        } else if (code < 0x800) {
          out += static_cast<char>(0xc0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3f));
        } else {
          out += static_cast<char>(0xe0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
          out += static_cast<char>(0x80 | (code & 0x3f));
        }
        break;
      }
      default:
        return fail("bad escape");
      }
    }
    if (pos >= s.size())
      return fail("unterminated string");
    ++pos;
    return out;
  }

  Result<JsonValue> value(int depth) {
    if (depth > 64)
      return fail("nesting too deep");
    skipSpace();
    if (pos >= s.size())
      return fail("unexpected end of input");
    char c = s[pos];
    if (c == '{') {
      ++pos;
      JsonValue::Object obj;
      skipSpace();
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return JsonValue(std::move(obj));
      }
      while (true) {
        skipSpace();
        Result<std::string> key = str();
        if (!key)
          return key.status();
        skipSpace();
        if (pos >= s.size() || s[pos] != ':')
          return fail("expected ':'");
        ++pos;
        Result<JsonValue> v = value(depth + 1);
        if (!v)
          return v;
        obj[*key] = std::move(*v);
        skipSpace();
        if (pos < s.size() && s[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < s.size() && s[pos] == '}') {
          ++pos;
          return JsonValue(std::move(obj));
        }
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++pos;
      JsonValue::Array arr;
      skipSpace();
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return JsonValue(std::move(arr));
      }
      while (true) {
        Result<JsonValue> v = value(depth + 1);
        if (!v)
          return v;
        arr.push_back(std::move(*v));
        skipSpace();
        if (pos < s.size() && s[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < s.size() && s[pos] == ']') {
          ++pos;
          return JsonValue(std::move(arr));
        }
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      Result<std::string> v = str();
      if (!v)
        return v.status();
      return JsonValue(std::move(*v));
    }
    if (literal("true"))
      return JsonValue(true);
    if (literal("false"))
      return JsonValue(false);
    if (literal("null"))
      return JsonValue();
    const char *start = s.c_str() + pos;
    char *end = nullptr;
    double d = std::strtod(start, &end);
    if (end == start)
      return fail("unexpected character");
    pos += static_cast<size_t>(end - start);
    return JsonValue(d);
  }
};

} // namespace

Result<JsonValue> JsonValue::parse(const std::string &text) {
  return Parser(text).parseDocument();
}
