//===- Diagnostic.cpp - Error formatting and safe file I/O ----------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements Diagnostic.h: Error formatting with a caret line (format,
// locationOf, caretLine), bounded file reads (readFile), and the safe
// writes every tool uses: a file or a set of files (writeFileAtomic,
// writeFilesAtomic) and whole directories (writeDirectoryAtomic) are
// written to temporaries and renamed into place; a signal handler removes
// the temporaries still registered and takes down a registered child
// process. Also checkWritable, fileIdentity and formatRankSet.
// Sections: errors, reading, temporaries and the signal handler, atomic
// writes of files, atomic writes of directories.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Support/ChildProcess.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <mutex>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unordered_set>

namespace ccsynth {

FileName::FileName(const std::string &file) {
  if (file.empty())
    return;
  // Never destroyed: locations may outlive static destruction order.
  static std::mutex *mutex = new std::mutex;
  static auto *names = new std::unordered_set<std::string>;
  std::lock_guard<std::mutex> lock(*mutex);
  name = &*names->insert(file).first;
}

const std::string &FileName::none() {
  static const std::string *empty = new std::string;
  return *empty;
}

std::string Error::format(const char *severity) const {
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
  out += std::string(severity) + ": " + message;
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
  std::string src = text.substr(
      start, end == std::string::npos ? std::string::npos : end - start);
  size_t col = loc.col > 0 ? size_t(loc.col) : 1;
  // A line of over 1,000 bytes (minified JSON, generated XML: a whole file
  // can be one line) is shown as a window of 200 bytes around the column,
  // cut at character boundaries.
  constexpr size_t kWhole = 1000, kShown = 200;
  std::string prefix;
  if (src.size() > kWhole) {
    auto boundary = [&](size_t i) {
      while (i > 0 && i < src.size() && (src[i] & 0xC0) == 0x80)
        --i;
      return i;
    };
    size_t at = std::min(col - 1, src.size());
    size_t from = boundary(at > kShown / 2 ? at - kShown / 2 : 0);
    size_t to = boundary(std::min(src.size(), from + kShown));
    bool cutEnd = to < src.size();
    prefix = from > 0 ? "..." : "";
    src = prefix + src.substr(from, to - from) + (cutEnd ? "..." : "");
    col = col - from + prefix.size();
  }
  std::string caret;
  for (size_t i = 1; i < col && i - 1 < src.size(); ++i)
    caret += src[i - 1] == '\t' ? '\t' : ' ';
  return src + "\n" + caret + "^";
}

void dropByteOrderMark(std::string &text) {
  if (text.starts_with("\xEF\xBB\xBF"))
    text.erase(0, 3);
}

Expected<std::string> readFile(const std::string &path, size_t maxBytes,
                               const char *kind) {
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; the
  // file type is checked before anything is read.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Error("cannot read '" + path + "': " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error("cannot read '" + path + "': " +
                 (S_ISDIR(st.st_mode) ? std::string("it is a directory")
                                      : std::string("not a regular file")));
  }
  auto tooLarge = [&] {
    ::close(fd);
    return Error("cannot read '" + path + "': larger than the " +
                 (maxBytes >= (size_t(1) << 20)
                      ? std::to_string(maxBytes >> 20) + " MiB "
                      : std::to_string(maxBytes >> 10) + " KiB ") +
                 kind + " may have");
  };
  if ((unsigned long long)st.st_size > maxBytes)
    return tooLarge();
  std::string text;
  text.reserve((size_t)st.st_size);
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      int err = errno;
      ::close(fd);
      return Error("cannot read '" + path + "': " + std::strerror(err));
    }
    if (n == 0)
      break;
    if (text.size() + (size_t)n > maxBytes)
      return tooLarge();
    text.append(buf, (size_t)n);
  }
  ::close(fd);
  return text;
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

// Temporaries of writes in progress, for the signal handler. This is the one
// piece of process-wide state in the core: a signal handler has no other way
// to learn what to remove. Each slot holds a NUL-terminated path; `state`
// says whether the handler may read it (only async-signal-safe calls and
// lock-free atomics are used there).
constexpr int kTempSlots = 64;
struct TempSlot {
  std::atomic<int> state{0}; // 0 free, 1 being filled, 2 live
  bool tree = false;         // a directory removed with its contents
  char path[PATH_MAX];
};
TempSlot tempSlots[kTempSlots];
static_assert(std::atomic<int>::is_always_lock_free);
// The child a signal takes down with this process (0: none).
std::atomic<pid_t> childProcess{0};
static_assert(std::atomic<pid_t>::is_always_lock_free);

