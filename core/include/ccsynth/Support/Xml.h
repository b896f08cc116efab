//===- Xml.h - A small located XML reader (NCCL topology dumps, MSCCL XML) ===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Reads elements, attributes and nesting, skips the prolog, comments and
// text; every element remembers its line:col. Enough for the machine-written
// XML ccsynth consumes; not a general XML implementation (no DTDs, no
// namespaces, entities limited to the five predefined ones).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ccsynth {

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<std::unique_ptr<XmlElement>> children;
  SourceLoc loc;

  /// The attribute's value, or nullopt.
  std::optional<std::string> attr(const std::string &key) const;
  /// Children with the given element name.
  std::vector<const XmlElement *> childrenNamed(const std::string &n) const;
};

/// Parses a document and returns its root element; malformed input gets a
/// located error.
Expected<std::unique_ptr<XmlElement>> parseXml(const std::string &file,
                                               const std::string &text);

} // namespace ccsynth
