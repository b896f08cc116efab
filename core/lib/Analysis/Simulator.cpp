//===- Simulator.cpp - Event-driven alpha-beta simulation of schedules ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The simulation has three parts:
//  1. Resolution: every transfer gets a link (or none when local), a byte
//     count and a latency; malformed transfers are rejected here.
//  2. Dependencies: a DAG over transfers built by replaying the schedule in
//     (step, position) order on canonical slots (RAW, WAW, WAR). Because
//     every edge and every per-link FIFO edge points forward in that order,
//     the earliest unfinished transfer can always start: no deadlock.
//  3. Events: latency phases end at fixed times; streaming phases end when
//     their bytes are drained at rates given by max-min fair sharing of the
//     shared resources. Rates are recomputed once per event time, and only
//     for the connected group of flows (through shared resources) that a
//     started or finished flow touches: max-min fairness propagates exactly
//     that far.
//
// Cost: each distinct event time costs time proportional to the group it
// touches. Schedules whose transfers finish in lockstep (rings, symmetric
// synthesized schedules) batch their events: 48k transfers on 64 ranks
// take well under a second. Unsynchronized traffic coupling every NIC
// (a 64-rank all-to-all with uneven transfer sizes) is the worst case:
// about 10 s for 50k transfers, still exact.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Analysis/Simulator.h"

#include "ccsynth/Support/FairShare.h"
#include "ccsynth/Topology/LinkIndex.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <span>
#include <tuple>

namespace ccsynth {

namespace {

/// Bytes per microsecond of a GB/s figure (1 GB = 1e9 bytes).
double bytesPerUs(double gbps) { return gbps * 1e3; }

/// Landing: a switch operation whose bytes have streamed and whose result
/// arrives after the switch's latency.
enum class Phase : uint8_t { Waiting, Latency, Streaming, Landing, Done };

/// A binary min-heap of transfers keyed by the time of their next event
/// (end of latency or predicted completion). Each transfer has at most one
/// entry, updated in place when its rate changes, so the heap never holds
/// more than the transfers in flight.
class EventHeap {
public:
  void reset(int numTransfers) {
    items.clear();
    pos.assign(numTransfers, -1);
    key.assign(numTransfers, 0);
  }
  bool empty() const { return items.empty(); }
  int top() const { return items.front(); }
  double topTime() const { return key[items.front()]; }
  /// Inserts `t` or moves it to `time`.
  void set(int t, double time) {
    key[t] = time;
    if (pos[t] < 0) {
      pos[t] = (int)items.size();
      items.push_back(t);
      up(pos[t]);
    } else {
      up(pos[t]);
      down(pos[t]);
    }
  }
  void remove(int t) {
    int i = pos[t];
    if (i < 0)
      return;
    pos[t] = -1;
    int last = items.back();
    items.pop_back();
    if (i < (int)items.size()) {
      items[i] = last;
      pos[last] = i;
      up(i);
      down(pos[last]);
    }
  }

private:
  std::vector<int> items;
  std::vector<int> pos;
  std::vector<double> key;

  bool less(int a, int b) const {
    return key[a] < key[b] || (key[a] == key[b] && a < b);
  }
  void place(int i, int t) {
    items[i] = t;
    pos[t] = i;
  }
  void up(int i) {
    int t = items[i];
    while (i > 0) {
      int parent = (i - 1) / 2;
      if (!less(t, items[parent]))
        break;
      place(i, items[parent]);
      i = parent;
    }
    place(i, t);
  }
  void down(int i) {
    int t = items[i], n = (int)items.size();
    while (true) {
      int child = 2 * i + 1;
      if (child >= n)
        break;
      if (child + 1 < n && less(items[child + 1], items[child]))
        ++child;
      if (!less(items[child], t))
        break;
      place(i, items[child]);
      i = child;
    }
    place(i, t);
  }
};

/// Streaming state of one transfer, kept together because the rate
/// solver touches all of it for every flow of a group.
struct Flow {
  double remaining = 0;  ///< bytes left at lastUpdate
  double rate = 0;       ///< bytes/µs
  double lastUpdate = 0; ///< µs
  double cap = 0;        ///< bytes/µs of its own link (or local copy)
  /// Whether its own link is slower than every constraint it crosses (only
  /// then can its cap, not a constraint, stop it rising).
  bool capBinds = false;
};

class Simulation {
public:
  Simulation(const Schedule &s, const Topology &t, const SimOptions &o)
      : sched(s), topo(t), opts(o), col(s.collective) {}

