//===- Problem.cpp - Building the routing problem of a sketch -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements buildRoutingProblem (Problem.h): the values of the copy
// collective and the ranks that need each, the links the sketch allows
// each value, and the symmetry group of the sketch's offsets, checked by
// mapping links, resources and values under each permutation (mapLinks,
// mapValues); symmetries that map only the links inside their blocks
// become SymmetryTies. explainInfeasible says which rank cannot receive
// which value under the sketch, and why.
// See docs/sketches.md ("Symmetry", "Infeasible sketches").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Synth/Problem.h"
#include "ccsynth/Synth/SwitchModel.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace ccsynth::synth {

int SymmetryTie::numTiedLinks() const {
  return (int)std::count_if(link.begin(), link.end(),
                            [](int l) { return l >= 0; });
}

bool RoutingProblem::allowed(int v, int l) const {
  if (!linkUsable[l])
    return false;
  const Link &link = topo->links[l];
  int na = topo->nodeOf[link.src], nb = topo->nodeOf[link.dst];
  if (na == nb)
    return true;
  const RouteValue &val = values[v];
  int no = topo->nodeOf[val.origin];
  if (directHops && (na != no || !destNode[v][nb]))
    return false;
  if (!relays.empty() && !relays[localOf[link.src]][localOf[val.origin]])
    return false;
  return true;
}

