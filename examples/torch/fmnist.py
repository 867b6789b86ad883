"""fmnist: Fashion-MNIST for the ordo.torch examples, read from the IDX files of the distribution
package (dataset-fashion-mnist: /usr/share/datasets/fashion-mnist, or $ORDO_MODEL_DATA_DIR);
nothing is downloaded. Also the examples' --device option (DEVICE_HELP, device)."""
from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path

import torch

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def _open(path: Path):
    for p in (path, path.with_name(path.name + ".gz")):
        if p.exists():
            return gzip.open(p, "rb") if p.suffix == ".gz" else open(p, "rb")
    raise FileNotFoundError(f"fmnist: no {path}[.gz] (install the dataset-fashion-mnist "
                            "package or set ORDO_MODEL_DATA_DIR)")


def read_idx(path: Path) -> torch.Tensor:
    """read_idx reads one IDX file of unsigned bytes (images: N x rows x cols, labels: N)."""
    with _open(path) as f:
        magic = f.read(4)
        if len(magic) != 4 or magic[:3] != b"\0\0\x08" or not 1 <= magic[3] <= 3:
            raise ValueError(f"fmnist: {path} is not an IDX file of unsigned bytes")
        dims = struct.unpack(f">{magic[3]}I", f.read(4 * magic[3]))
        data = f.read()
    n = 1
    for d in dims:
        n *= d
    if len(data) != n:
        raise ValueError(f"fmnist: {path}: {len(data)} bytes, the header says {n}")
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(dims)


def load(split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """load returns split's ("train" or "t10k") images as normalised float32 N x 1 x 28 x 28
    and labels as int64."""
    root = Path(os.environ.get("ORDO_MODEL_DATA_DIR") or DEFAULT_DIR)
    images = read_idx(root / f"{split}-images-idx3-ubyte")
    labels = read_idx(root / f"{split}-labels-idx1-ubyte")
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"fmnist: {root}: {images.shape[0]} images, {labels.shape[0]} labels")
    x = (images.float().div_(255.0).sub_(MEAN).div_(STD)).unsqueeze(1)
    return x, labels.long()


DEVICE_HELP = "cpu, cuda (the worker's local_rank-th GPU) or auto (cuda if there)"


def device(name: str, local_rank: int) -> str:
    """device is the torch device a worker computes on for --device name: the host's GPUs are
    shared by local rank."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        return f"cuda:{local_rank % torch.cuda.device_count()}"
    return name
