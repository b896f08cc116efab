//===- TacclProfile.cpp - TACCL topology profiles on built-in shapes -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Topology/TacclProfile.h"

#include "ccsynth/Support/Json.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace ccsynth {

namespace {

std::string fmtNum(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

} // namespace

Expected<Topology> applyTacclProfile(const Topology &shape,
                                     const std::string &path,
                                     const TacclProfileUnits &units) {
  auto doc = JsonDocument::load(path);
  if (!doc)
    return doc.error();
  return applyTacclProfile(shape, *doc, units);
}

Expected<Topology> applyTacclProfile(const Topology &shape,
                                     const JsonDocument &doc,
                                     const TacclProfileUnits &units) {
  if (!(std::isfinite(units.sizeMB) && units.sizeMB > 0) ||
      !(std::isfinite(units.scale) && units.scale > 0))
    return Error("the profile's size (MB) and scale must be positive");
  const std::string &path = doc.file();
  JsonReader in(doc);
  if (Status s = in.object(""); !s)
    return s.error();
  for (const char *custom : {"links", "betas", "invbws"})
    if (in.has("", custom))
      return in.error(jsonPath("", custom),
                      std::string("'") + custom +
                          "' belongs to TACCL's \"custom\" profiles, which "
                          "describe their own machine; write it as a ccsynth "
                          "topology JSON (docs/formats.md) instead of "
                          "applying it to a built-in shape");
  if (Status s = in.onlyKeys(
          "", {"name", "gpus_per_node", "nics_per_node", "alpha",
               "node_betas_list", "node_invbws_list", "remote_alpha",
               "remote_beta", "remote_invbw"});
      !s)
    return s.error();

  Topology t = shape;
  int nodes = t.numNodes();
  std::vector<int> node0 = t.ranksOfNode(0);
  int gpus = (int)node0.size();

  std::string profileName;
  if (in.has("", "name")) {
    auto nm = in.string("/name");
    if (!nm)
      return nm.error();
    profileName = *nm;
  }
  if (in.has("", "gpus_per_node")) {
    auto v = in.integer("/gpus_per_node");
    if (!v)
      return v.error();
    if (*v != gpus)
      return in.error("/gpus_per_node",
                      "gpus_per_node is " + std::to_string(*v) +
                          " but nodes of '" + t.name + "' have " +
                          std::to_string(gpus) + " GPUs");
  }
  auto nonNegative = [&](const std::string &ptr) -> Expected<double> {
    auto v = in.number(ptr);
    if (!v)
      return v.error();
    if (!std::isfinite(*v) || *v < 0)
      return in.error(ptr, "must be a finite number >= 0");
    return *v;
  };
  // µs from a profile alpha, GB/s from a profile beta.
  auto alphaOf = [&](const std::string &ptr) -> Expected<double> {
    auto a = nonNegative(ptr);
    if (!a)
      return a.error();
    double us = *a / units.scale;
    if (!isUsableAlpha(us))
      return in.error(ptr, "alpha " + fmtNum(*a) + " gives a latency of " +
                               fmtNum(us) + " us, out of range: it must be " +
                               alphaRangeText());
    return us;
  };
  auto bandwidthOf = [&](const std::string &ptr) -> Expected<double> {
    auto b = nonNegative(ptr);
    if (!b)
      return b.error();
    double usPerMB = *b / (units.scale * units.sizeMB);
    double gbps = usPerMB > 0 ? 1e3 / usPerMB : 0;
    if (*b <= 0)
      return in.error(ptr, "beta " + fmtNum(*b) +
                               " must be positive (µs per MB of data)");
    if (!isUsableBandwidth(gbps))
      return in.error(
          ptr, "beta " + fmtNum(*b) + " gives a bandwidth of " + fmtNum(gbps) +
                   " GB/s, out of range: it must be " + bandwidthRangeText());
    return gbps;
  };

  if (!in.has("", "alpha"))
    return in.error("", "a TACCL topology profile needs 'alpha' (µs, "
                        "intra-node links)");
  auto alpha = alphaOf("/alpha");
  if (!alpha)
    return alpha.error();
  if (!in.has("", "node_betas_list"))
    return in.error("", "a TACCL topology profile needs 'node_betas_list' "
                        "(one beta per class of intra-node link, fastest "
                        "first)");
  if (Status s = in.array("/node_betas_list"); !s)
    return s.error();
  size_t numBetas = in.at("/node_betas_list").size();
  std::vector<double> classGBps;
  for (size_t i = 0; i < numBetas; ++i) {
    auto bw = bandwidthOf(jsonPath("/node_betas_list", i));
    if (!bw)
      return bw.error();
    if (!classGBps.empty() && *bw > classGBps.back())
      return in.error(jsonPath("/node_betas_list", i),
                      "node_betas_list must be in increasing order (the "
                      "fastest link class first, as TACCL's ndv2 shape "
                      "reads it)");
    classGBps.push_back(*bw);
  }
  if (in.has("", "node_invbws_list")) {
    if (Status s = in.array("/node_invbws_list"); !s)
      return s.error();
    size_t m = in.at("/node_invbws_list").size();
    if (m != numBetas)
      return in.error("/node_invbws_list",
                      "node_invbws_list has " + std::to_string(m) +
                          " entries but node_betas_list has " +
                          std::to_string(numBetas));
    for (size_t i = 0; i < m; ++i)
      if (auto v = nonNegative(jsonPath("/node_invbws_list", i)); !v)
        return v.error();
  }
  if (in.has("", "remote_invbw"))
    if (auto v = nonNegative("/remote_invbw"); !v)
      return v.error();

  // Intra-node link classes of the shape, fastest first.
  std::set<double, std::greater<double>> classes;
  for (const Link &l : t.links)
    if (t.sameNode(l.src, l.dst))
      classes.insert(l.bandwidthGBps);
  if (classes.size() != numBetas) {
    std::string list;
    for (double c : classes)
      list += (list.empty() ? "" : ", ") + fmtNum(c);
    return in.error("/node_betas_list",
                    "'" + t.name + "' has " + std::to_string(classes.size()) +
                        " class" + (classes.size() == 1 ? "" : "es") +
                        " of intra-node links (" + list +
                        " GB/s): node_betas_list needs " +
                        std::to_string(classes.size()) +
                        (classes.size() == 1 ? " beta" : " betas, fastest "
                                                         "class first"));
  }
  std::map<double, double> newOf;
  {
    size_t i = 0;
    for (double c : classes)
      newOf[c] = classGBps[i++];
  }

  // Between nodes.
  double remoteAlpha = 0, remoteGBps = 0;
  bool multi = nodes > 1;
  if (multi) {
    for (const char *k : {"remote_alpha", "remote_beta"})
      if (!in.has("", k))
        return in.error("", "'" + t.name + "' has " + std::to_string(nodes) +
                                " nodes: the profile needs '" + k + "'");
    auto ra = alphaOf("/remote_alpha");
    if (!ra)
      return ra.error();
    auto rb = bandwidthOf("/remote_beta");
    if (!rb)
      return rb.error();
    remoteAlpha = *ra;
    remoteGBps = *rb;
  } else {
    for (const char *k : {"remote_alpha", "remote_beta"})
      if (in.has("", k))
        if (auto v = nonNegative(jsonPath("", k)); !v)
          return v.error();
  }
  if (in.has("", "nics_per_node")) {
    auto v = in.integer("/nics_per_node");
    if (!v)
      return v.error();
    if (multi) {
      // NICs of node 0: resources crossed only by links leaving node 0 that
      // reach every rank of the other nodes (an ingress NIC reaches only its
      // own GPUs); with two nodes a NIC shared by all GPUs looks the same
      // both ways, hence distinct link sets.
      std::map<int, std::vector<int>> linksOf;
      for (size_t i = 0; i < t.links.size(); ++i)
        for (int x : t.links[i].resources)
          linksOf[x].push_back((int)i);
      int remote = t.numRanks() - gpus;
      std::set<std::vector<int>> nicSets;
      for (auto &[x, ls] : linksOf) {
        std::set<int> dsts;
        bool out = true;
        for (int i : ls) {
          const Link &l = t.links[i];
          out = out && t.nodeOf[l.src] == 0 && t.nodeOf[l.dst] != 0;
          dsts.insert(l.dst);
        }
        if (out && (int)dsts.size() == remote)
          nicSets.insert(ls);
      }
      int nics = (int)nicSets.size();
      if (*v != nics)
        return in.error("/nics_per_node",
                        "nics_per_node is " + std::to_string(*v) +
                            " but nodes of '" + t.name + "' have " +
                            std::to_string(nics));
    }
  }

  // Apply: every link takes its class's figures; resources scale with the
  // one class of links that crosses them.
  std::vector<double> factor(t.links.size());
  for (size_t i = 0; i < t.links.size(); ++i) {
    Link &l = t.links[i];
    double bw = t.sameNode(l.src, l.dst) ? newOf[l.bandwidthGBps] : remoteGBps;
    factor[i] = bw / l.bandwidthGBps;
    l.bandwidthGBps = bw;
    l.alphaUs = t.sameNode(l.src, l.dst) ? *alpha : remoteAlpha;
  }
  std::vector<double> resFactor(t.resources.size(), -1);
  for (size_t i = 0; i < t.links.size(); ++i)
    for (int x : t.links[i].resources) {
      if (resFactor[x] >= 0 && resFactor[x] != factor[i])
        return in.error("", "the shared resource '" + t.resources[x].name +
                                "' of '" + t.name +
                                "' is crossed by links of different classes; "
                                "a TACCL profile does not say how to scale "
                                "it");
      resFactor[x] = factor[i];
    }
  for (size_t x = 0; x < t.resources.size(); ++x)
    if (resFactor[x] >= 0)
      t.resources[x].bandwidthGBps *= resFactor[x];
  t.description += "; with TACCL topology profile " +
                   (profileName.empty() ? std::string()
                                        : "'" + profileName + "' ") +
                   "(" + path + ")";
  // A shared resource scaled out of range is the profile's doing.
  if (Status s = t.validate(); !s)
    return Error(s.error().message + " (after applying the profile)",
                 SourceLoc{path});
  return t;
}

} // namespace ccsynth
