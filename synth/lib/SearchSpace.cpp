//===- SearchSpace.cpp - What the synthesizer searches over ---------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The search space of synthesize(): makeSetups, the families of routes for
// a collective and chunk split (the main one first; reductions also as
// gathers reduced at their owners), then chunkups, the order in which chunk
// splits are tried. See docs/synth.md, "Method" and "Chunk splits".
//
//===----------------------------------------------------------------------===//
#include "SearchSpace.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace ccsynth::synth::detail {

Expected<std::vector<Setup>> makeSetups(const SynthOptions &o, int n, int k) {
  std::vector<Setup> out;
  if (o.kind == CollectiveKind::Custom) {
    out.push_back({*o.custom, std::make_shared<const Collective>(*o.custom),
                   Setup::Lowering::Copy, ""});
    return out;
  }
  auto target = Collective::builtin(
      o.kind, n, o.kind == CollectiveKind::AllReduce ? n * k : k, o.inPlace,
      o.root);
  if (!target)
    return target.error();
  auto shared = std::make_shared<const Collective>(target.take());
  auto add = [&](CollectiveKind rk, Setup::Lowering how,
                 const std::string &label) -> Status {
    bool copy = how == Setup::Lowering::Copy;
    auto route = Collective::builtin(rk, n, k, copy && o.inPlace, o.root);
    if (!route)
      return route.error();
    out.push_back({route.take(), shared, how, label});
    return Status::success();
  };
  Status st;
  switch (o.kind) {
  case CollectiveKind::ReduceScatter:
    st = add(CollectiveKind::AllGather, Setup::Lowering::Inverse, "");
    if (st)
      st = add(CollectiveKind::AllToAll, Setup::Lowering::GatherReduce,
               "reduce at owners");
    break;
  case CollectiveKind::Reduce:
    st = add(CollectiveKind::Broadcast, Setup::Lowering::Inverse, "");
    if (st)
      st = add(CollectiveKind::Gather, Setup::Lowering::GatherReduce,
               "reduce at root");
    break;
  case CollectiveKind::AllReduce:
    st = add(CollectiveKind::AllGather, Setup::Lowering::AllReduce, "");
    if (st)
      st = add(CollectiveKind::AllToAll, Setup::Lowering::AllReduceGather,
               "reduce at owners");
    break;
  default:
    st = add(o.kind, Setup::Lowering::Copy, "");
    break;
  }
  if (!st)
    return st.error();
  return out;
}

std::vector<std::vector<int>> chunkups(const Topology &topo, const Sketch &sk,
                                       const SynthOptions &o,
                                       const Collective &route1) {
  if (o.kind == CollectiveKind::Custom)
    return {{1}};
  if (o.chunkup > 0)
    return {{o.chunkup}};
  if (!sk.chunkupCandidates.empty())
    return {sk.chunkupCandidates};
  // How many latencies one unsplit chunk's streaming is worth: splitting
  // finer than that only adds latency.
  double bw = 0, alpha = std::numeric_limits<double>::infinity();
  for (int l = 0; l < (int)topo.links.size(); ++l) {
    bw = std::max(bw, topo.effectiveBandwidth(l));
    alpha = std::min(alpha, topo.links[l].alphaUs);
  }
  double chunk = o.targetBytes / route1.sizeDivisor();
  double ratio = alpha > 0 ? chunk / (bw * 1e3) / alpha : 1e9;
  int kMax = std::max(1, (int)std::floor(ratio));
  int values = std::max(1, route1.numValues());
  std::set<int> pool{1,  2,  3,  4,  6,   8,   12,  16,  24,
                     32, 48, 64, 96, 128, 192, 256, 384, 512};
  int c = sk.inputChunkup;
  for (int m : {1, 2, 4})
    pool.insert(c * m);
  for (int d = 1; d <= c; ++d)
    if (c % d == 0)
      pool.insert(d);
  auto ok = [&](int k) {
    return k == 1 || (k <= kMax && (long long)values * k <= 8192);
  };
  int first = ok(c) ? c : 1;
  // Bandwidth-bound sizes need enough values to keep every link busy
  // while pipelining (a broadcast has one value per split): start at the
  // first split giving two values per rank, when that is finer.
  if (ratio > 4)
    for (int k : pool)
      if (k > first && ok(k) &&
          (long long)values * first < 2LL * route1.numRanks) {
        first = k;
        if ((long long)values * k >= 2LL * route1.numRanks)
          break;
      }
  std::vector<int> up{first}, down;
  for (int k : pool)
    if (k > first && ok(k))
      up.push_back(k);
  for (auto it = pool.rbegin(); it != pool.rend(); ++it)
    if (*it < first && ok(*it))
      down.push_back(*it);
  // At a power-of-two size, a split with an odd factor (3, 6, 12, ...)
  // gives the program a loop of chunks MSCCL selects for no such size
  // (it runs NCCL there) and that generated code cannot cut evenly: those
  // splits come after the others in each direction, tried only when the
  // power-of-two splits keep helping and the time allows.
  if (isPowerOfTwoSize(o.targetBytes)) {
    auto even = [](int k) { return oddPart(k) == 1; };
    std::stable_partition(up.begin() + 1, up.end(), even);
    std::stable_partition(down.begin(), down.end(), even);
  }
  return down.empty() ? std::vector<std::vector<int>>{up}
                      : std::vector<std::vector<int>>{up, down};
}

} // namespace ccsynth::synth::detail
