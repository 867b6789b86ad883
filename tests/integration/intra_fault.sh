#!/usr/bin/env bash
# Fault test of intra-host groups ([cluster] local_size = 2, [intra] backend = shm): SIGKILL
# one member of a group in the middle of a run. Every other process (scheduler, servers, the
# dead worker's group partner, the other group) must exit non-zero naming the dead worker
# within the fault timeout, and /dev/shm must hold nothing of ordo afterwards (the group's
# segment name is unlinked as soon as every member mapped it).
source "$(dirname "$0")/lib.sh"
need_fmnist
run="intrafault$$"
# (6 s: four workers loading Fashion-MNIST at once on a busy machine do not poll for a while)
common=(--model.trainer=mlp --model.compute=cpu --model.iterations=100000 --model.batch=16
        --cluster.servers=2 --cluster.workers=4 --cluster.local_size=2 --intra.backend=shm
        --fault.timeout_ms=6000 --fault.heartbeat_ms=200
        --output.dir="$T" --output.run=$run --output.progress_every=0)
before=$(ls /dev/shm | grep -c '^ordo-' || true)
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
for i in 0 1; do start server$i "$BIN/ordo-server" "${common[@]}" --cluster.scheduler="$ep" --cluster.rank=$i; done
for i in 0 1 2 3; do start worker$i "$BIN/ordo-worker" "${common[@]}" --cluster.scheduler="$ep" --cluster.rank=$i; done

for _ in $(seq 1 600); do
  [ -f "$T/$run/metrics.jsonl" ] && [ "$(wc -l < "$T/$run/metrics.jsonl")" -ge 40 ] && break
  sleep 0.05
done
[ "$(wc -l < "$T/$run/metrics.jsonl")" -ge 40 ] || fail "the run did not start"
grep -q "intra: group 0 member 1 of 2" "$T/worker1.log" || fail "worker 1 is not in a group"
dead=${PID[worker1]}
kill -KILL "$dead"
t0=$(date +%s%N)
for n in scheduler server0 server1 worker0 worker2 worker3; do
  finish $n 15
  [ "$st" != 0 ] && [ -n "$st" ] || fail "$n ended with '$st', expected a non-zero exit status"
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
ok "every process exited non-zero, ${ms} ms after the kill (timeout 6000 ms)"
[ $ms -lt 12000 ] || fail "took $ms ms to notice"
grep -q "worker 1 (pid $dead)" "$T/scheduler.log" || fail "scheduler did not name the dead worker"
for n in server0 server1 worker0 worker2 worker3; do
  grep -q "worker 1 (pid $dead)" "$T/$n.log" || fail "$n did not log which worker died"
done
ok "the group partner logged: $(grep -o 'intra group 0: member 1: worker 1 (pid [0-9]*) [a-z]*' "$T/worker0.log" | head -1)"
after=$(ls /dev/shm | grep -c '^ordo-' || true)
[ "$after" -le "$before" ] || fail "/dev/shm holds ordo segments after the crash: $(ls /dev/shm | grep '^ordo-')"
ok "nothing of ordo left in /dev/shm"
echo "1 passed, 0 failed"
