//===- NcclTopology.cpp - Import NCCL topology dumps (NCCL_TOPO_DUMP_FILE) ===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Facts about the format and NCCL's bandwidth rules come from NVIDIA/nccl
// 2.30.7: src/graph/xml.cc (writer and loader), src/graph/topo.cc
// (ncclTopoAddCpu / AddPci / AddNic / AddNet / AddGpu / AddNvLinks,
// kvDictPciClass, kvDictPciGen, ncclTopoGetInterCpuBw) and src/graph/topo.h
// (the bandwidth constants and ncclTopoNVLinkBw).
//
// The dump is a tree: <system version="1"> holds one <cpu> per NUMA domain
// (host_hash, numaid, arch, vendor, familyid, modelid); below it nested
// <pci busid class link_speed link_width> elements (bridges, GPUs, NICs);
// a GPU's <pci> holds <gpu dev sm rank gdr> with one <nvlink target count
// tclass> per NVLink peer; a NIC's <pci> (or a <cpu>) holds <nic> with one
// <net name dev speed port latency guid maxconn gdr> per port.
//
// Model:
//  - one rank per <gpu>, ordered by `rank` (then host, `dev`, file order);
//  - GPU->GPU <nvlink count=c>: an NVLink link of c x NCCL's per-link
//    bandwidth for the source GPU's `sm`;
//  - GPU->NVSwitch links (tclass 0x068000, or any target NCCL would treat as
//    a switch): NCCL merges every switch into one NVS node, so every pair of
//    switch-attached GPUs gets a link through the sender's egress and the
//    receiver's ingress port Resource (sum of counts x per-link bandwidth);
//  - other GPU pairs of one host: a PCIe link through Resources for every
//    PCI tree edge (one per direction) and the CPU-to-CPU interconnect on
//    their path, with NCCL's bandwidths for each;
//  - GPUs on different nodes (other hosts in the dump, or other copies with
//    options.nodes > 1): an RDMA link through the sender's and receiver's
//    closest <net> (egress/ingress Resources of speed/8000 GB/s) and the
//    PCI edges between each GPU and its NIC;
//  - NICs whose <net> says coll="1" (NCCL's CollNet support): when every
//    GPU's NIC does and there are several nodes, one IB SHARP switch over
//    every rank through its NIC's Resources, with the built-ins' figures.
// Not modeled: NCCL's PXN/NVB relaying, C2C links, MLOPart partitions, and
// the Intel P2P overhead; latencies come from NcclImportOptions because the
// dump records none for GPUs.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Support/Xml.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace ccsynth {

namespace {

// Per-NVLink bandwidth in GB/s by compute capability (topo.h:
// SM60_NVLINK_BW 18.0, SM70 20.0, SM80 20.0, SM86 12.0, SM90 20.6,
// SM100 40.1; unknown or older than SM60 falls back to SM80's value, as
// ncclTopoNVLinkBw does). Newer NCCL sources also define RUBIN_NVLINK_BW
// 31.2 for Rubin parts; 2.30.7 does not, so neither does this table.
double nvlinkGBps(int sm) {
  if (sm >= 100)
    return 40.1;
  if (sm >= 90)
    return 20.6;
  if (sm == 86)
    return 12.0;
  if (sm >= 80)
    return 20.0;
  if (sm >= 70)
    return 20.0;
  if (sm >= 60)
    return 18.0;
  return 20.0;
}

/// NCCL's LOC_BW: what it assigns to a connection with no PCI hop.
constexpr double kLocalGBps = 5000.0;

/// Per-lane PCIe speed in units of 100 Mb/s, looked up by prefix like
/// kvConvertToInt does over kvDictPciGen (60, i.e. Gen3, when unknown).
int pciLaneSpeed(const std::string &linkSpeed) {
  static const std::pair<const char *, int> table[] = {
      {"2.5 GT/s", 15},        {"5 GT/s", 30},         {"8 GT/s", 60},
      {"16 GT/s", 120},        {"32 GT/s", 240},       {"2.5 GT/s PCIe", 15},
      {"5.0 GT/s PCIe", 30},   {"8.0 GT/s PCIe", 60},  {"16.0 GT/s PCIe", 120},
      {"32.0 GT/s PCIe", 240}, {"64.0 GT/s PCIe", 480}};
  for (const auto &[prefix, speed] : table)
    if (linkSpeed.starts_with(prefix))
      return speed;
  return 60;
}

/// What NCCL makes of a PCI class string (kvDictPciClass, prefix match).
enum class PciClass { Bridge, NvSwitch, Cpu, Gpu, Nic };
PciClass classifyPci(const std::string &cls) {
  if (cls.starts_with("0x060400") || cls.starts_with("0x080100"))
    return PciClass::Bridge;
  if (cls.starts_with("0x068000"))
    return PciClass::NvSwitch;
  if (cls.starts_with("0x068001"))
    return PciClass::Cpu;
  if (cls.starts_with("0x03"))
    return PciClass::Gpu;
  if (cls.starts_with("0x02"))
    return PciClass::Nic;
  return PciClass::Bridge;
}

/// busIdToInt64: the hex digits of a bus id, ignoring ':' and '.', so that
/// "0000:07:00.0" and "07:00.0" name the same device. nullopt when the
/// string holds no hex digit.
std::optional<uint64_t> parseBusId(const std::string &s) {
  uint64_t v = 0;
  int digits = 0;
  for (char c : s) {
    if (c == ':' || c == '.')
      continue;
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0 || digits == 16)
      break;
    v = v * 16 + (uint64_t)d;
    ++digits;
  }
  if (digits == 0)
    return std::nullopt;
  return v;
}

