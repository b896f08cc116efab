//===- PluginBuild.cpp - Building plugin libraries from generated code ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements buildPlugin (PluginBuild.h): generated sources and a table of
// their descriptors are written to a private temporary directory and
// compiled by a child process, with the system C++ compiler or nvcc
// (findNvcc, nvccBuildsArch), into a shared library that is written
// atomically; a failed build shows the start of its log. Also the dtype and
// operator masks of --dtypes and --ops and the names a source defines.
// See docs/runtime-device.md ("Building a plugin").
//
//===----------------------------------------------------------------------===//
#include "PluginBuild.h"

#include "ccsynth/Support/ChildProcess.h"
#include "ccsynth/runtime/PluginLoader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <spawn.h>
#include <string_view>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace fs = std::filesystem;

namespace ccsynth::cli {

namespace {

/// A private temporary directory, removed with everything in it when done,
/// and by the signal handler if the process is interrupted
/// (ChildProcess.h).
struct TempDir {
  std::string path;
  int slot = -1;
  TempDir() {
    SignalsHeld held;
    std::string tmpl = (fs::temp_directory_path() / "ccsynth-plugin-XXXXXX");
    if (::mkdtemp(tmpl.data())) {
      path = tmpl;
      slot = registerTemporaryDirectory(path);
    }
  }
  ~TempDir() {
    if (!path.empty()) {
      std::error_code ec;
      fs::remove_all(path, ec);
      releaseTemporaryFile(slot);
    }
  }
};

/// Runs argv with stdout and stderr into `log` and TMPDIR set to `tmpDir`
/// (so that the compiler's own temporaries live where a signal's cleanup
/// removes them); returns the exit status or an error.
Expected<int> runProcess(const std::vector<std::string> &argv,
                         const std::string &log, const std::string &tmpDir) {
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  std::string tmpVar = "TMPDIR=" + tmpDir;
  std::vector<char *> env;
  for (char **e = environ; *e; ++e)
    if (std::strncmp(*e, "TMPDIR=", 7) != 0)
      env.push_back(*e);
  env.push_back(tmpVar.data());
  env.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  // The compiler and everything it starts get a process group of their
  // own, which a signal to this process takes down (ChildProcess.h). The
  // signals are blocked around the spawn so that none arrives between the
  // child's start and its registration.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid;
  int rc;
  {
    SignalsHeld held;
    posix_spawnattr_setsigmask(&attr, &held.previous());
    rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), env.data());
    if (rc == 0)
      registerChildProcess(pid);
  }
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return Error("cannot run '" + argv[0] + "': " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      releaseChildProcess();
      return Error("waiting for '" + argv[0] + "': " + std::strerror(errno));
    }
  releaseChildProcess();
  if (WIFSIGNALED(status))
    return Error("'" + argv[0] + "' was killed by signal " +
                 std::to_string(WTERMSIG(status)));
  return WEXITSTATUS(status);
}

std::string findNvcc(const std::string &given) {
  if (!given.empty())
    return given;
  if (const char *path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      std::string dir = p.substr(
          start, end == std::string::npos ? std::string::npos : end - start);
      if (!dir.empty() && ::access((dir + "/nvcc").c_str(), X_OK) == 0)
        return dir + "/nvcc";
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }
  return "/usr/local/cuda/bin/nvcc";
}

Expected<unsigned> parseMask(const std::string &list, bool dtypes) {
  if (list == "all")
    return dtypes ? 0x3ffu : 0xfu;
  unsigned mask = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    std::string item = list.substr(
        start, end == std::string::npos ? std::string::npos : end - start);
    int v = dtypes ? rt::parseDtype(item) : rt::parseOp(item);
    if (v < 0)
      return Error("unknown " + std::string(dtypes ? "data type" : "operator") +
                   " '" + item + "' (expected " +
                   (dtypes ? rt::dtypeMaskNames(0x3ff) : rt::opMaskNames(0xf)) +
                   " or all)");
    mask |= 1u << v;
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return mask;
}

} // namespace