  Expected<SimResult> run();

private:
  const Schedule &sched;
  const Topology &topo;
  const SimOptions &opts;
  const Collective &col;
  /// Built on the first transfer without an explicit link.
  std::optional<LinkIndex> linkIndex;
  int numTransfers = 0;

  // Per transfer.
  std::vector<int> linkOf; ///< -1 = local
  std::vector<double> bytesOf;
  std::vector<double> alphaOf;     ///< µs
  std::vector<int> pending;        ///< unfinished dependencies
  std::vector<size_t> depStart;    ///< CSR: dependents of each transfer
  std::vector<int> deps;
  std::vector<Phase> phase;
  std::vector<double> startUs, endUs;

  // Per link the schedule uses (a slot of `used`; slotOf[t] is transfer
  // t's, -1 = local): transfers in (step, position) order and the next to
  // run.
  UsedLinks used;
  std::vector<int> slotOf;
  std::vector<std::vector<int>> linkQueue;
  std::vector<size_t> linkHead;
  std::vector<bool> linkBusy;
  // Switch operations queue per (switch, issuing rank, operation) after the
  // links (queue ids from used.size() on): a rank streams its reductions
  // one after another, and its multicasts. The switch's latency is a delay
  // between an operation's last byte and its result, not time the queue
  // is held: the next operation streams meanwhile, so a pipeline of them
  // pays it once, as NCCL's NVLS does.
  std::map<std::tuple<int, int, int>, int> switchQueueOf;
  int numQueues() const { return (int)(used.size() + switchQueueOf.size()); }
  bool isSwitchQueue(int q) const { return q >= (int)used.size(); }

  // Shared constraints: the topology's resources, then one per rank for
  // local copies (a GPU's copy engine bandwidth is shared by its copies).
  std::vector<double> constraintCap; ///< bytes/µs
  /// Per transfer: the constraints it crosses, a view of the list of its
  /// link (or its rank's copy engine), shared by every transfer there.
  std::vector<std::span<const int>> constraintsOf;
  std::vector<std::vector<int>> localConstraints;
  /// Active flows on each constraint; positions let a flow leave in O(1).
  std::vector<std::vector<int>> flowsOn;
  /// Per transfer, parallel to constraintsOf: posOn[posStart[t] + i].
  std::vector<size_t> posStart;
  std::vector<int> posOn;

  // Switch groups (switchGroups): one flow per group, run by its first
  // member, the leader; the others finish with it. groupLists holds each
  // leader's constraints.
  SwitchGroups groups;
  std::vector<std::vector<int>> groupLists;
  /// First switch-port constraint of each switch: one per port, the
  /// switch's own throughput through it, both directions together.
  std::vector<int> switchConstraintBase;

  // Streaming state (valid while Streaming).
  std::vector<Flow> flows;

  EventHeap events;
  std::vector<int> finishNow;
  double now = 0;
  int finished = 0;

  /// The rates of streaming flows (max-min fair, recomputed where a flow
  /// started or stopped).
  FairShare fairShare;
  /// What the solver sees of the flows.
  struct FlowGraph {
    const Simulation &s;
    const std::vector<int> &flowsOn(int c) const { return s.flowsOn[c]; }
    std::span<const int> constraintsOf(int f) const {
      return s.constraintsOf[f];
    }
    double capacity(int c) const { return s.constraintCap[c]; }
    bool streaming(int f) const { return s.phase[f] == Phase::Streaming; }
    double cap(int f) const { return s.flows[f].cap; }
    bool capBinds(int f) const { return s.flows[f].capBinds; }
  };

