// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the NCCL topology dump importer (NCCL_TOPO_DUMP_FILE XML).
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Topology/Topology.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace ccsynth;

namespace {

std::string inputPath(const std::string &name) {
  return std::string(CCSYNTH_SOURCE_DIR) + "/test/unit/core/inputs/" + name;
}

Topology importFixture(const std::string &name, int nodes = 1) {
  auto text = readFile(inputPath(name));
  REQUIRE(text.ok());
  NcclImportOptions opts;
  opts.nodes = nodes;
  auto t = importNcclTopology(name, *text, opts);
  if (!t.ok())
    FAIL(t.error().format());
  REQUIRE(t->validate().ok());
  return t.take();
}

Error importError(const std::string &text, int nodes = 1) {
  NcclImportOptions opts;
  opts.nodes = nodes;
  auto t = importNcclTopology("bad.xml", text, opts);
  REQUIRE_FALSE(t.ok());
  return t.error();
}

/// The only link src -> dst of the given kind.
const Link &onlyLink(const Topology &t, int src, int dst, LinkKind kind) {
  const Link *found = nullptr;
  int count = 0;
  for (int i : t.linksBetween(src, dst))
    if (t.links[i].kind == kind) {
      found = &t.links[i];
      ++count;
    }
  INFO("link " << src << " -> " << dst << " of kind " << toString(kind));
  REQUIRE(count == 1);
  return *found;
}

std::vector<std::string> resourceNames(const Topology &t, const Link &l) {
  std::vector<std::string> out;
  for (int r : l.resources)
    out.push_back(t.resources[r].name);
  return out;
}

double resourceBw(const Topology &t, const std::string &name) {
  for (const Resource &r : t.resources)
    if (r.name == name)
      return r.bandwidthGBps;
  FAIL("no resource named " << name);
  return 0;
}

int countKind(const Topology &t, LinkKind kind) {
  int n = 0;
  for (const Link &l : t.links)
    n += l.kind == kind;
  return n;
}

/// A minimal single-CPU dump around the given <pci> elements.
std::string wrap(const std::string &body,
                 const std::string &system = "<system version=\"1\">") {
  return system +
         "\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n" +
         body + "\n</cpu>\n</system>\n";
}

std::string gpuPci(const std::string &bus, const std::string &gpuAttrs,
                   const std::string &nvlinks = "") {
  return "<pci busid=\"" + bus +
         "\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" "
         "link_width=\"16\"><gpu " +
         gpuAttrs + ">" + nvlinks + "</gpu></pci>\n";
}

} // namespace

TEST_CASE("DGX A100 dump: 8 GPUs on NVSwitch", "[nccl]") {
  Topology t = importFixture("nccl-dgx-a100.xml");
  CHECK(t.name == "nccl:nccl-dgx-a100");
  CHECK(t.numRanks() == 8);
  CHECK(t.numNodes() == 1);
  CHECK(t.description.find("NVSwitch") != std::string::npos);
  // Every pair: one NVLink link through the sender's egress and the
  // receiver's ingress port; 12 NVLinks x 20 GB/s (SM80) = 240 GB/s.
  CHECK(t.links.size() == 56);
  CHECK(countKind(t, LinkKind::NVLink) == 56);
  CHECK(t.resources.size() == 16);
  const Link &l = onlyLink(t, 2, 5, LinkKind::NVLink);
  CHECK(l.bandwidthGBps == Approx(240.0));
  CHECK(l.alphaUs == Approx(0.7));
  CHECK(resourceNames(t, l) == std::vector<std::string>{"n0.gpu2.nvswitch.out",
                                                        "n0.gpu5.nvswitch.in"});
  CHECK(resourceBw(t, "n0.gpu2.nvswitch.out") == Approx(240.0));
  CHECK(t.effectiveBandwidth(t.linksBetween(7, 0)[0]) == Approx(240.0));
}

