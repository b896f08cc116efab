//===- NcclKernel.h - How NCCL's own kernel runs a call -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// NCCL does not run a collective on all of its channels and threads at
// every size: before a call it drops channels one at a time, then halves
// the threads per channel, while the buffer is smaller than channels x
// threads x a per-protocol threshold (enqueue.cc, getAlgoInfo in 2.18,
// topoGetAlgoInfo later; the same rule in every release since 2.12).
// A ring AllReduce of 1 KiB on 8 ranks runs on one threadblock of 96
// threads, a 256 KiB one on 8 channels of 512. The step model times NCCL's
// ring with that many channels. Threads are not scaled into its
// throughput: measured on H100, NCCL's LL ring at 1-32 KiB on one channel
// (96 to 512 threads) takes what per-hop latency alone gives.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace ccsynth::perf {

/// What NCCL launches for one ring call.
struct NcclLaunch {
  int channels = 1;
  int threads = 512;
};

/// NCCL's channels and threads for a ring call of `bytes` (nccl-tests'
/// size: the whole buffer, for AllGather and ReduceScatter the gathered
/// one) with `protocol` (the StepModel index: 0 Simple, 1 LL128, 2 LL) on
/// `ranks` ranks, when the communicator has `channels` channels.
/// Thresholds per thread: LL 8 bytes times the ranks (ring), LL128 8,
/// Simple 64; full threads LL 512, LL128 640, Simple 512 plus a warp for
/// the ring's Simple; never below 96 threads (NCCL's src/include/comm.h,
/// device.h, enqueue.cc).
NcclLaunch ncclRingLaunch(int protocol, int ranks, double bytes, int channels);

} // namespace ccsynth::perf
