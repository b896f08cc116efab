// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the TACCL sketch reader: TACCL's own files read as they
// are, and malformed sketches rejected with file:line:col errors.
#include "ccsynth/Synth/Sketch.h"
#include "ccsynth/Support/Json.h"

#include "SynthTestUtil.h"

#include <catch2/catch.hpp>

using namespace ccsynth;
using namespace ccsynth::synth;

namespace {

using test::parse;

} // namespace

TEST_CASE("TACCL's 2 x DGX-2 relay sketch reads as is", "[sketch]") {
  // taccl/examples/sketch/sk1-dgx2-n2.json
  auto sk = parse(R"({
    "nnodes": 2,
    "intranode_sketch": {
        "strategy": "switch",
        "switches": [[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]],
        "switch_hyperedge_strategy": ["uc-min"]
    },
    "internode_sketch": {
        "strategy": "relay",
        "internode_conn": {"1" : [0], "3" : [2], "5" : [4], "7" : [6], "9" : [8], "11" : [10], "13" : [12], "15" : [14]},
        "gpus_to_sender_rev_map": {
            "1" : [0, 1], "3" : [2, 3], "5" : [4, 5], "7" : [6, 7],
            "9" : [8, 9], "11" : [10, 11], "13" : [12, 13], "15" : [14, 15]
        },
        "enforce_ordering": true
    },
    "symmetry_offsets": [[2, 16], [16, 32]],
    "hyperparameters": {"input_chunkup": 2}
  })");
  REQUIRE(sk.ok());
  CHECK(sk->nnodes == 2);
  CHECK(sk->intra == IntraStrategy::Switch);
  REQUIRE(sk->switches.size() == 1);
  CHECK(sk->switches[0].gpus.size() == 16);
  CHECK(sk->switches[0].strategy == HyperedgeStrategy::UcMin);
  CHECK(sk->connKind == InternodeConnKind::Explicit);
  REQUIRE(sk->conn.size() == 8);
  CHECK(sk->conn[0].sender == 1);
  CHECK(sk->conn[0].targets == std::vector<int>{0});
  CHECK(sk->hasRevMap);
  CHECK(sk->revMap[1].targets == std::vector<int>{2, 3});
  CHECK(sk->enforceOrdering);
  CHECK(sk->hops == InternodeHops::Direct);
  REQUIRE(sk->symmetry.size() == 2);
  CHECK(sk->symmetry[1].offset == 16);
  CHECK(sk->symmetry[1].size == 32);
  CHECK(sk->inputChunkup == 2);
}

TEST_CASE("TACCL's string internode connections and empty symmetry",
          "[sketch]") {
  // taccl/examples/sketch/sk2-ndv2-n2.json and sk3-ndv2-n2.json
  auto fc = parse(R"({"nnodes": 2, "intranode_sketch": {"strategy": "none"},
    "internode_sketch": {"strategy": "relay", "internode_conn": "fully-connected"},
    "symmetry_offsets": [[8,16]], "hyperparameters": {"input_chunkup": 1}})");
  REQUIRE(fc.ok());
  CHECK(fc->connKind == InternodeConnKind::FullyConnected);
  auto dm = parse(R"({"nnodes": 1, "intranode_sketch": {"strategy": "maxmin"},
    "internode_sketch": {"strategy": "relay", "internode_conn": "direct-map",
                         "internode_hops": "any"},
    "symmetry_offsets": [], "hyperparameters": {"input_chunkup": 6}})");
  REQUIRE(dm.ok());
  CHECK(dm->connKind == InternodeConnKind::DirectMap);
  CHECK(dm->hops == InternodeHops::Any);
  CHECK(dm->intra == IntraStrategy::MaxMin);
  CHECK(dm->inputChunkup == 6);
}

TEST_CASE("every shipped sketch parses", "[sketch]") {
  for (const char *name : {"dgx1", "ndv2x2", "ndv2x4", "dgx2x2", "dgx-a100x2",
                           "dgx-a100x4", "dgx-h100x2", "dgx-h100x8"}) {
    auto sk = loadSketch(std::string(CCSYNTH_SOURCE_DIR) + "/sketches/" + name +
                         ".json");
    INFO(name);
    REQUIRE(sk.ok());
  }
}

