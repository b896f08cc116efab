//===- CodeGen.cpp - Interpreter-free code from a step-level program ------===//
#include "ccsynth/Target/CodeGen.h"

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

struct BlockShape {
  const char *coll;
  int blockChunks;
  int inBlocks;
  int outBlocks;
  int countMultiple;
};

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

/// Where a message is written at its receiver.
struct Landing {
  bool direct = false;
  BufferKind buffer = BufferKind::Output; ///< direct: the destination
  int offset = 0;      ///< direct: dst chunk; else landing chunk
  int dataFlag = 0;    ///< at the receiver
  int creditFlag = -1; ///< at the sender (landing only)
};

class Generator {
public:
  Generator(const CodeGenInput &in, BlockShape shape)
      : in(in), algo(*in.algo), col(*in.collective), shape(shape) {}

  Expected<GeneratedCode> run();

private:
  const CodeGenInput &in;
  const msccl::Algo &algo;
  const Collective &col;
  BlockShape shape;
  std::vector<msccl::Message> messages;
  std::map<std::tuple<int, int, int>, int> sendMsg, recvMsg;
  std::vector<Landing> landing;
  std::vector<int> landingChunks, dataFlags, creditFlags;
  /// Switch threadblocks' barrier flags: the first data flag of each
  /// (rank, switch, lane); 2 x (group size - 1) follow it.
  std::map<std::tuple<int, int, int>, int> switchFlags;
  void planSwitchFlags();
  /// The data flag at `receiver` that `sender` sets in barrier b of switch
  /// threadblock `tb`'s group.
  int barrierFlag(const msccl::Threadblock &tb, int receiver, int b,
                  int sender) const;
  void emitBarrier(const msccl::Threadblock &tb, int rank, int b,
                   const std::string &indent);
  CodeGenStats stats;
  std::ostringstream os;
  /// Values of the integer holes ("\x01") written into `os`, in order.
  std::vector<long long> holeVals;
  std::string H(long long v) {
    holeVals.push_back(v);
    return "\x01";
  }
  /// One threadblock's code with its integers left as holes.
  struct TbCode {
    int rank = 0, tb = 0;
    std::string text;
    std::vector<long long> vals;
    std::string header; ///< comment line, for the unshared form
  };
  /// Threadblocks whose code differs only in its integers.
  struct Group {
    std::vector<int> members; ///< indices into codes
    std::vector<std::string> exprs; ///< per hole: literal or rank expression
    bool shared = false;
    /// Values no rank expression fits: rows of a constant table indexed by
    /// rank (all ranks, zero where not a member).
    std::vector<std::vector<long long>> table;
    /// Threadblocks of one rank in the group (the instances of one role,
    /// or roles of the same code, as sends to different peers): each
    /// member's slot (parallel to members; empty for one slot), the same
    /// on every rank for the k-th of them whatever its threadblock id
    /// there; the function's `rank` is slot * (ranks) + rank (the slot is
    /// chosen with the function, by direct branches).
    int slots = 1;
    std::vector<int> slotOf;
    int slotOfMember(size_t i) const { return slotOf.empty() ? 0 : slotOf[i]; }
    /// Its table is in global memory (CCSYNTH_GLOBAL_TABLE): the tables
    /// placed before it filled the constant budget.
    bool globalTable = false;
  };
  /// Table entries of all groups. The first kConstantTableBudget are in
  /// constant memory (within a GPU's 64 KB constant bank with room to
  /// spare), the rest in global memory, read through the cache: a shared
  /// function with a table is far shorter to build than one function per
  /// rank. kTableBudget bounds them all (4 MiB).
  static constexpr long long kConstantTableBudget = 12288;
  static constexpr long long kTableBudget = 1 << 20;
  long long tableEntries = 0, constantTableEntries = 0;
  std::vector<TbCode> codes;
  std::vector<Group> groups;
  void groupThreadblocks();
  std::string functionName(int fn) const;
  void emitFunctions(std::vector<std::string> &names);
  /// A run of threadblock ids (tb x ranks + rank) with one function and
  /// slot: its first id.
  struct SelectRun {
    int first, fn, slot;
  };
  void emitSelect(const std::vector<SelectRun> &runs, int lo, int hi,
                  const std::string &indent);
  void emitCall(int lo, int hi, const std::vector<std::string> &names,
                const std::string &indent);

