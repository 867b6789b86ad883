#!/usr/bin/env bash
# fault.scheduler = restart with [fault] replicas = 2 (docs/fault.md): the mlp (Fashion-MNIST;
# skips without it), 2 servers, 2 workers, bsp, each slice on both servers. Three runs against
# a fault-free one, each ending with every surviving process at status 0 and params.bin byte
# for byte the fault-free run's:
#   kill:        the scheduler SIGKILLed in mid-run and a new one started at its address;
#   server-down: the scheduler SIGKILLed, then server 1 while no scheduler runs; the new
#                scheduler rebuilds the run without it (server 1 did not register again: it
#                is declared dead and its backups promoted) and the run goes on;
#   server-after: the scheduler SIGKILLed and restarted, and server 1 SIGKILLed once the new
#                scheduler rebuilt the run: the new scheduler promotes its backups as the old
#                one would have;
#   server-before: server 1 SIGKILLed, and the scheduler once it promoted server 1's backups:
#                the new scheduler takes the promotion from the members' replica map and does
#                not wait for server 1;
#   joined:      the same, and a replacement (ordo-server --join) joins in server 1's place
#                before the scheduler's kill: it registers again as server 1 like the others.
# Each run's summary.json counts "scheduler_restarts": 1; the server runs' "promotions" name
# server 1 once (made by the new scheduler, or by the old one and carried over in
# RUN/scheduler.json).
source "$(dirname "$0")/lib.sh"
need_fmnist
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
iters=${ITERS:-300}
common=(-c "$root/conf/mlp.ini" --model.epochs=0 --model.iterations=$iters --sync.mode=bsp
        --sync.batches=off --fault.timeout_ms=1000 --fault.timeout_max_ms=1000
        --fault.heartbeat_ms=100 --output.dir="$T" --output.progress_every=0
        --output.save_params=true --fault.replicas=2 --fault.scheduler=restart "$@")

# wait_lines RUN N: until metrics.jsonl has N lines
wait_lines() {
  for _ in $(seq 1 2400); do
    [ -f "$T/$1/metrics.jsonl" ] && [ "$(wc -l < "$T/$1/metrics.jsonl")" -ge "$2" ] && return
    sleep 0.05
  done
  fail "$1: metrics.jsonl never reached $2 lines"
}
# wait_log NAME PATTERN: until NAME's log holds PATTERN
wait_log() {
  for _ in $(seq 1 1200); do
    grep -q "$2" "$T/$1.log" 2>/dev/null && return
    sleep 0.05
  done
  fail "$1's log never said '$2'"
}
# summary RUN: scheduler_restarts and the promoted servers, from summary.json
summary() {
  python3 - "$T/$1/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(s.get("scheduler_restarts"), ",".join(str(p["server"]) for p in s.get("promotions", [])) or "-")
PY
}

start_cluster ref 2 2
for n in scheduler server0 server1 worker0 worker1; do
  finish $n 150
  [ "$st" = 0 ] || fail "fault-free run: $n ended with '$st'"
