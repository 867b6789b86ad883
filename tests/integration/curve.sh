#!/usr/bin/env bash
# CURVE ([security] curve, docs/security.md): a packet capture on loopback of a run without
# CURVE finds the cluster token and a known payload (the synthetic job's first gradient: float
# 1.0 repeated), and of the same run with CURVE finds neither; with CURVE, clients with a key
# not in the key folder, with another cluster's keys or without CURVE are refused (a clear
# line on both sides), and the cluster then runs the good workers' job to the end with every
# value right.
# Needs root and tcpdump (scripts/setup.sh --test installs it); skips (77) otherwise.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "capturing packets needs root"
command -v tcpdump > /dev/null || skip "no tcpdump (scripts/setup.sh --test installs it)"
"$BIN/ordo-keygen" "$T/keys" worker intruder > /dev/null || fail "ordo-keygen failed"
rm "$T/keys/clients/intruder.pub" # its pair exists, but the cluster does not list it
"$BIN/ordo-keygen" "$T/other" > /dev/null || fail "ordo-keygen failed"
[ "$(stat -c %a "$T/keys/server.key")" = 600 ] && [ "$(stat -c %a "$T/keys/clients/worker.key")" = 600 ] ||
  fail "secret key files are not mode 0600"
# tcpdump says "listening on" once it captures, or ends at once when it cannot (waited for,
# not slept on: a slow machine takes longer either way)
tcpdump -i lo -c 1 -w /dev/null 'tcp port 9' > "$T/probe.txt" 2>&1 & probe=$!
for _ in $(seq 1 600); do
  grep -q "listening on" "$T/probe.txt" && break
  kill -0 $probe 2>/dev/null || break
  sleep 0.05
done
if ! kill -0 $probe 2>/dev/null; then wait $probe; skip "tcpdump cannot capture on lo here: $(tail -n 1 "$T/probe.txt")"; fi
kill $probe 2>/dev/null; wait $probe 2>/dev/null

token=ordo-curve-test-token-5b1e
common=(--model.trainer=synthetic "--model.tensors=4KiB,64KiB" --model.iterations=100
        --cluster.servers=1 --cluster.workers=2 --cluster.token=$token
        --fault.timeout_ms=5000 --fault.heartbeat_ms=200 --output.dir="$T" --output.progress_every=0)

# count PCAP PATTERN_HEX: how many times the bytes occur in the capture
count() {
  python3 -c 'import sys; print(open(sys.argv[1], "rb").read().count(bytes.fromhex(sys.argv[2])))' "$1" "$2"
}
marker=$(printf '0000803f%.0s' $(seq 1 16)) # 16 floats of 1.0: worker 0's first gradient
tokhex=$(printf %s "$token" | od -An -tx1 | tr -d ' \n')

# daemons NAME ARGS...: scheduler and server with ARGS, their ports captured from then on
# ($T/NAME.pcap); the scheduler's endpoint in EP
daemons() {
  local name=$1; shift
  start sched_$name "$BIN/ordo-scheduler" "${common[@]}" --output.run=$name "$@" --cluster.scheduler=tcp://127.0.0.1:0
  local ep; ep=$(ready sched_$name)
  start server_$name "$BIN/ordo-server" "${common[@]}" --output.run=$name "$@" --cluster.scheduler="$ep"
  local sep; sep=$(ready server_$name)
  start tcpdump_$name tcpdump -i lo -U -B 65536 -w "$T/$name.pcap" "tcp port ${ep##*:} or tcp port ${sep##*:}"
  for _ in $(seq 1 600); do grep -q "listening on" "$T/tcpdump_$name.log" && break; sleep 0.05; done
  EP=$ep
}
# workers NAME ARGS...: the run's two workers
workers() {
  local name=$1; shift
  for i in 0 1; do start w${i}_$name "$BIN/ordo-worker" "${common[@]}" --output.run=$name "$@" --cluster.scheduler="$EP"; done
}
# wait_run NAME: the run's four processes exit 0 and the values were right
wait_run() {
  local n
  for n in w0_$1 w1_$1 sched_$1 server_$1; do
    finish $n 120
    [ "$st" = 0 ] || fail "$n ended with '$st'"
  done
  grep -q " 0 wrong" "$T/w0_$1.log" || fail "$1: values were wrong"
  sleep 0.3
  kill -INT "${PID[tcpdump_$1]}"; finish tcpdump_$1 10
}

daemons plain
workers plain
wait_run plain
tp=$(count "$T/plain.pcap" "$tokhex"); mp=$(count "$T/plain.pcap" "$marker")
[ "$tp" -ge 1 ] && [ "$mp" -ge 1 ] || fail "the capture without CURVE lacks the token ($tp) or the payload ($mp): the capture does not work"
ok "without CURVE the capture holds the token $tp times and the payload pattern $mp times"

sec=(--security.curve=true --security.keys="$T/keys")
daemons curve "${sec[@]}"
# intruders while the cluster waits for its workers: a key listed nowhere, another cluster's
# keys, no CURVE; then the good workers join and run
start bad_key "$BIN/ordo-worker" "${common[@]}" --output.run=bad "${sec[@]}" --security.client=intruder --cluster.scheduler="$EP" --fault.startup_ms=4000
start bad_cluster "$BIN/ordo-worker" "${common[@]}" --output.run=bad --security.curve=true --security.keys="$T/other" --cluster.scheduler="$EP" --fault.startup_ms=4000
start bad_plain "$BIN/ordo-worker" "${common[@]}" --output.run=bad --cluster.scheduler="$EP" --fault.startup_ms=4000
for n in bad_key bad_cluster bad_plain; do
  finish $n 30
  [ "$st" != timeout ] || fail "$n did not end"
  [ "$st" != 0 ] || fail "$n was let in"
done
kill -0 "${PID[sched_curve]}" && kill -0 "${PID[server_curve]}" || fail "a daemon died of the intruders"
workers curve "${sec[@]}"
wait_run curve
grep -q "refused this process's CURVE key" "$T/bad_key.log" || fail "the intruder got no clear refusal"
grep -q "refused a client at .*its key .* is not in $T/keys/clients" "$T/sched_curve.log" ||
  fail "the scheduler did not log the refused key"
grep -q "handshake failed" "$T/bad_cluster.log" || fail "the client with another cluster's keys said nothing"
grep -Eq "hold this cluster's server.pub" "$T/sched_curve.log" ||
  fail "the scheduler did not log the foreign client"
grep -Eq "one side uses CURVE and the other not|does the peer use CURVE" "$T/bad_plain.log" ||
  fail "the plain client got no clear refusal"
ok "refused: $(grep -m1 -o "refused this process's CURVE key.*" "$T/bad_key.log" | cut -c1-90)"
ok "scheduler: $(grep -m1 -o "security: refused a client.*" "$T/sched_curve.log" | cut -c1-90)"
tc=$(count "$T/curve.pcap" "$tokhex"); mc=$(count "$T/curve.pcap" "$marker")
bytes=$(stat -c %s "$T/curve.pcap")
[ "$bytes" -gt 100000 ] || fail "the CURVE capture is only $bytes bytes"
[ "$tc" = 0 ] || fail "the token crossed in clear with CURVE on ($tc times)"
[ "$mc" = 0 ] || fail "the payload crossed in clear with CURVE on ($mc times)"
ok "with CURVE the capture ($bytes bytes) holds neither the token nor the payload"
echo "1 passed, 0 failed"
