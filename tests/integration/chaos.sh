#!/usr/bin/env bash
# Chaos test (short): scripts/experiments/chaos.sh with a seeded schedule of 2 worker
# SIGKILLs (fault.worker = restart) and 2 SIGSTOP/SIGCONT pauses of workers and servers per
# run, on 2 servers and 3 workers: the synthetic job must end with every value, the final
# ones included, equal to the formula, the mlp (where Fashion-MNIST is installed) within 0.5
# points of the fault-free run's test accuracy, every run with exit 0 and every killed
# worker back. Server kills are the experiment's option --kill-servers (replicated servers).
source "$(dirname "$0")/lib.sh"
SRC=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# server kills need replicated servers: refused without [fault] replicas >= 2
bash "$SRC/scripts/experiments/chaos.sh" --bin "$BIN" --out "$T/ks" --kill-servers > "$T/ks.txt" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "needs \[fault\] replicas >= 2" "$T/ks.txt" ||
  fail "--kill-servers without replicas: status $rc, $(cat "$T/ks.txt")"
bash "$SRC/scripts/experiments/chaos.sh" --bin "$BIN" --out "$T/chaos" --seed "${ORDO_CHAOS_SEED:-7}" \
  --kills 2 --pauses 2 --iterations 1500 --servers 2 --workers 3 --timeout-ms 5000 > "$T/chaos.txt" 2>&1
rc=$?
cat "$T/chaos.txt"
[ $rc = 0 ] || fail "chaos.sh failed (status $rc)"
ok "chaos: $(grep -c '^| [sm]' "$T/chaos.txt") runs survived their faults"
echo "1 passed, 0 failed"
