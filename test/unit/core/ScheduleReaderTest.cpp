// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of the DOM-free schedule reader: it must read what the general
// reader reads, to the same values, and leave every error to it (or, past the
// general reader's size limit, report its own located error).
#include "ccsynth/Baselines/Baselines.h"
#include "ccsynth/Support/Json.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Topology/Topology.h"

#include <catch2/catch.hpp>

using namespace ccsynth;

namespace {

Expected<Schedule> general(const std::string &text) {
  auto doc = JsonDocument::parse("s.json", text);
  if (!doc)
    return doc.error();
  return parseScheduleJson(*doc);
}

void requireSame(const Schedule &a, const Schedule &b) {
  REQUIRE(a.transfers.size() == b.transfers.size());
  for (size_t i = 0; i < a.transfers.size(); ++i) {
    const Transfer &x = a.transfers[i], &y = b.transfers[i];
    INFO("transfer " << i);
    CHECK(x.src == y.src);
    CHECK(x.dst == y.dst);
    CHECK(x.count == y.count);
    CHECK(x.op == y.op);
    CHECK(x.step == y.step);
    CHECK(x.link == y.link);
    CHECK(x.channel == y.channel);
    CHECK(x.threadblock == y.threadblock);
  }
  CHECK(scheduleToJson(a) == scheduleToJson(b));
}

const std::string kHead =
    "{\"format\": \"ccsynth-schedule\", \"version\": 2,\n"
    "\"collective\": {\"kind\": \"allgather\", \"ranks\": 2, "
    "\"chunk_factor\": 1},\n";

} // namespace

TEST_CASE("the schedule reader reads what the general reader reads",
          "[schedule][reader]") {
  auto topo = loadTopology("dgx1");
  REQUIRE(topo.ok());
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::AllReduce}) {
    auto s = makeBaseline(BaselineKind::Ring, kind, *topo);
    REQUIRE(s.ok());
    std::string text = scheduleToJson(*s);
    auto slow = general(text);
    REQUIRE(slow.ok());
    auto fast = readScheduleJson("s.json", text);
    REQUIRE(fast.ok());
    requireSame(*fast, *slow);
  }
}

TEST_CASE("the schedule reader accepts any key order, spacing and optional "
          "field",
          "[schedule][reader]") {
  std::string text =
      kHead + "\"transfers\": [ {\"dst\":[1,\"output\",0] ,\"src\" : [ 0 , "
              "\"in\" , 0 ],\n\"op\":\"reduce\",\"step\":3,\"tb\":2},\r\n"
              "\t{\"step\":0,\"op\":\"copy\",\"src\":[1,\"i\",0],\"dst\":[0,"
              "\"o\",1],\"count\":1,\"link\":1,\"channel\":0} ] }";
  auto slow = general(text);
  REQUIRE(slow.ok());
  auto fast = readScheduleJson("s.json", text);
  REQUIRE(fast.ok());
  requireSame(*fast, *slow);
  CHECK(fast->transfers[0].threadblock == 2);
  CHECK(fast->transfers[0].link == -1);

  auto empty = readScheduleJson("s.json", kHead + "\"transfers\": []}");
  REQUIRE(empty.ok());
  CHECK(empty->transfers.empty());
}

