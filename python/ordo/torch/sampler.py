"""sampler: ElasticSampler, a torch.utils.data.Sampler that draws from the cluster's batch
service ([sync] batches, docs/stragglers.md): the workers share one epoch, and a fast worker
takes more of its samples than a slow one. With the service off (bsp) it is
torch.utils.data.DistributedSampler: each worker its own equal share of a seeded permutation.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sized

import torch
from torch.utils.data import Sampler

import ordo
from ordo import _capi


class ElasticSampler(Sampler[int]):
    """ElasticSampler(dataset, shuffle=True, seed=0) yields the indices of this worker's
    samples of the current epoch (set_epoch, as DistributedSampler). Give the DataLoader the
    same batch_size as the sampler so that a DataLoader batch is one batch of the service.
    epochs: the run's length (under ssp and backup workers the run must end on one iteration
    for every worker, and the service needs to know where); num_replicas and rank are only
    for the service off without ordo.torch.init (as DistributedSampler's)."""

    def __init__(self, dataset: Sized, shuffle: bool = True, seed: int = 0,
                 batch_size: int = 32, epochs: int = 0, num_replicas: int | None = None,
                 rank: int | None = None, drop_last: bool = False):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.batch_size = batch_size
        self.epochs = epochs
        self.drop_last = drop_last
        self.epoch = 0
        self._replicas = num_replicas
        self._rank = rank
        self._service: bool | None = None  # unknown until the first epoch asks
        self._client: ordo.Client | None = None

    def set_epoch(self, epoch: int) -> None:
        """set_epoch makes the next iteration draw from epoch (call it before each epoch)."""
        self.epoch = epoch

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """record_batch is Horovod's record of the samples trained on; the cluster's batch
        service knows which batches it handed out, so there is nothing to record."""

    def record_indices(self, indices: list[int]) -> None:
        """record_indices: as record_batch, nothing to record."""

    # ---- the cluster ------------------------------------------------------------------------

    def _runtime_client(self) -> ordo.Client | None:
        import ordo.torch as ot  # the package imports this module
        rt = ot._runtime
        if rt is None:
            return None
        rt.join()  # the model's tensors are declared by now (DistributedOptimizer)
        return rt.client

    def _ask_service(self) -> bool:
        """_ask_service sets the service up on the client; False when there is none."""
        if self._service is not None:
            return self._service
        client = self._runtime_client()
        self._service = False
        if client is not None:
            n = len(self.dataset)
            client.batches(n, self.batch_size, self.epochs * n, self.seed, self.shuffle)
            self._client = client
            self._service = True  # until the first request says it is off
        return self._service

    # ---- the sampler ------------------------------------------------------------------------

    def __iter__(self) -> Iterator[int]:
        if self._ask_service():
            first = self._next()
            if first is not False:
                return self._from_service(first)
        return iter(self._share())

    def _next(self) -> list[int] | None | bool:
        """_next is the service's next batch of this epoch, None at its end, False when the
        service is off."""
        assert self._client is not None
        try:
            return self._client.next_batch(self.epoch)
        except ordo.OrdoError as e:
            if e.code != _capi.ERR_NOTSUP:
                raise
            self._service = False
            return False

    def _from_service(self, batch: list[int] | None | bool) -> Iterator[int]:
        while isinstance(batch, list):
            yield from batch
            batch = self._next()

    def _share(self) -> list[int]:
        """_share is DistributedSampler's: a permutation seeded by seed + epoch, padded (or cut
        with drop_last) to a multiple of the workers, every num_replicas-th from rank."""
        n = len(self.dataset)
        replicas, rank = self._where()
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = torch.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last and n % replicas:
            total = (n // replicas) * replicas
            indices = indices[:total]
        else:
            total = math.ceil(n / replicas) * replicas
            pad = total - len(indices)
            if pad > 0:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        return indices[rank:total:replicas]

    def _where(self) -> tuple[int, int]:
        if self._replicas is not None:
            return self._replicas, self._rank or 0
        import ordo.torch as ot
        if ot._runtime is None:
            return 1, 0
        index, n = ot._runtime.live()  # after a shrink: the workers left share the data
        return n, index

    def __len__(self) -> int:
        """__len__ is this worker's equal share (DistributedSampler's); drawing from the
        service a worker may read more or fewer."""
        replicas, _ = self._where()
        n = len(self.dataset)
        if self.drop_last and n % replicas:
            return n // replicas
        return math.ceil(n / replicas)
