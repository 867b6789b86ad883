#!/usr/bin/env bash
# Replicated servers ([fault] replicas = 2, 2 servers, 2 workers) with the push and sync modes
# beyond dense bsp, on the synthetic job; SIGKILL server 1 mid-run each time.
# - merged pushes (push.mode = merged): a group's message carries several slices; the workers
#   send the parts the dead server had not acknowledged to the new primary, which leaves out
#   the slices it already holds. Every pulled value, the final ones included, is the
#   fault-free formula's ("0 wrong").
# - asp (sync.mode = asp): the workers are at different iterations; the backups hold each
#   slice's per-worker push clocks, so the promoted one applies every push exactly once: the
#   surviving server, primary of every slice, holds slices x workers x iterations updates.
# - ssp (sync.mode = ssp): the primary forwards each push it takes to the backups, which take
#   it as it did; every pulled value right, one push taken per push made; a replacement
#   cannot join (refused, saying why).
# Each time every worker takes the promotion; what each sent again is reported (it may be
# nothing: see took_promotion).
source "$(dirname "$0")/lib.sh"
iters=400
common=(--model.trainer=synthetic "--model.tensors=64KiB,1MiB,4KiB,16KiB,8KiB" --model.iterations=$iters
        --cluster.servers=2 --cluster.workers=2 --fault.timeout_ms=2000 --fault.heartbeat_ms=200
        --fault.replicas=2 --output.dir="$T" --output.progress_every=0)

# cluster RUN ARGS...: start a scheduler, 2 servers and 2 workers of run RUN
cluster() { local run=$1; shift; start_cluster "$run" 2 2 "$@"; }
# kill_mid RUN WHAT: SIGKILL server 1 once 150 worker-iterations are recorded, then every
# survivor must exit 0
kill_mid() {
  for _ in $(seq 1 1200); do
    [ -f "$T/$1/metrics.jsonl" ] && [ "$(wc -l < "$T/$1/metrics.jsonl")" -ge 150 ] && break
    sleep 0.05
  done
  kill -KILL "${PID[server1]}"
  at=$(wc -l < "$T/$1/metrics.jsonl")
  [ "$at" -lt $((2 * iters)) ] || fail "$2: the run ended before the kill"
  for n in scheduler server0 worker0 worker1; do
    finish $n 120
    [ "$st" = 0 ] || fail "$2, server 1 killed: $n ended with '$st', expected 0"
  done
  grep -q "server 1 (pid .*dead.*promoted backups" "$T/scheduler.log" || fail "$2: no promotion logged"
  took_promotion "$2"
}
# took_promotion WHAT: every worker applied the promotion (its KEYMAP line names what it sent
# again to the new primaries: $resent, per worker in $counts). The counts are reported, not
# asserted: a worker can have nothing left at the dead server when it dies, whatever the
# mode. A primary acknowledges a push only once every live backup holds it, so with server 1
# dead but not yet declared, server 0 holds back its acknowledgements of the slices server 1
# backs up; a worker whose requests to server 1 were all answered waits on server 0 alone,
# and at the promotion has nothing to send again (under ssp, too, a worker ahead waits on
# server 0's held pulls). Whether anything was lost or taken twice is what the values and
# update counts check.
took_promotion() {
  local n l
  resent=0 counts=""
  for n in worker0 worker1; do
    l=$(grep "the dead servers' backups are the primaries now; sent again" "$T/$n.log") ||
      fail "$1: $n did not take the promotion (no KEYMAP line naming the new primaries)"
    [[ $l =~ sent\ again\ ([0-9]+)\ pushes\ and\ ([0-9]+)\ pulls ]] ||
      fail "$1: $n: cannot read the counts of: $l"
    resent=$((resent + BASH_REMATCH[1] + BASH_REMATCH[2]))
    counts="$counts $n ${BASH_REMATCH[1]}+${BASH_REMATCH[2]}"
  done
}

cluster merged --push.mode=merged
kill_mid merged merged
grep -q "merged pushes: 5 keys in" "$T/worker0.log" || fail "merged: the workers did not merge their pushes"
for n in worker0 worker1; do
  grep -q "$iters iterations, [0-9]* pulled values checked, 0 wrong (the final values included)" "$T/$n.log" ||
    fail "merged: $n pulled wrong values after the promotion"
done
ok "merged pushes: server 1 killed after $at of $((2 * iters)) worker-iterations; survivors exit 0, every value right (the final ones included); pushes+pulls sent again:$counts"

