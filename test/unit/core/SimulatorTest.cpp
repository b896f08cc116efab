// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the event-driven simulator against hand-computed times.
#include "ccsynth/Analysis/LowerBound.h"
#include "ccsynth/Analysis/Simulator.h"
#include "ccsynth/Schedule/Verifier.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

using namespace ccsynth;

namespace {

/// `ranks` ranks with `chunks` input and output chunks each and no
/// postcondition: the simulator only times data movement, so a schedule
/// may move anything. A chunk is bytes / chunks.
Collective scratchpad(int ranks, int chunks) {
  std::vector<std::vector<int>> pre(ranks);
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < chunks; ++i)
      pre[r].push_back(r * chunks + i);
  std::vector<std::vector<std::optional<std::vector<int>>>> post(
      ranks, std::vector<std::optional<std::vector<int>>>(chunks));
  auto c = Collective::custom("scratchpad", ranks, chunks, chunks, pre, post);
  REQUIRE(c.ok());
  return *c;
}

Schedule makeSchedule(Collective col, std::vector<Transfer> transfers,
                      int scratch = 0) {
  Schedule s;
  s.name = "test";
  s.collective = std::move(col);
  s.scratchChunks = scratch;
  s.transfers = std::move(transfers);
  return s;
}

Transfer xfer(int srcRank, BufferKind sb, int si, int dstRank, BufferKind db,
              int di, int step, int count = 1,
              TransferOp op = TransferOp::Copy, int link = -1) {
  Transfer t;
  t.src = {srcRank, sb, si};
  t.dst = {dstRank, db, di};
  t.count = count;
  t.op = op;
  t.step = step;
  t.link = link;
  return t;
}

constexpr auto In = BufferKind::Input;
constexpr auto Out = BufferKind::Output;
constexpr auto Scr = BufferKind::Scratch;

/// `n` ranks in one node, a 25 GB/s, 0.7 µs link between every pair.
Topology fullyConnected(int n, double gbps = 25, double alpha = 0.7) {
  Topology t;
  t.name = "fc";
  t.nodeOf.assign(n, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j)
        t.links.push_back({i, j, LinkKind::NVLink, alpha, gbps, {}});
  return t;
}

SimResult run(const Schedule &s, const Topology &t, double bytes,
              bool timeline = true) {
  SimOptions o;
  o.bytes = bytes;
  o.recordTimeline = timeline;
  auto r = simulate(s, t, o);
  if (!r.ok())
    FAIL(r.error().format());
  return *r;
}

} // namespace

TEST_CASE("one transfer takes alpha plus size over bandwidth", "[sim]") {
  Topology t = fullyConnected(2);
  Schedule s = makeSchedule(scratchpad(2, 1), {xfer(0, In, 0, 1, Out, 0, 0)});
  SimResult r = run(s, t, 1e6);
  // 1 MB over 25 GB/s = 40 µs, plus 0.7 µs of latency.
  CHECK(r.timeUs == Approx(40.7));
  CHECK(r.algbwGBps == Approx(1e6 / 40.7e3));
  CHECK(r.busbwGBps == Approx(r.algbwGBps)); // custom: factor 1
  REQUIRE(r.timeline.size() == 1);
  CHECK(r.timeline[0].link == 0);
  CHECK(r.timeline[0].startUs == 0);
  CHECK(r.timeline[0].endUs == Approx(40.7));
}

TEST_CASE("chunk size is the buffer divided by the collective's divisor",
          "[sim]") {
  Topology t = fullyConnected(2);
  // 4 chunks per rank: 4 MB buffer -> 1 MB chunks; a count-2 transfer moves
  // 2 MB.
  Schedule s =
      makeSchedule(scratchpad(2, 4), {xfer(0, In, 0, 1, Out, 0, 0, 2)});
  CHECK(run(s, t, 4e6).timeUs == Approx(80.7));
  // Chunks are rounded up to whole bytes: 3 bytes / 4 chunks = 1 byte each.
  Schedule one =
      makeSchedule(scratchpad(2, 4), {xfer(0, In, 0, 1, Out, 0, 0, 1)});
  CHECK(run(one, t, 3).timeUs == Approx(0.7 + 1 / 25e3));
}

