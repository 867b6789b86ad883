#!/usr/bin/env bash
# fault.scheduler = restart (docs/fault.md): the mlp (Fashion-MNIST; skips without it), 2
# servers, 2 workers, bsp. The test SIGKILLs the scheduler in mid-run and starts a new one at
# the same address; the servers and workers go on training, register again, and the run
# ends as the fault-free one: every process exits 0, params.bin is byte for byte the
# fault-free run's, every server took as many pushes as in the fault-free run (none lost,
# none applied twice), metrics.jsonl holds every worker-iteration once and summary.json
# counts "scheduler_restarts": 1. Printed: the time from the kill to the new scheduler's
# rebuild, and the longest pause between two iterations of a worker around it. Then the same
# kill under scripts/ordo-launch, which starts the scheduler again itself (bsp). PART=refuse
# runs the rest instead: the kill under fault.scheduler = stop (the servers and workers exit
# 3, as before), a worker killed while no scheduler runs under fault.worker = abort (the new
# scheduler aborts the run naming it), a new scheduler whose plan differs, which refuses the
# members naming the field, and a scheduler paused past the timeout, which welcomes its
# members back. SYNC=asp runs the first part under asp (params.bin then differs by timing;
# the push counts not). PART=worker, shrink and grow: with fault.worker = restart, shrink and
# fault.max_workers (each described where it starts). PART=restart-only runs the first part
# without the ordo-launch one (integration.sched_restart_merged: merged pushes, one merge
# group of all tensors; integration.sched_restart_curve with CURVE=1: under security.curve). Arguments go to every process (integration.sched_restart_groups:
# host groups).
source "$(dirname "$0")/lib.sh"
[ "${PART:-}" = grow ] || need_fmnist
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
part=${PART:-restart}
# the parts that kill a worker too run longer: the workers train on while no scheduler runs
iters=${ITERS:-$(case $part in worker | shrink) echo 600 ;; *) echo 400 ;; esac)}
sync=${SYNC:-bsp}
common=(-c "$root/conf/mlp.ini" --model.epochs=0 --model.iterations=$iters --sync.mode=$sync
        --sync.batches=off --fault.timeout_ms=1000 --fault.timeout_max_ms=1000
        --fault.heartbeat_ms=100 --output.dir="$T" --output.progress_every=0
        --output.save_params=true "$@")
names=(server0 server1 worker0 worker1)
# CURVE=1 (integration.sched_restart_curve): every process under security.curve; the new
# scheduler takes the same key pair from the keys folder, and the members' encrypted
# connections to it are made afresh
if [ "${CURVE:-}" = 1 ]; then
  "$BIN/ordo-keygen" "$T/keys" worker > /dev/null || fail "ordo-keygen failed"
  common+=(--security.curve=true --security.keys="$T/keys")
fi

# pushes NAME: the pushes a server took, from its shutdown line
pushes() { sed -n 's/.*shutdown: \([0-9]*\) pushes.*/\1/p' "$T/$1.log"; }
# wait_lines RUN N: until metrics.jsonl has N lines
wait_lines() {
  for _ in $(seq 1 2400); do
    [ -f "$T/$1/metrics.jsonl" ] && [ "$(wc -l < "$T/$1/metrics.jsonl")" -ge "$2" ] && return
    sleep 0.05
  done
  fail "$1: metrics.jsonl never reached $2 lines"
}

if [ "$part" = restart ] || [ "$part" = restart-only ]; then
start_cluster ref 2 2 --fault.scheduler=restart
for n in scheduler "${names[@]}"; do
  finish $n 150
  [ "$st" = 0 ] || fail "fault-free run: $n ended with '$st'"
