#!/usr/bin/env bash
# A real shaped network against the emulated link. Two test hosts are network namespaces
# joined by a veth pair whose both ends are shaped with `tc qdisc ... tbf rate 200mbit`;
# host A runs the scheduler and the server, host B the worker. A small ordered job (a
# 16-layer chain profile of 8 MiB, policy TAO, forward pass only) runs across them with no
# link emulation, then the same job runs inside host A on loopback with the emulated link
# ([net] bandwidth = 200mbit). Their median forward times must agree within 20% (TCP/IP
# headers and tbf's bucket make the real link a few percent slower). Every address used is
# inside the namespaces this test creates, which it always deletes. Skips (exit 77) when not
# root, where network namespaces cannot be made, entered, addressed or reached (lib.sh's
# netns_probe, which names the failed step), or without the tbf qdisc.
source "$(dirname "$0")/lib.sh"
SRC=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null && command -v tc >/dev/null || skip "ip or tc (iproute2) is not installed"
command -v python3 >/dev/null || skip "python3 is needed to read the run's JSON"

A=ordo-it-$$-a
B=ordo-it-$$-b
VA=ordo$$a
VB=ordo$$b
NET=10.213.77
trap 'netns_cleanup "$A" "$B" "$VA"; cleanup_all' EXIT
two_hosts "$A" "$B" "$VA" "$VB" "$NET"
RATE=200mbit
ip netns exec "$A" tc qdisc add dev "$VA" root tbf rate $RATE burst 64kb latency 100ms 2>/dev/null ||
  skip "the kernel lacks the tbf qdisc (sch_tbf)"
ip netns exec "$B" tc qdisc add dev "$VB" root tbf rate $RATE burst 64kb latency 100ms ||
  fail "tbf on the second end failed"
# reachable: a connection to a closed port is refused at once (no ping needed)
ip netns exec "$B" python3 -c '
import socket, sys
s = socket.socket()
s.settimeout(3)
try:
    s.connect((sys.argv[1], 9))
except ConnectionRefusedError:
    pass
' "$NET.1" || fail "the namespaces cannot reach each other"
ok "hosts $A ($NET.1) and $B ($NET.2) joined by a veth shaped to $RATE"

# a 16-layer chain, 512 KiB per layer, 2 ms of compute per layer
python3 - "$T/chain16.json" <<'EOF'
import json, sys
n = 16
json.dump({"format": "ordo-model/1", "name": "chain16", "batch": 1, "dtype": "float32",
           "params": [{"name": "w%d" % i, "shape": [131072]} for i in range(n)],
           "ops": [{"name": "l%d" % i, "inputs": ["l%d" % (i - 1)] if i else [],
                    "params": ["w%d" % i], "fwd_us": 2000.0, "bwd_us": 4000.0}
                   for i in range(n)]}, open(sys.argv[1], "w"))
EOF
ITERS=8
common=(--model.trainer=profile "--model.file=$T/chain16.json" --model.compute=emulate
        --model.forward_only=true "--model.iterations=$ITERS" --model.warmup=2
        --order.policy=tao --cluster.servers=1 --cluster.workers=1 "--output.dir=$T"
        --output.progress_every=0 --fault.timeout_ms=10000)

# 1. across the shaped veth, no emulation
start scheduler ip netns exec "$A" "$BIN/ordo-scheduler" "${common[@]}" --output.run=real \
  "--cluster.scheduler=tcp://$NET.1:0" --net.bandwidth=0 --net.latency_us=50
ep=$(ready scheduler)
start server ip netns exec "$A" "$BIN/ordo-server" "${common[@]}" --output.run=real \
  "--cluster.scheduler=$ep" "--cluster.host=$NET.1" --net.bandwidth=0
start worker ip netns exec "$B" "$BIN/ordo-worker" "${common[@]}" --output.run=real \
  "--cluster.scheduler=$ep" "--cluster.host=$NET.2" --net.bandwidth=0
for n in worker server scheduler; do
  finish $n 120
  [ "$st" = 0 ] || fail "real network run: $n ended with '$st'"
done

# 2. the same job on host A's loopback with the emulated link
start scheduler2 ip netns exec "$A" "$BIN/ordo-scheduler" "${common[@]}" --output.run=emulated \
  --cluster.scheduler=tcp://127.0.0.1:0 --net.bandwidth=$RATE --net.latency_us=50
ep=$(ready scheduler2)
start server2 ip netns exec "$A" "$BIN/ordo-server" "${common[@]}" --output.run=emulated \
  "--cluster.scheduler=$ep" --net.bandwidth=$RATE --net.latency_us=50
start worker2 ip netns exec "$A" "$BIN/ordo-worker" "${common[@]}" --output.run=emulated \
  "--cluster.scheduler=$ep" --net.bandwidth=$RATE --net.latency_us=50
for n in worker2 server2 scheduler2; do
  finish $n 120
  [ "$st" = 0 ] || fail "emulated run: $n ended with '$st'"
done

read -r real emu agree < <(python3 - "$T/real/metrics.jsonl" "$T/emulated/metrics.jsonl" <<'EOF'
import json, statistics, sys
def med(path):
    rows = [json.loads(l) for l in open(path)]
    return statistics.median(r["forward_ms"] for r in rows if r["iter"] >= 2)
real, emu = med(sys.argv[1]), med(sys.argv[2])
print("%.2f %.2f %d" % (real, emu, abs(real - emu) <= 0.20 * emu))
EOF
)
sim=$("$BIN/ordo-plan" simulate --policy tao --bandwidth $RATE --latency-us 50 "$T/chain16.json" |
      python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["makespan_us"] / 1e3))')
ok "median forward time: real shaped network $real ms, emulated link $emu ms, simulator $sim ms"
[ "$agree" = 1 ] || fail "the real network ($real ms) and the emulated link ($emu ms) differ by more than 20%"
echo "1 passed, 0 failed"
