//===- MSCCLProgram.cpp - MSCCL runtime rules, matching, deadlock check ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements MSCCLProgram.h: step types and what each reads and writes,
// MSCCL's buffer limits and the collective names its runtime launches
// (bufferCapacity, describeSelection, launchCustomAs); validateAlgo, the
// runtime's structural rules; matchMessages, which pairs sends with
// receives in order per channel and connection; and buildWaitGraph,
// topologicalOrder and checkDeadlock, the deadlock check with bounded
// connection buffers.
// Sections: step types, limits and launches, validation, matching, the wait
// graph and deadlocks. See docs/compiler.md ("MSCCL XML").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/MSCCLProgram.h"

#include "ccsynth/Schedule/Schedule.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace ccsynth::msccl {

const char *toString(StepType type) {
  switch (type) {
  case StepType::Send:
    return "s";
  case StepType::Recv:
    return "r";
  case StepType::RecvCopySend:
    return "rcs";
  case StepType::RecvReduceSend:
    return "rrs";
  case StepType::RecvReduceCopy:
    return "rrc";
  case StepType::RecvReduceCopySend:
    return "rrcs";
  case StepType::Copy:
    return "cpy";
  case StepType::Reduce:
    return "re";
  case StepType::Nop:
    return "nop";
  case StepType::SwitchReduce:
    return "switch_reduce";
  case StepType::Multicast:
    return "multicast";
  }
  return "?";
}

std::optional<StepType> parseStepType(const std::string &s) {
  for (StepType t : {StepType::Send, StepType::Recv, StepType::RecvCopySend,
                     StepType::RecvReduceSend, StepType::RecvReduceCopy,
                     StepType::RecvReduceCopySend, StepType::Copy,
                     StepType::Reduce, StepType::Nop})
    if (s == toString(t))
      return t;
  return std::nullopt;
}

bool sends(StepType t) {
  return t == StepType::Send || t == StepType::RecvCopySend ||
         t == StepType::RecvReduceSend || t == StepType::RecvReduceCopySend;
}

bool receives(StepType t) {
  return t == StepType::Recv || t == StepType::RecvCopySend ||
         t == StepType::RecvReduceSend || t == StepType::RecvReduceCopy ||
         t == StepType::RecvReduceCopySend;
}

bool readsSrc(StepType t) {
  return t == StepType::Send || t == StepType::RecvReduceSend ||
         t == StepType::RecvReduceCopy || t == StepType::RecvReduceCopySend ||
         t == StepType::Copy || t == StepType::Reduce ||
         t == StepType::SwitchReduce || t == StepType::Multicast;
}

bool writesDst(StepType t) {
  return t == StepType::Recv || t == StepType::RecvCopySend ||
         t == StepType::RecvReduceCopy || t == StepType::RecvReduceCopySend ||
         t == StepType::Copy || t == StepType::Reduce ||
         t == StepType::SwitchReduce || t == StepType::Multicast;
}

bool readsDst(StepType t) { return t == StepType::Reduce; }

int slotsPerCall(const std::string &proto) {
  return proto == "LL" || proto == "LL128" ? 1 : 4;
}

const char *bufferCode(BufferKind b) {
  return b == BufferKind::Input ? "i" : b == BufferKind::Output ? "o" : "s";
}

const Gpu *Algo::gpu(int rank) const {
  for (const Gpu &g : gpus)
    if (g.id == rank)
      return &g;
  return nullptr;
}

const std::vector<std::string> &mscclCollNames() {
  static const std::vector<std::string> names = {
      "reduce", "broadcast", "allreduce", "reducescatter", "allgather", "send",
      "recv",   "gather",    "scatter",   "alltoall",      "alltoallv"};
  return names;
}

std::optional<BufferCapacity> bufferCapacity(const std::string &coll, int ngpus,
                                             int nchunksperloop) {
  int p = nchunksperloop, n = std::max(1, ngpus);
  if (coll == "allgather")
    return BufferCapacity{p / n, p};
  if (coll == "reducescatter")
    return BufferCapacity{p, p / n};
  if (coll == "alltoall" || coll == "allreduce" || coll == "broadcast" ||
      coll == "reduce")
    return BufferCapacity{p, p};
  return std::nullopt;
}

int sizeMultiplier(const std::string &coll, int ngpus) {
  return coll == "allgather" || coll == "reducescatter" || coll == "alltoall"
             ? std::max(1, ngpus)
             : 1;
}

std::string exactByteCount(long long b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + " " + units[u];
}

