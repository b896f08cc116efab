//===- Concat.h - Joining strings and the syntax tree's names -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The syntax tree's names are views of the program's text; messages join
// them with strings and literals. These are the joins C++26 adds to
// std::string, for the .ccl front end's messages until then.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace ccsynth::dsl {

inline std::string operator+(const std::string &a, std::string_view b) {
  std::string s;
  s.reserve(a.size() + b.size());
  return s.append(a).append(b);
}
inline std::string operator+(std::string &&a, std::string_view b) {
  return std::move(a.append(b));
}
inline std::string operator+(std::string_view a, const std::string &b) {
  std::string s;
  s.reserve(a.size() + b.size());
  return s.append(a).append(b);
}
inline std::string operator+(const char *a, std::string_view b) {
  return std::string(a).append(b);
}
inline std::string operator+(std::string_view a, const char *b) {
  return std::string(a).append(b);
}

} // namespace ccsynth::dsl
