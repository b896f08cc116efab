#!/usr/bin/env bash
# stopped-rank.sh CCSYNTH PLUGIN
#
# One rank process of a many-iteration run is stopped (SIGSTOP) while the
# run is under way: the run must end on its own, exit 1 and name that
# rank as stopped, with no rank process and no shared-memory object left.
# The stop is sent as soon as the rank processes are seen; if a run
# finishes before that, it is retried with ten times the iterations.
set -uo pipefail
cc=$1 lib=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d) && cd "$work" || exit 2
trap 'rm -rf "$work"' EXIT
algo=$("$cc" plugin info "$lib" | awk 'prev == "" && /^[A-Za-z0-9_]+$/ { print; exit } { prev = $0 }')
shm_before=$(ls /dev/shm 2>/dev/null | grep '^ccsynth-' | sort || true)
for iters in 200 2000 20000; do
  "$cc" run "$lib" --algorithm "$algo" --count 65536 --dtype int32 --op sum \
    --ranks-as processes --iters "$iters" --timeout 0.5 >out 2>err &
  pid=$!
  victim=
  for ((i = 0; i < 20000; ++i)); do
    kids=$(pgrep -P "$pid" | sort -n)
    if [ -n "$kids" ]; then
      victim=$(echo "$kids" | sed -n 2p)
      victim=${victim:-$(echo "$kids" | head -1)}
      kill -STOP "$victim" && break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  wait "$pid"
  rc=$?
  if [ "$rc" = 0 ]; then
    echo "the run of $iters iterations finished before a rank was stopped"
    continue
  fi
  cat out err
  [ "$rc" = 1 ] || fail "exit $rc, expected 1"
  grep -Eq 'rank [0-9]+ \(its process was stopped\) stopped answering' err ||
    fail "no rank named as stopped"
  ! kill -0 "$victim" 2>/dev/null || fail "the stopped rank $victim was left"
  shm_after=$(ls /dev/shm 2>/dev/null | grep '^ccsynth-' | sort || true)
  [ "$shm_before" = "$shm_after" ] || fail "shared-memory objects left behind"
  echo "ok: the stopped rank was named and the run ended"
  exit 0
done
fail "no run lasted long enough to stop a rank"
