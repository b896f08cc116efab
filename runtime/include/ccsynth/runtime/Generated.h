//===- Generated.h - What generated algorithm code includes ---------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Generated code (`ccsynth compile --target cuda`) is one source compiled
// either by nvcc (the device twin of the primitives) or by the host C++
// compiler (threads as threadblocks). It only names what is declared here:
// the buffer ids, the algorithm's shape, and the primitive vocabulary of an
// execution context `X` (see docs/runtime.md for its contract):
//
//   x.connect(peer)                 wait until `peer` entered this launch
//   x.numPasses(), x.beginPass(p)   the tiling loop
//   x.isRemainder(p)                the last pass of a ragged count
//   x.put(peer, sb, sblk, spos, db, dblk, dpos, n)   write n chunk slices
//                                   into the peer's buffer
//   x.signal(peer, flag) / x.waitData(step, flag)    message arrived
//   x.credit(peer, flag) / x.waitCredit(step, flag)  landing slot free
//   x.done(step) / x.waitStep(step, tb, s)   same-rank order
//   x.endPass(p)                    end of this threadblock's pass
//   x.copy / x.reduce / x.reduce3   local data movement
//   x.stageIn(b0, b1), x.publishStaged(p), x.awaitRankDone(step), x.stageOut
//   x.switchJoin(step, ranks, k), x.switchReduce, x.multicast,
//   x.switchBarrier(step, flagBase)  a switch threadblock's group
//
// A threadblock function takes the rank: functions shared by symmetric
// ranks compute peers, offsets and flags from it; the others ignore it.
//
// Every wait returns false when it passed its deadline or the run was
// aborted elsewhere; generated code then returns at once (CCSYNTH_TRY).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

// CCSYNTH_TB_FN marks the function of one threadblock: of one rank, or
// of every rank of a symmetric group (then its integers are expressions of
// the rank, or entries of a CCSYNTH_TABLE indexed by it). On the GPU it is
// inlined into the kernel at its one call site (a direct branch tree, no
// call, no stack); on the host each stays a function of its own, so that
// the compiler's work grows with the program instead of with the square of
// one huge function. CCSYNTH_TABLE puts a table in constant memory on the
// GPU (a uniform index: one broadcast load); CCSYNTH_GLOBAL_TABLE, for the
// tables past what the constant bank holds, in global memory (read through
// the read-only cache).
#if defined(__CUDACC__)
#define CCSYNTH_HD __host__ __device__
#define CCSYNTH_INLINE __device__ __forceinline__
#define CCSYNTH_TB_FN __device__ __forceinline__
#define CCSYNTH_TABLE static __constant__ const
#define CCSYNTH_GLOBAL_TABLE static __device__ const
#else
#define CCSYNTH_HD
#define CCSYNTH_INLINE inline __attribute__((always_inline))
#define CCSYNTH_TB_FN __attribute__((noinline))
#define CCSYNTH_TABLE static const
#define CCSYNTH_GLOBAL_TABLE static const
#endif

/// Written before each step of a function shared by symmetric ranks: the
/// compiler may not move values computed from the rank across it, so each
/// step computes its few integers where it uses them instead of the tiling
/// loop holding every step's values in registers (which spills on the GPU).
/// Emits no instruction.
#define CCSYNTH_STEP_RANK(rank) asm volatile("" : "+r"(rank))

/// Returns from the generated function when a wait failed.
#define CCSYNTH_TRY(expr)                                                      \
  do {                                                                         \
    if (!(expr))                                                               \
      return false;                                                            \
  } while (0)

