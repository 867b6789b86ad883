#!/usr/bin/env bash
# [worker] command through scripts/ordo-launch: examples/hello_ordo.c (built here against
# libordo) is each worker of a conf with no [model], so the workers' declarations are the
# model (trainer = declared by default); every pulled value is checked. Then the clear
# failures: workers that declare different tensors (Python one-liners over python/ordo with
# the system's python3), a worker command that exits 0 before joining, one that exits 3.
source "$(dirname "$0")/lib.sh"
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=$(cd "$BIN/.." && pwd)
passed=0
cc -std=c11 -O1 -I"$root/include" -I"$build/include" "$root/examples/hello_ordo.c" \
  -L"$build/client" -l:libordo.so.0 -Wl,-rpath,"$build/client" -o "$T/hello_ordo" \
  > "$T/cc.log" 2>&1 || fail "cannot build examples/hello_ordo.c"

# conf WORKER_COMMAND: a conf without [model] whose workers are WORKER_COMMAND
conf() {
  cat > "$T/conf.ini" <<INI
[cluster]
servers = 2
workers = 2
[optimizer]
lr = 1
aggregate = sum
[fault]
timeout_ms = 2000
heartbeat_ms = 200
startup_ms = 20000
[output]
dir = $T/runs
[worker]
command = $1
INI
}
launch() { (cd "$T" && timeout 120 bash "$root/scripts/ordo-launch" conf.ini --bin "$BIN") > "$T/launch.log" 2>&1; }

conf "$T/hello_ordo"
launch || fail "a cluster of hello_ordo workers failed"
[ "$(grep -c 'values checked, 0 wrong' "$T/launch.log")" = 2 ] || fail "hello_ordo did not check its values"
grep -q "model declared by the workers: 3 tensors" "$T/launch.log" || fail "the model was not declared"
ok "two hello_ordo workers as [worker] command, model declared by them, every value right"
passed=$((passed + 1))

# the environment a worker command gets
conf "echo \"env \$ORDO_WORKER_RANK \$ORDO_LOCAL_RANK/\$ORDO_LOCAL_SIZE \$ORDO_MODEL_TRAINER \$ORDO_CONF\"; exec $T/hello_ordo"
launch || fail "the environment run failed"
grep -q "\[worker 1\] env 1 1/2 declared $T/conf.ini" "$T/launch.log" || fail "worker 1's environment is wrong"
ok "ORDO_WORKER_RANK, ORDO_LOCAL_RANK/SIZE, ORDO_MODEL_TRAINER and ORDO_CONF reach the command"
passed=$((passed + 1))

cat > "$T/declare.py" <<'PY'
import os
import ordo
c = ordo.Client()
c.declare("w", 4)
c.declare("fc.bias", 20 if os.environ["ORDO_WORKER_RANK"] == "0" else 10)
c.join()
PY
conf "PYTHONPATH=$root/python ORDO_LIBRARY=$build/client/libordo.so.0 python3 $T/declare.py"
launch && fail "workers declaring different tensors did not fail"
grep -q 'worker 1 declared tensor 1 "fc.bias" of 10 elements, worker 0 "fc.bias" of 20' "$T/launch.log" ||
  fail "the mismatch is not named"
ok "different declarations abort the run naming the worker and the tensor"
passed=$((passed + 1))

conf "[ \"\$ORDO_WORKER_RANK\" = 1 ] && exit 0; exec $T/hello_ordo"
launch && fail "a worker that quit early did not fail the launch"
grep -q "worker 1 (command: .*) exited with status 0 before the run ended" "$T/launch.log" ||
  fail "the early exit is not named"
ok "a worker command that exits 0 before the run ended stops the cluster, named"
passed=$((passed + 1))

conf "[ \"\$ORDO_WORKER_RANK\" = 1 ] && exit 3; exec $T/hello_ordo"
launch && fail "a worker that failed did not fail the launch"
grep -q "worker 1 (command: .*) exited with status 3" "$T/launch.log" || fail "the failure is not named"
ok "a worker command that exits 3 stops the cluster, named"
passed=$((passed + 1))
echo "$passed passed, 0 failed"
