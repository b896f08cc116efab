//===- OutputFileTest.cpp - writeFileAtomic on special and linked paths ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Support/Diagnostic.h"

#include "TempDir.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace ccsynth;
namespace fs = std::filesystem;

namespace {
/// A private temporary directory for one test.
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ccsynth-out-") {}
};

std::string slurp(const fs::path &p) {
  auto r = readFile(p.string());
  REQUIRE(r);
  return *r;
}
} // namespace

TEST_CASE("a new path is written whole", "[output]") {
  TempDir dir;
  auto p = dir.path / "out.txt";
  REQUIRE(writeFileAtomic(p.string(), "hello"));
  CHECK(slurp(p) == "hello");
  CHECK(fs::is_regular_file(p));
  // No temporary is left beside it.
  CHECK(std::distance(fs::directory_iterator(dir.path),
                      fs::directory_iterator()) == 1);
}

TEST_CASE("a symlink is followed, not replaced", "[output]") {
  TempDir dir;
  auto target = dir.path / "target.txt";
  auto link = dir.path / "link.txt";
  REQUIRE(writeFileAtomic(target.string(), "old"));
  fs::create_symlink("target.txt", link);
  REQUIRE(writeFileAtomic(link.string(), "new"));
  CHECK(fs::is_symlink(link));
  CHECK(slurp(target) == "new");
  // A dangling link creates its target.
  auto dangling = dir.path / "dangling";
  fs::create_symlink("made.txt", dangling);
  REQUIRE(writeFileAtomic(dangling.string(), "made"));
  CHECK(fs::is_symlink(dangling));
  CHECK(slurp(dir.path / "made.txt") == "made");
}

TEST_CASE("a FIFO is written in place and stays a FIFO", "[output]") {
  TempDir dir;
  auto fifo = dir.path / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  // readFile refuses FIFOs; read the pipe directly.
  std::thread reader([&] {
    std::ifstream in(fifo);
    got.assign(std::istreambuf_iterator<char>(in), {});
  });
  REQUIRE(writeFileAtomic(fifo.string(), "through the pipe"));
  reader.join();
  CHECK(got == "through the pipe");
  struct stat st;
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("a directory or an unwritable place is an error", "[output]") {
  TempDir dir;
  auto status = writeFileAtomic(dir.path.string(), "x");
  REQUIRE_FALSE(status);
  CHECK(status.error().message.find("Is a directory") != std::string::npos);
  auto missing = dir.path / "no" / "such" / "dir.txt";
  REQUIRE_FALSE(writeFileAtomic(missing.string(), "x"));
  CHECK_FALSE(fs::exists(missing));
}

TEST_CASE("several outputs are written all or nothing", "[output]") {
  TempDir dir;
  auto a = dir.path / "a.svg";
  auto b = dir.path / "b.svg";
  REQUIRE(writeFileAtomic(b.string(), "old b"));
  // The second output cannot be written: neither is, and b keeps its old
  // contents.
  auto missing = dir.path / "no" / "such" / "c.svg";
  Status s = writeFilesAtomic(
      {{a.string(), "A"}, {b.string(), "new b"}, {missing.string(), "C"}});
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("c.svg") != std::string::npos);
  CHECK_FALSE(fs::exists(a));
  CHECK(slurp(b) == "old b");
  // No temporary is left behind.
  CHECK(std::distance(fs::directory_iterator(dir.path),
                      fs::directory_iterator()) == 1);
  // All writable: all written.
  REQUIRE(writeFilesAtomic({{a.string(), "A"}, {b.string(), "new b"}}));
  CHECK(slurp(a) == "A");
  CHECK(slurp(b) == "new b");
}

TEST_CASE("checkWritable sees an impossible output before any work",
          "[output]") {
  TempDir dir;
  CHECK(checkWritable((dir.path / "new.json").string()));
  CHECK_FALSE(checkWritable((dir.path / "no" / "x.json").string()));
  CHECK_FALSE(checkWritable(dir.path.string()));
  CHECK_FALSE(fs::exists(dir.path / "new.json"));
}