namespace {

struct BadCase {
  const char *text;
  int line, col;
  const char *message;
};

} // namespace

TEST_CASE("a sketch's in_network lists the switch kinds the schedule may "
          "use",
          "[sketch]") {
  auto none =
      parse(R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"}})");
  REQUIRE(none);
  CHECK_FALSE(none->inNetwork);
  auto both = parse(R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
  "in_network": ["sharp", "nvls"]})");
  REQUIRE(both);
  REQUIRE(both->inNetwork);
  CHECK(*both->inNetwork ==
        std::vector<SwitchKind>{SwitchKind::SHARP, SwitchKind::NVLS});
  CHECK(both->inNetworkLoc.line == 2);
  auto empty = parse(R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
  "in_network": []})");
  REQUIRE(empty);
  REQUIRE(empty->inNetwork);
  CHECK(empty->inNetwork->empty());
}

TEST_CASE("malformed sketches get located errors", "[sketch]") {
  const BadCase cases[] = {
      // Unknown intranode strategy, pointing at the value.
      {R"({"nnodes": 1,
  "intranode_sketch": {"strategy": "ring"}})",
       2, 36, "unknown intranode strategy 'ring'"},
      // One strategy per switch.
      {R"({"nnodes": 1,
  "intranode_sketch": {"strategy": "switch", "switches": [[0,1],[2,3]],
     "switch_hyperedge_strategy": ["uc-min"]}})",
       3, 35, "has 1 entries but there are 2 switches"},
      // A typo in a field name.
      {R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
  "symetry_offsets": []})",
       2, 22, "unknown field 'symetry_offsets'"},
      // Sender keys are GPU ids.
      {R"({"nnodes": 2, "intranode_sketch": {"strategy": "none"},
  "internode_sketch": {"strategy": "relay",
    "internode_conn": {"gpu0": [1]}}})",
       3, 32, "key 'gpu0' must be a local GPU id"},
      // Multi-node sketches need an internode sketch.
      {R"({"nnodes": 2, "intranode_sketch": {"strategy": "none"}})", 1, 1,
       "needs an 'internode_sketch'"},
      // Wrong types.
      {R"({"nnodes": "two", "intranode_sketch": {"strategy": "none"}})", 1, 12,
       "must be an integer, found a string"},
      {R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
  "symmetry_offsets": [[1, 2, 3]]})",
       2, 24, "must be a pair"},
      {R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
  "hyperparameters": {"input_chunkup": 0}})",
       2, 40, "input_chunkup must be between 1 and 1024"},
      // in_network names switch kinds, each once.
      {R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
  "in_network": ["nvls", "nvswitch"]})",
       2, 26, "unknown in-network switch kind 'nvswitch'"},
      {R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
  "in_network": ["sharp", "sharp"]})",
       2, 27, "in_network lists 'sharp' twice"},
      {R"({"nnodes": 1, "intranode_sketch": {"strategy": "none"},
  "in_network": "nvls"})",
       2, 17, "must be an array"},
      // Broken JSON.
      {R"({"nnodes": 1,
  "intranode_sketch": {"strategy": "none",}})",
       2, 43, "malformed JSON"},
  };
  for (const BadCase &c : cases) {
    INFO(c.text);
    auto sk = parse(c.text);
    REQUIRE_FALSE(sk.ok());
    const Error &e = sk.error();
    CHECK(e.loc.file == "sk.json");
    CHECK(e.loc.line == c.line);
    CHECK(e.loc.col == c.col);
    CHECK_THAT(e.message, Catch::Contains(c.message));
    // Formatted the way compilers do.
    CHECK_THAT(e.format(),
               Catch::StartsWith("sk.json:" + std::to_string(c.line) + ":" +
                                 std::to_string(c.col) + ": error: "));
  }
}
