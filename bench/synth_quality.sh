#!/usr/bin/env bash
# synth_quality.sh - synthesized schedules vs the best baseline.
#
# For every shipped sketch, supported collective and size (default 1K, 1M,
# 1G) it synthesizes a schedule for that size, simulates it and every
# baseline that supports the case (ring, tree, direct, hierarchical), and
# prints the times with the ratio best-baseline / synthesized (>= 1 means
# the synthesized schedule is at least as fast). A benchmark, not a test:
# on a 2-core machine the whole matrix takes a while.
#
# Usage: bench/synth_quality.sh [-b BUILD] [-l SECONDS] [-t TOPOS] [-c COLLS]
#                               [-s SIZES]
#   e.g. bench/synth_quality.sh -t "dgx1 ndv2x2" -c "allgather alltoall"
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
LIMIT=60
TOPOS="dgx1 ndv2x2 ndv2x4 dgx2x2 dgx-a100x2 dgx-a100x4 dgx-h100x2 dgx-h100x8"
COLLS="allgather reducescatter allreduce broadcast reduce gather scatter alltoall"
SIZES="1K 1M 1G"
. bench/common.sh
bench_options "$@"

# Prints the simulated time (us) of schedule $1 at size $2.
sim_time() {
  "$CCSYNTH" simulate "$1" --sizes "$2" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["results"][0]["time_us"])'
}

printf '%-11s %-13s %4s %12s %12s %-12s %7s %6s %7s\n' topology collective \
  size "synth(us)" "best bl(us)" baseline "bl/syn" "%bnd" "solve"
fails=0
for topo in $TOPOS; do
  # Baselines once per (topology, collective).
  for coll in $COLLS; do
    declare -A bl=()
    for kind in ring tree direct hierarchical; do
      if "$CCSYNTH" baseline "$kind" -c "$coll" -t "$topo" \
          -o "$OUT/bl-$kind.json" >/dev/null 2>&1; then
        bl[$kind]=1
      fi
    done
    for size in $SIZES; do
      start=$(date +%s.%N)
      if ! "$CCSYNTH" synth --topo "$topo" --sketch "sketches/$topo.json" \
          --collective "$coll" --size "$size" --time-limit "$LIMIT" -q \
          -o "$OUT/syn.json" >"$OUT/summary.txt" 2>&1; then
        printf '%-11s %-13s %4s  synth failed: %s\n' "$topo" "$coll" "$size" \
          "$(head -1 "$OUT/summary.txt")"
        fails=$((fails + 1))
        continue
      fi
      end=$(date +%s.%N)
      secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
      syn=$(sim_time "$OUT/syn.json" "$size")
      pct=$(awk -v s="$size" '$1 == s && $5 ~ /%$/ { print $5 }' "$OUT/summary.txt")
      best=""; bestkind="-"
      for kind in "${!bl[@]}"; do
        t=$(sim_time "$OUT/bl-$kind.json" "$size")
        if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
          best=$t; bestkind=$kind
        fi
      done
      ratio=$(awk -v b="${best:-0}" -v s="$syn" 'BEGIN { if (b > 0) printf "%.3f", b / s; else print "-" }')
      mark=""
      if [ -n "$best" ] && awk -v b="$best" -v s="$syn" 'BEGIN { exit !(s > b * (1 + 1e-9)) }'; then
        mark="  SLOWER"
        fails=$((fails + 1))
      fi
      printf '%-11s %-13s %4s %12.2f %12.2f %-12s %7s %6s %6ss%s\n' "$topo" \
        "$coll" "$size" "$syn" "${best:-0}" "$bestkind" "$ratio" "$pct" \
        "$secs" "$mark"
    done
    unset bl
  done
done
echo "cases slower than the best baseline (or failed): $fails"
