//===- MSCCLPPPlanCheck.cpp - Symbolic run of an MSCCL++ execution plan
//----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements checkMscclppPlan (MSCCLPPPlanCheck.h). PlanRun loads each
// rank of the plan as MSCCL++'s executor does (loadRank: channels, remote
// buffers and threadblocks, with the channel-type and budget rules), then
// steps every threadblock on symbolic values until all finish or none can
// move (step: puts, signals, waits, semaphores, copies and reductions), and
// checks the outputs against the collective.
// See docs/compiler.md ("MSCCL++ execution plan").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/MSCCLPPPlanCheck.h"

#include "ccsynth/Support/Json.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace ccsynth::msccl {

namespace {

enum ChanType { Memory = 0, Port = 1 };

const char *chanName(int t) { return t == Port ? "port" : "memory"; }

std::optional<int> parseChanType(const Json &v) {
  if (!v.is_string())
    return std::nullopt;
  if (v == "memory")
    return Memory;
  if (v == "port")
    return Port;
  return std::nullopt;
}

/// A symbolic chunk value: the sorted input value ids it reduces, or
/// nothing when the slot was never written.
using Value = std::optional<std::vector<int>>;

struct RemoteBuffer {
  int rank = 0;
  BufferKind buffer = BufferKind::Input;
  std::set<int> access; // channel types
};

struct Threadblock {
  int rank = 0;
  int id = 0;
  const Json *ops = nullptr;
  size_t pc = 0;
  std::vector<int> channels[2]; // global channel ids per type
  std::vector<int> remotes[2];  // global remote buffer ids per type
  std::vector<int> switches;    // the rank's switch channel ids
};

/// A switch channel: the ranks whose copies of one buffer a multicast
/// address spans.
struct SwitchChannel {
  BufferKind buffer = BufferKind::Input;
  std::vector<int> ranks;
};

struct Rank {
  int chunks[3] = {0, 0, 0};
  std::vector<SwitchChannel> switches; ///< flat, in declaration order
  /// Per channel type: the peer of each (flattened) channel and its
  /// position among this rank's channels of that type to that peer.
  std::vector<int> peer[2];
  std::vector<int> ordinal[2];
  std::vector<RemoteBuffer> remotes;
  std::vector<long long> semaphores;
};

class PlanRun {
public:
  PlanRun(const std::string &file, const Collective &col,
          const PlanCheckOptions &options)
      : file(file), col(col), options(options) {}

  Expected<PlanCheckSummary> run(const Json &plan);

private:
  const std::string &file;
  const Collective &col;
  const PlanCheckOptions &options;
  std::vector<Rank> ranks;
  std::vector<Threadblock> tbs;
  std::map<ChunkLoc, Value> data;
  /// Signals posted on the connection (from, to, type, ordinal) and those
  /// consumed by waits at the receiver.
  std::map<std::tuple<int, int, int, int>, long long> posted, consumed;
  PlanCheckSummary summary;

  Error error(const std::string &msg) const { return Error(msg, {file}); }
  int nodeOf(int r) const {
    return options.nodeOfRank.empty() ? 0 : options.nodeOfRank[r];
  }
  std::string where(const Threadblock &tb) const {
    std::string op = "?";
    if (tb.pc < tb.ops->size() && (*tb.ops)[tb.pc].contains("name") &&
        (*tb.ops)[tb.pc]["name"].is_string())
      op = (*tb.ops)[tb.pc]["name"].get<std::string>();
    return "rank " + std::to_string(tb.rank) + " threadblock " +
           std::to_string(tb.id) + " op " + std::to_string(tb.pc) + " (" + op +
           ")";
  }

