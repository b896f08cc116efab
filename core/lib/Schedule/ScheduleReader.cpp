//===- ScheduleReader.cpp - Schedule JSON of any size, without a DOM ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A schedule of a 512-rank ReduceScatter holds four million transfers:
// 376 MB of JSON that a DOM would need gigabytes for. The transfer list is
// therefore read by a scanner that accepts exactly the objects the general
// reader accepts in their plain form (integers, unescaped strings, any key
// order and whitespace) and builds Transfers directly. The rest of the
// document, with the list blanked out in place (newlines kept, so every
// other location is unchanged), goes through the general reader. Whatever
// the scanner does not recognise is handed to the general reader, which
// reports it with its usual located message; only files too large for the
// general reader get the scanner's own located error.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Support/Json.h"
#include "ccsynth/Schedule/Schedule.h"

#include <climits>
#include <string_view>

namespace ccsynth {

namespace {

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

class TransferScanner {
public:
  explicit TransferScanner(const std::string &text) : t(text) {}

  /// Offset of the value of the top-level key "transfers", or npos when the
  /// document is not a plain object with exactly one such key.
  size_t findTransfers() {
    p = 0;
    space();
    if (!eat('{'))
      return npos;
    size_t found = npos;
    space();
    if (eat('}'))
      return npos;
    for (;;) {
      space();
      std::string_view key;
      if (!string(key))
        return npos;
      space();
      if (!eat(':'))
        return npos;
      space();
      if (key == "transfers") {
        if (found != npos)
          return npos;
        found = p;
      }
      if (!skipValue())
        return npos;
      space();
      if (eat(','))
        continue;
      if (eat('}'))
        break;
      return npos;
    }
    space();
    return p == t.size() ? found : npos;
  }

  /// Reads the array at `at`; false (with failedAt set) on anything that is
  /// not a transfer in plain form or that the general reader would refuse.
  bool scan(size_t at, std::vector<Transfer> &out) {
    p = at;
    failedAt = at;
    if (!eat('['))
      return false;
    arrayBegin = at;
    space();
    if (eat(']')) {
      arrayEnd = p;
      return true;
    }
    for (;;) {
      space();
      failedAt = p;
      Transfer tr;
      if (!transfer(tr))
        return false;
      out.push_back(tr);
      space();
      if (eat(','))
        continue;
      if (eat(']'))
        break;
      failedAt = p;
      return false;
    }
    arrayEnd = p;
    return true;
  }

  static constexpr size_t npos = std::string::npos;
  size_t failedAt = 0;
  size_t arrayBegin = 0, arrayEnd = 0;

private:
  const std::string &t;
  size_t p = 0;

  void space() {
    while (p < t.size() && isSpace(t[p]))
      ++p;
  }
  bool eat(char c) {
    if (p < t.size() && t[p] == c) {
      ++p;
      return true;
    }
    return false;
  }

  /// A string without escapes or control characters.
  bool string(std::string_view &s) {
    if (!eat('"'))
      return false;
    size_t begin = p;
    while (p < t.size() && t[p] != '"') {
      unsigned char c = (unsigned char)t[p];
      if (c == '\\' || c < 0x20)
        return false;
      ++p;
    }
    if (p == t.size())
      return false;
    s = std::string_view(t).substr(begin, p - begin);
    ++p;
    return true;
  }

  /// A JSON integer (no fraction or exponent) within int's range.
  bool integer(long long &v) {
    bool neg = eat('-');
    size_t begin = p;
    while (p < t.size() && t[p] >= '0' && t[p] <= '9')
      ++p;
    size_t digits = p - begin;
    if (digits == 0 || digits > 10 || (digits > 1 && t[begin] == '0'))
      return false;
    if (p < t.size() && (t[p] == '.' || t[p] == 'e' || t[p] == 'E'))
      return false;
    long long x = 0;
    for (size_t i = begin; i < p; ++i)
      x = x * 10 + (t[i] - '0');
    v = neg ? -x : x;
    return v >= INT_MIN && v <= INT_MAX;
  }

  bool nonNegative(int &out, int lo = 0) {
    long long v;
    if (!integer(v) || v < lo)
      return false;
    out = (int)v;
    return true;
  }

  bool chunk(ChunkLoc &c) {
    if (!eat('['))
      return false;
    space();
    if (!nonNegative(c.rank))
      return false;
    space();
    if (!eat(','))
      return false;
    space();
    std::string_view buf;
    if (!string(buf))
      return false;
    auto kind = parseBufferKind(std::string(buf));
    if (!kind)
      return false;
    c.buffer = *kind;
    space();
    if (!eat(','))
      return false;
    space();
    if (!nonNegative(c.index))
      return false;
    space();
    return eat(']');
  }

