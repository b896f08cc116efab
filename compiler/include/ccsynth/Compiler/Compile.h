//===- Compile.h - One call from a schedule (or .mlir) to MSCCL/MSCCL++ ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The compiler's entry point for the CLI and for tests: imports a schedule
// into the ccl dialect (or parses a .mlir file), runs the default pipeline
// and exports. The interface is plain C++ so that callers need neither
// MLIR's headers nor its compile flags.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Compiler/LoweringConfig.h"
#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Target/CodeGen.h"
#include "ccsynth/Target/KernelKnobs.h"
#include "ccsynth/Target/MSCCLPPPacking.h"

#include <optional>
#include <string>

namespace ccsynth {

enum class CompileTarget { Mlir, MscclXml, MscclppJson, Cuda };

/// "mlir", "msccl-xml", "mscclpp-json" or "cuda" (generated code, which
/// the host C++ compiler builds too).
std::optional<CompileTarget> parseCompileTarget(const std::string &name);

/// Everything a compile takes: the lowering's tunable knobs (the
/// LoweringConfig base: instances, protocol, fusion, local threadblocks,
/// pipeline parts, split phases, switch lanes), and the checks, target
/// limits and output metadata around them.
struct CompileOptions : LoweringConfig {
  CompileTarget target = CompileTarget::MscclXml;
  /// Re-prove the algorithm in the pipeline.
  bool verify = true;
  /// Also check every transfer against the links of the topology its
  /// algorithm names (`topology` attribute), as `ccsynth verify` does.
  bool checkLinks = false;
  /// When the program does not fit the target's limits as scheduled, join
  /// transfers that move together (ccl-coalesce-transfers) and try again.
  bool coalesce = true;
  /// Largest chunk count per step (MSCCL: cnt < 72).
  int maxCount = 71;
  /// Most steps per threadblock. 0 = the target's default: 64 (MSCCL's
  /// limit) for XML and MLIR; for MSCCL++ the largest of 16, 8, 4, 2, 1
  /// whose plan fits the executor's 64 operations per threadblock.
  int maxTbSteps = 0;
  int maxTbsPerChannel = 32;
  /// Most channels. 0 = the target's default: 32 (NCCL's MAXCHANNELS) for
  /// XML and MLIR, 64 for MSCCL++ (whose memory channels are not NCCL's).
  int maxChannels = 0;
  /// After writing MSCCL XML, read it back with the runtime-faithful
  /// reader, check the runtime's rules and that it cannot deadlock on
  /// MSCCL's bounded connection buffers, run it symbolically into a
  /// schedule and prove that schedule with the core verifier; fail
  /// otherwise.
  bool checkRoundTrip = false;
  /// Assign and check MSCCL XML for MSCCL's bounded connection buffers
  /// (NCCL_STEPS slots per connection). Off only to study what the
  /// unbounded model would produce; MSCCL++ plans never need it.
  bool boundedBuffers = true;
  /// MSCCL XML of a custom collective: the MSCCL `coll` (NCCL call) that
  /// launches it.
  std::string mscclColl;
  /// MSCCL++ plans: most threadblocks per rank; ranks with more get their
  /// threadblocks merged (MSCCLPPPacking.h). -1: from the GPU of the
  /// algorithm's topology (its SM count, one 1024-thread block per SM;
  /// no limit for machines of unknown GPU), 0: no limit.
  int maxThreadblocksPerRank = -1;
  long long minBytes = -1;
  long long maxBytes = -1;
  /// Generated code: byte ranges it serves besides minBytes..maxBytes
  /// (ascending, disjoint, above it; 0 as the upper bound: unbounded), each
  /// its own descriptor of a plugin, with its own tile where it names one
  /// (0: tileBytes).
  std::vector<codegen::ByteRange> moreByteRanges;
  std::string name;
  /// Generated code: bytes per chunk slice per pass.
  unsigned long long tileBytes = 1 << 20;
  /// Generated code: where the program came from (header comment).
  std::string origin;
  /// Generated code: symmetric ranks share one function.
  bool shareRanks = true;
  /// Generated code: CUDA kernel knobs per SM architecture (empty: the
  /// defaults for sm_80 and sm_90).
  std::vector<codegen::KernelKnob> kernelKnobs;
  /// Generated code and MSCCL XML: only the step program the source or the
  /// XML would come from (CompileResult::program), no text (the output is
  /// empty): for timing.
  bool programOnly = false;
  /// MLIR's verifier after every pass. Off only where the program is timed
  /// and never written (the tuner's lowerings: what it writes is compiled
  /// again with it on).
  bool verifyPasses = true;
};

/// Threadblocks of 1024 threads that the GPU of a built-in topology
/// (dgx1/ndv2/dgx2: V100, 80 SMs; dgx-a100/ndv4: A100, 108; dgx-h100/ndv5:
/// H100 SXM, 132; dgx-b200: B200, 148) keeps resident at once, with what
/// that is; 0 when the GPU is unknown (gb200-nvl72 among them).
int residentThreadblocks(const std::string &topology, std::string *reason);

/// Why a compilation failed.
struct CompileFailure {
  Error error;
  /// The schedule does not implement its collective (ccsynth's exit
  /// code 3), as opposed to bad input or a runtime limit.
  bool verificationFailed = false;
};

/// An MSCCL++ plan whose ranks had more threadblocks than the budget:
/// what was merged, so that callers can show what merging costs.
struct ThreadblockPacking {
  int budget = 0;
  /// What the budget is ("108 SMs of an A100 ...").
  std::string reason;
  /// The topology the program names (empty when none).
  std::string topology;
  /// The lowered program in MSCCL's model (one threadblock per connection
  /// and direction), before merging.
  msccl::Algo program;
  /// Which of its threadblocks each plan threadblock runs.
  msccl::Packing packing;
};

/// The compiled output (MLIR text, MSCCL XML or MSCCL++ JSON), or the
/// first diagnostic with the others as notes.
struct CompileResult {
  std::optional<std::string> output;
  CompileFailure failure;
  /// MSCCL++ plans whose threadblocks were merged to fit the budget.
  std::optional<ThreadblockPacking> packing;
  /// The program fits only with transfers joined by
  /// ccl-coalesce-transfers; `uncoalesced` is the first line of the error
  /// without it.
  bool coalesced = false;
  std::string uncoalesced;
  /// Generated code (CompileTarget::Cuda): the step program the source was
  /// generated from, switch threadblocks included (what the step model
  /// times as generated code). MSCCL XML with programOnly: the program the
  /// XML would hold.
  std::optional<msccl::Algo> program;
  bool ok() const { return output.has_value(); }
};

/// Success when `target` can take `schedule`'s switch transfers (it has
/// none, generated code lowers them, or an MSCCL++ plan runs them on
/// switch channels: SwitchLowering.h); otherwise the error, at the first
/// one that does not lower, that says why.
Status refuseSwitchTransfers(const Schedule &schedule, CompileTarget target);

/// Compiles a chunk-level schedule (transfer locations, when present, are
/// used in diagnostics); one with switch transfers compiles only to
/// generated code (refuseSwitchTransfers).
CompileResult compileSchedule(const Schedule &schedule,
                              const CompileOptions &options);

/// Compiles the text of a .mlir file holding a ccl.algorithm (the whole
/// pipeline runs) or a ccl.program (the remaining passes and checks run).
CompileResult compileMlir(const std::string &file, const std::string &text,
                          const CompileOptions &options);
/// As above, for a text the caller gives up: it is freed once parsed (the
/// module's locations name the file, not the text), so that a large file is
/// not held beside its module and its output.
CompileResult compileMlir(const std::string &file, std::string &&text,
                          const CompileOptions &options);

} // namespace ccsynth
