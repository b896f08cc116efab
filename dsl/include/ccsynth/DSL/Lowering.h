//===- Lowering.h - Evaluate a .ccl program into a chunk-level schedule ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Lowering runs a checked program with concrete parameter values: it builds
// the collective (a built-in one, or a custom one from its pre/post blocks),
// executes loops and branches, and turns each executed copy/reduce into a
// Transfer. It reports, at the offending expression, everything that needs
// values: ranks and chunk indices outside the buffers, reading a chunk that
// holds no data yet, reducing into an empty chunk, overlapping source and
// destination, two writes of one chunk (or a read and a write) in one
// `step` block, division by zero, integer overflow, failed assertions, and
// programs that would run too long or build too large a collective.
//
// Steps. Outside `step` blocks each transfer gets the earliest step that
// respects program order on the chunks it touches (MSCCLang-style):
//   step = 1 + max(last step that wrote a source chunk,
//                  last step that wrote or read a destination chunk)
// so independent transfers share a step and the schedule computes exactly
// what running the statements one by one would. All transfers of a `step`
// block share one step, the earliest that respects their dependencies and
// comes after the previous step block, and see the buffers as they were
// before it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/DSL/AST.h"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ccsynth::dsl {

struct LoweringOptions {
  /// Parameter overrides (`-D name=value`); each must name a `param`.
  std::map<std::string, long long> defines;
  /// Total loop iterations (for loops and sums) before giving up.
  long long maxIterations = 10'000'000;
  /// Transfers the program may emit.
  long long maxTransfers = 4'000'000;
  /// Chunks all transfers together may move (a transfer of `count` chunks
  /// moves `count`), which bounds the work of lowering and verifying.
  long long maxChunkMoves = 1LL << 26;
  /// Chunk slots over all ranks and buffers, and entries of a custom
  /// collective's postcondition, the program may declare.
  long long maxSlots = 1LL << 22;
  /// Name of the schedule; empty = the file's stem.
  std::string name;
};

/// A program's parameters with their final values, in declaration order.
/// The names are kept end to end in one string: a program may declare
/// millions of parameters, and a string apiece would cost more than its
/// text.
class ParamList {
public:
  void reserve(size_t count, size_t nameBytes) {
    names.reserve(nameBytes);
    ends.reserve(count);
    values.reserve(count);
  }
  void add(std::string_view name, long long value) {
    names += name;
    ends.push_back(names.size());
    values.push_back(value);
  }
  size_t size() const { return values.size(); }
  bool empty() const { return values.empty(); }
  /// Parameter i: its name and value.
  std::pair<std::string_view, long long> operator[](size_t i) const {
    size_t begin = i ? ends[i - 1] : 0;
    return {std::string_view(names).substr(begin, ends[i] - begin), values[i]};
  }

  class Iterator {
  public:
    Iterator(const ParamList &l, size_t i) : list(&l), index(i) {}
    std::pair<std::string_view, long long> operator*() const {
      return (*list)[index];
    }
    Iterator &operator++() {
      ++index;
      return *this;
    }
    bool operator==(const Iterator &o) const { return index == o.index; }

  private:
    const ParamList *list;
    size_t index;
  };
  Iterator begin() const { return {*this, 0}; }
  Iterator end() const { return {*this, size()}; }

private:
  std::string names;
  std::vector<size_t> ends;
  std::vector<long long> values;
};

/// A lowered program: its schedule and the parameter values it ran with.
struct LoweredProgram {
  Schedule schedule;
  /// Every `param` with its final value, in declaration order.
  ParamList params;
  /// The `collective` declaration.
  SourceLoc collectiveLoc;
  /// For a custom collective: postLocs[r][i] is the `output(r, i) = ...`
  /// statement that constrains output chunk i of rank r (unknown when
  /// unconstrained); empty for built-in collectives.
  std::vector<std::vector<SourceLoc>> postLocs;

  /// Where the postcondition of output chunk `index` of `rank` is declared:
  /// its `output(...) = ...` statement, or the collective declaration.
  SourceLoc postconditionLoc(int rank, int index) const;
};

/// Checks (Sema) and evaluates `prog`; the first problem is returned,
/// located in the program's text with a caret line.
Expected<LoweredProgram> lowerProgram(const Program &prog,
                                      const LoweringOptions &options = {});

} // namespace ccsynth::dsl
