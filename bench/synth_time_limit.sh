#!/usr/bin/env bash
# synth_time_limit.sh - does `ccsynth synth --time-limit L` hold at scale?
#
# For each machine and collective it runs `ccsynth synth` with the limit
# and prints the wall time (from process start to exit, loading the
# machine included), peak memory, whether the limit held (wall time at
# most L + max(10% of L, 2 s), the grace the CLI promises), and what was
# written: the schedule's % of the lower bound and its method, or the
# error. A benchmark, not a test: it times the whole process.
#
# Usage: bench/synth_time_limit.sh [-b BUILD] [-l SECONDS] [-t TOPOS] [-c COLLS]
#   e.g. bench/synth_time_limit.sh -l 5 -t "dgx-h100x64 dgx-h100x128"
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
LIMIT=5
TOPOS="dgx-h100x32 dgx-h100x64 dgx-h100x128 dgx2x64 dgx1x128 ring:512 torus2d:32x32 dgx-h100x512 fc:4096"
COLLS="allgather reducescatter allreduce broadcast"
. bench/common.sh
bench_options "$@"
GRACE=$(awk -v l="$LIMIT" 'BEGIN { g = l * 0.1; if (g < 2) g = 2; print l + g }')

printf '%-14s %-13s %7s %8s %-5s %s\n' topology collective "wall(s)" "mem(MB)" \
  held outcome
for topo in $TOPOS; do
  for coll in $COLLS; do
    rm -f "$OUT/syn.json"
    rc=0
    /usr/bin/time -f '%e %M' -o "$OUT/time.txt" "$CCSYNTH" synth \
      --topo "$topo" --collective "$coll" --time-limit "$LIMIT" -q \
      -o "$OUT/syn.json" >"$OUT/summary.txt" 2>&1 || rc=$?
    read -r wall mem < <(tail -1 "$OUT/time.txt")
    held=$(awk -v w="$wall" -v g="$GRACE" 'BEGIN { print (w <= g) ? "yes" : "NO" }')
    if [ "$rc" -eq 0 ] && [ -s "$OUT/syn.json" ]; then
      pct=$(awk '$1 == "1G" && $5 ~ /%$/ { print $5 }' "$OUT/summary.txt")
      method=$(sed -n 's/^  method: \(.*\) (chunk split.*/\1/p' "$OUT/summary.txt" |
        sed 's/ (no synthesized schedule found in time was faster)//')
      outcome="written, $pct of bound: $method"
    else
      outcome="exit $rc: $(grep -m1 'error' "$OUT/summary.txt" | sed 's/^ccsynth: error: //' | cut -c1-110)"
    fi
    printf '%-14s %-13s %7s %8d %-5s %s\n' "$topo" "$coll" "$wall" \
      "$((mem / 1024))" "$held" "$outcome"
  done
done
