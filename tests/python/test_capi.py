"""test_capi: the binding's ctypes table (python/ordo/_capi.py _SIGNATURES) against the library.

Every ORDO_API function of include/ordo/ordo.h (and every function `nm -D` lists in the built
libordo.so.0, whose exports the build generates from the header) is declared in _SIGNATURES
(python/ordo/_ordo_h.py, which scripts/gen-api.py generates) with the argument count and types
of its prototype, as capi_check, written apart from the generator, reads them; nothing else is;
the checker fails on wrong declarations. `import ordo` (and `import ordo.torch`) work before
libordo is built: the first call that needs the library raises naming every place it looked.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from capi_check import Header, header_prototypes, problems
from ordo import _capi

SRC = Path(os.environ.get("ORDO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
HEADER = SRC / "include" / "ordo" / "ordo.h"
LIBRARY = Path(os.environ.get("ORDO_LIBRARY", SRC / "build" / "client" / "libordo.so.0"))


def nm_exports(lib: Path) -> set[str]:
    """nm_exports lists the functions lib defines and exports (nm -D --defined-only)."""
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[2].split("@")[0] for line in out.splitlines()
            if len(line.split()) == 3 and line.split()[1] == "T"}


@pytest.fixture(scope="module")
def header() -> Header:
    return header_prototypes(HEADER)


def test_every_function_of_ordo_h_is_declared_as_it_says(header: Header):
    bad = problems(set(header.prototypes), header, _capi._SIGNATURES)
    assert not bad, "the binding differs from ordo.h:\n" + "\n".join(bad)


def test_every_function_the_built_library_exports_is_declared_as_ordo_h_says(header: Header):
    if not LIBRARY.exists():
        pytest.skip(f"libordo is not built ({LIBRARY}; scripts/build.sh)")
    if not shutil.which("nm"):
        pytest.skip("no nm (binutils) to list the library's symbols")
    exported = nm_exports(LIBRARY)
    bad = problems(exported, header, _capi._SIGNATURES)
    assert not bad, f"the binding differs from {LIBRARY} and ordo.h:\n" + "\n".join(bad)


def test_the_header_reads_as_expected(header: Header):
    """Guards the parser itself: a few prototypes read back exactly."""
    assert len(header.prototypes) >= 30
    assert str(header.prototypes["ordo_push"]) == \
        "int ordo_push(ordo_t *, int, float *, int, ordo_handle_t *)"
    assert str(header.prototypes["ordo_version"]) == "char * ordo_version(void)"
    assert header.typedefs["ordo_handle_t"].base == "int64_t"
    assert [f for f, _ in header.structs["ordo_update_t"]] == \
        ["kind", "lr", "momentum", "weight_decay"]


# ---- the checker fails where it should ---------------------------------------------------

def _with(name: str, restype: object = ..., argtypes: list | None = None,
          drop: bool = False) -> dict:
    """a copy of _SIGNATURES with name's declaration changed (or dropped)"""
    sigs = dict(_capi._SIGNATURES)
    if drop:
        del sigs[name]
        return sigs
    r, a = sigs[name]
    sigs[name] = (r if restype is ... else restype, a if argtypes is None else argtypes)
    return sigs


def _problems(header: Header, sigs: dict) -> list[str]:
    return problems(set(header.prototypes), header, sigs)


P, INT, INT64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64


@pytest.mark.parametrize("name,sigs_of,words", [
    ("ordo_push", lambda: _with("ordo_push", drop=True), "not declared"),
    ("ordo_tensor_numel", lambda: _with("ordo_tensor_numel", restype=INT), "returns int64_t"),
    ("ordo_wait", lambda: _with("ordo_wait", argtypes=[P, INT, INT]), "argument 2: int64_t"),
    ("ordo_set", lambda: _with("ordo_set", argtypes=[P, P, ctypes.c_char_p]),
     "argument 2: char * needs c_char_p"),
    ("ordo_rank", lambda: _with("ordo_rank", argtypes=[P, INT]), "takes 1 arguments"),
    ("ordo_abort", lambda: _with("ordo_abort", restype=INT), "void needs None"),
    ("ordo_declare", lambda: _with("ordo_declare",
                                   argtypes=[P, ctypes.c_char_p, INT64, ctypes.POINTER(INT64)]),
     "argument 4: int *: pointee int is i32"),
    ("ordo_broadcast", lambda: _with("ordo_broadcast", argtypes=[P, P, INT, INT, INT]),
     "argument 3: size_t"),
    ("ordo_no_such_call", lambda: {**_capi._SIGNATURES, "ordo_no_such_call": (INT, [])},
     "libordo does not export it"),
])
def test_a_wrong_declaration_fails_naming_the_function(header: Header, name: str, sigs_of,
                                                       words: str):
    bad = _problems(header, sigs_of())
    assert len(bad) == 1, bad
    assert bad[0].startswith(f"{name}: ") and words in bad[0], bad[0]


