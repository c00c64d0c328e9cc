//===- Files.cpp - Reading and writing files that flashc does not trust ---===//
//
// POSIX file access with the checks every loaded file needs: regular files
// only, opened without blocking, read up to a limit; atomic writes through
// unpredictable temporary names; private directories for cached code.
//
//===----------------------------------------------------------------------===//

#include "flashc/Support/Files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace flashc;

std::string flashc::escapeForMessage(const std::string &text,
                                     size_t maxChars) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= maxChars) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Status flashc::checkPathText(const std::string &path, const char *what) {
  // An empty path names nothing, as open(2) says with ENOENT.
  if (path.empty())
    return Status::make(ErrorCode::NotFound, std::string(what) + " is empty");
  if (path.find('\0') != std::string::npos)
    return Status::invalidArgument(std::string(what) + " '" +
                                   escapeForMessage(path) +
                                   "' contains a NUL byte");
  return Status::success();
}

namespace {

std::string quoted(const std::string &path) {
  return "'" + escapeForMessage(path) + "'";
}

/// Closes a descriptor on scope exit.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

Result<std::string> flashc::readRegularFile(const std::string &path,
                                            uint64_t maxBytes) {
  if (Status s = checkPathText(path))
    return s;
  FileDescriptor file;
  // O_NONBLOCK: opening a FIFO with no writer must not wait for one.
  file.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (file.fd < 0) {
    int err = errno;
    return Status::make(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Other,
                        "cannot read " + quoted(path) + ": " +
                            std::strerror(err));
  }
  struct stat st;
  if (::fstat(file.fd, &st) != 0)
    return Status::error("cannot read " + quoted(path) + ": " +
                         std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Status::error(quoted(path) + " is not a regular file (" +
                         (S_ISDIR(st.st_mode)    ? "a directory"
                          : S_ISFIFO(st.st_mode) ? "a FIFO"
                          : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                              ? "a device"
                              : "a special file") +
                         ")");
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > maxBytes)
    return Status::error(quoted(path) + " has " + std::to_string(size) +
                         " bytes, over the limit of " +
                         std::to_string(maxBytes));
  std::string data;
  try {
    data.resize(static_cast<size_t>(size));
    size_t have = 0;
    // The file may grow while it is read: read to its end, up to the limit.
    while (true) {
      if (have == data.size()) {
        if (data.size() > maxBytes)
          return Status::error(quoted(path) + " grew past the limit of " +
                               std::to_string(maxBytes) + " bytes");
        data.resize(data.size() + 4096);
      }
      ssize_t n = ::read(file.fd, &data[have], data.size() - have);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        return Status::error("reading " + quoted(path) + " failed: " +
                             std::strerror(errno));
      }
      if (n == 0)
        break;
      have += static_cast<size_t>(n);
    }
    if (have > maxBytes)
      return Status::error(quoted(path) + " grew past the limit of " +
                           std::to_string(maxBytes) + " bytes");
    data.resize(have);
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory reading " + quoted(path) + " (" +
                         std::to_string(size) + " bytes)");
  }
  return data;
}

Status flashc::writeFileAtomically(const std::string &path,
                                   const std::string &data, unsigned mode) {
  if (Status s = checkPathText(path))
    return s;
  // mkstemp: an exclusive create under a name with random characters, so
  // that nobody can place a file or link there beforehand.
  std::string tmp = path + ".tmp.XXXXXX";
  FileDescriptor file;
  file.fd = ::mkostemp(&tmp[0], O_CLOEXEC);
  if (file.fd < 0)
    return Status::error("cannot write " + quoted(path) + ": " +
                         std::strerror(errno));
  auto fail = [&](const std::string &what) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::error(what + " " + quoted(path) + " failed: " +
                         std::strerror(err));
  };
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(file.fd, static_cast<mode_t>(mode) & ~mask) != 0)
    return fail("writing");
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(file.fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail("writing");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(file.fd) != 0 && errno != EINVAL)
    return fail("writing");
  int fd = file.fd;
  file.fd = -1;
  if (::close(fd) != 0)
    return fail("writing");
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return fail("renaming into");
  return Status::success();
}

Status flashc::checkPrivateDirectory(const std::string &directory,
                                     const char *what) {
  if (Status s = checkPathText(directory, what))
    return s;
  struct stat st;
  if (::stat(directory.c_str(), &st) != 0)
    return Status::error(std::string(what) + " " + quoted(directory) + ": " +
                         std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return Status::error(std::string(what) + " " + quoted(directory) +
                         " is not a directory");
  if (st.st_uid != ::geteuid())
    return Status::error(std::string(what) + " " + quoted(directory) +
                         " is owned by user " + std::to_string(st.st_uid) +
                         ", not by the current user (" +
                         std::to_string(::geteuid()) +
                         "); its contents are not trusted");
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char perms[8];
    std::snprintf(perms, sizeof(perms), "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    return Status::error(std::string(what) + " " + quoted(directory) +
                         " is writable by other users (mode " + perms +
                         "); its contents are not trusted (chmod go-w)");
  }
  return Status::success();
}

Status flashc::makePrivateDirectory(const std::string &directory,
                                    const char *what) {
  if (Status s = checkPathText(directory, what))
    return s;
  // Parents as usual (0777 less the umask), the directory itself 0700.
  for (size_t slash = directory.find('/', 1); slash != std::string::npos;
       slash = directory.find('/', slash + 1)) {
    std::string parent = directory.substr(0, slash);
    if (::mkdir(parent.c_str(), 0777) != 0 && errno != EEXIST)
      return Status::error("cannot create " + std::string(what) + " " +
                           quoted(directory) + ": " + quoted(parent) + ": " +
                           std::strerror(errno));
  }
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::error("cannot create " + std::string(what) + " " +
                         quoted(directory) + ": " + std::strerror(errno));
  return checkPrivateDirectory(directory, what);
}
