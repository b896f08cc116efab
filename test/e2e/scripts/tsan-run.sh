#!/usr/bin/env bash
# tsan-run.sh CCSYNTH HOST_RUN_TSAN WORKDIR CASE
# Builds one algorithm (CASE as in run-algorithm.sh, file: or baseline:)
# into a plugin instrumented with ThreadSanitizer and runs it with ranks as
# threads; any report fails the test (halt_on_error).
set -euo pipefail
cc=$1 runner=$2 work=$3 case=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
IFS=: read -r kind a b c <<<"$case"
case $kind in
file) input=$a ;;
baseline) "$cc" baseline "$a" -c "$b" -t "$c" -o sched.json; input=sched.json ;;
*) echo "unknown case '$case'" >&2; exit 2 ;;
esac
"$cc" compile "$input" --target plugin --dtypes fp32,bf16 --ops sum \
  --tile-bytes 4096 --plugin-flag=-fsanitize=thread --plugin-flag=-O1 \
  -o lib.so
# (An instrumented plugin loads only into an instrumented process, so the
# cases here are built-in collectives: any count is valid.)
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0"
for count in 4099 3; do
  "$runner" lib.so $count fp32 sum 60
done
"$runner" lib.so 2048 bf16 sum 60