TEST_CASE("transfers on one link run one after the other", "[sim]") {
  Topology t = fullyConnected(2);
  Schedule s = makeSchedule(scratchpad(2, 2), {xfer(0, In, 0, 1, Out, 0, 0),
                                               xfer(0, In, 1, 1, Out, 1, 0)});
  SimResult r = run(s, t, 2e6);
  CHECK(r.timeUs == Approx(81.4));
  CHECK(r.timeline[1].startUs == Approx(40.7));
  // Schedule order decides who goes first, even across positions of steps:
  // the step-0 transfer runs before the step-1 one listed earlier.
  Schedule later = makeSchedule(scratchpad(2, 2), {xfer(0, In, 0, 1, Out, 0, 1),
                                                   xfer(0, In, 1, 1, Out, 1, 0)});
  SimResult r2 = run(later, t, 2e6);
  CHECK(r2.timeline[1].startUs == 0);
  CHECK(r2.timeline[0].startUs == Approx(40.7));
}

TEST_CASE("parallel links between one pair carry transfers at once", "[sim]") {
  Topology t = fullyConnected(2);
  t.links.push_back({0, 1, LinkKind::NVLink, 0.7, 25, {}}); // link 2
  Schedule s = makeSchedule(scratchpad(2, 2),
                            {xfer(0, In, 0, 1, Out, 0, 0, 1, TransferOp::Copy, 0),
                             xfer(0, In, 1, 1, Out, 1, 0, 1, TransferOp::Copy, 2)});
  CHECK(run(s, t, 2e6).timeUs == Approx(40.7));
}

TEST_CASE("link -1 picks the fastest link", "[sim]") {
  Topology t;
  t.name = "two-links";
  t.nodeOf = {0, 0};
  t.links.push_back({0, 1, LinkKind::PCIe, 0.2, 10, {}});
  t.links.push_back({0, 1, LinkKind::NVLink, 0.7, 50, {}});
  Schedule s = makeSchedule(scratchpad(2, 1), {xfer(0, In, 0, 1, Out, 0, 0)});
  SimResult r = run(s, t, 1e6);
  CHECK(r.timeline[0].link == 1);
  CHECK(r.timeUs == Approx(0.7 + 20));
}

TEST_CASE("transfers through one switch port share its bandwidth", "[sim]") {
  // Rank 0 reaches ranks 1 and 2 through one 50 GB/s egress port; each link
  // alone could also do 50 GB/s.
  Topology t;
  t.name = "switch";
  t.nodeOf = {0, 0, 0};
  t.resources.push_back({"r0.out", 50});
  t.links.push_back({0, 1, LinkKind::NVLink, 0.7, 50, {0}});
  t.links.push_back({0, 2, LinkKind::NVLink, 0.7, 50, {0}});

  Schedule alone =
      makeSchedule(scratchpad(3, 1), {xfer(0, In, 0, 1, Out, 0, 0)});
  CHECK(run(alone, t, 1e6).timeUs == Approx(20.7));

  Schedule both = makeSchedule(scratchpad(3, 1), {xfer(0, In, 0, 1, Out, 0, 0),
                                                  xfer(0, In, 0, 2, Out, 0, 0)});
  SimResult r = run(both, t, 1e6);
  CHECK(r.timeline[0].endUs == Approx(40.7));
  CHECK(r.timeline[1].endUs == Approx(40.7));

  // Unequal sizes: both stream at 25 GB/s until the 1 MB one ends at 40.7;
  // the 2 MB one then has 1 MB left at the full 50 GB/s: 20 µs more.
  Schedule uneven =
      makeSchedule(scratchpad(3, 2), {xfer(0, In, 0, 1, Out, 0, 0, 1),
                                      xfer(0, In, 0, 2, Out, 0, 0, 2)});
  SimResult u = run(uneven, t, 2e6);
  CHECK(u.timeline[0].endUs == Approx(40.7));
  CHECK(u.timeline[1].endUs == Approx(60.7));
}

TEST_CASE("a flow capped by its own link leaves the rest to others", "[sim]") {
  // Max-min fairness: the 10 GB/s link takes 10 of the 50 GB/s port, the
  // other transfer gets the remaining 40.
  Topology t;
  t.name = "capped";
  t.nodeOf = {0, 0, 0};
  t.resources.push_back({"r0.out", 50});
  t.links.push_back({0, 1, LinkKind::PCIe, 0.7, 10, {0}});
  t.links.push_back({0, 2, LinkKind::NVLink, 0.7, 50, {0}});
  Schedule s = makeSchedule(scratchpad(3, 1), {xfer(0, In, 0, 1, Out, 0, 0),
                                               xfer(0, In, 0, 2, Out, 0, 0)});
  SimResult r = run(s, t, 1e6);
  CHECK(r.timeline[0].endUs == Approx(100.7));
  CHECK(r.timeline[1].endUs == Approx(25.7));
}

