//===- CodeGen.cpp - Interpreter-free code from a step-level program ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements generateCode (CodeGen.h). The Generator (CodeGenInternal.h)
// plans where each message lands and the switch threadblocks' barrier
// flags, emits each (rank, threadblock) as a function of primitive calls,
// has the threadblocks whose code differs only in its integers grouped
// into shared functions (CodeGenSharing.cpp), and emits the functions and
// the selection tree that calls them. relativeThreadblockIds first
// renumbers each rank's threadblocks by peer distance, so that symmetric
// ranks share code.
// Sections: landings and barrier flags, one threadblock's code, functions
// and selection, run, renumbering and generateCode. See docs/runtime.md
// ("Generated code", "Symmetric ranks share one function").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/CodeGen.h"
#include "CodeGenInternal.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace ccsynth::codegen {

using msccl::StepRef;
using msccl::StepType;

std::string hashText(const std::string &text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

namespace detail {
namespace {

/// Buffer ids as the runtime names them (Generated.h).
const char *bufName(BufferKind b) {
  switch (b) {
  case BufferKind::Input:
    return "In";
  case BufferKind::Output:
    return "Out";
  case BufferKind::Scratch:
    return "Scr";
  }
  return "In";
}

Expected<BlockShape> blockShapeOf(const Collective &c) {
  int n = c.numRanks, in = c.inputChunks, out = c.outputChunks;
  auto divides = [](int a, int b) { return a > 0 && b % a == 0; };
  switch (c.kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::Gather:
    if (!divides(in, out))
      break;
    return BlockShape{c.kind == CollectiveKind::AllGather ? "AllGather"
                                                          : "Gather",
                      in, 1, out / in, 1};
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::Scatter:
    if (!divides(out, in))
      break;
    return BlockShape{c.kind == CollectiveKind::ReduceScatter ? "ReduceScatter"
                                                              : "Scatter",
                      out, in / out, 1, 1};
  case CollectiveKind::AllReduce:
  case CollectiveKind::Broadcast:
  case CollectiveKind::Reduce:
    if (in != out)
      break;
    return BlockShape{c.kind == CollectiveKind::AllReduce   ? "AllReduce"
                      : c.kind == CollectiveKind::Broadcast ? "Broadcast"
                                                            : "Reduce",
                      in, 1, 1, 1};
  case CollectiveKind::AllToAll:
    if (!divides(n, in) || in != out)
      break;
    return BlockShape{"AllToAll", in / n, n, n, 1};
  case CollectiveKind::Custom:
    return BlockShape{"Custom", 1, in, out, in};
  }
  return Error("cannot lay out " + c.describe() +
               " over NCCL's buffers: chunk counts do not divide");
}

} // namespace

const msccl::Threadblock &Generator::tbOf(int rank, int id) const {
  for (const msccl::Threadblock &tb : algo.gpu(rank)->tbs)
    if (tb.id == id)
      return tb;
  return algo.gpu(rank)->tbs.front();
}

void Generator::planLandings() {
  msccl::DirectLandings directLandings(algo, col);
  landingChunks.assign(algo.ngpus, 0);
  dataFlags.assign(algo.ngpus, 0);
  creditFlags.assign(algo.ngpus, 0);
  landing.assign(messages.size(), Landing{});
  // Flags and landing slots are numbered in each rank's own order (its
  // threadblocks and their steps), not the order of the messages: ranks
  // whose threadblocks correspond then use the same numbers, and share
  // generated code.
  std::vector<int> order(messages.size());
  std::iota(order.begin(), order.end(), 0);
  auto byEnd = [&](bool recv) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const msccl::Message &x = messages[a], &y = messages[b];
      const auto &ex = recv ? x.recv : x.send, &ey = recv ? y.recv : y.send;
      return std::tuple(ex.rank, ex.tb, ex.step) <
             std::tuple(ey.rank, ey.tb, ey.step);
    });
  };
  byEnd(true);
  for (int i : order) {
    const msccl::Message &m = messages[i];
    const msccl::Step &st = tbOf(m.recv.rank, m.recv.tb).steps[m.recv.step];
    Landing &l = landing[i];
    l.dataFlag = dataFlags[m.recv.rank]++;
    // Straight into the destination only when no reader or writer of the
    // range can race the sender, and only into output: output slices
    // differ per pass, scratch slices do not.
    bool direct = directLandings.allows(m.recv.rank, st) &&
                  col.canonical({m.recv.rank, st.dstBuf, st.dstOff}).buffer ==
                      BufferKind::Output;
    for (int i = 1; direct && i < st.cnt; ++i)
      direct = col.canonical({m.recv.rank, st.dstBuf, st.dstOff + i}).buffer ==
               BufferKind::Output;
    if (direct) {
      l.direct = true;
      l.buffer = st.dstBuf;
      l.offset = st.dstOff;
      ++stats.directMessages;
    } else {
      l.offset = landingChunks[m.recv.rank];
      landingChunks[m.recv.rank] += st.cnt;
    }
  }
  byEnd(false);
  for (int i : order)
    if (!landing[i].direct)
      landing[i].creditFlag = creditFlags[messages[i].send.rank]++;
}

