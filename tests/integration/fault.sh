#!/usr/bin/env bash
# Fault test: kill one worker (SIGKILL) in the middle of a run. The scheduler, both servers
# and the two other workers must notice within the fault timeout, name the dead worker in
# their logs, and exit non-zero (3); nothing may hang. Then the same during a start-up
# calibration ([push] calibrate), where the other workers wait at its barriers.
source "$(dirname "$0")/lib.sh"
common=(--model.trainer=synthetic "--model.tensors=64KiB,1MiB" --model.iterations=100000
        --cluster.servers=2 --cluster.workers=3 --fault.timeout_ms=2000 --fault.heartbeat_ms=200
        --output.dir="$T" --output.run=fault --output.progress_every=0)
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
for i in 0 1; do start server$i "$BIN/ordo-server" "${common[@]}" --cluster.scheduler="$ep" --cluster.rank=$i; done
for i in 0 1 2; do start worker$i "$BIN/ordo-worker" "${common[@]}" --cluster.scheduler="$ep" --cluster.rank=$i; done

# wait until the run is going: at least 10 iterations recorded
for _ in $(seq 1 1200); do
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

# a worker dies during the start-up calibration (4 MiB probes on 100 Mbit/s links: tens of
# seconds of it)
cal=("${common[@]/--output.run=fault/--output.run=calfault}" --push.mode=merged --push.calibrate=true
     --net.bandwidth=100mbit)
start scheduler "$BIN/ordo-scheduler" "${cal[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
for i in 0 1; do start server$i "$BIN/ordo-server" "${cal[@]}" --cluster.scheduler="$ep" --cluster.rank=$i; done
for i in 0 1 2; do start worker$i "$BIN/ordo-worker" "${cal[@]}" --cluster.scheduler="$ep" --cluster.rank=$i; done
for _ in $(seq 1 1200); do grep -q "cluster complete" "$T/scheduler.log" && break; sleep 0.05; done
grep -q "cluster complete" "$T/scheduler.log" || fail "the calibrating cluster did not form"
sleep 1
grep -q "merge: .* groups for" "$T/scheduler.log" && fail "the calibration ended before the kill"
dead=${PID[worker1]}
kill -KILL "$dead"
t0=$(date +%s%N)
for n in scheduler server0 server1 worker0 worker2; do
  finish $n 15
  [ "$st" = 3 ] || fail "$n ended with '$st' after a death during the calibration, expected 3"
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
grep -q "worker 1 (pid $dead).*dead: no heartbeat" "$T/scheduler.log" || fail "scheduler did not name the dead worker"
ok "a death during the start-up calibration: every process exited with status 3, ${ms} ms after the kill"
echo "2 passed, 0 failed"
