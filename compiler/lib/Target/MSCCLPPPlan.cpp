//===- MSCCLPPPlan.cpp - ccl.program to an MSCCL++ execution plan ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements exportMSCCLPPPlan (MSCCLPPPlan.h). PlanBuilder plans where
// each message lands, prepares each rank's channels, remote buffers and
// semaphores, lowers each MSCCL step to MSCCL++ operations (emit), adds
// switch channels and switch threadblocks for NVLS operations (emitSwitch)
// and builds the JSON document (build). programNodes reads the node of each
// rank from the program.
// See docs/compiler.md ("MSCCL++ execution plan").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/MSCCLPPPlan.h"

#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Target/MSCCLExport.h"
#include "ccsynth/Target/MSCCLPPPacking.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>
#include <set>

using namespace mlir;
namespace json = llvm::json;

namespace ccsynth::ccl {

namespace {

using msccl::StepType;

struct Key3 {
  int rank, tb, step;
  auto tie() const { return std::tie(rank, tb, step); }
  bool operator<(const Key3 &o) const { return tie() < o.tie(); }
};

json::Array intArray(const std::vector<int> &v) {
  json::Array a;
  for (int x : v)
    a.push_back(x);
  return a;
}

json::Object buff(BufferKind b, int index, int size) {
  return json::Object{
      {"type", msccl::bufferCode(b)}, {"index", index}, {"size", size}};
}

/// Operations as a plan threadblock emits them: built as JSON when
/// writing, only counted when measuring a candidate for packing.
class OpList {
public:
  explicit OpList(bool build) : build(build) {}
  /// Appends the operation `make()` builds, named `name`.
  template <typename Make> void push(llvm::StringRef name, Make &&make) {
    ++count;
    // Signals and semaphore releases touch no local data.
    if (name == "nop")
      settled = true;
    else if (name != "signal" && name != "sem_release")
      settled = false;
    if (build)
      ops.push_back(make());
  }
  size_t size() const { return count; }
  /// Whether every thread finished every data access so far: a barrier
  /// (nop) came after the last operation that reads or writes data.
  bool isSettled() const { return settled; }
  json::Array take() { return std::move(ops); }

private:
  bool build;
  size_t count = 0;
  bool settled = true;
  json::Array ops;
};

class PlanBuilder {
public:
  PlanBuilder(ProgramOp prog, const msccl::Algo &algo,
              const StepOrigins &origins, const Collective &col,
              const MscclppExportOptions &options)
      : prog(prog), algo(algo), origins(origins), col(col),
        nodeOf(options.nodeOfRank),
        maxThreadblocks(options.maxThreadblocksPerRank),
        budgetReason(options.budgetReason), switches(options.switches),
        switchRefine(std::max(1, options.switchRefine)) {}

  FailureOr<json::Value> build();
  /// build() failed only because of the executor's per-threadblock limits
  /// (operations, or no packing within the threadblock budget).
  bool limitsOnly = false;
  /// How MSCCL threadblocks became plan threadblocks (after build()).
  msccl::Packing packing;

private:
  ProgramOp prog;
  const msccl::Algo &algo;
  const StepOrigins &origins;
  const Collective &col;
  const std::vector<int> &nodeOf;
  int maxThreadblocks;
  std::string budgetReason;
  const msccl::SwitchLowering *switches;
  int switchRefine;
  /// Per rank and switch threadblock: its plan operations.
  std::vector<std::vector<std::vector<msccl::PlanSwitchOp>>> switchOps;
  /// Per switch: the buffers its channels bind (ascending).
  std::map<int, std::set<BufferKind>> switchBuffers;
  /// The (channel, peer) of lane `lane` of switch `sw`'s barrier: channel
  /// numbers past every MSCCL channel, one per lane and switch.
  static int barrierChannel(int sw, int lane) {
    return 1 << 20 | sw << 8 | lane;
  }
  void addSwitchConnections();
  /// Rank r's switch channels in order: (switch, buffer), by switch and
  /// buffer, for each switch it has threadblocks of.
  std::vector<std::pair<int, BufferKind>> switchChannelsOf(int r) const;

  /// Port channels (proxy-driven, over the network) join ranks on
  /// different nodes; memory channels (peer-mapped memory) only ranks of
  /// one node.
  bool crossesNodes(int a, int b) const {
    return !nodeOf.empty() && nodeOf[a] != nodeOf[b];
  }
  const char *channelType(int a, int b) const {
    return crossesNodes(a, b) ? "port" : "memory";
  }

