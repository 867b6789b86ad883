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
# values pulled between iterations (ordo_pull_values(t + 1), then ordo_iter_begin(t + 1)):
# every value exact, and no member waits forever for a value its group has moved past
launch values-copy 4 --cluster.local_size=2 --intra.backend=shm --worker.command="$T/groups_values copy"
[ "$(grep -c "groups_values: worker .* 0 of 3 value buffers in the group's segment, .* 0 wrong" \
  "$T/values-copy.log")" = 4 ] || fail "values between iterations: $(grep 'groups_values' "$T/values-copy.log" | head)"
ok "values pulled between iterations: every value exact"
ls /dev/shm 2>/dev/null | grep -q ordo && fail "an ordo segment stayed in /dev/shm: $(ls /dev/shm)"
ok "nothing of ordo left in /dev/shm"

