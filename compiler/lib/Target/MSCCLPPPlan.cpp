//===- MSCCLPPPlan.cpp - ccl.program to an MSCCL++ execution plan ---------===//
#include "ccsynth/Target/MSCCLPPPlan.h"

#include "ccsynth/Core/Topology.h"
#include "ccsynth/Target/MSCCLExport.h"

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

json::Object buff(BufferKind b, int index, int size) {
  return json::Object{
      {"type", msccl::bufferCode(b)}, {"index", index}, {"size", size}};
}

class PlanBuilder {
public:
  PlanBuilder(ProgramOp prog, const msccl::Algo &algo,
              const StepOrigins &origins, const Collective &col,
              const std::vector<int> &nodeOf)
      : prog(prog), algo(algo), origins(origins), col(col), nodeOf(nodeOf) {}

  FailureOr<json::Value> build();
  /// build() failed only because a threadblock needs more than
  /// kMscclppMaxOps operations.
  bool tooManyOps = false;

private:
  ProgramOp prog;
  const msccl::Algo &algo;
  const StepOrigins &origins;
  const Collective &col;
  const std::vector<int> &nodeOf;

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
  std::map<Key3, int> sendMsg, recvMsg;
  std::vector<msccl::Message> messages;
  std::vector<Landing> landing;
  std::vector<int> scratchChunks; // per rank, after staging

