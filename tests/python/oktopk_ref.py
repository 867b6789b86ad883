"""oktopk_ref: Ok-Topk's sparse path ([push] mode = sparse, docs/sparse.md and sparse-live.md)
replayed in one process in numpy float32, for the tests that check an ordo.torch run with
Compression.oktopk against it (test_oktopk.py). It replays every rule the daemons apply, as
the C code states them:

  worker   acc = residual + grad; on exact iterations (the first, then every threshold_period
           pushes, and when a reused threshold would take more than 2 k) exactly the k
           largest |acc|, ties to the lower index; otherwise every |acc| >= the cached
           threshold, cut to the exact top-k of that selection when it holds more than 1.15 k
           (core/sparsify.c, client/sparse_push.c);
  servers  the pushes summed in worker order over the touched indices; on exact iterations
           (t mod threshold_period = 0) one global threshold from the servers' summed
           magnitude histograms (core/regions.c) with several servers, the exact top-k with
           one; in between each server reuses its threshold unless its histogram says that
           would take more than 1.15 or less than 1 / 1.15 times its share, then its exact
           top `share` (server/sparse_srv.c); SGD on the selected entries only
           (server/sparse_agg.c);
  residual what a worker pushed and the servers selected is cleared, the rest stays.

The regions are the first, even ones: a test keeps the run shorter than repartition_period.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32
SHIFT = 18  # ORDO_REGIONS_MAGHIST_SHIFT
BINS = 1 << (31 - SHIFT)
OVERSHOOT = 2  # ORDO_SPARSIFY_OVERSHOOT
SLACK = 1.15  # LOCAL_SLACK (worker) and GLOBAL_SLACK (server)


def k_for(n: int, density: float) -> int:
    """k_for is ordo__sparsify_k_for: density * n rounded half to even, in [1, n]."""
    return int(min(n, max(1, round(density * n))))


def topk(x: np.ndarray, k: int) -> np.ndarray:
    """topk returns the positions of the k largest |x| in increasing order, ties to the lower
    position (ordo__sparsify_topk)."""
    order = np.argsort(-np.abs(x), kind="stable")[:k]
    return np.sort(order)


def kth(x: np.ndarray, k: int) -> F32:
    """kth is the k-th largest |x| (the threshold an exact selection caches)."""
    return F32(np.sort(np.abs(x))[::-1][k - 1])


def maghist(x: np.ndarray) -> np.ndarray:
    """maghist is ordo__regions_maghist_add on an empty histogram."""
    bits = x.astype(F32).view(np.uint32) & np.uint32(0x7FFFFFFF)
    bits = bits[bits < np.uint32(0x7F800000)]
    return np.bincount((bits >> np.uint32(SHIFT)).astype(np.int64), minlength=BINS)


def maghist_threshold(bins: np.ndarray, k: int) -> F32:
    """maghist_threshold is ordo__regions_maghist_threshold."""
    total = int(bins.sum())
    if k >= total:
        return F32(0.0)
    cum = 0
    for b in range(BINS - 1, -1, -1):
        c = int(bins[b])
        if c == 0 or cum + c < k:
            cum += c
            continue
        need, width = k - cum, 1 << SHIFT
        drop = (need * width + c - 1) // c
        return np.array([((b + 1) << SHIFT) - drop], dtype=np.uint32).view(F32)[0]
    return F32(0.0)


class Worker:
    """Worker replays one worker's sparsifier: its residual and cached threshold."""

    def __init__(self, n: int, k: int, period: int):
        self.n, self.k, self.period = n, k, period
        self.cap = n if k >= n // OVERSHOOT else OVERSHOOT * k
        self.acc = np.zeros(n, dtype=F32)
        self.thr = F32(0.0)
        self.iter = 0
        self.reuse_left = 0
        self.exact = 0  # exact pushes, reused ones, and reused ones cut to k
        self.reused = 0
        self.trimmed = 0

    def push(self, grad: np.ndarray) -> np.ndarray:
        """push adds grad and returns the positions this worker pushes."""
        self.acc = (self.acc + grad.astype(F32)).astype(F32)
        self.iter += 1
        if self.k == self.n:
            return np.arange(self.n)
        sel = None
        if self.iter > 1 and self.reuse_left > 0:
            sel = np.nonzero(np.abs(self.acc) >= self.thr)[0]
            if len(sel) > self.cap:
                sel = None  # the distribution moved: exact now
        if sel is None:
            self.thr = kth(self.acc, self.k)
            self.reuse_left = self.period - 1
            self.exact += 1
            return topk(self.acc, self.k)
        self.reuse_left -= 1
        self.reused += 1
        if len(sel) > SLACK * self.k:
            self.trimmed += 1
            sel = sel[topk(self.acc[sel], self.k)]
        return sel

    def commit(self, pushed: np.ndarray, selected: np.ndarray) -> None:
        """commit clears the residual of what was pushed and selected."""
        self.acc[np.intersect1d(pushed, selected)] = F32(0.0)


