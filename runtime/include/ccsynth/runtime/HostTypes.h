//===- HostTypes.h - Element types and reduction operators on the host ----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// fp16 and bf16 are stored as their 16-bit patterns and reduced in float,
// rounding to nearest even (what CUDA's __hadd/__hmax do per element).
// Operators are types so that a reduction loop is instantiated per (type,
// operator) and the inner loop has no dispatch.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/ccsynth_plugin.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ccsynth::rt {

/// IEEE binary16, stored as bits.
struct Half {
  std::uint16_t bits;
};
/// bfloat16, stored as bits.
struct Bf16 {
  std::uint16_t bits;
};

inline float toFloat(Bf16 v) {
  std::uint32_t u = std::uint32_t(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline Bf16 toBf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN stays a quiet NaN
    return Bf16{std::uint16_t((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return Bf16{std::uint16_t(u >> 16)};
}

inline float toFloat(Half v) {
  std::uint32_t sign = std::uint32_t(v.bits & 0x8000u) << 16;
  std::uint32_t exp = (v.bits >> 10) & 0x1fu;
  std::uint32_t man = v.bits & 0x3ffu;
  std::uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    u = sign;
  } else { // subnormal: normalize
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while (!(man & 0x400u));
    u = sign | std::uint32_t(112 - e) << 23 | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline Half toHalf(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  std::uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u)
    return Half{std::uint16_t(sign | 0x7e00u)};
  if (absu >= 0x477ff000u) // rounds to infinity
    return Half{std::uint16_t(sign | 0x7c00u)};
  if (absu < 0x38800000u) { // subnormal or zero in half
    if (absu < 0x33000000u)
      return Half{sign};
    std::uint32_t man = (absu & 0x7fffffu) | 0x800000u;
    int shift = 126 - int(absu >> 23);
    std::uint32_t half = man >> (shift + 1);
    std::uint32_t rem = man & ((1u << (shift + 1)) - 1);
    std::uint32_t mid = 1u << shift;
    if (rem > mid || (rem == mid && (half & 1u)))
      ++half;
    return Half{std::uint16_t(sign | half)};
  }
  std::uint32_t h = ((absu >> 13) - (112u << 10));
  std::uint32_t rem = absu & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    ++h;
  return Half{std::uint16_t(sign | h)};
}

/// Arithmetic view of an element: float for the 16-bit types.
template <class T> struct Arith {
  using type = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};
template <> struct Arith<Half> {
  using type = float;
  static float load(Half v) { return toFloat(v); }
  static Half store(float v) { return toHalf(v); }
};
template <> struct Arith<Bf16> {
  using type = float;
  static float load(Bf16 v) { return toFloat(v); }
  static Bf16 store(float v) { return toBf16(v); }
};

struct SumOp {
  template <class A> static A apply(A a, A b) { return a + b; }
};
struct ProdOp {
  template <class A> static A apply(A a, A b) { return a * b; }
};
struct MaxOp {
  template <class A> static A apply(A a, A b) { return std::max(a, b); }
};
struct MinOp {
  template <class A> static A apply(A a, A b) { return std::min(a, b); }
};
/// The operator of an algorithm that does not reduce.
struct NoOp {
  template <class A> static A apply(A a, A) { return a; }
};

/// a op b for one element of type T (integers wrap like CUDA's).
template <class Op, class T> inline T combine(T a, T b) {
  using A = typename Arith<T>::type;
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A> &&
                std::is_same_v<Op, SumOp>) {
    using U = std::make_unsigned_t<A>;
    return T(A(U(a) + U(b)));
  } else if constexpr (std::is_integral_v<A> && std::is_signed_v<A> &&
                       std::is_same_v<Op, ProdOp>) {
    using U = std::make_unsigned_t<A>;
    return T(A(U(a) * U(b)));
  } else if constexpr (std::is_integral_v<A> && sizeof(A) < sizeof(int)) {
    return T(A(Op::apply(int(a), int(b))));
  } else {
    return Arith<T>::store(Op::apply(Arith<T>::load(a), Arith<T>::load(b)));
  }
}

/// Size in bytes of a dtype, 0 when unknown.
inline int dtypeSize(int dtype) {
  switch (dtype) {
  case ccsynthInt8:
  case ccsynthUint8:
    return 1;
  case ccsynthFloat16:
  case ccsynthBfloat16:
    return 2;
  case ccsynthInt32:
  case ccsynthUint32:
  case ccsynthFloat32:
    return 4;
  case ccsynthInt64:
  case ccsynthUint64:
  case ccsynthFloat64:
    return 8;
  default:
    return 0;
  }
}

} // namespace ccsynth::rt