  Operation *originOf(Key3 k) const {
    auto it = origins.find({k.rank, k.tb, k.step});
    return it == origins.end() ? const_cast<ProgramOp &>(prog).getOperation()
                               : it->second;
  }
  const msccl::Threadblock &tbOf(int rank, int id) const {
    const msccl::Gpu *g = algo.gpu(rank);
    for (const msccl::Threadblock &tb : g->tbs)
      if (tb.id == id)
        return tb;
    return g->tbs.front();
  }
  void planLandings();
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

FailureOr<json::Value> PlanBuilder::build() {
  msccl::Matching matching = msccl::matchMessages(algo);
  if (!matching.issues.empty()) {
    emitIssues(matching.issues, origins, prog);
    return failure();
  }
  messages = matching.messages;
  for (int i = 0; i < (int)messages.size(); ++i) {
    sendMsg[{messages[i].send.rank, messages[i].send.tb,
             messages[i].send.step}] = i;
    recvMsg[{messages[i].recv.rank, messages[i].recv.tb,
             messages[i].recv.step}] = i;
  }
  planLandings();

  // Channels per rank: one per (channel, peer) with messages either way,
  // ordered by (channel, peer) so both ends pair them in order. Memory and
  // port channels are numbered separately (the executor flattens each type
  // on its own).
  std::vector<std::set<std::pair<int, int>>> conns(algo.ngpus);
  for (const msccl::Message &m : messages) {
    conns[m.send.rank].insert({m.channel, m.recv.rank});
    conns[m.recv.rank].insert({m.channel, m.send.rank});
  }
  // Cross-threadblock dependency edges get one semaphore each.
  json::Array gpus;
  for (const msccl::Gpu &g : algo.gpus) {
    int r = g.id;
    // (channel, peer) -> index among the channels of its type.
    std::map<std::pair<int, int>, int> connIndex;
    int numOfType[2] = {0, 0}; // memory, port
    std::map<int, json::Array> peersByChannel[2];
    for (auto [c, peer] : conns[r]) {
      int t = crossesNodes(r, peer) ? 1 : 0;
      connIndex[{c, peer}] = numOfType[t]++;
      peersByChannel[t][c].push_back(peer);
    }
    json::Array channels;
    for (int t : {0, 1})
      for (auto &[c, peers] : peersByChannel[t])
        channels.push_back(json::Object{{"channel_type", t ? "port" : "memory"},
                                        {"connected_to", std::move(peers)}});

    std::map<Key3, std::vector<int>> acquireOf, releaseOf;
    int numSems = 0;
    for (const msccl::Threadblock &tb : g.tbs)
      for (int i = 0; i < (int)tb.steps.size(); ++i) {
        const msccl::Step &st = tb.steps[i];
        if (st.depid < 0)
          continue;
        // A nop's dependency belongs to the step it precedes.
        int sem = numSems++;
        acquireOf[{r, tb.id, i}].push_back(sem);
        releaseOf[{r, st.depid, st.deps}].push_back(sem);
      }
    json::Array semaphores;
    for (int i = 0; i < numSems; ++i)
      semaphores.push_back(json::Object{{"init_value", 0}});

    std::map<std::pair<int, int>, int> remoteIndex; // (peer, buffer)
    json::Array remoteBuffers;
    json::Array tbs;
    for (const msccl::Threadblock &tb : g.tbs) {
      // Per channel type (0 memory, 1 port): the global channel ids and
      // remote buffer ids this threadblock uses, in its own order.
      std::vector<int> tbChannels[2];
      std::map<int, int> tbChannelOf; // peer -> index in its type's list
      for (int peer : {tb.send, tb.recv}) {
        auto it = connIndex.find({tb.chan, peer});
        if (peer >= 0 && it != connIndex.end() && !tbChannelOf.count(peer)) {
          std::vector<int> &list = tbChannels[crossesNodes(r, peer) ? 1 : 0];
          tbChannelOf[peer] = (int)list.size();
          list.push_back(it->second);
        }
      }
      std::vector<int> tbRemote[2];  // global remote buffer ids
      std::map<int, int> tbRemoteOf; // global id -> index in its type's list
      json::Array ops;
      bool dirty = false;
      auto barrier = [&] {
        if (dirty)
          ops.push_back(json::Object{{"name", "nop"}});
        dirty = false;
      };
      auto chanOp = [&](const char *name, int peer) {
        return json::Object{{"name", name},
                            {"channel_type", channelType(r, peer)},
                            {"channel_ids", json::Array{tbChannelOf[peer]}}};
      };
      auto semOp = [&](const char *name, const std::vector<int> &ids) {
        for (size_t i = 0; i < ids.size(); i += kMscclppMaxSemaphores) {
          json::Array chunk;
          for (size_t j = i; j < ids.size() && j < i + kMscclppMaxSemaphores;
               ++j)
            chunk.push_back(ids[j]);
          ops.push_back(json::Object{{"name", name},
                                     {"semaphore_ids", std::move(chunk)}});
        }
      };
      for (int i = 0; i < (int)tb.steps.size(); ++i) {
        const msccl::Step &st = tb.steps[i];
        Key3 key{r, tb.id, i};
        if (auto it = acquireOf.find(key); it != acquireOf.end()) {
          barrier();
          semOp("sem_acquire", it->second);
          ops.push_back(json::Object{{"name", "nop"}});
        }
        if (st.type == StepType::Nop)
          continue;
        // Receive.
        Landing in{};
        if (msccl::receives(st.type)) {
          in = landing[recvMsg.at(key)];
          barrier();
          ops.push_back(chanOp("wait", tb.recv));
          ops.push_back(json::Object{{"name", "nop"}});
        }
        // Local data movement; `data` is what a send forwards.
        BufferKind dataBuf = st.srcBuf;
        int dataOff = st.srcOff;
        auto localOp = [&](json::Object op) {
          barrier();
          ops.push_back(std::move(op));
          dirty = true;
        };
        auto copyOp = [&](BufferKind sb, int so, BufferKind db, int dof) {
          localOp(
              json::Object{{"name", "copy"},
                           {"src_buff", json::Array{buff(sb, so, st.cnt)}},
                           {"dst_buff", json::Array{buff(db, dof, st.cnt)}}});
        };
        auto reduceOp = [&](BufferKind ab, int ao, BufferKind bb, int bo,
                            BufferKind db, int dof) {
          localOp(json::Object{{"name", "re"},
                               {"src_buff", json::Array{buff(ab, ao, st.cnt),
                                                        buff(bb, bo, st.cnt)}},
                               {"dst_buff", json::Array{buff(db, dof, st.cnt)}},
                               {"reduce_op", "sum"}});
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
          reduceOp(st.srcBuf, st.srcOff, BufferKind::Scratch, in.index,
                   st.dstBuf, st.dstOff);
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
          const Landing &out = landing[sendMsg.at(key)];
          bool port = crossesNodes(r, tb.send);
          auto [rit, fresh] = remoteIndex.try_emplace(
              {tb.send, (int)out.buffer}, (int)remoteIndex.size());
          if (fresh)
            remoteBuffers.push_back(
                json::Object{{"rank", tb.send},
                             {"type", msccl::bufferCode(out.buffer)},
                             {"access_channel_types",
                              json::Array{channelType(r, tb.send)}}});
          std::vector<int> &refs = tbRemote[port ? 1 : 0];
          auto [lit, lfresh] =
              tbRemoteOf.try_emplace(rit->second, (int)refs.size());
          if (lfresh)
            refs.push_back(rit->second);
          barrier();
          // A port channel's put is carried out later by the proxy; the
          // flush in `pwsf` waits until it has read the source, so later
          // steps may overwrite it. (A separate `flush` op would do nothing:
          // the executor counts a flush's channels by its outputs, which a
          // flush has none of.)
          json::Object put = chanOp(port ? "pwsf" : "put", tb.send);
          put["src_buff"] = json::Array{buff(dataBuf, dataOff, st.cnt)};
          put["dst_buff"] = json::Array{json::Object{{"buffer_id", lit->second},
                                                     {"index", out.index},
                                                     {"size", st.cnt}}};
          ops.push_back(std::move(put));
          if (!port) {
            ops.push_back(json::Object{{"name", "nop"}});
            ops.push_back(chanOp("signal", tb.send));
          }
          dirty = false;
        }
        if (auto it = releaseOf.find(key); it != releaseOf.end()) {
          ops.push_back(json::Object{{"name", "nop"}});
          dirty = false;
          semOp("sem_release", it->second);
        }
      }
      if ((int)ops.size() > kMscclppMaxOps) {
        tooManyOps = true;
        originOf({r, tb.id, 0})->emitError()
            << "rank " << r << " threadblock " << tb.id << " needs "
            << ops.size() << " MSCCL++ operations, more than the executor's "
            << kMscclppMaxOps << "; use fewer steps per threadblock "
            << "(--max-tb-steps)";
        return failure();
      }
      for (int t : {0, 1})
        if ((int)tbChannels[t].size() > kMscclppMaxChannels ||
            (int)tbRemote[t].size() > kMscclppMaxChannels) {
          originOf({r, tb.id, 0})->emitError()
              << "rank " << r << " threadblock " << tb.id << " uses more than "
              << kMscclppMaxChannels << " " << (t ? "port" : "memory")
              << " channels or remote buffers";
          return failure();
        }
      json::Object tbObj{{"id", tb.id}, {"ops", std::move(ops)}};
      // The memory entry is always written (single-node plans look as they
      // did before port channels); the port entry only when used.
      json::Array tbChanArr, tbRemArr;
      for (int t : {0, 1}) {
        if (t == 1 && tbChannels[1].empty() && tbRemote[1].empty())
          continue;
        json::Array ids, refs;
        for (int c : tbChannels[t])
          ids.push_back(c);
        for (int b : tbRemote[t])
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
    gpus.push_back(json::Object{{"id", r},
                                {"input_chunks", g.iChunks},
                                {"output_chunks", g.oChunks},
                                {"scratch_chunks", scratchChunks[r]},
                                {"channels", std::move(channels)},
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
  if (options.maxThreadblocksPerRank > 0)
    for (GpuOp g : prog->getBody().front().getOps<GpuOp>()) {
      auto tbs = g.getBody().front().getOps<ThreadblockOp>();
      int n = (int)std::distance(tbs.begin(), tbs.end());
      if (n > options.maxThreadblocksPerRank) {
        return g.emitError()
               << "rank " << g.getRank() << " needs " << n
               << " threadblocks, more than the "
               << options.maxThreadblocksPerRank << " that can be resident "
               << "at once (" << options.budgetReason
               << "); the executor's threadblocks wait on each other, so "
                  "this plan could hang. Use fewer --instances or "
                  "--pipeline parts, or --max-tb-steps";
      }
    }
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
  PlanBuilder builder(*prog, *algo, origins, *col, options.nodeOfRank);
  FailureOr<json::Value> plan = builder.build();
  if (failed(plan)) {
    if (options.opsPerThreadblockExceeded)
      *options.opsPerThreadblockExceeded = builder.tooManyOps;
    return failure();
  }
  os << llvm::formatv("{0:2}", *plan) << "\n";
  return success();
}

} // namespace ccsynth::ccl
