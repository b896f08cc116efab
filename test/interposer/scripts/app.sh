#!/usr/bin/env bash
# app.sh APP INTERPOSER PLUGINDIR WORK W
#
# Runs the NCCL test application as W processes twice, on the libnccl test
# double: once plainly, once with libccsynth_nccl.so preloaded and the host
# plugins for W (and W/2, for the split communicator) ranks. Checks:
#  - every rank of both runs succeeds (results checked by the application)
#    and prints the same checksum in both runs;
#  - the calls a plugin covers (int32 sum AllReduce, AllGather,
#    ReduceScatter, AlltoAll on a W- or W/2-rank communicator) reached the
#    double in the plain run and never with the interposer;
#  - every other call reached the double unchanged, in the same order
#    (the interposer's own rank queries on split communicators aside);
#  - CCSYNTH_DEBUG logged decisions both ways, and no shared-memory object
#    of the runs is left behind.
set -euo pipefail
app=$1 interposer=$2 plugins=$3 work=$4 w=$5
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/launch.sh"

sizes="$w"
list="$plugins/lib-$w.so"
if [ -f "$plugins/lib-$((w / 2)).so" ]; then
  sizes="$w|$((w / 2))"
  list="$list:$plugins/lib-$((w / 2)).so"
fi
covered="^nccl(AllGather count=[0-9]+ dtype=2|AllReduce count=[0-9]+ dtype=2 op=0 inplace=[01]|ReduceScatter count=[0-9]+ dtype=2 op=0|AlltoAll count=[0-9]+ dtype=2) comm=[^ ]+/[0-9]+/($sizes)\$"
queries='^ncclComm(Count|UserRank) comm=[^ ]*\.s[0-9]+\.c[0-9]+/'
# Communicator names hold random ids: number them by first appearance.
normalize() {
  awk '{
    while (match($0, /fakenccl-[0-9]+-[0-9a-f]+/)) {
      id = substr($0, RSTART, RLENGTH)
      if (!(id in seen)) seen[id] = "comm" (++n)
      $0 = substr($0, 1, RSTART - 1) seen[id] substr($0, RSTART + RLENGTH)
    }
    print
  }'
}

before=$(shm_names)
start=$(date +%s.%N)
launch plain "$w" -- "$app"
[ "$launch_rc" -eq 0 ] || { echo "FAIL: the plain run failed"; exit 1; }
mid=$(date +%s.%N)
# W = 2 also names the real library explicitly (else: the default soname).
extra=()
[ "$w" -eq 2 ] && extra=(CCSYNTH_NCCL_LIB="$(dirname "$app")/fake/libnccl.so.2")
launch interposed "$w" LD_PRELOAD="$interposer" CCSYNTH_PLUGINS="$list" \
  CCSYNTH_DEBUG=1 "${extra[@]}" -- "$app"
[ "$launch_rc" -eq 0 ] || { echo "FAIL: the interposed run failed"; exit 1; }
end=$(date +%s.%N)
awk -v a="$start" -v b="$mid" -v c="$end" \
  'BEGIN { printf "wall time: plain %.2f s, interposed %.2f s\n", b - a, c - b }'

fail=0
for ((r = 0; r < w; r++)); do
  a=$(grep -o 'checksum [0-9a-f]*' "$work/plain.out.$r")
  b=$(grep -o 'checksum [0-9a-f]*' "$work/interposed.out.$r")
  if [ -z "$a" ] || [ "$a" != "$b" ]; then
    echo "FAIL: rank $r: plain '$a', interposed '$b'"; fail=1
  fi
  n_plain=$(grep -cE "$covered" "$work/plain.calls.$r" || true)
  n_int=$(grep -cE "$covered" "$work/interposed.calls.$r" || true)
  if [ "$n_plain" -lt 8 ] || [ "$n_int" -ne 0 ]; then
    echo "FAIL: rank $r: $n_plain covered calls reached NCCL plainly, $n_int with the interposer"
    fail=1
  fi
  { grep -vE "$covered" "$work/plain.calls.$r" || true; } |
    { grep -vE "$queries" || true; } | normalize >"$work/plain.rest.$r"
  { grep -vE "$queries" "$work/interposed.calls.$r" || true; } |
    normalize >"$work/interposed.rest.$r"
  if ! diff -u "$work/plain.rest.$r" "$work/interposed.rest.$r"; then
    echo "FAIL: rank $r: other calls did not reach NCCL unchanged"; fail=1
  fi
  grep -q -- '-> ccsynth: plugin' "$work/interposed.err.$r" &&
    grep -q -- '-> NCCL: ' "$work/interposed.err.$r" ||
    { echo "FAIL: rank $r: no CCSYNTH_DEBUG decisions"; cat "$work/interposed.err.$r"; fail=1; }
  if grep -v -- '-> ccsynth: \|-> NCCL: ' "$work/interposed.err.$r" | grep -q .; then
    echo "FAIL: rank $r: unexpected messages:"; cat "$work/interposed.err.$r"; fail=1
  fi
done
echo "rank 0, covered calls run by ccsynth: $(grep -cE "$covered" "$work/plain.calls.0")"
grep -- '-> ' "$work/interposed.err.0" | sed 's/^/  /'
after=$(shm_names)
leaked=$(comm -13 <(echo "$before") <(echo "$after") | grep -v '^$' || true)
if [ -n "$leaked" ]; then
  echo "FAIL: shared-memory objects left: $leaked"; fail=1
fi
[ $fail -eq 0 ] && echo "interposer on $w processes: results equal, calls as expected"
exit $fail