bool nvccBuildsArch(const std::string &nvcc, const std::string &arch) {
  TempDir dir;
  if (dir.path.empty())
    return false;
  std::string log = dir.path + "/list.log";
  auto rc = runProcess({findNvcc(nvcc), "--list-gpu-code"}, log, dir.path);
  if (!rc || *rc != 0)
    return false;
  auto text = readFile(log);
  if (!text)
    return false;
  std::string want = "sm_" + arch;
  size_t at = 0;
  while ((at = text->find(want, at)) != std::string::npos) {
    size_t after = at + want.size();
    bool whole =
        (at == 0 || std::isspace((unsigned char)(*text)[at - 1])) &&
        (after == text->size() || !std::isalnum((unsigned char)(*text)[after]));
    if (whole)
      return true;
    at = after;
  }
  return false;
}

Expected<unsigned> parseDtypeMask(const std::string &list) {
  return parseMask(list, true);
}
Expected<unsigned> parseOpMask(const std::string &list) {
  return parseMask(list, false);
}

Expected<std::string> generatedName(const std::string &source) {
  const std::string key = "namespace ccsynth_gen_";
  size_t at = source.find(key);
  if (at == std::string::npos)
    return Error("not a generated source");
  size_t start = at + key.size(), end = source.find(' ', start);
  return source.substr(start, end - start);
}

std::vector<std::string> descriptorNames(const std::string &source) {
  std::vector<std::string> out;
  for (size_t at = 0; at < source.size();) {
    size_t end = source.find('\n', at);
    if (end == std::string::npos)
      end = source.size();
    std::string_view line(source.data() + at, end - at);
    for (std::string_view key :
         {"CCSYNTH_DEFINE_ALGORITHM(", "CCSYNTH_DEFINE_ALGORITHM_RANGE(",
          "CCSYNTH_DEFINE_ALGORITHM_TILED("})
      if (line.substr(0, key.size()) == key) {
        // The second argument: the descriptor's name.
        size_t comma = line.find(',');
        if (comma == std::string_view::npos)
          break;
        size_t start = line.find_first_not_of(' ', comma + 1);
        size_t stop = line.find_first_of(",)", start);
        if (start != std::string_view::npos && stop != std::string_view::npos)
          out.emplace_back(line.substr(start, stop - start));
      }
    at = end + 1;
  }
  return out;
}

