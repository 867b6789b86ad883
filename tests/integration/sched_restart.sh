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
# 3, as before), and a new scheduler whose plan differs, which refuses the members naming the
# field, and a scheduler paused past the timeout, which welcomes its members back. SYNC=asp
# runs the first part under asp (params.bin then differs by timing; the push counts not).
# PART=restart-only runs the first part without the ordo-launch one (integration.
# sched_restart_merged: merged pushes, one merge group of all tensors).
# Arguments go to every process (integration.sched_restart_groups: host groups).
source "$(dirname "$0")/lib.sh"
need_fmnist
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
iters=${ITERS:-400}
sync=${SYNC:-bsp}
common=(-c "$root/conf/mlp.ini" --model.epochs=0 --model.iterations=$iters --sync.mode=$sync
        --sync.batches=off --fault.timeout_ms=1000 --fault.timeout_max_ms=1000
        --fault.heartbeat_ms=100 --output.dir="$T" --output.progress_every=0
        --output.save_params=true "$@")
names=(server0 server1 worker0 worker1)

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

part=${PART:-restart}
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

# the same kill under fault.scheduler = stop: every member exits 3
start_cluster stop 2 2 --fault.scheduler=stop
wait_lines stop $((iters / 2))
kill -KILL "${PID[scheduler]}"
for n in "${names[@]}"; do
  finish $n 60
  [ "$st" = 3 ] || fail "fault.scheduler = stop: $n ended with '$st', expected 3"
done
ok "$sync: fault.scheduler = stop: every server and worker exited 3 when the scheduler was killed"

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