  /// Where a message's data lands at the receiver.
  struct Landing {
    BufferKind buffer;
    int index;
    bool staged;
  };
  /// What each step takes part in, by [rank][threadblock id][step].
  struct StepInfo {
    int sendMsg = -1, recvMsg = -1;   // message indices
    std::vector<int> depsIn, depsOut; // indices into the rank's deps
  };
  std::vector<std::vector<std::vector<StepInfo>>> stepInfo;
  StepInfo &infoOf(Key3 k) { return stepInfo[k.rank][k.tb][k.step]; }
  std::vector<msccl::Message> messages;
  std::vector<Landing> landing;
  std::vector<int> scratchChunks; // per rank, after staging
  /// Per rank: the (channel, peer) pairs with messages either way.
  std::vector<std::set<std::pair<int, int>>> conns;

  /// A dependency: the consumer step waits for the producer step.
  struct Dep {
    Key3 consumer, producer;
  };
  struct RemoteBuffer {
    int peer;
    BufferKind buffer;
  };
  struct RankState {
    int rank = 0;
    /// (channel, peer) -> index among the channels of its type.
    std::map<std::pair<int, int>, int> connIndex;
    json::Array channels;
    /// Dependencies in (threadblock, step) order; the ones each step waits
    /// for and releases; the semaphore of each (-1: none needed).
    std::vector<Dep> deps;
    std::vector<int> semOf;
    /// (peer, buffer) -> remote buffer id, in order of first use.
    std::map<std::pair<int, int>, int> remoteIndex;
    std::vector<RemoteBuffer> remoteBuffers;
  };
  std::vector<RankState> ranks;

  /// The operations of one plan threadblock and what they refer to.
  struct Emitted {
    json::Array ops; // written only when final
    int numOps = 0;
    std::vector<int> channels[2]; // global channel ids per type
    std::vector<int> remotes[2];  // global remote buffer ids per type
  };

  Operation *originOf(Key3 k) const {
    auto it = origins.find({k.rank, k.tb, k.step});
    return it == origins.end() ? const_cast<ProgramOp &>(prog).getOperation()
                               : it->second;
  }
  /// Per rank, its threadblocks by id.
  std::vector<std::vector<const msccl::Threadblock *>> tbIndex;
  const msccl::Threadblock &tbOf(int rank, int id) const {
    const auto &index = tbIndex[rank];
    if (id >= 0 && id < (int)index.size() && index[id])
      return *index[id];
    return algo.gpu(rank)->tbs.front();
  }
  void planLandings();
  void prepareRank(const msccl::Gpu &g);
  /// Whether both ends of `d` run in one plan threadblock (`planOf`: MSCCL
  /// threadblock id -> plan threadblock).
  static bool internal(const Dep &d, const std::map<int, int> &planOf) {
    if (d.consumer.tb == d.producer.tb)
      return false;
    auto c = planOf.find(d.consumer.tb), p = planOf.find(d.producer.tb);
    return c != planOf.end() && p != planOf.end() && c->second == p->second;
  }
  /// The operations of plan threadblock `ptb`. `final`: with the rank's
  /// semaphores and remote buffers (registered on first use); otherwise
  /// only measured, for packing (nothing of the rank changes).
  Emitted emit(RankState &rs, const msccl::PackedThreadblock &ptb, bool final);
  /// The rank's switch threadblock t as plan threadblock `id`.
  json::Object emitSwitch(RankState &rs, int t, int id);
};

void PlanBuilder::planLandings() {
  msccl::DirectLandings directLandings(algo, col);
  scratchChunks.assign(algo.ngpus, 0);
  for (const msccl::Gpu &g : algo.gpus)
    scratchChunks[g.id] = g.sChunks;
  for (const msccl::Message &m : messages) {
    const msccl::Step &st = tbOf(m.recv.rank, m.recv.tb).steps[m.recv.step];
    if (directLandings.allows(m.recv.rank, st)) {
      landing.push_back({st.dstBuf, st.dstOff, false});
      continue;
    }
    int &next = scratchChunks[m.recv.rank];
    landing.push_back({BufferKind::Scratch, next, true});
    next += st.cnt;
  }
}

void PlanBuilder::prepareRank(const msccl::Gpu &g) {
  int r = g.id;
  RankState &rs = ranks[r];
  rs.rank = r;
  int numOfType[2] = {0, 0}; // memory, port
  std::map<int, json::Array> peersByChannel[2];
  for (auto [c, peer] : conns[r]) {
    int t = crossesNodes(r, peer) ? 1 : 0;
    rs.connIndex[{c, peer}] = numOfType[t]++;
    peersByChannel[t][c].push_back(peer);
  }
  for (int t : {0, 1})
    for (auto &[c, peers] : peersByChannel[t])
      rs.channels.push_back(
          json::Object{{"channel_type", t ? "port" : "memory"},
                       {"connected_to", std::move(peers)}});
  for (const msccl::Threadblock &tb : g.tbs)
    for (int i = 0; i < (int)tb.steps.size(); ++i) {
      const msccl::Step &st = tb.steps[i];
      if (st.depid < 0)
        continue;
      // A nop's dependency belongs to the step it precedes.
      Dep d{{r, tb.id, i}, {r, st.depid, st.deps}};
      infoOf(d.consumer).depsIn.push_back((int)rs.deps.size());
      const msccl::Threadblock &producer = tbOf(r, st.depid);
      if (producer.id == st.depid && st.deps >= 0 &&
          st.deps < (int)producer.steps.size())
        infoOf(d.producer).depsOut.push_back((int)rs.deps.size());
      rs.deps.push_back(d);
    }
}

PlanBuilder::Emitted PlanBuilder::emit(RankState &rs,
                                       const msccl::PackedThreadblock &ptb,
                                       bool final) {
  int r = rs.rank;
  Emitted e;
  OpList ops(final);
  const std::vector<int> &members = ptb.members;
  auto isMember = [&](int tb) {
    return std::binary_search(members.begin(), members.end(), tb);
  };
  // Channels: those of every member's send and receive peers, in member
  // order, each once; per member, its send and receive channel as (type,
  // index in this threadblock's list of that type).
  using LocalChannel = std::pair<int, int>;
  auto registerChannel = [&](int chan, int peer) -> LocalChannel {
    auto it = rs.connIndex.find({chan, peer});
    if (peer < 0 || it == rs.connIndex.end())
      return {0, 0};
    int t = crossesNodes(r, peer) ? 1 : 0;
    std::vector<int> &list = e.channels[t];
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i] == it->second)
        return {t, (int)i};
    list.push_back(it->second);
    return {t, (int)list.size() - 1};
  };
  std::vector<LocalChannel> sendChannel(members.size()),
      recvChannel(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const msccl::Threadblock &tb = tbOf(r, members[i]);
    sendChannel[i] = registerChannel(tb.chan, tb.send);
    recvChannel[i] = registerChannel(tb.chan, tb.recv);
  }
  // Remote buffers: the rank's numbering when final, a scratch one when
  // measuring.
  std::map<std::pair<int, int>, int> scratchRemotes;
  std::map<std::pair<int, int>, int> &remoteIndex =
      final ? rs.remoteIndex : scratchRemotes;
  std::map<int, int> localRemote; // global id -> index in its type's list

