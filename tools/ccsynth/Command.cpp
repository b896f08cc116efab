//===- Command.cpp - Shared helpers of the ccsynth subcommands ------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The helpers every subcommand shares (Command.h): printing an error and
// choosing its exit code (fail, usage); parsing sizes, byte counts, tile
// sizes and -D defines; loading a schedule input (a schedule JSON, a .ccl
// program or MSCCL XML) and locating its transfers for error messages;
// resolving the topology a schedule names and proving it (proveSchedule);
// and writing outputs: checking that none replaces an input, writing files
// atomically, and writing stdout with its errors reported.
//
//===----------------------------------------------------------------------===//
#include "Command.h"

#include "ccsynth/Topology/TacclProfile.h"

#include "ccsynth/Support/Json.h"
#include "ccsynth/DSL/Frontend.h"
#ifdef CCSYNTH_HAVE_MLIR
#include "ccsynth/Import/MSCCLToSchedule.h"
#endif
#include "ccsynth/Target/CodeGen.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

namespace ccsynth::cli {

int fail(const Error &error, int code) {
  // Every located error shows its source line and a caret; readers that
  // know only the position (sketches, MLIR diagnostics) leave that to us.
  if (error.loc.known() && error.notes.empty()) {
    Error withCaret = error;
    withCaret.notes = caretFor(error.loc);
    std::cerr << "ccsynth: " << withCaret.format() << "\n";
    return code;
  }
  std::cerr << "ccsynth: " << error.format() << "\n";
  return code;
}

int usage(const Error &error) { return fail(error, kExitUsage); }

Expected<std::vector<double>> parseSizes(const std::string &list) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty())
      return Error("empty size in '" + list + "'");
    double mult = 1;
    char last = item.back();
    if (last == 'K' || last == 'k')
      mult = 1024.0;
    else if (last == 'M' || last == 'm')
      mult = 1024.0 * 1024;
    else if (last == 'G' || last == 'g')
      mult = 1024.0 * 1024 * 1024;
    std::string digits = mult == 1 ? item : item.substr(0, item.size() - 1);
    if (digits.empty() || digits.size() > 15 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return Error("bad size '" + item +
                   "' (expected a byte count like 4096, 1K, 64M or 1G)");
    double v = std::stod(digits) * mult;
    if (v <= 0)
      return Error("size '" + item + "' must be positive");
    // Callers take sizes as 64-bit byte counts.
    if (v >= 9223372036854775808.0)
      return Error("size '" + item +
                   "' is out of range: at most 2^63 - 1 bytes (8 EiB)");
    out.push_back(v);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

Expected<long long> parseByteCount(const std::string &flag,
                                   const std::string &value) {
  if (value == "0")
    return 0LL;
  auto sizes = parseSizes(value);
  if (!sizes || sizes->size() != 1)
    return Error(flag + ": expected one byte count like 0, 4096, 1K or 64M");
  return (long long)sizes->front();
}

Expected<long long> parseTileBytes(const std::string &value) {
  auto v = parseByteCount("--tile-bytes", value);
  if (!v || !codegen::validTileBytes(*v))
    return Error("--tile-bytes '" + value +
                 "': expected a positive multiple of 16 bytes like 64K or 1M");
  return *v;
}

Expected<std::map<std::string, long long>>
parseDefines(const std::vector<std::string> &defines) {
  std::map<std::string, long long> out;
  for (const std::string &d : defines) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0)
      return Error("bad definition '" + d + "' (expected -D name=value)");
    std::string value = d.substr(eq + 1);
    bool neg = !value.empty() && value[0] == '-';
    std::string digits = neg ? value.substr(1) : value;
    if (digits.empty() || digits.size() > 15 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return Error("bad definition '" + d + "': the value must be an integer");
    out[d.substr(0, eq)] = std::stoll(value);
  }
  return out;
}

