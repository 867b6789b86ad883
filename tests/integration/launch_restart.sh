#!/usr/bin/env bash
# scripts/ordo-launch --restart N: the scheduler of an mlp run (2 servers, 2 workers, a
# checkpoint every 100 updates) is SIGKILLed after a checkpoint; the launcher starts the job
# again from that checkpoint (fault.resume), it completes with exit 0, and its final values
# equal bit for bit those of the same run without the kill. A conf error is not retried.
source "$(dirname "$0")/lib.sh"
need_fmnist
LAUNCH=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}/scripts/ordo-launch
conf=$T/empty.ini
: > "$conf"
common=(--model.trainer=mlp --model.compute=cpu --model.batch=32 --model.iterations=1500
        --model.seed=5 --optimizer.lr=0.05 --optimizer.momentum=0.9 --cluster.servers=2
        --cluster.workers=2 --fault.timeout_ms=2000 --fault.heartbeat_ms=200
        --fault.checkpoint_every=100 --output.save_params=true --output.dir="$T"
        --output.progress_every=0)

"$LAUNCH" "$conf" --bin "$BIN" "${common[@]}" --output.run=ref > "$T/ref.log" 2>&1 ||
  fail "the fault-free run failed: $(tail -n 5 "$T/ref.log")"

"$LAUNCH" "$conf" --bin "$BIN" --restart 2 --pids "$T/job.pids" "${common[@]}" --output.run=job \
  > "$T/job.log" 2>&1 &
lpid=$!
for _ in $(seq 1 1200); do
  grep -q "checkpoint: .*/job/checkpoint.bin after [1-9][0-9]*00 updates" "$T/job.log" && break
  kill -0 $lpid 2>/dev/null || fail "the job ended before its first checkpoint"
  sleep 0.05
done
kill -KILL "$(awk '$1=="scheduler" {print $2; exit}' "$T/job.pids")"
st=timeout
for _ in $(seq 1 2400); do
  if ! kill -0 $lpid 2>/dev/null; then wait $lpid; st=$?; break; fi
  sleep 0.05
done
[ "$st" = 0 ] || fail "the job ended with '$st' after the scheduler's death, expected 0"
grep -q "restart 1/2: run job-r1 from $T/job" "$T/job.log" || fail "the launcher did not restart from the checkpoint"
t0=$(grep -o "resume: iterations [0-9]*" "$T/job.log" | head -1 | awk '{print $3}')
[ -n "$t0" ] || fail "the second run did not resume"
cmp -s "$T/ref/params.bin" "$T/job-r1/params.bin" ||
  fail "the resumed job's params.bin differs from the fault-free run's"
ok "scheduler killed; the job went on from the checkpoint after $t0 updates, exited 0, and its final values equal the fault-free run's bit for bit"

"$LAUNCH" "$conf" --bin "$BIN" --restart 3 "${common[@]}" --sync.mode=bogus --output.run=bad > "$T/bad.log" 2>&1
st=$?
[ $st = 2 ] || fail "a conf error under --restart ended with $st, expected 2"
grep -q "restart 1/" "$T/bad.log" && fail "a conf error was retried"
ok "a conf error stops --restart at once (status 2)"
echo "2 passed, 0 failed"