void Generator::planSwitchFlags() {
  for (const msccl::Gpu &g : algo.gpus)
    for (const msccl::Threadblock &tb : g.tbs)
      if (tb.switchId >= 0) {
        switchFlags[{g.id, tb.switchId, tb.switchLane}] = dataFlags[g.id];
        dataFlags[g.id] += 2 * ((int)tb.group.size() - 1);
      }
}

int Generator::barrierFlag(const msccl::Threadblock &tb, int receiver, int b,
                           int sender) const {
  int others = (int)tb.group.size() - 1;
  int index = 0;
  for (int r : tb.group)
    if (r != receiver && r < sender)
      ++index;
  return switchFlags.at({receiver, tb.switchId, tb.switchLane}) + b * others +
         index;
}

void Generator::emitBarrier(const msccl::Threadblock &tb, int rank, int b,
                            const std::string &indent) {
  // Where every member numbers this lane's barrier flags from the same
  // base and the group is ascending, the runtime's loop over the group
  // (x.switchBarrier) sets and waits for the same flags: one line whatever
  // the group's size, and the same text on every rank.
  bool uniform = std::is_sorted(tb.group.begin(), tb.group.end());
  const int base = switchFlags.at({rank, tb.switchId, tb.switchLane});
  for (int m : tb.group) {
    auto it = switchFlags.find({m, tb.switchId, tb.switchLane});
    uniform = uniform && it != switchFlags.end() && it->second == base;
  }
  if (uniform) {
    os << indent << "CCSYNTH_TRY(x.switchBarrier("
       << H((long long)tb.steps.size()) << ", "
       << H(base + b * ((long long)tb.group.size() - 1)) << "));\n";
    return;
  }
  for (int m : tb.group)
    if (m != rank)
      os << indent << "x.signal(" << H(m) << ", "
         << H(barrierFlag(tb, m, b, rank)) << ");\n";
  for (int m : tb.group)
    if (m != rank)
      os << indent << "CCSYNTH_TRY(x.waitData(" << H((long long)tb.steps.size())
         << ", " << H(barrierFlag(tb, rank, b, m)) << "));\n";
}

void Generator::emitRuns(const std::string &indent, const std::string &prefix,
                         const char *srcName, BufferKind srcKind, int srcOff,
                         const char *dstName, BufferKind dstKind, int dstOff,
                         int cnt, const char *thirdName, BufferKind thirdKind,
                         int thirdOff, long long prefixValue) {
  int ks = blockChunksOf(srcKind), kd = blockChunksOf(dstKind);
  int kt = thirdName ? blockChunksOf(thirdKind) : 1 << 30;
  if (std::string(srcName) == "Land")
    ks = 1 << 30;
  if (std::string(dstName) == "Land")
    kd = 1 << 30;
  if (thirdName && std::string(thirdName) == "Land")
    kt = 1 << 30;
  int i = 0;
  while (i < cnt) {
    int j = i + 1;
    while (j < cnt && (srcOff + j) % ks != 0 && (dstOff + j) % kd != 0 &&
           (!thirdName || (thirdOff + j) % kt != 0))
      ++j;
    auto loc = [&](const char *name, int off, int k) {
      std::string a = H(off / k);
      return std::string(name) + ", " + a + ", " + H(off % k);
    };
    os << indent << prefix;
    if (prefixValue >= 0)
      holeVals.push_back(prefixValue);
    os << loc(srcName, srcOff + i, ks) << ", ";
    if (thirdName)
      os << loc(thirdName, thirdOff + i, kt) << ", ";
    os << loc(dstName, dstOff + i, kd) << ", ";
    os << H(j - i) << ");\n";
    i = j;
  }
}

void Generator::emitSend(const std::string &indent, int rank, int tbId, int k,
                         const char *srcName, BufferKind srcKind, int srcOff,
                         int cnt) {
  int m = sendMsg.at({rank, tbId, k});
  const msccl::Message &msg = messages[m];
  const Landing &l = landing[m];
  int peer = msg.recv.rank;
  if (!l.direct)
    os << indent << "CCSYNTH_TRY(x.waitCredit(" << H(k) << ", "
       << H(l.creditFlag) << "));\n";
  std::string prefix = "x.put(\x01, ";
  if (l.direct)
    emitRuns(indent, prefix, srcName, srcKind, srcOff, bufName(l.buffer),
             l.buffer, l.offset, cnt, nullptr, BufferKind::Input, 0, peer);
  else
    emitRuns(indent, prefix, srcName, srcKind, srcOff, "Land",
             BufferKind::Scratch, l.offset, cnt, nullptr, BufferKind::Input,
             0, peer);
  os << indent << "x.signal(" << H(peer) << ", " << H(l.dataFlag) << ");\n";
}

