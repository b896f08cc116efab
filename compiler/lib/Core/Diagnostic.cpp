//===- Diagnostic.cpp - Error formatting and safe file I/O ----------------===//
#include "ccsynth/Core/Diagnostic.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <climits>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ccsynth {

std::string Error::format() const {
  std::string out;
  if (!loc.file.empty()) {
    out += loc.file;
    if (loc.line > 0) {
      out += ":" + std::to_string(loc.line);
      if (loc.col > 0)
        out += ":" + std::to_string(loc.col);
    }
    out += ": ";
  }
  out += "error: " + message;
  if (!notes.empty()) {
    out += "\n" + notes;
    if (out.back() == '\n')
      out.pop_back();
  }
  return out;
}

SourceLoc locationOf(const std::string &file, const std::string &text,
                     size_t offset) {
  SourceLoc loc{file, 1, 1};
  if (offset > text.size())
    offset = text.size();
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.col = 1;
    } else {
      ++loc.col;
    }
  }
  return loc;
}

std::string caretLine(const std::string &text, const SourceLoc &loc) {
  if (loc.line <= 0)
    return {};
  size_t start = 0;
  for (int line = 1; line < loc.line; ++line) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos)
      return {};
    start = nl + 1;
  }
  size_t end = text.find('\n', start);
  std::string src = text.substr(start, end == std::string::npos
                                           ? std::string::npos
                                           : end - start);
  std::string caret;
  for (int i = 1; i < loc.col && i - 1 < (int)src.size(); ++i)
    caret += src[i - 1] == '\t' ? '\t' : ' ';
  return src + "\n" + caret + "^";
}

Expected<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return Error("cannot read '" + path + "': " + std::strerror(errno));
  return ss.str();
}

namespace {

Error writeError(const std::string &path, int err) {
  return Error("cannot write '" + path + "': " + std::strerror(err));
}

/// Writes all of `contents` to `fd`; returns 0 or the errno of the failure.
int writeAll(int fd, const std::string &contents) {
  const char *p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    p += n;
    left -= (size_t)n;
  }
  return 0;
}

/// Follows `path` through symbolic links (also dangling ones) to the file
/// that a write should change.
Expected<std::string> resolveLinks(const std::string &path) {
  std::string cur = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(cur.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      return cur;
    std::string target(PATH_MAX, '\0');
    ssize_t n = ::readlink(cur.c_str(), target.data(), target.size());
    if (n < 0)
      return writeError(path, errno);
    target.resize((size_t)n);
    if (!target.empty() && target[0] != '/') {
      size_t slash = cur.rfind('/');
      if (slash != std::string::npos)
        target = cur.substr(0, slash + 1) + target;
    }
    cur = target;
  }
  return writeError(path, ELOOP);
}

} // namespace

Status writeFileAtomic(const std::string &path, const std::string &contents) {
  auto resolved = resolveLinks(path);
  if (!resolved)
    return resolved.error();
  const std::string &target = *resolved;
  struct stat st;
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return writeError(path, EISDIR);
    if (!S_ISREG(st.st_mode)) {
      // A device or FIFO is written in place: renaming over it would
      // replace it with a regular file.
      int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0)
        return writeError(path, errno);
      int err = writeAll(fd, contents);
      if (::close(fd) != 0 && err == 0)
        err = errno;
      if (err != 0)
        return writeError(path, err);
      return Status::success();
    }
  }
  std::string tmp = target + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    return writeError(path, errno);
  int err = writeAll(fd, contents);
  if (::close(fd) != 0 && err == 0)
    err = errno;
  if (err == 0 && ::rename(tmp.c_str(), target.c_str()) != 0)
    err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return writeError(path, err);
  }
  return Status::success();
}

} // namespace ccsynth
