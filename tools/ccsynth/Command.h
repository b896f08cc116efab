//===- Command.h - Shared pieces of the ccsynth subcommands ---------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Each subcommand lives in its own <Name>Command.cpp and exposes
// `void add<Name>Command(CLI::App &app, CommandContext &ctx)`; main.cpp
// registers them all. A subcommand's callback stores its exit code in the
// context instead of throwing.
//
// Exit codes: 0 success, 1 bad input or failure (an output, stdout
// included, that could not be written), 2 usage error (CLI11, a bad option
// value, an output that would replace an input), 3 the schedule does not
// implement its collective (or `run` computed a wrong result), 4 infeasible
// sketch, 5 `run --backend cuda` found no CUDA runtime or device.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"
#include "ccsynth/Schedule/Verifier.h"

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ccsynth::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,
  kExitUsage = 2,
  kExitVerifyFailed = 3,
  kExitInfeasible = 4,
  kExitNoDevice = 5,
};

struct CommandContext {
  int exitCode = kExitOk;
};

/// Prints `error` to stderr as `file:line:col: error: ...` and returns
/// kExitError (or `code`).
int fail(const Error &error, int code = kExitError);

/// Prints `error` (a bad option value) like fail() and returns kExitUsage.
int usage(const Error &error);

/// Parses "1K,4M,1G" / "1024,65536" into byte counts (K/M/G are powers of
/// 1024, as in nccl-tests), each below 2^63. The error names the bad item.
Expected<std::vector<double>> parseSizes(const std::string &list);

/// One byte count of a flag ("0", "4096", "1K", "64M").
Expected<long long> parseByteCount(const std::string &flag,
                                   const std::string &value);

/// The value of --tile-bytes: a positive multiple of 16 bytes.
Expected<long long> parseTileBytes(const std::string &value);

/// Parses `-D name=value` definitions (integer values).
Expected<std::map<std::string, long long>>
parseDefines(const std::vector<std::string> &defines);

/// Loads a schedule from a schedule JSON file or a .ccl program (compiled
/// with the given -D definitions; its transfers remember their statement's
/// location in Schedule::transferLocs). Not yet verified.
Expected<Schedule>
loadScheduleInput(const std::string &path,
                  const std::map<std::string, long long> &defines);

/// Location of transfer `index` of a schedule loaded from `path`, for
/// diagnostics (empty when unknown).
SourceLoc transferLocation(const Schedule &schedule, const std::string &path,
                           int index);

/// Where to report a verifier issue: its transfer's location, or for an
/// end-state issue (wrong or missing output) the last transfer that wrote
/// the slot; the bare file when nothing better is known.
SourceLoc issueLocation(const Schedule &schedule, const std::string &path,
                        const VerifyIssue &issue);

/// The source line of `loc` with a caret under its column (read from
/// loc.file), or empty when the file or line is unavailable.
std::string caretFor(const SourceLoc &loc);

/// `--topo-profile FILE` (a TACCL topology profile applied to a built-in
/// shape) and the units of its figures.
struct TopoProfileArgs {
  std::string file;
  double sizeMB = 1;
  double scale = 1;
};
/// Adds --topo-profile, --topo-profile-mb and --topo-profile-scale.
void addTopoProfileOptions(CLI::App *cmd, TopoProfileArgs &args);
/// Prints located warnings as `ccsynth: file:line:col: warning: ...`, each
/// once per run.
void printWarnings(const std::vector<Error> &warnings);
/// loadTopology (printing an NCCL dump's import warnings), then the profile
/// when one is given (built-in shapes only).
Expected<Topology> loadTopologyArg(const std::string &nameOrPath,
                                   const TopoProfileArgs &profile);

/// Resolves the topology for a schedule: `explicitTopo` when given, else the
/// schedule's own topology field (scheduleTopologyPath), which must still
/// have the content hash the schedule recorded. Fails when neither
/// resolves, or on a mismatch. A profile, when given, is applied to the
/// topology found.
Expected<Topology> topologyFor(const Schedule &schedule,
                               const std::string &explicitTopo,
                               const TopoProfileArgs *profile = nullptr);

