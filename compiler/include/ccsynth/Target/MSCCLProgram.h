//===- MSCCLProgram.h - MSCCL's algorithm model and its analyses ----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The in-memory form of an MSCCL XML algorithm, element by element (algo >
// gpu > tb > step, every attribute the runtime reads), plus the analyses
// ccsynth runs on it: the runtime's structural rules, in-order matching of
// sends and receives per channel, and the wait-for graph whose cycles are
// deadlocks. Plain C++ (no MLIR), so tests and tools can check any XML.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Schedule/Collective.h"
#include "ccsynth/Support/Diagnostic.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth::msccl {

/// Limits of the current MSCCL runtime (msccl-executor-nccl msccl_struct.h
/// and NCCL's MAXCHANNELS).
inline constexpr int kMaxSteps = 64;         // MSCCL_MAX_NUM_STEPS
inline constexpr int kMaxTbsPerChannel = 32; // ..._THREAD_BLOCKS_PER_CHANNEL
inline constexpr int kMaxChannels = 32;      // MAXCHANNELS
inline constexpr int kMaxThreadblocks = 32 * 32; // MSCCL_MAX_NUM_THREAD_BLOCKS
inline constexpr int kMaxCount = 72;         // cnt must be < MSCCL_MAX_COUNT
inline constexpr int kMaxAttrLength = 255;   // MAX_STR_LEN
inline constexpr int kMaxOffset = 32767;     // offsets are int16_t
inline constexpr int kMaxDepTb = 127;        // dependentBid is int8_t
inline constexpr int kMaxXmlNodes = 4096;    // MAX_NODES (NCCL's copy)
inline constexpr int kMaxXmlChildren = 1024; // MAX_SUBS

enum class StepType {
  Send,               ///< s
  Recv,               ///< r
  RecvCopySend,       ///< rcs
  RecvReduceSend,     ///< rrs
  RecvReduceCopy,     ///< rrc
  RecvReduceCopySend, ///< rrcs
  Copy,               ///< cpy
  Reduce,             ///< re
  Nop,                ///< nop (carries one extra dependency)
  /// A switch threadblock's operations (generated code only; MSCCL has no
  /// form for them). Every rank of the threadblock's group holds the
  /// operand at the same place.
  SwitchReduce, ///< dst (local) = the reduction of src on every group rank
  Multicast,    ///< dst on every group rank = src (local)
};

const char *toString(StepType type);
std::optional<StepType> parseStepType(const std::string &s);
/// Step types that send to the threadblock's send peer.
bool sends(StepType type);
/// Step types that receive from the threadblock's receive peer.
bool receives(StepType type);
/// Step types whose `srcbuf/srcoff` name local data they read.
bool readsSrc(StepType type);
/// Step types whose `dstbuf/dstoff` name local data they write.
bool writesDst(StepType type);
/// `re` also reads its destination (dst += src).
bool readsDst(StepType type);

/// "i", "o" or "s".
const char *bufferCode(BufferKind b);

struct Step {
  int s = 0;
  StepType type = StepType::Nop;
  BufferKind srcBuf = BufferKind::Input;
  int srcOff = -1;
  BufferKind dstBuf = BufferKind::Output;
  int dstOff = -1;
  int cnt = 1;
  int depid = -1;
  int deps = -1;
  int hasdep = 0;
  SourceLoc loc;
};

struct Threadblock {
  int id = 0;
  int send = -1;
  int recv = -1;
  int chan = 0;
  std::vector<Step> steps;
  SourceLoc loc;
  /// A switch threadblock (generated code only): the in-network switch its
  /// SwitchReduce and Multicast steps go through, and the ranks of that
  /// switch's operations (ascending), this one included. -1: a threadblock
  /// of MSCCL's model.
  int switchId = -1;
  std::vector<int> group;
  /// Which of the switch's threadblocks on each rank this is: lane l of
  /// every rank of the group meet in the same barriers.
  int switchLane = 0;
};

struct Gpu {
  int id = 0;
  int iChunks = 0;
  int oChunks = 0;
  int sChunks = 0;
  std::vector<Threadblock> tbs;
  SourceLoc loc;
};

struct Algo {
  std::string name;
  std::string proto = "Simple";
  int nchannels = 1;
  int nchunksperloop = 1;
  int ngpus = 0;
  std::string coll;
  int inplace = 0;
  int outofplace = 1;
  int64_t minBytes = 0;
  int64_t maxBytes = 0;
  std::vector<Gpu> gpus;
  SourceLoc loc;

  /// The gpu element of `rank`, or nullptr.
  const Gpu *gpu(int rank) const;
  /// The most threadblocks one rank runs.
  int threadblocksPerRank() const;
};

/// The collective names MSCCL's `coll` attribute accepts.
const std::vector<std::string> &mscclCollNames();

