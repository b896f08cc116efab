//===- Json.cpp - Located JSON parsing and typed field access -------------===//
#include "ccsynth/Core/Json.h"

#include <cctype>
#include <vector>

namespace ccsynth {

namespace {

/// Walks well-formed JSON text (already accepted by nlohmann) to find the
/// byte offset of the value a JSON pointer addresses.
class PointerLocator {
public:
  explicit PointerLocator(const std::string &text) : s(text) {}

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

private:
  static constexpr size_t npos = std::string::npos;
  const std::string &s;

  size_t skipWs(size_t p) const {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\n' || s[p] == '\r' ||
                            s[p] == '\t'))
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
  size_t skipValue(size_t p) const {
    p = skipWs(p);
    if (p >= s.size())
      return p;
    char c = s[p];
    if (c == '"') {
      std::string ignored;
      return readString(p, ignored);
    }
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++p;
      p = skipWs(p);
      if (p < s.size() && s[p] == close)
        return p + 1;
      while (p < s.size()) {
        if (c == '{') {
          std::string ignored;
          p = readString(skipWs(p), ignored);
          p = skipWs(p) + 1; // ':'
        }
        p = skipWs(skipValue(p));
        if (p < s.size() && s[p] == ',') {
          p = skipWs(p + 1);
          continue;
        }
        return p + 1; // close
      }
      return p;
    }
    while (p < s.size() && s[p] != ',' && s[p] != '}' && s[p] != ']' &&
           s[p] != ' ' && s[p] != '\n' && s[p] != '\r' && s[p] != '\t')
      ++p;
    return p;
  }
  size_t findMember(size_t p, const std::string &key) const {
    p = skipWs(p + 1);
    if (p < s.size() && s[p] == '}')
      return npos;
    while (p < s.size()) {
      std::string name;
      p = readString(skipWs(p), name);
      p = skipWs(skipWs(p) + 1);
      if (name == key)
        return p;
      p = skipWs(skipValue(p));
      if (p < s.size() && s[p] == ',') {
        p = skipWs(p + 1);
        continue;
      }
      return npos;
    }
    return npos;
  }
  size_t findElement(size_t p, size_t index) const {
    p = skipWs(p + 1);
    if (p < s.size() && s[p] == ']')
      return npos;
    for (size_t i = 0; p < s.size(); ++i) {
      if (i == index)
        return p;
      p = skipWs(skipValue(p));
      if (p < s.size() && s[p] == ',') {
        p = skipWs(p + 1);
        continue;
      }
      return npos;
    }
    return npos;
  }
};

std::vector<std::string> splitPointer(const std::string &ptr) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < ptr.size()) {
    if (ptr[i] != '/')
      break;
    size_t next = ptr.find('/', i + 1);
    std::string tok = ptr.substr(i + 1, next == std::string::npos
                                            ? std::string::npos
                                            : next - i - 1);
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

Expected<JsonDocument> JsonDocument::parse(std::string file,
                                           std::string text) {
  JsonDocument d;
  d.fileName = std::move(file);
  d.source = std::move(text);
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
          if (d.source[open] == '"' && (open == 0 || d.source[open - 1] != '\\'))
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
    } catch (const std::exception &e) {
      return Error(std::string("malformed JSON: ") + e.what(),
                   SourceLoc{d.fileName});
    }
    return Error("malformed JSON", SourceLoc{d.fileName});
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
  PointerLocator locator(source);
  size_t off = locator.find(splitPointer(pointer));
  return locationOf(fileName, source, off);
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
  if (v.is_number_integer() || v.is_number_unsigned())
    return v.get<long long>();
  return error(ptr, fieldName(ptr) + " must be an integer, found " +
                        typeName(v));
}

Expected<double> JsonReader::number(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  if (v.is_number())
    return v.get<double>();
  return error(ptr,
               fieldName(ptr) + " must be a number, found " + typeName(v));
}

Expected<std::string> JsonReader::string(const std::string &ptr) const {
  Json::json_pointer jp(ptr);
  if (!doc.root().contains(jp))
    return error(ptr.substr(0, ptr.rfind('/')),
                 "missing field " + fieldName(ptr));
  const Json &v = doc.root().at(jp);
  if (v.is_string())
    return v.get<std::string>();
  return error(ptr,
               fieldName(ptr) + " must be a string, found " + typeName(v));
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
  for (auto it = o.begin(); it != o.end(); ++it) {
    bool ok = false;
    for (const char *a : allowed)
      ok |= it.key() == a;
    if (!ok) {
      std::string valid;
      for (const char *a : allowed)
        valid += std::string(valid.empty() ? "" : ", ") + a;
      return error(jsonPath(ptr, it.key()),
                   "unknown field '" + it.key() + "' (expected one of: " +
                       valid + ")");
    }
  }
  return Status::success();
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