int Algo::threadblocksPerRank() const {
  int most = 0;
  for (const Gpu &g : gpus)
    most = std::max(most, (int)g.tbs.size());
  return most;
}

SelectionReport describeSelection(const Algo &algo, int root) {
  SelectionReport r;
  long long p = std::max(1, algo.nchunksperloop);
  int m = sizeMultiplier(algo.coll, algo.ngpus);
  long long odd = oddPart(p);
  std::string range =
      algo.maxBytes > 0 ? "between " + exactByteCount(algo.minBytes) + " and " +
                              exactByteCount(algo.maxBytes)
      : algo.minBytes > 0 ? "of at least " + exactByteCount(algo.minBytes)
                          : "of any size";
  std::string total = m > 1 ? "count x " + std::to_string(m) : "count";
  r.served = "MSCCL selects '" + algo.name + "' for " + algo.coll +
             " calls on " + std::to_string(algo.ngpus) + " ranks " + range +
             " whose " + total +
             " elements are a multiple of nchunksperloop=" + std::to_string(p) +
             " (with 4-byte elements: multiples of " + exactByteCount(p * 4) + ")";
  if (odd == 1)
    r.served += ", which includes every power-of-two size in that range "
                "from " +
                exactByteCount(p * 4) + " up";
  r.served += "; other calls run NCCL's own algorithms";
  if (algo.coll == "broadcast" || algo.coll == "reduce" ||
      algo.coll == "gather" || algo.coll == "scatter")
    r.served += ". The runtime ignores the root when selecting: this " +
                algo.coll +
                (root >= 0 ? " (written for root " + std::to_string(root) + ")"
                           : std::string()) +
                " also runs for calls with any other root, and computes the "
                "wrong result for them; give it a byte range only those "
                "calls use (--min-bytes/--max-bytes)";
  // The smallest size a 1-byte type could make is p bytes; a bounded range
  // must hold a multiple of p.
  long long lo = std::max<long long>(algo.minBytes, p);
  long long first = (lo + p - 1) / p * p;
  if (algo.maxBytes > 0 && first > algo.maxBytes)
    r.warning = "no call size in " + exactByteCount(algo.minBytes) + ".." +
                exactByteCount(algo.maxBytes) +
                " is a multiple of nchunksperloop=" + std::to_string(p) +
                " elements: MSCCL never selects this algorithm";
  else if (odd > 1)
    r.warning = "nchunksperloop=" + std::to_string(p) + " has the odd factor " +
                std::to_string(odd) +
                ", so no power-of-two size (none of the sizes nccl-tests "
                "runs) is a multiple of it: MSCCL falls back to NCCL for "
                "them; use an algorithm whose chunk count is a power of two "
                "(e.g. fewer rings) for such sizes";
  return r;
}

bool collTakesRedOp(const std::string &coll) {
  return coll == "allreduce" || coll == "reduce" || coll == "reducescatter";
}

Expected<CustomLaunch> launchCustomAs(const std::string &coll, int ngpus,
                                      int inChunks, int outChunks,
                                      bool reduces) {
  const auto &colls = mscclCollNames();
  if (std::find(colls.begin(), colls.end(), coll) == colls.end())
    return Error("'" + coll + "' is not a collective MSCCL knows");
  if (!bufferCapacity(coll, ngpus, 1))
    return Error("the runtime does not size the buffers of '" + coll +
                 "' from one count");
  if (reduces && !collTakesRedOp(coll))
    return Error("the program reduces, but the NCCL call behind '" + coll +
                 "' passes no reduction operator (use allreduce, reduce or "
                 "reducescatter)");
  long long n = std::max(1, ngpus), in = std::max(0, inChunks),
            out = std::max(0, outChunks), p = std::max(in, out);
  if (coll == "allgather")
    p = std::max(out, n * in);
  else if (coll == "reducescatter")
    p = std::max(in, n * out);
  if (p > kMaxOffset)
    return Error("launched as '" + coll + "', a loop would need " +
                 std::to_string(p) + " chunks, more than the runtime's " +
                 std::to_string(kMaxOffset));
  return CustomLaunch{coll, (int)std::max(1LL, p)};
}

std::vector<std::string> customLaunchColls(int ngpus, int inChunks,
                                           int outChunks, bool reduces) {
  std::vector<std::string> out;
  for (const std::string &c : mscclCollNames())
    if (launchCustomAs(c, ngpus, inChunks, outChunks, reduces))
      out.push_back(c);
  return out;
}

