"""test_client: ordo.Client (python/ordo) against a real cluster of the C daemons on loopback.

Needs ORDO_BIN_DIR (ordo-scheduler, ordo-server) and ORDO_SOURCE_DIR; ctest sets both.
"""
from __future__ import annotations

import array
import subprocess
import sys
import threading
import time
from pathlib import Path

import ordo
import pytest
from cluster import BIN, CONF, LIMIT_S, SRC, Cluster, worker_env


@pytest.fixture
def cluster_of(tmp_path: Path):
    made: list[Cluster] = []

    def make(*args: str) -> Cluster:
        made.append(Cluster(tmp_path, *args))
        return made[-1]

    yield make
    for c in made:
        c.stop()


def test_two_python_workers_pull_exact_values(cluster_of):
    c = cluster_of()
    for i in range(2):
        c.start(f"worker{i}", sys.executable, str(SRC / "tests" / "python" / "hello_worker.py"),
                str(CONF), f"cluster.scheduler={c.endpoint}", env=worker_env())
    for name in ["worker0", "worker1", "server0", "server1", "scheduler"]:
        assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    for i in range(2):
        assert "4 iterations, 341760 values checked, 0 wrong" in c.log(f"worker{i}"), \
            c.log(f"worker{i}")



def test_python_workers_join_a_curve_cluster_and_an_unlisted_key_is_refused(cluster_of, tmp_path):
    keys = tmp_path / "keys"
    subprocess.run([str(BIN / "ordo-keygen"), str(keys), "worker", "intruder"], check=True,
                   stdout=subprocess.DEVNULL)
    (keys / "clients" / "intruder.pub").unlink()
    c = cluster_of("--security.curve=true", f"--security.keys={keys}")
    secure = ["security.curve=true", f"security.keys={keys}"]
    c.start("intruder", sys.executable, str(SRC / "tests" / "python" / "hello_worker.py"),
            str(CONF), f"cluster.scheduler={c.endpoint}", *secure, "security.client=intruder",
            env=worker_env())
    assert c.finish("intruder") != 0
    assert "refused this process's CURVE key" in c.log("intruder"), c.log("intruder")
    for i in range(2):
        c.start(f"worker{i}", sys.executable, str(SRC / "tests" / "python" / "hello_worker.py"),
                str(CONF), f"cluster.scheduler={c.endpoint}", *secure, env=worker_env())
    for name in ["worker0", "worker1", "server0", "server1", "scheduler"]:
        assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    assert "0 wrong" in c.log("worker0"), c.log("worker0")
    assert "is not in" in c.log("scheduler"), c.log("scheduler")


DECLARED = ["--model.trainer=declared", "--optimizer.aggregate=mean", "--optimizer.lr=0.5"]


def test_declared_tensors_average_sgd_and_broadcast(cluster_of):
    pytest.importorskip("numpy")
    c = cluster_of(*DECLARED)
    settings = [a[2:] for a in DECLARED] + [f"cluster.scheduler={c.endpoint}"]
    for i in range(2):
        c.start(f"worker{i}", sys.executable,
                str(SRC / "tests" / "python" / "declared_worker.py"), str(CONF), *settings,
                env=worker_env())
    for name in ["worker0", "worker1", "server0", "server1", "scheduler"]:
        assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    for i in range(2):
        assert "5 iterations, 22500 values checked, 0 wrong" in c.log(f"worker{i}"), \
            c.log(f"worker{i}")
    assert "model declared by the workers: 3 tensors" in c.log("scheduler")
    assert "declared update rules: 1 sgd, 1 average, 1 the conf's" in c.log("server0") + \
        c.log("server1")


def in_threads(fn, n: int = 2) -> list:
    """in_threads runs fn(i) for i < n in threads (each its own Client, the GIL released in
    the C calls) and returns what each returned or raised."""
    out: list = [None] * n

    def run(i: int) -> None:
        try:
            out[i] = fn(i)
        except Exception as e:  # noqa: BLE001 - the test looks at it
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIMIT_S)
    return out


def test_update_rules_that_differ_abort_naming_the_worker_and_tensor(cluster_of):
    c = cluster_of(*DECLARED, "--cluster.servers=1")

    def worker(i: int) -> None:
        client = ordo.Client(str(CONF), {"model.trainer": "declared",
                                         "cluster.scheduler": c.endpoint, "cluster.rank": i})
        client.declare("w", 4)
        client.declare_update(0, "sgd", lr=0.1 * (i + 1))
        try:
            client.join()
        finally:
            client.close()

    out = in_threads(worker)
    assert all(isinstance(e, ordo.OrdoError) for e in out), out
    assert 'worker 1 declared tensor 0 "w" with update rule {"kind":"sgd","lr":0.20000000000' \
        in str(out[0]), out[0]
    assert c.finish("scheduler") != 0