  void planLandings();
  const msccl::Threadblock &tbOf(int rank, int id) const;
  int blockChunksOf(BufferKind b) const {
    return b == BufferKind::Scratch ? 1 << 30 : shape.blockChunks;
  }
  /// Emits `call(args, srcRun, dstRun, n)` once per run of chunks that stays
  /// within one block of both buffers.
  void emitRuns(const std::string &indent, const std::string &prefix,
                const char *srcName, BufferKind srcKind, int srcOff,
                const char *dstName, BufferKind dstKind, int dstOff, int cnt,
                const char *thirdName = nullptr,
                BufferKind thirdKind = BufferKind::Input, int thirdOff = 0,
                long long prefixValue = -1);
  void emitSend(const std::string &indent, int rank, int tbId, int k,
                const char *srcName, BufferKind srcKind, int srcOff, int cnt);
  void emitThreadblock(int rank, const msccl::Threadblock &tb);
  std::string stepComment(int rank, const msccl::Threadblock &tb, int k);
  int maxTbs = 0, maxSteps = 0;
};

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

namespace {

long long floorMod(long long a, long long m) { return ((a % m) + m) % m; }

long long gcdOf(long long a, long long b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) {
    long long t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/// y = c + s * ((a * x + b) mod m) over x in [0, m).
struct Fit1 {
  long long c = 0, s = 0, a = 0, b = 0, m = 1;
  long long at(long long x) const {
    return s == 0 ? c : c + s * floorMod(a * x + b, m);
  }
};

/// Fits `points` (distinct x in [0, m)) to Fit1; false when none is found.
bool fit1(const std::vector<std::pair<long long, long long>> &pts, long long m,
          Fit1 &out) {
  out = Fit1{};
  out.m = m;
  out.c = pts.front().second;
  bool constant = true;
  for (auto &p : pts)
    constant &= p.second == out.c;
  if (constant)
    return true;
  if (pts.size() < 2)
    return false;
  long long lo = pts.front().second, s = 0;
  for (auto &p : pts) {
    lo = std::min(lo, p.second);
    s = gcdOf(s, p.second - pts.front().second);
  }
  // Two ways to anchor the residues: the smallest value is residue 0, or
  // (values that are residues already) the values themselves.
  for (int anchor = 0; anchor < 2; ++anchor) {
    long long c = anchor == 0 ? lo : 0, step = anchor == 0 ? s : 1;
    std::vector<long long> z;
    bool ok = true;
    for (auto &p : pts) {
      long long d = p.second - c;
      if (d < 0 || d % step != 0 || d / step >= m) {
        ok = false;
        break;
      }
      z.push_back(d / step);
    }
    if (!ok)
      continue;
    long long dx = floorMod(pts[1].first - pts[0].first, m);
    long long dz = floorMod(z[1] - z[0], m);
    for (long long a = 0; a < m; ++a) {
      if (floorMod(a * dx, m) != dz)
        continue;
      Fit1 f{c, step, a, floorMod(z[0] - a * pts[0].first, m), m};
      bool all = true;
      for (auto &p : pts)
        all &= f.at(p.first) == p.second;
      if (all) {
        out = f;
        return true;
      }
    }
  }
  return false;
}

/// `f` as a C++ expression of `x`.
std::string fitExpression(const Fit1 &f, const std::string &x) {
  if (f.s == 0)
    return std::to_string(f.c);
  std::string r = f.a == 1 ? x : std::to_string(f.a) + " * " + x;
  if (f.b)
    r += " + " + std::to_string(f.b);
  if (f.a != 1 || f.b != 0)
    r = "(" + r + ") % " + std::to_string(f.m);
  if (f.s != 1)
    r = std::to_string(f.s) + " * (" + r + ")";
  if (f.c > 0)
    r += " + " + std::to_string(f.c);
  else if (f.c < 0)
    r += " - " + std::to_string(-f.c);
  return r;
}

/// A C++ expression in `rank` (the expression `var`) for the values `vals`
/// taken at `ranks`: v = F(rank / L) + G(rank % L), each of F and G an
/// affine map modulo the size of its range (rings, rails, nodes). Empty
/// when no such form fits.
std::string rankExpression(const std::vector<int> &ranks,
                           const std::vector<long long> &vals, int n,
                           const std::string &var = "rank") {
  bool constant = true;
  for (long long v : vals)
    constant &= v == vals.front();
  if (constant)
    return std::to_string(vals.front());
  for (long long L = n; L >= 1; --L) {
    if (n % L != 0)
      continue;
    long long Q = n / L;
    long long q0 = ranks[0] / L, l0 = ranks[0] % L, v0 = vals[0];
    std::vector<std::pair<long long, long long>> byL, byQ;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] / L == q0)
        byL.push_back({ranks[i] % L, vals[i]});
      if (ranks[i] % L == l0)
        byQ.push_back({ranks[i] / L, vals[i]});
    }
    Fit1 g, f;
    if (!fit1(byL, L, g) || !fit1(byQ, Q, f))
      continue;
    bool all = true;
    for (size_t i = 0; i < ranks.size() && all; ++i)
      all = f.at(ranks[i] / L) + g.at(ranks[i] % L) - v0 == vals[i];
    if (!all)
      continue;
    long long c = f.c + g.c - v0;
    std::string e;
    auto term = [&](Fit1 t, const std::string &x) {
      if (t.s == 0)
        return;
      t.c = 0; // the constants of both terms are summed in c
      if (!e.empty())
        e += " + ";
      e += fitExpression(t, x);
    };
    term(f, L == 1 ? var : "(" + var + " / " + std::to_string(L) + ")");
    term(g, L == n ? var : "(" + var + " % " + std::to_string(L) + ")");
    if (c > 0)
      e += " + " + std::to_string(c);
    else if (c < 0)
      e += " - " + std::to_string(-c);
    return e;
  }
  return {};
}

