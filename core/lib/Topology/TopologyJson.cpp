//===- TopologyJson.cpp - ccsynth topology JSON and topology resolution ---===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The ccsynth topology JSON form (Topology.h): parseTopologyJson reads
// links, resources, in-network switches and the optional step model
// (bandwidth as GB/s or TACCL's beta, per-protocol figures), with located
// errors; topologyToJson writes it back. topologyHash identifies a machine
// for schedule files (a word-wise hash of the canonical form without the
// step model; topologyJsonHash is the older one). loadTopology resolves a
// topology argument: a built-in name, a JSON file or an NCCL topology dump.
// Sections: reader, writer, hashes, resolution.
// See docs/formats.md ("Topology").
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Support/Json.h"
#include "ccsynth/Topology/Topology.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

namespace ccsynth {

namespace {

/// Bandwidth from "bandwidth_gbps" or TACCL-style "beta_us_per_mb"
/// (µs per 1e6 bytes): GB/s = 1e3 / beta.
Expected<double> readBandwidth(const JsonReader &rd, const std::string &p) {
  bool hasBw = rd.has(p, "bandwidth_gbps"),
       hasBeta = rd.has(p, "beta_us_per_mb");
  if (hasBw == hasBeta)
    return rd.error(p, "give exactly one of 'bandwidth_gbps' and "
                       "'beta_us_per_mb'");
  if (hasBw) {
    auto bw = rd.number(p + "/bandwidth_gbps");
    if (!bw)
      return bw.error();
    if (!isUsableBandwidth(*bw))
      return rd.error(p + "/bandwidth_gbps",
                      "bandwidth " + formatFigure(*bw) + " GB/s is out of " +
                          "range: it must be " + bandwidthRangeText());
    return *bw;
  }
  auto beta = rd.number(p + "/beta_us_per_mb");
  if (!beta)
    return beta.error();
  // The bandwidth range maps onto beta from 1e-3 to 1e6 us per MB.
  if (!(*beta > 0) || !isUsableBandwidth(1e3 / *beta))
    return rd.error(p + "/beta_us_per_mb",
                    "beta " + formatFigure(*beta) +
                        " us per MB is out of range: its bandwidth (1e3 / "
                        "beta GB/s) must be " +
                        bandwidthRangeText());
  return 1e3 / *beta;
}

/// A latency in µs at `p` + "/alpha_us", within the usable range.
Expected<double> readAlpha(const JsonReader &rd, const std::string &p) {
  auto alpha = rd.number(p + "/alpha_us");
  if (!alpha)
    return alpha.error();
  if (!isUsableAlpha(*alpha))
    return rd.error(p + "/alpha_us", "alpha " + formatFigure(*alpha) +
                                         " us is out of range: it must be " +
                                         alphaRangeText());
  return *alpha;
}

/// Reads `{"Simple": x, "LL128": y, "LL": z}` (any subset) into `out`.
Status readPerProtocol(const JsonReader &rd, const std::string &p, double *out,
                       bool allowZero) {
  if (Status s = rd.object(p); !s)
    return s;
  if (Status s = rd.onlyKeys(p, {"Simple", "LL128", "LL"}); !s)
    return s;
  for (int i = 0; i < 3; ++i) {
    if (!rd.has(p, kStepProtocols[i]))
      continue;
    std::string fp = jsonPath(p, kStepProtocols[i]);
    auto v = rd.number(fp);
    if (!v)
      return v.error();
    bool ok = allowZero ? isUsableAlpha(*v) : isUsableBandwidth(*v);
    if (!ok)
      return rd.error(
          fp, formatFigure(*v) + " is out of range: it must be " +
                  (allowZero ? alphaRangeText() : bandwidthRangeText()));
    out[i] = *v;
  }
  return {};
}

/// The optional `step_model` object; absent fields keep `m`'s values.
Status readStepModel(const JsonReader &rd, StepModel &m) {
  const std::string p = "/step_model";
  if (Status s = rd.object(p); !s)
    return s;
  if (Status s = rd.onlyKeys(
          p, {"launch_us", "step_us", "threadblock_copy_gbps",
              "threadblock_reduce_gbps", "step_fill_us", "link_efficiency",
              "sm_arch", "threadblock_in_flight_bytes", "interpreter_step_us",
              "dependency_us"});
      !s)
    return s;
  struct Field {
    const char *key;
    double *values;
    bool allowZero;
  } fields[] = {{"launch_us", m.launchUs, true},
                {"step_us", m.stepUs, true},
                {"threadblock_copy_gbps", m.tbCopyGBps, false},
                {"threadblock_reduce_gbps", m.tbReduceGBps, false},
                {"step_fill_us", m.stepFillUs, true}};
  for (const Field &f : fields)
    if (rd.has(p, f.key))
      if (Status s =
              readPerProtocol(rd, jsonPath(p, f.key), f.values, f.allowZero);
          !s)
        return s;
  if (rd.has(p, "link_efficiency")) {
    std::string fp = p + "/link_efficiency";
    auto v = rd.number(fp);
    if (!v)
      return v.error();
    if (!(*v >= 1e-3 && *v <= 1))
      return rd.error(fp, "link_efficiency " + formatFigure(*v) +
                              " is out of range: it must be from 0.001 to 1");
    m.linkEfficiency = *v;
  }
  if (rd.has(p, "sm_arch")) {
    std::string fp = p + "/sm_arch";
    auto v = rd.number(fp);
    if (!v)
      return v.error();
    if (!(*v >= 30 && *v <= 1000) || *v != std::floor(*v))
      return rd.error(fp, "sm_arch " + formatFigure(*v) +
                              " is not an SM architecture (an integer such "
                              "as 80 or 90)");
    m.smArch = (int)*v;
  }
  if (rd.has(p, "threadblock_in_flight_bytes")) {
    std::string fp = p + "/threadblock_in_flight_bytes";
    auto v = rd.number(fp);
    if (!v)
      return v.error();
    if (!(*v >= 16 && *v <= 1e9))
      return rd.error(fp, "threadblock_in_flight_bytes " + formatFigure(*v) +
                              " is out of range: it must be from 16 to 1e9");
    m.tbInFlightBytes = *v;
  }
  struct Cost {
    const char *key;
    double *value;
  } costs[] = {{"interpreter_step_us", &m.interpreterStepUs},
               {"dependency_us", &m.dependencyUs}};
  for (const Cost &c : costs) {
    if (!rd.has(p, c.key))
      continue;
    std::string fp = jsonPath(p, c.key);
    auto v = rd.number(fp);
    if (!v)
      return v.error();
    if (!(*v >= 0 && *v <= 1e3))
      return rd.error(fp, std::string(c.key) + " " + formatFigure(*v) +
                              " is out of range: it must be from 0 to 1000");
    *c.value = *v;
  }
  return {};
}

/// The optional `switches` array (after `resources`, whose ids ports name).
Status readSwitches(const JsonReader &rd, Topology &t) {
  const std::string top = "/switches";
  if (Status s = rd.array(top); !s)
    return s;
  int ranks = t.numRanks();
  for (size_t i = 0; i < rd.at(top).size(); ++i) {
    std::string p = jsonPath(top, i);
    if (Status s = rd.object(p); !s)
      return s;
    if (Status s =
            rd.onlyKeys(p, {"name", "kind", "alpha_us", "efficiency", "ports"});
        !s)
      return s;
    InNetworkSwitch sw;
    auto name = rd.string(p + "/name");
    if (!name)
      return name.error();
    sw.name = *name;
    for (size_t j = 0; j < t.switches.size(); ++j)
      if (t.switches[j].name == sw.name)
        return rd.error(p + "/name", "switch '" + sw.name +
                                         "' is already defined (switch " +
                                         std::to_string(j) + ")");
    auto kind = rd.string(p + "/kind");
    if (!kind)
      return kind.error();
    auto k = parseSwitchKind(*kind);
    if (!k)
      return rd.error(p + "/kind", "unknown switch kind '" + *kind +
                                       "' (expected nvls or sharp)");
    sw.kind = *k;
    auto alpha = readAlpha(rd, p);
    if (!alpha)
      return alpha.error();
    sw.alphaUs = *alpha;
    if (rd.has(p, "efficiency")) {
      auto e = rd.number(p + "/efficiency");
      if (!e)
        return e.error();
      if (!(*e >= 1e-3 && *e <= 1))
        return rd.error(p + "/efficiency",
                        "efficiency " + formatFigure(*e) +
                            " is out of range: it must be from 0.001 to 1");
      sw.efficiency = *e;
    }
    std::string pp = p + "/ports";
    if (Status s = rd.array(pp); !s)
      return s;
    if (rd.at(pp).size() < 2)
      return rd.error(pp, "a switch that reduces joins at least two ranks");
    std::vector<std::string> where(ranks);
    for (size_t k2 = 0; k2 < rd.at(pp).size(); ++k2) {
      std::string q = jsonPath(pp, k2);
      if (Status s = rd.object(q); !s)
        return s;
      if (Status s = rd.onlyKeys(
              q, {"rank", "bandwidth_gbps", "beta_us_per_mb", "up", "down"});
          !s)
        return s;
      SwitchPort port;
      auto rank = rd.integer(q + "/rank");
      if (!rank)
        return rank.error();
      if (*rank < 0 || *rank >= ranks)
        return rd.error(q + "/rank", "rank " + std::to_string(*rank) +
                                         " is not in 0.." +
                                         std::to_string(ranks - 1));
      if (!where[*rank].empty())
        return rd.error(q + "/rank", "rank " + std::to_string(*rank) +
                                         " already has a port (" +
                                         where[*rank] + ")");
      where[*rank] = q;
      port.rank = (int)*rank;
      auto bw = readBandwidth(rd, q);
      if (!bw)
        return bw.error();
      port.bandwidthGBps = *bw;
      for (auto [key, out] : {std::pair<const char *, int *>{"up", &port.up},
                              {"down", &port.down}}) {
        if (!rd.has(q, key))
          continue;
        std::string rp = jsonPath(q, key);
        auto id = rd.integer(rp);
        if (!id)
          return id.error();
        if (*id < 0 || *id >= (long long)t.resources.size())
          return rd.error(rp, "resource " + std::to_string(*id) +
                                  " is not defined (there are " +
                                  std::to_string(t.resources.size()) + ")");
        *out = (int)*id;
      }
      sw.ports.push_back(port);
    }
    std::sort(sw.ports.begin(), sw.ports.end(),
              [](const SwitchPort &a, const SwitchPort &b) {
                return a.rank < b.rank;
              });
    t.switches.push_back(std::move(sw));
  }
  return {};
}

} // namespace

Expected<Topology> parseTopologyJson(const JsonDocument &doc) {
  JsonReader rd(doc);
  if (Status s = rd.object(""); !s)
    return s.error();
  if (Status s = rd.onlyKeys("", {"format", "version", "name", "description",
                                  "ranks", "node_of", "resources", "links",
                                  "switches", "step_model"});
      !s)
    return s.error();
  auto format = rd.string("/format");
  if (!format)
    return format.error();
  if (*format != "ccsynth-topology")
    return rd.error("/format", "not a ccsynth topology (format is '" + *format +
                                   "', expected 'ccsynth-topology')");
  auto version = rd.integer("/version");
  if (!version)
    return version.error();
  if (*version != 1)
    return rd.error("/version", "unsupported topology format version " +
                                    std::to_string(*version) + " (expected 1)");
  Topology t;
  auto name = rd.string("/name");
  if (!name)
    return name.error();
  t.name = *name;
  if (rd.has("", "description")) {
    auto d = rd.string("/description");
    if (!d)
      return d.error();
    t.description = *d;
  }
  auto ranks = rd.integer("/ranks");
  if (!ranks)
    return ranks.error();
  if (*ranks < 1 || *ranks > 65536)
    return rd.error("/ranks", "'ranks' must be between 1 and 65536");
  t.nodeOf.assign(*ranks, 0);
  if (rd.has("", "node_of")) {
    if (Status s = rd.array("/node_of"); !s)
      return s.error();
    if ((long long)rd.at("/node_of").size() != *ranks)
      return rd.error("/node_of", "'node_of' must have one entry per rank (" +
                                      std::to_string(*ranks) + ")");
    for (long long r = 0; r < *ranks; ++r) {
      auto n = rd.integer(jsonPath("/node_of", r));
      if (!n)
        return n.error();
      if (*n < 0 || *n >= *ranks)
        return rd.error(jsonPath("/node_of", r), "node id out of range");
      t.nodeOf[r] = (int)*n;
    }
    // Node ids are dense: each of 0..max has a rank.
    std::vector<bool> used(*ranks, false);
    int maxNode = 0;
    for (int n : t.nodeOf) {
      used[n] = true;
      maxNode = std::max(maxNode, n);
    }
    for (int n = 0; n <= maxNode; ++n)
      if (!used[n])
        return rd.error("/node_of", "node ids must be dense: node " +
                                        std::to_string(n) +
                                        " has no ranks (the largest id is " +
                                        std::to_string(maxNode) + ")");
  }
  if (rd.has("", "resources")) {
    if (Status s = rd.array("/resources"); !s)
      return s.error();
    for (size_t i = 0; i < rd.at("/resources").size(); ++i) {
      std::string p = jsonPath("/resources", i);
      if (Status s = rd.object(p); !s)
        return s.error();
      if (Status s =
              rd.onlyKeys(p, {"name", "bandwidth_gbps", "beta_us_per_mb"});
          !s)
        return s.error();
      auto rname = rd.string(p + "/name");
      if (!rname)
        return rname.error();
      auto bw = readBandwidth(rd, p);
      if (!bw)
        return bw.error();
      t.resources.push_back({*rname, *bw});
    }
  }
  if (Status s = rd.array("/links"); !s)
    return s.error();
  for (size_t i = 0; i < rd.at("/links").size(); ++i) {
    std::string p = jsonPath("/links", i);
    if (Status s = rd.object(p); !s)
      return s.error();
    if (Status s =
            rd.onlyKeys(p, {"src", "dst", "kind", "alpha_us", "bandwidth_gbps",
                            "beta_us_per_mb", "resources"});
        !s)
      return s.error();
    Link l;
    auto src = rd.integer(p + "/src");
    if (!src)
      return src.error();
    auto dst = rd.integer(p + "/dst");
    if (!dst)
      return dst.error();
    if (*src < 0 || *src >= *ranks)
      return rd.error(p + "/src", "rank " + std::to_string(*src) +
                                      " is not in 0.." +
                                      std::to_string(*ranks - 1));
    if (*dst < 0 || *dst >= *ranks)
      return rd.error(p + "/dst", "rank " + std::to_string(*dst) +
                                      " is not in 0.." +
                                      std::to_string(*ranks - 1));
    if (*src == *dst)
      return rd.error(p, "a link cannot connect a rank to itself");
    l.src = (int)*src;
    l.dst = (int)*dst;
    auto kind = rd.string(p + "/kind");
    if (!kind)
      return kind.error();
    auto k = parseLinkKind(*kind);
    if (!k)
      return rd.error(p + "/kind",
                      "unknown link kind '" + *kind +
                          "' (expected nvlink, pcie, rdma or shm)");
    l.kind = *k;
    auto alpha = readAlpha(rd, p);
    if (!alpha)
      return alpha.error();
    l.alphaUs = *alpha;
    auto bw = readBandwidth(rd, p);
    if (!bw)
      return bw.error();
    l.bandwidthGBps = *bw;
    if (rd.has(p, "resources")) {
      if (Status s = rd.array(p + "/resources"); !s)
        return s.error();
      for (size_t k2 = 0; k2 < rd.at(p + "/resources").size(); ++k2) {
        std::string rp = jsonPath(p + "/resources", k2);
        auto id = rd.integer(rp);
        if (!id)
          return id.error();
        if (*id < 0 || *id >= (long long)t.resources.size())
          return rd.error(rp, "resource " + std::to_string(*id) +
                                  " is not defined (there are " +
                                  std::to_string(t.resources.size()) + ")");
        l.resources.push_back((int)*id);
      }
    }
    t.links.push_back(std::move(l));
  }
  if (rd.has("", "switches"))
    if (Status s = readSwitches(rd, t); !s)
      return s.error();
  if (rd.has("", "step_model"))
    if (Status s = readStepModel(rd, t.stepModel); !s)
      return s.error();
  if (Status s = t.validate(); !s)
    return Error(s.error().message, SourceLoc{doc.file()});
  return t;
}

namespace {

/// Writes the canonical topology JSON piece by piece to `emit`: the links
/// of a 4,096-rank machine (16.7M) make gigabytes of text, which the hash
/// need not hold at once. Each link is formatted as nlohmann's dump() of
/// {src, dst, kind, alpha_us, bandwidth_gbps[, resources]} would be, with
/// its numbers' text cached (a machine has few distinct figures).
template <typename Emit>
void writeTopologyJson(const Topology &t, bool withStepModel, Emit &&emit) {
  OrderedJson j;
  j["format"] = "ccsynth-topology";
  j["version"] = 1;
  j["name"] = t.name;
  j["description"] = t.description;
  j["ranks"] = t.numRanks();
  j["node_of"] = t.nodeOf;
  std::string head = "{\n";
  for (auto it = j.begin(); it != j.end(); ++it)
    head +=
        "  " + OrderedJson(it.key()).dump() + ": " + it.value().dump() + ",\n";
  head += "  \"resources\": [";
  for (size_t i = 0; i < t.resources.size(); ++i)
    head += (i ? ",\n    " : "\n    ") +
            OrderedJson{{"name", t.resources[i].name},
                        {"bandwidth_gbps", t.resources[i].bandwidthGBps}}
                .dump();
  head += t.resources.empty() ? "]" : "\n  ]";
  head += ",\n  \"links\": [";
  emit(head);
  std::map<double, std::string> numbers;
  auto number = [&](double x) -> const std::string & {
    auto it = numbers.find(x);
    if (it == numbers.end())
      it = numbers.emplace(x, OrderedJson(x).dump()).first;
    return it->second;
  };
  std::string row;
  for (size_t i = 0; i < t.links.size(); ++i) {
    const Link &l = t.links[i];
    row = i ? ",\n    " : "\n    ";
    row += "{\"src\":" + std::to_string(l.src) +
           ",\"dst\":" + std::to_string(l.dst) + ",\"kind\":\"" +
           toString(l.kind) + "\",\"alpha_us\":" + number(l.alphaUs) +
           ",\"bandwidth_gbps\":" + number(l.bandwidthGBps);
    if (!l.resources.empty()) {
      row += ",\"resources\":[";
      for (size_t k = 0; k < l.resources.size(); ++k) {
        if (k)
          row += ',';
        row += std::to_string(l.resources[k]);
      }
      row += "]";
    }
    row += "}";
    emit(row);
  }
  emit(t.links.empty() ? "]" : "\n  ]");
  if (!t.switches.empty()) {
    std::string sws = ",\n  \"switches\": [";
    for (size_t i = 0; i < t.switches.size(); ++i) {
      const InNetworkSwitch &sw = t.switches[i];
      OrderedJson j;
      j["name"] = sw.name;
      j["kind"] = toString(sw.kind);
      j["alpha_us"] = sw.alphaUs;
      j["efficiency"] = sw.efficiency;
      sws += (i ? ",\n    " : "\n    ") + j.dump();
      sws.pop_back(); // the closing brace: ports follow, one per line
      sws += ",\"ports\":[";
      for (size_t k = 0; k < sw.ports.size(); ++k) {
        const SwitchPort &p = sw.ports[k];
        OrderedJson pj;
        pj["rank"] = p.rank;
        pj["bandwidth_gbps"] = p.bandwidthGBps;
        if (p.up >= 0)
          pj["up"] = p.up;
        if (p.down >= 0)
          pj["down"] = p.down;
        sws += (k ? ",\n      " : "\n      ") + pj.dump();
      }
      sws += "]}";
    }
    emit(sws + "\n  ]");
  }
  if (withStepModel) {
    const StepModel &m = t.stepModel;
    auto perProto = [](const double *v) {
      OrderedJson j;
      for (int i = 0; i < 3; ++i)
        j[kStepProtocols[i]] = v[i];
      return j;
    };
    OrderedJson sm;
    sm["launch_us"] = perProto(m.launchUs);
    sm["step_us"] = perProto(m.stepUs);
    sm["threadblock_copy_gbps"] = perProto(m.tbCopyGBps);
    sm["threadblock_reduce_gbps"] = perProto(m.tbReduceGBps);
    sm["step_fill_us"] = perProto(m.stepFillUs);
    sm["link_efficiency"] = m.linkEfficiency;
    sm["sm_arch"] = m.smArch;
    sm["threadblock_in_flight_bytes"] = m.tbInFlightBytes;
    sm["interpreter_step_us"] = m.interpreterStepUs;
    sm["dependency_us"] = m.dependencyUs;
    emit(",\n  \"step_model\": " + sm.dump());
  }
  emit("\n}\n");
}

} // namespace

std::string topologyToJson(const Topology &t, bool withStepModel) {
  std::string out;
  writeTopologyJson(t, withStepModel,
                    [&](const std::string &piece) { out += piece; });
  return out;
}

std::string topologyJsonHash(const Topology &topo) {
  unsigned long long h = 1469598103934665603ULL;
  writeTopologyJson(topo, /*withStepModel=*/false,
                    [&](const std::string &piece) {
                      for (unsigned char c : piece) {
                        h ^= c;
                        h *= 1099511628211ULL;
                      }
                    });
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", h);
  return hex;
}

namespace {

/// A 64-bit hash of a stream of 64-bit words: four independent lanes, each
/// a multiply-rotate-multiply round per word (so the multiplies of four
/// words overlap), folded and avalanched at the end together with the word
/// count. Strings enter as their length and their bytes packed 8 to a
/// word, so no two different streams of fields give one word stream.
class WordHasher {
public:
  void word(uint64_t w) {
    buf_[n_++] = w;
    if (n_ == 4) {
      for (int i = 0; i < 4; ++i)
        lane_[i] = round(lane_[i], buf_[i]);
      n_ = 0;
      blocks_++;
    }
  }
  void number(double x) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    word(bits);
  }
  void text(const std::string &s) {
    word(s.size());
    for (size_t i = 0; i < s.size(); i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, std::min<size_t>(8, s.size() - i));
      word(w);
    }
  }
  uint64_t finish() const {
    uint64_t h = rotl(lane_[0], 1) + rotl(lane_[1], 7) + rotl(lane_[2], 12) +
                 rotl(lane_[3], 18);
    for (int i = 0; i < n_; ++i)
      h = round(h, buf_[i]);
    h ^= blocks_ * 4 + n_;
    // Avalanche (the splitmix64 finalizer).
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
  }

private:
  static constexpr uint64_t kMul1 = 0x9e3779b97f4a7c15ULL;
  static constexpr uint64_t kMul2 = 0xc2b2ae3d27d4eb4fULL;
  static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t round(uint64_t lane, uint64_t w) {
    return rotl(lane + w * kMul2, 31) * kMul1;
  }
  uint64_t lane_[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL,
                       0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
  uint64_t buf_[4] = {};
  int n_ = 0;
  uint64_t blocks_ = 0;
};

} // namespace

