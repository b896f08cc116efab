# launch.sh: sourced by the interposer tests.
#
# launch NAME W [VAR=VALUE...] -- COMMAND...: starts W processes of COMMAND
# the way torchrun does (RANK, WORLD_SIZE, LOCAL_RANK set), each with the
# test double's call log at $work/NAME.calls.RANK, its stdout and stderr at
# $work/NAME.out.RANK / .err.RANK; waits for all of them (each at most
# $limit seconds, killed after) and sets $launch_rc to the largest exit
# status.
limit=${limit:-180}
launch() {
  local name=$1 w=$2
  shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  rm -rf "$work/$name" && mkdir -p "$work/$name"
  local pids=() r
  for ((r = 0; r < w; r++)); do
    rm -f "$work/$name.calls.$r"
    env RANK=$r LOCAL_RANK=$r WORLD_SIZE=$w \
      CCSYNTH_FAKE_NCCL_LOG="$work/$name.calls.$r" "${envs[@]}" \
      timeout -k 5 "$limit" "$@" "$work/$name" \
      >"$work/$name.out.$r" 2>"$work/$name.err.$r" &
    pids+=($!)
  done
  launch_rc=0
  for r in "${!pids[@]}"; do
    local rc=0
    wait "${pids[$r]}" || rc=$?
    if ((rc > launch_rc)); then launch_rc=$rc; fi
    if ((rc != 0)); then
      echo "$name rank $r exited $rc:"; cat "$work/$name.err.$r"
    fi
  done
}

# Names of POSIX shared-memory objects (the tests only read /dev/shm).
shm_names() { ls /dev/shm 2>/dev/null | grep -E '^(ccsynth-|fakenccl-)' | sort || true; }
