#!/usr/bin/env python3
"""A few DistributedDataParallel training steps, for torch-check.sh.

Launched by torchrun (backend nccl): every rank trains the same small model
on its own batches for --steps steps; each step's loss, averaged over the
ranks by an all_reduce of its own, is written by rank 0 to --out (JSON),
with a checksum of the parameters after the last step (all ranks must hold
the same parameters: DDP's gradient all_reduce keeps them equal).
"""
import argparse
import json
import os

# cuBLAS picks the same kernels run after run only with a fixed workspace
# (set before its first handle): world size 1 is compared bit for bit.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local % torch.cuda.device_count())
    # Deterministic kernels where PyTorch has them (a warning, not an error,
    # where it has none).
    torch.use_deterministic_algorithms(True, warn_only=True)
    dist.init_process_group("nccl")
    torch.manual_seed(0)  # the same initial parameters on every rank
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 10)).cuda()
    ddp = DDP(model, device_ids=[torch.cuda.current_device()])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1000 + rank)
    losses = []
    for _ in range(args.steps):
        x = torch.randn(64, 256, generator=gen).cuda()
        y = torch.randint(0, 10, (64,), generator=gen).cuda()
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    checksum = flat.double().sum().reshape(1)
    sums = [torch.zeros_like(checksum) for _ in range(world)]
    dist.all_gather(sums, checksum)
    same = all(float(s.item()) == float(checksum.item()) for s in sums)
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({"world": world, "losses": losses,
                       "checksum": float(checksum.item()),
                       "ranks_agree": same}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
