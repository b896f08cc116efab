//===- Collective.h - Collectives as pre/postconditions over chunks -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
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
// Storage scales with slots, not values: the conditions are flat arrays
// shared (immutable) by every copy of a collective, one int per slot. An
// output chunk's entry is -1 (unconstrained), the value it copies, or a set
// of a pool of distinct sets that reductions share: AllReduce on n ranks
// with chunk factor c keeps 2nc slot entries and c sets of n values rather
// than n^2 c values (1,024 ranks with c = 1,024: 8 MB, not 4 GB).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
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

/// The set of input values one output chunk must hold: a read-only view
/// into its collective's shared conditions (valid while a copy of that
/// collective lives). Unconstrained chunks give an empty view that is not
/// constrained().
class PostSet {
public:
  PostSet() = default;

  /// False when the collective does not constrain this output chunk.
  bool constrained() const { return setId != kUnconstrained; }
  explicit operator bool() const { return constrained(); }
  /// Values, sorted ascending, each once.
  const int *begin() const { return first; }
  const int *end() const { return first + count; }
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  int front() const { return *first; }
  int operator[](size_t i) const { return first[i]; }
  std::span<const int> values() const { return {first, count}; }
  std::vector<int> toVector() const { return {begin(), end()}; }
  /// One value: the chunk is a copy of it.
  bool isCopy() const { return count == 1; }
  /// Identifies the set within its collective: two chunks of one collective
  /// must hold the same values exactly when their ids are equal. -1 when
  /// unconstrained; the value itself for a copy; <= -2 for a set of the
  /// collective's pool (postSet(-2 - id)).
  int id() const { return setId; }

  static constexpr int kUnconstrained = -1;

private:
  friend class Collective;
  PostSet(const int *first, size_t count, int setId)
      : first(first), count(count), setId(setId) {}
  const int *first = nullptr;
  size_t count = 0;
  int setId = kUnconstrained;
};

/// A collective's conditions, flat and immutable (shared by every copy of
/// the collective). Built by ConditionsBuilder.
struct CollectiveConditions {
  int numRanks = 0, inputChunks = 0, outputChunks = 0;
  /// pre[r * inputChunks + i]: value id or -1.
  std::vector<int> pre;
  /// post[r * outputChunks + i]: -1 (unconstrained), a value id (a copy of
  /// it), or -2 - s for set s of the pool.
  std::vector<int> post;
  /// The pool of distinct sets other than single values: set s is
  /// setValues[setBegin[s] .. setBegin[s + 1]), sorted.
  std::vector<size_t> setBegin{0};
  std::vector<int> setValues;
  /// Per value id: where it starts (r * inputChunks + i; SIZE_MAX when no
  /// input chunk holds it).
  std::vector<size_t> origin;
  bool reduction = false;
};