/// Removes everything inside the directory `dirFd` with raw system calls
/// (getdents64, unlinkat, openat: no allocation), `depth` levels down at
/// most; closes `dirFd`.
void removeContents(int dirFd, int depth) {
  alignas(8) char buf[4096];
  for (;;) {
    long n = ::syscall(SYS_getdents64, dirFd, buf, sizeof buf);
    if (n <= 0)
      break;
    bool removedAny = false;
    for (long at = 0; at < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name
      unsigned short reclen;
      std::memcpy(&reclen, buf + at + 16, sizeof reclen);
      unsigned char type = (unsigned char)buf[at + 18];
      const char *name = buf + at + 19;
      at += reclen;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))
        continue;
      if (type == 4 /* DT_DIR */ && depth > 0) {
        int sub = ::openat(dirFd, name,
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0)
          removeContents(sub, depth - 1);
        ::unlinkat(dirFd, name, AT_REMOVEDIR);
      } else {
        ::unlinkat(dirFd, name, 0);
      }
      removedAny = true;
    }
    // Entries removed while reading may shift the directory's offsets:
    // read it again from the start until a pass removes nothing.
    if (removedAny)
      ::lseek(dirFd, 0, SEEK_SET);
  }
  ::close(dirFd);
}

extern "C" void removeTemporariesAndReraise(int sig) {
  int savedErrno = errno;
  // First the child and everything it started (its process group), so
  // that nothing writes into the temporaries while they are removed.
  if (pid_t child = childProcess.load(std::memory_order_acquire); child > 0) {
    ::kill(-child, SIGKILL);
    ::kill(child, SIGKILL);
    int status;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  // Newest first, so a staged directory's files go before the directory
  // itself (rmdir removes only an empty one).
  for (int i = kTempSlots - 1; i >= 0; --i)
    if (tempSlots[i].state.load(std::memory_order_acquire) == 2) {
      if (tempSlots[i].tree) {
        int fd = ::open(tempSlots[i].path,
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
          removeContents(fd, 16);
        ::rmdir(tempSlots[i].path);
      } else if (::unlink(tempSlots[i].path) != 0 && errno == EISDIR) {
        ::rmdir(tempSlots[i].path);
      }
    }
  errno = savedErrno;
  // Default action, so the parent sees death by this signal.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

/// A staged output: the file a write changes and, for a regular file, the
/// temporary beside it.
struct Staged {
  const OutputFile *file = nullptr;
  std::string target;
  std::string tmp;
  int slot = -1;
  bool inPlace = false;
};

void discard(std::vector<Staged> &staged) {
  for (Staged &st : staged) {
    if (st.tmp.empty())
      continue;
    ::unlink(st.tmp.c_str());
    releaseTemporaryFile(st.slot);
    st.tmp.clear();
  }
}

int writeInPlace(const std::string &target, const std::string &contents) {
  int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  int err = writeAll(fd, contents);
  if (::close(fd) != 0 && err == 0)
    err = errno;
  return err;
}

} // namespace

namespace {
int registerTemporary(const std::string &path, bool tree) {
  if (path.size() >= PATH_MAX)
    return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (!tempSlots[i].state.compare_exchange_strong(expected, 1))
      continue;
    std::memcpy(tempSlots[i].path, path.c_str(), path.size() + 1);
    tempSlots[i].tree = tree;
    tempSlots[i].state.store(2, std::memory_order_release);
    return i;
  }
  return -1;
}
} // namespace

int registerTemporaryFile(const std::string &path) {
  return registerTemporary(path, false);
}

int registerTemporaryDirectory(const std::string &path) {
  return registerTemporary(path, true);
}

void registerChildProcess(pid_t pid) {
  childProcess.store(pid, std::memory_order_release);
}

void releaseChildProcess() { childProcess.store(0, std::memory_order_release); }

void releaseTemporaryFile(int slot) {
  if (slot >= 0 && slot < kTempSlots)
    tempSlots[slot].state.store(0, std::memory_order_release);
}

void installTemporaryFileCleanup() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = removeTemporariesAndReraise;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal the parent told us to ignore (nohup) stays ignored.
    struct sigaction old;
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN)
      continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

Status checkWritable(const std::string &path) {
  auto resolved = resolveLinks(path);
  if (!resolved)
    return resolved.error();
  const std::string &target = *resolved;
  struct stat st;
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return writeError(path, EISDIR);
    if (::access(target.c_str(), W_OK) != 0)
      return writeError(path, errno);
    if (!S_ISREG(st.st_mode))
      return Status::success();
  }
  // A regular file is replaced through a temporary in its directory.
  size_t slash = target.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : target.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0)
    return writeError(path, errno);
  if (!S_ISDIR(st.st_mode))
    return writeError(path, ENOTDIR);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return writeError(path, errno);
  return Status::success();
}

