#!/usr/bin/env bash
# build.sh: configure and build ordo into build/ (binaries in build/bin/).
# Extra arguments go to cmake's configure step, e.g. -DORDO_SANITIZE=address,undefined.
set -euo pipefail
cd "$(dirname "$0")/.."
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake -S . -B build -DORDO_WERROR=$werror "$@" >/dev/null
cmake --build build -j"$(nproc)"