TEST_CASE("the schedule reader leaves malformed transfers to the general "
          "reader's located errors",
          "[schedule][reader]") {
  const char *bad[] = {
      "{\"step\": 0, \"op\": \"move\", \"src\": [0, \"i\", 0], \"dst\": [1, "
      "\"o\", 0]}",
      "{\"step\": 0, \"op\": \"copy\", \"src\": [0, \"x\", 0], \"dst\": [1, "
      "\"o\", 0]}",
      "{\"step\": -1, \"op\": \"copy\", \"src\": [0, \"i\", 0], \"dst\": [1, "
      "\"o\", 0]}",
      "{\"step\": 0, \"step\": 1, \"op\": \"copy\", \"src\": [0, \"i\", 0], "
      "\"dst\": [1, \"o\", 0]}",
      "{\"step\": 1e1, \"op\": \"copy\", \"src\": [0, \"i\", 0], \"dst\": [1, "
      "\"o\", 0]}",
      "{\"step\": 0, \"op\": \"copy\", \"src\": [0, \"i\", 0], \"dst\": [1, "
      "\"o\", 0], \"count\": 0}",
      "{\"step\": 0, \"op\": \"copy\", \"src\": [0, \"i\", 0]}",
      "{\"step\": 99999999999, \"op\": \"copy\", \"src\": [0, \"i\", 0], "
      "\"dst\": [1, \"o\", 0]}",
      "{\"step\": 0, \"op\": \"copy\", \"src\": [0, \"i\", 0], \"dst\": [1, "
      "\"o\", 0], \"lnk\": 3}",
      "{\"step\": 0, \"op\": \"copy\", \"src\": [0, \"i\", 0], \"dst\": [1, "
      "\"o\", 0],}",
  };
  for (const char *t : bad) {
    std::string text = kHead + "\"transfers\": [\n  " + t + "]}";
    INFO(text);
    auto slow = general(text);
    auto fast = readScheduleJson("s.json", text);
    REQUIRE_FALSE(slow.ok());
    REQUIRE_FALSE(fast.ok());
    CHECK(fast.error().message == slow.error().message);
    CHECK(fast.error().loc.line == slow.error().loc.line);
    CHECK(fast.error().loc.col == slow.error().loc.col);
  }
}

TEST_CASE("errors outside the transfer list keep their locations",
          "[schedule][reader]") {
  std::string text = kHead + "\"transfers\": [\n"
                             "  {\"step\": 0, \"op\": \"copy\", \"src\": [0, "
                             "\"i\", 0], \"dst\": [1, \"o\", 0]}\n"
                             "],\n\"instnaces\": 2}";
  auto slow = general(text);
  auto fast = readScheduleJson("s.json", text);
  REQUIRE_FALSE(slow.ok());
  REQUIRE_FALSE(fast.ok());
  CHECK(fast.error().message == slow.error().message);
  CHECK(fast.error().loc.line == 6);
  CHECK(fast.error().loc.line == slow.error().loc.line);
  CHECK(fast.error().loc.col == slow.error().loc.col);
}

TEST_CASE("past the general reader's limit the scanner reports its own "
          "located error",
          "[schedule][reader]") {
  std::string text = kHead + "\"transfers\": [\n"
                             "  {\"step\": 0, \"op\": \"copy\", \"src\": [0, "
                             "\"i\", 0], \"dst\": [1, \"o\", 0]},\n"
                             "  {\"step\": 0, \"op\": \"copy\", \"src\": [1, "
                             "\"i\", \"0\"], \"dst\": [0, \"o\", 1]}]}";
  auto fast = readScheduleJson("s.json", text, /*generalLimit=*/16);
  REQUIRE_FALSE(fast.ok());
  CHECK(fast.error().loc.line == 5);
  CHECK(fast.error().loc.col == 3);
  CHECK_THAT(fast.error().message,
             Catch::Contains("transfer not in the form ccsynth writes"));

  auto notObject = readScheduleJson("s.json", "[1, 2]", 2);
  REQUIRE_FALSE(notObject.ok());
  CHECK_THAT(notObject.error().message, Catch::Contains("\"transfers\""));

  // Within the limit, a plain file is read the same either way.
  std::string good = kHead + "\"transfers\": [\n"
                             "  {\"step\": 0, \"op\": \"copy\", \"src\": [0, "
                             "\"i\", 0], \"dst\": [1, \"o\", 0]}]}";
  auto big = readScheduleJson("s.json", good, 16);
  REQUIRE(big.ok());
  CHECK(big->transfers.size() == 1);
}