namespace {

/// The schedule in `path`, whatever its format (loadScheduleInput).
Expected<Schedule>
loadScheduleFile(const std::string &path,
                 const std::map<std::string, long long> &defines) {
  if (path.ends_with(".ccl")) {
    dsl::LoweringOptions options;
    options.defines = defines;
    auto lowered = dsl::compileFile(path, options);
    if (!lowered)
      return lowered.error();
    return std::move(lowered->schedule);
  }
  if (!defines.empty())
    return Error("-D definitions apply only to .ccl programs", SourceLoc{path});
  // MSCCL XML, by extension or by content.
  bool xml = path.ends_with(".xml");
  std::string text;
  if (!xml) {
    auto read = readFile(path, kMaxScheduleBytes);
    if (!read)
      return read.error();
    text = std::move(*read);
    dropByteOrderMark(text);
    size_t first = text.find_first_not_of(" \t\r\n");
    xml = first != std::string::npos && text[first] == '<';
  }
  if (!xml)
    return readScheduleJson(path, std::move(text));
#ifdef CCSYNTH_HAVE_MLIR
  if (text.empty()) {
    auto read = readFile(path);
    if (!read)
      return read.error();
    text = std::move(*read);
    dropByteOrderMark(text);
  } else if (text.size() > kMaxInputBytes) {
    return Error("cannot read '" + path + "': MSCCL XML larger than the " +
                 std::to_string(kMaxInputBytes >> 20) +
                 " MiB an input file may have");
  }
  std::vector<Error> notes;
  auto sched = importMscclXml(path, text, &notes);
  for (const Error &n : notes) {
    std::string where = n.loc.known()
                            ? n.loc.file + ":" + std::to_string(n.loc.line) +
                                  ":" + std::to_string(n.loc.col) + ": "
                            : path + ": ";
    std::cerr << "ccsynth: " << where << "note: " << n.message << "\n";
  }
  return sched;
#else
  return Error("this is MSCCL XML, which this build (without MLIR) cannot "
               "import",
               SourceLoc{path});
#endif
}

} // namespace

Expected<Schedule>
loadScheduleInput(const std::string &path,
                  const std::map<std::string, long long> &defines) {
  auto sched = loadScheduleFile(path, defines);
  // A topology file the schedule names is found beside it.
  if (sched && path != "-")
    sched->topologyDir = std::filesystem::path(path).parent_path().string();
  return sched;
}

SourceLoc transferLocation(const Schedule &schedule, const std::string &path,
                           int index) {
  if (index < 0)
    return SourceLoc{path};
  if (index < (int)schedule.transferLocs.size())
    return schedule.transferLocs[index];
  // The text is walked to the transfer; no tree of the file is built.
  auto doc = JsonDocument::loadForLocating(path, kMaxScheduleBytes);
  if (!doc)
    return SourceLoc{path};
  return doc->locate(jsonPath("/transfers", (size_t)index));
}

SourceLoc issueLocation(const Schedule &schedule, const std::string &path,
                        const VerifyIssue &issue) {
  if (issue.transfer >= 0)
    return transferLocation(schedule, path, issue.transfer);
  // An end-state issue names a slot: point at the last transfer that wrote
  // it (the one whose result is wrong), if any.
  const Collective &col = schedule.collective;
  ChunkLoc want = col.canonical(issue.loc);
  int best = -1;
  for (int t = 0; t < (int)schedule.transfers.size(); ++t) {
    const Transfer &tr = schedule.transfers[t];
    for (int k = 0; k < tr.count; ++k) {
      ChunkLoc dst{tr.dst.rank, tr.dst.buffer, tr.dst.index + k};
      if (dst.rank < 0 || dst.rank >= col.numRanks || dst.index < 0 ||
          dst.index >= schedule.bufferChunks(dst.buffer))
        continue;
      if (col.canonical(dst) == want &&
          (best < 0 || tr.step >= schedule.transfers[best].step))
        best = t;
    }
  }
  if (best >= 0)
    return transferLocation(schedule, path, best);
  // Nothing wrote the slot: point at the collective that requires it.
  if (!path.ends_with(".ccl"))
    if (auto doc = JsonDocument::load(path))
      return doc->locate("/collective");
  return SourceLoc{path};
}