  bool dirty = false;
  auto nop = [&] {
    ops.push("nop", [] { return json::Object{{"name", "nop"}}; });
  };
  auto barrier = [&] {
    if (dirty)
      nop();
    dirty = false;
  };
  auto semOp = [&](const char *name, const std::vector<int> &ids) {
    for (size_t i = 0; i < ids.size(); i += kMscclppMaxSemaphores)
      ops.push(name, [&] {
        json::Array chunk;
        for (size_t j = i; j < ids.size() && j < i + kMscclppMaxSemaphores; ++j)
          chunk.push_back(ids[j]);
        return json::Object{{"name", name},
                            {"semaphore_ids", std::move(chunk)}};
      });
  };
  // The semaphores of the dependencies `list` (indices into rs.deps) whose
  // other end runs in another plan threadblock; `internal` tells whether
  // some other end runs in this one.
  auto semaphores = [&](const std::vector<int> *list, bool consumer,
                        bool &internal) {
    std::vector<int> ids;
    internal = false;
    if (!list)
      return ids;
    for (int d : *list) {
      const Dep &dep = rs.deps[d];
      int self = consumer ? dep.consumer.tb : dep.producer.tb;
      int other = consumer ? dep.producer.tb : dep.consumer.tb;
      if (other != self && isMember(other)) {
        internal = true;
        continue;
      }
      ids.push_back(final ? rs.semOf[d] : 0);
    }
    return ids;
  };

