#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets (clang, ASan + UBSan) and run each
# for a bounded time from its checked-in seed corpus (test/fuzz/corpus/NAME).
# Every reader of untrusted input has one: schedule JSON, topology JSON,
# sketches, NCCL topology dumps, MSCCL XML and the DSL. Any crash, hang,
# sanitizer report or unlocated error fails the run; the reproducer is left
# in build-san/fuzz-work/NAME/.
#
# scripts/bootstrap.sh test runs this after the sanitizer tests, in the
# same clang tree (scripts/sanitized-tree.sh: SAN_BUILD_DIR, default
# build-san). FUZZ_SECONDS per target (default 30), FUZZ_JOBS targets at
# once (default: all cores).
set -euo pipefail
source "$(dirname "$0")/sanitized-tree.sh"
root=$san_root
build=$san_build
seconds=${FUZZ_SECONDS:-30}
san_build_targets fuzzers

jobs=${FUZZ_JOBS:-$(nproc)}
((jobs >= 1)) || jobs=1

# One target: prints its report when it ends; fails on any finding.
fuzz_one() { # name corpus
  local name=$1 corpus=$2
  local bin=$build/test/fuzz/$name
  if [[ ! -x $bin ]]; then
    echo "fuzz.sh: $name was not built" >&2
    return 1
  fi
  # New inputs go to a scratch corpus, never into the checked-in one.
  local work=$build/fuzz-work/$name
  rm -rf "$work" && mkdir -p "$work/corpus"
  local dict=()
  case $name in
    dsl-fuzzer) dict=(-dict="$root/test/fuzz/dsl.dict") ;;
    *json*|sketch-fuzzer|taccl-profile-fuzzer) dict=(-dict="$root/test/fuzz/json.dict") ;;
    *xml*|nccl-*) dict=(-dict="$root/test/fuzz/xml.dict") ;;
  esac
  if ! (cd "$work" && "$bin" "${dict[@]}" -max_total_time="$seconds" \
          -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
          corpus "$corpus" > log.txt 2>&1); then
    { echo "fuzz.sh: $name FAILED; see $work/log.txt and $work/crash-*"
      tail -40 "$work/log.txt"; } >&2
    return 1
  fi
  echo "== $name: ${seconds}s"
  grep -E "^stat::number_of_executed_units|^Done" "$work/log.txt" || true
}

# Targets run side by side, up to FUZZ_JOBS (default: all cores) at once;
# each gets its full FUZZ_SECONDS.
echo "== fuzzing: ${seconds}s per target, $jobs at once"
status=0
running=0
for corpus in "$root"/test/fuzz/corpus/*/; do
  if ((running >= jobs)); then
    wait -n || status=1
    running=$((running - 1))
  fi
  fuzz_one "$(basename "$corpus")" "$corpus" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
