#!/usr/bin/env bash
# codegen-sharing.sh CCSYNTH WORKDIR
#
# Symmetric ranks share one rank-parameterized function: the generated code
# of a ring AllGather grows with one rank's steps, not with ranks x steps.
#   - 8, 16 and 64 ranks on rings: one function per threadblock role, and
#     the source of 64 ranks stays within a small factor of 8 ranks' times
#     the growth of one rank's steps (63 / 7);
#   - dgx-h100x8 (64 ranks, a ring that is not rank order): at most one
#     function per threadblock of a rank, and under 5% of the source that
#     --no-rank-sharing writes for the same program;
#   - instances: the rings of dgx1 (whose order is no rank expression) at
#     4 instances take at most twice the functions and 2.5 times the lines
#     of 1 instance (the instances of one role share a function; was 4
#     times);
#   - direct sends on fc:16 (every rank to every other, whose connections
#     the lowering meets in an order that differs by rank): threadblocks,
#     flags and landing slots numbered relative to the rank, and the sends
#     to different peers slots of one function: at most half a function
#     per threadblock role;
#   - NCCL's tree on dgx-h100x8 at 4 instances, whose ranks number the
#     instances of a role differently (the last rank of a node meets its
#     peers in another order): slots taken per rank, so at most twice the
#     functions of 1 instance (was one function per rank and threadblock).
set -uo pipefail
cc=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
fail() { echo "FAIL: $*" >&2; exit 1; }
# header NAME: "threadblocks ranks functions lines" of NAME.cu
header() {
  local tbs ranks fns
  tbs=$(sed -n '4s/^\/\/ \([0-9]*\) threadblocks.*/\1/p' "$1.cu")
  ranks=$(sed -n '2s/.*), \([0-9]*\) ranks$/\1/p' "$1.cu")
  fns=$(sed -n '4s/.*; \([0-9]*\) functions.*/\1/p' "$1.cu")
  [ -n "$tbs" ] && [ -n "$ranks" ] && [ -n "$fns" ] ||
    fail "no statistics in the header of $1.cu"
  echo "$tbs $ranks $fns $(wc -l <"$1.cu")"
}
# instances NAME: NAME.json compiled at 1 and 4 instances, and
# "tbs4 fns1 lines1 fns4 lines4" of the two
instances() {
  local i
  for i in 1 4; do
    "$cc" compile "$1.json" --target cuda --no-tune --instances $i \
      -o "$1-$i.cu" || fail "compile $1 at $i instances"
  done
  read -r _ _ fns1 lines1 <<<"$(header "$1-1")"
  read -r tbs4 _ fns4 lines4 <<<"$(header "$1-4")"
  echo "$1 at 4 instances: $tbs4 threadblocks, $fns4 functions," \
    "$lines4 lines (1 instance: $fns1 functions, $lines1 lines)" >&2
  echo "$tbs4 $fns1 $lines1 $fns4 $lines4"
}
gen() { # NAME TOPO [compile flags]
  local name=$1 topo=$2
  shift 2
  "$cc" baseline ring -c allgather -t "$topo" -o "$name.json" >/dev/null ||
    fail "baseline on $topo"
  "$cc" compile "$name.json" --target cuda --no-tune "$@" -o "$name.cu" ||
    fail "compile $name"
}
for n in 8 16 64; do
  gen ring$n ring:$n
  read -r tbs ranks fns lines <<<"$(header ring$n)"
  echo "ring:$n: $ranks ranks, $tbs threadblocks, $fns functions, $lines lines"
  [ "$fns" -le $((tbs / ranks)) ] ||
    fail "ring:$n: $fns functions for $((tbs / ranks)) threadblocks per rank"
  eval "lines$n=$lines"
done
# One rank's steps grow 9x from 8 to 64 ranks; allow 2x on top of that.
[ "$lines64" -le $((lines8 * 9 * 2)) ] ||
  fail "64 ranks: $lines64 lines against $lines8 for 8 ranks"

gen h100 dgx-h100x8
gen h100-unshared dgx-h100x8 --no-rank-sharing
read -r tbs ranks fns lines <<<"$(header h100)"
read -r _ _ fns_u lines_u <<<"$(header h100-unshared)"
echo "dgx-h100x8: $ranks ranks, $tbs threadblocks: $fns functions," \
  "$lines lines (unshared: $fns_u functions, $lines_u lines)"
[ "$fns_u" -eq "$tbs" ] || fail "--no-rank-sharing: $fns_u functions for $tbs threadblocks"
[ "$fns" -le $(((tbs + ranks - 1) / ranks)) ] ||
  fail "dgx-h100x8: $fns functions for $tbs threadblocks of $ranks ranks"
[ $((lines * 20)) -lt "$lines_u" ] ||
  fail "dgx-h100x8: $lines lines shared against $lines_u unshared"

"$cc" baseline ring -c allreduce -t dgx1 -o dgx1.json >/dev/null ||
  fail "ring baseline on dgx1"
read -r tbs4 fns1 lines1 fns4 lines4 <<<"$(instances dgx1)"
[ "$fns4" -le $((fns1 * 2)) ] && [ $((lines4 * 2)) -le $((lines1 * 5)) ] ||
  fail "dgx1 at 4 instances: $fns4 functions, $lines4 lines"

"$cc" baseline direct -c allreduce -t fc:16 -o direct16.json >/dev/null ||
  fail "direct baseline on fc:16"
"$cc" compile direct16.json --target cuda --no-tune -o direct16.cu ||
  fail "compile direct16"
read -r tbs ranks fns lines <<<"$(header direct16)"
tables=$(grep -c 'CCSYNTH_TABLE int t' direct16.cu)
echo "direct fc:16: $ranks ranks, $tbs threadblocks, $fns functions," \
  "$tables tables, $lines lines"
[ $((fns * 2)) -le $((tbs / ranks)) ] ||
  fail "direct fc:16: $fns functions for $((tbs / ranks)) threadblocks per rank"

"$cc" baseline tree -c allreduce -t dgx-h100x8 -o tree64.json >/dev/null ||
  fail "tree baseline on dgx-h100x8"
read -r tbs4 fns1 lines1 fns4 lines4 <<<"$(instances tree64)"
[ "$fns4" -le $((fns1 * 2)) ] ||
  fail "dgx-h100x8 tree at 4 instances: $fns4 functions against $fns1"
echo "shared"
