"""hvd_worker: one worker of test_horovod's cluster case: every working name of horovod.torch
called once on ordo.torch, through a Recorder that notes the names used. Writes its results
to OUT/out{rank}.pt and the names to OUT/names{rank}.json.

    python hvd_worker.py OUT

inputs(rank) are the tensors rank contributes; test_horovod computes the expected results
from them in one process.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import ordo.torch
import torch
import torch_mlp

JOIN_BATCHES = (3, 5)  # the batches of rank 0 and rank 1 before join()


class Recorder:
    """Recorder stands for a module and notes each name looked up on it."""

    def __init__(self, module: Any):
        self._module = module
        self.names: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        self.names.add(name)
        return getattr(self._module, name)


def inputs(rank: int) -> dict[str, torch.Tensor]:
    """inputs are rank's tensors for the collectives (fixed per rank)."""
    g = torch.Generator().manual_seed(10 + rank)
    return {
        "x": torch.randn(3, 4, generator=g),
        "ints": torch.arange(6, dtype=torch.int64).reshape(2, 3) * (rank + 1),
        "rows": torch.randn(2 + 3 * rank, 4, generator=g),  # 2 and 5 rows: unequal
        "a2a": torch.randn(5, 2, generator=g) if rank == 0 else torch.randn(4, 2, generator=g),
        "rs": torch.randn(5, 3, generator=g),
        "metric": torch.randn(6, generator=g),
        "bn": torch.randn(4, 3, 5, generator=g),
        "sparse_idx": torch.tensor([[0, 2 + rank]]),
        "sparse_val": torch.tensor([1.0 + rank, 10.0]),
    }


A2A_SPLITS = ([2, 3], [1, 3])  # rank 0 sends 2 rows to 0 and 3 to 1; rank 1 sends 1 and 3


def collectives(hvd: Any, me: int, x: dict[str, torch.Tensor]) -> dict[str, Any]:
    """collectives runs each collective once and returns the results."""
    out: dict[str, Any] = {}
    out["avg"] = hvd.allreduce(x["x"], name="x.avg")
    out["avg_old"] = hvd.allreduce(x["x"], average=True)
    out["sum"] = hvd.allreduce(x["x"], op=hvd.Sum)
    out["min"] = hvd.allreduce(x["x"], op=hvd.Min)
    out["max"] = hvd.allreduce(x["x"], op=hvd.Max)
    out["prod"] = hvd.allreduce(x["x"], op=hvd.Product)
    out["int_avg"] = hvd.allreduce(x["ints"], op=hvd.Average)
    out["scaled"] = hvd.allreduce(x["x"], op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5)
    out["async"] = hvd.synchronize(hvd.allreduce_async(x["x"], op=hvd.Sum))
    t = x["x"].clone()
    hvd.allreduce_(t, op=hvd.Sum)
    out["inplace"] = t
    t = x["x"].clone()
    h = hvd.allreduce_async_(t, op=hvd.Average)
    out["inplace_async_poll"] = hvd.poll(h)
    hvd.synchronize(h)
    out["inplace_async"] = t
    out["grouped"] = hvd.grouped_allreduce([x["x"], x["metric"]], op=hvd.Sum)
    out["grouped_async"] = hvd.synchronize(hvd.grouped_allreduce_async([x["x"], x["metric"]]))
    ts = [x["x"].clone(), x["metric"].clone()]
    hvd.grouped_allreduce_(ts, op=hvd.Sum)
    out["grouped_inplace"] = ts
    ts = [x["x"].clone(), x["metric"].clone()]
    hvd.synchronize(hvd.grouped_allreduce_async_(ts))
    out["grouped_inplace_async"] = ts
    # a tensor declared for the servers goes through them (push_pull)
    out["declared"] = hvd.allreduce(x["metric"], name="metric")
    out["declared_sum"] = hvd.allreduce(x["metric"], name="metric", op=hvd.Sum)
    sp = torch.sparse_coo_tensor(x["sparse_idx"], x["sparse_val"], (6,))
    out["sparse"] = hvd.synchronize(hvd.sparse_allreduce_async(sp, "sp", hvd.Sum)).to_dense()
    out["gather"] = hvd.allgather(x["rows"])
    out["gather_async"] = hvd.synchronize(hvd.allgather_async(x["rows"]))
    out["ggather"] = hvd.grouped_allgather([x["rows"], x["x"]])
    out["ggather_async"] = hvd.synchronize(hvd.grouped_allgather_async([x["rows"], x["x"]]))
    out["bcast"] = hvd.broadcast(x["x"], root_rank=1)
    out["bcast_async"] = hvd.synchronize(hvd.broadcast_async(x["x"], 1))
    t = x["x"].clone()
    hvd.broadcast_(t, root_rank=1)
    out["bcast_inplace"] = t
    t = x["x"].clone()
    hvd.synchronize(hvd.broadcast_async_(t, 1))
    out["bcast_inplace_async"] = t
    out["a2a"], out["a2a_splits"] = hvd.alltoall(x["a2a"], splits=A2A_SPLITS[me])
    out["a2a_even"] = hvd.alltoall(x["rs"][:4])
    out["a2a_async"] = hvd.synchronize(hvd.alltoall_async(x["a2a"],
                                                          torch.tensor(A2A_SPLITS[me])))
    out["rs"] = hvd.reducescatter(x["rs"])
    out["rs_sum"] = hvd.synchronize(hvd.reducescatter_async(x["rs"], op=hvd.Sum))
    out["grs"] = hvd.grouped_reducescatter([x["rs"], x["x"]], op=hvd.Sum)
    out["grs_async"] = hvd.synchronize(hvd.grouped_reducescatter_async([x["rs"], x["x"]]))
    out["objects"] = hvd.allgather_object({"rank": me, "text": "r" * (me + 1)})
    out["object"] = hvd.broadcast_object({"from": me}, root_rank=1)
    # differentiable forms: the backward runs the reverse collective on every rank
    w = torch.arange(12.0).reshape(3, 4) * (me + 1)
    t = x["x"].clone().requires_grad_(True)
    (hvd.allreduce(t, op=hvd.Sum) * w).sum().backward()
    out["grad_allreduce"] = t.grad
    t = x["rows"].clone().requires_grad_(True)
    (hvd.allgather(t) * torch.arange(28.0).reshape(7, 4)).sum().backward()
    out["grad_allgather"] = t.grad
    t = x["x"].clone().requires_grad_(True)
    (hvd.broadcast(t, root_rank=1) * w).sum().backward()
    out["grad_broadcast"] = t.grad
    hvd.barrier()
    hvd.barrier(process_set=hvd.global_process_set)
    return out