/// A CPU (NUMA domain) or a PCI device: the tree PCIe paths run through.
struct TreeNode {
  int parent = -1; // -1 for a CPU
  int root = 0;    // the CPU this node hangs from
  int depth = 0;
  int host = 0;
  /// PCI nodes: bandwidth of the edge to the parent. CPUs: bandwidth of
  /// their interconnect to another CPU (ncclTopoGetInterCpuBw).
  double gbps = 0;
  std::string label; // bus id, or "numa<id>" for a CPU
};

struct NvlinkInfo {
  const XmlElement *el = nullptr;
  std::optional<uint64_t> target;
  std::optional<std::string> tclass;
  long long count = 0;
};

struct GpuInfo {
  const XmlElement *el = nullptr;
  int tree = 0;
  int host = 0;
  std::optional<uint64_t> busId;
  std::optional<long long> rank;
  long long dev = -1;
  int sm = 0;
  size_t order = 0;
  std::vector<NvlinkInfo> nvlinks;
};

struct NetInfo {
  const XmlElement *el = nullptr;
  int tree = 0;
  int host = 0;
  std::string name;
  long long dev = 0;
  double gbps = 0;
  size_t order = 0;
  /// coll="1": the port reaches a CollNet (IB SHARP) fabric.
  bool coll = false;
};

/// One step of a PCIe path: the edge between `tree` and its parent, walked
/// up (towards the CPU) or down.
struct Hop {
  int tree;
  bool up;
};
struct TreePath {
  std::vector<Hop> hops;
  /// CPUs joined by the inter-CPU link, or -1 when the path stays on one;
  /// that link comes after the first `upHops` hops.
  int sysFrom = -1, sysTo = -1;
  size_t upHops = 0;
  int length() const { return (int)hops.size() + (sysFrom >= 0 ? 1 : 0); }
};

class Importer {
public:
  Importer(const std::string &file, const std::string &text,
           const NcclImportOptions &options)
      : file(file), text(text), options(options) {}

  Expected<Topology> run(const XmlElement &root);

private:
  const std::string &file;
  const std::string &text;
  const NcclImportOptions &options;
  std::vector<TreeNode> tree;
  std::vector<GpuInfo> gpus;
  std::vector<NetInfo> nets;
  std::map<std::string, int> hostIds;

  Error errorAt(const XmlElement &e, const std::string &msg) const {
    return Error(msg, e.loc, caretLine(text, e.loc));
  }
  void warnAt(const XmlElement &e, const std::string &msg) const {
    if (options.warnings)
      options.warnings->push_back(Error(msg, e.loc));
  }
  /// A bandwidth the dump gives, checked against the physical range.
  Status checkBandwidth(const XmlElement &e, double gbps,
                        const std::string &what) const {
    if (isUsableBandwidth(gbps))
      return Status::success();
    return errorAt(e, what + " gives " + formatFigure(gbps) +
                          " GB/s, out of range: it must be " +
                          bandwidthRangeText());
  }
  Expected<std::optional<long long>> intAttr(const XmlElement &e,
                                             const std::string &key) const;
  Status addCpu(const XmlElement &cpu);
  Status walk(const XmlElement &e, int node, std::optional<uint64_t> busId,
              GpuInfo *gpu);
  TreePath path(int from, int to) const;
};

