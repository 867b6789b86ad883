"""capi_check: compares the Python binding's ctypes declarations with include/ordo/ordo.h.

header_prototypes parses the header's `ORDO_API` prototypes (and its typedefs and struct
bodies); problems lists, one line per function, where the binding's table (_capi._SIGNATURES)
differs from them or from the functions the library exports. A C type matches a ctypes type of
the same width and signedness; a pointer matches c_void_p (an address) or POINTER of a matching
type, except that char pointers are c_char_p (ctypes turns them into bytes); a struct matches a
ctypes.Structure whose fields match; a function pointer matches a CFUNCTYPE of matching types.
"""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field
from pathlib import Path

# C scalar types by their spelling (after `const`, `signed` and extra spaces are gone)
SCALARS: dict[str, type] = {
    "char": ctypes.c_char, "unsigned char": ctypes.c_ubyte, "short": ctypes.c_short,
    "unsigned short": ctypes.c_ushort, "int": ctypes.c_int, "unsigned": ctypes.c_uint,
    "unsigned int": ctypes.c_uint, "long": ctypes.c_long, "unsigned long": ctypes.c_ulong,
    "long long": ctypes.c_longlong, "unsigned long long": ctypes.c_ulonglong,
    "int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8, "int16_t": ctypes.c_int16,
    "uint16_t": ctypes.c_uint16, "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t,
    "ssize_t": ctypes.c_ssize_t, "float": ctypes.c_float, "double": ctypes.c_double,
    "bool": ctypes.c_bool, "_Bool": ctypes.c_bool, "signed char": ctypes.c_byte,
    "signed": ctypes.c_int, "signed int": ctypes.c_int, "short int": ctypes.c_short,
    "long int": ctypes.c_long, "unsigned long int": ctypes.c_ulong,
}

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


@dataclass
class CType:
    """CType is one C type of the header: base (a scalar's spelling, "void", a struct's or an
    opaque type's name, or "fn" for a function pointer) and its pointer depth."""

    base: str
    depth: int = 0
    fn: Prototype | None = None

    def __str__(self) -> str:
        if self.fn:
            return str(self.fn)
        return f"{self.base} {'*' * self.depth}" if self.depth else self.base


@dataclass
class Prototype:
    """Prototype is one function of the header: its name, return type and parameters."""

    name: str
    ret: CType
    params: list[CType] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.ret} {self.name}({', '.join(str(p) for p in self.params) or 'void'})"


@dataclass
class Header:
    """Header is what header_prototypes read: the prototypes by name, the typedefs
    (name -> the CType they stand for), and the struct bodies (name -> [(field, CType)])."""

    prototypes: dict[str, Prototype]
    typedefs: dict[str, CType]
    structs: dict[str, list[tuple[str, CType]]]


def _strip(text: str) -> str:
    """_strip removes comments and preprocessor lines (with their continuations)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)


def _split_top(text: str, sep: str) -> list[str]:
    """_split_top splits text at sep where it is outside parentheses and braces."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_decl(decl: str, named: bool = True) -> tuple[str, CType]:
    """parse_decl reads one declaration ("const char *name", "int64_t n", "void (*cb)(int)",
    "float x[]") into its name ("" when unnamed) and CType; raises ValueError otherwise."""
    decl = " ".join(decl.split())
    m = re.fullmatch(r"(.+?)\(\s*\*\s*(\w*)\s*\)\s*\((.*)\)", decl)
    if m:  # a function pointer
        ret = parse_decl(m.group(1), named=False)[1]
        params = _params(m.group(3))
        return m.group(2), CType("fn", 1, Prototype(m.group(2) or "(*)", ret, params))
    array = decl.endswith("]")
    decl = re.sub(r"\[[^\]]*\]$", "", decl).strip()
    depth = decl.count("*") + array
    words = [w for w in decl.replace("*", " ").split() if w not in ("const", "volatile",
                                                                    "restrict")]
    name = ""
    if named and len(words) > 1 and " ".join(words) not in SCALARS:
        name = words.pop()
    words = [w for w in words if w not in ("struct", "enum")]
    if not words:
        raise ValueError(f"cannot read the declaration '{decl}'")
    return name, CType(" ".join(words), depth)


def _params(text: str) -> list[CType]:
    """_params reads a parameter list; "void" or nothing is no parameters."""
    text = text.strip()
    if text in ("", "void"):
        return []
    if "..." in text:
        raise ValueError(f"variadic parameters ({text}) cannot be declared for ctypes")
    return [parse_decl(p)[1] for p in _split_top(text, ",")]


def header_prototypes(path: Path) -> Header:
    """header_prototypes reads the ORDO_API prototypes, typedefs and struct bodies of path."""
    text = _strip(path.read_text())
    structs: dict[str, list[tuple[str, CType]]] = {}
    typedefs: dict[str, CType] = {}
    for m in re.finditer(r"typedef\s+(struct|enum)\s*(\w*)\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        kind, tag, body, alias = m.groups()
        if kind == "enum":
            typedefs[alias] = CType("int")
            continue
        fields = []
        for member in _split_top(body, ";"):
            if "[" in member:
                raise ValueError(f"{alias}: array members ({member}) are not checked yet")
            base, *names = _split_top(member, ",")
            first, ctype = parse_decl(base)
            fields.append((first, ctype))
            for extra in names:  # "double lr, momentum": the later names share the base type
                stars = extra.count("*")
                fields.append((extra.replace("*", "").strip(),
                               CType(ctype.base, ctype.depth - base.count("*") + stars)))
        structs[alias] = fields
        if tag:
            structs[tag] = fields
            typedefs[tag] = CType(alias)
    for m in re.finditer(r"typedef\s+([^;{}]+?)\s*;", text):
        name, ctype = parse_decl(m.group(1))
        if name and name not in typedefs:
            typedefs[name] = ctype
    prototypes = {}
    for m in re.finditer(r"\bORDO_API\s+([^;{}]*?)\b(ordo_\w+)\s*\(([^;{}]*)\)\s*;", text):
        ret = parse_decl(m.group(1), named=False)[1]
        prototypes[m.group(2)] = Prototype(m.group(2), ret, _params(m.group(3)))
    return Header(prototypes, typedefs, structs)


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


def map_exports(path: Path) -> set[str]:
    """map_exports reads the global symbols of a linker version script (client/api.map)."""
    text = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
    names: set[str] = set()
    for block in re.findall(r"global\s*:(.*?)(?:local\s*:|\})", text, re.S):
        names.update(n.strip() for n in block.split(";") if n.strip())
    return names
