//===- Topology.h - Machines as ranks, directed links and shared resources ===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A topology is a set of ranks (one per GPU) grouped in nodes, and directed
// links between ranks. Every link has a latency (alpha, µs) and a peak
// bandwidth (GB/s, 1 GB = 1e9 bytes). Links that share physical capacity (the
// ports of an NVSwitch, a NIC shared by several GPUs, a node's uplink) name
// the shared Resources they cross; the simulator divides a resource's
// bandwidth fairly among the transfers using it at the same time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ccsynth {

class JsonDocument;

enum class LinkKind { NVLink, PCIe, RDMA, SHM };

const char *toString(LinkKind kind);
std::optional<LinkKind> parseLinkKind(const std::string &s);

/// Bandwidth shared by every link that names it (a switch port direction, a
/// NIC direction).
struct Resource {
  std::string name;
  double bandwidthGBps = 0;
};

/// The shared resources one link crosses: a few ids, held inline so that a
/// machine of millions of links (every GPU pair between 512 nodes) makes no
/// allocation per link; a list longer than kInline moves to the heap.
class ResourceList {
public:
  static constexpr uint32_t kInline = 4;

  ResourceList() = default;
  ResourceList(std::initializer_list<int> ids) {
    for (int r : ids)
      push_back(r);
  }
  ResourceList(const std::vector<int> &ids) {
    for (int r : ids)
      push_back(r);
  }
  ResourceList(const ResourceList &other) {
    for (int r : other)
      push_back(r);
  }
  ResourceList(ResourceList &&other) noexcept { take(other); }
  ResourceList &operator=(const ResourceList &other) {
    if (this != &other) {
      size_ = 0;
      for (int r : other)
        push_back(r);
    }
    return *this;
  }
  ResourceList &operator=(ResourceList &&other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~ResourceList() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int *begin() const { return data(); }
  const int *end() const { return data() + size_; }
  int *begin() { return data(); }
  int *end() { return data() + size_; }
  int operator[](size_t i) const { return data()[i]; }
  int &operator[](size_t i) { return data()[i]; }
  int front() const { return data()[0]; }
  int back() const { return data()[size_ - 1]; }
  void push_back(int id) {
    if (size_ == cap_)
      grow();
    data()[size_++] = id;
  }
  bool operator==(const ResourceList &other) const {
    return size_ == other.size_ && std::equal(begin(), end(), other.begin());
  }

private:
  bool onHeap() const { return cap_ > kInline; }
  const int *data() const { return onHeap() ? heap_ : inline_; }
  int *data() { return onHeap() ? heap_ : inline_; }
  void grow() {
    uint32_t bigger = 2 * cap_;
    int *moved = new int[bigger];
    std::copy(begin(), end(), moved);
    release();
    heap_ = moved;
    cap_ = bigger;
  }
  void release() {
    if (onHeap())
      delete[] heap_;
    cap_ = kInline;
  }
  void take(ResourceList &other) {
    size_ = other.size_;
    cap_ = other.cap_;
    if (other.onHeap())
      heap_ = other.heap_;
    else
      std::copy(other.inline_, other.inline_ + other.size_, inline_);
    other.size_ = 0;
    other.cap_ = kInline;
  }

  union {
    int inline_[kInline];
    int *heap_;
  };
  uint32_t size_ = 0;
  uint32_t cap_ = kInline;
};

/// A directed connection from one rank to another.
struct Link {
  int src = 0;
  int dst = 0;
  LinkKind kind = LinkKind::NVLink;
  double alphaUs = 0;
  /// Peak bandwidth of this link alone (e.g. 2 NVLinks = 50 GB/s).
  double bandwidthGBps = 0;
  /// Shared resources this link's traffic also consumes.
  ResourceList resources;

