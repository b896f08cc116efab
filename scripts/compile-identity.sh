#!/usr/bin/env bash
# compile-identity.sh: what `ccsynth compile` (and the commands that feed
# it) write for the test inputs, as one manifest of checksums, so that two
# builds can be compared byte for byte after a change meant to keep
# behaviour as it is.
#
#   scripts/compile-identity.sh CCSYNTH OUTDIR     # writes OUTDIR/manifest
#   diff OUTDIR_BEFORE/manifest OUTDIR_AFTER/manifest
#
# Inputs: every schedule under test/inputs/schedules, every DSL program
# under sketches/dsl, and baselines (ring, tree, direct, hierarchical, nvls)
# on built-in machines. Targets: msccl-xml (tuned and --no-tune),
# mscclpp-json, mlir, cuda (tuned generated code) and msccl-dir, and what
# `simulate` predicts at both levels. Besides
# each output, what compile prints (stdout and stderr, the scratch folder's
# path replaced by OUT) is part of the manifest; wall-clock figures are the
# only thing masked. Run both builds from the same checkout: outputs record
# the paths of inputs under it.
set -uo pipefail

if (($# != 2)); then
  echo "usage: $0 CCSYNTH OUTDIR" >&2
  exit 2
fi
cc=$(realpath "$1")
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(realpath "$out")
rm -rf "${out:?}"/files
mkdir -p "$out/files"

# One command; its files land in $out/files, its output in NAME.log with
# the scratch path and times masked.
step() {
  local name=$1
  shift
  (cd "$out/files" && "$@") >"$out/files/$name.log" 2>&1
  echo "rc=$?" >>"$out/files/$name.log"
  sed -i -e "s#$out/files#OUT#g" -e "s#$root#SRC#g" \
    -e 's/[0-9.]\+ \?s\b/T s/g' -e 's/[0-9.]\+ \?ms\b/T ms/g' \
    "$out/files/$name.log"
}

inputs=()
for f in "$root"/test/inputs/schedules/*.json; do inputs+=("$f"); done
for f in "$root"/sketches/dsl/*.ccl; do inputs+=("$f"); done
for spec in ring:allreduce:dgx-h100x2 ring:allgather:dgx-a100 \
  tree:allreduce:dgx-a100x2 direct:allgather:dgx-a100 \
  hierarchical:allreduce:ndv5x4 nvls:allreduce:dgx-h100x2 \
  nvls:allreduce:dgx-h100; do
  IFS=: read -r algo coll topo <<<"$spec"
  name="baseline-$algo-$coll-$topo"
  step "$name" "$cc" baseline "$algo" -c "$coll" -t "$topo" -o "$name.json"
  # Named relative to the folder compile runs in: generated code and
  # msccl-dir READMEs record their input's path.
  [[ -s "$out/files/$name.json" ]] && inputs+=("$name.json")
done

for f in "${inputs[@]}"; do
  base=$(basename "${f%.*}")
  step "$base.xml" "$cc" compile "$f" -o "$base.xml"
  step "$base.notune.xml" "$cc" compile "$f" --no-tune -o "$base.notune.xml"
  step "$base.mscclpp" "$cc" compile "$f" -t mscclpp-json -o "$base.mscclpp.json"
  step "$base.mlir" "$cc" compile "$f" -t mlir -o "$base.mlir"
  step "$base.cu" "$cc" compile "$f" -t cuda -o "$base.cu"
  step "$base.dir" "$cc" compile "$f" -t msccl-dir --split 64K,4M -o "$base.dir"
  # The models the outputs were chosen by: chunk level and step level.
  step "$base.sim" "$cc" simulate "$f" --sizes 1K,1M,1G
  step "$base.simsteps" "$cc" simulate "$f" --level steps --sizes 1K,1M,1G
done

(cd "$out/files" && find . -type f -print0 | sort -z | xargs -0 sha256sum) \
  >"$out/manifest"
echo "$(wc -l <"$out/manifest") files in $out/manifest"