namespace {

/// Threadblocks of a gpu indexed by id (nullptr where an id is missing).
/// Only the dense range 0..tbs-1 is indexed: an id outside it is reported
/// as not dense, and sizing the index by it would let one attribute such as
/// id="99999999" allocate gigabytes.
std::vector<const Threadblock *> tbsById(const Gpu &gpu) {
  std::vector<const Threadblock *> byId(gpu.tbs.size(), nullptr);
  for (const Threadblock &tb : gpu.tbs)
    if (tb.id >= 0 && tb.id < (int)byId.size() && !byId[tb.id])
      byId[tb.id] = &tb;
  return byId;
}

const Step *findStep(const Algo &algo, StepRef ref) {
  const Gpu *g = algo.gpu(ref.rank);
  if (!g)
    return nullptr;
  for (const Threadblock &tb : g->tbs)
    if (tb.id == ref.tb)
      return ref.step >= 0 && ref.step < (int)tb.steps.size()
                 ? &tb.steps[ref.step]
                 : nullptr;
  return nullptr;
}

const Threadblock *findTb(const Algo &algo, int rank, int id) {
  const Gpu *g = algo.gpu(rank);
  if (!g)
    return nullptr;
  for (const Threadblock &tb : g->tbs)
    if (tb.id == id)
      return &tb;
  return nullptr;
}

int bufferSize(const Gpu &g, BufferKind b) {
  return b == BufferKind::Input    ? g.iChunks
         : b == BufferKind::Output ? g.oChunks
                                   : g.sChunks;
}

} // namespace

std::string describeStep(const Algo &algo, StepRef ref) {
  std::string out = "rank " + std::to_string(ref.rank) + " tb " +
                    std::to_string(ref.tb) + " step " +
                    std::to_string(ref.step);
  const Step *st = findStep(algo, ref);
  const Threadblock *tb = findTb(algo, ref.rank, ref.tb);
  if (!st || !tb)
    return out;
  out += std::string(" (") + toString(st->type);
  if (receives(st->type))
    out += " from " + std::to_string(tb->recv);
  if (sends(st->type))
    out += " to " + std::to_string(tb->send);
  return out + ")";
}

