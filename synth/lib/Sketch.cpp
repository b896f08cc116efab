//===- Sketch.cpp - Reading TACCL communication sketches ------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements Sketch.h: SketchReader reads a TACCL sketch with located
// errors, one function per part (intranode switch groups and strategies,
// internode relays and hops, symmetry offsets, hyperparameters, and the
// in-network extension). parseSketch and loadSketch are the entry points;
// defaultSketch is the sketch used when none is given (all links, no
// symmetry).
// See docs/sketches.md.
//
//===----------------------------------------------------------------------===//
#include "ccsynth/Synth/Sketch.h"

#include "ccsynth/Support/Json.h"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace ccsynth::synth {

const char *toString(IntraStrategy s) {
  switch (s) {
  case IntraStrategy::None:
    return "none";
  case IntraStrategy::Switch:
    return "switch";
  case IntraStrategy::MaxMin:
    return "maxmin";
  case IntraStrategy::MinMax:
    return "minmax";
  }
  return "?";
}

const char *toString(HyperedgeStrategy s) {
  return s == HyperedgeStrategy::UcMin ? "uc-min" : "uc-max";
}

namespace {

/// Small helper that keeps the document and reader together.
class SketchReader {
public:
  explicit SketchReader(const JsonDocument &doc) : doc(doc), in(doc) {}

  Expected<Sketch> read();

private:
  const JsonDocument &doc;
  JsonReader in;
  Sketch sk;

  Status readIntranode();
  Status readInternode();
  Status readSymmetry();
  Status readHyperparameters();
  Status readInNetwork();
  Expected<std::vector<int>> intList(const std::string &ptr, int lo,
                                     const std::string &what);
  Expected<std::vector<SenderEntry>> senderMap(const std::string &ptr,
                                               const std::string &what);
};

Expected<std::vector<int>> SketchReader::intList(const std::string &ptr, int lo,
                                                 const std::string &what) {
  if (Status s = in.array(ptr); !s)
    return s.error();
  std::vector<int> out;
  const Json &arr = in.at(ptr);
  for (size_t i = 0; i < arr.size(); ++i) {
    auto v = in.integer(jsonPath(ptr, i));
    if (!v)
      return v.error();
    if (*v < lo || *v > 1000000)
      return in.error(jsonPath(ptr, i),
                      what + " must be an integer >= " + std::to_string(lo) +
                          " (got " + std::to_string(*v) + ")");
    out.push_back((int)*v);
  }
  std::set<int> uniq(out.begin(), out.end());
  if (uniq.size() != out.size())
    return in.error(ptr, what + " lists the same GPU twice");
  return out;
}

Expected<std::vector<SenderEntry>>
SketchReader::senderMap(const std::string &ptr, const std::string &what) {
  if (Status s = in.object(ptr); !s)
    return s.error();
  std::vector<SenderEntry> out;
  const Json &obj = in.at(ptr);
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::string key = it.key();
    std::string field = jsonPath(ptr, key);
    if (key.empty() || key.size() > 6 ||
        key.find_first_not_of("0123456789") != std::string::npos)
      return in.error(field, what + " key '" + key +
                                 "' must be a local GPU id (a non-negative "
                                 "integer in quotes)");
    SenderEntry e;
    e.sender = std::stoi(key);
    e.loc = doc.locate(field);
    auto targets = intList(field, 0, what + " entry");
    if (!targets)
      return targets.error();
    e.targets = targets.take();
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [](const SenderEntry &a, const SenderEntry &b) {
              return a.sender < b.sender;
            });
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i].sender == out[i - 1].sender)
      return Error(what + " names sender " + std::to_string(out[i].sender) +
                       " twice",
                   out[i].loc);
  return out;
}

