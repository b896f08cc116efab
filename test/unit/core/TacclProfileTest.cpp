// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of TACCL topology profiles applied to built-in shapes: TACCL's
// own example files (test/inputs/taccl-topo, copied as shipped) and
// malformed profiles refused at their file:line:col.
#include "ccsynth/Topology/TacclProfile.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

using namespace ccsynth;

namespace {

std::string shipped(const std::string &name) {
  return std::string(CCSYNTH_SOURCE_DIR) + "/test/inputs/taccl-topo/" + name +
         ".json";
}

Topology topo(const std::string &name) {
  auto t = makeBuiltinTopology(name);
  REQUIRE(t.ok());
  return t.take();
}

std::string writeTemp(const std::string &name, const std::string &text) {
  std::string path = "taccl-profile-test-" + name + ".json";
  std::ofstream(path) << text;
  return path;
}

double linkGBps(const Topology &t, int a, int b) {
  auto l = t.bestLink(a, b);
  REQUIRE(l.has_value());
  return t.links[*l].bandwidthGBps;
}

} // namespace

TEST_CASE("TACCL's NDv2 1MB profile on ndv2x2", "[taccl][profile]") {
  Topology base = topo("ndv2x2");
  auto t = applyTacclProfile(base, shipped("topo-ndv2-1MB"));
  if (!t)
    FAIL(t.error().format());
  // node_betas_list [23, 46]: double-NVLink pairs (0-1) 1000/23 GB/s,
  // single ones (0-2) 1000/46; remote_beta 105; alphas 0.3 and 2.6 µs.
  CHECK(linkGBps(*t, 0, 1) == Approx(1000.0 / 23));
  CHECK(linkGBps(*t, 0, 2) == Approx(1000.0 / 46));
  CHECK(linkGBps(*t, 0, 9) == Approx(1000.0 / 105));
  CHECK(t->links[*t->bestLink(0, 1)].alphaUs == Approx(0.3));
  CHECK(t->links[*t->bestLink(0, 9)].alphaUs == Approx(2.6));
  // The one NIC per node scales with the remote links.
  CHECK(t->effectiveBandwidth(*t->bestLink(0, 9)) == Approx(1000.0 / 105));
  CHECK(topologyHash(*t) != topologyHash(base));
  CHECK(t->links.size() == base.links.size());
}

TEST_CASE("TACCL's DGX-2 profiles on dgx2x2, with units", "[taccl][profile]") {
  Topology base = topo("dgx2x2");
  auto mb = applyTacclProfile(base, shipped("topo-dgx2-1MB"));
  REQUIRE(mb.ok());
  // One beta for every GPU pair, and the NVSwitch ports with it.
  CHECK(linkGBps(*mb, 0, 5) == Approx(1000.0 / 8));
  CHECK(mb->effectiveBandwidth(*mb->bestLink(0, 5)) == Approx(1000.0 / 8));
  // The 1KB file's figures are for 1e-3 MB and scaled by 100 (alpha 30 for
  // 0.3 µs): with those units its alpha is the 1MB file's.
  auto kb =
      applyTacclProfile(base, shipped("topo-dgx2-1KB"), {0.001, 100});
  REQUIRE(kb.ok());
  CHECK(kb->links[*kb->bestLink(0, 5)].alphaUs == Approx(0.3));
  CHECK(linkGBps(*kb, 0, 5) == Approx(1000.0 / (1 / (0.001 * 100))));
  for (const char *f : {"topo-ndv2-1KB", "topo-ndv2-32KB"})
    CHECK(applyTacclProfile(topo("ndv2x4"), shipped(f)).ok());
}

