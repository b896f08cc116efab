//===- ScheduleText.cpp - Schedule JSON from text, with locations ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Import/ScheduleText.h"

#include "ccsynth/Support/Json.h"

#include <algorithm>

namespace ccsynth {

namespace {

/// Skips one JSON value of an already validated document.
size_t skipValue(const std::string &t, size_t i) {
  if (i >= t.size())
    return i;
  if (t[i] == '"') {
    for (++i; i < t.size() && t[i] != '"'; ++i)
      if (t[i] == '\\')
        ++i;
    return i + 1;
  }
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    for (; i < t.size(); ++i) {
      char c = t[i];
      if (c == '"')
        i = skipValue(t, i) - 1;
      else if (c == '{' || c == '[')
        ++depth;
      else if ((c == '}' || c == ']') && --depth == 0)
        return i + 1;
    }
    return i;
  }
  while (i < t.size() && t[i] != ',' && t[i] != ']' && t[i] != '}')
    ++i;
  return i;
}

size_t skipSpace(const std::string &t, size_t i) {
  while (i < t.size() &&
         (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t'))
    ++i;
  return i;
}

} // namespace

/// Locates every element of /transfers in one pass: the first through the
/// document's locator, the rest by skipping values, with line numbers from
/// a table of line starts (locating each one separately is quadratic).
static void fillLocs(Schedule &s, const JsonDocument &doc) {
  if (s.transferLocs.size() == s.transfers.size() || s.transfers.empty())
    return;
  const std::string &text = doc.text();
  SourceLoc first = doc.locate("/transfers/0");
  std::vector<size_t> lineStart{0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n')
      lineStart.push_back(i + 1);
  if (!first.known() || first.line > (int)lineStart.size())
    return;
  size_t off = lineStart[first.line - 1] + (first.col - 1);
  if (off >= text.size() || text[off] != '{')
    return; // not a list of transfer objects (not a schedule JSON file)
  auto locOf = [&](size_t o) {
    size_t line = std::upper_bound(lineStart.begin(), lineStart.end(), o) -
                  lineStart.begin();
    return SourceLoc{doc.file(), (int)line, (int)(o - lineStart[line - 1]) + 1};
  };
  std::vector<SourceLoc> locs;
  locs.reserve(s.transfers.size());
  for (size_t i = 0; i < s.transfers.size() && off < text.size(); ++i) {
    locs.push_back(locOf(off));
    off = skipSpace(text, skipValue(text, off));
    if (off < text.size() && text[off] == ',')
      off = skipSpace(text, off + 1);
  }
  if (locs.size() == s.transfers.size())
    s.transferLocs = std::move(locs);
}

Expected<Schedule> parseScheduleText(const std::string &file,
                                     const std::string &text) {
  auto doc = JsonDocument::parse(file, text);
  if (!doc)
    return doc.error();
  auto sched = parseScheduleJson(*doc);
  if (!sched)
    return sched.error();
  fillLocs(*sched, *doc);
  return sched;
}

void locateTransfers(Schedule &schedule, const std::string &path) {
  if (schedule.transferLocs.size() == schedule.transfers.size())
    return;
  // The schedule was read from this file: its text is only walked to
  // find where each transfer starts, without a tree of it.
  if (auto doc = JsonDocument::loadForLocating(path, kMaxScheduleBytes))
    fillLocs(schedule, *doc);
}

} // namespace ccsynth
