"""ordo_header: reads include/ordo/ordo.h's public surface: its ORDO_API prototypes, typedefs
and struct bodies (header_prototypes). scripts/gen-api.py writes the library's export list and
the Python binding's ctypes declarations from it; tests/python/capi_check.py checks the
binding against it. Plain Python 3 (ctypes is the standard library's): the C build uses it.
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
