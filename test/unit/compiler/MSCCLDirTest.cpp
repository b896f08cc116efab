//===- MSCCLDirTest.cpp - MSCCL algorithm directories ---------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What `compile --target msccl-dir` writes must read back the way MSCCL
// reads MSCCL_ALGO_DIR (every file, sorted) and pass the XML validator;
// ranges that MSCCL could select two files for are refused; the directory
// is written all or nothing.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Target/MSCCLDir.h"
#include "ccsynth/Compiler/Compile.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Target/MSCCLXml.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace ccsynth;
using namespace ccsynth::msccl;
namespace fs = std::filesystem;

namespace {

/// A fresh directory under the system's temporary directory, removed at
/// the end of the test.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "ccsynth-dir-XXXXXX");
    REQUIRE(::mkdtemp(tmpl.data()));
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

DirEntry compiled(const std::string &schedule, long long minBytes,
                  long long maxBytes, const std::string &proto, int index) {
  auto sched = loadScheduleJson(std::string(CCSYNTH_SOURCE_DIR) +
                                "/test/inputs/schedules/" + schedule);
  REQUIRE(sched.ok());
  CompileOptions o;
  o.minBytes = minBytes;
  o.maxBytes = maxBytes;
  o.protocol = proto;
  CompileResult r = compileSchedule(*sched, o);
  INFO(r.failure.error.format());
  REQUIRE(r.ok());
  auto algo = parseXml(schedule, *r.output);
  REQUIRE(algo.ok());
  DirEntry e;
  e.file = dirFileName(index, *algo);
  e.source = schedule;
  e.algo = algo.take();
  e.text = *r.output;
  return e;
}

Status write(const std::string &dir, const std::vector<DirEntry> &entries) {
  std::vector<OutputFile> files{{"README.md", dirReadme(entries)}};
  for (const DirEntry &e : entries)
    files.push_back({std::string(kAlgoSubdir) + "/" + e.file, e.text});
  return writeDirectoryAtomic(dir, files, [](const std::string &d) {
    auto readme = readFile(d + "/README.md");
    return readme && readme->rfind(kDirReadmeTitle, 0) == 0;
  });
}

} // namespace

TEST_CASE("an algorithm directory reads back as MSCCL reads it",
          "[msccl][dir]") {
  std::vector<DirEntry> entries = {
      compiled("ring_allreduce_4.json", 0, 65535, "LL", 0),
      compiled("ring_allreduce_4.json", 65536, 0, "Simple", 1),
      compiled("ring_allgather_8.json", 0, 0, "LL128", 2),
  };
  REQUIRE(checkNoOverlap(entries));
  ScratchDir tmp;
  std::string dir = tmp.path + "/out";
  REQUIRE(write(dir, entries));

  auto read = readAlgoDir(dir);
  INFO((read ? std::string() : read.error().format()));
  REQUIRE(read.ok());
  CHECK(read->algoDir == dir + "/" + kAlgoSubdir);
  REQUIRE(read->entries.size() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const DirEntry &e = read->entries[i];
    INFO(e.file);
    CHECK(e.file == entries[i].file);
    CHECK(validateXml(e.source, e.text).empty());
    CHECK(e.algo.proto == entries[i].algo.proto);
    CHECK(e.algo.minBytes == entries[i].algo.minBytes);
    CHECK(e.algo.maxBytes == entries[i].algo.maxBytes);
  }
  CHECK(read->entries[0].algo.proto == "LL");
  CHECK(read->entries[0].algo.maxBytes == 65535);
  CHECK(read->entries[2].algo.coll == "allgather");
  // Nothing but the README and the algorithm directory.
  int top = 0;
  for ([[maybe_unused]] const auto &e : fs::directory_iterator(dir))
    ++top;
  CHECK(top == 2);

  SECTION("writing again replaces an earlier output whole") {
    REQUIRE(write(dir, {entries[2]}));
    auto again = readAlgoDir(dir);
    REQUIRE(again.ok());
    CHECK(again->entries.size() == 1);
  }
  SECTION("a stray file in the algorithm directory is refused by name") {
    std::ofstream(dir + "/" + kAlgoSubdir + "/notes.txt") << "hello\n";
    auto bad = readAlgoDir(dir);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().loc.file.str().find("notes.txt") != std::string::npos);
  }
}

TEST_CASE("overlapping selections are refused", "[msccl][dir]") {
  DirEntry a = compiled("ring_allreduce_4.json", 0, 1 << 20, "Simple", 0);
  DirEntry b = compiled("ring_allreduce_4.json", 1 << 20, 0, "Simple", 1);
  // Both ends are inclusive: 1 MiB is served by both.
  CHECK(selectionOverlaps(a.algo, b.algo));
  Status s = checkNoOverlap({a, b});
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("for sizes 1 MiB .. 1 MiB") !=
        std::string::npos);
  b.algo.minBytes = (1 << 20) + 1;
  CHECK(checkNoOverlap({a, b}));
  // Different placements or collectives never clash.
  DirEntry c = compiled("direct_allgather_inplace_4.json", 0, 0, "", 2);
  DirEntry d = compiled("ring_allgather_4.json", 0, 0, "", 3);
  CHECK(checkNoOverlap({a, c, d}));
  CHECK_FALSE(selectionOverlaps(c.algo, d.algo));
  d.algo.inplace = 1;
  CHECK(selectionOverlaps(c.algo, d.algo));
}

TEST_CASE("directories are written all or nothing", "[msccl][dir]") {
  ScratchDir tmp;
  std::vector<DirEntry> one = {
      compiled("ring_allreduce_4.json", 0, 0, "Simple", 0)};
  SECTION("a file in the way") {
    std::ofstream(tmp.path + "/file") << "keep\n";
    Status s = write(tmp.path + "/file", one);
    REQUIRE_FALSE(s);
    CHECK(s.error().message.find("exists and is not a directory") !=
          std::string::npos);
    CHECK(*readFile(tmp.path + "/file") == "keep\n");
  }
  SECTION("a directory of someone else's files") {
    fs::create_directory(tmp.path + "/mine");
    std::ofstream(tmp.path + "/mine/x") << "x";
    REQUIRE_FALSE(write(tmp.path + "/mine", one));
    CHECK(fs::exists(tmp.path + "/mine/x"));
    CHECK_FALSE(fs::exists(tmp.path + "/mine/README.md"));
  }
  SECTION("a missing parent") {
    REQUIRE_FALSE(write(tmp.path + "/no/such", one));
  }
  SECTION("a file name that escapes the directory") {
    Status s =
        writeDirectoryAtomic(tmp.path + "/out", {{"../escape.xml", "x"}});
    REQUIRE_FALSE(s);
    CHECK_FALSE(fs::exists(tmp.path + "/escape.xml"));
    CHECK_FALSE(fs::exists(tmp.path + "/out"));
  }
  // Whatever failed, no staging directory is left beside the target.
  for (const auto &e : fs::directory_iterator(tmp.path))
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
}