Status buildPlugin(const std::vector<GeneratedSource> &algos,
                   const PluginBuildOptions &o, const std::string &output) {
  if (algos.empty())
    return Error("a plugin needs at least one algorithm");
  // The descriptors of each source (one per byte range it serves).
  std::vector<std::string> entries;
  for (const GeneratedSource &a : algos) {
    std::vector<std::string> own = descriptorNames(a.source);
    if (own.empty())
      own.push_back(a.name);
    for (const std::string &e : own) {
      if (std::find(entries.begin(), entries.end(), e) != entries.end())
        return Error("two algorithms are named '" + e +
                     "'; rename one (--name)");
      entries.push_back(e);
    }
  }
  TempDir dir;
  if (dir.path.empty())
    return Error(std::string("cannot create a temporary directory: ") +
                 std::strerror(errno));
  bool cuda = o.backend == "cuda";
  std::string ext = cuda ? ".cu" : ".cpp";
  std::vector<std::string> sources;
  for (const GeneratedSource &a : algos) {
    std::string file = dir.path + "/" + a.name + ext;
    if (Status s = writeFileAtomic(file, a.source); !s)
      return s;
    sources.push_back(file);
  }
  std::string table = "// The algorithm table of this plugin.\n"
                      "#include \"ccsynth/runtime/PluginTable.h\"\n";
  std::string list;
  for (const std::string &e : entries) {
    table += "CCSYNTH_DECLARE_ALGORITHM(" + e + ")\n";
    list += (list.empty() ? "" : ", ") + std::string("ccsynthAlgorithm_") + e;
  }
  table += "CCSYNTH_PLUGIN_TABLE(" + list + ")\n";
  std::string tableFile = dir.path + "/table" + ext;
  if (Status s = writeFileAtomic(tableFile, table); !s)
    return s;

  std::string lib = dir.path + "/plugin.so";
  std::vector<std::string> argv;
  std::string defines[] = {
      "-DCCSYNTH_PLUGIN",
      "-DCCSYNTH_VERSION_STRING=\"" CCSYNTH_VERSION "\"",
      "-DCCSYNTH_DTYPE_MASK=" + std::to_string(o.dtypeMask) + "u",
      "-DCCSYNTH_OP_MASK=" + std::to_string(o.opMask) + "u",
      "-I" CCSYNTH_RUNTIME_INCLUDE_DIR,
      "-I" CCSYNTH_RUNTIME_CUDA_INCLUDE_DIR};
  if (cuda) {
    argv = {findNvcc(o.nvcc), "-std=c++20", "-O3",
            "-shared",        "-Xcompiler", "-fPIC,-fvisibility=hidden"};
    std::string newest;
    for (const std::string &arch : o.cudaArchs) {
      argv.push_back("-gencode=arch=compute_" + arch + ",code=sm_" + arch);
      if (newest.empty() || std::stoi(arch) > std::stoi(newest))
        newest = arch;
    }
    // PTX of the newest: a GPU newer than every architecture built (no
    // SASS of its own) runs the driver's compile of it, with that
    // architecture's kernel knobs, instead of failing every launch.
    if (!newest.empty())
      argv.push_back("-gencode=arch=compute_" + newest + ",code=compute_" +
                     newest);
  } else {
    std::string cxx = o.cxx;
    if (cxx.empty()) {
      const char *env = std::getenv("CXX");
      cxx = env && *env ? env : "c++";
    }
    argv = {cxx,       "-std=c++20",          "-O2",     "-fPIC",
            "-shared", "-fvisibility=hidden", "-pthread"};
    // Threadblocks as fibers (Fibers.h), with Boost.Context's static
    // library where this build found it.
    if (*CCSYNTH_FIBERS_LIBRARY) {
      argv.push_back("-DCCSYNTH_FIBERS=1");
      if (*CCSYNTH_FIBERS_INCLUDE_DIR)
        argv.push_back("-isystem" CCSYNTH_FIBERS_INCLUDE_DIR);
    }
  }
  argv.insert(argv.end(), std::begin(defines), std::end(defines));
  argv.insert(argv.end(), o.flags.begin(), o.flags.end());
  argv.insert(argv.end(), sources.begin(), sources.end());
  argv.push_back(tableFile);
  if (!cuda && *CCSYNTH_FIBERS_LIBRARY)
    argv.push_back(CCSYNTH_FIBERS_LIBRARY);
  argv.push_back("-o");
  argv.push_back(lib);
  std::string log = dir.path + "/build.log";
  std::string compilerTmp = dir.path + "/tmp";
  if (::mkdir(compilerTmp.c_str(), 0700) != 0)
    return Error("cannot create '" + compilerTmp +
                 "': " + std::strerror(errno));
  auto rc = runProcess(argv, log, compilerTmp);
  if (!rc)
    return rc.error();
  if (*rc != 0) {
    auto text = readFile(log);
    std::string shown = text ? *text : std::string();
    if (shown.size() > 4000)
      shown = shown.substr(0, 4000) + "\n[...]";
    return Error("building the plugin failed (" + argv[0] + " exited with " +
                     std::to_string(*rc) + ")",
                 {}, shown);
  }
  auto bytes = readFile(lib);
  if (!bytes)
    return bytes.error();
  return writeFileAtomic(output, *bytes);
}

} // namespace ccsynth::cli
