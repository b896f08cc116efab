//===- Json.h - JSON documents that remember where each value came from ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// nlohmann::json reads the text; JsonDocument keeps the text so that any
// value, addressed by its JSON pointer, can be mapped back to line:col for
// error messages about well-formed but semantically wrong input.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ccsynth {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

/// What locating values has learnt about a document's text (Json.cpp):
/// line starts, and per container the offsets of the elements or members
/// read so far. Built lazily, so a document that is never asked pays
/// nothing.
struct JsonLocateIndex {
  struct Container {
    bool object = false;
    bool complete = false;
    size_t next = 0; ///< where the next unread element or member starts
    std::vector<size_t> elements;                     ///< arrays
    std::vector<std::pair<std::string, size_t>> keys; ///< objects
    std::unordered_map<std::string, size_t> byKey;    ///< objects
  };
  std::mutex mutex;
  std::vector<size_t> lineStarts;
  std::unordered_map<size_t, Container> containers;
};

/// Stops reading a document early (a time limit): `stopped` is asked every
/// few thousand values, and once it says so, reading ends with `why`.
struct JsonStop {
  std::function<bool()> stopped;
  std::string why;
};

/// A parsed JSON file plus the means to locate its values.
class JsonDocument {
public:
  /// Parses `text`; a syntax error is reported at its line:col.
  static Expected<JsonDocument> parse(std::string file, std::string text,
                                      const JsonStop &stop = {});
  /// Reads and parses a file.
  static Expected<JsonDocument> load(const std::string &path);
  /// A document for locating values only, without building its tree
  /// (root() is null): `text` must be JSON already read without error.
  static JsonDocument forLocating(std::string file, std::string text);
  /// The same for the file at `path` (of at most `maxBytes`, read before
  /// without error): nothing when it cannot be read or is not a JSON
  /// object (a .ccl program, MSCCL XML).
  static std::optional<JsonDocument> loadForLocating(const std::string &path,
                                                     size_t maxBytes);

  const Json &root() const { return doc; }
  const std::string &file() const { return fileName; }
  const std::string &text() const { return source; }

  /// Location of the value at `pointer` (e.g. "/links/3/src"); falls back to
  /// the nearest located ancestor, then to the file alone. Locating many
  /// values costs one pass over the containers they are in, in all.
  SourceLoc locate(const std::string &pointer) const;

  /// The first key of the object at `pointer`, in the order of the text,
  /// for which `pred` holds (none when it is not an object). The text is
  /// read up to that key only.
  std::optional<std::string> firstKeyInTextOrder(
      const std::string &pointer,
      const std::function<bool(const std::string &)> &pred) const;

  /// An Error located at `pointer`.
  Error error(const std::string &pointer, const std::string &message) const;

private:
  SourceLoc locationAt(size_t offset) const;

  std::string fileName;
  std::string source;
  Json doc;
  std::shared_ptr<JsonLocateIndex> index = std::make_shared<JsonLocateIndex>();
};

/// Typed accessors used by the readers. Each returns an Error located at the
/// field when it is missing or has the wrong type.
class JsonReader {
public:
  JsonReader(const JsonDocument &doc) : doc(doc) {}

  const JsonDocument &document() const { return doc; }
  Error error(const std::string &ptr, const std::string &msg) const {
    return doc.error(ptr, msg);
  }

  /// The value at `ptr` (which must exist).
  const Json &at(const std::string &ptr) const;
  bool has(const std::string &objPtr, const std::string &key) const;

  Expected<long long> integer(const std::string &ptr) const;
  Expected<double> number(const std::string &ptr) const;
  Expected<std::string> string(const std::string &ptr) const;
  Expected<bool> boolean(const std::string &ptr) const;
  /// Checks that the value at ptr is an array / object.
  Status array(const std::string &ptr) const;
  Status object(const std::string &ptr) const;
  /// Rejects keys of the object at ptr that are not in `allowed` (typos in
  /// hand-written files are otherwise silently ignored).
  Status onlyKeys(const std::string &ptr,
                  std::initializer_list<const char *> allowed) const;

private:
  const JsonDocument &doc;
};

/// Joins a JSON pointer and a key or index, escaping per RFC 6901.
std::string jsonPath(const std::string &parent, const std::string &key);
std::string jsonPath(const std::string &parent, size_t index);

} // namespace ccsynth