std::string caretFor(const SourceLoc &loc) {
  if (!loc.known() || loc.file.empty())
    return {};
  auto text = readFile(loc.file);
  if (!text)
    return {};
  return caretLine(*text, loc);
}

void addTopoProfileOptions(CLI::App *cmd, TopoProfileArgs &args) {
  cmd->add_option("--topo-profile", args.file,
                  "TACCL topology profile JSON (alpha, node_betas_list, "
                  "remote_alpha, remote_beta, ...) applied to the built-in "
                  "shape, as TACCL applies it to its DGX-2 / NDv2 shapes "
                  "(docs/sketches.md)");
  cmd->add_option("--topo-profile-mb", args.sizeMB,
                  "The data size (MB) the profile's betas are for (TACCL: "
                  "beta = us per MB x size); default 1");
  cmd->add_option("--topo-profile-scale", args.scale,
                  "The constant the profile's figures were multiplied by "
                  "(TACCL's guide suggests scaling small ones); default 1");
}

void printWarnings(const std::vector<Error> &warnings) {
  // A command may load one topology several times (the proof, then the
  // predictions): each warning is printed once.
  static std::set<std::string> printed;
  for (const Error &w : warnings) {
    std::string text = w.format("warning");
    if (printed.insert(text).second)
      std::cerr << "ccsynth: " << text << "\n";
  }
}

Expected<Topology> loadTopologyArg(const std::string &nameOrPath,
                                   const TopoProfileArgs &profile) {
  std::vector<Error> warnings;
  auto topo = loadTopology(nameOrPath, &warnings);
  printWarnings(warnings);
  if (!topo || profile.file.empty())
    return topo;
  if (nameOrPath != topo->name)
    return Error("--topo-profile applies to a built-in shape (dgx2, ndv2x4, "
                 "...), not to the topology file '" +
                 nameOrPath + "'; put the figures in the file instead");
  return applyTacclProfile(*topo, profile.file,
                           TacclProfileUnits{profile.sizeMB, profile.scale});
}

namespace {

/// Whether a relative path climbs out of its directory ("..").
bool climbsOut(const std::filesystem::path &p) {
  return std::any_of(p.begin(), p.end(), [](const std::filesystem::path &part) {
    return part == "..";
  });
}

} // namespace

Expected<std::string> scheduleTopologyPath(const Schedule &schedule) {
  return namedTopologyPath(schedule.topology, schedule.topologyDir);
}

Expected<std::string> namedTopologyPath(const std::string &name,
                                        const std::string &dir) {
  namespace fs = std::filesystem;
  if (!isTopologyFileArg(name))
    return name;
  fs::path p(name);
  if (p.is_absolute() || climbsOut(p))
    return Error("the schedule names the topology file '" + name +
                 "', outside its own directory: a schedule's topology is "
                 "opened only by built-in name or as a file under the "
                 "schedule's directory; pass --topo " +
                 name + " to use that file");
  return (fs::path(dir) / p).string();
}

