// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Deterministic mutation fuzzing of the whole front end: seeded byte flips,
// insertions (of random bytes and of tokens), deletions, duplications and
// truncations of the shipped programs and the doc examples. Every mutant
// must compile or fail with a located error inside the file; none may
// crash, hang or trip ASan/UBSan (CI runs this test in a
// -DCCSYNTH_SANITIZE=ON build).
#include "DslTestUtil.h"

#include "ccsynth/Schedule/Verifier.h"

#include <catch2/catch.hpp>

#include <cstdint>

using namespace ccsynth;
using namespace ccsynth::dsl;
using namespace ccsynth::dsl::test;

namespace {

/// xorshift64*: the same sequence on every platform and standard library.
class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed ? seed : 1) {}
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
  }
  size_t below(size_t bound) { return bound ? next() % bound : 0; }

private:
  uint64_t state;
};

/// Fragments that steer mutants towards interesting parser and evaluator
/// paths (deep nesting, huge numbers, division, keywords in odd places).
const char *const kFragments[] = {
    "(",
    ")",
    "{",
    "}",
    ";",
    ",",
    "->",
    "..",
    "=",
    "==",
    "/",
    "%",
    "0",
    "-1",
    "9223372036854775807",
    "99999999999999999999",
    "ranks",
    "ranks * ranks",
    " by 0",
    " by -1",
    "for i in 0..1000000 { }",
    "step {",
    "chunk(",
    "input",
    "output",
    "scratch",
    "sum(",
    "input(0, 0)",
    "/*",
    "\"",
    "collective",
    "param",
    "let",
    "if",
    "else",
    "copy(",
    "reduce(",
    "assert(false);",
    "\n",
    "\t",
    "\xff",
    "\0",
    "pow(2, 62)",
    "log2(0)",
    "inplace",
    "pre {",
    "post {",
    "output(0, 0) = ",
    "((((((((((",
    "))))))))))",
};

std::string mutate(const std::string &original, Rng &rng) {
  std::string s = original;
  int edits = 1 + (int)rng.below(4);
  for (int e = 0; e < edits; ++e) {
    size_t pos = rng.below(s.size() + 1);
    switch (rng.below(7)) {
    case 0: // flip one bit
      if (!s.empty()) {
        size_t p = rng.below(s.size());
        s[p] = (char)(s[p] ^ (1 << rng.below(8)));
      }
      break;
    case 1: // replace a byte with any byte
      if (!s.empty())
        s[rng.below(s.size())] = (char)rng.below(256);
      break;
    case 2: // insert a random byte
      s.insert(pos, 1, (char)rng.below(256));
      break;
    case 3: { // insert a fragment
      std::string frag =
          kFragments[rng.below(sizeof kFragments / sizeof *kFragments)];
      if (frag.empty())
        frag = std::string(1, '\0');
      s.insert(pos, frag);
      break;
    }
    case 4: // delete a range
      s.erase(pos, 1 + rng.below(16));
      break;
    case 5: { // duplicate a range elsewhere
      size_t from = rng.below(s.size() + 1);
      std::string piece = s.substr(from, 1 + rng.below(24));
      s.insert(pos, piece);
      break;
    }
    case 6: // truncate
      s.resize(pos);
      break;
    }
  }
  return s;
}

int countLines(const std::string &s) {
  return 1 + (int)std::count(s.begin(), s.end(), '\n');
}

} // namespace

TEST_CASE("mutated programs fail cleanly or compile", "[dsl][fuzz]") {
  std::vector<std::string> seeds = filesIn("sketches/dsl", ".ccl");
  for (const std::string &p : filesIn("test/dsl/doc-examples", ".ccl"))
    seeds.push_back(p);
  REQUIRE(seeds.size() >= 9);
  // Small limits keep every mutant fast even when a mutation makes a loop
  // huge; the limits themselves are part of what is exercised.
  LoweringOptions options;
  options.maxIterations = 200'000;
  options.maxTransfers = 50'000;
  options.maxSlots = 1 << 16;
  options.maxChunkMoves = 1 << 20;
  const int perSeed = 600;
  int compiled = 0, failed = 0, verified = 0;
  for (size_t k = 0; k < seeds.size(); ++k) {
    std::string original = slurp(seeds[k]);
    REQUIRE_FALSE(original.empty());
    Rng rng(0xC0FFEEULL + k * 7919);
    for (int i = 0; i < perSeed; ++i) {
      std::string mutant = mutate(original, rng);
      auto r = compileProgram("mutant.ccl", mutant, options);
      if (!r) {
        ++failed;
        const Error &err = r.error();
        // A clear, located message inside the file.
        bool ok = !err.message.empty() && err.loc.file == "mutant.ccl" &&
                  err.loc.line >= 1 && err.loc.line <= countLines(mutant) &&
                  err.loc.col >= 1 &&
                  !err.message.starts_with("internal error");
        if (!ok) {
          INFO("seed " << seeds[k] << " mutant " << i << ":\n" << mutant);
          INFO(err.format());
          CHECK(ok);
        }
        continue;
      }
      ++compiled;
      CHECK(r->schedule.transferLocs.size() == r->schedule.transfers.size());
      if (verifySchedule(r->schedule).ok())
        ++verified;
    }
  }
  // The mutants exercise both outcomes (guards against a fuzzer that only
  // ever produces lexer errors).
  CHECK(failed > 1000);
  CHECK(compiled > 200);
  CHECK(verified > 50);
  WARN("mutants: " << compiled + failed << " (" << compiled << " compiled, "
                   << verified << " verified, " << failed << " rejected)");
}

TEST_CASE("pathological inputs fail cleanly", "[dsl][fuzz]") {
  const std::string inputs[] = {
      "",
      std::string(1, '\0'),
      "collective",
      "collective allreduce(ranks = 4)",
      "collective allreduce(ranks = 4); for i in 0..9223372036854775807 by "
      "9223372036854775807 { }",
      "collective allreduce(ranks = 4); for i in -9223372036854775807..0 "
      "{ }",
      std::string(100000, '{'),
      std::string(100000, '('),
      std::string(100000, '!') + "true",
      "/* " + std::string(100000, '*'),
      "let x = \"" + std::string(100000, 'a'),
      std::string(100000, '\n') + "@",
      "collective allreduce(ranks = 65536);",
      "collective alltoall(ranks = 2048, chunks = 1024);",
      "collective c(ranks = 65536) { input chunks = 65536; output chunks = 1; "
      "post { } }",
  };
  LoweringOptions options;
  options.maxIterations = 100'000;
  for (const std::string &text : inputs) {
    INFO(text.substr(0, 80));
    auto r = compileProgram("p.ccl", text, options);
    if (!r) {
      CHECK(r.error().loc.line >= 1);
      CHECK_FALSE(r.error().message.empty());
    }
  }
}