std::vector<ProgramIssue> validateAlgo(const Algo &algo) {
  std::vector<ProgramIssue> issues;
  auto add = [&](std::string msg, const SourceLoc &loc,
                 std::vector<StepRef> steps = {}) {
    issues.push_back({std::move(msg), std::move(steps), loc});
  };
  auto str = [](auto v) { return std::to_string(v); };

  // <algo>
  if (algo.name.empty())
    add("algo: 'name' is empty", algo.loc);
  if ((int)algo.name.size() > kMaxAttrLength ||
      algo.name.find('"') != std::string::npos)
    add("algo: 'name' must be at most 255 characters without '\"'", algo.loc);
  if (algo.proto != "Simple" && algo.proto != "LL" && algo.proto != "LL128")
    add("algo: proto '" + algo.proto + "' is not Simple, LL or LL128",
        algo.loc);
  const auto &colls = mscclCollNames();
  if (std::find(colls.begin(), colls.end(), algo.coll) == colls.end())
    add("algo: coll '" + algo.coll + "' is not a collective MSCCL knows",
        algo.loc);
  if (algo.nchannels < 1 || algo.nchannels > kMaxChannels)
    add("algo: nchannels " + str(algo.nchannels) + " must be in 1.." +
            str(kMaxChannels),
        algo.loc);
  if (algo.nchunksperloop < 1)
    add("algo: nchunksperloop must be at least 1", algo.loc);
  if (algo.ngpus < 1 || algo.ngpus > 65536) {
    add("algo: ngpus " + str(algo.ngpus) + " must be in 1..65536", algo.loc);
    return issues;
  }
  if ((algo.inplace != 0 && algo.inplace != 1) ||
      (algo.outofplace != 0 && algo.outofplace != 1))
    add("algo: inplace and outofplace must be 0 or 1", algo.loc);
  else if (!algo.inplace && !algo.outofplace)
    add("algo: inplace=0 and outofplace=0: the runtime never selects it",
        algo.loc);
  if (algo.minBytes < 0 || algo.maxBytes < 0)
    add("algo: minBytes and maxBytes must be non-negative", algo.loc);
  else if (algo.maxBytes != 0 && algo.maxBytes < algo.minBytes)
    add("algo: maxBytes " + str(algo.maxBytes) + " is below minBytes " +
            str(algo.minBytes) + " (0 means unbounded)",
        algo.loc);

  // <gpu>: one per rank.
  std::vector<int> gpuSeen(std::max(0, algo.ngpus), 0);
  for (const Gpu &g : algo.gpus) {
    if (g.id < 0 || g.id >= algo.ngpus) {
      add("gpu id " + str(g.id) + " is not a rank (ngpus=" + str(algo.ngpus) +
              ")",
          g.loc);
      continue;
    }
    if (gpuSeen[g.id]++)
      add("gpu id " + str(g.id) + " appears twice", g.loc);
  }
  for (int r = 0; r < algo.ngpus && r < (int)gpuSeen.size(); ++r)
    if (!gpuSeen[r])
      add("no <gpu id=\"" + str(r) + "\">: every rank needs one", algo.loc);

  if ((int)algo.gpus.size() > kMaxXmlChildren)
    add("algo: " + str(algo.gpus.size()) +
            " <gpu> elements exceed the "
            "parser's " +
            str(kMaxXmlChildren) + " children per element",
        algo.loc);

  for (const Gpu &g : algo.gpus) {
    std::string gname = "gpu " + str(g.id);
    // The runtime's parser keeps <algo>, every <gpu>, and this rank's <tb>
    // and <step> elements in a fixed pool.
    size_t nodes = 1 + algo.gpus.size() + g.tbs.size();
    for (const Threadblock &tb : g.tbs)
      nodes += tb.steps.size();
    if (nodes > (size_t)kMaxXmlNodes)
      add(gname + ": the runtime's parser would read " + str(nodes) +
              " XML elements for this rank, more than its " + str(kMaxXmlNodes),
          g.loc);
    if (g.iChunks < 0 || g.oChunks < 0 || g.sChunks < 0)
      add(gname + ": chunk counts must be non-negative", g.loc);
    if (auto cap = bufferCapacity(algo.coll, algo.ngpus, algo.nchunksperloop);
        cap && (g.iChunks > cap->input || g.oChunks > cap->output))
      add(gname + ": i_chunks=" + str(g.iChunks) +
              " o_chunks=" + str(g.oChunks) + " do not fit the buffers of " +
              algo.coll + " with nchunksperloop=" + str(algo.nchunksperloop) +
              " (" + str(cap->input) + " input and " + str(cap->output) +
              " output chunks)",
          g.loc);
    if ((int)g.tbs.size() > kMaxThreadblocks)
      add(gname + ": " + str(g.tbs.size()) + " threadblocks exceed " +
              str(kMaxThreadblocks),
          g.loc);
    // Dense ids.
    std::vector<int> seen(g.tbs.size(), 0);
    for (const Threadblock &tb : g.tbs) {
      if (tb.id < 0 || tb.id >= (int)g.tbs.size())
        add(gname + ": tb id " + str(tb.id) + " is not dense (expected 0.." +
                str((int)g.tbs.size() - 1) + ")",
            tb.loc);
      else if (seen[tb.id]++)
        add(gname + ": tb id " + str(tb.id) + " appears twice", tb.loc);
    }
    auto byId = tbsById(g);
    // Per channel: tb count and peer uniqueness.
    std::map<int, int> tbsOnChannel;
    std::map<std::pair<int, int>, int> sendOwner, recvOwner;
    for (const Threadblock &tb : g.tbs) {
      std::string tname = gname + " tb " + str(tb.id);
      for (auto [dir, peer] :
           {std::pair{"send", tb.send}, std::pair{"recv", tb.recv}}) {
        if (peer < -1 || peer >= algo.ngpus)
          add(tname + ": " + dir + " peer " + str(peer) +
                  " is neither -1 nor a rank",
              tb.loc);
        else if (peer == g.id)
          add(tname + ": " + dir + " peer " + str(peer) + " is the gpu itself",
              tb.loc);
      }
      if (tb.chan < 0 || tb.chan >= algo.nchannels)
        add(tname + ": chan " + str(tb.chan) + " is outside 0.." +
                str(algo.nchannels - 1) + " (nchannels=" + str(algo.nchannels) +
                ")",
            tb.loc);
      if (++tbsOnChannel[tb.chan] == kMaxTbsPerChannel + 1)
        add(gname + ": more than " + str(kMaxTbsPerChannel) +
                " threadblocks on channel " + str(tb.chan),
            tb.loc);
      if (tb.send >= 0) {
        auto [it, fresh] = sendOwner.try_emplace({tb.chan, tb.send}, tb.id);
        if (!fresh)
          add(gname + ": tbs " + str(it->second) + " and " + str(tb.id) +
                  " both send to " + str(tb.send) + " on channel " +
                  str(tb.chan) + " (one connection, one threadblock)",
              tb.loc);
      }
      if (tb.recv >= 0) {
        auto [it, fresh] = recvOwner.try_emplace({tb.chan, tb.recv}, tb.id);
        if (!fresh)
          add(gname + ": tbs " + str(it->second) + " and " + str(tb.id) +
                  " both receive from " + str(tb.recv) + " on channel " +
                  str(tb.chan) + " (one connection, one threadblock)",
              tb.loc);
      }

      // Steps.
      if ((int)tb.steps.size() > kMaxSteps)
        add(tname + ": " + str(tb.steps.size()) +
                " steps exceed the "
                "runtime's limit of " +
                str(kMaxSteps),
            tb.loc);
      bool pendingNop = false;
      const Step *prevReal = nullptr;
      for (int i = 0; i < (int)tb.steps.size(); ++i) {
        const Step &st = tb.steps[i];
        StepRef ref{g.id, tb.id, i};
        std::string sname = tname + " step " + str(i);
        if (st.s != i)
          add(sname + ": s=\"" + str(st.s) +
                  "\" but step indices must be dense from 0 in order",
              st.loc, {ref});
        if (st.type != StepType::Nop) {
          if (st.cnt < 1 || st.cnt >= kMaxCount)
            add(sname + ": cnt " + str(st.cnt) + " must be in 1.." +
                    str(kMaxCount - 1),
                st.loc, {ref});
          auto checkRange = [&](const char *side, BufferKind b, int off) {
            int size = bufferSize(g, b);
            if (off < 0 || (long long)off + st.cnt > size || off > kMaxOffset)
              add(sname + ": " + side + " range " + bufferCode(b) + "[" +
                      str(off) + ".." + str((long long)off + st.cnt) +
                      ") is outside the buffer (" + str(size) + " chunks)",
                  st.loc, {ref});
          };
          if (readsSrc(st.type))
            checkRange("source", st.srcBuf, st.srcOff);
          if (writesDst(st.type))
            checkRange("destination", st.dstBuf, st.dstOff);
          if (sends(st.type) && tb.send < 0)
            add(sname + ": '" + toString(st.type) +
                    "' sends but the threadblock has no send peer",
                st.loc, {ref});
          if (receives(st.type) && tb.recv < 0)
            add(sname + ": '" + toString(st.type) +
                    "' receives but the threadblock has no receive peer",
                st.loc, {ref});
        }
        if (st.hasdep != 0 && st.hasdep != 1)
          add(sname + ": hasdep must be 0 or 1", st.loc, {ref});
        if (st.depid < -1 || st.depid >= (int)byId.size() ||
            (st.depid >= 0 && !byId[st.depid]))
          add(sname + ": depid " + str(st.depid) +
                  " is neither -1 nor a threadblock of " + gname,
              st.loc, {ref});
        else if (st.depid == tb.id)
          add(sname + ": depends on its own threadblock", st.loc, {ref});
        else if (st.depid > kMaxDepTb)
          add(sname + ": depid " + str(st.depid) + " exceeds " +
                  str(kMaxDepTb) + " (stored as int8_t)",
              st.loc, {ref});
        else if (st.depid >= 0) {
          const Threadblock *dtb = byId[st.depid];
          StepRef target{g.id, st.depid, st.deps};
          if (st.deps < 0 || st.deps >= (int)dtb->steps.size())
            add(sname + ": deps " + str(st.deps) + " is not a step of tb " +
                    str(st.depid) + " (" + str(dtb->steps.size()) + " steps)",
                st.loc, {ref});
          else if (dtb->steps[st.deps].type == StepType::Nop)
            add(sname + ": waits for a nop (" + describeStep(algo, target) +
                    "), which never signals",
                st.loc, {ref, target});
          else if (dtb->steps[st.deps].hasdep != 1)
            add(sname + ": waits for " + describeStep(algo, target) +
                    ", which has hasdep=0 and never signals; only a later "
                    "flag of that threadblock could end the wait",
                st.loc, {ref, target});
        }
        if (st.type == StepType::Nop) {
          if (st.depid < 0)
            add(sname + ": a nop must carry a dependency", st.loc, {ref});
          pendingNop = true;
          continue;
        }
        if (pendingNop && st.depid < 0)
          add(sname + ": follows nop dependencies but has depid=-1 (the "
                      "runtime requires the step after nops to carry the "
                      "last dependency)",
              st.loc, {ref});
        pendingNop = false;
        // The runtime folds consecutive `re` steps with the same
        // destination and source buffer into one multi-source reduction
        // that keeps only the last count.
        if (st.type == StepType::Reduce && prevReal &&
            prevReal->type == StepType::Reduce && st.depid < 0 &&
            prevReal->hasdep == 0 && prevReal->dstBuf == st.dstBuf &&
            prevReal->dstOff == st.dstOff && prevReal->srcBuf == st.srcBuf &&
            prevReal->cnt != st.cnt)
          add(sname + ": the runtime fuses this 're' with the previous one "
                      "but their counts differ",
              st.loc, {ref});
        prevReal = &st;
      }
      if (pendingNop)
        add(tname + ": ends with a nop; its dependency is never used", tb.loc);
    }
  }

  Matching m = matchMessages(algo);
  issues.insert(issues.end(), m.issues.begin(), m.issues.end());
  return issues;
}

