//===- HostileInputTest.cpp - Readers refuse hostile input cleanly --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Inputs that are not regular files, too large or too deep, JSON with
// duplicate keys, out-of-range integers or unknown fields, and degenerate
// link figures: each is a located error, never a crash or a silent guess.
// Every hostile input is made in a private temporary directory.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Support/TextLimits.h"
#include "ccsynth/Topology/Topology.h"

#include "TempDir.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace ccsynth;
namespace fs = std::filesystem;

namespace {

/// A private temporary directory for one test.
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ccsynth-hostile-") {}
};

void put(const fs::path &p, const std::string &text) {
  std::ofstream(p, std::ios::binary) << text;
}

bool has(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// A minimal valid topology with `links` spliced into its link list.
std::string topoJson(const std::string &links, const std::string &extra = "") {
  return "{\"format\": \"ccsynth-topology\", \"version\": 1, \"name\": \"t\",\n"
         " \"ranks\": 2," +
         extra + "\n \"links\": [" + links + "]}\n";
}

/// An NVLink from rank 0 to rank 1 with the given figures.
std::string link(const std::string &figures) {
  return "{\"src\": 0, \"dst\": 1, \"kind\": \"nvlink\", " + figures + "}";
}

Expected<Topology> parseTopo(const std::string &text) {
  auto doc = JsonDocument::parse("t.json", text);
  if (!doc)
    return doc.error();
  return parseTopologyJson(*doc);
}

} // namespace

TEST_CASE("a directory, a FIFO or a device is not read as a file",
          "[hostile]") {
  TempDir dir;
  auto r = readFile(dir.path.string());
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "is a directory"));

  auto fifo = dir.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Without a writer this would block (or read as empty) if opened plainly.
  r = readFile(fifo.string());
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "not a regular file"));

  // An endless device is refused before anything is read.
  if (fs::exists("/dev/zero")) {
    r = readFile("/dev/zero");
    REQUIRE_FALSE(r);
    CHECK(has(r.error().message, "not a regular file"));
  }
}

TEST_CASE("an input file larger than the cap is refused", "[hostile]") {
  TempDir dir;
  auto p = dir.path / "big.json";
  put(p, std::string(4096, ' '));
  auto r = readFile(p.string(), 4095);
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "larger than"));
  REQUIRE(readFile(p.string(), 4096));
}

TEST_CASE("deeply nested JSON is a located error", "[hostile]") {
  std::string text = std::string(100000, '[') + std::string(100000, ']');
  auto doc = JsonDocument::parse("deep.json", text);
  REQUIRE_FALSE(doc);
  CHECK(has(doc.error().message, "nested deeper than"));
  CHECK(doc.error().loc.line == 1);
  CHECK(doc.error().loc.col == 257);
  // Brackets inside strings do not count.
  REQUIRE(
      JsonDocument::parse("s.json", "[\"" + std::string(1000, '[') + "\"]"));
}

TEST_CASE("duplicate JSON keys are an error at the second key", "[hostile]") {
  auto doc = JsonDocument::parse("dup.json", "{\"a\": 1,\n \"b\": {\"x\": 1, "
                                             "\"x\": 2}}");
  REQUIRE_FALSE(doc);
  CHECK(has(doc.error().message, "duplicate key 'x'"));
  CHECK(doc.error().loc.line == 2);
  CHECK(doc.error().loc.col == 16);
  // The same key in different objects is fine, and so is an escaped key
  // that only looks alike.
  REQUIRE(JsonDocument::parse("ok.json", "[{\"x\": 1}, {\"x\": 2}]"));
  auto esc = JsonDocument::parse("esc.json", "{\"a\": 1, \"\\u0061\": 2}");
  REQUIRE_FALSE(esc);
  CHECK(has(esc.error().message, "duplicate key 'a'"));
}

