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
# build-san). FUZZ_SECONDS per target (default 30).
set -euo pipefail
source "$(dirname "$0")/sanitized-tree.sh"
root=$san_root
build=$san_build
seconds=${FUZZ_SECONDS:-30}
san_build_targets fuzzers

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
