#!/usr/bin/env bash
# Fault test: kill one worker (SIGKILL) in the middle of a run. The scheduler, both servers
# and the two other workers must notice within the fault timeout, name the dead worker in
# their logs, and exit non-zero (3); nothing may hang.
source "$(dirname "$0")/lib.sh"
common=(--model.trainer=synthetic "--model.tensors=64KiB,1MiB" --model.iterations=100000
        --cluster.servers=2 --cluster.workers=3 --fault.timeout_ms=2000 --fault.heartbeat_ms=200
        --output.dir="$T" --output.run=fault --output.progress_every=0)
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
for i in 0 1; do start server$i "$BIN/ordo-server" "${common[@]}" --cluster.scheduler="$ep" --cluster.rank=$i; done
for i in 0 1 2; do start worker$i "$BIN/ordo-worker" "${common[@]}" --cluster.scheduler="$ep" --cluster.rank=$i; done

# wait until the run is going: at least 10 iterations recorded
for _ in $(seq 1 400); do
  [ -f "$T/fault/metrics.jsonl" ] && [ "$(wc -l < "$T/fault/metrics.jsonl")" -ge 30 ] && break
  sleep 0.05
done
[ "$(wc -l < "$T/fault/metrics.jsonl")" -ge 30 ] || fail "the run did not start"
dead=${PID[worker1]}
kill -KILL "$dead"
t0=$(date +%s%N)
for n in scheduler server0 server1 worker0 worker2; do
  finish $n 15
  [ "$st" = 3 ] || fail "$n ended with '$st', expected exit status 3"
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
ok "every process exited with status 3, ${ms} ms after the kill (timeout 2000 ms)"
[ $ms -lt 10000 ] || fail "took $ms ms to notice"
grep -q "worker 1 (pid $dead).*dead: no heartbeat" "$T/scheduler.log" || fail "scheduler did not name the dead worker"
for n in server0 server1 worker0 worker2; do
  grep -q "worker 1 (pid $dead).*dead" "$T/$n.log" || fail "$n did not log which node died"
done
ok "scheduler, servers and workers logged: $(grep -o 'worker 1 (pid [0-9]*) is dead[^;]*' "$T/scheduler.log" | head -1)"
echo "1 passed, 0 failed"
