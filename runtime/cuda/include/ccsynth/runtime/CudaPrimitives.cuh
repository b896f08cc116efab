//===- CudaPrimitives.cuh - Device data movement, flags and clocks --------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The device twin of HostTypes.h and of the flag helpers of HostWorld.h:
// element operators for every NCCL dtype, block-cooperative copy and
// reduce with 16-byte vector accesses where source and destination are
// equally aligned (a scalar head and tail otherwise), 64-bit flag loads
// and stores with acquire/release at GPU or system scope, and the global
// timer the watchdog reads.
//
// Everything is __forceinline__, loops have compile-time bounds or stride
// over memory (no local arrays indexed at run time), so kernels keep a
// zero-byte stack frame.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/Generated.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#define CCSYNTH_DEV __device__ __forceinline__

namespace ccsynth::rt {

/// The SM architecture device code is being compiled for (90 for sm_90);
/// 0 in the host pass.
#ifdef __CUDA_ARCH__
#define CCSYNTH_DEVICE_ARCH (__CUDA_ARCH__ / 10)
#else
#define CCSYNTH_DEVICE_ARCH 0
#endif

/// Threads per block and 16-byte loads in flight per thread, as types (the
/// data loops' bounds are compile-time constants).
template <int Threads, int Loads> struct Knobs {
  static_assert(validKnobs(KernelKnobs{0, Threads, Loads}),
                "threads must be a multiple of 32 up to 1024, loads 1, 2, "
                "4, 8 or 16");
  static constexpr int threads = Threads;
  static constexpr int loads = Loads;
};

/// The knobs of algorithm A's kernels for the architecture this device
/// code is compiled for (Generated.h's knobsFor over A::kernelKnobs).
template <class A>
using KnobsOf = Knobs<knobsFor(A::kernelKnobs, CCSYNTH_DEVICE_ARCH).threads,
                      knobsFor(A::kernelKnobs, CCSYNTH_DEVICE_ARCH).loads>;

// --- element operators ------------------------------------------------------

struct DevSum {
  template <class A> static CCSYNTH_DEV A apply(A a, A b) { return a + b; }
};
struct DevProd {
  template <class A> static CCSYNTH_DEV A apply(A a, A b) { return a * b; }
};
struct DevMax {
  template <class A> static CCSYNTH_DEV A apply(A a, A b) {
    return a < b ? b : a; // as std::max on the host
  }
};
struct DevMin {
  template <class A> static CCSYNTH_DEV A apply(A a, A b) {
    return b < a ? b : a; // as std::min on the host
  }
};
/// The element of an algorithm that only copies: one kernel serves every
/// element size (the size is a launch argument; unaligned heads and tails
/// move bytes).
struct AnyWord {};

/// The operator of an algorithm that does not reduce.
struct DevNoOp {
  template <class A> static CCSYNTH_DEV A apply(A a, A) { return a; }
};

/// a op b for one element. 16-bit floats go through float and round to
/// nearest even, as the host backend does; signed integers wrap.
template <class Op, class T> CCSYNTH_DEV T devCombine(T a, T b) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(Op::apply(__half2float(a), __half2float(b)));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(
        Op::apply(__bfloat162float(a), __bfloat162float(b)));
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> &&
                       (std::is_same_v<Op, DevSum> ||
                        std::is_same_v<Op, DevProd>)) {
    using U = std::make_unsigned_t<T>;
    using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, U>;
    return T(U(Op::apply(W(U(a)), W(U(b)))));
  } else if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(int)) {
    return T(Op::apply(int(a), int(b)));
  } else {
    return Op::apply(a, b);
  }
}

/// A 16-byte vector seen as elements (indices are compile-time constants).
template <class T> union Vec16 {
  static constexpr int kElems = 16 / sizeof(T);
  uint4 raw;
  T e[kElems];
  CCSYNTH_DEV Vec16() : raw() {}
};

template <class Op, class T> CCSYNTH_DEV uint4 devCombine16(uint4 a, uint4 b) {
  Vec16<T> x, y;
  x.raw = a;
  y.raw = b;
#pragma unroll
  for (int i = 0; i < Vec16<T>::kElems; ++i)
    x.e[i] = devCombine<Op>(x.e[i], y.e[i]);
  return x.raw;
}

// --- block-cooperative data movement ----------------------------------------

/// Loads bypass L1 (data a peer wrote during this launch is read once after
/// an acquire; L2 is the coherence point).
CCSYNTH_DEV uint4 loadVec(const uint4 *p) { return __ldcg(p); }

