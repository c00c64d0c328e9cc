//===- Json.h - A small JSON value, parser and printer ----------*- C++ -*-===//
//
// Enough JSON for the bundle manifests the runtime reads without LLVM:
// null, booleans, numbers (kept as doubles, with integers exact up to 2^53),
// strings, arrays and objects. Objects keep their keys sorted, so printing
// is deterministic.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SUPPORT_JSON_H
#define FLASHC_SUPPORT_JSON_H

#include "flashc/Support/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace flashc {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<JsonValue>;
  using Object = std::map<std::string, JsonValue>;

  JsonValue() = default;
  JsonValue(bool b) : kind(Kind::Bool), boolean(b) {}
  JsonValue(double d) : kind(Kind::Number), number(d) {}
  JsonValue(int64_t i) : kind(Kind::Number), number(static_cast<double>(i)) {}
  JsonValue(int i) : kind(Kind::Number), number(i) {}
  JsonValue(std::string s) : kind(Kind::String), string(std::move(s)) {}
  JsonValue(const char *s) : kind(Kind::String), string(s) {}
  JsonValue(Array a)
      : kind(Kind::Array), array(std::make_shared<Array>(std::move(a))) {}
  JsonValue(Object o)
      : kind(Kind::Object), object(std::make_shared<Object>(std::move(o))) {}

  Kind getKind() const { return kind; }
  bool isNull() const { return kind == Kind::Null; }
  bool isObject() const { return kind == Kind::Object; }
  bool isArray() const { return kind == Kind::Array; }

  bool getBool() const { return boolean; }
  double getNumber() const { return number; }
  const std::string &getString() const { return string; }
  const Array &getArray() const { return *array; }
  const Object &getObject() const { return *object; }
  Object &getObject() { return *object; }
  Array &getArray() { return *array; }

  /// The member `key` of an object, or null.
  const JsonValue *get(const std::string &key) const;

  /// Compact one-line text.
  std::string print() const;
  /// Indented text, two spaces per level.
  std::string printPretty() const;

  static Result<JsonValue> parse(const std::string &text);

private:
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::shared_ptr<Array> array;
  std::shared_ptr<Object> object;

  void printTo(std::string &out, int indent, int level) const;
};

} // namespace flashc

#endif // FLASHC_SUPPORT_JSON_H
