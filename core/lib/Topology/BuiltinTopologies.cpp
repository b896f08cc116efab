//===- BuiltinTopologies.cpp - DGX/ND machines and generic shapes ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Figures are per direction. Bandwidths come from the vendors' public
// datasheets and whitepapers cited next to each machine; latencies (alpha)
// follow TACCL's profiled values for NVLink (~0.7 µs) and InfiniBand
// (~1.7 µs) (TACCL, NSDI '23, §6 / its ndv2 topology profile) and are the
// same order of magnitude that nccl-tests shows for small messages.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Topology/Topology.h"

#include <cstdlib>
#include <functional>
#include <map>
#include <regex>

namespace ccsynth {

namespace {

constexpr double kNvlinkAlphaUs = 0.7;
constexpr double kIbAlphaUs = 1.7;
/// One NVLink2/3/4 link carries 25 GB/s per direction (V100, A100 and H100
/// whitepapers: 300 / 600 / 900 GB/s bidirectional over 6 / 12 / 18 links).
constexpr double kNvlinkLaneGBps = 25.0;
/// One NVLink5 link carries 50 GB/s per direction (Blackwell: 1.8 TB/s
/// bidirectional over 18 links per GPU, DGX B200 datasheet and GB200 NVL72
/// product page).
constexpr double kNvlink5LaneGBps = 50.0;

/// Step-model figures per GPU generation (docs/calibration.md gives the
/// derivations). NCCL's tuning model (src/graph/tuning.cc) supplies the
/// per-channel caps: Simple as perChMaxTreeBws (one channel runs one
/// threadblock), LL128 as perChMaxRingLL128Bws, LL at half of Simple (an
/// LL line carries 8 data bytes in 16). NCCL's usable NVLink bandwidth
/// (src/graph/topo.h: SM70/SM80 20.0, SM90 20.6 GB/s per 25 GB/s link)
/// gives the link efficiency. Launch and step costs are NCCL's ring
/// baseLat and NVLink hwLat per protocol, which NCCL uses for every
/// generation, except H100's LL launch: fitted to published 1 KiB
/// nccl-tests times on 8 H100 (NCCL's 6.6 us predicts them 21-25% slow).
/// A reducing step moves 0.92 of what a copy does: the ratio one H100
/// threadblock showed (bench/ThreadblockCopyBench.cu, docs/calibration.md).
constexpr double kReduceOverCopy = 0.92;

StepModel gpuStepModel(int generation) {
  StepModel m;
  double simple = 24.0, ll128 = 20.0, eff = 20.0 / kNvlinkLaneGBps;
  if (generation == 70) {
    simple = 26.5;
  } else if (generation == 100) {
    // Blackwell (NCCL's tuning constants after 2.28: perChMaxTreeBws N1
    // 70.0, perChMaxRingLL128Bws 40.0; SM100_NVLINK_BW 40.1 GB/s per
    // 50 GB/s NVLink5 link).
    simple = 70.0;
    ll128 = 40.0;
    eff = 40.1 / kNvlink5LaneGBps;
  }
  double perProto[3] = {simple, ll128, simple / 2};
  if (generation == 90) {
    // Fitted to hardware tables of 8 x H100 (docs/calibration.md, "Small
    // sizes on H100"): MSCCL's own ND H100 v5 programs and NCCL 2.18.3's
    // LL ring, 1 KiB to 16 MiB. Index order Simple, LL128, LL.
    perProto[0] = 38.7;
    perProto[1] = 30.0;
    perProto[2] = 11.85;
    eff = 20.6 / kNvlinkLaneGBps;
    m.launchUs[1] = 16.0;
    m.launchUs[2] = 4.15;
    m.stepUs[1] = 1.0;
    m.stepFillUs[2] = 0.4;
  }
  for (int i = 0; i < 3; ++i) {
    m.tbCopyGBps[i] = perProto[i];
    m.tbReduceGBps[i] = perProto[i] * kReduceOverCopy;
  }
  m.linkEfficiency = eff;
  m.smArch = generation;
  return m;
}

/// Incrementally builds a topology: per node GPUs, switches and NICs.
class Builder {
public:
  explicit Builder(std::string name) { topo.name = std::move(name); }

