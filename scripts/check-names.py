#!/usr/bin/env python3
"""check-names: one naming rule, read from the built objects.

Public names are ordo_ and are declared in include/ordo/ordo.h; every other external symbol
is ordo__ (or static). This reads the symbol table (nm) of every library and binary of a
build and fails on a global ordo_ symbol the header does not declare, naming the symbol and
the files that define it.

usage: check-names.py SOURCE_DIR BUILD_DIR
       check-names.py --self-test SOURCE_DIR   (plants an undeclared ordo_ symbol in an
                                               object of its own and expects a failure)
"""
import os
import re
import subprocess
import sys
import tempfile

PUBLIC = re.compile(r"\b(ordo_[a-z0-9][a-z0-9_]*)\s*\(")


def declared(header):
    """the functions include/ordo/ordo.h declares (comments stripped first)"""
    with open(header, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return set(PUBLIC.findall(text))


def is_object(path):
    """a library or an ELF executable"""
    if path.endswith((".a", ".so")) or ".so." in path:
        return True
    if not os.access(path, os.X_OK) or os.path.isdir(path):
        return False
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def objects(build):
    """every library and binary under the build folder (the wheel's staging copy excluded)"""
    for root, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if d not in ("CMakeFiles", "wheel", "_deps")]
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path) and is_object(path):
                yield path


def globals_of(path):
    """the global defined symbols of one file (nm -D for shared objects' dynamic table too)"""
    out = subprocess.run(["nm", "--defined-only", "-g", path], capture_output=True, text=True)
    if out.returncode != 0 and "no symbols" not in out.stderr:
        raise SystemExit(f"check-names: nm {path}: {out.stderr.strip()}")
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            yield parts[2]


def check(source, build):
    public = declared(os.path.join(source, "include", "ordo", "ordo.h"))
    bad, files = {}, 0
    for path in objects(build):
        files += 1
        for sym in globals_of(path):
            if sym.startswith("ordo_") and not sym.startswith("ordo__") and sym not in public:
                bad.setdefault(sym, []).append(os.path.relpath(path, build))
    if files == 0:
        print(f"check-names: no library or binary under {build} (build first)")
        return 1
    for sym in sorted(bad):
        where = ", ".join(sorted(bad[sym])[:3]) + (" ..." if len(bad[sym]) > 3 else "")
        print(f"{sym}: a global ordo_ symbol include/ordo/ordo.h does not declare "
              f"(defined in {where}); make it static or name it ordo__")
    if bad:
        print(f"check-names: {len(bad)} undeclared ordo_ symbol(s) in {files} files")
        return 1
    print(f"check-names: {files} libraries and binaries, every global ordo_ symbol is one of "
          f"the {len(public)} that include/ordo/ordo.h declares")
    return 0


def self_test(source):
    """the check must refuse a planted symbol and pass the same object without it"""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "planted.c")
        with open(src, "w") as f:
            f.write("int ordo_planted_internal(void) { return 1; }\n"
                    "int ordo__fine_internal(void) { return 2; }\n"
                    "static int ordo_static_is_fine(void) { return 3; }\n"
                    "int ordo_version_use(void) { return ordo_static_is_fine(); }\n")
        lib = os.path.join(tmp, "libplanted.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", lib, src], check=True)
        out = subprocess.run([sys.executable, __file__, source, tmp], capture_output=True,
                             text=True)
        text = out.stdout + out.stderr
        want = ["ordo_planted_internal: a global ordo_ symbol", "ordo_version_use:"]
        if out.returncode == 0 or any(w not in text for w in want) or "ordo__fine" in text \
                or "ordo_static_is_fine" in text:
            print("check-names self-test: the planted symbols were not refused as expected:")
            print(text)
            return 1
    print("check-names self-test: a planted undeclared ordo_ symbol is refused, ordo__ and "
          "static ones pass")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        sys.exit(self_test(sys.argv[2]))
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(check(sys.argv[1], sys.argv[2]))