Status SketchReader::readIntranode() {
  const std::string p = "/intranode_sketch";
  if (Status s = in.object(p); !s)
    return s;
  if (Status s =
          in.onlyKeys(p, {"strategy", "switches", "switch_hyperedge_strategy"});
      !s)
    return s;
  sk.intraLoc = doc.locate(p);
  auto strat = in.string(p + "/strategy");
  if (!strat)
    return strat.error();
  if (*strat == "none")
    sk.intra = IntraStrategy::None;
  else if (*strat == "switch")
    sk.intra = IntraStrategy::Switch;
  else if (*strat == "maxmin")
    sk.intra = IntraStrategy::MaxMin;
  else if (*strat == "minmax")
    sk.intra = IntraStrategy::MinMax;
  else
    return in.error(p + "/strategy",
                    "unknown intranode strategy '" + *strat +
                        "' (expected one of: switch, none, maxmin, minmax)");
  bool hasSwitches = in.has(p, "switches");
  bool hasStrategies = in.has(p, "switch_hyperedge_strategy");
  if (sk.intra != IntraStrategy::Switch) {
    if (hasSwitches)
      return in.error(p + "/switches", "'switches' is only meaningful with "
                                       "\"strategy\": \"switch\"");
    return Status::success();
  }
  if (!hasSwitches)
    return in.error(p, "a \"switch\" intranode sketch needs 'switches' (lists "
                       "of local GPU ids)");
  if (!hasStrategies)
    return in.error(p, "a \"switch\" intranode sketch needs "
                       "'switch_hyperedge_strategy' (one of uc-min, uc-max "
                       "per switch)");
  if (Status s = in.array(p + "/switches"); !s)
    return s;
  if (Status s = in.array(p + "/switch_hyperedge_strategy"); !s)
    return s;
  const Json &sw = in.at(p + "/switches");
  const Json &st = in.at(p + "/switch_hyperedge_strategy");
  if (sw.empty())
    return in.error(p + "/switches", "'switches' must list at least one "
                                     "switch");
  if (sw.size() != st.size())
    return in.error(p + "/switch_hyperedge_strategy",
                    "'switch_hyperedge_strategy' has " +
                        std::to_string(st.size()) + " entries but there are " +
                        std::to_string(sw.size()) +
                        " switches (one strategy per switch)");
  for (size_t i = 0; i < sw.size(); ++i) {
    std::string ptr = jsonPath(p + "/switches", i);
    auto gpus = intList(ptr, 0, "a switch's GPU id");
    if (!gpus)
      return gpus.error();
    if (gpus->size() < 2)
      return in.error(ptr, "a switch must connect at least two GPUs");
    SketchSwitch s;
    s.gpus = gpus.take();
    s.loc = doc.locate(ptr);
    std::string sptr = jsonPath(p + "/switch_hyperedge_strategy", i);
    auto name = in.string(sptr);
    if (!name)
      return name.error();
    if (*name == "uc-min")
      s.strategy = HyperedgeStrategy::UcMin;
    else if (*name == "uc-max")
      s.strategy = HyperedgeStrategy::UcMax;
    else
      return in.error(sptr, "unknown switch hyperedge strategy '" + *name +
                                "' (expected uc-min or uc-max)");
    sk.switches.push_back(std::move(s));
  }
  return Status::success();
}