std::string Generator::stepComment(int rank, const msccl::Threadblock &tb,
                                   int k) {
  const msccl::Step &st = tb.steps[k];
  std::ostringstream c;
  c << "step " << k << ": " << msccl::toString(st.type);
  if (msccl::receives(st.type))
    c << " from " << tb.recv;
  if (msccl::readsSrc(st.type))
    c << " " << msccl::bufferCode(st.srcBuf) << "[" << st.srcOff << "]";
  if (msccl::writesDst(st.type))
    c << " -> " << msccl::bufferCode(st.dstBuf) << "[" << st.dstOff << "]";
  if (msccl::sends(st.type))
    c << " to " << tb.send;
  if (st.cnt != 1)
    c << " x" << st.cnt;
  if (st.depid >= 0)
    c << ", after tb " << st.depid << " step " << st.deps;
  auto it = in.scheduleSteps.find({rank, tb.id, k});
  if (it != in.scheduleSteps.end())
    c << " (schedule step " << it->second << ")";
  return c.str();
}

void Generator::emitThreadblock(int rank, const msccl::Threadblock &tb) {
  const std::string i1 = "  ", i2 = "    ";
  bool puts = false;
  for (const msccl::Step &st : tb.steps)
    puts |= msccl::sends(st.type);
  if (puts)
    os << i1 << "CCSYNTH_TRY(x.connect(" << H(tb.send) << "));\n";
  // A switch threadblock: its group entered the launch before any
  // operation touches their buffers; the group meets again before the
  // remainder's pass reads staged inputs, and after its last operation
  // (no rank leaves the launch while another still reads or writes its
  // buffers).
  bool switchTb = tb.switchId >= 0;
  if (switchTb)
    os << i1 << "CCSYNTH_TRY(x.switchJoin(" << H((long long)tb.steps.size())
       << ", kSwitchRanks[" << H(tb.switchId) << "], "
       << H((long long)tb.group.size()) << "));\n";
  os << i1 << "const int passes = x.numPasses();\n";
  os << i1 << "for (int p = 0; p < passes; ++p) {\n";
  os << i2 << "CCSYNTH_TRY(x.beginPass(p));\n";
  if (tb.id == 0) {
    // Threadblock 0 stages the remainder of the input blocks that hold data.
    std::set<int> inBlocks;
    for (int i = 0; i < col.inputChunks; ++i)
      if (col.preAt(rank, i) >= 0)
        inBlocks.insert(i / shape.blockChunks);
    os << i2 << "if (x.isRemainder(p)) {\n";
    for (int b : inBlocks)
      os << i2 << "  x.stageIn(" << H(b) << ", " << H(b + 1) << ");\n";
    os << i2 << "  x.publishStaged(p);\n" << i2 << "}\n";
  }
  if (switchTb) {
    os << i2 << "if (x.isRemainder(p)) { // the group's inputs are staged\n";
    emitBarrier(tb, rank, 0, i2 + "  ");
    os << i2 << "}\n";
  }
  for (int k = 0; k < (int)tb.steps.size(); ++k) {
    const msccl::Step &st = tb.steps[k];
    os << i2 << "// " << stepComment(rank, tb, k) << "\n";
    if (st.depid >= 0)
      os << i2 << "CCSYNTH_TRY(x.waitStep(" << H(k) << ", " << H(st.depid)
         << ", " << H(st.deps) << "));\n";
    const char *src = bufName(st.srcBuf), *dst = bufName(st.dstBuf);
    auto recvPart = [&](bool reduce, bool store) -> const Landing * {
      int m = recvMsg.at({rank, tb.id, k});
      const Landing &l = landing[m];
      os << i2 << "CCSYNTH_TRY(x.waitData(" << H(k) << ", " << H(l.dataFlag)
         << "));\n";
      if (l.direct)
        return &l;
      if (reduce && store)
        emitRuns(i2, "x.reduce3(", "Land", BufferKind::Scratch, l.offset, dst,
                 st.dstBuf, st.dstOff, st.cnt, src, st.srcBuf, st.srcOff);
      else if (reduce) // rrs: the partial sum stays in the landing slot
        emitRuns(i2, "x.reduce(", src, st.srcBuf, st.srcOff, "Land",
                 BufferKind::Scratch, l.offset, st.cnt);
      else
        emitRuns(i2, "x.copy(", "Land", BufferKind::Scratch, l.offset, dst,
                 st.dstBuf, st.dstOff, st.cnt);
      return &l;
    };
    auto creditBack = [&](const Landing *l) {
      if (!l->direct)
        os << i2 << "x.credit(" << H(tb.recv) << ", " << H(l->creditFlag)
           << ");\n";
    };
    switch (st.type) {
    case StepType::Nop:
      break;
    case StepType::Send:
      emitSend(i2, rank, tb.id, k, src, st.srcBuf, st.srcOff, st.cnt);
      break;
    case StepType::Recv:
      creditBack(recvPart(false, true));
      break;
    case StepType::RecvCopySend:
      creditBack(recvPart(false, true));
      emitSend(i2, rank, tb.id, k, dst, st.dstBuf, st.dstOff, st.cnt);
      break;
    case StepType::RecvReduceCopy:
      creditBack(recvPart(true, true));
      break;
    case StepType::RecvReduceCopySend:
      creditBack(recvPart(true, true));
      emitSend(i2, rank, tb.id, k, dst, st.dstBuf, st.dstOff, st.cnt);
      break;
    case StepType::RecvReduceSend: {
      const Landing *l = recvPart(true, false);
      emitSend(i2, rank, tb.id, k, "Land", BufferKind::Scratch, l->offset,
               st.cnt);
      creditBack(l);
      break;
    }
    case StepType::Copy:
      emitRuns(i2, "x.copy(", src, st.srcBuf, st.srcOff, dst, st.dstBuf,
               st.dstOff, st.cnt);
      break;
    case StepType::Reduce:
      emitRuns(i2, "x.reduce(", src, st.srcBuf, st.srcOff, dst, st.dstBuf,
               st.dstOff, st.cnt);
      break;
    case StepType::SwitchReduce:
      emitRuns(i2, "x.switchReduce(", src, st.srcBuf, st.srcOff, dst, st.dstBuf,
               st.dstOff, st.cnt);
      break;
    case StepType::Multicast:
      emitRuns(i2, "x.multicast(", src, st.srcBuf, st.srcOff, dst, st.dstBuf,
               st.dstOff, st.cnt);
      break;
    }
    if (st.hasdep)
      os << i2 << "x.done(" << H(k) << ");\n";
  }
  if (switchTb) {
    os << i2
       << "if (p == passes - 1) { // every operation of the launch done\n";
    emitBarrier(tb, rank, 1, i2 + "  ");
    os << i2 << "}\n";
  }
  os << i2 << "x.endPass(p);\n" << i1 << "}\n";
  if (tb.id == 0) {
    std::set<int> outBlocks;
    for (int j = 0; j < col.outputChunks; ++j)
      if (col.postAt(rank, j))
        outBlocks.insert(j / shape.blockChunks);
    os << i1 << "if (passes > 0 && x.isRemainder(passes - 1)) {\n";
    os << i1 << "  CCSYNTH_TRY(x.awaitRankDone(" << H((long long)tb.steps.size())
       << "));\n";
    for (int b : outBlocks)
      os << i1 << "  x.stageOut(" << H(b) << ", " << H(b + 1) << ");\n";
    os << i1 << "}\n";
  }
  os << i1 << "return true;\n";
  ++stats.threadblocks;
  stats.steps += (int)tb.steps.size();
}


