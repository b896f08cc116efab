//===- CodeGen.cpp - Interpreter-free code from a step-level program ------===//
#include "ccsynth/Target/CodeGen.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

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
  CodeGenStats stats;
  std::ostringstream os;

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
                BufferKind thirdKind = BufferKind::Input, int thirdOff = 0);
  void emitSend(const std::string &indent, int rank, int tbId, int k,
                const char *srcName, BufferKind srcKind, int srcOff, int cnt);
  void emitThreadblock(int rank, const msccl::Threadblock &tb);
  void emitDispatch(int lo, int hi, const std::string &indent);
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
  for (const msccl::Message &m : messages) {
    const msccl::Step &st = tbOf(m.recv.rank, m.recv.tb).steps[m.recv.step];
    Landing l;
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
      l.creditFlag = creditFlags[m.send.rank]++;
    }
    landing.push_back(l);
  }
}

void Generator::emitRuns(const std::string &indent, const std::string &prefix,
                         const char *srcName, BufferKind srcKind, int srcOff,
                         const char *dstName, BufferKind dstKind, int dstOff,
                         int cnt, const char *thirdName, BufferKind thirdKind,
                         int thirdOff) {
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
    auto loc = [](const char *name, int off, int k) {
      return std::string(name) + ", " + std::to_string(off / k) + ", " +
             std::to_string(off % k);
    };
    os << indent << prefix << loc(srcName, srcOff + i, ks) << ", ";
    if (thirdName)
      os << loc(thirdName, thirdOff + i, kt) << ", ";
    os << loc(dstName, dstOff + i, kd) << ", " << (j - i) << ");\n";
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
    os << indent << "CCSYNTH_TRY(x.waitCredit(" << k << ", " << l.creditFlag
       << "));\n";
  std::string prefix = "x.put(" + std::to_string(peer) + ", ";
  if (l.direct)
    emitRuns(indent, prefix, srcName, srcKind, srcOff, bufName(l.buffer),
             l.buffer, l.offset, cnt);
  else
    emitRuns(indent, prefix, srcName, srcKind, srcOff, "Land",
             BufferKind::Scratch, l.offset, cnt);
  os << indent << "x.signal(" << peer << ", " << l.dataFlag << ");\n";
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
  os << "\n// rank " << rank << ", threadblock " << tb.id << ": send "
     << tb.send << ", recv " << tb.recv << ", channel " << tb.chan << ", "
     << tb.steps.size() << " steps\n";
  os << "template <class X> CCSYNTH_TB_FN bool r" << rank << "_tb" << tb.id
     << "(X &x) {\n";
  bool puts = false;
  for (const msccl::Step &st : tb.steps)
    puts |= msccl::sends(st.type);
  if (puts)
    os << i1 << "CCSYNTH_TRY(x.connect(" << tb.send << "));\n";
  os << i1 << "const int passes = x.numPasses();\n";
  os << i1 << "for (int p = 0; p < passes; ++p) {\n";
  os << i2 << "CCSYNTH_TRY(x.beginPass(p));\n";
  if (tb.id == 0) {
    // Threadblock 0 stages the remainder of the input blocks that hold data.
    std::set<int> inBlocks;
    for (int i = 0; i < col.inputChunks; ++i)
      if (col.pre[rank][i] >= 0)
        inBlocks.insert(i / shape.blockChunks);
    os << i2 << "if (x.isRemainder(p)) {\n";
    for (int b : inBlocks)
      os << i2 << "  x.stageIn(" << b << ", " << b + 1 << ");\n";
    os << i2 << "  x.publishStaged(p);\n" << i2 << "}\n";
  }
  for (int k = 0; k < (int)tb.steps.size(); ++k) {
    const msccl::Step &st = tb.steps[k];
    os << i2 << "// " << stepComment(rank, tb, k) << "\n";
    if (st.depid >= 0)
      os << i2 << "CCSYNTH_TRY(x.waitStep(" << k << ", " << st.depid << ", "
         << st.deps << "));\n";
    const char *src = bufName(st.srcBuf), *dst = bufName(st.dstBuf);
    auto recvPart = [&](bool reduce, bool store) -> const Landing * {
      int m = recvMsg.at({rank, tb.id, k});
      const Landing &l = landing[m];
      os << i2 << "CCSYNTH_TRY(x.waitData(" << k << ", " << l.dataFlag
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
        os << i2 << "x.credit(" << tb.recv << ", " << l->creditFlag << ");\n";
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
    }
    if (st.hasdep)
      os << i2 << "x.done(" << k << ");\n";
  }
  os << i2 << "x.endPass(p);\n" << i1 << "}\n";
  if (tb.id == 0) {
    std::set<int> outBlocks;
    for (int j = 0; j < col.outputChunks; ++j)
      if (col.post[rank][j])
        outBlocks.insert(j / shape.blockChunks);
    os << i1 << "if (passes > 0 && x.isRemainder(passes - 1)) {\n";
    os << i1 << "  CCSYNTH_TRY(x.awaitRankDone(" << tb.steps.size() << "));\n";
    for (int b : outBlocks)
      os << i1 << "  x.stageOut(" << b << ", " << b + 1 << ");\n";
    os << i1 << "}\n";
  }
  os << i1 << "return true;\n}\n";
  ++stats.threadblocks;
  stats.steps += (int)tb.steps.size();
}