  Status resolve();
  Status resolveGroup(int g);
  bool isFollower(int t) const { return groups.leaderOf(t) != t; }
  /// Frees queue q for its next transfer.
  void releaseQueue(int q);
  Status buildDependencies();
  void tryStart(int t);
  void beginStream(int t);
  void addFlow(int t);
  void removeFlow(int t);
  void finish(int t);
  void advance(int t);
  /// A switch operation's last byte has streamed: its queue moves on and
  /// its result arrives after the switch's latency.
  void land(int t);
  void recomputeRates();
  Error transferError(int t, const std::string &msg) const;
};

Error Simulation::transferError(int t, const std::string &msg) const {
  const Transfer &tr = sched.transfers[t];
  SourceLoc loc;
  if (t < (int)sched.transferLocs.size())
    loc = sched.transferLocs[t];
  return Error("transfer #" + std::to_string(t) + " (step " +
                   std::to_string(tr.step) + ", rank " +
                   std::to_string(tr.src.rank) + " -> rank " +
                   std::to_string(tr.dst.rank) + "): " + msg,
               loc);
}

Status Simulation::resolve() {
  if (Status s = opts.topologyValidated ? Status::success() : topo.validate();
      !s)
    return Error("cannot simulate on topology '" + topo.name +
                 "': " + s.error().message);
  if (col.numRanks != topo.numRanks())
    return Error("schedule '" + sched.name + "' is for " +
                 std::to_string(col.numRanks) + " ranks but topology '" +
                 topo.name + "' has " + std::to_string(topo.numRanks()));
  if (!std::isfinite(opts.bytes) || opts.bytes < 0)
    return Error("buffer size must be a non-negative number of bytes");
  if (!std::isfinite(opts.localCopyGBps) || !(opts.localCopyGBps > 0))
    return Error("local copy bandwidth must be positive");
  double chunkBytes = std::ceil(opts.bytes / col.sizeDivisor());

  int n = topo.numRanks();
  int numResources = (int)topo.resources.size();
  constraintCap.resize(numResources + n);
  for (int r = 0; r < numResources; ++r)
    constraintCap[r] = bytesPerUs(topo.resources[r].bandwidthGBps);
  for (int r = 0; r < n; ++r)
    constraintCap[numResources + r] = bytesPerUs(opts.localCopyGBps);
  switchConstraintBase.clear();
  for (const InNetworkSwitch &sw : topo.switches) {
    switchConstraintBase.push_back((int)constraintCap.size());
    for (const SwitchPort &p : sw.ports)
      constraintCap.push_back(bytesPerUs(2 * p.bandwidthGBps * sw.efficiency));
  }

  numTransfers = (int)sched.transfers.size();
  linkOf.assign(numTransfers, -1);
  slotOf.assign(numTransfers, -1);
  used.clear();
  bytesOf.assign(numTransfers, 0);
  alphaOf.assign(numTransfers, 0);
  flows.assign(numTransfers, Flow());
  constraintsOf.assign(numTransfers, {});
  localConstraints.assign(n, {});
  for (int r = 0; r < n; ++r)
    localConstraints[r] = {numResources + r};
  for (int t = 0; t < numTransfers; ++t) {
    const Transfer &tr = sched.transfers[t];
    for (const ChunkLoc *end : {&tr.src, &tr.dst}) {
      const char *which = end == &tr.src ? "source" : "destination";
      if (end->rank < 0 || end->rank >= n)
        return transferError(t, std::string(which) + " rank " +
                                    std::to_string(end->rank) +
                                    " is not in 0.." + std::to_string(n - 1));
      int size = sched.bufferChunks(end->buffer);
      if (end->index < 0 || (long long)end->index + tr.count > size)
        return transferError(
            t, std::string(which) + " chunks " + std::to_string(end->index) +
                   ".." + std::to_string((long long)end->index + tr.count - 1) +
                   " are outside the " + std::to_string(size) + " chunks of " +
                   toString(end->buffer));
    }
    if (tr.count < 1)
      return transferError(t, "count must be at least 1");
    bytesOf[t] = tr.count * chunkBytes;
    if (isSwitchOp(tr.op))
      continue; // resolveGroup
    if (tr.src.rank == tr.dst.rank && tr.link != -1)
      return transferError(t, "stays on one rank but names link " +
                                  std::to_string(tr.link) +
                                  " (local transfers use no link; use -1)");
    if (tr.src.rank == tr.dst.rank) {
      // Same-GPU copy or reduce: no link, no latency.
      linkOf[t] = -1;
      flows[t].cap = bytesPerUs(opts.localCopyGBps);
      constraintsOf[t] = localConstraints[tr.src.rank];
      continue;
    }
    int link = tr.link;
    if (link >= 0) {
      if (link >= (int)topo.links.size())
        return transferError(t, "link " + std::to_string(link) +
                                    " does not exist (the topology has " +
                                    std::to_string(topo.links.size()) +
                                    " links)");
      const Link &l = topo.links[link];
      if (l.src != tr.src.rank || l.dst != tr.dst.rank)
        return transferError(t, "link " + std::to_string(link) +
                                    " joins rank " + std::to_string(l.src) +
                                    " -> rank " + std::to_string(l.dst) +
                                    ", not the transfer's ranks");
    } else if (link == -1) {
      if (!linkIndex)
        linkIndex.emplace(topo);
      auto best = linkIndex->bestLink(tr.src.rank, tr.dst.rank);
      if (!best)
        return transferError(t, "topology '" + topo.name +
                                    "' has no link between these ranks");
      link = *best;
    } else {
      return transferError(t, "link " + std::to_string(link) +
                                  " is invalid (use -1 for the fastest link)");
    }
    const Link &l = topo.links[link];
    linkOf[t] = link;
    alphaOf[t] = l.alphaUs;
    flows[t].cap = bytesPerUs(l.bandwidthGBps);
    slotOf[t] = used.slot(topo, link);
    constraintsOf[t] = used.resources(slotOf[t]);
  }
  groups = switchGroups(sched.transfers);
  switchQueueOf.clear();
  groupLists.assign(groups.members.size(), {});
  for (int g = 0; g < (int)groups.members.size(); ++g)
    if (Status s = resolveGroup(g); !s)
      return s;
  for (int t = 0; t < numTransfers; ++t) {
    double tightest = std::numeric_limits<double>::infinity();
    for (int c : constraintsOf[t])
      tightest = std::min(tightest, constraintCap[c]);
    flows[t].capBinds = !constraintsOf[t].empty() && flows[t].cap < tightest;
  }
  return Status::success();
}

/// A switch group's one flow, run by its leader: the bytes of one member
/// at most at its slowest port's line rate, crossing every source's port
/// up and every destination's port down (the physical port resources,
/// shared with point-to-point traffic, and the switch's own throughput
/// there), except the issuing rank's own contribution or copy, which stays
/// in its memory; then the switch's latency. Through IB SHARP the fabric
/// returns what it gathers to every member and takes every member's
/// contribution, the issuer's included: an issuer's own member between two
/// different slots (its input multicast into its output, a partial in
/// scratch reduced into its output) crosses its NIC too; one whose source
/// is its destination (the accumulator) stays.
Status Simulation::resolveGroup(int g) {
  const std::vector<int> &members = groups.members[g];
  int lead = members.front();
  const Transfer &first = sched.transfers[lead];
  if (first.sw < 0 || first.sw >= (int)topo.switches.size())
    return transferError(lead, "switch " + std::to_string(first.sw) +
                                   " does not exist (topology '" + topo.name +
                                   "' has " +
                                   std::to_string(topo.switches.size()) + ")");
  const InNetworkSwitch &sw = topo.switches[first.sw];
  std::vector<int> &list = groupLists[g];
  double slowest = std::numeric_limits<double>::infinity();
  auto cross = [&](int t, int rank, bool up) -> Status {
    int port = sw.portOf(rank);
    if (port < 0)
      return transferError(t, "rank " + std::to_string(rank) +
                                  " has no port on switch '" + sw.name + "'");
    const SwitchPort &p = sw.ports[port];
    slowest = std::min(slowest, p.bandwidthGBps);
    list.push_back(switchConstraintBase[first.sw] + port);
    if (int r = up ? p.up : p.down; r >= 0)
      list.push_back(r);
    return Status::success();
  };
  bool reduce = first.op == TransferOp::SwitchReduce;
  int issuer = reduce ? first.dst.rank : first.src.rank;
  if (Status s = cross(lead, issuer, !reduce); !s)
    return s;
  for (int t : members) {
    const Transfer &tr = sched.transfers[t];
    if (tr.count != first.count)
      return transferError(t, "moves " + std::to_string(tr.count) +
                                  " chunks in a switch operation whose "
                                  "first member moves " +
                                  std::to_string(first.count));
    if (tr.link >= 0)
      return transferError(t, "goes through a switch but names link " +
                                  std::to_string(tr.link));
    int far = reduce ? tr.src.rank : tr.dst.rank;
    bool ownThroughFabric = sw.kind == SwitchKind::SHARP &&
                            !(col.canonical(tr.src) == col.canonical(tr.dst));
    if (far != issuer || ownThroughFabric)
      if (Status s = cross(t, far, reduce); !s)
        return s;
    if (t != lead)
      bytesOf[t] = 0;
  }
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
  alphaOf[lead] = sw.alphaUs;
  flows[lead].cap = bytesPerUs(slowest);
  constraintsOf[lead] = list;
  auto key = std::make_tuple(first.sw, issuer, (int)first.op);
  auto [it, fresh] = switchQueueOf.try_emplace(key, (int)switchQueueOf.size());
  (void)fresh;
  slotOf[lead] = (int)used.size() + it->second;
  return Status::success();
}

Status Simulation::buildDependencies() {
  std::vector<int> order(numTransfers);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return sched.transfers[a].step < sched.transfers[b].step;
  });
  Dependencies waitsFor = transferDependencies(
      col, sched.scratchChunks, numTransfers,
      [&](int t) -> const Transfer & { return sched.transfers[t]; }, order);

