#!/usr/bin/env bash
# torch-check.sh INTERPOSER OUT [PLUGIN...]: PyTorch as an NCCL client.
#
# Runs test/gpu/torch_ddp.py (a few DDP steps, backend nccl) under torchrun
# with world size 1 on the real NCCL PyTorch brings, once plainly and once
# with LD_PRELOAD=INTERPOSER (and CCSYNTH_PLUGINS=the PLUGINs,
# CCSYNTH_DEBUG=1): the interposer must load inside PyTorch, forward every
# call and change nothing, so the losses and the parameters' checksum must
# be equal; OUT/interposed.log keeps the per-collective dispatch log.
#
# Not here: world sizes 4 to 8 sharing one GPU. Real NCCL refuses two ranks
# on one GPU, and the libnccl test double (test/interposer/FakeNccl.cpp)
# works on host memory only, so nothing would run ccsynth's CUDA plugins
# under PyTorch yet.
#
# Exit: 0 equal, 1 different or failed, 77 no GPU or no PyTorch.
set -uo pipefail
interposer=$1 out=$2
shift 2
plugins=$(IFS=:; echo "$*")
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
  2>/dev/null || { echo "torch-check: no PyTorch with CUDA here: skipped"; exit 77; }
[[ -f $interposer ]] || { echo "torch-check: no interposer at $interposer"; exit 1; }
# The interposer opens "libnccl.so.2"; PyTorch's own copy (the nvidia-nccl
# wheel) is what it must forward to.
nccl=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
[[ -n $nccl && -f $nccl ]] && export CCSYNTH_NCCL_LIB=$nccl
run() { # run NAME [ENV...]
  local name=$1
  shift
  env "$@" python3 -m torch.distributed.run --standalone --nproc_per_node=1 \
    "$here/torch_ddp.py" --steps 5 --out "$out/$name.json" \
    >"$out/$name.log" 2>&1
}
run plain || { echo "torch-check: the plain run failed ($out/plain.log)"; tail -5 "$out/plain.log"; exit 1; }
run interposed LD_PRELOAD="$interposer" CCSYNTH_DEBUG=1 \
  CCSYNTH_PLUGINS="$plugins" ||
  { echo "torch-check: the run under the interposer failed ($out/interposed.log)"; tail -5 "$out/interposed.log"; exit 1; }
grep 'ccsynth-nccl:' "$out/interposed.log" | sort -u | head -20
python3 - "$out/plain.json" "$out/interposed.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("losses plain      :", " ".join("%.6f" % x for x in a["losses"]))
print("losses interposed :", " ".join("%.6f" % x for x in b["losses"]))
ok = a["losses"] == b["losses"] and a["checksum"] == b["checksum"] and \
    a["ranks_agree"] and b["ranks_agree"]
print("torch-check: world size 1, DDP: %s" %
      ("losses and parameters identical with and without the interposer"
       if ok else "DIFFERENT"))
sys.exit(0 if ok else 1)
PY
