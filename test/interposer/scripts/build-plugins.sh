#!/usr/bin/env bash
# build-plugins.sh CCSYNTH RUNTIME_INCLUDE OUTDIR
#
# The host plugins of the ranks-as-processes and interposer tests, built
# once: lib-N.so (N = 2, 4, 8) holds ring AllGather, ReduceScatter and
# AllReduce and direct AlltoAll on the fully connected N-rank machine, for
# int32 and fp32 sums (-O0: compile time dominates these tests).
# lib-mutant-4.so is a 4-rank ring AllReduce whose generated code lost its
# first data-flag signal: a launch of it can only end by the watchdog.
set -euo pipefail
cc=$1 inc=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && cd "$out"
for n in 2 4 8; do
  inputs=()
  for coll in allgather reducescatter allreduce; do
    "$cc" baseline ring -c $coll -t fc:$n -o ring-$coll-$n.json
    inputs+=(ring-$coll-$n.json)
  done
  "$cc" baseline direct -c alltoall -t fc:$n -o direct-alltoall-$n.json
  inputs+=(direct-alltoall-$n.json)
  "$cc" compile "${inputs[@]}" --target plugin --backend host \
    --dtypes int32,fp32 --ops sum --tile-bytes 4096 --plugin-flag=-O0 \
    -o lib-$n.so
done

"$cc" compile ring-allreduce-4.json --target cuda --no-tune --tile-bytes 4096 -o mutant.cpp
name=$(sed -n 's/^namespace ccsynth_gen_\([A-Za-z0-9_]*\) {$/\1/p' mutant.cpp)
line=$(grep -n -m1 'x.signal(' mutant.cpp | cut -d: -f1)
[ -n "$name" ] && [ -n "$line" ] || { echo "cannot mutate mutant.cpp" >&2; exit 1; }
sed -i "${line}d" mutant.cpp
cat >mutant-table.cpp <<EOT
#include "ccsynth/runtime/PluginTable.h"
CCSYNTH_DECLARE_ALGORITHM($name)
CCSYNTH_PLUGIN_TABLE(ccsynthAlgorithm_$name)
EOT
${CXX:-c++} -std=c++20 -O0 -fPIC -shared -pthread -DCCSYNTH_PLUGIN \
  '-DCCSYNTH_VERSION_STRING="test"' -DCCSYNTH_DTYPE_MASK=0x4u \
  -DCCSYNTH_OP_MASK=1u -I"$inc" -x c++ mutant.cpp mutant-table.cpp \
  -o lib-mutant-4.so
"$cc" plugin info lib-4.so
echo "plugins built"
