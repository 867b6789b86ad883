#!/usr/bin/env bash
# fault.scheduler = restart with the batch service ([sync] batches; on by default under asp),
# docs/fault.md: tests/integration/batch_reader.c (built here) is each of 2 workers, reading
# 2 epochs of 1000 samples in batches of 10 (epoch 0 asked for by number, epoch 1 as any
# epoch, its batches asked for ahead), 2 servers, asp. The scheduler is SIGKILLed in mid-run
# and a new one started at its address: it rebuilds the service from the workers' leases and
# newest batches. Checked: every process exits 0; over the two workers every sample was read
# exactly once in each epoch (none lost, none given twice); summary.json: samples 2000,
# batches 200 in all, scheduler_restarts 1. Then a second run kills the scheduler twice.
# SYNC=bsp BACKUP=1 (integration.sched_restart_backup): backup workers, whose end is an
# iteration: the samples handed out past the end (summary.json counts them) are the only ones
# read twice, and no sample of the two epochs is lost. REPLICAS=2
# (integration.sched_restart_batches_replicas): each slice on both servers, and in the first
# run server 1 is SIGKILLed with the scheduler: the new scheduler (its key map made from the
# workers' declarations once they are back) declares it dead and promotes its backups.
source "$(dirname "$0")/lib.sh"
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=$(cd "$BIN/.." && pwd)
cc -std=c11 -O1 -I"$root/include" -I"$build/include" "$root/tests/integration/batch_reader.c" \
  -L"$build/client" -l:libordo.so.0 -Wl,-rpath,"$build/client" -o "$T/batch_reader" \
  > "$T/cc.log" 2>&1 || fail "cannot build tests/integration/batch_reader.c: $(cat "$T/cc.log")"
cat > "$T/conf.ini" <<INI
[cluster]
servers = 2
workers = 2
[model]
trainer = declared
[sync]
mode = ${SYNC:-asp}
backup = ${BACKUP:-0}
[fault]
replicas = ${REPLICAS:-1}
scheduler = restart
timeout_ms = 1000
timeout_max_ms = 1000
heartbeat_ms = 100
[output]
dir = $T
progress_every = 0
INI
export ORDO_TEST_SLEEP_US=25000 # about 2.5 s of batches per worker

# lines: the samples the workers have read so far
lines() { cat "$T"/read-*.txt 2>/dev/null | wc -l; }
wait_read() {
  for _ in $(seq 1 2400); do [ "$(lines)" -ge "$1" ] && return; sleep 0.05; done
  fail "the workers never read $1 samples"
}
# restart_scheduler RUN: SIGKILL the scheduler and start a new one at its address
restart_scheduler() {
  kill -KILL "${PID[scheduler]}" 2>/dev/null # (killed already when server 1 went with it)
  wait "${PID[scheduler]}" 2>/dev/null
  mv "$T/scheduler.log" "$T/scheduler-old-$2.log"
  start scheduler "$BIN/ordo-scheduler" -c "$T/conf.ini" --output.run="$1" --cluster.scheduler="$ep"
}

for run in kill kill2; do
  rm -f "$T"/read-*.txt
  start scheduler "$BIN/ordo-scheduler" -c "$T/conf.ini" --output.run=$run --cluster.scheduler=tcp://127.0.0.1:0
  ep=$(ready scheduler)
  for i in 0 1; do
    start server$i "$BIN/ordo-server" -c "$T/conf.ini" --output.run=$run --cluster.scheduler="$ep" --cluster.rank=$i
  done
  for i in 0 1; do
    start worker$i "$T/batch_reader" "$T/conf.ini" "$T/read-$i.txt" output.run=$run cluster.scheduler="$ep"
  done
  wait_read 700 # in epoch 0, asked for by number
  if [ "${REPLICAS:-1}" -gt 1 ] && [ $run = kill ]; then
    # server 1 as well, while no scheduler runs: the new one declares it dead
    kill -KILL "${PID[scheduler]}" "${PID[server1]}"
    wait "${PID[server1]}" 2>/dev/null
  fi
  restart_scheduler $run 1
  if [ $run = kill2 ]; then
    wait_log() { for _ in $(seq 1 1200); do grep -q "$1" "$T/scheduler.log" && return; sleep 0.05; done; fail "no '$1'"; }
    wait_log "cluster complete: every member registered again"
    wait_read 1400 # in epoch 1, asked for ahead
    restart_scheduler $run 2
  fi
  alive=(scheduler server0 server1 worker0 worker1)
  [ "${REPLICAS:-1}" -gt 1 ] && [ $run = kill ] && alive=(scheduler server0 worker0 worker1)
  for n in "${alive[@]}"; do
    finish $n 150
    [ "$st" = 0 ] || fail "$run: $n ended with '$st', expected 0: $(tail -n 3 "$T/$n.log")"
  done
  python3 - "$T" $run "${BACKUP:-0}" <<'PY' || fail "$run: the samples read, or summary.json"
import collections, glob, json, sys
T, run = sys.argv[1], sys.argv[2]
seen = collections.Counter()
for f in glob.glob(f"{T}/read-*.txt"):
    for line in open(f):
        e, i = line.split()
        seen[(int(e), int(i))] += 1
gated = sys.argv[3] != "0"
for e in (0, 1):
    twice = [i for i in range(1000) if seen[(e, i)] > 1 and (e == 0 or not gated)]
    lost = [i for i in range(1000) if seen[(e, i)] == 0]
    if twice or lost:
        sys.exit(f"epoch {e}: {len(lost)} samples never read (e.g. {lost[:5]}), "
                 f"{len(twice)} read twice (e.g. {twice[:5]})")
s = json.load(open(f"{T}/{run}/summary.json"))
want = 1 if run == "kill" else 2
# under backup workers the end is an iteration: requests for iterations up to the last one
# handed out still get batches past the end (of epoch 2, read here as epoch 1's), counted
extra = s.get("samples", 0) - 2000 if gated else 0
twice = sum(1 for i in range(1000) if seen[(1, i)] > 1)
if sum(seen.values()) != 2000 + extra or extra < 0 or twice > extra:
    sys.exit(f"{sum(seen.values())} samples read ({twice} twice in epoch 1), "
             f"{2000 + extra} expected ({extra} past the end)")
if sum(s.get("batches", [])) * 10 != s.get("samples") or s.get("scheduler_restarts") != want:
    sys.exit(f"summary.json: samples {s.get('samples')}, batches {s.get('batches')}, "
             f"scheduler_restarts {s.get('scheduler_restarts')} (10 samples a batch, {want})")
print(f"{run}: {2000 + extra} samples ({extra} past the end), each of the 2 epochs' read once; "
      f"batches per worker {s['batches']}")
PY
  grep -q "batch service rebuilt from the workers' leases" "$T/scheduler.log" ||
    fail "$run: the new scheduler did not rebuild the batch service"
  if [ "${REPLICAS:-1}" -gt 1 ] && [ $run = kill ]; then
    grep -q "server 1 did not register again with this scheduler: declared dead" \
      "$T/scheduler-old-1.log" "$T/scheduler.log" || fail "$run: server 1 was not declared dead"
  fi
  with=""; [ "${REPLICAS:-1}" -gt 1 ] && [ $run = kill ] && with=" with server 1 (replicas = 2, its backups promoted by the new scheduler)"
  ok "$run: the scheduler killed $([ $run = kill ] && echo once || echo "twice (in epoch 0 and in epoch 1)")$with while 2 workers read 2 epochs from the batch service: every sample read exactly once per epoch"
  mkdir -p "$T/$run/logs"; mv "$T"/*.log "$T/$run/logs/"
done
exit 0
