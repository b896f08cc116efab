//===- StepSimulator.cpp - Timing of the lowered per-threadblock program --===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The program is unrolled over loop iterations into one node per executed
// step. Every wait is an edge to an earlier node (program order,
// dependencies, a receive's message, a send's room in its connection), so
// the times follow from one pass in topological order: each node's start
// is a maximum over its predecessors, its end a start plus a streaming
// time. The deadlock check runs first; a program it accepts has an acyclic
// graph per iteration, and waits across iterations point backwards.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Perf/StepSimulator.h"
#include "ccsynth/Target/SwitchLowering.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace ccsynth::msccl {

double tileBytes(const std::string &protocol) {
  if (protocol == "LL")
    return 512.0 * 1024 / 8 / 2;
  if (protocol == "LL128")
    return 4915200.0 / 8 * 120 / 128;
  return 4.0 * 1024 * 1024 / 8 * 4;
}

namespace {

/// Generated code puts a plain receive into output straight into its
/// destination; every other receive reads its data out of a landing slot.
bool landsInPlace(const Step &st) {
  return (st.type == StepType::Recv || st.type == StepType::RecvCopySend) &&
         st.dstBuf == BufferKind::Output;
}

/// Payload bytes of one line per thread of a full threadblock, per protocol
/// (Simple, LL128, LL): Simple 512 threads x 16 bytes, LL128 640 threads x
/// 120 of every 128 bytes / 8 (a warp moves a 128-byte line), LL 512
/// threads x 8 data bytes.
constexpr double kFirstRoundBytes[3] = {512.0 * 16, 640.0 * 120 / 8, 512.0 * 8};

bool reducing(StepType t) {
  return t == StepType::RecvReduceSend || t == StepType::RecvReduceCopy ||
         t == StepType::RecvReduceCopySend || t == StepType::Reduce;
}

/// Bytes per µs of a GB/s figure.
double perUs(double gbps) { return gbps * 1e3; }

struct TbInfo {
  int rank = 0;
  const Threadblock *tb = nullptr;
  int link = -1;      ///< link to the send peer, when the tb sends
  double rate = 0;    ///< bytes/µs of its link share (sending steps)
  double latency = 0; ///< µs from send to arrival
  uint32_t base = 0;  ///< first node (iteration 0, step 0)
  /// A switch threadblock: the port resources and switch ports its
  /// operations cross (rate: its share of the slowest of them).
  std::vector<std::pair<int, double>> switchResources;
  std::vector<std::pair<int, double>> switchPorts; ///< (switch port, share)
};

bool switchStep(StepType t) {
  return t == StepType::SwitchReduce || t == StepType::Multicast;
}

/// Rates of a program with switch threadblocks (generated code, Simple's
/// data rates): the sending and switch threadblocks share links, port
/// resources and switch ports max-min fairly (progressive filling), each
/// at most at its threadblock's copy rate. A switch threadblock loads each
/// resource by its share of the bytes that cross it. `activity` (per
/// threadblock, empty: all 1) is the fraction of the time each streams: a
/// resource carries the others' average loads beside the whole load of
/// the one that streams. Equal threadblocks that stream all the time,
/// bound by one resource, get the even split of the plain model.
void shareWithSwitches(const Topology &topo, const StepModel &model,
                       double tbScale, const std::vector<int> &switchPortBase,
                       int switchPortCount, std::vector<TbInfo> &tbs,
                       const std::vector<double> &activity) {
  const int L = (int)topo.links.size(), R = (int)topo.resources.size();
  std::vector<double> cap(L + R + switchPortCount, 0);
  for (int l = 0; l < L; ++l)
    cap[l] = topo.links[l].bandwidthGBps * model.linkEfficiency;
  for (int r = 0; r < R; ++r)
    cap[L + r] = topo.resources[r].bandwidthGBps * model.linkEfficiency;
  for (size_t i = 0; i < topo.switches.size(); ++i) {
    const InNetworkSwitch &sw = topo.switches[i];
    double eff = sw.kind == SwitchKind::NVLS ? model.linkEfficiency : 1.0;
    for (size_t k = 0; k < sw.ports.size(); ++k)
      cap[L + R + switchPortBase[i] + k] =
          2 * sw.ports[k].bandwidthGBps * sw.efficiency * eff;
  }
  // Demands: (threadblock, its loads); one per sending or switch tb.
  struct Demand {
    int tb;
    std::vector<std::pair<int, double>> load;
    double ceiling = 0;
    double rate = 0;
    /// The fraction of the time it streams (1: always): what it loads a
    /// resource with at its rate, on average.
    double activity = 1;
    bool frozen = false;
  };
  std::vector<Demand> demands;
  const double tbCeiling = model.tbCopyGBps[0] * tbScale;
  for (int i = 0; i < (int)tbs.size(); ++i) {
    TbInfo &t = tbs[i];
    Demand d{i, {}, tbCeiling};
    if (i < (int)activity.size())
      d.activity = activity[i];
    if (t.tb->switchId >= 0) {
      for (auto [r, w] : t.switchResources)
        d.load.push_back({L + r, w});
      for (auto [q, w] : t.switchPorts)
        d.load.push_back({L + R + q, w});
      // One threadblock's multimem operations reach at most 1 /
      // kSwitchTbsForPeak of what its rank's share of the switch carries.
      const InNetworkSwitch &sw = topo.switches[t.tb->switchId];
      int members = std::max<int>(1, (int)t.tb->group.size());
      double port = std::numeric_limits<double>::infinity();
      for (size_t k = 0; k < sw.ports.size(); ++k)
        port = std::min(port, cap[L + R + switchPortBase[t.tb->switchId] + k]);
      if (std::isfinite(port))
        d.ceiling = std::min(d.ceiling, port / members / kSwitchTbsForPeak);
    } else if (t.link >= 0) {
      d.load.push_back({t.link, 1});
      for (int r : topo.links[t.link].resources)
        d.load.push_back({L + r, 1});
    }
    if (!d.load.empty())
      demands.push_back(std::move(d));
  }
  // A resource carries every threadblock's average load (its rate times
  // its activity); while one streams it has the whole of its own load
  // beside the others' averages, so the least active threadblock on it
  // sees the most crowding: `slack`, its load not in the average.
  // Unfrozen demands share one rate, `level`.
  std::vector<double> used(cap.size(), 0);
  double level = 0;
  for (size_t round = 0; round <= demands.size(); ++round) {
    // The largest common raise of every unfrozen rate.
    std::vector<double> weight(cap.size(), 0), slack(cap.size(), 0);
    double raise = std::numeric_limits<double>::infinity();
    bool any = false;
    for (const Demand &d : demands) {
      if (d.frozen)
        continue;
      any = true;
      raise = std::min(raise, d.ceiling - d.rate);
      for (auto [c, w] : d.load) {
        weight[c] += w * d.activity;
        slack[c] = std::max(slack[c], w * (1 - d.activity));
      }
    }
    if (!any)
      break;
    for (size_t c = 0; c < cap.size(); ++c)
      if (weight[c] + slack[c] > 0)
        raise = std::min(raise, (cap[c] - used[c] - slack[c] * level) /
                                    (weight[c] + slack[c]));
    raise = std::max(0.0, raise);
    level += raise;
    for (Demand &d : demands)
      if (!d.frozen) {
        d.rate += raise;
        for (auto [c, w] : d.load)
          used[c] += w * raise * d.activity;
      }
    // Freeze every demand at its ceiling or through a full constraint.
    for (Demand &d : demands) {
      if (d.frozen)
        continue;
      bool full = d.rate >= d.ceiling * (1 - 1e-9);
      for (auto [c, w] : d.load)
        full |= weight[c] + slack[c] > 0 &&
                used[c] + slack[c] * level >= cap[c] * (1 - 1e-9);
      d.frozen = full;
    }
  }
  for (const Demand &d : demands)
    tbs[d.tb].rate = perUs(d.rate);
}

} // namespace