DirectLandings::DirectLandings(const Algo &algo, const Collective &collective)
    : col(collective) {
  for (const Gpu &g : algo.gpus)
    for (const Threadblock &tb : g.tbs)
      for (const Step &st : tb.steps)
        if (st.type != StepType::Nop && writesDst(st.type))
          for (int i = 0; i < st.cnt; ++i)
            ++writes[{g.id, col.canonical({g.id, st.dstBuf, st.dstOff + i})}];
}

bool DirectLandings::allows(int rank, const Step &st) const {
  if (st.type != StepType::Recv && st.type != StepType::RecvCopySend)
    return false;
  for (int i = 0; i < st.cnt; ++i) {
    ChunkLoc c = col.canonical({rank, st.dstBuf, st.dstOff + i});
    auto it = writes.find({rank, c});
    if (it == writes.end() || it->second != 1)
      return false;
    if (int k = col.inputChunkAt(c); k >= 0 && col.preAt(rank, k) >= 0)
      return false;
  }
  return true;
}

Matching matchMessages(const Algo &algo) {
  Matching result;
  using Key = std::tuple<int, int, int>; // channel, sender, receiver
  std::map<Key, std::vector<StepRef>> sendSeq, recvSeq;
  std::map<Key, int> sendTb, recvTb;
  for (const Gpu &g : algo.gpus) {
    for (const Threadblock &tb : g.tbs) {
      if (tb.send >= 0) {
        Key k{tb.chan, g.id, tb.send};
        auto [it, fresh] = sendTb.try_emplace(k, tb.id);
        if (fresh)
          for (int i = 0; i < (int)tb.steps.size(); ++i)
            if (sends(tb.steps[i].type))
              sendSeq[k].push_back({g.id, tb.id, i});
      }
      if (tb.recv >= 0) {
        Key k{tb.chan, tb.recv, g.id};
        auto [it, fresh] = recvTb.try_emplace(k, tb.id);
        if (fresh)
          for (int i = 0; i < (int)tb.steps.size(); ++i)
            if (receives(tb.steps[i].type))
              recvSeq[k].push_back({g.id, tb.id, i});
      }
    }
  }
  std::set<Key> keys;
  for (auto &[k, v] : sendSeq)
    keys.insert(k);
  for (auto &[k, v] : recvSeq)
    keys.insert(k);
  for (const Key &k : keys) {
    auto [chan, from, to] = k;
    const auto &s = sendSeq[k];
    const auto &r = recvSeq[k];
    size_t n = std::min(s.size(), r.size());
    for (size_t i = 0; i < n; ++i) {
      const Step *ss = findStep(algo, s[i]);
      const Step *rs = findStep(algo, r[i]);
      if (ss && rs && ss->cnt != rs->cnt)
        result.issues.push_back(
            {"message " + std::to_string(i) + " from rank " +
                 std::to_string(from) + " to rank " + std::to_string(to) +
                 " on channel " + std::to_string(chan) + ": " +
                 describeStep(algo, s[i]) + " sends cnt " +
                 std::to_string(ss->cnt) + " but " + describeStep(algo, r[i]) +
                 " receives cnt " + std::to_string(rs->cnt),
             {s[i], r[i]},
             ss->loc});
      result.messages.push_back({s[i], r[i], chan});
    }
    if (s.size() != r.size()) {
      std::vector<StepRef> extra;
      const auto &longer = s.size() > r.size() ? s : r;
      for (size_t i = n; i < longer.size(); ++i)
        extra.push_back(longer[i]);
      std::string msg = "rank " + std::to_string(from) + " sends " +
                        std::to_string(s.size()) + " message(s) to rank " +
                        std::to_string(to) + " on channel " +
                        std::to_string(chan) + " but rank " +
                        std::to_string(to) + " receives " +
                        std::to_string(r.size()) + "; unmatched: ";
      for (size_t i = 0; i < extra.size(); ++i)
        msg += (i ? ", " : "") + describeStep(algo, extra[i]);
      const Step *first = findStep(algo, extra.front());
      result.issues.push_back({msg, extra, first ? first->loc : SourceLoc{}});
    }
  }
  return result;
}

