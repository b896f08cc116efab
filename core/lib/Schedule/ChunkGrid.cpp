//===- ChunkGrid.cpp - Chunks re-cut, and two schedules on one grid ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// MSCCL cuts a buffer into nchunksperloop equal chunks and selects a program
// only for calls whose element count is a multiple of that number. A
// schedule whose chunk factor has an odd factor (DGX-1's six rings split
// each buffer in 6) therefore runs for no power-of-two size. regridChunks
// keeps the schedule's routes and steps and only changes what a chunk is:
// chunk k of every split becomes a run of nearly equal sub-chunks of a
// power-of-two grid, so the program MSCCL selects moves (almost) the same
// bytes over the same links in the same order. spliceSchedules puts two
// schedules of one collective on disjoint chunks of each split, so that
// they run side by side on shares of the buffer.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Schedule/Schedule.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ccsynth {

int powerOfTwoGrid(int chunkFactor) {
  if (chunkFactor < 1)
    return 0;
  if ((chunkFactor & (chunkFactor - 1)) == 0)
    return chunkFactor;
  // At least 8 sub-chunks per chunk, and as many more as it takes to keep
  // the longest run within 4% of the even share (c = 7: 64 gives runs of
  // 10 and 9 against 9.14, 128 gives 19 and 18 against 18.3).
  int p = 1;
  while (p < 8 * chunkFactor)
    p *= 2;
  for (int tries = 0; tries < 3; ++tries, p *= 2) {
    double share = (double)p / chunkFactor;
    if (std::ceil(share) / share <= 1.04)
      return p;
  }
  return p / 2;
}

namespace {

/// Union-find over a rank's slots (canonical input/output, then scratch),
/// each set carrying the length its data has on the new grid (0: not fixed
/// by any input or output slot).
struct LengthSets {
  std::vector<int> parent, length;
  int find(int x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  /// False when the two sets carry different lengths.
  bool unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b)
      return true;
    if (length[a] && length[b] && length[a] != length[b])
      return false;
    parent[b] = a;
    length[a] = std::max(length[a], length[b]);
    return true;
  }
};

} // namespace

Expected<Schedule> regridChunks(const Schedule &s, int factor) {
  const Collective &col = s.collective;
  if (col.kind == CollectiveKind::Custom)
    return Error("a custom collective's chunks cannot be re-cut: its "
                 "conditions name each chunk");
  int c = col.chunkFactor;
  if (factor < c)
    return Error("the new grid (" + std::to_string(factor) +
                 " chunks per split) is finer than the schedule's " +
                 std::to_string(c) + " only if it has at least as many");
  auto newCol = Collective::builtin(col.kind, col.numRanks, factor, col.inPlace,
                                    col.root);
  if (!newCol)
    return newCol.error();
  // Chunk k of a split becomes run k of the grid: the first factor % c runs
  // one sub-chunk longer.
  std::vector<int> len(c), start(c + 1, 0);
  for (int k = 0; k < c; ++k) {
    len[k] = factor / c + (k < factor % c ? 1 : 0);
    start[k + 1] = start[k] + len[k];
  }
  const int ranks = col.numRanks, in = col.inputChunks, out = col.outputChunks,
            sc = s.scratchChunks;
  const size_t perRank = (size_t)in + out + sc;
  // A transfer's source and destination hold the same data, so they must
  // have the same length: a slot's length is that of the input or output
  // slot its data comes from or goes to (index mod the chunk factor, which
  // every built-in collective keeps: out[r][j*c+k] holds in[j][k]'s
  // chunk k, and so on). Slots are tied together through every transfer.
  LengthSets sets;
  sets.parent.resize(perRank * ranks);
  std::iota(sets.parent.begin(), sets.parent.end(), 0);
  sets.length.assign(perRank * ranks, 0);
  auto slot = [&](ChunkLoc l) -> int {
    l = col.canonical(l);
    size_t base = (size_t)l.rank * perRank;
    switch (l.buffer) {
    case BufferKind::Input:
      return (int)(base + l.index);
    case BufferKind::Output:
      return (int)(base + in + l.index);
    case BufferKind::Scratch:
      break;
    }
    return (int)(base + in + out + l.index);
  };
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < in; ++i)
      sets.length[r * perRank + i] = len[i % c];
    for (int i = 0; i < out; ++i)
      sets.length[r * perRank + in + i] = len[i % c];
  }
  for (const Transfer &t : s.transfers)
    for (int i = 0; i < t.count; ++i) {
      ChunkLoc a = t.src, b = t.dst;
      a.index += i;
      b.index += i;
      if (!sets.unite(slot(a), slot(b)))
        return Error("the transfer " + toString(a) + " -> " + toString(b) +
                     " moves data between chunks of different splits: the "
                     "schedule's chunks cannot be re-cut unevenly");
    }
  // Data that never reaches an input or output chunk gets the shorter run;
  // then each scratch slot is as long as the data it holds.
  auto lengthOf = [&](int slot) -> int & {
    int &l = sets.length[sets.find(slot)];
    if (!l)
      l = factor / c;
    return l;
  };
  std::vector<std::vector<int>> scratchAt(ranks, std::vector<int>(sc + 1, 0));
  int scratch = 0;
  for (int r = 0; r < ranks; ++r) {
    for (int j = 0; j < sc; ++j)
      scratchAt[r][j + 1] =
          scratchAt[r][j] + lengthOf((int)(r * perRank + in + out + j));
    scratch = std::max(scratch, scratchAt[r][sc]);
  }
  auto moved = [&](ChunkLoc l) {
    ChunkLoc n = l;
    if (l.buffer == BufferKind::Scratch)
      n.index = scratchAt[l.rank][l.index];
    else
      n.index = l.index / c * factor + start[l.index % c];
    return n;
  };
  Schedule r = s;
  r.collective = newCol.take();
  r.scratchChunks = scratch;
  for (Transfer &t : r.transfers) {
    int count = 0;
    for (int i = 0; i < t.count; ++i) {
      ChunkLoc a = t.src;
      a.index += i;
      count += lengthOf(slot(a));
    }
    t.src = moved(t.src);
    t.dst = moved(t.dst);
    t.count = count;
  }
  return r;
}