/// The buffers, in chunks, that the NCCL call behind `coll` hands the
/// runtime. MSCCL cuts count x sizeMultiplier elements (sizeMultiplier is
/// ngpus for allgather, reducescatter and alltoall, else 1) into
/// nchunksperloop chunks; the call's send and receive buffers hold:
///   allgather      send count,     receive ngpus x count
///   reducescatter  send ngpus x count, receive count
///   alltoall       both ngpus x count
///   allreduce, broadcast, reduce: both count.
struct BufferCapacity {
  int input = 0;
  int output = 0;
};
/// nullopt for the calls whose buffer sizes the runtime does not derive
/// from one count (gather, scatter, send, recv, alltoallv).
std::optional<BufferCapacity> bufferCapacity(const std::string &coll, int ngpus,
                                             int nchunksperloop);

/// A byte count in the largest binary unit that divides it exactly:
/// "64 KiB", "3 B", "1536 KiB".
std::string exactByteCount(long long bytes);

/// The runtime's sizeMultiplier for `coll`: ngpus for allgather,
/// reducescatter and alltoall (their count is per rank), else 1.
int sizeMultiplier(const std::string &coll, int ngpus);

/// Which calls MSCCL selects an algorithm for. The runtime runs it for a
/// call of `count` elements (per rank, as NCCL counts) only when
/// count x sizeMultiplier is a multiple of nchunksperloop and
/// count x sizeMultiplier x sizeof(type) lies in [minBytes, maxBytes]
/// (maxBytes 0: no bound); otherwise NCCL runs, silently. Rooted
/// collectives are selected whatever their root.
struct SelectionReport {
  /// What the XML serves, one sentence.
  std::string served;
  /// Set when no power-of-two size (every size nccl-tests runs) is
  /// served, or the byte range admits no size at all.
  std::string warning;
};
/// `root` is the root the algorithm was written for (rooted collectives;
/// negative when unknown).
SelectionReport describeSelection(const Algo &algo, int root = -1);

/// Whether the NCCL call behind `coll` takes a reduction operator.
bool collTakesRedOp(const std::string &coll);

/// How a custom collective is launched through an NCCL call: MSCCL selects
/// algorithms by `coll`, so a collective of ccsynth's own must name the
/// call whose buffers it runs on. nchunksperloop is the smallest for which
/// the call's buffers hold the collective's input and output chunks (the
/// rest of each buffer is left alone).
struct CustomLaunch {
  std::string coll;
  int nchunksperloop = 1;
};
/// Fails with the reason when `coll` cannot carry a custom collective of
/// `ngpus` ranks with these buffers (`reduces`: some step reduces).
Expected<CustomLaunch> launchCustomAs(const std::string &coll, int ngpus,
                                      int inChunks, int outChunks,
                                      bool reduces);
/// Every `coll` that can carry such a collective.
std::vector<std::string> customLaunchColls(int ngpus, int inChunks,
                                           int outChunks, bool reduces);

/// A step named by rank, threadblock id and position in the threadblock.
struct StepRef {
  int rank = 0;
  int tb = 0;
  int step = 0;
  friend bool operator==(const StepRef &, const StepRef &) = default;
};

/// One problem found in a program: a message, the steps involved and the
/// location of the first of them (when the program came from a file).
struct ProgramIssue {
  std::string message;
  std::vector<StepRef> steps;
  SourceLoc loc;
};

/// "rank 0 tb 1 step 3 (rcs from 2 to 4)".
std::string describeStep(const Algo &algo, StepRef ref);

/// Checks every rule the MSCCL runtime enforces when it loads an algorithm
/// (and the ones whose violation makes it hang or compute garbage): valid
/// algo attributes, one gpu per rank, dense threadblock ids, peers that are
/// other ranks or -1, channels below nchannels, at most 32 threadblocks per
/// channel and one threadblock per (channel, peer, direction), dense step
/// indices, at most 64 steps per threadblock, 1 <= cnt < 72, offsets inside
/// the buffers, sends/receives only with a peer, at most 1024 gpus and 4096
/// XML elements read per rank (the parser's node pool), dependencies that
/// name an
/// existing step which sets its flag (hasdep=1), nop chains ending in a
/// step that carries a dependency, and, per channel and ordered rank pair,
/// as many receives as sends with matching counts. Empty when valid.
std::vector<ProgramIssue> validateAlgo(const Algo &algo);

/// A matched send (at the sender) and receive (at the receiver).
struct Message {
  StepRef send;
  StepRef recv;
  int channel = 0;
};

/// Pairs the k-th send from a to b on channel c with the k-th receive at b
/// from a on c. Unmatched or count-mismatched steps become issues.
struct Matching {
  std::vector<Message> messages;
  std::vector<ProgramIssue> issues;
};
Matching matchMessages(const Algo &algo);