TEST_CASE("JSON number overflow is located", "[hostile]") {
  auto doc = JsonDocument::parse("ovf.json", "{\"a\": 1,\n \"b\": 1e999}");
  REQUIRE_FALSE(doc);
  CHECK(has(doc.error().message, "overflow"));
  CHECK(doc.error().loc.line == 2);
  CHECK(doc.error().loc.col == 7);
}

TEST_CASE("large integers are range-checked before narrowing", "[hostile]") {
  // 2^40 used to wrap to 0 and be reported as "must be >= 1".
  auto doc = JsonDocument::parse(
      "s.json", "{\"format\": \"ccsynth-schedule\", \"version\": 1,\n"
                " \"collective\": {\"kind\": \"allgather\", \"ranks\": 2, "
                "\"chunk_factor\": 1},\n"
                " \"transfers\": [{\"step\": 0, \"op\": \"copy\", \"src\": "
                "[0, \"i\", 0], \"dst\": [1, \"o\", 0], \"count\": "
                "1099511627776}]}");
  REQUIRE(doc);
  auto s = parseScheduleJson(*doc);
  REQUIRE_FALSE(s);
  CHECK(has(s.error().message, "out of range (1099511627776"));
  CHECK(s.error().loc.line == 3);
  // Negative ones too.
  auto t = parseTopo(topoJson("{\"src\": -9999999999, \"dst\": 1, \"kind\": "
                              "\"nvlink\", \"alpha_us\": 1, "
                              "\"bandwidth_gbps\": 1}"));
  REQUIRE_FALSE(t);
  CHECK(has(t.error().message, "out of range (-9999999999"));
}

TEST_CASE("integer range errors say the allowed range", "[hostile]") {
  auto schedule = [](const std::string &collective,
                     const std::string &transfer) {
    auto doc = JsonDocument::parse(
        "s.json", "{\"format\": \"ccsynth-schedule\", \"version\": 1,\n"
                  " \"collective\": {\"kind\": \"allgather\", \"ranks\": 2, "
                  "\"chunk_factor\": " +
                      collective +
                      "},\n"
                      " \"transfers\": [{\"op\": \"copy\", \"src\": [0, "
                      "\"i\", 0], \"dst\": [1, \"o\", 0], " +
                      transfer + "}]}");
    REQUIRE(doc);
    return parseScheduleJson(*doc);
  };
  // chunk_factor 2147483647 was "must be >= 1".
  auto cf = schedule("2147483647", "\"step\": 0");
  REQUIRE_FALSE(cf);
  CHECK(cf.error().message == "'chunk_factor' 2147483647 is out of range: it "
                              "must be from 1 to 1048576 (2^20)");
  CHECK(cf.error().loc.line == 2);
  auto count = schedule("1", "\"step\": 0, \"count\": 0");
  REQUIRE_FALSE(count);
  CHECK(count.error().message ==
        "'count' 0 is out of range: it must be from 1 to 2147483647");
  auto step = schedule("1", "\"step\": -1");
  REQUIRE_FALSE(step);
  CHECK(step.error().message ==
        "'step' -1 is out of range: it must be from 0 to 2147483647");
}

TEST_CASE("the unknown-field error names the first unknown key in the file",
          "[hostile]") {
  auto t = parseTopo(topoJson("", " \"zeta\": 1, \"alpha\": 2,"));
  REQUIRE_FALSE(t);
  CHECK(has(t.error().message, "unknown field 'zeta'"));
}

TEST_CASE("reading a JSON document stops when told to", "[hostile]") {
  std::string many = "[";
  for (int i = 0; i < 10000; ++i)
    many += std::string(i ? "," : "") + "1";
  many += "]";
  int asked = 0;
  JsonStop stop{[&] { return ++asked > 1; }, "stopped: the time ran out"};
  auto doc = JsonDocument::parse("many.json", many, stop);
  REQUIRE_FALSE(doc);
  CHECK(doc.error().message == "stopped: the time ran out");
  CHECK(asked == 2); // asked every 4,096 values, not per value
  REQUIRE(JsonDocument::parse("many.json", many));
}

