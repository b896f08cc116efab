#!/usr/bin/env bash
# torch-check.sh INTERPOSER FAKE_NCCL OUT [PLUGIN...]: PyTorch as an NCCL
# client of the interposer. Runs test/gpu/torch_ddp.py (a few DDP steps,
# backend nccl) under torchrun:
#
#  1. world size 1 on the NCCL PyTorch brings, plainly and with
#     LD_PRELOAD=INTERPOSER (CCSYNTH_PLUGINS=the PLUGINs, CCSYNTH_DEBUG=1):
#     the interposer must load inside PyTorch, forward every call and
#     change nothing: identical losses and parameters.
#  2. world size 8 sharing one GPU (real NCCL refuses that): on the libnccl
#     test double FAKE_NCCL (device buffers copied through host memory),
#     preloaded alone, then behind the interposer with the PLUGINs, so that
#     the matching collectives (DDP's gradient AllReduce) run ccsynth's CUDA
#     plugins over the CUDA IPC transport. Losses must agree to 1e-4
#     (the two sum in different orders), the ranks' parameters must be
#     equal, and the dispatch log must show calls run by ccsynth. Under an
#     MPS daemon of its own when nvidia-cuda-mps-control exists.
#
# OUT keeps each run's log and losses (JSON). PYTHON names the interpreter
# with PyTorch (default python3); TORCH_RUN_TIMEOUT bounds each torchrun
# (seconds, default 120). Exit: 0 all equal, 1 different or failed, 77 no
# GPU or no PyTorch.
set -uo pipefail
interposer=$1 fake=$2 out=$3
shift 3
plugins=$(IFS=:; echo "$*")
here=$(cd "$(dirname "$0")" && pwd)
world=${TORCH_CHECK_WORLD:-8}
py=${PYTHON:-python3}
mkdir -p "$out"
"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
  2>/dev/null || { echo "torch-check: no PyTorch with CUDA here: skipped"; exit 77; }
# Rendezvous on the loopback address where torchrun can be told so: a
# machine without DNS may not resolve its own host name.
local_addr=()
"$py" -m torch.distributed.run --help 2>/dev/null | grep -q -- '--local[-_]addr' &&
  local_addr=(--local-addr=127.0.0.1)
for f in "$interposer" "$fake"; do
  [[ -f $f ]] || { echo "torch-check: $f is missing"; exit 1; }
done
# The interposer opens "libnccl.so.2"; PyTorch's own copy (the nvidia-nccl
# wheel) is what case 1 forwards to.
nccl=$("$py" -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
[[ -n $nccl && -f $nccl ]] || nccl=libnccl.so.2
run() { # run NAME WORLD [ENV...]
  local name=$1 n=$2
  shift 2
  env "$@" timeout "${TORCH_RUN_TIMEOUT:-120}" "$py" -m torch.distributed.run \
    --standalone "${local_addr[@]}" --nproc_per_node="$n" \
    "$here/torch_ddp.py" --steps 5 \
    --out "$out/$name.json" >"$out/$name.log" 2>&1 || {
    echo "torch-check: run '$name' failed ($out/$name.log):"
    grep -v '^\s*$' "$out/$name.log" | tail -8
    return 1
  }
}
compare() { # compare A B TOLERANCE WHAT
  "$py" - "$out/$1.json" "$out/$2.json" "$3" "$4" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
tol, what = float(sys.argv[3]), sys.argv[4]
print("  %-30s %s" % (sys.argv[1].split("/")[-1], " ".join("%.6f" % x for x in a["losses"])))
print("  %-30s %s" % (sys.argv[2].split("/")[-1], " ".join("%.6f" % x for x in b["losses"])))
close = all(abs(x - y) <= tol * max(1.0, abs(x)) for x, y in zip(a["losses"], b["losses"]))
ok = close and len(a["losses"]) == len(b["losses"]) and a["ranks_agree"] and b["ranks_agree"]
if tol == 0:
    ok = ok and a["checksum"] == b["checksum"]
print("torch-check: %s: %s" % (what, "agree" if ok else "DIFFER"))
sys.exit(0 if ok else 1)
PY
}
failed=0

# 1. World size 1 on PyTorch's NCCL.
if run plain1 1 && run interposed1 1 LD_PRELOAD="$interposer" \
  CCSYNTH_NCCL_LIB="$nccl" CCSYNTH_DEBUG=1 CCSYNTH_PLUGINS="$plugins"; then
  grep -h 'ccsynth-nccl:' "$out/interposed1.log" | sort -u | head -5
  if ! grep -q 'ccsynth-nccl: comm' "$out/interposed1.log"; then
    echo "torch-check: no dispatch log: the interposer did not serve PyTorch" \
      "(is its NCCL linked statically?)"
    failed=1
  fi
  compare plain1 interposed1 0 "world size 1, PyTorch's NCCL, with and without the interposer (bit for bit)" ||
    failed=1
else
  failed=1
fi

# 2. World size 8 sharing the GPU, on the test double.
mps=$(command -v nvidia-cuda-mps-control || true)
if [[ -n $mps ]]; then
  export CUDA_MPS_PIPE_DIRECTORY=$out/mps-pipe CUDA_MPS_LOG_DIRECTORY=$out/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if "$mps" -d; then
    trap 'echo quit | "$mps" >/dev/null 2>&1' EXIT
  else
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    echo "torch-check: no MPS daemon: the $world ranks' kernels are time-sliced"
  fi
fi
if run double$world "$world" LD_PRELOAD="$fake" &&
  run ccsynth$world "$world" LD_PRELOAD="$interposer" CCSYNTH_NCCL_LIB="$fake" \
    CCSYNTH_DEBUG=1 CCSYNTH_PLUGINS="$plugins"; then
  grep -h 'ccsynth-nccl:' "$out/ccsynth$world.log" | sort -u | head -12
  if ! grep -q -- '-> ccsynth (CUDA IPC)' "$out/ccsynth$world.log"; then
    echo "torch-check: no call of world size $world ran a ccsynth plugin"
    failed=1
  fi
  compare double$world ccsynth$world 1e-4 "world size $world on one GPU, the test double alone and behind the interposer's CUDA plugins" ||
    failed=1
else
  failed=1
fi
exit $failed
