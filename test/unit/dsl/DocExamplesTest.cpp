// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// docs/DSL.md's examples are tested: every ```ccl block is identical to its
// file under test/dsl/doc-examples/ (named on the block's first line), every
// example compiles and verifies, and each `error-` example fails with
// exactly the output the document shows after it.
#include "DslTestUtil.h"

#include "ccsynth/Schedule/Verifier.h"

#include <catch2/catch.hpp>

#include <set>

using namespace ccsynth;
using namespace ccsynth::dsl;
using namespace ccsynth::dsl::test;

namespace {

struct FencedBlock {
  std::string lang;
  std::string body;
};

/// The fenced code blocks of a Markdown text, in order.
std::vector<FencedBlock> fencedBlocks(const std::string &md) {
  std::vector<FencedBlock> out;
  std::istringstream in(md);
  std::string line;
  FencedBlock *open = nullptr;
  while (std::getline(in, line)) {
    if (line.starts_with("```")) {
      if (open) {
        open = nullptr;
      } else {
        out.push_back({line.substr(3), ""});
        open = &out.back();
      }
      continue;
    }
    if (open)
      open->body += line + "\n";
  }
  return out;
}

} // namespace

TEST_CASE("docs/DSL.md examples match test/dsl/doc-examples", "[dsl][docs]") {
  std::string md = slurp(sourcePath("docs/DSL.md"));
  REQUIRE_FALSE(md.empty());
  auto blocks = fencedBlocks(md);
  std::set<std::string> documented;
  int errorExamples = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].lang != "ccl")
      continue;
    const std::string &body = blocks[i].body;
    std::string first = lineOf(body, 0);
    REQUIRE(first.starts_with("// example: "));
    std::string name = first.substr(12);
    INFO(name);
    CHECK(documented.insert(name).second);
    std::string path = sourcePath("test/dsl/doc-examples/" + name);
    CHECK(slurp(path) == body);

    // Compiled under the bare name, as `ccsynth check NAME` in that folder.
    auto lowered = compileProgram(name, body);
    if (name.starts_with("error-")) {
      ++errorExamples;
      REQUIRE_FALSE(lowered.ok());
      // The next block shows the command and its exact output.
      REQUIRE(i + 1 < blocks.size());
      CHECK(blocks[i + 1].lang == "text");
      std::string shown = blocks[i + 1].body;
      std::string command = "$ ccsynth check " + name + "\n";
      REQUIRE(shown.starts_with(command));
      CHECK(shown.substr(command.size()) ==
            "ccsynth: " + lowered.error().format() + "\n");
      continue;
    }
    INFO((lowered ? "" : lowered.error().format()));
    REQUIRE(lowered.ok());
    VerifyResult v = verifySchedule(lowered->schedule);
    INFO((v.ok() ? "" : v.issues[0].message));
    CHECK(v.ok());
  }
  CHECK(errorExamples >= 2);
  // Every example file appears in the document.
  for (const std::string &path : filesIn("test/dsl/doc-examples", ".ccl"))
    CHECK(documented.count(baseName(path)) == 1);
  CHECK(documented.size() >= 6);
}