/// Bytes before the first 16-byte boundary of `a` when all pointers share
/// its alignment modulo 16; `bytes` (all scalar) otherwise.
CCSYNTH_DEV std::size_t vectorHead(std::uintptr_t a, std::uintptr_t b,
                                   std::uintptr_t c, std::size_t bytes) {
  if (((a ^ b) | (a ^ c)) & 15)
    return bytes;
  std::size_t head = (16 - (a & 15)) & 15;
  return head < bytes ? head : bytes;
}

/// Copies `bytes` (a multiple of sizeof(T)), by all K::threads threads of
/// the block, each with K::loads 16-byte loads in flight; T is the access
/// width of the unaligned head and the tail.
template <class K, class T>
CCSYNTH_DEV void blockCopy(char *dst, const char *src, std::size_t bytes) {
  constexpr int kThreads = K::threads, kLoads = K::loads;
  const int tid = threadIdx.x;
  std::size_t head = vectorHead(std::uintptr_t(dst), std::uintptr_t(src),
                                std::uintptr_t(src), bytes);
  std::size_t headElems = head / sizeof(T);
  for (std::size_t i = tid; i < headElems; i += kThreads)
    reinterpret_cast<T *>(dst)[i] = reinterpret_cast<const T *>(src)[i];
  std::size_t nvec = (bytes - head) / 16;
  const uint4 *s = reinterpret_cast<const uint4 *>(src + head);
  uint4 *d = reinterpret_cast<uint4 *>(dst + head);
  for (std::size_t base = tid; base < nvec;
       base += std::size_t(kThreads) * kLoads) {
    uint4 v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
      if (i < nvec)
        v[u] = loadVec(s + i);
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
      if (i < nvec)
        d[i] = v[u];
    }
  }
  std::size_t done = head + nvec * 16;
  std::size_t tail = (bytes - done) / sizeof(T);
  for (std::size_t i = tid; i < tail; i += kThreads)
    reinterpret_cast<T *>(dst + done)[i] =
        reinterpret_cast<const T *>(src + done)[i];
}

/// dst[i] = a[i] op b[i] for n elements, by all K::threads threads of the
/// block with K::loads vectors of each source in flight (dst may alias a or
/// b element for element).
template <class K, class Op, class T>
CCSYNTH_DEV void blockReduce(char *dst, const char *a, const char *b,
                             std::size_t n) {
  constexpr int kThreads = K::threads, kLoads = K::loads;
  const int tid = threadIdx.x;
  std::size_t bytes = n * sizeof(T);
  std::size_t head = vectorHead(std::uintptr_t(dst), std::uintptr_t(a),
                                std::uintptr_t(b), bytes);
  std::size_t headElems = head / sizeof(T);
  for (std::size_t i = tid; i < headElems; i += kThreads)
    reinterpret_cast<T *>(dst)[i] = devCombine<Op>(
        reinterpret_cast<const T *>(a)[i], reinterpret_cast<const T *>(b)[i]);
  std::size_t nvec = (bytes - head) / 16;
  const uint4 *va = reinterpret_cast<const uint4 *>(a + head);
  const uint4 *vb = reinterpret_cast<const uint4 *>(b + head);
  uint4 *d = reinterpret_cast<uint4 *>(dst + head);
  for (std::size_t base = tid; base < nvec;
       base += std::size_t(kThreads) * kLoads) {
    uint4 x[kLoads], y[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
      if (i < nvec) {
        x[u] = loadVec(va + i);
        y[u] = loadVec(vb + i);
      }
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
      if (i < nvec)
        d[i] = devCombine16<Op, T>(x[u], y[u]);
    }
  }
  std::size_t done = head + nvec * 16;
  std::size_t tail = (bytes - done) / sizeof(T);
  for (std::size_t i = tid; i < tail; i += kThreads)
    reinterpret_cast<T *>(dst + done)[i] =
        devCombine<Op>(reinterpret_cast<const T *>(a + done)[i],
                       reinterpret_cast<const T *>(b + done)[i]);
}

// --- NVLink SHARP (multimem) ---------------------------------------------

/// Whether a switch reduction of T with Op has a multimem.ld_reduce form
/// (sm_90 on): sums of fp32, fp16 and bf16, 16 bytes at a time. Every
/// other type and operator reads each rank's copy instead.
template <class T, class Op>
inline constexpr bool kMultimemReduces =
    std::is_same_v<Op, DevSum> &&
    (std::is_same_v<T, float> || std::is_same_v<T, __half> ||
     std::is_same_v<T, __nv_bfloat16>);