std::string topologyHash(const Topology &topo, const std::atomic<bool> *stop) {
  WordHasher h;
  h.text("ccsynth-topology-hash-1");
  h.text(topo.name);
  h.text(topo.description);
  h.word(topo.nodeOf.size());
  for (int node : topo.nodeOf)
    h.word((uint64_t)(uint32_t)node);
  h.word(topo.resources.size());
  for (const Resource &r : topo.resources) {
    h.text(r.name);
    h.number(r.bandwidthGBps);
  }
  h.word(topo.links.size());
  for (size_t i = 0; i < topo.links.size(); ++i) {
    if ((i & 0xffff) == 0 && stop && stop->load(std::memory_order_relaxed))
      return {};
    const Link &l = topo.links[i];
    h.word((uint64_t)(uint32_t)l.src << 32 | (uint32_t)l.dst);
    h.word((uint64_t)l.kind << 32 | (uint32_t)l.resources.size());
    h.number(l.alphaUs);
    h.number(l.bandwidthGBps);
    for (int r : l.resources)
      h.word((uint64_t)(uint32_t)r);
  }
  // Switches enter only where a machine has them, so the hash of every
  // machine without one is what it was before switches existed.
  if (!topo.switches.empty()) {
    h.text("switches");
    h.word(topo.switches.size());
    for (const InNetworkSwitch &sw : topo.switches) {
      h.text(sw.name);
      h.word((uint64_t)sw.kind << 32 | (uint32_t)sw.ports.size());
      h.number(sw.alphaUs);
      h.number(sw.efficiency);
      for (const SwitchPort &p : sw.ports) {
        h.word((uint64_t)(uint32_t)p.rank);
        h.word((uint64_t)(uint32_t)p.up << 32 | (uint32_t)p.down);
        h.number(p.bandwidthGBps);
      }
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h.finish());
  return hex;
}

bool isTopologyFileArg(const std::string &nameOrPath) {
  return nameOrPath.find('/') != std::string::npos ||
         nameOrPath.ends_with(".json") || nameOrPath.ends_with(".xml");
}

Expected<Topology> loadTopology(const std::string &nameOrPath,
                                std::vector<Error> *warnings) {
  namespace fs = std::filesystem;
  std::error_code ec;
  bool isFile = isTopologyFileArg(nameOrPath);
  if (!isFile || !fs::exists(nameOrPath, ec)) {
    // What the system says (a symlink loop, a directory not searchable),
    // unless the file is simply not there.
    if (isFile)
      return Error("cannot open topology file '" + nameOrPath + "': " +
                   (ec && ec != std::errc::no_such_file_or_directory
                        ? ec.message()
                        : std::string("no such file")));
    return makeBuiltinTopology(nameOrPath);
  }
  auto text = readFile(nameOrPath);
  if (!text)
    return text.error();
  if (nameOrPath.ends_with(".xml")) {
    NcclImportOptions options;
    options.warnings = warnings;
    return importNcclTopology(nameOrPath, *text, options);
  }
  auto doc = JsonDocument::parse(nameOrPath, text.take());
  if (!doc)
    return doc.error();
  return parseTopologyJson(*doc);
}

} // namespace ccsynth
