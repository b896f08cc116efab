//===- MSCCLDir.h - MSCCL algorithm directories (MSCCL_ALGO_DIR) ----------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// msccl-executor-nccl loads its algorithms from one directory
// (MSCCL_ALGO_DIR): at communicator setup it reads every regular file and
// symbolic link in it, whatever the name, in sorted path order, as an
// algorithm XML, and for each collective call runs the first algorithm
// whose ngpus, coll, placement, count divisibility and
// [minBytes, maxBytes] match. ccsynth writes such a directory as
//
//   DIR/README.md             what each file serves and how to use it
//   DIR/msccl-algorithms/     the directory to name in MSCCL_ALGO_DIR
//     00-<name>-<proto>.xml   one file per size range and protocol
//
// The README sits one level up because MSCCL would read it as an algorithm
// too. This header holds the layout, the overlap rule and the reader that
// `ccsynth plugin info` uses. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Target/MSCCLProgram.h"

#include <string>
#include <vector>

namespace ccsynth::msccl {

/// The subdirectory of an msccl-dir output that MSCCL_ALGO_DIR names; also
/// the name MSCCL looks for beside libnccl.so when MSCCL_ALGO_DIR is unset.
inline constexpr const char *kAlgoSubdir = "msccl-algorithms";
/// The first line of the README ccsynth writes; an existing directory
/// whose README starts with it may be replaced.
inline constexpr const char *kDirReadmeTitle =
    "# MSCCL algorithm directory written by ccsynth";
/// MSCCL_MAX_NUM_ALGOS: the most algorithms the runtime holds.
inline constexpr int kMaxAlgos = 1024;

/// One algorithm of a directory: its file name (inside the algorithm
/// directory), where it came from, and its parsed form.
struct DirEntry {
  std::string file;
  std::string source;
  Algo algo;
  std::string text;
};

/// "00-ring_allreduce-LL.xml": the index keeps MSCCL's sorted load order
/// equal to `index` order; the name is reduced to [A-Za-z0-9_.-].
std::string dirFileName(int index, const Algo &algo);

/// The byte range an algorithm serves, as the README and `plugin info`
/// print it ("0 B .. 64 KiB - 1", "4 MiB .. unbounded").
std::string sizeRange(const Algo &algo);

/// Whether MSCCL could select both algorithms for one call: same ngpus and
/// coll, a placement both accept, and byte ranges that meet (maxBytes 0
/// is unbounded, both ends inclusive).
bool selectionOverlaps(const Algo &a, const Algo &b);

/// Fails, naming both files and the shared sizes, when two entries could
/// serve one call (MSCCL would always run the first in sorted order).
Status checkNoOverlap(const std::vector<DirEntry> &entries);

/// The README of an msccl-dir output: how to point MSCCL at it and which
/// calls each file serves.
std::string dirReadme(const std::vector<DirEntry> &entries);

/// The result of reading a directory the way MSCCL does.
struct AlgoDir {
  /// The directory MSCCL_ALGO_DIR would name (DIR/msccl-algorithms for an
  /// msccl-dir output, else DIR itself).
  std::string algoDir;
  /// Every regular file and symbolic link, in MSCCL's load order.
  std::vector<DirEntry> entries;
};

/// Reads `path` (an msccl-dir output or any MSCCL_ALGO_DIR) as MSCCL
/// does: every regular file or symbolic link, sorted by path, parsed as
/// algorithm XML and checked against the runtime's rules. Fails at the
/// first file MSCCL could not load or run (file:line:col), on a directory
/// without algorithms, or with more than MSCCL_MAX_NUM_ALGOS files.
Expected<AlgoDir> readAlgoDir(const std::string &path);

} // namespace ccsynth::msccl
