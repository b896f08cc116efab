//===- ListScheduler.cpp - Ordering, timing and steps of a task list ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements ListScheduler.h. The Dispatcher is an event-driven replay of
// a TaskList: when a link frees up it starts the ready transfer with the
// smallest priority, and it shares switch ports and NICs max-min fairly
// among the streams crossing them (recomputeRates). listSchedule runs it;
// prioritizeCriticalPath sets priorities to minus each task's bottom
// level; toSchedule turns the timed dispatch order into a schedule's
// steps; mergeContiguous joins consecutive transfers of contiguous slots.
// See docs/synth.md ("Method").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Synth/ListScheduler.h"

#include "ccsynth/Support/FairShare.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <span>

namespace ccsynth::synth {

namespace {

double chunkBytesOf(const Collective &c, double bytes) {
  return std::ceil(bytes / c.sizeDivisor());
}

} // namespace

Dependencies taskDependencies(const TaskList &list) {
  std::vector<int> order(list.tasks.size());
  std::iota(order.begin(), order.end(), 0);
  return transferDependencies(
      *list.collective, list.scratchChunks, (int)list.tasks.size(),
      [&](int t) -> const Transfer & { return list.tasks[t].tr; }, order);
}

namespace {

/// The event-driven replay with dynamic dispatch. Streaming flows progress
/// lazily (remaining bytes at their last rate change); a start or end only
/// recomputes the max-min fair rates of the flows connected to it through
/// shared constraints, since the allocation decomposes over connected
/// components; completion events carry a version to skip stale ones.
class Dispatcher {
public:
  Dispatcher(const TaskList &l, const Topology &t, const ListScheduleOptions &o)
      : list(l), topo(t), opts(o) {}

  Expected<TimedTasks> run();

private:
  const TaskList &list;
  const Topology &topo;
  const ListScheduleOptions &opts;

  int numTasks = 0;
  /// The slot in `used` of each task's link (-1 = local): per-link state
  /// is per link the tasks use, not per link of the machine.
  UsedLinks used;
  std::vector<int> linkOf;
  std::vector<double> bytes, alpha, cap;
  /// Constraints per task: a view of its link's (or rank's) shared list.
  std::vector<std::span<const int>> cons;
  std::vector<std::vector<int>> localCons;
  std::vector<double> consCap;
  /// Dependents of each task: succ[succStart[t] .. succStart[t + 1]).
  std::vector<size_t> succStart;
  std::vector<int> succ;
  std::vector<int> pending;

  struct ReadyItem {
    double prio;
    int task;
    bool operator>(const ReadyItem &o) const {
      return prio != o.prio ? prio > o.prio : task > o.task;
    }
  };
  std::vector<
      std::priority_queue<ReadyItem, std::vector<ReadyItem>, std::greater<>>>
      linkReady;
  std::vector<char> linkBusy;

  /// time, task, version (0 = end of the latency phase).
  struct Event {
    double time;
    int task;
    unsigned version;
    bool operator>(const Event &o) const {
      if (time != o.time)
        return time > o.time;
      return task > o.task;
    }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::vector<double> remaining, rate, lastUpdate;
  std::vector<unsigned> version;
  std::vector<char> streaming;
  double now = 0;
  TimedTasks out;

  // Flows on each constraint, with each flow's position for O(1) removal
  // (posOn[posStart[t] + i] for the i-th constraint of t).
  std::vector<std::vector<int>> flowsOn;
  std::vector<size_t> posStart;
  std::vector<int> posOn;
  /// The rates of streaming flows (max-min fair, recomputed where a flow
  /// started or stopped).
  FairShare fairShare;
  /// What the solver sees of the flows: every flow's own cap may bind.
  struct FlowGraph {
    const Dispatcher &d;
    const std::vector<int> &flowsOn(int c) const { return d.flowsOn[c]; }
    std::span<const int> constraintsOf(int f) const { return d.cons[f]; }
    double capacity(int c) const { return d.consCap[c]; }
    bool streaming(int f) const { return d.streaming[f] != 0; }
    double cap(int f) const { return d.cap[f]; }
    bool capBinds(int) const { return true; }
  };

