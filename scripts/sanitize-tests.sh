#!/usr/bin/env bash
# sanitize-tests.sh: build the input-parsing code (core model with its JSON
# and XML readers, DSL front end, MSCCL formats, ccsynth CLI) with clang,
# ASan + UBSan, and run its tests there: the core and DSL unit tests
# (schedule/topology JSON, NCCL topology XML, hostile inputs, the DSL's
# deterministic mutation fuzz test) and the CLI's end-to-end tests of
# malformed JSON, XML and .ccl files. The same tree builds the libFuzzer
# targets, so this builds them too and scripts/fuzz.sh, which CI runs next,
# only runs them.
#
# Environment: see scripts/sanitized-tree.sh (SAN_BUILD_DIR, JOBS, ...).
set -euo pipefail
source "$(dirname "$0")/sanitized-tree.sh"
san_build_targets CoreTests DSLTests ccsynth fuzzers
cd "$san_build"
ctest -j "$san_jobs" --output-on-failure \
  -R '^(CoreTests|DSLTests):|^e2e:dsl\.|^e2e:cli\.|^e2e:(topo-|schedule-|verify-missing)'
