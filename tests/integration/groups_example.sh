#!/usr/bin/env bash
# examples/groups.c (built here against libordo, public API only) as each worker of a
# [worker] command cluster whose workers declare the model: it binds its tensors
# (ordo_bind) and checks every value it takes. The same program runs flat, with merged pushes,
# and in host groups (4 workers, 2 per group, shared memory), where the members' gradients are
# summed inside the group and one owner per tensor pushes and pulls; every value is exact in
# each, and with groups the servers count one pusher per group.
source "$(dirname "$0")/lib.sh"
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=$(cd "$BIN/.." && pwd)
cc -std=c11 -O1 -I"$root/include" -I"$build/include" "$root/examples/groups.c" \
  -L"$build/client" -l:libordo.so.0 -Wl,-rpath,"$build/client" -lm -o "$T/groups" \
  > "$T/cc.log" 2>&1 || fail "cannot build examples/groups.c: $(cat "$T/cc.log")"
cc -std=c11 -O1 -I"$root/include" -I"$build/include" "$root/tests/integration/groups_values.c" \
  -L"$build/client" -l:libordo.so.0 -Wl,-rpath,"$build/client" -lm -o "$T/groups_values" \
  > "$T/cc.log" 2>&1 || fail "cannot build groups_values.c: $(cat "$T/cc.log")"

cat > "$T/conf.ini" <<INI
[cluster]
servers = 2
workers = 2
[optimizer]
lr = 1
momentum = 0
weight_decay = 0
aggregate = sum
[fault]
timeout_ms = 3000
heartbeat_ms = 200
startup_ms = 30000
[output]
dir = $T/runs
[worker]
command = $T/groups
INI
# launch NAME ARGS...: a run of the conf with ARGS; every worker must check its values
launch() {
  local name=$1 workers=$2
  shift 2
  (cd "$T" && timeout 180 bash "$root/scripts/ordo-launch" conf.ini --bin "$BIN" \
    --cluster.workers="$workers" "$@") > "$T/$name.log" 2>&1 ||
    fail "$name: the run failed: $(tail -n 20 "$T/$name.log")"
  [ "$(grep -c 'tensors.* values checked, 0 wrong' "$T/$name.log")" = "$workers" ] ||
    fail "$name: not every worker checked its values: $(grep 'groups:' "$T/$name.log" | head)"
}
launch flat 2
ok "flat: 2 workers, every value exact"
launch merged 2 --push.mode=merged --push.merge=all
grep -q "merged pushes: 4 keys in 1 groups" "$T/merged.log" || fail "merged: the workers did not push merged"
ok "merged pushes: every value exact"
launch groups 4 --cluster.local_size=2 --intra.backend=shm
grep -q "intra: 2 groups of 2 workers (shm" "$T/groups.log" ||
  fail "groups: the plan has no host groups: $(grep -i intra "$T/groups.log" | head -3)"
ok "host groups (2 x 2, shm): every value exact"
# where the value buffers are, and that they hold iteration t's values (groups_values.c); the
# values are also pulled between iterations (ordo_pull_values(t + 1), then
# ordo_iter_begin(t + 1)): no member waits forever for a value its group has moved past
values() {
  local mode=$1 want=$2
  launch "values-$mode" 4 --cluster.local_size=2 --intra.backend=shm --intra.values="$mode" \
    --worker.command="$T/groups_values $mode"
  [ "$(grep -c "groups_values: worker .* $want of 3 value buffers in the group's segment, .* 0 wrong" \
    "$T/values-$mode.log")" = 4 ] ||
    fail "values = $mode: $(grep 'groups_values' "$T/values-$mode.log" | head)"
}
values shared 3
grep -q "values shared" "$T/values-shared.log" || fail "values = shared: not in the path's log line"
ok "values = shared: every value buffer is the group's segment, exact on arrival, after the forward pass and between iterations; ordo_bound_init refused"
values copy 0
grep -q "values copied" "$T/values-copy.log" || fail "values = copy: not in the path's log line"
ok "values = copy: every value buffer is the worker's own, every value exact"
ls /dev/shm 2>/dev/null | grep -q ordo && fail "an ordo segment stayed in /dev/shm: $(ls /dev/shm)"
ok "nothing of ordo left in /dev/shm"

