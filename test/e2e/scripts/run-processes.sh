#!/usr/bin/env bash
# run-processes.sh CCSYNTH PLUGIN
#
# Runs every algorithm of PLUGIN with ranks as processes (the host-shm
# transport) at counts 1, 4099 (prime: a ragged remainder) and 16384
# (several passes with 4 KiB tiles), as int32 sums, each checked against
# the reference by `ccsynth run`; then checks that no rank process and no
# shared-memory object of the runs is left.
set -euo pipefail
cc=$1 lib=$2
algos=$("$cc" plugin info "$lib" | awk 'prev == "" && /^[A-Za-z0-9_]+$/ { print } { prev = $0 }')
[ -n "$algos" ] || { echo "no algorithms in $lib" >&2; exit 1; }
shm_before=$(ls /dev/shm 2>/dev/null | grep '^ccsynth-' | sort || true)
runs=0
for a in $algos; do
  for count in 1 4099 16384; do
    "$cc" run "$lib" --algorithm "$a" --count $count --dtype int32 --op sum \
      --iters 2 --timeout 120 --ranks-as processes
    runs=$((runs + 1))
  done
done
shm_after=$(ls /dev/shm 2>/dev/null | grep '^ccsynth-' | sort || true)
if comm -13 <(echo "$shm_before") <(echo "$shm_after") | grep -q .; then
  echo "FAIL: shared-memory objects left behind" >&2; exit 1
fi
echo "$runs runs with ranks as processes correct"