  /// Time for `bytes` alone on this link, in µs: alpha + bytes / bandwidth.
  double timeUs(double bytes) const {
    return alphaUs + bytes / (bandwidthGBps * 1e3);
  }
};

/// Switches that compute: NVLink SHARP (NVLS, the NVSwitch of Hopper and
/// Blackwell machines reduces what its GPUs send it and multicasts what one
/// GPU writes) and IB SHARP (the InfiniBand switches that NCCL's CollNet
/// reduces through).
enum class SwitchKind { NVLS, SHARP };
const char *toString(SwitchKind kind);
std::optional<SwitchKind> parseSwitchKind(const std::string &s);

/// One rank's attachment to an in-network switch.
struct SwitchPort {
  int rank = 0;
  /// Line rate of the port per direction (GB/s).
  double bandwidthGBps = 0;
  /// Shared resources the rank's traffic into the switch (up) and out of it
  /// (down) crosses, -1 for none: the same port resources its point-to-point
  /// links through that switch name, so both kinds of traffic share them.
  int up = -1;
  int down = -1;
};

/// A switch that reduces k contributions into one result and multicasts
/// one rank's data to k ranks. An operation streams at most at the line
/// rate of the ports it crosses (each remote source's up, each remote
/// destination's down, the issuing rank's own), sharing their resources
/// with everything else that crosses them; reductions and multicasts
/// together move at most `efficiency` of a port's two directions; the
/// result arrives `alphaUs` after the last byte.
struct InNetworkSwitch {
  std::string name;
  SwitchKind kind = SwitchKind::NVLS;
  /// Latency of one operation through the switch (µs).
  double alphaUs = 0;
  /// Fraction of a port's line rate, both directions together, that
  /// reductions and multicasts through the switch reach.
  double efficiency = 1;
  /// One per member rank, in rank order.
  std::vector<SwitchPort> ports;

  /// Index in `ports` of `rank`'s port, or -1 when the rank is no member.
  int portOf(int rank) const;
};

/// What an operation through an in-network switch costs: its efficiency
/// and latency (InNetworkSwitch), as the built-ins use them.
struct SwitchFigures {
  double efficiency = 0;
  double alphaUs = 0;
};
/// NVLink SHARP on a GPU generation's NVSwitch (docs/calibration.md), or
/// nullopt before Hopper (sm < 90), whose NVSwitches do not reduce.
std::optional<SwitchFigures> nvlsFigures(int smArch);
/// IB SHARP through an NDR InfiniBand fabric (Quantum-2 class switches),
/// as NCCL's CollNet uses it (docs/calibration.md).
SwitchFigures sharpFigures();

/// What the step-level simulator needs beyond links: the runtime's
/// per-protocol costs and what one threadblock can move. Protocols are
/// indexed Simple, LL128, LL (see stepProtocolIndex). Defaults and their
/// sources: docs/calibration.md.
struct StepModel {
  /// Fixed cost of one collective call (kernel launch and start), per
  /// protocol, µs.
  double launchUs[3] = {8.4, 14.0, 6.6};
  /// Synchronization cost of one step (a message between two ranks: flag
  /// written, polled, seen), per protocol, µs. A message takes at least
  /// this and at least its link's alpha.
  double stepUs[3] = {3.4, 1.9, 0.6};
  /// Bytes per second one threadblock copies (send, receive, copy), per
  /// protocol, GB/s of payload.
  double tbCopyGBps[3] = {24.0, 20.0, 12.0};
  /// Bytes per second one threadblock reduces (rrs, rrc, rrcs, re), per
  /// protocol, GB/s of payload.
  double tbReduceGBps[3] = {24.0 * 0.92, 20.0 * 0.92, 12.0 * 0.92};
  /// Fraction of a link's line rate that carries data (packet headers,
  /// flow control).
  double linkEfficiency = 0.8;
  /// SM architecture of the machine's GPUs (70 V100, 80 A100, 90 H100):
  /// which kernel knobs of generated code run there.
  int smArch = 80;
  /// Bytes a threadblock keeps in flight (threads x loads per thread x 16)
  /// to move at the figures above; generated code whose kernel keeps fewer
  /// moves proportionally less (Little's law: one H100 threadblock's loads
  /// take 417 ns and saturate at 48.5 GB/s, 20.2 KB in flight).
  double tbInFlightBytes = 20200;
  /// What a message's latency grows by with the lines its threads keep in
  /// flight, in proportion to its bytes up to one line per thread of a
  /// full threadblock (LL: 512 threads x 8 bytes), per protocol, µs.
  /// Measured, a hop of NCCL's LL ring on H100 takes 0.4 µs more at 4 KiB
  /// per step than at 128 bytes, and MSCCL's LL ring little more from 8
  /// to 16 KiB.
  double stepFillUs[3] = {0, 0, 0};
  /// What MSCCL's interpreter adds to every step it executes (nops
  /// included): reading the step, its offsets and its flags, µs. Fitted on
  /// H100 (MSCCL's ND H100 v5 programs); a property of the interpreter,
  /// applied to every generation.
  double interpreterStepUs = 0.08;
  /// What a step of MSCCL's interpreter that waits for a step of another
  /// threadblock of its rank pays after that step ends (a flag written
  /// behind a fence and polled in global memory), µs. Fitted on H100, as
  /// interpreterStepUs.
  double dependencyUs = 0.875;
};

/// "Simple" -> 0, "LL128" -> 1, "LL" -> 2; nullopt otherwise.
std::optional<int> stepProtocolIndex(const std::string &protocol);
/// Protocol names in StepModel index order.
inline const char *const kStepProtocols[3] = {"Simple", "LL128", "LL"};

class Topology {
public:
  std::string name;
  /// Node id of each rank; nodes are numbered densely from 0.
  std::vector<int> nodeOf;
  std::vector<Link> links;
  std::vector<Resource> resources;
  /// Switches that reduce and multicast (none on most machines).
  std::vector<InNetworkSwitch> switches;
  /// Free-form provenance (built-in source, imported file).
  std::string description;
  /// Runtime costs for the step-level simulator.
  StepModel stepModel;

