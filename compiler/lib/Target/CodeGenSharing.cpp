//===- CodeGenSharing.cpp - Functions that ranks share --------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Generator::groupThreadblocks: threadblocks whose code differs only in
// its integers become one function, each integer written as an expression
// of the rank (fitted: a * rank + b modulo m, per group of ranks) or, where
// none fits, read from a table indexed by rank. Sections: the fitting of
// rank expressions, then the grouping itself. docs/runtime.md ("Generated
// code") describes what the functions look like.
//
//===----------------------------------------------------------------------===//
#include "CodeGenInternal.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace ccsynth::codegen::detail {

using msccl::StepRef;
using msccl::StepType;

namespace {

long long floorMod(long long a, long long m) { return ((a % m) + m) % m; }

long long gcdOf(long long a, long long b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) {
    long long t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/// y = c + s * ((a * x + b) mod m) over x in [0, m).
struct Fit1 {
  long long c = 0, s = 0, a = 0, b = 0, m = 1;
  long long at(long long x) const {
    return s == 0 ? c : c + s * floorMod(a * x + b, m);
  }
};

/// Fits `points` (distinct x in [0, m)) to Fit1; false when none is found.
bool fit1(const std::vector<std::pair<long long, long long>> &pts, long long m,
          Fit1 &out) {
  out = Fit1{};
  out.m = m;
  out.c = pts.front().second;
  bool constant = true;
  for (auto &p : pts)
    constant &= p.second == out.c;
  if (constant)
    return true;
  if (pts.size() < 2)
    return false;
  long long lo = pts.front().second, s = 0;
  for (auto &p : pts) {
    lo = std::min(lo, p.second);
    s = gcdOf(s, p.second - pts.front().second);
  }
  // Two ways to anchor the residues: the smallest value is residue 0, or
  // (values that are residues already) the values themselves.
  for (int anchor = 0; anchor < 2; ++anchor) {
    long long c = anchor == 0 ? lo : 0, step = anchor == 0 ? s : 1;
    std::vector<long long> z;
    bool ok = true;
    for (auto &p : pts) {
      long long d = p.second - c;
      if (d < 0 || d % step != 0 || d / step >= m) {
        ok = false;
        break;
      }
      z.push_back(d / step);
    }
    if (!ok)
      continue;
    long long dx = floorMod(pts[1].first - pts[0].first, m);
    long long dz = floorMod(z[1] - z[0], m);
    for (long long a = 0; a < m; ++a) {
      if (floorMod(a * dx, m) != dz)
        continue;
      Fit1 f{c, step, a, floorMod(z[0] - a * pts[0].first, m), m};
      bool all = true;
      for (auto &p : pts)
        all &= f.at(p.first) == p.second;
      if (all) {
        out = f;
        return true;
      }
    }
  }
  return false;
}

/// `f` as a C++ expression of `x`.
std::string fitExpression(const Fit1 &f, const std::string &x) {
  if (f.s == 0)
    return std::to_string(f.c);
  std::string r = f.a == 1 ? x : std::to_string(f.a) + " * " + x;
  if (f.b)
    r += " + " + std::to_string(f.b);
  if (f.a != 1 || f.b != 0)
    r = "(" + r + ") % " + std::to_string(f.m);
  if (f.s != 1)
    r = std::to_string(f.s) + " * (" + r + ")";
  if (f.c > 0)
    r += " + " + std::to_string(f.c);
  else if (f.c < 0)
    r += " - " + std::to_string(-f.c);
  return r;
}

/// A C++ expression in `rank` (the expression `var`) for the values `vals`
/// taken at `ranks`: v = F(rank / L) + G(rank % L), each of F and G an
/// affine map modulo the size of its range (rings, rails, nodes). Empty
/// when no such form fits.
std::string rankExpression(const std::vector<int> &ranks,
                           const std::vector<long long> &vals, int n,
                           const std::string &var = "rank") {
  bool constant = true;
  for (long long v : vals)
    constant &= v == vals.front();
  if (constant)
    return std::to_string(vals.front());
  for (long long L = n; L >= 1; --L) {
    if (n % L != 0)
      continue;
    long long Q = n / L;
    long long q0 = ranks[0] / L, l0 = ranks[0] % L, v0 = vals[0];
    std::vector<std::pair<long long, long long>> byL, byQ;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] / L == q0)
        byL.push_back({ranks[i] % L, vals[i]});
      if (ranks[i] % L == l0)
        byQ.push_back({ranks[i] / L, vals[i]});
    }
    Fit1 g, f;
    if (!fit1(byL, L, g) || !fit1(byQ, Q, f))
      continue;
    bool all = true;
    for (size_t i = 0; i < ranks.size() && all; ++i)
      all = f.at(ranks[i] / L) + g.at(ranks[i] % L) - v0 == vals[i];
    if (!all)
      continue;
    long long c = f.c + g.c - v0;
    std::string e;
    auto term = [&](Fit1 t, const std::string &x) {
      if (t.s == 0)
        return;
      t.c = 0; // the constants of both terms are summed in c
      if (!e.empty())
        e += " + ";
      e += fitExpression(t, x);
    };
    term(f, L == 1 ? var : "(" + var + " / " + std::to_string(L) + ")");
    term(g, L == n ? var : "(" + var + " % " + std::to_string(L) + ")");
    if (c > 0)
      e += " + " + std::to_string(c);
    else if (c < 0)
      e += " - " + std::to_string(-c);
    return e;
  }
  return {};
}

