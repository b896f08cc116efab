#!/usr/bin/env bash
# cuda_compile_bench.sh: nvcc compile time, SASS bytes and registers of
# generated CUDA code against one rank's steps.
#
# For each algorithm: `ccsynth compile --target cuda --no-tune` (the program
# as lowered, one instance: the tuned compile may pick more instances, or
# write nothing where NCCL is faster), then one nvcc run to
# a cubin for one architecture (fp32 sum kernels, both transports), timed
# in CPU seconds (user + system of nvcc and its children: independent of
# other load on the machine; nvcc's phases run one after another).
# SASS bytes are the .text sections of the cubin (readelf; cuobjdump is not
# needed); regs and spill are the largest of ptxas -v's figures. The baseline in the same run is the same program generated with
# --no-rank-sharing (one function per rank and threadblock): its time over
# the shared one is the "unshared/shared" column. Set UNSHARED=0 to skip the
# baseline compiles (the 64-rank ones take many minutes).
#
#   bench/cuda_compile_bench.sh [ALGO...]     ALGO = KIND:COLLECTIVE:TOPO
#   env: CCSYNTH (default build/tools/ccsynth/ccsynth), NVCC, ARCH (90),
#        UNSHARED (1), WORK (a temporary directory)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cc=${CCSYNTH:-$here/build/tools/ccsynth/ccsynth}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
arch=${ARCH:-90}
unshared=${UNSHARED:-1}
work=${WORK:-$(mktemp -d)}
[ -x "$cc" ] || { echo "no ccsynth at $cc (set CCSYNTH)" >&2; exit 2; }
[ -x "$nvcc" ] || { echo "no nvcc (set NVCC)" >&2; exit 2; }
algos=("$@")
[ ${#algos[@]} -gt 0 ] || algos=(
  ring:allgather:dgx1 ring:reducescatter:dgx1 ring:allreduce:dgx1
  direct:alltoall:dgx1 hierarchical:allreduce:dgx-h100x2
  ring:allgather:ring:8 ring:allgather:ring:64 ring:allgather:dgx-h100x8)

# compile SCHEDULE NAME FLAGS...: prints "seconds sass_bytes max_registers"
compile() {
  local sched=$1 name=$2
  shift 2
  "$cc" compile "$work/$sched.json" --target cuda --no-tune "$@" \
    -o "$work/$name.cu" 2>/dev/null ||
    { echo "compile of $sched failed" >&2; exit 1; }
  /usr/bin/time -f '%U %S' -o "$work/$name.time" \
    "$nvcc" -std=c++20 -O3 -cubin -arch=sm_$arch -DCCSYNTH_PLUGIN \
    -DCCSYNTH_DTYPE_MASK=0x80u -DCCSYNTH_OP_MASK=0x1u \
    -I"$here/runtime/include" -I"$here/runtime/cuda/include" -Xptxas -v -x cu "$work/$name.cu" \
    -o "$work/$name.cubin" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; exit 1; }
  local cpu
  cpu=$(awk '{ print $1 + $2 }' "$work/$name.time")
  local sass regs
  sass=0
  for size in $(readelf -S -W "$work/$name.cubin" 2>/dev/null |
    sed -n 's/^ *\[ *[0-9]*\] \.text\.[^ ]* *[A-Z_]* *[0-9a-f]* *[0-9a-f]* \([0-9a-f]*\).*/\1/p'); do
    sass=$((sass + 16#$size))
  done
  regs=$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' "$work/$name.log" |
    sort -n | tail -1)
  spill=$(sed -n 's/.* \([0-9]*\) bytes spill stores.*/\1/p' "$work/$name.log" |
    sort -n | tail -1)
  echo "$cpu $sass ${regs:-?} ${spill:-?}"
}

printf '%-34s %5s %6s %6s %4s %7s %8s %4s %5s %s\n' algorithm ranks steps \
  "1-rank" fns "nvcc s" "SASS KB" regs spill "unshared/shared"
for spec in "${algos[@]}"; do
  kind=${spec%%:*} rest=${spec#*:}
  coll=${rest%%:*} topo=${rest#*:}
  name=$(echo "$kind-$coll-$topo" | tr ':' '_')
  "$cc" baseline "$kind" -c "$coll" -t "$topo" -o "$work/$name.json" \
    >/dev/null 2>&1
  read -r secs sass regs spill <<<"$(compile "$name" "$name")"
  head=$(sed -n 4p "$work/$name.cu")
  ranks=$(sed -n '2s/.*), \([0-9]*\) ranks$/\1/p' "$work/$name.cu")
  steps=$(echo "$head" | sed -n 's/.* threadblocks, \([0-9]*\) steps.*/\1/p')
  fns=$(echo "$head" | sed -n 's/.*; \([0-9]*\) functions.*/\1/p')
  ratio=-
  if [ "$unshared" = 1 ]; then
    read -r usecs _ _ _ <<<"$(compile "$name" "$name-unshared" --no-rank-sharing)"
    ratio=$(printf '%.2fx (%.1f s)' "$(echo "$usecs / $secs" | bc -l)" "$usecs")
  fi
  printf '%-34s %5d %6d %6d %4d %7.1f %8.1f %4s %5s %s\n' "$spec" "$ranks" \
    "$steps" $((steps / ranks)) "$fns" "$secs" "$(echo "$sass / 1024" | bc -l)" \
    "$regs" "$spill" "$ratio"
done
