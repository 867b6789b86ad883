#!/usr/bin/env bash
# layering_selftest: scripts/check-layering.py fails, naming file, line and both folders, on
# a tree where a role folder includes another role's header, where common/ includes core/,
# and where a public header includes an internal one; and passes on a tree that keeps the
# rule (the same files without those includes).
set -euo pipefail
src=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
check="python3 $src/scripts/check-layering.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp"/{common,core,server,worker,include/ordo}
printf '#include "common/log.h"\n' > "$tmp/common/log.c"; : > "$tmp/common/log.h"
printf '#include "common/log.h"\n' > "$tmp/core/model.c"
printf '#include "core/model.h"\n#include "common/log.h"\n' > "$tmp/worker/ps.c"
: > "$tmp/worker/ps.h"; : > "$tmp/core/model.h"
printf '#include <stddef.h>\n' > "$tmp/include/ordo/ordo.h"
$check "$tmp" > "$tmp/out" || fail "a clean tree was refused: $(cat "$tmp/out")"

printf '#include "server/store.h"\n#include "worker/ps.h"\n' > "$tmp/server/store.c"
: > "$tmp/server/store.h"
printf '#include "common/log.h"\n#include "core/model.h"\n' > "$tmp/common/log.c"
printf '#include "worker/ps.h"\n' > "$tmp/include/ordo/ordo.h"
rc=0; $check "$tmp" > "$tmp/out" || rc=$?
[ "$rc" = 1 ] || fail "exit $rc on a tree with violations (want 1)"
grep -q '^server/store.c:2: server/ includes "worker/ps.h" of another role folder' "$tmp/out" ||
  fail "no role-folder violation reported: $(cat "$tmp/out")"
grep -q '^common/log.c:2: common/ includes "core/model.h" of a higher layer' "$tmp/out" ||
  fail "no higher-layer violation reported: $(cat "$tmp/out")"
grep -q '^include/ordo/ordo.h:1: public header includes "worker/ps.h"' "$tmp/out" ||
  fail "no public-header violation reported: $(cat "$tmp/out")"
grep -q '3 violations' "$tmp/out" || fail "wrong count: $(cat "$tmp/out")"
echo "layering_selftest: ok"