done
mv "$T"/*.log "$T/ref/"

for run in kill server-down server-after server-before joined; do
  # server-after kills server 1 once the new scheduler rebuilt the run: every iteration is
  # slowed by 40 ms there (bsp: the values do not change), so that the workers are not done
  # with the rest of the run during the rebuild, however loaded the machine
  extra=()
  [ $run = server-after ] && extra=(--straggle.probability=1 --straggle.delay_ms=40)
  start_cluster $run 2 2 "${extra[@]}"
  ep=$(ready scheduler)
  wait_lines $run $((iters / 2))
  if [ $run = server-before ] || [ $run = joined ]; then
    kill -KILL "${PID[server1]}"
    wait "${PID[server1]}" 2>/dev/null
    wait_log scheduler "server 1 (pid .*) is dead: no heartbeat"
    # the promotion's record on disk (fsynced: slow on a loaded machine) before the kill
    for _ in $(seq 1 600); do grep -q '"promotions"' "$T/$run/scheduler.json" 2>/dev/null && break; sleep 0.05; done
    wait_lines $run $((iters / 2 + 20))
  fi
  if [ $run = joined ]; then # a replacement joins in server 1's place before the kill
    start server1 "$BIN/ordo-server" "${common[@]}" --output.run=$run --cluster.scheduler="$ep" \
      --cluster.rank=1 --join
    wait_log scheduler "server 1 (pid .*) joined in place of the dead server 1"
    for _ in $(seq 1 600); do grep -q '"joins"' "$T/$run/scheduler.json" 2>/dev/null && break; sleep 0.05; done
    wait_lines $run $((iters / 2 + 40))
  fi
  kill -KILL "${PID[scheduler]}"
  wait "${PID[scheduler]}" 2>/dev/null
  mv "$T/scheduler.log" "$T/scheduler-old.log"
  survivors=(server0 server1 worker0 worker1)
  if [ $run = server-down ]; then
    kill -KILL "${PID[server1]}"
    wait "${PID[server1]}" 2>/dev/null
    survivors=(server0 worker0 worker1)
  fi
  [ $run = server-before ] && survivors=(server0 worker0 worker1)
  [ $run = joined ] && survivors=(server0 server1 worker0 worker1)
  start scheduler "$BIN/ordo-scheduler" "${common[@]}" "${extra[@]}" --output.run=$run \
    --cluster.scheduler="$ep"
  if [ $run = server-after ]; then
    wait_log scheduler "cluster complete: every member registered again"
    kill -0 "${PID[server1]}" 2>/dev/null ||
      fail "$run: server 1 had exited before it could be killed (the run ended during the rebuild)"
    kill -KILL "${PID[server1]}"
    wait "${PID[server1]}" 2>/dev/null
    survivors=(server0 worker0 worker1)
  fi
  for n in scheduler "${survivors[@]}"; do
    finish $n 150
    [ "$st" = 0 ] || fail "$run: $n ended with '$st', expected 0: $(tail -n 3 "$T/$n.log")"
  done
  cmp -s "$T/ref/params.bin" "$T/$run/params.bin" || fail "$run: params.bin differs from the fault-free run's"
  read -r restarts promoted < <(summary $run)
  want=1; [ $run = kill ] && want=-
  [ "$restarts" = 1 ] && [ "$promoted" = "$want" ] ||
    fail "$run: summary.json: scheduler_restarts $restarts, promotions of servers '$promoted' (want 1, '$want')"
  case $run in
    kill) ok "$run: scheduler killed in mid-run with replicas = 2: params.bin identical to the fault-free run's" ;;
    server-down)
      line=$(grep -o "server 1 did not register again with this scheduler: declared dead.*" "$T/scheduler.log") ||
        fail "$run: the new scheduler did not declare server 1 dead"
      ok "$run: scheduler and then server 1 killed; the new scheduler logged '$line'; params.bin identical" ;;
    server-before)
      grep -q "replica map (generation [0-9]*, 1 server dead)" "$T/scheduler.log" ||
        fail "$run: the new scheduler did not take the members' map"
      ok "$run: server 1 killed and promoted, then the scheduler: the new one took the map without waiting; params.bin identical" ;;
    joined)
      grep -q "server 1 (pid .*) registered again" "$T/scheduler.log" ||
        fail "$run: the replacement did not register again as server 1"
      grep -q "did not register again" "$T/scheduler.log" && fail "$run: the new scheduler waited for a server"
      ok "$run: server 1 killed and replaced (ordo-server --join), then the scheduler: the replacement registered again as server 1; params.bin identical" ;;
    server-after)
      grep -q "server 1 (pid .*) is dead: no heartbeat" "$T/scheduler.log" ||
        fail "$run: the new scheduler did not declare server 1 dead"
      ok "$run: server 1 killed after the new scheduler's rebuild: promoted by it; params.bin identical" ;;
  esac
  mkdir -p "$T/$run/logs"; mv "$T"/*.log "$T/$run/logs/"
done
exit 0