  for (msccl::StepRef ref : ptb.steps) {
    const msccl::Threadblock &tb = tbOf(r, ref.tb);
    const msccl::Step &st = tb.steps[ref.step];
    Key3 key{r, ref.tb, ref.step};
    size_t member = std::lower_bound(members.begin(), members.end(), ref.tb) -
                    members.begin();
    auto chanOp = [&](const char *name, LocalChannel channel) {
      auto [t, local] = channel;
      ops.push(name, [&, t = t, local = local] {
        return json::Object{{"name", name},
                            {"channel_type", t ? "port" : "memory"},
                            {"channel_ids", json::Array{local}}};
      });
    };
    bool internalIn = false;
    std::vector<int> acquire =
        semaphores(&infoOf(key).depsIn, true, internalIn);
    if (!acquire.empty()) {
      barrier();
      semOp("sem_acquire", acquire);
      nop();
    } else if (internalIn && !ops.isSettled()) {
      // The producer ran earlier in this threadblock; a barrier makes its
      // writes (and a port put's flush) visible to every thread.
      nop();
      dirty = false;
    }
    if (st.type != StepType::Nop) {
      // Receive.
      Landing in{};
      if (msccl::receives(st.type)) {
        in = landing[infoOf(key).recvMsg];
        barrier();
        chanOp("wait", recvChannel[member]);
        nop();
      }
      // Local data movement; `data` is what a send forwards.
      BufferKind dataBuf = st.srcBuf;
      int dataOff = st.srcOff;
      auto copyOp = [&](BufferKind sb, int so, BufferKind db, int dof) {
        barrier();
        ops.push("copy", [&] {
          return json::Object{{"name", "copy"},
                              {"src_buff", json::Array{buff(sb, so, st.cnt)}},
                              {"dst_buff", json::Array{buff(db, dof, st.cnt)}}};
        });
        dirty = true;
      };
      auto reduceOp = [&](BufferKind ab, int ao, BufferKind bb, int bo,
                          BufferKind db, int dof) {
        barrier();
        ops.push("re", [&] {
          return json::Object{{"name", "re"},
                              {"src_buff", json::Array{buff(ab, ao, st.cnt),
                                                       buff(bb, bo, st.cnt)}},
                              {"dst_buff", json::Array{buff(db, dof, st.cnt)}},
                              {"reduce_op", "sum"}};
        });
        dirty = true;
      };
      switch (st.type) {
      case StepType::Recv:
      case StepType::RecvCopySend:
        if (in.staged)
          copyOp(BufferKind::Scratch, in.index, st.dstBuf, st.dstOff);
        dataBuf = st.dstBuf;
        dataOff = st.dstOff;
        break;
      case StepType::RecvReduceCopy:
      case StepType::RecvReduceCopySend:
        reduceOp(st.srcBuf, st.srcOff, BufferKind::Scratch, in.index, st.dstBuf,
                 st.dstOff);
        dataBuf = st.dstBuf;
        dataOff = st.dstOff;
        break;
      case StepType::RecvReduceSend:
        reduceOp(st.srcBuf, st.srcOff, BufferKind::Scratch, in.index,
                 BufferKind::Scratch, in.index);
        dataBuf = BufferKind::Scratch;
        dataOff = in.index;
        break;
      case StepType::Copy:
        copyOp(st.srcBuf, st.srcOff, st.dstBuf, st.dstOff);
        break;
      case StepType::Reduce:
        reduceOp(st.dstBuf, st.dstOff, st.srcBuf, st.srcOff, st.dstBuf,
                 st.dstOff);
        break;
      default:
        break;
      }
      // Send: put into the receiver's landing range, then signal.
      if (msccl::sends(st.type)) {
        const Landing &out = landing[infoOf(key).sendMsg];
        bool port = crossesNodes(r, tb.send);
        auto [rit, fresh] = remoteIndex.try_emplace({tb.send, (int)out.buffer},
                                                    (int)remoteIndex.size());
        if (fresh && final)
          rs.remoteBuffers.push_back({tb.send, out.buffer});
        std::vector<int> &refs = e.remotes[port ? 1 : 0];
        auto [lit, lfresh] =
            localRemote.try_emplace(rit->second, (int)refs.size());
        if (lfresh)
          refs.push_back(rit->second);
        int bufferRef = lit->second;
        barrier();
        // A port channel's put is carried out later by the proxy; the
        // flush in `pwsf` waits until it has read the source, so later
        // steps may overwrite it. (A separate `flush` op would do nothing:
        // the executor counts a flush's channels by its outputs, which a
        // flush has none of.)
        auto [t, local] = sendChannel[member];
        const char *name = port ? "pwsf" : "put";
        ops.push(name, [&, t = t, local = local] {
          return json::Object{
              {"name", name},
              {"channel_type", t ? "port" : "memory"},
              {"channel_ids", json::Array{local}},
              {"src_buff", json::Array{buff(dataBuf, dataOff, st.cnt)}},
              {"dst_buff", json::Array{json::Object{{"buffer_id", bufferRef},
                                                    {"index", out.index},
                                                    {"size", st.cnt}}}}};
        });
        if (!port) {
          nop();
          chanOp("signal", sendChannel[member]);
        }
        dirty = false;
      }
    }
    bool internalOut = false;
    std::vector<int> release =
        semaphores(&infoOf(key).depsOut, false, internalOut);
    if (!release.empty()) {
      nop();
      dirty = false;
      semOp("sem_release", release);
    }
  }
  e.numOps = (int)ops.size();
  e.ops = ops.take();
  return e;
}

