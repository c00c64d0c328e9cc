//===- Files.h - Reading and writing files that flashc does not trust -*- C++ -*-===//
//
// Every file flashc loads (bundle manifests, PTX, cubins, the JIT's disk
// cache, .npy arrays) may be hostile: a directory, a FIFO, /dev/zero, a
// file larger than memory. These helpers read only regular files, never
// block on open, and stop at a size limit, so that each of those is one
// error naming the path; writes go through an unpredictable temporary name
// renamed into place; and a directory can be checked for the ownership and
// permissions that make its contents trustworthy (as ssh and pip check).
//
// Plain C++17 and POSIX: the runtime uses them without LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_SUPPORT_FILES_H
#define FLASHC_SUPPORT_FILES_H

#include "flashc/Support/Status.h"

#include <cstdint>
#include <string>

namespace flashc {

/// The default limit of readRegularFile: 256 MiB.
constexpr uint64_t kMaxFileBytes = uint64_t(256) << 20;

/// Text with bytes below 0x20 (other than none), 0x7f and above escaped as
/// \xNN, for error messages that quote names or contents from a file.
std::string escapeForMessage(const std::string &text, size_t maxChars = 200);

/// An error for an empty path (NotFound) or one holding a NUL byte (which
/// the C library would cut there; InvalidArgument), else success.
Status checkPathText(const std::string &path, const char *what = "path");

/// The contents of the regular file `path`, or an error naming it: not a
/// regular file (a directory, a FIFO, a device), larger than `maxBytes`,
/// unreadable (NotFound where it does not exist), or out of memory. Never
/// blocks on a FIFO.
Result<std::string> readRegularFile(const std::string &path,
                                    uint64_t maxBytes = kMaxFileBytes);

/// Writes `path` whole or not at all: into a temporary file with an
/// unpredictable name in the same directory (created exclusively, mode
/// `mode` before the umask), flushed, then renamed over `path`.
Status writeFileAtomically(const std::string &path, const std::string &data,
                           unsigned mode = 0644);

/// Creates `directory` (and its parents) if missing, the last one with
/// mode 0700, and checks that it can be trusted with code: a directory (not
/// a symbolic link), owned by the current user, writable by nobody else.
/// `what` names it in errors ("kernel cache directory").
Status makePrivateDirectory(const std::string &directory, const char *what);

/// Checks an existing directory as makePrivateDirectory does, without
/// creating it.
Status checkPrivateDirectory(const std::string &directory, const char *what);

} // namespace flashc

#endif // FLASHC_SUPPORT_FILES_H