std::string Generator::functionName(int fn) const {
  const Group &g = groups[fn];
  const TbCode &c = codes[g.members.front()];
  std::string name(1, g.shared ? 'g' : 'r');
  name += std::to_string(g.shared ? fn : c.rank);
  name += "_tb";
  name += std::to_string(c.tb);
  return name;
}

void Generator::emitFunctions(std::vector<std::string> &names) {
  for (int fn = 0; fn < (int)groups.size(); ++fn) {
    const Group &g = groups[fn];
    const TbCode &c = codes[g.members.front()];
    names.push_back(functionName(fn));
    if (g.shared) {
      std::set<int> rankSet;
      for (int m : g.members)
        rankSet.insert(codes[m].rank);
      std::vector<int> ranks(rankSet.begin(), rankSet.end());
      os << "\n// ranks " << formatRankSet(ranks) << ", threadblock"
         << (g.slots > 1 ? "s " : " ") << c.tb;
      if (g.slots > 1) {
        // The slots' threadblocks on the rank the comments show.
        std::vector<int> tbs(g.slots, -1);
        for (size_t i = 0; i < g.members.size(); ++i)
          if (codes[g.members[i]].rank == c.rank)
            tbs[g.slotOfMember(i)] = codes[g.members[i]].tb;
        for (int k = 1; k < g.slots; ++k)
          os << (k + 1 == g.slots ? " and " : ", ") << tbs[k];
        os << " (slots of one code"
           << (c.rank == 0 ? "" : " on rank " + std::to_string(c.rank)) << ")";
      }
      os << ": one function, parameterized by rank"
         << (g.slots > 1 ? " (slot x " + std::to_string(algo.ngpus) + " + rank)"
                         : std::string())
         << " (comments show rank " << c.rank << ")\n// " << c.header << "\n";
      ++stats.sharedFunctions;
      const int width = algo.ngpus * g.slots;
      if (!g.table.empty()) {
        os << "// Values of this function that are no simple expression of "
              "the rank.\n"
           << (g.globalTable ? "CCSYNTH_GLOBAL_TABLE" : "CCSYNTH_TABLE")
           << " int t" << fn << "[" << g.table.size() << "][" << width
           << "] = {";
        for (size_t r = 0; r < g.table.size(); ++r) {
          os << (r ? ",\n    {" : "\n    {");
          for (int k = 0; k < width; ++k)
            os << (k ? ", " : "") << g.table[r][k];
          os << "}";
        }
        os << "};\n";
      }
    } else {
      os << "\n// rank " << c.rank << ", threadblock " << c.tb << ": "
         << c.header << "\n";
    }
    os << "template <class X> CCSYNTH_TB_FN bool " << names.back() << "("
       << (g.shared ? "X &x, int rank" : "X &x, const int /*rank*/")
       << ") {\n";
    size_t h = 0;
    bool lineStart = true;
    for (size_t i = 0; i < c.text.size(); ++i) {
      char ch = c.text[i];
      if (lineStart && g.shared && c.text.compare(i, 12, "    // step ") == 0)
        os << "    CCSYNTH_STEP_RANK(rank);\n";
      lineStart = ch == '\n';
      if (ch == '\x01')
        os << g.exprs.at(h++);
      else
        os << ch;
    }
    os << "}\n";
  }
  stats.functions = (int)groups.size();
}

