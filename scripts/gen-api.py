#!/usr/bin/env python3
"""gen-api.py: the public API's one source is include/ordo/ordo.h; this writes the rest from it.

    gen-api.py --map OUT       the linker version script libordo.so is linked with: exactly
                               the header's ORDO_API functions (CMake runs it at build time)
    gen-api.py --python OUT    the Python binding's ctypes declarations (python/ordo/_ordo_h.py:
                               the header's structs, callback types and the table SIGNATURES)
    gen-api.py --check         fails, naming the file, when python/ordo/_ordo_h.py is not what
                               --python writes (ctest api.generated)

A function added to the header is therefore written once: the build exports it, and
`scripts/gen-api.py --python python/ordo/_ordo_h.py` declares it for the binding. Plain Python 3.

C types become ctypes types by these rules: a scalar the ctypes type of its spelling; `char *`
c_char_p (bytes); `void *`, an opaque handle's pointer and a float or double pointer parameter
(a buffer passed by address; an array of buffers too) c_void_p; another scalar's pointer, and
a float pointer that is returned, POINTER of it; a struct of the header a ctypes.Structure
named after it (ordo_bind_opts_t: BindOpts), and its pointer POINTER of that; a
function-pointer typedef a CFUNCTYPE (ordo_op_times_fn: OpTimesFn).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from ordo_header import SCALARS, CType, Header, header_prototypes

SRC = Path(__file__).resolve().parents[1]
HEADER = SRC / "include" / "ordo" / "ordo.h"
PYTHON_OUT = SRC / "python" / "ordo" / "_ordo_h.py"
WIDTH = 100

# ctypes' name of each C scalar spelling
CTYPES = {spelling: f"ctypes.{t.__name__}" for spelling, t in SCALARS.items()}
CTYPES.update({"int64_t": "ctypes.c_int64", "uint64_t": "ctypes.c_uint64",
               "int32_t": "ctypes.c_int32", "uint32_t": "ctypes.c_uint32",
               "int16_t": "ctypes.c_int16", "uint16_t": "ctypes.c_uint16",
               "int8_t": "ctypes.c_int8", "uint8_t": "ctypes.c_uint8",
               "size_t": "ctypes.c_size_t", "ssize_t": "ctypes.c_ssize_t"})


def py_name(c_name: str) -> str:
    """py_name names a header type in Python: ordo_bind_opts_t -> BindOpts."""
    stem = c_name.removeprefix("ordo_").removesuffix("_t")
    return "".join(part.capitalize() for part in stem.split("_"))


def resolve(t: CType, h: Header) -> CType:
    """resolve follows scalar and opaque typedefs (ordo_handle_t -> int64_t); a struct or a
    function-pointer typedef stays by its name."""
    for _ in range(32):
        inner = h.typedefs.get(t.base)
        if inner is None or t.base in h.structs or inner.fn is not None:
            return t
        t = CType(inner.base, inner.depth + t.depth, inner.fn)
    raise ValueError(f"typedef loop at {t.base}")


def ctype(t: CType, h: Header, ret: bool = False) -> str:
    """ctype writes the ctypes expression of C type t (a parameter's, or the return's)."""
    if t.fn is not None:
        raise ValueError(f"{t}: declare a function pointer with a typedef")
    t = resolve(t, h)
    if t.base in h.typedefs and h.typedefs[t.base].fn is not None:  # a callback typedef
        if t.depth:
            raise ValueError(f"{t}: a pointer to a callback")
        return py_name(t.base)
    if t.depth == 0:
        if t.base == "void":
            return "None"
        if t.base in h.structs:
            return py_name(t.base)
        if t.base not in CTYPES:
            raise ValueError(f"{t}: a C type gen-api.py does not know (ordo_header.SCALARS)")
        return CTYPES[t.base]
    if t.base in ("float", "double") and not ret:
        return "ctypes.c_void_p"  # a buffer (or an array of them), passed by its address
    if t.depth == 1:
        if t.base == "char":
            return "ctypes.c_char_p"
        if t.base == "void" or (t.base not in CTYPES and t.base not in h.structs):
            return "ctypes.c_void_p"  # an address, or an opaque handle (ordo_t *)
    return f"ctypes.POINTER({ctype(CType(t.base, t.depth - 1), h)})"


def wrap(head: str, items: list[str], tail: str, indent: int) -> list[str]:
    """wrap writes head + items joined by ", " + tail, on lines of at most WIDTH columns."""
    one = head + ", ".join(items) + tail
    if len(one) <= WIDTH:
        return [one]
    lines, cur, pad = [], head, " " * indent
    for i, item in enumerate(items):
        piece = item + (", " if i < len(items) - 1 else tail)
        if len(cur) + len(piece.rstrip()) > WIDTH and cur.strip():
            lines.append(cur.rstrip())
            cur = pad
        cur += piece
    lines.append(cur.rstrip())
    return lines


def version_script(h: Header) -> str:
    """version_script is the linker version script exporting exactly h's functions."""
    lines, cur = [], "   "
    for name in h.prototypes:
        if len(cur) + len(name) + 2 > WIDTH:
            lines.append(cur)
            cur = "   "
        cur += f" {name};"
    lines.append(cur)
    return ("/* api.map: generated by scripts/gen-api.py from include/ordo/ordo.h: the symbols\n"
            " * libordo.so exports, exactly the header's ORDO_API functions. Version node ORDO_0\n"
            " * is the 0.x series. */\n"
            "ORDO_0 {\n  global:\n" + "\n".join(lines) + "\n  local: *;\n};\n")