void Generator::emitDispatch(int lo, int hi, const std::string &indent) {
  // Ids lo..hi-1 (rank * maxTbs + tb); a balanced tree of direct branches.
  if (hi - lo == 1) {
    int rank = lo / maxTbs, tb = lo % maxTbs;
    const msccl::Gpu *g = algo.gpu(rank);
    bool exists = false;
    for (const msccl::Threadblock &t : g->tbs)
      exists |= t.id == tb;
    if (exists)
      os << indent << "return r" << rank << "_tb" << tb << "(x);\n";
    else
      os << indent << "return true;\n";
    return;
  }
  int mid = lo + (hi - lo) / 2;
  os << indent << "if (id < " << mid << ") {\n";
  emitDispatch(lo, mid, indent + "  ");
  os << indent << "} else {\n";
  emitDispatch(mid, hi, indent + "  ");
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
  stats.ranks = algo.ngpus;
  stats.messages = (int)messages.size();
  stats.landingChunks = maxLanding;
  bool reduces = col.isReduction();

  std::ostringstream body;
  std::swap(os, body);
  for (const msccl::Gpu &g : algo.gpus)
    for (const msccl::Threadblock &tb : g.tbs)
      emitThreadblock(g.id, tb);
  std::swap(os, body);

  const std::string &ns = in.name;
  os << "// Generated by ccsynth: do not edit.\n"
     << "// algorithm " << ns << ": " << in.collectiveName << " ("
     << col.describe() << "), " << algo.ngpus << " ranks\n"
     << "// source: " << (in.origin.empty() ? "unknown" : in.origin)
     << "; IR hash " << in.irHash << "\n"
     << "// " << stats.threadblocks << " threadblocks, " << stats.steps
     << " steps, " << stats.messages << " messages (" << stats.directMessages
     << " written straight into their destination)\n"
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
     << "  template <class X> static CCSYNTH_INLINE bool run(X &x, int rank, "
        "int tb);\n"
     << "};\n"
     << body.str() << "\n"
     << "/// Runs threadblock `tb` of `rank`: chosen once, by direct "
        "branches.\n"
     << "template <class X>\nCCSYNTH_INLINE bool Algo::run(X &x, int rank, "
        "int tb) {\n"
     << "  const int id = rank * " << maxTbs << " + tb;\n";
  emitDispatch(0, algo.ngpus * maxTbs, "  ");
  os << "}\n\n} // namespace ccsynth_gen_" << ns << "\n\n"
     << "#if defined(CCSYNTH_PLUGIN)\n"
     << "#include \"ccsynth/runtime/PluginEntry.h\"\n"
     << "CCSYNTH_DEFINE_ALGORITHM(ccsynth_gen_" << ns << "::Algo, " << ns
     << ")\n"
     << "#endif\n";
  return GeneratedCode{os.str(), stats};
}

} // namespace

Expected<GeneratedCode> generateCode(const CodeGenInput &input) {
  if (!input.algo || !input.collective)
    return Error("cannot generate code: no program");
  if (input.tileBytes < 16 || input.tileBytes % 16 != 0)
    return Error("tile bytes must be a positive multiple of 16");
  auto shape = blockShapeOf(*input.collective);
  if (!shape)
    return shape.error();
  for (char c : input.name)
    if (!(std::isalnum((unsigned char)c) || c == '_'))
      return Error("algorithm name '" + input.name +
                   "' is not an identifier (letters, digits, '_')");
  if (input.algo->ngpus != input.collective->numRanks)
    return Error("the program has " + std::to_string(input.algo->ngpus) +
                 " ranks but its collective " +
                 std::to_string(input.collective->numRanks));
  Generator gen(input, *shape);
  return gen.run();
}

} // namespace ccsynth::codegen