int WaitGraph::nodeOf(StepRef ref) const {
  auto it = tbNodes.find({ref.rank, ref.tb});
  if (it == tbNodes.end() || ref.step < 0 || ref.step >= it->second.second)
    return -1;
  return it->second.first + ref.step;
}

std::vector<int> bufferWaits(const std::vector<long long> &slots,
                             const BufferModel &buffers) {
  std::vector<int> waits(slots.size(), -1);
  if (!buffers.bounded())
    return waits;
  // used[k]: slots taken by messages 0..k-1 (prefix sums).
  std::vector<long long> used(slots.size() + 1, 0);
  for (size_t k = 0; k < slots.size(); ++k)
    used[k + 1] = used[k] + slots[k];
  for (size_t k = 0; k < slots.size(); ++k) {
    // Send k fits once messages j..k no longer all wait in the buffer: it
    // waits for receive j, the latest with used[k+1] - used[j] > slots
    // (j == k: the message alone is larger).
    long long excess = used[k + 1] - buffers.slots;
    auto it = std::lower_bound(used.begin(), used.begin() + k + 1, excess);
    int j = (int)(it - used.begin()) - 1;
    if (j >= 0 && j < (int)k)
      waits[k] = j;
  }
  return waits;
}

WaitGraph buildWaitGraph(const Algo &algo, const Matching &matching,
                         const BufferModel &buffers) {
  WaitGraph g;
  for (const Gpu &gpu : algo.gpus)
    for (const Threadblock &tb : gpu.tbs) {
      if (!g.tbNodes
               .try_emplace({gpu.id, tb.id}, std::pair{(int)g.nodes.size(),
                                                       (int)tb.steps.size()})
               .second)
        continue;
      for (int i = 0; i < (int)tb.steps.size(); ++i)
        g.nodes.push_back({gpu.id, tb.id, i});
    }
  g.preds.resize(g.nodes.size());
  for (int v = 0; v < (int)g.nodes.size(); ++v) {
    StepRef r = g.nodes[v];
    if (r.step > 0)
      g.preds[v].push_back({v - 1, WaitGraph::ProgramOrder});
    const Step *st = findStep(algo, r);
    if (st && st->depid >= 0) {
      int u = g.nodeOf({r.rank, st->depid, st->deps});
      if (u >= 0)
        g.preds[v].push_back({u, WaitGraph::Dependency});
    }
  }
  for (const Message &m : matching.messages) {
    int s = g.nodeOf(m.send), r = g.nodeOf(m.recv);
    if (s >= 0 && r >= 0)
      g.preds[r].push_back({s, WaitGraph::MessageEdge});
  }
  if (!buffers.bounded())
    return g;

  // Messages of each connection in order (matching lists them so).
  std::map<std::tuple<int, int, int>, std::vector<const Message *>> conns;
  for (const Message &m : matching.messages)
    conns[{m.channel, m.send.rank, m.recv.rank}].push_back(&m);
  std::vector<std::pair<int, int>> oversized; // (send node, recv node)
  for (auto &[key, msgs] : conns) {
    std::vector<long long> slots(msgs.size());
    for (size_t k = 0; k < msgs.size(); ++k) {
      const Step *st = findStep(algo, msgs[k]->send);
      slots[k] = buffers.slotsOf(st ? st->cnt : 1);
    }
    std::vector<int> waits = bufferWaits(slots, buffers);
    for (size_t k = 0; k < msgs.size(); ++k) {
      int s = g.nodeOf(msgs[k]->send);
      if (s < 0)
        continue;
      if (int j = waits[k]; j >= 0)
        if (int r = g.nodeOf(msgs[j]->recv); r >= 0)
          g.preds[s].push_back({r, WaitGraph::BufferSpace});
      if (slots[k] > buffers.slots)
        if (int r = g.nodeOf(msgs[k]->recv); r >= 0)
          oversized.push_back({s, r});
    }
  }
  // A message larger than the buffer drains only while its receive runs:
  // the send waits for what the receive waits for.
  for (auto [s, r] : oversized) {
    std::vector<WaitGraph::Pred> extra;
    for (const WaitGraph::Pred &p : g.preds[r])
      if (p.kind != WaitGraph::MessageEdge && p.node != s)
        extra.push_back({p.node, WaitGraph::BufferSpace});
    g.preds[s].insert(g.preds[s].end(), extra.begin(), extra.end());
  }
  return g;
}

