// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Every program under sketches/dsl verifies for 4, 8 and 16 ranks (and the
// hierarchical ones for 2 nodes x 8 GPUs), and the error corpus under
// test/dsl/errors reports each error class at the expected place.
#include "DslTestUtil.h"

#include "ccsynth/Schedule/Verifier.h"

#include <catch2/catch.hpp>

#include <set>

using namespace ccsynth;
using namespace ccsynth::dsl;
using namespace ccsynth::dsl::test;

namespace {

using Defines = std::map<std::string, long long>;

struct ShippedCase {
  const char *file;
  std::vector<Defines> configs;
};

/// Ranks 4, 8 and 16 as -D ranks=N.
std::vector<Defines> byRanks(Defines extra = {}) {
  std::vector<Defines> out;
  for (long long n : {4, 8, 16}) {
    Defines d = extra;
    d["ranks"] = n;
    out.push_back(d);
  }
  return out;
}

/// Ranks 4, 8, 16 as nodes x gpus, including 2 x 8.
std::vector<Defines> byNodes() {
  return {{{"nodes", 2}, {"gpus", 2}}, {{"nodes", 1}, {"gpus", 4}},
          {{"nodes", 2}, {"gpus", 4}}, {{"nodes", 4}, {"gpus", 2}},
          {{"nodes", 2}, {"gpus", 8}}, {{"nodes", 4}, {"gpus", 4}}};
}

std::vector<ShippedCase> shippedCases() {
  std::vector<Defines> rooted = byRanks();
  for (Defines d : byRanks({{"chunks", 2}})) {
    d["root"] = d["ranks"] - 1;
    rooted.push_back(d);
  }
  std::vector<Defines> halo = byRanks();
  for (Defines d : byRanks({{"width", 2}, {"cells", 3}}))
    halo.push_back(d);
  return {
      {"ring_allreduce.ccl", byRanks()},
      {"ring_allgather.ccl", byRanks()},
      {"allpairs_allreduce.ccl", byRanks()},
      {"hierarchical_allreduce.ccl", byNodes()},
      {"alltoall_twostep.ccl", byNodes()},
      {"recursive_doubling_allgather.ccl", byRanks()},
      {"tree_broadcast.ccl", rooted},
      {"tree_reduce.ccl", rooted},
      {"halo_exchange.ccl", halo},
      {"even_allgather.ccl", byRanks()},
      {"nvls_ring_allreduce.ccl", byRanks()},
      {"ring_allreduce_channels.ccl",
       {{{"ranks", 4}, {"parts", 2}, {"channels", 4}},
        {{"ranks", 8}, {"parts", 8}, {"channels", 32}},
        {{"ranks", 16}, {"parts", 1}, {"channels", 2}}}},
  };
}

std::string show(const Defines &d) {
  std::string s;
  for (const auto &[k, v] : d)
    s += " -D " + k + "=" + std::to_string(v);
  return s;
}

} // namespace

TEST_CASE("shipped programs verify for 4, 8 and 16 ranks", "[dsl][shipped]") {
  auto cases = shippedCases();
  std::set<std::string> covered;
  for (const ShippedCase &c : cases) {
    covered.insert(c.file);
    std::string path = sourcePath(std::string("sketches/dsl/") + c.file);
    std::set<int> rankCounts;
    for (const Defines &d : c.configs) {
      INFO(c.file << show(d));
      LoweringOptions o;
      o.defines = d;
      auto lowered = compileFile(path, o);
      INFO((lowered ? "" : lowered.error().format()));
      REQUIRE(lowered.ok());
      const Schedule &s = lowered->schedule;
      VerifyResult v = verifySchedule(s);
      INFO((v.ok() ? "" : v.issues[0].message));
      CHECK(v.ok());
      CHECK(s.transfers.size() > 0);
      REQUIRE(s.transferLocs.size() == s.transfers.size());
      for (const SourceLoc &loc : s.transferLocs)
        CHECK((loc.file == path && loc.line > 0 && loc.col > 0));
      rankCounts.insert(s.collective.numRanks);
    }
    CHECK(rankCounts.count(4) == 1);
    CHECK(rankCounts.count(8) == 1);
    CHECK(rankCounts.count(16) == 1);
  }
  // A program added to sketches/dsl without a row here fails this test.
  for (const std::string &path : filesIn("sketches/dsl", ".ccl"))
    CHECK(covered.count(baseName(path)) == 1);
}

