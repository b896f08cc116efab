//===- TacclProfile.h - TACCL topology profiles on built-in shapes -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// TACCL (microsoft/taccl) takes the link figures of a machine from a
// "topology profile" JSON (taccl/examples/topo/*.json, INPUT_GUIDE.md):
// `alpha` for intra-node links, `node_betas_list` (one beta per class of
// intra-node link, fastest first), `remote_alpha` / `remote_beta` for links
// between nodes, plus `name`, `gpus_per_node`, `nics_per_node` and the
// alpha + beta totals `node_invbws_list` / `remote_invbw` that its ILP uses
// as per-send costs. taccl/topologies/generic.py applies them to its shapes:
// dgx2() and hub_and_spoke() give every GPU pair the one beta, ndv2() gives
// the cube-mesh's double-NVLink pairs node_betas_list[0] and its single
// pairs [1]. applyTacclProfile does the same on a ccsynth built-in: its
// intra-node links are grouped by bandwidth, fastest class first, and each
// class takes its beta; links between nodes and their NICs take the remote
// figures. Shared resources (NVSwitch ports, NICs) crossed by one class of
// links scale with it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Topology/Topology.h"

#include <string>

namespace ccsynth {

class JsonDocument;

/// Units of a profile's figures. INPUT_GUIDE.md: a beta is µs per MB times
/// the data size (MB) the profile is for, and a profile may be multiplied
/// by a constant to keep its integer parts meaningful (TACCL's 1KB and 32KB
/// examples appear to be, by 100 and 10). ccsynth divides alpha by `scale`
/// and betas by `scale * sizeMB` to get µs and µs per MB (1 MB = 1e6 bytes).
struct TacclProfileUnits {
  double sizeMB = 1;
  double scale = 1;
};

/// Applies the profile in `path` to built-in topology `shape` (as built by
/// makeBuiltinTopology). Errors are located in the profile file.
Expected<Topology> applyTacclProfile(const Topology &shape,
                                     const std::string &path,
                                     const TacclProfileUnits &units = {});
/// The same for a profile already parsed.
Expected<Topology> applyTacclProfile(const Topology &shape,
                                     const JsonDocument &profile,
                                     const TacclProfileUnits &units = {});

} // namespace ccsynth
