//===- MSCCLToSchedule.cpp - Symbolic execution of MSCCL programs ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements MSCCLToSchedule.h. inferMscclCollective reads the collective
// from an algorithm's attributes. The Executor runs the program: it matches
// sends to receives, copies a sent range to scratch when the sender
// overwrites it before the receive, checks for races between threadblocks
// (checkRaces, on the wait graph) and gives each transfer the earliest step
// its data and its connection's order allow (assignSteps). mscclToSchedule
// and importMscclXml are the entry points.
// See docs/compiler.md ("Importing MSCCL XML").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Import/MSCCLToSchedule.h"

#include "ccsynth/Target/MSCCLXml.h"

#include <algorithm>
#include <map>

namespace ccsynth {

using namespace msccl;

Expected<Collective> inferMscclCollective(const Algo &algo, int root) {
  auto kind = parseCollectiveKind(algo.coll);
  if (!kind || *kind == CollectiveKind::Custom)
    return Error("MSCCL collective '" + algo.coll +
                     "' has no built-in ccsynth equivalent",
                 algo.loc);
  const Gpu *g = algo.gpu(0);
  if (!g || algo.ngpus < 1)
    return Error("the algorithm has no gpu 0", algo.loc);
  int n = algo.ngpus, c = 0;
  if (auto cap = bufferCapacity(algo.coll, n, algo.nchunksperloop)) {
    // A loop is P = nchunksperloop chunks of count x sizeMultiplier
    // elements: allgather's input, reducescatter's output and alltoall's
    // per-peer block are P / ngpus of them, the other calls' buffers P.
    int p = algo.nchunksperloop;
    bool perRank = *kind == CollectiveKind::AllGather ||
                   *kind == CollectiveKind::ReduceScatter ||
                   *kind == CollectiveKind::AllToAll;
    if (p >= 1 && (!perRank || p % n == 0))
      c = perRank ? p / n : p;
  }
  if (c >= 1)
    return Collective::builtin(*kind, n, c, algo.inplace == 1, root);
  switch (*kind) {
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::Scatter:
    c = g->oChunks;
    break;
  case CollectiveKind::AllToAll:
    c = g->iChunks / n;
    break;
  default:
    c = g->iChunks;
    break;
  }
  if (c < 1)
    return Error("cannot infer the chunk factor from gpu 0's buffer sizes",
                 g->loc);
  return Collective::builtin(*kind, n, c, algo.inplace == 1, root);
}

namespace {

/// A chunk range at one rank.
struct Range {
  ChunkLoc base;
  int count = 1;
};

class Executor {
public:
  Executor(const Algo &algo, const Collective &col) : algo(algo), col(col) {}
  Expected<Schedule> run();

private:
  const Algo &algo;
  const Collective &col;
  Schedule sched;
  std::vector<int> nextScratch; // per rank
  /// Data in flight: the range each matched message carries, until its
  /// receive runs.
  struct InFlight {
    Range src;
    /// Index in inFlight[src rank] while sent and not yet received.
    int slot = -1;
  };
  std::vector<InFlight> flights;
  /// Per rank, the messages sent from it whose receive has not run.
  std::vector<std::vector<int>> inFlight;
  void launch(int msg, const Range &src) {
    InFlight &f = flights[msg];
    f.src = src;
    std::vector<int> &list = inFlight[src.base.rank];
    f.slot = (int)list.size();
    list.push_back(msg);
  }
  Range land(int msg) {
    InFlight &f = flights[msg];
    if (f.slot >= 0) {
      std::vector<int> &list = inFlight[f.src.base.rank];
      flights[list.back()].slot = f.slot;
      list[f.slot] = list.back();
      list.pop_back();
      f.slot = -1;
    }
    return f.src;
  }
  /// The XML step being executed; transfers are located there, with its
  /// threadblock's channel as hint.
  SourceLoc currentLoc;
  int currentChannel = -1;