  void makeReady(int t);
  void dispatch(int link);
  void start(int t);
  void beginStream(int t);
  void endStream(int t);
  void finish(int t);
  void advance(int t) {
    remaining[t] =
        std::max(0.0, remaining[t] - rate[t] * (now - lastUpdate[t]));
    lastUpdate[t] = now;
  }
  void setRate(int t, double r) {
    advance(t);
    if (r == rate[t] && version[t] > 0)
      return; // its completion event stays valid
    rate[t] = r;
    ++version[t];
    events.push({now + remaining[t] / r, t, version[t]});
  }
  void recomputeRates();
};

void Dispatcher::makeReady(int t) {
  out.ready[t] = now;
  if (linkOf[t] < 0) {
    start(t);
    return;
  }
  linkReady[linkOf[t]].push({list.tasks[t].prio, t});
  dispatch(linkOf[t]);
}

void Dispatcher::dispatch(int link) {
  if (linkBusy[link] || linkReady[link].empty())
    return;
  int t = linkReady[link].top().task;
  linkReady[link].pop();
  linkBusy[link] = 1;
  start(t);
}

void Dispatcher::start(int t) {
  out.start[t] = now;
  if (alpha[t] > 0)
    events.push({now + alpha[t], t, 0});
  else
    beginStream(t);
}

void Dispatcher::beginStream(int t) {
  streaming[t] = 1;
  remaining[t] = bytes[t];
  lastUpdate[t] = now;
  if (cons[t].empty()) {
    setRate(t, cap[t]);
    return;
  }
  for (size_t i = 0; i < cons[t].size(); ++i) {
    int c = cons[t][i];
    posOn[posStart[t] + i] = (int)flowsOn[c].size();
    flowsOn[c].push_back(t);
    fairShare.touchConstraint(c);
  }
  fairShare.touchFlow(t);
}

void Dispatcher::endStream(int t) {
  streaming[t] = 0;
  for (size_t i = 0; i < cons[t].size(); ++i) {
    int c = cons[t][i];
    auto &list = flowsOn[c];
    int pos = posOn[posStart[t] + i], moved = list.back();
    list[pos] = moved;
    list.pop_back();
    if (moved != t)
      for (size_t j = 0; j < cons[moved].size(); ++j)
        if (cons[moved][j] == c)
          posOn[posStart[moved] + j] = pos;
    fairShare.touchConstraint(c);
  }
}

void Dispatcher::finish(int t) {
  endStream(t);
  out.end[t] = now;
  if (linkOf[t] >= 0) {
    linkBusy[linkOf[t]] = 0;
    dispatch(linkOf[t]);
  }
  for (size_t i = succStart[t]; i < succStart[t + 1]; ++i)
    if (--pending[succ[i]] == 0)
      makeReady(succ[i]);
}

void Dispatcher::recomputeRates() {
  fairShare.solve(FlowGraph{*this},
                  [&](int f, double level) { setRate(f, level); });
}

Expected<TimedTasks> Dispatcher::run() {
  // Setting up millions of tasks takes seconds: not started past the
  // deadline, and checked again once the dependencies are known.
  auto pastDeadline = [&] {
    return opts.deadline && std::chrono::steady_clock::now() > *opts.deadline;
  };
  if (pastDeadline())
    return Error("list scheduling stopped at its time limit");
  numTasks = (int)list.tasks.size();
  double chunk = chunkBytesOf(*list.collective, opts.bytes);
  int nres = (int)topo.resources.size();
  int n = topo.numRanks();
  int ncons = nres + n;
  consCap.assign(ncons, 0);
  for (int x = 0; x < nres; ++x)
    consCap[x] = topo.resources[x].bandwidthGBps * 1e3;
  for (int r = 0; r < n; ++r)
    consCap[nres + r] = opts.localCopyGBps * 1e3;
  linkOf.assign(numTasks, -1);
  bytes.assign(numTasks, 0);
  alpha.assign(numTasks, 0);
  cap.assign(numTasks, 0);
  cons.assign(numTasks, {});
  used.clear();
  localCons.assign(n, {});
  for (int r = 0; r < n; ++r)
    localCons[r] = {nres + r};
  for (int t = 0; t < numTasks; ++t) {
    const Transfer &tr = list.tasks[t].tr;
    bytes[t] = chunk * tr.count;
    if (tr.src.rank == tr.dst.rank) {
      cap[t] = opts.localCopyGBps * 1e3;
      cons[t] = localCons[tr.src.rank];
      continue;
    }
    int l = tr.link;
    if (l < 0) {
      auto best = topo.bestLink(tr.src.rank, tr.dst.rank);
      if (!best)
        return Error("no link from rank " + std::to_string(tr.src.rank) +
                     " to rank " + std::to_string(tr.dst.rank));
      l = *best;
    }
    alpha[t] = topo.links[l].alphaUs;
    cap[t] = topo.links[l].bandwidthGBps * 1e3;
    linkOf[t] = used.slot(topo, l);
    cons[t] = used.resources(linkOf[t]);
  }
  Dependencies deps = taskDependencies(list);
  if (pastDeadline())
    return Error("list scheduling stopped at its time limit");
  pending.assign(numTasks, 0);
  succStart.assign(numTasks + 1, 0);
  for (int t = 0; t < numTasks; ++t) {
    pending[t] = (int)deps.of(t).size();
    for (int d : deps.of(t))
      ++succStart[d + 1];
  }
  for (int t = 0; t < numTasks; ++t)
    succStart[t + 1] += succStart[t];
  succ.assign(deps.preds.size(), 0);
  {
    std::vector<size_t> fill(succStart.begin(), succStart.end() - 1);
    for (int t = 0; t < numTasks; ++t)
      for (int d : deps.of(t))
        succ[fill[d]++] = t;
  }
  deps = {};
  linkReady.assign(used.size(), {});
  linkBusy.assign(used.size(), 0);
  remaining.assign(numTasks, 0);
  rate.assign(numTasks, 0);
  lastUpdate.assign(numTasks, 0);
  version.assign(numTasks, 0);
  streaming.assign(numTasks, 0);
  flowsOn.assign(ncons, {});
  posStart.assign(numTasks + 1, 0);
  for (int t = 0; t < numTasks; ++t)
    posStart[t + 1] = posStart[t] + cons[t].size();
  posOn.assign(posStart.back(), 0);
  fairShare.reset(ncons, numTasks);
  out.ready.assign(numTasks, 0);
  out.start.assign(numTasks, 0);
  out.end.assign(numTasks, 0);

  for (int t = 0; t < numTasks; ++t)
    if (pending[t] == 0)
      makeReady(t);
  int finished = 0;
  std::vector<int> streams, done;
  for (long long step = 0;; ++step) {
    if ((step & 255) == 0 && pastDeadline())
      return Error("list scheduling stopped at its time limit");
    recomputeRates();
    // Skip stale completion events.
    while (!events.empty() && events.top().version != 0 &&
           (!streaming[events.top().task] ||
            events.top().version != version[events.top().task]))
      events.pop();
    if (events.empty())
      break;
    now = events.top().time;
    double horizon = now + 1e-9 + std::abs(now) * 1e-12;
    streams.clear();
    done.clear();
    while (!events.empty() && events.top().time <= horizon) {
      Event e = events.top();
      events.pop();
      if (e.version == 0)
        streams.push_back(e.task);
      else if (streaming[e.task] && e.version == version[e.task])
        done.push_back(e.task);
    }
    std::sort(done.begin(), done.end());
    for (int t : streams)
      beginStream(t);
    for (int t : done) {
      advance(t);
      finish(t);
      ++finished;
    }
  }
  if (finished != numTasks)
    return Error("internal: the list scheduler stalled with " +
                 std::to_string(numTasks - finished) +
                 " transfers waiting (cyclic dependencies)");
  for (int t = 0; t < numTasks; ++t)
    out.makespan = std::max(out.makespan, out.end[t]);
  return std::move(out);
}

} // namespace

Expected<TimedTasks> listSchedule(const TaskList &list, const Topology &topo,
                                  const ListScheduleOptions &options) {
  Dispatcher d(list, topo, options);
  return d.run();
}

void prioritizeCriticalPath(TaskList &list, const Topology &topo,
                            const ListScheduleOptions &options) {
  double chunk = chunkBytesOf(*list.collective, options.bytes);
  Dependencies deps = taskDependencies(list);
  int nt = (int)list.tasks.size();
  std::vector<double> bottom(nt, 0), after(nt, 0);
  // The reference order is topological: walk it backwards, each task
  // passing its bottom level to its predecessors.
  for (int t = nt - 1; t >= 0; --t) {
    const Transfer &tr = list.tasks[t].tr;
    double bytes = chunk * tr.count, dur;
    if (tr.src.rank == tr.dst.rank || tr.link < 0) {
      dur = bytes / (options.localCopyGBps * 1e3);
    } else {
      const Link &l = topo.links[tr.link];
      dur = l.alphaUs + bytes / (topo.effectiveBandwidth(tr.link) * 1e3);
    }
    bottom[t] = dur + after[t];
    for (int d : deps.of(t))
      after[d] = std::max(after[d], bottom[t]);
    list.tasks[t].prio = -bottom[t];
  }
}

Schedule toSchedule(const TaskList &list, const TimedTasks &timed) {
  int nt = (int)list.tasks.size();
  Dependencies deps = taskDependencies(list);
  std::vector<int> order(nt);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return timed.start[a] != timed.start[b] ? timed.start[a] < timed.start[b]
                                            : a < b;
  });
  std::vector<int> step(nt, 0);
  std::vector<int> lastOnLink(1, -1);
  for (int t : order) {
    int s = 0;
    for (int d : deps.of(t))
      s = std::max(s, step[d] + 1);
    int l = list.tasks[t].tr.link;
    if (list.tasks[t].tr.src.rank != list.tasks[t].tr.dst.rank && l >= 0) {
      if (l >= (int)lastOnLink.size())
        lastOnLink.resize(l + 1, -1);
      if (lastOnLink[l] >= 0)
        s = std::max(s, step[lastOnLink[l]]);
      lastOnLink[l] = t;
    }
    step[t] = s;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return step[a] < step[b]; });
  deps = {};
  Schedule sched;
  sched.collective = *list.collective;
  sched.scratchChunks = list.scratchChunks;
  sched.origin = "synth";
  sched.transfers.reserve(nt);
  for (int t : order) {
    Transfer tr = list.tasks[t].tr;
    tr.step = step[t];
    if (tr.src.rank == tr.dst.rank)
      tr.link = -1;
    sched.transfers.push_back(tr);
  }
  return sched;
}

