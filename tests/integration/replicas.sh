#!/usr/bin/env bash
# Replicated servers ([fault] replicas, docs/architecture.md "Replicated servers") on the
# synthetic job, whose every value follows a formula: with replicas = 2, 2 servers and 2
# workers, SIGKILL a server mid-run. The scheduler promotes its backups; a replacement server
# joins (ordo-server --join) and is brought up to date; then the other original server is
# killed too and the replacement finishes the run. Every survivor exits 0, every pulled value
# is right ("0 wrong"), the final values are bit for bit a fault-free run's (their FNV-1a
# hash), and summary.json records both promotions, the join and the recovery time. With
# replicas = 3 on 3 servers two servers die in turn and the third finishes the same way. With
# replicas = 1 a dead server still stops the run (exit 3 everywhere, naming it); ordo-launch
# goes on when a server dies with replicas; and replicas above the server count are refused.
source "$(dirname "$0")/lib.sh"
iters=400
common=(--model.trainer=synthetic "--model.tensors=64KiB,1MiB,4KiB" --model.iterations=$iters
        --cluster.servers=2 --cluster.workers=2 --fault.timeout_ms=2000 --fault.heartbeat_ms=200
        --output.dir="$T" --output.progress_every=0)

# cluster RUN ARGS...: start a scheduler, $NS servers (default 2) and 2 workers of run RUN
cluster() { local run=$1 ns=${NS:-2}; shift; start_cluster "$run" "$ns" 2 --cluster.servers="$ns" "$@"; }
# wait_iters RUN N: until N worker-iterations are recorded
wait_iters() {
  for _ in $(seq 1 1200); do
    [ -f "$T/$1/metrics.jsonl" ] && [ "$(wc -l < "$T/$1/metrics.jsonl")" -ge "$2" ] && return
    sleep 0.05
  done
  fail "run $1 did not reach $2 worker-iterations"
}
hash_of() { grep -o 'fnv1a [0-9a-f]*' "$T/worker0.log" | cut -d' ' -f2; }

# the fault-free reference
cluster ref
for n in scheduler server0 server1 worker0 worker1; do
  finish $n 120
  [ "$st" = 0 ] || fail "reference run: $n ended with '$st'"
done
ref=$(hash_of)
[ -n "$ref" ] || fail "the reference run logged no final hash"
grep -q ", 0 wrong" "$T/worker0.log" || fail "the reference run pulled wrong values"
ok "fault-free run: final values fnv1a $ref"

# replicas = 2: kill server 1 mid-run; its backups (on server 0) take over. Then a replacement
# joins (ordo-server --join) and is brought up to date as a backup; then server 0 dies too,
# and the replacement, promoted, finishes the run with the fault-free values
cluster kill --fault.replicas=2
wait_iters kill 150
dead=${PID[server1]}
kill -KILL "$dead"
kill_ms=$(( $(date +%s%N) / 1000000 ))
at1=$(wc -l < "$T/kill/metrics.jsonl")
for _ in $(seq 1 1200); do grep -q "recovered from the death of server 1" "$T/scheduler.log" && break; sleep 0.05; done
grep -q "server 1 (pid $dead.*dead.*promoted backups" "$T/scheduler.log" ||
  fail "the scheduler did not log the promotion"
grep -q "recovered from the death of server 1" "$T/scheduler.log" || fail "no iteration completed after the promotion"
ep=$(ready scheduler)
start server2 "$BIN/ordo-server" "${common[@]}" --output.run=kill --fault.replicas=2 \
  --cluster.scheduler="$ep" --join
for _ in $(seq 1 1200); do grep -q "joined in place of the dead server 1" "$T/scheduler.log" && break; sleep 0.05; done
grep -q "joined in place of the dead server 1" "$T/scheduler.log" || fail "the replacement did not join"
wait_iters kill $(( $(wc -l < "$T/kill/metrics.jsonl") + 60 ))
kill -KILL "${PID[server0]}"
at2=$(wc -l < "$T/kill/metrics.jsonl")
[ "$at2" -lt $((2 * iters)) ] || fail "the run ended before the second kill"
for n in scheduler server2 worker0 worker1; do
  finish $n 120
  [ "$st" = 0 ] || fail "replicas = 2, servers 1 and 0 killed: $n ended with '$st', expected 0"
