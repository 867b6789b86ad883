"""The C codecs (common/codec*.c, run by build/bin/codec_cli) against the numpy reference
(codec_ref.py) over several steps of error feedback: the same frames, decoded values and
residuals, bit for bit, with zero mismatches. Skipped without numpy or without codec_cli."""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

import pytest

np = pytest.importorskip("numpy", reason="numpy is not installed (scripts/setup-python.sh)")
import codec_ref  # noqa: E402

SRC = Path(os.environ.get("ORDO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("ORDO_BIN_DIR", SRC / "build" / "bin"))
CLI = BIN / "codec_cli"
STEPS = 6


def gradients(n: int, steps: int, seed: int, specials: bool = False) -> np.ndarray:
    """steps x n float32 gradient-like values with ties (rounded magnitudes), zeros and -0;
    with specials also inf, NaN, huge, tiny and subnormal values."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((steps, n)) * 0.01).astype(np.float32)
    x[:, ::5] = np.round(x[:, ::5], 2)  # many equal magnitudes: topk's ties
    x[:, 3::11] = 0.0
    x[:, 4::13] = -0.0
    if specials and n >= 8:
        x[:, :8] = [np.inf, -np.inf, np.nan, 3e38, -1e-40, 1e-45, 65519.0, 65520.0]
    return x


def run_c(spec: str, x: np.ndarray, seed: int, scale: float, scalar: bool) -> list[dict]:
    if not CLI.exists():
        pytest.skip(f"no {CLI} (build the tree first)")
    steps, n = x.shape
    cmd = [str(CLI), spec, str(n), str(steps), "--seed", str(seed), "--scale", repr(scale)]
    if scalar:
        cmd.append("--scalar")
    out = subprocess.run(cmd, input=x.tobytes(), capture_output=True, check=True).stdout
    records, at = [], 0
    for _ in range(steps):
        length, overflow = np.frombuffer(out[at : at + 16], dtype=np.int64)
        at += 16
        frame = out[at : at + max(int(length), 0)]
        at += len(frame)
        decoded = np.frombuffer(out[at : at + 4 * n], dtype=np.float32)
        residual = np.frombuffer(out[at + 4 * n : at + 8 * n], dtype=np.float32)
        at += 8 * n
        records.append(dict(len=int(length), overflow=int(overflow), frame=frame,
                            decoded=decoded, residual=residual))
    assert at == len(out)
    return records


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


CASES = [
    ("none", 1000, 0.0, True),
    ("bf16", 1000, 0.0, True),
    ("bf16,ef=vanilla", 1000, 0.0, False),
    ("fp16", 1000, 0.0, False),
    ("fp16", 1000, 0.25, False),
    ("fp16,ef=vanilla", 1000, 1.0 / 3.0, False),
    ("onebit", 1000, 0.0, False),
    ("onebit", 13, 0.0, False),
    ("onebit,ef=none", 1000, 0.0, False),
    ("topk:37", 1000, 0.0, False),
    ("topk:0.05", 1000, 0.0, False),
    ("topk:0.5", 13, 0.0, False),
    ("topk:3,ef=none", 1000, 0.0, False),
    ("topk:0.01", 200000, 0.0, False),  # large enough for Floyd-Rivest's sampling
    ("topk:777,ef=none", 200000, 0.0, False),
    ("randomk:0.01", 200000, 0.0, False),
    ("randomk:0.1", 1000, 0.0, False),
    ("randomk:50,ef=none", 1000, 0.0, False),
    ("randomk:1", 1, 0.0, False),
]


@pytest.mark.parametrize("scalar", [False, True], ids=["simd", "scalar"])
@pytest.mark.parametrize("spec,n,scale,specials", CASES)
def test_c_equals_reference(spec: str, n: int, scale: float, specials: bool,
                            scalar: bool) -> None:
    x = gradients(n, STEPS, seed=zlib.crc32(spec.encode()) % 1000 + n, specials=specials)
    if spec.startswith("fp16"):
        x[3] *= 1e7  # step 3 overflows fp16: refused, counted, the residual kept
    seed = 1234
    got = run_c(spec, x, seed, scale, scalar)
    ref = codec_ref.Codec(spec, scale=scale)
    residual = np.zeros(n, dtype=np.float32)
    mismatches = []
    for step, rec in enumerate(got):
        try:
            frame, decoded, residual = ref.encode_ef(x[step], residual, seed + step)
        except codec_ref.Overflow as e:
            assert rec["len"] < 0 and rec["overflow"] == e.count, (step, rec["len"])
            assert np.array_equal(bits(rec["residual"]), bits(residual)), step
            continue
        assert rec["len"] == len(frame), (step, rec["len"], len(frame))
        if rec["frame"] != frame:
            mismatches.append((step, "frame"))
        for what, want in (("decoded", decoded), ("residual", residual)):
            bad = np.flatnonzero(bits(rec[what]) != bits(want))
            if bad.size:
                mismatches.append((step, what, bad.size, int(bad[0])))
    assert not mismatches, mismatches
    if spec.startswith("fp16"):
        assert got[3]["len"] < 0 and got[3]["overflow"] > 0


def test_reference_matches_chosen_values() -> None:
    """The reference itself, on values worked out by hand (as tests/unit/test_codec.c)."""
    one = codec_ref.Codec("onebit")
    frame, dec, res = one.encode_ef(np.array([1, -2, 3, -4], np.float32), np.zeros(4, np.float32))
    assert frame == np.float32(2.5).tobytes() + bytes([0x0A])
    assert dec.tolist() == [2.5, -2.5, 2.5, -2.5] and res.tolist() == [-1.5, 0.5, 0.5, -1.5]
    top = codec_ref.Codec("topk:6")
    x = np.array([0.5, -3, 1, 3, -0.5, 2, -3, 0], np.float32)
    idx = np.frombuffer(top.encode(x)[:24], np.uint32)
    assert idx.tolist() == [0, 1, 2, 3, 5, 6]
    bf = codec_ref.to_bf16(np.array([1.00390625, 1.01171875, 1.99609375], np.float32))
    assert bf.tolist() == [0x3F80, 0x3F82, 0x4000]
    assert codec_ref.k_of(0.5, 7) == 4 and codec_ref.k_of(100, 10) == 10
    assert codec_ref.k_of(0.01, 10) == 1 and codec_ref.k_of(3, 0) == 0
    ids = codec_ref.randomk_indices(100, 10, 77)
    assert ids.size == 10 and np.all(np.diff(ids.astype(np.int64)) > 0)