TEST_CASE("a late starter joins the shared port mid-stream", "[sim]") {
  // Transfer B starts only after A's latency... both have alpha 0.7, but C
  // (to rank 2) waits for a 1 µs local copy first, so it joins A late.
  Topology t;
  t.name = "switch";
  t.nodeOf = {0, 0, 0};
  t.resources.push_back({"r0.out", 50});
  t.links.push_back({0, 1, LinkKind::NVLink, 0.7, 50, {0}});
  t.links.push_back({0, 2, LinkKind::NVLink, 0.7, 50, {0}});
  Schedule s = makeSchedule(scratchpad(3, 2),
                            {xfer(0, In, 0, 1, Out, 0, 0),  // A: 1 MB
                             xfer(0, In, 1, 0, Out, 1, 0),  // local, 1 µs
                             xfer(0, Out, 1, 2, Out, 0, 1)}); // C after it
  SimOptions o;
  o.bytes = 2e6;
  o.localCopyGBps = 1000;
  o.recordTimeline = true;
  auto r = simulate(s, t, o);
  REQUIRE(r.ok());
  // A streams alone at 50 GB/s from 0.7 to 1.7 (50 KB), then shares at 25
  // with C (from 1.7): A has 950 KB left -> 38 µs -> ends at 39.7; C has
  // sent 950 KB by then and finishes its last 50 KB alone at 50 GB/s.
  CHECK(r->timeline[1].endUs == Approx(1.0));
  CHECK(r->timeline[2].startUs == Approx(1.0));
  CHECK(r->timeline[0].endUs == Approx(39.7));
  CHECK(r->timeline[2].endUs == Approx(40.7));
}

TEST_CASE("a chain waits for the data it forwards", "[sim]") {
  Topology t = fullyConnected(3);
  Schedule s = makeSchedule(scratchpad(3, 1),
                            {xfer(0, In, 0, 1, Scr, 0, 0),
                             xfer(1, Scr, 0, 2, Out, 0, 1)},
                            1);
  SimResult r = run(s, t, 1e6);
  CHECK(r.timeline[1].startUs == Approx(40.7));
  CHECK(r.timeUs == Approx(81.4));
}

TEST_CASE("steps are not barriers between independent transfers", "[sim]") {
  Topology t = fullyConnected(3);
  Schedule s = makeSchedule(scratchpad(3, 1), {xfer(0, In, 0, 1, Out, 0, 0),
                                               xfer(2, In, 0, 0, Out, 0, 1)});
  SimResult r = run(s, t, 1e6);
  CHECK(r.timeline[1].startUs == 0);
  CHECK(r.timeUs == Approx(40.7));
}

TEST_CASE("a reduce waits for the earlier write of its destination",
          "[sim]") {
  Topology t = fullyConnected(3);
  // Step 0: rank 1 copies into rank 0's output; step 1: rank 2 reduces into
  // the same slot over another link, so it must wait.
  Schedule s = makeSchedule(
      scratchpad(3, 1),
      {xfer(1, In, 0, 0, Out, 0, 0),
       xfer(2, In, 0, 0, Out, 0, 1, 1, TransferOp::Reduce)});
  SimResult r = run(s, t, 1e6);
  CHECK(r.timeline[1].startUs == Approx(40.7));
  CHECK(r.timeUs == Approx(81.4));
}

TEST_CASE("an overwrite waits for earlier readers of its slot", "[sim]") {
  Topology t = fullyConnected(3);
  // Rank 0's input chunk is read by a transfer to rank 1, then overwritten
  // by a transfer from rank 2 (write-after-read).
  Schedule s = makeSchedule(scratchpad(3, 1), {xfer(0, In, 0, 1, Out, 0, 0),
                                               xfer(2, In, 0, 0, In, 0, 1)});
  SimResult r = run(s, t, 1e6);
  CHECK(r.timeline[1].startUs == Approx(40.7));
}

TEST_CASE("in-place aliases are one slot for dependencies", "[sim]") {
  Topology t = fullyConnected(2);
  auto col = Collective::builtin(CollectiveKind::AllGather, 2, 1, true);
  REQUIRE(col.ok());
  // In-place allgather: rank 0's input chunk 0 is its output chunk 0. The
  // second transfer reads output[0], written through the input alias.
  Schedule s = makeSchedule(*col, {xfer(1, In, 0, 0, In, 0, 0),
                                   xfer(0, Out, 0, 1, Out, 0, 1)});
  SimResult r = run(s, t, 2e6);
  CHECK(r.timeline[1].startUs == Approx(40.7));
}

