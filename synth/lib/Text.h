//===- Text.h - Number formatting of the synthesizer's messages -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once

#include <sstream>
#include <string>

namespace ccsynth::synth::detail {

/// `x` with `prec` digits after the point ("12.35").
inline std::string fmt(double x, int prec = 2) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << x;
  return os.str();
}

} // namespace ccsynth::synth::detail
