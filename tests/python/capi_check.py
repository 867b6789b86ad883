"""capi_check: compares the Python binding's ctypes declarations with include/ordo/ordo.h.

scripts/ordo_header.py's header_prototypes parses the header's `ORDO_API` prototypes (and its
typedefs and struct bodies); problems lists, one line per function, where the binding's table
(_capi._SIGNATURES) differs from them or from the functions the library exports. A C type
matches a ctypes type of the same width and signedness; a pointer matches c_void_p (an address)
or POINTER of a matching type, except that char pointers are c_char_p (ctypes turns them into
bytes); a struct matches a ctypes.Structure whose fields match; a function pointer matches a
CFUNCTYPE of matching types.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
# header_prototypes is test_capi's too
from ordo_header import SCALARS, CType, Header, Prototype, header_prototypes  # noqa: E402, F401

# the C types ctypes folds into one class (c_int64 is c_long on LP64): compare these
_CANON = {ctypes.c_byte: "i8", ctypes.c_ubyte: "u8", ctypes.c_char: "char", ctypes.c_bool: "bool",
          ctypes.c_float: "f32", ctypes.c_double: "f64"}


def _canon(t: type) -> str:
    """_canon names a ctypes scalar by width and signedness ("i32", "u64", "f64")."""
    if t in _CANON:
        return _CANON[t]
    try:
        signed = t(-1).value < 0
    except TypeError:  # not a number (c_wchar)
        return t.__name__
    return f"{'i' if signed else 'u'}{8 * ctypes.sizeof(t)}"


def _resolve(t: CType, h: Header) -> CType:
    """_resolve follows typedefs down to a scalar, a struct, "void" or an opaque name."""
    seen = 0
    while t.base in h.typedefs and t.base not in h.structs and seen < 32:
        inner = h.typedefs[t.base]
        t = CType(inner.base, inner.depth + t.depth, inner.fn)
        seen += 1
    return t


def _ctypes_name(t: object) -> str:
    return "None" if t is None else getattr(t, "__name__", repr(t))


def mismatch(c: CType, py: object, h: Header, ret: bool = False) -> str | None:
    """mismatch returns why the ctypes type py does not match the C type c, or None."""
    c = _resolve(c, h)
    want = str(c).strip()
    got = _ctypes_name(py)
    if c.fn is not None:
        if py is ctypes.c_void_p:
            return None
        if not (isinstance(py, type) and issubclass(py, ctypes._CFuncPtr)):
            return f"{want} needs a CFUNCTYPE or c_void_p, not {got}"
        why = mismatch_fn(c.fn, py._restype_, list(py._argtypes_), h)
        return f"callback {why}" if why else None
    if c.depth == 0:
        if c.base == "void":
            return None if py is None else f"void needs None, not {got}"
        if c.base in h.structs:
            return _struct_mismatch(c.base, py, h)
        if c.base not in SCALARS:
            return f"{want}: a type the checker does not know (add it to capi_check.SCALARS)"
        if not (isinstance(py, type) and issubclass(py, ctypes._SimpleCData)) or \
                py in (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_wchar_p):
            return f"{want} needs a ctypes scalar, not {got}"
        if _canon(SCALARS[c.base]) != _canon(py):
            return f"{want} is {_canon(SCALARS[c.base])}, {got} is {_canon(py)}"
        return None
    pointee = CType(c.base, c.depth - 1)
    if c.base == "char" and c.depth == 1:
        ok = py is ctypes.c_char_p or (not ret and _is_pointer(py) and py._type_ is ctypes.c_char)
        return None if ok else f"{want} needs c_char_p, not {got}"
    if py is ctypes.c_void_p:
        return None
    if _is_pointer(py):
        why = mismatch(pointee, py._type_, h)
        return f"{want}: pointee {why}" if why else None
    return f"{want} needs c_void_p or POINTER(...), not {got}"


def _is_pointer(py: object) -> bool:
    return isinstance(py, type) and issubclass(py, ctypes._Pointer)


def _struct_mismatch(name: str, py: object, h: Header) -> str | None:
    """_struct_mismatch compares a struct body with a ctypes.Structure's _fields_."""
    if not (isinstance(py, type) and issubclass(py, ctypes.Structure)):
        return f"struct {name} needs a ctypes.Structure, not {_ctypes_name(py)}"
    fields = h.structs[name]
    got = list(py._fields_)
    if [f for f, _ in fields] != [f for f, *_ in got]:
        return (f"struct {name} has fields {[f for f, _ in fields]}, "
                f"{py.__name__} has {[f for f, *_ in got]}")
    for (fname, ctype), (_, pytype, *_) in zip(fields, got, strict=True):
        why = mismatch(ctype, pytype, h)
        if why:
            return f"struct {name} field {fname}: {why}"
    return None


def mismatch_fn(p: Prototype, restype: object, argtypes: list[object], h: Header) -> str | None:
    """mismatch_fn returns why (restype, argtypes) does not declare p, or None."""
    if len(argtypes) != len(p.params):
        return f"{p.name} takes {len(p.params)} arguments, the binding declares {len(argtypes)}"
    why = mismatch(p.ret, restype, h, ret=True)
    if why:
        return f"{p.name} returns {why}"
    for i, (c, py) in enumerate(zip(p.params, argtypes, strict=True)):
        why = mismatch(c, py, h)
        if why:
            return f"{p.name} argument {i + 1}: {why}"
    return None


def problems(exported: set[str], h: Header,
             signatures: dict[str, tuple[object, list[object]]]) -> list[str]:
    """problems lists, one line each naming the function, every exported function the header
    or the binding lacks, every binding entry nothing exports, and every declaration that does
    not match its prototype (with the prototype)."""
    out = []
    for name in sorted(exported - h.prototypes.keys()):
        out.append(f"{name}: exported by libordo but not an ORDO_API prototype of ordo.h")
    for name in sorted(exported - signatures.keys()):
        where = f" ({h.prototypes[name]})" if name in h.prototypes else ""
        out.append(f"{name}: exported but not declared in python/ordo/_capi.py "
                   f"_SIGNATURES{where}")
    for name in sorted(signatures.keys() - exported):
        out.append(f"{name}: declared in _SIGNATURES but libordo does not export it")
    for name in sorted(signatures.keys() & h.prototypes.keys()):
        restype, argtypes = signatures[name]
        why = mismatch_fn(h.prototypes[name], restype, list(argtypes), h)
        if why:
            out.append(f"{name}: {why} (ordo.h: {h.prototypes[name]})")
    return out
