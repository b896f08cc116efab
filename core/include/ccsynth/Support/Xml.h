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
  /// The attributes in the order of the text, each written as its name,
  /// '\0', its value (entities replaced), '\0': one string per element
  /// rather than two per attribute (XML allows no NUL in either).
  std::string attributeText;
  std::vector<std::unique_ptr<XmlElement>> children;
  SourceLoc loc;

  /// The attribute's value, or nullopt.
  std::optional<std::string> attr(const std::string &key) const;
  /// The number of attributes.
  size_t attributeCount() const;
  /// Children with the given element name.
  std::vector<const XmlElement *> childrenNamed(const std::string &n) const;
};

/// The most attributes an element may have (NCCL's reader of topology
/// dumps, MAX_ATTR_COUNT, takes no more).
inline constexpr size_t kMaxXmlAttributes = 16;
/// The most elements a document may have: NCCL reads at most 256
/// (NCCL_TOPO_XML_MAX_NODES), and builds that raise the cap for many NICs
/// a few thousand.
inline constexpr size_t kMaxXmlElements = 65536;

/// Parses a document and returns its root element; malformed input, and
/// an element or document past the limits above, gets a located error.
Expected<std::unique_ptr<XmlElement>> parseXml(const std::string &file,
                                               const std::string &text);

} // namespace ccsynth
