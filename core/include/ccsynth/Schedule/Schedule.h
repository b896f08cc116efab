//===- Schedule.h - Chunk-level schedules and their JSON form -------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A schedule is a list of transfers; each moves `count` consecutive chunks
// from one rank's buffer to another's (or the same rank's), either copying
// them or reducing them into the destination. Transfers are grouped in
// steps: a transfer of step s sees the data written by steps < s, so all
// transfers of one step may run at once. The JSON form is versioned and
// documented in docs/formats.md#schedule.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"

#include <cmath>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ccsynth {

class JsonDocument;

/// Copy and Reduce go point to point (or stay on one rank). The other two
/// go through an in-network switch (Topology::switches) and act in groups:
/// the SwitchReduce transfers of one step through one switch into one
/// destination are one reduction in the switch, which writes the sum of
/// their sources there (the destination's old value takes part only when
/// it is one of the sources); the Multicast transfers of one step through
/// one switch from one source are one multicast, which the source sends
/// once and the switch delivers to each destination.
enum class TransferOp { Copy, Reduce, SwitchReduce, Multicast };
const char *toString(TransferOp op);
/// Whether `op` goes through an in-network switch.
inline bool isSwitchOp(TransferOp op) {
  return op == TransferOp::SwitchReduce || op == TransferOp::Multicast;
}
/// Whether `op` combines values (a point-to-point or switch reduction).
inline bool isReduceOp(TransferOp op) {
  return op == TransferOp::Reduce || op == TransferOp::SwitchReduce;
}

struct Transfer {
  ChunkLoc src;
  ChunkLoc dst;
  int count = 1;
  TransferOp op = TransferOp::Copy;
  int step = 0;
  /// Topology link to use, or -1 for the fastest link between the ranks.
  /// Switch transfers name no link.
  int link = -1;
  /// The switch (index in Topology::switches) of a SwitchReduce or
  /// Multicast; -1 for point-to-point transfers.
  int sw = -1;
  /// Optional lowering hints (-1 = compiler's choice).
  int channel = -1;
  int threadblock = -1;
};

class Schedule {
public:
  /// Version 2 added `topology_hash` (topologyJsonHash()); version 3 records
  /// topologyHash() there instead. Versions 1 and 2 are still read.
  static constexpr int kFormatVersion = 3;

  std::string name;
  /// Topology the schedule was made for (a built-in name or a file path);
  /// may be empty.
  std::string topology;
  /// The directory a `topology` file path is relative to: that of the file
  /// the schedule was read from (empty: the working directory). Not part
  /// of the file.
  std::string topologyDir;
  /// topologyHash() of the topology the schedule was made for (empty when
  /// not recorded); a later command that finds the topology by the
  /// `topology` field refuses one with a different hash.
  std::string topologyHash;
  /// The schedule format version whose hash `topologyHash` is: 2 for
  /// topologyJsonHash(), 3 for topologyHash(). A version 2 file keeps its
  /// version when written again.
  int topologyHashVersion = kFormatVersion;
  /// How it was produced ("baseline:ring", "synth", "dsl:file.ccl", ...).
  std::string origin;
  Collective collective;
  /// Scratch chunks per rank.
  int scratchChunks = 0;
  /// Suggested protocol and replication for the lowering (from the DSL or a
  /// sketch); the compiler may override them.
  std::string protocol = "Simple";
  int instances = 1;
  std::vector<Transfer> transfers;
  /// Where each transfer was written (DSL statements); empty or parallel to
  /// `transfers`. Diagnostics use it when present.
  std::vector<SourceLoc> transferLocs;

  int numSteps() const;
  /// Whether any transfer goes through an in-network switch.
  bool usesSwitches() const;
  int bufferChunks(BufferKind b) const {
    return b == BufferKind::Scratch ? scratchChunks
                                    : collective.bufferChunks(b);
  }
};

/// The transfers each transfer waits for, in compressed rows (one
/// allocation however many millions of transfers): those of transfer t are
/// preds[begin[t] .. begin[t + 1]).
struct Dependencies {
  std::vector<size_t> begin;
  std::vector<int> preds;
  std::span<const int> of(int t) const {
    return {preds.data() + begin[t], begin[t + 1] - begin[t]};
  }
};

/// The data dependencies among `count` transfers (`transferAt(i)`) run in
/// `order`, a permutation of their indices: of(t) lists, sorted and
/// without t, the transfers before t in that order that t must wait for:
/// the last writer of each chunk it reads (RAW), and the last writer of and
/// the readers since that write of each chunk it writes (WAW, WAR; a reduce
/// also accumulates into the last written value). Chunks are canonical (an
/// in-place alias is one chunk); scratch holds `scratchChunks` per rank.
Dependencies
transferDependencies(const Collective &collective, int scratchChunks, int count,
                     const std::function<const Transfer &(int)> &transferAt,
                     const std::vector<int> &order);

