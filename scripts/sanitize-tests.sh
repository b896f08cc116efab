#!/usr/bin/env bash
# sanitize-tests.sh: build the input-parsing code (core model, DSL front end,
# ccsynth CLI) with ASan + UBSan and run its tests there, including the DSL's
# deterministic mutation fuzz test. scripts/bootstrap.sh test runs this after
# the regular suite.
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
ctest -j "$jobs" --output-on-failure -R '^(CoreTests|DSLTests):|^e2e:dsl\.'
