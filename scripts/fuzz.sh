#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets (clang, ASan + UBSan) and run each
# for a bounded time from its checked-in seed corpus (test/fuzz/corpus/NAME).
# Every reader of untrusted input has one: schedule JSON, topology JSON,
# sketches, NCCL topology dumps, MSCCL XML and the DSL. Any crash, hang,
# sanitizer report or unlocated error fails the run; the reproducer is left
# in $FUZZ_BUILD_DIR/fuzz-work/NAME/.
#
# scripts/bootstrap.sh test runs this after the sanitizer tests.
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_SECONDS per target
# (default 30), JOBS (default: all cores), CLANG_CC / CLANG_CXX (default
# clang-19 / clang++-19).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-30}
jobs=${JOBS:-$(nproc)}
cc=${CLANG_CC:-clang-19}
cxx=${CLANG_CXX:-clang++-19}
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz.sh: $cxx not found; install clang-19 and libclang-rt-19-dev" >&2
  exit 1
fi

CC=$cc CXX=$cxx cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCSYNTH_FUZZERS=ON \
  -DCCSYNTH_SANITIZE=ON >/dev/null
cmake --build "$build" -j "$jobs" --target fuzzers

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for corpus in "$root"/test/fuzz/corpus/*/; do
  name=$(basename "$corpus")
  bin=$build/test/fuzz/$name
  if [[ ! -x $bin ]]; then
    echo "fuzz.sh: $name was not built" >&2
    status=1
    continue
  fi
  # New inputs go to a scratch corpus, never into the checked-in one.
  work=$build/fuzz-work/$name
  rm -rf "$work" && mkdir -p "$work/corpus"
  dict=()
  case $name in
    dsl-fuzzer) dict=(-dict="$root/test/fuzz/dsl.dict") ;;
    *json*|sketch-fuzzer|taccl-profile-fuzzer) dict=(-dict="$root/test/fuzz/json.dict") ;;
    *xml*|nccl-*) dict=(-dict="$root/test/fuzz/xml.dict") ;;
  esac
  echo "== $name: ${seconds}s"
  if ! (cd "$work" && "$bin" "${dict[@]}" -max_total_time="$seconds" \
          -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
          corpus "$corpus" > log.txt 2>&1); then
    echo "fuzz.sh: $name FAILED; see $work/log.txt and $work/crash-*" >&2
    tail -40 "$work/log.txt" >&2
    status=1
  else
    grep -E "^stat::number_of_executed_units|^Done" "$work/log.txt" || true
  fi
done
exit $status