  if (!groups.members.empty()) {
    // A group waits for what any member waits for and is waited for as
    // one: edges go between leaders, and none inside a group.
    auto leader = [&](int t) { return groups.leaderOf(t); };
    std::vector<std::pair<int, int>> edges; // (waiter, waited for)
    for (int t = 0; t < numTransfers; ++t)
      for (int from : waitsFor.of(t))
        if (leader(from) != leader(t))
          edges.push_back({leader(t), leader(from)});
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    Dependencies merged;
    merged.begin.assign(numTransfers + 1, 0);
    for (auto [t, from] : edges)
      ++merged.begin[t + 1];
    for (int t = 0; t < numTransfers; ++t)
      merged.begin[t + 1] += merged.begin[t];
    merged.preds.reserve(edges.size());
    for (auto [t, from] : edges)
      merged.preds.push_back(from);
    waitsFor = std::move(merged);
  }

  // Dependents of each transfer, listed in step order; a link serves its
  // transfers in step order.
  pending.assign(numTransfers, 0);
  linkQueue.assign(numQueues(), {});
  depStart.assign(numTransfers + 1, 0);
  for (int t : order) {
    for (int from : waitsFor.of(t))
      ++depStart[from + 1];
    pending[t] = (int)waitsFor.of(t).size();
    if (slotOf[t] >= 0)
      linkQueue[slotOf[t]].push_back(t);
  }
  for (int t = 0; t < numTransfers; ++t)
    depStart[t + 1] += depStart[t];
  deps.assign(waitsFor.preds.size(), 0);
  std::vector<size_t> fill(depStart.begin(), depStart.end() - 1);
  for (int t : order)
    for (int from : waitsFor.of(t))
      deps[fill[from]++] = t;
  return Status::success();
}