std::optional<FileIdentity> fileIdentity(const std::string &path) {
  if (path.empty())
    return std::nullopt;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0)
    return FileIdentity{(unsigned long long)st.st_dev,
                        (unsigned long long)st.st_ino, ""};
  // Not there (yet): where a write would create it.
  auto resolved = resolveLinks(path);
  if (!resolved)
    return std::nullopt;
  std::string target = *resolved;
  while (target.size() > 1 && target.back() == '/')
    target.pop_back();
  size_t slash = target.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : target.substr(0, slash);
  std::string name =
      slash == std::string::npos ? target : target.substr(slash + 1);
  if (name.empty() || name == "." || name == ".." ||
      ::stat(dir.c_str(), &st) != 0)
    return std::nullopt;
  return FileIdentity{(unsigned long long)st.st_dev,
                      (unsigned long long)st.st_ino, name};
}

bool isInsideDirectory(const std::string &path, const FileIdentity &dir) {
  if (!dir.entry.empty())
    return false; // a directory not there yet holds nothing
  std::error_code ec;
  std::filesystem::path p = std::filesystem::canonical(path, ec);
  if (ec)
    return false;
  for (p = p.parent_path();; p = p.parent_path()) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 &&
        FileIdentity{(unsigned long long)st.st_dev,
                     (unsigned long long)st.st_ino, ""} == dir)
      return true;
    if (p == p.root_path() || p.empty())
      return false;
  }
}

Status writeFilesAtomic(const std::vector<OutputFile> &files) {
  std::vector<Staged> staged;
  staged.reserve(files.size());
  auto fail = [&](const std::string &path, int err) -> Status {
    discard(staged);
    return writeError(path, err);
  };
  for (const OutputFile &f : files) {
    auto resolved = resolveLinks(f.path);
    if (!resolved) {
      discard(staged);
      return resolved.error();
    }
    Staged st;
    st.file = &f;
    st.target = *resolved;
    struct stat info;
    if (::stat(st.target.c_str(), &info) == 0) {
      if (S_ISDIR(info.st_mode))
        return fail(f.path, EISDIR);
      // A device or FIFO is written in place: renaming over it would
      // replace it with a regular file.
      st.inPlace = !S_ISREG(info.st_mode);
    }
    if (!st.inPlace) {
      st.tmp = st.target + ".tmp." + std::to_string(::getpid());
      for (const Staged &other : staged)
        if (other.tmp == st.tmp)
          return fail(f.path, EEXIST);
      st.slot = registerTemporaryFile(st.tmp);
      int fd =
          ::open(st.tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0) {
        int err = errno;
        releaseTemporaryFile(st.slot);
        return fail(f.path, err);
      }
      int err = writeAll(fd, f.contents);
      if (::close(fd) != 0 && err == 0)
        err = errno;
      staged.push_back(st);
      if (err != 0)
        return fail(f.path, err);
    } else {
      staged.push_back(st);
    }
  }
  // Every regular output is staged: move them into place, then write the
  // devices and FIFOs.
  for (Staged &st : staged) {
    if (st.inPlace)
      continue;
    if (::rename(st.tmp.c_str(), st.target.c_str()) != 0)
      return fail(st.file->path, errno);
    releaseTemporaryFile(st.slot);
    st.tmp.clear();
  }
  for (Staged &st : staged)
    if (st.inPlace)
      if (int err = writeInPlace(st.target, st.file->contents); err != 0)
        return writeError(st.file->path, err);
  return Status::success();
}

Status writeFileAtomic(const std::string &path, const std::string &contents) {
  return writeFilesAtomic({OutputFile{path, contents}});
}

