//===- SwitchModel.h - What a sketch's switches mean for the machine ------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// In TACCL a "switch" intranode sketch never removes links: each switch adds
// a shared-bandwidth limit (one egress and one ingress "port" per GPU over
// the links to the switch's other GPUs), and a switch listed k times
// multiplies those links (and divides their beta) by k. applySketchSwitches
// builds that model of a machine: the same ranks and links (indices kept),
// covered links k times faster, and one port resource per GPU, direction and
// switch (reusing a resource of the machine that already covers exactly
// those links, e.g. a DGX's own NVSwitch port).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Synth/Sketch.h"

#include <string>
#include <vector>

namespace ccsynth::synth {

/// A distinct set of GPUs the sketch lists as a switch, with how often.
struct SwitchGroup {
  std::vector<int> gpus;  ///< local ids, ascending
  int multiplicity = 1;   ///< how many entries of `switches` list this set
  int first = 0;          ///< index of its first entry in Sketch::switches
  HyperedgeStrategy strategy = HyperedgeStrategy::UcMin;
};

/// The sketch's switches grouped by GPU set, checked against nodes of
/// `gpusPerNode` GPUs: ids in range, and every GPU pair in at most one
/// distinct switch (otherwise it is not clear which switch a transfer between
/// them crosses). Repeated entries must agree on the hyperedge strategy.
/// Errors are located at the offending switch.
Expected<std::vector<SwitchGroup>>
switchGroups(const Sketch &sketch, int gpusPerNode,
             const std::string &topoName);

/// The machine as the sketch's switches model it (see the file comment).
struct SwitchModel {
  Topology topo;
  /// Whether any figure or resource differs from the machine given.
  bool changed = false;
  /// Remarks for the user (what changed; switch pairs without a link).
  std::vector<std::string> notes;
};

/// Applies a "switch" sketch to `machine`; other strategies return it
/// unchanged.
Expected<SwitchModel> applySketchSwitches(const Topology &machine,
                                          const Sketch &sketch);

} // namespace ccsynth::synth
