//===- KernelKnobs.h - Threads and loads in flight of generated kernels ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// How a generated CUDA kernel moves data: threads per block and 16-byte
// loads each thread keeps in flight in its copy and reduce loops, per SM
// architecture. They are generation parameters (the generated source lists
// one entry per architecture, the runtime launches the entry of the code
// the device loaded); the step model charges a threadblock that keeps
// fewer bytes in flight than StepModel::tbInFlightBytes proportionally
// less throughput, and the tuned compile picks the fastest choice.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Topology/Topology.h"

#include <string>
#include <vector>

namespace ccsynth::codegen {

struct KernelKnob {
  int arch = 0;    ///< SM architecture, e.g. 90
  int threads = 0; ///< a multiple of 32 up to 1024
  int loads = 0;   ///< 1, 2, 4, 8 or 16

  bool operator==(const KernelKnob &) const = default;
};

/// Whether the runtime builds this choice (the rule of Generated.h's
/// validKnobs): threads a multiple of 32 up to 1024, loads a power of two
/// up to 16.
bool validKernelKnob(const KernelKnob &k);

/// The index in `table` of the entry that code for `arch` runs with: the
/// one with the largest architecture at most `arch` (the rule of
/// Generated.h's knobsFor); -1 when every entry is above it.
int kernelKnobEntry(const std::vector<KernelKnob> &table, int arch);

/// The choices the generated kernels compile to without spilling on
/// `arch` (every (rank, threadblock) is straight-line code that keeps
/// about 235 registers live, so one block per SM of 256 threads; 512
/// threads would leave 128 registers and spill): 256 threads with 2, 4 or
/// 8 loads in flight. The CUDA compile tests check the default.
std::vector<KernelKnob> kernelKnobCandidates(int arch);

/// The choice written without a model to choose by: 256 threads with 8
/// loads in flight, as NCCL's copy loops unroll from sm_80 on
/// (ncclCollUnroll): 32 KiB in flight, past what the model needs.
KernelKnob defaultKernelKnob(int arch);

/// The table generated code carries when it is given none: the default
/// choice for sm_80 and for sm_90 (which later architectures run).
std::vector<KernelKnob> defaultKernelKnobs();

/// The fraction of the step model's per-threadblock throughput a kernel
/// with these knobs reaches: bytes in flight over tbInFlightBytes, at most
/// 1.
double kernelKnobScale(const KernelKnob &k, const StepModel &model);

/// "sm_90: 256 threads x 8 loads".
std::string describeKernelKnob(const KernelKnob &k);

} // namespace ccsynth::codegen