  Status loadRank(const Json &gpu, int r);
  /// Resolves a local buffer reference {type, index, size} to its slots.
  Expected<std::vector<ChunkLoc>> local(const Threadblock &tb, const Json &b);
  /// Resolves a remote reference {buffer_id, index, size} through the
  /// threadblock's references of channel type `t`; `peer` receives the
  /// owner.
  Expected<std::vector<ChunkLoc>> remote(const Threadblock &tb, const Json &b,
                                         int t, int &owner);
  /// The slots {index, size} of `b` name in `rank`'s `buffer`.
  Expected<std::vector<ChunkLoc>> slotsOf(const Threadblock &tb, int rank,
                                          BufferKind buffer, const Json &b);
  /// The channel of type `t` that entry `k` of an op's channel_ids names.
  Expected<int> channel(const Threadblock &tb, const Json &op, int t, int k);
  Expected<Value> read(const Threadblock &tb, ChunkLoc loc);
  /// Executes the threadblock's next op; false when it must wait.
  Expected<bool> step(Threadblock &tb);
};

Status PlanRun::loadRank(const Json &gpu, int r) {
  Rank &rk = ranks[r];
  rk.chunks[(int)BufferKind::Input] = gpu.at("input_chunks").get<int>();
  rk.chunks[(int)BufferKind::Output] = gpu.at("output_chunks").get<int>();
  rk.chunks[(int)BufferKind::Scratch] = gpu.at("scratch_chunks").get<int>();
  std::map<std::pair<int, int>, int> perPeer; // (type, peer) -> count
  for (const Json &ch : gpu.at("channels")) {
    if (ch.at("channel_type") == "switch") {
      auto kind = parseBufferKind(ch.at("buffer_type").get<std::string>());
      if (!kind)
        return error("rank " + std::to_string(r) +
                     ": bad switch channel buffer " + ch.dump());
      for (const Json &g : ch.at("rank_groups")) {
        SwitchChannel sc;
        sc.buffer = *kind;
        for (const Json &m : g.at("ranks")) {
          int peer = m.get<int>();
          if (peer < 0 || peer >= (int)ranks.size())
            return error("rank " + std::to_string(r) +
                         ": switch channel over rank " + std::to_string(peer));
          sc.ranks.push_back(peer);
        }
        if (std::find(sc.ranks.begin(), sc.ranks.end(), r) == sc.ranks.end())
          return error("rank " + std::to_string(r) +
                       " declares a switch channel over ranks it is not "
                       "among (the executor refuses it)");
        rk.switches.push_back(std::move(sc));
        ++summary.switchChannels;
      }
      continue;
    }
    auto t = parseChanType(ch.at("channel_type"));
    if (!t)
      return error("rank " + std::to_string(r) + ": channel type " +
                   ch.at("channel_type").dump() +
                   " is not one ccsynth writes (memory or port)");
    for (const Json &p : ch.at("connected_to")) {
      int peer = p.get<int>();
      if (peer < 0 || peer >= (int)ranks.size() || peer == r)
        return error("rank " + std::to_string(r) + " has a " + chanName(*t) +
                     " channel to rank " + std::to_string(peer));
      bool cross = nodeOf(r) != nodeOf(peer);
      if (cross && *t == Memory)
        return error("rank " + std::to_string(r) +
                     " has a memory channel to rank " + std::to_string(peer) +
                     " on another node: memory channels map the peer's "
                     "memory and need both ranks on one node");
      if (!cross && *t == Port)
        return error("rank " + std::to_string(r) +
                     " has a port channel to rank " + std::to_string(peer) +
                     " on its own node, where ccsynth uses memory channels");
      rk.peer[*t].push_back(peer);
      rk.ordinal[*t].push_back(perPeer[{*t, peer}]++);
      ++(*t == Port ? summary.portChannels : summary.memoryChannels);
    }
  }
  for (const Json &rb : gpu.value("remote_buffers", Json::array())) {
    RemoteBuffer b;
    b.rank = rb.at("rank").get<int>();
    auto kind = parseBufferKind(rb.at("type").get<std::string>());
    if (!kind || b.rank < 0 || b.rank >= (int)ranks.size())
      return error("rank " + std::to_string(r) + ": bad remote buffer " +
                   rb.dump());
    b.buffer = *kind;
    for (const Json &a : rb.at("access_channel_types")) {
      auto t = parseChanType(a);
      if (!t)
        return error("rank " + std::to_string(r) +
                     ": bad access channel type " + a.dump());
      b.access.insert(*t);
    }
    rk.remotes.push_back(b);
  }
  for (const Json &s : gpu.value("semaphores", Json::array()))
    rk.semaphores.push_back(s.at("init_value").get<long long>());

  const Json &tbList = gpu.at("threadblocks");
  if (options.maxThreadblocksPerRank > 0 &&
      (int)tbList.size() > options.maxThreadblocksPerRank)
    return error("rank " + std::to_string(r) + " has " +
                 std::to_string(tbList.size()) +
                 " threadblocks, more than the budget of " +
                 std::to_string(options.maxThreadblocksPerRank));
  summary.maxThreadblocks =
      std::max(summary.maxThreadblocks, (int)tbList.size());
  int expectId = 0;
  for (const Json &t : tbList) {
    Threadblock tb;
    tb.rank = r;
    tb.id = t.at("id").get<int>();
    if (tb.id != expectId++)
      return error("rank " + std::to_string(r) +
                   ": threadblock ids are not dense from 0");
    tb.ops = &t.at("ops");
    for (const Json &c : t.value("channels", Json::array())) {
      if (c.at("channel_type") == "switch") {
        for (const Json &id : c.at("channel_ids")) {
          int g = id.get<int>();
          if (g < 0 || g >= (int)rk.switches.size())
            return error("rank " + std::to_string(r) + " threadblock " +
                         std::to_string(tb.id) + " names switch channel " +
                         std::to_string(g) + ", which the rank does not have");
          tb.switches.push_back(g);
        }
        continue;
      }
      auto type = parseChanType(c.at("channel_type"));
      if (!type)
        return error("rank " + std::to_string(r) + " threadblock " +
                     std::to_string(tb.id) + ": bad channel type");
      for (const Json &id : c.at("channel_ids")) {
        int g = id.get<int>();
        if (g < 0 || g >= (int)rk.peer[*type].size())
          return error("rank " + std::to_string(r) + " threadblock " +
                       std::to_string(tb.id) + " names " + chanName(*type) +
                       " channel " + std::to_string(g) +
                       ", which the rank "
                       "does not have");
        tb.channels[*type].push_back(g);
      }
    }
    for (const Json &c : t.value("remote_buffer_refs", Json::array())) {
      auto type = parseChanType(c.at("access_channel_type"));
      if (!type)
        return error("rank " + std::to_string(r) + " threadblock " +
                     std::to_string(tb.id) + ": bad access channel type");
      for (const Json &id : c.at("remote_buffer_ids")) {
        int g = id.get<int>();
        if (g < 0 || g >= (int)rk.remotes.size() ||
            !rk.remotes[g].access.count(*type))
          return error("rank " + std::to_string(r) + " threadblock " +
                       std::to_string(tb.id) + " refers to remote buffer " +
                       std::to_string(g) + " through " + chanName(*type) +
                       " channels, which it is not accessible by");
        tb.remotes[*type].push_back(g);
      }
    }
    tbs.push_back(std::move(tb));
  }
  return Status::success();
}

Expected<std::vector<ChunkLoc>> PlanRun::local(const Threadblock &tb,
                                               const Json &b) {
  auto kind = parseBufferKind(b.at("type").get<std::string>());
  if (!kind)
    return error(where(tb) + ": bad buffer type " + b.at("type").dump());
  int index = b.at("index").get<int>();
  int size = b.at("size").get<int>();
  int have = ranks[tb.rank].chunks[(int)*kind];
  if (index < 0 || size < 1 || (long long)index + size > have)
    return error(where(tb) + ": chunks " + std::to_string(index) + ".." +
                 std::to_string((long long)index + size - 1) + " of " +
                 toString(*kind) + " are outside its " + std::to_string(have) +
                 " chunks");
  std::vector<ChunkLoc> out;
  for (int k = 0; k < size; ++k)
    out.push_back(col.canonical({tb.rank, *kind, index + k}));
  return out;
}

Expected<std::vector<ChunkLoc>>
PlanRun::remote(const Threadblock &tb, const Json &b, int t, int &owner) {
  int id = b.at("buffer_id").get<int>();
  if (id < 0 || id >= (int)tb.remotes[t].size())
    return error(where(tb) + ": remote buffer " + std::to_string(id) +
                 " is not among the threadblock's " + chanName(t) +
                 " references");
  const RemoteBuffer &rb = ranks[tb.rank].remotes[tb.remotes[t][id]];
  owner = rb.rank;
  return slotsOf(tb, owner, rb.buffer, b);
}

Expected<std::vector<ChunkLoc>> PlanRun::slotsOf(const Threadblock &tb,
                                                 int rank, BufferKind buffer,
                                                 const Json &b) {
  int index = b.at("index").get<int>();
  int size = b.at("size").get<int>();
  int have = ranks[rank].chunks[(int)buffer];
  if (index < 0 || size < 1 || (long long)index + size > have)
    return error(where(tb) + ": chunks " + std::to_string(index) + ".." +
                 std::to_string((long long)index + size - 1) + " of rank " +
                 std::to_string(rank) + "'s " + toString(buffer) +
                 " are outside its " + std::to_string(have) + " chunks");
  std::vector<ChunkLoc> out;
  for (int k = 0; k < size; ++k)
    out.push_back(col.canonical({rank, buffer, index + k}));
  return out;
}

Expected<int> PlanRun::channel(const Threadblock &tb, const Json &op, int t,
                               int k) {
  const Json &ids = op.at("channel_ids");
  if (k >= (int)ids.size())
    return error(where(tb) + ": names no channel");
  int local = ids[k].get<int>();
  if (local < 0 || local >= (int)tb.channels[t].size())
    return error(where(tb) + ": " + chanName(t) + " channel " +
                 std::to_string(local) + " is not among the threadblock's");
  return tb.channels[t][local];
}

Expected<Value> PlanRun::read(const Threadblock &tb, ChunkLoc loc) {
  auto it = data.find(loc);
  if (it == data.end() || !it->second)
    return error(where(tb) + " reads " + toString(loc) +
                 ", which holds no data yet");
  return it->second;
}

Expected<bool> PlanRun::step(Threadblock &tb) {
  const Json &op = (*tb.ops)[tb.pc];
  std::string name = op.at("name").get<std::string>();
  Rank &rk = ranks[tb.rank];
  auto opType = [&]() -> Expected<int> {
    auto t = parseChanType(op.at("channel_type"));
    if (!t)
      return error(where(tb) + ": bad channel type");
    return *t;
  };
  if (name == "nop" || name == "barrier")
    return true;
  if (name == "sem_acquire" || name == "sem_release") {
    std::vector<int> ids;
    for (const Json &s : op.at("semaphore_ids")) {
      int id = s.get<int>();
      if (id < 0 || id >= (int)rk.semaphores.size())
        return error(where(tb) + ": no semaphore " + std::to_string(id));
      ids.push_back(id);
    }
    if (name == "sem_acquire") {
      for (int id : ids)
        if (rk.semaphores[id] <= 0)
          return false;
      for (int id : ids)
        --rk.semaphores[id];
    } else {
      for (int id : ids)
        ++rk.semaphores[id];
    }
    return true;
  }
  if (name == "wait" || name == "signal" || name == "flush") {
    auto t = opType();
    if (!t)
      return t.error();
    if (name == "flush" && *t != Port)
      return error(where(tb) + ": flush applies to port channels only");
    std::vector<std::tuple<int, int, int, int>> keys;
    for (int k = 0; k < (int)op.at("channel_ids").size(); ++k) {
      auto g = channel(tb, op, *t, k);
      if (!g)
        return g.error();
      int peer = rk.peer[*t][*g], ord = rk.ordinal[*t][*g];
      keys.push_back(name == "wait" ? std::tuple{peer, tb.rank, *t, ord}
                                    : std::tuple{tb.rank, peer, *t, ord});
    }
    if (name == "flush")
      return true;
    if (name == "wait") {
      for (auto &key : keys)
        if (posted[key] <= consumed[key])
          return false;
      for (auto &key : keys)
        ++consumed[key];
    } else {
      for (auto &key : keys)
        ++posted[key];
    }
    return true;
  }
  if (name == "copy" || name == "re") {
    const Json &src = op.at("src_buff");
    const Json &dst = op.at("dst_buff");
    if (dst.size() != 1 || src.size() != (name == "copy" ? 1u : 2u))
      return error(where(tb) + ": unexpected number of buffers");
    std::vector<std::vector<ChunkLoc>> in;
    for (const Json &b : src) {
      auto l = local(tb, b);
      if (!l)
        return l.error();
      in.push_back(*l);
    }
    auto out = local(tb, dst[0]);
    if (!out)
      return out.error();
    for (const auto &l : in)
      if (l.size() != out->size())
        return error(where(tb) + ": buffers of different sizes");
    std::vector<Value> results;
    for (size_t k = 0; k < out->size(); ++k) {
      std::vector<int> acc;
      for (const auto &l : in) {
        auto v = read(tb, l[k]);
        if (!v)
          return v.error();
        std::vector<int> merged;
        std::set_union(acc.begin(), acc.end(), (*v)->begin(), (*v)->end(),
                       std::back_inserter(merged));
        if (merged.size() != acc.size() + (*v)->size())
          return error(where(tb) + " reduces a value into " +
                       toString((*out)[k]) + " twice");
        acc = std::move(merged);
      }
      results.push_back(std::move(acc));
    }
    for (size_t k = 0; k < out->size(); ++k)
      data[(*out)[k]] = std::move(results[k]);
    return true;
  }
  if (name == "glres" || name == "gstore") {
    // Through a switch: glres sums every group rank's copy of src and
    // stores it at dst on every rank; gstore stores a local range there.
    if (op.value("channel_type", Json()) != "switch")
      return error(where(tb) + ": " + name + " runs on switch channels");
    const Json &src = op.at("src_buff");
    const Json &dst = op.at("dst_buff");
    if (src.size() != 1 || dst.size() != 1)
      return error(where(tb) + ": unexpected number of buffers");
    auto onSwitch = [&](const Json &b) -> Expected<const SwitchChannel *> {
      int local = b.at("switch_channel_id").get<int>();
      if (local < 0 || local >= (int)tb.switches.size())
        return error(where(tb) + ": switch channel " + std::to_string(local) +
                     " is not among the threadblock's");
      return &rk.switches[tb.switches[local]];
    };
    auto slots = [&](const SwitchChannel &sc, const Json &b, int rank) {
      return slotsOf(tb, rank, sc.buffer, b);
    };
    auto to = onSwitch(dst[0]);
    if (!to)
      return to.error();
    std::vector<Value> values;
    if (name == "glres") {
      auto from = onSwitch(src[0]);
      if (!from)
        return from.error();
      if ((*from)->ranks != (*to)->ranks)
        return error(where(tb) + ": glres between switch channels over "
                                 "different ranks");
      for (int g : (*from)->ranks) {
        auto in = slots(**from, src[0], g);
        if (!in)
          return in.error();
        if (values.empty())
          values.assign(in->size(), std::vector<int>{});
        if (in->size() != values.size())
          return error(where(tb) + ": buffers of different sizes");
        for (size_t k = 0; k < in->size(); ++k) {
          auto v = read(tb, (*in)[k]);
          if (!v)
            return v.error();
          std::vector<int> merged;
          std::set_union(values[k]->begin(), values[k]->end(), (*v)->begin(),
                         (*v)->end(), std::back_inserter(merged));
          if (merged.size() != values[k]->size() + (*v)->size())
            return error(where(tb) + " reduces a value twice through the "
                                     "switch");
          values[k] = std::move(merged);
        }
      }
    } else {
      auto in = local(tb, src[0]);
      if (!in)
        return in.error();
      for (const ChunkLoc &c : *in) {
        auto v = read(tb, c);
        if (!v)
          return v.error();
        values.push_back(*v);
      }
    }
    for (int g : (*to)->ranks) {
      auto out = slots(**to, dst[0], g);
      if (!out)
        return out.error();
      if (out->size() != values.size())
        return error(where(tb) + ": source and destination sizes differ");
      for (size_t k = 0; k < out->size(); ++k)
        data[(*out)[k]] = values[k];
    }
    ++summary.switchOperations;
    return true;
  }
  if (name == "put" || name == "pws" || name == "pwsf") {
    auto t = opType();
    if (!t)
      return t.error();
    if (name != "put" && *t != Port)
      return error(where(tb) + ": " + name + " applies to port channels only");
    const Json &src = op.at("src_buff");
    const Json &dst = op.at("dst_buff");
    if (src.size() != dst.size() || src.empty())
      return error(where(tb) + ": a put needs one source per destination");
    std::vector<std::tuple<int, int, int, int>> signals;
    for (size_t i = 0; i < dst.size(); ++i) {
      auto from = local(tb, src[i]);
      if (!from)
        return from.error();
      int owner = -1;
      auto to = remote(tb, dst[i], *t, owner);
      if (!to)
        return to.error();
      if (from->size() != to->size())
        return error(where(tb) + ": source and destination sizes differ");
      // Port channels carry the put over their own connection: it must be
      // the one to the buffer's owner.
      if (*t == Port) {
        auto g = channel(tb, op, *t, (int)i);
        if (!g)
          return g.error();
        if (rk.peer[Port][*g] != owner)
          return error(where(tb) + " puts into rank " + std::to_string(owner) +
                       "'s buffer over its port "
                       "channel to rank " +
                       std::to_string(rk.peer[Port][*g]));
        signals.push_back({tb.rank, owner, Port, rk.ordinal[Port][*g]});
      }
      for (size_t k = 0; k < from->size(); ++k) {
        auto v = read(tb, (*from)[k]);
        if (!v)
          return v.error();
        data[(*to)[k]] = *v;
      }
    }
    if (name != "put")
      for (auto &key : signals)
        ++posted[key];
    return true;
  }
  return error(where(tb) + ": operation '" + name +
               "' is not one ccsynth's plans use");
}

Expected<PlanCheckSummary> PlanRun::run(const Json &plan) {
  const Json &gpus = plan.at("gpus");
  if ((int)gpus.size() != col.numRanks)
    return error("the plan has " + std::to_string(gpus.size()) +
                 " gpus, the collective " + std::to_string(col.numRanks) +
                 " ranks");
  if (!options.nodeOfRank.empty() &&
      (int)options.nodeOfRank.size() != col.numRanks)
    return error("the node layout has " +
                 std::to_string(options.nodeOfRank.size()) + " ranks");
  ranks.resize(gpus.size());
  for (int r = 0; r < (int)gpus.size(); ++r) {
    if (gpus[r].at("id").get<int>() != r)
      return error("gpus[" + std::to_string(r) + "] has id " +
                   gpus[r].at("id").dump());
    if (Status s = loadRank(gpus[r], r); !s)
      return s.error();
  }
  // Every rank of a switch channel declares it, and ranks sharing several
  // declare them in the same order: the executor sets them up one after
  // another, each collectively over its ranks.
  for (int r = 0; r < (int)ranks.size(); ++r)
    for (int peer = 0; peer < (int)ranks.size(); ++peer) {
      auto shared = [&](int a, int b) {
        std::vector<std::pair<int, std::vector<int>>> out;
        for (const SwitchChannel &sc : ranks[a].switches)
          if (std::find(sc.ranks.begin(), sc.ranks.end(), b) != sc.ranks.end())
            out.push_back({(int)sc.buffer, sc.ranks});
        return out;
      };
      if (peer != r && shared(r, peer) != shared(peer, r))
        return error("ranks " + std::to_string(r) + " and " +
                     std::to_string(peer) +
                     " do not declare the switch channels they share alike "
                     "(the same groups and buffers, in the same order)");
    }
  // Both ends of a rank pair must list as many channels of each type to
  // each other, or the executor pairs them with channels nobody uses.
  for (int r = 0; r < (int)ranks.size(); ++r)
    for (int t : {Memory, Port})
      for (int peer : ranks[r].peer[t]) {
        auto count = [&](int a, int b) {
          return std::count(ranks[a].peer[t].begin(), ranks[a].peer[t].end(),
                            b);
        };
        if (count(r, peer) != count(peer, r))
          return error("rank " + std::to_string(r) + " has " +
                       std::to_string(count(r, peer)) + " " + chanName(t) +
                       " channels to rank " + std::to_string(peer) +
                       " but rank " + std::to_string(peer) + " has " +
                       std::to_string(count(peer, r)) + " back");
      }

  for (int r = 0; r < col.numRanks; ++r)
    for (int i = 0; i < col.inputChunks; ++i)
      if (col.preAt(r, i) >= 0)
        data[col.canonical({r, BufferKind::Input, i})] =
            std::vector<int>{col.preAt(r, i)};

  for (;;) {
    bool progress = false, done = true;
    for (Threadblock &tb : tbs) {
      while (tb.pc < tb.ops->size()) {
        auto ran = step(tb);
        if (!ran)
          return ran.error();
        if (!*ran)
          break;
        ++tb.pc;
        ++summary.operations;
        progress = true;
      }
      done &= tb.pc == tb.ops->size();
    }
    if (done)
      break;
    if (!progress) {
      std::string blocked;
      int shown = 0;
      for (const Threadblock &tb : tbs)
        if (tb.pc < tb.ops->size() && shown++ < 8)
          blocked += (blocked.empty() ? "" : "; ") + where(tb);
      return error("the plan deadlocks: every unfinished threadblock "
                   "waits (" +
                   blocked + ")");
    }
  }

  for (int r = 0; r < col.numRanks; ++r)
    for (int i = 0; i < col.outputChunks; ++i) {
      PostSet want = col.postAt(r, i);
      if (!want)
        continue;
      ChunkLoc loc = col.canonical({r, BufferKind::Output, i});
      auto it = data.find(loc);
      auto show = [&](std::span<const int> vals) {
        std::string s;
        for (int v : vals)
          s += (s.empty() ? "" : " + ") + valueName(col, v);
        return s.empty() ? std::string("nothing") : s;
      };
      if (it == data.end() || !it->second)
        return error("after the plan, output chunk " + std::to_string(i) +
                     " of rank " + std::to_string(r) +
                     " holds no data; it must hold " + show(want.values()));
      if (!std::ranges::equal(*it->second, want.values()))
        return error("after the plan, output chunk " + std::to_string(i) +
                     " of rank " + std::to_string(r) + " holds " +
                     show(*it->second) + "; it must hold " +
                     show(want.values()));
    }
  return summary;
}

} // namespace

Expected<PlanCheckSummary> checkMscclppPlan(const std::string &file,
                                            const std::string &text,
                                            const Collective &collective,
                                            const PlanCheckOptions &options) {
  Json plan;
  try {
    plan = Json::parse(text);
    PlanRun run(file, collective, options);
    return run.run(plan);
  } catch (const Json::exception &e) {
    return Error(std::string("malformed MSCCL++ plan: ") + e.what(), {file});
  }
}

} // namespace ccsynth::msccl
