//===- Status.h - Errors of the dependency-free libraries -------*- C++ -*-===//
//
// The LLVM-free runtime reports failures as values, like llvm::Error and
// llvm::Expected do for the compiler: `Status` is success or a message,
// `Result<T>` a value or a Status.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SUPPORT_STATUS_H
#define FLASHC_SUPPORT_STATUS_H

#include <string>
#include <utility>
#include <variant>

namespace flashc {

class Status {
public:
  Status() = default;
  static Status success() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.text = std::move(message);
    return s;
  }
  /// An error in what the caller passed (a tensor's shape, type, strides or
  /// memory), as opposed to one of the device, the kernel or the system.
  static Status invalidArgument(std::string message) {
    Status s = error(std::move(message));
    s.invalid = true;
    return s;
  }
  bool isInvalidArgument() const { return invalid; }
  bool ok() const { return !failed; }
  /// True on failure, like llvm::Error.
  explicit operator bool() const { return failed; }
  const std::string &message() const { return text; }

private:
  bool failed = false;
  bool invalid = false;
  std::string text;
};

template <typename T> class Result {
public:
  Result(T value) : storage(std::move(value)) {}
  Result(Status status) : storage(std::move(status)) {}
  bool ok() const { return storage.index() == 0; }
  explicit operator bool() const { return ok(); }
  T &operator*() { return std::get<0>(storage); }
  const T &operator*() const { return std::get<0>(storage); }
  T *operator->() { return &std::get<0>(storage); }
  const T *operator->() const { return &std::get<0>(storage); }
  const Status &status() const { return std::get<1>(storage); }
  const std::string &message() const { return status().message(); }

private:
  std::variant<T, Status> storage;
};

} // namespace flashc

#endif // FLASHC_SUPPORT_STATUS_H
