"""test_overtake: credit-based preemption on a live cluster (docs/training-order.md). One
worker, one server, an emulated 250 mbit/s egress link. The worker pushes a big tensor B
(16 MiB: 537 ms of link time, 64 slices of 256 KiB) at low priority and, 100 ms later, a
small tensor S at high priority. With a push credit of 64 KiB only about one slice of B is on
the link at a time, so S's push overtakes B's queued slices and is acknowledged while B is
still on its way. With a credit larger than B all of B is handed to the link before S is
queued, and S is not acknowledged while B is in flight (both acknowledgements may be seen at
one poll). The policy is a planned one (layer): without priorities in the plan (none, fifo)
the queue is first in, first out. Completion order only: no timing is asserted beyond the
537 ms B needs on the emulated link (far above a loaded machine's scheduling delays)."""
from __future__ import annotations

import array
import time
from pathlib import Path

import ordo
from cluster import Cluster

B_NUMEL = 4 << 20  # 16 MiB of floats
S_NUMEL = 1000


def run(tmp: Path, credit: int) -> bool:
    """run returns whether S was seen acknowledged while B was not."""
    args = ["--cluster.servers=1", "--cluster.workers=1", "--net.bandwidth=250mbit",
            f"--order.credit_bytes={credit}", "--order.segment_bytes=262144",
            "--order.policy=layer", "--fault.timeout_ms=20000", "--model.trainer=declared"]
    c = Cluster(tmp, *args, servers=1)
    try:
        settings = {a[2:].split("=", 1)[0]: a.split("=", 1)[1] for a in args}
        settings["cluster.scheduler"] = c.endpoint
        settings["cluster.rank"] = "0"
        client = ordo.Client(str(c.conf), settings)
        b = client.declare("B", B_NUMEL)
        s = client.declare("S", S_NUMEL)
        client.join()
        client.init(b, array.array("f", [1.0]) * B_NUMEL)
        client.init(s, array.array("f", [1.0]) * S_NUMEL)
        client.wait_all(timeout_ms=60000)
        time.sleep(0.7)  # B's initial value (537 ms on the link) is out: the pushes start alone
        gb = array.array("f", [0.5]) * B_NUMEL
        gs = array.array("f", [0.5]) * S_NUMEL
        hb = client.push(b, gb, priority=1)
        # time for the client to queue all of B (a slow machine's too); B is still on the
        # link for over 400 ms more
        time.sleep(0.1)
        hs = client.push(s, gs, priority=0)
        s_first = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and s_first is None:
            if hs.done():  # and B still not done after that: S came first
                s_first = not hb.done()
            time.sleep(0.0005)
        assert s_first is not None, "S's push did not complete"
        hb.wait(timeout_ms=60000)
        client.leave()
        client.close()
        return s_first
    finally:
        c.stop()


def test_a_late_high_priority_push_overtakes_a_big_queued_one(tmp_path: Path):
    (tmp_path / "small").mkdir()
    assert run(tmp_path / "small", 64 << 10), \
        "with a 64 KiB credit S should be acknowledged before B"


def test_without_room_in_the_queue_the_late_push_waits(tmp_path: Path):
    (tmp_path / "large").mkdir()
    assert not run(tmp_path / "large", 64 << 20), \
        "with a 64 MiB credit all of B is on the link before S: S cannot be acknowledged first"