void Generator::emitSelect(const std::vector<SelectRun> &runs, int lo, int hi,
                           const std::string &indent) {
  // runs[lo..hi): a balanced tree of direct branches.
  if (hi - lo == 1) {
    const SelectRun &r = runs[lo];
    os << indent << "fn = " << r.fn << ";\n";
    if (r.fn >= 0 && groups[r.fn].slots > 1)
      os << indent << "slot = " << r.slot << ";\n";
    return;
  }
  int mid = lo + (hi - lo) / 2;
  os << indent << "if (id < " << runs[mid].first << ") {\n";
  emitSelect(runs, lo, mid, indent + "  ");
  os << indent << "} else {\n";
  emitSelect(runs, mid, hi, indent + "  ");
  os << indent << "}\n";
}

void Generator::emitCall(int lo, int hi, const std::vector<std::string> &names,
                         const std::string &indent) {
  if (hi - lo == 1) {
    const Group &g = groups[lo];
    os << indent << "return " << names[lo] << "(x, rank";
    if (g.slots > 1)
      os << " + " << algo.ngpus << " * slot";
    os << ");\n";
    return;
  }
  int mid = lo + (hi - lo) / 2;
  os << indent << "if (fn < " << mid << ") {\n";
  emitCall(lo, mid, names, indent + "  ");
  os << indent << "} else {\n";
  emitCall(mid, hi, names, indent + "  ");
  os << indent << "}\n";
}

