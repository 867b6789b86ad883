"""test_elastic_ef: ordo.torch.elastic with [fault] worker = restart under error feedback
(onebit in server mode, topk 10% in gradients mode; docs/compression.md). Worker 1 is
SIGKILLed in step 12 once its pushes were acknowledged; the new process takes up its
predecessor's residuals (RUN/residuals-worker-1) and encodes the pushes it sends again from
the same ones, and the run ends with the fault-free run's parameters (within 1e-5)."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from test_elastic import launch  # noqa: E402


@pytest.mark.parametrize("mode,codec", [("server", "onebit"), ("gradients", "topk")])
def test_a_worker_killed_under_error_feedback_goes_on_from_its_residuals(tmp_path: Path,
                                                                         mode: str, codec: str):
    # the new process takes up its predecessor's residuals (RUN/residuals-worker-1) and
    # encodes step 12's pushes again from the same ones: the run ends as without the fault
    rc, log = launch(tmp_path, "clean", -1, mode=mode, codec=codec)
    assert rc == 0, log
    want = torch.load(tmp_path / "clean" / "params.pt")
    rc, log = launch(tmp_path, "mid", 12, "mid", mode, codec)
    assert rc == 0, log
    assert "starting it again (restart 1/" in log, log
    assert "goes on with zero residuals" not in log, log
    assert list((tmp_path / "run-mid" / "residuals-worker-1").glob("unit-*.res")), log
    got = torch.load(tmp_path / "mid" / "params.pt")
    for k, v in want.items():
        torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-7, msg=f"{codec} {k}")
