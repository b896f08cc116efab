//===- RunSetup.cpp - What every backend's run of an algorithm shares -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/runtime/RunSetup.h"

#include "ccsynth/runtime/HostTypes.h"

namespace ccsynth::rt {

std::size_t RunSetup::sendOffset(int rank) const {
  return inplace && spec.outUnits > spec.inUnits
             ? std::size_t(rank) * unitElems * elemSize
             : 0;
}

std::size_t RunSetup::recvOffset(int rank) const {
  return inplace && spec.inUnits > spec.outUnits
             ? std::size_t(rank) * unitElems * elemSize
             : 0;
}

std::optional<Mismatch>
RunSetup::check(const std::vector<const unsigned char *> &outputs, int dtype,
                int op) const {
  return checkOutputs(spec, inputs, outputs, unitElems, dtype, op);
}

std::optional<RunSetup> prepareRun(const ccsynthAlgorithm &algo,
                                   const RunOptions &o, std::string &error) {
  RunSetup s;
  s.ranks = algo.ranks;
  std::optional<ReferenceSpec> spec = o.reference;
  if (!spec)
    spec = builtinReference(algo.collective, algo.ranks, algo.root);
  if (!spec) {
    error = std::string("no reference for collective '") + algo.collective +
            "': run it from its source";
    return std::nullopt;
  }
  s.spec = std::move(*spec);
  s.elemSize = dtypeSize(o.dtype);
  if (s.elemSize == 0) {
    error = "unknown data type " + std::to_string(o.dtype);
    return std::nullopt;
  }
  s.unitElems = o.unitElems ? o.unitElems : o.count;
  s.inBytes = s.unitElems * s.spec.inUnits * s.elemSize;
  s.outBytes = s.unitElems * s.spec.outUnits * s.elemSize;
  s.inplace = algo.inplace != 0;
  s.inputs.resize(s.ranks);
  for (int r = 0; r < s.ranks; ++r) {
    s.inputs[r].resize(s.inBytes);
    fillRandom(s.inputs[r].data(), s.inBytes / s.elemSize, o.dtype, o.op,
               o.seed, r);
  }
  return s;
}

ccsynthLaunchArgs launchArgsFor(const RunOptions &o,
                                const ccsynthAlgorithm &algo, int rank,
                                const void *send, void *recv, void *scratch,
                                int32_t transport, void *comm,
                                ccsynthError *error) {
  ccsynthLaunchArgs a{};
  a.struct_size = sizeof a;
  a.rank = rank;
  a.sendbuff = send;
  a.recvbuff = recv;
  a.count = o.count;
  a.dtype = o.dtype;
  a.op = o.op;
  a.scratch = scratch;
  a.scratch_bytes = algo.scratch_bytes;
  a.transport = transport;
  a.comm = comm;
  a.timeout_seconds = o.timeoutSeconds;
  a.error = error;
  return a;
}

std::optional<ccsynthError>
firstLaunchError(const std::vector<ccsynthResult> &results,
                 const std::vector<ccsynthError> &errors) {
  int pick = -1;
  for (std::size_t r = 0; r < results.size() && pick < 0; ++r)
    if (results[r] != ccsynthSuccess && results[r] != ccsynthAborted)
      pick = int(r);
  for (std::size_t r = 0; r < results.size() && pick < 0; ++r)
    if (results[r] != ccsynthSuccess)
      pick = int(r);
  if (pick < 0)
    return std::nullopt;
  ccsynthError e = errors[pick];
  e.result = results[pick];
  return e;
}

} // namespace ccsynth::rt
