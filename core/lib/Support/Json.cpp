//===- Json.cpp - Located JSON parsing and typed field access -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements Json.h. Before nlohmann::json parses a document, the text is
// checked for nesting too deep and for duplicate keys, which the library
// would accept silently. PointerLocator maps a JSON pointer back to the
// offset of its value in the text, so JsonDocument::locate and
// JsonDocument::error give line:col. JsonReader reads typed fields
// (integer, number, string, boolean, array, object, onlyKeys) and names the
// expected type in its errors. See docs/formats.md.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Support/Json.h"

#include <algorithm>

#include <cctype>
#include <climits>
#include <map>
#include <vector>

namespace ccsynth {

namespace {

/// The deepest nesting of objects and arrays the readers accept: real files
/// nest a handful of levels; the cap keeps every walk over the text shallow.
constexpr int kMaxJsonDepth = 256;

/// Skips the string literal starting at s[p] == '"'; returns the offset after
/// its closing quote (or s.size() when unterminated).
size_t skipString(const std::string &s, size_t p) {
  for (++p; p < s.size(); ++p) {
    if (s[p] == '\\')
      ++p;
    else if (s[p] == '"')
      return p + 1;
  }
  return s.size();
}

/// Walks well-formed JSON text (already accepted by nlohmann) to find the
/// byte offset of the value a JSON pointer addresses. What it learns about
/// a container (the offsets of its elements, the offsets of its members by
/// key, in the order of the text) is kept in the document's index and
/// extended only as far as a lookup needs, so that locating every element
/// of an array, or every member of an object, costs one pass over it, not
/// one pass per lookup.
class PointerLocator {
public:
  PointerLocator(const std::string &text, JsonLocateIndex &index)
      : s(text), index(index) {}

  /// Offset of the deepest value on the pointer's path that exists.
  size_t find(const std::vector<std::string> &tokens) {
    size_t pos = skipWs(0);
    for (const std::string &tok : tokens) {
      if (pos >= s.size())
        return pos;
      if (s[pos] == '{') {
        size_t next = findMember(pos, tok);
        if (next == npos)
          return pos;
        pos = next;
      } else if (s[pos] == '[') {
        size_t idx = 0;
        if (tok.empty() || tok.size() > 18)
          return pos;
        for (char c : tok) {
          if (c < '0' || c > '9')
            return pos;
          idx = idx * 10 + size_t(c - '0');
        }
        size_t next = findElement(pos, idx);
        if (next == npos)
          return pos;
        pos = next;
      } else {
        return pos;
      }
    }
    return pos;
  }

  /// The keys of the object at offset `p`, in the order of the text.
  const std::vector<std::pair<std::string, size_t>> &members(size_t p) {
    Container &c = container(p);
    while (!c.complete)
      extend(c);
    return c.keys;
  }

  static constexpr size_t npos = std::string::npos;

private:
  const std::string &s;
  JsonLocateIndex &index;
  using Container = JsonLocateIndex::Container;

