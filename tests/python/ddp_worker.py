"""ddp_worker: one worker of the DDP comm hook test, started by ordo-launch's one-liner
(ordo-launch --workers 2 --servers 2 -- python ddp_worker.py DIR): checks torchrun's
environment against ordo.torch, joins a gloo process group with init_process_group()
unchanged, trains torch_mlp's model under DistributedDataParallel with
ordo.torch.ddp_comm_hook (small buckets: several per step), and writes its parameters to
DIR/outRANK.pt. With CODEC (bf16, fp16), the hook's state is ordo.torch.Compression.CODEC:
every gradient travels in that wire type.

    python ddp_worker.py DIR [CODEC]
"""
from __future__ import annotations

import os
import sys

import ordo.torch as hvd
import torch
import torch.distributed as dist
import torch_mlp
from torch.nn.parallel import DistributedDataParallel

ENV = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]


def main(folder: str, codec: str | None = None) -> int:
    torch.set_num_threads(1)
    missing = [k for k in ENV if k not in os.environ]
    if missing:
        print(f"torchrun's variables missing: {missing}", flush=True)
        return 1
    print("env " + " ".join(f"{k}={os.environ[k]}" for k in ENV), flush=True)
    dist.init_process_group("gloo")  # env://, as under torchrun
    hvd.init()
    print(f"ranks: torch {dist.get_rank()}/{dist.get_world_size()}, ordo {hvd.rank()}/"
          f"{hvd.size()}", flush=True)
    net = torch_mlp.model()
    if dist.get_rank() != 0:
        with torch.no_grad():  # DDP's broadcast at construction must undo this
            for p in net.parameters():
                p.add_(1.0)
    # bucket_cap_mb: about 100 bytes, so the 4 parameters (848 bytes) make 2 buckets
    ddp = DistributedDataParallel(net, bucket_cap_mb=0.0001)
    buckets = set()

    def hook(state, bucket):  # counts the buckets (no annotations: DDP checks them)
        buckets.add(bucket.index())
        return hvd.ddp_comm_hook(state, bucket)

    ddp.register_comm_hook(getattr(hvd.Compression, codec) if codec else None, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9, weight_decay=0.01)
    torch_mlp.train(ddp, opt, dist.get_rank(), dist.get_world_size())
    print(f"joined: ordo rank {hvd.rank()} of {hvd.size()}, torch rank {dist.get_rank()}; "
          f"{len(buckets)} buckets", flush=True)
    torch.save({k: v.detach().clone() for k, v in net.state_dict().items()},
               f"{folder}/out{dist.get_rank()}.pt")
    hvd.shutdown()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
