#!/usr/bin/env bash
# Bad input: a registration with a wrong token, random bytes on the server's and the
# scheduler's TCP ports, and malformed ZeroMQ messages leave the cluster running; the run
# then completes with every pulled value right.
source "$(dirname "$0")/lib.sh"
common=(--model.trainer=synthetic "--model.tensors=4KiB,1MiB" --model.iterations=2000
        --cluster.servers=1 --cluster.workers=2 --fault.timeout_ms=3000 --fault.heartbeat_ms=200
        --output.dir="$T" --output.run=bad --output.progress_every=0)
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
start server0 "$BIN/ordo-server" "${common[@]}" --cluster.scheduler="$ep"
sep=$(ready server0)

# a worker with the wrong token is refused and exits non-zero with a clear line
"$BIN/ordo-worker" "${common[@]}" --cluster.scheduler="$ep" --cluster.token=wrong > "$T/intruder.log" 2>&1
st=$?
[ $st -ne 0 ] || fail "a worker with a wrong token was accepted"
grep -q "refused registration: wrong cluster token" "$T/intruder.log" || fail "intruder got no clear refusal"
grep -q "wrong cluster token" "$T/scheduler.log" || fail "scheduler did not log the refusal"
ok "wrong token refused (worker exit $st)"

# the real workers start the job; the bad input arrives while it runs
for i in 0 1; do start worker$i "$BIN/ordo-worker" "${common[@]}" --cluster.scheduler="$ep"; done
for _ in $(seq 1 1200); do
  [ -f "$T/bad/metrics.jsonl" ] && [ "$(wc -l < "$T/bad/metrics.jsonl")" -ge 4 ] && break
  sleep 0.05
done

# random bytes straight onto the TCP ports (no ZeroMQ handshake)
for e in "$ep" "$sep"; do
  hp=${e#tcp://}; host=${hp%:*}; port=${hp##*:}
  for _ in 1 2 3; do
    head -c 4096 /dev/urandom > "/dev/tcp/$host/$port" 2>/dev/null || true
  done
done
# malformed and misplaced ZeroMQ messages
"$BIN/it_poke" "$sep" > "$T/poke-server.out" 2>&1 || fail "it_poke failed"
"$BIN/it_poke" "$ep" > "$T/poke-sched.out" 2>&1 || fail "it_poke failed"
grep -q "error answers" "$T/poke-server.out" || fail "it_poke did not finish"
n=$(grep -c '^ERROR' "$T/poke-server.out")
[ "$n" -ge 4 ] || fail "server answered only $n of the bad requests with an ERROR"
grep -q "no key 999999" "$T/poke-server.out" || fail "no 'no key' error"
grep -q "sender is not a worker" "$T/poke-server.out" || fail "no 'not a worker' error"
grep -q "a merged PUSH cannot carry a pull" "$T/poke-server.out" || fail "no 'merged push with a pull' error"
[ "$(grep -c "a probe PUSH needs one float32 payload frame and no group or pull flag" "$T/poke-server.out")" = 2 ] ||
  fail "the two bad calibration probes were not refused"
grep -q ": malformed" "$T/server0.log" || fail "server did not log malformed input"
kill -0 "${PID[scheduler]}" && kill -0 "${PID[server0]}" || fail "a daemon died on bad input"
ok "server answered $n bad requests with ERROR and kept running"

# the job runs to the end, every pulled value checked
for n in worker0 worker1 scheduler server0; do
  finish $n 60
  [ "$st" = 0 ] || fail "$n ended with '$st'"
done
grep -q "0 wrong" "$T/worker0.log" || fail "values were wrong"
[ -f "$T/bad/summary.json" ] || fail "no summary.json"
ok "the run completed after the bad input; summary written"
echo "1 passed, 0 failed"