TEST_CASE("bad TACCL profiles are refused where they are wrong",
          "[taccl][profile]") {
  // NDv2 has two classes of intra-node links; one beta is not enough.
  std::string onePath = writeTemp("one", R"({"alpha": 0.3,
  "node_betas_list": [8]})");
  auto one = applyTacclProfile(topo("ndv2"), onePath);
  REQUIRE_FALSE(one.ok());
  CHECK_THAT(one.error().message,
             Catch::Contains("2 classes of intra-node links"));
  CHECK(one.error().loc.line == 2);
  std::remove(onePath.c_str());
  // DGX-2 has 16 GPUs per node and 8 NICs.
  auto gpus = applyTacclProfile(topo("dgx-a100x2"), shipped("topo-dgx2-1MB"));
  REQUIRE_FALSE(gpus.ok());
  CHECK_THAT(gpus.error().message, Catch::Contains("gpus_per_node is 16"));
  CHECK(gpus.error().loc.line == 3);

  std::string path = writeTemp("bad", R"({
  "alpha": 0.3,
  "node_betas_list": [46, 23],
  "remote_alpha": 2.6, "remote_beta": 105
})");
  auto order = applyTacclProfile(topo("ndv2x2"), path);
  REQUIRE_FALSE(order.ok());
  CHECK_THAT(order.error().message, Catch::Contains("increasing order"));
  CHECK(order.error().loc.line == 3);
  std::remove(path.c_str());

  path = writeTemp("remote", R"({"alpha": 0.3, "node_betas_list": [8]})");
  auto remote = applyTacclProfile(topo("dgx2x2"), path);
  REQUIRE_FALSE(remote.ok());
  CHECK_THAT(remote.error().message, Catch::Contains("needs 'remote_alpha'"));
  // A single node needs no remote figures.
  CHECK(applyTacclProfile(topo("dgx2"), path).ok());
  std::remove(path.c_str());

  path = writeTemp("custom", R"({"alpha": 1, "node_betas_list": [8],
  "links": [[0, 1], [1, 0]]})");
  auto custom = applyTacclProfile(topo("dgx2"), path);
  REQUIRE_FALSE(custom.ok());
  CHECK_THAT(custom.error().message, Catch::Contains("\"custom\" profiles"));
  CHECK(custom.error().loc.line == 2);
  std::remove(path.c_str());

  path = writeTemp("typo", R"({"alpha": 1, "node_beta_list": [8]})");
  auto typo = applyTacclProfile(topo("dgx2"), path);
  REQUIRE_FALSE(typo.ok());
  CHECK_THAT(typo.error().message, Catch::Contains("node_beta_list"));
  std::remove(path.c_str());

  path = writeTemp("zero", R"({"alpha": 1, "node_betas_list": [0]})");
  auto zero = applyTacclProfile(topo("dgx2"), path);
  REQUIRE_FALSE(zero.ok());
  CHECK_THAT(zero.error().message, Catch::Contains("must be positive"));
  std::remove(path.c_str());

  // Figures that give a latency or bandwidth outside the physical range
  // (docs/formats.md) are refused where they are written.
  path = writeTemp("range", R"({"alpha": 1,
  "node_betas_list": [1e-300]})");
  auto tiny = applyTacclProfile(topo("dgx2"), path);
  REQUIRE_FALSE(tiny.ok());
  CHECK_THAT(tiny.error().message,
             Catch::Contains("gives a bandwidth of 1e+303 GB/s, out of range: "
                             "it must be from 0.001 to 1000000 GB/s"));
  CHECK(tiny.error().loc.line == 2);
  std::remove(path.c_str());
  path = writeTemp("range", R"({"alpha": 1e308, "node_betas_list": [8]})");
  auto slow = applyTacclProfile(topo("dgx2"), path);
  REQUIRE_FALSE(slow.ok());
  CHECK_THAT(slow.error().message,
             Catch::Contains("alpha 1e+308 gives a latency of 1e+308 us, out "
                             "of range"));
  CHECK(slow.error().loc.line == 1);
  std::remove(path.c_str());
  // The units count: a fine figure scaled out of range.
  path = writeTemp("range", R"({"alpha": 1, "node_betas_list": [8]})");
  CHECK(applyTacclProfile(topo("dgx2"), path).ok());
  CHECK_FALSE(applyTacclProfile(topo("dgx2"), path, {1, 1e-12}).ok());
  std::remove(path.c_str());
}
