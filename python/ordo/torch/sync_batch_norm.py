"""sync_batch_norm: SyncBatchNorm, batch normalization whose batch statistics are those of
every worker's batch together (Horovod's hvd.SyncBatchNorm, torch's SyncBatchNorm).

In training each forward reduces (count, sum, sum of squares) per channel over the workers,
and each backward the two sums the input's gradient needs; both go through the scheduler
(ordo.torch.collectives: small tensors, the same result on every rank). Outside training, or
with one worker, it is torch's batch norm.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from ordo.torch import collectives as co


def _sum(values: torch.Tensor, call: str) -> torch.Tensor:
    return co.grouped_allreduce_values([values], None, co.Sum, 1.0, 1.0, call)[0]


class _SyncBN(torch.autograd.Function):
    """_SyncBN normalizes x (N, C, ...) with the statistics of every worker's batch."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor | None,
                bias: torch.Tensor | None, eps: float) -> Any:
        c = x.shape[1]
        dims = [0] + list(range(2, x.dim()))
        xf = x.float()
        local = torch.cat([torch.tensor([x.numel() / c], dtype=torch.float64),
                           xf.sum(dims).double(), (xf * xf).sum(dims).double()])
        tot = _sum(local, "SyncBatchNorm")
        count = float(tot[0])
        mean = (tot[1:1 + c] / count)
        var = (tot[1 + c:] / count - mean * mean).clamp_min(0)
        shape = [1, c] + [1] * (x.dim() - 2)
        invstd = torch.rsqrt(var + eps).to(x.dtype)
        xhat = (x - mean.to(x.dtype).view(shape)) * invstd.view(shape)
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.count = count
        y = xhat
        if weight is not None:
            y = y * weight.view(shape) + bias.view(shape)
        stats = (mean.to(x.dtype), var.to(x.dtype), torch.tensor(count))
        ctx.mark_non_differentiable(*stats)
        return (y, *stats)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor, *_: Any) -> Any:
        xhat, invstd, weight = ctx.saved_tensors
        c = dy.shape[1]
        dims = [0] + list(range(2, dy.dim()))
        shape = [1, c] + [1] * (dy.dim() - 2)
        sum_dy = dy.sum(dims)
        sum_dy_xhat = (dy * xhat).sum(dims)
        tot = _sum(torch.cat([sum_dy, sum_dy_xhat]).double(), "SyncBatchNorm.backward")
        g_dy, g_dy_xhat = tot[:c].to(dy.dtype), tot[c:].to(dy.dtype)
        scale = invstd if weight is None else invstd * weight
        dx = (dy - (g_dy.view(shape) + xhat * g_dy_xhat.view(shape)) / ctx.count) \
            * scale.view(shape)
        dw = sum_dy_xhat if weight is not None else None
        db = sum_dy if weight is not None else None
        return dx, dw, db, None


class SyncBatchNorm(_BatchNorm):
    """SyncBatchNorm(num_features, eps, momentum, affine, track_running_stats) is
    torch.nn.BatchNorm for any input of 2 or more dimensions, with the batch statistics of
    every worker's batch in training (the running statistics from them too). The weight's and
    bias's gradients are this worker's, averaged by DistributedOptimizer as any other."""

    def _check_input_dim(self, x: torch.Tensor) -> None:
        if x.dim() < 2:
            raise ValueError(f"ordo.torch.SyncBatchNorm: expected 2D or more input "
                             f"(got {x.dim()}D)")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """forward normalizes x with every worker's batch statistics in training."""
        self._check_input_dim(x)
        from ordo.torch import is_initialized, size
        if not self.training or not is_initialized() or size() == 1:
            return super().forward(x)
        y, mean, var, count = _SyncBN.apply(x, self.weight, self.bias, self.eps)
        if self.track_running_stats and self.running_mean is not None:
            with torch.no_grad():
                self.num_batches_tracked += 1
                m = self.momentum if self.momentum is not None else \
                    1.0 / float(self.num_batches_tracked)
                n = float(count)
                self.running_mean.mul_(1 - m).add_(mean.detach(), alpha=m)
                self.running_var.mul_(1 - m).add_(var.detach() * n / max(n - 1, 1), alpha=m)
        return y