TEST_CASE("local copies use the local bandwidth and share it", "[sim]") {
  Topology t = fullyConnected(2);
  SimOptions o;
  o.bytes = 2e6;
  o.localCopyGBps = 1000;
  o.recordTimeline = true;
  Schedule one = makeSchedule(scratchpad(2, 2), {xfer(0, In, 0, 0, Out, 0, 0)});
  auto r1 = simulate(one, t, o);
  REQUIRE(r1.ok());
  CHECK(r1->timeUs == Approx(1.0)); // no alpha, 1 MB at 1000 GB/s
  CHECK(r1->timeline[0].link == -1);
  Schedule two = makeSchedule(scratchpad(2, 2), {xfer(0, In, 0, 0, Out, 0, 0),
                                                 xfer(0, In, 1, 0, Out, 1, 0)});
  auto r2 = simulate(two, t, o);
  REQUIRE(r2.ok());
  CHECK(r2->timeUs == Approx(2.0));
  // Different ranks copy independently.
  Schedule apart = makeSchedule(scratchpad(2, 2), {xfer(0, In, 0, 0, Out, 0, 0),
                                                   xfer(1, In, 0, 1, Out, 0, 0)});
  auto r3 = simulate(apart, t, o);
  REQUIRE(r3.ok());
  CHECK(r3->timeUs == Approx(1.0));
}

TEST_CASE("zero bytes leave only the latency", "[sim]") {
  Topology t = fullyConnected(3);
  Schedule s = makeSchedule(scratchpad(3, 1),
                            {xfer(0, In, 0, 1, Scr, 0, 0),
                             xfer(1, Scr, 0, 2, Out, 0, 1)},
                            1);
  CHECK(run(s, t, 0).timeUs == Approx(1.4));
  CHECK(run(s, t, 0).algbwGBps == 0);
}

TEST_CASE("bad transfers are rejected with the transfer named", "[sim]") {
  Topology ring;
  ring.name = "line";
  ring.nodeOf = {0, 0, 0};
  ring.links.push_back({0, 1, LinkKind::NVLink, 0.7, 25, {}});
  ring.links.push_back({1, 2, LinkKind::NVLink, 0.7, 25, {}});
  SimOptions o;
  {
    // No link 0 -> 2.
    Schedule s = makeSchedule(scratchpad(3, 1), {xfer(0, In, 0, 1, Out, 0, 0),
                                                 xfer(0, In, 0, 2, Out, 0, 0)});
    auto r = simulate(s, ring, o);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("transfer #1") &&
                                      Catch::Contains("no link"));
  }
  {
    // Link 1 joins 1 -> 2, not 0 -> 1.
    Schedule s = makeSchedule(scratchpad(3, 1),
                              {xfer(0, In, 0, 1, Out, 0, 0, 1,
                                    TransferOp::Copy, 1)});
    auto r = simulate(s, ring, o);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("transfer #0") &&
                                      Catch::Contains("link 1"));
  }
  {
    Schedule s = makeSchedule(scratchpad(3, 1),
                              {xfer(0, In, 0, 1, Out, 0, 0, 1,
                                    TransferOp::Copy, 7)});
    CHECK_FALSE(simulate(s, ring, o).ok());
  }
  {
    // A local copy cannot use a link.
    Schedule s = makeSchedule(scratchpad(3, 1),
                              {xfer(0, In, 0, 0, Out, 0, 0, 1,
                                    TransferOp::Copy, 0)});
    auto r = simulate(s, ring, o);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("one rank"));
  }
  {
    Schedule s = makeSchedule(scratchpad(3, 1), {xfer(0, In, 0, 1, Out, 1, 0)});
    auto r = simulate(s, ring, o);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("outside"));
  }
  {
    Schedule s = makeSchedule(scratchpad(3, 1), {xfer(0, In, 0, 5, Out, 0, 0)});
    CHECK_FALSE(simulate(s, ring, o).ok());
  }
  {
    Schedule s = makeSchedule(scratchpad(3, 1), {xfer(0, In, 0, 1, Out, 0, 0)});
    s.transferLocs = {SourceLoc{"prog.ccl", 3, 5}};
    s.transfers[0].count = 0;
    auto r = simulate(s, ring, o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().loc.line == 3);
  }
  {
    Schedule s = makeSchedule(scratchpad(2, 1), {});
    auto r = simulate(s, ring, o);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("2 ranks"));
  }
  {
    Schedule s = makeSchedule(scratchpad(3, 1), {});
    SimOptions bad;
    bad.bytes = -1;
    CHECK_FALSE(simulate(s, ring, bad).ok());
  }
}