TEST_CASE("a signal removes the temporaries of writes in progress",
          "[output]") {
  for (int sig : {SIGTERM, SIGINT}) {
    TempDir dir;
    auto tmp = dir.path / "out.json.tmp.1234";
    auto kept = dir.path / "kept.json";
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // The child stands for a tool killed half-way through a write: its
      // temporary exists and is registered.
      installTemporaryFileCleanup();
      int slot = registerTemporaryFile(tmp.string());
      int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT, 0600);
      int fd2 = ::open(kept.c_str(), O_WRONLY | O_CREAT, 0600);
      if (slot < 0 || fd < 0 || fd2 < 0)
        ::_exit(10);
      ::kill(::getpid(), sig);
      ::_exit(11); // not reached: the handler re-raises
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    // It died of the signal itself (the parent sees the usual status) ...
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    // ... and took its temporary, and only that, with it.
    CHECK_FALSE(fs::exists(tmp));
    CHECK(fs::exists(kept));
  }
}

TEST_CASE("a released temporary is left alone", "[output]") {
  TempDir dir;
  auto p = dir.path / "done.json";
  int slot = registerTemporaryFile(p.string());
  REQUIRE(slot >= 0);
  releaseTemporaryFile(slot);
  // Registering again reuses the slot.
  CHECK(registerTemporaryFile(p.string()) == slot);
  releaseTemporaryFile(slot);
}

TEST_CASE("fileIdentity sees one file through links and spellings",
          "[output]") {
  TempDir dir;
  auto a = dir.path / "a.json";
  REQUIRE(writeFileAtomic(a.string(), "x"));
  fs::create_directory(dir.path / "sub");
  fs::create_symlink("a.json", dir.path / "link");
  fs::create_hard_link(a, dir.path / "hard");
  auto id = fileIdentity(a.string());
  REQUIRE(id);
  CHECK(id->entry.empty());
  for (const fs::path &p : {dir.path / "sub" / ".." / "a.json",
                            dir.path / "link", dir.path / "hard"})
    CHECK(fileIdentity(p.string()) == id);
  CHECK_FALSE(fileIdentity((dir.path / "sub").string()) == id);

  // A path not there yet: its directory and name; a dangling link names
  // what it would create.
  auto fresh = fileIdentity((dir.path / "new.json").string());
  REQUIRE(fresh);
  CHECK(fresh->entry == "new.json");
  CHECK(fileIdentity((dir.path / "sub" / ".." / "new.json").string()) == fresh);
  fs::create_symlink("new.json", dir.path / "dangling");
  CHECK(fileIdentity((dir.path / "dangling").string()) == fresh);
  CHECK_FALSE(fileIdentity((dir.path / "sub" / "new.json").string()) == fresh);
  CHECK_FALSE(fileIdentity((dir.path / "none" / "x.json").string()));
}

TEST_CASE("isInsideDirectory looks at every enclosing directory", "[output]") {
  TempDir dir;
  fs::create_directories(dir.path / "out" / "deep");
  auto inner = dir.path / "out" / "deep" / "f.xml";
  REQUIRE(writeFileAtomic(inner.string(), "x"));
  auto out = fileIdentity((dir.path / "out").string());
  REQUIRE(out);
  CHECK(isInsideDirectory(inner.string(), *out));
  CHECK(isInsideDirectory((dir.path / "out" / "deep").string(), *out));
  CHECK_FALSE(isInsideDirectory((dir.path / "out").string(), *out));
  auto other = dir.path / "f.xml";
  REQUIRE(writeFileAtomic(other.string(), "y"));
  CHECK_FALSE(isInsideDirectory(other.string(), *out));
  // A directory not created yet holds nothing.
  auto fresh = fileIdentity((dir.path / "fresh").string());
  REQUIRE(fresh);
  CHECK_FALSE(isInsideDirectory(inner.string(), *fresh));
}
