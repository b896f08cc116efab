//===- Schedule.cpp - Schedule JSON reader and writer ---------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements Schedule.h: transfer op names, step counts and switch groups
// (switchGroups, pointToPointOnly); the schedule JSON writer
// (scheduleToJson, with the collective as collectiveToJson) and reader
// (parseScheduleJson, loadScheduleJson), which accepts every format
// version up to the current one and locates every error; and the dependency
// analyses the exporters use, transferDependencies (RAW, WAW, WAR per
// chunk) and reductionPhases.
// Sections: names and queries, JSON writer, JSON reader, dependencies.
// See docs/formats.md ("Schedule").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Schedule/Schedule.h"

#include "ccsynth/Support/Json.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

namespace ccsynth {

const char *toString(TransferOp op) {
  switch (op) {
  case TransferOp::Copy:
    return "copy";
  case TransferOp::Reduce:
    return "reduce";
  case TransferOp::SwitchReduce:
    return "switch-reduce";
  case TransferOp::Multicast:
    return "multicast";
  }
  return "?";
}

int Schedule::numSteps() const {
  int steps = 0;
  for (const Transfer &t : transfers)
    steps = std::max(steps, t.step + 1);
  return steps;
}

bool anySwitchOp(const std::vector<Transfer> &transfers) {
  return std::any_of(transfers.begin(), transfers.end(),
                     [](const Transfer &t) { return isSwitchOp(t.op); });
}

bool Schedule::usesSwitches() const { return anySwitchOp(transfers); }

Status pointToPointOnly(const Schedule &s, const std::string &consumer) {
  for (size_t t = 0; t < s.transfers.size(); ++t) {
    const Transfer &tr = s.transfers[t];
    if (!isSwitchOp(tr.op))
      continue;
    return Error("transfer #" + std::to_string(t) + " is a " + toString(tr.op) +
                     " through switch " + std::to_string(tr.sw) + ", and " +
                     consumer +
                     ": in-network transfers lower only to ccsynth's "
                     "generated code (`compile --target cuda` or "
                     "`--target plugin`)",
                 t < s.transferLocs.size() ? s.transferLocs[t] : SourceLoc{});
  }
  return Status::success();
}

SwitchGroups switchGroups(const std::vector<Transfer> &transfers) {
  // Key: (step, switch, op, the shared end: the destination of a
  // reduction, the source of a multicast).
  using Key = std::tuple<int, int, int, int, int, int>;
  std::map<Key, int> groupOf;
  SwitchGroups groups;
  groups.of.assign(transfers.size(), -1);
  for (int t = 0; t < (int)transfers.size(); ++t) {
    const Transfer &tr = transfers[t];
    if (!isSwitchOp(tr.op))
      continue;
    const ChunkLoc &end = tr.op == TransferOp::SwitchReduce ? tr.dst : tr.src;
    Key key{tr.step, tr.sw, (int)tr.op, end.rank, (int)end.buffer, end.index};
    auto [it, fresh] = groupOf.try_emplace(key, (int)groups.members.size());
    if (fresh)
      groups.members.emplace_back();
    groups.members[it->second].push_back(t);
    groups.of[t] = it->second;
  }
  return groups;
}

namespace {

const char *shortBuffer(BufferKind b) {
  return b == BufferKind::Input ? "i" : b == BufferKind::Output ? "o" : "s";
}

OrderedJson collectiveToJson(const Collective &c) {
  OrderedJson j;
  j["kind"] = toString(c.kind);
  if (c.kind == CollectiveKind::Custom) {
    j["name"] = c.name;
    j["ranks"] = c.numRanks;
    j["input_chunks"] = c.inputChunks;
    j["output_chunks"] = c.outputChunks;
    j["inplace"] = c.inPlace;
    OrderedJson pre = OrderedJson::array(), post = OrderedJson::array();
    for (int r = 0; r < c.numRanks; ++r) {
      std::span<const int> in = c.preOf(r);
      pre.push_back(std::vector<int>(in.begin(), in.end()));
      OrderedJson row = OrderedJson::array();
      for (int i = 0; i < c.outputChunks; ++i) {
        PostSet want = c.postAt(r, i);
        row.push_back(want ? OrderedJson(want.toVector())
                           : OrderedJson(nullptr));
      }
      post.push_back(row);
    }
    j["pre"] = pre;
    j["post"] = post;
    return j;
  }
  j["ranks"] = c.numRanks;
  j["chunk_factor"] = c.chunkFactor;
  j["inplace"] = c.inPlace;
  if (c.kind == CollectiveKind::Broadcast || c.kind == CollectiveKind::Reduce ||
      c.kind == CollectiveKind::Gather || c.kind == CollectiveKind::Scatter)
    j["root"] = c.root;
  return j;
}

Expected<Collective> collectiveFromJson(const JsonReader &rd,
                                        const std::string &p) {
  if (Status s = rd.object(p); !s)
    return s.error();
  auto kindName = rd.string(p + "/kind");
  if (!kindName)
    return kindName.error();
  auto kind = parseCollectiveKind(*kindName);
  if (!kind)
    return rd.error(p + "/kind", "unknown collective '" + *kindName +
                                     "' (expected one of: " +
                                     collectiveKindNames() + ", custom)");
  auto ranks = rd.integer(p + "/ranks");
  if (!ranks)
    return ranks.error();
  if (*ranks < 1 || *ranks > 65536)
    return rd.error(p + "/ranks", "'ranks' must be between 1 and 65536");
  bool inPlace = false;
  if (rd.has(p, "inplace")) {
    auto b = rd.boolean(p + "/inplace");
    if (!b)
      return b.error();
    inPlace = *b;
  }
  if (*kind != CollectiveKind::Custom) {
    if (Status s = rd.onlyKeys(
            p, {"kind", "ranks", "chunk_factor", "inplace", "root"});
        !s)
      return s.error();
    auto cf = rd.integer(p + "/chunk_factor");
    if (!cf)
      return cf.error();
    long long root = 0;
    if (rd.has(p, "root")) {
      // Only a rooted collective has a root: elsewhere the key would be
      // carried along and mean nothing.
      if (*kind != CollectiveKind::Broadcast &&
          *kind != CollectiveKind::Reduce && *kind != CollectiveKind::Gather &&
          *kind != CollectiveKind::Scatter)
        return rd.error(p + "/root",
                        "'root' is for the rooted collectives (broadcast, "
                        "reduce, gather, scatter); " +
                            *kindName + " has none: leave it out");
      auto r = rd.integer(p + "/root");
      if (!r)
        return r.error();
      root = *r;
    }
    if (*cf < 1 || *cf > (1 << 20))
      return rd.error(p + "/chunk_factor",
                      "'chunk_factor' " + std::to_string(*cf) +
                          " is out of range: it must be from 1 to 1048576 "
                          "(2^20)");
    auto col =
        Collective::builtin(*kind, (int)*ranks, (int)*cf, inPlace, (int)root);
    if (!col)
      return rd.error(p, col.error().message);
    return col;
  }
  if (Status s = rd.onlyKeys(p, {"kind", "name", "ranks", "input_chunks",
                                 "output_chunks", "inplace", "pre", "post"});
      !s)
    return s.error();
  auto name = rd.string(p + "/name");
  auto inC = rd.integer(p + "/input_chunks");
  auto outC = rd.integer(p + "/output_chunks");
  if (!name)
    return name.error();
  if (!inC)
    return inC.error();
  if (!outC)
    return outC.error();
  if (Status s = rd.array(p + "/pre"); !s)
    return s.error();
  if (Status s = rd.array(p + "/post"); !s)
    return s.error();
  const Json &pre = rd.at(p + "/pre");
  const Json &post = rd.at(p + "/post");
  std::vector<std::vector<int>> preV;
  std::vector<std::vector<std::optional<std::vector<int>>>> postV;
  for (size_t r = 0; r < pre.size(); ++r) {
    std::string rp = jsonPath(p + "/pre", r);
    if (Status s = rd.array(rp); !s)
      return s.error();
    std::vector<int> row;
    for (size_t i = 0; i < pre[r].size(); ++i) {
      auto v = rd.integer(jsonPath(rp, i));
      if (!v)
        return v.error();
      row.push_back((int)*v);
    }
    preV.push_back(row);
  }
  for (size_t r = 0; r < post.size(); ++r) {
    std::string rp = jsonPath(p + "/post", r);
    if (Status s = rd.array(rp); !s)
      return s.error();
    std::vector<std::optional<std::vector<int>>> row;
    for (size_t i = 0; i < post[r].size(); ++i) {
      std::string ip = jsonPath(rp, i);
      if (post[r][i].is_null()) {
        row.push_back(std::nullopt);
        continue;
      }
      if (Status s = rd.array(ip); !s)
        return s.error();
      std::vector<int> want;
      for (size_t k = 0; k < post[r][i].size(); ++k) {
        auto v = rd.integer(jsonPath(ip, k));
        if (!v)
          return v.error();
        want.push_back((int)*v);
      }
      row.push_back(want);
    }
    postV.push_back(row);
  }
  auto col = Collective::custom(*name, (int)*ranks, (int)*inC, (int)*outC,
                                std::move(preV), std::move(postV), inPlace);
  if (!col)
    return rd.error(p, col.error().message);
  return col;
}

Expected<ChunkLoc> chunkFromJson(const JsonReader &rd, const std::string &p) {
  if (Status s = rd.array(p); !s)
    return s.error();
  if (rd.at(p).size() != 3)
    return rd.error(p, "a chunk reference is [rank, buffer, index], e.g. "
                       "[0, \"i\", 3]");
  auto rank = rd.integer(p + "/0");
  if (!rank)
    return rank.error();
  auto buf = rd.string(p + "/1");
  if (!buf)
    return buf.error();
  auto kind = parseBufferKind(*buf);
  if (!kind)
    return rd.error(p + "/1",
                    "unknown buffer '" + *buf + "' (expected i, o or s)");
  auto index = rd.integer(p + "/2");
  if (!index)
    return index.error();
  if (*rank < 0 || *rank > std::numeric_limits<int>::max() || *index < 0 ||
      *index > std::numeric_limits<int>::max())
    return rd.error(p, "rank and index must be from 0 to " +
                           std::to_string(std::numeric_limits<int>::max()) +
                           " (got " + std::to_string(*rank) + " and " +
                           std::to_string(*index) + ")");
  return ChunkLoc{(int)*rank, *kind, (int)*index};
}

Expected<int> optionalInt(const JsonReader &rd, const std::string &obj,
                          const char *key, int dflt, int lo) {
  if (!rd.has(obj, key))
    return dflt;
  auto v = rd.integer(obj + "/" + key);
  if (!v)
    return v.error();
  if (*v < lo || *v > std::numeric_limits<int>::max())
    return rd.error(obj + "/" + key,
                    std::string("'") + key + "' " + std::to_string(*v) +
                        " is out of range: it must be from " +
                        std::to_string(lo) + " to " +
                        std::to_string(std::numeric_limits<int>::max()));
  return (int)*v;
}

} // namespace

std::string scheduleToJson(const Schedule &s) {
  OrderedJson head;
  head["format"] = "ccsynth-schedule";
  head["version"] = s.topologyHash.empty() ? Schedule::kFormatVersion
                                            : s.topologyHashVersion;
  head["name"] = s.name;
  head["topology"] = s.topology;
  if (!s.topologyHash.empty())
    head["topology_hash"] = s.topologyHash;
  head["origin"] = s.origin;
  head["collective"] = collectiveToJson(s.collective);
  head["scratch_chunks"] = s.scratchChunks;
  head["protocol"] = s.protocol;
  head["instances"] = s.instances;
  std::string out = "{\n";
  for (auto it = head.begin(); it != head.end(); ++it)
    out +=
        "  " + OrderedJson(it.key()).dump() + ": " + it.value().dump() + ",\n";
  out += "  \"transfers\": [";
  for (size_t i = 0; i < s.transfers.size(); ++i) {
    const Transfer &t = s.transfers[i];
    OrderedJson j;
    j["step"] = t.step;
    j["op"] = toString(t.op);
    j["src"] = {t.src.rank, shortBuffer(t.src.buffer), t.src.index};
    j["dst"] = {t.dst.rank, shortBuffer(t.dst.buffer), t.dst.index};
    if (t.count != 1)
      j["count"] = t.count;
    if (t.link >= 0)
      j["link"] = t.link;
    if (t.sw >= 0)
      j["switch"] = t.sw;
    if (t.channel >= 0)
      j["channel"] = t.channel;
    if (t.threadblock >= 0)
      j["tb"] = t.threadblock;
    out += (i ? ",\n    " : "\n    ") + j.dump();
  }
  out += s.transfers.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

Expected<Schedule> parseScheduleJson(const JsonDocument &doc) {
  JsonReader rd(doc);
  if (Status st = rd.object(""); !st)
    return st.error();
  if (Status st = rd.onlyKeys("", {"format", "version", "name", "topology",
                                   "topology_hash", "origin", "collective",
                                   "scratch_chunks", "protocol", "instances",
                                   "transfers"});
      !st)
    return st.error();
  auto format = rd.string("/format");
  if (!format)
    return format.error();
  if (*format != "ccsynth-schedule")
    return rd.error("/format", "not a ccsynth schedule (format is '" + *format +
                                   "', expected 'ccsynth-schedule')");
  auto version = rd.integer("/version");
  if (!version)
    return version.error();
  if (*version < 1 || *version > Schedule::kFormatVersion)
    return rd.error("/version", "unsupported schedule format version " +
                                    std::to_string(*version) +
                                    " (this ccsynth reads versions 1 to " +
                                    std::to_string(Schedule::kFormatVersion) +
                                    ")");
  if (*version < 2 && rd.has("", "topology_hash"))
    return rd.error("/topology_hash",
                    "'topology_hash' needs schedule format version 2");
  Schedule s;
  if (*version >= 2)
    s.topologyHashVersion = (int)*version;
  for (auto [key, field] :
       {std::pair{"name", &s.name}, std::pair{"topology", &s.topology},
        std::pair{"topology_hash", &s.topologyHash},
        std::pair{"origin", &s.origin}, std::pair{"protocol", &s.protocol}}) {
    if (!rd.has("", key))
      continue;
    auto v = rd.string(std::string("/") + key);
    if (!v)
      return v.error();
    *field = *v;
  }
  if (!s.topologyHash.empty() && (s.topologyHash.size() != 16 ||
                                  s.topologyHash.find_first_not_of(
                                      "0123456789abcdef") != std::string::npos))
    return rd.error("/topology_hash",
                    "'topology_hash' must be 16 lowercase hex digits");
  if (s.protocol != "Simple" && s.protocol != "LL" && s.protocol != "LL128")
    return rd.error("/protocol", "protocol must be Simple, LL or LL128");
  auto col = collectiveFromJson(rd, "/collective");
  if (!col)
    return col.error();
  s.collective = col.take();
  auto scratch = optionalInt(rd, "", "scratch_chunks", 0, 0);
  if (!scratch)
    return scratch.error();
  s.scratchChunks = *scratch;
  auto instances = optionalInt(rd, "", "instances", 1, 1);
  if (!instances)
    return instances.error();
  s.instances = *instances;
  if (Status st = rd.array("/transfers"); !st)
    return st.error();
  const Json &list = rd.at("/transfers");
  s.transfers.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    std::string p = jsonPath("/transfers", i);
    if (Status st = rd.object(p); !st)
      return st.error();
    if (Status st = rd.onlyKeys(p, {"step", "op", "src", "dst", "count", "link",
                                    "switch", "channel", "tb"});
        !st)
      return st.error();
    Transfer t;
    auto step = rd.integer(p + "/step");
    if (!step)
      return step.error();
    if (*step < 0 || *step > std::numeric_limits<int>::max())
      return rd.error(p + "/step",
                      "'step' " + std::to_string(*step) +
                          " is out of range: it must be from 0 to " +
                          std::to_string(std::numeric_limits<int>::max()));
    t.step = (int)*step;
    auto op = rd.string(p + "/op");
    if (!op)
      return op.error();
    if (*op == "copy")
      t.op = TransferOp::Copy;
    else if (*op == "reduce")
      t.op = TransferOp::Reduce;
    else if (*op == "switch-reduce")
      t.op = TransferOp::SwitchReduce;
    else if (*op == "multicast")
      t.op = TransferOp::Multicast;
    else
      return rd.error(p + "/op", "unknown op '" + *op +
                                     "' (expected copy, reduce, "
                                     "switch-reduce or multicast)");
    auto src = chunkFromJson(rd, p + "/src");
    if (!src)
      return src.error();
    auto dst = chunkFromJson(rd, p + "/dst");
    if (!dst)
      return dst.error();
    t.src = *src;
    t.dst = *dst;
    auto count = optionalInt(rd, p, "count", 1, 1);
    auto link = optionalInt(rd, p, "link", -1, 0);
    auto channel = optionalInt(rd, p, "channel", -1, 0);
    auto tb = optionalInt(rd, p, "tb", -1, 0);
    for (auto *e : {&count, &link, &channel, &tb})
      if (!*e)
        return e->error();
    auto sw = optionalInt(rd, p, "switch", -1, 0);
    if (!sw)
      return sw.error();
    if (isSwitchOp(t.op) && *sw < 0)
      return rd.error(p, "a " + std::string(toString(t.op)) +
                             " transfer names the switch it goes through "
                             "('switch')");
    if (!isSwitchOp(t.op) && *sw >= 0)
      return rd.error(p + "/switch",
                      "only switch-reduce and multicast transfers go through "
                      "a switch");
    if (isSwitchOp(t.op) && *link >= 0)
      return rd.error(p + "/link", "a transfer through a switch uses no link");
    t.count = *count;
    t.link = *link;
    t.sw = *sw;
    t.channel = *channel;
    t.threadblock = *tb;
    s.transfers.push_back(t);
  }
  return s;
}

Expected<Schedule> loadScheduleJson(const std::string &path) {
  auto text = readFile(path, kMaxScheduleBytes);
  if (!text)
    return text.error();
  return readScheduleJson(path, text.take());
}

Dependencies
transferDependencies(const Collective &col, int scratchChunks, int count,
                     const std::function<const Transfer &(int)> &transferAt,
                     const std::vector<int> &order) {
  // Flat ids of canonical (rank, buffer, index) slots.
  int n = col.numRanks;
  std::vector<size_t> base(n * 3 + 1, 0);
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < 3; ++b)
      base[r * 3 + b + 1] =
          base[r * 3 + b] +
          (b == 2 ? scratchChunks : col.bufferChunks((BufferKind)b));
  auto slotOf = [&](const ChunkLoc &at, int k) {
    ChunkLoc c = col.canonical({at.rank, at.buffer, at.index + k});
    return base[c.rank * 3 + (int)c.buffer] + c.index;
  };
  std::vector<int> lastWriter(base.back(), -1);
  // The readers of each slot since its last write: lists threaded through
  // `reads` (transfer, next), newest first.
  std::vector<int> firstRead(base.back(), -1);
  std::vector<std::pair<int, int>> reads;
  // Rows in the order transfers are visited, then moved to their index.
  std::vector<int> visited;
  std::vector<size_t> rowOf(count + 1, 0);
  std::vector<int> mine;
  for (int t : order) {
    const Transfer &tr = transferAt(t);
    mine.clear();
    for (int k = 0; k < tr.count; ++k)
      if (int w = lastWriter[slotOf(tr.src, k)]; w >= 0)
        mine.push_back(w);
    for (int k = 0; k < tr.count; ++k) {
      size_t d = slotOf(tr.dst, k);
      if (lastWriter[d] >= 0)
        mine.push_back(lastWriter[d]);
      for (int r = firstRead[d]; r >= 0; r = reads[r].second)
        mine.push_back(reads[r].first);
    }
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    mine.erase(std::remove(mine.begin(), mine.end(), t), mine.end());
    for (int k = 0; k < tr.count; ++k) {
      size_t s = slotOf(tr.src, k);
      reads.push_back({t, firstRead[s]});
      firstRead[s] = (int)reads.size() - 1;
    }
    for (int k = 0; k < tr.count; ++k) {
      size_t d = slotOf(tr.dst, k);
      lastWriter[d] = t;
      firstRead[d] = -1;
    }
    rowOf[t + 1] = mine.size();
    visited.insert(visited.end(), mine.begin(), mine.end());
  }
  Dependencies deps;
  deps.begin.assign(count + 1, 0);
  for (int t = 0; t < count; ++t)
    deps.begin[t + 1] = deps.begin[t] + rowOf[t + 1];
  deps.preds.resize(visited.size());
  size_t at = 0;
  for (int t : order) {
    size_t len = deps.begin[t + 1] - deps.begin[t];
    std::copy_n(visited.begin() + at, len, deps.preds.begin() + deps.begin[t]);
    at += len;
  }
  return deps;
}

