//===- ScopedNames.h - Names bound in nested scopes -----------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The names a .ccl program binds (parameters, lets, loop and sum variables)
// in nested scopes, innermost first: Sema keeps their types here, the
// evaluator their values. Binding, lookup and leaving a scope take constant
// time whatever the number of names (a program may declare millions of
// parameters, and a loop may look one up in every iteration), and a binding
// costs one entry of a flat vector and a bucket, not a tree node and a copy
// of its name: names are the syntax tree's strings, which outlive the table.
//
// Every bucket holds the newest entry whose name hashes there; each entry
// links to the entry that held its bucket before it. Chains therefore run
// from newer to older entries, an inner binding is found before the one it
// shadows, and leaving a scope (whose entries are the newest) only restores
// their buckets' previous heads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cassert>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace ccsynth::dsl {

template <typename T> class ScopedNames {
public:
  /// Room for `n` bindings at once without growing.
  void reserve(size_t n) {
    entries.reserve(n);
    if (n > heads.size())
      rehash(n);
  }

  void enter() { marks.push_back(entries.size()); }
  void leave() {
    size_t mark = marks.back();
    marks.pop_back();
    while (entries.size() > mark) {
      const Entry &e = entries.back();
      heads[bucket(e.view())] = e.prev;
      entries.pop_back();
    }
  }

  /// Binds `name` (which must outlive the binding) in the innermost scope.
  void bind(std::string_view name, T value) {
    if (entries.size() >= heads.size())
      rehash(std::max<size_t>(16, heads.size() * 2));
    assert(entries.size() < UINT32_MAX && name.size() <= UINT32_MAX);
    uint32_t &head = heads[bucket(name)];
    entries.push_back(
        Entry{name.data(), (uint32_t)name.size(), head, std::move(value)});
    head = (uint32_t)entries.size();
  }

  /// The innermost binding of `name`, or null.
  const T *find(std::string_view name) const {
    const Entry *e = newest(name, 0);
    return e ? &e->value : nullptr;
  }
  /// The binding of `name` in the innermost scope, or null.
  const T *findInScope(std::string_view name) const {
    const Entry *e = newest(name, marks.empty() ? 0 : marks.back());
    return e ? &e->value : nullptr;
  }

  /// The number of open scopes.
  size_t scopes() const { return marks.size(); }
  /// Calls f(name, value) for every binding of scope `k` (0 = outermost),
  /// in the order they were made.
  template <typename F> void forEachIn(size_t k, F &&f) const {
    size_t end = k + 1 < marks.size() ? marks[k + 1] : entries.size();
    for (size_t i = marks[k]; i < end; ++i)
      f(entries[i].view(), entries[i].value);
  }

private:
  struct Entry {
    const char *name;
    uint32_t size;
    /// 1 + the index of the entry that held this bucket before (0: none).
    uint32_t prev;
    T value;
    std::string_view view() const { return {name, size}; }
  };

  size_t bucket(std::string_view name) const {
    return std::hash<std::string_view>{}(name) & (heads.size() - 1);
  }
  /// The newest entry named `name` at index `from` or above.
  const Entry *newest(std::string_view name, size_t from) const {
    if (heads.empty())
      return nullptr;
    for (uint32_t i = heads[bucket(name)]; i > from; i = entries[i - 1].prev)
      if (entries[i - 1].view() == name)
        return &entries[i - 1];
    return nullptr;
  }
  /// At least `n` buckets (a power of two), the chains rebuilt in entry
  /// order so that they still run from newer to older.
  void rehash(size_t n) {
    size_t size = 16;
    while (size < n)
      size *= 2;
    heads.assign(size, 0);
    for (size_t i = 0; i < entries.size(); ++i) {
      uint32_t &head = heads[bucket(entries[i].view())];
      entries[i].prev = head;
      head = (uint32_t)(i + 1);
    }
  }

  std::vector<Entry> entries;
  std::vector<uint32_t> heads;
  std::vector<size_t> marks;
};

} // namespace ccsynth::dsl