Expected<Schedule> spliceSchedules(const Schedule &a, const Schedule &b,
                                   int maxChunkFactor) {
  const Collective &ca = a.collective, &cb = b.collective;
  if (ca.kind == CollectiveKind::Custom || cb.kind == CollectiveKind::Custom)
    return Error("a custom collective's chunks cannot be split between two "
                 "schedules: its conditions name each chunk");
  if (ca.kind != cb.kind || ca.numRanks != cb.numRanks ||
      ca.inPlace != cb.inPlace || ca.root != cb.root)
    return Error("schedules of different collectives (" + ca.describe() + ", " +
                 cb.describe() + ") cannot share a buffer");
  long long factor = (long long)ca.chunkFactor + cb.chunkFactor;
  if (factor > maxChunkFactor)
    return Error("the two schedules' chunk factors add up to " +
                 std::to_string(factor) + ", more than " +
                 std::to_string(maxChunkFactor));
  auto col = Collective::builtin(ca.kind, ca.numRanks, (int)factor, ca.inPlace,
                                 ca.root);
  if (!col)
    return col.error();
  Schedule r;
  r.name = a.name + "+" + b.name;
  r.topology = a.topology;
  r.topologyHash = a.topologyHash;
  r.topologyHashVersion = a.topologyHashVersion;
  r.origin = a.origin + "+" + b.origin;
  r.collective = col.take();
  r.scratchChunks = a.scratchChunks + b.scratchChunks;
  r.protocol = a.protocol;
  r.instances = a.instances;
  r.transfers.reserve(a.transfers.size() + b.transfers.size());
  // Moves one run of chunks of the part whose chunk factor is `c` and whose
  // chunks start at `offset` in each split, cut where it crosses a split.
  auto add = [&](const Transfer &t, int c, int offset, int scratchOffset) {
    auto moved = [&](ChunkLoc l) {
      if (l.buffer == BufferKind::Scratch)
        l.index += scratchOffset;
      else
        l.index = (int)(l.index / c * factor + offset + l.index % c);
      return l;
    };
    for (int i = 0; i < t.count;) {
      // The run ends where either end reaches the end of its split.
      auto left = [&](const ChunkLoc &l) {
        return l.buffer == BufferKind::Scratch ? t.count - i
                                               : c - (l.index + i) % c;
      };
      ChunkLoc s = t.src, d = t.dst;
      s.index += i;
      d.index += i;
      int n = std::min({t.count - i, left(t.src), left(t.dst)});
      Transfer m = t;
      m.src = moved(s);
      m.dst = moved(d);
      m.count = n;
      r.transfers.push_back(m);
      i += n;
    }
  };
  for (const Transfer &t : a.transfers)
    add(t, ca.chunkFactor, 0, 0);
  for (const Transfer &t : b.transfers)
    add(t, cb.chunkFactor, ca.chunkFactor, a.scratchChunks);
  return r;
}

} // namespace ccsynth
