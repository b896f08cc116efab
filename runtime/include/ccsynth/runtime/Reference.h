//===- Reference.h - Reference collectives for checking runs --------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// What `ccsynth run` and the tests compare a run against: each collective
// computed directly from NCCL's definition (never from a schedule), over
// seeded random inputs. Integer results, max and min are exact; floating
// sums and products are checked against a double-precision reference with
// a tolerance stated by `tolerance()`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ccsynth::rt {

/// The (rank, input unit) pairs one output unit must combine, in rank
/// order; nullopt when the output unit is not constrained.
using Contributions = std::optional<std::vector<std::pair<int, int>>>;

/// A collective over units of equal size: blocks of the NCCL buffers for
/// built-in collectives, chunks for custom ones.
struct ReferenceSpec {
  int ranks = 0;
  int inUnits = 0;
  int outUnits = 0;
  bool reduces = false;
  /// out[rank][unit]
  std::vector<std::vector<Contributions>> out;
};

/// The definition of a built-in collective by NCCL's semantics, or nullopt
/// for a name it does not know.
std::optional<ReferenceSpec> builtinReference(const std::string &collective,
                                              int ranks, int root);

/// Fills `elems` elements of `dtype` for `rank` from `seed` (values suited
/// to `op`: small magnitudes for products).
void fillRandom(void *buf, std::size_t elems, int dtype, int op,
                std::uint64_t seed, int rank);

/// The absolute error allowed on one floating output element (0 for exact
/// types and for max/min): n x 2u x sum |x_j| (sum) or n x 2u x |result|
/// (product), u the unit roundoff of the type, n the contributions.
double tolerance(int dtype, int op, int contributions, double magnitude);

struct Mismatch {
  int rank = 0;
  int unit = 0;
  std::size_t element = 0; ///< index in the rank's output buffer
  std::string expected;
  std::string found;
  double allowed = 0;
};

/// Compares every constrained output element; the first mismatch, or
/// nullopt. `inputs[r]` are the inputs as they were before the run.
std::optional<Mismatch>
checkOutputs(const ReferenceSpec &spec,
             const std::vector<std::vector<unsigned char>> &inputs,
             const std::vector<const unsigned char *> &outputs,
             std::size_t unitElems, int dtype, int op);

} // namespace ccsynth::rt