  int numRanks() const { return (int)nodeOf.size(); }
  int numNodes() const;
  /// Ranks of one node, in rank order.
  std::vector<int> ranksOfNode(int node) const;
  /// Index of rank within its node.
  int localRank(int rank) const;
  bool sameNode(int a, int b) const { return nodeOf[a] == nodeOf[b]; }

  /// Indices of links from src to dst (there may be several, e.g. NVLink and
  /// a NIC path).
  std::vector<int> linksBetween(int src, int dst) const;
  /// The fastest link from src to dst (highest effective bandwidth, then
  /// lowest alpha), or nullopt when none exists.
  std::optional<int> bestLink(int src, int dst) const;
  /// Bandwidth a link reaches alone: min of its own and its resources'.
  double effectiveBandwidth(int link) const;
  /// Minimum-latency paths (by alpha, hop count as tie-break) between all
  /// pairs; dist[s][d] = alpha sum, or +inf when unreachable.
  std::vector<std::vector<double>> shortestAlpha() const;
  /// The sequence of ranks on a minimum-hop path src..dst (inclusive), using
  /// the fastest links; empty when unreachable.
  std::vector<int> route(int src, int dst) const;

  /// The index of the switch named `name`, or -1.
  int switchNamed(const std::string &name) const;

  /// Structural checks: ranks in range, positive bandwidth, no self links,
  /// valid resource ids, dense node ids; switches with at least two ports,
  /// one per rank, valid resources and usable figures.
  Status validate() const;
};

/// Names and one-line descriptions of the built-in topologies (generic ones
/// shown with their parameter syntax, e.g. "ring:N").
struct BuiltinInfo {
  std::string name;
  std::string description;
};
std::vector<BuiltinInfo> builtinTopologies();

/// Builds a built-in topology by name: dgx1, dgx2, ndv2, dgx-a100 (ndv4),
/// dgx-h100 (ndv5), each with an optional `xN` node suffix (dgx-h100x8), and
/// the generic ring:N, fc:N, torus2d:AxB. Unknown names get an error listing
/// the valid ones.
Expected<Topology> makeBuiltinTopology(const std::string &name);

/// Resolves a topology argument: a built-in name, a ccsynth topology JSON
/// file, or an NCCL topology dump (.xml; its import warnings go to
/// `warnings` when given, see NcclImportOptions).
Expected<Topology> loadTopology(const std::string &nameOrPath,
                                std::vector<Error> *warnings = nullptr);

/// Whether loadTopology reads `nameOrPath` as a file (it holds a '/' or
/// ends in .json or .xml) rather than as a built-in name.
bool isTopologyFileArg(const std::string &nameOrPath);

/// Reads ccsynth's topology JSON (docs/formats.md#topology).
Expected<Topology> parseTopologyJson(const JsonDocument &doc);
/// Writes ccsynth's topology JSON (with `step_model` unless
/// `withStepModel` is false).
std::string topologyToJson(const Topology &topo, bool withStepModel = true);

/// The physical range of a topology's figures (docs/formats.md): far wider
/// than any machine's (an NVLink is ~25-50 GB/s and ~1 µs, a slow NIC 1
/// GB/s and tens of µs), and narrow enough that no time, bound or ratio
/// computed from them overflows to inf or turns into NaN.
inline constexpr double kMinBandwidthGBps = 1e-3; ///< 1 MB/s
inline constexpr double kMaxBandwidthGBps = 1e6;  ///< 1 PB/s
inline constexpr double kMinAlphaUs = 1e-6;       ///< 1 ps, or exactly 0
inline constexpr double kMaxAlphaUs = 1e6;        ///< 1 s per message

/// Whether a bandwidth figure (GB/s) is usable: from kMinBandwidthGBps to
/// kMaxBandwidthGBps (NaN and inf are not).
bool isUsableBandwidth(double gbps);
/// Whether a latency (µs) is usable: zero, or from kMinAlphaUs to
/// kMaxAlphaUs.
bool isUsableAlpha(double us);
/// The ranges in words for messages: "from 0.001 to 1000000 GB/s", "0, or
/// from 0.000001 to 1000000 us".
std::string bandwidthRangeText();
std::string alphaRangeText();
/// A figure as messages show it (%g: "1e-300", "25", "inf").
std::string formatFigure(double v);

/// The links a schedule uses, numbered densely in the order first met, each
/// with its shared resources listed once and sorted: what a simulation
/// keeps per link, sized by the schedule rather than the machine (16.7M
/// links on 4,096 ranks).
class UsedLinks {
public:
  /// The slot of `link` of `topo`, numbering it on first use.
  int slot(const Topology &topo, int link);
  size_t size() const { return resources_.size(); }
  /// The slot's link's resources. The list stays where it is as more links
  /// are numbered (a span over it stays valid).
  const std::vector<int> &resources(int slot) const { return resources_[slot]; }
  void clear() {
    slotOf_.clear();
    resources_.clear();
  }

private:
  std::unordered_map<int, int> slotOf_;
  std::vector<std::vector<int>> resources_;
};

/// A content hash of a topology, as 16 hex digits: equal for the same
/// name, ranks, links and figures however the file is formatted, different
/// when any rank, link or resource figure changes. It hashes a canonical
/// binary form of what the canonical JSON holds (numbers by their IEEE
/// bits), four 64-bit lanes at a time, so 16.7M links take a fraction of a
/// second. The step model changes predictions, not which schedules fit the
/// machine, so it is not hashed. Schedule format version 3 records it.
/// With `stop`, gives up (returning "") once *stop is set (a hash computed
/// beside other work that may end first).
std::string topologyHash(const Topology &topo,
                         const std::atomic<bool> *stop = nullptr);
/// The hash schedule format version 2 recorded: FNV-1a 64 of the
/// topology's canonical JSON without the step model (one byte at a time:
/// seconds on 16.7M links). Used only to check version 2 files.
std::string topologyJsonHash(const Topology &topo);

/// Options for importing an NCCL topology dump.
struct NcclImportOptions {
  /// Copies of the dumped node to connect through their NICs.
  int nodes = 1;
  /// Latencies (µs) to assign; NCCL's dump does not record them.
  double nvlinkAlphaUs = 0.7;
  double pcieAlphaUs = 1.0;
  double netAlphaUs = 2.0;
  /// Receives a located warning for each figure the dump lacks and the
  /// importer assumes (a NIC without a speed), and each entry it ignores
  /// (an NVLink of count 0, or to a GPU the dump does not hold); none
  /// when null.
  std::vector<Error> *warnings = nullptr;
};
/// Imports the XML that NCCL writes with NCCL_TOPO_DUMP_FILE.
Expected<Topology> importNcclTopology(const std::string &file,
                                      const std::string &text,
                                      const NcclImportOptions &options);

} // namespace ccsynth
