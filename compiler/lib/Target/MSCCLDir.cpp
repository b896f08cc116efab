//===- MSCCLDir.cpp - MSCCL algorithm directories (MSCCL_ALGO_DIR) --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Target/MSCCLDir.h"

#include "ccsynth/Target/MSCCLXml.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sys/stat.h>

namespace fs = std::filesystem;

namespace ccsynth::msccl {

namespace {

/// "64 KiB - 1" for 65535: ranges split at a boundary end one byte below it.
std::string upperBytes(long long b) {
  if ((b + 1) % 1024 == 0 && b + 1 >= 1024)
    return exactByteCount(b + 1) + " - 1";
  return exactByteCount(b);
}

const char *placement(const Algo &a) {
  return a.inplace && a.outofplace ? "in-place and out-of-place"
         : a.inplace               ? "in-place"
                                   : "out-of-place";
}

} // namespace

std::string dirFileName(int index, const Algo &algo) {
  std::string name;
  for (char c : algo.name)
    name += std::isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-'
                ? c
                : '_';
  if (name.empty())
    name = "algo";
  std::string idx = std::to_string(index);
  if (idx.size() < 2)
    idx = "0" + idx;
  return idx + "-" + name + "-" + algo.proto + ".xml";
}

std::string sizeRange(const Algo &algo) {
  return exactByteCount(algo.minBytes) + " .. " +
         (algo.maxBytes > 0 ? upperBytes(algo.maxBytes) : "unbounded");
}

bool selectionOverlaps(const Algo &a, const Algo &b) {
  if (a.ngpus != b.ngpus || a.coll != b.coll)
    return false;
  if (!((a.inplace && b.inplace) || (a.outofplace && b.outofplace)))
    return false;
  auto hi = [](const Algo &x) {
    return x.maxBytes > 0 ? x.maxBytes : std::numeric_limits<int64_t>::max();
  };
  return a.minBytes <= hi(b) && b.minBytes <= hi(a);
}

Status checkNoOverlap(const std::vector<DirEntry> &entries) {
  for (size_t i = 0; i < entries.size(); ++i)
    for (size_t j = i + 1; j < entries.size(); ++j) {
      const Algo &a = entries[i].algo, &b = entries[j].algo;
      if (!selectionOverlaps(a, b))
        continue;
      Algo shared = a;
      shared.minBytes = std::max(a.minBytes, b.minBytes);
      shared.maxBytes = a.maxBytes == 0   ? b.maxBytes
                        : b.maxBytes == 0 ? a.maxBytes
                                          : std::min(a.maxBytes, b.maxBytes);
      return Error(entries[i].file + " (from " + entries[i].source + ", " +
                   sizeRange(a) + ") and " + entries[j].file + " (from " +
                   entries[j].source + ", " + sizeRange(b) + ") both serve " +
                   a.coll + " on " + std::to_string(a.ngpus) +
                   " ranks for sizes " + sizeRange(shared) +
                   ": MSCCL would always run the first; give them disjoint "
                   "size ranges (--split)");
    }
  return Status::success();
}

std::string dirReadme(const std::vector<DirEntry> &entries) {
  std::string s = std::string(kDirReadmeTitle) + "\n\n";
  s += "`" + std::string(kAlgoSubdir) + "/` holds " +
       std::to_string(entries.size()) + " algorithm" +
       (entries.size() == 1 ? "" : "s") +
       " for msccl-executor-nccl (MSCCL's NCCL). Point MSCCL at that "
       "subdirectory, not at this one:\n\n"
       "```sh\n"
       "export MSCCL_ALGO_DIR=\"$PWD/" +
       kAlgoSubdir +
       "\"   # run from this directory, or give the absolute path\n"
       "export NCCL_MSCCL_ENABLE=1   # the default; 0 turns MSCCL off\n"
       "mpirun -np N -x MSCCL_ALGO_DIR -x NCCL_MSCCL_ENABLE ./app   # one "
       "process per GPU\n"
       "```\n\n"
       "How MSCCL reads it (msccl-executor-nccl, src/misc/msccl/):\n\n"
       "- At communicator setup it reads every regular file and symbolic link "
       "in MSCCL_ALGO_DIR, whatever its name, as an algorithm XML; a file "
       "that is not one is an error. This README is kept one level up for "
       "that reason: add nothing else to `" +
       kAlgoSubdir +
       "/`.\n"
       "- Without MSCCL_ALGO_DIR it looks for `msccl-algorithms/` beside "
       "libnccl.so, then `../share/nccl/msccl-algorithms/` from there, then "
       "`/usr/share/nccl/msccl-algorithms/`: copying `" +
       kAlgoSubdir +
       "/` to one of those places works too.\n"
       "- MSCCL runs only with one GPU per process; with several GPUs in a "
       "process, or when a scheduler library (MSCCL_SCHEDULER, default "
       "libmsccl-scheduler.so) is found and takes over selection, these "
       "files are not used as described below.\n"
       "- NCCL_ALGO does not select MSCCL: a call that matches an algorithm "
       "here runs it; every other call runs NCCL's own algorithms, "
       "silently. NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT shows which "
       "directory was read.\n"
       "- For each call it takes the first file, in sorted order, whose "
       "ngpus, collective and placement (in-place or not) match, whose "
       "byte range holds the call's size (count x sizeMultiplier x element "
       "size, both ends inclusive; maxBytes 0 is unbounded), and whose "
       "nchunksperloop divides count x sizeMultiplier. ccsynth refuses to "
       "write files whose ranges overlap, so the order never decides.\n"
       "- ReduceScatter, AllGather and AllToAll count per rank: their "
       "sizeMultiplier is the rank count; it is 1 for the others. "
       "Average (ncclAvg) and other pre/post-scaled reductions always run "
       "NCCL.\n\n";
  s += "| file | algorithm | collective | ranks | placement | protocol | "
       "sizes (bytes) | nchunksperloop | channels | threadblocks per rank | "
       "source |\n"
       "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
       "|\n";
  for (const DirEntry &e : entries) {
    const Algo &a = e.algo;
    s += "| `" + e.file + "` | " + a.name + " | " + a.coll + " | " +
         std::to_string(a.ngpus) + " | " + placement(a) + " | " + a.proto +
         " | " + sizeRange(a) + " | " + std::to_string(a.nchunksperloop) +
         " | " + std::to_string(a.nchannels) + " | " +
         std::to_string(a.threadblocksPerRank()) + " | " + e.source + " |\n";
  }
  s += "\n";
  for (const DirEntry &e : entries) {
    SelectionReport r = describeSelection(e.algo);
    s += "- `" + e.file + "`: " + r.served + ".";
    if (!r.warning.empty())
      s += " Warning: " + r.warning + ".";
    s += "\n";
  }
  return s;
}

Expected<AlgoDir> readAlgoDir(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Error("'" + path + "' is not a directory");
  AlgoDir dir;
  dir.algoDir = path;
  std::string sub = path + "/" + kAlgoSubdir;
  if (::stat(sub.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    dir.algoDir = sub;
  // As MSCCL: regular files and symbolic links, sorted by full path.
  std::set<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir.algoDir, ec), end; !ec && it != end;
       it.increment(ec)) {
    fs::file_status s = it->symlink_status(ec);
    if (ec)
      break;
    if (fs::is_regular_file(s) || fs::is_symlink(s))
      files.insert(it->path().string());
  }
  if (ec)
    return Error("cannot read the directory '" + dir.algoDir +
                 "': " + ec.message());
  if (files.empty())
    return Error("'" + dir.algoDir + "' holds no algorithm files");
  if ((int)files.size() > kMaxAlgos)
    return Error("'" + dir.algoDir + "' holds " + std::to_string(files.size()) +
                 " files; MSCCL holds at most " + std::to_string(kMaxAlgos) +
                 " algorithms");
  for (const std::string &f : files) {
    auto text = readFile(f);
    if (!text)
      return Error(text.error().message +
                       " (MSCCL reads every file in MSCCL_ALGO_DIR as an "
                       "algorithm)",
                   {f});
    auto algo = parseXml(f, *text);
    if (!algo)
      return Error(algo.error().message +
                       " (MSCCL reads every file in MSCCL_ALGO_DIR as an "
                       "algorithm)",
                   algo.error().loc);
    std::vector<ProgramIssue> issues = validateAlgo(*algo);
    if (!issues.empty())
      return Error(issues.front().message, issues.front().loc.known()
                                               ? issues.front().loc
                                               : SourceLoc{f});
    DirEntry e;
    e.file = fs::path(f).filename().string();
    e.source = f;
    e.algo = algo.take();
    e.text = text.take();
    dir.entries.push_back(std::move(e));
  }
  return dir;
}

} // namespace ccsynth::msccl