def python_module(h: Header) -> str:
    """python_module is python/ordo/_ordo_h.py: h's structs, callbacks and SIGNATURES."""
    out = ['"""_ordo_h: include/ordo/ordo.h for ctypes, generated by scripts/gen-api.py.',
           "",
           "Do not edit it: regenerate it after changing the header,",
           "    python3 scripts/gen-api.py --python python/ordo/_ordo_h.py",
           "(ctest api.generated fails until then).",
           '"""',
           "from __future__ import annotations",
           "",
           "import ctypes",
           ""]
    seen = set()
    for name, fields in h.structs.items():
        alias = h.typedefs.get(name)
        if alias is not None and alias.base in h.structs:  # the struct tag of a typedef
            continue
        if name in seen:
            continue
        seen.add(name)
        out += ["", f"class {py_name(name)}(ctypes.Structure):", f'    """{name}"""', ""]
        items = [f'("{f}", {ctype(t, h)})' for f, t in fields]
        out += wrap("    _fields_ = [", items, "]", 16)
        out.append("")
    for name, t in h.typedefs.items():
        if t.fn is None:
            continue
        args = [ctype(t.fn.ret, h, ret=True)] + [ctype(p, h) for p in t.fn.params]
        out += ["", f"# {name}: {t.fn}"]
        out += wrap(f"{py_name(name)} = ctypes.CFUNCTYPE(", args, ")", 4)
    out += ["", "# name: (restype, argtypes), in the header's order", "SIGNATURES = {"]
    for name, p in h.prototypes.items():
        args = [ctype(a, h) for a in p.params]
        head = f'    "{name}": ({ctype(p.ret, h, ret=True)}, ['
        out += wrap(head, args, "]),", len(head))
    out.append("}")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--header", type=Path, default=HEADER)
    ap.add_argument("--map", type=Path, metavar="OUT", help="write the linker version script")
    ap.add_argument("--python", type=Path, metavar="OUT", help="write the ctypes declarations")
    ap.add_argument("--check", action="store_true",
                    help=f"fail when {PYTHON_OUT.relative_to(SRC)} is not up to date")
    args = ap.parse_args()
    if not (args.map or args.python or args.check):
        ap.error("nothing to do: give --map, --python or --check")
    try:
        h = header_prototypes(args.header)
        if not h.prototypes:
            raise ValueError("no ORDO_API prototypes")
        text = python_module(h)
        script = version_script(h)
    except (OSError, ValueError) as e:
        print(f"gen-api.py: {args.header}: {e}", file=sys.stderr)
        return 1
    if args.map:
        args.map.write_text(script)
    if args.python:
        args.python.write_text(text)
    if args.check:
        have = PYTHON_OUT.read_text() if PYTHON_OUT.exists() else ""
        if have != text:
            diff = difflib.unified_diff(have.splitlines(), text.splitlines(),
                                        str(PYTHON_OUT.relative_to(SRC)), "ordo.h", lineterm="")
            print("\n".join(list(diff)[:60]))
            print(f"gen-api.py: {PYTHON_OUT.relative_to(SRC)} differs from what "
                  f"{args.header.name} declares: run scripts/gen-api.py --python "
                  f"{PYTHON_OUT.relative_to(SRC)}", file=sys.stderr)
            return 1
        print(f"gen-api.py: {PYTHON_OUT.relative_to(SRC)} declares the {len(h.prototypes)} "
              f"functions of {args.header.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