Expected<GeneratedCode> Generator::run() {
  msccl::Matching matching = msccl::matchMessages(algo);
  if (!matching.issues.empty())
    return Error("cannot generate code: " + matching.issues.front().message);
  messages = matching.messages;
  for (int i = 0; i < (int)messages.size(); ++i) {
    const msccl::Message &m = messages[i];
    sendMsg[{m.send.rank, m.send.tb, m.send.step}] = i;
    recvMsg[{m.recv.rank, m.recv.tb, m.recv.step}] = i;
  }
  planLandings();
  planSwitchFlags();
  int maxScratch = 0;
  for (const msccl::Gpu &g : algo.gpus) {
    maxScratch = std::max(maxScratch, g.sChunks);
    int tbs = 0;
    for (const msccl::Threadblock &tb : g.tbs) {
      tbs = std::max(tbs, tb.id + 1);
      maxSteps = std::max(maxSteps, (int)tb.steps.size());
    }
    maxTbs = std::max(maxTbs, tbs);
  }
  maxTbs = std::max(maxTbs, 1);
  int maxLanding = 0, maxData = 0, maxCredit = 0;
  for (int r = 0; r < algo.ngpus; ++r) {
    maxLanding = std::max(maxLanding, landingChunks[r]);
    maxData = std::max(maxData, dataFlags[r]);
    maxCredit = std::max(maxCredit, creditFlags[r]);
  }
  bool switchReadsInput = false;
  for (const msccl::Gpu &g : algo.gpus)
    for (const msccl::Threadblock &tb : g.tbs)
      for (const msccl::Step &st : tb.steps)
        switchReadsInput |=
            st.type == StepType::SwitchReduce && st.srcBuf == BufferKind::Input;
  stats.ranks = algo.ngpus;
  stats.messages = (int)messages.size();
  stats.landingChunks = maxLanding;
  bool reduces = col.isReduction();

  std::ostringstream body;
  for (const msccl::Gpu &g : algo.gpus)
    for (const msccl::Threadblock &tb : g.tbs) {
      os.str("");
      holeVals.clear();
      emitThreadblock(g.id, tb);
      TbCode c;
      c.rank = g.id;
      c.tb = tb.id;
      c.text = os.str();
      c.vals = std::move(holeVals);
      c.header = tb.switchId >= 0
                     ? "switch " + std::to_string(tb.switchId) + " lane " +
                           std::to_string(tb.switchLane) + ", " +
                           std::to_string(tb.group.size()) + " ranks, " +
                           std::to_string(tb.steps.size()) + " steps"
                     : "send " + std::to_string(tb.send) + ", recv " +
                           std::to_string(tb.recv) + ", channel " +
                           std::to_string(tb.chan) + ", " +
                           std::to_string(tb.steps.size()) + " steps";
      codes.push_back(std::move(c));
    }
  groupThreadblocks();
  std::vector<std::string> names;
  os.str("");
  emitFunctions(names);
  body << os.str();
  os.str("");

  const std::string &ns = in.name;
  os << "// Generated by ccsynth: do not edit.\n"
     << "// algorithm " << ns << ": " << in.collectiveName << " ("
     << col.describe() << "), " << algo.ngpus << " ranks\n"
     << "// source: " << (in.origin.empty() ? "unknown" : in.origin)
     << "; IR hash " << in.irHash << "\n"
     << "// " << stats.threadblocks << " threadblocks, " << stats.steps
     << " steps, " << stats.messages << " messages (" << stats.directMessages
     << " written straight into their destination); " << stats.functions
     << " functions, " << stats.sharedFunctions
     << " of them shared by symmetric ranks\n"
     << "// Build: nvcc (device) or the host C++ compiler; see "
        "docs/runtime.md.\n"
     << "#include \"ccsynth/runtime/Generated.h\"\n\n"
     << "namespace ccsynth_gen_" << ns << " {\n"
     << "using namespace ccsynth::rt;\n\n"
     << "struct Algo {\n"
     << "  static constexpr Shape shape = {\"" << ns << "\", \""
     << in.collectiveName << "\", Coll::" << shape.coll << ", " << algo.ngpus
     << ", " << in.root << ", " << (col.inPlace ? "true" : "false") << ", "
     << (reduces ? "true" : "false") << ", " << shape.blockChunks << ", "
     << shape.inBlocks << ", " << shape.outBlocks << ", " << maxScratch << ", "
     << maxLanding << ", " << maxData << ", " << maxCredit << ", " << maxTbs
     << ", " << maxSteps << ", " << (maxScratch > 0 ? "true" : "false") << ", "
     << shape.countMultiple << ", \"" << in.irHash << "\"};\n"
     << "  static constexpr unsigned long long tileBytes = " << in.tileBytes
     << "ull;\n"
     << "  static constexpr unsigned long long minBytes = " << in.minBytes
     << "ull, maxBytes = " << in.maxBytes << "ull;\n"
     << "  /// Threadblocks of each rank.\n"
     << "  static constexpr int threadblocks[" << algo.ngpus << "] = {";
  for (int r = 0; r < algo.ngpus; ++r) {
    int tbs = 0;
    for (const msccl::Threadblock &tb : algo.gpu(r)->tbs)
      tbs = std::max(tbs, tb.id + 1);
    os << (r ? ", " : "") << tbs;
  }
  os << "};\n"
     << "  /// CUDA kernels: threads per block and 16-byte loads in flight per "
        "thread,\n  /// per SM architecture (Generated.h's knobsFor).\n"
     << "  static constexpr KernelKnobs kernelKnobs[" << in.kernelKnobs.size()
     << "] = {";
  for (size_t i = 0; i < in.kernelKnobs.size(); ++i)
    os << (i ? ", " : "") << "{" << in.kernelKnobs[i].arch << ", "
       << in.kernelKnobs[i].threads << ", " << in.kernelKnobs[i].loads << "}";
  os << "};\n"
     << "  /// Switch operations read every rank's input (transports must "
        "map them).\n"
     << "  static constexpr bool switchReadsInput = "
     << (switchReadsInput ? "true" : "false") << ";\n"
     << "  template <class X> static CCSYNTH_INLINE bool run(X &x, int rank, "
        "int tb);\n"
     << "};\n";
  // The ranks of each switch's operations (switch threadblocks), one row
  // per switch id: a threadblock names its switch by an integer, so that
  // the same threadblock of every node shares one function.
  std::map<int, std::vector<int>> switchRanks;
  size_t widest = 0;
  for (const msccl::Gpu &g : algo.gpus)
    for (const msccl::Threadblock &tb : g.tbs)
      if (tb.switchId >= 0) {
        switchRanks[tb.switchId] = tb.group;
        widest = std::max(widest, tb.group.size());
      }
  if (!switchRanks.empty()) {
    int rows = switchRanks.rbegin()->first + 1;
    os << "CCSYNTH_TABLE int kSwitchRanks[" << rows << "][" << widest
       << "] = {";
    for (int sw = 0; sw < rows; ++sw) {
      auto it = switchRanks.find(sw);
      os << (sw ? ",\n    {" : "\n    {");
      for (size_t i = 0; i < widest; ++i)
        os << (i ? ", " : "")
           << (it != switchRanks.end() && i < it->second.size() ? it->second[i]
                                                                : 0);
      os << "}";
    }
    os << "};\n";
  }
  os << body.str() << "\n"
     << "/// Runs threadblock `tb` of `rank`: its function is chosen once, "
        "by direct\n/// branches, and each function has one call site.\n"
     << "template <class X>\nCCSYNTH_INLINE bool Algo::run(X &x, int rank, "
        "int tb) {\n"
     << "  [[maybe_unused]] const int id = tb * " << algo.ngpus
     << " + rank;\n"
     << "  int fn = -1;\n";
  {
    // Function of each id (tb-major, so that ranks sharing a function are
    // one run), -1 where a rank has fewer threadblocks.
    std::vector<std::pair<int, int>> fnOf(algo.ngpus * maxTbs, {-1, 0});
    bool slotted = false;
    for (int f = 0; f < (int)groups.size(); ++f)
      for (size_t i = 0; i < groups[f].members.size(); ++i) {
        const TbCode &c = codes[groups[f].members[i]];
        fnOf[c.tb * algo.ngpus + c.rank] = {f, groups[f].slotOfMember(i)};
        slotted |= groups[f].slots > 1;
      }
    if (slotted)
      os << "  int slot = 0;\n";
    std::vector<SelectRun> runs;
    for (int id = 0; id < (int)fnOf.size(); ++id)
      if (runs.empty() || runs.back().fn != fnOf[id].first ||
          runs.back().slot != fnOf[id].second)
        runs.push_back({id, fnOf[id].first, fnOf[id].second});
    emitSelect(runs, 0, (int)runs.size(), "  ");
    os << "  if (fn < 0)\n    return true;\n";
    emitCall(0, (int)names.size(), names, "  ");
  }
  os << "}\n\n} // namespace ccsynth_gen_" << ns << "\n\n"
     << "#if defined(CCSYNTH_PLUGIN)\n"
     << "#include \"ccsynth/runtime/PluginEntry.h\"\n"
     << "CCSYNTH_DEFINE_ALGORITHM(ccsynth_gen_" << ns << "::Algo, " << ns
     << ")\n";
  // The same code under one more descriptor per further byte range, with
  // its own tile where it has one.
  for (size_t i = 0; i < in.moreRanges.size(); ++i) {
    const ByteRange &r = in.moreRanges[i];
    bool tiled = r.tileBytes != 0 && r.tileBytes != in.tileBytes;
    os << "CCSYNTH_DEFINE_ALGORITHM_" << (tiled ? "TILED" : "RANGE")
       << "(ccsynth_gen_" << ns << "::Algo, " << ns << "_range" << i + 2 << ", "
       << r.minBytes << "ull, " << r.maxBytes << "ull";
    if (tiled)
      os << ", " << r.tileBytes << "ull";
    os << ")\n";
  }
  os << "#endif\n";
  return GeneratedCode{os.str(), stats};
}