namespace {

/// The classic ring allreduce (reduce-scatter then allgather, in place) on
/// ranks 0..n-1 with `pipeline` chunks per ring segment, one transfer per
/// chunk.
Schedule ringAllReduce(int n, int pipeline) {
  auto col = Collective::builtin(CollectiveKind::AllReduce, n, n * pipeline,
                                 /*inPlace=*/true);
  REQUIRE(col.ok());
  std::vector<Transfer> ts;
  for (int s = 0; s < 2 * (n - 1); ++s)
    for (int r = 0; r < n; ++r) {
      int next = (r + 1) % n;
      bool reduce = s < n - 1;
      int seg = reduce ? ((r - s) % n + n) % n : ((r + 1 - (s - (n - 1))) % n + n) % n;
      for (int k = 0; k < pipeline; ++k) {
        int idx = seg * pipeline + k;
        ts.push_back(xfer(r, In, idx, next, In, idx, s, 1,
                          reduce ? TransferOp::Reduce : TransferOp::Copy));
      }
    }
  return makeSchedule(*col, ts);
}

} // namespace

TEST_CASE("ring allreduce matches the analytic alpha-beta time", "[sim]") {
  int n = 4;
  Schedule s = ringAllReduce(n, 1);
  VerifyResult v = verifySchedule(s);
  REQUIRE(v.ok());
  Topology t = fullyConnected(n);
  double bytes = 4e6, alpha = 0.7, bw = 25e3; // bytes per µs
  SimResult r = run(s, t, bytes);
  double analytic = 2 * (n - 1) * (alpha + bytes / n / bw);
  CHECK(r.timeUs == Approx(analytic)); // 6 * 40.7 = 244.2 µs
  CHECK(r.busbwGBps == Approx(bytes / (analytic * 1e3) * 2 * (n - 1) / n));
  // The simulated time respects the lower bound.
  LowerBound lb = lowerBound(s.collective, t, bytes);
  CHECK(lb.timeUs() <= r.timeUs);
}

TEST_CASE("pipelined ring allreduce on 64 ranks respects the model",
          "[sim][large]") {
  // 2 x 63 steps x 64 ranks x 6 chunks = 48384 transfers on 8 DGX A100s.
  auto topo = makeBuiltinTopology("dgx-a100x8");
  REQUIRE(topo.ok());
  int n = 64, pipeline = 6;
  Schedule s = ringAllReduce(n, pipeline);
  REQUIRE(s.transfers.size() == 48384);
  double bytes = 256e6;
  SimResult r = run(s, *topo, bytes);
  REQUIRE(r.timeline.size() == s.transfers.size());

  // Per link: one transfer at a time, in schedule order, each at least as
  // long as alone on its link.
  double chunk = std::ceil(bytes / s.collective.sizeDivisor());
  std::map<int, std::vector<const TransferTiming *>> perLink;
  for (const TransferTiming &tt : r.timeline) {
    REQUIRE(tt.link >= 0);
    perLink[tt.link].push_back(&tt);
    CHECK(tt.endUs - tt.startUs >=
          topo->links[tt.link].timeUs(chunk) * (1 - 1e-9));
  }
  for (auto &[link, list] : perLink)
    for (size_t i = 1; i < list.size(); ++i)
      REQUIRE(list[i]->startUs >= list[i - 1]->endUs * (1 - 1e-12));
  // Each hop waits for the chunk it forwards: transfer (s, r, k) starts
  // after (s-1, r-1, k) ended.
  auto at = [&](int step, int rank, int k) {
    return r.timeline[(step * n + rank) * pipeline + k];
  };
  for (int step = 1; step < 2 * (n - 1); step += 17)
    for (int rank = 0; rank < n; rank += 5)
      CHECK(at(step, rank, 0).startUs >=
            at(step - 1, (rank + n - 1) % n, 0).endUs * (1 - 1e-12));

  // The ring crosses a 25 GB/s NIC on every step, so it is NIC bound:
  // 2(n-1) steps of pipeline chunks at 25 GB/s is a floor.
  double nicFloor = 2 * (n - 1) * pipeline * chunk / 25e3;
  CHECK(r.timeUs >= nicFloor);
  CHECK(r.timeUs <= nicFloor * 1.2);
  CHECK(lowerBound(s.collective, *topo, bytes).timeUs() <= r.timeUs);
}
