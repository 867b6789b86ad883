#!/usr/bin/env bash
# Memory in steady state (docs/fault.md): a long synthetic job (ORDO_SOAK_ITERS iterations,
# 20000 by default; tiny tensors) with 3 workers and 2 servers. A sampler reads the resident
# memory of every process from /proc/PID/status each time worker 0 reports progress (a line
# per 1/200 of the run) and every 50 ms in between, each sample tagged with the iteration
# worker 0 has reached. The verdict
# is by iterations, not seconds, so it is the same on a machine twice as fast or twice as
# slow: after a warm-up quarter of the iterations, no process's largest RSS in the last
# quarter may exceed its largest in the second quarter by more than 10 % + 1 MiB, and the
# run must finish with every value right. A run so short that either quarter has fewer than
# 8 samples cannot be judged: a skip (exit 77) saying so, never a verdict.
source "$(dirname "$0")/lib.sh"
ITERS=${ORDO_SOAK_ITERS:-20000}
MIN_SAMPLES=8
every=$(( ITERS / 200 > 0 ? ITERS / 200 : 1 ))
common=(--model.trainer=synthetic "--model.tensors=4KiB,16KiB" --model.iterations=$ITERS
        --cluster.servers=2 --cluster.workers=3 --fault.timeout_ms=3000 --fault.heartbeat_ms=100
        --output.dir="$T" --output.run=soak --output.progress_every=0)
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
for s in 0 1; do start server$s "$BIN/ordo-server" "${common[@]}" --cluster.scheduler="$ep"; done
start worker0 "$BIN/ordo-worker" "${common[@]}" --output.progress_every=$every --cluster.scheduler="$ep"
for w in 1 2; do start worker$w "$BIN/ordo-worker" "${common[@]}" --cluster.scheduler="$ep"; done
names=(scheduler server0 server1 worker0 worker1 worker2)
pids=()
for n in "${names[@]}"; do pids+=("${PID[$n]}"); done
# rss.txt: one line per sample, "ITERATION RSS_KIB..." in the order of names; the sampler
# ends with worker 0
python3 - "$T/worker0.log" "$T/rss.txt" "${pids[@]}" <<'PY' || fail "the RSS sampler failed"
import re, sys, time
log, out, pids = sys.argv[1], sys.argv[2], sys.argv[3:]
it, tail = 0, b""
pat = re.compile(rb"iteration (\d+)/\d+")
def rss(pid):
    try:
        with open("/proc/%s/status" % pid, "rb") as f:
            for l in f:
                if l.startswith(b"VmRSS:"):
                    return int(l.split()[1])
    except OSError:
        pass
    return 0  # exited (or a zombie, which has no VmRSS)
# a sample each time worker 0 reports a new iteration, and every 50 ms in between: the
# samples follow the iterations whatever the machine's speed
last_it, last_t = -1, 0.0
with open(log, "rb") as lf, open(out, "w") as o:
    while True:
        tail += lf.read()
        *done, tail = tail.split(b"\n")
        for l in done:
            m = pat.search(l)
            if m:
                it = int(m.group(1))
        now = time.monotonic()
        if it != last_it or now - last_t >= 0.05:
            row = [rss(p) for p in pids]
            if row[3] == 0:
                break
            o.write("%d %s\n" % (it, " ".join(map(str, row))))
            last_it, last_t = it, now
        time.sleep(0.001)
PY
for n in "${names[@]}"; do
  finish $n 120
  [ "$st" = 0 ] || fail "$n ended with '$st'"
done
grep -q " 0 wrong" "$T/worker0.log" || fail "values were wrong"
rc=0
python3 - "$T/rss.txt" "$ITERS" "$MIN_SAMPLES" "${names[@]}" > "$T/verdict.txt" <<'PY' || rc=$?
import sys
path, iters, least, names = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
rows = [[int(x) for x in l.split()] for l in open(path) if l.split()]
rows = [r for r in rows if 0 not in r[1:]]  # samples of a process that already exited
second = [r[1:] for r in rows if iters / 4 <= r[0] < iters / 2]
last = [r[1:] for r in rows if r[0] >= 3 * iters / 4]
if len(second) < least or len(last) < least:
    print("the run was too short to judge: %d samples in the second quarter of the %d iterations"
          " and %d in the last (at least %d each are needed); raise ORDO_SOAK_ITERS"
          % (len(second), iters, len(last), least))
    sys.exit(77)
bad = []
for i, name in enumerate(names):
    early = max(r[i] for r in second)
    late = max(r[i] for r in last)
    print("%-9s RSS max in iterations %d-%d: %6d KiB, in %d-%d: %6d KiB (%d and %d samples)"
          % (name, iters // 4, iters // 2, early, 3 * iters // 4, iters, late, len(second), len(last)))
    if late > early * 1.10 + 1024:
        bad.append(name)
if bad:
    print("grew: " + ", ".join(bad))
    sys.exit(1)
PY
cat "$T/verdict.txt"
[ $rc = 77 ] && skip "$(tail -n 1 "$T/verdict.txt")"
[ $rc = 0 ] || fail "resident memory grew: $(tail -n 1 "$T/verdict.txt")"
ok "RSS flat over $ITERS iterations ($(wc -l < "$T/rss.txt") samples)"
echo "1 passed, 0 failed"
