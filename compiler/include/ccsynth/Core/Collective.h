//===- Collective.h - Collectives as pre/postconditions over chunks -------===//
//
// Each rank has an input, an output and a scratch buffer, each an array of
// equally sized chunks. A collective says which symbolic value each input
// chunk holds before (precondition) and which exact set of input values each
// output chunk must hold after (postcondition: one element = a copy, several
// = their reduction, each counted once). Built-in collectives are generated
// from (kind, ranks, chunk factor, root, in-place); custom ones list their
// conditions explicitly.
//
// Chunk counts per rank, with n ranks and chunk factor c:
//   allgather      in c     out n*c   out[r][j*c+k] = in[j][k]
//   reducescatter  in n*c   out c     out[r][k]     = sum_j in[j][r*c+k]
//   allreduce      in c     out c     out[r][k]     = sum_j in[j][k]
//   broadcast      in c     out c     out[r][k]     = in[root][k]
//   reduce         in c     out c     out[root][k]  = sum_j in[j][k]
//   gather         in c     out n*c   out[root][j*c+k] = in[j][k]
//   scatter        in n*c   out c     out[r][k]     = in[root][r*c+k]
//   alltoall       in n*c   out n*c   out[r][j*c+k] = in[j][r*c+k]
// In-place variants alias input and output the way NCCL does (allgather:
// in[r] is out[r][r*c..]; reducescatter: out[r] is in[r][r*c..]; others:
// in == out).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Core/Diagnostic.h"

#include <optional>
#include <string>
#include <vector>

namespace ccsynth {

enum class CollectiveKind {
  AllGather,
  ReduceScatter,
  AllReduce,
  Broadcast,
  Reduce,
  Gather,
  Scatter,
  AllToAll,
  Custom
};

const char *toString(CollectiveKind kind);
std::optional<CollectiveKind> parseCollectiveKind(const std::string &s);
/// The names accepted by parseCollectiveKind, comma separated.
std::string collectiveKindNames();

enum class BufferKind { Input = 0, Output = 1, Scratch = 2 };
const char *toString(BufferKind b);
/// "i"/"input", "o"/"output", "s"/"scratch".
std::optional<BufferKind> parseBufferKind(const std::string &s);

/// One chunk slot: (rank, buffer, index).
struct ChunkLoc {
  int rank = 0;
  BufferKind buffer = BufferKind::Input;
  int index = 0;

  friend bool operator==(const ChunkLoc &, const ChunkLoc &) = default;
  friend auto operator<=>(const ChunkLoc &, const ChunkLoc &) = default;
};

std::string toString(const ChunkLoc &loc);

class Collective {
public:
  CollectiveKind kind = CollectiveKind::AllGather;
  /// Display name; for built-ins the kind's name.
  std::string name;
  int numRanks = 0;
  int chunkFactor = 1;
  int root = 0;
  bool inPlace = false;
  int inputChunks = 0;  ///< per rank
  int outputChunks = 0; ///< per rank

  /// pre[r][i]: the symbolic value id in input chunk i of rank r, or -1 when
  /// the slot starts undefined. Value ids are dense from 0.
  std::vector<std::vector<int>> pre;
  /// post[r][i]: the sorted set of value ids output chunk i of rank r must
  /// hold, or nullopt when it is not constrained.
  std::vector<std::vector<std::optional<std::vector<int>>>> post;

  /// Builds a built-in collective.
  static Expected<Collective> builtin(CollectiveKind kind, int ranks,
                                      int chunkFactor, bool inPlace = false,
                                      int root = 0);

  /// Builds a custom collective from explicit conditions (checked).
  static Expected<Collective>
  custom(std::string name, int ranks, int inputChunks, int outputChunks,
         std::vector<std::vector<int>> pre,
         std::vector<std::vector<std::optional<std::vector<int>>>> post,
         bool inPlace = false);

  /// True when some output chunk needs more than one value (a reduction).
  bool isReduction() const;
  /// Number of distinct input values.
  int numValues() const;
  /// The (rank, input index) where value id `v` starts.
  ChunkLoc valueOrigin(int v) const;

  /// Maps a slot to the slot it aliases under in-place semantics (e.g. an
  /// in-place allgather's input chunk k of rank r is output chunk r*c+k);
  /// identity when not aliased.
  ChunkLoc canonical(ChunkLoc loc) const;
  /// Number of chunks of a buffer per rank (scratch: 0, sized by schedules).
  int bufferChunks(BufferKind b) const;
  /// The larger of the input and output chunk counts: a buffer of S bytes
  /// (nccl-tests' size) is cut into S / sizeDivisor() byte chunks.
  int sizeDivisor() const;
  /// nccl-tests' busbw factor (AllReduce 2(n-1)/n, AG/RS/A2A (n-1)/n, ...).
  double busBwFactor() const;

  /// "allreduce(ranks=16, chunks=16, inplace)".
  std::string describe() const;
};

/// Formats value id `v` of `c` as "in[r][i]".
std::string valueName(const Collective &c, int v);

} // namespace ccsynth