std::vector<int> reductionPhases(const Collective &collective,
                                 const std::vector<Transfer> &transfers) {
  if (!collective.isReduction() || !collective.hasConditions())
    return {};
  size_t finished = 0;
  for (int s = 0; s < collective.numPostSets(); ++s)
    finished = std::max(finished, collective.postSet(s).size());
  // Contributions per chunk, by canonical location; an input chunk that
  // starts with a value holds one.
  std::map<ChunkLoc, size_t> held;
  for (int r = 0; r < collective.numRanks; ++r)
    for (int i = 0; i < collective.inputChunks; ++i)
      if (collective.preAt(r, i) >= 0)
        held[collective.canonical({r, BufferKind::Input, i})] = 1;
  auto at = [&](ChunkLoc loc, int k) -> size_t & {
    loc.index += k;
    return held[collective.canonical(loc)];
  };
  std::vector<int> order(transfers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return transfers[a].step < transfers[b].step;
  });
  std::vector<int> phase(transfers.size(), 0);
  bool seen[2] = {false, false};
  for (int t : order) {
    const Transfer &tr = transfers[t];
    for (int k = 0; k < tr.count; ++k)
      if (at(tr.src, k) >= finished)
        phase[t] = 1;
    // Sources first: a transfer may read and write overlapping chunks.
    std::vector<size_t> src(tr.count);
    for (int k = 0; k < tr.count; ++k)
      src[k] = at(tr.src, k);
    for (int k = 0; k < tr.count; ++k) {
      size_t &dst = at(tr.dst, k);
      dst = isReduceOp(tr.op) ? dst + src[k] : src[k];
    }
    // A switch operation's members are counted (a reduction gathers k
    // contributions, a multicast copies), but only point-to-point
    // transfers run on channels.
    if (tr.src.rank != tr.dst.rank && !isSwitchOp(tr.op))
      seen[phase[t]] = true;
  }
  if (!seen[0] || !seen[1])
    return {};
  return phase;
}

} // namespace ccsynth