/// How far `peer` is from `rank` with the ranks in groups of `group`
/// (nodes): the group distance times `group` plus the distance within the
/// group, each modulo its count; with one group, (peer - rank) modulo the
/// ranks.
int relativeDistance(int rank, int peer, int n, int group) {
  const int groups = n / group;
  int across = ((peer / group - rank / group) % groups + groups) % groups;
  int within = ((peer % group - rank % group) % group + group) % group;
  return across * group + within;
}

/// The order relativeThreadblockIds gives a rank's threadblocks: by
/// switch or not, channel, peerless or not, send distance, receive
/// distance (n: none), then the old id.
std::tuple<bool, int, bool, int, int, int>
relativeKey(const msccl::Threadblock &tb, int rank, int n, int group) {
  int sd = tb.send >= 0 ? relativeDistance(rank, tb.send, n, group) : n;
  int rd = tb.recv >= 0 ? relativeDistance(tb.recv, rank, n, group) : n;
  bool local = tb.send < 0 && tb.recv < 0;
  return std::tuple(tb.switchId >= 0, tb.chan, local, sd, rd, tb.id);
}

/// The group size (a divisor of the ranks; the ranks themselves for one
/// group) under which the most ranks have the same threadblock roles, as
/// relativeKey lists them without ids: on several nodes, distances within
/// and across nodes, so that the last rank of a node numbers its peers as
/// the first does. Ties keep one group.
int relativeGroup(const msccl::Algo &algo) {
  const int n = algo.ngpus;
  int best = n, bestCount = 0;
  for (int group = n; group >= 2; --group) {
    if (n % group)
      continue;
    std::map<std::vector<std::tuple<bool, int, bool, int, int>>, int> roles;
    int most = 0;
    for (const msccl::Gpu &g : algo.gpus) {
      std::vector<std::tuple<bool, int, bool, int, int>> r;
      for (const msccl::Threadblock &tb : g.tbs) {
        auto [sw, chan, local, sd, rd, id] = relativeKey(tb, g.id, n, group);
        r.emplace_back(sw, chan, local, sd, rd);
      }
      std::sort(r.begin(), r.end());
      most = std::max(most, ++roles[r]);
    }
    if (most > bestCount) {
      best = group;
      bestCount = most;
    }
  }
  return best;
}

