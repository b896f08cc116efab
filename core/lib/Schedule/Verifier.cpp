//===- Verifier.cpp - Symbolic execution of chunk-level schedules ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements verifySchedule (Verifier.h). ValueStore holds the sets of
// symbolic values each slot holds, shared between slots; SymbolicExecutor
// runs the schedule step by step: checkShape (ranks, buffers, chunk ranges),
// checkSwitch and checkGroup (switch groups against the topology's
// switches), checkStep (races inside a step, then the copies and the
// reductions, rejecting values counted twice) and checkOutputs (each output
// chunk against the postcondition, with a readable difference).
// See docs/in-network.md ("Schedules, verifier, simulators, bound").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Schedule/Verifier.h"

#include "ccsynth/Topology/LinkIndex.h"

#include "ccsynth/Topology/Topology.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <variant>

namespace ccsynth {

const char *toString(VerifyErrorKind kind) {
  switch (kind) {
  case VerifyErrorKind::OutOfRange:
    return "out-of-range";
  case VerifyErrorKind::NoLink:
    return "no-link";
  case VerifyErrorKind::BadLink:
    return "bad-link";
  case VerifyErrorKind::BadSwitch:
    return "bad-switch";
  case VerifyErrorKind::UninitializedRead:
    return "uninitialized-read";
  case VerifyErrorKind::ReduceIntoUndefined:
    return "reduce-into-undefined";
  case VerifyErrorKind::WriteConflict:
    return "write-conflict";
  case VerifyErrorKind::ReadWriteRace:
    return "read-write-race";
  case VerifyErrorKind::DuplicateReduction:
    return "duplicate-reduction";
  case VerifyErrorKind::MissingOutput:
    return "missing-output";
  case VerifyErrorKind::WrongOutput:
    return "wrong-output";
  }
  return "?";
}

namespace {

/// The sorted union of two sorted sets of values, or, when they share one,
/// that value (a reduction would count it twice).
std::variant<std::vector<int>, int> disjointUnion(std::span<const int> a,
                                                  std::span<const int> b) {
  std::vector<int> sum;
  sum.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(sum));
  if (auto dup = std::adjacent_find(sum.begin(), sum.end()); dup != sum.end())
    return *dup;
  return sum;
}

/// The symbolic values of chunk slots: -1 undefined, v >= 0 the single
/// input value v, <= -2 a reduction of several values kept once in `sums`
/// and shared by every slot a copy reaches (an AllReduce's result is
/// copied to every rank: n slots, one set of n values). Sums are reference
/// counted: a partial sum that no slot holds any more is dropped.
class ValueStore {
public:
  static constexpr int kUndefined = -1;
  /// The values of `*code` (which must stay in place while the view is
  /// used: a single value is viewed in the code itself).
  std::span<const int> ids(const int &code) const {
    if (code >= 0)
      return {&code, 1};
    if (code == kUndefined)
      return {};
    return sums[-2 - code].ids;
  }
  /// A new sum (held by nothing yet) of sorted, distinct `ids` (>= 2).
  int add(std::vector<int> ids) {
    int s;
    if (!unused.empty()) {
      s = unused.back();
      unused.pop_back();
      sums[s] = {std::move(ids), 0};
    } else {
      s = (int)sums.size();
      sums.push_back({std::move(ids), 0});
    }
    return -2 - s;
  }
  void retain(int code) {
    if (code <= -2)
      ++sums[-2 - code].refs;
  }
  void release(int code) {
    if (code > -2)
      return;
    Sum &sum = sums[-2 - code];
    if (--sum.refs == 0) {
      std::vector<int>().swap(sum.ids);
      unused.push_back(-2 - code);
    }
  }

private:
  struct Sum {
    std::vector<int> ids;
    int refs = 0;
  };
  std::vector<Sum> sums;
  std::vector<int> unused;
};

class SymbolicExecutor {
public:
  SymbolicExecutor(const Schedule &s, const VerifyOptions &o, VerifyResult &r)
      : sched(s), col(s.collective), opts(o), result(r) {}

