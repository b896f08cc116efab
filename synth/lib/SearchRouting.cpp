//===- SearchRouting.cpp - TACCL's routing stage and the exact search -----===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Implements routingPlans (Search.h), TACCL's routing stage: it bisects
// the load bound with the solver, then minimizes depth and distinct links;
// and exactPlan, the time-expanded search for the smallest horizon.
// Sections: routing, exact. See docs/synth.md ("Method").
//
//===----------------------------------------------------------------------===//
#include "SearchInternal.h"

namespace ccsynth::synth {

using namespace detail;

std::vector<Plan> routingPlans(const RoutingProblem &p, const CostModel &cost,
                               const RoutingSearchOptions &opts,
                               SearchContext &ctx) {
  std::vector<Plan> out;
  int d0 = minDepth(p);
  int slack = opts.slack;
  long long perLevel = estimateVars(p, 1);
  while (slack > 0 && perLevel * (d0 + slack) > ctx.maxVars)
    --slack;
  int H = d0 + slack;
  if (perLevel * H > ctx.maxVars) {
    ctx.say("routing: skipped, the encoding would exceed " +
            std::to_string(ctx.maxVars) + " variables");
    return out;
  }
  EncodingOptions eo;
  eo.horizon = H;
  std::optional<FlowEncoding> encoding;
  encoding.emplace(p, eo);
  FlowEncoding *enc = &*encoding;
  std::unique_ptr<IncrementalSolver> solver;
  // Query models: the base encoding, the depth requirement, and bounds.
  std::vector<int> nics;
  if (opts.nicLinks > 0) {
    const Topology &t = *p.topo;
    std::set<int> xs;
    for (int l : p.usableLinks)
      if (!t.sameNode(t.links[l].src, t.links[l].dst))
        for (int x : t.links[l].resources)
          xs.insert(p.resourceOrbitRep[x]);
    nics.assign(xs.begin(), xs.end());
  }
  auto query = [&](int depth) {
    std::optional<BoolModel> q(enc->base());
    if (!enc->reachBy(*q, depth))
      q.reset();
    else if (!nics.empty())
      enc->distinctPerResource(*q, nics, opts.nicLinks);
    return q;
  };
  auto describe = [&] {
    ctx.say("routing: " + std::to_string(p.reps.size()) + " of " +
            std::to_string(p.values.size()) + " values encoded (symmetry), " +
            std::to_string(enc->numSendVars()) + " send variables" +
            (enc->numTiedPairs() ? ", " + std::to_string(enc->numTiedPairs()) +
                                       " tied link pairs"
                                 : std::string()) +
            ", depth <= " + std::to_string(H));
  };
  describe();
  // Depth-first: the smallest depth with any route, then bisection there.
  int depth = H;
  std::optional<BoolModel> q0;
  SolveOutcome o;
  // The first route is worth its time (only the deadline bounds it): a
  // hint bound (the heuristic's busy time) steers it to good routes.
  auto firstRoute = [&] {
    for (int d = opts.depthFirst ? d0 : H; d <= H; ++d) {
      q0 = query(d);
      if (!q0)
        continue;
      if (opts.hintBound > 0) {
        BoolModel hinted = *q0;
        enc->loadBound(hinted, linkCaps(p, cost, opts.hintBound),
                       resourceCaps(p, cost, opts.hintBound));
        o = solveFresh(hinted, ctx, 0.25, solver, /*budgeted=*/false);
        if (o.status == SolveStatus::Sat) {
          depth = d;
          return;
        }
      }
      o = solveFresh(*q0, ctx, 0.25, solver, /*budgeted=*/false);
      if (o.status == SolveStatus::Sat) {
        depth = d;
        return;
      }
    }
  };
  firstRoute();
  // TACCL's ties can leave no route at all (its model would be
  // infeasible): search without them rather than give up the solver.
  if (enc->numTiedPairs() && q0 && o.status == SolveStatus::Unsat &&
      ctx.secondsLeft() > 0.01) {
    ctx.say("routing: no route within depth " + std::to_string(H) +
            " satisfies the symmetry ties; searching without them");
    ctx.tiesUnsatisfiable = true;
    eo.ties = EncodingOptions::Ties::None;
    encoding.reset();
    encoding.emplace(p, eo);
    enc = &*encoding;
    describe();
    firstRoute();
  }
  if (!q0 || o.status != SolveStatus::Sat) {
    ctx.say("routing: no route within depth " + std::to_string(H) + " (" +
            toString(o.status) + (o.reason.empty() ? "" : ", " + o.reason) +
            ")");
    return out;
  }
  Plan best = enc->decode(*solver);
  std::string bestSmt = ctx.keepSmt ? solver->toSmtLib2() : "";
  double ub = busyTime(p, best, cost);
  // Candidate bounds: every achievable busy time up to the first route's.
  std::vector<double> points;
  double lb = loadLowerBound(p, cost);
  for (int l : p.usableLinks)
    if (p.linkOrbitRep[l] == l)
      for (int k = 1; k * cost.link[l] <= ub * (1 + 1e-9) && k < 100000; ++k)
        if (k * cost.link[l] >= lb * (1 - 1e-9))
          points.push_back(k * cost.link[l]);
  for (size_t x = 0; x < p.topo->resources.size(); ++x)
    if (p.resourceOrbitRep[x] == (int)x)
      for (int k = 1; k * cost.resource[x] <= ub * (1 + 1e-9) && k < 100000;
           ++k)
        if (k * cost.resource[x] >= lb * (1 - 1e-9))
          points.push_back(k * cost.resource[x]);
  std::sort(points.begin(), points.end());
  std::vector<double> uniq;
  for (double x : points)
    if (uniq.empty() || x > uniq.back() * (1 + 1e-9))
      uniq.push_back(x);
  if (uniq.empty() || uniq.back() < ub * (1 - 1e-9))
    uniq.push_back(ub);
  size_t lo = 0, hi = uniq.size() - 1;
  double bestBound = ub;
  bool proven = true;
  // Within 2% of the lower bound the list scheduler, not the routing,
  // decides the makespan: stop bisecting there.
  while (lo < hi && ctx.secondsLeft() > 0.01 && bestBound > lb * 1.02) {
    size_t mid = (lo + hi) / 2;
    double bound = uniq[mid];
    BoolModel q = *q0;
    enc->loadBound(q, linkCaps(p, cost, bound), resourceCaps(p, cost, bound));
    SolveOutcome r = solveFresh(q, ctx, 0.25, solver);
    ctx.say("routing: busy time <= " + fmt(bound) +
            " us: " + toString(r.status) + " (" + fmt(r.seconds) + " s)");
    if (r.status == SolveStatus::Sat) {
      best = enc->decode(*solver);
      if (ctx.keepSmt)
        bestSmt = solver->toSmtLib2();
      double got = busyTime(p, best, cost);
      bestBound = got;
      hi = mid;
      while (hi > lo && uniq[hi - 1] >= got * (1 - 1e-9))
        --hi;
    } else {
      if (r.status == SolveStatus::Unknown)
        proven = false;
      lo = mid + 1;
    }
  }
  best.method = depth < H ? "routing (depth " + std::to_string(depth) +
                                ", then min busy time)"
                          : "routing (min busy time)";
  best.provenOptimal = proven && (lo == hi || bestBound <= lb * (1 + 1e-9));
  if (ctx.keepSmt)
    best.smt = "; ccsynth routing model with the smallest busy-time bound "
               "found (" +
               fmt(bestBound) + " us)\n" + bestSmt;
  ctx.say("routing: " + describePlan(p, best, cost));
  out.push_back(best);
  // Every later query keeps the best bound.
  auto bounded = [&](int depth) {
    auto q = query(depth);
    if (q)
      enc->loadBound(*q, linkCaps(p, cost, bestBound),
                     resourceCaps(p, cost, bestBound));
    return q;
  };

  // Shallowest routes at that bound (latency).
  for (int d = d0; d < depth && ctx.secondsLeft() > 0.01; ++d) {
    auto q = bounded(d);
    if (!q)
      continue;
    SolveOutcome r = solveFresh(*q, ctx, 0.25, solver);
    if (r.status == SolveStatus::Sat) {
      Plan shallow = enc->decode(*solver);
      shallow.method =
          "routing (min busy time, depth " + std::to_string(d) + ")";
      ctx.say("routing: depth " + std::to_string(d) + ": " +
              describePlan(p, shallow, cost));
      out.push_back(std::move(shallow));
      break;
    }
  }

  // Distinct-link objectives at the best bound.
  auto distinct = [&](const std::vector<int> &links, bool atMost,
                      const std::string &what) {
    if (links.empty() || ctx.secondsLeft() <= 0.01)
      return;
    int total = 0;
    for (int l : links)
      total += p.linkOrbitSize[l];
    int lo2 = 0, hi2 = total;
    std::optional<Plan> found;
    // atMost: smallest k that is satisfiable; else largest.
    while (lo2 < hi2 && ctx.secondsLeft() > 0.01) {
      int mid = atMost ? (lo2 + hi2) / 2 : (lo2 + hi2 + 1) / 2;
      auto q = bounded(depth);
      if (!q)
        return;
      enc->distinctLinks(*q, links, mid, atMost);
      SolveOutcome r = solveFresh(*q, ctx, 0.2, solver);
      bool sat = r.status == SolveStatus::Sat;
      if (sat)
        found = enc->decode(*solver);
      if (atMost) {
        if (sat)
          hi2 = mid;
        else
          lo2 = mid + 1;
      } else {
        if (sat)
          lo2 = mid;
        else
          hi2 = mid - 1;
      }
    }
    if (found) {
      found->method = "routing (min busy time, " + what + ")";
      ctx.say("routing: " + what + ": " + describePlan(p, *found, cost));
      out.push_back(std::move(*found));
    }
  };
  for (size_t s = 0; s < p.switchStrategy.size(); ++s) {
    std::vector<int> links;
    for (int l : p.usableLinks)
      if (p.switchOfLink[l] == (int)s && p.linkOrbitRep[l] == l)
        links.push_back(l);
    bool min = p.switchStrategy[s] == HyperedgeStrategy::UcMin;
    distinct(links, min,
             std::string(min ? "uc-min" : "uc-max") + " on switch " +
                 std::to_string(s));
  }
  if (opts.concentrate && opts.nicLinks == 0) {
    // Resources loaded to within 10% of the bound decide the makespan.
    const Topology &t = *p.topo;
    std::vector<double> res(t.resources.size(), 0);
    for (const PlanSend &s : out.front().sends)
      for (int x : t.links[s.link].resources)
        res[x] += cost.resource[x];
    double top = busyTime(p, out.front(), cost);
    std::set<int> links;
    for (int l : p.usableLinks)
      for (int x : t.links[l].resources)
        if (res[x] >= 0.9 * top)
          links.insert(p.linkOrbitRep[l]);
    distinct(std::vector<int>(links.begin(), links.end()), true,
             "few links through binding resources");
  }
  return out;
}

std::optional<Plan> exactPlan(const RoutingProblem &p, const CostModel &cost,
                              SearchContext &ctx) {
  const Topology &t = *p.topo;
  int n = t.numRanks();
  double tau = std::numeric_limits<double>::infinity();
  for (int l : p.usableLinks)
    tau = std::min(tau, cost.link[l]);
  if (!std::isfinite(tau))
    return std::nullopt;
  EncodingOptions eo;
  eo.exclusiveLinks = true;
  eo.duration.assign(t.links.size(), 1);
  for (int l : p.usableLinks)
    eo.duration[l] = std::max(1, (int)std::lround(cost.link[l] / tau));
  eo.resourceCap.assign(t.resources.size(), 0);
  {
    std::vector<double> fastest(t.resources.size(), 0);
    std::vector<int> count(t.resources.size(), 0);
    for (int l : p.usableLinks)
      for (int x : t.links[l].resources) {
        fastest[x] = std::max(fastest[x], t.effectiveBandwidth(l));
        ++count[x];
      }
    for (size_t x = 0; x < t.resources.size(); ++x)
      if (count[x] > 1)
        eo.resourceCap[x] = std::max(
            1,
            (int)std::floor(t.resources[x].bandwidthGBps / fastest[x] + 1e-9));
  }
  // Lower bound on the horizon: the slowest first arrival, and every
  // rank's receptions over its in-links' capacity per slot.
  int tlb = 1;
  for (int v : p.reps) {
    std::vector<int> e(n, INT_MAX);
    e[p.values[v].origin] = 0;
    using Item = std::pair<int, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
    pq.push({0, p.values[v].origin});
    while (!pq.empty()) {
      auto [d, u] = pq.top();
      pq.pop();
      if (d > e[u])
        continue;
      for (int l : p.outLinks[u])
        if (p.allowed(v, l) && d + eo.duration[l] < e[t.links[l].dst]) {
          e[t.links[l].dst] = d + eo.duration[l];
          pq.push({e[t.links[l].dst], t.links[l].dst});
        }
    }
    for (int d : p.values[v].dests)
      tlb = std::max(tlb, e[d]);
  }
  std::vector<int> need(n, 0);
  for (const RouteValue &v : p.values)
    for (int d : v.dests)
      ++need[d];
  for (int r = 0; r < n; ++r) {
    double perSlot = 0;
    for (int l : p.inLinks[r])
      perSlot += 1.0 / eo.duration[l];
    if (perSlot > 0)
      tlb = std::max(tlb, (int)std::ceil(need[r] / perSlot - 1e-9));
  }
  // Node cuts: the values a node needs from outside (or sends out) cross
  // its boundary links, at most one transfer per link per duration, and at
  // most `cap` at a time through a covering set of shared resources.
  forEachNodeCut(p, [&](const NodeCut &cut) {
    double rate = 0;
    for (int l : cut.links)
      rate += 1.0 / eo.duration[l];
    for (size_t j = 0; j < cut.width; ++j) {
      std::vector<int> rs = cut.cover(t, j);
      if (rs.empty())
        continue;
      std::map<int, int> cover; // resource -> shortest duration through it
      bool ok = true;
      for (size_t k = 0; k < rs.size() && ok; ++k) {
        int l = cut.links[k], x = rs[k];
        ok = eo.resourceCap[x] > 0;
        auto it = cover.find(x);
        if (it == cover.end())
          cover[x] = eo.duration[l];
        else
          it->second = std::min(it->second, eo.duration[l]);
      }
      if (!ok)
        continue;
      double resRate = 0;
      for (auto [x, d] : cover)
        resRate += (double)eo.resourceCap[x] / d;
      rate = std::min(rate, resRate);
    }
    if (rate > 0)
      tlb = std::max(tlb, (int)std::ceil(cut.count / rate - 1e-9));
  });
  int H = tlb + std::max(2, tlb / 3);
  // Variables grow linearly with the horizon: one count per slot (a
  // gather on 256 ranks has 512 values and 63k links to count).
  long long perSlot = estimateVars(p, 1);
  if (perSlot > 0)
    H = std::max<long long>(tlb, std::min<long long>(H, ctx.maxVars / perSlot));
  if (perSlot * H > ctx.maxVars) {
    ctx.say("exact: skipped, the slot model would exceed " +
            std::to_string(ctx.maxVars) + " variables");
    return std::nullopt;
  }
  eo.horizon = H;
  // TACCL ties send times as well as routes, and when each chunk reaches
  // each rank.
  eo.ties = EncodingOptions::Ties::Slots;
  std::unique_ptr<IncrementalSolver> solver;
  // The smallest satisfiable horizon; `unsat` says whether every horizon
  // was proven unsatisfiable.
  auto solve = [&](bool &unsat) -> std::optional<Plan> {
    FlowEncoding enc(p, eo);
    ctx.say("exact: slot = " + fmt(tau) + " us, horizon " +
            std::to_string(tlb) + ".." + std::to_string(H) + " slots, " +
            std::to_string(enc.numSendVars()) + " send variables" +
            (enc.numTiedPairs() ? ", " + std::to_string(enc.numTiedPairs()) +
                                      " tied link pairs"
                                : std::string()) +
            (enc.numTiedArrivals()
                 ? ", " + std::to_string(enc.numTiedArrivals()) +
                       " tied arrivals"
                 : std::string()));
    unsat = enc.numTiedPairs() > 0 || enc.numTiedArrivals() > 0;
    bool proven = true;
    int unknowns = 0;
    for (int T = tlb; T <= H && unknowns < 2; ++T) {
      if (ctx.secondsLeft() <= 0.01) {
        ctx.cutShort = ctx.deadlineHit = true;
        unsat = false;
        break;
      }
      BoolModel q = enc.base();
      if (!enc.reachBy(q, T))
        continue;
      SolveOutcome r = solveFresh(q, ctx, 0.5, solver);
      ctx.say("exact: " + std::to_string(T) + " slots: " + toString(r.status) +
              " (" + fmt(r.seconds) + " s)");
      if (r.status == SolveStatus::Sat) {
        Plan plan = enc.decode(*solver);
        if (ctx.keepSmt)
          plan.smt = "; ccsynth exact slot model: satisfiable with horizon " +
                     std::to_string(T) + "\n" + solver->toSmtLib2();
        plan.method = "exact slot model (" + std::to_string(T) + " slots of " +
                      fmt(tau) + " us)";
        plan.provenOptimal = proven;
        return plan;
      }
      if (r.status == SolveStatus::Unknown) {
        proven = false;
        unsat = false;
        ++unknowns;
      }
    }
    return std::nullopt;
  };
  bool unsat = false;
  if (auto plan = solve(unsat))
    return plan;
  // As in routingPlans: ties that admit no schedule are dropped.
  if (unsat && ctx.secondsLeft() > 0.01) {
    ctx.say("exact: no horizon up to " + std::to_string(H) +
            " satisfies the symmetry ties; solving without them");
    ctx.tiesUnsatisfiable = true;
    eo.ties = EncodingOptions::Ties::None;
    return solve(unsat);
  }
  return std::nullopt;
}

} // namespace ccsynth::synth