void PlanBuilder::addSwitchConnections() {
  for (size_t r = 0; r < switches->threadblocks.size(); ++r)
    for (const msccl::Threadblock &tb : switches->threadblocks[r])
      for (int peer : tb.group)
        if (peer != (int)r)
          conns[r].insert({barrierChannel(tb.switchId, tb.switchLane), peer});
  for (size_t r = 0; r < switchOps.size(); ++r)
    for (size_t t = 0; t < switchOps[r].size(); ++t) {
      const msccl::Threadblock &tb = switches->threadblocks[r][t];
      std::set<BufferKind> &bufs = switchBuffers[tb.switchId];
      for (const msccl::PlanSwitchOp &op : switchOps[r][t]) {
        if (op.glres)
          bufs.insert(op.srcBuf);
        bufs.insert(op.dstBuf);
        // Scratch the switch reads or writes: a glres's source and every
        // destination on each rank of the group, a gstore's source here.
        auto scratchUse = [&](BufferKind b, int off,
                              const std::vector<int> &on) {
          if (b == BufferKind::Scratch)
            for (int g : on)
              scratchChunks[g] =
                  std::max(scratchChunks[g], (off + op.cnt) * switchRefine);
        };
        scratchUse(op.srcBuf, op.srcOff,
                   op.glres ? tb.group : std::vector<int>{(int)r});
        scratchUse(op.dstBuf, op.dstOff, tb.group);
      }
    }
}

std::vector<std::pair<int, BufferKind>>
PlanBuilder::switchChannelsOf(int r) const {
  std::vector<std::pair<int, BufferKind>> out;
  for (const auto &[sw, bufs] : switchBuffers) {
    bool member = false;
    for (const msccl::Threadblock &own : switches->threadblocks[r])
      member |= own.switchId == sw;
    if (member)
      for (BufferKind b : bufs)
        out.push_back({sw, b});
  }
  return out;
}

json::Object PlanBuilder::emitSwitch(RankState &rs, int t, int id) {
  int r = rs.rank;
  const msccl::Threadblock &tb = switches->threadblocks[r][t];
  // The barrier's channels, per type (memory within a node), each listed
  // once in this threadblock.
  std::vector<int> chans[2];
  std::vector<std::pair<int, int>> barrierIds; // (type, local id)
  for (int peer : tb.group) {
    if (peer == r)
      continue;
    int type = crossesNodes(r, peer) ? 1 : 0;
    chans[type].push_back(
        rs.connIndex.at({barrierChannel(tb.switchId, tb.switchLane), peer}));
    barrierIds.push_back({type, (int)chans[type].size() - 1});
  }
  // The switch channels of this switch: this rank's flat ids, and the
  // threadblock's local id of each buffer's.
  std::vector<int> switchIds;
  std::map<BufferKind, int> localOf;
  std::vector<std::pair<int, BufferKind>> flat = switchChannelsOf(r);
  for (int f = 0; f < (int)flat.size(); ++f)
    if (flat[f].first == tb.switchId) {
      localOf[flat[f].second] = (int)switchIds.size();
      switchIds.push_back(f);
    }
  json::Array ops;
  auto barrier = [&] {
    ops.push_back(json::Object{{"name", "nop"}});
    for (const char *name : {"signal", "wait"})
      for (int type : {0, 1}) {
        std::vector<int> ids;
        for (auto [t2, local] : barrierIds)
          if (t2 == type)
            ids.push_back(local);
        // At most 8 channels per operation (MAX_CHANNEL_PER_OPERATION).
        for (size_t i = 0; i < ids.size(); i += 8) {
          std::vector<int> part(ids.begin() + i,
                                ids.begin() + std::min(ids.size(), i + 8));
          ops.push_back(json::Object{{"name", name},
                                     {"channel_type", type ? "port" : "memory"},
                                     {"channel_ids", intArray(part)}});
        }
      }
    ops.push_back(json::Object{{"name", "nop"}});
  };
  auto onSwitch = [&](BufferKind b, int off, int cnt) {
    return json::Object{{"switch_channel_id", localOf.at(b)},
                        {"index", off * switchRefine},
                        {"size", cnt * switchRefine}};
  };
  barrier();
  for (const msccl::PlanSwitchOp &op : switchOps[r][t]) {
    if (op.glres)
      ops.push_back(json::Object{
          {"name", "glres"},
          {"channel_type", "switch"},
          {"src_buff", json::Array{onSwitch(op.srcBuf, op.srcOff, op.cnt)}},
          {"dst_buff", json::Array{onSwitch(op.dstBuf, op.dstOff, op.cnt)}},
          {"reduce_op", "sum"}});
    else
      ops.push_back(json::Object{
          {"name", "gstore"},
          {"channel_type", "switch"},
          {"src_buff", json::Array{buff(op.srcBuf, op.srcOff * switchRefine,
                                        op.cnt * switchRefine)}},
          {"dst_buff", json::Array{onSwitch(op.dstBuf, op.dstOff, op.cnt)}}});
  }
  barrier();
  json::Array tbChans, tbRefs;
  for (int type : {0, 1}) {
    if (type == 1 && chans[1].empty())
      continue;
    tbChans.push_back(json::Object{{"channel_type", type ? "port" : "memory"},
                                   {"channel_ids", intArray(chans[type])}});
    tbRefs.push_back(
        json::Object{{"access_channel_type", type ? "port" : "memory"},
                     {"remote_buffer_ids", json::Array{}}});
  }
  tbChans.push_back(json::Object{{"channel_type", "switch"},
                                 {"channel_ids", intArray(switchIds)}});
  return json::Object{{"id", id},
                      {"ops", std::move(ops)},
                      {"channels", std::move(tbChans)},
                      {"remote_buffer_refs", std::move(tbRefs)}};
}

