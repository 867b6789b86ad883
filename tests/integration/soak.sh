#!/usr/bin/env bash
# Memory in steady state (docs/fault.md): a long synthetic job (ORDO_SOAK_ITERS iterations,
# 20000 by default; tiny tensors) with 3 workers and 2 servers, the resident memory of every
# process sampled from /proc/PID/status once a second. After a warm-up quarter, no process's
# largest RSS in the last quarter may exceed its largest in the second quarter by more than
# 10 % + 1 MiB, and the run must finish with every value right.
source "$(dirname "$0")/lib.sh"
ITERS=${ORDO_SOAK_ITERS:-20000}
common=(--model.trainer=synthetic "--model.tensors=4KiB,16KiB" --model.iterations=$ITERS
        --cluster.servers=2 --cluster.workers=3 --fault.timeout_ms=3000 --fault.heartbeat_ms=100
        --output.dir="$T" --output.run=soak --output.progress_every=0)
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
for s in 0 1; do start server$s "$BIN/ordo-server" "${common[@]}" --cluster.scheduler="$ep"; done
for w in 0 1 2; do start worker$w "$BIN/ordo-worker" "${common[@]}" --cluster.scheduler="$ep"; done
names=(scheduler server0 server1 worker0 worker1 worker2)
: > "$T/rss.txt"
while kill -0 "${PID[worker0]}" 2>/dev/null; do
  line=""
  for n in "${names[@]}"; do
    r=$(awk '/^VmRSS/ {print $2}' "/proc/${PID[$n]}/status" 2>/dev/null)
    line="$line ${r:-0}"
  done
  echo "$line" >> "$T/rss.txt"
  sleep 1
done
for n in "${names[@]}"; do
  finish $n 120
  [ "$st" = 0 ] || fail "$n ended with '$st'"
done
grep -q " 0 wrong" "$T/worker0.log" || fail "values were wrong"
python3 - "$T/rss.txt" "${names[@]}" <<'PY' || fail "resident memory grew"
import sys
rows = [[int(x) for x in l.split()] for l in open(sys.argv[1]) if l.split()]
rows = [r for r in rows if 0 not in r]  # samples of a process that already exited
names = sys.argv[2:]
n = len(rows)
if n < 8:
    print("SKIP-LIKE: only %d samples" % n)
    sys.exit(0 if n >= 4 else 1)
q = n // 4
bad = []
for i, name in enumerate(names):
    early = max(r[i] for r in rows[q:2 * q])
    late = max(r[i] for r in rows[3 * q:])
    print("%-9s RSS second quarter max %6d KiB, last quarter max %6d KiB (%d samples)" % (name, early, late, n))
    if late > early * 1.10 + 1024:
        bad.append(name)
assert not bad, "grew: " + ", ".join(bad)
PY
ok "RSS flat over $ITERS iterations ($(wc -l < "$T/rss.txt") samples)"
echo "1 passed, 0 failed"