/// One multimem.ld_reduce of 16 bytes (a sum of T, see kMultimemReduces).
template <class T> CCSYNTH_DEV uint4 multimemLoadReduce(const char *mc) {
  uint4 v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (std::is_same_v<T, float>)
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 "
                 "{%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(mc)
                 : "memory");
  else if constexpr (std::is_same_v<T, __half>)
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f16x2 "
                 "{%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(mc)
                 : "memory");
  else
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.bf16x2 "
                 "{%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(mc)
                 : "memory");
#else
  (void)mc;
  v = uint4{};
#endif
  return v;
}

/// dst (unicast) = the switch's sum over every rank's copy at the multimem
/// address mc; bytes and both addresses are multiples of 16. As blockCopy:
/// all K::threads threads, K::loads reductions of each in flight.
template <class K, class T>
__device__ __noinline__ void multimemReduceBlock(char *dst, const char *mc,
                                                 std::size_t bytes) {
  constexpr int kThreads = K::threads, kLoads = K::loads;
  std::size_t nvec = bytes / 16;
  uint4 *d = reinterpret_cast<uint4 *>(dst);
  for (std::size_t base = threadIdx.x; base < nvec;
       base += std::size_t(kThreads) * kLoads) {
    uint4 v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
      if (i < nvec)
        v[u] = multimemLoadReduce<T>(mc + i * 16);
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
      if (i < nvec)
        d[i] = v[u];
    }
  }
}

/// The switch writes src to every rank's copy at the multimem address mc;
/// bytes and both addresses are multiples of 16.
template <class K>
__device__ __noinline__ void multimemStoreBlock(char *mc, const char *src,
                                                std::size_t bytes) {
  constexpr int kThreads = K::threads, kLoads = K::loads;
  std::size_t nvec = bytes / 16;
  const uint4 *s = reinterpret_cast<const uint4 *>(src);
  for (std::size_t base = threadIdx.x; base < nvec;
       base += std::size_t(kThreads) * kLoads) {
    uint4 v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
      if (i < nvec)
        v[u] = loadVec(s + i);
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      std::size_t i = base + std::size_t(u) * kThreads;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      if (i < nvec)
        asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], "
                     "{%1, %2, %3, %4};" ::"l"(mc + i * 16),
                     "r"(v[u].x), "r"(v[u].y), "r"(v[u].z), "r"(v[u].w)
                     : "memory");
#else
      (void)mc, (void)i;
#endif
    }
  }
}

/// After multimem accesses, before the same memory is read or written
/// through its unicast address (or a flag says it may be): the two
/// addresses alias one physical page.
CCSYNTH_DEV void multimemFence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.alias;" ::: "memory");
#endif
  __threadfence_system();
}

// --- flags
// --------------------------------------------------------------------

/// Flags peers write (possibly from another GPU over NVLink/PCIe).
CCSYNTH_DEV std::uint64_t loadAcquireSys(const std::uint64_t *p) {
  std::uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];"
               : "=l"(v)
               : "l"(p)
               : "memory");
  return v;
}
CCSYNTH_DEV void storeReleaseSys(std::uint64_t *p, std::uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}
/// Flags only threadblocks of the same rank (same GPU) touch.
CCSYNTH_DEV std::uint64_t loadAcquireGpu(const std::uint64_t *p) {
  std::uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];"
               : "=l"(v)
               : "l"(p)
               : "memory");
  return v;
}
CCSYNTH_DEV void storeReleaseGpu(std::uint64_t *p, std::uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}
/// The abort word: read often, ordering irrelevant.
CCSYNTH_DEV std::uint64_t loadRelaxedSys(const std::uint64_t *p) {
  std::uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];"
               : "=l"(v)
               : "l"(p)
               : "memory");
  return v;
}
CCSYNTH_DEV void storeRelaxedSys(std::uint64_t *p, std::uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}

/// Nanoseconds of the GPU's global timer.
CCSYNTH_DEV std::uint64_t globalTimerNs() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Picks `a[i]` for a run-time i < N by selects on constant indices, so a
/// kernel-argument array is never copied to local memory.
template <int N, class V> CCSYNTH_DEV V pickIndex(const V (&a)[N], int i) {
  V v = a[0];
#pragma unroll
  for (int k = 1; k < N; ++k)
    if (i == k)
      v = a[k];
  return v;
}

} // namespace ccsynth::rt
