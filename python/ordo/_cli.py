"""_cli: the console scripts of the package (ordo-launch, ordo-scheduler, ...): each runs the
program of that name that the wheel carries in ordo/_native/bin, in place of this process.

Installed from the wheel, the programs sit in the package; in the repository (the package
imported from python/), they are the build tree's (build/bin) and the scripts' (scripts/).
ordo-launch finds the daemons beside itself, so the packaged launcher starts the packaged
daemons.
"""
from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path

_SCRIPTS = {"ordo-launch", "ordo-slurm", "ordo-srun-exec"}


def native_dir() -> Path | None:
    """native_dir returns the folder of the package's programs (ordo/_native/bin), or None
    when the package carries none (imported from the repository's python/)."""
    d = resources.files(__package__).joinpath("_native", "bin")
    return d if isinstance(d, Path) and d.is_dir() else None


def program(name: str) -> Path:
    """program returns the path of the program name (e.g. "ordo-server").

    Args:
        name: the program's name, as its console script is called.

    Returns:
        The path of the packaged program, or in a repository checkout the built binary
        (build/bin) or the script (scripts/).

    Raises:
        FileNotFoundError: when neither exists (a checkout that is not built yet).
    """
    tried = []
    d = native_dir()
    if d is not None:
        tried.append(d / name)
    repo = Path(__file__).resolve().parent.parent.parent
    tried.append(repo / ("scripts" if name in _SCRIPTS else "build/bin") / name)
    for p in tried:
        if os.access(p, os.X_OK):
            return p
    raise FileNotFoundError(f"ordo: no program {name}: tried " + ", ".join(map(str, tried)) +
                            " (pip install the package, or build with scripts/build.sh)")


def run(name: str) -> None:
    """run replaces this process with the program name, given this process's arguments.

    Args:
        name: the program's name.

    Raises:
        SystemExit: with status 127 and one line on stderr when the program is missing.
    """
    try:
        path = program(name)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        raise SystemExit(127) from None
    os.execv(path, [str(path), *sys.argv[1:]])


def launch() -> None:
    """launch is the console script ordo-launch (a whole cluster; docs/running.md)."""
    run("ordo-launch")


def slurm() -> None:
    """slurm is the console script ordo-slurm (a cluster in a Slurm allocation)."""
    run("ordo-slurm")


def scheduler() -> None:
    """scheduler is the console script ordo-scheduler."""
    run("ordo-scheduler")


def server() -> None:
    """server is the console script ordo-server."""
    run("ordo-server")


def worker() -> None:
    """worker is the console script ordo-worker."""
    run("ordo-worker")


def plan() -> None:
    """plan is the console script ordo-plan (transfer orders and merge plans)."""
    run("ordo-plan")


def bench() -> None:
    """bench is the console script ordo-bench (benchmarks)."""
    run("ordo-bench")


def keygen() -> None:
    """keygen is the console script ordo-keygen (CURVE keys; docs/security.md)."""
    run("ordo-keygen")
