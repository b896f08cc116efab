#!/usr/bin/env bash
# host_bench.sh [CCSYNTH]: the host backend against memcpy, same run.
#
# For each algorithm below, `ccsynth run --compare-memcpy` runs it with
# ranks as threads and then times every rank's thread copying its output
# bytes with memcpy at once; the ratio is algorithm time / memcpy time
# (1.0 = as fast as each rank copying its result once). This measures the
# host runtime's overhead (synchronization, threads per threadblock), not a
# network: on a 2-core machine many threads share two cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${1:-$root/build/tools/ccsynth/ccsynth}
size=${SIZE:-64M}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { # name, schedule args...
  local name=$1
  shift
  "$cc" "$@" -o "$work/$name.json" >/dev/null
  echo "== $name ($size)"
  "$cc" run "$work/$name.json" --size "$size" --iters "${ITERS:-5}" \
    --tile-bytes 1M --compare-memcpy 2>/dev/null | tail -n 3
}
run ring-allgather-dgx1 baseline ring -c allgather -t dgx1
run ring-allreduce-dgx1 baseline ring -c allreduce -t dgx1
run direct-alltoall-dgx1 baseline direct -c alltoall -t dgx1
run hierarchical-allreduce-dgx-h100x2 baseline hierarchical -c allreduce \
  -t dgx-h100x2