  size_t skipWs(size_t p) const {
    while (p < s.size() &&
           (s[p] == ' ' || s[p] == '\n' || s[p] == '\r' || s[p] == '\t'))
      ++p;
    return p;
  }
  /// p at '"'; returns the offset after the closing quote, decoding into out
  /// (escapes other than \" and \\ are kept raw: keys rarely use them).
  size_t readString(size_t p, std::string &out) const {
    ++p;
    while (p < s.size() && s[p] != '"') {
      if (s[p] == '\\' && p + 1 < s.size()) {
        out += s[p + 1];
        p += 2;
      } else {
        out += s[p++];
      }
    }
    return p + 1;
  }
  /// The offset after the value at p, by bracket counting (strings
  /// skipped): no recursion, one pass.
  size_t skipValue(size_t p) const {
    p = skipWs(p);
    if (p >= s.size())
      return p;
    char c = s[p];
    if (c == '"')
      return skipString(s, p);
    if (c == '{' || c == '[') {
      int depth = 0;
      while (p < s.size()) {
        char d = s[p];
        if (d == '"') {
          p = skipString(s, p);
          continue;
        }
        if (d == '{' || d == '[')
          ++depth;
        else if ((d == '}' || d == ']') && --depth == 0)
          return p + 1;
        ++p;
      }
      return p;
    }
    while (p < s.size() && s[p] != ',' && s[p] != '}' && s[p] != ']' &&
           s[p] != ' ' && s[p] != '\n' && s[p] != '\r' && s[p] != '\t')
      ++p;
    return p;
  }
  Container &container(size_t p) {
    auto [it, fresh] = index.containers.try_emplace(p);
    Container &c = it->second;
    if (fresh) {
      c.object = s[p] == '{';
      c.next = skipWs(p + 1);
      c.complete = c.next >= s.size() || s[c.next] == (c.object ? '}' : ']');
    }
    return c;
  }
  /// Reads one more element or member of `c`.
  void extend(Container &c) {
    size_t p = c.next;
    if (c.object) {
      std::string name;
      p = readString(skipWs(p), name);
      p = skipWs(skipWs(p) + 1);    // ':'
      c.byKey.try_emplace(name, p); // the first of duplicate keys
      c.keys.emplace_back(std::move(name), p);
    } else {
      c.elements.push_back(p);
    }
    p = skipWs(skipValue(p));
    if (p < s.size() && s[p] == ',') {
      c.next = skipWs(p + 1);
    } else {
      c.complete = true;
    }
  }
  size_t findMember(size_t p, const std::string &key) {
    Container &c = container(p);
    if (auto it = c.byKey.find(key); it != c.byKey.end())
      return it->second;
    while (!c.complete) {
      extend(c);
      if (c.keys.back().first == key)
        return c.keys.back().second;
    }
    return npos;
  }
  size_t findElement(size_t p, size_t i) {
    Container &c = container(p);
    while (c.elements.size() <= i && !c.complete)
      extend(c);
    return i < c.elements.size() ? c.elements[i] : npos;
  }
};

std::vector<std::string> splitPointer(const std::string &ptr) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < ptr.size()) {
    if (ptr[i] != '/')
      break;
    size_t next = ptr.find('/', i + 1);
    std::string tok = ptr.substr(
        i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
    std::string dec;
    for (size_t k = 0; k < tok.size(); ++k) {
      if (tok[k] == '~' && k + 1 < tok.size()) {
        dec += tok[k + 1] == '1' ? '/' : '~';
        ++k;
      } else {
        dec += tok[k];
      }
    }
    tokens.push_back(dec);
    i = next == std::string::npos ? ptr.size() : next;
  }
  return tokens;
}

/// Before parsing: the offset of the first bracket that nests deeper than
/// kMaxJsonDepth, or npos. Works on any text (strings are skipped).
size_t tooDeep(const std::string &s) {
  int depth = 0;
  for (size_t p = 0; p < s.size();) {
    char c = s[p];
    if (c == '"') {
      p = skipString(s, p);
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth)
        return p;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
    ++p;
  }
  return std::string::npos;
}

/// After a successful parse: the offset of the first key that repeats a key
/// of the same object (nlohmann would silently keep the last), or npos.
size_t duplicateKey(const std::string &s, std::string &key, size_t &first) {
  struct Frame {
    bool object;
    bool expectKey;
    std::map<std::string, size_t> keys;
  };
  std::vector<Frame> stack;
  for (size_t p = 0; p < s.size();) {
    char c = s[p];
    if (c == '"') {
      size_t end = skipString(s, p);
      if (!stack.empty() && stack.back().object && stack.back().expectKey) {
        std::string raw = s.substr(p, end - p);
        std::string name = raw.substr(1, raw.size() - 2);
        if (raw.find('\\') != std::string::npos) {
          Json decoded = Json::parse(raw, nullptr, false);
          if (decoded.is_string())
            name = decoded.get<std::string>();
        }
        auto [it, fresh] = stack.back().keys.emplace(name, p);
        if (!fresh) {
          key = name;
          first = it->second;
          return p;
        }
        stack.back().expectKey = false;
      }
      p = end;
      continue;
    }
    if (c == '{' || c == '[')
      stack.push_back({c == '{', c == '{', {}});
    else if ((c == '}' || c == ']') && !stack.empty())
      stack.pop_back();
    else if (c == ',' && !stack.empty() && stack.back().object)
      stack.back().expectKey = true;
    ++p;
  }
  return std::string::npos;
}

std::string typeName(const Json &v) {
  if (v.is_null())
    return "null";
  if (v.is_boolean())
    return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned())
    return "an integer";
  if (v.is_number())
    return "a number";
  if (v.is_string())
    return "a string";
  if (v.is_array())
    return "an array";
  return "an object";
}

std::string fieldName(const std::string &ptr) {
  return ptr.empty() ? std::string("document") : "'" + ptr + "'";
}

} // namespace

