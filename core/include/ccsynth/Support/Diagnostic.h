//===- Diagnostic.h - Source locations, errors and result types -----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Core-model code never throws across its public API and never prints: it
// returns Expected<T> carrying a located Error, and the tools print it as
// `file:line:col: error: message`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cassert>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ccsynth {

/// A file's name as locations hold it: every copy of a name points at one
/// stored string (kept for the life of the process, which reads a handful
/// of files), so that a location, of which a reader may keep millions,
/// costs a pointer and two ints however long the path is.
class FileName {
public:
  FileName() = default;
  FileName(const std::string &name);
  FileName(const char *name) : FileName(std::string(name)) {}

  const std::string &str() const { return name ? *name : none(); }
  operator const std::string &() const { return str(); }
  bool empty() const { return str().empty(); }
  size_t size() const { return str().size(); }
  const char *c_str() const { return str().c_str(); }

  friend bool operator==(const FileName &a, const FileName &b) {
    return a.str() == b.str();
  }
  friend bool operator!=(const FileName &a, const FileName &b) {
    return !(a == b);
  }
  friend std::string operator+(const FileName &a, const std::string &b) {
    return a.str() + b;
  }
  friend std::string operator+(const FileName &a, const char *b) {
    return a.str() + b;
  }
  friend std::string operator+(const std::string &a, const FileName &b) {
    return a + b.str();
  }
  friend std::string operator+(const char *a, const FileName &b) {
    return a + b.str();
  }

private:
  static const std::string &none();
  const std::string *name = nullptr;
};

/// A position in an input file; line and column are 1-based, 0 = unknown.
struct SourceLoc {
  FileName file;
  int line = 0;
  int col = 0;

  bool known() const { return line > 0; }
};

/// An error with an optional location, formatted the way compilers do.
struct Error {
  std::string message;
  SourceLoc loc;
  /// Extra lines printed after the message (e.g. a caret line or a list of
  /// valid choices).
  std::string notes;

  Error() = default;
  explicit Error(std::string msg, SourceLoc where = {}, std::string extra = {})
      : message(std::move(msg)), loc(std::move(where)),
        notes(std::move(extra)) {}

  /// `file:line:col: error: message` (or `file: error:` / `error:` when the
  /// location is partly unknown), followed by the notes. `severity`
  /// replaces "error" (e.g. "warning" for a diagnostic that is not one).
  std::string format(const char *severity = "error") const;
};

/// Either a value or an Error. A minimal std::expected for C++20.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage(std::move(value)) {}
  Expected(Error error) : storage(std::move(error)) {}

  explicit operator bool() const { return storage.index() == 0; }
  bool ok() const { return storage.index() == 0; }

  T &operator*() {
    assert(ok());
    return std::get<0>(storage);
  }
  const T &operator*() const {
    assert(ok());
    return std::get<0>(storage);
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }
  T take() { return std::move(**this); }

  const Error &error() const {
    assert(!ok());
    return std::get<1>(storage);
  }

private:
  std::variant<T, Error> storage;
};

/// Expected<void>: success or an Error.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error e) : err(std::move(e)) {}
  static Status success() { return {}; }

  explicit operator bool() const { return !err.has_value(); }
  bool ok() const { return !err.has_value(); }
  const Error &error() const {
    assert(err);
    return *err;
  }

private:
  std::optional<Error> err;
};

/// Converts a byte offset in `text` into a 1-based line/column.
/// Sorted distinct ranks as a short set for messages: "{0-3,5,7,8}".
std::string formatRankSet(const std::vector<int> &ranks);

SourceLoc locationOf(const std::string &file, const std::string &text,
                     size_t offset);

/// The source line containing `loc` and a caret under its column, for
/// diagnostics ("  foo(bar\n      ^"). Empty when the line is out of range.
std::string caretLine(const std::string &text, const SourceLoc &loc);

/// The largest input file the tools read (64 MiB): far above any real
/// schedule, topology or program, and small enough that parsing it cannot
/// exhaust memory.
inline constexpr size_t kMaxInputBytes = size_t(64) << 20;
/// The largest schedule file (4 GiB): a 1,024-rank ReduceScatter is millions
/// of transfers, hundreds of MB, read without a DOM (readScheduleJson).
inline constexpr size_t kMaxScheduleBytes = size_t(4) << 30;