TaskList mergeContiguous(const TaskList &list, const TimedTasks &timed,
                         const Topology &topo, double bytes,
                         double maxDelayRatio) {
  int nt = (int)list.tasks.size();
  double chunk = chunkBytesOf(*list.collective, bytes);
  // The tasks on links, grouped by link and in start order within one (a
  // list per link would be 16.7M lists on 4,096 ranks).
  std::vector<int> onLinks;
  for (int t = 0; t < nt; ++t) {
    const Transfer &tr = list.tasks[t].tr;
    if (tr.src.rank != tr.dst.rank && tr.link >= 0)
      onLinks.push_back(t);
  }
  std::sort(onLinks.begin(), onLinks.end(), [&](int a, int b) {
    int la = list.tasks[a].tr.link, lb = list.tasks[b].tr.link;
    if (la != lb)
      return la < lb;
    return timed.start[a] != timed.start[b] ? timed.start[a] < timed.start[b]
                                            : a < b;
  });
  // head[t] = head of t's run; count[head] accumulates the run's count.
  std::vector<int> head(nt), count(nt);
  std::iota(head.begin(), head.end(), 0);
  for (int t = 0; t < nt; ++t)
    count[t] = list.tasks[t].tr.count;
  bool any = false;
  for (size_t first = 0; first < onLinks.size();) {
    int l = list.tasks[onLinks[first]].tr.link;
    size_t last = first;
    while (last < onLinks.size() && list.tasks[onLinks[last]].tr.link == l)
      ++last;
    std::span<const int> ts(onLinks.data() + first, last - first);
    first = last;
    const Link &link = topo.links[l];
    double perChunkUs = chunk / (link.bandwidthGBps * 1e3);
    int run = -1;
    for (int t : ts) {
      if (run >= 0) {
        const Transfer &a = list.tasks[run].tr;
        const Transfer &b = list.tasks[t].tr;
        bool contiguous = a.op == b.op && a.src.buffer == b.src.buffer &&
                          a.dst.buffer == b.dst.buffer &&
                          b.src.index == a.src.index + count[run] &&
                          b.dst.index == a.dst.index + count[run];
        bool readyInTime = timed.ready[t] <= timed.start[run] + 1e-9;
        bool cheap = perChunkUs * b.count <= maxDelayRatio * link.alphaUs;
        if (contiguous && readyInTime && cheap) {
          count[run] += b.count;
          head[t] = run;
          any = true;
          continue;
        }
      }
      run = t;
    }
  }
  if (!any)
    return list;
  std::vector<int> order;
  for (int t = 0; t < nt; ++t)
    if (head[t] == t)
      order.push_back(t);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return timed.start[a] != timed.start[b] ? timed.start[a] < timed.start[b]
                                            : a < b;
  });
  TaskList out;
  out.collective = list.collective;
  out.scratchChunks = list.scratchChunks;
  out.tasks.reserve(order.size());
  for (int t : order) {
    out.tasks.push_back(list.tasks[t]);
    out.tasks.back().tr.count = count[t];
  }
  return out;
}

} // namespace ccsynth::synth