Expected<JsonDocument> JsonDocument::parse(std::string file, std::string text) {
  JsonDocument d;
  d.fileName = std::move(file);
  d.source = std::move(text);
  if (size_t deep = tooDeep(d.source); deep != std::string::npos) {
    SourceLoc loc = locationOf(d.fileName, d.source, deep);
    return Error("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                     " levels",
                 loc, caretLine(d.source, loc));
  }
  Json parsed = Json::parse(d.source, nullptr, /*allow_exceptions=*/false,
                            /*ignore_comments=*/false);
  if (parsed.is_discarded()) {
    // Re-parse with exceptions to learn where and why it failed.
    try {
      Json ignored = Json::parse(d.source);
      (void)ignored;
    } catch (const Json::parse_error &e) {
      // nlohmann reports the last character it read; point at the start of
      // the offending token instead.
      size_t byte = e.byte > 0 ? e.byte - 1 : 0;
      if (byte < d.source.size() && d.source[byte] == '"') {
        size_t open = byte;
        while (open > 0) {
          --open;
          if (d.source[open] == '"' &&
              (open == 0 || d.source[open - 1] != '\\'))
            break;
        }
        byte = open;
      } else {
        auto word = [](char c) {
          return std::isalnum((unsigned char)c) || c == '.' || c == '-' ||
                 c == '+';
        };
        while (byte > 0 && byte < d.source.size() && word(d.source[byte]) &&
               word(d.source[byte - 1]))
          --byte;
      }
      std::string what = e.what();
      // nlohmann's text: "[json.exception.parse_error.101] parse error at
      // line 3, column 5: syntax error while parsing ... - <detail>"
      size_t colon = what.find(": ", what.find("parse error"));
      std::string detail =
          colon == std::string::npos ? what : what.substr(colon + 2);
      SourceLoc loc = locationOf(d.fileName, d.source, byte);
      return Error("malformed JSON: " + detail, loc, caretLine(d.source, loc));
    } catch (const Json::out_of_range &e) {
      // "number overflow parsing '1e999'": nlohmann gives no position, so
      // find the number in the text.
      std::string what = e.what();
      size_t q = what.find('\'');
      size_t q2 = q == std::string::npos ? q : what.find('\'', q + 1);
      std::string token =
          q2 == std::string::npos ? "" : what.substr(q + 1, q2 - q - 1);
      size_t at = token.empty() ? std::string::npos : d.source.find(token);
      size_t colon = what.find("] ");
      std::string detail =
          colon == std::string::npos ? what : what.substr(colon + 2);
      if (at == std::string::npos)
        return Error("malformed JSON: " + detail, SourceLoc{d.fileName});
      SourceLoc loc = locationOf(d.fileName, d.source, at);
      return Error("malformed JSON: " + detail, loc, caretLine(d.source, loc));
    } catch (const std::exception &e) {
      return Error(std::string("malformed JSON: ") + e.what(),
                   SourceLoc{d.fileName});
    }
    return Error("malformed JSON", SourceLoc{d.fileName});
  }
  std::string key;
  size_t first = 0;
  if (size_t dup = duplicateKey(d.source, key, first);
      dup != std::string::npos) {
    SourceLoc loc = locationOf(d.fileName, d.source, dup);
    SourceLoc was = locationOf(d.fileName, d.source, first);
    return Error("duplicate key '" + key + "' (first given at line " +
                     std::to_string(was.line) + ", column " +
                     std::to_string(was.col) + ")",
                 loc, caretLine(d.source, loc));
  }
  d.doc = std::move(parsed);
  return d;
}

Expected<JsonDocument> JsonDocument::load(const std::string &path) {
  auto text = readFile(path);
  if (!text)
    return text.error();
  return parse(path, text.take());
}

SourceLoc JsonDocument::locate(const std::string &pointer) const {
  std::lock_guard<std::mutex> lock(index->mutex);
  PointerLocator locator(source, *index);
  return locationAt(locator.find(splitPointer(pointer)));
}

SourceLoc JsonDocument::locationAt(size_t offset) const {
  // Line starts are found once; a location is then a binary search.
  std::vector<size_t> &starts = index->lineStarts;
  if (starts.empty()) {
    starts.push_back(0);
    for (size_t i = 0; i < source.size(); ++i)
      if (source[i] == '\n')
        starts.push_back(i + 1);
  }
  if (offset > source.size())
    offset = source.size();
  size_t line = size_t(std::upper_bound(starts.begin(), starts.end(), offset) -
                       starts.begin());
  return SourceLoc{fileName, int(line), int(offset - starts[line - 1] + 1)};
}

