"""client: a worker of an ordo cluster, the Python face of include/ordo/ordo.h.

A Client reads a conf file (and ORDO_* environment variables), takes key=value settings,
declares its tensors, joins the cluster, and then pushes gradients and pulls parameters of
float32 buffers without copying them: numpy arrays, torch CPU tensors, or any writable,
C-contiguous float32 buffer (array.array('f'), ...). A transfer's buffers are held by its
Handle until the transfer completes, so they cannot be freed under it; the caller must not
change them meanwhile. A Client is not thread-safe: one thread drives it (interrupt() is the
exception).
"""
from __future__ import annotations

import ctypes
import os
from typing import Any

from ordo import _capi
from ordo._capi import lib


class OrdoError(RuntimeError):
    """OrdoError is a failed call of the C API: code is the negative ORDO_ERR_* value, name
    its name (e.g. "INVAL"), and the message ordo_last_error's text."""

    def __init__(self, code: int, message: str):
        self.code = code
        self.name = _capi.ERRORS.get(code, str(code))
        super().__init__(f"{message} [{self.name}]")


class Timeout(OrdoError):
    """Timeout: a bounded wait ran out; the transfer is still in flight."""


def _check(rc: int) -> int:
    if rc >= 0:
        return rc
    text = lib.ordo_last_error()
    msg = text.decode(errors="replace") if text else lib.ordo_strerror(rc).decode()
    raise (Timeout if rc == _capi.ERR_TIMEDOUT else OrdoError)(rc, msg)


def version() -> str:
    """version returns the version of the loaded libordo.

    Returns:
        The version, e.g. "0.1.0".

    Raises:
        OSError: libordo cannot be loaded (the places tried are named)
    """
    return lib.ordo_version().decode()


def buffer_address(obj: Any, numel: int, writable: bool) -> int:
    """buffer_address returns the address of obj's numel float32 values, without a copy.

    Args:
        obj: a torch tensor (CPU, float32, contiguous), a numpy array (float32,
            C-contiguous) or any object with the buffer protocol (format 'f', C-contiguous)
        numel: the number of values obj must hold
        writable: whether ordo writes into obj

    Returns:
        The address of the first value.

    Raises:
        TypeError, ValueError: anything else, saying what is wrong
    """
    mod = type(obj).__module__
    if mod.startswith("torch"):
        if obj.dtype.__repr__() != "torch.float32":
            raise TypeError(f"ordo: tensor of dtype {obj.dtype}; ordo moves float32 "
                            "(convert with .float())")
        if obj.device.type != "cpu":
            raise TypeError(f"ordo: tensor on {obj.device}; pass a CPU tensor")
        if not obj.is_contiguous():
            raise ValueError("ordo: tensor is not contiguous (use .contiguous())")
        got, addr = obj.numel(), obj.data_ptr()
    elif mod.startswith("numpy"):
        if str(obj.dtype) != "float32":
            raise TypeError(f"ordo: array of dtype {obj.dtype}; ordo moves float32 "
                            "(convert with .astype(numpy.float32))")
        if not obj.flags["C_CONTIGUOUS"]:
            raise ValueError("ordo: array is not C-contiguous (use numpy.ascontiguousarray)")
        if writable and not obj.flags["WRITEABLE"]:
            raise ValueError("ordo: array is read-only and this transfer writes it")
        got, addr = obj.size, obj.ctypes.data
    else:
        try:
            view = memoryview(obj)
        except TypeError:
            raise TypeError(f"ordo: {type(obj).__name__} is not a float32 buffer "
                            "(pass a numpy array, a torch tensor or array.array('f'))") from None
        if view.format != "f" or view.itemsize != 4:
            raise TypeError(f"ordo: buffer of format {view.format!r}; ordo moves float32 ('f')")
        if not view.c_contiguous:
            raise ValueError("ordo: buffer is not C-contiguous")
        if view.readonly:
            raise ValueError("ordo: read-only buffer; pass a writable one (or a numpy array)")
        got = view.nbytes // 4
        addr = ctypes.addressof(ctypes.c_char.from_buffer(view)) if got else 0
    if got != numel:
        raise ValueError(f"ordo: buffer has {got} values, the tensor {numel}")
    return addr


