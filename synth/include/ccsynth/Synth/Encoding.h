//===- Encoding.h - Time-expanded route encodings and routing plans -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// One encoding serves two solver stages:
//   - exact (SCCL/TE-CCL style): slots are units of time; a transfer over a
//     link occupies that link for duration[l] slots and each link (and each
//     shared resource, up to its capacity) carries one transfer at a time.
//     The smallest horizon that is satisfiable is the optimal makespan of
//     the slot model.
//   - routing (TACCL style): slots are hop levels (every duration is 1) and
//     nothing limits a level; instead guarded bounds cap each link's and
//     resource's total load, minimized by the caller.
// Variables exist for representative values only (symmetry); the loads of
// a link sum the images of every value's route. The problem's partial
// symmetries (RoutingProblem::ties) equate sends of different
// representatives, as TACCL's symmetry constraints do. send(v, l, t) says value
// v starts crossing link l in slot t; has(v, r, t) that rank r holds v at the
// end of slot t.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Synth/Problem.h"
#include "ccsynth/Synth/Solver.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ccsynth::synth {

/// A route plan: for every value, the transfers that carry it, each from a
/// rank that already holds it. Slots order the transfers (a transfer's
/// parent always has a smaller slot).
struct PlanSend {
  int value = 0;
  int link = 0;
  /// Index of the send that brought the value to the link's source, or -1
  /// when the source is the value's origin.
  int parent = -1;
  int slot = 0;
};

struct Plan {
  std::vector<PlanSend> sends;
  /// Which method produced it, for reports ("exact T=7", "routing", ...).
  std::string method;
  bool provenOptimal = false;
  /// SMT-LIB text of the encoding that produced it (when requested).
  std::string smt;
};

/// Appends to `plan` the route tree of orbit representative `rep` and its
/// images under the sketch's symmetry (one tree per value of the orbit).
/// recvLink[r] is the link over which rank r receives the value (-1: r is
/// not on the tree) and slot[r] the slot (or level) of that reception;
/// sends are appended parents first. `onSend(value, link)` is called for
/// each appended send.
void appendOrbitTrees(const RoutingProblem &p, int rep,
                      const std::vector<int> &recvLink,
                      const std::vector<int> &slot, Plan &plan,
                      const std::function<void(int, int)> &onSend = {});

struct EncodingOptions {
  /// Number of slots (exact) or levels (routing).
  int horizon = 1;
  /// Slots a transfer occupies per link (0 or absent = 1).
  std::vector<int> duration;
  /// Exact mode: one transfer at a time per link, and at most
  /// resourceCap[x] at a time through resource x (0 = unlimited).
  bool exclusiveLinks = false;
  std::vector<int> resourceCap;
  /// Each value enters each node at most once (when the problem's nodes
  /// are connected). Right for bandwidth, wrong for latency: parallel
  /// entries into one node shorten the depth.
  bool enterNodesOnce = false;
  /// What the problem's symmetry ties equate: nothing; routes (v crosses
  /// link l iff its image crosses the image link: TACCL's is_sent); or
  /// sends slot by slot (TACCL's send times too: the exact slot model).
  enum class Ties { None, Routes, Slots };
  Ties ties = Ties::Routes;
};

/// Builds the base encoding; queries (horizon, load bounds, distinct-link
/// bounds) are added as permanent constraints to a copy of it. (Guarding
/// them with assumption literals instead makes Z3's cardinality reasoning
/// orders of magnitude slower, so every query gets a fresh solver.)
class FlowEncoding {
public:
  FlowEncoding(const RoutingProblem &problem, const EncodingOptions &options);

  const BoolModel &base() const { return m; }
  int numSendVars() const { return (int)vars.size(); }
  /// Pairs of (representative, link) tied by the problem's partial
  /// symmetries (0 without ties or with Ties::None).
  int numTiedPairs() const { return tiedPairs; }
  /// Pairs of (representative, rank) whose arrival slots are tied (the
  /// exact slot model only: Ties::Slots).
  int numTiedArrivals() const { return tiedArrivals; }

  /// Requires every destination to hold its value by the end of slot `t`
  /// (<= horizon). False when some destination cannot be reached by then.
  bool reachBy(BoolModel &q, int t) const;
  /// Caps the number of transfers over every link l at linkCap[l] and
  /// through every resource x at resCap[x] (negative = no bound). Caps are
  /// read at orbit representatives.
  void loadBound(BoolModel &q, const std::vector<int> &linkCap,
                 const std::vector<int> &resCap);
  /// Bounds the weighted number of distinct links used among `links`
  /// (orbit representatives; weight = orbit size): at most `k` when
  /// `atMost`, at least `k` otherwise.
  void distinctLinks(BoolModel &q, const std::vector<int> &links, int k,
                     bool atMost);

  /// At most `m` distinct links through each of the given resources
  /// (orbit representatives) carry traffic: e.g. m = 1 on NICs forces one
  /// ring or chain per NIC rail.
  void distinctPerResource(BoolModel &q, const std::vector<int> &resources,
                           int m);

  /// Reads the plan from a satisfying assignment: representative routes,
  /// pruned of transfers that serve no destination, mapped to every value.
  Plan decode(const IncrementalSolver &solver) const;

private:
  const RoutingProblem &p;
  EncodingOptions opts;
  BoolModel m;

  struct Var {
    int rep; ///< index into p.reps
    int link;
    int slot;
    int lit;
  };
  std::vector<Var> vars;
  /// Per (rep index, link): indices into vars, by slot.
  std::vector<std::vector<std::vector<int>>> byRepLink;
  /// Per (rep index, link): literal "the rep's route crosses the link" (the
  /// OR, and by one-reception-per-rank the sum, of its slot variables), or
  /// 0. Load bounds sum these: fewer terms than slot variables.
  std::vector<std::vector<int>> crosses;
  /// has literals: per rep index, per rank, per slot (0 = never).
  std::vector<std::vector<std::vector<int>>> hasLit;
  std::vector<std::vector<int>> earliest; ///< per rep index, per rank

  int dur(int l) const;
  void encodeRep(int ri);
  void encodeExclusive();
  void encodeTies();
  /// The exact slot model's ties of arrival slots (TACCL's start times).
  void encodeArrivalTies();
  /// Calls fn(tie, v, w, rep index of v, rep index of w) for each value v
  /// and its image w under each of the problem's ties.
  template <typename Fn> void forEachTiedPair(Fn &&fn) const;
  /// Whether rep index ri could cross link l starting in slot s (any slot
  /// when s is 0) if the encoding had kept every useless send: TACCL's
  /// model has such a send, so a tie to it leaves the other side free.
  bool possible(int ri, int l, int s) const;
  int tiedPairs = 0, tiedArrivals = 0;
  /// Every (rep index, link) pair whose sends count against link l's load
  /// (the images of all values' routes on l).
  const std::vector<std::pair<int, int>> &loadTerms(int l);
  /// A query literal equivalent to "some value's route crosses link l".
  int usedLiteral(BoolModel &q, int l);
  std::map<int, std::vector<std::pair<int, int>>> termCache;
  std::vector<int> idxOfRep; ///< per value id: index into p.reps or -1
};

} // namespace ccsynth::synth