/// Records in `schedule` the topology it was made for: the name the user
/// gave, or the file (relative to the directory of `outputPath`, where the
/// schedule is written, when it lies under it: later commands find it
/// there; else its absolute path, which they refuse to open without
/// --topo), and its content hash (so that they notice when it changed).
void recordTopology(Schedule &schedule, const std::string &nameOrPath,
                    const Topology &topo, const std::string &outputPath = "");
/// The same with the topology's hash computed already.
void recordTopology(Schedule &schedule, const std::string &nameOrPath,
                    std::string hash, const std::string &outputPath = "");

/// The topology `schedule` names as a command opens it: a built-in name, or
/// a file path under the schedule's directory (Schedule::topologyDir)
/// joined to it; an error for an absolute path or one that leaves the
/// directory (a schedule is not to make ccsynth read other files).
Expected<std::string> scheduleTopologyPath(const Schedule &schedule);
/// The same for a topology `name` that a file in directory `dir` holds
/// (a schedule, or a ccl.program's `topology` attribute).
Expected<std::string> namedTopologyPath(const std::string &name,
                                        const std::string &dir);

/// Proves a loaded schedule as `ccsynth verify` does: against its topology
/// (`explicitTopo`, else the one the schedule names, if any) unless
/// `noTopo`. Prints every issue located in `path` and returns
/// kExitVerifyFailed, or kExitError when the topology cannot be resolved,
/// or kExitOk with the result in `out` (and the topology in `topo`).
int proveSchedule(const Schedule &schedule, const std::string &path,
                  const std::string &explicitTopo, bool noTopo,
                  std::optional<Topology> &topo, VerifyResult &out,
                  const TopoProfileArgs *profile = nullptr);

/// Writes `contents` to `path` ("-" = stdout) without leaving a partial file.
/// Writing to stdout fails when the bytes cannot be written (a full disk, an
/// I/O error): the error says so.
Status writeOutput(const std::string &path, const std::string &contents);

/// Prints `contents` to stdout and flushes it; an error when they could not
/// be written (see flushStdout).
Status writeStdout(const std::string &contents);

/// Flushes stdout (both std::cout and C stdio); an error when anything
/// printed so far could not be written ("cannot write to standard output:
/// No space left on device").
Status flushStdout();

/// Checks that every output path but "-" could be written, before the work
/// that produces them.
Status checkOutputs(const std::vector<std::string> &paths);

/// A file path a command was given, with what names it in messages: an
/// option ("-o", "--plot") or words with "{}" where the quoted path goes
/// ("the input {}").
struct PathArg {
  std::string name;
  std::string path;
};

/// A topology argument as a PathArg: its path when loadTopology reads it
/// as a file, else an empty path (a built-in name).
PathArg topologyPathArg(const std::string &name, const std::string &topo);

/// Refuses, before any work, an output that would replace one of the
/// command's inputs or another of its outputs, and an output directory
/// (`outputDirs`, replaced whole) that holds an input. Files are compared
/// by device and inode (fileIdentity), so links and different spellings of
/// one path are caught. "-" (stdout) and empty paths are skipped. The
/// error names both arguments; callers report it as a usage error.
Status checkOutputsApart(const std::vector<PathArg> &inputs,
                         const std::vector<PathArg> &outputs,
                         const std::vector<PathArg> &outputDirs = {});

/// Writes several outputs all or nothing ("-" = stdout, printed once every
/// file was written).
Status writeOutputs(const std::vector<OutputFile> &files);

// Subcommands.
void addTopoCommand(CLI::App &app, CommandContext &ctx);
void addBaselineCommand(CLI::App &app, CommandContext &ctx);
void addVerifyCommand(CLI::App &app, CommandContext &ctx);
void addCheckCommand(CLI::App &app, CommandContext &ctx);
void addSimulateCommand(CLI::App &app, CommandContext &ctx);
/// Only in builds with CCSYNTH_ENABLE_MLIR (CCSYNTH_HAVE_MLIR defined).
void addCompileCommand(CLI::App &app, CommandContext &ctx);
void addSynthCommand(CLI::App &app, CommandContext &ctx);
void addPluginCommand(CLI::App &app, CommandContext &ctx);
/// Only in builds with CCSYNTH_ENABLE_MLIR.
void addRunCommand(CLI::App &app, CommandContext &ctx);

} // namespace ccsynth::cli
