//===- Collective.cpp - Built-in and custom collective conditions ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements Collective.h: the names of collective kinds and buffers and
// their parsers; ConditionsBuilder, which interns the value sets of output
// chunks so equal sets are stored once; Collective::builtin (the pre- and
// postconditions of allgather, reducescatter, allreduce, broadcast, reduce,
// gather, scatter and alltoall for n ranks, chunk factor c, root and
// in-place) and Collective::custom; and the queries on a collective (where a
// value comes from, in-place aliases, buffer sizes, bus bandwidth factor).
// See docs/formats.md ("Schedule").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Schedule/Collective.h"

#include <algorithm>
#include <cstdint>

namespace ccsynth {

namespace {
struct KindName {
  CollectiveKind kind;
  const char *name;
};
constexpr KindName kKinds[] = {
    {CollectiveKind::AllGather, "allgather"},
    {CollectiveKind::ReduceScatter, "reducescatter"},
    {CollectiveKind::AllReduce, "allreduce"},
    {CollectiveKind::Broadcast, "broadcast"},
    {CollectiveKind::Reduce, "reduce"},
    {CollectiveKind::Gather, "gather"},
    {CollectiveKind::Scatter, "scatter"},
    {CollectiveKind::AllToAll, "alltoall"},
    {CollectiveKind::Custom, "custom"},
};
} // namespace

const char *toString(CollectiveKind kind) {
  for (const KindName &k : kKinds)
    if (k.kind == kind)
      return k.name;
  return "?";
}

std::optional<CollectiveKind> parseCollectiveKind(const std::string &s) {
  std::string lower;
  for (char c : s)
    if (c != '_' && c != '-')
      lower += (char)std::tolower((unsigned char)c);
  for (const KindName &k : kKinds)
    if (lower == k.name)
      return k.kind;
  return std::nullopt;
}

std::string collectiveKindNames() {
  std::string out;
  for (const KindName &k : kKinds)
    if (k.kind != CollectiveKind::Custom)
      out += std::string(out.empty() ? "" : ", ") + k.name;
  return out;
}

const char *toString(BufferKind b) {
  switch (b) {
  case BufferKind::Input:
    return "input";
  case BufferKind::Output:
    return "output";
  case BufferKind::Scratch:
    return "scratch";
  }
  return "?";
}

std::optional<BufferKind> parseBufferKind(const std::string &s) {
  if (s == "i" || s == "in" || s == "input")
    return BufferKind::Input;
  if (s == "o" || s == "out" || s == "output")
    return BufferKind::Output;
  if (s == "s" || s == "scratch")
    return BufferKind::Scratch;
  return std::nullopt;
}

std::string toString(const ChunkLoc &loc) {
  return "rank " + std::to_string(loc.rank) + " " + toString(loc.buffer) +
         " chunk " + std::to_string(loc.index);
}

namespace {
/// FNV-1a over the values' bytes, finished by a 64-bit mix.
uint64_t hashValues(const std::vector<int> &values) {
  uint64_t h = 1469598103934665603ull;
  for (int v : values) {
    h ^= (uint32_t)v;
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}
} // namespace

ConditionsBuilder::ConditionsBuilder(int ranks, int inputChunks,
                                     int outputChunks) {
  c.numRanks = ranks;
  c.inputChunks = inputChunks;
  c.outputChunks = outputChunks;
  c.pre.assign((size_t)ranks * inputChunks, -1);
  c.post.assign((size_t)ranks * outputChunks, PostSet::kUnconstrained);
}

int ConditionsBuilder::intern(std::vector<int> values) {
  if (!std::is_sorted(values.begin(), values.end()))
    std::sort(values.begin(), values.end());
  if (values.size() == 1)
    return values.front();
  uint64_t h = hashValues(values);
  auto [it, inserted] = byHash.try_emplace(h, -1);
  for (int s = it->second; s >= 0; s = next[s]) {
    size_t b = c.setBegin[s], e = c.setBegin[s + 1];
    if (e - b == values.size() &&
        std::equal(values.begin(), values.end(), c.setValues.begin() + b))
      return -2 - s;
  }
  int s = (int)c.setBegin.size() - 1;
  next.push_back(it->second);
  it->second = s;
  c.setValues.insert(c.setValues.end(), values.begin(), values.end());
  c.setBegin.push_back(c.setValues.size());
  c.reduction |= values.size() > 1;
  return -2 - s;
}

std::shared_ptr<const CollectiveConditions> ConditionsBuilder::finish() {
  int values = 0;
  for (int v : c.pre)
    values = std::max(values, v + 1);
  c.origin.assign(values, SIZE_MAX);
  for (size_t slot = c.pre.size(); slot-- > 0;)
    if (c.pre[slot] >= 0)
      c.origin[c.pre[slot]] = slot;
  byHash.clear();
  next.clear();
  return std::make_shared<const CollectiveConditions>(std::move(c));
}

Expected<Collective> Collective::builtin(CollectiveKind kind, int n, int c,
                                         bool inPlace, int root) {
  if (kind == CollectiveKind::Custom)
    return Error("a custom collective needs explicit pre/postconditions");
  if (n < 1)
    return Error("a collective needs at least one rank (got " +
                 std::to_string(n) + ")");
  if (c < 1)
    return Error("the chunk factor must be at least 1 (got " +
                 std::to_string(c) + ")");
  if ((long long)n * c > (1 << 22))
    return Error("ranks x chunk factor is too large (" + std::to_string(n) +
                 " x " + std::to_string(c) + ")");
  bool rooted = kind == CollectiveKind::Broadcast ||
                kind == CollectiveKind::Reduce ||
                kind == CollectiveKind::Gather ||
                kind == CollectiveKind::Scatter;
  if (rooted && (root < 0 || root >= n))
    return Error("root " + std::to_string(root) + " is not a rank (0.." +
                 std::to_string(n - 1) + ")");
  Collective col;
  col.kind = kind;
  col.name = toString(kind);
  col.numRanks = n;
  col.chunkFactor = c;
  col.root = rooted ? root : 0;
  col.inPlace = inPlace;
  switch (kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::Gather:
    col.inputChunks = c;
    col.outputChunks = n * c;
    break;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::Scatter:
    col.inputChunks = n * c;
    col.outputChunks = c;
    break;
  case CollectiveKind::AllToAll:
    col.inputChunks = n * c;
    col.outputChunks = n * c;
    break;
  default:
    col.inputChunks = c;
    col.outputChunks = c;
    break;
  }
  ConditionsBuilder b(n, col.inputChunks, col.outputChunks);
  // Values: input slot (r, i) holds the next id, rank-major, on the ranks
  // that hold data.
  bool rootOnly =
      kind == CollectiveKind::Broadcast || kind == CollectiveKind::Scatter;
  auto in = [&](int r, int i) {
    if (rootOnly)
      return r == root ? i : -1;
    return r * col.inputChunks + i;
  };
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < col.inputChunks; ++i)
      b.setPre(r, i, in(r, i));
  // The sum of every rank's input chunk i (AllReduce, Reduce), interned
  // once and shared by every rank that wants it.
  auto sumOf = [&](int i) {
    std::vector<int> want(n);
    for (int j = 0; j < n; ++j)
      want[j] = in(j, i);
    return b.intern(std::move(want));
  };
  for (int i = 0; i < col.outputChunks; ++i) {
    bool sums =
        kind == CollectiveKind::AllReduce || kind == CollectiveKind::Reduce;
    int sum = sums ? sumOf(i) : PostSet::kUnconstrained;
    for (int r = 0; r < n; ++r) {
      int id = PostSet::kUnconstrained;
      switch (kind) {
      case CollectiveKind::AllGather:
        id = in(i / c, i % c);
        break;
      case CollectiveKind::ReduceScatter: {
        std::vector<int> want(n);
        for (int j = 0; j < n; ++j)
          want[j] = in(j, r * c + i);
        id = b.intern(std::move(want));
        break;
      }
      case CollectiveKind::AllReduce:
        id = sum;
        break;
      case CollectiveKind::Broadcast:
        id = in(root, i);
        break;
      case CollectiveKind::Reduce:
        if (r == root)
          id = sum;
        break;
      case CollectiveKind::Gather:
        if (r == root)
          id = in(i / c, i % c);
        break;
      case CollectiveKind::Scatter:
        id = in(root, r * c + i);
        break;
      case CollectiveKind::AllToAll:
        id = in(i / c, r * c + i % c);
        break;
      case CollectiveKind::Custom:
        break;
      }
      b.setPostId(r, i, id);
    }
  }
  col.cond = b.finish();
  return col;
}

Expected<Collective> Collective::custom(
    std::string name, int ranks, int inputChunks, int outputChunks,
    const std::vector<std::vector<int>> &pre,
    const std::vector<std::vector<std::optional<std::vector<int>>>> &post,
    bool inPlace) {
  if (ranks < 1 || inputChunks < 0 || outputChunks < 0)
    return Error("custom collective '" + name +
                 "' needs ranks >= 1 and non-negative chunk counts");
  if ((int)pre.size() != ranks || (int)post.size() != ranks)
    return Error("custom collective '" + name +
                 "': conditions must list every rank");
  if (inPlace && inputChunks != outputChunks)
    return Error("custom collective '" + name +
                 "': in-place needs equal input and output chunk counts");
  std::vector<int> seen;
  for (int r = 0; r < ranks; ++r) {
    if ((int)pre[r].size() != inputChunks || (int)post[r].size() != outputChunks)
      return Error("custom collective '" + name + "': rank " +
                   std::to_string(r) + " has the wrong number of chunks");
    for (int v : pre[r])
      if (v >= 0)
        seen.push_back(v);
  }
  std::sort(seen.begin(), seen.end());
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i] != (int)i)
      return Error("custom collective '" + name +
                   "': input values must be distinct and numbered densely "
                   "from 0");
  ConditionsBuilder b(ranks, inputChunks, outputChunks);
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < inputChunks; ++i)
      b.setPre(r, i, pre[r][i]);
    for (int i = 0; i < outputChunks; ++i) {
      if (!post[r][i])
        continue;
      std::vector<int> want = *post[r][i];
      std::sort(want.begin(), want.end());
      if (std::adjacent_find(want.begin(), want.end()) != want.end())
        return Error("custom collective '" + name +
                     "': an output names the same input twice");
      for (int v : want)
        if (v < 0 || v >= (int)seen.size())
          return Error("custom collective '" + name + "': output of rank " +
                       std::to_string(r) + " names unknown value " +
                       std::to_string(v));
      b.setPost(r, i, std::move(want));
    }
  }
  Collective col;
  col.kind = CollectiveKind::Custom;
  col.name = std::move(name);
  col.numRanks = ranks;
  col.chunkFactor = 1;
  col.inPlace = inPlace;
  col.inputChunks = inputChunks;
  col.outputChunks = outputChunks;
  col.cond = b.finish();
  return col;
}