namespace {

/// Whether `dir` is a directory without entries.
bool emptyDirectory(const std::string &dir) {
  std::error_code ec;
  return std::filesystem::is_empty(dir, ec) && !ec;
}

/// A directory staged beside its target, removed with everything in it
/// unless released.
struct StagedDir {
  std::string path;
  std::vector<int> slots;
  ~StagedDir() {
    if (!path.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
    for (int s : slots)
      releaseTemporaryFile(s);
  }
};

} // namespace

namespace {
std::string trimSlashes(const std::string &dir) {
  std::string t = dir;
  while (t.size() > 1 && t.back() == '/')
    t.pop_back();
  return t;
}
} // namespace

Status checkDirectoryWritable(
    const std::string &dir,
    const std::function<bool(const std::string &)> &mayReplace, bool *replace) {
  std::string target = trimSlashes(dir);
  if (target.empty())
    return Error("no output directory named");
  if (replace)
    *replace = false;
  struct stat st;
  if (::lstat(target.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      return Error("cannot write the directory '" + dir +
                   "': it exists and is not a directory");
    if (!emptyDirectory(target)) {
      if (!mayReplace || !mayReplace(target))
        return Error("cannot write the directory '" + dir +
                     "': it exists and holds files ccsynth did not write "
                     "there; remove it or name another directory");
      if (replace)
        *replace = true;
    }
  } else if (errno != ENOENT && errno != ENOTDIR) {
    return writeError(dir, errno);
  }
  size_t slash = target.rfind('/');
  std::string parent = slash == std::string::npos ? "."
                       : slash == 0               ? "/"
                                                  : target.substr(0, slash);
  if (::stat(parent.c_str(), &st) != 0)
    return Error("cannot write the directory '" + dir +
                 "': " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return Error("cannot write the directory '" + dir +
                 "': " + std::strerror(ENOTDIR));
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return Error("cannot write the directory '" + dir +
                 "': " + std::strerror(errno));
  return Status::success();
}

Status writeDirectoryAtomic(
    const std::string &dir, const std::vector<OutputFile> &files,
    const std::function<bool(const std::string &)> &mayReplace) {
  bool replace = false;
  if (Status s = checkDirectoryWritable(dir, mayReplace, &replace); !s)
    return s;
  std::string target = trimSlashes(dir);

  // Stage everything in a fresh sibling, then rename it into place.
  StagedDir staged;
  std::string tmpl = target + ".tmp-XXXXXX";
  if (!::mkdtemp(tmpl.data()))
    return writeError(dir, errno);
  staged.path = tmpl;
  staged.slots.push_back(registerTemporaryFile(tmpl));
  for (const OutputFile &f : files) {
    if (f.path.empty() || f.path.front() == '/' ||
        f.path.find("..") != std::string::npos)
      return Error("cannot write '" + f.path + "' inside '" + dir +
                   "': not a plain relative path");
    // Subdirectories of the file, outermost first.
    for (size_t p = f.path.find('/'); p != std::string::npos;
         p = f.path.find('/', p + 1)) {
      std::string sub = staged.path + "/" + f.path.substr(0, p);
      if (::mkdir(sub.c_str(), 0777) == 0)
        staged.slots.push_back(registerTemporaryFile(sub));
      else if (errno != EEXIST)
        return writeError(dir + "/" + f.path.substr(0, p), errno);
    }
    std::string path = staged.path + "/" + f.path;
    staged.slots.push_back(registerTemporaryFile(path));
    int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
      return writeError(dir + "/" + f.path, errno);
    int err = writeAll(fd, f.contents);
    if (::close(fd) != 0 && err == 0)
      err = errno;
    if (err != 0)
      return writeError(dir + "/" + f.path, err);
  }
  // mkdtemp made the directory 0700; give it the usual permissions.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(staged.path.c_str(), 0777 & ~mask);

  if (!replace) {
    // rename() also replaces an empty directory.
    if (::rename(staged.path.c_str(), target.c_str()) != 0)
      return writeError(dir, errno);
  } else {
    // Move the old directory aside, the new one in, then drop the old.
    std::string old = target + ".old-XXXXXX";
    if (!::mkdtemp(old.data()))
      return writeError(dir, errno);
    if (::rename(target.c_str(), old.c_str()) != 0) {
      int err = errno;
      ::rmdir(old.c_str());
      return writeError(dir, err);
    }
    if (::rename(staged.path.c_str(), target.c_str()) != 0) {
      int err = errno;
      ::rename(old.c_str(), target.c_str());
      return writeError(dir, err);
    }
    std::error_code ec;
    std::filesystem::remove_all(old, ec);
  }
  staged.path.clear();
  return Status::success();
}

std::string formatRankSet(const std::vector<int> &items) {
  std::string s;
  for (size_t i = 0; i < items.size();) {
    size_t j = i;
    while (j + 1 < items.size() && items[j + 1] == items[j] + 1)
      ++j;
    if (!s.empty())
      s += ",";
    s += std::to_string(items[i]);
    if (j > i) {
      s += j == i + 1 ? ',' : '-';
      s += std::to_string(items[j]);
    }
    i = j + 1;
  }
  s.insert(s.begin(), '{');
  s += '}';
  return s;
}

} // namespace ccsynth
