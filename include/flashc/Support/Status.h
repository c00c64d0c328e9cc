//===- Status.h - Errors of the dependency-free libraries -------*- C++ -*-===//
//
// The LLVM-free layers (the runtime, the PTX simulator and the C API over
// them) report failures as values, like llvm::Error and llvm::Expected do
// for the compiler: `Status` is success or an error, an `ErrorCode` saying
// what kind of error and a one-line message saying what happened, and
// `Result<T>` a value or a Status:
//
//   Result<Bundle> bundle = Bundle::load(dir);
//   if (!bundle)
//     ... bundle.status().code() ... bundle.message() ...
//   if (Status s = device.synchronize(stream)) // true on failure
//     return s;
//
// The codes the C API names (flashc_status in flashc_runtime.h) have the
// same values here, so that it converts a Status without a table.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SUPPORT_STATUS_H
#define FLASHC_SUPPORT_STATUS_H

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace flashc {

/// What kind of error a Status holds. A caller that acts on the kind of an
/// error tests the code, never the message, which is for people.
enum class ErrorCode : int {
  /// No error.
  Success = 0,

  // The kinds the C API names; each has its flashc_status value.

  /// What the caller passed is wrong: a tensor's shape, type, strides or
  /// memory, a null or out-of-range argument, a launch shape or buffer that
  /// the simulator cannot take. The caller can fix it; nothing else failed.
  InvalidArgument = 1,
  /// What was asked for does not exist: a file (ENOENT), a bundle's
  /// directory or manifest, a kernel for a query.
  NotFound = 2,
  /// No usable device: no CUDA driver, no GPU, or one that flashc's kernels
  /// cannot run on.
  NoDevice = 3,
  /// A kernel could not be launched, or failed while it ran.
  Launch = 4,
  /// A directory that is not a usable kernel bundle: a malformed manifest,
  /// a missing or altered kernel file, a kernel its entry does not describe.
  InvalidBundle = 5,
  /// A failure inside flashc rather than of its input: out of memory, an
  /// unexpected exception.
  Internal = 6,

  // Faults of a program run by the PTX simulator (isFault()).

  /// A memory access outside every mapped buffer, shared or local window.
  OutOfBounds,
  /// A memory access at an address its width does not divide.
  Misaligned,
  /// A shared-memory race, a read of a cp.async destination before its
  /// wait, or global bytes stored to by two CTAs of one launch.
  Race,
  /// Threads waiting at barriers or warp collectives that can never all
  /// arrive.
  Deadlock,
  /// The program stopped itself (`trap`) or ran past its instruction
  /// budget.
  Trap,

  // Errors of what is given to the simulator, not faults of the program.

  /// Text that does not parse: PTX, or a JSON document.
  Parse,
  /// Valid PTX that the simulator does not implement.
  Unsupported,
  /// A launch or an input beyond the simulator's limits (its memory budget,
  /// the size of a PTX text, the host's memory).
  Limit,

  /// An error that no code above describes: an I/O error, a failure the
  /// CUDA driver reports, a malformed file. The message says what; the
  /// operation that failed says what kind (a launch, loading a bundle).
  Other,
};

/// Success, or an error: a code and a message. Converts to true when it
/// holds an error, like llvm::Error.
class Status {
public:
  Status() = default;
  static Status success() { return Status(); }
  /// An error of `code`, which is not ErrorCode::Success.
  static Status make(ErrorCode code, std::string message) {
    assert(code != ErrorCode::Success && "an error needs an error code");
    Status s;
    s.errorCode = code;
    s.text = std::move(message);
    return s;
  }
  /// An error no more specific code describes (ErrorCode::Other).
  static Status error(std::string message) {
    return make(ErrorCode::Other, std::move(message));
  }
  /// An error in what the caller passed (a tensor's shape, type, strides or
  /// memory), as opposed to one of the device, the kernel or the system.
  static Status invalidArgument(std::string message) {
    return make(ErrorCode::InvalidArgument, std::move(message));
  }

  ErrorCode code() const { return errorCode; }
  const std::string &message() const { return text; }
  bool ok() const { return errorCode == ErrorCode::Success; }
  /// True on failure, like llvm::Error.
  explicit operator bool() const { return !ok(); }
  /// True for the faults of a simulated program (out of bounds, misaligned,
  /// race, deadlock, trap), as opposed to errors of its input or caller.
  bool isFault() const {
    return errorCode == ErrorCode::OutOfBounds ||
           errorCode == ErrorCode::Misaligned || errorCode == ErrorCode::Race ||
           errorCode == ErrorCode::Deadlock || errorCode == ErrorCode::Trap;
  }

private:
  ErrorCode errorCode = ErrorCode::Success;
  std::string text;
};

/// A value, or the Status of why there is none. Converts to true when it
/// holds a value, like llvm::Expected.
template <typename T> class Result {
public:
  Result(T value) : storage(std::move(value)) {}
  /// `status` is an error.
  Result(Status status) : storage(std::move(status)) {}
  bool ok() const { return storage.index() == 0; }
  explicit operator bool() const { return ok(); }
  T &operator*() { return std::get<0>(storage); }
  const T &operator*() const { return std::get<0>(storage); }
  T *operator->() { return &std::get<0>(storage); }
  const T *operator->() const { return &std::get<0>(storage); }
  /// The error; only when there is no value.
  const Status &status() const { return std::get<1>(storage); }
  const std::string &message() const { return status().message(); }

private:
  std::variant<T, Status> storage;
};

} // namespace flashc

#endif // FLASHC_SUPPORT_STATUS_H
