//===- Collective.cpp - Built-in and custom collective conditions ---------===//
#include "ccsynth/Core/Collective.h"

#include <algorithm>

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
  // Values: input slot (r, i) holds id[r][i].
  col.pre.assign(n, std::vector<int>(col.inputChunks, -1));
  int next = 0;
  for (int r = 0; r < n; ++r) {
    bool hasData = !(kind == CollectiveKind::Broadcast ||
                     kind == CollectiveKind::Scatter) ||
                   r == root;
    for (int i = 0; i < col.inputChunks; ++i)
      if (hasData)
        col.pre[r][i] = next++;
  }
  auto in = [&](int r, int i) { return col.pre[r][i]; };
  col.post.assign(n, std::vector<std::optional<std::vector<int>>>(
                         col.outputChunks, std::nullopt));
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < col.outputChunks; ++i) {
      std::vector<int> want;
      switch (kind) {
      case CollectiveKind::AllGather:
        want = {in(i / c, i % c)};
        break;
      case CollectiveKind::ReduceScatter:
        for (int j = 0; j < n; ++j)
          want.push_back(in(j, r * c + i));
        break;
      case CollectiveKind::AllReduce:
        for (int j = 0; j < n; ++j)
          want.push_back(in(j, i));
        break;
      case CollectiveKind::Broadcast:
        want = {in(root, i)};
        break;
      case CollectiveKind::Reduce:
        if (r != root)
          continue;
        for (int j = 0; j < n; ++j)
          want.push_back(in(j, i));
        break;
      case CollectiveKind::Gather:
        if (r != root)
          continue;
        want = {in(i / c, i % c)};
        break;
      case CollectiveKind::Scatter:
        want = {in(root, r * c + i)};
        break;
      case CollectiveKind::AllToAll:
        want = {in(i / c, r * c + i % c)};
        break;
      case CollectiveKind::Custom:
        break;
      }
      std::sort(want.begin(), want.end());
      col.post[r][i] = std::move(want);
    }
  }
  return col;
}

Expected<Collective>
Collective::custom(std::string name, int ranks, int inputChunks,
                   int outputChunks, std::vector<std::vector<int>> pre,
                   std::vector<std::vector<std::optional<std::vector<int>>>> post,
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
  for (int r = 0; r < ranks; ++r)
    for (auto &want : post[r]) {
      if (!want)
        continue;
      std::sort(want->begin(), want->end());
      if (std::adjacent_find(want->begin(), want->end()) != want->end())
        return Error("custom collective '" + name +
                     "': an output names the same input twice");
      for (int v : *want)
        if (v < 0 || v >= (int)seen.size())
          return Error("custom collective '" + name + "': output of rank " +
                       std::to_string(r) + " names unknown value " +
                       std::to_string(v));
    }
  Collective col;
  col.kind = CollectiveKind::Custom;
  col.name = std::move(name);
  col.numRanks = ranks;
  col.chunkFactor = 1;
  col.inPlace = inPlace;
  col.inputChunks = inputChunks;
  col.outputChunks = outputChunks;
  col.pre = std::move(pre);
  col.post = std::move(post);
  return col;
}

bool Collective::isReduction() const {
  for (const auto &rank : post)
    for (const auto &want : rank)
      if (want && want->size() > 1)
        return true;
  return false;
}

int Collective::numValues() const {
  int n = 0;
  for (const auto &rank : pre)
    for (int v : rank)
      n = std::max(n, v + 1);
  return n;
}

ChunkLoc Collective::valueOrigin(int v) const {
  for (int r = 0; r < numRanks; ++r)
    for (int i = 0; i < inputChunks; ++i)
      if (pre[r][i] == v)
        return {r, BufferKind::Input, i};
  return {-1, BufferKind::Input, -1};
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
