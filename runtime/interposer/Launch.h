//===- Launch.h - Running a plugin algorithm ------------------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Interposer-private: running one collective call through the plugin
// algorithm chosen for it (Launch.cpp). See docs/runtime.md, "The NCCL-API
// interposer".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Config.h"
#include "Interposer.h"
#include "Windows.h"

namespace ccsynth::interposer::detail {

/// Runs `c` with `a` on `s`: through its CUDA IPC window, queued on the
/// call's stream (`cuda`), or through its host window, synchronously. A
/// failed launch becomes the communicator's error.
ncclResult_t launch(const Call &c, CommState &s, const Algo &a, bool cuda);

} // namespace ccsynth::interposer::detail
