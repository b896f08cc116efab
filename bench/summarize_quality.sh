#!/usr/bin/env bash
# summarize_quality.sh DIR - one Markdown row per topology from the outputs
# of bench/synth_quality.sh saved as DIR/quality-<topology>.log or
# DIR/synth_quality-<topology>.txt (bench/results/ holds the last full run):
# cases, cases slower than the best baseline (or failed), the smallest and
# the geometric-mean best-baseline/synthesized ratio, and the longest solve.
set -euo pipefail
dir=${1:?usage: bench/summarize_quality.sh DIR}
printf '| topology | cases | slower | min bl/syn | geo-mean bl/syn | max solve |\n'
printf '| --- | --- | --- | --- | --- | --- |\n'
for t in dgx1 ndv2x2 ndv2x4 dgx2x2 dgx-a100x2 dgx-a100x4 dgx-h100x2 dgx-h100x8; do
  f=""
  for c in "$dir/quality-$t.log" "$dir/synth_quality-$t.txt"; do
    [ -f "$c" ] && f=$c
  done
  [ -n "$f" ] || continue
  awk -v t="$t" '
    NR > 1 && $4 == "synth" { n++; s++ }   # "synth failed: ..."
    NR > 1 && $7 ~ /^[0-9.]+$/ {
      n++; if ($10 == "SLOWER") s++
      r = $7 + 0; if (min == "" || r < min) min = r; lg += log(r)
      sv = $9; sub(/s$/, "", sv); if (sv + 0 > mx) mx = sv + 0
    }
    END { printf "| %s | %d | %d | %.3f | %.2f | %.1f s |\n", t, n, s, min, exp(lg / n), mx }' "$f"
done