ChunkLoc Collective::valueOrigin(int v) const {
  if (!cond || v < 0 || v >= (int)cond->origin.size() || cond->inputChunks == 0)
    return {-1, BufferKind::Input, -1};
  size_t slot = cond->origin[v];
  if (slot == SIZE_MAX)
    return {-1, BufferKind::Input, -1};
  return {(int)(slot / cond->inputChunks), BufferKind::Input,
          (int)(slot % cond->inputChunks)};
}

ChunkLoc Collective::canonical(ChunkLoc loc) const {
  if (!inPlace || loc.buffer == BufferKind::Scratch)
    return loc;
  int c = chunkFactor;
  switch (kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::Gather:
    if (loc.buffer == BufferKind::Input)
      return {loc.rank, BufferKind::Output, loc.rank * c + loc.index};
    return loc;
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::Scatter:
    if (loc.buffer == BufferKind::Output)
      return {loc.rank, BufferKind::Input, loc.rank * c + loc.index};
    return loc;
  default:
    if (loc.buffer == BufferKind::Output)
      return {loc.rank, BufferKind::Input, loc.index};
    return loc;
  }
}

int Collective::inputChunkAt(ChunkLoc loc) const {
  // Input chunk k is canonically itself, or (in-place AllGather and
  // Gather) output chunk rank * chunkFactor + k.
  int k = -1;
  if (loc.buffer == BufferKind::Input)
    k = loc.index;
  else if (loc.buffer == BufferKind::Output && inPlace &&
           (kind == CollectiveKind::AllGather ||
            kind == CollectiveKind::Gather))
    k = loc.index - loc.rank * chunkFactor;
  if (k < 0 || k >= inputChunks ||
      canonical({loc.rank, BufferKind::Input, k}) != loc)
    return -1;
  return k;
}