std::string stripComments(const std::string &text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t i = line.find_first_not_of(' ');
    if (i != std::string::npos && line.compare(i, 2, "//") == 0)
      continue;
    out += line;
    out += '\n';
  }
  return out;
}

} // namespace

void Generator::groupThreadblocks() {
  // The same code up to its integers, at most one threadblock per rank
  // (the function is parameterized by the rank alone). Threadblock ids need
  // not agree: ranks may number the same role differently.
  std::map<std::string, std::vector<int>> byKey;
  for (int i = 0; i < (int)codes.size(); ++i) {
    auto it = byKey.try_emplace(stripComments(codes[i].text)).first;
    // The first group of this code that has no threadblock of this rank
    // and holds this threadblock's id on another rank, else the first
    // that has none of this rank: ranks whose threadblocks of one role
    // agree stay in one group, and so the instances of that role line up
    // on every rank (slots, below) where some rank has one more of it.
    int target = -1, sameId = -1;
    for (int gi : it->second) {
      bool has = false, id = false;
      for (int m : groups[gi].members) {
        has |= codes[m].rank == codes[i].rank;
        id |= codes[m].tb == codes[i].tb;
      }
      if (!has && target < 0)
        target = gi;
      if (!has && id) {
        sameId = gi;
        break;
      }
    }
    if (sameId >= 0)
      target = sameId;
    if (target < 0) {
      target = (int)groups.size();
      it->second.push_back(target);
      groups.push_back({});
    }
    groups[target].members.push_back(i);
  }
  // Groups of one code whose ranks are the same (the instances of one
  // role, or roles of one code such as sends to different peers) become
  // one group of several slots: one function serves each rank's
  // threadblocks of that code, its integers expressions of the slot and
  // the rank.
  std::vector<Group> merged;
  std::vector<const std::vector<int> *> listOf(groups.size(), nullptr);
  for (const auto &entry : byKey)
    for (int gi : entry.second)
      listOf[gi] = &entry.second;
  for (int first = 0; first < (int)groups.size(); ++first) {
    const std::vector<int> &list = *listOf[first];
    if (list.front() != first)
      continue; // merged (or kept) with the first group of its code
    auto ranksOf = [&](const Group &g) {
      std::vector<int> r;
      for (int m : g.members)
        r.push_back(codes[m].rank);
      std::sort(r.begin(), r.end());
      return r;
    };
    // The groups of this code on the same ranks (in their order): one
    // group of slots, the k-th group's threadblocks the k-th slot (their
    // ids may differ between ranks: the slot is chosen by branches).
    std::vector<std::pair<std::vector<int>, std::vector<int>>> byRanks;
    for (int gi : list) {
      std::vector<int> r = ranksOf(groups[gi]);
      auto it = std::find_if(byRanks.begin(), byRanks.end(),
                             [&](const auto &b) { return b.first == r; });
      if (it == byRanks.end())
        byRanks.push_back({std::move(r), {gi}});
      else
        it->second.push_back(gi);
    }
    for (const auto &[ranks, same] : byRanks) {
      if (same.size() == 1 || !in.shareRanks) {
        for (int gi : same)
          merged.push_back(groups[gi]);
        continue;
      }
      Group g;
      g.slots = (int)same.size();
      for (size_t j = 0; j < same.size(); ++j)
        for (int m : groups[same[j]].members) {
          g.members.push_back(m);
          g.slotOf.push_back((int)j);
        }
      merged.push_back(std::move(g));
    }
  }
  // A group shares one function when every integer is an expression of its
  // rank or an entry of a table within the budget; otherwise its members
  // keep their own functions.
  std::vector<Group> out;
  auto tableSize = [&](const Group &g) {
    return (long long)g.table.size() * algo.ngpus * g.slots;
  };
  // The group sharing one function, its tables named "\x02" until it
  // takes its place; none when some value fits no expression and its
  // tables exceed what the budget has left.
  auto share = [&](Group g) -> std::optional<Group> {
    const TbCode &first = codes[g.members.front()];
    // The function's rank: slot x (ranks) + rank.
    std::vector<int> ranks;
    for (size_t i = 0; i < g.members.size(); ++i)
      ranks.push_back(codes[g.members[i]].rank +
                      algo.ngpus * g.slotOfMember(i));
    const int n = algo.ngpus * g.slots, size = (int)ranks.size();
    const std::string tname = "\x02";
    std::map<std::vector<long long>, int> rows;
    auto tableRow = [&](const std::vector<long long> &row) {
      auto [it, fresh] = rows.try_emplace(row, (int)g.table.size());
      if (fresh)
        g.table.push_back(row);
      return tname + "[" + std::to_string(it->second) + "]";
    };
    std::vector<std::vector<long long>> holeVals(first.vals.size());
    std::vector<int> unfit;
    for (size_t h = 0; h < first.vals.size(); ++h) {
      for (int m : g.members)
        holeVals[h].push_back(codes[m].vals[h]);
      g.exprs.push_back(rankExpression(ranks, holeVals[h], n));
      if (g.exprs.back().empty())
        unfit.push_back((int)h);
    }
    // Ranks joined in one cycle by some value (a ring's next peer):
    // positions along it relabel the ranks, and values that are affine
    // in the position (chunks travelling the ring) need no row each. The
    // cycle is that of the first slot's threadblocks (every slot holds
    // the same ranks); a value may add a term affine in the slot.
    const int n0 = algo.ngpus;
    std::vector<int> zero; // members of slot 0
    for (int i = 0; i < size; ++i)
      if (ranks[i] < n0)
        zero.push_back(i);
    const int size0 = (int)zero.size();
    std::vector<long long> pos0(n0, 0), order(n, 0);
    bool cycle = false;
    std::map<int, int> memberIndex; // real rank -> its slot-0 member
    for (int i : zero)
      memberIndex[ranks[i]] = i;
    for (size_t h = 0;
         h < holeVals.size() && !unfit.empty() && size0 >= 3 && !cycle; ++h) {
      std::vector<char> seen(size, 0);
      int cur = zero.front(), len = 0;
      bool ok = true;
      while (ok && !seen[cur]) {
        seen[cur] = 1;
        order[len] = ranks[cur];
        pos0[ranks[cur]] = len++;
        auto it = memberIndex.find((int)holeVals[h][cur]);
        ok = it != memberIndex.end();
        if (ok)
          cur = it->second;
      }
      cycle = ok && len == size0 && cur == zero.front();
    }
    std::string posExpr;
    if (cycle) {
      std::vector<long long> pos(n, 0);
      for (int v = 0; v < n; ++v)
        pos[v] = pos0[v % n0];
      posExpr = tableRow(pos) + "[rank]";
    }
    const std::string slotExpr = "(rank / " + std::to_string(n0) + ")";
    // F(slot) of hole h: each member's value less its rank's in slot 0,
    // when that depends on the slot alone and fits.
    auto slotTermOf = [&](int h, Fit1 &fs) {
      std::vector<long long> atZero(n0, 0);
      for (int i : zero)
        atZero[ranks[i]] = holeVals[h][i];
      std::map<long long, long long> bySlot;
      for (int i = 0; i < size; ++i) {
        long long d = holeVals[h][i] - atZero[ranks[i] % n0];
        auto [it, fresh] = bySlot.try_emplace(ranks[i] / n0, d);
        if (!fresh && it->second != d)
          return false;
      }
      std::vector<std::pair<long long, long long>> slotPts(bySlot.begin(),
                                                           bySlot.end());
      return fit1(slotPts, g.slots, fs);
    };
    for (int h : unfit) {
      std::string e;
      if (cycle) {
        Fit1 fs;
        bool slotTerm = slotTermOf(h, fs);
        bool noSlot = slotTerm && fs.s == 0 && fs.c == 0;
        std::vector<std::pair<long long, long long>> byPos, relabeled;
        bool members = true;
        for (int i : zero) {
          long long v = holeVals[h][i];
          byPos.push_back({pos0[ranks[i]], v});
          auto it = memberIndex.find((int)v);
          members &= v >= 0 && v < n0 && it != memberIndex.end();
          if (members)
            relabeled.push_back({pos0[ranks[i]], pos0[v]});
        }
        std::sort(byPos.begin(), byPos.end());
        std::sort(relabeled.begin(), relabeled.end());
        Fit1 f;
        if (slotTerm && fit1(byPos, size0, f)) {
          e = fitExpression(f, posExpr);
          if (!noSlot)
            e += " + " + fitExpression(fs, slotExpr);
        } else if (noSlot && members && fit1(relabeled, size0, f) && f.c == 0 &&
                   f.s == 1)
          e = tableRow(order) + "[" + fitExpression(f, posExpr) + "]";
      }
      if (e.empty() && g.slots > 1) {
        // An expression of the real rank (rank % ranks) fitted on slot 0,
        // plus a term of the slot: the instances of a role differ by an
        // offset per slot (their chunks, flags, switch).
        std::vector<int> zeroRanks;
        std::vector<long long> zeroVals;
        for (int i : zero) {
          zeroRanks.push_back(ranks[i]);
          zeroVals.push_back(holeVals[h][i]);
        }
        std::string byRank = rankExpression(
            zeroRanks, zeroVals, n0, "(rank % " + std::to_string(n0) + ")");
        Fit1 fs;
        if (!byRank.empty() && slotTermOf(h, fs)) {
          e = byRank;
          if (fs.s != 0 || fs.c != 0)
            e = "(" + e + ") + " + fitExpression(fs, slotExpr);
        }
      }
      if (e.empty()) {
        std::vector<long long> row(n, 0);
        for (int i = 0; i < size; ++i)
          row[ranks[i]] = holeVals[h][i];
        e = tableRow(row) + "[rank]";
      }
      g.exprs[h] = e;
    }
    if (tableEntries + tableSize(g) > kTableBudget)
      return std::nullopt;
    g.shared = true;
    return g;
  };
  auto single = [&](int m) {
    Group one;
    one.members = {m};
    for (long long v : codes[m].vals)
      one.exprs.push_back(std::to_string(v));
    out.push_back(one);
  };
  // Takes its place as function out.size(), its members' own functions
  // where its tables no longer fit.
  auto place = [&](Group g) {
    if (tableEntries + tableSize(g) > kTableBudget) {
      for (int m : g.members)
        single(m);
      return;
    }
    tableEntries += tableSize(g);
    if (constantTableEntries + tableSize(g) <= kConstantTableBudget)
      constantTableEntries += tableSize(g);
    else
      g.globalTable = true;
    const std::string tname = "t" + std::to_string(out.size());
    for (std::string &e : g.exprs)
      for (size_t at; (at = e.find('\x02')) != std::string::npos;)
        e.replace(at, 1, tname);
    out.push_back(std::move(g));
  };
  for (Group &g : merged) {
    if (g.slots == 1) {
      std::optional<Group> whole;
      if (g.members.size() > 1 && in.shareRanks)
        whole = share(g);
      if (whole)
        place(std::move(*whole));
      else
        for (int m : g.members)
          single(m);
      continue;
    }
    // Several slots: runs of slots at a common stride (the instances of
    // one ring among several rings), each one function where its tables
    // take no more entries than one function per slot would (a role whose
    // peers differ by slot, as direct sends' or a ring's two directions,
    // needs a table where each slot alone needs none). From each slot not
    // yet placed, the first stride that joins it to another slot; the run
    // grows along it while that holds.
    std::vector<Group> perSlot(g.slots);
    for (size_t i = 0; i < g.members.size(); ++i)
      perSlot[g.slotOfMember(i)].members.push_back(g.members[i]);
    std::vector<std::optional<Group>> slotShared;
    for (Group &one : perSlot)
      slotShared.push_back(one.members.size() > 1 ? share(one) : std::nullopt);
    auto runOf = [&](int from, int stride, int count) {
      Group r;
      r.slots = count;
      for (int k = 0; k < count; ++k)
        for (int m : perSlot[from + k * stride].members) {
          r.members.push_back(m);
          r.slotOf.push_back(k);
        }
      return r;
    };
    auto alone = [&](int k) {
      return slotShared[k] ? tableSize(*slotShared[k]) : 0;
    };
    std::vector<char> placed(g.slots, 0);
    for (int from = 0; from < g.slots; ++from) {
      if (placed[from])
        continue;
      std::optional<Group> run;
      int runStride = 0, runCount = 1;
      for (int stride = 1; !run && from + stride < g.slots; ++stride) {
        long long entries = alone(from);
        bool allShared = (bool)slotShared[from];
        for (int k = from + stride; k < g.slots && !placed[k]; k += stride) {
          int count = (k - from) / stride + 1;
          std::optional<Group> longer = share(runOf(from, stride, count));
          bool kShared = (bool)slotShared[k];
          // A slot's own function costs its text; a table entry, about
          // six characters of source and four bytes of data.
          long long text =
              (long long)codes[perSlot[k].members.front()].text.size();
          if (!longer || (allShared && kShared &&
                          6 * (tableSize(*longer) - entries - alone(k)) > text))
            break;
          run = std::move(longer);
          runStride = stride;
          runCount = count;
          entries += alone(k);
          allShared = allShared && kShared;
        }
      }
      for (int k = 0; k < runCount; ++k)
        placed[from + k * runStride] = 1;
      if (run)
        place(std::move(*run));
      else if (slotShared[from])
        place(std::move(*slotShared[from]));
      else
        for (int m : perSlot[from].members)
          single(m);
    }
  }
  groups = std::move(out);
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

} // namespace

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
