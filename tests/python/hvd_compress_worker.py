"""hvd_compress_worker: one worker of test_horovod's compression case: torch_mlp's model
trained through DistributedOptimizer(compression=ordo.torch.Compression.CODEC, op=OP)
(SGD, gradients mode; OP Average or Sum), its final parameters written to OUT.

    python hvd_compress_worker.py CODEC OUT OP
"""
from __future__ import annotations

import sys

import ordo.torch as hvd
import torch
import torch_mlp

ITERS = 10


def main(codec: str, out: str, op: str) -> int:
    torch.set_num_threads(1)
    hvd.init()
    net = torch_mlp.model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=net.named_parameters(),
                                   compression=getattr(hvd.Compression, codec),
                                   op=getattr(hvd, op))
    torch_mlp.train(net, opt, hvd.rank(), hvd.size(), iters=ITERS)
    torch.save(net.state_dict(), out)
    hvd.shutdown()
    torch_mlp.exit_now(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3]))