TEST_CASE("shipped programs cover the required algorithms", "[dsl][shipped]") {
  std::map<std::string, CollectiveKind> kinds;
  for (const std::string &path : filesIn("sketches/dsl", ".ccl")) {
    auto lowered = compileFile(path);
    REQUIRE(lowered.ok());
    kinds[baseName(path)] = lowered->schedule.collective.kind;
  }
  CHECK(kinds["ring_allreduce.ccl"] == CollectiveKind::AllReduce);
  CHECK(kinds["ring_allgather.ccl"] == CollectiveKind::AllGather);
  CHECK(kinds["allpairs_allreduce.ccl"] == CollectiveKind::AllReduce);
  CHECK(kinds["hierarchical_allreduce.ccl"] == CollectiveKind::AllReduce);
  CHECK(kinds["alltoall_twostep.ccl"] == CollectiveKind::AllToAll);
  CHECK(kinds["recursive_doubling_allgather.ccl"] == CollectiveKind::AllGather);
  CHECK(kinds["tree_broadcast.ccl"] == CollectiveKind::Broadcast);
  CHECK(kinds["tree_reduce.ccl"] == CollectiveKind::Reduce);
  CHECK(kinds["halo_exchange.ccl"] == CollectiveKind::Custom);
  CHECK(kinds["even_allgather.ccl"] == CollectiveKind::Custom);
}

TEST_CASE("recursive doubling rejects ranks that are not powers of two",
          "[dsl][shipped]") {
  LoweringOptions o;
  o.defines = {{"ranks", 12}};
  auto r = compileFile(
      sourcePath("sketches/dsl/recursive_doubling_allgather.ccl"), o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "assertion failed: recursive doubling needs a power-of-two number of "
        "ranks");
}

namespace {

/// Expectations written at the top of an error-corpus file.
struct Expectation {
  int line = 0, col = 0;
  std::string message;
  Defines defines;
  int exitCode = 1;
};

Expectation expectationOf(const std::string &text) {
  Expectation e;
  for (size_t i = 0;; ++i) {
    std::string l = lineOf(text, i);
    if (!l.starts_with("// "))
      break;
    if (l.starts_with("// ERROR: ")) {
      std::string rest = l.substr(10);
      size_t colon = rest.find(':');
      size_t colon2 = rest.find(':', colon + 1);
      e.line = std::stoi(rest.substr(0, colon));
      e.col = std::stoi(rest.substr(colon + 1, colon2 - colon - 1));
      e.message = rest.substr(colon2 + 2);
    } else if (l.starts_with("// ARGS: ")) {
      std::istringstream in(l.substr(9));
      std::string flag, def;
      while (in >> flag >> def) {
        size_t eq = def.find('=');
        e.defines[def.substr(0, eq)] = std::stoll(def.substr(eq + 1));
      }
    } else if (l.starts_with("// EXIT: ")) {
      e.exitCode = std::stoi(l.substr(9));
    }
  }
  return e;
}

} // namespace

TEST_CASE("each error class is reported at its place with a caret",
          "[dsl][errors]") {
  auto files = filesIn("test/dsl/errors", ".ccl");
  REQUIRE(files.size() >= 50);
  for (const std::string &path : files) {
    INFO(path);
    std::string text = slurp(path);
    Expectation want = expectationOf(text);
    REQUIRE(want.line > 0);
    LoweringOptions o;
    o.defines = want.defines;
    auto lowered = compileProgram(path, text, o);
    if (want.exitCode == 3) {
      // Compiles, but the verifier refutes it (its location is the CLI's
      // business and is checked by the end-to-end tests).
      REQUIRE(lowered.ok());
      VerifyResult v = verifySchedule(lowered->schedule);
      REQUIRE_FALSE(v.ok());
      std::string all;
      for (const VerifyIssue &issue : v.issues)
        all += "[" + std::string(toString(issue.kind)) + "] " + issue.message +
               "\n";
      CHECK(all.find(want.message) != std::string::npos);
      continue;
    }
    REQUIRE_FALSE(lowered.ok());
    const Error &err = lowered.error();
    CHECK(err.loc.file == path);
    CHECK(err.loc.line == want.line);
    CHECK(err.loc.col == want.col);
    std::string formatted = err.format();
    std::string head = path + ":" + std::to_string(want.line) + ":" +
                       std::to_string(want.col) + ": error: ";
    CHECK(formatted.starts_with(head));
    CHECK(formatted.find(want.message) != std::string::npos);
    // The notes start with the offending line and a caret under the column.
    CHECK(lineOf(err.notes, 0) == lineOf(text, want.line - 1));
    CHECK(lineOf(err.notes, 1) == std::string(want.col - 1, ' ') + "^");
  }
}