namespace {
/// Kahn's algorithm; `done` marks the nodes that could be ordered.
std::vector<int> kahn(const WaitGraph &g, std::vector<bool> &done) {
  size_t n = g.nodes.size();
  std::vector<std::vector<int>> succs(n);
  std::vector<int> indeg(n, 0);
  for (size_t v = 0; v < n; ++v)
    for (const WaitGraph::Pred &p : g.preds[v]) {
      succs[p.node].push_back((int)v);
      ++indeg[v];
    }
  std::vector<int> order;
  for (size_t v = 0; v < n; ++v)
    if (!indeg[v])
      order.push_back((int)v);
  done.assign(n, false);
  for (size_t qi = 0; qi < order.size(); ++qi) {
    int v = order[qi];
    done[v] = true;
    for (int w : succs[v])
      if (--indeg[w] == 0)
        order.push_back(w);
  }
  return order;
}
} // namespace

std::optional<std::vector<int>> topologicalOrder(const WaitGraph &graph) {
  std::vector<bool> done;
  std::vector<int> order = kahn(graph, done);
  if (order.size() != graph.nodes.size())
    return std::nullopt;
  return order;
}

std::vector<ProgramIssue> checkDeadlock(const Algo &algo,
                                        const Matching &matching,
                                        const BufferModel &buffers) {
  WaitGraph graph = buildWaitGraph(algo, matching, buffers);
  std::vector<bool> done;
  std::vector<int> order = kahn(graph, done);
  if (order.size() == graph.nodes.size())
    return {};
  const auto &refs = graph.nodes;
  const auto &preds = graph.preds;
  using EdgeKind = WaitGraph::EdgeKind;
  // Every blocked node has a blocked predecessor: walk back to a cycle.
  int start = 0;
  while (done[start])
    ++start;
  std::vector<int> pos(refs.size(), -1);
  std::vector<int> path;
  std::vector<EdgeKind> kinds;
  int v = start;
  while (pos[v] < 0) {
    pos[v] = (int)path.size();
    path.push_back(v);
    for (const WaitGraph::Pred &p : preds[v])
      if (!done[p.node]) {
        kinds.push_back(p.kind);
        v = p.node;
        break;
      }
  }
  std::vector<int> cycle(path.begin() + pos[v], path.end());
  std::vector<EdgeKind> cycleKinds(kinds.begin() + pos[v], kinds.end());
  std::string msg = "deadlock: " + describeStep(algo, refs[cycle[0]]);
  std::vector<StepRef> steps;
  for (size_t i = 0; i < cycle.size(); ++i)
    steps.push_back(refs[cycle[i]]);
  // A run of program-order waits (a step behind the earlier steps of its
  // threadblock) is one clause naming the step it ends at and the steps it
  // passes through: a long threadblock would otherwise fill the message
  // with a clause per step.
  for (size_t i = 0; i < cycle.size();) {
    size_t run = 1;
    if (cycleKinds[i] == WaitGraph::ProgramOrder)
      while (i + run < cycle.size() &&
             cycleKinds[i + run] == WaitGraph::ProgramOrder)
        ++run;
    std::string why = cycleKinds[i] == WaitGraph::ProgramOrder
                          ? " [program order]"
                      : cycleKinds[i] == WaitGraph::Dependency ? " [dependency]"
                      : cycleKinds[i] == WaitGraph::MessageEdge
                          ? " [its message]"
                          : " [room in the connection's buffer]";
    if (run > 1) {
      const StepRef &first = refs[cycle[i + 1]];
      const StepRef &last = refs[cycle[i + run - 1]];
      why = " [program order, through step" +
            (run == 2 ? " " + std::to_string(first.step)
                      : "s " + std::to_string(first.step) + " to " +
                            std::to_string(last.step)) +
            "]";
    }
    msg += std::string(i ? ", which" : "") + " waits for " +
           describeStep(algo, refs[cycle[(i + run) % cycle.size()]]) + why;
    i += run;
  }
  if (std::find(cycleKinds.begin(), cycleKinds.end(), WaitGraph::BufferSpace) !=
      cycleKinds.end())
    msg += "; a connection buffers " + std::to_string(buffers.slots) +
           " slots and a " + algo.proto + " send takes " +
           std::to_string(buffers.slotsPerChunk) + " per chunk";
  const Step *first = findStep(algo, steps.front());
  return {{msg, steps, first ? first->loc : SourceLoc{}}};
}

} // namespace ccsynth::msccl