namespace {

/// What the runtime's checks of a program give the timing: they read only
/// the program and the options simulateStepsAt compares, not the buffer
/// size, so a program timed at several sizes is checked once.
struct CheckedProgram {
  int proto = 0;
  Matching matching;
  BufferModel buffers;
};

Expected<CheckedProgram> checkForSteps(const Algo &algo, const Topology &topo,
                                       const StepSimOptions &o) {
  std::optional<int> proto = stepProtocolIndex(algo.proto);
  if (!proto)
    return Error("protocol '" + algo.proto + "' is not Simple, LL or LL128");
  if (algo.ngpus != topo.numRanks())
    return Error("the program has " + std::to_string(algo.ngpus) +
                 " ranks but topology '" + topo.name + "' has " +
                 std::to_string(topo.numRanks()));
  const bool gen = o.generatedCode;
  if (std::vector<ProgramIssue> issues = o.runtimeRules && !gen
                                             ? validateAlgo(algo)
                                             : std::vector<ProgramIssue>{};
      !issues.empty())
    return Error("the program breaks a rule of the MSCCL runtime: " +
                     issues.front().message,
                 issues.front().loc);
  Matching matching = matchMessages(algo);
  BufferModel buffers = o.boundedBuffers && !gen
                            ? BufferModel::forProtocol(algo.proto)
                            : BufferModel::unbounded();
  if (std::vector<ProgramIssue> dl = checkDeadlock(algo, matching, buffers);
      !dl.empty())
    return Error("the program cannot run: " + dl.front().message,
                 dl.front().loc);
  if (o.packing)
    if (Status s = checkPacking(algo, matching, *o.packing); !s)
      return Error("the merged threadblocks cannot run: " + s.error().message);
  return CheckedProgram{*proto, std::move(matching), buffers};
}

Expected<StepSimResult> timeChecked(const Algo &algo, const Topology &topo,
                                    const StepSimOptions &o,
                                    const CheckedProgram &checked) {
  if (!(o.bytes > 0) || !std::isfinite(o.bytes))
    return Error("the buffer size must be a positive number of bytes");
  const bool gen = o.generatedCode;
  if (gen && !(o.tileBytes >= 16))
    return Error("generated code needs a tile of at least 16 bytes");
  if (!(o.tbScale > 0 && o.tbScale <= 1))
    return Error("the threadblock throughput scale must be in (0, 1]");
  const double tbScale = o.tbScale;
  const Matching &matching = checked.matching;
  const BufferModel &buffers = checked.buffers;
  // Generated code has no LL lines: it moves data as Simple does.
  const int p = gen ? 0 : checked.proto;
  const StepModel &model = topo.stepModel;
  const double protoFraction[3] = {1.0, 120.0 / 128.0, 0.5};

  // The link the runtime would use between two ranks (Topology::bestLink's
  // rule), indexed once.
  int n = topo.numRanks();
  std::unordered_map<long long, int> best;
  for (int i = 0; i < (int)topo.links.size(); ++i) {
    const Link &l = topo.links[i];
    long long key = (long long)l.src * n + l.dst;
    auto [it, fresh] = best.try_emplace(key, i);
    if (fresh)
      continue;
    double bw = topo.effectiveBandwidth(i),
           bestBw = topo.effectiveBandwidth(it->second);
    if (bw > bestBw ||
        (bw == bestBw && l.alphaUs < topo.links[it->second].alphaUs))
      it->second = i;
  }

  // Threadblocks, and how many sending threadblocks share each link and
  // resource.
  std::vector<TbInfo> tbs;
  std::map<std::pair<int, int>, int> tbOf;
  std::vector<int> linkUsers(topo.links.size(), 0),
      resUsers(topo.resources.size(), 0);
  // (rank, threadblock id) -> plan threadblock, when packed; a plan
  // threadblock counts once per link it sends over.
  std::map<std::pair<int, int>, int> planOf;
  if (o.packing)
    for (int r = 0; r < (int)o.packing->ranks.size(); ++r)
      for (int p = 0; p < (int)o.packing->ranks[r].size(); ++p)
        for (int m : o.packing->ranks[r][p].members)
          planOf[{r, m}] = p;
  std::set<std::tuple<int, int, int>> senders; // (rank, plan tb, link)
  // Switch threadblocks (generated code): every operation crosses the
  // ports of its group (a reduction each other rank's port up and its
  // issuer's down, a multicast the reverse), sharing their resources with
  // point-to-point traffic and the switch's own throughput per port with
  // every switch threadblock through it.
  std::vector<int> switchPortBase;
  int switchPortCount = 0;
  for (const InNetworkSwitch &sw : topo.switches) {
    switchPortBase.push_back(switchPortCount);
    switchPortCount += (int)sw.ports.size();
  }
  double switchTailUs = 0; ///< the group's last barrier and the switch latency
  StepSimResult result;
  for (const Gpu &g : algo.gpus) {
    result.threadblocksPerRank =
        std::max(result.threadblocksPerRank,
                 o.packing && g.id >= 0 && g.id < (int)o.packing->ranks.size()
                     ? o.packing->threadblocks(g.id)
                     : (int)g.tbs.size());
    for (const Threadblock &tb : g.tbs) {
      TbInfo info;
      info.rank = g.id;
      info.tb = &tb;
      bool sendsAny = std::any_of(tb.steps.begin(), tb.steps.end(),
                                  [](const Step &s) { return sends(s.type); });
      if (sendsAny) {
        auto it = best.find((long long)g.id * n + tb.send);
        if (it == best.end())
          return Error("rank " + std::to_string(g.id) + " tb " +
                           std::to_string(tb.id) + " sends to rank " +
                           std::to_string(tb.send) + ", but topology '" +
                           topo.name + "' has no link between them",
                       tb.loc);
        info.link = it->second;
        auto plan = planOf.find({g.id, tb.id});
        int unit = plan == planOf.end() ? -1 - tb.id : plan->second;
        if (senders.insert({g.id, unit, info.link}).second) {
          ++linkUsers[info.link];
          for (int r : topo.links[info.link].resources)
            ++resUsers[r];
        }
      }
      if (tb.switchId >= 0) {
        if (!gen)
          return Error("rank " + std::to_string(g.id) + " tb " +
                           std::to_string(tb.id) +
                           " is a switch threadblock, which only generated "
                           "code runs",
                       tb.loc);
        if (tb.switchId >= (int)topo.switches.size())
          return Error("rank " + std::to_string(g.id) + " tb " +
                           std::to_string(tb.id) + " goes through switch " +
                           std::to_string(tb.switchId) + ", but topology '" +
                           topo.name + "' has " +
                           std::to_string(topo.switches.size()),
                       tb.loc);
        const InNetworkSwitch &sw = topo.switches[tb.switchId];
        // Per byte the threadblock moves, what crosses each port resource
        // and switch port: a reduction the other ranks' ports up and the
        // issuer's down, a multicast the reverse; both every member's
        // switch port (as the chunk simulator charges them).
        std::map<int, double> res, ports;
        double total = 0;
        for (const Step &st : tb.steps)
          if (switchStep(st.type))
            total += std::max(1, st.cnt);
        for (const Step &st : tb.steps) {
          if (!switchStep(st.type))
            continue;
          double w = std::max(1, st.cnt) / total;
          bool reduce = st.type == StepType::SwitchReduce;
          for (int m : tb.group) {
            int port = sw.portOf(m);
            if (port < 0)
              return Error("rank " + std::to_string(m) +
                               " has no port on switch '" + sw.name + "'",
                           tb.loc);
            const SwitchPort &sp = sw.ports[port];
            bool self = m == g.id;
            int r = self == reduce ? sp.down : sp.up;
            if (r >= 0)
              res[r] += w;
            ports[switchPortBase[tb.switchId] + port] += w;
          }
        }
        info.switchResources.assign(res.begin(), res.end());
        info.switchPorts.assign(ports.begin(), ports.end());
        if (total > 0)
          switchTailUs = std::max(switchTailUs, model.stepUs[0] + sw.alphaUs);
      }
      tbOf[{g.id, tb.id}] = (int)tbs.size();
      tbs.push_back(info);
    }
  }
  for (TbInfo &t : tbs) {
    if (t.link < 0)
      continue;
    const Link &l = topo.links[t.link];
    double share = l.bandwidthGBps / linkUsers[t.link];
    for (int r : l.resources)
      share = std::min(share, topo.resources[r].bandwidthGBps / resUsers[r]);
    t.rate = perUs(share * model.linkEfficiency * protoFraction[p]);
    t.latency = std::max(l.alphaUs, model.stepUs[p]);
  }
  if (switchTailUs > 0)
    shareWithSwitches(topo, model, tbScale, switchPortBase, switchPortCount,
                      tbs, {});
  // Loop iterations over tiles of each chunk.
  double chunkBytes = o.bytes / std::max(1, algo.nchunksperloop);
  double tile = gen ? o.tileBytes : tileBytes(algo.proto);
  long long iterations =
      o.wholeChunks
          ? 1
          : std::max(1LL, (long long)std::ceil(chunkBytes / tile - 1e-9));
  double perIter = chunkBytes / (double)iterations;
  // Iterations simulated one by one: at most maxIterations, and no more
  // than keep the unrolled graph near kNodeBudget nodes, about 100 MB (at
  // least two, for the increment).
  constexpr size_t kNodeBudget = 1 << 20;
  size_t stepsPerIteration = 0;
  for (const TbInfo &t : tbs)
    stepsPerIteration += t.tb->steps.size();
  long long byBudget =
      (long long)(kNodeBudget / std::max<size_t>(1, stepsPerIteration));
  int sim = (int)std::min<long long>(
      iterations,
      std::max(2LL, std::min<long long>(o.maxIterations, byBudget)));
  if (stepsPerIteration * (size_t)sim >= (size_t)UINT32_MAX / 2)
    return Error("the program is too large to simulate step by step (" +
                 std::to_string(stepsPerIteration) + " steps per loop)");
  result.protocol = algo.proto;
  result.channels = algo.nchannels;
  result.iterations = iterations;
  result.chunkBytesPerIteration = perIter;
  result.launchUs = model.launchUs[p];

  uint32_t numNodes = 0;
  for (TbInfo &t : tbs) {
    t.base = numNodes;
    numNodes += (uint32_t)(t.tb->steps.size() * (size_t)sim);
  }
  auto node = [&](int t, int it, int step) -> uint32_t {
    return tbs[t].base + (uint32_t)(it * tbs[t].tb->steps.size() + step);
  };

  // Messages: the receive node of each send node, and the send nodes each
  // send waits for room behind (receives of earlier messages).
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> recvOf(numNodes, kNone), sendOf(numNodes, kNone),
      roomAfter(numNodes, kNone);
  std::map<std::tuple<int, int, int>, std::vector<const Message *>> conns;
  for (const Message &msg : matching.messages)
    conns[{msg.channel, msg.send.rank, msg.recv.rank}].push_back(&msg);
  for (auto &[key, msgs] : conns) {
    std::vector<long long> slots;
    std::vector<std::pair<uint32_t, uint32_t>> pairs; // (send, recv) nodes
    for (int it = 0; it < sim; ++it)
      for (const Message *msg : msgs) {
        const Step &st = tbs[tbOf.at({msg->send.rank, msg->send.tb})]
                             .tb->steps[msg->send.step];
        slots.push_back(buffers.slotsOf(st.cnt));
        pairs.push_back(
            {node(tbOf.at({msg->send.rank, msg->send.tb}), it, msg->send.step),
             node(tbOf.at({msg->recv.rank, msg->recv.tb}), it,
                  msg->recv.step)});
      }
    std::vector<int> waits = bufferWaits(slots, buffers);
    for (size_t k = 0; k < pairs.size(); ++k) {
      recvOf[pairs[k].first] = pairs[k].second;
      sendOf[pairs[k].second] = pairs[k].first;
      if (waits[k] >= 0)
        roomAfter[pairs[k].first] = pairs[waits[k]].second;
    }
    // Generated code: a put into a landing slot waits for the receiver's
    // credit, given when it read the slot in the previous pass.
    if (gen)
      for (size_t k = msgs.size(); k < pairs.size(); ++k) {
        const Message *msg = msgs[k % msgs.size()];
        const Step &rs = tbs[tbOf.at({msg->recv.rank, msg->recv.tb})]
                             .tb->steps[msg->recv.step];
        if (!landsInPlace(rs))
          roomAfter[pairs[k].first] = pairs[k - msgs.size()].second;
      }
  }

  // Edges (at most four into each node, six in a merged threadblock), then
  // successors as compressed rows, then one pass in topological order.
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  edges.reserve((size_t)numNodes * 2);
  std::vector<uint32_t> indeg(numNodes, 0);
  auto edge = [&](uint32_t from, uint32_t to) {
    edges.push_back({from, to});
    ++indeg[to];
  };
  for (int t = 0; t < (int)tbs.size(); ++t) {
    const Threadblock &tb = *tbs[t].tb;
    int len = (int)tb.steps.size();
    for (int it = 0; it < sim; ++it)
      for (int i = 0; i < len; ++i) {
        uint32_t v = node(t, it, i);
        if (i > 0)
          edge(v - 1, v);
        else if (it > 0)
          edge(node(t, it - 1, len - 1), v);
        const Step &st = tb.steps[i];
        if (st.depid >= 0) {
          auto d = tbOf.find({tbs[t].rank, st.depid});
          if (d != tbOf.end() && st.deps >= 0 &&
              st.deps < (int)tbs[d->second].tb->steps.size())
            edge(node(d->second, it, st.deps), v);
        }
        if (sendOf[v] != kNone)
          edge(sendOf[v], v);
        if (roomAfter[v] != kNone)
          edge(roomAfter[v], v);
      }
  }
  // Merged threadblocks run their steps one at a time, in their order.
  if (o.packing)
    for (int r = 0; r < (int)o.packing->ranks.size(); ++r)
      for (const PackedThreadblock &ptb : o.packing->ranks[r]) {
        if (ptb.members.size() < 2 || ptb.steps.empty())
          continue;
        auto at = [&](int it, StepRef s) {
          return node(tbOf.at({s.rank, s.tb}), it, s.step);
        };
        for (int it = 0; it < sim; ++it) {
          if (it > 0)
            edge(at(it - 1, ptb.steps.back()), at(it, ptb.steps.front()));
          for (size_t k = 1; k < ptb.steps.size(); ++k)
            edge(at(it, ptb.steps[k - 1]), at(it, ptb.steps[k]));
        }
      }

  std::vector<uint32_t> succStart(numNodes + 1, 0), succs(edges.size());
  for (auto [from, to] : edges)
    ++succStart[from + 1];
  for (uint32_t v = 0; v < numNodes; ++v)
    succStart[v + 1] += succStart[v];
  {
    std::vector<uint32_t> fill(succStart.begin(), succStart.end() - 1);
    for (auto [from, to] : edges)
      succs[fill[from]++] = to;
  }
  edges.clear();
  edges.shrink_to_fit();

  std::vector<double> firstSlice(numNodes, 0), arrival(numNodes, 0);
  std::vector<double> ready(numNodes, 0); // max end of waits met so far
  std::vector<uint32_t> queue;
  queue.reserve(numNodes);
  const std::vector<uint32_t> indeg0 = std::move(indeg);
  // Node -> threadblock, iteration and step.
  std::vector<uint32_t> tbOfNode(numNodes);
  for (int t = 0; t < (int)tbs.size(); ++t)
    std::fill(tbOfNode.begin() + tbs[t].base,
              tbOfNode.begin() + tbs[t].base + tbs[t].tb->steps.size() * sim,
              t);
  std::vector<double> iterEnd(sim, 0);
  // With o.criticalPath: each node's last wait (the node it waited for,
  // and why), its start and its end.
  using After = CriticalStep::After;
  const bool path = o.criticalPath;
  std::vector<uint32_t> waitedFor(path ? numNodes : 0, kNone);
  std::vector<After> waitedWhy(path ? numNodes : 0, After::Nothing);
  std::vector<double> startOf(path ? numNodes : 0, 0),
      endOf(path ? numNodes : 0, 0);
  // Per threadblock, the time its sends and switch operations stream.
  std::vector<double> busy(tbs.size(), 0);
  // MSCCL's interpreter: a cost per executed step, and per wait for a step
  // of another threadblock. Not charged to programs timed without MSCCL's
  // rules (MSCCL++ plans, NCCL's own kernel) nor to merged threadblocks.
  const bool interp = o.interpreter && o.runtimeRules && !gen && !o.packing;
  const double stepCost = interp ? model.interpreterStepUs : 0;
  const double dependencyCost = interp ? model.dependencyUs : 0;
  // One pass in topological order over the unrolled program with the
  // threadblocks' current rates; false when some node never gets ready.
  auto timePass = [&]() -> bool {
    std::vector<uint32_t> indeg = indeg0;
    std::fill(firstSlice.begin(), firstSlice.end(), 0.0);
    std::fill(arrival.begin(), arrival.end(), 0.0);
    std::fill(ready.begin(), ready.end(), 0.0);
    std::fill(iterEnd.begin(), iterEnd.end(), 0.0);
    std::fill(busy.begin(), busy.end(), 0.0);
    std::fill(waitedFor.begin(), waitedFor.end(), kNone);
    std::fill(waitedWhy.begin(), waitedWhy.end(), After::Nothing);
    queue.clear();
    for (uint32_t v = 0; v < numNodes; ++v)
      if (!indeg[v])
        queue.push_back(v);
    size_t done = 0;
    for (size_t qi = 0; qi < queue.size(); ++qi) {
      uint32_t v = queue[qi];
      ++done;
      const TbInfo &t = tbs[tbOfNode[v]];
      size_t len = t.tb->steps.size();
      int it = (int)((v - t.base) / len);
      const Step &st = t.tb->steps[(v - t.base) % len];
      double s = ready[v];
      double finish;
      if (st.type == StepType::Nop) {
        finish = s + stepCost;
      } else {
        double bytes = perIter * std::max(1, st.cnt);
        double tbRate = perUs(reducing(st.type) ? model.tbReduceGBps[p]
                                                : model.tbCopyGBps[p]) *
                        (gen ? tbScale : 1.0);
        // A switch operation, as a send, streams at its threadblock's copy
        // rate (the switch reduces) and its share of what it crosses.
        double rate = sends(st.type) || switchStep(st.type)
                          ? std::min(tbRate, t.rate)
                          : tbRate;
        // Generated code: a receive waits for the whole put's flag; one that
        // landed in its destination and forwards nothing costs nothing more.
        if (gen && receives(st.type) && sendOf[v] != kNone) {
          if (path && arrival[sendOf[v]] > s) {
            waitedFor[v] = sendOf[v];
            waitedWhy[v] = After::Arrival;
          }
          s = std::max(s, arrival[sendOf[v]]);
        } else if (receives(st.type) && sendOf[v] != kNone) {
          if (path && firstSlice[sendOf[v]] > s) {
            waitedFor[v] = sendOf[v];
            waitedWhy[v] = After::Slices;
          }
          s = std::max(s, firstSlice[sendOf[v]]);
        }
        if (gen && landsInPlace(st) && !sends(st.type))
          bytes = 0;
        finish = s + stepCost + bytes / rate;
        if (sends(st.type) || switchStep(st.type))
          busy[tbOfNode[v]] += bytes / rate;
        if (receives(st.type) && sendOf[v] != kNone)
          finish = std::max(finish, arrival[sendOf[v]]);
        if (sends(st.type)) {
          // Simple posts a call as two slices; LL and LL128 forward lines.
          // A message's latency grows with the lines its threads have in
          // flight, up to one per thread of a full threadblock
          // (StepModel::stepFillUs).
          double slice = p == 0 ? bytes / 2 : 0;
          double latency =
              t.latency +
              model.stepFillUs[p] * std::min(1.0, bytes / kFirstRoundBytes[p]);
          firstSlice[v] = s + latency + slice / rate;
          arrival[v] = finish + latency;
        }
      }
      iterEnd[it] = std::max(iterEnd[it], finish);
      if (path) {
        startOf[v] = s;
        endOf[v] = finish;
      }
      for (uint32_t k = succStart[v]; k < succStart[v + 1]; ++k) {
        uint32_t w = succs[k];
        // A receive waits for its message's slices, not for the send's end.
        if (w != recvOf[v]) {
          // The interpreter sees another threadblock's step end through a
          // flag in global memory.
          double seen = finish;
          if (dependencyCost > 0 && tbOfNode[v] != tbOfNode[w] &&
              roomAfter[w] != v)
            seen += dependencyCost;
          if (path && seen > ready[w]) {
            // Other edges join a threadblock's steps in order, or two
            // threadblocks of one rank.
            waitedFor[w] = v;
            waitedWhy[w] = roomAfter[w] == v            ? After::Room
                           : tbOfNode[v] == tbOfNode[w] ? After::Order
                                                        : After::Dependency;
          }
          ready[w] = std::max(ready[w], seen);
        }
        if (--indeg[w] == 0)
          queue.push_back(w);
      }
    }
    return done == numNodes;
  };
  // Some node never got ready: bounded buffers make iterations wait in a
  // cycle.
  auto cycle = [] {
    return Error("the program cannot run: its loop iterations wait for "
                 "each other in a cycle (bounded connection buffers)");
  };
  if (!timePass())
    return cycle();
  // With switch threadblocks, a threadblock that waits most of the time
  // does not hold its share of a link idle: each round gives the rates
  // again with every threadblock weighted by the fraction of the simulated
  // span it streamed in the last pass (at least kMinActivity; while one
  // streams it meets the others' average loads, as if their streaming
  // were independent of its own), and times the program again, until the
  // span moves by less than kSettled (at most kRounds rounds).
  // Threadblocks that stream all the time keep the max-min split.
  if (switchTailUs > 0) {
    constexpr int kRounds = 8;
    constexpr double kMinActivity = 0.05, kSettled = 1e-3;
    auto spanOf = [&] {
      double span = 0;
      for (double e : iterEnd)
        span = std::max(span, e);
      return span;
    };
    std::vector<double> activity(tbs.size(), 1.0);
    double span = spanOf();
    for (int round = 0; round < kRounds && span > 0; ++round) {
      for (size_t t = 0; t < tbs.size(); ++t)
        activity[t] = std::clamp(busy[t] / span, kMinActivity, 1.0);
      shareWithSwitches(topo, model, tbScale, switchPortBase, switchPortCount,
                        tbs, activity);
      if (!timePass())
        return cycle();
      double next = spanOf();
      bool settled = std::fabs(next - span) <= kSettled * span;
      span = next;
      if (settled)
        break;
    }
  }

  if (path && numNodes > 0) {
    uint32_t v = 0;
    for (uint32_t u = 1; u < numNodes; ++u)
      if (endOf[u] > endOf[v])
        v = u;
    for (; v != kNone; v = waitedFor[v]) {
      const TbInfo &t = tbs[tbOfNode[v]];
      size_t len = t.tb->steps.size();
      const Step &st = t.tb->steps[(v - t.base) % len];
      CriticalStep c;
      c.rank = t.rank;
      c.tb = t.tb->id;
      c.pass = (long long)((v - t.base) / len);
      c.step = (int)((v - t.base) % len);
      c.type = st.type;
      c.count = st.cnt;
      c.startUs = startOf[v];
      c.endUs = endOf[v];
      c.rateGBps = sends(st.type) || switchStep(st.type) ? t.rate / 1e3 : 0;
      c.after = waitedWhy[v];
      result.criticalPath.push_back(c);
    }
  }
  result.simulated = sim;
  double last = sim > 0 ? iterEnd[sim - 1] : 0;
  for (int it = 0; it < sim; ++it)
    last = std::max(last, iterEnd[it]);
  if (iterations > sim) {
    double step = sim >= 2 ? iterEnd[sim - 1] - iterEnd[sim - 2] : last;
    last += (double)(iterations - sim) * std::max(0.0, step);
  }
  result.timeUs = model.launchUs[p] + last + switchTailUs;
  result.algbwGBps = o.bytes / (result.timeUs * 1e3);
  result.busbwGBps = result.algbwGBps * o.busBwFactor;
  return result;
}

} // namespace

