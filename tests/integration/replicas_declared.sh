#!/usr/bin/env bash
# Replicated servers ([fault] replicas = 2) under a libordo program: examples/hello_ordo.c
# (built here with 3000 iterations) is each of 2 workers, the model declared by them
# (model.trainer = declared), 2 servers. SIGKILL server 1 mid-run: its backups on server 0 are
# promoted, the workers send again what it had not answered, and both workers check every
# pulled value against the exact formula (the update applied once per iteration, as without
# the fault): "0 wrong", every survivor exits 0.
source "$(dirname "$0")/lib.sh"
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=$(cd "$BIN/.." && pwd)
iters=3000
cc -std=c11 -O1 -DITERS=$iters -I"$root/include" -I"$build/include" "$root/examples/hello_ordo.c" \
  -L"$build/client" -l:libordo.so.0 -Wl,-rpath,"$build/client" -o "$T/hello_ordo" \
  > "$T/cc.log" 2>&1 || fail "cannot build examples/hello_ordo.c"
cat > "$T/conf.ini" <<INI
[cluster]
servers = 2
workers = 2
[model]
trainer = declared
[optimizer]
lr = 1
aggregate = sum
[fault]
replicas = 2
timeout_ms = 2000
heartbeat_ms = 200
[output]
dir = $T
progress_every = 0
INI
start scheduler "$BIN/ordo-scheduler" -c "$T/conf.ini" --output.run=kill --cluster.scheduler=tcp://127.0.0.1:0
ep=$(ready scheduler)
for i in 0 1; do
  start server$i "$BIN/ordo-server" -c "$T/conf.ini" --output.run=kill --cluster.scheduler="$ep" --cluster.rank=$i
done
for i in 0 1; do start worker$i stdbuf -oL "$T/hello_ordo" "$T/conf.ini" cluster.scheduler="$ep"; done
for _ in $(seq 1 1200); do
  [ "$(cat "$T"/worker*.log | grep -c 'hello_ordo: worker [01] of 2')" = 2 ] && break
  sleep 0.05
done
# the kill as the workers enter their loop (their hello line comes just before): 3000
# iterations outlast this 0.1 s on a machine 10 times faster than CI's, and on any slower one
sleep 0.1
kill -0 "${PID[worker0]}" 2>/dev/null && kill -0 "${PID[worker1]}" 2>/dev/null ||
  fail "the run ended before the kill"
kill -KILL "${PID[server1]}"
for n in scheduler server0 worker0 worker1; do
  finish $n 120
  [ "$st" = 0 ] || fail "server 1 killed: $n ended with '$st', expected 0"
done
grep -q "server 1 (pid .*dead.*promoted backups" "$T/scheduler.log" || fail "the scheduler did not log the promotion"
for n in worker0 worker1; do
  grep -q "the dead servers' backups are the primaries now" "$T/$n.log" || fail "$n: no promotion seen mid-run"
  grep -q "$iters iterations, [0-9]* values checked, 0 wrong" "$T/$n.log" || fail "$n: pulled values wrong after the promotion"
done
ok "hello_ordo (declared tensors), server 1 killed mid-run: the backups took over, $iters iterations, every value right, survivors exit 0"
echo "1 passed, 0 failed"