TEST_CASE("a dump of Hopper GPUs on NVSwitch imports NVLink SHARP, one "
          "switch per node",
          "[nccl][innetwork]") {
  // The A100 dump has no NVLS (sm80); the same machine with sm90 GPUs has.
  CHECK(importFixture("nccl-dgx-a100.xml").switches.empty());
  auto text = readFile(inputPath("nccl-dgx-a100.xml"));
  REQUIRE(text.ok());
  std::string hopper = *text;
  size_t at = 0, changed = 0;
  while ((at = hopper.find("sm=\"80\"", at)) != std::string::npos) {
    hopper.replace(at, 7, "sm=\"90\"");
    ++changed;
  }
  REQUIRE(changed == 8);
  NcclImportOptions opts;
  opts.nodes = 2;
  auto t = importNcclTopology("h.xml", hopper, opts);
  REQUIRE(t.ok());
  CHECK_THAT(t->description, Catch::Contains("NVLink SHARP"));
  REQUIRE(t->switches.size() == 2);
  const InNetworkSwitch &sw = t->switches[1];
  CHECK(sw.name == "n1.nvls");
  CHECK(sw.kind == SwitchKind::NVLS);
  CHECK(sw.efficiency == Approx(nvlsFigures(90)->efficiency));
  REQUIRE(sw.ports.size() == 8);
  CHECK(sw.ports[0].rank == 8);
  // 12 NVLinks x 20.6 GB/s: the ports the NVSwitch links go through.
  CHECK(sw.ports[2].bandwidthGBps == Approx(12 * 20.6));
  CHECK(t->resources[sw.ports[2].up].name == "n1.gpu2.nvswitch.out");
  CHECK(t->resources[sw.ports[2].down].name == "n1.gpu2.nvswitch.in");
  // NCCL's NVLS builds on it.
  CHECK(baselineSupports(BaselineKind::Nvls, CollectiveKind::AllReduce, *t));
}

TEST_CASE("NICs that say coll=\"1\" import IB SHARP across nodes",
          "[nccl][innetwork]") {
  auto text = readFile(inputPath("nccl-dgx-a100.xml"));
  REQUIRE(text.ok());
  auto withColl = [&](int nics) {
    std::string out = *text;
    size_t at = 0;
    for (int k = 0; k < nics; ++k) {
      at = out.find("gdr=\"1\"/>", at);
      REQUIRE(at != std::string::npos);
      out.replace(at, 8, "gdr=\"1\" coll=\"1\"/>");
      at += 8;
    }
    return out;
  };
  NcclImportOptions two;
  two.nodes = 2;
  auto t = importNcclTopology("c.xml", withColl(8), two);
  REQUIRE(t.ok());
  REQUIRE(t->switches.size() == 1);
  const InNetworkSwitch &sw = t->switches[0];
  CHECK(sw.kind == SwitchKind::SHARP);
  CHECK(sw.efficiency == Approx(sharpFigures().efficiency));
  REQUIRE(sw.ports.size() == 16);
  CHECK(sw.ports[10].rank == 10);
  CHECK(sw.ports[10].bandwidthGBps == Approx(25.0));
  CHECK_THAT(t->resources[sw.ports[10].up].name, Catch::EndsWith(".out"));
  CHECK(t->resources[sw.ports[10].up].bandwidthGBps == Approx(25.0));
  CHECK(baselineSupports(BaselineKind::Collnet, CollectiveKind::AllReduce, *t));
  // One node, or one NIC without CollNet: no SHARP.
  auto one = importNcclTopology("c.xml", withColl(8), NcclImportOptions{});
  REQUIRE(one.ok());
  CHECK(one->switches.empty());
  auto partial = importNcclTopology("c.xml", withColl(7), two);
  REQUIRE(partial.ok());
  CHECK(partial->switches.empty());
  // A malformed attribute is an error at its element.
  std::string bad = *text;
  bad.replace(bad.find("gdr=\"1\"/>"), 8, "gdr=\"1\" coll=\"x\"/>");
  auto e = importNcclTopology("c.xml", bad, two);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().loc.line > 0);
}