/// `n` without its factors of two (1 for a power of two): MSCCL selects a
/// program whose nchunksperloop has an odd part above 1 for no
/// power-of-two size.
inline long long oddPart(long long n) {
  while (n > 1 && n % 2 == 0)
    n /= 2;
  return n;
}

/// Whether a buffer size is a whole power of two bytes (the sizes
/// nccl-tests runs), for which a loop with an odd part above 1 is never
/// selected.
inline bool isPowerOfTwoSize(double bytes) {
  return bytes >= 1 && std::exp2(std::round(std::log2(bytes))) == bytes;
}

/// The power-of-two chunk factor regridChunks uses for a schedule of chunk
/// factor `chunkFactor`: the factor itself when it is a power of two, else
/// at least 8 sub-chunks per chunk, with runs within 4% of an even share.
int powerOfTwoGrid(int chunkFactor);

/// The same schedule with every chunk cut into a run of sub-chunks of a
/// built-in collective of chunk factor `factor` (>= the schedule's): chunk k
/// of each split becomes factor / c sub-chunks, one more for the first
/// factor % c. Routes, steps, operations and hints stay; counts grow to the
/// runs' lengths and scratch is laid out anew. MSCCL selects a program only
/// for calls whose element count is a multiple of its nchunksperloop, so
/// a schedule whose chunk factor has an odd factor (3 for DGX-1's six
/// rings) serves power-of-two sizes only on such a grid. Errors for custom
/// collectives and for schedules that move data between chunks of
/// different splits (their runs would differ in length).
Expected<Schedule> regridChunks(const Schedule &s, int factor);

/// Two schedules of one built-in collective (kind, ranks, root, in place)
/// run side by side on disjoint parts of the buffer: the result's chunk
/// factor is a's plus b's, chunk k of each of a's splits stays chunk k of
/// the split and chunk k of b's becomes chunk a + k (a = a's chunk factor),
/// so a carries a / (a + b) of the bytes. Steps are kept (step s of both
/// run in step s), b's scratch follows a's, a transfer whose chunks cross
/// a split is cut at it. Errors for custom collectives, different
/// collectives, and chunk counts past `maxChunkFactor`.
Expected<Schedule> spliceSchedules(const Schedule &a, const Schedule &b,
                                   int maxChunkFactor = 1 << 16);

/// The phase of each transfer of a reduction: 1 when, run in schedule
/// order (step, then position), its source holds as many contributions as
/// the largest set an output chunk needs (a finished value being spread,
/// AllReduce's broadcast half), 0 while values are still being reduced.
/// Switch transfers count as their operation moves values (a reduction
/// adds its members' contributions, a multicast copies); their own phase
/// means nothing, since they run on no channel. Empty when the collective
/// is no reduction or its point-to-point transfers between ranks are all
/// of one phase. MSCCL runs a threadblock's steps in order,
/// every loop iteration after the previous one: the two phases on
/// separate channels let the reduction of the next iteration start while
/// the current one is still being spread.
std::vector<int> reductionPhases(const Collective &collective,
                                 const std::vector<Transfer> &transfers);

/// The groups that switch transfers form (see TransferOp). Point-to-point
/// transfers belong to none.
struct SwitchGroups {
  /// Each group's transfer indices in schedule order, the groups ordered by
  /// their first member (the leader).
  std::vector<std::vector<int>> members;
  /// Per transfer: its group, or -1.
  std::vector<int> of;
  /// The leader of t's group, or t itself outside a group.
  int leaderOf(int t) const { return of[t] < 0 ? t : members[of[t]].front(); }
};
SwitchGroups switchGroups(const std::vector<Transfer> &transfers);

/// Whether any of `transfers` goes through an in-network switch.
bool anySwitchOp(const std::vector<Transfer> &transfers);

/// Success when every transfer of `s` goes point to point; otherwise an
/// error located at the first switch transfer, saying why `consumer`
/// cannot take it ("MSCCL XML has no switch operations").
Status pointToPointOnly(const Schedule &s, const std::string &consumer);

/// Serializes a schedule (one transfer per line, stable key order).
std::string scheduleToJson(const Schedule &s);
/// Parses the JSON form; structural errors are located at the field.
Expected<Schedule> parseScheduleJson(const JsonDocument &doc);
/// Parses schedule JSON text of any size: the transfer list is scanned
/// without building a DOM; files over `generalLimit` bytes must hold their
/// transfers in the plain form ccsynth writes (smaller files that do not are
/// read by the general reader, with its located errors).
Expected<Schedule> readScheduleJson(const std::string &file, std::string text,
                                    size_t generalLimit = kMaxInputBytes);
/// Reads a schedule file of at most kMaxScheduleBytes.
Expected<Schedule> loadScheduleJson(const std::string &path);

} // namespace ccsynth