FailureOr<json::Value> PlanBuilder::build() {
  tbIndex.assign(algo.ngpus, {});
  for (const msccl::Gpu &g : algo.gpus)
    for (const msccl::Threadblock &tb : g.tbs) {
      auto &index = tbIndex[g.id];
      if (tb.id < 0)
        continue;
      if ((int)index.size() <= tb.id)
        index.resize(tb.id + 1, nullptr);
      index[tb.id] = &tb;
    }
  msccl::Matching matching = msccl::matchMessages(algo);
  if (!matching.issues.empty()) {
    emitIssues(matching.issues, origins, prog);
    return failure();
  }
  messages = matching.messages;
  stepInfo.assign(algo.ngpus, {});
  for (const msccl::Gpu &g : algo.gpus) {
    stepInfo[g.id].resize(tbIndex[g.id].size());
    for (const msccl::Threadblock &tb : g.tbs)
      if (tb.id >= 0)
        stepInfo[g.id][tb.id].resize(tb.steps.size());
  }
  for (int i = 0; i < (int)messages.size(); ++i) {
    infoOf({messages[i].send.rank, messages[i].send.tb, messages[i].send.step})
        .sendMsg = i;
    infoOf({messages[i].recv.rank, messages[i].recv.tb, messages[i].recv.step})
        .recvMsg = i;
  }
  planLandings();

  // Channels per rank: one per (channel, peer) with messages either way,
  // ordered by (channel, peer) so both ends pair them in order. Memory and
  // port channels are numbered separately (the executor flattens each type
  // on its own).
  conns.assign(algo.ngpus, {});
  for (const msccl::Message &m : messages) {
    conns[m.send.rank].insert({m.channel, m.recv.rank});
    conns[m.recv.rank].insert({m.channel, m.send.rank});
  }
  int mostLanes = 0;
  if (switches) {
    auto ops = msccl::planSwitchOps(*switches);
    if (!ops) {
      prog.emitError() << ops.error().message;
      return failure();
    }
    switchOps = ops.take();
    switchOps.resize(algo.ngpus);
    addSwitchConnections();
    for (const auto &lanes : switches->threadblocks) {
      mostLanes = std::max(mostLanes, (int)lanes.size());
      for (const msccl::Threadblock &tb : lanes)
        if ((int)tb.group.size() - 1 > kMscclppMaxChannels) {
          prog.emitError()
              << "switch " << tb.switchId << " joins " << tb.group.size()
              << " ranks: a lane's barrier needs a channel to each other "
                 "rank, more than the executor's "
              << kMscclppMaxChannels << " channels per threadblock";
          return failure();
        }
    }
    if (maxThreadblocks > 0 && mostLanes >= maxThreadblocks) {
      prog.emitError() << "a rank runs " << mostLanes
                       << " switch threadblocks, and the budget of resident "
                          "threadblocks is "
                       << maxThreadblocks << " (" << budgetReason << ")";
      return failure();
    }
  }
  ranks.resize(algo.ngpus);
  for (const msccl::Gpu &g : algo.gpus)
    prepareRank(g);

  // Pack the threadblocks of ranks over the budget (MSCCLPPPacking.h).
  msccl::PackOptions po;
  // The switch threadblocks are resident beside the program's.
  po.maxThreadblocksPerRank =
      maxThreadblocks > 0 ? maxThreadblocks - mostLanes : 0;
  po.maxOperations = kMscclppMaxOps;
  po.operations = [&](int r, const msccl::PackedThreadblock &ptb) {
    Emitted e = emit(ranks[r], ptb, /*final=*/false);
    for (int t : {0, 1})
      if ((int)e.channels[t].size() > kMscclppMaxChannels ||
          (int)e.remotes[t].size() > kMscclppMaxChannels)
        return kMscclppMaxOps + 1;
    return e.numOps;
  };
  int failedRank = algo.gpus.front().id;
  auto packed = msccl::packThreadblocks(algo, matching, po, &failedRank);
  if (!packed) {
    limitsOnly = true;
    const msccl::Gpu *g = algo.gpu(failedRank);
    originOf({failedRank, g->tbs.front().id, 0})->emitError()
        << packed.error().message << "; " << maxThreadblocks
        << " is the most that can be resident at once (" << budgetReason
        << "), and the executor's threadblocks wait on each other, so a "
        << "plan with more could hang. Use fewer --instances or --pipeline "
        << "parts";
    return failure();
  }
  packing = packed.take();
  if (packing.merges())
    if (Status s = msccl::checkPacking(algo, matching, packing); !s) {
      prog.emitError() << "internal error: merged threadblocks: "
                       << s.error().message;
      return failure();
    }

  json::Array gpus;
  for (const msccl::Gpu &g : algo.gpus) {
    int r = g.id;
    RankState &rs = ranks[r];
    const std::vector<msccl::PackedThreadblock> &plan = packing.ranks[r];
    // Cross-threadblock dependency edges get one semaphore each, unless
    // both ends share a plan threadblock, where program order holds them.
    std::map<int, int> planOf; // MSCCL threadblock id -> plan threadblock
    for (int p = 0; p < (int)plan.size(); ++p)
      for (int m : plan[p].members)
        planOf[m] = p;
    rs.semOf.assign(rs.deps.size(), -1);
    int numSems = 0;
    for (size_t d = 0; d < rs.deps.size(); ++d)
      if (!internal(rs.deps[d], planOf))
        rs.semOf[d] = numSems++;
    json::Array semaphores;
    for (int i = 0; i < numSems; ++i)
      semaphores.push_back(json::Object{{"init_value", 0}});

    json::Array tbs;
    for (int p = 0; p < (int)plan.size(); ++p) {
      Emitted e = emit(rs, plan[p], /*final=*/true);
      int first = plan[p].members.front();
      if (e.numOps > kMscclppMaxOps) {
        limitsOnly = true;
        originOf({r, first, 0})->emitError()
            << "rank " << r << " threadblock " << p << " needs " << e.numOps
            << " MSCCL++ operations, more than the "
            << "executor's " << kMscclppMaxOps << "; use fewer steps per "
            << "threadblock (--max-tb-steps)";
        return failure();
      }
      for (int t : {0, 1})
        if ((int)e.channels[t].size() > kMscclppMaxChannels ||
            (int)e.remotes[t].size() > kMscclppMaxChannels) {
          originOf({r, first, 0})->emitError()
              << "rank " << r << " threadblock " << p << " uses more than "
              << kMscclppMaxChannels << " " << (t ? "port" : "memory")
              << " channels or remote buffers";
          return failure();
        }
      json::Object tbObj{{"id", p}, {"ops", std::move(e.ops)}};
      // The memory entry is always written (single-node plans look as they
      // did before port channels); the port entry only when used.
      json::Array tbChanArr, tbRemArr;
      for (int t : {0, 1}) {
        if (t == 1 && e.channels[1].empty() && e.remotes[1].empty())
          continue;
        json::Array ids, refs;
        for (int c : e.channels[t])
          ids.push_back(c);
        for (int b : e.remotes[t])
          refs.push_back(b);
        const char *type = t ? "port" : "memory";
        tbChanArr.push_back(json::Object{{"channel_type", type},
                                         {"channel_ids", std::move(ids)}});
        tbRemArr.push_back(
            json::Object{{"access_channel_type", type},
                         {"remote_buffer_ids", std::move(refs)}});
      }
      tbObj["channels"] = std::move(tbChanArr);
      tbObj["remote_buffer_refs"] = std::move(tbRemArr);
      tbs.push_back(std::move(tbObj));
    }
    if (switches && r < (int)switches->threadblocks.size())
      for (int t = 0; t < (int)switches->threadblocks[r].size(); ++t)
        tbs.push_back(emitSwitch(rs, t, (int)tbs.size()));
    // One switch channel per switch of the rank and buffer it binds, in
    // (switch, buffer) order on every rank of the switch.
    if (switches && r < (int)switches->threadblocks.size())
      for (auto [sw, b] : switchChannelsOf(r)) {
        const std::vector<int> *group = nullptr;
        for (const msccl::Threadblock &tb : switches->threadblocks[r])
          if (tb.switchId == sw)
            group = &tb.group;
        rs.channels.push_back(json::Object{
            {"channel_type", "switch"},
            {"buffer_type", msccl::bufferCode(b)},
            {"rank_groups",
             json::Array{json::Object{{"size", (int)group->size()},
                                      {"ranks", intArray(*group)}}}}});
      }
    json::Array remoteBuffers;
    for (const RemoteBuffer &b : rs.remoteBuffers)
      remoteBuffers.push_back(json::Object{
          {"rank", b.peer},
          {"type", msccl::bufferCode(b.buffer)},
          {"access_channel_types", json::Array{channelType(r, b.peer)}}});
    gpus.push_back(json::Object{{"id", r},
                                {"input_chunks", g.iChunks},
                                {"output_chunks", g.oChunks},
                                {"scratch_chunks", scratchChunks[r]},
                                {"channels", std::move(rs.channels)},
                                {"remote_buffers", std::move(remoteBuffers)},
                                {"semaphores", std::move(semaphores)},
                                {"threadblocks", std::move(tbs)}});
  }
  json::Object plan{{"name", algo.name},
                    {"collective", algo.coll},
                    {"protocol", "Simple"},
                    {"inplace", algo.inplace == 1},
                    {"reuse_resources", false},
                    {"use_double_scratch_buffer", false},
                    {"buffer_alignment", 16},
                    {"num_threads_per_block", 1024},
                    {"min_message_size", algo.minBytes},
                    {"gpus", std::move(gpus)}};
  if (algo.maxBytes > 0)
    plan["max_message_size"] = algo.maxBytes;
  if (col.kind == CollectiveKind::Broadcast ||
      col.kind == CollectiveKind::Reduce ||
      col.kind == CollectiveKind::Gather || col.kind == CollectiveKind::Scatter)
    plan["root"] = col.root;
  return json::Value(std::move(plan));
}

} // namespace