TEST_CASE("DGX A100 dump replicated on two nodes uses one NIC per GPU",
          "[nccl]") {
  Topology t = importFixture("nccl-dgx-a100.xml", 2);
  CHECK(t.name == "nccl:nccl-dgx-a100x2");
  CHECK(t.numRanks() == 16);
  CHECK(t.numNodes() == 2);
  CHECK(t.ranksOfNode(1) == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(countKind(t, LinkKind::NVLink) == 2 * 56);
  CHECK(countKind(t, LinkKind::RDMA) == 2 * 8 * 8);
  CHECK(t.bestLink(0, 9).has_value());
  // GPU0 -> remote GPU1: GPU0's PCIe Gen4 x16 (16 x 120 / 80 = 24 GB/s) to
  // mlx5_0 (200000 Mb/s / 8000 = 25 GB/s), then the peer's mlx5_1.
  const Link &l = onlyLink(t, 0, 9, LinkKind::RDMA);
  CHECK(l.alphaUs == Approx(2.0));
  CHECK(l.bandwidthGBps == Approx(24.0));
  CHECK(resourceNames(t, l) ==
        std::vector<std::string>{"n0.pci0000:07:00.0.up",
                                 "n0.pci0000:0c:00.0.down", "n0.mlx5_0.out",
                                 "n1.mlx5_1.in", "n1.pci0000:12:00.0.up",
                                 "n1.pci0000:0f:00.0.down"});
  CHECK(resourceBw(t, "n0.mlx5_0.out") == Approx(25.0));
  CHECK(resourceBw(t, "n1.pci0000:0f:00.0.down") == Approx(24.0));
  // GPU4 (first GPU of the third CPU) uses the third CPU's first NIC.
  std::vector<std::string> names =
      resourceNames(t, onlyLink(t, 4, 8, LinkKind::RDMA));
  CHECK(std::find(names.begin(), names.end(), "n0.mlx5_6.out") != names.end());
  // Intra-node links stay NVLink in the second copy too.
  CHECK(onlyLink(t, 9, 15, LinkKind::NVLink).bandwidthGBps == Approx(240.0));
}

TEST_CASE("DGX-1 dump: NVLink mesh with per-pair counts and PCIe elsewhere",
          "[nccl]") {
  Topology t = importFixture("nccl-dgx1.xml");
  CHECK(t.numRanks() == 8);
  CHECK(t.description.find("NVLink mesh") != std::string::npos);
  // SM70: 20 GB/s per NVLink.
  CHECK(onlyLink(t, 0, 1, LinkKind::NVLink).bandwidthGBps == Approx(40.0));
  CHECK(onlyLink(t, 0, 2, LinkKind::NVLink).bandwidthGBps == Approx(20.0));
  CHECK(onlyLink(t, 7, 5, LinkKind::NVLink).bandwidthGBps == Approx(40.0));
  CHECK(onlyLink(t, 0, 1, LinkKind::NVLink).resources.empty());
  // Each V100 has six NVLinks.
  for (int g = 0; g < 8; ++g) {
    double out = 0;
    for (const Link &l : t.links)
      if (l.src == g && l.kind == LinkKind::NVLink)
        out += l.bandwidthGBps;
    CHECK(out == Approx(120.0));
  }
  // Three peers per GPU have no NVLink; all sit across the Broadwell QPI
  // (BDW_QPI_BW = 6 GB/s), which bounds the PCIe path.
  CHECK(countKind(t, LinkKind::PCIe) == 24);
  CHECK(t.linksBetween(0, 5).size() == 1);
  const Link &p = onlyLink(t, 0, 5, LinkKind::PCIe);
  CHECK(p.alphaUs == Approx(1.0));
  CHECK(p.bandwidthGBps == Approx(6.0));
  CHECK(resourceNames(t, p) ==
        std::vector<std::string>{
            "n0.pci0000:06:00.0.up", "n0.pci0000:04:00.0.up", "n0.numa0->numa1",
            "n0.pci0000:83:00.0.down", "n0.pci0000:86:00.0.down"});
  CHECK(resourceBw(t, "n0.pci0000:04:00.0.up") == Approx(12.0));
  // The reverse direction uses the other socket's side of the interconnect.
  CHECK(resourceNames(t, onlyLink(t, 5, 0, LinkKind::PCIe))[2] ==
        "n0.numa1->numa0");
}

TEST_CASE("DGX-1 dump on two nodes shares each NIC between two GPUs",
          "[nccl]") {
  Topology t = importFixture("nccl-dgx1.xml", 2);
  CHECK(t.numRanks() == 16);
  auto nicOut = [&](int src) {
    return resourceNames(t, onlyLink(t, src, 8, LinkKind::RDMA))[2];
  };
  CHECK(nicOut(0) == "n0.mlx5_0.out");
  CHECK(nicOut(1) == "n0.mlx5_0.out");
  CHECK(nicOut(2) == "n0.mlx5_1.out");
  CHECK(nicOut(7) == "n0.mlx5_3.out");
  // Gen3 x16 (12 GB/s) is below EDR (12.5 GB/s).
  CHECK(onlyLink(t, 3, 12, LinkKind::RDMA).bandwidthGBps == Approx(12.0));
  CHECK(resourceBw(t, "n1.mlx5_2.in") == Approx(12.5));
}

TEST_CASE("PCIe-only box: prolog, comments and shared PCIe resources",
          "[nccl]") {
  Topology t = importFixture("nccl-pcie-2gpu.xml");
  CHECK(t.numRanks() == 2);
  CHECK(t.links.size() == 2);
  CHECK(t.description.find("PCIe only") != std::string::npos);
  // Gen4 x16 (24 GB/s) up, Gen3 x16 (12 GB/s) down.
  const Link &l = onlyLink(t, 0, 1, LinkKind::PCIe);
  CHECK(l.bandwidthGBps == Approx(12.0));
  CHECK(resourceNames(t, l) ==
        std::vector<std::string>{"n0.pci0000:3b:00.0.up",
                                 "n0.pci0000:d8:00.0.down"});
  CHECK(resourceBw(t, "n0.pci0000:3b:00.0.up") == Approx(24.0));

  NcclImportOptions opts;
  opts.nodes = 3;
  opts.netAlphaUs = 5.5;
  opts.pcieAlphaUs = 1.5;
  auto text = readFile(inputPath("nccl-pcie-2gpu.xml"));
  REQUIRE(text.ok());
  auto multi = importNcclTopology("dir/box.xml", *text, opts);
  REQUIRE(multi.ok());
  CHECK(multi->name == "nccl:boxx3");
  CHECK(multi->numRanks() == 6);
  CHECK(multi->numNodes() == 3);
  CHECK(onlyLink(*multi, 4, 5, LinkKind::PCIe).alphaUs == Approx(1.5));
  // 25 GbE = 3.125 GB/s is the bottleneck (its x8 Gen3 slot gives 6 GB/s).
  const Link &r = onlyLink(*multi, 0, 5, LinkKind::RDMA);
  CHECK(r.alphaUs == Approx(5.5));
  CHECK(r.bandwidthGBps == Approx(3.125));
  CHECK(resourceBw(*multi, "n2.pci0000:5e:00.0.up") == Approx(6.0));
}

TEST_CASE("imported topologies round-trip through ccsynth's JSON", "[nccl]") {
  Topology t = importFixture("nccl-dgx1.xml", 2);
  auto doc = JsonDocument::parse("rt.json", topologyToJson(t));
  REQUIRE(doc.ok());
  auto back = parseTopologyJson(*doc);
  REQUIRE(back.ok());
  CHECK(back->name == t.name);
  CHECK(back->nodeOf == t.nodeOf);
  REQUIRE(back->links.size() == t.links.size());
  REQUIRE(back->resources.size() == t.resources.size());
  for (size_t i = 0; i < t.links.size(); ++i) {
    CHECK(back->links[i].resources == t.links[i].resources);
    CHECK(back->effectiveBandwidth((int)i) ==
          Approx(t.effectiveBandwidth((int)i)));
  }
}

TEST_CASE("loadTopology routes .xml files to the NCCL importer", "[nccl]") {
  auto t = loadTopology(std::string(CCSYNTH_SOURCE_DIR) +
                        "/sketches/topologies/nccl-dgx-a100.xml");
  REQUIRE(t.ok());
  CHECK(t->name == "nccl:nccl-dgx-a100");
  CHECK(t->numRanks() == 8);
  auto missing = loadTopology("/nonexistent/dump.xml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("no such file") != std::string::npos);
}

TEST_CASE("ranks follow the rank attribute, then the device number", "[nccl]") {
  // Rank 1 is listed first; its NVLink to rank 0 has count 3, the other way
  // count 1, so the two directions tell the order apart.
  std::string ranked = wrap(
      gpuPci(
          "0000:01:00.0", "dev=\"0\" sm=\"90\" rank=\"1\"",
          "<nvlink target=\"0000:02:00.0\" count=\"3\" tclass=\"0x030200\"/>") +
      gpuPci(
          "0000:02:00.0", "dev=\"1\" sm=\"90\" rank=\"0\"",
          "<nvlink target=\"0000:01:00.0\" count=\"1\" tclass=\"0x030200\"/>"));
  auto t = importNcclTopology("r.xml", ranked, {});
  REQUIRE(t.ok());
  // SM90: 20.6 GB/s per NVLink.
  CHECK(onlyLink(*t, 1, 0, LinkKind::NVLink).bandwidthGBps == Approx(3 * 20.6));
  CHECK(onlyLink(*t, 0, 1, LinkKind::NVLink).bandwidthGBps == Approx(20.6));

  // Without rank attributes the device number decides; an NVLink without
  // tclass whose target is a GPU of the dump is a GPU link.
  std::string unranked =
      wrap(gpuPci("0000:01:00.0", "dev=\"5\" sm=\"100\"",
                  "<nvlink target=\"0000:02:00.0\" count=\"2\"/>") +
           gpuPci("0000:02:00.0", "dev=\"4\" sm=\"100\""));
  auto u = importNcclTopology("u.xml", unranked, {});
  REQUIRE(u.ok());
  // SM100: 40.1 GB/s per NVLink.
  CHECK(onlyLink(*u, 1, 0, LinkKind::NVLink).bandwidthGBps == Approx(80.2));
  CHECK(onlyLink(*u, 0, 1, LinkKind::PCIe).bandwidthGBps == Approx(24.0));
}

TEST_CASE("NVSwitch targets: class 0x068000, unknown targets, CPU links",
          "[nccl]") {
  std::string dump = wrap(
      gpuPci("0000:01:00.0", "dev=\"0\" sm=\"90\" rank=\"0\"",
             "<nvlink target=\"0000:09:00.0\" count=\"18\" "
             "tclass=\"0x068000\"/>") +
      // No tclass and a target that is no GPU: NCCL assumes an NVSwitch.
      gpuPci("0000:02:00.0", "dev=\"1\" sm=\"90\" rank=\"1\"",
             "<nvlink target=\"fffffff:ffff:ff\" count=\"9\"/>") +
      // A CPU-class NVLink (POWER9) connects no GPU pair.
      gpuPci(
          "0000:03:00.0", "dev=\"2\" sm=\"70\" rank=\"2\"",
          "<nvlink target=\"0000:00:00.0\" count=\"3\" tclass=\"0x068001\"/>"));
  auto t = importNcclTopology("s.xml", dump, {});
  REQUIRE(t.ok());
  const Link &l = onlyLink(*t, 0, 1, LinkKind::NVLink);
  CHECK(l.bandwidthGBps == Approx(9 * 20.6));
  CHECK(t->effectiveBandwidth(t->linksBetween(0, 1)[0]) == Approx(9 * 20.6));
  CHECK(resourceBw(*t, "n0.gpu0.nvswitch.out") == Approx(18 * 20.6));
  CHECK(resourceBw(*t, "n0.gpu1.nvswitch.in") == Approx(9 * 20.6));
  CHECK(onlyLink(*t, 0, 2, LinkKind::PCIe).bandwidthGBps == Approx(24.0));
  CHECK(onlyLink(*t, 2, 1, LinkKind::PCIe).bandwidthGBps == Approx(24.0));
}

TEST_CASE("hosts in one dump become nodes and NVSwitch spans them", "[nccl]") {
  auto host = [](const std::string &hash, const std::string &bus0,
                 const std::string &bus1, int rank0, const std::string &nic) {
    std::string nvs =
        "<nvlink target=\"0000:c0:00.0\" count=\"18\" tclass=\"0x068000\"/>";
    return "<cpu host_hash=\"" + hash + "\" numaid=\"0\" arch=\"arm64\">\n" +
           gpuPci(bus0,
                  "dev=\"0\" sm=\"100\" rank=\"" + std::to_string(rank0) + "\"",
                  nvs) +
           gpuPci(bus1,
                  "dev=\"1\" sm=\"100\" rank=\"" + std::to_string(rank0 + 1) +
                      "\"",
                  nvs) +
           "<pci busid=\"" + nic +
           "\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" "
           "link_width=\"16\"><nic><net name=\"ib0\" dev=\"0\" "
           "speed=\"400000\"/></nic></pci>\n</cpu>\n";
  };
  std::string dump =
      "<system version=\"1\">\n" +
      host("0xaa", "0000:01:00.0", "0000:02:00.0", 2, "0000:03:00.0") +
      host("0xbb", "0000:01:00.0", "0000:02:00.0", 0, "0000:03:00.0") +
      "</system>\n";
  auto t = importNcclTopology("mnnvl.xml", dump, {});
  REQUIRE(t.ok());
  CHECK(t->numRanks() == 4);
  CHECK(t->numNodes() == 2);
  // Ranks 0 and 1 are on host 0xbb, listed second.
  CHECK(t->nodeOf == std::vector<int>{0, 0, 1, 1});
  CHECK(t->description.find("on 2 hosts") != std::string::npos);
  // Same bus ids on different hosts are different GPUs.
  CHECK(onlyLink(*t, 0, 3, LinkKind::NVLink).bandwidthGBps ==
        Approx(18 * 40.1));
  const Link &r = onlyLink(*t, 0, 3, LinkKind::RDMA);
  // The GPU's Gen4 x16 (24 GB/s) bounds it, not the NIC's Gen5 x16 slot
  // (16 x 240 / 80 = 48 GB/s) or NDR 400 Gb/s (50 GB/s).
  CHECK(r.bandwidthGBps == Approx(24.0));
  CHECK(resourceBw(*t, "n0.pci0000:03:00.0.down") == Approx(48.0));
  CHECK(resourceBw(*t, "n1.ib0.in") == Approx(50.0));
  CHECK(t->linksBetween(0, 1).size() == 1);
}

TEST_CASE("NCCL import errors are located", "[nccl]") {
  SECTION("no GPUs") {
    Error e = importError(wrap("<pci busid=\"0000:01:00.0\" class=\"0x030200\" "
                               "link_speed=\"16 GT/s\" link_width=\"16\"/>"));
    CHECK(e.message.find("no GPUs") != std::string::npos);
    CHECK(e.loc.line == 1);
    CHECK(e.notes.find('^') != std::string::npos);
  }
  SECTION("not a dump") {
    Error e = importError("<algo name=\"x\"/>");
    CHECK(e.message.find("expected <system>") != std::string::npos);
  }
  SECTION("unsupported version") {
    Error e = importError(wrap(gpuPci("01:00.0", "dev=\"0\" sm=\"80\""),
                               "<system version=\"2\">"));
    CHECK(e.message.find("version 2") != std::string::npos);
  }
  SECTION("malformed integer") {
    Error e = importError(wrap(gpuPci("01:00.0", "dev=\"0\" sm=\"eighty\"")));
    CHECK(e.message.find("'sm'") != std::string::npos);
    CHECK(e.loc.line == 3);
    CHECK(e.format().rfind("bad.xml:3:", 0) == 0);
  }
  SECTION("overflowing integer") {
    Error e =
        importError(wrap(gpuPci("01:00.0", "dev=\"0\" rank=\"99999999999\"")));
    CHECK(e.message.find("32 bits") != std::string::npos);
  }
  SECTION("duplicate rank") {
    Error e = importError(wrap(gpuPci("01:00.0", "rank=\"0\"") +
                               gpuPci("02:00.0", "rank=\"0\"")));
    CHECK(e.message.find("duplicate GPU rank 0") != std::string::npos);
    CHECK(e.loc.line == 4);
  }
  SECTION("nvlink outside a gpu") {
    Error e = importError(wrap("<nvlink target=\"01:00.0\" count=\"1\"/>"));
    CHECK(e.message.find("inside a <gpu>") != std::string::npos);
  }
  SECTION("pci without busid") {
    Error e = importError(wrap("<pci class=\"0x060400\"/>"));
    CHECK(e.message.find("'busid'") != std::string::npos);
  }
  SECTION("malformed XML") {
    Error e =
        importError("<system version=\"1\">\n  <cpu numaid='0'>\n</system>");
    CHECK(e.message.find("mismatched closing tag") != std::string::npos);
    CHECK(e.loc.line == 3);
  }
  SECTION("several nodes but no NIC") {
    Error e = importError(wrap(gpuPci("01:00.0", "dev=\"0\"")), 2);
    CHECK(e.message.find("no network device") != std::string::npos);
    CHECK(e.loc.line == 3);
  }
  SECTION("node count out of range") {
    Error e = importError(wrap(gpuPci("01:00.0", "dev=\"0\"")), 0);
    CHECK(e.message.find("between 1 and 512") != std::string::npos);
    std::string nine;
    for (int g = 0; g < 9; ++g)
      nine += gpuPci("0" + std::to_string(g + 1) + ":00.0",
                     "dev=\"" + std::to_string(g) + "\"");
    Error big = importError(wrap(nine + "<nic><net dev=\"0\"/></nic>"), 512);
    CHECK(big.message.find("exceeds 4096 ranks") != std::string::npos);
  }
}

TEST_CASE("the shipped dumps import without a warning", "[nccl]") {
  for (const char *name :
       {"nccl-dgx-a100.xml", "nccl-dgx1.xml", "nccl-pcie-2gpu.xml"}) {
    INFO(name);
    auto text = readFile(inputPath(name));
    REQUIRE(text.ok());
    std::vector<Error> warnings;
    NcclImportOptions opts;
    opts.nodes = 2;
    opts.warnings = &warnings;
    REQUIRE(importNcclTopology(name, *text, opts).ok());
    CHECK(warnings.empty());
  }
}

TEST_CASE("what the importer assumes or ignores is a located warning",
          "[nccl]") {
  std::string nic = "<pci busid=\"0000:09:00.0\" class=\"0x020700\" "
                    "link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"><nic>"
                    "<net name=\"ib0\" dev=\"0\" speed=\"-1\"/>"
                    "<net name=\"ib1\" dev=\"1\"/></nic></pci>\n";
  std::string dump =
      wrap(gpuPci("0000:01:00.0", "dev=\"0\" sm=\"80\" rank=\"0\"",
                  // Nothing carried, a GPU not in the dump, itself.
                  "<nvlink target=\"0000:02:00.0\" count=\"0\" "
                  "tclass=\"0x030200\"/>\n"
                  "<nvlink target=\"0000:77:00.0\" count=\"4\" "
                  "tclass=\"0x030200\"/>\n"
                  "<nvlink target=\"0000:01:00.0\" count=\"4\" "
                  "tclass=\"0x030200\"/>") +
           gpuPci("0000:02:00.0", "dev=\"1\" sm=\"80\" rank=\"1\"") + nic);
  std::vector<Error> warnings;
  NcclImportOptions opts;
  opts.nodes = 2;
  opts.warnings = &warnings;
  auto t = importNcclTopology("w.xml", dump, opts);
  REQUIRE(t.ok());
  REQUIRE(warnings.size() == 5);
  auto lineOf = [&](const std::string &part) {
    for (const Error &w : warnings)
      if (w.message.find(part) != std::string::npos)
        return w.loc.line;
    FAIL("no warning saying " << part);
    return 0;
  };
  CHECK(lineOf("NVLink with count 0 carries nothing: ignored") == 3);
  CHECK(lineOf("whose bus id is not a GPU of this dump: ignored") == 4);
  CHECK(lineOf("that is this GPU itself: ignored") == 5);
  CHECK(lineOf("NIC speed -1 Mb/s is no speed: assumed 10000 Mb/s "
               "(1.25 GB/s)") == 7);
  CHECK(lineOf("this NIC has no 'speed': assumed 10000 Mb/s") == 7);
  for (const Error &w : warnings)
    CHECK(w.format("warning").rfind("w.xml:" + std::to_string(w.loc.line) +
                                        ":" + std::to_string(w.loc.col) +
                                        ": warning: ",
                                    0) == 0);
  // The assumption is what was built: no NVLink, 1.25 GB/s NICs.
  CHECK(t->linksBetween(0, 1).size() == 1);
  CHECK(onlyLink(*t, 0, 1, LinkKind::PCIe).bandwidthGBps > 0);
  CHECK(resourceBw(*t, "n0.ib0.out") == Approx(1.25));
  // Without a sink the import is the same, silently.
  CHECK(importNcclTopology("w.xml", dump, {}).ok());
}

TEST_CASE("NCCL figures outside the physical range are located errors",
          "[nccl]") {
  SECTION("a PCIe link of a billion lanes") {
    Error e = importError(
        wrap("<pci busid=\"0000:01:00.0\" class=\"0x060400\" "
             "link_speed=\"16.0 GT/s PCIe\" link_width=\"999999999\">\n" +
             gpuPci("0000:02:00.0", "dev=\"0\" sm=\"80\"") + "</pci>"));
    CHECK(e.message.find("link_width 999999999 at this link_speed gives "
                         "1.5e+09 GB/s, out of range: it must be from 0.001 "
                         "to 1000000 GB/s") != std::string::npos);
    CHECK(e.loc.line == 3);
  }
  SECTION("NVLink counts: one entry, and entries that add up") {
    Error one = importError(
        wrap(gpuPci("0000:01:00.0", "dev=\"0\" sm=\"80\"",
                    "<nvlink target=\"0000:c0:00.0\" count=\"2000000000\" "
                    "tclass=\"0x068000\"/>")));
    CHECK(one.message.find("out of range") != std::string::npos);
    CHECK(one.loc.line == 3);
    std::string many;
    for (int k = 0; k < 30; ++k)
      many += "<nvlink target=\"0000:02:00.0\" count=\"2000\" "
              "tclass=\"0x030200\"/>";
    Error sum =
        importError(wrap(gpuPci("0000:01:00.0", "dev=\"0\" sm=\"80\"", many) +
                         gpuPci("0000:02:00.0", "dev=\"1\" sm=\"80\"")));
    CHECK(sum.message.find("60000 NVLinks to one GPU gives 1.2e+06 GB/s") !=
          std::string::npos);
  }
  SECTION("a NIC of 1 Mb/s") {
    Error e = importError(
        wrap(gpuPci("0000:01:00.0", "dev=\"0\" sm=\"80\"") +
             "<nic><net name=\"slow\" dev=\"0\" speed=\"1\"/></nic>"),
        2);
    CHECK(e.message.find("NIC speed 1 Mb/s gives 0.000125 GB/s, out of "
                         "range") != std::string::npos);
    CHECK(e.loc.line == 4);
  }
}

TEST_CASE("NCCL importer survives seeded random mutations",
          "[nccl][mutation]") {
  auto text = readFile(inputPath("nccl-dgx1.xml"));
  REQUIRE(text.ok());
  std::mt19937 rng(7);
  auto pick = [&](size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  // Edits aimed at the values the importer interprets.
  const std::vector<std::string> tokens = {"-1",
                                           "0",
                                           "99999999999",
                                           "0x7fffffff",
                                           "x",
                                           "",
                                           "\"",
                                           "<",
                                           "/>",
                                           "</gpu>",
                                           "<gpu rank=\"3\">",
                                           "0x068000",
                                           "64.0 GT/s PCIe",
                                           "&#0;"};
  int accepted = 0, rejected = 0;
  NcclImportOptions opts;
  opts.nodes = 2;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string s = *text;
    for (int k = 0, n = 1 + (int)pick(3); k < n; ++k) {
      size_t at = pick(s.size() + 1);
      switch (pick(4)) {
      case 0:
        s.erase(at, std::min<size_t>(1 + pick(6), s.size() - at));
        break;
      case 1:
        s.insert(at, tokens[pick(tokens.size())]);
        break;
      case 2:
        if (at < s.size())
          s[at] = (char)pick(256);
        break;
      default: {
        // Replace an attribute value with a token.
        size_t q = s.find('"', at);
        size_t e = q == std::string::npos ? q : s.find('"', q + 1);
        if (e != std::string::npos)
          s.replace(q + 1, e - q - 1, tokens[pick(tokens.size())]);
        break;
      }
      }
    }
    auto t = importNcclTopology("mut.xml", s, opts);
    if (t.ok()) {
      ++accepted;
      CHECK(t->validate().ok());
      CHECK(t->numRanks() >= 2);
    } else {
      ++rejected;
      INFO(t.error().format());
      CHECK_FALSE(t.error().message.empty());
      CHECK(t.error().loc.file == "mut.xml");
    }
  }
  CHECK(accepted > 100);
  CHECK(rejected > 100);
}
