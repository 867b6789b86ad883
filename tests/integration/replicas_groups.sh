#!/usr/bin/env bash
# Replicated servers ([fault] replicas = 2, 2 servers) on the mlp (Fashion-MNIST; skips without
# it) with intra-host groups and with backup workers; SIGKILL server 1 mid-run each time.
# - host groups (4 workers, cluster.local_size = 2, intra.backend = shm): each key's group
#   owner pushes the group's sum and sends again what the dead server had not answered; the
#   survivors exit 0 and params.bin is the fault-free run's bit for bit.
# - backup workers (sync.backup = 1 of 2 workers; which push makes each update depends on
#   timing, so no two runs are alike: fault-free runs differ by up to 2 points here): the
#   survivors exit 0, the test accuracy is within 3 points of a fault-free run's, and the
#   surviving server applied each slice once per iteration (its slices x the run's
#   iterations, summary.json: the batch service sets their number; a re-sent push of an
#   applied iteration is answered as a late one, never applied).
source "$(dirname "$0")/lib.sh"
need_fmnist
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
iters=120
common=(-c "$root/conf/mlp.ini" --model.epochs=0 --model.iterations=$iters --fault.replicas=2
        --fault.timeout_ms=3000 --fault.heartbeat_ms=200 --output.dir="$T" --output.progress_every=0
        --output.save_params=true)

# cluster RUN WORKERS ARGS...: a scheduler, 2 servers and WORKERS workers of run RUN
cluster() { local run=$1 nw=$2; shift 2; start_cluster "$run" 2 "$nw" "$@"; }
# pair NAME WORKERS ARGS...: a fault-free run ref-NAME, then kill-NAME with server 1 SIGKILLed
# once half of its worker-iterations are recorded; every survivor must exit 0
pair() {
  local name=$1 nw=$2; shift 2
  local workers; workers=$(seq -f "worker%g" 0 $((nw - 1)))
  cluster "ref-$name" "$nw" "$@"
  for n in scheduler server0 server1 $workers; do
    finish $n 150
    [ "$st" = 0 ] || fail "$name, fault-free run: $n ended with '$st'"
  done
  cluster "kill-$name" "$nw" "$@"
  for _ in $(seq 1 2400); do
    [ -f "$T/kill-$name/metrics.jsonl" ] && [ "$(wc -l < "$T/kill-$name/metrics.jsonl")" -ge $((nw * iters / 2)) ] && break
    sleep 0.05
  done
  at=$(wc -l < "$T/kill-$name/metrics.jsonl")
  [ "$at" -lt $((nw * iters)) ] || fail "$name: the run ended before the kill"
  kill -KILL "${PID[server1]}"
  for n in scheduler server0 $workers; do
    finish $n 150
    [ "$st" = 0 ] || fail "$name, server 1 killed: $n ended with '$st', expected 0"
  done
  grep -q "server 1 (pid .*dead.*promoted backups" "$T/scheduler.log" || fail "$name: no promotion logged"
}
acc() { python3 -c "import json; print(json.load(open('$T/$1/summary.json'))['test_accuracy'])"; }
updates() { sed -n 's/.*primary of \([0-9]*\) slices holding \([0-9]*\) updates.*/\1 \2/p' "$T/server0.log"; }

pair groups 4 --cluster.workers=4 --cluster.local_size=2 --intra.backend=shm
grep -q "intra: group 0 member 1 of 2" "$T/worker1.log" || fail "groups: worker 1 is not in a group"
cmp -s "$T/ref-groups/params.bin" "$T/kill-groups/params.bin" || fail "groups: params.bin differs from the fault-free run's"
read -r slices n <<< "$(updates)"
[ -n "$slices" ] && [ "$n" = $((slices * iters)) ] || fail "groups: server 0 holds '$n' updates of its '$slices' slices, expected one per iteration"
ok "host groups (shm, 2 x 2 workers): server 1 killed after $at of $((4 * iters)) worker-iterations; survivors exit 0, params.bin identical"

pair backup 2 --sync.backup=1
a_ref=$(acc ref-backup) a_kill=$(acc kill-backup)
python3 -c "import sys; sys.exit(0 if abs($a_kill - $a_ref) <= 0.03 else 1)" ||
  fail "backup: test accuracy $a_kill with a server killed, $a_ref without: more than 3 points apart"
read -r slices n <<< "$(updates)"
run_iters=$(python3 -c "import json; print(json.load(open('$T/kill-backup/summary.json'))['iterations'])")
[ -n "$slices" ] && [ "$n" = $((slices * run_iters)) ] ||
  fail "backup: server 0 holds '$n' updates of its '$slices' slices, expected one per iteration ($run_iters)"
ok "backup workers (1 of 2): server 1 killed after $at worker-iterations; survivors exit 0, test accuracy $a_kill (fault-free $a_ref), $n updates = $slices slices x $run_iters iterations"

out=$("$BIN/ordo-scheduler" "${common[@]}" --cluster.workers=4 --cluster.local_size=2 --intra.backend=nccl \
  --cluster.scheduler=tcp://127.0.0.1:0 2>&1)
[ $? = 2 ] || fail "replicas with intra.backend = nccl was not refused as a conf error"
grep -q "fault.replicas = 2 with intra.backend = nccl is not supported" <<< "$out" || fail "nccl refusal: $out"
ok "replicas with intra.backend = nccl is refused, naming the pair and the reason"
echo "3 passed, 0 failed"