TEST_CASE("a document opened for locating only finds values in its text",
          "[hostile]") {
  auto doc = JsonDocument::forLocating(
      "s.json", "{\"a\": 1,\n \"transfers\": [\n  {\"x\": 1},\n  {\"x\": 2}]}");
  CHECK(doc.root().is_null());
  SourceLoc second = doc.locate("/transfers/1");
  CHECK(second.line == 4);
  CHECK(second.col == 3);
}

TEST_CASE("degenerate link figures are located errors", "[hostile]") {
  for (const char *bad : {"\"alpha_us\": 1, \"bandwidth_gbps\": 5e-324",
                          "\"alpha_us\": 1, \"bandwidth_gbps\": 0",
                          "\"alpha_us\": 1, \"bandwidth_gbps\": -3",
                          "\"alpha_us\": 1, \"beta_us_per_mb\": 1e-320",
                          "\"alpha_us\": 1, \"beta_us_per_mb\": 1e-310",
                          "\"alpha_us\": 5e-324, \"bandwidth_gbps\": 10",
                          "\"alpha_us\": -1, \"bandwidth_gbps\": 10"}) {
    INFO(bad);
    auto t = parseTopo(topoJson(link(bad)));
    REQUIRE_FALSE(t);
    CHECK(t.error().loc.line == 3);
    CHECK_FALSE(t.error().notes.empty());
  }
  REQUIRE(parseTopo(topoJson(link("\"alpha_us\": 0, \"bandwidth_gbps\": 10"))));
  // The model refuses them too, wherever the topology came from.
  Topology t;
  t.name = "t";
  t.nodeOf = {0, 0};
  Link l;
  l.src = 0;
  l.dst = 1;
  l.bandwidthGBps = 5e-324;
  t.links.push_back(l);
  CHECK_FALSE(t.validate());
}

