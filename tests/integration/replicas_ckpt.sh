#!/usr/bin/env bash
# Replicated servers with checkpoints ([fault] replicas = 2 and checkpoint_every; mlp with
# momentum, 2 servers, 2 workers, under ordo-launch --restart 2). Every server's momentum file
# covers each slice it holds, the ones it backs up included (their states count as their
# updates). Server 1 is SIGKILLed after the first checkpoint and not replaced
# (fault.restarts = 0): its backups take over and its file stops there. After a later
# checkpoint the scheduler is SIGKILLed: the launcher starts the job again from that
# checkpoint, and each server takes every slice's momentum from whichever server's file holds
# it at the checkpoint's iteration (server 1's own is stale). The job exits 0 and its final
# values equal a fault-free run's bit for bit.
source "$(dirname "$0")/lib.sh"
need_fmnist
LAUNCH=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}/scripts/ordo-launch
conf=$T/empty.ini
: > "$conf"
common=(--model.trainer=mlp --model.compute=cpu --model.batch=32 --model.iterations=600
        --model.seed=5 --optimizer.lr=0.05 --optimizer.momentum=0.9 --cluster.servers=2
        --cluster.workers=2 --fault.timeout_ms=2000 --fault.heartbeat_ms=200 --fault.replicas=2
        --fault.restarts=0 --fault.checkpoint_every=100 --output.save_params=true
        --output.dir="$T" --output.progress_every=0)

"$LAUNCH" "$conf" --bin "$BIN" "${common[@]}" --output.run=ref > "$T/ref.log" 2>&1 ||
  fail "the fault-free run failed: $(tail -n 5 "$T/ref.log")"
[ "$(grep -c "checkpoint: .*/ref/checkpoint-server-1.bin (momentum) after 600 updates" "$T/ref.log")" = 1 ] ||
  fail "server 1 of the fault-free run did not checkpoint every slice it holds"

# wait_for PATTERN WHAT: until the job's log has PATTERN
wait_for() {
  for _ in $(seq 1 2400); do
    grep -q "$1" "$T/job.log" && return
    kill -0 $lpid 2>/dev/null || fail "the job ended before $2"
    sleep 0.05
  done
  fail "no $2"
}
"$LAUNCH" "$conf" --bin "$BIN" --restart 2 --pids "$T/job.pids" "${common[@]}" --output.run=job \
  > "$T/job.log" 2>&1 &
lpid=$!
PID[launch]=$lpid
wait_for "checkpoint: .*/job/checkpoint.bin after [1-9]00 updates" "the first checkpoint"
kill -KILL "$(awk '$1 == "server" && $2 == 1 {print $3; exit}' "$T/job.pids")"
wait_for "recovered from the death of server 1" "the promotion of server 1's backups"
ckpt_at=$(grep -o "/job/checkpoint.bin after [0-9]*" "$T/job.log" | tail -1 | awk '{print $NF}')
wait_for "/job/checkpoint.bin after $((ckpt_at + 100)) updates" "a checkpoint after the promotion"
kill -KILL "$(awk '$1 == "scheduler" {print $2; exit}' "$T/job.pids")"
st=timeout
for _ in $(seq 1 2400); do
  if ! kill -0 $lpid 2>/dev/null; then wait $lpid; st=$?; break; fi
  sleep 0.05
done
[ "$st" = 0 ] || fail "the job ended with '$st' after server 1's and the scheduler's deaths, expected 0"
grep -q "restart 1/2: run job-r1 from $T/job" "$T/job.log" || fail "the launcher did not restart from the checkpoint"
t0=$(grep -o "resume: iterations [0-9]*" "$T/job.log" | head -1 | awk '{print $3}')
[ -n "$t0" ] && [ "$t0" -gt "$ckpt_at" ] || fail "the second run did not resume from a checkpoint after the promotion ($t0)"
grep -q "resume: momentum of [0-9]* slices after $t0 updates from $T/job/checkpoint-server-0.bin" "$T/job.log" ||
  fail "no server took momentum from server 0's file"
cmp -s "$T/ref/params.bin" "$T/job-r1/params.bin" ||
  fail "the resumed job's params.bin differs from the fault-free run's"
ok "server 1 killed after the checkpoint of $ckpt_at updates, the scheduler after a later one; the job went on from the checkpoint after $t0 updates (server 1's slices' momentum from server 0's file), exited 0, final values equal the fault-free run's bit for bit"
echo "1 passed, 0 failed"
