"""_capi: loads libordo.so and declares the C API of include/ordo/ordo.h for ctypes.

Where the library comes from, first match wins: the ORDO_LIBRARY environment variable (a
path to libordo.so*), the build tree of the repository this package sits in
(build/client/libordo.so.0), then the system's library path (an installed libordo.so.0).
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

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
    "ordo_replan": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_int]),
    "ordo_tensor_priority": (ctypes.c_int, [_P, ctypes.c_int]),
    "ordo_batches": (ctypes.c_int, [_P, ctypes.c_int64, ctypes.c_int, ctypes.c_int64,
                                    ctypes.c_uint64, ctypes.c_int]),
    "ordo_next_batch": (ctypes.c_int, [_P, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                                       ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
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
    repo = Path(__file__).resolve().parent.parent.parent
    found.append(str(repo / "build" / "client" / "libordo.so.0"))
    found.append("libordo.so.0")
    return found


def load() -> ctypes.CDLL:
    """load opens libordo and declares every function's types; it raises OSError naming every
    place it looked when none works."""
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib
    raise OSError("ordo: cannot load libordo: tried " + "; ".join(tried) +
                  " (build it with scripts/build.sh, or set ORDO_LIBRARY)")


lib = load()