Status SketchReader::readInternode() {
  const std::string p = "/internode_sketch";
  if (!in.has("", "internode_sketch")) {
    if (sk.nnodes > 1)
      return in.error("", "a sketch for " + std::to_string(sk.nnodes) +
                              " nodes needs an 'internode_sketch' (e.g. "
                              "{\"strategy\": \"relay\", \"internode_conn\": "
                              "\"direct-map\"})");
    return Status::success();
  }
  if (Status s = in.object(p); !s)
    return s;
  if (Status s = in.onlyKeys(p, {"strategy", "internode_conn",
                                 "gpus_to_sender_rev_map", "enforce_ordering",
                                 "internode_hops"});
      !s)
    return s;
  sk.hasInternode = true;
  auto strat = in.string(p + "/strategy");
  if (!strat)
    return strat.error();
  if (*strat != "relay")
    return in.error(p + "/strategy", "unknown internode strategy '" + *strat +
                                         "' (the only one is \"relay\")");
  if (!in.has(p, "internode_conn"))
    return in.error(p, "a relay internode sketch needs 'internode_conn' "
                       "({\"sender\": [receivers]}, \"fully-connected\" or "
                       "\"direct-map\")");
  std::string cp = p + "/internode_conn";
  sk.connLoc = doc.locate(cp);
  const Json &conn = in.at(cp);
  if (conn.is_string()) {
    std::string kind = conn.get<std::string>();
    if (kind == "fully-connected")
      sk.connKind = InternodeConnKind::FullyConnected;
    else if (kind == "direct-map")
      sk.connKind = InternodeConnKind::DirectMap;
    else
      return in.error(cp, "unknown internode_conn '" + kind +
                              "' (expected an object, \"fully-connected\" or "
                              "\"direct-map\")");
  } else {
    auto entries = senderMap(cp, "internode_conn");
    if (!entries)
      return entries.error();
    if (entries->empty())
      return in.error(cp, "internode_conn must name at least one sender");
    // TACCL asserts that every sender has as many receivers (it splits the
    // NIC's beta evenly over the links, taccl/cli/common.py
    // parse_and_get_topo). ccsynth's NICs are shared resources, so unequal
    // counts have a clear meaning; a sender with none does not (TACCL would
    // count it in that split, yet it has no link).
    for (const SenderEntry &e : *entries)
      if (e.targets.empty())
        return Error("internode_conn sender " + std::to_string(e.sender) +
                         " lists no receivers; leave it out, or name the "
                         "remote GPUs it sends to",
                     e.loc);
    sk.connKind = InternodeConnKind::Explicit;
    sk.conn = entries.take();
  }
  if (in.has(p, "gpus_to_sender_rev_map")) {
    std::string rp = p + "/gpus_to_sender_rev_map";
    auto entries = senderMap(rp, "gpus_to_sender_rev_map");
    if (!entries)
      return entries.error();
    sk.hasRevMap = true;
    sk.revMap = entries.take();
    sk.revMapLoc = doc.locate(rp);
  }
  if (in.has(p, "enforce_ordering")) {
    auto b = in.boolean(p + "/enforce_ordering");
    if (!b)
      return b.error();
    sk.enforceOrdering = *b;
    if (sk.enforceOrdering && !sk.hasRevMap)
      return in.error(p + "/enforce_ordering",
                      "enforce_ordering needs gpus_to_sender_rev_map (it "
                      "orders a sender's own chunks before those it relays)");
  }
  if (in.has(p, "internode_hops")) {
    auto h = in.string(p + "/internode_hops");
    if (!h)
      return h.error();
    if (*h == "direct")
      sk.hops = InternodeHops::Direct;
    else if (*h == "any")
      sk.hops = InternodeHops::Any;
    else
      return in.error(p + "/internode_hops", "unknown internode_hops '" + *h +
                                                 "' (expected \"direct\" or "
                                                 "\"any\")");
  }
  return Status::success();
}

Status SketchReader::readSymmetry() {
  if (!in.has("", "symmetry_offsets"))
    return Status::success();
  const std::string p = "/symmetry_offsets";
  if (Status s = in.array(p); !s)
    return s;
  const Json &arr = in.at(p);
  std::unordered_set<long long> distinct;
  // The entries are read from the document directly; a pointer to one is
  // made only to locate it (an error, or a distinct entry kept).
  for (size_t i = 0; i < arr.size(); ++i) {
    const Json &entry = arr[i];
    bool pair = entry.is_array() && entry.size() == 2 &&
                entry[0].is_number_integer() && entry[1].is_number_integer();
    long long off = pair ? entry[0].get<long long>() : 0;
    long long size = pair ? entry[1].get<long long>() : 0;
    if (!pair || size < 1 || size > 1000000 || off < 0 || off > 1000000) {
      // The checks below say which part is wrong and where.
      std::string ptr = jsonPath(p, i);
      if (Status s = in.array(ptr); !s)
        return s;
      if (entry.size() != 2)
        return in.error(ptr, "a symmetry offset must be a pair [offset, "
                             "group_size]");
      auto o = in.integer(jsonPath(ptr, 0));
      if (!o)
        return o.error();
      auto g = in.integer(jsonPath(ptr, 1));
      if (!g)
        return g.error();
      if (*g < 1 || *g > 1000000)
        return in.error(jsonPath(ptr, 1),
                        "the group size must be within 1..1000000");
      return in.error(jsonPath(ptr, 0), "the offset must be within 0..1000000");
    }
    // An entry that permutes the ranks as an earlier one does adds
    // nothing: only the first is kept (and checked), so the work that
    // follows grows with the distinct symmetries, not with the file.
    long long key = (off % size) * 1000001LL + size;
    if (!distinct.insert(key).second)
      continue;
    sk.symmetry.push_back({(int)off, (int)size, doc.locate(jsonPath(p, i))});
  }
  return Status::success();
}

