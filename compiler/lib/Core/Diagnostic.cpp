//===- Diagnostic.cpp - Error formatting and safe file I/O ----------------===//
#include "ccsynth/Core/Diagnostic.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
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

Status writeFileAtomic(const std::string &path, const std::string &contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Error("cannot write '" + path + "': " + std::strerror(errno));
    out << contents;
    out.flush();
    if (!out) {
      int saved = errno;
      std::remove(tmp.c_str());
      return Error("cannot write '" + path + "': " + std::strerror(saved));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    std::remove(tmp.c_str());
    return Error("cannot write '" + path + "': " + std::strerror(saved));
  }
  return Status::success();
}

} // namespace ccsynth