  bool transfer(Transfer &tr) {
    if (!eat('{'))
      return false;
    enum : unsigned {
      Step = 1,
      Op = 2,
      Src = 4,
      Dst = 8,
      Count = 16,
      Link = 32,
      Channel = 64,
      Tb = 128,
      Switch = 256
    };
    unsigned seen = 0;
    space();
    if (eat('}'))
      return false;
    for (;;) {
      space();
      std::string_view key;
      if (!string(key))
        return false;
      space();
      if (!eat(':'))
        return false;
      space();
      unsigned bit;
      bool ok;
      if (key == "step") {
        bit = Step;
        ok = nonNegative(tr.step);
      } else if (key == "op") {
        bit = Op;
        std::string_view op;
        ok = string(op);
        if (op == "copy")
          tr.op = TransferOp::Copy;
        else if (op == "reduce")
          tr.op = TransferOp::Reduce;
        else if (op == "switch-reduce")
          tr.op = TransferOp::SwitchReduce;
        else if (op == "multicast")
          tr.op = TransferOp::Multicast;
        else
          ok = false;
      } else if (key == "src") {
        bit = Src;
        ok = chunk(tr.src);
      } else if (key == "dst") {
        bit = Dst;
        ok = chunk(tr.dst);
      } else if (key == "count") {
        bit = Count;
        ok = nonNegative(tr.count, 1);
      } else if (key == "link") {
        bit = Link;
        ok = nonNegative(tr.link);
      } else if (key == "switch") {
        bit = Switch;
        ok = nonNegative(tr.sw);
      } else if (key == "channel") {
        bit = Channel;
        ok = nonNegative(tr.channel);
      } else if (key == "tb") {
        bit = Tb;
        ok = nonNegative(tr.threadblock);
      } else {
        return false;
      }
      if (!ok || (seen & bit))
        return false;
      seen |= bit;
      space();
      if (eat(','))
        continue;
      if (eat('}'))
        break;
      return false;
    }
    // A switch transfer names its switch and no link; others no switch.
    if (isSwitchOp(tr.op) != bool(seen & Switch) ||
        (isSwitchOp(tr.op) && (seen & Link)))
      return false;
    return (seen & (Step | Op | Src | Dst)) == (Step | Op | Src | Dst);
  }

  /// Skips one value of the top-level object (strings may hold escapes).
  bool skipValue() {
    if (p >= t.size())
      return false;
    if (t[p] != '"' && t[p] != '{' && t[p] != '[') {
      size_t begin = p;
      while (p < t.size() && t[p] != ',' && t[p] != '}' && t[p] != ']' &&
             !isSpace(t[p]))
        ++p;
      return p > begin;
    }
    int depth = 0;
    do {
      if (p >= t.size())
        return false;
      char c = t[p];
      if (c == '"') {
        for (++p; p < t.size() && t[p] != '"'; ++p)
          if (t[p] == '\\')
            ++p;
        if (p >= t.size())
          return false;
        ++p;
      } else if (c == '{' || c == '[') {
        ++depth;
        ++p;
      } else if (c == '}' || c == ']') {
        --depth;
        ++p;
      } else {
        ++p;
      }
    } while (depth > 0);
    return true;
  }
};

} // namespace

Expected<Schedule> readScheduleJson(const std::string &file, std::string text,
                                    size_t generalLimit) {
  std::vector<Transfer> transfers;
  TransferScanner scan(text);
  size_t at = scan.findTransfers();
  bool scanned = at != TransferScanner::npos && scan.scan(at, transfers);
  if (!scanned) {
    if (text.size() > generalLimit) {
      size_t where = at == TransferScanner::npos ? 0 : scan.failedAt;
      SourceLoc loc = locationOf(file, text, where);
      return Error(
          at == TransferScanner::npos
              ? "not a schedule whose \"transfers\" list this reader can "
                "find (files over " +
                    std::to_string(generalLimit >> 20) +
                    " MiB are read only in the form ccsynth writes)"
              : "transfer not in the form ccsynth writes (files over " +
                    std::to_string(generalLimit >> 20) +
                    " MiB are read only in that form: integers, plain "
                    "strings, known keys once each)",
          loc, caretLine(text, loc));
    }
    auto doc = JsonDocument::parse(file, std::move(text));
    if (!doc)
      return doc.error();
    return parseScheduleJson(*doc);
  }
  // Blank the list's elements in place; lines (and so every location the
  // general reader reports) stay where they were.
  for (size_t i = scan.arrayBegin + 1; i + 1 < scan.arrayEnd; ++i)
    if (text[i] != '\n')
      text[i] = ' ';
  auto doc = JsonDocument::parse(file, std::move(text));
  if (!doc)
    return doc.error();
  auto sched = parseScheduleJson(*doc);
  if (!sched)
    return sched.error();
  sched->transfers = std::move(transfers);
  return sched;
}

} // namespace ccsynth
