#!/usr/bin/env bash
# run-algorithm.sh CCSYNTH SRC WORKDIR CASE
#
# Builds a host plugin for one algorithm and runs it (ranks as threads) at
# three counts: 1 (smaller than any chunk count above 1), 4099 (a prime:
# not a multiple of the chunk count) and 16384, each as fp32 sum, bf16 sum
# and int32 max, with 4 KiB tiles so that larger counts take several
# passes (from 64 ranks up two of these runs, see below). Every run is
# checked against the reference collective by
# `ccsynth run`. CASE is one of
#   file:PATH                   a schedule JSON or .ccl program
#   baseline:KIND:COLL:TOPO     `ccsynth baseline KIND -c COLL -t TOPO`
#   synth:TOPO:COLL             `ccsynth synth` with sketches/TOPO.json
#   innet:TOPO:COLL             `ccsynth synth --in-network` (the fastest
#                               mix of switch and point-to-point transfers
#                               at 1G on TOPO)
# and an optional fifth field, xK, lowers it with K instances (the
# instances of one threadblock role then share one function).
# CCSYNTH_TEST_PLUGIN_CXX, when set, is the C++ compiler of the plugins.
set -euo pipefail
cc=$1 src=$2 work=$3 case=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"

IFS=: read -r kind a b c inst <<<"$case"
instances=()
[[ ${inst:-} == x* ]] && instances=(--instances "${inst#x}")
case $kind in
file) input=$a ;;
baseline)
  "$cc" baseline "$a" -c "$b" -t "$c" -o sched.json
  input=sched.json ;;
synth)
  "$cc" synth --topo "$a" --sketch "$src/sketches/$a.json" --collective "$b" \
    --time-limit "${CCSYNTH_SYNTH_LIMIT:-10}" --no-step-level -o sched.json
  input=sched.json ;;
innet)
  "$cc" synth --topo "$a" --collective "$b" --size 1G --in-network \
    --time-limit "${CCSYNTH_SYNTH_LIMIT:-10}" --no-step-level -o sched.json
  input=sched.json ;;
*) echo "unknown case '$case'" >&2; exit 2 ;;
esac

# Sums and max in two plugins: 4 instantiations instead of the 6 of the
# full product (copy-only algorithms need only the first). From 64 ranks
# up only fp32 sum and int32 max run (below), so only those are built:
# compiling a 64-rank plugin is most of such a test's time.
cxx=()
[[ -n ${CCSYNTH_TEST_PLUGIN_CXX:-} ]] && cxx=(--cxx "$CCSYNTH_TEST_PLUGIN_CXX")
build() { # output, dtypes, ops
  "$cc" compile "$input" --target plugin --dtypes "$2" --ops "$3" \
    --tile-bytes 4096 --plugin-flag=-O0 "${instances[@]}" "${cxx[@]}" -o "$1"
}
sums=fp32,bf16,int32
if [[ $input == *.json ]]; then
  coll=$(grep -m1 '"collective": *{' "$input" || true)
  declared=$(sed -n 's/.*"ranks": *\([0-9]*\).*/\1/p' <<<"$coll")
  if ((${declared:-0} >= 64)); then
    # A copy moves 4-byte words for fp32 and int32 alike: one instantiation.
    sums=fp32,int32
    grep -q '"kind": *"\(allreduce\|reducescatter\|reduce\)"' <<<"$coll" &&
      sums=fp32
  fi
fi
build lib-sum.so "$sums" sum
info=$("$cc" plugin info lib-sum.so)
if grep -q '^  ops  *- (no reduction)' <<<"$info"; then
  cp lib-sum.so lib-max.so
else
  build lib-max.so int32 max
fi
mult=$(sed -n 's/.*count *multiple of \([0-9]*\).*/\1/p' <<<"$info")
mult=${mult:-1}
custom=0
grep -q '^  collective  *\(allgather\|reducescatter\|allreduce\|broadcast\|reduce\|gather\|scatter\|alltoall\)$' <<<"$info" || custom=1

# Waits may last long here: a 64-rank program runs 64 rank threads (each
# running its threadblocks as fibers) on a few cores, and one wait can span
# most of a run. The watchdog gives up only when nothing in the whole run
# moved for the timeout, so starvation is not taken for a hang; a lost
# message still ends in its report.
#
# From 64 ranks up (thousands of threadblocks per run) two runs prove what
# the nine prove on smaller machines,
# whose generated code uses the same primitives for every dtype: a ragged
# fp32 sum, and an int32 max over several 4 KiB passes.
ranks=$(sed -n 's/^  ranks  *\([0-9]*\)$/\1/p' <<<"$info" | head -1)
combos=()
for count in 1 4099 16384; do
  for combo in "fp32 sum" "bf16 sum" "int32 max"; do
    combos+=("$count $combo")
  done
done
if ((${ranks:-0} >= 64)); then
  combos=("4099 fp32 sum" "16384 int32 max")
fi
runs=0
for entry in "${combos[@]}"; do
  read -r count dt op <<<"$entry"
  {
    set -- "$dt" "$op"
    n=$((count * mult))
    if ((custom)); then
      # The reference of a custom collective comes from its source.
      "$cc" run "$input" --count "$n" --dtype "$1" --op "$2" --iters 1 \
        --timeout 300 --tile-bytes 4096
    else
      "$cc" run "lib-$2.so" --count "$n" --dtype "$1" --op "$2" --iters 1 \
        --timeout 300
    fi
    runs=$((runs + 1))
  }
done
echo "$case: $runs runs correct"