void Simulation::tryStart(int t) {
  if (pending[t] > 0 || phase[t] != Phase::Waiting || isFollower(t))
    return;
  int link = slotOf[t];
  if (link >= 0) {
    if (linkBusy[link] || linkQueue[link][linkHead[link]] != t)
      return;
    linkBusy[link] = true;
  }
  startUs[t] = now;
  if (link >= 0 && isSwitchQueue(link)) {
    beginStream(t); // the latency comes after the bytes
    return;
  }
  phase[t] = Phase::Latency;
  if (alphaOf[t] > 0)
    events.set(t, now + alphaOf[t]);
  else
    beginStream(t);
}

void Simulation::beginStream(int t) {
  phase[t] = Phase::Streaming;
  if (bytesOf[t] <= 0) {
    finishNow.push_back(t);
    return;
  }
  addFlow(t);
}

void Simulation::addFlow(int t) {
  flows[t].remaining = bytesOf[t];
  flows[t].rate = 0;
  flows[t].lastUpdate = now;
  for (size_t i = 0; i < constraintsOf[t].size(); ++i) {
    int c = constraintsOf[t][i];
    posOn[posStart[t] + i] = (int)flowsOn[c].size();
    flowsOn[c].push_back(t);
    fairShare.touchConstraint(c);
  }
  fairShare.touchFlow(t);
}