namespace {

std::string rankDesc(const RoutingProblem &p, int r) {
  return "rank " + std::to_string(r) + " (node " +
         std::to_string(p.topo->nodeOf[r]) + ", GPU " +
         std::to_string(p.localOf[r]) + ")";
}

std::string listInts(const std::vector<int> &v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

/// Builds the link and resource maps of the rank permutation `perm`, or
/// explains why it is not an automorphism of the usable graph. As TACCL ties
/// only sends within a symmetry block (taccl/routing.py _add_symmetry: sends
/// src->r with src // size == r // size), only links inside a block of
/// `blockSize` ranks must map; `wholeMachine` says whether the links between
/// blocks map too (the maps are complete only then).
Status mapLinks(const RoutingProblem &p, const std::vector<int> &perm,
                int blockSize, std::vector<int> &linkMap,
                std::vector<int> &resMap, bool &wholeMachine) {
  wholeMachine = true;
  const Topology &t = *p.topo;
  linkMap.assign(t.links.size(), -1);
  resMap.assign(t.resources.size(), -1);
  std::vector<int> resInv(t.resources.size(), -1);
  // Parallel links between one pair are matched in index order among those
  // with equal attributes.
  std::map<std::pair<int, int>, std::vector<int>> byPair;
  for (int l : p.usableLinks)
    byPair[{t.links[l].src, t.links[l].dst}].push_back(l);
  auto same = [&](const Link &a, const Link &b) {
    return a.kind == b.kind && a.alphaUs == b.alphaUs &&
           a.bandwidthGBps == b.bandwidthGBps &&
           a.resources.size() == b.resources.size();
  };
  for (auto &[pair, ls] : byPair) {
    bool inBlock = pair.first / blockSize == pair.second / blockSize;
    auto it = byPair.find({perm[pair.first], perm[pair.second]});
    for (size_t i = 0; i < ls.size(); ++i) {
      const Link &a = t.links[ls[i]];
      int rank = 0;
      for (size_t j = 0; j < i; ++j)
        rank += same(t.links[ls[j]], a);
      int found = -1;
      if (it != byPair.end())
        for (int cand : it->second)
          if (same(t.links[cand], a) && rank-- == 0) {
            found = cand;
            break;
          }
      std::string what = "link " + std::to_string(a.src) + "->" +
                         std::to_string(a.dst) + " (" + toString(a.kind) +
                         ", " + std::to_string((int)a.bandwidthGBps) + " GB/s)";
      if (found < 0 && !inBlock) {
        wholeMachine = false;
        break;
      }
      if (found < 0)
        return Error(what + " maps to " + std::to_string(perm[a.src]) + "->" +
                     std::to_string(perm[a.dst]) +
                     ", where the topology and sketch have no matching "
                     "usable link");
      linkMap[ls[i]] = found;
      const Link &b = t.links[found];
      for (size_t k = 0; k < a.resources.size(); ++k) {
        int x = a.resources[k], y = b.resources[k];
        bool clash = t.resources[x].bandwidthGBps !=
                         t.resources[y].bandwidthGBps ||
                     (resMap[x] >= 0 && resMap[x] != y) ||
                     (resInv[y] >= 0 && resInv[y] != x);
        if (clash && !inBlock) {
          wholeMachine = false;
          break;
        }
        if (clash)
          return Error(what + " maps to " + std::to_string(b.src) + "->" +
                       std::to_string(b.dst) +
                       ", whose shared resources (switch ports, NICs) do not "
                       "correspond");
        resMap[x] = y;
        resInv[y] = x;
      }
    }
  }
  if (!wholeMachine)
    return Status::success();
  // Resources no usable link names map to themselves.
  for (size_t x = 0; x < resMap.size(); ++x)
    if (resMap[x] < 0 && resInv[x] < 0) {
      resMap[x] = (int)x;
      resInv[x] = (int)x;
    }
  for (size_t x = 0; x < resMap.size(); ++x)
    if (resMap[x] < 0)
      return Error("the shared resources of the topology do not map onto "
                   "themselves");
  return Status::success();
}

/// A value's destinations as compared under rank permutations: the
/// destinations themselves, or the ranks outside them when those are fewer
/// (for an AllGather, the origin alone), sorted.
struct DestKey {
  bool complement = false;
  std::vector<int> ranks;
  friend bool operator==(const DestKey &, const DestKey &) = default;
  friend auto operator<=>(const DestKey &, const DestKey &) = default;
};

/// Per rank: its input chunks holding a value, as (the value's key, chunk
/// index), sorted, so that the values a permutation may map onto are
/// found by key.
using KeyIndex = std::vector<std::vector<std::pair<const DestKey *, int>>>;

/// Compares KeyIndex entries with a key.
struct KeyOrder {
  bool operator()(const std::pair<const DestKey *, int> &a,
                  const DestKey &b) const {
    return *a.first < b;
  }
  bool operator()(const DestKey &a,
                  const std::pair<const DestKey *, int> &b) const {
    return a < *b.first;
  }
};

KeyIndex indexByKey(const std::vector<std::vector<int>> &valueAt,
                    const std::vector<DestKey> &keys) {
  KeyIndex index(valueAt.size());
  for (size_t r = 0; r < valueAt.size(); ++r) {
    for (int i = 0; i < (int)valueAt[r].size(); ++i)
      if (int w = valueAt[r][i]; w >= 0)
        index[r].push_back({&keys[w], i});
    std::sort(index[r].begin(), index[r].end(), [](auto &a, auto &b) {
      return *a.first != *b.first ? *a.first < *b.first : a.second < b.second;
    });
  }
  return index;
}

std::vector<DestKey> destKeys(const RoutingProblem &p, int n) {
  std::vector<DestKey> keys(p.values.size());
  std::vector<char> in(n);
  for (size_t v = 0; v < p.values.size(); ++v) {
    const std::vector<int> &dests = p.values[v].dests;
    DestKey &k = keys[v];
    k.complement = (int)dests.size() > n - (int)dests.size();
    if (!k.complement) {
      k.ranks = dests;
      continue;
    }
    std::fill(in.begin(), in.end(), 0);
    for (int d : dests)
      in[d] = 1;
    for (int r = 0; r < n; ++r)
      if (!in[r])
        k.ranks.push_back(r);
  }
  return keys;
}

/// The value permutation of rank permutation `perm`, when the collective is
/// invariant under it.
bool mapValues(const RoutingProblem &p, const std::vector<int> &perm,
               const std::vector<std::vector<int>> &valueAt,
               const std::vector<DestKey> &keys, const KeyIndex &byKey,
               std::vector<int> &out) {
  const Collective &c = p.collective;
  int nv = (int)p.values.size();
  out.assign(nv, -1);
  std::vector<char> taken(nv, 0);
  DestKey want;
  for (int v = 0; v < nv; ++v) {
    const RouteValue &val = p.values[v];
    int target = perm[val.origin];
    want.complement = keys[v].complement;
    want.ranks.clear();
    for (int d : keys[v].ranks)
      want.ranks.push_back(perm[d]);
    std::sort(want.ranks.begin(), want.ranks.end());
    int exact = -1, modular = -1, modCount = 0;
    const auto &candidates = byKey[target];
    auto match = std::equal_range(candidates.begin(), candidates.end(), want,
                                  KeyOrder());
    for (auto it = match.first; it != match.second; ++it) {
      int i = it->second, w = valueAt[target][i];
      if (i == val.originIndex)
        exact = w;
      if (i % c.chunkFactor == val.originIndex % c.chunkFactor) {
        modular = w;
        ++modCount;
      }
    }
    int pick = exact >= 0 ? exact : (modCount == 1 ? modular : -1);
    if (pick < 0 || taken[pick])
      return false;
    taken[pick] = 1;
    out[v] = pick;
  }
  return true;
}

Error sketchError(const SourceLoc &loc, const std::string &msg,
                  const Sketch &sk) {
  SourceLoc l = loc.known() ? loc : SourceLoc{sk.file};
  return Error(msg, l);
}

} // namespace

Expected<RoutingProblem> buildRoutingProblem(const Topology &topo,
                                             const Sketch &sk,
                                             const Collective &col) {
  RoutingProblem p;
  p.topo = &topo;
  p.collective = col;
  int n = topo.numRanks();
  if (col.numRanks != n)
    return Error("the collective has " + std::to_string(col.numRanks) +
                 " ranks but topology '" + topo.name + "' has " +
                 std::to_string(n));
  int nodes = topo.numNodes();
  if (sk.nnodes != nodes)
    return sketchError(sk.nnodesLoc,
                       "the sketch is for " + std::to_string(sk.nnodes) +
                           (sk.nnodes == 1 ? " node" : " nodes") +
                           " but topology '" + topo.name + "' has " +
                           std::to_string(nodes),
                       sk);
  std::vector<int> sizes(nodes, 0);
  p.localOf.assign(n, 0);
  for (int r = 0; r < n; ++r)
    p.localOf[r] = sizes[topo.nodeOf[r]]++;
  for (int s : sizes)
    if (s != sizes[0])
      return Error("topology '" + topo.name +
                   "' has nodes of different sizes; sketches name GPUs by "
                   "their local id and need equal nodes");
  p.gpusPerNode = sizes[0];
  int g = p.gpusPerNode;
  auto checkLocal = [&](int id, const SourceLoc &loc,
                        const std::string &what) -> Status {
    if (id < 0 || id >= g)
      return sketchError(loc,
                         what + " names GPU " + std::to_string(id) +
                             ", but nodes of '" + topo.name +
                             "' have GPUs 0.." + std::to_string(g - 1),
                         sk);
    return Status::success();
  };

  // Switches (TACCL keeps every link; a switch only adds shared bandwidth,
  // see SwitchModel.h): which switch each GPU pair's links go through.
  std::vector<int> switchOfPair((size_t)g * g, -1);
  if (sk.intra == IntraStrategy::Switch) {
    auto groups = switchGroups(sk, g, topo.name);
    if (!groups)
      return groups.error();
    for (const SwitchGroup &grp : *groups)
      for (int a : grp.gpus)
        for (int b : grp.gpus)
          if (a != b)
            switchOfPair[(size_t)a * g + b] = grp.first;
    for (const SketchSwitch &s : sk.switches)
      p.switchStrategy.push_back(s.strategy);
  }
  // Inter-node rules.
  p.multiNode = nodes > 1;
  p.directHops = sk.hops == InternodeHops::Direct;
  p.interConn.assign(g, std::vector<char>(g, 0));
  if (sk.connKind == InternodeConnKind::FullyConnected)
    for (auto &row : p.interConn)
      std::fill(row.begin(), row.end(), 1);
  else if (sk.connKind == InternodeConnKind::DirectMap)
    for (int i = 0; i < g; ++i)
      p.interConn[i][i] = 1;
  else
    for (const SenderEntry &e : sk.conn) {
      if (Status st = checkLocal(e.sender, e.loc, "internode_conn"); !st)
        return st.error();
      for (int r : e.targets) {
        if (Status st = checkLocal(r, e.loc, "internode_conn"); !st)
          return st.error();
        p.interConn[e.sender][r] = 1;
      }
    }
  if (sk.hasRevMap) {
    p.relays.assign(g, std::vector<char>(g, 0));
    for (const SenderEntry &e : sk.revMap) {
      if (Status st = checkLocal(e.sender, e.loc, "gpus_to_sender_rev_map");
          !st)
        return st.error();
      for (int o : e.targets) {
        if (Status st = checkLocal(o, e.loc, "gpus_to_sender_rev_map"); !st)
          return st.error();
        p.relays[e.sender][o] = 1;
      }
    }
  }

  int numLinks = (int)topo.links.size();
  p.linkUsable.assign(numLinks, 0);
  p.switchOfLink.assign(numLinks, -1);
  p.inLinks.assign(n, {});
  p.outLinks.assign(n, {});
  for (int l = 0; l < numLinks; ++l) {
    const Link &link = topo.links[l];
    int a = p.localOf[link.src], b = p.localOf[link.dst];
    bool ok = false;
    if (topo.sameNode(link.src, link.dst)) {
      ok = true;
      p.switchOfLink[l] = switchOfPair[(size_t)a * g + b];
    } else {
      ok = p.interConn[a][b];
    }
    if (ok) {
      p.linkUsable[l] = 1;
      p.usableLinks.push_back(l);
      p.inLinks[link.dst].push_back(l);
      p.outLinks[link.src].push_back(l);
    }
  }

  p.nodesConnected = true;
  for (int node = 0; node < nodes && p.nodesConnected; ++node) {
    std::vector<int> ranks = topo.ranksOfNode(node);
    for (int dir = 0; dir < 2 && p.nodesConnected; ++dir) {
      std::vector<char> seen(n, 0);
      std::deque<int> q{ranks[0]};
      seen[ranks[0]] = 1;
      while (!q.empty()) {
        int u = q.front();
        q.pop_front();
        for (int l : dir == 0 ? p.outLinks[u] : p.inLinks[u]) {
          int w = dir == 0 ? topo.links[l].dst : topo.links[l].src;
          if (topo.nodeOf[w] == node && !seen[w]) {
            seen[w] = 1;
            q.push_back(w);
          }
        }
      }
      for (int r : ranks)
        p.nodesConnected &= (bool)seen[r];
    }
  }

  // Values: single-value postconditions only (this is a copy problem).
  int nv = col.numValues();
  p.values.assign(nv, {});
  std::vector<std::vector<int>> valueAt(n,
                                        std::vector<int>(col.inputChunks, -1));
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < col.inputChunks; ++i)
      if (int v = col.preAt(r, i); v >= 0) {
        p.values[v].origin = r;
        p.values[v].originIndex = i;
        valueAt[r][i] = v;
      }
  // Ranks are visited in order: each value's list comes out sorted (one
  // tree node per entry took 1 GB on 4,096 ranks).
  std::vector<std::vector<int>> dests(nv);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < col.outputChunks; ++i) {
      PostSet want = col.postAt(r, i);
      if (!want)
        continue;
      if (!want.isCopy())
        return Error("internal: routing problem built for a reduction");
      int v = want.front();
      if (r != p.values[v].origin && (dests[v].empty() || dests[v].back() != r))
        dests[v].push_back(r);
    }
  p.destNode.assign(nv, std::vector<char>(nodes, 0));
  for (int v = 0; v < nv; ++v) {
    p.values[v].dests = std::move(dests[v]);
    for (int d : p.values[v].dests)
      p.destNode[v][topo.nodeOf[d]] = 1;
  }

  // Symmetry: generators from the sketch, checked against the topology.
  std::vector<std::vector<int>> genRank, genLink, genRes;
  bool allWhole = true;
  std::vector<size_t> partial; // indices into sk.symmetry
  for (const SymmetryOffset &so : sk.symmetry) {
    std::string entry = "symmetry_offsets entry [" + std::to_string(so.offset) +
                        ", " + std::to_string(so.size) + "]";
    if (n % so.size != 0)
      return sketchError(so.loc,
                         entry + ": the group size must divide the " +
                             std::to_string(n) + " ranks of '" + topo.name +
                             "'",
                         sk);
    std::vector<int> perm(n);
    for (int r = 0; r < n; ++r)
      perm[r] = (r % so.size + so.offset) % so.size + (r / so.size) * so.size;
    std::vector<int> lm, rm;
    bool whole = true;
    if (Status st = mapLinks(p, perm, so.size, lm, rm, whole); !st)
      return sketchError(
          so.loc,
          entry + " is not a symmetry of '" + topo.name + "' under this " +
              "sketch" +
              (so.size < n ? " within its blocks of " +
                                 std::to_string(so.size) + " ranks"
                           : std::string()) +
              ": " + st.error().message,
          sk);
    if (!whole) {
      allWhole = false;
      partial.push_back(genRank.size());
    }
    genRank.push_back(std::move(perm));
    genLink.push_back(std::move(lm));
    genRes.push_back(std::move(rm));
  }
  // Closure by breadth-first composition.
  SymmetryGroup all;
  std::map<std::vector<int>, int> seen;
  std::vector<int> idRank(n), idLink(numLinks), idRes(topo.resources.size());
  for (int r = 0; r < n; ++r)
    idRank[r] = r;
  for (int l = 0; l < numLinks; ++l)
    idLink[l] = p.linkUsable[l] ? l : -1;
  for (size_t x = 0; x < idRes.size(); ++x)
    idRes[x] = (int)x;
  all.rank.push_back(idRank);
  all.link.push_back(idLink);
  all.resource.push_back(idRes);
  seen[idRank] = 0;
  constexpr size_t kMaxGroup = 4096;
  if (!allWhole) {
    // Some generator maps the links inside its blocks but not those between
    // blocks. ccsynth's group ties whole routes, so it keeps the generated
    // permutations that map the whole machine (a subgroup); each partial
    // generator ties only the sends inside its blocks, as TACCL does
    // (taccl/routing.py _add_symmetry), and the encodings add those ties.
    std::vector<std::vector<int>> perms{idRank};
    for (size_t e = 0; e < perms.size(); ++e)
      for (const auto &gen : genRank) {
        std::vector<int> r(n);
        for (int i = 0; i < n; ++i)
          r[i] = gen[perms[e][i]];
        if (seen.count(r))
          continue;
        if (perms.size() >= kMaxGroup)
          return sketchError(sk.symmetry.front().loc,
                             "symmetry_offsets generate more than " +
                                 std::to_string(kMaxGroup) +
                                 " symmetries; use fewer offsets",
                             sk);
        seen[r] = (int)perms.size();
        perms.push_back(std::move(r));
      }
    for (size_t e = 1; e < perms.size(); ++e) {
      std::vector<int> lm, rm;
      bool whole = true;
      if (!mapLinks(p, perms[e], n, lm, rm, whole) || !whole)
        continue;
      all.rank.push_back(perms[e]);
      all.link.push_back(std::move(lm));
      all.resource.push_back(std::move(rm));
    }
    std::vector<DestKey> tieKeys = destKeys(p, n);
    KeyIndex tieIndex = indexByKey(valueAt, tieKeys);
    std::string tied, untied, tiedLinks;
    for (size_t gi : partial) {
      const SymmetryOffset &so = sk.symmetry[gi];
      std::string name = "[" + std::to_string(so.offset) + ", " +
                         std::to_string(so.size) + "]";
      SymmetryTie tie;
      tie.offset = so.offset;
      tie.blockSize = so.size;
      tie.rank = genRank[gi];
      if (!mapValues(p, tie.rank, valueAt, tieKeys, tieIndex, tie.value)) {
        untied += (untied.empty() ? "" : ", ") + name;
        continue;
      }
      tie.link.assign(numLinks, -1);
      for (int l : p.usableLinks) {
        const Link &link = topo.links[l];
        if (link.src / so.size == link.dst / so.size)
          tie.link[l] = genLink[gi][l];
      }
      tiedLinks += std::string(tied.empty() ? "" : " and of ") + name +
                   " over the " + std::to_string(tie.numTiedLinks()) + " links";
      tied += (tied.empty() ? "" : ", ") + name;
      p.ties.push_back(std::move(tie));
    }
    bool one = partial.size() == 1;
    std::string names =
        tied + (tied.empty() || untied.empty() ? "" : ", ") + untied;
    std::string note =
        "symmetry_offsets " + std::string(one ? "entry " : "entries ") + names +
        (one ? " maps" : " map") + " the links inside " +
        (one ? "its" : "their") + " blocks but not those between blocks: ";
    if (!tied.empty())
      note += "as in TACCL, the sends of " + tiedLinks +
              " inside blocks are tied to their images, those between "
              "blocks are free";
    if (!untied.empty())
      note += std::string(tied.empty() ? "" : "; ") +
              "the collective is not invariant under " + untied +
              ", whose sends are not tied";
    if (all.rank.size() > 1)
      note += "; the " + std::to_string(all.rank.size()) + " of the " +
              std::to_string(perms.size()) +
              " generated symmetries that map the whole machine tie whole "
              "routes";
    p.notes.push_back(note);
  }
  for (size_t e = 0; allWhole && e < all.rank.size(); ++e) {
    for (size_t s = 0; s < genRank.size(); ++s) {
      std::vector<int> r(n), l(numLinks, -1), x(idRes.size());
      for (int i = 0; i < n; ++i)
        r[i] = genRank[s][all.rank[e][i]];
      if (seen.count(r))
        continue;
      for (int i = 0; i < numLinks; ++i)
        if (all.link[e][i] >= 0)
          l[i] = genLink[s][all.link[e][i]];
      for (size_t i = 0; i < idRes.size(); ++i)
        x[i] = genRes[s][all.resource[e][i]];
      if (all.rank.size() >= kMaxGroup)
        return sketchError(sk.symmetry.front().loc,
                           "symmetry_offsets generate more than " +
                               std::to_string(kMaxGroup) +
                               " symmetries; use fewer offsets",
                           sk);
      seen[r] = (int)all.rank.size();
      all.rank.push_back(std::move(r));
      all.link.push_back(std::move(l));
      all.resource.push_back(std::move(x));
    }
  }
  // Keep the elements under which the collective is invariant (a rooted
  // collective keeps only those fixing its root).
  std::vector<DestKey> keys = destKeys(p, n);
  KeyIndex byKey = indexByKey(valueAt, keys);
  for (size_t e = 0; e < all.rank.size(); ++e) {
    std::vector<int> vm;
    if (!mapValues(p, all.rank[e], valueAt, keys, byKey, vm))
      continue;
    p.group.rank.push_back(all.rank[e]);
    p.group.link.push_back(all.link[e]);
    p.group.resource.push_back(all.resource[e]);
    p.group.value.push_back(std::move(vm));
  }
  if (p.group.size() < all.rank.size())
    p.notes.push_back(
        "the collective is invariant under " + std::to_string(p.group.size()) +
        " of the " + std::to_string(all.rank.size()) +
        " symmetries the sketch's symmetry_offsets generate; only those are "
        "used");
  // Closedness of what remains (it is a subgroup unless the value matching
  // was ambiguous); otherwise drop the symmetry entirely.
  {
    std::map<std::vector<int>, int> idx;
    for (size_t e = 0; e < p.group.size(); ++e)
      idx[p.group.rank[e]] = (int)e;
    bool closed = true;
    p.group.inverse.assign(p.group.size(), -1);
    for (size_t a = 0; a < p.group.size() && closed; ++a) {
      std::vector<int> inv(n);
      for (int r = 0; r < n; ++r)
        inv[p.group.rank[a][r]] = r;
      auto it = idx.find(inv);
      if (it == idx.end())
        closed = false;
      else
        p.group.inverse[a] = it->second;
    }
    if (!closed) {
      p.notes.push_back("the collective's symmetries do not form a group; "
                        "solving without symmetry");
      p.group.rank.resize(1);
      p.group.link.resize(1);
      p.group.resource.resize(1);
      p.group.value.resize(1);
      p.group.inverse.assign(1, 0);
    }
  }
  // Orbits of values.
  p.repOf.assign(nv, -1);
  p.elemOf.assign(nv, 0);
  p.stabilizer.assign(nv, {});
  for (int v = 0; v < nv; ++v) {
    if (p.repOf[v] >= 0)
      continue;
    p.reps.push_back(v);
    for (size_t e = 0; e < p.group.size(); ++e) {
      int w = p.group.value[e][v];
      if (p.repOf[w] < 0) {
        p.repOf[w] = v;
        p.elemOf[w] = (int)e;
      } else if (w == v && e > 0) {
        p.stabilizer[v].push_back((int)e);
      }
    }
  }
  // The relay rules must be invariant: the image of a route must be allowed.
  for (int v = 0; v < nv; ++v) {
    int rep = p.repOf[v], e = p.elemOf[v];
    if (rep == v)
      continue;
    for (int l : p.usableLinks)
      if (p.allowed(rep, l) && !p.allowed(v, p.group.link[e][l])) {
        const Link &a = topo.links[l];
        const Link &b = topo.links[p.group.link[e][l]];
        return sketchError(
            sk.symmetry.empty() ? sk.connLoc : sk.symmetry.front().loc,
            "symmetry_offsets contradict the internode sketch: " +
                valueName(col, rep) + " may use link " + std::to_string(a.src) +
                "->" + std::to_string(a.dst) + " but its image " +
                valueName(col, v) + " may not use " + std::to_string(b.src) +
                "->" + std::to_string(b.dst),
            sk);
      }
  }
  // Orbits of links and resources.
  p.linkOrbitRep.assign(numLinks, -1);
  p.linkOrbitSize.assign(numLinks, 0);
  for (int l : p.usableLinks) {
    int best = l;
    for (size_t e = 0; e < p.group.size(); ++e)
      best = std::min(best, p.group.link[e][l]);
    p.linkOrbitRep[l] = best;
    ++p.linkOrbitSize[best];
  }
  size_t nr = topo.resources.size();
  p.resourceOrbitRep.assign(nr, -1);
  p.resourceOrbitSize.assign(nr, 0);
  for (size_t x = 0; x < nr; ++x) {
    int best = (int)x;
    for (size_t e = 0; e < p.group.size(); ++e)
      best = std::min(best, p.group.resource[e][x]);
    p.resourceOrbitRep[x] = best;
    ++p.resourceOrbitSize[best];
  }
  return p;
}