  int addResource(std::string name, double bw) {
    topo.resources.push_back({std::move(name), bw});
    return (int)topo.resources.size() - 1;
  }
  void reserveLinks(size_t more) {
    topo.links.reserve(topo.links.size() + more);
  }
  void addLink(int src, int dst, LinkKind kind, double alpha, double bw,
               ResourceList resources = {}) {
    topo.links.push_back({src, dst, kind, alpha, bw, std::move(resources)});
  }
  void addRanks(int count, int node) {
    for (int i = 0; i < count; ++i)
      topo.nodeOf.push_back(node);
  }
  Topology take() { return std::move(topo); }
  Topology topo;
};

std::string rankName(int node, int local) {
  return "n" + std::to_string(node) + ".gpu" + std::to_string(local);
}

/// Point-to-point NVLink mesh inside a node: lanes[i][j] NVLinks i<->j.
void addNvlinkMesh(Builder &b, int base,
                   const std::vector<std::vector<int>> &lanes) {
  int g = (int)lanes.size();
  for (int i = 0; i < g; ++i)
    for (int j = 0; j < g; ++j)
      if (lanes[i][j] > 0)
        b.addLink(base + i, base + j, LinkKind::NVLink, kNvlinkAlphaUs,
                  lanes[i][j] * kNvlinkLaneGBps);
}

/// NVLink SHARP of a generation's NVSwitch: what an operation through the
/// switch costs. NCCL's tuning (src/graph/tuning.cc, master after 2.28.9)
/// charges an NVLS AllReduce 25 us of NVLink hardware latency
/// (hwLatencies[NVLINK][NVLS][Simple]); that AllReduce is two operations
/// in a row per chunk, a reduction and a multicast, so one costs half.
/// `efficiency` is the share of a port's two directions that reductions
/// and multicasts reach together, fitted to published nccl-tests NVLS
/// AllReduce busbw at large sizes (docs/calibration.md, "In-network
/// reduction"): 8 x H100 480.16 GB/s at 8 GB, 8 x B200 844.35 GB/s at
/// 32 GB (../shared/published-nccl-figures.md rows 2 and 45). NCCL's own
/// tuning derates NVLS by 0.85 on Hopper and 0.74 on Blackwell
/// (nvlsEfficiency) over a different traffic count.
constexpr double kNvlsAlphaUs = 12.5;
constexpr SwitchFigures kHopperNvls{0.754, kNvlsAlphaUs};
constexpr SwitchFigures kBlackwellNvls{0.676, kNvlsAlphaUs};

/// IB SHARP on an NDR fabric (Quantum-2 switches, one 400 Gb/s port per
/// GPU's NIC), as NCCL's CollNet Direct AllReduce runs through it: each
/// rank sends its slice's node-wide partial up once and receives the total
/// once. NCCL's tuning charges CollNet Direct 31 us of network hardware
/// latency (hwLatencies[NET][CollNetDirect][Simple]) for the reduction and
/// the result's way back, so one operation costs half. `efficiency` is
/// fitted to published CollNet Direct AllReduce busbw at 32 GB on 4 x 8
/// B200 (605.90 GB/s, ../shared/published-nccl-figures.md row 47).
constexpr SwitchFigures kNdrSharp{0.9, 15.5};

/// NVSwitch inside a node: each GPU has one egress and one ingress port of
/// `portGBps`; every GPU pair is a link through both ports. With `nvls`,
/// the switch also reduces and multicasts through the same ports.
void addNvswitch(Builder &b, int node, int base, int gpus, double portGBps,
                 const SwitchFigures *nvls = nullptr) {
  std::vector<int> out(gpus), in(gpus);
  for (int i = 0; i < gpus; ++i) {
    out[i] = b.addResource(rankName(node, i) + ".nvswitch.out", portGBps);
    in[i] = b.addResource(rankName(node, i) + ".nvswitch.in", portGBps);
  }
  for (int i = 0; i < gpus; ++i)
    for (int j = 0; j < gpus; ++j)
      if (i != j)
        b.addLink(base + i, base + j, LinkKind::NVLink, kNvlinkAlphaUs,
                  portGBps, {out[i], in[j]});
  if (!nvls)
    return;
  InNetworkSwitch sw;
  sw.name = "n";
  sw.name += std::to_string(node);
  sw.name += ".nvls";
  sw.kind = SwitchKind::NVLS;
  sw.alphaUs = nvls->alphaUs;
  sw.efficiency = nvls->efficiency;
  for (int i = 0; i < gpus; ++i)
    sw.ports.push_back({base + i, portGBps, out[i], in[i]});
  b.topo.switches.push_back(std::move(sw));
}

/// NICs shared by groups of GPUs; any GPU reaches any GPU of another node
/// through its own NIC, the fabric and the peer's NIC (full-bisection
/// fat-tree). nicOf[local] gives the NIC index of each local GPU. With
/// `sharp`, the fabric's switches also reduce and multicast (IB SHARP):
/// one switch over every rank, each through its NIC's ports.
void addNics(Builder &b, int nodes, int gpus, const std::vector<int> &nicOf,
             double nicGBps, const SwitchFigures *sharp = nullptr) {
  int nics = 0;
  for (int n : nicOf)
    nics = std::max(nics, n + 1);
  std::vector<std::vector<int>> out(nodes), in(nodes);
  for (int node = 0; node < nodes; ++node)
    for (int k = 0; k < nics; ++k) {
      std::string nm = "n";
      nm += std::to_string(node);
      nm += ".nic";
      nm += std::to_string(k);
      out[node].push_back(b.addResource(nm + ".out", nicGBps));
      in[node].push_back(b.addResource(nm + ".in", nicGBps));
    }
  // Every GPU reaches every GPU of another node: reserve them at once (a
  // vector grown by doubling would hold up to twice the largest machine's
  // 16.7M links while it copies them).
  b.reserveLinks((size_t)nodes * (nodes - 1) * gpus * gpus);
  for (int na = 0; na < nodes; ++na)
    for (int nb = 0; nb < nodes; ++nb) {
      if (na == nb)
        continue;
      for (int i = 0; i < gpus; ++i)
        for (int j = 0; j < gpus; ++j)
          b.addLink(na * gpus + i, nb * gpus + j, LinkKind::RDMA, kIbAlphaUs,
                    nicGBps, {out[na][nicOf[i]], in[nb][nicOf[j]]});
    }
  if (!sharp)
    return;
  InNetworkSwitch sw;
  sw.name = "sharp";
  sw.kind = SwitchKind::SHARP;
  sw.alphaUs = sharp->alphaUs;
  sw.efficiency = sharp->efficiency;
  for (int node = 0; node < nodes; ++node)
    for (int i = 0; i < gpus; ++i)
      sw.ports.push_back(
          {node * gpus + i, nicGBps, out[node][nicOf[i]], in[node][nicOf[i]]});
  b.topo.switches.push_back(std::move(sw));
}

// DGX-1 (V100) hybrid cube-mesh: NVLinks between GPU pairs; rows sum to 6
// (NVIDIA DGX-1 With Tesla V100 System Architecture, WP-08437-002, fig. 3).
const std::vector<std::vector<int>> kDgx1Lanes = {
    {0, 2, 1, 1, 2, 0, 0, 0}, {2, 0, 1, 2, 0, 1, 0, 0},
    {1, 1, 0, 2, 0, 0, 2, 0}, {1, 2, 2, 0, 0, 0, 0, 1},
    {2, 0, 0, 0, 0, 2, 1, 1}, {0, 1, 0, 0, 2, 0, 1, 2},
    {0, 0, 2, 0, 1, 1, 0, 2}, {0, 0, 0, 1, 1, 2, 2, 0}};

Topology dgx1(int nodes, bool ndv2) {
  Builder b(std::string(ndv2 ? "ndv2" : "dgx1") +
            (nodes > 1 ? "x" + std::to_string(nodes) : ""));
  for (int n = 0; n < nodes; ++n) {
    b.addRanks(8, n);
    addNvlinkMesh(b, n * 8, kDgx1Lanes);
  }
  if (nodes > 1) {
    if (ndv2) {
      // Azure NDv2: one 100 Gb/s EDR InfiniBand NIC per VM (8 V100s)
      // (learn.microsoft.com, "NDv2-series").
      addNics(b, nodes, 8, std::vector<int>(8, 0), 12.5);
    } else {
      // DGX-1: four 100 Gb/s EDR NICs, one per GPU pair (DGX-1 datasheet).
      addNics(b, nodes, 8, {0, 0, 1, 1, 2, 2, 3, 3}, 12.5);
    }
  }
  Topology t = b.take();
  t.stepModel = gpuStepModel(70);
  t.description = ndv2 ? "Azure NDv2: 8x V100 hybrid cube-mesh NVLink2 (25 "
                         "GB/s per link), 1x 100 Gb/s IB per node"
                       : "NVIDIA DGX-1: 8x V100 hybrid cube-mesh NVLink2 (25 "
                         "GB/s per link), 4x 100 Gb/s IB per node";
  return t;
}

Topology switched(const std::string &base, int nodes, int gpus, double portGBps,
                  const std::vector<int> &nicOf, double nicGBps,
                  const std::string &description,
                  const SwitchFigures *nvls = nullptr,
                  const SwitchFigures *sharp = nullptr) {
  Builder b(base + (nodes > 1 ? "x" + std::to_string(nodes) : ""));
  for (int n = 0; n < nodes; ++n) {
    b.addRanks(gpus, n);
    addNvswitch(b, n, n * gpus, gpus, portGBps, nvls);
  }
  if (nodes > 1)
    addNics(b, nodes, gpus, nicOf, nicGBps, sharp);
  Topology t = b.take();
  t.description = description;
  return t;
}

Topology dgx2(int nodes) {
  // DGX-2: 16x V100, 12 NVSwitches, 6 NVLink2 per GPU = 150 GB/s per
  // direction; 8x 100 Gb/s EDR NICs, one per GPU pair (DGX-2 datasheet).
  std::vector<int> nic(16);
  for (int i = 0; i < 16; ++i)
    nic[i] = i / 2;
  Topology t =
      switched("dgx2", nodes, 16, 6 * kNvlinkLaneGBps, nic, 12.5,
               "NVIDIA DGX-2: 16x V100 on NVSwitch (150 GB/s per GPU per "
               "direction), 8x 100 Gb/s IB per node");
  t.stepModel = gpuStepModel(70);
  return t;
}

Topology dgxA100(int nodes, const std::string &base) {
  // DGX A100: 8x A100, 6 NVSwitches, 12 NVLink3 per GPU = 300 GB/s per
  // direction; 8x 200 Gb/s HDR ConnectX-6, one per GPU (DGX A100 System
  // Architecture whitepaper). Azure NDv4 (ND A100 v4) has the same shape.
  std::vector<int> nic{0, 1, 2, 3, 4, 5, 6, 7};
  Topology t =
      switched(base, nodes, 8, 12 * kNvlinkLaneGBps, nic, 25.0,
               "NVIDIA DGX A100 / Azure NDv4: 8x A100 on NVSwitch (300 GB/s "
               "per GPU per direction), 8x 200 Gb/s IB per node");
  t.stepModel = gpuStepModel(80);
  return t;
}

Topology dgxH100(int nodes, const std::string &base) {
  // DGX H100: 8x H100, 4 NVSwitches, 18 NVLink4 per GPU = 450 GB/s per
  // direction; 8x 400 Gb/s NDR ConnectX-7, one per GPU (DGX H100 datasheet).
  // Azure NDv5 (ND H100 v5) has the same shape. DGX H100 nodes are joined
  // by an NDR InfiniBand fabric of Quantum-2 switches that reduce (IB
  // SHARP; DGX SuperPOD reference architecture); NDv5 is not said to
  // offer SHARP and has none here. The descriptions stay as they were:
  // they enter the topology hash that existing schedules carry.
  std::vector<int> nic{0, 1, 2, 3, 4, 5, 6, 7};
  bool dgx = base == "dgx-h100";
  Topology t = switched(
      base, nodes, 8, 18 * kNvlinkLaneGBps, nic, 50.0,
      "NVIDIA DGX H100 / Azure NDv5: 8x H100 on NVSwitch (450 GB/s per GPU "
      "per direction), 8x 400 Gb/s IB per node",
      &kHopperNvls, dgx ? &kNdrSharp : nullptr);
  t.stepModel = gpuStepModel(90);
  return t;
}

Topology dgxB200(int nodes) {
  // DGX B200: 8x B200, 2 NVSwitch chips, 18 NVLink5 per GPU = 900 GB/s per
  // direction (1.8 TB/s bidirectional); 8x 400 Gb/s ConnectX-7, one per
  // GPU (DGX B200 datasheet), on an NDR Quantum-2 fabric with IB SHARP
  // (DGX SuperPOD B200 reference architecture).
  std::vector<int> nic{0, 1, 2, 3, 4, 5, 6, 7};
  Topology t =
      switched("dgx-b200", nodes, 8, 18 * kNvlink5LaneGBps, nic, 50.0,
               "NVIDIA DGX B200: 8x B200 on NVSwitch (900 GB/s per GPU per "
               "direction), 8x 400 Gb/s IB per node",
               &kBlackwellNvls, &kNdrSharp);
  t.stepModel = gpuStepModel(100);
  return t;
}

Topology gb200Nvl72(int racks) {
  // GB200 NVL72: 72 Blackwell GPUs in one NVLink domain (18 NVLink switch
  // chips in 9 switch trays), 18 NVLink5 per GPU = 900 GB/s per direction;
  // one 400 Gb/s ConnectX-7 per GPU for the scale-out network (GB200 NVL72
  // product page and reference architecture). A "node" is one rack. Racks
  // are joined by InfiniBand switches with SHARP (CoreWeave's two-rack
  // figures, ../shared/published-nccl-figures.md row 52); the NDR figures
  // stand in for them, uncalibrated there.
  std::vector<int> nic(72);
  for (int i = 0; i < 72; ++i)
    nic[i] = i;
  Topology t = switched(
      "gb200-nvl72", racks, 72, 18 * kNvlink5LaneGBps, nic, 50.0,
      "NVIDIA GB200 NVL72: 72 Blackwell GPUs in one NVLink domain (900 GB/s "
      "per GPU per direction), 72x 400 Gb/s IB per rack",
      &kBlackwellNvls, &kNdrSharp);
  t.stepModel = gpuStepModel(100);
  return t;
}

// Generic shapes: every link is one 25 GB/s NVLink-class link.
Topology ring(int n) {
  Builder b("ring:" + std::to_string(n));
  b.addRanks(n, 0);
  for (int i = 0; i < n; ++i) {
    int next = (i + 1) % n;
    if (n == 2) {
      b.addLink(i, next, LinkKind::NVLink, kNvlinkAlphaUs, kNvlinkLaneGBps);
      continue;
    }
    b.addLink(i, next, LinkKind::NVLink, kNvlinkAlphaUs, kNvlinkLaneGBps);
    b.addLink(next, i, LinkKind::NVLink, kNvlinkAlphaUs, kNvlinkLaneGBps);
  }
  Topology t = b.take();
  t.description = "bidirectional ring of " + std::to_string(n) +
                  " ranks, 25 GB/s per direction";
  return t;
}

Topology fullyConnected(int n) {
  Builder b("fc:" + std::to_string(n));
  b.addRanks(n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j)
        b.addLink(i, j, LinkKind::NVLink, kNvlinkAlphaUs, kNvlinkLaneGBps);
  Topology t = b.take();
  t.description = "fully connected, " + std::to_string(n) +
                  " ranks, 25 GB/s per directed link";
  return t;
}

Topology torus2d(int a, int c) {
  Builder b("torus2d:" + std::to_string(a) + "x" + std::to_string(c));
  b.addRanks(a * c, 0);
  // Neighbours in each dimension; with a size of 2 both neighbours coincide,
  // so the two wires become one link of twice the bandwidth.
  std::map<std::pair<int, int>, int> lanes;
  for (int x = 0; x < a; ++x)
    for (int y = 0; y < c; ++y) {
      int r = x * c + y;
      if (a > 1) {
        lanes[{r, ((x + 1) % a) * c + y}]++;
        lanes[{r, ((x + a - 1) % a) * c + y}]++;
      }
      if (c > 1) {
        lanes[{r, x * c + (y + 1) % c}]++;
        lanes[{r, x * c + (y + c - 1) % c}]++;
      }
    }
  for (auto [pair, count] : lanes)
    if (pair.first != pair.second)
      b.addLink(pair.first, pair.second, LinkKind::NVLink, kNvlinkAlphaUs,
                count * kNvlinkLaneGBps);
  Topology t = b.take();
  t.description = std::to_string(a) + "x" + std::to_string(c) +
                  " 2D torus, 25 GB/s per neighbour link";
  return t;
}

std::string validNames() {
  std::string s = "valid built-in topologies:";
  for (const BuiltinInfo &i : builtinTopologies())
    s += "\n  " + i.name + "  " + i.description;
  return s;
}

bool parseCount(const std::string &s, int &out, int lo, int hi) {
  if (s.empty() || s.size() > 6)
    return false;
  for (char ch : s)
    if (ch < '0' || ch > '9')
      return false;
  out = std::atoi(s.c_str());
  return out >= lo && out <= hi;
}

} // namespace

std::optional<SwitchFigures> nvlsFigures(int smArch) {
  if (smArch >= 100)
    return kBlackwellNvls;
  if (smArch >= 90)
    return kHopperNvls;
  return std::nullopt;
}

SwitchFigures sharpFigures() { return kNdrSharp; }

std::vector<BuiltinInfo> builtinTopologies() {
  return {
      {"dgx1[xN]", "NVIDIA DGX-1, 8x V100 hybrid cube-mesh (+4 NICs/node)"},
      {"ndv2[xN]", "Azure NDv2, 8x V100 hybrid cube-mesh (+1 NIC/node)"},
      {"dgx2[xN]", "NVIDIA DGX-2, 16x V100 on NVSwitch (+8 NICs/node)"},
      {"dgx-a100[xN]", "NVIDIA DGX A100, 8x A100 on NVSwitch (+8 NICs/node); "
                       "alias ndv4"},
      {"dgx-h100[xN]", "NVIDIA DGX H100, 8x H100 on NVSwitch (+8 NICs/node); "
                       "alias ndv5"},
      {"dgx-b200[xN]", "NVIDIA DGX B200, 8x B200 on NVSwitch (+8 NICs/node)"},
      {"gb200-nvl72[xN]", "NVIDIA GB200 NVL72, 72 Blackwell GPUs in one NVLink "
                          "domain per rack (+72 NICs/rack)"},
      {"ring:N", "bidirectional ring of N ranks"},
      {"fc:N", "N ranks, fully connected"},
      {"torus2d:AxB", "A x B two-dimensional torus"},
  };
}

Expected<Topology> makeBuiltinTopology(const std::string &name) {
  static const std::regex machine(
      "^(dgx1|ndv2|dgx2|dgx-a100|ndv4|dgx-h100|ndv5|dgx-b200|gb200-nvl72)"
      "(?:x([0-9]+))?$");
  constexpr int kMaxRanks = 4096;
  std::smatch m;
  if (std::regex_match(name, m, machine)) {
    int nodes = 1;
    if (m[2].matched && !parseCount(m[2].str(), nodes, 1, 512))
      return Error("node count in '" + name + "' must be between 1 and 512");
    std::string base = m[1].str();
    if (base == "gb200-nvl72") {
      if (nodes * 72 > kMaxRanks)
        return Error("'" + name + "': at most " +
                     std::to_string(kMaxRanks / 72) + " racks (" +
                     std::to_string(kMaxRanks) + " ranks)");
      return gb200Nvl72(nodes);
    }
    if (base == "dgx-b200")
      return dgxB200(nodes);
    if (base == "dgx1" || base == "ndv2")
      return dgx1(nodes, base == "ndv2");
    if (base == "dgx2")
      return dgx2(nodes);
    if (base == "dgx-a100" || base == "ndv4")
      return dgxA100(nodes, base);
    return dgxH100(nodes, base);
  }
  auto colon = name.find(':');
  if (colon != std::string::npos) {
    std::string kind = name.substr(0, colon), arg = name.substr(colon + 1);
    int n = 0;
    if (kind == "ring" || kind == "fc") {
      if (!parseCount(arg, n, 2, kMaxRanks))
        return Error("'" + name + "': N must be an integer between 2 and " +
                     std::to_string(kMaxRanks));
      return kind == "ring" ? ring(n) : fullyConnected(n);
    }
    if (kind == "torus2d") {
      auto x = arg.find('x');
      int a = 0, c = 0;
      if (x == std::string::npos || !parseCount(arg.substr(0, x), a, 1, 64) ||
          !parseCount(arg.substr(x + 1), c, 1, 64) || a * c < 2)
        return Error("'" + name +
                     "': expected torus2d:AxB with 1 <= A, B <= "
                     "64 and A*B >= 2");
      return torus2d(a, c);
    }
  }
  return Error("unknown topology '" + name + "'", {}, validNames());
}

} // namespace ccsynth
