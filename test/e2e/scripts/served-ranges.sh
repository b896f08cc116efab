#!/usr/bin/env bash
# served-ranges.sh CCSYNTH RUNTIME_INCLUDE WORKDIR
#
# Generated code serves the runs of sizes where it beats NCCL, one plugin
# descriptor per run (and per tile within a run): synth's in-network
# AllReduce on 4 x 8 H100 without SHARP (NVLS with rail exchanges) is
# faster than NCCL's best from about 64K up by the step-level model.
# `compile --target cuda` must say which runs it serves and define one
# plugin descriptor per run, the same code under each; a plugin built from
# that source, with one more descriptor of another tile, must list each
# with its range, and `ccsynth run` must run it (one code) correctly. The
# compile weighs its tile between 1M and 1G too: at 64M the code must keep
# synth's gain over NCCL (at least 1.10 x).
set -euo pipefail
cc=$1 inc=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$cc" synth --topo ndv5x4 --collective allreduce --size 1G --in-network \
  --time-limit 4 --no-step-level -q -o sched.json > synth.log
"$cc" compile sched.json --target cuda -o algo.cu 2> compile.log
note=$(grep 'note: serves ' compile.log || true)
echo "$note"
# "serves only [A, B) and [C, D)" (D may be "no bound"); where the ranges
# run with different tiles, one descriptor per range and tile, listed in
# the tiles note.
tiles=$(grep 'note: tiles per size range' compile.log || true)
echo "$tiles"
ranges=$(grep -o '\[[0-9.]*[KMGT]\?B\?, [^)]*)' <<<"${tiles:-$note}" || true)
count=$(grep -c . <<<"$ranges" || true)
if ((count < 1)); then
  echo "expected one or more served ranges in the note" >&2
  exit 1
fi
ratio64=$(grep -o '64M [0-9.]*x' <<<"$note" | head -1 | sed 's/64M \(.*\)x/\1/')
if ! python3 -c "import sys; sys.exit(0 if float('${ratio64:-0}') >= 1.10 else 1)"; then
  echo "expected at least 1.10 x NCCL at 64M, got '${ratio64}'" >&2
  exit 1
fi
name=$(sed -n 's/^namespace ccsynth_gen_\([A-Za-z0-9_]*\) {$/\1/p' algo.cu)
mapfile -t descs < <(sed -n \
  's/^CCSYNTH_DEFINE_ALGORITHM\(_RANGE\|_TILED\)\?([^,]*, *\([A-Za-z0-9_]*\).*/\2/p' \
  algo.cu)
if ((${#descs[@]} != count)) || [[ ${descs[0]} != "$name" ]]; then
  echo "expected $count descriptors, the first '$name'; got: ${descs[*]}" >&2
  exit 1
fi
# One more descriptor of the same code with another tile (as the compile
# writes where a range runs faster with it): the runtime must run the code
# with that tile and size its scratch for it. 1 KiB tiles: several passes
# over each chunk of the run below, where the program's tile takes one.
tile=$(sed -n 's/.*tileBytes = \([0-9]*\)ull;.*/\1/p' algo.cu | head -1)
other=$((tile == 1024 ? 2048 : 1024))
cat >> algo.cu <<EOF
#if defined(CCSYNTH_PLUGIN)
CCSYNTH_DEFINE_ALGORITHM_TILED(ccsynth_gen_$name::Algo, ${name}_othertile, 0ull, 0ull, ${other}ull)
#endif
EOF
descs+=("${name}_othertile")
{
  echo '#include "ccsynth/runtime/PluginTable.h"'
  list=
  for d in "${descs[@]}"; do
    echo "CCSYNTH_DECLARE_ALGORITHM($d)"
    list+="${list:+, }ccsynthAlgorithm_$d"
  done
  echo "CCSYNTH_PLUGIN_TABLE($list)"
} > table.cpp
${CXX:-c++} -std=c++20 -O0 -fPIC -shared -pthread -DCCSYNTH_PLUGIN \
  '-DCCSYNTH_VERSION_STRING="test"' -DCCSYNTH_DTYPE_MASK=0x80u \
  -DCCSYNTH_OP_MASK=1u -I"$inc" -x c++ algo.cu table.cpp -o lib.so
"$cc" plugin info lib.so > info.txt
# Each descriptor's sizes: the note's ranges, as bytes (min .. max - 1).
python3 - "$ranges" info.txt <<'PY'
import re, sys
units = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
def parse(s):
    m = re.fullmatch(r'([0-9.]+)([KMGT]?)B?', s)
    return int(float(m.group(1)) * units[m.group(2)])
want = []
for r in sys.argv[1].splitlines():
    lo, hi = re.fullmatch(r'\[(\S+), (.*)\)', r).groups()
    want.append((parse(lo), None if hi == 'no bound' else parse(hi) - 1))
got, scratch = [], []
for line in open(sys.argv[2]):
    m = re.match(r'  sizes +(\S+) \.\. (\S+)$', line)
    if m:
        got.append((parse(m.group(1)),
                    None if m.group(2) == 'unbounded' else parse(m.group(2))))
    m = re.match(r'  scratch +([0-9]+) bytes', line)
    if m:
        scratch.append(int(m.group(1)))
# The last descriptor is the hand-added one with another tile.
if got[:-1] != want:
    sys.exit(f'plugin sizes {got[:-1]}, the note says {want}')
if len(scratch) == len(got) and scratch[-1] == scratch[0]:
    sys.exit(f'the descriptor with another tile needs other scratch: {scratch}')
print(f'{len(got) - 1} descriptors with the served ranges: {got[:-1]}; '
      f'scratch {scratch}')
PY
"$cc" run lib.so --count 4099 --dtype fp32 --op sum --iters 1 --timeout 300
"$cc" run lib.so --algorithm "${name}_othertile" --count 300007 --dtype fp32 \
  --op sum --iters 1 --timeout 300
echo "served ranges: ok"
