//===- ScheduleJsonFuzzer.cpp - libFuzzer entry for schedule JSON ---------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Reads arbitrary bytes as a schedule JSON file, with the general reader and
// with the DOM-free reader, which must agree (same schedule, or the same
// error); a schedule that reads is written back, read again, and (when
// small) verified.
//
//===----------------------------------------------------------------------===//
#include "FuzzCheck.h"

#include "ccsynth/Support/Json.h"
#include "ccsynth/Schedule/Schedule.h"
#include "ccsynth/Schedule/Verifier.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ccsynth;
  std::string text(reinterpret_cast<const char *>(data), size);
  auto fast = readScheduleJson("fuzz.json", text);
  auto doc = JsonDocument::parse("fuzz.json", text);
  if (!doc) {
    fuzz::checkError(doc.error(), text);
    if (fast || fast.error().message != doc.error().message)
      std::abort();
    return 0;
  }
  auto sched = parseScheduleJson(*doc);
  if (!sched) {
    fuzz::checkError(sched.error(), text);
    if (fast || fast.error().message != sched.error().message)
      std::abort();
    return 0;
  }
  if (!fast || scheduleToJson(*fast) != scheduleToJson(*sched))
    std::abort();
  // What was read is written back unchanged.
  auto again = JsonDocument::parse("again.json", scheduleToJson(*sched));
  if (!again || !parseScheduleJson(*again))
    std::abort();
  if (sched->collective.numRanks <= 16 && sched->transfers.size() <= 512)
    (void)verifySchedule(*sched);
  return 0;
}
