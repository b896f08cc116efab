//===- ListScheduler.cpp - Ordering, timing and steps of a task list ------===//
#include "ccsynth/Synth/ListScheduler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

namespace ccsynth::synth {

namespace {

/// Flat ids of canonical slots.
class SlotIndex {
public:
  SlotIndex(const Collective &c, int scratch) : col(c) {
    int n = c.numRanks;
    base.assign(n * 3 + 1, 0);
    for (int r = 0; r < n; ++r)
      for (int b = 0; b < 3; ++b)
        base[r * 3 + b + 1] =
            base[r * 3 + b] +
            (b == 2 ? scratch : c.bufferChunks((BufferKind)b));
  }
  size_t size() const { return base.back(); }
  size_t operator()(ChunkLoc loc) const {
    ChunkLoc c = col.canonical(loc);
    return base[c.rank * 3 + (int)c.buffer] + c.index;
  }

private:
  const Collective &col;
  std::vector<size_t> base;
};

double chunkBytesOf(const Collective &c, double bytes) {
  return std::ceil(bytes / c.sizeDivisor());
}

} // namespace

std::vector<std::vector<int>> taskDependencies(const TaskList &list) {
  SlotIndex slot(list.collective, list.scratchChunks);
  std::vector<int> lastWriter(slot.size(), -1);
  std::vector<std::vector<int>> readers(slot.size());
  std::vector<std::vector<int>> deps(list.tasks.size());
  for (size_t t = 0; t < list.tasks.size(); ++t) {
    const Transfer &tr = list.tasks[t].tr;
    std::vector<int> &mine = deps[t];
    for (int k = 0; k < tr.count; ++k) {
      size_t s = slot({tr.src.rank, tr.src.buffer, tr.src.index + k});
      if (lastWriter[s] >= 0)
        mine.push_back(lastWriter[s]);
    }
    for (int k = 0; k < tr.count; ++k) {
      size_t d = slot({tr.dst.rank, tr.dst.buffer, tr.dst.index + k});
      if (lastWriter[d] >= 0)
        mine.push_back(lastWriter[d]);
      for (int r : readers[d])
        mine.push_back(r);
    }
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    mine.erase(std::remove(mine.begin(), mine.end(), (int)t), mine.end());
    for (int k = 0; k < tr.count; ++k)
      readers[slot({tr.src.rank, tr.src.buffer, tr.src.index + k})].push_back(
          (int)t);
    for (int k = 0; k < tr.count; ++k) {
      size_t d = slot({tr.dst.rank, tr.dst.buffer, tr.dst.index + k});
      lastWriter[d] = (int)t;
      readers[d].clear();
    }
  }
  return deps;
}

namespace {

/// The event-driven replay with dynamic dispatch.
class Dispatcher {
public:
  Dispatcher(const TaskList &l, const Topology &t,
             const ListScheduleOptions &o)
      : list(l), topo(t), opts(o) {}

  Expected<TimedTasks> run();

private:
  const TaskList &list;
  const Topology &topo;
  const ListScheduleOptions &opts;

  int numTasks = 0;
  std::vector<int> linkOf;
  std::vector<double> bytes, alpha, cap;
  std::vector<std::vector<int>> cons; ///< constraints per task
  std::vector<double> consCap;
  std::vector<std::vector<int>> succ;
  std::vector<int> pending;

  struct ReadyItem {
    double prio;
    int task;
    bool operator>(const ReadyItem &o) const {
      return prio != o.prio ? prio > o.prio : task > o.task;
    }
  };
  std::vector<std::priority_queue<ReadyItem, std::vector<ReadyItem>,
                                  std::greater<>>>
      linkReady;
  std::vector<char> linkBusy;

  using Timed = std::pair<double, int>;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> latency;
  std::vector<int> active;
  std::vector<double> remaining, rate;
  bool dirty = false;
  double now = 0;
  TimedTasks out;

  // Rate computation scratch.
  std::vector<std::vector<int>> flowsOn;
  std::vector<double> remCap;
  std::vector<int> unfrozen;
  std::vector<char> frozen;