/// Reads a whole regular file of at most `maxBytes`; the error names the
/// file and the reason (a larger one is refused before it is read, as
/// larger than what `kind` may be). Directories, devices and FIFOs are
/// refused (they would read as an empty or endless file).
Expected<std::string> readFile(const std::string &path,
                               size_t maxBytes = kMaxInputBytes,
                               const char *kind = "an input file");

/// Drops a leading UTF-8 byte-order mark, which editors on some systems
/// write: every text reader takes a file with one as without it (its lines
/// and columns counted as an editor shows them).
void dropByteOrderMark(std::string &text);

/// Writes `contents` to `path`. A regular file (or a new path) is written
/// atomically (temporary file beside it + rename), so a failure never leaves
/// a partial output file behind; a symbolic link is followed to its target;
/// a device or FIFO is written in place (never replaced), and its write
/// errors (e.g. ENOSPC) are reported; a directory is an error.
Status writeFileAtomic(const std::string &path, const std::string &contents);

/// Checks, without writing anything, that `path` could be written: its
/// directory exists and is writable, and it is not a directory. Commands
/// with several outputs check them all before any work.
Status checkWritable(const std::string &path);

/// What a path names, for telling whether two paths are one file: an
/// existing file's device and inode, or for a path not there yet its
/// directory's device and inode and the name it would take there (symbolic
/// links followed as writeFileAtomic follows them). So "a.json",
/// "./a.json", "dir/../a.json", hard links and symbolic links to one file
/// compare equal.
struct FileIdentity {
  unsigned long long device = 0;
  unsigned long long inode = 0;
  /// Empty for an existing file; else the name of the entry to be created
  /// in the directory (device, inode).
  std::string entry;
  bool operator==(const FileIdentity &) const = default;
};

/// The identity of `path`; nullopt when neither it nor its directory
/// exists (then no other path names the same file).
std::optional<FileIdentity> fileIdentity(const std::string &path);

/// Whether the existing file or directory `path` lies inside the directory
/// `dir` (at any depth; a path is not inside itself).
bool isInsideDirectory(const std::string &path, const FileIdentity &dir);

/// One output file of a command: where and what.
struct OutputFile {
  std::string path;
  std::string contents;
};

/// Writes several outputs all or nothing: every regular file goes to its
/// temporary first, and only when all of them were written are they renamed
/// into place; on any failure every temporary is removed and no output is
/// changed. (Devices and FIFOs, which cannot be staged, are written last.)
Status writeFilesAtomic(const std::vector<OutputFile> &files);

/// Checks, without writing anything, that writeDirectoryAtomic could write
/// `dir`: it is absent, an empty directory, or one `mayReplace` accepts
/// (`replace` then says so), and its parent is a writable directory.
Status checkDirectoryWritable(
    const std::string &dir,
    const std::function<bool(const std::string &)> &mayReplace = {},
    bool *replace = nullptr);

/// Writes a directory all or nothing: `files` (paths relative to `dir`,
/// subdirectories created as needed) are written into a temporary sibling
/// that is then renamed to `dir`; on any failure the sibling is removed and
/// `dir` is unchanged. An existing `dir` must be a directory that is empty
/// or that `mayReplace` accepts (it is then replaced whole); a file, or a
/// directory holding other things, is an error.
Status writeDirectoryAtomic(
    const std::string &dir, const std::vector<OutputFile> &files,
    const std::function<bool(const std::string &)> &mayReplace = {});

/// Installs SIGINT, SIGTERM and SIGHUP handlers that remove the temporary
/// files of writes still in progress (with async-signal-safe calls only) and
/// then re-raise the signal with its default action. Tools call it once at
/// start-up.
void installTemporaryFileCleanup();

/// Adds `path` to the temporaries removed on those signals; returns its slot,
/// or -1 when all slots are taken (the file is then not cleaned up). Writers
/// register a temporary before creating it and release it once it was
/// renamed or removed.
int registerTemporaryFile(const std::string &path);
void releaseTemporaryFile(int slot);

} // namespace ccsynth