TEST_CASE("topology figures outside their physical range are located errors",
          "[hostile]") {
  // Each once gave inf or NaN in `simulate` (alpha sums overflow, a bound
  // of inf over a time of inf).
  for (const char *bad : {"\"alpha_us\": 1e308, \"bandwidth_gbps\": 10",
                          "\"alpha_us\": 1000001, \"bandwidth_gbps\": 10",
                          "\"alpha_us\": 1e-7, \"bandwidth_gbps\": 10",
                          "\"alpha_us\": 1, \"bandwidth_gbps\": 1e-300",
                          "\"alpha_us\": 1, \"bandwidth_gbps\": 0.0009",
                          "\"alpha_us\": 1, \"bandwidth_gbps\": 1e300",
                          "\"alpha_us\": 1, \"bandwidth_gbps\": 1000001",
                          "\"alpha_us\": 1, \"beta_us_per_mb\": 1e300",
                          "\"alpha_us\": 1, \"beta_us_per_mb\": 0.0009"}) {
    INFO(bad);
    auto t = parseTopo(topoJson(link(bad)));
    REQUIRE_FALSE(t);
    CHECK(has(t.error().message, "out of range: it"));
    CHECK(has(t.error().message, " must be "));
    CHECK(t.error().loc.line == 3);
    CHECK_FALSE(t.error().notes.empty());
  }
  auto alpha = parseTopo(topoJson(link("\"alpha_us\": 1e308, "
                                       "\"bandwidth_gbps\": 10")));
  REQUIRE_FALSE(alpha);
  CHECK(alpha.error().message == "alpha 1e+308 us is out of range: it must "
                                 "be 0, or from 0.000001 to 1000000 us");
  auto bw =
      parseTopo(topoJson(link("\"alpha_us\": 1, \"bandwidth_gbps\": 1e-300")));
  REQUIRE_FALSE(bw);
  CHECK(bw.error().message == "bandwidth 1e-300 GB/s is out of range: it "
                              "must be from 0.001 to 1000000 GB/s");
  // The limits themselves are accepted.
  for (const char *good : {"\"alpha_us\": 1000000, \"bandwidth_gbps\": 0.001",
                           "\"alpha_us\": 0.000001, \"bandwidth_gbps\": 1e6",
                           "\"alpha_us\": 0, \"beta_us_per_mb\": 1e6",
                           "\"alpha_us\": 0, \"beta_us_per_mb\": 0.001"}) {
    INFO(good);
    CHECK(parseTopo(topoJson(link(good))));
  }
  // Resources and the step model too.
  std::string ok = link("\"alpha_us\": 1, \"bandwidth_gbps\": 10");
  auto res = parseTopo(topoJson(
      ok, "\n \"resources\": [{\"name\": \"r\", \"bandwidth_gbps\": 2e6}],"));
  REQUIRE_FALSE(res);
  CHECK(has(res.error().message, "bandwidth 2e+06 GB/s is out of range"));
  CHECK(res.error().loc.line == 3);
  for (const char *model :
       {"\"launch_us\": {\"LL\": 1e300}", "\"step_us\": {\"Simple\": -1}",
        "\"threadblock_copy_gbps\": {\"LL128\": 1e-9}",
        "\"threadblock_reduce_gbps\": {\"LL\": 1e9}",
        "\"link_efficiency\": 1e-9", "\"link_efficiency\": 1.5"}) {
    INFO(model);
    auto t = parseTopo(
        topoJson(ok, std::string("\n \"step_model\": {") + model + "},"));
    REQUIRE_FALSE(t);
    CHECK(has(t.error().message, "out of range: it must be"));
    CHECK(t.error().loc.line == 3);
  }
  // The model refuses them wherever the topology came from.
  Topology t;
  t.name = "t";
  t.nodeOf = {0, 0};
  Link l;
  l.src = 0;
  l.dst = 1;
  l.bandwidthGBps = 10;
  l.alphaUs = 1e308;
  t.links.push_back(l);
  REQUIRE_FALSE(t.validate());
  CHECK(has(t.validate().error().message, "link 0 has an alpha of 1e+308 us"));
  t.links[0].alphaUs = 1;
  t.links[0].bandwidthGBps = 1e-300;
  CHECK_FALSE(t.validate());
}

TEST_CASE("sparse node ids are a located error", "[hostile]") {
  auto t = parseTopo(topoJson("", " \"node_of\": [1, 1],"));
  REQUIRE_FALSE(t);
  CHECK(has(t.error().message, "node ids must be dense"));
  CHECK(t.error().loc.line == 2);
}

TEST_CASE("MLIR text nested too deep is refused before parsing", "[hostile]") {
  std::string deep;
  for (int i = 0; i < 5000; ++i)
    deep += "module {\n";
  Status s = checkMlirNesting("deep.mlir", deep);
  REQUIRE_FALSE(s);
  CHECK(s.error().loc.line == kMaxMlirNesting + 1);
  CHECK(has(s.error().message, "nested deeper than"));
  // Arrows, strings and comments are not brackets.
  std::string flat = "func.func @f() -> () { // {{{{{{\n \"{{{{{{\" }\n";
  for (int i = 0; i < 300; ++i)
    flat += "%x = foo -> bar\n";
  CHECK(checkMlirNesting("flat.mlir", flat));
}