std::vector<std::string>
JsonDocument::keysInTextOrder(const std::string &pointer) const {
  std::lock_guard<std::mutex> lock(index->mutex);
  PointerLocator locator(source, *index);
  std::vector<std::string> tokens = splitPointer(pointer);
  size_t off = locator.find(tokens);
  std::vector<std::string> keys;
  if (off >= source.size() || source[off] != '{')
    return keys;
  for (const auto &[key, at] : locator.members(off))
    keys.push_back(key);
  return keys;
}

Error JsonDocument::error(const std::string &pointer,
                          const std::string &message) const {
  SourceLoc loc = locate(pointer);
  return Error(message, loc, caretLine(source, loc));
}

const Json &JsonReader::at(const std::string &ptr) const {
  return doc.root().at(Json::json_pointer(ptr));
}

bool JsonReader::has(const std::string &objPtr, const std::string &key) const {
  const Json &o = at(objPtr);
  return o.is_object() && o.contains(key);
}

Expected<long long> JsonReader::integer(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  // Range-check before narrowing: every integer field is an int.
  if (v.is_number_unsigned()) {
    if (v.get<unsigned long long>() > (unsigned long long)INT_MAX)
      return error(ptr, fieldName(ptr) + " is out of range (" +
                            std::to_string(v.get<unsigned long long>()) +
                            "; at most " + std::to_string(INT_MAX) + ")");
    return v.get<long long>();
  }
  if (v.is_number_integer()) {
    long long x = v.get<long long>();
    if (x < INT_MIN || x > INT_MAX)
      return error(ptr, fieldName(ptr) + " is out of range (" +
                            std::to_string(x) + "; must be within " +
                            std::to_string(INT_MIN) + ".." +
                            std::to_string(INT_MAX) + ")");
    return x;
  }
  return error(ptr,
               fieldName(ptr) + " must be an integer, found " + typeName(v));
}

Expected<double> JsonReader::number(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  if (v.is_number())
    return v.get<double>();
  return error(ptr, fieldName(ptr) + " must be a number, found " + typeName(v));
}

Expected<std::string> JsonReader::string(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  if (v.is_string())
    return v.get<std::string>();
  return error(ptr, fieldName(ptr) + " must be a string, found " + typeName(v));
}

Expected<bool> JsonReader::boolean(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  if (v.is_boolean())
    return v.get<bool>();
  return error(ptr,
               fieldName(ptr) + " must be a boolean, found " + typeName(v));
}

Status JsonReader::array(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  if (!doc.root().at(jp).is_array())
    return error(ptr, fieldName(ptr) + " must be an array, found " +
                          typeName(doc.root().at(jp)));
  return Status::success();
}

Status JsonReader::object(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  if (!doc.root().at(jp).is_object())
    return error(ptr, fieldName(ptr) + " must be an object, found " +
                          typeName(doc.root().at(jp)));
  return Status::success();
}

Status JsonReader::onlyKeys(const std::string &ptr,
                            std::initializer_list<const char *> allowed) const {
  const Json &o = at(ptr);
  if (!o.is_object())
    return Status::success();
  auto known = [&](const std::string &key) {
    for (const char *a : allowed)
      if (key == a)
        return true;
    return false;
  };
  bool anyUnknown = false;
  for (auto it = o.begin(); it != o.end() && !anyUnknown; ++it)
    anyUnknown = !known(it.key());
  if (!anyUnknown)
    return Status::success();
  // nlohmann orders keys alphabetically; report the first unknown key in
  // the file instead, found in one pass over the object's text.
  std::string unknown;
  for (const std::string &key : doc.keysInTextOrder(ptr))
    if (!known(key)) {
      unknown = key;
      break;
    }
  std::string valid;
  for (const char *a : allowed)
    valid += std::string(valid.empty() ? "" : ", ") + a;
  return error(jsonPath(ptr, unknown), "unknown field '" + unknown +
                                           "' (expected one of: " + valid +
                                           ")");
}

std::string jsonPath(const std::string &parent, const std::string &key) {
  std::string esc;
  for (char c : key) {
    if (c == '~')
      esc += "~0";
    else if (c == '/')
      esc += "~1";
    else
      esc += c;
  }
  return parent + "/" + esc;
}

std::string jsonPath(const std::string &parent, size_t index) {
  return parent + "/" + std::to_string(index);
}

} // namespace ccsynth
