#!/usr/bin/env bash
# demo.sh: the main job. Synthesizes an AllGather for two Azure NDv2 nodes
# from a TACCL-style sketch, proves it, compares it with NCCL-style
# baselines in the simulator, and compiles it to MSCCL XML and an MSCCL++
# execution plan, comparing what runs (the step level) with the compiled
# ring baseline; then does the same for a DSL program.
#
#   scripts/demo.sh [path/to/ccsynth]     (outputs in ./demo-out)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${1:-$root/build/tools/ccsynth/ccsynth}
out=${DEMO_OUT:-$PWD/demo-out}
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }

step "the machine: two Azure NDv2 nodes (8x V100 hybrid cube-mesh + 1 NIC each)"
"$cc" topo show ndv2x2 | head -8

step "synthesize AllGather from the TACCL-style sketch (Z3)"
"$cc" synth --topo ndv2x2 --sketch "$root/sketches/ndv2x2.json" \
  --collective allgather --time-limit 60 -o "$out/allgather-ndv2x2.json"

step "prove it implements AllGather"
"$cc" verify "$out/allgather-ndv2x2.json"

step "compare with the baselines in the alpha-beta simulator"
"$cc" baseline ring -c allgather -t ndv2x2 -o "$out/ring-ndv2x2.json"
"$cc" baseline hierarchical -c allgather -t ndv2x2 -o "$out/hier-ndv2x2.json"
"$cc" simulate "$out/allgather-ndv2x2.json" "$out/ring-ndv2x2.json" \
  "$out/hier-ndv2x2.json" --sizes 1K,64K,1M,16M,256M,1G \
  --plot "$out/busbw-ndv2x2.svg" --timeline "$out/timeline-ndv2x2.svg" \
  --timeline-size 1M

step "compile to MSCCL XML (tuned by the step-level model) and an MSCCL++ execution plan"
"$cc" compile "$out/allgather-ndv2x2.json" --target msccl-xml \
  -o "$out/allgather-ndv2x2.xml"
"$cc" compile "$out/allgather-ndv2x2.json" --target mscclpp-json \
  -o "$out/allgather-ndv2x2.plan.json"

step "what runs: the compiled AllGather against the compiled ring baseline, step level"
"$cc" compile "$out/ring-ndv2x2.json" --no-predict -o "$out/ring-ndv2x2.xml"
"$cc" simulate "$out/allgather-ndv2x2.xml" "$out/ring-ndv2x2.xml" \
  --topo ndv2x2 --level steps --sizes 1K,1M,1G

step "a DSL program: ring AllReduce for 16 ranks, checked and compiled"
"$cc" check "$root/sketches/dsl/ring_allreduce.ccl" -D ranks=16
"$cc" compile "$root/sketches/dsl/ring_allreduce.ccl" -D ranks=16 \
  --target msccl-xml -o "$out/ring_allreduce-16.xml"

step "outputs"
ls -l "$out"