/// Where a received message may land straight in its destination: the
/// receiving steps that only copy, into slots (canonical under the
/// collective's in-place aliasing) that no other step of that rank writes
/// and that hold no input data, so nothing can read or write them before
/// the data arrives.
class DirectLandings {
public:
  DirectLandings(const Algo &algo, const Collective &collective);
  /// Whether the receive `step` of `rank` may be written straight into its
  /// destination range.
  bool allows(int rank, const Step &step) const;

private:
  const Collective &col;
  std::map<std::pair<int, ChunkLoc>, int> writes;
};

/// Slots of one connection's buffer (channel, sender, receiver): NCCL's
/// NCCL_STEPS, the ring of steps every primitive posts into.
inline constexpr int kConnSlots = 8;

/// The slots one primitive call of `proto` occupies on a connection until
/// the receiver has consumed it. MSCCL's kernel instantiates Simple as
/// ProtoSimple<MSCCL_CHUNKSTEPS / MSCCL_SLICESTEPS, MSCCL_SLICESTEPS> =
/// <2, 2>: every call posts SlicePerChunk (2) slices of StepPerSlice (2)
/// steps, 4 slots whatever its size. LL and LL128 post one step per call.
/// Unknown protocols count as Simple.
int slotsPerCall(const std::string &proto);

/// How much a connection buffers before a send blocks. A step of cnt
/// chunks is ceil(cnt / maxAllowedCount) primitive calls; maxAllowedCount
/// is 1 once a chunk fills a step's buffer (large messages), so the worst
/// case, which the check assumes, is one call per chunk. Fewer slots per
/// step only remove waits, so a program safe in the worst case is safe at
/// every size.
struct BufferModel {
  /// Slots per connection; 0 means unbounded (sends never block).
  int slots = kConnSlots;
  /// Slots a send of one chunk takes.
  int slotsPerChunk = 4;

  bool bounded() const { return slots > 0; }
  /// Slots of a send of `cnt` chunks.
  long long slotsOf(int cnt) const {
    return (long long)slotsPerChunk * std::max(1, cnt);
  }
  static BufferModel unbounded() { return {0, 0}; }
  /// NCCL_STEPS slots, slotsPerCall(proto) per chunk.
  static BufferModel forProtocol(const std::string &proto) {
    return {kConnSlots, slotsPerCall(proto)};
  }
};

/// For the messages of one connection, in order, taking `slots[k]` slots
/// each: waits[k] is the latest message j < k whose receive must complete
/// before send k can be posted (sends j+1..k would need more slots than
/// the connection has), or -1 when send k never waits for room. A message
/// that alone needs more slots than the connection has waits for no
/// earlier receive on that account (it drains while its receive runs).
std::vector<int> bufferWaits(const std::vector<long long> &slots,
                             const BufferModel &buffers);

/// The wait-for graph of a program: one node per step (nops included);
/// preds[v] lists the steps v waits for and why.
struct WaitGraph {
  /// BufferSpace: a send waits for a receive that frees room on its
  /// connection (bounded buffers only).
  enum EdgeKind { ProgramOrder, Dependency, MessageEdge, BufferSpace };
  struct Pred {
    int node;
    EdgeKind kind;
  };
  std::vector<StepRef> nodes;
  std::vector<std::vector<Pred>> preds;
  /// Node of a step, or -1 when the step does not exist.
  int nodeOf(StepRef ref) const;

  /// First node of each (rank, tb id) and the threadblock's step count.
  std::map<std::pair<int, int>, std::pair<int, int>> tbNodes;
};

/// Builds the wait-for graph: program order within a threadblock,
/// dependencies (depid/deps) and each matched send to its receive. With a
/// bounded buffer model, the k-th send of a connection also waits for the
/// latest receive j < k of that connection such that sends j+1..k need
/// more slots than the connection has (it cannot be posted before that
/// receive frees its slots); a send that alone needs more slots than the
/// connection has also waits for everything its receive waits for (it
/// completes only while the receiver is draining it).
WaitGraph buildWaitGraph(const Algo &algo, const Matching &matching,
                         const BufferModel &buffers = BufferModel::unbounded());

/// Nodes in an order every edge respects, or nullopt when the graph has a
/// cycle.
std::optional<std::vector<int>> topologicalOrder(const WaitGraph &graph);

/// Looks for a cycle in the wait-for graph: program order within a
/// threadblock, dependencies (depid/deps, including nops), each send to
/// its matching receive (receives block) and, with bounded buffers, each
/// send to the receive that frees room for it. Returns one issue naming
/// every step of the first cycle found, or nothing.
std::vector<ProgramIssue>
checkDeadlock(const Algo &algo, const Matching &matching,
              const BufferModel &buffers = BufferModel::unbounded());

} // namespace ccsynth::msccl
