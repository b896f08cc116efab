#!/usr/bin/env bash
# signal-cleanup.sh CCSYNTH WORKDIR
#
# A signal while `compile --target plugin` or `run` builds a plugin: the
# compiler it started (and everything that compiler started) ends with it,
# its temporary directory and temporary plugin are gone, no output file is
# left, and the exit status is death by that signal. The signal is sent
# once the compiler is seen running (polled, no time bound on the build).
# (SIGINT is not sent: a shell ignores it in its background jobs, and
# ccsynth keeps an ignored signal ignored, as nohup asks.)
set -uo pipefail
cc=$1 work=$2
rm -rf "$work" && mkdir -p "$work/tmp" && cd "$work" || exit 2
export TMPDIR=$work/tmp
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cc" baseline ring -c allreduce -t dgx1 -o r.json >/dev/null || exit 2

# compiler_running: a process whose command line names a plugin directory.
compiler_running() { pgrep -f -- "$TMPDIR/ccsynth-plugin-" >/dev/null; }

interrupt() { # interrupt NAME SIGNAL CCSYNTH-ARGS...
  local name=$1 sig=$2 pid rc i
  shift 2
  "$cc" "$@" >"$name.out" 2>"$name.err" &
  pid=$!
  for ((i = 0; ; ++i)); do
    compiler_running && break
    kill -0 "$pid" 2>/dev/null || fail "$name: ended before its compiler ran"
    ((i < 6000)) || fail "$name: no compiler seen"
    sleep 0.05
  done
  kill "-$sig" "$pid"
  wait "$pid"
  rc=$?
  local want=$((128 + $(kill -l "$sig")))
  [ "$rc" = "$want" ] || fail "$name: exit $rc, expected $want (SIG$sig)"
  # The compiler's group was killed and reaped before the exit.
  for ((i = 0; i < 200; ++i)); do
    compiler_running || break
    sleep 0.05
  done
  compiler_running && fail "$name: the compiler outlived ccsynth: $(pgrep -af -- "$TMPDIR/ccsynth-plugin-")"
  [ -z "$(ls -A "$TMPDIR")" ] || fail "$name: left $(ls -A "$TMPDIR") in TMPDIR"
  echo "$name: SIG$sig -> exit $rc, compiler gone, nothing left"
}

interrupt compile TERM compile r.json --target plugin --backend host -o lib.so
[ ! -e lib.so ] || fail "compile: a plugin was written"
# shellcheck disable=SC2010 # names made by this script
ls -A | grep -v -e '^tmp$' -e '^r.json$' -e '^compile\.' && fail "compile: stray files"
interrupt run TERM run r.json --size 64K
interrupt run-hup HUP run r.json --size 64K --keep-plugin kept.so
[ ! -e kept.so ] || fail "run: a partial plugin was kept"
echo "ok"
