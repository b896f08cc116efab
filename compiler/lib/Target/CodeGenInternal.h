//===- CodeGenInternal.h - The generator's shared declarations -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What CodeGen.cpp (emitting threadblocks, functions and the launch
// table) and CodeGenSharing.cpp (grouping threadblocks whose code differs
// only in integers into functions shared by ranks) both use: the buffer
// layout and the Generator class. Private to CCSynthTargetFormats.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Target/CodeGen.h"

#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace ccsynth::codegen::detail {

struct BlockShape {
  const char *coll;
  int blockChunks;
  int inBlocks;
  int outBlocks;
  int countMultiple;
};

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
    std::vector<int> members;       ///< indices into codes
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

} // namespace ccsynth::codegen::detail