class Handle:
    """Handle names one transfer in flight; it keeps the transfer's buffers alive until the
    transfer completes (wait() or done() returned True)."""

    def __init__(self, client: Client, value: int, keep: tuple):
        self._client = client
        self._value = value
        self._keep: tuple | None = keep

    def wait(self, timeout_ms: int = -1) -> None:
        """wait blocks until the transfer completes.

        Args:
            timeout_ms: how long to wait; -1: no limit

        Raises:
            Timeout: timeout_ms ran out; the transfer stays in flight and wait may be called again
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        if self._keep is None:
            return
        _check(lib.ordo_wait(self._client._ptr(), self._value, timeout_ms))
        self._keep = None

    def done(self) -> bool:
        """done reports whether the transfer completed, without blocking for long.

        Returns:
            True once the transfer completed (its buffers are then released).

        Raises:
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        if self._keep is None:
            return True
        rc = lib.ordo_test(self._client._ptr(), self._value)
        if rc == _capi.ERR_AGAIN:
            return False
        _check(rc)
        self._keep = None
        return True


class Client:
    """Client is one worker of a cluster: Client(conf, settings), declare, join, then
    transfers; leave (or the with-statement) ends it. One thread drives a Client.

    Args:
        conf: the conf file (None: $ORDO_CONF when set, else the defaults); ORDO_*
            variables override it.
        settings: {"section.key": value}, applied after the file (see set).

    Raises:
        OrdoError: an unreadable or invalid conf file or setting.
        OSError: libordo cannot be loaded.
    """

    _o: ctypes.c_void_p | None = None

    def __init__(self, conf: str | None = None, settings: dict | None = None):
        ptr = ctypes.c_void_p()
        _check(lib.ordo_new(conf.encode() if conf else None, ctypes.byref(ptr)))
        self._o: ctypes.c_void_p | None = ptr
        self._joined = False
        for key, value in (settings or {}).items():
            self.set(key, value)

    # ---- life cycle -----------------------------------------------------------------------

    def _ptr(self) -> ctypes.c_void_p:
        if self._o is None:
            raise OrdoError(-6, "ordo: the client was closed")
        return self._o

    def set(self, key: str, value: Any) -> None:
        """set sets a conf key (before join), as the conf file would.

        Args:
            key: "section.key", e.g. "cluster.scheduler"
            value: its value (bool: true/false; anything else as str())

        Raises:
            OrdoError: an unknown key, a bad value, or after join
        """
        if isinstance(value, bool):
            value = "true" if value else "false"
        _check(lib.ordo_set(self._ptr(), key.encode(), str(value).encode()))

    def declare(self, name: str, numel: int) -> int:
        """declare adds a tensor of numel float32 values (before join); join checks the
        declarations against the cluster's tensors.

        Args:
            name: the tensor's name (the same on every worker)
            numel: its number of float32 values

        Returns:
            The tensor's index, for the transfers.

        Raises:
            OrdoError: a duplicate name, numel < 1, or after join
        """
        idx = ctypes.c_int()
        _check(lib.ordo_declare(self._ptr(), name.encode(), int(numel), ctypes.byref(idx)))
        return idx.value

    def declare_update(self, tensor: int, kind: str, lr: float = 0.0, momentum: float = 0.0,
                       weight_decay: float = 0.0) -> None:
        """declare_update sets tensor's update rule on the servers (before join).

        Args:
            tensor: the tensor's index (declare's return value)
            kind: "conf" (the conf's [optimizer]), "sgd" (torch.optim.SGD's step with lr,
                momentum and weight_decay) or "average" (pulls return the mean of the
                workers' gradients)
            lr, momentum, weight_decay: the SGD step's hyperparameters (kind "sgd")

        Raises:
            ValueError: an unknown kind
            OrdoError: no such tensor, or after join
        """
        kinds = {"conf": _capi.UPDATE_CONF, "sgd": _capi.UPDATE_SGD,
                 "average": _capi.UPDATE_AVERAGE}
        if kind not in kinds:
            raise ValueError(f"ordo: update kind {kind!r}; one of {', '.join(kinds)}")
        u = _capi.Update(kinds[kind], float(lr), float(momentum), float(weight_decay))
        _check(lib.ordo_declare_update(self._ptr(), tensor, ctypes.byref(u)))

    def declare_occasional(self, tensor: int) -> None:
        """declare_occasional marks tensor as one not transferred every iteration (before
        join): merged pushes keep it out of their groups.

        Args:
            tensor: the tensor's index (declare's return value)

        Raises:
            OrdoError: no such tensor, or after join
        """
        _check(lib.ordo_declare_occasional(self._ptr(), tensor))

    def declare_compression(self, tensor: int, codec: str) -> None:
        """declare_compression sets the wire type of tensor's pushes and pulls (before join),
        in place of the conf's [push] compression; servers still sum in float32.

        Args:
            tensor: the tensor's index (declare's return value)
            codec: "none", "bf16", "fp16", "onebit", "topk:K" or "randomk:K" (K a count >= 1
                or a fraction in (0, 1)), optionally with ",ef=vanilla" or ",ef=none"

        Raises:
            OrdoError: an unknown codec or a k out of range (naming the tensor), no such
                tensor, or after join
        """
        _check(lib.ordo_declare_compression(self._ptr(), tensor, codec.encode()))

    def join(self) -> Client:
        """join registers with the scheduler and waits for the cluster to form.

        Returns:
            This client, joined.

        Raises:
            OrdoError: no scheduler within fault.startup_ms, a refused token or
                declaration (the message says which), or a second join
        """
        _check(lib.ordo_join(self._ptr()))
        self._joined = True
        return self

    def leave(self) -> None:
        """leave waits for the transfers in flight, tells the scheduler this worker is done and
        closes the client (a client never joined is only closed).

        Raises:
            OrdoError: a transfer or the goodbye failed (the client is closed all the same)
        """
        if self._o is None:
            return
        try:
            if self._joined:
                _check(lib.ordo_leave(self._o))
        finally:
            self.close()

    def abort(self, reason: str) -> None:
        """abort stops the whole run, telling the cluster why, and closes the client.

        Args:
            reason: the text every process of the run logs
        """
        if self._o is not None:
            lib.ordo_abort(self._o, reason.encode())
            self.close()

    def close(self) -> None:
        """close releases the client (a joined client that did not leave aborts the run)."""
        if self._o is not None:
            lib.ordo_destroy(ctypes.byref(self._o))
            self._o = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if kind is None:
            self.leave()
        else:
            self.abort(f"{kind.__name__}: {value}")

    def __del__(self) -> None:
        self.close()

    # ---- the cluster ----------------------------------------------------------------------

    @property
    def rank(self) -> int:
        """rank is this worker's rank (after join)."""
        return _check(lib.ordo_rank(self._ptr()))

    @property
    def size(self) -> int:
        """size is the number of workers (after join)."""
        return _check(lib.ordo_size(self._ptr()))

    @property
    def num_servers(self) -> int:
        """num_servers is the number of servers (after join)."""
        return _check(lib.ordo_num_servers(self._ptr()))

    def tensors(self) -> list[tuple[str, int]]:
        """tensors lists the cluster's tensors, in index order.

        Returns:
            (name, numel) of each tensor.

        Raises:
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        n = _check(lib.ordo_num_tensors(self._ptr()))
        return [(lib.ordo_tensor_name(self._o, i).decode(), self.numel(i)) for i in range(n)]

    def numel(self, tensor: int) -> int:
        """numel is the number of values of tensor.

        Args:
            tensor: the tensor's index (declare's return value)

        Returns:
            Its number of float32 values.

        Raises:
            OrdoError: no such tensor
        """
        return _check(lib.ordo_tensor_numel(self._ptr(), tensor))

    def version(self, tensor: int) -> int:
        """version is how many pushes of tensor this worker has made.

        Args:
            tensor: the tensor's index (declare's return value)

        Returns:
            The count.

        Raises:
            OrdoError: no such tensor
        """
        return _check(lib.ordo_tensor_version(self._ptr(), tensor))

    # ---- transfers ------------------------------------------------------------------------

    def init(self, tensor: int, values: Any) -> None:
        """init gives tensor its initial values (rank 0's count; the servers keep the first).

        Args:
            tensor: the tensor's index (declare's return value)
            values: numel float32 values (copied before init returns)

        Raises:
            TypeError, ValueError: a buffer that is not float32, C-contiguous (writable where
                written) and of the tensor's size
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        addr = buffer_address(values, self.numel(tensor), writable=False)
        _check(lib.ordo_init(self._ptr(), tensor, addr))

    def push(self, tensor: int, grad: Any, priority: int = 0) -> Handle:
        """push sends grad as tensor's next gradient; lower priorities leave first.

        Args:
            tensor: the tensor's index (declare's return value)
            grad: numel float32 values, unchanged until the transfer completes
            priority: its place in the order of this worker's transfers (smaller first)

        Returns:
            The transfer's Handle (it keeps grad alive).

        Raises:
            TypeError, ValueError: a buffer that is not float32, C-contiguous (writable where
                written) and of the tensor's size
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        h = _capi._H()
        addr = buffer_address(grad, self.numel(tensor), writable=False)
        _check(lib.ordo_push(self._ptr(), tensor, addr, priority, ctypes.byref(h)))
        return Handle(self, h.value, (grad,))

    def pull(self, tensor: int, out: Any, priority: int = 0) -> Handle:
        """pull fetches tensor's value after this worker's pushes so far into out.

        Args:
            tensor: the tensor's index (declare's return value)
            out: a writable buffer of numel float32 values
            priority: its place in the order of this worker's transfers (smaller first)

        Returns:
            The transfer's Handle; out holds the value once it completes.

        Raises:
            TypeError, ValueError: a buffer that is not float32, C-contiguous (writable where
                written) and of the tensor's size
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        h = _capi._H()
        addr = buffer_address(out, self.numel(tensor), writable=True)
        _check(lib.ordo_pull(self._ptr(), tensor, addr, priority, ctypes.byref(h)))
        return Handle(self, h.value, (out,))

    def pushpull(self, tensor: int, grad: Any, out: Any, priority: int = 0) -> Handle:
        """pushpull is push of grad then pull into out, one message each way.

        Args:
            tensor: the tensor's index (declare's return value)
            grad: the gradient, unchanged until the transfer completes
            out: a writable buffer for the value the push produced
            priority: its place in the order of this worker's transfers (smaller first)

        Returns:
            The transfer's Handle.

        Raises:
            TypeError, ValueError: a buffer that is not float32, C-contiguous (writable where
                written) and of the tensor's size
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        h = _capi._H()
        n = self.numel(tensor)
        src = buffer_address(grad, n, writable=False)
        dst = buffer_address(out, n, writable=True)
        _check(lib.ordo_pushpull(self._ptr(), tensor, src, dst, priority, ctypes.byref(h)))
        return Handle(self, h.value, (grad, out))

    def wait_all(self, timeout_ms: int = -1) -> None:
        """wait_all waits for every transfer in flight.

        Args:
            timeout_ms: how long to wait; -1: no limit

        Raises:
            Timeout: timeout_ms ran out (the operation goes on)
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        _check(lib.ordo_wait_all(self._ptr(), timeout_ms))

    def step(self, samples: int = 0, loss: float | None = None) -> None:
        """step marks the end of one training iteration for the run's metrics (step time, the
        part spent waiting for transfers, bytes, samples, loss): summary.json's step_ms,
        throughput and straggler effect come from these.

        Args:
            samples: the samples this worker trained on in the iteration
            loss: the iteration's loss, None when not known

        Raises:
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        _check(lib.ordo_step(self._ptr(), samples, float("nan") if loss is None else loss))

    def barrier(self, timeout_ms: int = -1) -> None:
        """barrier returns once every worker called it as many times.

        Args:
            timeout_ms: how long to wait; -1: no limit

        Raises:
            Timeout: timeout_ms ran out (the operation goes on)
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        _check(lib.ordo_barrier(self._ptr(), timeout_ms))

    def broadcast(self, buf: Any, root: int = 0, timeout_ms: int = -1) -> None:
        """broadcast copies root's buf into every worker's buf; every worker calls it.

        Args:
            buf: a writable buffer of the same size everywhere (bytearray, numpy array,
                contiguous CPU torch tensor)
            root: the rank whose buf is copied
            timeout_ms: how long to wait; -1: no limit

        Raises:
            ValueError: a read-only buffer or a tensor not on the CPU
            Timeout: timeout_ms ran out (the operation goes on)
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        view = memoryview(buf).cast("B") if not type(buf).__module__.startswith("torch") \
            else None
        if view is not None:
            if view.readonly:
                raise ValueError("ordo: broadcast needs a writable buffer")
            n = view.nbytes
            addr = ctypes.addressof(ctypes.c_char.from_buffer(view)) if n else 0
        else:
            if buf.device.type != "cpu" or not buf.is_contiguous():
                raise ValueError("ordo: broadcast needs a contiguous CPU tensor")
            n, addr = buf.numel() * buf.element_size(), buf.data_ptr()
        _check(lib.ordo_broadcast(self._ptr(), addr, n, root, timeout_ms))

    def broadcast_bytes(self, data: bytes | None, root: int = 0, timeout_ms: int = -1) -> bytes:
        """broadcast_bytes returns root's data on every worker: its length first, then its
        bytes, so the sizes may differ.

        Args:
            data: root's bytes (the others pass None or anything)
            root: the sending rank
            timeout_ms: how long to wait; -1: no limit

        Returns:
            root's data.

        Raises:
            Timeout: timeout_ms ran out (the operation goes on)
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        mine = self.rank == root
        size = bytearray(len(data).to_bytes(8, "little") if mine else bytes(8))
        self.broadcast(size, root, timeout_ms)
        out = bytearray(data) if mine else bytearray(int.from_bytes(size, "little"))
        self.broadcast(out, root, timeout_ms)
        return bytes(out)

    def interrupt(self) -> None:
        """interrupt wakes a wait of another thread (it raises OrdoError AGAIN there).
        """
        if self._o is not None:
            lib.ordo_interrupt(self._o)

    # ---- re-planning the transfer order ---------------------------------------------------

    def replan(self, profile_json: str | None, timeout_ms: int = -1) -> list[int]:
        """replan re-plans the transfer order for the whole cluster; every worker calls it at
        the same point (bound, in host groups: between iter_end(t) and iter_begin(t + 1)).

        Args:
            profile_json: rank 0: an ordo-model/1 profile of the tensors; the others None
            timeout_ms: how long to wait; -1: no limit

        Returns:
            Each tensor's new priority, in index order.

        Raises:
            OrdoError: a refused profile, with the reason, on every worker (the cluster keeps
                its plan)
            Timeout: timeout_ms ran out (the operation goes on)
        """
        text = profile_json.encode() if profile_json is not None else None
        _check(lib.ordo_replan(self._ptr(), text, timeout_ms))
        return self.priorities()

    def priority(self, tensor: int) -> int:
        """priority is tensor's priority in the cluster's plan (smaller goes first).

        Args:
            tensor: the tensor's index (declare's return value)

        Returns:
            The priority to pass to push, pull and pushpull.

        Raises:
            OrdoError: no such tensor
        """
        return _check(lib.ordo_tensor_priority(self._ptr(), tensor))

    def priorities(self) -> list[int]:
        """priorities lists every tensor's priority in the cluster's plan.

        Returns:
            The priorities, in index order.

        Raises:
            OrdoError: the C API's error (its code, name and message), e.g. a call out of turn
        """
        return [self.priority(i) for i in range(_check(lib.ordo_num_tensors(self._ptr())))]

    def iter_bytes(self) -> tuple[int, int]:
        """iter_bytes is (pushed, pulled): the payload bytes the last ended iteration of the
        bound model moved to and from the servers, as this worker's path counts them (in host
        groups only an owner's keys; ordo_iter_bytes)."""
        pushed, pulled = ctypes.c_int64(), ctypes.c_int64()
        _check(lib.ordo_iter_bytes(self._ptr(), ctypes.byref(pushed), ctypes.byref(pulled),
                                   None, 0))
        return pushed.value, pulled.value

    # ---- the run ---------------------------------------------------------------------------

    def run_dir(self) -> str:
        """run_dir is the run folder the scheduler named ("" before join)."""
        return (lib.ordo_run_dir(self._ptr()) or b"").decode()

    def resume_iter(self) -> int:
        """resume_iter is the iteration a restarted worker goes on at, -1 for one of the start."""
        return int(lib.ordo_resume_iter(self._ptr()))

    def members(self) -> tuple[bool, int, int, int]:
        """members is (someone left, this worker's index among the live ones, their number, the
        iteration from which they hold)."""
        i, n, since = ctypes.c_int(), ctypes.c_int(), ctypes.c_int64()
        left = _check(lib.ordo_members(self._ptr(), ctypes.byref(i), ctypes.byref(n),
                                       ctypes.byref(since)))
        return bool(left), i.value, n.value, since.value

    def commit_state(self, state: bytes) -> None:
        """commit_state keeps state (the program's own bytes: parameters, optimizer state) as
        of the iteration this worker is at, for a peer that restarts or joins
        (ordo_commit_state)."""
        _check(lib.ordo_commit_state(self._ptr(), state, len(state)))

    def peer_state(self, timeout_ms: int = -1) -> tuple[bytes, int]:
        """peer_state asks a live peer for its committed state (ordo_peer_state) and returns
        it with its iteration; this worker's tensors then go on at that iteration."""
        n, it = ctypes.c_size_t(0), ctypes.c_int64(0)
        _check(lib.ordo_peer_state(self._ptr(), None, 0, ctypes.byref(n), ctypes.byref(it),
                                   timeout_ms))
        buf = ctypes.create_string_buffer(max(n.value, 1))
        _check(lib.ordo_peer_state(self._ptr(), buf, n.value, ctypes.byref(n), ctypes.byref(it),
                                   timeout_ms))
        return buf.raw[:n.value], it.value

    def save_state(self, path: str) -> None:
        """save_state writes this worker's push-path state (a codec's error-feedback residuals,
        a sparse path's) to the file path between iterations, once its pushes completed; no file
        when the path keeps none (ordo_save_state)."""
        _check(lib.ordo_save_state(self._ptr(), os.fsencode(path)))

    def load_state(self, path: str) -> None:
        """load_state reads save_state's file back after join and before the first push
        (ordo_load_state); OrdoError names the file and what differs when it does not fit."""
        _check(lib.ordo_load_state(self._ptr(), os.fsencode(path)))

    def report(self, stats_json: str) -> None:
        """report sends one iteration's stats (a JSON object) to the scheduler's metrics."""
        _check(lib.ordo_report(self._ptr(), stats_json.encode()))

    def leave_with(self, final_json: str | None) -> None:
        """leave_with is leave that hands the scheduler the run's final figures (JSON)."""
        if self._o is None:
            return
        try:
            if self._joined:
                _check(lib.ordo_leave_with(self._o, final_json.encode() if final_json else None))
        finally:
            self.close()

    # ---- a bound model: the library drives whole iterations -------------------------------

    def bind(self, pull_early: bool | None = None, shuffle: bool = False, seed: int = 0,
             iterations: int = -1) -> None:
        """bind hands the library the model's iterations (ordo_bind): it keeps each tensor's
        value and gradient buffer (value_buffer, grad_buffer), asks for each iteration's values
        in the plan's order and pushes each gradient when grad_ready says it is complete, on
        the path the plan names (flat, merged, host groups). pull_early None: the conf's."""
        if pull_early is None:
            _check(lib.ordo_bind(self._ptr(), None))
            return
        opts = _capi.BindOpts(int(pull_early), int(shuffle), seed, iterations, 0)
        _check(lib.ordo_bind(self._ptr(), ctypes.byref(opts)))

    def unbind(self) -> None:
        """unbind stops the library's thread; the key-level calls work again."""
        _check(lib.ordo_unbind(self._ptr()))

    def value_buffer(self, tensor: int) -> Any:
        """value_buffer is tensor's value buffer (a ctypes float array over the library's
        memory, valid until unbind; numpy.ctypeslib.as_array or torch.frombuffer wrap it)."""
        p = lib.ordo_value_buffer(self._ptr(), tensor)
        if not p:
            raise OrdoError(-1, "ordo: value_buffer: not bound, or no such tensor")
        return (ctypes.c_float * self.numel(tensor)).from_address(ctypes.addressof(p.contents))

    def grad_buffer(self, tensor: int) -> Any:
        """grad_buffer is where tensor's gradient is computed so that its push copies nothing."""
        p = lib.ordo_grad_buffer(self._ptr(), tensor)
        if not p:
            raise OrdoError(-1, "ordo: grad_buffer: not bound, or no such tensor")
        return (ctypes.c_float * self.numel(tensor)).from_address(ctypes.addressof(p.contents))

    def bound_init(self, values: list[Any] | None = None) -> None:
        """bound_init sends the initial values (rank 0's count; the servers keep the first):
        values[t] for every tensor t (numel float32 values each, copied before it returns;
        ordo_bound_init_from), or with values None what is in the value buffers, which host
        groups' shared values refuse (only the library writes them: pass values)."""
        if values is None:
            _check(lib.ordo_bound_init(self._ptr()))
            return
        n = len(self.tensors())
        if len(values) != n:
            raise ValueError(f"ordo: bound_init: {len(values)} value buffers for {n} tensors")
        ptrs = (ctypes.c_void_p * max(n, 1))(
            *[buffer_address(v, self.numel(t), writable=False) for t, v in enumerate(values)])
        _check(lib.ordo_bound_init_from(self._ptr(), ctypes.cast(ptrs, ctypes.c_void_p)))

    def iter_begin(self, iteration: int) -> None:
        """iter_begin asks for the values of iteration that are not here yet."""
        _check(lib.ordo_iter_begin(self._ptr(), iteration))

    def next_arrival(self, timeout_ms: int = -1) -> tuple[int, int, int]:
        """next_arrival takes the oldest value's arrival: (tensor, iteration, time in ns)."""
        a = _capi.Arrival()
        _check(lib.ordo_next_arrival(self._ptr(), ctypes.byref(a), timeout_ms))
        return a.tensor, a.iter, a.t_ns

    def grad_ready(self, tensor: int, iteration: int) -> None:
        """grad_ready hands over tensor's gradient of iteration, complete in its grad_buffer."""
        _check(lib.ordo_grad_ready(self._ptr(), tensor, iteration))

    def iter_end(self, iteration: int, timeout_ms: int = -1) -> None:
        """iter_end ends iteration: its gradient buffers free again (pushes acknowledged; in
        host groups summed in the group, the owners' pushes may go on) and its values in."""
        _check(lib.ordo_iter_end(self._ptr(), iteration, timeout_ms))

    def pull_values(self, iteration: int, timeout_ms: int = -1) -> None:
        """pull_values brings every tensor's value after iteration updates."""
        _check(lib.ordo_pull_values(self._ptr(), iteration, timeout_ms))
    # ---- the batch service: a shared epoch ------------------------------------------------

    def batches(self, dataset_size: int, batch: int, samples: int = 0, seed: int = 0,
                shuffle: bool = True) -> None:
        """batches describes the data set to the cluster's batch service ([sync] batches):
        dataset_size samples, batch per batch, samples in all (0: no end), the shuffle seed.
        Every worker passes the same values."""
        _check(lib.ordo_batches(self._ptr(), dataset_size, batch, samples, seed & (2**63 - 1),
                                1 if shuffle else 0))
        self._batch_room = (ctypes.c_int64 * batch)()

    def next_batch(self, epoch: int = -1, timeout_ms: int = -1) -> list[int] | None:
        """next_batch returns this worker's next batch of sample indices from the batch
        service, or None when epoch (-1: any) has no batch left or the run's samples are all
        handed out (end_of_run tells which). OrdoError NOTSUP: the service is off."""
        room = getattr(self, "_batch_room", None)
        if room is None:
            raise OrdoError(_capi.ERR_INVAL, "ordo: next_batch before batches()")
        count = ctypes.c_int(0)
        rc = _check(lib.ordo_next_batch(self._ptr(), epoch, room, len(room),
                                        ctypes.byref(count), timeout_ms))
        self.end_of_run = rc == _capi.BATCH_END_OF_RUN
        if rc:
            return None
        return list(room[:count.value])