/// An integer attribute the way NCCL's strtol(..., 0) reads it (decimal or
/// 0x hex, optional sign), but strict: trailing junk or overflow is an
/// error. nullopt when absent or empty (NCCL writes "" for unknown values).
Expected<std::optional<long long>>
Importer::intAttr(const XmlElement &e, const std::string &key) const {
  auto v = e.attr(key);
  if (!v || v->empty())
    return std::optional<long long>{};
  const std::string &s = *v;
  size_t i = 0;
  bool neg = false;
  if (s[i] == '-' || s[i] == '+')
    neg = s[i++] == '-';
  int base = 10;
  if (s.size() - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    base = 16;
    i += 2;
  }
  long long out = 0;
  bool ok = i < s.size();
  for (; ok && i < s.size(); ++i) {
    char c = s[i];
    int d = (c >= '0' && c <= '9')               ? c - '0'
            : base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10
            : base == 16 && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
    if (d < 0)
      ok = false;
    else if (out > (std::numeric_limits<int>::max() - d) / base)
      ok = false;
    else
      out = out * base + d;
  }
  if (!ok)
    return errorAt(e, "attribute '" + key + "' of <" + e.name +
                          "> must be an integer that fits in 32 bits, got '" +
                          s + "'");
  return std::optional<long long>{neg ? -out : out};
}

Status Importer::addCpu(const XmlElement &cpu) {
  std::string hash = cpu.attr("host_hash").value_or("");
  auto [it, inserted] = hostIds.emplace(hash, (int)hostIds.size());
  auto numa = intAttr(cpu, "numaid");
  if (!numa)
    return numa.error();
  auto family = intAttr(cpu, "familyid");
  if (!family)
    return family.error();
  auto model = intAttr(cpu, "modelid");
  if (!model)
    return model.error();

  // ncclTopoGetInterCpuBw, keyed on arch / vendor / family / model as NCCL
  // reads them (prefix match on arch and vendor).
  std::string arch = cpu.attr("arch").value_or("");
  std::string vendor = cpu.attr("vendor").value_or("");
  long long fam = family->value_or(0), mod = model->value_or(0);
  double sys = kLocalGBps;
  if (arch.starts_with("ppc64")) {
    sys = 32.0; // P9_BW
  } else if (arch.starts_with("arm64")) {
    sys = 6.0; // ARM_BW
  } else if (arch.starts_with("x86_64")) {
    if (vendor.starts_with("GenuineIntel"))
      sys = fam == 6 && mod >= 0xCF   ? 40.0 // ERP_QPI_BW (Emerald Rapids)
            : fam == 6 && mod >= 0x8F ? 22.0 // SRP_QPI_BW (Sapphire Rapids)
            : fam == 6 && mod >= 0x55 ? 10.0 // SKL_QPI_BW (Skylake)
                                      : 6.0; // BDW_QPI_BW (Broadwell)
    else if (vendor.starts_with("AuthenticAMD"))
      sys = 16.0; // AMD_BW
    else if (vendor.starts_with("CentaurHauls") ||
             vendor.starts_with("  Shanghai  "))
      sys = fam == 7 && mod == 0x5B ? 9.0 : 6.0; // YONGFENG_ZPI_BW / ZPI_BW
  }

  TreeNode n;
  n.root = (int)tree.size();
  n.host = it->second;
  n.gbps = sys;
  n.label = numa->has_value() ? "numa" + std::to_string(**numa)
                              : "cpu" + std::to_string(tree.size());
  tree.push_back(n);
  for (const auto &c : cpu.children)
    if (Status s = walk(*c, n.root, std::nullopt, nullptr); !s)
      return s;
  return Status::success();
}