def mismatches(hvd: Any, me: int) -> list[str]:
    """mismatches makes collectives whose tensors differ between the ranks; each must fail
    on every rank (the texts are returned)."""
    errors = []
    bad = [(torch.zeros(2, 3) if me == 0 else torch.zeros(3, 3), {}),
           (torch.zeros(4) if me == 0 else torch.zeros(4, dtype=torch.float64), {}),
           (torch.zeros(2, 3) if me == 0 else torch.zeros(2, 4), {"gather": True})]
    for t, how in bad:
        try:
            if how.get("gather"):
                hvd.allgather(t, name="bad")
            else:
                hvd.allreduce(t, name="bad")
            errors.append("no error")
        except ValueError as e:
            errors.append(str(e))
    try:  # rank 0 reduces where rank 1 gathers
        (hvd.allreduce if me == 0 else hvd.allgather)(torch.zeros(2), name="bad")
        errors.append("no error")
    except ValueError as e:
        errors.append(str(e))
    for call in (lambda: hvd.allreduce(torch.zeros(1), op=hvd.Adasum),
                 lambda: hvd.add_process_set([0]),
                 lambda: hvd.allreduce(torch.zeros(1), process_set=hvd.ProcessSet([1]))):
        try:
            call()
            errors.append("no error")
        except ValueError as e:
            errors.append(str(e))
    return errors


def main(out: Path) -> int:
    torch.set_num_threads(1)
    hvd = Recorder(ordo.torch)
    hvd.init()
    me_launcher = hvd.rank()
    hvd.start_timeline(str(out / "timeline.json"))
    net = torch_mlp.model()
    if me_launcher == 1:
        with torch.no_grad():
            for p in net.parameters():
                p.add_(1.0)
    bn = hvd.SyncBatchNorm(3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    hvd.declare("metric", torch.zeros(6))
    opt = hvd.DistributedOptimizer(opt, named_parameters=net.named_parameters(),
                                   compression=hvd.Compression.none, op=hvd.Average,
                                   gradient_predivide_factor=2.0, groups=2,
                                   process_set=hvd.add_process_set([0, 1]))
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    me, n = hvd.rank(), hvd.size()
    res: dict[str, Any] = {"rank": me, "size": n, "local_rank": hvd.local_rank(),
                           "local_size": hvd.local_size(), "cross_rank": hvd.cross_rank(),
                           "cross_size": hvd.cross_size(), "initialized": hvd.is_initialized()}
    x = inputs(me)
    res.update(collectives(hvd, me, x))
    # SyncBatchNorm: the output and the input's gradient of the two ranks' batch together
    xb = x["bn"].clone().requires_grad_(True)
    y = bn(xb)
    (y * torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
    res["bn_y"], res["bn_dx"], res["bn_running"] = y.detach(), xb.grad, bn.running_var.clone()
    # join: rank 0 has 3 batches, rank 1 has 5; the mean is over both (zeros from rank 0)
    xs, ys = torch_mlp.data()
    for t in range(JOIN_BATCHES[me]):
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(xs[t, me * 8:(me + 1) * 8]),
                                     ys[t, me * 8:(me + 1) * 8]).backward()
        opt.step()
    res["last_joined"] = hvd.join()
    res["params"] = {k: v.detach().clone() for k, v in net.state_dict().items()}
    res["errors"] = mismatches(hvd, me)
    res["queries"] = {q: getattr(hvd, q)() for q in (
        "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
        "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built")}
    res["remove_process_set"] = hvd.remove_process_set(hvd.global_process_set)
    res["internal_error"] = issubclass(hvd.HorovodInternalError, RuntimeError)
    res["elastic"] = hvd.elastic.run is not None and hvd.elastic.TorchState is not None
    hvd.stop_timeline()
    torch.save(res, out / f"out{me}.pt")
    hvd.shutdown()
    (out / f"names{me}.json").write_text(json.dumps(sorted(hvd.names)))
    torch_mlp.exit_now(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
