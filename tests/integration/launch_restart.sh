#!/usr/bin/env bash
# scripts/ordo-launch --restart N: the scheduler of an mlp run (2 servers, 2 workers, a
# checkpoint every 100 updates) is SIGKILLed after a checkpoint; the launcher starts the job
# again from that checkpoint (fault.resume), it completes with exit 0, and its final values
# equal bit for bit those of the same run without the kill. The same with sparse pushes: the
# workers' residuals and thresholds and the servers' momentum come back from the checkpoint,
# and the test accuracy is within 1 point of the run without the kill (the servers agree a
# fresh global threshold, and the regions start over, so it is not bit for bit). A conf
# error is not retried.
source "$(dirname "$0")/lib.sh"
need_fmnist
LAUNCH=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}/scripts/ordo-launch
conf=$T/empty.ini
: > "$conf"
common=(--model.trainer=mlp --model.compute=cpu --model.batch=32 --model.iterations=1500
        --model.seed=5 --optimizer.lr=0.05 --optimizer.momentum=0.9 --cluster.servers=2
        --cluster.workers=2 --fault.timeout_ms=5000 --fault.heartbeat_ms=250
        --fault.checkpoint_every=100 --output.save_params=true --output.dir="$T"
        --output.progress_every=0)

"$LAUNCH" "$conf" --bin "$BIN" "${common[@]}" --output.run=ref > "$T/ref.log" 2>&1 ||
  fail "the fault-free run failed: $(tail -n 5 "$T/ref.log")"

# killed JOB ARGS...: a --restart 2 job whose scheduler is SIGKILLed after its first
# checkpoint; its status goes to $st
killed() {
  local job=$1; shift
  "$LAUNCH" "$conf" --bin "$BIN" --restart 2 --pids "$T/$job.pids" "${common[@]}" "$@" \
    --output.run="$job" > "$T/$job.log" 2>&1 &
  lpid=$!
  for _ in $(seq 1 1200); do
    grep -q "checkpoint: .*/$job/checkpoint.bin after [1-9][0-9]*00 updates" "$T/$job.log" && break
    kill -0 $lpid 2>/dev/null || fail "$job ended before its first checkpoint"
    sleep 0.05
  done
  kill -KILL "$(awk '$1=="scheduler" {print $2; exit}' "$T/$job.pids")"
  st=timeout
  for _ in $(seq 1 2400); do
    if ! kill -0 $lpid 2>/dev/null; then wait $lpid; st=$?; break; fi
    sleep 0.05
  done
}
killed job
[ "$st" = 0 ] || fail "the job ended with '$st' after the scheduler's death, expected 0"
grep -q "restart 1/2: run job-r1 from $T/job" "$T/job.log" || fail "the launcher did not restart from the checkpoint"
t0=$(grep -o "resume: iterations [0-9]*" "$T/job.log" | head -1 | awk '{print $3}')
[ -n "$t0" ] || fail "the second run did not resume"
cmp -s "$T/ref/params.bin" "$T/job-r1/params.bin" ||
  fail "the resumed job's params.bin differs from the fault-free run's"
ok "scheduler killed; the job went on from the checkpoint after $t0 updates, exited 0, and its final values equal the fault-free run's bit for bit"

sparse=(--push.mode=sparse --push.density=0.05)
"$LAUNCH" "$conf" --bin "$BIN" "${common[@]}" "${sparse[@]}" --output.run=sref > "$T/sref.log" 2>&1 ||
  fail "the fault-free sparse run failed: $(tail -n 5 "$T/sref.log")"
killed sjob "${sparse[@]}"
[ "$st" = 0 ] || fail "the sparse job ended with '$st' after the scheduler's death, expected 0"
[ "$(grep -c "resume: residuals and threshold from $T/sjob/checkpoint-worker-" "$T/sjob.log")" = 2 ] ||
  fail "the sparse workers did not restore their residuals"
[ "$(grep -c "resume: momentum of \[" "$T/sjob.log")" = 2 ] || fail "the sparse servers did not restore their momentum"
acc() { python3 -c "import json;print(json.load(open('$T/$1/summary.json'))['test_accuracy'])"; }
a0=$(acc sref) a1=$(acc sjob-r1)
python3 -c "import sys; sys.exit(0 if abs($a0 - $a1) <= 0.01 else 1)" ||
  fail "the resumed sparse job's accuracy $a1 is more than 1 point from the fault-free $a0"
ok "sparse pushes: scheduler killed; residuals, thresholds and momentum restored; accuracy $a1 (fault-free $a0)"

"$LAUNCH" "$conf" --bin "$BIN" --restart 3 "${common[@]}" --sync.mode=bogus --output.run=bad > "$T/bad.log" 2>&1
st=$?
[ $st = 2 ] || fail "a conf error under --restart ended with $st, expected 2"
grep -q "restart 1/" "$T/bad.log" && fail "a conf error was retried"
ok "a conf error stops --restart at once (status 2)"
echo "3 passed, 0 failed"