cluster asp --sync.mode=asp
kill_mid asp asp
line=$(grep "shutdown:" "$T/server0.log") || fail "asp: server 0 logged no shutdown line"
slices=$(sed -n 's/.*primary of \([0-9]*\) slices holding \([0-9]*\) updates.*/\1/p' <<< "$line")
updates=$(sed -n 's/.*primary of \([0-9]*\) slices holding \([0-9]*\) updates.*/\2/p' <<< "$line")
done_iters=$(wc -l < "$T/asp/metrics.jsonl")
[ "$done_iters" = $((2 * iters)) ] || fail "asp: $done_iters worker-iterations recorded, expected $((2 * iters))"
[ -n "$slices" ] && [ "$slices" -ge 5 ] || fail "asp: server 0 is not the primary of every slice: $line"
[ "$updates" = $((slices * 2 * iters)) ] ||
  fail "asp: the surviving server holds $updates updates of its $slices slices, expected $((slices * 2 * iters)) (one per push): $line"
ok "asp: server 1 killed after $at worker-iterations; survivors exit 0; server 0 holds $updates updates = $slices slices x $((2 * iters)) pushes, none lost or applied twice ($(sed -n 's/.*, \([0-9]*\) re-sent pushes already in.*/\1/p' <<< "$line") re-sent pushes recognised; pushes+pulls sent again:$counts)"

# ssp (sync.mode = ssp, staleness 2): a primary holds pushes of later iterations, so it forwards
# each push it takes to the backups, which take it as it did; the synthetic job checks every
# pulled value against the formula with the staleness each answer reports. A replacement
# cannot join an ssp run (refused, saying why)
cluster ssp --sync.mode=ssp --sync.staleness=2
for _ in $(seq 1 1200); do
  [ -f "$T/ssp/metrics.jsonl" ] && [ "$(wc -l < "$T/ssp/metrics.jsonl")" -ge 150 ] && break
  sleep 0.05
done
kill -KILL "${PID[server1]}"
at=$(wc -l < "$T/ssp/metrics.jsonl")
# the replacement is started once the promotion is logged (it must find server 1 dead)
for _ in $(seq 1 3000); do grep -q "server 1 (pid .*dead.*promoted backups" "$T/scheduler.log" && break; sleep 0.02; done
grep -q "server 1 (pid .*dead.*promoted backups" "$T/scheduler.log" || fail "ssp: no promotion logged within 60 s of the kill"
ep=$(ready scheduler)
start server2 "$BIN/ordo-server" "${common[@]}" --output.run=ssp --sync.mode=ssp --sync.staleness=2 \
  --cluster.scheduler="$ep" --join
for n in scheduler server0 worker0 worker1; do
  finish $n 120
  [ "$st" = 0 ] || fail "ssp, server 1 killed: $n ended with '$st', expected 0"
done
[ "$at" -lt $((2 * iters)) ] || fail "ssp: the run ended before the kill"
finish server2 30
[ "$st" != 0 ] || fail "ssp: a replacement server joined"
grep -q "sync.mode = ssp: a replacement cannot be brought up to date" "$T/scheduler.log" ||
  fail "ssp: the join's refusal does not say why"
took_promotion ssp
for n in worker0 worker1; do
  grep -q "$iters iterations, [1-9][0-9]* pulled values checked, 0 wrong (the final values included)" "$T/$n.log" ||
    fail "ssp: $n pulled wrong values after the promotion"
done
line=$(grep "shutdown:" "$T/server0.log") || fail "ssp: server 0 logged no shutdown line"
slices=$(sed -n 's/.*primary of \([0-9]*\) slices holding \([0-9]*\) updates.*/\1/p' <<< "$line")
updates=$(sed -n 's/.*primary of \([0-9]*\) slices holding \([0-9]*\) updates.*/\2/p' <<< "$line")
[ -n "$slices" ] && [ "$slices" -ge 5 ] && [ "$updates" = $((slices * 2 * iters)) ] ||
  fail "ssp: the surviving server holds $updates pushes of its $slices slices, expected one per push: $line"
ok "ssp: server 1 killed after $at worker-iterations; survivors exit 0, every value right with its staleness, server 0 took $updates pushes = $slices slices x $((2 * iters)), pushes+pulls sent again:$counts, a replacement was refused"
echo "3 passed, 0 failed"