Status Importer::walk(const XmlElement &e, int node,
                      std::optional<uint64_t> busId, GpuInfo *gpu) {
  if (e.name == "cpu")
    return errorAt(e, "<cpu> must be a direct child of <system>");
  if (e.name == "pci") {
    auto bus = e.attr("busid");
    if (!bus)
      return errorAt(e, "<pci> needs a 'busid' attribute");
    auto id = parseBusId(*bus);
    if (!id)
      return errorAt(e, "malformed PCI bus id '" + *bus + "'");
    auto width = intAttr(e, "link_width");
    if (!width)
      return width.error();
    long long w = width->value_or(0);
    if (w < 0)
      return errorAt(e, "'link_width' must not be negative");
    if (w == 0) // NCCL: "Manage cases where speed was not indicated in /sys"
      w = 16;
    TreeNode t;
    t.parent = node;
    t.root = tree[node].root;
    t.depth = tree[node].depth + 1;
    t.host = tree[node].host;
    // kvDictPciGen gives 100 Mb/s per lane; NCCL divides by 80 for GB/s.
    t.gbps = (double)w * pciLaneSpeed(e.attr("link_speed").value_or("")) / 80.0;
    if (Status s = checkBandwidth(e, t.gbps,
                                  "link_width " + std::to_string(w) +
                                      " at this link_speed");
        !s)
      return s;
    t.label = *bus;
    int self = (int)tree.size();
    tree.push_back(t);
    for (const auto &c : e.children)
      if (Status s = walk(*c, self, id, gpu); !s)
        return s;
    return Status::success();
  }
  if (e.name == "gpu") {
    if (gpu)
      return errorAt(e, "<gpu> cannot be nested in another <gpu>");
    GpuInfo g;
    g.el = &e;
    g.tree = node;
    g.host = tree[node].host;
    g.busId = busId;
    g.order = gpus.size();
    auto rank = intAttr(e, "rank");
    if (!rank)
      return rank.error();
    if (*rank && **rank < 0)
      return errorAt(e, "'rank' must not be negative");
    g.rank = *rank;
    auto dev = intAttr(e, "dev");
    if (!dev)
      return dev.error();
    g.dev = dev->value_or(-1);
    auto sm = intAttr(e, "sm");
    if (!sm)
      return sm.error();
    g.sm = (int)sm->value_or(0);
    for (const auto &c : e.children)
      if (Status s = walk(*c, node, busId, &g); !s)
        return s;
    gpus.push_back(std::move(g));
    return Status::success();
  }
  if (e.name == "nvlink") {
    if (!gpu)
      return errorAt(e, "<nvlink> must be inside a <gpu>");
    NvlinkInfo l;
    l.el = &e;
    auto count = intAttr(e, "count");
    if (!count)
      return count.error();
    if (!*count)
      return errorAt(e, "<nvlink> needs a 'count' attribute");
    if (**count < 0)
      return errorAt(e, "NVLink 'count' must not be negative");
    l.count = **count;
    if (l.count > 0)
      if (Status s =
              checkBandwidth(e, (double)l.count * nvlinkGBps(gpu->sm),
                             "'count' " + std::to_string(l.count) + " NVLinks");
          !s)
        return s;
    if (auto target = e.attr("target")) {
      l.target = parseBusId(*target);
      if (!l.target)
        return errorAt(e, "malformed NVLink target bus id '" + *target + "'");
    }
    l.tclass = e.attr("tclass");
    gpu->nvlinks.push_back(std::move(l));
    return Status::success();
  }
  if (e.name == "net") {
    // ncclTopoAddNic skips <net> without 'dev' and, in NCCL versions that
    // write it, those with net="0" (GIN/RMA-only devices).
    auto dev = intAttr(e, "dev");
    if (!dev)
      return dev.error();
    auto isNet = intAttr(e, "net");
    if (!isNet)
      return isNet.error();
    if (!*dev || isNet->value_or(1) == 0)
      return Status::success();
    auto speed = intAttr(e, "speed");
    if (!speed)
      return speed.error();
    long long mbps = speed->value_or(0);
    if (mbps <= 0) { // ncclTopoAddNet: "Some NICs define speed = -1"
      warnAt(e, (speed->has_value()
                     ? "NIC speed " + std::to_string(mbps) + " Mb/s is no speed"
                     : std::string("this NIC has no 'speed'")) +
                    ": assumed 10000 Mb/s (1.25 GB/s), as NCCL does");
      mbps = 10000;
    }
    NetInfo n;
    n.el = &e;
    n.tree = node;
    n.host = tree[node].host;
    n.dev = **dev;
    n.name = e.attr("name").value_or("");
    if (n.name.empty())
      n.name = "net" + std::to_string(n.dev);
    n.gbps = (double)mbps / 8000.0;
    auto coll = intAttr(e, "coll");
    if (!coll)
      return coll.error();
    n.coll = coll->value_or(0) != 0;
    if (Status s = checkBandwidth(
            e, n.gbps, "NIC speed " + std::to_string(mbps) + " Mb/s");
        !s)
      return s;
    n.order = nets.size();
    nets.push_back(std::move(n));
    return Status::success();
  }
  // <nic>, and elements this importer has no use for (<pcilink>, <c2c>,
  // newer additions): look inside for GPUs and NICs.
  for (const auto &c : e.children)
    if (Status s = walk(*c, node, busId, gpu); !s)
      return s;
  return Status::success();
}

