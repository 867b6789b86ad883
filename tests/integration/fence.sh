#!/usr/bin/env bash
# Fencing a late worker (docs/durability.md, "Fencing"): under fault.worker = restart, worker 1 of a
# synthetic run (2 servers, 2 workers) is paused (SIGSTOP) until the scheduler declares it
# dead; a new process takes rank 1 and rejoins; then the paused process is resumed (SIGCONT).
# It is refused (it stops with an error naming the fence, not status 0) and never changes a
# value: the live workers check every pulled value against the fault-free formula, the final
# values' hash equals the fault-free run's, and each server applied exactly as many updates as
# in the fault-free run. The processes are started by hand, so the protocol's fence is what is
# tested. Then the same pause under scripts/ordo-launch: the launcher kills the worker the
# scheduler declared dead (it was only paused), starts it again, and the run exits 0 with
# every value exact (before, the paused process kept its rank and the run aborted). Last, a
# server paused past the timeout with fault.replicas = 2: its slices are promoted, and once
# resumed it is told it is out and the run ends with every value as fault-free.
source "$(dirname "$0")/lib.sh"
ITERS=1500
common=(--model.trainer=synthetic "--model.tensors=64KiB,256KiB,16KiB" --cluster.servers=2
        --cluster.workers=2 --model.iterations=$ITERS --fault.worker=restart
        --fault.timeout_ms=1000 --fault.timeout_max_ms=1000 --fault.heartbeat_ms=100
        --fault.startup_ms=60000 --output.dir="$T" --output.progress_every=0)

# the fault-free run
start_cluster ref 2 2
for n in worker0 worker1 server0 server1 scheduler; do
  finish $n 120
  [ "$st" = 0 ] || fail "the fault-free run: $n ended with '$st'"
done
hash_of() { grep -ho "final values after $ITERS updates: fnv1a [0-9a-f]*" "$@" | awk '{print $NF}' | sort -u; }
updates_of() { grep -o "shutdown: [0-9]* updates applied" "$T/$1.log" | awk '{print $2}'; }
ref_hash=$(hash_of "$T/worker0.log" "$T/worker1.log")
[ -n "$ref_hash" ] && [ "$(echo "$ref_hash" | wc -l)" = 1 ] || fail "the fault-free run's final hashes: '$ref_hash'"
ref_u0=$(updates_of server0) ref_u1=$(updates_of server1)
[ -n "$ref_u0" ] && [ -n "$ref_u1" ] || fail "the fault-free servers did not count their updates"
for n in worker0 worker1 server0 server1 scheduler; do mv "$T/$n.log" "$T/ref-$n.log"; done

start_cluster run 2 2
ep=$(ready scheduler)
for _ in $(seq 1 1200); do
  [ -f "$T/run/metrics.jsonl" ] && [ "$(wc -l < "$T/run/metrics.jsonl")" -ge 200 ] && break
  sleep 0.05
done
old=${PID[worker1]}
kill -STOP "$old"
for _ in $(seq 1 600); do grep -q '"event":"death","worker":1' "$T/run/membership.jsonl" 2>/dev/null && break; sleep 0.05; done
grep -q '"event":"death","worker":1' "$T/run/membership.jsonl" 2>/dev/null ||
  { kill -CONT "$old"; fail "the paused worker 1 was not declared dead"; }
start worker1b "$BIN/ordo-worker" "${common[@]}" --output.run=run --cluster.scheduler="$ep" --cluster.rank=1
for _ in $(seq 1 1200); do grep -q '"event":"recovered","worker":1' "$T/run/membership.jsonl" && break; sleep 0.05; done
grep -q '"event":"recovered","worker":1' "$T/run/membership.jsonl" ||
  { kill -CONT "$old"; fail "the new worker 1 did not rejoin"; }
kill -CONT "$old"
finish worker1 60
[ "$st" != 0 ] && [ "$st" != timeout ] || fail "the resumed late worker 1 ended with '$st', expected a refusal"
grep -q "fenced: worker 1.* was declared dead at iteration" "$T/worker1.log" ||
  fail "the late worker 1 was not told it is fenced"
for n in worker0 worker1b server0 server1 scheduler; do
  finish $n 120
  [ "$st" = 0 ] || fail "$n ended with '$st' after the late worker came back"
done
n=$(grep -c "pulled values checked, 0 wrong (the final values included)" "$T/worker0.log" "$T/worker1b.log" | awk -F: '{s += $2} END {print s}')
[ "$n" = 2 ] || fail "$n of the 2 live workers checked every value without a wrong one"
[ "$(hash_of "$T/worker0.log" "$T/worker1b.log")" = "$ref_hash" ] ||
  fail "the final values' hash $(hash_of "$T/worker0.log" "$T/worker1b.log") differs from the fault-free $ref_hash"