  const Threadblock &tbOf(StepRef r) const {
    const Gpu *g = algo.gpu(r.rank);
    for (const Threadblock &tb : g->tbs)
      if (tb.id == r.tb)
        return tb;
    return g->tbs.front();
  }
  bool overlaps(const Range &a, const Range &b) const {
    if (a.base.rank != b.base.rank)
      return false;
    for (int i = 0; i < a.count; ++i)
      for (int j = 0; j < b.count; ++j) {
        ChunkLoc x = a.base, y = b.base;
        x.index += i;
        y.index += j;
        if (col.canonical(x) == col.canonical(y))
          return true;
      }
    return false;
  }
  Range freshScratch(int rank, int count) {
    Range r{{rank, BufferKind::Scratch, nextScratch[rank]}, count};
    nextScratch[rank] += count;
    sched.scratchChunks = std::max(sched.scratchChunks, nextScratch[rank]);
    return r;
  }
  void emit(const Range &src, const Range &dst, TransferOp op) {
    // Messages still carrying data from `dst` keep the old value.
    for (int m : inFlight[dst.base.rank]) {
      InFlight &f = flights[m];
      if (overlaps(f.src, dst)) {
        Range tmp = freshScratch(f.src.base.rank, f.src.count);
        push(f.src, tmp, TransferOp::Copy);
        f.src = tmp;
      }
    }
    push(src, dst, op);
  }
  void push(const Range &src, const Range &dst, TransferOp op) {
    Transfer t;
    t.src = src.base;
    t.dst = dst.base;
    t.count = src.count;
    t.op = op;
    if (t.src.rank != t.dst.rank)
      t.channel = currentChannel;
    sched.transfers.push_back(t);
    sched.transferLocs.push_back(currentLoc);
  }
  std::optional<Error> checkRaces(const WaitGraph &graph,
                                  const std::vector<int> &order);
  void assignSteps();
};

// Transfers were emitted in an order the program allows; each gets the
// earliest step its data allows: after the last write of every slot it
// reads or writes and after the last read of every slot it writes (the
// verifier's same-step rules), and not before the previous message of its
// connection (channel, sender, receiver), which the runtime delivers in
// order. Like a native schedule's rounds, this lets transfers that the
// program runs side by side share a step, and each link serves its
// messages in the order their threadblocks send them.
void Executor::assignSteps() {
  std::map<ChunkLoc, int> lastWrite, lastRead;
  auto after = [](const std::map<ChunkLoc, int> &m, const ChunkLoc &c) {
    auto it = m.find(c);
    return it == m.end() ? 0 : it->second + 1;
  };
  std::map<std::tuple<int, int, int>, int> lastOnConn;
  for (Transfer &t : sched.transfers) {
    int step = 0;
    std::tuple<int, int, int> conn{t.channel, t.src.rank, t.dst.rank};
    if (t.src.rank != t.dst.rank)
      if (auto it = lastOnConn.find(conn); it != lastOnConn.end())
        step = it->second;
    for (int i = 0; i < t.count; ++i) {
      ChunkLoc s = t.src, d = t.dst;
      s.index += i;
      d.index += i;
      s = col.canonical(s);
      d = col.canonical(d);
      step = std::max(
          {step, after(lastWrite, s), after(lastWrite, d), after(lastRead, d)});
    }
    t.step = step;
    if (t.src.rank != t.dst.rank)
      lastOnConn[conn] = step;
    for (int i = 0; i < t.count; ++i) {
      ChunkLoc s = t.src, d = t.dst;
      s.index += i;
      d.index += i;
      int &r = lastRead[col.canonical(s)];
      r = std::max(r, step);
      lastWrite[col.canonical(d)] = step;
      if (t.op == TransferOp::Reduce) {
        int &rd = lastRead[col.canonical(d)];
        rd = std::max(rd, step);
      }
    }
  }
}

std::optional<Error> Executor::checkRaces(const WaitGraph &graph,
                                          const std::vector<int> &order) {
  // Races are between threadblocks of one rank. Happens-before is a vector
  // clock per step: clock[v][t] is the last step of threadblock t of the
  // rank that happens before (or is) step v. It is first computed from the
  // rank's own edges (program order and dependencies), over the rank's
  // steps only, which orders nearly every pair a lowering emits; only a
  // rank with a pair left unordered gets the clocks propagated through the
  // whole graph (messages may carry the ordering through other ranks).
  // So the usual cost is linear in the program, not ranks x program.
  size_t n = graph.nodes.size();
  std::map<int, std::vector<int>> rankOrder; // rank -> its nodes, in order
  for (int v : order)
    rankOrder[graph.nodes[v].rank].push_back(v);
  std::vector<int> pos(n, -1), slotOf(n, -1);
  for (const Gpu &gpu : algo.gpus) {
    std::map<int, int> local; // tb id -> clock index
    for (const Threadblock &tb : gpu.tbs)
      local.emplace(tb.id, (int)local.size());
    size_t width = local.size();
    if (width < 2)
      continue;
    const std::vector<int> &mine = rankOrder[gpu.id];
    for (size_t i = 0; i < mine.size(); ++i) {
      pos[mine[i]] = (int)i;
      slotOf[mine[i]] = local[graph.nodes[mine[i]].tb];
    }
    // Clocks from the rank's own edges, indexed by position in `mine`.
    std::vector<int> own(mine.size() * width, -1);
    for (size_t i = 0; i < mine.size(); ++i) {
      int v = mine[i];
      int *c = &own[i * width];
      for (const WaitGraph::Pred &p : graph.preds[v]) {
        if (graph.nodes[p.node].rank != gpu.id)
          continue;
        const int *pc = &own[(size_t)pos[p.node] * width];
        for (size_t t = 0; t < width; ++t)
          c[t] = std::max(c[t], pc[t]);
      }
      c[slotOf[v]] = graph.nodes[v].step;
    }
    // The whole graph's clocks, only when the rank's own edges leave a
    // conflicting pair unordered.
    std::vector<int> all;
    auto propagateAll = [&] {
      all.assign(n * width, -1);
      for (int v : order) {
        int *c = &all[(size_t)v * width];
        for (const WaitGraph::Pred &p : graph.preds[v]) {
          const int *pc = &all[(size_t)p.node * width];
          for (size_t t = 0; t < width; ++t)
            c[t] = std::max(c[t], pc[t]);
        }
        if (graph.nodes[v].rank == gpu.id)
          c[slotOf[v]] = graph.nodes[v].step;
      }
    };
    auto before = [&](int a, int b) {
      int step = graph.nodes[a].step;
      if (own[(size_t)pos[b] * width + slotOf[a]] >= step)
        return true;
      if (all.empty())
        propagateAll();
      return all[(size_t)b * width + slotOf[a]] >= step;
    };
    // Accesses of this rank per canonical chunk.
    struct Access {
      int node;
      bool write;
    };
    std::map<ChunkLoc, std::vector<Access>> accesses;
    // In node order, so that the race reported is the same whatever the
    // topological order.
    std::vector<int> byNode = mine;
    std::sort(byNode.begin(), byNode.end());
    for (int v : byNode) {
      StepRef r = graph.nodes[v];
      const Step &st = tbOf(r).steps[r.step];
      if (st.type == StepType::Nop)
        continue;
      auto touch = [&](BufferKind b, int off, bool write) {
        for (int i = 0; i < st.cnt; ++i)
          accesses[col.canonical({r.rank, b, off + i})].push_back({v, write});
      };
      if (readsSrc(st.type))
        touch(st.srcBuf, st.srcOff, false);
      if (writesDst(st.type))
        touch(st.dstBuf, st.dstOff, true);
    }
    for (const auto &[slot, list] : accesses)
      for (size_t i = 0; i < list.size(); ++i)
        for (size_t j = i + 1; j < list.size(); ++j) {
          const Access &a = list[i], &b = list[j];
          if (!a.write && !b.write)
            continue;
          if (slotOf[a.node] == slotOf[b.node])
            continue;
          if (before(a.node, b.node) || before(b.node, a.node))
            continue;
          StepRef ra = graph.nodes[a.node], rb = graph.nodes[b.node];
          return Error("data race on " + toString(slot) + ": " +
                           describeStep(algo, ra) + " and " +
                           describeStep(algo, rb) +
                           " touch it, at least one writing, and no "
                           "dependency orders them",
                       tbOf(ra).steps[ra.step].loc);
        }
  }
  return std::nullopt;
}

Expected<Schedule> Executor::run() {
  if (algo.ngpus != col.numRanks)
    return Error("the algorithm has " + std::to_string(algo.ngpus) +
                     " gpus but " + col.describe() + " has " +
                     std::to_string(col.numRanks) + " ranks",
                 algo.loc);
  // The runtime sizes the buffers from the call; i_chunks and o_chunks
  // only bound the offsets steps may use. msccl-tools writes the extent
  // the steps use, so an in-place algorithm declares its aliased buffer
  // with 0 chunks. More than the collective has cannot be.
  for (const Gpu &g : algo.gpus)
    if (g.iChunks > col.inputChunks || g.oChunks > col.outputChunks)
      return Error("gpu " + std::to_string(g.id) + " has " +
                       std::to_string(g.iChunks) + " input and " +
                       std::to_string(g.oChunks) + " output chunks but " +
                       col.describe() + " has only " +
                       std::to_string(col.inputChunks) + " and " +
                       std::to_string(col.outputChunks),
                   g.loc);
  std::vector<ProgramIssue> issues = validateAlgo(algo);
  if (!issues.empty())
    return Error(issues.front().message, issues.front().loc);
  Matching matching = matchMessages(algo);
  WaitGraph graph = buildWaitGraph(algo, matching);
  auto order = topologicalOrder(graph);
  if (!order) {
    auto dl = checkDeadlock(algo, matching);
    return Error(dl.empty() ? "deadlock" : dl.front().message,
                 dl.empty() ? algo.loc : dl.front().loc);
  }
  if (auto race = checkRaces(graph, *order))
    return *race;

  sched.name = algo.name;
  sched.origin = "msccl-xml";
  sched.collective = col;
  sched.protocol = algo.proto;
  int baseScratch = 0;
  for (const Gpu &g : algo.gpus)
    baseScratch = std::max(baseScratch, g.sChunks);
  sched.scratchChunks = baseScratch;
  nextScratch.assign(algo.ngpus, baseScratch);

  // Message index of every sending and receiving step.
  std::map<std::tuple<int, int, int>, int> sendMsg, recvMsg;
  for (size_t i = 0; i < matching.messages.size(); ++i) {
    const Message &m = matching.messages[i];
    sendMsg[{m.send.rank, m.send.tb, m.send.step}] = (int)i;
    recvMsg[{m.recv.rank, m.recv.tb, m.recv.step}] = (int)i;
  }
  flights.assign(matching.messages.size(), {});
  inFlight.assign(algo.ngpus, {});

  // Every access of each (canonical) slot, in execution order: an rrs
  // keeps its partial sum in its local operand when nothing reads that
  // before it is written again (and it is not an output the collective
  // constrains), as ccl-fuse-steps assumed when it made the rrs.
  struct Access {
    int pos;
    bool read;
  };
  std::map<ChunkLoc, std::vector<Access>> accesses;
  for (int pos = 0; pos < (int)order->size(); ++pos) {
    StepRef r = graph.nodes[(*order)[pos]];
    const Step &st = tbOf(r).steps[r.step];
    if (st.type == StepType::Nop)
      continue;
    std::map<ChunkLoc, bool> touched; // slot -> read
    for (int i = 0; i < st.cnt; ++i) {
      if (writesDst(st.type))
        touched.try_emplace(col.canonical({r.rank, st.dstBuf, st.dstOff + i}),
                            false);
      if (readsSrc(st.type))
        touched[col.canonical({r.rank, st.srcBuf, st.srcOff + i})] = true;
      if (readsDst(st.type))
        touched[col.canonical({r.rank, st.dstBuf, st.dstOff + i})] = true;
    }
    for (auto [slot, read] : touched)
      accesses[slot].push_back({pos, read});
  }
  auto deadAfter = [&](int pos, const Range &range) {
    for (int i = 0; i < range.count; ++i) {
      ChunkLoc c = range.base;
      c.index += i;
      c = col.canonical(c);
      const std::vector<Access> &list = accesses[c];
      auto next =
          std::upper_bound(list.begin(), list.end(), pos,
                           [](int p, const Access &a) { return p < a.pos; });
      if (next != list.end()) {
        if (next->read)
          return false;
        continue; // overwritten first
      }
      if (c.buffer == BufferKind::Output ||
          (col.inPlace && c.buffer == BufferKind::Input)) {
        for (int o = 0; o < col.outputChunks; ++o)
          if (col.canonical({c.rank, BufferKind::Output, o}) == c &&
              col.postAt(c.rank, o).constrained())
            return false;
      }
    }
    return true;
  };

  for (int pos = 0; pos < (int)order->size(); ++pos) {
    int v = (*order)[pos];
    StepRef r = graph.nodes[v];
    const Step &st = tbOf(r).steps[r.step];
    currentLoc = st.loc;
    currentChannel = tbOf(r).chan;
    Range src{{r.rank, st.srcBuf, st.srcOff}, st.cnt};
    Range dst{{r.rank, st.dstBuf, st.dstOff}, st.cnt};
    int in = -1, out = -1;
    if (receives(st.type))
      in = recvMsg.at({r.rank, r.tb, r.step});
    if (sends(st.type))
      out = sendMsg.at({r.rank, r.tb, r.step});
    auto received = [&]() { return land(in); };
    auto reduceInto = [&](const Range &target) {
      // target = received + src
      Range data = received();
      if (!(target.base == src.base)) {
        if (overlaps(target, src))
          return false;
        // The message lands in the target and the local operand is added
        // there: the shape ccl-fuse-steps joins back into one rrc.
        emit(data, target, TransferOp::Copy);
        emit(src, target, TransferOp::Reduce);
        return true;
      }
      emit(data, target, TransferOp::Reduce);
      return true;
    };
    switch (st.type) {
    case StepType::Nop:
      break;
    case StepType::Send:
      launch(out, src);
      break;
    case StepType::Recv:
      emit(received(), dst, TransferOp::Copy);
      break;
    case StepType::RecvCopySend:
      emit(received(), dst, TransferOp::Copy);
      launch(out, dst);
      break;
    case StepType::RecvReduceCopy:
      if (src.base == dst.base) {
        Range data = received();
        Range buf = freshScratch(r.rank, st.cnt);
        emit(data, buf, TransferOp::Copy);
        emit(buf, dst, TransferOp::Reduce);
        break;
      }
      [[fallthrough]];
    case StepType::RecvReduceCopySend:
      if (!reduceInto(dst))
        return Error(describeStep(algo, r) +
                         ": source and destination overlap partially",
                     st.loc);
      if (out >= 0)
        launch(out, dst);
      break;
    case StepType::RecvReduceSend: {
      if (deadAfter(pos, src)) {
        reduceInto(src);
        launch(out, src);
        break;
      }
      Range tmp = freshScratch(r.rank, st.cnt);
      if (!reduceInto(tmp))
        return Error(describeStep(algo, r) + ": bad ranges", st.loc);
      launch(out, tmp);
      break;
    }
    case StepType::Copy:
      emit(src, dst, TransferOp::Copy);
      break;
    case StepType::Reduce:
      emit(src, dst, TransferOp::Reduce);
      break;
    case StepType::SwitchReduce:
    case StepType::Multicast:
      return Error(describeStep(algo, r) +
                       ": a switch operation has no form in MSCCL's model",
                   st.loc);
    }
  }
  assignSteps();
  return std::move(sched);
}

} // namespace

Expected<Schedule> mscclToSchedule(const Algo &algo,
                                   const Collective &collective) {
  Executor exec(algo, collective);
  return exec.run();
}

Expected<Schedule> importMscclXml(const std::string &file,
                                  const std::string &text,
                                  std::vector<Error> *notes) {
  XmlReadOptions options;
  options.legacyAttributes = true;
  auto algo = parseXml(file, text, options, notes);
  if (!algo)
    return algo.error();
  // Errors about the algorithm as a whole point at its <algo> element.
  auto atAlgo = [&](Error e) {
    if (!e.loc.known())
      e.loc = algo->loc;
    return e;
  };
  auto col = inferMscclCollective(*algo);
  if (!col)
    return atAlgo(col.error());
  CollectiveKind k = col->kind;
  if ((k == CollectiveKind::Broadcast || k == CollectiveKind::Reduce ||
       k == CollectiveKind::Gather || k == CollectiveKind::Scatter) &&
      notes)
    notes->push_back(Error("MSCCL XML records no root and the runtime "
                           "ignores it when selecting; assuming root 0",
                           algo->loc));
  auto sched = mscclToSchedule(*algo, *col);
  if (!sched)
    return atAlgo(sched.error());
  return sched;
}

} // namespace ccsynth
