#!/usr/bin/env bash
# double.sh APP WORK: the libnccl test double alone. The NCCL application
# runs as 4 processes on it (results checked by the application); every
# rank's log records its calls in order, with their arguments.
set -euo pipefail
app=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
source "$(dirname "$0")/launch.sh"
launch plain 4 -- "$app"
[ "$launch_rc" -eq 0 ] || { echo "FAIL: the application failed on the double"; exit 1; }
fail=0
for r in 0 1 2 3; do
  log=$work/plain.calls.$r
  for want in "^ncclGetVersion$" "^ncclCommInitRank nranks=4 rank=$r$" \
    "^ncclAllGather count=4099 dtype=2 comm=[^ ]+/$r/4$" \
    "^ncclAllReduce count=513 dtype=8 op=0 inplace=0 comm=[^ ]+/$r/4$" \
    "^ncclSend count=2048 dtype=2 peer=$(((r + 1) % 4)) comm=" \
    "^ncclCommSplit comm=[^ ]+/$r color=$((r % 2)) key=-?$r$" \
    "^ncclCommInitRankConfig nranks=4 rank=$r blocking=0$" "^ncclCommDestroy "; do
    grep -qE "$want" "$log" || { echo "FAIL: rank $r: no call matching '$want'"; fail=1; }
  done
  n=$(wc -l <"$log")
  [ "$n" -ge 30 ] || { echo "FAIL: rank $r: only $n calls recorded"; fail=1; }
done
cat "$work"/plain.out.*
[ $fail -eq 0 ] && echo "the double served 4 processes and recorded $(wc -l <"$work/plain.calls.0") calls of rank 0"
exit $fail
