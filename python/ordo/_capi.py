"""_capi: loads libordo.so and declares the C API of include/ordo/ordo.h for ctypes.

Where the library comes from, first match wins: the ORDO_LIBRARY environment variable (a
path to libordo.so*), the package itself (ordo/_native/lib/libordo.so.0, where the wheel puts
it: pip install), the build tree of the repository this package sits in
(build/client/libordo.so.0), then the system's library path (an installed libordo.so.0).
The library is opened at the first call that needs it, not at import: `import ordo` works
before libordo is built, and that first call raises OSError naming every place looked in.
"""
from __future__ import annotations

import ctypes
import os
from importlib import resources
from pathlib import Path
from typing import Any

# The error codes of ordo.h (ORDO_ERR_*), by name.
ERRORS = {
    -1: "INVAL", -2: "NOMEM", -3: "PROTO", -4: "IO", -5: "TIMEDOUT", -6: "CLOSED",
    -7: "NOTFOUND", -8: "PEERDEAD", -9: "AUTH", -10: "RANGE", -11: "FORMAT", -12: "AGAIN",
    -13: "FULL", -14: "NOTSUP", -15: "ABORT",
}
ERR_INVAL = -1
ERR_TIMEDOUT = -5
ERR_NOTSUP = -14
ERR_AGAIN = -12

# The update rules of ordo.h (ORDO_UPDATE_*).
UPDATE_CONF, UPDATE_SGD, UPDATE_AVERAGE = 0, 1, 2


class Update(ctypes.Structure):
    """Update is ordo_update_t: a tensor's update rule (kind, lr, momentum, weight_decay)."""

    _fields_ = [("kind", ctypes.c_int), ("lr", ctypes.c_double), ("momentum", ctypes.c_double),
                ("weight_decay", ctypes.c_double)]


class BindOpts(ctypes.Structure):
    """BindOpts is ordo_bind_opts_t: how a bound model's iterations move (ordo_bind)."""

    _fields_ = [("pull_early", ctypes.c_int), ("shuffle", ctypes.c_int),
                ("seed", ctypes.c_uint64), ("iterations", ctypes.c_int64),
                ("forward_only", ctypes.c_int)]


class Arrival(ctypes.Structure):
    """Arrival is ordo_arrival_t: tensor's value of iteration iter arrived at t_ns."""

    _fields_ = [("tensor", ctypes.c_int), ("iter", ctypes.c_int64), ("t_ns", ctypes.c_int64)]


# ordo_op_times_fn: int (*)(void *ctx, char **json)
OpTimesFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p))

