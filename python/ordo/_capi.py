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

# The header's structs (Update: ordo_update_t, BindOpts: ordo_bind_opts_t, Arrival:
# ordo_arrival_t), its callback type (OpTimesFn: ordo_op_times_fn) and every function's ctypes
# declaration (_SIGNATURES), generated from include/ordo/ordo.h by scripts/gen-api.py.
from ordo._ordo_h import SIGNATURES as _SIGNATURES
from ordo._ordo_h import Arrival, BindOpts, OpTimesFn, Update  # noqa: F401 (the binding's)

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

_H = ctypes.c_int64  # ordo_handle_t

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
