#!/usr/bin/env bash
# run-cuda.sh CCSYNTH WORKDIR MODE [PLUGIN_DIR]
#
# `ccsynth run --backend cuda` (or the MLIR-free `ccsynth-run`) wherever the
# tests run. Whether this machine
# has a GPU is decided independently of ccsynth (nvidia-smi lists one, or
# /dev/nvidia0 exists), and the expected outcome follows from it:
#   without a GPU: exit 5, one "error: no CUDA device: ..." line on stderr,
#     nothing on stdout, nothing built, no temporary file left behind;
#   with a GPU: the run succeeds and prints a result that matches the
#     reference.
# MODE
#   source  a 4-rank ring AllGather from its schedule (ccsynth builds it)
#   plugin  the same built first by `compile --target plugin --backend
#           cuda` (needs nvcc, no GPU): `plugin info` shows the CUDA comms
#           entry, then the .so is run
#   gpu     exit 77 (skipped) without a GPU; else 8 virtual ranks of the
#           DGX-H100 ring AllGather, ReduceScatter, AllReduce and direct
#           AllToAll, with --compare-memcpy
#   gpu-plugins  the same with CCSYNTH being ccsynth-run, on the plugins a
#           runtime-only build made from prepared sources (PLUGIN_DIR:
#           lib<name>.so), as scripts/gpu-check.sh runs them
set -euo pipefail
cc=$1 work=$2 mode=$3 plugins=${4:-}
run=("$cc" run)
[ "$mode" != gpu-plugins ] || run=("$cc")
rm -rf "$work" && mkdir -p "$work/tmp" && cd "$work"
export TMPDIR=$work/tmp

gpu=0
if { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null |
  grep -q '^GPU '; } || [ -e /dev/nvidia0 ]; then
  gpu=1
fi
echo "GPU present: $gpu"

die() { echo "FAIL: $*" >&2; exit 1; }

# expect_run NAME ARGS...: runs `ccsynth run ARGS` and checks the outcome.
expect_run() {
  local name=$1; shift
  set +e
  "${run[@]}" "$@" >"$name.out" 2>"$name.err"
  local rc=$?
  set -e
  echo "== ${run[*]} $* -> exit $rc"
  cat "$name.out" "$name.err"
  if [ "$gpu" = 0 ]; then
    [ "$rc" = 5 ] || die "$name: exit $rc, expected 5 (no CUDA device)"
    grep -Eq '^ccsynth(-run)?: error: no CUDA device: .' "$name.err" ||
      die "$name: no 'no CUDA device' error"
    [ "$(wc -l <"$name.err")" = 1 ] || die "$name: more than one line on stderr"
    [ ! -s "$name.out" ] || die "$name: partial output on stdout"
    ! grep -q 'building' "$name.err" || die "$name: built before checking"
  else
    [ "$rc" = 0 ] || die "$name: exit $rc on a machine with a GPU"
    grep -q 'correct (matches the reference)' "$name.out" ||
      die "$name: no checked result"
    grep -q 'virtual ranks on GPU' "$name.out" || die "$name: not on a GPU"
  fi
  [ -z "$(ls -A "$TMPDIR")" ] || die "$name: left $(ls "$TMPDIR") behind"
}

case $mode in
source)
  "$cc" baseline ring -c allgather -t ring:4 -o ag4.json
  expect_run source ag4.json --backend cuda --size 1M --iters 3
  # A missing input is an input error even without a device.
  set +e
  "$cc" run no-such.json --backend cuda --size 1M 2>missing.err
  rc=$?
  set -e
  [ "$rc" = 1 ] && grep -q "error: .*no-such.json" missing.err ||
    die "missing input: exit $rc"
  ;;
plugin)
  "$cc" baseline ring -c allgather -t ring:4 -o ag4.json
  "$cc" compile ag4.json --target plugin --backend cuda --no-tune --cuda-arch 90 \
    -o libag4.so
  "$cc" plugin info libag4.so | tee info.txt
  grep -q '^CUDA comms entry: version 2 ' info.txt || die "no CUDA comms entry"
  grep -q '^  backend  *cuda$' info.txt || die "not a CUDA plugin"
  grep -q '^  transports .*cuda-virtual' info.txt || die "no virtual ranks"
  # The newest architecture's PTX rides along, which the driver compiles
  # for a GPU newer than every architecture built.
  strings libag4.so | grep -E '^\.target sm_[0-9]+' | sort -u | tee ptx.txt
  grep -qx '.target sm_90' ptx.txt || die "no compute_90 PTX in the plugin"
  expect_run plugin libag4.so --backend cuda --count 4099
  # A host plugin is refused by the CUDA backend, and the reverse.
  if [ "$gpu" = 1 ]; then
    set +e
    "$cc" run libag4.so --size 1M 2>host.err
    rc=$?
    set -e
    [ "$rc" = 1 ] && grep -q "built for the cuda backend, not host" host.err ||
      die "a CUDA plugin ran on the host backend"
  fi
  ;;
gpu)
  [ "$gpu" = 1 ] || { echo "no GPU: skipped"; exit 77; }
  for spec in "ring allgather 64M" "ring reducescatter 16M" \
    "ring allreduce 16M" "direct alltoall 16M"; do
    read -r kind coll size <<<"$spec"
    "$cc" baseline "$kind" -c "$coll" -t dgx-h100 -o "$coll.json"
    for dtype in fp32 bf16; do
      expect_run "$coll-$dtype" "$coll.json" --backend cuda --size "$size" \
        --dtype "$dtype" --iters 10 --compare-memcpy \
        --keep-plugin "$coll-$dtype.so"
      grep -q 'algorithm / memcpy time' "$coll-$dtype.out" ||
        die "$coll: no memcpy comparison"
      [ "$coll" = allgather ] || [ "$coll" = alltoall ] || continue
      break # copies: one dtype is enough
    done
    # A ragged count that is not a multiple of the chunk count.
    expect_run "$coll-ragged" "$coll-fp32.so" --backend cuda --count 4099
  done
  ;;
gpu-plugins)
  [ "$gpu" = 1 ] || { echo "no GPU: skipped"; exit 77; }
  for spec in "h100_ring_allgather 64M fp32" "h100_ring_reducescatter 16M fp32,bf16" \
    "h100_ring_allreduce 16M fp32,bf16" "h100_direct_alltoall 16M fp32" \
    "h100_nvls_allreduce 16M fp32,bf16"; do
    read -r name size dtypes <<<"$spec"
    for dtype in ${dtypes//,/ }; do
      expect_run "$name-$dtype" "$plugins/lib$name.so" --backend cuda \
        --size "$size" --dtype "$dtype" --iters 10 --compare-memcpy
      grep -q 'algorithm / memcpy time' "$name-$dtype.out" ||
        die "$name: no memcpy comparison"
    done
    # A ragged count that is not a multiple of the chunk count.
    expect_run "$name-ragged" "$plugins/lib$name.so" --backend cuda --count 4099
  done
  ;;
*) die "unknown mode '$mode'" ;;
esac
echo "ok"