_P = ctypes.c_void_p
_H = ctypes.c_int64
_SIGNATURES = {
    # name: (restype, argtypes)
    "ordo_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "ordo_last_error": (ctypes.c_char_p, []),
    "ordo_version": (ctypes.c_char_p, []),
    "ordo_new": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P)]),
    "ordo_set": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p]),
    "ordo_declare": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_int64,
                                    ctypes.POINTER(ctypes.c_int)]),
    "ordo_declare_update": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(Update)]),
    "ordo_join": (ctypes.c_int, [_P]),
    "ordo_leave": (ctypes.c_int, [_P]),
    "ordo_abort": (None, [_P, ctypes.c_char_p]),
    "ordo_destroy": (None, [ctypes.POINTER(_P)]),
    "ordo_rank": (ctypes.c_int, [_P]),
    "ordo_size": (ctypes.c_int, [_P]),
    "ordo_num_servers": (ctypes.c_int, [_P]),
    "ordo_num_tensors": (ctypes.c_int, [_P]),
    "ordo_tensor_numel": (ctypes.c_int64, [_P, ctypes.c_int]),
    "ordo_tensor_name": (ctypes.c_char_p, [_P, ctypes.c_int]),
    "ordo_tensor_version": (ctypes.c_int64, [_P, ctypes.c_int]),
    "ordo_init": (ctypes.c_int, [_P, ctypes.c_int, _P]),
    "ordo_push": (ctypes.c_int, [_P, ctypes.c_int, _P, ctypes.c_int, ctypes.POINTER(_H)]),
    "ordo_pull": (ctypes.c_int, [_P, ctypes.c_int, _P, ctypes.c_int, ctypes.POINTER(_H)]),
    "ordo_pushpull": (ctypes.c_int, [_P, ctypes.c_int, _P, _P, ctypes.c_int,
                                     ctypes.POINTER(_H)]),
    "ordo_wait": (ctypes.c_int, [_P, _H, ctypes.c_int]),
    "ordo_test": (ctypes.c_int, [_P, _H]),
    "ordo_wait_all": (ctypes.c_int, [_P, ctypes.c_int]),
    "ordo_barrier": (ctypes.c_int, [_P, ctypes.c_int]),
    "ordo_broadcast": (ctypes.c_int, [_P, _P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]),
    "ordo_interrupt": (None, [_P]),
    "ordo_step": (ctypes.c_int, [_P, ctypes.c_int, ctypes.c_double]),
    "ordo_declare_occasional": (ctypes.c_int, [_P, ctypes.c_int]),
    "ordo_declare_compression": (ctypes.c_int, [_P, ctypes.c_int, ctypes.c_char_p]),
    "ordo_replan": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_int]),
    "ordo_tensor_priority": (ctypes.c_int, [_P, ctypes.c_int]),
    "ordo_new_args": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                     ctypes.POINTER(_P)]),
    "ordo_set_op_times": (ctypes.c_int, [_P, OpTimesFn, _P]),
    "ordo_leave_with": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "ordo_run_dir": (ctypes.c_char_p, [_P]),
    "ordo_resume_iter": (ctypes.c_int64, [_P]),
    "ordo_members": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                                    ctypes.POINTER(ctypes.c_int64)]),
    "ordo_server_load": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                                        ctypes.POINTER(ctypes.c_int)]),
    "ordo_report": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "ordo_trace_span": (None, [_P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                               ctypes.c_int64, ctypes.c_int64, ctypes.c_char_p]),
    "ordo_trace_track": (None, [_P, ctypes.c_int, ctypes.c_char_p]),
    "ordo_save_state": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "ordo_load_state": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "ordo_bind": (ctypes.c_int, [_P, ctypes.POINTER(BindOpts)]),
    "ordo_unbind": (ctypes.c_int, [_P]),
    "ordo_value_buffer": (ctypes.POINTER(ctypes.c_float), [_P, ctypes.c_int]),
    "ordo_grad_buffer": (ctypes.POINTER(ctypes.c_float), [_P, ctypes.c_int]),
    "ordo_bound_init": (ctypes.c_int, [_P]),
    "ordo_bound_init_from": (ctypes.c_int, [_P, _P]),
    "ordo_iter_begin": (ctypes.c_int, [_P, ctypes.c_int64]),
    "ordo_next_arrival": (ctypes.c_int, [_P, ctypes.POINTER(Arrival), ctypes.c_int]),
    "ordo_grad_ready": (ctypes.c_int, [_P, ctypes.c_int, ctypes.c_int64]),
    "ordo_iter_end": (ctypes.c_int, [_P, ctypes.c_int64, ctypes.c_int]),
    "ordo_iter_bytes": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_int64),
                                       ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p,
                                       ctypes.c_size_t]),
    "ordo_pull_values": (ctypes.c_int, [_P, ctypes.c_int64, ctypes.c_int]),
    "ordo_batches": (ctypes.c_int, [_P, ctypes.c_int64, ctypes.c_int, ctypes.c_int64,
                                    ctypes.c_uint64, ctypes.c_int]),
    "ordo_next_batch": (ctypes.c_int, [_P, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                                       ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
    "ordo_servers_version": (ctypes.c_int64, [_P]),
    "ordo_commit_state": (ctypes.c_int, [_P, ctypes.c_void_p, ctypes.c_size_t]),
    "ordo_peer_state": (ctypes.c_int, [_P, ctypes.c_void_p, ctypes.c_size_t,
                                       ctypes.POINTER(ctypes.c_size_t),
                                       ctypes.POINTER(ctypes.c_int64), ctypes.c_int]),
}

# ordo_next_batch's outcomes beside a batch (0)
BATCH_END_OF_EPOCH = 1
BATCH_END_OF_RUN = 2


def _candidates() -> list[str]:
    """_candidates lists where libordo is looked for, in order."""
    found = []
    env = os.environ.get("ORDO_LIBRARY")
    if env:
        found.append(env)
    packaged = resources.files(__package__).joinpath("_native", "lib", "libordo.so.0")
    if isinstance(packaged, Path):  # an installed package (not one inside a zip)
        found.append(str(packaged))
    repo = Path(__file__).resolve().parent.parent.parent
    found.append(str(repo / "build" / "client" / "libordo.so.0"))
    found.append("libordo.so.0")
    return found


def _where(path: str) -> str:
    """_where says which place of _candidates path is, for the error of load."""
    if path == os.environ.get("ORDO_LIBRARY"):
        return f"ORDO_LIBRARY={path}"
    if os.sep not in path:
        return f"{path} on the system's library path"
    return path


def load() -> ctypes.CDLL:
    """load opens libordo and declares every function's types; it raises OSError naming every
    place it looked when none works."""
    tried = [] if os.environ.get("ORDO_LIBRARY") else ["ORDO_LIBRARY (not set)"]
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{_where(path)} (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{_where(path)} ({e})")
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise OSError(f"ordo: {path} does not export {name}: the library is older than "
                              "this binding (rebuild it with scripts/build.sh)") from None
            fn.restype = restype
            fn.argtypes = argtypes
        return lib
    raise OSError("ordo: cannot load libordo; looked in: " + "; ".join(tried) +
                  ". Build it with scripts/build.sh, or set ORDO_LIBRARY to a libordo.so.")


class _Lazy:
    """_Lazy stands for libordo (ordo._capi.lib) and opens it, with load, at the first function
    looked up on it; until it succeeds, every lookup tries again and raises load's OSError."""

    _lib: ctypes.CDLL | None = None

    def __getattr__(self, name: str) -> Any:
        if _Lazy._lib is None:
            _Lazy._lib = load()
        return getattr(_Lazy._lib, name)


lib = _Lazy()
