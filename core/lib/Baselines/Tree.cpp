//===- Tree.cpp - NCCL-style (double) binary tree schedules -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// NCCL's double binary tree (ncclGetBtree / ncclGetDtree in its graph/
// trees.cc): the first tree is the in-order binary tree over positions
// 0..m-1 in which position i's parent clears i's lowest set bit and sets
// the next one; the second mirrors it (m even) or shifts it by one (m odd),
// so that leaves of one tree are inner nodes of the other. AllReduce gives
// each tree half the data, reduces up and broadcasts down, pipelined.
// Positions are the ranks of one node in ring order (so that more tree
// edges are direct links); on several nodes the tree spans nodes and each
// node hangs its ranks below the head as a chain, as NCCL does.
//
//===----------------------------------------------------------------------===//
#include "BaselineBuilder.h"

#include "ccsynth/Baselines/Rings.h"

#include <algorithm>

namespace ccsynth::baseline {

namespace {

/// Parent of position i in NCCL's binary tree over m positions (-1: root).
int btreeParent(int m, int i) {
  if (i == 0)
    return -1;
  int bit = i & -i;
  int up = (i ^ bit) | (bit << 1);
  return up >= m ? (i ^ bit) : up;
}

/// Parent of position i in tree `variant` (0: btree rooted at position 0;
/// 1: its mirror or shift).
int treeParent(int m, int i, int variant) {
  if (variant == 0)
    return btreeParent(m, i);
  if (m % 2 == 0) {
    int up = btreeParent(m, m - 1 - i);
    return up < 0 ? -1 : m - 1 - up;
  }
  int up = btreeParent(m, (i - 1 + m) % m);
  return up < 0 ? -1 : (up + 1) % m;
}

int treeRoot(int m, int variant) {
  if (variant == 0)
    return 0;
  return m % 2 == 0 ? m - 1 : 1 % m;
}

/// The ranks of each node in ring order.
std::vector<std::vector<int>> nodeOrders(const Topology &topo) {
  std::vector<std::vector<int>> orders;
  std::vector<int> best = bestLinks(topo);
  for (int node = 0; node < topo.numNodes(); ++node)
    orders.push_back(
        findRings(topo, topo.ranksOfNode(node), best).rings.front());
  return orders;
}

/// On one node, the order of the tree positions: among the rank order and
/// every rotation of every ring (only those with `root` first when the root
/// is fixed), the one whose tree edges have the most bandwidth on direct
/// links, so that fewer hops need forwarding.
std::vector<int> singleNodeOrder(const Topology &topo, int root, bool rootFixed,
                                 int numTrees) {
  int n = topo.numRanks();
  std::vector<int> best = bestLinks(topo);
  // A tree edge is worth its bandwidth when both directions are direct
  // links, nothing when it must be forwarded.
  auto worth = [&](int a, int b) {
    int ab = best[(size_t)a * n + b], ba = best[(size_t)b * n + a];
    if (ab < 0 || ba < 0)
      return 0.0;
    return std::min(topo.effectiveBandwidth(ab), topo.effectiveBandwidth(ba));
  };
  std::vector<std::vector<int>> cycles = findRings(topo).rings;
  std::vector<int> identity(n);
  for (int r = 0; r < n; ++r)
    identity[r] = r;
  cycles.insert(cycles.begin(), identity);
  std::vector<int> chosen;
  double chosenScore = -1;
  for (const std::vector<int> &cycle : cycles)
    for (int start = 0; start < n; ++start) {
      if (rootFixed && cycle[start] != root)
        continue;
      std::vector<int> order = rotated(cycle, start);
      double score = 0;
      for (int t = 0; t < numTrees; ++t)
        for (int i = 0; i < n; ++i) {
          int up = treeParent(n, i, t);
          if (up >= 0)
            score += worth(order[i], order[up]);
        }
      if (score > chosenScore) {
        chosen = order;
        chosenScore = score;
      }
    }
  return chosen;
}

/// Tree `variant` over all ranks. On one node orders[0] is the order of the
/// positions (its first rank is the root of variant 0); on several, orders
/// holds each node's chain, and variant 0 is rooted at `root`.
Expected<Tree> makeTree(const Topology &topo,
                        const std::vector<std::vector<int>> &orders, int root,
                        int variant) {
  int n = topo.numRanks(), nodes = (int)orders.size();
  Tree tree;
  tree.parent.assign(n, -1);
  int rootNode = topo.nodeOf[root];
  if (nodes == 1) {
    // orders[0] is the position order, root first where it matters.
    const std::vector<int> &order = orders[0];
    for (int i = 0; i < n; ++i) {
      int up = treeParent(n, i, variant);
      if (up >= 0)
        tree.parent[order[i]] = order[up];
    }
    tree.root = order[treeRoot(n, variant)];
  } else {
    // Chains inside nodes; the second tree runs them backwards so that
    // another rank heads each node.
    std::vector<std::vector<int>> chains(nodes);
    for (int node = 0; node < nodes; ++node) {
      std::vector<int> chain = orders[node];
      if (node == rootNode)
        chain =
            rotated(chain, (int)(std::find(chain.begin(), chain.end(), root) -
                                 chain.begin()));
      if (variant == 1)
        std::reverse(chain.begin(), chain.end());
      for (size_t i = 1; i < chain.size(); ++i)
        tree.parent[chain[i]] = chain[i - 1];
      chains[node] = chain;
    }
    std::vector<int> nodeOrder;
    for (int i = 0; i < nodes; ++i)
      nodeOrder.push_back((rootNode + i) % nodes);
    for (int i = 0; i < nodes; ++i) {
      int up = treeParent(nodes, i, variant);
      if (up >= 0)
        tree.parent[chains[nodeOrder[i]].front()] =
            chains[nodeOrder[up]].front();
    }
    tree.root = chains[nodeOrder[treeRoot(nodes, variant)]].front();
  }
  std::vector<int> all(n);
  for (int r = 0; r < n; ++r)
    all[r] = r;
  if (!finishTree(tree, all))
    return Error("internal error: the binary tree over '" + topo.name +
                 "' does not span its ranks");
  return tree;
}

/// Reduces chunk k up `tree` into acc(root). A rank's first child lands in
/// acc(r): by reduction when acc(r) already holds the rank's input (in
/// place), else as a copy to which the rank then adds its input. Further
/// children land in scratch and are added locally, so that all children
/// send at once instead of queueing on one slot.
void reduceUp(ScheduleBuilder &b, const Tree &tree, int k,
              const std::vector<ChunkLoc> &acc) {
  std::vector<std::vector<ChunkLoc>> pending(tree.parent.size());
  for (auto it = tree.preorder.rbegin(); it != tree.preorder.rend(); ++it) {
    int r = *it;
    bool holdsOwn = b.aliases(b.input(r, k), acc[r]);
    if (tree.children[r].empty()) {
      if (r == tree.root)
        b.copyLocal(b.input(r, k), acc[r]);
    } else if (!holdsOwn) {
      b.reduce(b.input(r, k), acc[r]);
    }
    for (ChunkLoc tmp : pending[r])
      b.reduce(tmp, acc[r]);
    if (r == tree.root)
      continue;
    int up = tree.parent[r];
    ChunkLoc src = tree.children[r].empty() ? b.input(r, k) : acc[r];
    if (tree.children[up].front() == r) {
      if (b.aliases(b.input(up, k), acc[up]))
        b.reduce(src, acc[up]);
      else
        b.copy(src, acc[up]);
    } else {
      ChunkLoc tmp = b.scratch(up);
      b.copy(src, tmp);
      pending[up].push_back(tmp);
    }
  }
}

/// Copies chunk k of `src` (on the root) down `tree` into every output.
void broadcastDown(ScheduleBuilder &b, const Tree &tree, int k, ChunkLoc src) {
  for (int r : tree.preorder)
    for (int c : tree.children[r])
      b.copy(r == tree.root ? src : b.output(r, k), b.output(c, k));
}

} // namespace

Expected<Schedule> makeTreeBaseline(CollectiveKind kind, const Topology &topo,
                                    const BaselineOptions &options) {
  int n = topo.numRanks();
  int root = kind == CollectiveKind::AllReduce ? 0 : options.root;
  int numTrees = kind == CollectiveKind::AllReduce ? 2 : 1;
  std::vector<std::vector<int>> orders =
      topo.numNodes() == 1
          ? std::vector<std::vector<int>>{singleNodeOrder(
                topo, root, kind != CollectiveKind::AllReduce, numTrees)}
          : nodeOrders(topo);
  int pipeline = pipelineOr(options, kind == CollectiveKind::AllReduce ? 4 : 8);
  std::vector<Tree> trees;
  for (int t = 0; t < numTrees; ++t) {
    auto tree = makeTree(topo, orders, root, t);
    if (!tree)
      return tree.error();
    trees.push_back(tree.take());
  }
  auto col = makeCollective(kind, n, numTrees * pipeline, options.inPlace,
                            options.root);
  if (!col)
    return col.error();
  ScheduleBuilder b(topo, col.take(), options.until);
  for (int t = 0; t < numTrees; ++t) {
    const Tree &tree = trees[t];
    b.setChannel(t);
    for (int p = 0; p < pipeline; ++p) {
      int k = t * pipeline + p;
      std::vector<ChunkLoc> acc(n);
      switch (kind) {
      case CollectiveKind::AllReduce:
        for (int r = 0; r < n; ++r)
          acc[r] = b.output(r, k);
        reduceUp(b, tree, k, acc);
        broadcastDown(b, tree, k, b.output(tree.root, k));
        break;
      case CollectiveKind::Broadcast:
        b.copyLocal(b.input(tree.root, k), b.output(tree.root, k));
        broadcastDown(b, tree, k, b.input(tree.root, k));
        break;
      case CollectiveKind::Reduce:
        // Partial sums of inner ranks go to scratch: only the root's
        // output is the user's.
        for (int r = 0; r < n; ++r)
          if (r == tree.root)
            acc[r] = b.output(r, k);
          else if (!tree.children[r].empty())
            acc[r] = b.scratch(r);
        reduceUp(b, tree, k, acc);
        break;
      default:
        return Error(std::string("the tree baseline does not implement ") +
                     toString(kind));
      }
    }
  }
  return b.finish(baselineName(BaselineKind::Tree, kind), "baseline:tree");
}

} // namespace ccsynth::baseline
