#!/usr/bin/env bash
# ipc-ranks.sh BIN MODE WORKDIR: runs BIN (ccsynth-gpu-ipc-ranks) in MODE
# (check or bench). Its ranks are processes; on one GPU they must run at
# once, which takes MPS: when nvidia-cuda-mps-control exists, a daemon of
# this run's own is started (pipe and log directories under WORKDIR) and
# stopped on exit; without it the run says so and goes on (time-sliced
# ranks then usually end in the watchdog's report). Exit: BIN's (77: no GPU).
set -uo pipefail
bin=$1 mode=$2 work=$3
mkdir -p "$work"
mps=$(command -v nvidia-cuda-mps-control || true)
if [[ -n $mps ]] && command -v nvidia-smi >/dev/null &&
  nvidia-smi -L >/dev/null 2>&1; then
  export CUDA_MPS_PIPE_DIRECTORY=$work/mps-pipe
  export CUDA_MPS_LOG_DIRECTORY=$work/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if "$mps" -d; then
    trap 'echo quit | "$mps" >/dev/null 2>&1' EXIT
    echo "ipc-ranks: MPS daemon started ($CUDA_MPS_PIPE_DIRECTORY)"
  else
    echo "ipc-ranks: nvidia-cuda-mps-control -d failed: ranks sharing a GPU" \
      "are time-sliced"
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  fi
else
  echo "ipc-ranks: no MPS here: ranks sharing a GPU are time-sliced"
fi
# IPC_RANKS_TIMEOUT (seconds, default 300) bounds the run; a caller with a
# tighter limit of its own sets it below that, and a TERM from the caller
# reaches the ranks too (timeout runs them in a process group of its own).
timeout "${IPC_RANKS_TIMEOUT:-300}" "$bin" "$mode" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"
rc=$?
if kill -0 "$child" 2>/dev/null; then # TERM arrived: let the ranks end
  wait "$child"
  rc=$?
fi
exit $rc
