#!/usr/bin/env bash
# Limits on untrusted input ([net] max_message_mb): a peer that sends a frame above the limit
# to a live server is cut off and logged, the server goes on answering (a new connection's bad
# request gets its ERROR), and the run completes with every pulled value right.
source "$(dirname "$0")/lib.sh"
# The run must outlast the oversized frames below (about 10 s, most of it it_poke waiting 5 s
# for the scheduler's answer that never comes): each iteration waits 20 ms (a straggle delay
# on every one), so 1000 iterations last 20 s or more however fast the machine moves 1 MiB.
common=(--model.trainer=synthetic "--model.tensors=4KiB,1MiB" --model.iterations=1000
        --straggle.probability=1 --straggle.delay_ms=20
        --cluster.servers=1 --cluster.workers=2 --fault.timeout_ms=5000 --fault.heartbeat_ms=200
        --order.partition_bytes=1MiB --net.max_message_mb=2
        --output.dir="$T" --output.run=lim --output.progress_every=0)
start scheduler "$BIN/ordo-scheduler" "${common[@]}" --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
start server0 "$BIN/ordo-server" "${common[@]}" --cluster.scheduler="$ep"
sep=$(ready server0)
for i in 0 1; do start worker$i "$BIN/ordo-worker" "${common[@]}" --cluster.scheduler="$ep"; done
for _ in $(seq 1 1200); do
  [ -f "$T/lim/metrics.jsonl" ] && [ "$(wc -l < "$T/lim/metrics.jsonl")" -ge 4 ] && break
  sleep 0.05
done

# a run whose chunks do not fit under the limit is refused up front
timeout 20 "$BIN/ordo-scheduler" "${common[@]}" --model.tensors=4KiB,3MiB --order.partition_bytes=4MiB \
  --order.segment_bytes=0 --cluster.scheduler=tcp://127.0.0.1:0 > "$T/badconf.out" 2>&1 &&
  fail "a chunk above net.max_message_mb was accepted"
grep -q "would not fit in net.max_message_mb" "$T/badconf.out" || fail "no clear line for a chunk above the limit"
ok "partition above the message limit refused: $(head -1 "$T/badconf.out")"

# 8 MiB frames to the server and to the scheduler, while the run goes on; the server answers
# the next connection's bad request (the scheduler drops requests of unregistered peers)
"$BIN/it_poke" --oversize 8 "$sep" > "$T/oversize.out" 2>&1 || fail "no answer after the oversized frame: $(cat "$T/oversize.out")"
grep -q "then ERROR" "$T/oversize.out" || fail "the server did not answer after the oversized frame"
ok "server: $(cat "$T/oversize.out")"
"$BIN/it_poke" --oversize 8 "$ep" > "$T/oversize-sched.out" 2>&1
# (a daemon killed by the frame would end non-zero: the exit statuses are checked below)
grep -q "net.max_message_mb = 2 MiB" "$T/server0.log" || fail "the server did not log the cut-off peer"
grep -q "net.max_message_mb = 2 MiB" "$T/scheduler.log" || fail "the scheduler did not log the cut-off peer"
ok "server log: $(grep -m1 "max_message_mb" "$T/server0.log")"

for n in worker0 worker1 scheduler server0; do
  finish $n 90
  [ "$st" = 0 ] || fail "$n ended with '$st'"
done
grep -q "0 wrong" "$T/worker0.log" || fail "values were wrong"
ok "the run completed after the oversized frames"
echo "1 passed, 0 failed"
