//===- Reference.cpp - Reference collectives for checking runs ------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/runtime/Reference.h"

#include "ccsynth/runtime/HostTypes.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace ccsynth::rt {

std::optional<ReferenceSpec> builtinReference(const std::string &collective,
                                              int n, int root) {
  ReferenceSpec s;
  s.ranks = n;
  auto all = [&](int unit) {
    std::vector<std::pair<int, int>> v;
    for (int j = 0; j < n; ++j)
      v.push_back({j, unit});
    return v;
  };
  auto shape = [&](int in, int out) {
    s.inUnits = in;
    s.outUnits = out;
    s.out.assign(n, std::vector<Contributions>(out));
  };
  if (collective == "allgather" || collective == "gather") {
    shape(1, n);
    for (int r = 0; r < n; ++r)
      if (collective == "allgather" || r == root)
        for (int b = 0; b < n; ++b)
          s.out[r][b] = std::vector<std::pair<int, int>>{{b, 0}};
  } else if (collective == "reducescatter") {
    shape(n, 1);
    s.reduces = true;
    for (int r = 0; r < n; ++r)
      s.out[r][0] = all(r);
  } else if (collective == "allreduce" || collective == "reduce") {
    shape(1, 1);
    s.reduces = true;
    for (int r = 0; r < n; ++r)
      if (collective == "allreduce" || r == root)
        s.out[r][0] = all(0);
  } else if (collective == "broadcast") {
    shape(1, 1);
    for (int r = 0; r < n; ++r)
      s.out[r][0] = std::vector<std::pair<int, int>>{{root, 0}};
  } else if (collective == "scatter") {
    shape(n, 1);
    for (int r = 0; r < n; ++r)
      s.out[r][0] = std::vector<std::pair<int, int>>{{root, r}};
  } else if (collective == "alltoall") {
    shape(n, n);
    for (int r = 0; r < n; ++r)
      for (int b = 0; b < n; ++b)
        s.out[r][b] = std::vector<std::pair<int, int>>{{b, r}};
  } else {
    return std::nullopt;
  }
  return s;
}

namespace {

std::uint64_t splitmix(std::uint64_t &state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform double in [lo, hi).
double uniform(std::uint64_t &state, double lo, double hi) {
  return lo + (hi - lo) * double(splitmix(state) >> 11) * 0x1.0p-53;
}

template <class T>
void fillTyped(T *p, std::size_t n, int op, std::uint64_t &state) {
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<T>) {
      std::uint64_t bits = splitmix(state);
      T v;
      std::memcpy(&v, &bits, sizeof(T));
      p[i] = v;
    } else {
      double v = op == ccsynthProd ? uniform(state, 0.8, 1.25)
                                   : uniform(state, -1.0, 1.0);
      if constexpr (std::is_same_v<T, Half>)
        p[i] = toHalf(float(v));
      else if constexpr (std::is_same_v<T, Bf16>)
        p[i] = toBf16(float(v));
      else
        p[i] = T(v);
    }
  }
}

template <class F> bool withType(int dtype, F &&f) {
  switch (dtype) {
  case ccsynthInt8:
    f(std::int8_t{});
    return true;
  case ccsynthUint8:
    f(std::uint8_t{});
    return true;
  case ccsynthInt32:
    f(std::int32_t{});
    return true;
  case ccsynthUint32:
    f(std::uint32_t{});
    return true;
  case ccsynthInt64:
    f(std::int64_t{});
    return true;
  case ccsynthUint64:
    f(std::uint64_t{});
    return true;
  case ccsynthFloat16:
    f(Half{});
    return true;
  case ccsynthFloat32:
    f(float{});
    return true;
  case ccsynthFloat64:
    f(double{});
    return true;
  case ccsynthBfloat16:
    f(Bf16{});
    return true;
  }
  return false;
}

template <class T> double asDouble(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, Bf16>)
    return toFloat(v);
  else
    return double(v);
}

template <class T> std::string show(T v) {
  std::ostringstream os;
  if constexpr (std::is_integral_v<T>)
    os << (long long)v;
  else
    os.precision(9), os << asDouble(v);
  return os.str();
}