Status SketchReader::readHyperparameters() {
  if (!in.has("", "hyperparameters"))
    return Status::success();
  const std::string p = "/hyperparameters";
  if (Status s = in.object(p); !s)
    return s;
  if (Status s = in.onlyKeys(p, {"input_chunkup", "chunkup_candidates"}); !s)
    return s;
  if (in.has(p, "input_chunkup")) {
    auto c = in.integer(p + "/input_chunkup");
    if (!c)
      return c.error();
    if (*c < 1 || *c > 1024)
      return in.error(p + "/input_chunkup",
                      "input_chunkup must be between 1 and 1024");
    sk.inputChunkup = (int)*c;
    sk.chunkupLoc = doc.locate(p + "/input_chunkup");
  }
  if (in.has(p, "chunkup_candidates")) {
    auto list = intList(p + "/chunkup_candidates", 1, "a chunkup candidate");
    if (!list)
      return list.error();
    if (list->empty())
      return in.error(p + "/chunkup_candidates",
                      "chunkup_candidates must not be empty");
    for (size_t i = 0; i < list->size(); ++i)
      if ((*list)[i] > 1024)
        return in.error(jsonPath(p + "/chunkup_candidates", i),
                        "a chunkup candidate must be at most 1024");
    sk.chunkupCandidates = list.take();
  }
  return Status::success();
}

Status SketchReader::readInNetwork() {
  if (!in.has("", "in_network"))
    return Status::success();
  const std::string p = "/in_network";
  if (Status s = in.array(p); !s)
    return s;
  std::vector<SwitchKind> kinds;
  for (size_t i = 0; i < in.at(p).size(); ++i) {
    std::string ptr = jsonPath(p, i);
    auto name = in.string(ptr);
    if (!name)
      return name.error();
    auto kind = parseSwitchKind(*name);
    if (!kind)
      return in.error(ptr, "unknown in-network switch kind '" + *name +
                               "' (expected nvls or sharp)");
    if (std::find(kinds.begin(), kinds.end(), *kind) != kinds.end())
      return in.error(ptr, "in_network lists '" + *name + "' twice");
    kinds.push_back(*kind);
  }
  sk.inNetwork = std::move(kinds);
  sk.inNetworkLoc = doc.locate(p);
  return Status::success();
}

Expected<Sketch> SketchReader::read() {
  sk.file = doc.file();
  if (!doc.root().is_object())
    return in.error("", "a sketch must be a JSON object");
  if (Status s =
          in.onlyKeys("", {"nnodes", "intranode_sketch", "internode_sketch",
                           "symmetry_offsets", "hyperparameters", "in_network",
                           "description"});
      !s)
    return s.error();
  auto n = in.integer("/nnodes");
  if (!n)
    return n.error();
  if (*n < 1 || *n > 4096)
    return in.error("/nnodes", "nnodes must be between 1 and 4096");
  sk.nnodes = (int)*n;
  sk.nnodesLoc = doc.locate("/nnodes");
  if (!in.has("", "intranode_sketch"))
    return in.error("", "missing field 'intranode_sketch' (e.g. "
                        "{\"strategy\": \"none\"})");
  if (Status s = readIntranode(); !s)
    return s.error();
  if (Status s = readInternode(); !s)
    return s.error();
  if (Status s = readSymmetry(); !s)
    return s.error();
  if (Status s = readHyperparameters(); !s)
    return s.error();
  if (Status s = readInNetwork(); !s)
    return s.error();
  if (in.has("", "description")) {
    if (auto d = in.string("/description"); !d)
      return d.error();
  }
  return std::move(sk);
}

} // namespace

Expected<Sketch> parseSketch(const JsonDocument &doc) {
  return SketchReader(doc).read();
}

Expected<Sketch> loadSketch(const std::string &path, const JsonStop &stop) {
  auto text = readFile(path, kMaxSketchBytes, "a sketch");
  if (!text)
    return text.error();
  auto doc = JsonDocument::parse(path, text.take(), stop);
  if (!doc)
    return doc.error();
  return parseSketch(*doc);
}

Expected<Sketch> loadSketch(const std::string &path) {
  return loadSketch(path, JsonStop{});
}

Sketch defaultSketch(int nnodes) {
  Sketch s;
  s.nnodes = nnodes;
  s.hasInternode = nnodes > 1;
  s.connKind = InternodeConnKind::FullyConnected;
  s.hops = InternodeHops::Any;
  return s;
}

} // namespace ccsynth::synth