namespace ccsynth::rt {

/// Buffers a step names. Landing is the part of scratch where messages
/// that cannot be written straight into their destination arrive.
enum Buf : int { In = 0, Out = 1, Scr = 2, Land = 3, NumBufs = 4 };

enum class Coll : int {
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

/// The constants of one generated algorithm. A buffer of the NCCL call is
/// `blocks` blocks of `count` elements (count as NCCL defines it for the
/// collective); each block holds `blockChunks` chunks. Scratch and landing
/// hold one pass's slice per chunk.
struct Shape {
  const char *name;
  const char *collective;
  Coll coll;
  int ranks;
  int root;
  bool inplace;
  bool reduces;
  int blockChunks;   ///< chunks per block (custom: 1)
  int inBlocks;      ///< blocks of the input buffer
  int outBlocks;     ///< blocks of the output buffer
  int scratchChunks; ///< most schedule scratch chunks of a rank
  int landingChunks; ///< most landing chunks of a rank
  int dataFlags;     ///< most incoming messages of a rank
  int creditFlags;   ///< most outgoing messages into landing of a rank
  int maxTbs;        ///< most threadblocks of a rank
  int maxSteps;      ///< most steps of a threadblock
  bool usesScratch;  ///< schedule scratch: passes are separated per rank
  /// Custom collectives: count must be a multiple of the input chunks.
  int countMultiple;
  const char *irHash;
};

/// How a CUDA kernel moves data on one SM architecture: threads per block
/// and 16-byte loads each thread keeps in flight in copy and reduce loops.
/// A generated algorithm lists one entry per architecture it was generated
/// for (`kernelKnobs`, ascending `arch`); the host backend ignores them.
struct KernelKnobs {
  int arch;    ///< SM architecture, e.g. 90; the entry serves up to the next
  int threads; ///< a multiple of 32, at most 1024
  int loads;   ///< 1, 2, 4, 8 or 16
};

/// The entry of `table` for code compiled for `arch`: the last whose arch
/// is at most `arch`, the first when every entry is above it.
template <int N>
CCSYNTH_HD constexpr KernelKnobs knobsFor(const KernelKnobs (&table)[N],
                                          int arch) {
  KernelKnobs k = table[0];
  for (int i = 1; i < N; ++i)
    if (table[i].arch <= arch)
      k = table[i];
  return k;
}

/// Whether a knob entry is one the CUDA runtime builds.
CCSYNTH_HD constexpr bool validKnobs(const KernelKnobs &k) {
  return k.threads >= 32 && k.threads <= 1024 && k.threads % 32 == 0 &&
         (k.loads == 1 || k.loads == 2 || k.loads == 4 || k.loads == 8 ||
          k.loads == 16);
}

/// Flag words of one rank: data flags, credit flags, per-threadblock
/// progress, the staging flag.
CCSYNTH_HD constexpr int flagWords(const Shape &s) {
  return s.dataFlags + s.creditFlags + s.maxTbs + 1;
}

/// Progress of a threadblock after step `step` of pass p; the end of pass
/// p is progressEnd(p). Steps of a pass lie strictly between the ends.
CCSYNTH_HD constexpr std::uint64_t progressValue(const Shape &s, int p,
                                                 int step) {
  return std::uint64_t(p) * std::uint64_t(s.maxSteps + 1) +
         std::uint64_t(step) + 1;
}
CCSYNTH_HD constexpr std::uint64_t progressEnd(const Shape &s, int p) {
  return std::uint64_t(p + 1) * std::uint64_t(s.maxSteps + 1);
}

/// Flag values: the launch epoch in the high 32 bits, so flags grow across
/// launches and never need a reset.
CCSYNTH_HD constexpr std::uint64_t epochBase(std::uint64_t epoch) {
  return epoch << 32;
}

/// Whether algorithm A's switch operations read every rank's input
/// (generated code says so; hand-written algorithms have none).
template <class A> constexpr bool switchReadsInputOf() {
  if constexpr (requires { A::switchReadsInput; })
    return A::switchReadsInput;
  else
    return false;
}

/// The barrier of a switch threadblock's group, as each execution context
/// runs x.switchBarrier(step, flagBase): `rank`, a member of the ascending
/// group, signals each other member's data flag flagBase + (its index
/// among that member's others) and waits for each other member's signal on
/// flagBase + (that member's index among its own others). Every member
/// numbers the barrier's flags from the same flagBase.
template <class X>
CCSYNTH_INLINE bool switchGroupBarrier(X &x, const int *group, int size,
                                       int rank, int step, int flagBase) {
  int self = 0;
  while (self < size && group[self] != rank)
    ++self;
  for (int m = 0; m < size; ++m)
    if (m != self)
      x.signal(group[m], flagBase + self - (m < self ? 1 : 0));
  for (int m = 0; m < size; ++m)
    if (m != self && !x.waitData(step, flagBase + m - (self < m ? 1 : 0)))
      return false;
  return true;
}

} // namespace ccsynth::rt