const char *toString(CriticalStep::After after) {
  switch (after) {
  case CriticalStep::After::Nothing:
    return "nothing";
  case CriticalStep::After::Order:
    return "its threadblock's previous step";
  case CriticalStep::After::Dependency:
    return "a step of another threadblock of its rank";
  case CriticalStep::After::Arrival:
    return "its message's arrival";
  case CriticalStep::After::Room:
    return "room at the receiver";
  case CriticalStep::After::Slices:
    return "its message's first slices";
  }
  return "?";
}

Expected<StepSimResult> simulateSteps(const Algo &algo, const Topology &topo,
                                      const StepSimOptions &o) {
  auto checked = checkForSteps(algo, topo, o);
  if (!checked)
    return checked.error();
  return timeChecked(algo, topo, o, *checked);
}

Expected<std::vector<StepSimResult>>
simulateStepsAt(const Algo &algo, const Topology &topo,
                const std::vector<StepSimOptions> &perSize) {
  std::vector<StepSimResult> out;
  if (perSize.empty())
    return out;
  // The options the checks read.
  auto checksOf = [](const StepSimOptions &o) {
    return std::tuple(o.runtimeRules, o.generatedCode, o.boundedBuffers,
                      o.packing);
  };
  auto checked = checkForSteps(algo, topo, perSize.front());
  if (!checked)
    return checked.error();
  for (const StepSimOptions &o : perSize) {
    if (checksOf(o) != checksOf(perSize.front()))
      return Error("internal error: simulateStepsAt's sizes differ in "
                   "options other than the size");
    auto r = timeChecked(algo, topo, o, *checked);
    if (!r)
      return r.error();
    out.push_back(*r);
  }
  return out;
}

} // namespace ccsynth::msccl