  void makeReady(int t);
  void dispatch(int link);
  void start(int t);
  void beginStream(int t);
  void finish(int t);
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
    latency.push({now + alpha[t], t});
  else
    beginStream(t);
}

void Dispatcher::beginStream(int t) {
  remaining[t] = bytes[t];
  active.push_back(t);
  dirty = true;
}

void Dispatcher::finish(int t) {
  out.end[t] = now;
  if (linkOf[t] >= 0) {
    linkBusy[linkOf[t]] = 0;
    dispatch(linkOf[t]);
  }
  for (int s : succ[t])
    if (--pending[s] == 0)
      makeReady(s);
}

void Dispatcher::recomputeRates() {
  dirty = false;
  std::vector<int> touched;
  for (int f : active)
    for (int c : cons[f]) {
      if (flowsOn[c].empty())
        touched.push_back(c);
      flowsOn[c].push_back(f);
    }
  struct Level {
    double level;
    int id;
    bool operator>(const Level &o) const {
      return level != o.level ? level > o.level : id > o.id;
    }
  };
  std::priority_queue<Level, std::vector<Level>, std::greater<>> heap;
  for (int c : touched) {
    remCap[c] = consCap[c];
    unfrozen[c] = (int)flowsOn[c].size();
    heap.push({remCap[c] / unfrozen[c], c});
  }
  for (int f : active) {
    frozen[f] = 0;
    heap.push({cap[f], ~f});
  }
  auto freeze = [&](int f, double level) {
    frozen[f] = 1;
    rate[f] = level;
    for (int c : cons[f]) {
      remCap[c] = std::max(0.0, remCap[c] - level);
      if (--unfrozen[c] > 0)
        heap.push({remCap[c] / unfrozen[c], c});
    }
  };
  while (!heap.empty()) {
    Level top = heap.top();
    heap.pop();
    if (top.id < 0) {
      if (!frozen[~top.id])
        freeze(~top.id, top.level);
      continue;
    }
    int c = top.id;
    if (unfrozen[c] <= 0)
      continue;
    double share = remCap[c] / unfrozen[c];
    if (share > top.level * (1 + 1e-12))
      continue;
    for (int f : flowsOn[c])
      if (!frozen[f])
        freeze(f, share);
  }
  for (int c : touched)
    flowsOn[c].clear();
}

Expected<TimedTasks> Dispatcher::run() {
  numTasks = (int)list.tasks.size();
  double chunk = chunkBytesOf(list.collective, opts.bytes);
  int nres = (int)topo.resources.size();
  int n = topo.numRanks();
  consCap.assign(nres + n, 0);
  for (int x = 0; x < nres; ++x)
    consCap[x] = topo.resources[x].bandwidthGBps * 1e3;
  for (int r = 0; r < n; ++r)
    consCap[nres + r] = opts.localCopyGBps * 1e3;
  linkOf.assign(numTasks, -1);
  bytes.assign(numTasks, 0);
  alpha.assign(numTasks, 0);
  cap.assign(numTasks, 0);
  cons.assign(numTasks, {});
  for (int t = 0; t < numTasks; ++t) {
    const Transfer &tr = list.tasks[t].tr;
    bytes[t] = chunk * tr.count;
    if (tr.src.rank == tr.dst.rank) {
      cap[t] = opts.localCopyGBps * 1e3;
      cons[t] = {nres + tr.src.rank};
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
    linkOf[t] = l;
    alpha[t] = topo.links[l].alphaUs;
    cap[t] = topo.links[l].bandwidthGBps * 1e3;
    cons[t] = topo.links[l].resources;
    std::sort(cons[t].begin(), cons[t].end());
    cons[t].erase(std::unique(cons[t].begin(), cons[t].end()), cons[t].end());
  }
  auto deps = taskDependencies(list);
  succ.assign(numTasks, {});
  pending.assign(numTasks, 0);
  for (int t = 0; t < numTasks; ++t) {
    pending[t] = (int)deps[t].size();
    for (int d : deps[t])
      succ[d].push_back(t);
  }
  linkReady.assign(topo.links.size(), {});
  linkBusy.assign(topo.links.size(), 0);
  remaining.assign(numTasks, 0);
  rate.assign(numTasks, 0);
  flowsOn.assign(nres + n, {});
  remCap.assign(nres + n, 0);
  unfrozen.assign(nres + n, 0);
  frozen.assign(numTasks, 0);
  out.ready.assign(numTasks, 0);
  out.start.assign(numTasks, 0);
  out.end.assign(numTasks, 0);

  for (int t = 0; t < numTasks; ++t)
    if (pending[t] == 0)
      makeReady(t);
  int finished = 0;
  while (true) {
    if (dirty)
      recomputeRates();
    double next = latency.empty() ? INFINITY : latency.top().first;
    for (int f : active)
      next = std::min(next, now + remaining[f] / rate[f]);
    if (!std::isfinite(next))
      break;
    double dt = next - now;
    now = next;
    double horizon = now + 1e-9 + std::abs(now) * 1e-12;
    std::vector<int> done;
    for (size_t i = 0; i < active.size();) {
      int f = active[i];
      remaining[f] -= rate[f] * dt;
      if (now + remaining[f] / rate[f] <= horizon) {
        done.push_back(f);
        active[i] = active.back();
        active.pop_back();
        dirty = true;
      } else {
        ++i;
      }
    }
    std::vector<int> streams;
    while (!latency.empty() && latency.top().first <= horizon) {
      streams.push_back(latency.top().second);
      latency.pop();
    }
    std::sort(done.begin(), done.end());
    for (int t : streams)
      beginStream(t);
    for (int t : done) {
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
  double chunk = chunkBytesOf(list.collective, options.bytes);
  auto deps = taskDependencies(list);
  int nt = (int)list.tasks.size();
  std::vector<double> bottom(nt, 0);
  std::vector<std::vector<int>> succ(nt);
  for (int t = 0; t < nt; ++t)
    for (int d : deps[t])
      succ[d].push_back(t);
  // The reference order is topological: walk it backwards.
  for (int t = nt - 1; t >= 0; --t) {
    const Transfer &tr = list.tasks[t].tr;
    double bytes = chunk * tr.count, dur;
    if (tr.src.rank == tr.dst.rank || tr.link < 0) {
      dur = bytes / (options.localCopyGBps * 1e3);
    } else {
      const Link &l = topo.links[tr.link];
      dur = l.alphaUs + bytes / (topo.effectiveBandwidth(tr.link) * 1e3);
    }
    double after = 0;
    for (int s : succ[t])
      after = std::max(after, bottom[s]);
    bottom[t] = dur + after;
    list.tasks[t].prio = -bottom[t];
  }
}

Schedule toSchedule(const TaskList &list, const TimedTasks &timed) {
  int nt = (int)list.tasks.size();
  auto deps = taskDependencies(list);
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
    for (int d : deps[t])
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
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return step[a] < step[b];
  });
  Schedule sched;
  sched.collective = list.collective;
  sched.scratchChunks = list.scratchChunks;
  sched.origin = "synth";
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
  double chunk = chunkBytesOf(list.collective, bytes);
  std::vector<std::vector<int>> onLink(topo.links.size());
  for (int t = 0; t < nt; ++t) {
    const Transfer &tr = list.tasks[t].tr;
    if (tr.src.rank != tr.dst.rank && tr.link >= 0)
      onLink[tr.link].push_back(t);
  }
  // mergedInto[t] = head of t's run; head accumulates the count.
  std::vector<int> head(nt);
  std::iota(head.begin(), head.end(), 0);
  std::vector<Task> merged(list.tasks);
  bool any = false;
  for (size_t l = 0; l < onLink.size(); ++l) {
    auto &ts = onLink[l];
    std::sort(ts.begin(), ts.end(), [&](int a, int b) {
      return timed.start[a] != timed.start[b] ? timed.start[a] < timed.start[b]
                                              : a < b;
    });
    const Link &link = topo.links[l];
    double perChunkUs = chunk / (link.bandwidthGBps * 1e3);
    int run = -1;
    for (int t : ts) {
      if (run >= 0) {
        const Transfer &a = merged[run].tr;
        const Transfer &b = list.tasks[t].tr;
        bool contiguous =
            a.op == b.op && a.src.buffer == b.src.buffer &&
            a.dst.buffer == b.dst.buffer &&
            b.src.index == a.src.index + a.count &&
            b.dst.index == a.dst.index + a.count;
        bool readyInTime = timed.ready[t] <= timed.start[run] + 1e-9;
        bool cheap = perChunkUs * b.count <= maxDelayRatio * link.alphaUs;
        if (contiguous && readyInTime && cheap) {
          merged[run].tr.count += b.count;
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
  for (int t : order)
    out.tasks.push_back(merged[t]);
  return out;
}

} // namespace ccsynth::synth
