#!/usr/bin/env bash
# Chaos test (short): scripts/experiments/chaos.sh with a seeded schedule of 2 SIGKILLs, a
# server (fault.replicas = 2, a replacement joins) and a worker (fault.worker = restart), and a
# SIGSTOP/SIGCONT pause per run, and a run under fault.scheduler = restart with a scheduler
# SIGKILL and a server SIGKILL, on 3 servers and 3 workers: the synthetic job must end with
# every value, the final ones included, equal to the formula, the mlp (where Fashion-MNIST is
# installed) within 0.5 points of the fault-free run's test accuracy, every run with exit 0
# and every killed process recovered from.
source "$(dirname "$0")/lib.sh"
SRC=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# server kills need replicated servers: refused without [fault] replicas >= 2
bash "$SRC/scripts/experiments/chaos.sh" --bin "$BIN" --out "$T/ks" --kill-servers > "$T/ks.txt" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "needs \[fault\] replicas >= 2" "$T/ks.txt" ||
  fail "--kill-servers without replicas: status $rc, $(cat "$T/ks.txt")"
# replicated servers (3 servers, every slice on 2): seed 9's schedule kills server 2 (its
# backups take over, the launcher's replacement joins), pauses worker 0, then kills worker 0
printf '[cluster]\nservers = 3\n\n[fault]\nreplicas = 2\n' > "$T/replicas.ini"
bash "$SRC/scripts/experiments/chaos.sh" --bin "$BIN" --out "$T/chaos" --seed "${ORDO_CHAOS_SEED:-9}" \
  --kills 2 --pauses 1 --iterations 1500 --servers 3 --workers 3 --timeout-ms 3000 \
  --kill-servers --sched-kills 1 --conf "$T/replicas.ini" > "$T/chaos.txt" 2>&1
rc=$?
cat "$T/chaos.txt"
[ $rc = 0 ] || fail "chaos.sh failed (status $rc)"
grep -q '^synthetic-chaos,kill,server,[0-9]*,[0-9]*,,[0-9.]' "$T/chaos/faults.csv" ||
  fail "no server was killed and recovered from: $(cat "$T/chaos/faults.csv")"
grep -q '^synthetic-sched,schedkill,scheduler,0,[0-9]*,,[0-9.]*,[0-9.]' "$T/chaos/faults.csv" ||
  fail "no scheduler was killed and its run rebuilt: $(cat "$T/chaos/faults.csv")"
ok "chaos: $(grep -c '^| [sm]' "$T/chaos.txt") runs survived their faults, $(grep -c ',kill,server,' "$T/chaos/faults.csv") server kills and $(grep -c ',schedkill,' "$T/chaos/faults.csv") scheduler kills among them"
echo "1 passed, 0 failed"
