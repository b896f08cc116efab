//===- Decide.cpp - Which collective runs a plugin: the decision alone ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "Decide.h"

#include "ccsynth/runtime/HostTypes.h"
#include "ccsynth/runtime/PluginLoader.h"

#include <algorithm>

namespace ccsynth::interposer {

int unitsOf(const std::string &c, int n, bool in) {
  if (c == "allgather" || c == "gather")
    return in ? 1 : n;
  if (c == "reducescatter" || c == "scatter")
    return in ? n : 1;
  if (c == "alltoall")
    return n;
  return 1;
}

std::uint64_t largerBufferBytes(const CallFacts &c) {
  int es =
      c.dtype >= 0 && c.dtype < ccsynthNumTypes ? rt::dtypeSize(c.dtype) : 1;
  return c.count * std::uint64_t(es) *
         std::uint64_t(std::max(unitsOf(c.collective, c.nranks, true),
                                unitsOf(c.collective, c.nranks, false)));
}

std::string mismatch(const CallFacts &c, const AlgoFacts &a,
                     const CommFacts &comm) {
  const ccsynthAlgorithm &g = *a.desc;
  bool cuda = g.backend == ccsynthBackendCuda;
  std::uint64_t larger = largerBufferBytes(c);
  bool reduces = g.op_mask != 0;
  if (!(g.dtype_mask & (1u << c.dtype)))
    return std::string("dtype ") + rt::dtypeName(c.dtype) + " not built in (" +
           rt::dtypeMaskNames(g.dtype_mask) + ")";
  if (reduces &&
      (c.op < 0 || c.op >= ccsynthNumOps || !(g.op_mask & (1u << c.op))))
    return "op " + std::to_string(c.op) + " not built in (" +
           rt::opMaskNames(g.op_mask) + ")";
  if (c.root >= 0 && c.root != g.root)
    return "root " + std::to_string(c.root) + ", the algorithm's is " +
           std::to_string(g.root);
  if (larger < g.min_bytes || (g.max_bytes && larger > g.max_bytes))
    return std::to_string(larger) + " bytes outside its range [" +
           std::to_string(g.min_bytes) + ", " +
           (g.max_bytes ? std::to_string(g.max_bytes) : "inf") + "]";
  if (g.count_multiple > 1 && c.count % g.count_multiple != 0)
    return "count not a multiple of " + std::to_string(g.count_multiple);
  if (c.capturing && !g.capture_safe)
    return "the stream is being captured into a CUDA graph and the "
           "algorithm is not capture-safe (its flags' epoch is not kept in "
           "device memory)";
  if (!cuda) {
    if (!(g.transport_mask & ccsynthTransportHostShm))
      return "not built for the host-shm transport";
    if (!comm.hostWindowUsable)
      return "window unusable: " + comm.hostUnusable;
    if (larger > comm.hostStaging)
      return std::to_string(larger) + " bytes exceed the staging window (" +
             std::to_string(comm.hostStaging) + ", CCSYNTH_WINDOW_BYTES)";
    return "";
  }
  if (g.inplace && unitsOf(c.collective, c.nranks, true) >
                       unitsOf(c.collective, c.nranks, false))
    return "an in-place algorithm whose output is a block of its input "
           "puts at offsets that differ by rank; the device window stages "
           "outputs at one offset";
  if (!(g.transport_mask & ccsynthTransportCudaIpc))
    return "not built for the CUDA IPC transport (rebuild the plugin with "
           "this ccsynth)";
  if (g.reads_peer_inputs && !g.inplace)
    return "its switch operations read every rank's input at one address, "
           "and the device window stages outputs only (an in-place build of "
           "the algorithm reads its input from there)";
  if (!a.ipcComms)
    return "the plugin has no CUDA IPC communicator entry (rebuild it with "
           "this ccsynth)";
  if (comm.device == CommFacts::Device::Unusable)
    return "device window unusable: " + comm.deviceUnusable;
  if (comm.device == CommFacts::Device::NotYet && c.capturing)
    return "the device window is set up at the first call outside CUDA "
           "graph capture (allocating it would break the capture)";
  std::uint64_t out = c.count * std::uint64_t(rt::dtypeSize(c.dtype)) *
                      std::uint64_t(unitsOf(c.collective, c.nranks, false));
  if (out > comm.deviceStaging)
    return std::to_string(out) + " output bytes exceed the device window (" +
           std::to_string(comm.deviceStaging) +
           ", CCSYNTH_DEVICE_WINDOW_BYTES)";
  return "";
}

Decision decide(const CallFacts &c, const std::vector<AlgoFacts> &algos,
                const CommFacts &comm) {
  return decideEach(c, algos,
                    [&](std::size_t) -> const CommFacts & { return comm; });
}

Placement placement(const ccsynthAlgorithm &g) {
  Placement p;
  // Peers put into this rank's output, so it is always the window's; an
  // out-of-place algorithm reads its input only here, from the user's
  // buffer. An in-place one reads it from the output: it is copied there.
  p.inputInPlace = !g.inplace;
  return p;
}

std::string Placement::describe() const {
  return inputInPlace ? "input read in place from the user's buffer, output "
                        "staged through the device window"
                      : "input and output staged through the device window "
                        "(in-place algorithm)";
}

} // namespace ccsynth::interposer