Expected<Topology> topologyFor(const Schedule &schedule,
                               const std::string &explicitTopo,
                               const TopoProfileArgs *profile) {
  std::string name = explicitTopo.empty() ? schedule.topology : explicitTopo;
  if (name.empty())
    return Error("the schedule names no topology; pass --topo");
  std::string path = name;
  if (explicitTopo.empty()) {
    auto resolved = scheduleTopologyPath(schedule);
    if (!resolved)
      return resolved.error();
    path = *resolved;
  }
  auto topo = loadTopologyArg(path, profile ? *profile : TopoProfileArgs{});
  if (!topo)
    return topo.error();
  if (explicitTopo.empty() && !schedule.topologyHash.empty()) {
    std::string hash = schedule.topologyHashVersion == 2
                           ? topologyJsonHash(*topo)
                           : topologyHash(*topo);
    // A schedule fits the machine as it was described before it had the
    // switches the schedule does not use: before IB SHARP (NVLS switches
    // come first, so their indices are unchanged), or before any switch.
    if (hash != schedule.topologyHash && schedule.topologyHashVersion != 2 &&
        !topo->switches.empty()) {
      bool usesSharp = false;
      for (const Transfer &tr : schedule.transfers)
        usesSharp |= isSwitchOp(tr.op) && tr.sw >= 0 &&
                     tr.sw < (int)topo->switches.size() &&
                     topo->switches[tr.sw].kind == SwitchKind::SHARP;
      // The schedule's hash, once the switches `drop` picks are removed.
      auto matchesWithout = [&](auto drop) {
        Topology before = *topo;
        std::erase_if(before.switches, drop);
        return before.switches.size() != topo->switches.size() &&
               topologyHash(before) == schedule.topologyHash;
      };
      if (!usesSharp &&
          (matchesWithout([](const InNetworkSwitch &sw) {
             return sw.kind == SwitchKind::SHARP;
           }) ||
           (!schedule.usesSwitches() &&
            matchesWithout([](const InNetworkSwitch &) { return true; }))))
        hash = schedule.topologyHash;
    }
    if (hash != schedule.topologyHash)
      return Error("topology '" + name +
                   "' is not the one the schedule was made for (its content "
                   "hash is " +
                   hash + ", the schedule records " + schedule.topologyHash +
                   "); pass the --topo-profile it was made with, or --topo "
                   "to use it anyway");
  }
  if (topo->numRanks() != schedule.collective.numRanks)
    return Error("topology '" + topo->name + "' has " +
                 std::to_string(topo->numRanks()) +
                 " ranks but the schedule "
                 "has " +
                 std::to_string(schedule.collective.numRanks));
  return topo;
}

int proveSchedule(const Schedule &schedule, const std::string &path,
                  const std::string &explicitTopo, bool noTopo,
                  std::optional<Topology> &topo, VerifyResult &out,
                  const TopoProfileArgs *profile) {
  VerifyOptions vo;
  if (!noTopo && (!explicitTopo.empty() || !schedule.topology.empty())) {
    auto t = topologyFor(schedule, explicitTopo, profile);
    if (!t)
      return fail(t.error());
    topo = t.take();
    vo.topology = &*topo;
  }
  out = verifySchedule(schedule, vo);
  if (out.ok())
    return kExitOk;
  for (const VerifyIssue &issue : out.issues) {
    SourceLoc loc = issueLocation(schedule, path, issue);
    std::cerr << Error("[" + std::string(toString(issue.kind)) + "] " +
                           issue.message,
                       loc, caretFor(loc))
                     .format()
              << "\n";
  }
  std::cerr << path << ": " << schedule.collective.describe()
            << " is NOT implemented by this schedule (" << out.issues.size()
            << (out.issues.size() == 1 ? " issue" : " issues") << " shown)\n";
  return kExitVerifyFailed;
}

void recordTopology(Schedule &schedule, const std::string &nameOrPath,
                    const Topology &topo, const std::string &outputPath) {
  recordTopology(schedule, nameOrPath, topologyHash(topo), outputPath);
}

void recordTopology(Schedule &schedule, const std::string &nameOrPath,
                    std::string hash, const std::string &outputPath) {
  namespace fs = std::filesystem;
  schedule.topology = nameOrPath;
  // A file is recorded relative to the schedule's directory, where later
  // commands look for it; one outside it by its absolute path, which they
  // name but do not open (--topo opens it).
  if (isTopologyFileArg(nameOrPath) && !outputPath.empty() &&
      outputPath != "-") {
    std::error_code ec;
    fs::path file = fs::weakly_canonical(fs::absolute(nameOrPath, ec), ec);
    fs::path dir = fs::weakly_canonical(
        fs::absolute(fs::path(outputPath), ec).parent_path(), ec);
    if (!ec) {
      fs::path rel = file.lexically_relative(dir);
      schedule.topology =
          !rel.empty() && !climbsOut(rel) ? rel.string() : file.string();
    }
  }
  schedule.topologyHash = std::move(hash);
  schedule.topologyHashVersion = Schedule::kFormatVersion;
}

