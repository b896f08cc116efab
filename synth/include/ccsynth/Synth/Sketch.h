//===- Sketch.h - TACCL communication sketches ----------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// A communication sketch restricts the search space of the synthesizer: which
// intra-node links a GPU may use (switch groups with a hyperedge strategy),
// which GPUs may send to which remote GPUs (relay internode sketch) and for
// whose chunks, the symmetry the schedule must have, and how finely input
// chunks are split. The reader accepts TACCL's sketch JSON as it is (see
// docs/sketches.md) plus a few documented ccsynth extensions:
//   - "description": free text, ignored;
//   - internode_sketch."internode_hops": "direct" (TACCL's meaning: every
//     chunk crosses from its origin node straight to each node that needs
//     it) or "any" (chunks may be forwarded through intermediate nodes, e.g.
//     rings across nodes);
//   - hyperparameters."chunkup_candidates": list of splits to try instead of
//     the divisors and multiples of input_chunkup;
//   - "in_network": the in-network switches ("nvls", "sharp") whose
//     reductions and multicasts the schedule may use (`synth --in-network`
//     restricted to them; [] allows none).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Topology/Topology.h"

#include <optional>
#include <string>
#include <vector>

namespace ccsynth {
class JsonDocument;
struct JsonStop;
} // namespace ccsynth

namespace ccsynth::synth {

enum class IntraStrategy { None, Switch, MaxMin, MinMax };
const char *toString(IntraStrategy s);

/// TACCL's hyperedge strategies: prefer few (uc-min) or many (uc-max) distinct
/// peers through a switch, among routings of equal bandwidth cost.
enum class HyperedgeStrategy { UcMin, UcMax };
const char *toString(HyperedgeStrategy s);

struct SketchSwitch {
  /// Local GPU ids (0-based within a node) attached to this switch.
  std::vector<int> gpus;
  HyperedgeStrategy strategy = HyperedgeStrategy::UcMin;
  SourceLoc loc;
};

enum class InternodeConnKind { Explicit, FullyConnected, DirectMap };
enum class InternodeHops { Direct, Any };

/// One `"sender": [receivers...]` entry (local GPU ids).
struct SenderEntry {
  int sender = 0;
  std::vector<int> targets;
  SourceLoc loc;
};

struct SymmetryOffset {
  int offset = 0;
  int size = 0;
  SourceLoc loc;
};

struct Sketch {
  std::string file;
  int nnodes = 1;
  SourceLoc nnodesLoc;

  IntraStrategy intra = IntraStrategy::None;
  std::vector<SketchSwitch> switches;
  SourceLoc intraLoc;

  bool hasInternode = false;
  InternodeConnKind connKind = InternodeConnKind::FullyConnected;
  /// Explicit internode_conn: sender -> remote receivers (local ids).
  std::vector<SenderEntry> conn;
  SourceLoc connLoc;
  /// gpus_to_sender_rev_map: sender -> local GPUs whose chunks it relays.
  bool hasRevMap = false;
  std::vector<SenderEntry> revMap;
  SourceLoc revMapLoc;
  bool enforceOrdering = false;
  InternodeHops hops = InternodeHops::Direct;

  std::vector<SymmetryOffset> symmetry;

  int inputChunkup = 1;
  SourceLoc chunkupLoc;
  /// Explicit chunkup candidates (extension); empty = derive from
  /// inputChunkup.
  std::vector<int> chunkupCandidates;

  /// `in_network` (extension): the kinds of in-network switch whose
  /// reductions and multicasts the schedule may use (synth --in-network
  /// with only these); an empty list allows none. Unset: as the command
  /// line says.
  std::optional<std::vector<SwitchKind>> inNetwork;
  SourceLoc inNetworkLoc;
};

/// The largest sketch file read (1 MiB): a sketch names a node's GPUs and a
/// few options, a few KB on the largest machines; a larger file is refused
/// before it is read.
inline constexpr size_t kMaxSketchBytes = size_t(1) << 20;

/// Reads a sketch; every structural error is located at its JSON field.
Expected<Sketch> parseSketch(const JsonDocument &doc);
/// Reads a sketch file of at most kMaxSketchBytes; `stop` ends reading early
/// (the synthesizer's time limit).
Expected<Sketch> loadSketch(const std::string &path);
Expected<Sketch> loadSketch(const std::string &path, const JsonStop &stop);

/// The sketch every topology accepts: all links usable, no symmetry,
/// input_chunkup 1 (used when no sketch file is given).
Sketch defaultSketch(int nnodes);

} // namespace ccsynth::synth
