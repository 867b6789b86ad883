#!/usr/bin/env bash
# Partitions (docs/durability.md, "Partitions"): two hosts on network namespaces joined by a veth
# pair; host A runs the scheduler, the servers and worker 0, host B the member whose link is
# cut (`ip link set down` on B's end):
#   1. worker 1 on B, cut for 1 s (a third of fault.timeout_ms): nobody is declared dead, and
#      every value and the final values' hash are the fault-free run's;
#   2. worker 1 on B, cut for longer than the timeout under fault.worker = restart: it is
#      declared dead, a new process takes rank 1 on host A, and once the link is back the old
#      one ends without a value changed (every value, the hash and each server's update count
#      as fault-free);
#   3. server 1 on B with fault.replicas = 2, cut for longer than the timeout: its slices are
#      promoted to server 0 and the run ends with every value and the hash as fault-free; the
#      cut-off server ends;
#   4. the scheduler alone on B (fault.scheduler = restart), cut for 1 s: nobody is found
#      silent, every value and the hash as fault-free;
#   5. the same cut for 5 s: the members find the scheduler silent and train on, the scheduler
#      hears none of them and declares nobody dead (it takes itself as the one cut off), and
#      once the link is back the members register again with it (both servers, and the
#      workers still training): every value, the hash and metrics.jsonl as fault-free.
# Namespaces are deleted on every exit path. Needs root; skips where namespaces do not work.
source "$(dirname "$0")/lib.sh"
A=ordo-part-$$-a B=ordo-part-$$-b VA=opt$$a VB=opt$$b NET=10.213.71
trap 'for p in "${PID[@]}"; do kill -KILL "$p" 2>/dev/null; done; netns_cleanup "$A" "$B" "$VA"; cleanup_all' EXIT
two_hosts "$A" "$B" "$VA" "$VB" "$NET"
ITERS=1000
common=(--model.trainer=synthetic "--model.tensors=64KiB,256KiB,16KiB" --cluster.servers=2
        --cluster.workers=2 --model.iterations=$ITERS --fault.timeout_ms=3000
        --fault.timeout_max_ms=3000 --fault.heartbeat_ms=100 --fault.startup_ms=60000
        --output.dir="$T" --output.progress_every=0)