int Collective::bufferChunks(BufferKind b) const {
  switch (b) {
  case BufferKind::Input:
    return inputChunks;
  case BufferKind::Output:
    return outputChunks;
  case BufferKind::Scratch:
    return 0;
  }
  return 0;
}

int Collective::sizeDivisor() const {
  return std::max(1, std::max(inputChunks, outputChunks));
}

double Collective::busBwFactor() const {
  double n = numRanks;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * (n - 1) / n;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) / n;
  default:
    return 1;
  }
}

std::string Collective::describe() const {
  std::string s = name + "(ranks=" + std::to_string(numRanks);
  if (kind == CollectiveKind::Custom)
    s += ", in=" + std::to_string(inputChunks) +
         ", out=" + std::to_string(outputChunks);
  else
    s += ", chunks=" + std::to_string(chunkFactor);
  if (kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce ||
      kind == CollectiveKind::Gather || kind == CollectiveKind::Scatter)
    s += ", root=" + std::to_string(root);
  if (inPlace)
    s += ", inplace";
  return s + ")";
}

std::string valueName(const Collective &c, int v) {
  ChunkLoc o = c.valueOrigin(v);
  if (o.rank < 0)
    return "value#" + std::to_string(v);
  return "in[" + std::to_string(o.rank) + "][" + std::to_string(o.index) + "]";
}

} // namespace ccsynth