TEST_CASE("the topology hash follows the figures, not the formatting",
          "[hostile]") {
  auto a = parseTopo(topoJson("{\"src\": 0, \"dst\": 1, \"kind\": \"nvlink\", "
                              "\"alpha_us\": 1, \"bandwidth_gbps\": 10}"));
  auto b = parseTopo(topoJson("{\"src\":0,\"dst\":1,\"kind\":\"nvlink\","
                              "\"alpha_us\":1,\"bandwidth_gbps\":10}"));
  auto c = parseTopo(topoJson("{\"src\": 0, \"dst\": 1, \"kind\": \"nvlink\", "
                              "\"alpha_us\": 1, \"bandwidth_gbps\": 1}"));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(topologyHash(*a) == topologyHash(*b));
  CHECK(topologyHash(*a) != topologyHash(*c));
  CHECK(topologyHash(*a).size() == 16);
  // The version 2 hash (FNV-1a of the canonical JSON) likewise.
  CHECK(topologyJsonHash(*a) == topologyJsonHash(*b));
  CHECK(topologyJsonHash(*a) != topologyJsonHash(*c));
  CHECK(topologyJsonHash(*a) != topologyHash(*a));
}

TEST_CASE("the topology hash sees every field the canonical JSON holds",
          "[hostile]") {
  auto base = parseTopo(topoJson("{\"src\": 0, \"dst\": 1, \"kind\": \"nvlink\", "
                                 "\"alpha_us\": 1, \"bandwidth_gbps\": 10}"));
  REQUIRE(base);
  std::string h = topologyHash(*base);
  auto changed = [&](auto edit) {
    Topology t = *base;
    edit(t);
    return topologyHash(t) != h;
  };
  CHECK(changed([](Topology &t) { t.name += "x"; }));
  CHECK(changed([](Topology &t) { t.description += "x"; }));
  CHECK(changed([](Topology &t) { t.links[0].alphaUs = 2; }));
  CHECK(changed([](Topology &t) { t.links[0].kind = LinkKind::PCIe; }));
  CHECK(changed([](Topology &t) { std::swap(t.links[0].src, t.links[0].dst); }));
  CHECK(changed([](Topology &t) { t.links.push_back(t.links[0]); }));
  CHECK(changed([](Topology &t) {
    t.resources.push_back({"switch", 100});
    t.links[0].resources.push_back(0);
  }));
  // The step model is not part of it.
  CHECK_FALSE(changed([](Topology &t) { t.stepModel.launchUs[0] = 1; }));
}

TEST_CASE("a schedule records its topology's hash (format version 3)",
          "[hostile]") {
  Schedule s;
  s.name = "x";
  s.topology = "fc:2";
  s.topologyHash = "0123456789abcdef";
  s.collective = *Collective::builtin(CollectiveKind::AllGather, 2, 1);
  std::string json = scheduleToJson(s);
  CHECK(has(json, "\"version\": 3"));
  auto doc = JsonDocument::parse("s.json", json);
  REQUIRE(doc);
  auto back = parseScheduleJson(*doc);
  REQUIRE(back);
  CHECK(back->topologyHash == "0123456789abcdef");
  CHECK(back->topologyHashVersion == 3);
  // The same file, claiming another format version.
  auto asVersion = [&](int version) {
    std::string text = json;
    text.replace(text.find("\"version\": 3"), 12,
                 "\"version\": " + std::to_string(version));
    auto d = JsonDocument::parse("s.json", text);
    REQUIRE(d);
    return parseScheduleJson(*d);
  };
  // A version 2 file's hash is the older one, and stays version 2 when
  // written again.
  auto older = asVersion(2);
  REQUIRE(older);
  CHECK(older->topologyHashVersion == 2);
  CHECK(has(scheduleToJson(*older), "\"version\": 2"));
  // Version 1 files have no hash.
  auto old = asVersion(1);
  REQUIRE_FALSE(old);
  CHECK(has(old.error().message, "needs schedule format version 2"));
  // A hash that is not 16 hex digits is refused where it stands.
  std::string bad = json;
  bad.replace(bad.find("0123456789abcdef"), 16, "not-a-hash");
  auto docBad = JsonDocument::parse("s.json", bad);
  REQUIRE(docBad);
  auto refused = parseScheduleJson(*docBad);
  REQUIRE_FALSE(refused);
  CHECK(has(refused.error().message, "16 lowercase hex digits"));
  CHECK(refused.error().loc.line > 1);
}
