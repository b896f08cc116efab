#!/usr/bin/env bash
# synth_scale.sh - synthesis on large multi-node machines.
#
# For each machine and collective it runs `ccsynth synth` at one size with
# a time limit and prints, from that same run, the simulated time, the %
# of the lower bound, the ratio best-baseline / written schedule (>= 1
# means the written schedule is at least as fast), the solve wall time and
# peak memory; then it times `ccsynth verify` and `ccsynth simulate` of the
# written schedule (the verifier and simulator must keep up at that size).
# A benchmark, not a test: x128 (1,024 GPUs) takes minutes per case.
#
# Usage: bench/synth_scale.sh [-b BUILD] [-l SECONDS] [-t TOPOS] [-c COLLS]
#                             [-s SIZE]
#   e.g. bench/synth_scale.sh -t "dgx-h100x16 dgx-h100x32" -l 120
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
LIMIT=300
TOPOS="dgx-h100x16 dgx-h100x32 dgx-h100x64 dgx-h100x128"
COLLS="allgather reducescatter allreduce"
SIZES=1G
. bench/common.sh
bench_options "$@"
SIZE=$SIZES

printf '%-13s %-13s %10s %7s %10s %-12s %8s %8s %9s %8s %8s\n' topology \
  collective "time(us)" "%bound" "bl/syn" baseline transfers "solve(s)" \
  "mem(MB)" "verify(s)" "sim(s)"
for topo in $TOPOS; do
  for coll in $COLLS; do
    if ! /usr/bin/time -f '%e %M' -o "$OUT/time.txt" "$CCSYNTH" synth \
        --topo "$topo" --collective "$coll" --size "$SIZE" \
        --time-limit "$LIMIT" -q -o "$OUT/syn.json" >"$OUT/summary.txt" 2>&1
    then
      printf '%-13s %-13s  synth failed: %s\n' "$topo" "$coll" \
        "$(grep -m1 error "$OUT/summary.txt" || head -1 "$OUT/summary.txt")"
      continue
    fi
    read -r wall mem <"$OUT/time.txt"
    row=$(awk -v s="$SIZE" '$1 == s && $5 ~ /%$/ { print $2, $5 }' "$OUT/summary.txt")
    transfers=$(awk 'NR == 1 { print $(NF - 4) }' "$OUT/summary.txt")
    bl=$(sed -n 's/.*best baseline at [^:]*: \([a-z]*\), .*, \([0-9.]*\)x.*/\1 \2/p' \
      "$OUT/summary.txt")
    start=$(date +%s.%N)
    "$CCSYNTH" verify "$OUT/syn.json" >/dev/null
    mid=$(date +%s.%N)
    "$CCSYNTH" simulate "$OUT/syn.json" --sizes "$SIZE" >/dev/null
    end=$(date +%s.%N)
    printf '%-13s %-13s %10s %7s %10s %-12s %8s %8s %9s %8s %8s\n' "$topo" \
      "$coll" ${row:-"- -"} "$(echo "${bl:-- -}" | cut -d' ' -f2)" \
      "$(echo "${bl:-- -}" | cut -d' ' -f1)" "$transfers" "$wall" \
      "$((mem / 1024))" \
      "$(awk -v a="$start" -v b="$mid" 'BEGIN { printf "%.1f", b - a }')" \
      "$(awk -v a="$mid" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
  done
done
