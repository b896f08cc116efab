#!/usr/bin/env bash
# ccsynth-run.sh CCSYNTH CCSYNTH_RUN PLUGIN_DIR
#
# The MLIR-free runner against `ccsynth run` on the same host plugins
# (lib-4.so and lib-mutant-4.so of build-plugins.sh): the same header and a
# checked result for every algorithm, ranks as processes too, the watchdog's
# report for the mutant, and the documented exit codes for bad usage, a
# missing file, no CUDA device and a failed write.
set -uo pipefail
cc=$1 runner=$2 dir=$3
lib=$dir/lib-4.so
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect RC CMD...: runs CMD, which must exit RC; its output is in out/err.
expect() {
  local want=$1 rc
  shift
  "$@" >out 2>err
  rc=$?
  [ "$rc" = "$want" ] || { cat out err; fail "exit $rc, expected $want: $*"; }
}
work=$(mktemp -d) && cd "$work" || exit 1
trap 'rm -rf "$work"' EXIT

algos=$("$cc" plugin info "$lib" | awk 'prev == "" && /^[A-Za-z0-9_]+$/ { print } { prev = $0 }')
[ -n "$algos" ] || fail "no algorithms in $lib"
for a in $algos; do
  args=("$lib" --algorithm "$a" --count 4099 --dtype int32 --op sum --iters 2 --seed 7)
  expect 0 "$runner" "${args[@]}"
  grep -q 'correct (matches the reference)' out || fail "$a: no checked result"
  head -1 out >runner.head
  expect 0 "$cc" run "${args[@]}"
  head -1 out >ccsynth.head
  cmp -s runner.head ccsynth.head ||
    fail "$a: headers differ: $(cat runner.head) / $(cat ccsynth.head)"
done
a=$(echo "$algos" | head -1)
expect 0 "$runner" "$lib" --algorithm "$a" --size 64K --ranks-as processes --iters 1
grep -q 'correct (matches the reference)' out || fail "processes: no result"

# The mutant lost a signal: the watchdog ends the run and names the wait.
expect 1 "$runner" "$dir/lib-mutant-4.so" --count 1024 --dtype int32 --timeout 0.5
grep -Eq 'rank [0-9]+ threadblock [0-9]+ step [0-9]+: timed out waiting' err ||
  fail "mutant: no watchdog report: $(cat err)"

# Usage and input errors.
expect 2 "$runner"
expect 2 "$runner" "$lib" --count 16
grep -q 'several algorithms' err || fail "several algorithms: $(cat err)"
for bad in nan inf -1 0 1e300; do
  expect 2 "$runner" "$lib" --algorithm "$a" --count 16 --timeout "$bad"
done
expect 2 "$runner" "$lib" --algorithm "$a" --count 99999999999999999999
expect 2 "$runner" "$lib" --algorithm "$a" --count 4611686018427387903
grep -q 'GiB per rank buffer' err || fail "huge count: $(cat err)"
expect 2 "$runner" "$lib" --algorithm "$a" --size 12Q
expect 2 "$runner" "$lib" --algorithm "$a" --count 16 --size 1M
expect 1 "$runner" no-such.so --count 16
grep -q "cannot read 'no-such.so'" err || fail "missing file: $(cat err)"
expect 0 "$runner" --help
grep -q 'usage: ccsynth-run' out || fail "no help"
# A result nobody could read is a failure.
if [ -w /dev/full ]; then
  "$runner" "$lib" --algorithm "$a" --count 16 >/dev/full 2>err
  [ $? = 1 ] || fail "a failed write of the report exited 0"
  grep -q 'cannot write to standard output' err || fail "write error: $(cat err)"
fi
# Without a GPU, --backend cuda is "no CUDA device" (exit 5), one line.
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null |
  grep -q '^GPU '; } && [ ! -e /dev/nvidia0 ]; then
  expect 5 "$runner" "$lib" --backend cuda --count 16
  grep -q '^ccsynth-run: error: no CUDA device: ' err && [ "$(wc -l <err)" = 1 ] &&
    [ ! -s out ] || fail "no device: $(cat out err)"
fi
echo "ccsynth-run agrees with ccsynth run"