done
declare -A ref_pushes
for n in server0 server1; do ref_pushes[$n]=$(pushes $n); done
[ ! -e "$T/ref/scheduler.json" ] || fail "fault-free run: RUN/scheduler.json is left after the run"
mv "$T"/*.log "$T/ref/"

start_cluster kill 2 2 --fault.scheduler=restart
ep=$(ready scheduler)
wait_lines kill $((iters / 4))
# a second scheduler at the live one's address: it cannot listen there, and stops
start second "$BIN/ordo-scheduler" "${common[@]}" --output.run=kill --fault.scheduler=restart \
  --cluster.scheduler="$ep"
finish second 30
[ "$st" = 1 ] && grep -q "cannot listen on $ep" "$T/second.log" ||
  fail "a second scheduler at the live one's address ended with '$st': $(cat "$T/second.log")"
ok "a second scheduler at the live one's address stopped: $(grep -o "cannot listen on.*" "$T/second.log")"
wait_lines kill $((iters / 2))  # a quarter of the 2 x iters worker-iterations
at=$(wc -l < "$T/kill/metrics.jsonl")
kill -KILL "${PID[scheduler]}"
read -r kill_ns kill_clock < <(python3 -c 'import time, datetime
print(time.monotonic_ns(), datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3])')
wait "${PID[scheduler]}" 2>/dev/null
mv "$T/scheduler.log" "$T/scheduler-old.log"
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --output.run=kill --fault.scheduler=restart \
  --cluster.scheduler="$ep"
for n in scheduler "${names[@]}"; do
  finish $n 150
  [ "$st" = 0 ] || fail "scheduler killed and restarted: $n ended with '$st', expected 0"
done
grep -q "this scheduler restarts the run as generation 2" "$T/scheduler.log" ||
  fail "the new scheduler did not take the run over"
if [ "$sync" = bsp ]; then # asp's values depend on timing; its push counts do not
  cmp -s "$T/ref/params.bin" "$T/kill/params.bin" || fail "params.bin differs from the fault-free run's"
fi
for n in server0 server1; do
  [ "$(pushes $n)" = "${ref_pushes[$n]}" ] ||
    fail "$n took $(pushes $n) pushes, the fault-free run's ${ref_pushes[$n]}"
done
python3 - "$T/kill" $iters "$kill_ns" <<'PY' || fail "metrics.jsonl or summary.json of the restarted run"
import json, sys
run, iters, kill_ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
seen = sorted((d["worker"], d["iter"]) for d in lines)
want = sorted((w, i) for w in range(2) for i in range(iters))
if seen != want:
    sys.exit(f"metrics.jsonl: {len(lines)} records, want each of the {len(want)} worker-iterations once")
s = json.load(open(f"{run}/summary.json"))
if s.get("scheduler_restarts") != 1 or s.get("iterations") != iters:
    sys.exit(f"summary.json: scheduler_restarts {s.get('scheduler_restarts')}, iterations {s.get('iterations')}")
ends = sorted(d["t_end_ns"] for d in lines if d["worker"] == 0)
after = [e for e in ends if e > kill_ns]
gaps = [b - a for a, b in zip(ends, ends[1:])]
gaps.sort()
around = max((b - a for a, b in zip(ends, ends[1:]) if b > kill_ns and a < kill_ns + 10**10), default=0)
print(f"worker 0: first iteration completed {((after[0] - kill_ns) / 1e6) if after else float('nan'):.0f} ms after the kill; "
      f"longest pause between two of its iterations from the kill on {around / 1e6:.0f} ms "
      f"(median step {gaps[len(gaps) // 2] / 1e6:.1f} ms)")
PY
rebuilt=$(grep -o "every member registered again [0-9]* ms after this scheduler started" "$T/scheduler.log" | grep -o "[0-9]*")
# the log's clock (HH:MM:SS.mmm) of the rebuild's end, from the kill
since_kill=$(python3 - "$kill_clock" "$(grep -m1 "cluster complete: every member" "$T/scheduler.log" | cut -d' ' -f1)" <<'PY'
import sys
def ms(t):
    h, m, s = t.split(":")
    return (int(h) * 3600 + int(m) * 60 + float(s)) * 1000
print(f"{(ms(sys.argv[2]) - ms(sys.argv[1])) % 86400000:.0f}")
PY
)
mv "$T"/*.log "$T/kill/"
ok "$sync: scheduler killed after $at of $((2 * iters)) worker-iterations and restarted: $([ "$sync" = bsp ] && echo "params.bin identical, ") server pushes ${ref_pushes[server0]}/${ref_pushes[server1]} as fault-free, every member registered again ${rebuilt} ms after the new scheduler started, ${since_kill} ms after the kill (fault.timeout_ms 1000)"

if [ "$sync" = bsp ] && [ "$part" = restart ]; then

# the same kill under scripts/ordo-launch: it starts the new scheduler itself
LAUNCH=$root/scripts/ordo-launch
"$LAUNCH" "$root/conf/mlp.ini" --bin "$BIN" --pids "$T/launch.pids" "${common[@]:2}" \
  --fault.scheduler=restart --output.run=launch > "$T/launch.log" 2>&1 &
lpid=$!
wait_lines launch $((iters / 2))
kill -KILL "$(awk '$1=="scheduler" {print $2; exit}' "$T/launch.pids")"
st=timeout
for _ in $(seq 1 2400); do
  if ! kill -0 $lpid 2>/dev/null; then wait $lpid; st=$?; break; fi
  sleep 0.05
done
[ "$st" = 0 ] || fail "ordo-launch: the job ended with '$st' after the scheduler's death: $(tail -n 5 "$T/launch.log")"
grep -q "ordo-launch: the scheduler exited with status 137; starting it again at tcp://" "$T/launch.log" ||
  fail "ordo-launch did not start the scheduler again"
cmp -s "$T/ref/params.bin" "$T/launch/params.bin" || fail "ordo-launch: params.bin differs from the fault-free run's"
ok "ordo-launch started the killed scheduler again; the job exited 0 with the fault-free params.bin"
fi
exit 0
fi

# kill_scheduler: SIGKILL the scheduler (its log kept as scheduler-old.log); $kill_ns the time
kill_scheduler() {
  kill -KILL "${PID[scheduler]}"
  kill_ns=$(python3 -c 'import time; print(time.monotonic_ns())')
  wait "${PID[scheduler]}" 2>/dev/null
  mv "$T/scheduler.log" "$T/scheduler-old.log"
}
# new_scheduler RUN EP ARGS...: a new scheduler at the old one's address
new_scheduler() {
  local run=$1 ep=$2; shift 2
  start scheduler "$BIN/ordo-scheduler" "${common[@]}" --output.run="$run" "$@" --cluster.scheduler="$ep"
}
# new_worker NAME RANK RUN EP ARGS...: a new process for a worker's rank (what ordo-launch does)
new_worker() {
  local name=$1 rank=$2 run=$3 ep=$4; shift 4
  start "$name" "$BIN/ordo-worker" "${common[@]}" --output.run="$run" "$@" --cluster.scheduler="$ep" \
    --cluster.rank="$rank"
}
# wait_log NAME PATTERN: until $T/NAME.log has a line matching PATTERN (60 s)
wait_log() {
  for _ in $(seq 1 1200); do grep -q "$2" "$T/$1.log" 2>/dev/null && return; sleep 0.05; done
  fail "$1 never logged '$2'"
}
# ended NAMES...: each process exited 0
ended() {
  local n
  for n in "$@"; do
    finish "$n" 150
    [ "$st" = 0 ] || fail "$run_now: $n ended with '$st', expected 0"
  done
}
# applied NAME: the pushes a server applied (its pushes less the re-sent ones it left out)
applied() {
  sed -n 's/.*shutdown: \([0-9]*\) pushes.* \([0-9]*\) re-sent pushes left out.*/\1 \2/p' "$T/$1.log" |
    awk '{print $1 - $2}'
}
# summary_is RUN KEY... = VALUE ...: checks of summary.json, e.g. membership.restarts=1
summary_is() {
  python3 - "$T/$1/summary.json" "${@:2}" <<'PY' || fail "$1: summary.json"
import json, sys
s = json.load(open(sys.argv[1]))
for check in sys.argv[2:]:
    key, want = check.split("=")
    v = s
    for k in key.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    if str(v) != want:
        sys.exit(f"summary.json: {key} is {v}, expected {want}")
PY
}
# once RUN WORKERS: no worker-iteration twice in metrics.jsonl; prints how many there are
once() {
  python3 - "$T/$1/metrics.jsonl" <<'PY' || fail "$1: metrics.jsonl"
import json, sys
seen = [(d["worker"], d["iter"]) for d in map(json.loads, open(sys.argv[1]))]
if len(seen) != len(set(seen)):
    sys.exit(f"metrics.jsonl: {len(seen) - len(set(seen))} worker-iterations twice")
print(len(seen))
PY
}
# since_kill NAME PATTERN: ms from $kill_ns to the first line of NAME's log matching PATTERN
since_kill() {
  python3 - "$kill_ns" "$(grep -m1 "$2" "$T/$1.log" | grep -o '[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]*' | head -n 1)" <<'PY'
import datetime, sys, time
now = datetime.datetime.now()
h, m, s = sys.argv[2].split(":")
at = now.replace(hour=int(h), minute=int(m), second=0, microsecond=0) + datetime.timedelta(seconds=float(s))
ago = (now - at).total_seconds()  # the line was written this long ago
print(f"{(time.monotonic_ns() - ago * 1e9 - int(sys.argv[1])) / 1e6:.0f}")
PY
}