double unitRoundoff(int dtype) {
  switch (dtype) {
  case ccsynthFloat16:
    return 0x1.0p-11;
  case ccsynthBfloat16:
    return 0x1.0p-8;
  case ccsynthFloat32:
    return 0x1.0p-24;
  case ccsynthFloat64:
    return 0x1.0p-53;
  default:
    return 0;
  }
}

template <class Op, class T>
std::optional<Mismatch>
checkTyped(const ReferenceSpec &spec,
           const std::vector<std::vector<unsigned char>> &inputs,
           const std::vector<const unsigned char *> &outs,
           std::size_t unitElems, int dtype, int op) {
  for (int r = 0; r < spec.ranks; ++r) {
    const T *out = reinterpret_cast<const T *>(outs[r]);
    for (int u = 0; u < spec.outUnits; ++u) {
      const Contributions &c = spec.out[r][u];
      if (!c)
        continue;
      for (std::size_t i = 0; i < unitElems; ++i) {
        const T got = out[u * unitElems + i];
        auto in = [&](const std::pair<int, int> &src) {
          const T *p = reinterpret_cast<const T *>(inputs[src.first].data());
          return p[src.second * unitElems + i];
        };
        bool ok;
        std::string want;
        double allowed = 0;
        if constexpr (std::is_integral_v<T>) {
          T acc = in(c->front());
          for (size_t k = 1; k < c->size(); ++k)
            acc = combine<Op>(acc, in((*c)[k]));
          ok = acc == got;
          if (!ok)
            want = show(acc);
        } else {
          double acc = asDouble(in(c->front()));
          double mag = std::fabs(acc);
          for (size_t k = 1; k < c->size(); ++k) {
            double x = asDouble(in((*c)[k]));
            acc = Op::apply(acc, x);
            mag += std::fabs(x);
          }
          double g = asDouble(got);
          allowed = c->size() == 1
                        ? 0
                        : tolerance(dtype, op, (int)c->size(),
                                    op == ccsynthProd ? std::fabs(acc) : mag);
          if (c->size() == 1 || op == ccsynthMax || op == ccsynthMin) {
            // Copies and max/min are exact: compare the stored bits' value.
            ok = g == acc || (std::isnan(g) && std::isnan(acc));
          } else {
            ok = std::fabs(g - acc) <= allowed;
          }
          if (!ok) {
            // Formatting is costly; only a mismatch needs the text.
            std::ostringstream os;
            os.precision(9);
            os << acc;
            want = os.str();
          }
        }
        if (!ok)
          return Mismatch{r, u, u * unitElems + i, want, show(got), allowed};
      }
    }
  }
  return std::nullopt;
}

} // namespace

void fillRandom(void *buf, std::size_t elems, int dtype, int op,
                std::uint64_t seed, int rank) {
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + std::uint64_t(rank) + 1;
  withType(dtype, [&](auto t) {
    using T = decltype(t);
    fillTyped(static_cast<T *>(buf), elems, op, state);
  });
}

double tolerance(int dtype, int op, int contributions, double magnitude) {
  if (op == ccsynthMax || op == ccsynthMin)
    return 0;
  return double(contributions) * 2 * unitRoundoff(dtype) * magnitude;
}

std::optional<Mismatch>
checkOutputs(const ReferenceSpec &spec,
             const std::vector<std::vector<unsigned char>> &inputs,
             const std::vector<const unsigned char *> &outputs,
             std::size_t unitElems, int dtype, int op) {
  std::optional<Mismatch> result;
  withType(dtype, [&](auto t) {
    using T = decltype(t);
    switch (spec.reduces ? op : -1) {
    case ccsynthSum:
      result =
          checkTyped<SumOp, T>(spec, inputs, outputs, unitElems, dtype, op);
      break;
    case ccsynthProd:
      result =
          checkTyped<ProdOp, T>(spec, inputs, outputs, unitElems, dtype, op);
      break;
    case ccsynthMax:
      result =
          checkTyped<MaxOp, T>(spec, inputs, outputs, unitElems, dtype, op);
      break;
    case ccsynthMin:
      result =
          checkTyped<MinOp, T>(spec, inputs, outputs, unitElems, dtype, op);
      break;
    default:
      result = checkTyped<NoOp, T>(spec, inputs, outputs, unitElems, dtype, op);
    }
  });
  return result;
}

} // namespace ccsynth::rt