FailureOr<std::vector<int>> programNodes(Operation *op) {
  FailureOr<ProgramOp> prog = findProgram(op);
  if (failed(prog))
    return failure();
  auto name = (*prog)->getAttrOfType<StringAttr>("topology");
  if (!name)
    return std::vector<int>{};
  auto topo = loadTopology(name.str());
  if (!topo)
    return prog->emitError()
           << "cannot tell which ranks share a node for the MSCCL++ plan: "
           << topo.error().message;
  return topo->nodeOf;
}

LogicalResult exportMSCCLPPPlan(Operation *op, llvm::raw_ostream &os,
                                const MscclppExportOptions &options) {
  FailureOr<ProgramOp> prog = findProgram(op);
  if (failed(prog))
    return failure();
  if (prog->getProtocol() != "Simple")
    return prog->emitOpError()
           << "protocol " << prog->getProtocol()
           << ": MSCCL++ plans are written with the Simple protocol only "
              "(MSCCL++'s LL packet operations are not generated); compile "
              "with --protocol Simple";
  auto col = prog->buildCollective();
  if (!col)
    return prog->emitOpError() << col.error().message;
  StepOrigins origins;
  FailureOr<msccl::Algo> algo = programToMsccl(*prog, &origins);
  if (failed(algo))
    return failure();
  std::sort(
      algo->gpus.begin(), algo->gpus.end(),
      [](const msccl::Gpu &a, const msccl::Gpu &b) { return a.id < b.id; });
  if (!options.nodeOfRank.empty() &&
      (int)options.nodeOfRank.size() != algo->ngpus)
    return prog->emitOpError()
           << "the topology has " << options.nodeOfRank.size()
           << " ranks but the program " << algo->ngpus;
  PlanBuilder builder(*prog, *algo, origins, *col, options);
  FailureOr<json::Value> plan = builder.build();
  if (failed(plan)) {
    if (options.fewerStepsMayFit)
      *options.fewerStepsMayFit = builder.limitsOnly;
    return failure();
  }
  if (options.packing)
    *options.packing = std::move(builder.packing);
  os << llvm::formatv("{0:2}", *plan) << "\n";
  return success();
}

} // namespace ccsynth::ccl