class Server:
    """Server replays one server's region [lo, hi): its cached threshold and share."""

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi
        self.thr = F32(0.0)
        self.share = 0

    def select_topk(self, idx: np.ndarray, sums: np.ndarray, k: int) -> np.ndarray:
        """ordo__sparse_agg_select_topk over the touched indices idx with their sums."""
        if k >= len(idx):
            self.thr = F32(0.0) if k >= self.hi - self.lo or len(idx) == 0 else \
                F32(np.abs(sums).min())
            sel = idx
        else:
            self.thr = kth(sums, k)
            sel = idx[topk(sums, k)]
        self.share = len(sel)
        return sel

    def select_threshold(self, idx: np.ndarray, sums: np.ndarray, thr: F32) -> np.ndarray:
        self.thr = thr
        sel = idx[np.abs(sums) >= thr]
        self.share = len(sel)
        return sel

    def select_reuse(self, idx: np.ndarray, sums: np.ndarray) -> np.ndarray:
        """select_reuse: the cached threshold, unless the histogram counts leave the slack."""
        h = maghist(sums)
        tb = int(np.array([self.thr], dtype=F32).view(np.uint32)[0]) >> SHIFT
        at = int(h[tb]) if tb < BINS else 0
        above = int(h[tb + 1:].sum())
        if above + at <= SLACK * self.share and above >= self.share / SLACK:
            return idx[np.abs(sums) >= self.thr]  # the share stays the last agreement's
        share = self.share
        sel = self.select_topk(idx, sums, share)
        self.share = share  # only an agreement (an exact iteration) sets the share
        return sel


class OkTopk:
    """OkTopk replays a whole run: W workers, S servers over even regions, SGD (lr,
    momentum, weight decay, the mean of the pushes) on the servers' copy w."""

    def __init__(self, w: np.ndarray, workers: int, servers: int, density: float, period: int,
                 lr: float, momentum: float, weight_decay: float):
        self.n = len(w)
        self.k = k_for(self.n, density)
        self.w = w.astype(F32).copy()
        self.m = np.zeros(self.n, dtype=F32)
        self.lr, self.mom, self.wd = F32(lr), F32(momentum), F32(weight_decay)
        self.W, self.period, self.t = workers, period, 0
        self.workers = [Worker(self.n, self.k, period) for _ in range(workers)]
        bounds = [self.n * s // servers for s in range(servers + 1)]  # ordo__regions_even
        self.servers = [Server(bounds[s], bounds[s + 1]) for s in range(servers)]
        self.selected = 0  # entries the servers selected over the run

    def step(self, grads: list[np.ndarray]) -> None:
        """step is one iteration with each worker's flat gradient (worker order)."""
        pushed = [wk.push(g) for wk, g in zip(self.workers, grads, strict=True)]
        sums = np.zeros(self.n, dtype=F32)
        touched = np.zeros(self.n, dtype=bool)
        for wk, p in zip(self.workers, pushed, strict=True):
            sums[p] = (sums[p] + wk.acc[p]).astype(F32)
            touched[p] = True
        parts = []
        for s in self.servers:
            idx = np.nonzero(touched[s.lo:s.hi])[0] + s.lo
            parts.append((s, idx, sums[idx]))
        if self.t % self.period == 0:
            if len(self.servers) == 1:
                s, idx, v = parts[0]
                sel = [s.select_topk(idx, v, self.k)]
            else:
                thr = maghist_threshold(sum(maghist(v) for _, _, v in parts), self.k)
                sel = [s.select_threshold(idx, v, thr) for s, idx, v in parts]
        else:
            sel = [s.select_reuse(idx, v) for s, idx, v in parts]
        chosen = np.concatenate(sel) if sel else np.zeros(0, dtype=np.int64)
        div = F32(self.W)
        d = (sums[chosen] / div + self.wd * self.w[chosen]).astype(F32)
        if self.mom != 0:
            self.m[chosen] = (self.mom * self.m[chosen] + d).astype(F32)
            d = self.m[chosen]
        self.w[chosen] = (self.w[chosen] - self.lr * d).astype(F32)
        for wk, p in zip(self.workers, pushed, strict=True):
            wk.commit(p, chosen)
        self.selected += len(chosen)
        self.t += 1
