#!/usr/bin/env bash
# layering_selftest: scripts/check-layering.py fails, naming file, line and both folders, on
# a tree where a role folder includes another role's header, where common/ includes core/,
# where a public header includes an internal one, where client/ includes a worker/ header,
# where worker/ includes a client/ header instead of the public API, and where a folder
# includes another folder's *_internal.h, and where server/ outside server/consistency/ tests
# the consistency mode (a comparison with ORDO_SYNC_*, backup workers by their count, a model's
# row named); and
# passes on a tree that keeps the rule (the same files without those includes and tests, a
# model's file in server/consistency/ that tests its mode, a comment that names one).
set -euo pipefail
src=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
check="python3 $src/scripts/check-layering.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp"/{common,core,planner,client,server/consistency,worker,include/ordo}
printf '#include "common/log.h"\n' > "$tmp/common/log.c"; : > "$tmp/common/log.h"
printf '#include "common/log.h"\n#include "core/cost_internal.h"\n' > "$tmp/core/model.c"
: > "$tmp/core/cost_internal.h"
printf '#include "core/model.h"\n' > "$tmp/planner/merge.c"
printf '#include "core/model.h"\n#include "common/log.h"\n#include "client/ps_internal.h"\n' \
  > "$tmp/client/ps.c"
: > "$tmp/client/ps.h"; : > "$tmp/client/ps_internal.h"; : > "$tmp/core/model.h"
printf '#include "ordo/ordo.h"\n#include "core/model.h"\n' > "$tmp/worker/executor.c"
: > "$tmp/worker/executor.h"
printf '#include <stddef.h>\n' > "$tmp/include/ordo/ordo.h"
printf 'static int late(int mode, int backup)\n{\n    return mode == ORDO_SYNC_BSP && backup > 0;\n}\n' \
  > "$tmp/server/consistency/backup.c"
printf '/* under asp (mode == ORDO_SYNC_ASP) and\n * with backup > 0 */\nint f(void);\n' \
  > "$tmp/server/server_data.c"
$check "$tmp" > "$tmp/out" || fail "a clean tree was refused: $(cat "$tmp/out")"

printf '#include "server/store.h"\n#include "worker/executor.h"\n' > "$tmp/server/store.c"
: > "$tmp/server/store.h"
printf '#include "common/log.h"\n#include "core/model.h"\n' > "$tmp/common/log.c"
printf '#include "client/ps.h"\n' > "$tmp/include/ordo/ordo.h"
printf '#include "core/model.h"\n#include "worker/executor.h"\n' > "$tmp/client/push.c"
printf '#include "ordo/ordo.h"\n#include "client/ps.h"\n' > "$tmp/worker/executor.c"
printf '#include "core/model.h"\n#include "core/cost_internal.h"\n' > "$tmp/planner/merge.c"
printf '/* asp */\nint f(const S *s)\n{\n    if (s->conf.backup > 0) return 1;\n    return ordo_store_sync_mode(s->store) != ORDO_SYNC_ASP;\n}\n' \
  > "$tmp/server/server_data.c"
printf 'bool f(const ordo__sync_model_t *m)\n{\n    return m == ordo__sync_model_of(0, 0) || m == &ordo__sync_ssp;\n}\n' \
  > "$tmp/server/replica.c"
rc=0; $check "$tmp" > "$tmp/out" || rc=$?
[ "$rc" = 1 ] || fail "exit $rc on a tree with violations (want 1)"
want() { grep -qF "$1" "$tmp/out" || fail "not reported: $1
got: $(cat "$tmp/out")"; }
want 'server/store.c:2: server/ includes "worker/executor.h" of another role folder'
want 'common/log.c:2: common/ includes "core/model.h" of a higher layer'
want 'include/ordo/ordo.h:1: public header includes "client/ps.h"'
want 'client/push.c:2: client/ includes "worker/executor.h" of a higher layer'
want 'worker/executor.c:2: worker/ includes "client/ps.h": worker/ reaches client/ only through the public API'
want 'planner/merge.c:2: planner/ includes "core/cost_internal.h": an *_internal.h is for its own folder only'
want 'server/server_data.c:4: a test of the consistency mode (backup > 0) outside server/consistency/'
want 'server/server_data.c:5: a test of the consistency mode (!= ORDO_SYNC_ASP) outside server/consistency/'
grep -q 'consistency/backup.c' "$tmp/out" && fail "a model's own file was refused: $(cat "$tmp/out")"
want 'server/replica.c:3: a test of the consistency mode (ordo__sync_ssp) outside server/consistency/'
grep -q '9 violations' "$tmp/out" || fail "wrong count: $(cat "$tmp/out")"
echo "layering_selftest: ok"