hash_of() { grep -ho "final values after $ITERS updates: fnv1a [0-9a-f]*" "$@" | awk '{print $NF}' | sort -u; }
updates_of() { grep -o "shutdown: [0-9]* updates applied" "$T/$1.log" | awk '{print $2}'; }
wait_iters() { # wait_iters RUN N: until RUN's metrics.jsonl has N lines (60 s)
  for _ in $(seq 1 1200); do
    [ -f "$T/$1/metrics.jsonl" ] && [ "$(wc -l < "$T/$1/metrics.jsonl")" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "$1 did not reach $2 reports"
}
# cluster RUN WHERE_SERVER1 WHERE_WORKER1 ARGS...: scheduler, server 0 and worker 0 on A, server
# 1 and worker 1 where told (A or B), ARGS after the common ones
cluster() {
  local run=$1 s1=$2 w1=$3 ep; shift 3
  local addr_a=$NET.1 addr_b=$NET.2
  start scheduler ip netns exec "$A" "$BIN/ordo-scheduler" "${common[@]}" "$@" --output.run="$run" \
    "--cluster.scheduler=tcp://$addr_a:0"
  ep=$(ready scheduler)
  start server0 ip netns exec "$A" "$BIN/ordo-server" "${common[@]}" "$@" --output.run="$run" \
    "--cluster.scheduler=$ep" --cluster.rank=0 "--cluster.host=$addr_a"
  local ns1=$A h1=$addr_a
  [ "$s1" = B ] && ns1=$B h1=$addr_b
  start server1 ip netns exec "$ns1" "$BIN/ordo-server" "${common[@]}" "$@" --output.run="$run" \
    "--cluster.scheduler=$ep" --cluster.rank=1 "--cluster.host=$h1"
  start worker0 ip netns exec "$A" "$BIN/ordo-worker" "${common[@]}" "$@" --output.run="$run" \
    "--cluster.scheduler=$ep" --cluster.rank=0 "--cluster.host=$addr_a"
  ns1=$A h1=$addr_a
  [ "$w1" = B ] && ns1=$B h1=$addr_b
  start worker1 ip netns exec "$ns1" "$BIN/ordo-worker" "${common[@]}" "$@" --output.run="$run" \
    "--cluster.scheduler=$ep" --cluster.rank=1 "--cluster.host=$h1"
  EP=$ep
}
# ended NAMES...: each process ended with status 0 (120 s)
ended() {
  for n in "$@"; do
    finish "$n" 120
    [ "$st" = 0 ] || fail "$n ended with '$st'"
  done
}
cut_link() { ip -n "$B" link set "$VB" down; }
heal_link() { ip -n "$B" link set "$VB" up; }
# exact RUN NAMES...: the named workers checked every value and end at the fault-free hash
exact() {
  local run=$1 n=0 f; shift
  for f in "$@"; do grep -q "pulled values checked, 0 wrong (the final values included)" "$T/$f.log" && n=$((n + 1)); done
  [ $n = $# ] || fail "$run: $n of the $# live workers checked every value without a wrong one"
  local files=(); for f in "$@"; do files+=("$T/$f.log"); done
  [ "$(hash_of "${files[@]}")" = "$ref_hash" ] || fail "$run: the final hash $(hash_of "${files[@]}") is not the fault-free $ref_hash"
}
keep_logs() { for n in "$@"; do [ -f "$T/$n.log" ] && mv "$T/$n.log" "$T/$1-$n.log"; done; }

# the fault-free run, across the two hosts
cluster ref A B
ended worker0 worker1 server0 server1 scheduler
ref_hash=$(hash_of "$T/worker0.log" "$T/worker1.log")
ref_u0=$(updates_of server0) ref_u1=$(updates_of server1)
[ -n "$ref_hash" ] && [ -n "$ref_u0" ] && [ -n "$ref_u1" ] || fail "the fault-free run did not report its hash and updates"
for n in worker0 worker1 server0 server1 scheduler; do mv "$T/$n.log" "$T/ref-$n.log"; done

# 1. a cut shorter than the timeout
cluster short A B --fault.worker=restart
wait_iters short 200
cut_link; sleep 1; heal_link
ended worker0 worker1 server0 server1 scheduler
grep -q "is dead" "$T/scheduler.log" && fail "a 1 s cut made the scheduler declare a member dead"
[ -f "$T/short/membership.jsonl" ] && fail "a 1 s cut was recorded as a membership change: $(cat "$T/short/membership.jsonl")"
exact short worker0 worker1
ok "worker host cut for 1 s (timeout 3 s): nobody declared dead, every value and the hash as fault-free"
for n in worker0 worker1 server0 server1 scheduler; do mv "$T/$n.log" "$T/short-$n.log"; done

# 2. a worker host cut for longer than the timeout, under restart
cluster long A B --fault.worker=restart
wait_iters long 200
cut_link
for _ in $(seq 1 600); do grep -q '"event":"death","worker":1' "$T/long/membership.jsonl" 2>/dev/null && break; sleep 0.05; done
grep -q '"event":"death","worker":1' "$T/long/membership.jsonl" 2>/dev/null || { heal_link; fail "worker 1 behind the cut was not declared dead"; }
start worker1b ip netns exec "$A" "$BIN/ordo-worker" "${common[@]}" --fault.worker=restart \
  --output.run=long "--cluster.scheduler=$EP" --cluster.rank=1 "--cluster.host=$NET.1"
for _ in $(seq 1 1200); do grep -q '"event":"recovered","worker":1' "$T/long/membership.jsonl" && break; sleep 0.05; done
heal_link
grep -q '"event":"recovered","worker":1' "$T/long/membership.jsonl" || fail "the new worker 1 did not rejoin"
finish worker1 60
[ "$st" != 0 ] && [ "$st" != timeout ] || fail "the cut-off worker 1 ended with '$st' once the link was back"
ended worker0 worker1b server0 server1 scheduler
exact long worker0 worker1b
u0=$(updates_of server0) u1=$(updates_of server1)
[ "$u0" = "$ref_u0" ] && [ "$u1" = "$ref_u1" ] ||
  fail "the servers applied $u0 and $u1 updates, the fault-free run $ref_u0 and $ref_u1"
how=$(grep -ho "fenced: .*\|the scheduler has been silent for [0-9]* ms" "$T/worker1.log" | head -1 | cut -c1-60)
ok "worker host cut past the timeout: declared dead, replaced, the old process ended ($how); every value, the hash and the servers' $u0 and $u1 updates as fault-free"
for n in worker0 worker1 worker1b server0 server1 scheduler; do mv "$T/$n.log" "$T/long-$n.log"; done

# 3. a server host cut for longer than the timeout, with replicas
cluster srv B A --fault.replicas=2
wait_iters srv 200
cut_link
for _ in $(seq 1 600); do grep -q "promot" "$T/scheduler.log" && break; sleep 0.05; done
grep -q "promot" "$T/scheduler.log" || { heal_link; fail "server 1 behind the cut was not replaced by its backups"; }
sleep 0.5
heal_link
finish server1 60
[ "$st" != timeout ] || fail "the cut-off server 1 did not end"
old_st=$st
ended worker0 worker1 server0 scheduler
exact srv worker0 worker1
ok "server host cut past the timeout (replicas = 2): its slices promoted, the run ended with every value and the hash as fault-free; the old server ended (status $old_st)"
for n in worker0 worker1 server0 server1 scheduler; do mv "$T/$n.log" "$T/srv-$n.log"; done

# 4 and 5. the scheduler's host (B; everyone else on A) under fault.scheduler = restart, cut
# shorter and longer than the timeout
sched_on_b() {
  local run=$1 i; shift
  start scheduler ip netns exec "$B" "$BIN/ordo-scheduler" "${common[@]}" "$@" --output.run="$run" \
    "--cluster.scheduler=tcp://$NET.2:0"
  EP=$(ready scheduler)
  for i in 0 1; do
    start server$i ip netns exec "$A" "$BIN/ordo-server" "${common[@]}" "$@" --output.run="$run" \
      "--cluster.scheduler=$EP" --cluster.rank=$i "--cluster.host=$NET.1"
    start worker$i ip netns exec "$A" "$BIN/ordo-worker" "${common[@]}" "$@" --output.run="$run" \
      "--cluster.scheduler=$EP" --cluster.rank=$i "--cluster.host=$NET.1"
  done
}
sched_on_b schedshort --fault.scheduler=restart
wait_iters schedshort 200
cut_link; sleep 1; heal_link
ended worker0 worker1 server0 server1 scheduler
grep -q "is dead\|silent for" "$T"/{scheduler,server0,server1,worker0,worker1}.log &&
  fail "a 1 s cut of the scheduler's host was taken for a death: $(grep -h "is dead\|silent for" "$T"/*.log | head -2)"
exact schedshort worker0 worker1
ok "the scheduler's host cut for 1 s (timeout 3 s): nobody found silent, every value and the hash as fault-free"
for n in worker0 worker1 server0 server1 scheduler; do mv "$T/$n.log" "$T/schedshort-$n.log"; done

# longer than the timeout: the members find the scheduler silent and train on; the scheduler
# hears none of them and takes itself as the one cut off (nobody declared dead); once the
# link is back the members register again with it and the run ends as fault-free
sched_on_b schedlong --fault.scheduler=restart
wait_iters schedlong 200
cut_link; sleep 5; heal_link
ended worker0 worker1 server0 server1 scheduler
grep -q "every member has been silent for [0-9]* ms: this scheduler takes itself as the one cut off" \
  "$T/scheduler.log" || fail "the cut-off scheduler did not take itself as the one cut off"
# the servers wait for the SHUTDOWN and always find the scheduler silent; a worker that
# finished its iterations during the cut may not have yet when its DONE gets through
back=$(grep -c "found this scheduler silent and registered again: welcomed back" "$T/scheduler.log")
servers_back=$(grep -c "server [01] (pid .*) found this scheduler silent and registered again" "$T/scheduler.log")
[ "$servers_back" = 2 ] || fail "$servers_back of the 2 servers registered again with the scheduler after the cut"
grep -q "is dead" "$T/scheduler.log" && fail "a member was declared dead behind the scheduler's cut"
exact schedlong worker0 worker1
[ "$(wc -l < "$T/schedlong/metrics.jsonl")" = $((2 * ITERS)) ] || fail "metrics.jsonl lacks records after the cut"
ok "the scheduler's host cut for 5 s (timeout 3 s): it declared nobody dead, $back of the 4 members (both servers) registered again with it once the link was back, every value and the hash as fault-free"
echo "5 passed, 0 failed"