std::optional<Error> explainInfeasible(
    const RoutingProblem &p, const Sketch &sk,
    std::optional<std::chrono::steady_clock::time_point> until) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  std::vector<char> seen(n, 0);
  // Marks in `seen` the ranks value v can reach; whether that is all of
  // its destinations.
  auto reaches = [&](int v) {
    const RouteValue &val = p.values[v];
    std::fill(seen.begin(), seen.end(), 0);
    seen[val.origin] = 1;
    // Most often every destination is one allowed hop away: then no search
    // over every link (which takes seconds per value set on 1,000 ranks).
    for (int l : p.outLinks[val.origin])
      if (p.allowed(v, l))
        seen[t.links[l].dst] = 1;
    bool all = true;
    for (int d : val.dests)
      all = all && seen[d];
    if (all)
      return true;
    std::fill(seen.begin(), seen.end(), 0);
    std::deque<int> q{val.origin};
    seen[val.origin] = 1;
    while (!q.empty()) {
      int u = q.front();
      q.pop_front();
      for (int l : p.outLinks[u])
        if (!seen[t.links[l].dst] && p.allowed(v, l)) {
          seen[t.links[l].dst] = 1;
          q.push_back(t.links[l].dst);
        }
    }
    for (int d : val.dests)
      all = all && seen[d];
    return all;
  };
  // A value reaches the images of what its orbit's representative reaches
  // (buildRoutingProblem checks that the sketch's relay rules map onto
  // themselves): when every representative reaches all its destinations,
  // so does every value. On 1,024 ranks that is one search instead of one
  // per value.
  auto pastUntil = [&](size_t i) {
    return until && (i & 63) == 0 && std::chrono::steady_clock::now() > *until;
  };
  if (p.reps.size() < p.values.size()) {
    bool all = true;
    for (size_t i = 0; i < p.reps.size() && all; ++i) {
      if (pastUntil(i))
        return std::nullopt;
      all = reaches(p.reps[i]);
    }
    if (all)
      return std::nullopt;
  }
  int stuck = 0;
  std::optional<Error> first;
  for (int v = 0; v < (int)p.values.size(); ++v) {
    if (!first && pastUntil(v))
      return std::nullopt;
    const RouteValue &val = p.values[v];
    if (reaches(v))
      continue;
    for (int d : val.dests) {
      if (seen[d])
        continue;
      ++stuck;
      if (first)
        continue;
      std::string head = rankDesc(p, d) + " can never receive " +
                         valueName(p.collective, v) + " (which starts on " +
                         rankDesc(p, val.origin) + ") under this sketch";
      int nd = t.nodeOf[d], no = t.nodeOf[val.origin];
      std::vector<int> reachedInNode;
      for (int r : t.ranksOfNode(nd))
        if (seen[r])
          reachedInNode.push_back(p.localOf[r]);
      if (nd != no && reachedInNode.empty()) {
        // The value never leaves for node nd.
        int lo = p.localOf[val.origin];
        std::vector<int> senders, relayers;
        for (int a = 0; a < p.gpusPerNode; ++a) {
          bool any = false;
          for (int b = 0; b < p.gpusPerNode; ++b)
            any |= (bool)p.interConn[a][b];
          if (any)
            senders.push_back(a);
          if (any && (p.relays.empty() || p.relays[a][lo]))
            relayers.push_back(a);
        }
        std::string why;
        SourceLoc loc = sk.connLoc;
        if (senders.empty()) {
          why = "internode_conn lets no GPU send to another node";
        } else if (relayers.empty()) {
          why = "internode_conn senders are GPUs " + listInts(senders) +
                ", but gpus_to_sender_rev_map lets none of them relay chunks "
                "of GPU " +
                std::to_string(lo) + "; add " + std::to_string(lo) +
                " to the list of one of those senders";
          loc = sk.revMapLoc;
        } else {
          std::vector<int> reachedSenders;
          for (int r : t.ranksOfNode(no))
            if (seen[r] && std::find(relayers.begin(), relayers.end(),
                                     p.localOf[r]) != relayers.end())
              reachedSenders.push_back(p.localOf[r]);
          if (reachedSenders.empty()) {
            why = "the chunk may cross nodes only from GPUs " +
                  listInts(relayers) + ", but inside node " +
                  std::to_string(no) +
                  " the topology has no intranode path that carries it "
                  "there";
            loc = sk.revMapLoc.known() ? sk.revMapLoc : sk.connLoc;
          } else {
            why = "GPUs " + listInts(reachedSenders) + " of node " +
                  std::to_string(no) +
                  " hold the chunk and may send it, but no internode_conn "
                  "pair reaches node " +
                  std::to_string(nd) +
                  (p.directHops ? " directly (relay sends each chunk from its "
                                  "own node straight to every node that "
                                  "needs it)"
                                : "");
          }
        }
        first =
            Error(head + ": " + why, loc.known() ? loc : SourceLoc{sk.file});
      } else {
        std::string why =
            "within node " + std::to_string(nd) + " it reaches GPUs " +
            listInts(reachedInNode) +
            ", but the topology has no intranode link from them to GPU " +
            std::to_string(p.localOf[d]) +
            (nd != no ? " (internode_conn decides where chunks enter a node)"
                      : "");
        SourceLoc loc = nd != no ? sk.connLoc : sk.intraLoc;
        first =
            Error(head + ": " + why, loc.known() ? loc : SourceLoc{sk.file});
      }
    }
  }
  if (first && stuck > 1)
    first->notes = "(" + std::to_string(stuck - 1) +
                   " more rank/chunk pairs are unreachable)";
  return first;
}

} // namespace ccsynth::synth