/// `algo` with each rank's threadblocks renumbered: point-to-point ones by
/// channel, then send peer at distance d and receive peer at distance d
/// (relativeDistance with ranks in groups of `group`, ascending), then
/// peerless ones, then switch threadblocks, each kind in its old order;
/// dependencies follow. `steps` receives `scheduleSteps` under the new
/// numbers. None when a dependency names a threadblock its rank does not
/// have.
std::optional<msccl::Algo>
relativeThreadblockIds(const msccl::Algo &algo,
                       const std::map<std::tuple<int, int, int>, int> &old,
                       std::map<std::tuple<int, int, int>, int> &steps,
                       int group) {
  msccl::Algo out = algo;
  const int n = algo.ngpus;
  for (msccl::Gpu &g : out.gpus) {
    auto key = [&](const msccl::Threadblock &tb) {
      return relativeKey(tb, g.id, n, group);
    };
    std::stable_sort(
        g.tbs.begin(), g.tbs.end(),
        [&](const msccl::Threadblock &a, const msccl::Threadblock &b) {
          return key(a) < key(b);
        });
    std::map<int, int> id;
    for (int i = 0; i < (int)g.tbs.size(); ++i)
      id[g.tbs[i].id] = i;
    for (msccl::Threadblock &tb : g.tbs) {
      for (msccl::Step &st : tb.steps)
        if (st.depid >= 0) {
          auto it = id.find(st.depid);
          if (it == id.end())
            return std::nullopt;
          st.depid = it->second;
        }
      tb.id = id.at(tb.id);
    }
    for (const auto &[k, v] : old)
      if (std::get<0>(k) == g.id)
        if (auto it = id.find(std::get<1>(k)); it != id.end())
          steps[{g.id, it->second, std::get<2>(k)}] = v;
  }
  return out;
}

} // namespace detail

using namespace detail;

Expected<GeneratedCode> generateCode(const CodeGenInput &input) {
  if (!input.algo || !input.collective)
    return Error("cannot generate code: no program");
  if (!validTileBytes((long long)input.tileBytes))
    return Error("tile bytes must be a positive multiple of 16");
  auto shape = blockShapeOf(*input.collective);
  if (!shape)
    return shape.error();
  for (char c : input.name)
    if (!(std::isalnum((unsigned char)c) || c == '_'))
      return Error("algorithm name '" + input.name +
                   "' is not an identifier (letters, digits, '_')");
  for (size_t i = 0; i < input.moreRanges.size(); ++i) {
    const ByteRange &r = input.moreRanges[i];
    std::uint64_t below =
        i == 0 ? input.maxBytes : input.moreRanges[i - 1].maxBytes;
    if (below == 0 || r.minBytes <= below ||
        (r.maxBytes != 0 && r.maxBytes < r.minBytes))
      return Error("byte range " + std::to_string(i + 2) + " [" +
                   std::to_string(r.minBytes) + ", " +
                   (r.maxBytes ? std::to_string(r.maxBytes) : "unbounded") +
                   "] is empty or not above the one before it");
    if (r.tileBytes != 0 && !validTileBytes((long long)r.tileBytes))
      return Error("byte range " + std::to_string(i + 2) +
                   ": tile bytes must be a positive multiple of 16");
  }
  if (input.algo->ngpus != input.collective->numRanks)
    return Error("the program has " + std::to_string(input.algo->ngpus) +
                 " ranks but its collective " +
                 std::to_string(input.collective->numRanks));
  // One knob entry per architecture, ascending (the runtime's knobsFor
  // takes the last entry at or below the code's architecture).
  CodeGenInput in = input;
  if (in.kernelKnobs.empty())
    in.kernelKnobs = defaultKernelKnobs();
  std::sort(
      in.kernelKnobs.begin(), in.kernelKnobs.end(),
      [](const KernelKnob &a, const KernelKnob &b) { return a.arch < b.arch; });
  for (size_t i = 0; i < in.kernelKnobs.size(); ++i) {
    const KernelKnob &k = in.kernelKnobs[i];
    if (!validKernelKnob(k))
      return Error("kernel knobs for sm_" + std::to_string(k.arch) + " (" +
                   std::to_string(k.threads) + " threads, " +
                   std::to_string(k.loads) +
                   " loads in flight) are not built: threads must be a "
                   "multiple of 32 up to 1024, loads 1, 2, 4, 8 or 16");
    if (i > 0 && in.kernelKnobs[i - 1].arch == k.arch)
      return Error("two kernel knob entries for sm_" + std::to_string(k.arch));
  }
  Generator gen(in, *shape);
  auto code = gen.run();
  if (!code || !in.shareRanks)
    return code;
  // Threadblocks numbered by their peers relative to the rank: where the
  // lowering numbered them in an order that differs between ranks of the
  // same role (the order their connections first appeared in), this makes
  // the ranks' code correspond, so that they share functions. The program
  // is the same; the fewer functions (then the shorter source) is kept.
  // Distances are taken over all ranks, and also within and across the
  // groups (nodes) under which most ranks have the same roles.
  const int n = in.algo->ngpus;
  std::vector<int> groupings = {n};
  if (int group = relativeGroup(*in.algo); group != n)
    groupings.push_back(group);
  for (int group : groupings) {
    std::map<std::tuple<int, int, int>, int> steps;
    std::optional<msccl::Algo> relative =
        relativeThreadblockIds(*in.algo, in.scheduleSteps, steps, group);
    if (!relative)
      continue;
    CodeGenInput rin = in;
    rin.algo = &*relative;
    rin.scheduleSteps = std::move(steps);
    Generator other(rin, *shape);
    auto alt = other.run();
    if (alt && (alt->stats.functions < code->stats.functions ||
                (alt->stats.functions == code->stats.functions &&
                 alt->source.size() < code->source.size())))
      code = std::move(alt);
  }
  return code;
}

} // namespace ccsynth::codegen