void Simulation::removeFlow(int t) {
  for (size_t i = 0; i < constraintsOf[t].size(); ++i) {
    int c = constraintsOf[t][i];
    auto &list = flowsOn[c];
    int pos = posOn[posStart[t] + i];
    int moved = list.back();
    list[pos] = moved;
    list.pop_back();
    if (moved != t) {
      // Fix the moved flow's recorded position on this constraint.
      std::span<const int> cs = constraintsOf[moved];
      for (size_t j = 0; j < cs.size(); ++j)
        if (cs[j] == c)
          posOn[posStart[moved] + j] = pos;
    }
    fairShare.touchConstraint(c);
  }
}

void Simulation::finish(int t) {
  if (phase[t] == Phase::Done)
    return;
  bool landed = phase[t] == Phase::Landing;
  if (bytesOf[t] > 0 && !landed)
    removeFlow(t);
  phase[t] = Phase::Done;
  endUs[t] = now;
  ++finished;
  if (slotOf[t] >= 0 && !landed)
    releaseQueue(slotOf[t]);
  if (groups.of[t] >= 0)
    for (int m : groups.members[groups.of[t]])
      if (m != t && phase[m] != Phase::Done) {
        phase[m] = Phase::Done;
        startUs[m] = startUs[t];
        endUs[m] = now;
        ++finished;
      }
  for (size_t i = depStart[t]; i < depStart[t + 1]; ++i)
    if (--pending[deps[i]] == 0)
      tryStart(deps[i]);
}

void Simulation::land(int t) {
  advance(t);
  removeFlow(t);
  phase[t] = Phase::Landing;
  events.set(t, now + alphaOf[t]);
  releaseQueue(slotOf[t]);
}

void Simulation::releaseQueue(int q) {
  linkBusy[q] = false;
  ++linkHead[q];
  if (linkHead[q] < linkQueue[q].size())
    tryStart(linkQueue[q][linkHead[q]]);
}

void Simulation::advance(int t) {
  Flow &f = flows[t];
  f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.lastUpdate));
  f.lastUpdate = now;
}

void Simulation::recomputeRates() {
  fairShare.solve(FlowGraph{*this}, [&](int f, double level) {
    Flow &fl = flows[f];
    // A rate that did not really change keeps its completion time; this
    // also keeps float noise from reordering the event queue.
    if (fl.rate > 0 && std::abs(level - fl.rate) <= 1e-12 * fl.rate)
      return;
    fl.remaining =
        std::max(0.0, fl.remaining - fl.rate * (now - fl.lastUpdate));
    fl.lastUpdate = now;
    fl.rate = level;
    if (level > 0)
      events.set(f, now + fl.remaining / level);
    else
      events.remove(f);
  });
}