/// Collects pre- and postconditions slot by slot and interns equal value
/// sets once (a hash of the sorted values finds earlier equal sets), so that
/// e.g. an AllReduce's n ranks share each chunk's set of n values.
class ConditionsBuilder {
public:
  ConditionsBuilder(int ranks, int inputChunks, int outputChunks);
  void setPre(int rank, int index, int value) {
    c.pre[(size_t)rank * c.inputChunks + index] = value;
  }
  /// The id (see PostSet::id) of the set of `values` (sorted here; must
  /// hold no duplicates), adding it to the pool when new.
  int intern(std::vector<int> values);
  /// Sets an output chunk's condition to an id returned by intern() (or -1).
  void setPostId(int rank, int index, int id) {
    c.post[(size_t)rank * c.outputChunks + index] = id;
  }
  void setPost(int rank, int index, std::vector<int> values) {
    setPostId(rank, index, intern(std::move(values)));
  }
  /// Finishes the conditions: value origins, numbering checked by callers.
  std::shared_ptr<const CollectiveConditions> finish();

private:
  CollectiveConditions c;
  /// Hash of a pooled set's values -> its index, chained through `next`.
  std::unordered_map<uint64_t, int> byHash;
  std::vector<int> next;
};

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

  /// The symbolic value id in input chunk i of rank r, or -1 when the slot
  /// starts undefined. Value ids are dense from 0.
  int preAt(int r, int i) const {
    return cond->pre[(size_t)r * cond->inputChunks + i];
  }
  /// Rank r's input value ids, one per input chunk.
  std::span<const int> preOf(int r) const {
    return {cond->pre.data() + (size_t)r * cond->inputChunks,
            (size_t)cond->inputChunks};
  }
  /// The set of value ids output chunk i of rank r must hold (not
  /// constrained() when any content will do).
  PostSet postAt(int r, int i) const {
    size_t slot = (size_t)r * cond->outputChunks + i;
    int id = cond->post[slot];
    if (id >= 0)
      return PostSet(&cond->post[slot], 1, id);
    if (id == PostSet::kUnconstrained)
      return PostSet();
    return postSet(-2 - id);
  }
  /// PostSet::id of output chunk i of rank r, without building the view.
  int postId(int r, int i) const {
    return cond->post[(size_t)r * cond->outputChunks + i];
  }
  /// The pool of distinct multi-value (or empty) sets that postconditions
  /// name: AllReduce with chunk factor c holds c sets of n values, however
  /// many ranks want them.
  int numPostSets() const { return (int)cond->setBegin.size() - 1; }
  PostSet postSet(int s) const {
    size_t b = cond->setBegin[s], e = cond->setBegin[s + 1];
    return PostSet(cond->setValues.data() + b, e - b, -2 - s);
  }
  /// Whether the conditions cover numRanks x inputChunks / outputChunks
  /// (false for a default-constructed collective).
  bool hasConditions() const {
    return cond && cond->numRanks == numRanks &&
           cond->inputChunks == inputChunks &&
           cond->outputChunks == outputChunks;
  }
  /// Whether `other` shares these conditions (copies of one collective do).
  bool sharesConditions(const Collective &other) const {
    return cond == other.cond;
  }

  /// Builds a built-in collective.
  static Expected<Collective> builtin(CollectiveKind kind, int ranks,
                                      int chunkFactor, bool inPlace = false,
                                      int root = 0);

  /// Builds a custom collective from explicit conditions (checked): pre[r][i]
  /// as for preAt, post[r][i] the values of output chunk i of rank r (any
  /// order) or nullopt.
  static Expected<Collective>
  custom(std::string name, int ranks, int inputChunks, int outputChunks,
         const std::vector<std::vector<int>> &pre,
         const std::vector<std::vector<std::optional<std::vector<int>>>> &post,
         bool inPlace = false);

  /// True when some output chunk needs more than one value (a reduction).
  bool isReduction() const { return cond && cond->reduction; }
  /// Number of distinct input values.
  int numValues() const { return cond ? (int)cond->origin.size() : 0; }
  /// The (rank, input index) where value id `v` starts.
  ChunkLoc valueOrigin(int v) const;

  /// Maps a slot to the slot it aliases under in-place semantics (e.g. an
  /// in-place allgather's input chunk k of rank r is output chunk r*c+k);
  /// identity when not aliased.
  ChunkLoc canonical(ChunkLoc loc) const;
  /// The input chunk of `loc.rank` whose canonical slot is `loc` (a
  /// canonical slot), or -1 when none: canonical's inverse on inputs.
  int inputChunkAt(ChunkLoc loc) const;
  /// Number of chunks of a buffer per rank (scratch: 0, sized by schedules).
  int bufferChunks(BufferKind b) const;
  /// The larger of the input and output chunk counts: a buffer of S bytes
  /// (nccl-tests' size) is cut into S / sizeDivisor() byte chunks.
  int sizeDivisor() const;
  /// nccl-tests' busbw factor (AllReduce 2(n-1)/n, AG/RS/A2A (n-1)/n, ...).
  double busBwFactor() const;

  /// "allreduce(ranks=16, chunks=16, inplace)".
  std::string describe() const;

private:
  /// Shared by copies: copying a collective costs O(1), however large its
  /// conditions.
  std::shared_ptr<const CollectiveConditions> cond;
};

/// Formats value id `v` of `c` as "in[r][i]".
std::string valueName(const Collective &c, int v);

} // namespace ccsynth
