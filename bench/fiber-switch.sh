#!/usr/bin/env bash
# fiber-switch.sh [OTHER_RUNTIME_INCLUDE]: the host backend's fiber switch,
# this tree's against another runtime's, in the same run.
#
# Builds bench/FiberSwitchBench.cpp against this tree's Fibers.h (with
# Boost.Context) and, when given, against OTHER_RUNTIME_INCLUDE (the
# runtime/include folder of another checkout, e.g. a git worktree of an
# older commit), runs them alternately three times and prints ns per switch
# and the ratio other / this (above 1: this tree switches faster).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cxx=${CXX:-c++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cxx" -std=c++20 -O2 -DCCSYNTH_FIBERS=1 -I"$root/runtime/include" \
  "$root/bench/FiberSwitchBench.cpp" -o "$work/this" -pthread \
  -l:libboost_context.a
if (($# > 0)); then
  # An older runtime may need Boost.Context too; the flags are harmless
  # where it does not.
  "$cxx" -std=c++20 -O2 -DCCSYNTH_FIBERS=1 -I"$1" \
    "$root/bench/FiberSwitchBench.cpp" -o "$work/other" -pthread \
    -l:libboost_context.a
fi
for round in 1 2 3; do
  this=$("$work/this")
  if [[ -x "$work/other" ]]; then
    other=$("$work/other")
    awk -v t="$this" -v o="$other" -v r="$round" 'BEGIN {
      printf "round %d: this %.2f ns, other %.2f ns per switch (other/this %.2fx)\n",
             r, t, o, o / t }'
  else
    echo "round $round: this $this ns per switch"
  fi
done