Expected<SimResult> Simulation::run() {
  if (Status s = resolve(); !s)
    return s.error();
  if (Status s = buildDependencies(); !s)
    return s.error();

  int numConstraints = (int)constraintCap.size();
  phase.assign(numTransfers, Phase::Waiting);
  startUs.assign(numTransfers, 0);
  endUs.assign(numTransfers, 0);
  linkHead.assign(numQueues(), 0);
  linkBusy.assign(numQueues(), false);
  flowsOn.assign(numConstraints, {});
  posStart.assign(numTransfers + 1, 0);
  for (int t = 0; t < numTransfers; ++t)
    posStart[t + 1] = posStart[t] + constraintsOf[t].size();
  posOn.assign(posStart.back(), 0);
  events.reset(numTransfers);
  fairShare.reset(numConstraints, numTransfers);

  now = 0;
  for (int t = 0; t < numTransfers; ++t)
    tryStart(t);
  while (true) {
    while (!finishNow.empty()) {
      int t = finishNow.back();
      finishNow.pop_back();
      finish(t);
    }
    if (opts.until && std::chrono::steady_clock::now() >= *opts.until)
      return Error("the time limit stopped the simulation of '" + sched.name +
                   "' with " + std::to_string(numTransfers - finished) +
                   " of " + std::to_string(numTransfers) +
                   " transfers unfinished");
    recomputeRates();
    if (events.empty())
      break;
    // Handle every event of this instant together so that rates are
    // recomputed once, not once per simultaneous completion.
    now = events.topTime();
    double horizon = now + 1e-9 + std::abs(now) * 1e-12;
    while (!events.empty() && events.topTime() <= horizon) {
      int t = events.top();
      events.remove(t);
      if (phase[t] == Phase::Latency) {
        beginStream(t);
      } else if (phase[t] == Phase::Streaming && slotOf[t] >= 0 &&
                 isSwitchQueue(slotOf[t]) && alphaOf[t] > 0) {
        land(t);
      } else {
        if (phase[t] == Phase::Streaming)
          advance(t);
        finishNow.push_back(t);
      }
    }
  }
  if (finished != numTransfers)
    return Error("simulation of '" + sched.name + "' stopped with " +
                 std::to_string(numTransfers - finished) +
                 " transfers unfinished (internal error)");

  SimResult result;
  for (int t = 0; t < numTransfers; ++t)
    result.timeUs = std::max(result.timeUs, endUs[t]);
  if (result.timeUs > 0) {
    result.algbwGBps = opts.bytes / (result.timeUs * 1e3);
    result.busbwGBps = result.algbwGBps * col.busBwFactor();
  }
  if (opts.recordTimeline) {
    result.timeline.reserve(numTransfers);
    for (int t = 0; t < numTransfers; ++t)
      result.timeline.push_back({t, linkOf[t], startUs[t], endUs[t]});
  }
  return result;
}

} // namespace

Expected<std::vector<SimResult>>
simulateInNetworkRuntime(const Schedule &schedule, const Topology &topology,
                         const std::vector<double> &sizes) {
  // The link efficiency is NVLink's (NCCL's usable bandwidth per NVLink):
  // NVLinks, the resources they cross and NVLS ports carry that share of
  // their line rate as data. Network links keep theirs: 2 x 8 B200 run
  // NVLS-tree at 719.7 GB/s busbw, 96% of their NICs' line rate.
  Topology data = topology;
  double eff = topology.stepModel.linkEfficiency;
  std::vector<char> nvlinkResource(data.resources.size(), 0);
  for (Link &l : data.links) {
    if (l.kind != LinkKind::NVLink)
      continue;
    l.bandwidthGBps *= eff;
    for (int r : l.resources)
      nvlinkResource[r] = 1;
  }
  for (size_t r = 0; r < data.resources.size(); ++r)
    if (nvlinkResource[r])
      data.resources[r].bandwidthGBps *= eff;
  for (InNetworkSwitch &sw : data.switches)
    if (sw.kind == SwitchKind::NVLS)
      for (SwitchPort &p : sw.ports)
        p.bandwidthGBps *= eff;
  double launch = topology.stepModel.launchUs[0];
  std::vector<SimResult> results;
  for (double bytes : sizes) {
    SimOptions options;
    options.bytes = bytes;
    auto r = simulate(schedule, data, options);
    if (!r)
      return r.error();
    SimResult out = r.take();
    out.timeUs += launch;
    out.algbwGBps = out.timeUs > 0 ? bytes / (out.timeUs * 1e3) : 0;
    out.busbwGBps = out.algbwGBps * schedule.collective.busBwFactor();
    results.push_back(std::move(out));
  }
  return results;
}

Expected<SimResult> simulate(const Schedule &schedule, const Topology &topology,
                             const SimOptions &options) {
  Simulation sim(schedule, topology, options);
  return sim.run();
}

} // namespace ccsynth