std::string stripComments(const std::string &text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t i = line.find_first_not_of(' ');
    if (i != std::string::npos && line.compare(i, 2, "//") == 0)
      continue;
    out += line;
    out += '\n';
  }
  return out;
}

} // namespace

void Generator::groupThreadblocks() {
  // The same code up to its integers, at most one threadblock per rank
  // (the function is parameterized by the rank alone). Threadblock ids need
  // not agree: ranks may number the same role differently.
  std::map<std::string, std::vector<int>> byKey;
  for (int i = 0; i < (int)codes.size(); ++i) {
    auto it = byKey.try_emplace(stripComments(codes[i].text)).first;
    // The first group of this code that has no threadblock of this rank
    // and holds this threadblock's id on another rank, else the first
    // that has none of this rank: ranks whose threadblocks of one role
    // agree stay in one group, and so the instances of that role line up
    // on every rank (slots, below) where some rank has one more of it.
    int target = -1, sameId = -1;
    for (int gi : it->second) {
      bool has = false, id = false;
      for (int m : groups[gi].members) {
        has |= codes[m].rank == codes[i].rank;
        id |= codes[m].tb == codes[i].tb;
      }
      if (!has && target < 0)
        target = gi;
      if (!has && id) {
        sameId = gi;
        break;
      }
    }
    if (sameId >= 0)
      target = sameId;
    if (target < 0) {
      target = (int)groups.size();
      it->second.push_back(target);
      groups.push_back({});
    }
    groups[target].members.push_back(i);
  }
  // Groups of one code whose ranks are the same (the instances of one
  // role, or roles of one code such as sends to different peers) become
  // one group of several slots: one function serves each rank's
  // threadblocks of that code, its integers expressions of the slot and
  // the rank.
  std::vector<Group> merged;
  std::vector<const std::vector<int> *> listOf(groups.size(), nullptr);
  for (const auto &entry : byKey)
    for (int gi : entry.second)
      listOf[gi] = &entry.second;
  for (int first = 0; first < (int)groups.size(); ++first) {
    const std::vector<int> &list = *listOf[first];
    if (list.front() != first)
      continue; // merged (or kept) with the first group of its code
    auto ranksOf = [&](const Group &g) {
      std::vector<int> r;
      for (int m : g.members)
        r.push_back(codes[m].rank);
      std::sort(r.begin(), r.end());
      return r;
    };
    // The groups of this code on the same ranks (in their order): one
    // group of slots, the k-th group's threadblocks the k-th slot (their
    // ids may differ between ranks: the slot is chosen by branches).
    std::vector<std::pair<std::vector<int>, std::vector<int>>> byRanks;
    for (int gi : list) {
      std::vector<int> r = ranksOf(groups[gi]);
      auto it = std::find_if(byRanks.begin(), byRanks.end(),
                             [&](const auto &b) { return b.first == r; });
      if (it == byRanks.end())
        byRanks.push_back({std::move(r), {gi}});
      else
        it->second.push_back(gi);
    }
    for (const auto &[ranks, same] : byRanks) {
      if (same.size() == 1 || !in.shareRanks) {
        for (int gi : same)
          merged.push_back(groups[gi]);
        continue;
      }
      Group g;
      g.slots = (int)same.size();
      for (size_t j = 0; j < same.size(); ++j)
        for (int m : groups[same[j]].members) {
          g.members.push_back(m);
          g.slotOf.push_back((int)j);
        }
      merged.push_back(std::move(g));
    }
  }
  // A group shares one function when every integer is an expression of its
  // rank or an entry of a table within the budget; otherwise its members
  // keep their own functions.
  std::vector<Group> out;
  auto tableSize = [&](const Group &g) {
    return (long long)g.table.size() * algo.ngpus * g.slots;
  };
  // The group sharing one function, its tables named "\x02" until it
  // takes its place; none when some value fits no expression and its
  // tables exceed what the budget has left.
  auto share = [&](Group g) -> std::optional<Group> {
    const TbCode &first = codes[g.members.front()];
    // The function's rank: slot x (ranks) + rank.
    std::vector<int> ranks;
    for (size_t i = 0; i < g.members.size(); ++i)
      ranks.push_back(codes[g.members[i]].rank +
                      algo.ngpus * g.slotOfMember(i));
    const int n = algo.ngpus * g.slots, size = (int)ranks.size();
    const std::string tname = "\x02";
    std::map<std::vector<long long>, int> rows;
    auto tableRow = [&](const std::vector<long long> &row) {
      auto [it, fresh] = rows.try_emplace(row, (int)g.table.size());
      if (fresh)
        g.table.push_back(row);
      return tname + "[" + std::to_string(it->second) + "]";
    };
    std::vector<std::vector<long long>> holeVals(first.vals.size());
    std::vector<int> unfit;
    for (size_t h = 0; h < first.vals.size(); ++h) {
      for (int m : g.members)
        holeVals[h].push_back(codes[m].vals[h]);
      g.exprs.push_back(rankExpression(ranks, holeVals[h], n));
      if (g.exprs.back().empty())
        unfit.push_back((int)h);
    }
    // Ranks joined in one cycle by some value (a ring's next peer):
    // positions along it relabel the ranks, and values that are affine
    // in the position (chunks travelling the ring) need no row each. The
    // cycle is that of the first slot's threadblocks (every slot holds
    // the same ranks); a value may add a term affine in the slot.
    const int n0 = algo.ngpus;
    std::vector<int> zero; // members of slot 0
    for (int i = 0; i < size; ++i)
      if (ranks[i] < n0)
        zero.push_back(i);
    const int size0 = (int)zero.size();
    std::vector<long long> pos0(n0, 0), order(n, 0);
    bool cycle = false;
    std::map<int, int> memberIndex; // real rank -> its slot-0 member
    for (int i : zero)
      memberIndex[ranks[i]] = i;
    for (size_t h = 0;
         h < holeVals.size() && !unfit.empty() && size0 >= 3 && !cycle; ++h) {
      std::vector<char> seen(size, 0);
      int cur = zero.front(), len = 0;
      bool ok = true;
      while (ok && !seen[cur]) {
        seen[cur] = 1;
        order[len] = ranks[cur];
        pos0[ranks[cur]] = len++;
        auto it = memberIndex.find((int)holeVals[h][cur]);
        ok = it != memberIndex.end();
        if (ok)
          cur = it->second;
      }
      cycle = ok && len == size0 && cur == zero.front();
    }
    std::string posExpr;
    if (cycle) {
      std::vector<long long> pos(n, 0);
      for (int v = 0; v < n; ++v)
        pos[v] = pos0[v % n0];
      posExpr = tableRow(pos) + "[rank]";
    }
    const std::string slotExpr = "(rank / " + std::to_string(n0) + ")";
    // F(slot) of hole h: each member's value less its rank's in slot 0,
    // when that depends on the slot alone and fits.
    auto slotTermOf = [&](int h, Fit1 &fs) {
      std::vector<long long> atZero(n0, 0);
      for (int i : zero)
        atZero[ranks[i]] = holeVals[h][i];
      std::map<long long, long long> bySlot;
      for (int i = 0; i < size; ++i) {
        long long d = holeVals[h][i] - atZero[ranks[i] % n0];
        auto [it, fresh] = bySlot.try_emplace(ranks[i] / n0, d);
        if (!fresh && it->second != d)
          return false;
      }
      std::vector<std::pair<long long, long long>> slotPts(bySlot.begin(),
                                                           bySlot.end());
      return fit1(slotPts, g.slots, fs);
    };
    for (int h : unfit) {
      std::string e;
      if (cycle) {
        Fit1 fs;
        bool slotTerm = slotTermOf(h, fs);
        bool noSlot = slotTerm && fs.s == 0 && fs.c == 0;
        std::vector<std::pair<long long, long long>> byPos, relabeled;
        bool members = true;
        for (int i : zero) {
          long long v = holeVals[h][i];
          byPos.push_back({pos0[ranks[i]], v});
          auto it = memberIndex.find((int)v);
          members &= v >= 0 && v < n0 && it != memberIndex.end();
          if (members)
            relabeled.push_back({pos0[ranks[i]], pos0[v]});
        }
        std::sort(byPos.begin(), byPos.end());
        std::sort(relabeled.begin(), relabeled.end());
        Fit1 f;
        if (slotTerm && fit1(byPos, size0, f)) {
          e = fitExpression(f, posExpr);
          if (!noSlot)
            e += " + " + fitExpression(fs, slotExpr);
        } else if (noSlot && members && fit1(relabeled, size0, f) && f.c == 0 &&
                   f.s == 1)
          e = tableRow(order) + "[" + fitExpression(f, posExpr) + "]";
      }
      if (e.empty() && g.slots > 1) {
        // An expression of the real rank (rank % ranks) fitted on slot 0,
        // plus a term of the slot: the instances of a role differ by an
        // offset per slot (their chunks, flags, switch).
        std::vector<int> zeroRanks;
        std::vector<long long> zeroVals;
        for (int i : zero) {
          zeroRanks.push_back(ranks[i]);
          zeroVals.push_back(holeVals[h][i]);
        }
        std::string byRank = rankExpression(
            zeroRanks, zeroVals, n0, "(rank % " + std::to_string(n0) + ")");
        Fit1 fs;
        if (!byRank.empty() && slotTermOf(h, fs)) {
          e = byRank;
          if (fs.s != 0 || fs.c != 0)
            e = "(" + e + ") + " + fitExpression(fs, slotExpr);
        }
      }
      if (e.empty()) {
        std::vector<long long> row(n, 0);
        for (int i = 0; i < size; ++i)
          row[ranks[i]] = holeVals[h][i];
        e = tableRow(row) + "[rank]";
      }
      g.exprs[h] = e;
    }
    if (tableEntries + tableSize(g) > kTableBudget)
      return std::nullopt;
    g.shared = true;
    return g;
  };
  auto single = [&](int m) {
    Group one;
    one.members = {m};
    for (long long v : codes[m].vals)
      one.exprs.push_back(std::to_string(v));
    out.push_back(one);
  };
  // Takes its place as function out.size(), its members' own functions
  // where its tables no longer fit.
  auto place = [&](Group g) {
    if (tableEntries + tableSize(g) > kTableBudget) {
      for (int m : g.members)
        single(m);
      return;
    }
    tableEntries += tableSize(g);
    if (constantTableEntries + tableSize(g) <= kConstantTableBudget)
      constantTableEntries += tableSize(g);
    else
      g.globalTable = true;
    const std::string tname = "t" + std::to_string(out.size());
    for (std::string &e : g.exprs)
      for (size_t at; (at = e.find('\x02')) != std::string::npos;)
        e.replace(at, 1, tname);
    out.push_back(std::move(g));
  };
  for (Group &g : merged) {
    if (g.slots == 1) {
      std::optional<Group> whole;
      if (g.members.size() > 1 && in.shareRanks)
        whole = share(g);
      if (whole)
        place(std::move(*whole));
      else
        for (int m : g.members)
          single(m);
      continue;
    }
    // Several slots: runs of slots at a common stride (the instances of
    // one ring among several rings), each one function where its tables
    // take no more entries than one function per slot would (a role whose
    // peers differ by slot, as direct sends' or a ring's two directions,
    // needs a table where each slot alone needs none). From each slot not
    // yet placed, the first stride that joins it to another slot; the run
    // grows along it while that holds.
    std::vector<Group> perSlot(g.slots);
    for (size_t i = 0; i < g.members.size(); ++i)
      perSlot[g.slotOfMember(i)].members.push_back(g.members[i]);
    std::vector<std::optional<Group>> slotShared;
    for (Group &one : perSlot)
      slotShared.push_back(one.members.size() > 1 ? share(one) : std::nullopt);
    auto runOf = [&](int from, int stride, int count) {
      Group r;
      r.slots = count;
      for (int k = 0; k < count; ++k)
        for (int m : perSlot[from + k * stride].members) {
          r.members.push_back(m);
          r.slotOf.push_back(k);
        }
      return r;
    };
    auto alone = [&](int k) {
      return slotShared[k] ? tableSize(*slotShared[k]) : 0;
    };
    std::vector<char> placed(g.slots, 0);
    for (int from = 0; from < g.slots; ++from) {
      if (placed[from])
        continue;
      std::optional<Group> run;
      int runStride = 0, runCount = 1;
      for (int stride = 1; !run && from + stride < g.slots; ++stride) {
        long long entries = alone(from);
        bool allShared = (bool)slotShared[from];
        for (int k = from + stride; k < g.slots && !placed[k]; k += stride) {
          int count = (k - from) / stride + 1;
          std::optional<Group> longer = share(runOf(from, stride, count));
          bool kShared = (bool)slotShared[k];
          // A slot's own function costs its text; a table entry, about
          // six characters of source and four bytes of data.
          long long text =
              (long long)codes[perSlot[k].members.front()].text.size();
          if (!longer || (allShared && kShared &&
                          6 * (tableSize(*longer) - entries - alone(k)) > text))
            break;
          run = std::move(longer);
          runStride = stride;
          runCount = count;
          entries += alone(k);
          allShared = allShared && kShared;
        }
      }
      for (int k = 0; k < runCount; ++k)
        placed[from + k * runStride] = 1;
      if (run)
        place(std::move(*run));
      else if (slotShared[from])
        place(std::move(*slotShared[from]));
      else
        for (int m : perSlot[from].members)
          single(m);
    }
  }
  groups = std::move(out);
}

} // namespace ccsynth::codegen::detail