Status checkOutputs(const std::vector<std::string> &paths) {
  for (const std::string &p : paths)
    if (!p.empty() && p != "-")
      if (Status s = checkWritable(p); !s)
        return s;
  return Status::success();
}

PathArg topologyPathArg(const std::string &name, const std::string &topo) {
  return {name, isTopologyFileArg(topo) ? topo : std::string()};
}

Status checkOutputsApart(const std::vector<PathArg> &inputs,
                         const std::vector<PathArg> &outputs,
                         const std::vector<PathArg> &outputDirs) {
  // "-o 'x.json'", or the name with "{}" replaced by the quoted path.
  auto quoted = [](const PathArg &a) {
    std::string q = "'" + a.path + "'";
    size_t at = a.name.find("{}");
    return at == std::string::npos
               ? a.name + " " + q
               : a.name.substr(0, at) + q + a.name.substr(at + 2);
  };
  auto real = [](const PathArg &a) { return !a.path.empty() && a.path != "-"; };
  std::vector<std::pair<const PathArg *, FileIdentity>> ins, outs;
  for (const PathArg &in : inputs)
    if (real(in))
      if (auto id = fileIdentity(in.path); id && id->entry.empty())
        ins.push_back({&in, *id});
  for (const std::vector<PathArg> *list : {&outputs, &outputDirs})
    for (const PathArg &out : *list) {
      if (!real(out))
        continue;
      auto id = fileIdentity(out.path);
      if (!id)
        continue;
      for (const auto &[in, inId] : ins)
        if (inId == *id)
          return Error(quoted(out) + " is the same file as " + quoted(*in) +
                       ": writing it would replace that input; name another " +
                       (list == &outputDirs ? "directory" : "file"));
      for (const auto &[other, otherId] : outs)
        if (otherId == *id)
          return Error(quoted(*other) + " and " + quoted(out) +
                       " name the same file; name two different files");
      if (list == &outputDirs)
        for (const auto &[in, inId] : ins)
          if (isInsideDirectory(in->path, *id))
            return Error(quoted(out) + " holds " + quoted(*in) +
                         ", and writing the directory would replace it; "
                         "name another directory");
      outs.push_back({&out, *id});
    }
  return Status::success();
}

Status writeOutputs(const std::vector<OutputFile> &files) {
  std::vector<OutputFile> real;
  for (const OutputFile &f : files)
    if (f.path != "-")
      real.push_back(f);
  if (Status s = writeFilesAtomic(real); !s)
    return s;
  for (const OutputFile &f : files)
    if (f.path == "-")
      if (Status s = writeStdout(f.contents); !s)
        return s;
  return flushStdout();
}

Status writeOutput(const std::string &path, const std::string &contents) {
  if (path == "-")
    return writeStdout(contents);
  return writeFileAtomic(path, contents);
}

namespace {

Status stdoutError(int err) {
  return Error(std::string("cannot write to standard output") +
               (err != 0 ? std::string(": ") + std::strerror(err) : ""));
}

/// Flushes stdout; `err` is the errno of a write that failed before, if
/// any, for the message when the flush itself does not say why.
Status flushStdout(int err) {
  // std::cout writes through C stdio (synced by default), so one flush of
  // each covers both; a write that failed earlier leaves its error flag.
  errno = 0;
  std::cout.flush();
  bool failed = !std::cout;
  if (failed && errno != 0)
    err = errno;
  errno = 0;
  if (std::fflush(stdout) != 0) {
    failed = true;
    if (errno != 0)
      err = errno;
  }
  if (failed || std::ferror(stdout) != 0)
    return stdoutError(err);
  return Status::success();
}

} // namespace

Status writeStdout(const std::string &contents) {
  errno = 0;
  std::cout << contents;
  // A large write goes straight to the file and fails here, with errno.
  int err = !std::cout ? errno : 0;
  return flushStdout(err);
}

Status flushStdout() { return flushStdout(0); }

} // namespace ccsynth::cli