  void run();

private:
  const Schedule &sched;
  const Collective &col;
  const VerifyOptions &opts;
  VerifyResult &result;
  /// Built on the first link check (only with a topology).
  std::optional<LinkIndex> linkIndex;
  /// Flat slot storage: offsets[rank*3+buffer] + index; each a code of
  /// `values`.
  std::vector<size_t> offsets;
  std::vector<int> slots;
  ValueStore values;
  /// Per slot: the transfer writing it in the step being checked, or -1.
  std::vector<int> writerOf;
  /// The switch groups (groups.of[t]: transfer t's, or -1).
  SwitchGroups groups;

  bool full() const { return (int)result.issues.size() >= opts.maxIssues; }
  void report(VerifyErrorKind kind, int t, ChunkLoc loc, std::string msg) {
    if (full())
      return;
    int step = t >= 0 ? sched.transfers[t].step : -1;
    std::string prefix;
    if (t >= 0)
      prefix = "transfer #" + std::to_string(t) + " (step " +
               std::to_string(step) + "): ";
    result.issues.push_back({kind, t, step, loc, prefix + msg});
  }
  size_t slotOf(ChunkLoc loc) const {
    ChunkLoc c = col.canonical(loc);
    return offsets[c.rank * 3 + (int)c.buffer] + c.index;
  }
  std::string show(std::span<const int> ids, size_t limit = 6) const;
  std::string describeDiff(std::span<const int> want,
                           std::span<const int> have) const;
  bool checkShape(int t);
  bool checkSwitch(int t);
  bool checkGroup(int t);
  void checkStep(const std::vector<int> &group);
  void checkOutputs();
};

std::string SymbolicExecutor::show(std::span<const int> ids,
                                   size_t limit) const {
  if (ids.empty())
    return "{}";
  std::string s;
  for (size_t i = 0; i < ids.size() && i < limit; ++i)
    s += (i ? " + " : "") + valueName(col, ids[i]);
  if (ids.size() > limit)
    s += " + ... (" + std::to_string(ids.size()) + " values)";
  return s;
}

std::string SymbolicExecutor::describeDiff(std::span<const int> want,
                                           std::span<const int> have) const {
  std::vector<int> missing, extra;
  std::set_difference(want.begin(), want.end(), have.begin(), have.end(),
                      std::back_inserter(missing));
  std::set_difference(have.begin(), have.end(), want.begin(), want.end(),
                      std::back_inserter(extra));
  std::string s = "expected " + show(want) + ", found " + show(have);
  if (!missing.empty())
    s += "; missing " + show(missing, 4);
  if (!extra.empty())
    s += "; unexpected " + show(extra, 4);
  return s;
}

bool SymbolicExecutor::checkShape(int t) {
  const Transfer &tr = sched.transfers[t];
  int n = col.numRanks;
  for (const ChunkLoc *end : {&tr.src, &tr.dst}) {
    const char *which = end == &tr.src ? "source" : "destination";
    if (end->rank < 0 || end->rank >= n) {
      report(VerifyErrorKind::OutOfRange, t, *end,
             std::string(which) + " rank " + std::to_string(end->rank) +
                 " is not in 0.." + std::to_string(n - 1));
      return false;
    }
    int size = sched.bufferChunks(end->buffer);
    if (end->index < 0 || (long long)end->index + tr.count > size) {
      report(VerifyErrorKind::OutOfRange, t, *end,
             std::string(which) + " chunks " + std::to_string(end->index) +
                 ".." + std::to_string((long long)end->index + tr.count - 1) +
                 " of " + toString(end->buffer) + " on rank " +
                 std::to_string(end->rank) + " are outside its " +
                 std::to_string(size) + " chunks");
      return false;
    }
  }
  if (tr.count < 1) {
    report(VerifyErrorKind::OutOfRange, t, tr.dst, "count must be >= 1");
    return false;
  }
  if (isSwitchOp(tr.op))
    return checkSwitch(t);
  for (int k = 0; k < tr.count; ++k)
    if (slotOf({tr.src.rank, tr.src.buffer, tr.src.index + k}) ==
        slotOf({tr.dst.rank, tr.dst.buffer, tr.dst.index + k})) {
      report(VerifyErrorKind::WriteConflict, t, tr.dst,
             "source and destination are the same slot (" + toString(tr.dst) +
                 ")");
      return false;
    }
  if (const Topology *topo = opts.topology) {
    if (topo->numRanks() != n) {
      report(VerifyErrorKind::NoLink, t, tr.src,
             "topology '" + topo->name + "' has " +
                 std::to_string(topo->numRanks()) + " ranks, the schedule " +
                 std::to_string(n));
      return false;
    }
    if (tr.link >= 0) {
      if (tr.link >= (int)topo->links.size() ||
          topo->links[tr.link].src != tr.src.rank ||
          topo->links[tr.link].dst != tr.dst.rank) {
        report(VerifyErrorKind::BadLink, t, tr.src,
               "link " + std::to_string(tr.link) + " does not join rank " +
                   std::to_string(tr.src.rank) + " to rank " +
                   std::to_string(tr.dst.rank) + " in '" + topo->name + "'");
        return false;
      }
    } else if (tr.src.rank != tr.dst.rank &&
               !(linkIndex ? *linkIndex : linkIndex.emplace(*topo))
                    .bestLink(tr.src.rank, tr.dst.rank)) {
      report(VerifyErrorKind::NoLink, t, tr.src,
             "'" + topo->name + "' has no link from rank " +
                 std::to_string(tr.src.rank) + " to rank " +
                 std::to_string(tr.dst.rank));
      return false;
    }
  }
  return true;
}

/// A switch transfer's own shape (its ends are in range): a switch, no
/// link, and with a topology a port on that switch for both ends. Its
/// source and destination may be one slot: a rank's own contribution to
/// a reduction it receives, or the rank a multicast starts from.
bool SymbolicExecutor::checkSwitch(int t) {
  const Transfer &tr = sched.transfers[t];
  if (tr.sw < 0) {
    report(VerifyErrorKind::BadSwitch, t, tr.src,
           std::string("a ") + toString(tr.op) +
               " transfer names no switch to go through");
    return false;
  }
  if (tr.link >= 0) {
    report(VerifyErrorKind::BadLink, t, tr.src,
           "goes through switch " + std::to_string(tr.sw) + " but names link " +
               std::to_string(tr.link));
    return false;
  }
  const Topology *topo = opts.topology;
  if (!topo)
    return true;
  if (topo->numRanks() != col.numRanks) {
    report(VerifyErrorKind::NoLink, t, tr.src,
           "topology '" + topo->name + "' has " +
               std::to_string(topo->numRanks()) + " ranks, the schedule " +
               std::to_string(col.numRanks));
    return false;
  }
  if (tr.sw >= (int)topo->switches.size()) {
    report(VerifyErrorKind::BadSwitch, t, tr.src,
           "switch " + std::to_string(tr.sw) + " does not exist ('" +
               topo->name + "' has " + std::to_string(topo->switches.size()) +
               (topo->switches.size() == 1 ? " switch)" : " switches)"));
    return false;
  }
  const InNetworkSwitch &sw = topo->switches[tr.sw];
  for (const ChunkLoc *end : {&tr.src, &tr.dst})
    if (sw.portOf(end->rank) < 0) {
      report(VerifyErrorKind::BadSwitch, t, *end,
             "rank " + std::to_string(end->rank) + " has no port on switch " +
                 std::to_string(tr.sw) + " ('" + sw.name + "')");
      return false;
    }
  return true;
}

/// A member's fit with the first member of its group: the same count, and
/// on NVLS the same address on every rank the group reads or writes.
bool SymbolicExecutor::checkGroup(int t) {
  int first = groups.leaderOf(t);
  if (first == t)
    return true;
  const Transfer &tr = sched.transfers[t], &lead = sched.transfers[first];
  if (tr.count != lead.count) {
    report(VerifyErrorKind::BadSwitch, t, tr.dst,
           std::string("moves ") + std::to_string(tr.count) +
               " chunks in the " + toString(tr.op) + " of transfer #" +
               std::to_string(first) + ", which moves " +
               std::to_string(lead.count));
    return false;
  }
  const Topology *topo = opts.topology;
  if (!topo || tr.sw >= (int)topo->switches.size() ||
      topo->switches[tr.sw].kind != SwitchKind::NVLS)
    return true;
  bool reduce = tr.op == TransferOp::SwitchReduce;
  const ChunkLoc &mine = reduce ? tr.src : tr.dst,
                 &theirs = reduce ? lead.src : lead.dst;
  ChunkLoc a = col.canonical(mine), b = col.canonical(theirs);
  if (a.buffer != b.buffer || a.index != b.index) {
    report(VerifyErrorKind::BadSwitch, t, mine,
           std::string(reduce ? "reads " : "writes ") + toString(mine) +
               ", but NVLS " + (reduce ? "reduces" : "multicasts to") +
               " one address on every rank and transfer #" +
               std::to_string(first) + " of the same " + toString(tr.op) +
               " uses " + toString(theirs));
    return false;
  }
  return true;
}

void SymbolicExecutor::checkStep(const std::vector<int> &group) {
  // Slots written by this step, with the transfer doing it (writerOf is
  // reset for them at the end of the step).
  std::vector<size_t> written;
  std::vector<int> valid;
  for (int t : group) {
    if (!checkShape(t) || !checkGroup(t))
      continue;
    const Transfer &tr = sched.transfers[t];
    bool ok = true;
    for (int k = 0; k < tr.count && ok; ++k) {
      ChunkLoc dst{tr.dst.rank, tr.dst.buffer, tr.dst.index + k};
      size_t ds = slotOf(dst);
      int other = writerOf[ds];
      if (other < 0) {
        writerOf[ds] = t;
        written.push_back(ds);
        continue;
      }
      // The members of one switch reduction write its destination once.
      if (tr.op == TransferOp::SwitchReduce &&
          groups.leaderOf(other) == groups.leaderOf(t))
        continue;
      const Transfer &o = sched.transfers[other];
      bool same = o.op == tr.op && o.src == tr.src && o.dst == tr.dst &&
                  o.count == tr.count;
      report(VerifyErrorKind::WriteConflict, t, dst,
             same
                 ? "duplicates transfer #" + std::to_string(other) + " (both " +
                       toString(tr.op) + " into " + toString(dst) +
                       "; a reduction would count twice)"
                 : "writes " + toString(dst) + ", which transfer #" +
                       std::to_string(other) + " also writes in the same step");
      ok = false;
    }
    if (ok)
      valid.push_back(t);
  }
  // Races: a slot read by one transfer and written by another.
  std::vector<int> clean;
  for (int t : valid) {
    const Transfer &tr = sched.transfers[t];
    bool ok = true;
    for (int k = 0; k < tr.count && ok; ++k) {
      ChunkLoc src{tr.src.rank, tr.src.buffer, tr.src.index + k};
      int w = writerOf[slotOf(src)];
      // A switch reduction reads all its sources before it writes.
      if (w >= 0 && groups.leaderOf(w) != groups.leaderOf(t)) {
        report(VerifyErrorKind::ReadWriteRace, t, src,
               "reads " + toString(src) + " while transfer #" +
                   std::to_string(w) + " writes it in the same step");
        ok = false;
      }
    }
    if (ok)
      clean.push_back(t);
  }
  // Evaluate against the state before the step, then commit. A switch
  // reduction's sum grows member by member (sums[slot], the first member
  // that found a duplicate stops it).
  std::vector<std::pair<size_t, int>> updates;
  std::map<size_t, std::vector<int>> sums;
  std::set<size_t> broken;
  for (int t : clean) {
    const Transfer &tr = sched.transfers[t];
    for (int k = 0; k < tr.count; ++k) {
      ChunkLoc src{tr.src.rank, tr.src.buffer, tr.src.index + k};
      ChunkLoc dst{tr.dst.rank, tr.dst.buffer, tr.dst.index + k};
      const int &sv = slots[slotOf(src)];
      const int &dv = slots[slotOf(dst)];
      if (sv == ValueStore::kUndefined) {
        report(VerifyErrorKind::UninitializedRead, t, src,
               "reads " + toString(src) +
                   ", which holds no data yet (nothing has arrived there "
                   "before this step)");
        continue;
      }
      if (tr.op == TransferOp::Copy || tr.op == TransferOp::Multicast) {
        updates.push_back({slotOf(dst), sv});
        continue;
      }
      if (tr.op == TransferOp::SwitchReduce) {
        size_t ds = slotOf(dst);
        if (broken.count(ds))
          continue;
        std::vector<int> &acc = sums[ds];
        auto sum = disjointUnion(acc, values.ids(sv));
        if (const int *dup = std::get_if<int>(&sum)) {
          report(VerifyErrorKind::DuplicateReduction, t, dst,
                 "adds " + toString(src) + " to the switch reduction into " +
                     toString(dst) + ", which already has " +
                     valueName(col, *dup) +
                     " from another member: it would "
                     "be counted twice");
          broken.insert(ds);
          continue;
        }
        acc = std::move(std::get<std::vector<int>>(sum));
        continue;
      }
      if (dv == ValueStore::kUndefined) {
        report(VerifyErrorKind::ReduceIntoUndefined, t, dst,
               "reduces into " + toString(dst) + ", which holds no data yet");
        continue;
      }
      auto sum = disjointUnion(values.ids(dv), values.ids(sv));
      if (const int *dup = std::get_if<int>(&sum)) {
        report(VerifyErrorKind::DuplicateReduction, t, dst,
               "reduces " + toString(src) + " into " + toString(dst) +
                   ", but both already contain " + valueName(col, *dup) +
                   ": it would be counted twice");
        continue;
      }
      updates.push_back({slotOf(dst), values.add(std::move(
                                          std::get<std::vector<int>>(sum)))});
    }
  }
  for (auto &[slot, sum] : sums)
    if (!broken.count(slot) && !sum.empty())
      updates.push_back(
          {slot, sum.size() == 1 ? sum[0] : values.add(std::move(sum))});
  // Every new value is held before any old one is let go.
  for (auto &[slot, v] : updates)
    values.retain(v);
  for (auto &[slot, v] : updates) {
    values.release(slots[slot]);
    slots[slot] = v;
  }
  for (size_t slot : written)
    writerOf[slot] = -1;
}

void SymbolicExecutor::checkOutputs() {
  // Per pooled postcondition set: the last sum found equal to it. Copies
  // of one sum share its code, so an AllReduce's n copies of a result are
  // compared once.
  std::vector<int> matched(col.numPostSets(), ValueStore::kUndefined);
  for (int r = 0; r < col.numRanks && !full(); ++r)
    for (int i = 0; i < col.outputChunks && !full(); ++i) {
      PostSet want = col.postAt(r, i);
      if (!want)
        continue;
      ChunkLoc loc{r, BufferKind::Output, i};
      const int &v = slots[slotOf(loc)];
      if (v == ValueStore::kUndefined) {
        report(VerifyErrorKind::MissingOutput, -1, loc,
               toString(loc) + " is never written; expected " +
                   show(want.values()));
        continue;
      }
      if (want.isCopy() && v == want.id())
        continue; // the one value a copy wants
      int pooled = want.id() <= -2 ? -2 - want.id() : -1;
      if (pooled >= 0 && v <= -2 && matched[pooled] == v)
        continue;
      std::span<const int> have = values.ids(v);
      if (std::ranges::equal(have, want.values())) {
        if (pooled >= 0)
          matched[pooled] = v;
        continue;
      }
      report(VerifyErrorKind::WrongOutput, -1, loc,
             toString(loc) + ": " + describeDiff(want.values(), have));
    }
}

void SymbolicExecutor::run() {
  int n = col.numRanks;
  result.transfers = (int)sched.transfers.size();
  result.steps = sched.numSteps();
  if (!col.hasConditions()) {
    report(VerifyErrorKind::OutOfRange, -1, {},
           "the collective's conditions do not cover its ranks");
    return;
  }
  offsets.assign(n * 3 + 1, 0);
  size_t total = 0;
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < 3; ++b) {
      offsets[r * 3 + b] = total;
      total += sched.bufferChunks((BufferKind)b);
    }
  slots.assign(total, ValueStore::kUndefined);
  writerOf.assign(total, -1);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < col.inputChunks; ++i)
      if (col.preAt(r, i) >= 0)
        slots[slotOf({r, BufferKind::Input, i})] = col.preAt(r, i);
  groups = switchGroups(sched.transfers);
  std::vector<int> order(sched.transfers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return sched.transfers[a].step < sched.transfers[b].step;
  });
  // Scratch contents that no later step reads are let go after their last
  // step, so memory follows the live working set (a ring ReduceScatter
  // leaves a partial sum in each of its scratch slots, never overwritten).
  // The first scratch slot of `count` chunks at `at`, or -1 when they are
  // not all in scratch (the range is checked before any loop over `count`,
  // so a huge count costs nothing here; checkShape reports it).
  auto scratchFirst = [&](const ChunkLoc &at, int count) -> long long {
    if (at.buffer != BufferKind::Scratch || at.rank < 0 || at.rank >= n ||
        at.index < 0 || count < 1 ||
        (long long)at.index + count > sched.scratchChunks)
      return -1;
    return (long long)offsets[at.rank * 3 + 2] + at.index;
  };
  std::vector<int> lastRead(total, -1);
  for (size_t i = 0, g = 0; i < order.size(); ++g) {
    int step = sched.transfers[order[i]].step;
    for (; i < order.size() && sched.transfers[order[i]].step == step; ++i) {
      const Transfer &tr = sched.transfers[order[i]];
      if (long long s = scratchFirst(tr.src, tr.count); s >= 0)
        for (int k = 0; k < tr.count; ++k)
          lastRead[s + k] = (int)g;
      if (tr.op == TransferOp::Reduce)
        if (long long s = scratchFirst(tr.dst, tr.count); s >= 0)
          for (int k = 0; k < tr.count; ++k)
            lastRead[s + k] = (int)g;
    }
  }
  for (size_t i = 0, g = 0; i < order.size() && result.issues.empty(); ++g) {
    size_t j = i;
    std::vector<int> group;
    while (j < order.size() &&
           sched.transfers[order[j]].step == sched.transfers[order[i]].step)
      group.push_back(order[j++]);
    checkStep(group);
    for (int t : group) {
      const Transfer &tr = sched.transfers[t];
      for (const ChunkLoc *at : {&tr.src, &tr.dst})
        if (long long first = scratchFirst(*at, tr.count); first >= 0)
          for (int k = 0; k < tr.count; ++k)
            if (long long s = first + k; lastRead[s] <= (int)g) {
              values.release(slots[s]);
              slots[s] = ValueStore::kUndefined;
            }
    }
    i = j;
  }
  // End-state errors after an execution error are mostly its echoes.
  if (result.issues.empty())
    checkOutputs();
}

} // namespace

VerifyResult verifySchedule(const Schedule &schedule,
                            const VerifyOptions &options) {
  VerifyResult result;
  SymbolicExecutor(schedule, options, result).run();
  return result;
}

} // namespace ccsynth