def test_a_struct_with_a_wrong_field_fails(header: Header):
    class Narrow(ctypes.Structure):
        _fields_ = [("kind", ctypes.c_int), ("lr", ctypes.c_float),
                    ("momentum", ctypes.c_double), ("weight_decay", ctypes.c_double)]

    bad = _problems(header, _with("ordo_declare_update",
                                  argtypes=[P, INT, ctypes.POINTER(Narrow)]))
    assert len(bad) == 1 and "ordo_declare_update" in bad[0] and "field lr" in bad[0], bad


def test_the_parser_reads_callbacks_comments_and_odd_layouts(tmp_path: Path):
    h = tmp_path / "x.h"
    h.write_text("""
#define ORDO_API __attribute__((visibility("default")))
/* ORDO_API int ordo_in_a_comment(void); */
typedef struct ordo ordo_t;
typedef int64_t ordo_handle_t;
typedef enum { A, B } ordo_mode_t;
typedef void (*ordo_cb_t)(void *ctx, int tensor, const float *v);
ORDO_API int ordo_on(ordo_t *o,
                     void (*cb)(void *ctx, int tensor),
                     void *ctx);
ORDO_API int ordo_on_typed(ordo_t *o, ordo_cb_t cb);
ORDO_API unsigned long long ordo_count(const ordo_t *, ordo_mode_t m, float v[]);
""")
    hd = header_prototypes(h)
    assert sorted(hd.prototypes) == ["ordo_count", "ordo_on", "ordo_on_typed"]
    cb = ctypes.CFUNCTYPE(None, P, INT)
    cb3 = ctypes.CFUNCTYPE(None, P, INT, ctypes.POINTER(ctypes.c_float))
    good = {"ordo_on": (INT, [P, cb, P]), "ordo_on_typed": (INT, [P, cb3]),
            "ordo_count": (ctypes.c_ulonglong, [P, INT, ctypes.POINTER(ctypes.c_float)])}
    exported = set(good)
    assert problems(exported, hd, good) == []
    wrong = {**good, "ordo_on": (INT, [P, ctypes.CFUNCTYPE(None, P, INT64), P]),
             "ordo_count": (ctypes.c_ulonglong, [P, ctypes.c_uint, P])}
    bad = problems(exported, hd, wrong)
    assert len(bad) == 2, bad
    assert bad[0].startswith("ordo_count: ") and "argument 2: int is i32, c_uint is u32" in bad[0]
    assert bad[1].startswith("ordo_on: ") and "callback" in bad[1]


# ---- the library is opened at the first call ---------------------------------------------

def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_import_works_without_the_library_and_the_first_call_says_where_it_looked(
        tmp_path: Path):
    """A copy of the package outside the repository, ORDO_LIBRARY naming a missing file: the
    import works; the first call raises OSError naming the three places looked in."""
    try:
        ctypes.CDLL("libordo.so.0")
        pytest.skip("a libordo.so.0 is on the system's library path: the lookup would find it")
    except OSError:
        pass
    pkg = tmp_path / "copy"
    shutil.copytree(SRC / "python" / "ordo", pkg / "python" / "ordo",
                    ignore=shutil.ignore_patterns("__pycache__"))
    missing = tmp_path / "nowhere" / "libordo.so.0"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update(PYTHONPATH=str(pkg / "python"), ORDO_LIBRARY=str(missing))
    torch = "import ordo.torch\n" if _has_torch() else ""
    r = _run(f"""
import ordo
{torch}assert ordo.__file__.startswith({str(pkg)!r}), ordo.__file__
try:
    ordo.version()
except OSError as e:
    print(e)
else:
    raise SystemExit("ordo.version() worked without a library")
""", env)
    assert r.returncode == 0, r.stdout + r.stderr
    msg = r.stdout
    for where in (f"ORDO_LIBRARY={missing} (no such file)",
                  f"{pkg / 'build' / 'client' / 'libordo.so.0'} (no such file)",
                  "libordo.so.0 on the system's library path"):
        assert where in msg, f"{where!r} is not in the error: {msg}"


def test_the_library_is_opened_at_the_first_call_not_at_import():
    if not LIBRARY.exists():
        pytest.skip(f"libordo is not built ({LIBRARY}; scripts/build.sh)")
    env = {**os.environ, "ORDO_LIBRARY": str(LIBRARY),
           "PYTHONPATH": str(SRC / "python")}
    r = _run("""
import ordo
from ordo import _capi
assert _capi._Lazy._lib is None, "libordo was opened at import"
print(ordo.version())
assert _capi._Lazy._lib is not None
""", env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip(), "ordo.version() printed nothing"


def _has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None