def test_broadcast_checks_root_and_sizes(cluster_of):
    c = cluster_of(*DECLARED, "--cluster.servers=1")

    def worker(i: int) -> str:
        client = ordo.Client(str(CONF), {"model.trainer": "declared",
                                         "cluster.scheduler": c.endpoint, "cluster.rank": i})
        client.declare("w", 4)
        client.declare_update(0, "average")
        client.join()
        try:
            with pytest.raises(ordo.OrdoError, match="root 2 out of range"):
                client.broadcast(bytearray(4), root=2)
            buf = bytearray(b"abcd" if i == 1 else bytes(4))
            client.broadcast(buf, root=1, timeout_ms=30000)
            assert buf == b"abcd"
            client.broadcast(bytearray(8 if i == 0 else 4), root=0, timeout_ms=30000)
            return "no error"
        finally:
            client.close()

    out = in_threads(worker)
    assert all(isinstance(e, ordo.OrdoError) for e in out), out
    assert "broadcast 2: worker" in str(out[0]) and "bytes from root 0" in str(out[0]), out[0]
    assert c.finish("scheduler") != 0


def test_declare_update_is_checked():
    client = ordo.Client()
    t = client.declare("w", 4)
    with pytest.raises(ValueError, match="update kind 'adam'"):
        client.declare_update(t, "adam")
    with pytest.raises(ordo.OrdoError, match="lr -1, momentum 0"):
        client.declare_update(t, "sgd", lr=-1)
    with pytest.raises(ordo.OrdoError, match="no tensor 3"):
        client.declare_update(3, "average")
    client.declare_update(t, "sgd", lr=0.1)
    with pytest.raises(ordo.OrdoError, match="needs \\[model\\] trainer = declared"):
        client.join()
    client.close()


def test_a_declared_size_that_differs_is_refused_naming_the_tensor(cluster_of):
    c = cluster_of("--cluster.servers=1", "--cluster.workers=1")
    client = ordo.Client(str(CONF), {"cluster.scheduler": c.endpoint})
    client.declare("layer1.weight", 65536)
    client.declare("layer1.bias", 512)
    client.declare("layer2.weight", 2560)
    with pytest.raises(ordo.OrdoError) as e:
        client.join()
    assert 'tensor 1 "layer1.bias": declared 512 elements' in str(e.value)
    client.close()
    assert c.finish("scheduler") != 0  # the run was aborted, not left waiting


def test_conf_errors_name_the_file_key_and_value(tmp_path: Path):
    bad = tmp_path / "bad.ini"
    bad.write_text("[optimizer]\nlr = abc\n")
    with pytest.raises(ordo.OrdoError) as e:
        ordo.Client(str(bad))
    assert f"{bad}:2" in str(e.value) and e.value.name == "FORMAT"
    client = ordo.Client()
    with pytest.raises(ordo.OrdoError, match="unknown key 'optimizer.nosuchkey'"):
        client.set("optimizer.nosuchkey", 1)
    with pytest.raises(ordo.OrdoError, match="optimizer.lr: 'fast' is not a number"):
        client.set("optimizer.lr", "fast")
    client.close()


def test_buffers_must_be_float32_contiguous_and_of_the_tensor_size():
    client = ordo.Client()
    t = client.declare("w", 4)
    assert client.numel(t) == 4 and client.tensors() == [("w", 4)]
    with pytest.raises(TypeError, match="format 'd'"):
        ordo.buffer_address(array.array("d", [0.0] * 4), 4, writable=False)
    with pytest.raises(ValueError, match="buffer has 3 values, the tensor 4"):
        ordo.buffer_address(array.array("f", [0.0] * 3), 4, writable=True)
    with pytest.raises(ValueError, match="read-only"):
        ordo.buffer_address(memoryview(bytes(16)).cast("f"), 4, writable=False)
    with pytest.raises(TypeError, match="not a float32 buffer"):
        ordo.buffer_address([0.0] * 4, 4, writable=False)
    with pytest.raises(ordo.OrdoError, match="ordo_join first"):
        client.push(t, array.array("f", [0.0] * 4))
    client.close()


def test_no_scheduler_is_a_bounded_error_naming_the_address():
    client = ordo.Client(None, {"cluster.scheduler": "tcp://127.0.0.1:1",
                                "fault.startup_ms": 300})
    client.declare("w", 4)
    started = time.monotonic()
    # the start-up limit (TIMEDOUT), or the transport's verdict on the refused connection
    # (PEERDEAD) when it comes first
    with pytest.raises(ordo.OrdoError, match="tcp://127.0.0.1:1") as e:
        client.join()
    assert e.value.name in ("TIMEDOUT", "PEERDEAD")
    assert time.monotonic() - started < 10
    client.close()


def test_numpy_arrays_cross_without_a_copy():
    np = pytest.importorskip("numpy")
    a = np.arange(4, dtype=np.float32)
    assert ordo.buffer_address(a, 4, writable=True) == a.ctypes.data
    with pytest.raises(TypeError, match="dtype float64"):
        ordo.buffer_address(np.zeros(4), 4, writable=False)
    with pytest.raises(ValueError, match="not C-contiguous"):
        ordo.buffer_address(np.zeros((4, 2), dtype=np.float32)[:, 0], 4, writable=False)
