#!/usr/bin/env bash
# mutate-generated.sh CCSYNTH HOST_RUN RUNTIME_INCLUDE WORKDIR signal|wait [FLAGS...]
#
# Generates the code of a ring AllReduce on dgx1, deletes one line that the
# protocol needs, builds it into a plugin and runs it. The run must fail and
# never hang:
#   signal: the first data-flag signal is gone; a watchdog must fire (the
#           receiver's, or one of a threadblock waiting on it) and name
#           rank, threadblock, step and the flag.
#   wait:   the first wait for a message that is read out of its landing
#           slot is gone (build with -fsanitize=thread): ThreadSanitizer
#           must report the race, or the result must be wrong.
# CCSYNTH_RANKS_AS=processes runs the ranks as processes (host-shm
# transport); then no rank process may outlive the run.
set -uo pipefail
cc=$1 runner=$2 inc=$3 work=$4 what=$5
shift 5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
"$cc" baseline ring -c allreduce -t dgx1 -o sched.json || exit 2
"$cc" compile sched.json --target cuda --no-tune --tile-bytes 4096 -o algo.cpp || exit 2
name=$(sed -n 's/^namespace ccsynth_gen_\([A-Za-z0-9_]*\) {$/\1/p' algo.cpp)
case $what in
signal) pattern='x.signal(' ;;
wait) pattern='CCSYNTH_TRY(x.waitData(' ;;
*) echo "unknown mutation '$what'" >&2; exit 2 ;;
esac
# The first matching line; for `wait`, one followed by a read of landing.
line=$(awk -v pat="$pattern" -v what="$what" '
  index($0, pat) { if (what == "signal") { print NR; exit } cand = NR; next }
  cand && (index($0, "x.reduce3(Land") || index($0, "x.copy(Land")) {
    print cand; exit }
  { cand = 0 }' algo.cpp)
[ -n "$line" ] || { echo "no line to delete" >&2; exit 2; }
echo "deleting line $line: $(sed -n "${line}p" algo.cpp)"
sed -i "${line}d" algo.cpp
cat >table.cpp <<EOT
#include "ccsynth/runtime/PluginTable.h"
CCSYNTH_DECLARE_ALGORITHM($name)
CCSYNTH_PLUGIN_TABLE(ccsynthAlgorithm_$name)
EOT
${CXX:-c++} -std=c++20 -O1 -g -fPIC -shared -pthread -DCCSYNTH_PLUGIN \
  '-DCCSYNTH_VERSION_STRING="test"' -DCCSYNTH_DTYPE_MASK=0x80u \
  -DCCSYNTH_OP_MASK=1u -I"$inc" "$@" -x c++ algo.cpp table.cpp -o lib.so ||
  exit 2
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0"
start=$(date +%s)
ranks_as=${CCSYNTH_RANKS_AS:-threads}
shm_before=$(ls /dev/shm 2>/dev/null | grep '^ccsynth-' | sort || true)
timeout 240 "$runner" lib.so 65536 fp32 sum 3 "$ranks_as" >out.txt 2>&1
rc=$?
cat out.txt
echo "exit $rc after $(($(date +%s) - start)) s"
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
  echo "FAIL: the mutant passed or hung" >&2
  exit 1
fi
if [ "$what" = signal ]; then
  grep -Eq 'rank [0-9]+ threadblock [0-9]+ step [0-9]+: timed out waiting for ' out.txt ||
    { echo "FAIL: no watchdog report" >&2; exit 1; }
fi
if [ "$ranks_as" = processes ]; then
  # Rank processes that were killed may take a moment to be reaped on a
  # loaded machine: what is still there after 30 s outlived the run.
  left() {
    local after
    after=$(ls /dev/shm 2>/dev/null | grep '^ccsynth-' | sort || true)
    pgrep -f -- "$runner lib.so 65536" >/dev/null ||
      comm -13 <(echo "$shm_before") <(echo "$after") | grep -q .
  }
  for _ in $(seq 300); do
    left || break
    sleep 0.1
  done
  if left; then
    echo "FAIL: a rank process or shared-memory object outlived the run" >&2
    exit 1
  fi
fi
echo "mutant rejected"
