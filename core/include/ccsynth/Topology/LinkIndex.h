//===- LinkIndex.h - Fast best-link queries for the verifier and simulator ===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Topology::bestLink scans every link; a schedule on fc:4096 (16M links)
// asks once per transfer. The index groups links by source once, so a query
// costs the source's out-degree. Private to the core library.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Topology/Topology.h"

#include <optional>
#include <vector>

namespace ccsynth {

class LinkIndex {
public:
  explicit LinkIndex(const Topology &topology) : topo(topology) {
    out.resize(topo.numRanks());
    for (int i = 0; i < (int)topo.links.size(); ++i) {
      int src = topo.links[i].src;
      if (src >= 0 && src < (int)out.size())
        out[src].push_back(i);
    }
  }

  /// The link Topology::bestLink(src, dst) picks (same rule: the first link
  /// wins unless a later one is strictly faster, or as fast with a lower
  /// alpha), or nothing.
  std::optional<int> bestLink(int src, int dst) const {
    std::optional<int> best;
    if (src < 0 || src >= (int)out.size())
      return best;
    double bestBw = 0;
    for (int i : out[src]) {
      if (topo.links[i].dst != dst)
        continue;
      double bw = topo.effectiveBandwidth(i);
      if (!best || bw > bestBw ||
          (bw == bestBw && topo.links[i].alphaUs < topo.links[*best].alphaUs)) {
        best = i;
        bestBw = bw;
      }
    }
    return best;
  }

private:
  const Topology &topo;
  std::vector<std::vector<int>> out;
};

} // namespace ccsynth