# PART=worker: fault.scheduler = restart with fault.worker = restart. (a) the scheduler is
# killed and restarted, then worker 1 (its successor rejoins under the new scheduler); (b)
# worker 1 is paused (SIGSTOP) and the scheduler killed: the new scheduler counts worker 1
# dead (no heartbeat from it), its successor (started only then) takes its rank, and the
# paused process, resumed, is fenced and stops; (c) worker 1 killed while no scheduler runs,
# under ordo-launch, which starts both again itself at once. Each ends with the fault-free
# params.bin and every server applied the fault-free number of pushes.
if [ "$part" = worker ]; then
wf=(--fault.scheduler=restart --fault.worker=restart)
run_now=ref
start_cluster ref 2 2 "${wf[@]}"
ended scheduler "${names[@]}"
declare -A ref_pushes
for n in server0 server1; do ref_pushes[$n]=$(applied $n); done
mv "$T"/*.log "$T/ref/"
# same_run RUN: params.bin and the servers' applied pushes are the fault-free run's
same_run() {
  cmp -s "$T/ref/params.bin" "$T/$1/params.bin" || fail "$1: params.bin differs from the fault-free run's"
  for n in server0 server1; do
    [ "$(applied $n)" = "${ref_pushes[$n]}" ] ||
      fail "$1: $n applied $(applied $n) pushes, the fault-free run ${ref_pushes[$n]}"
  done
}

run_now=a
start_cluster a 2 2 "${wf[@]}"
ep=$(ready scheduler)
wait_lines a 100
kill_scheduler
new_scheduler a "$ep" "${wf[@]}"
wait_log scheduler "cluster complete: every member registered again"
rebuilt=$(since_kill scheduler "cluster complete: every member registered again")
wait_lines a $(( $(wc -l < "$T/a/metrics.jsonl") + 20 ))
kill -KILL "${PID[worker1]}"
kill_ns=$(python3 -c 'import time; print(time.monotonic_ns())')
wait "${PID[worker1]}" 2>/dev/null
new_worker worker1b 1 a "$ep" "${wf[@]}"
ended scheduler server0 server1 worker0 worker1b
same_run a
grep -q "worker 1 .* rejoined at iteration" "$T/scheduler.log" || fail "a: worker 1 did not rejoin"
recovered=$(since_kill scheduler "worker 1 .* finished iteration [0-9]*, [0-9]* ms after its predecessor")
summary_is a scheduler_restarts=1 membership.worker_deaths=1 membership.restarts=1
mv "$T"/*.log "$T/a/"
ok "worker = restart, (a): scheduler killed and restarted (run rebuilt ${rebuilt} ms after the kill), then worker 1 killed and restarted (its successor finished an iteration ${recovered} ms after the kill): params.bin and the servers' applied pushes (${ref_pushes[server0]}/${ref_pushes[server1]}) the fault-free run's; $(once a) of $((2 * iters)) worker-iterations in metrics.jsonl, none twice"

run_now=b
start_cluster b 2 2 "${wf[@]}"
ep=$(ready scheduler)
wait_lines b 100
kill -STOP "${PID[worker1]}"  # to the new scheduler it is dead; to the servers it is not yet
kill_scheduler
new_scheduler b "$ep" "${wf[@]}"
wait_log scheduler "worker 1 did not register again: it died while no scheduler ran"
new_worker worker1b 1 b "$ep" "${wf[@]}"
wait_log scheduler "worker 1 .* finished iteration [0-9]*, [0-9]* ms after its predecessor"
kill -CONT "${PID[worker1]}"  # back: fenced, it must stop without changing a value
finish worker1 60
[ "$st" != 0 ] && [ "$st" != timeout ] || fail "b: the paused worker 1, resumed after its successor took its rank, ended with '$st'"
old_st=$st
ended scheduler server0 server1 worker0 worker1b
same_run b
recovered=$(since_kill scheduler "worker 1 .* finished iteration [0-9]*, [0-9]* ms after its predecessor")
summary_is b scheduler_restarts=1 membership.worker_deaths=1 membership.restarts=1
grep -q '"event":"death","worker":1,' "$T/b/membership.jsonl" || fail "b: membership.jsonl lacks worker 1's death"
fenced=$(grep -h -o "fenced.*\|refused this node.*" "$T/worker1.log" | head -n 1)
within=$(grep -o "registered again within [0-9]* ms" "$T/scheduler.log" | head -n 1)
mv "$T"/*.log "$T/b/"
ok "worker = restart, (b): worker 1 paused, the scheduler killed; the new scheduler counted worker 1 dead (no heartbeat from it; the others $within of its start) and its successor, started after it, went on at the servers' oldest version (first iteration ${recovered} ms after the kill); the paused process, resumed, stopped (status $old_st: ${fenced:-no message}): params.bin and applied pushes the fault-free run's; $(once b) worker-iterations in metrics.jsonl, none twice"

LAUNCH=$root/scripts/ordo-launch
"$LAUNCH" "$root/conf/mlp.ini" --bin "$BIN" --pids "$T/launch.pids" "${common[@]:2}" \
  "${wf[@]}" --output.run=launch > "$T/launch.log" 2>&1 &
lpid=$!
wait_lines launch 100
kill -KILL "$(awk '$1=="scheduler" {print $2; exit}' "$T/launch.pids")"
sleep 0.3
kill -KILL "$(awk '$1=="worker" && $2==1 {print $3; exit}' "$T/launch.pids")"
st=timeout
for _ in $(seq 1 2400); do
  if ! kill -0 $lpid 2>/dev/null; then wait $lpid; st=$?; break; fi
  sleep 0.05
done
[ "$st" = 0 ] || fail "ordo-launch: the job ended with '$st': $(tail -n 5 "$T/launch.log")"
grep -q "starting it again (restart 1/3, fault.worker = restart)" "$T/launch.log" ||
  fail "ordo-launch did not start worker 1 again"
cmp -s "$T/ref/params.bin" "$T/launch/params.bin" || fail "ordo-launch: params.bin differs from the fault-free run's"
summary_is launch scheduler_restarts=1 membership.restarts=1
how="its successor registered after the wait window"
grep -q "a new worker process (pid [0-9]*, rank 1) registers while the run is rebuilt" "$T/launch.log" &&
  how="its successor registered while the run was rebuilt and was kept"
ok "worker = restart, (c): under ordo-launch the scheduler and then worker 1 killed, both started again ($how): exit 0, the fault-free params.bin"
exit 0
fi

# PART=shrink: fault.scheduler = restart with fault.worker = shrink, 3 workers. (a) the
# scheduler is killed and restarted, then worker 2; (b) worker 2 is killed while no scheduler
# runs: the new scheduler takes it out of the run (no heartbeat from it); (c) the same with
# worker 2 only paused, resumed once out of the run: it is fenced and stops. Each run exits 0 with
# the two others, and summary.json counts 1 shrink, 2 workers left and the scheduler's restart.
if [ "$part" = shrink ]; then
wf=(--fault.scheduler=restart --fault.worker=shrink --cluster.workers=3)
names=(server0 server1 worker0 worker1)
for run_now in a b c; do
  start_cluster $run_now 2 3 "${wf[@]}"
  ep=$(ready scheduler)
  wait_lines $run_now 150
  if [ $run_now = a ]; then
    kill_scheduler
    new_scheduler a "$ep" "${wf[@]}"
    wait_log scheduler "cluster complete: every member registered again"
    wait_lines a $(( $(wc -l < "$T/a/metrics.jsonl") + 60 ))
    kill -KILL "${PID[worker2]}"
    kill_ns=$(python3 -c 'import time; print(time.monotonic_ns())')
    what="the scheduler killed and restarted, then worker 2"
    said="the run goes on with 2 workers from iteration"
  else
    kill -"$([ $run_now = b ] && echo KILL || echo STOP)" "${PID[worker2]}"
    kill_scheduler
    new_scheduler $run_now "$ep" "${wf[@]}"
    what="worker 2 killed while no scheduler ran"
    said="worker 2 did not register again: it died while no scheduler ran; the run goes on with 2 workers"
  fi
  if [ $run_now = c ]; then # only paused: once out of the run it is fenced and stops
    wait_log scheduler "$said"
    wait_lines c $(( $(wc -l < "$T/c/metrics.jsonl") + 20 ))
    kill -CONT "${PID[worker2]}"
    finish worker2 60
    [ "$st" != 0 ] && [ "$st" != timeout ] || fail "c: the paused worker 2, resumed after it was taken out of the run, ended with '$st'"
    what="worker 2 paused while no scheduler ran, resumed once out of the run (it stopped, status $st: $(grep -h -o "fenced.*\|refused this node.*" "$T/worker2.log" | head -n 1))"
  fi
  wait "${PID[worker2]}" 2>/dev/null
  ended scheduler "${names[@]}"
  grep -q "$said" "$T/scheduler.log" || fail "$run_now: the new scheduler did not log the shrink ('$said')"
  gone=$(since_kill scheduler "$said")
  summary_is $run_now scheduler_restarts=1 membership.shrinks=1 membership.workers_left=2 \
    membership.worker_deaths=1
  for w in 0 1; do
    n=$(grep -c "\"worker\": *$w," "$T/$run_now/metrics.jsonl")
    [ "$n" = "$iters" ] || fail "$run_now: worker $w reported $n of $iters iterations"
  done
  mv "$T"/*.log "$T/$run_now/"
  ok "worker = shrink, ($run_now): $what: worker 2 taken out ${gone} ms after the kill; exit 0, workers 0 and 1 every iteration, summary 1 shrink, 2 workers left, 1 scheduler restart; $(once $run_now) worker-iterations in metrics.jsonl, none twice"
done
exit 0
fi

# PART=grow: fault.scheduler = restart with fault.max_workers = 4, a [worker] command program
# (tests/integration/grow_values.c, built here against libordo) under ordo-launch: worker 2
# joins (ordo-launch --add-worker), the scheduler is killed and started again, worker 2
# registers again with the others, then worker 3 joins the rebuilt run. Every worker pushes
# rank + 1 each iteration (aggregate = sum, lr = 1), so the final value is minus the sum over
# the iterations of the joined workers' ranks + 1: each worker's final value must be exactly
# that for the iterations membership.jsonl says they joined at (none lost, none twice). Then
# the same program under fault.worker = restart, the scheduler and worker 1 killed.
if [ "$part" = grow ]; then
build=$(cd "$BIN/.." && pwd)
cc -std=c11 -O1 -I"$root/include" -I"$build/include" "$root/tests/integration/grow_values.c" \
  -L"$build/client" -l:libordo.so.0 -Wl,-rpath,"$build/client" -lm -o "$T/grow_values" \
  > "$T/cc.log" 2>&1 || fail "cannot build grow_values.c: $(cat "$T/cc.log")"
giters=${ITERS:-2000}
cat > "$T/grow.ini" <<INI
[cluster]
servers = 2
workers = 2
[model]
trainer = declared
[optimizer]
lr = 1
momentum = 0
weight_decay = 0
aggregate = sum
[sync]
batches = off
[fault]
scheduler = restart
max_workers = 4
timeout_ms = 1000
timeout_max_ms = 1000
heartbeat_ms = 100
[output]
progress_every = 0
[worker]
command = $T/grow_values $giters 3
INI
LAUNCH=$root/scripts/ordo-launch
"$LAUNCH" "$T/grow.ini" --bin "$BIN" --pids "$T/launch.pids" --output.dir="$T" --output.run=grow \
  > "$T/launch.log" 2>&1 &
lpid=$!
run=$T/grow
wait_lines grow 100
"$LAUNCH" --add-worker "$run" > "$T/add2.log" 2>&1 &
add2=$!
wait_log add2 "grow_values: worker 2 starts at iteration"
wait_lines grow $(( $(wc -l < "$run/metrics.jsonl") + 40 ))
kill -KILL "$(awk '$1=="scheduler" {print $2; exit}' "$T/launch.pids")"
kill_ns=$(python3 -c 'import time; print(time.monotonic_ns())')
for _ in $(seq 1 1200); do
  [ "$(grep -c "cluster complete: every member registered again" "$T/launch.log")" -ge 1 ] && break
  sleep 0.05
done
grep -q "\[scheduler\] .*worker 2 (pid [0-9]*) registered again" "$T/launch.log" ||
  fail "worker 2, which joined, did not register again with the new scheduler"
rebuilt=$(since_kill launch "cluster complete: every member registered again" | tail -n 1)
"$LAUNCH" --add-worker "$run" > "$T/add3.log" 2>&1 &
add3=$!
for p in $lpid $add2 $add3; do
  st=timeout
  for _ in $(seq 1 2400); do
    if ! kill -0 "$p" 2>/dev/null; then wait "$p"; st=$?; break; fi
    sleep 0.05
  done
  [ "$st" = 0 ] || fail "grow: process $p (the launcher $lpid, the added workers $add2 $add3) ended with '$st'"
done
res=$(python3 - "$run" "$giters" "$T" <<'PY'

import json, re, sys
run, iters, t = sys.argv[1], int(sys.argv[2]), sys.argv[3]
joins = {d["worker"]: d["iter"] for d in map(json.loads, open(f"{run}/membership.jsonl")) if d["event"] == "join"}
if sorted(joins) != [2, 3]:
    sys.exit(f"membership.jsonl: joins {joins}, expected workers 2 and 3")
want = -sum(sum(r + 1 for r in range(4) if r < 2 or joins[r] <= i) for i in range(iters))
finals = {}
for log in ("launch", "add2", "add3"):
    for m in re.finditer(r"grow_values: worker (\d): final value (-?[0-9.]+)", open(f"{t}/{log}.log").read()):
        finals[int(m.group(1))] = float(m.group(2))
if sorted(finals) != [0, 1, 2, 3] or any(v != want for v in finals.values()):
    sys.exit(f"final values {finals}, expected {want} for each of the 4 workers (joins at {joins})")
s = json.load(open(f"{run}/summary.json"))
if s.get("scheduler_restarts") != 1 or s["membership"]["joins"] != 2 or s["membership"]["workers_left"] != 4:
    sys.exit(f"summary.json: scheduler_restarts {s.get('scheduler_restarts')}, membership {s['membership']}")
print(f"joins at {joins[2]} (before the scheduler's death) and {joins[3]} (after its restart); every worker's final value {want:.0f}")
PY
) || fail "grow: $res"
ok "grow: $res; run rebuilt ${rebuilt} ms after the kill with worker 2, which had joined; worker 3 joined the rebuilt run; exit 0, summary 2 joins, 4 workers, 1 scheduler restart"

# the same program under fault.worker = restart: the scheduler and then worker 1 killed,
# ordo-launch starts both again; every worker's final value is exactly -3 per iteration
sed -e 's/^max_workers = 4$/worker = restart/' "$T/grow.ini" > "$T/crestart.ini"
"$LAUNCH" "$T/crestart.ini" --bin "$BIN" --pids "$T/crestart.pids" --output.dir="$T" \
  --output.run=crestart > "$T/crestart.log" 2>&1 &
lpid=$!
wait_lines crestart 100
kill -KILL "$(awk '$1=="scheduler" {print $2; exit}' "$T/crestart.pids")"
sleep 0.3
kill -KILL "$(awk '$1=="worker" && $2==1 {print $3; exit}' "$T/crestart.pids")"
st=timeout
for _ in $(seq 1 2400); do
  if ! kill -0 $lpid 2>/dev/null; then wait $lpid; st=$?; break; fi
  sleep 0.05
done
[ "$st" = 0 ] || fail "command, worker = restart: the job ended with '$st': $(tail -n 5 "$T/crestart.log")"
grep -q "worker 1 exited with status 137; starting it again" "$T/crestart.log" ||
  fail "command, worker = restart: ordo-launch did not start worker 1 again"
finals=$(grep -o "grow_values: worker [01]: final value [-0-9.]*" "$T/crestart.log" | sort | uniq)
[ "$(grep -c "final value -$((3 * giters)).0$" <<< "$finals")" = 2 ] && [ "$(wc -l <<< "$finals")" = 2 ] ||
  fail "command, worker = restart: final values '$finals', expected -$((3 * giters)).0 for workers 0 and 1"
summary_is crestart scheduler_restarts=1 membership.restarts=1
ok "command, worker = restart: the scheduler and worker 1 (a [worker] command program) killed, ordo-launch started both again: exit 0, both workers' final value exactly -$((3 * giters)) (no push lost or applied twice)"
exit 0
fi

# the same kill under fault.scheduler = stop: every member exits 3
start_cluster stop 2 2 --fault.scheduler=stop
wait_lines stop $((iters / 2))
kill -KILL "${PID[scheduler]}"
for n in "${names[@]}"; do
  finish $n 60
  [ "$st" = 3 ] || fail "fault.scheduler = stop: $n ended with '$st', expected 3"
done
ok "$sync: fault.scheduler = stop: every server and worker exited 3 when the scheduler was killed"

# worker 1 killed while no scheduler runs under fault.worker = abort: the new scheduler finds
# no heartbeat of it and aborts the run naming it (status 3), not after fault.startup_ms
start_cluster wabort 2 2 --fault.scheduler=restart --fault.startup_ms=100000
ep=$(ready scheduler)
wait_lines wabort $((iters / 2))
kill -KILL "${PID[worker1]}"
kill -KILL "${PID[scheduler]}"
wait "${PID[scheduler]}" "${PID[worker1]}" 2>/dev/null
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --output.run=wabort --fault.scheduler=restart \
  --fault.startup_ms=100000 --cluster.scheduler="$ep"
finish scheduler 60
[ "$st" = 3 ] || fail "worker 1 dead while no scheduler ran (fault.worker = abort): the new scheduler ended with '$st', expected 3"
grep -q "aborting the run: worker 1 did not register again with the new scheduler: it died while no scheduler ran (fault.worker = abort)" \
  "$T/scheduler.log" || fail "the new scheduler did not name worker 1"
for n in server0 server1 worker0; do
  finish $n 60
  [ "$st" != 0 ] && [ "$st" != timeout ] || fail "worker 1 dead while no scheduler ran: $n ended with '$st'"
done
ok "$sync: worker 1 killed while no scheduler ran (fault.worker = abort): the new scheduler aborted the run naming it, $(grep -o "within [0-9]* ms of this scheduler's start" "$T/scheduler.log" | head -n 1)"

# a new scheduler whose plan differs from the one the members run with (another order
# policy): it refuses them, naming the field, and the run ends (status 3) without a hang
start_cluster plan 2 2 --fault.scheduler=restart
ep=$(ready scheduler)
wait_lines plan $((iters / 2))
kill -KILL "${PID[scheduler]}"
wait "${PID[scheduler]}" 2>/dev/null
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --output.run=plan --fault.scheduler=restart \
  --cluster.scheduler="$ep" --order.policy=tao
finish scheduler 60
[ "$st" = 3 ] || fail "a new scheduler with another plan: it ended with '$st', expected 3"
grep -q "refused a member registering again: plan: .* runs with another key map or plan" \
  "$T/scheduler.log" || fail "the new scheduler did not name the plan"
for n in "${names[@]}"; do
  finish $n 60
  [ "$st" != 0 ] && [ "$st" != timeout ] || fail "a new scheduler with another plan: $n ended with '$st'"
done
ok "$sync: a new scheduler with another order policy refused the members (plan) and the run ended"

# a scheduler paused (SIGSTOP) past the timeout, not dead: the members find it silent and
# register again; when it goes on (SIGCONT) it welcomes them back, and the run completes
# (a run long enough that its workers are still training when the scheduler goes on)
start_cluster pause 2 2 --fault.scheduler=restart --model.iterations=$((4 * iters))
wait_lines pause $((iters / 2))
kill -STOP "${PID[scheduler]}"
sleep 2.5
kill -CONT "${PID[scheduler]}"
for n in scheduler "${names[@]}"; do
  finish $n 120
  [ "$st" = 0 ] || fail "a paused scheduler: $n ended with '$st', expected 0"
done
[ "$(grep -c "found this scheduler silent and registered again: welcomed back" "$T/scheduler.log")" = 4 ] ||
  fail "the paused scheduler did not welcome the 4 members back"
[ "$(wc -l < "$T/pause/metrics.jsonl")" = $((8 * iters)) ] || fail "a paused scheduler: metrics.jsonl lacks records"
ok "$sync: a scheduler paused for 2.5 s welcomed its 4 members back and the run completed"