TreePath Importer::path(int from, int to) const {
  TreePath p;
  std::vector<Hop> down;
  int a = from, b = to;
  if (tree[a].root != tree[b].root) {
    for (; tree[a].parent >= 0; a = tree[a].parent)
      p.hops.push_back({a, true});
    for (; tree[b].parent >= 0; b = tree[b].parent)
      down.push_back({b, false});
    p.sysFrom = a;
    p.sysTo = b;
  } else {
    while (tree[a].depth > tree[b].depth) {
      p.hops.push_back({a, true});
      a = tree[a].parent;
    }
    while (tree[b].depth > tree[a].depth) {
      down.push_back({b, false});
      b = tree[b].parent;
    }
    while (a != b) {
      p.hops.push_back({a, true});
      down.push_back({b, false});
      a = tree[a].parent;
      b = tree[b].parent;
    }
  }
  p.upHops = p.hops.size();
  p.hops.insert(p.hops.end(), down.rbegin(), down.rend());
  return p;
}

Expected<Topology> Importer::run(const XmlElement &root) {
  if (root.name != "system")
    return errorAt(root, "not an NCCL topology dump: the root element is <" +
                             root.name + ">, expected <system>");
  auto version = intAttr(root, "version");
  if (!version)
    return version.error();
  if (*version && **version != 1)
    return errorAt(root, "unsupported NCCL topology XML version " +
                             std::to_string(**version) + " (expected 1)");
  if (options.nodes < 1 || options.nodes > 512)
    return Error("the node count must be between 1 and 512 (got " +
                 std::to_string(options.nodes) + ")");
  // NCCL only reads <cpu> children of <system>.
  for (const auto &c : root.children)
    if (c->name == "cpu")
      if (Status s = addCpu(*c); !s)
        return s.error();
  if (gpus.empty())
    return errorAt(root, "no GPUs in the NCCL topology dump: expected "
                         "<gpu> elements inside <system><cpu>...<pci> (files "
                         "that list GPUs only as <pci class=\"0x03...\"> are "
                         "topology hints, not dumps; write one with "
                         "NCCL_TOPO_DUMP_FILE)");

  // Rank order: NCCL's rank attribute, then host, device number, file order.
  std::stable_sort(
      gpus.begin(), gpus.end(), [](const GpuInfo &x, const GpuInfo &y) {
        auto key = [](const GpuInfo &g) {
          return std::make_tuple(!g.rank.has_value(), g.rank.value_or(0),
                                 g.host, g.dev, g.order);
        };
        return key(x) < key(y);
      });
  for (size_t i = 1; i < gpus.size(); ++i)
    if (gpus[i].rank && gpus[i].rank == gpus[i - 1].rank)
      return errorAt(*gpus[i].el,
                     "duplicate GPU rank " + std::to_string(*gpus[i].rank) +
                         " (also at line " +
                         std::to_string(gpus[i - 1].el->loc.line) + ")");
  const int numGpus = (int)gpus.size();
  const int copies = options.nodes;
  constexpr int kMaxRanks = 4096;
  if ((long long)numGpus * copies > kMaxRanks)
    return Error("importing " + std::to_string(numGpus) + " GPUs x " +
                     std::to_string(copies) + " nodes exceeds " +
                     std::to_string(kMaxRanks) + " ranks",
                 SourceLoc{file});

  // Hosts are numbered in rank order; hosts with no GPU get no node.
  std::map<int, int> hostNode;
  for (const GpuInfo &g : gpus)
    hostNode.emplace(g.host, (int)hostNode.size());
  const int hostsPerCopy = (int)hostNode.size();
  std::vector<int> localIndex(numGpus);
  {
    std::map<int, int> seen;
    for (int i = 0; i < numGpus; ++i)
      localIndex[i] = seen[gpus[i].host]++;
  }
  std::stable_sort(nets.begin(), nets.end(),
                   [](const NetInfo &x, const NetInfo &y) {
                     return std::make_tuple(x.host, x.dev, x.order) <
                            std::make_tuple(y.host, y.dev, y.order);
                   });

  auto nodeOfGpu = [&](int copy, int g) {
    return copy * hostsPerCopy + hostNode.at(gpus[g].host);
  };
  auto nodePrefix = [&](int copy, int host) {
    std::string prefix = "n";
    prefix += std::to_string(copy * hostsPerCopy + hostNode.at(host));
    prefix += '.';
    return prefix;
  };

  // NVLink: direct per-pair lane counts (sparse) and per-GPU NVSwitch lane
  // counts. NVLink targets are bus ids, which are unique within a host.
  std::map<std::pair<int, uint64_t>, int> gpuAtBus;
  for (int j = 0; j < numGpus; ++j)
    if (gpus[j].busId)
      gpuAtBus.emplace(std::make_pair(gpus[j].host, *gpus[j].busId), j);
  std::map<std::pair<int, int>, long long> lanes;
  std::vector<long long> switchLanes(numGpus, 0);
  // The last <nvlink> adding to each sum, to locate a sum out of range.
  std::map<std::pair<int, int>, const XmlElement *> lanesAt;
  std::vector<const XmlElement *> switchLanesAt(numGpus, nullptr);
  for (int i = 0; i < numGpus; ++i) {
    for (const NvlinkInfo &l : gpus[i].nvlinks) {
      if (l.count == 0) {
        warnAt(*l.el, "NVLink with count 0 carries nothing: ignored");
        continue;
      }
      int peer = -1;
      bool self = false;
      if (l.target) {
        auto it = gpuAtBus.find({gpus[i].host, *l.target});
        if (it != gpuAtBus.end() && it->second != i)
          peer = it->second;
        self = it != gpuAtBus.end() && it->second == i;
      }
      // ncclTopoAddNvLinks: a GPU class links to that GPU (ignored when it
      // is not in the dump), a CPU class (POWER9) is no GPU-GPU path, and
      // anything else is the NVSwitch. Without tclass NCCL asks sysfs and
      // assumes NVSwitch when it cannot tell; a known GPU bus id decides.
      PciClass cls = l.tclass    ? classifyPci(*l.tclass)
                     : peer >= 0 ? PciClass::Gpu
                                 : PciClass::NvSwitch;
      if (cls == PciClass::Gpu) {
        if (peer >= 0) {
          lanes[{i, peer}] += l.count;
          lanesAt[{i, peer}] = l.el;
        } else {
          warnAt(*l.el,
                 std::string("NVLink to a GPU ") +
                     (self       ? "that is this GPU itself"
                      : l.target ? "whose bus id is not a GPU of this dump"
                                 : "without a 'target' bus id") +
                     ": ignored (as NCCL ignores it)");
        }
      } else if (cls != PciClass::Cpu) {
        switchLanes[i] += l.count;
        switchLanesAt[i] = l.el;
      }
    }
  }
  // Several entries may add up to more than any NVLink carries.
  for (const auto &[pair, n] : lanes)
    if (Status s = checkBandwidth(*lanesAt[pair],
                                  (double)n * nvlinkGBps(gpus[pair.first].sm),
                                  std::to_string(n) + " NVLinks to one GPU");
        !s)
      return s.error();
  for (int i = 0; i < numGpus; ++i)
    if (switchLanes[i] > 0)
      if (Status s = checkBandwidth(
              *switchLanesAt[i],
              (double)switchLanes[i] * nvlinkGBps(gpus[i].sm),
              std::to_string(switchLanes[i]) + " NVLinks to NVSwitches");
          !s)
        return s.error();

  Topology t;
  std::string stem = std::filesystem::path(file).stem().string();
  t.name = "nccl:" + (stem.empty() ? std::string("topology") : stem) +
           (copies > 1 ? "x" + std::to_string(copies) : "");
  for (int c = 0; c < copies; ++c)
    for (int g = 0; g < numGpus; ++g)
      t.nodeOf.push_back(nodeOfGpu(c, g));
  auto rankOf = [&](int copy, int g) { return copy * numGpus + g; };
  auto gpuName = [&](int copy, int g) {
    return nodePrefix(copy, gpus[g].host) + "gpu" +
           std::to_string(localIndex[g]);
  };

  std::map<std::tuple<int, int, long long>, int> resourceIds;
  auto resource = [&](std::tuple<int, int, long long> key,
                      const std::string &name, double gbps) {
    auto [it, inserted] = resourceIds.emplace(key, (int)t.resources.size());
    if (inserted)
      t.resources.push_back({name, gbps});
    return it->second;
  };
  // Resource keys: {kind, copy, id}; kinds below.
  enum { kSwitchOut, kSwitchIn, kPciUp, kPciDown, kSys, kNetOut, kNetIn };
  auto pathResources = [&](int copy, const TreePath &p, auto &out) {
    double bw = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k <= p.hops.size(); ++k) {
      if (k == p.upHops && p.sysFrom >= 0) {
        const TreeNode &a = tree[p.sysFrom];
        std::string name =
            nodePrefix(copy, a.host) + a.label + "->" + tree[p.sysTo].label;
        long long id = (long long)p.sysFrom * (long long)tree.size() + p.sysTo;
        out.push_back(resource({kSys, copy, id}, name, a.gbps));
        bw = std::min(bw, a.gbps);
      }
      if (k == p.hops.size())
        break;
      const Hop &h = p.hops[k];
      const TreeNode &n = tree[h.tree];
      std::string name =
          nodePrefix(copy, n.host) + "pci" + n.label + (h.up ? ".up" : ".down");
      out.push_back(
          resource({h.up ? kPciUp : kPciDown, copy, h.tree}, name, n.gbps));
      bw = std::min(bw, n.gbps);
    }
    return bw;
  };

  for (int c = 0; c < copies; ++c) {
    for (int i = 0; i < numGpus; ++i) {
      double perLane = nvlinkGBps(gpus[i].sm);
      for (int j = 0; j < numGpus; ++j) {
        if (i == j)
          continue;
        bool nvlink = false;
        if (auto it = lanes.find({i, j}); it != lanes.end()) {
          t.links.push_back({rankOf(c, i),
                             rankOf(c, j),
                             LinkKind::NVLink,
                             options.nvlinkAlphaUs,
                             (double)it->second * perLane,
                             {}});
          nvlink = true;
        }
        if (switchLanes[i] > 0 && switchLanes[j] > 0) {
          double outBw = (double)switchLanes[i] * perLane;
          double inBw = (double)switchLanes[j] * nvlinkGBps(gpus[j].sm);
          int out = resource({kSwitchOut, c, i},
                             gpuName(c, i) + ".nvswitch.out", outBw);
          int in =
              resource({kSwitchIn, c, j}, gpuName(c, j) + ".nvswitch.in", inBw);
          t.links.push_back({rankOf(c, i),
                             rankOf(c, j),
                             LinkKind::NVLink,
                             options.nvlinkAlphaUs,
                             std::min(outBw, inBw),
                             {out, in}});
          nvlink = true;
        }
        if (!nvlink && gpus[i].host == gpus[j].host) {
          Link l{rankOf(c, i),
                 rankOf(c, j),
                 LinkKind::PCIe,
                 options.pcieAlphaUs,
                 0,
                 {}};
          double bw =
              pathResources(c, path(gpus[i].tree, gpus[j].tree), l.resources);
          l.bandwidthGBps = std::min(bw, kLocalGBps);
          t.links.push_back(std::move(l));
        }
      }
    }
  }

  // NVLink SHARP: the dump has no attribute for it (NCCL asks the driver
  // for multicast support at run time); Hopper and later GPUs whose
  // NVLinks all go to NVSwitches have it, one switch per node over the
  // ports the NVSwitch links share.
  bool nvls = false;
  for (int c = 0; c < copies; ++c)
    for (const auto &[h, node] : hostNode) {
      (void)node;
      InNetworkSwitch sw;
      std::optional<SwitchFigures> fig;
      bool all = true;
      for (int g = 0; g < numGpus && all; ++g) {
        if (gpus[g].host != h)
          continue;
        std::optional<SwitchFigures> f = nvlsFigures(gpus[g].sm);
        all = f && switchLanes[g] > 0 &&
              (!fig || (f->efficiency == fig->efficiency &&
                        f->alphaUs == fig->alphaUs));
        fig = f;
        if (!all)
          break;
        auto up = resourceIds.find({kSwitchOut, c, g}),
             down = resourceIds.find({kSwitchIn, c, g});
        sw.ports.push_back({rankOf(c, g),
                            (double)switchLanes[g] * nvlinkGBps(gpus[g].sm),
                            up == resourceIds.end() ? -1 : up->second,
                            down == resourceIds.end() ? -1 : down->second});
      }
      if (!all || !fig || sw.ports.size() < 2)
        continue;
      sw.name = nodePrefix(c, h) + "nvls";
      sw.kind = SwitchKind::NVLS;
      sw.efficiency = fig->efficiency;
      sw.alphaUs = fig->alphaUs;
      std::sort(sw.ports.begin(), sw.ports.end(),
                [](const SwitchPort &a, const SwitchPort &b) {
                  return a.rank < b.rank;
                });
      t.switches.push_back(std::move(sw));
      nvls = true;
    }

  int numNodes = copies * hostsPerCopy;
  if (numNodes > 1) {
    // The NIC closest to each GPU on its PCI tree (fewest hops; crossing to
    // another CPU counts as farther than any same-CPU path), spreading GPUs
    // that are equally close over the NICs, like NCCL's one-NIC-per-GPU
    // rails on DGX machines.
    std::vector<int> nicOf(numGpus, -1);
    std::vector<int> load(nets.size(), 0);
    for (int g = 0; g < numGpus; ++g) {
      int best = -1;
      std::pair<int, int> bestKey;
      for (int k = 0; k < (int)nets.size(); ++k) {
        if (nets[k].host != gpus[g].host)
          continue;
        TreePath p = path(gpus[g].tree, nets[k].tree);
        std::pair<int, int> key{p.length() + (p.sysFrom >= 0 ? 1000 : 0),
                                load[k]};
        if (best < 0 || key < bestKey) {
          best = k;
          bestKey = key;
        }
      }
      if (best < 0)
        return errorAt(*gpus[g].el,
                       "this GPU's host has no network device (<net> with a "
                       "'dev' attribute), so it cannot reach other nodes");
      nicOf[g] = best;
      ++load[best];
    }
    // Per copy and GPU: the NIC's resources and the PCI path to it.
    struct Route {
      std::vector<int> out, in;
      double outBw = 0, inBw = 0;
    };
    std::vector<std::vector<Route>> routes(copies, std::vector<Route>(numGpus));
    for (int c = 0; c < copies; ++c)
      for (int g = 0; g < numGpus; ++g) {
        const NetInfo &n = nets[nicOf[g]];
        Route &r = routes[c][g];
        std::string base = nodePrefix(c, n.host) + n.name;
        r.outBw = std::min(pathResources(c, path(gpus[g].tree, n.tree), r.out),
                           n.gbps);
        r.out.push_back(
            resource({kNetOut, c, nicOf[g]}, base + ".out", n.gbps));
        r.inBw = std::min(pathResources(c, path(n.tree, gpus[g].tree), r.in),
                          n.gbps);
        r.in.insert(r.in.begin(),
                    resource({kNetIn, c, nicOf[g]}, base + ".in", n.gbps));
      }
    for (int ca = 0; ca < copies; ++ca)
      for (int i = 0; i < numGpus; ++i)
        for (int cb = 0; cb < copies; ++cb)
          for (int j = 0; j < numGpus; ++j) {
            if (nodeOfGpu(ca, i) == nodeOfGpu(cb, j))
              continue;
            const Route &src = routes[ca][i], &dst = routes[cb][j];
            Link l{rankOf(ca, i),
                   rankOf(cb, j),
                   LinkKind::RDMA,
                   options.netAlphaUs,
                   std::min(src.outBw, dst.inBw),
                   src.out};
            for (int r : dst.in)
              l.resources.push_back(r);
            t.links.push_back(std::move(l));
          }
    bool coll = true;
    for (int g = 0; g < numGpus; ++g)
      coll = coll && nets[nicOf[g]].coll;
    if (coll) {
      SwitchFigures fig = sharpFigures();
      InNetworkSwitch sw;
      sw.name = "sharp";
      sw.kind = SwitchKind::SHARP;
      sw.alphaUs = fig.alphaUs;
      sw.efficiency = fig.efficiency;
      for (int c = 0; c < copies; ++c)
        for (int g = 0; g < numGpus; ++g)
          sw.ports.push_back({rankOf(c, g), nets[nicOf[g]].gbps,
                              resourceIds.at({kNetOut, c, nicOf[g]}),
                              resourceIds.at({kNetIn, c, nicOf[g]})});
      std::sort(sw.ports.begin(), sw.ports.end(),
                [](const SwitchPort &a, const SwitchPort &b) {
                  return a.rank < b.rank;
                });
      t.switches.push_back(std::move(sw));
    }
  }

  // Description: what was found, in the words of the dump.
  std::set<int> sms;
  for (const GpuInfo &g : gpus)
    sms.insert(g.sm);
  std::string smList;
  for (int sm : sms)
    smList += (smList.empty() ? "sm" : "/sm") + std::to_string(sm);
  bool anySwitch = std::any_of(switchLanes.begin(), switchLanes.end(),
                               [](long long n) { return n > 0; });
  bool anyMesh = !lanes.empty();
  t.description = "imported from NCCL topology dump '" + file +
                  "': " + std::to_string(numGpus) + " GPUs (" + smList + ")";
  if (hostsPerCopy > 1)
    t.description += " on " + std::to_string(hostsPerCopy) + " hosts";
  t.description += anySwitch ? ", NVSwitch"
                   : anyMesh ? ", NVLink mesh"
                             : ", PCIe only";
  if (nvls)
    t.description += " with NVLink SHARP (sm90+)";
  t.description += ", " + std::to_string(nets.size()) + " NIC port(s)";

  if (copies > 1)
    t.description += ", replicated on " + std::to_string(copies) + " nodes";
  if (Status s = t.validate(); !s)
    return Error(s.error().message, SourceLoc{file});
  return t;
}

} // namespace

Expected<Topology> importNcclTopology(const std::string &file,
                                      const std::string &text,
                                      const NcclImportOptions &options) {
  auto doc = parseXml(file, text);
  if (!doc)
    return doc.error();
  Importer importer(file, text, options);
  return importer.run(**doc);
}

} // namespace ccsynth
