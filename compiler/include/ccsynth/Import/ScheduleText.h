//===- ScheduleText.h - Schedule JSON from text, with transfer locations --===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Parses a schedule JSON text (not a file path) and records where every
// transfer was written, so diagnostics about a transfer (from the dialect's
// verifiers and passes) point at its line:col. Plain C++ (nlohmann/json
// needs exceptions, so MLIR code calls this instead of the JSON reader).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/Support/Diagnostic.h"
#include "ccsynth/Schedule/Schedule.h"

#include <string>

namespace ccsynth {

/// Parses `text` (named `file` in diagnostics) and fills
/// Schedule::transferLocs when the schedule does not carry them.
Expected<Schedule> parseScheduleText(const std::string &file,
                                     const std::string &text);

/// Fills `schedule.transferLocs` from the JSON file it was read from (a
/// no-op when they are already known or the file cannot be read).
void locateTransfers(Schedule &schedule, const std::string &path);

} // namespace ccsynth