done
for n in worker0 worker1; do
  grep -q "$iters iterations, [0-9]* pulled values checked, 0 wrong" "$T/$n.log" ||
    fail "$n: pulled values wrong after a promotion"
done
got=$(hash_of)
[ "$got" = "$ref" ] || fail "final values fnv1a $got after the kills, $ref without"
rec=$(python3 -c "
import json; d = json.load(open('$T/kill/summary.json')); p = d['promotions']
assert [x['server'] for x in p] == [1, 0] and p[0]['next_iteration'] > 0, p
assert [j['server'] for j in d['joins']] == [1], d['joins']
print('%d' % (p[0]['next_iteration_unix_ms'] - $kill_ms))") || fail "summary.json: promotions or joins wrong"
ok "server 1 killed after $at1 of $((2 * iters)) worker-iterations: its backups took over, the next iteration completed $rec ms after the kill (timeout 2000 ms)"
ok "ordo-server --join replaced it; server 0 killed after $at2: the replacement finished the run; survivors exit 0, 0 wrong, final values equal (fnv1a $got)"

# replicas = 3 on 3 servers: two servers die one after the other; each time a new primary
# first hands its state to the remaining backup, and the last server finishes the run
NS=3 cluster three --fault.replicas=3
wait_iters three 150
kill -KILL "${PID[server1]}"
for _ in $(seq 1 1200); do grep -q "recovered from the death of server 1" "$T/scheduler.log" && break; sleep 0.05; done
wait_iters three $(( $(wc -l < "$T/three/metrics.jsonl") + 60 ))
kill -KILL "${PID[server2]}"
at2=$(wc -l < "$T/three/metrics.jsonl")
[ "$at2" -lt $((2 * iters)) ] || fail "replicas = 3: the run ended before the second kill"
for n in scheduler server0 worker0 worker1; do
  finish $n 120
  [ "$st" = 0 ] || fail "replicas = 3, servers 1 and 2 killed: $n ended with '$st', expected 0"
done
got=$(hash_of)
[ "$got" = "$ref" ] || fail "replicas = 3: final values fnv1a $got after two kills, $ref without"
ok "replicas = 3: servers 1 and 2 killed one after the other, server 0 finished the run, final values equal"

# replicas = 1: a dead server still stops the run
cluster one --model.iterations=100000
wait_iters one 40
dead=${PID[server1]}
kill -KILL "$dead"
for n in scheduler server0 worker0 worker1; do
  finish $n 20
  [ "$st" = 3 ] || fail "replicas = 1: $n ended with '$st', expected 3"
done
grep -q "server 1 (pid $dead.*dead: no heartbeat" "$T/scheduler.log" || fail "the scheduler did not name the dead server"
ok "replicas = 1: a killed server stops the run (exit 3, named)"

# the launcher leaves a dead server to the scheduler when there are replicas
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
"$root/scripts/ordo-launch" "$root/conf/synthetic.ini" --bin "$BIN" "${common[@]}" --output.run=launch \
  --fault.replicas=2 > "$T/launch.log" 2>&1 &
PID[launch]=$!
wait_iters launch $iters
pid=$(ps -eo pid=,args= | awk -v t="$T" '/bin\/ordo-server/ && index($0, t) && /--cluster.rank=0/ {print $1; exit}')
[ -n "$pid" ] || fail "no server 0 of the launched run"
kill -KILL "$pid"
finish launch 120
[ "$st" = 0 ] || fail "ordo-launch ended with '$st' after a server was killed, expected 0"
grep -q "server 0 exited with status 137; its backups take over" "$T/launch.log" || fail "the launcher did not say why it went on"
grep -q "recovered from the death of server 0" "$T/launch.log" || fail "no recovery in the launched run"
ok "ordo-launch: a killed server's backups take over, the launcher exits 0"

out=$("$BIN/ordo-scheduler" "${common[@]}" --fault.replicas=3 --cluster.scheduler=tcp://127.0.0.1:0 2>&1)
[ $? = 2 ] || fail "fault.replicas = 3 with 2 servers was not refused as a conf error"
grep -q "fault.replicas (3) must be at most cluster.servers (2)" <<< "$out" || fail "refusal: $out"
ok "fault.replicas above the servers is refused"
echo "7 passed, 0 failed"