u0=$(updates_of server0) u1=$(updates_of server1)
[ "$u0" = "$ref_u0" ] && [ "$u1" = "$ref_u1" ] ||
  fail "the servers applied $u0 and $u1 updates, the fault-free run $ref_u0 and $ref_u1"
refused=$(grep -ho "[0-9]* messages of fenced workers refused" "$T/server0.log" "$T/server1.log" | awk '{s += $1} END {print s + 0}')
gen=$(grep -o '"event":"death","worker":1,[^}]*"generation":[0-9]*' "$T/run/membership.jsonl" | grep -o '[0-9]*$')
ok "a paused worker resumed after its death (generation $gen) was refused; every value exact, hash $ref_hash as fault-free, the servers applied $u0 and $u1 updates as fault-free ($refused of its messages refused by the servers)"

LAUNCH=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}/scripts/ordo-launch
: > "$T/empty.ini"
"$LAUNCH" "$T/empty.ini" --bin "$BIN" --pids "$T/launched.pids" "${common[@]}" \
  --output.run=launched > "$T/launched.log" 2>&1 &
lpid=$!
for _ in $(seq 1 1200); do
  [ -f "$T/launched/metrics.jsonl" ] && [ "$(wc -l < "$T/launched/metrics.jsonl")" -ge 200 ] && break
  sleep 0.05
done
paused=$(awk '$1=="worker" && $2==1 {print $3; exit}' "$T/launched.pids")
[ -n "$paused" ] || fail "ordo-launch did not list worker 1's pid"
kill -STOP "$paused"
st=timeout
for _ in $(seq 1 2400); do
  if ! kill -0 $lpid 2>/dev/null; then wait $lpid; st=$?; break; fi
  sleep 0.05
done
kill -CONT "$paused" 2>/dev/null
[ "$st" = 0 ] || fail "under ordo-launch, the run with a paused worker ended with '$st'"
grep -q "ordo-launch: worker 1 (pid $paused) was declared dead but still ran; killed it (fenced)" "$T/launched.log" ||
  fail "ordo-launch did not kill the paused worker"
grep -q "worker 1 (pid [0-9]*) rejoined at iteration" "$T/launched.log" || fail "worker 1 did not rejoin"
[ "$(grep -c "pulled values checked, 0 wrong (the final values included)" "$T/launched.log")" = 2 ] ||
  fail "under ordo-launch, not every value was right"
ok "under ordo-launch the paused worker was killed once declared dead, restarted, and the run exited 0 with every value exact"

# a server paused past the timeout with replicas = 2: its slices are promoted to server 0;
# resumed, it is told it is out (ABORT) and whatever it still answers is dropped by the workers
for n in worker0 worker1 worker1b server0 server1 scheduler; do [ -f "$T/$n.log" ] && mv "$T/$n.log" "$T/run-$n.log"; done
common+=(--fault.replicas=2)
start_cluster srv 2 2
for _ in $(seq 1 1200); do
  [ -f "$T/srv/metrics.jsonl" ] && [ "$(wc -l < "$T/srv/metrics.jsonl")" -ge 200 ] && break
  sleep 0.05
done
kill -STOP "${PID[server1]}"
for _ in $(seq 1 600); do grep -q "promot" "$T/scheduler.log" && break; sleep 0.05; done
kill -CONT "${PID[server1]}"
grep -q "promot" "$T/scheduler.log" || fail "the paused server 1 was not replaced by its backups"
finish server1 60
[ "$st" != 0 ] && [ "$st" != timeout ] || fail "the resumed server 1 ended with '$st', expected a refusal"
grep -q "declared dead" "$T/server1.log" || fail "the resumed server 1 was not told it is out"
for n in worker0 worker1 server0 scheduler; do
  finish $n 120
  [ "$st" = 0 ] || fail "$n ended with '$st' after the late server came back"
done
n=$(grep -c "pulled values checked, 0 wrong (the final values included)" "$T/worker0.log" "$T/worker1.log" | awk -F: '{s += $2} END {print s}')
[ "$n" = 2 ] || fail "after the late server: $n of the 2 workers checked every value without a wrong one"
[ "$(hash_of "$T/worker0.log" "$T/worker1.log")" = "$ref_hash" ] || fail "after the late server: the final hash differs"
ok "a paused server resumed after its slices were promoted was refused; every value and the hash as fault-free"
echo "3 passed, 0 failed"
