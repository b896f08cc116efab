#!/usr/bin/env bash
# sanitize-tests.sh: build the input-parsing code (core model with its JSON
# and XML readers, DSL front end, ccsynth CLI) with ASan + UBSan and run its
# tests there: the core and DSL unit tests (schedule/topology JSON, NCCL
# topology XML, hostile inputs, the DSL's deterministic mutation fuzz test)
# and the CLI's end-to-end tests of malformed JSON, XML and .ccl files.
# scripts/bootstrap.sh test runs this after the regular suite, then
# scripts/fuzz.sh (libFuzzer on every reader, including MSCCL XML).
#
# Environment: ASAN_BUILD_DIR (default build-asan), JOBS (default: all cores).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ASAN_BUILD_DIR:-$root/build-asan}
jobs=${JOBS:-$(nproc)}

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCCSYNTH_SANITIZE=ON -DCCSYNTH_ENABLE_MLIR=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target CoreTests DSLTests ccsynth

# Any report is fatal (the build also uses -fno-sanitize-recover=all).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
ctest -j "$jobs" --output-on-failure \
  -R '^(CoreTests|DSLTests):|^e2e:dsl\.|^e2e:cli\.|^e2e:(topo-|schedule-|verify-missing)'
