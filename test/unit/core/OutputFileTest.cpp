//===- OutputFileTest.cpp - writeFileAtomic on special and linked paths ---===//
#include "ccsynth/Core/Diagnostic.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace ccsynth;
namespace fs = std::filesystem;

namespace {
/// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ccsynth-out-XXXXXX");
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
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
  std::thread reader([&] { got = slurp(fifo); });
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
