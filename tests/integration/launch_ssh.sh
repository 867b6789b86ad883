#!/usr/bin/env bash
# ordo-launch over ssh (--hosts) between two hosts: network namespaces joined by a veth pair,
# each running its own sshd (a throw-away config and keys in the test's folder). From host A
# the launcher starts the scheduler and server 0 on A, server 1 and worker 0 on B, worker 1 on
# A, all through ssh; the synthetic job checks every pulled value ("0 wrong") and the run
# folder gets its files on both hosts' shared disk. Then a run is stopped by killing a
# worker on B (the launcher stops every remote process and exits non-zero) and one by
# TERM to the launcher: no ordo process of either run may be left on any host. Every
# address is inside the namespaces the test creates, which it always deletes. Skips (exit
# 77) when not root, without sshd (openssh-server), or where network namespaces cannot be
# made, entered, addressed or reached (lib.sh's netns_probe, which names the failed step).
source "$(dirname "$0")/lib.sh"
SRC=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces and run sshd"
SSHD=/usr/sbin/sshd
[ -x "$SSHD" ] || skip "sshd is not installed (openssh-server; scripts/setup.sh --test installs it)"
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || skip "no ssh client"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"

A=ordo-ssh-$$-a
B=ordo-ssh-$$-b
VA=os$$a
VB=os$$b
NET=10.213.79
cleanup_ns() {
  for f in "$T"/sshd-*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  netns_cleanup "$A" "$B" "$VA"
}
trap 'cleanup_ns; cleanup_all' EXIT
two_hosts "$A" "$B" "$VA" "$VB" "$NET"

# one sshd per host, on its veth address
ssh-keygen -q -t ed25519 -N "" -f "$T/hostkey" && ssh-keygen -q -t ed25519 -N "" -f "$T/userkey" ||
  fail "ssh-keygen failed"
cp "$T/userkey.pub" "$T/authorized_keys" && chmod 600 "$T/authorized_keys"
mkdir -p /run/sshd
for h in a:1:"$A" b:2:"$B"; do
  IFS=: read -r tag n ns <<<"$h"
  cat > "$T/sshd-$tag.conf" <<CONF
Port 22
ListenAddress $NET.$n
HostKey $T/hostkey
AuthorizedKeysFile $T/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PidFile $T/sshd-$tag.pid
LogLevel ERROR
CONF
  ip netns exec "$ns" "$SSHD" -f "$T/sshd-$tag.conf" -E "$T/sshd-$tag.log" || fail "sshd on $NET.$n did not start"
done
SSH="ssh -i $T/userkey -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5"
for _ in $(seq 1 300); do
  ip netns exec "$A" $SSH -n "$NET.2" true 2>/dev/null && break
  sleep 0.1
done
ip netns exec "$A" $SSH -n "$NET.2" true || fail "host A cannot ssh to host B"
ok "hosts $A ($NET.1) and $B ($NET.2), each with an sshd"

cat > "$T/hosts" <<HOSTS
# role host
scheduler $NET.1
server    $NET.1
server    $NET.2
worker    $NET.2
worker    $NET.1
HOSTS
launch() { # launch LOG ARGS...: ordo-launch on host A over ssh, in the background
  local log=$1
  shift
  ip netns exec "$A" "$SRC/scripts/ordo-launch" "$SRC/conf/synthetic.ini" --bin "$BIN" \
    --hosts "$T/hosts" --ssh "$SSH" --output.dir="$T/out" --output.progress_every=0 "$@" \
    > "$T/$log" 2>&1 &
  LPID=$!
}
training() { # training RUN: its workers report iterations (within 60 s)
  for _ in $(seq 1 1200); do
    [ -s "$T/out/$1/metrics.jsonl" ] && return 0
    sleep 0.05
  done
  return 1
}
left_over() { pgrep -f "^[^ ]*/ordo-[a-z]+ -c /tmp/ordo-launch-[0-9]+-$1\.ini" || true; }
gone() { # gone LPID: no ordo process of that launch left within 6 s (a process whose ssh
  # session was cut stops at the latest when it misses the scheduler for fault.timeout_ms)
  for _ in $(seq 1 300); do [ -z "$(left_over "$1")" ] && return 0; sleep 0.1; done
  pgrep -af "ordo-launch-[0-9]+-$1"
  return 1
}

# 1. a whole run
launch run.log --model.iterations=30 --output.run=ok
wait $LPID || { cat "$T/run.log"; fail "the run over ssh failed"; }
grep -q "over ssh: scheduler on $NET.1, servers on $NET.1 $NET.2, workers on $NET.2 $NET.1" "$T/run.log" ||
  fail "the launcher did not say where it ran what"
grep -q "^\[server 1\] .*serving .* on tcp://$NET.2:" "$T/run.log" || fail "server 1 did not serve on host B"
[ "$(grep -c '^\[worker [01]\] .* 0 wrong' "$T/run.log")" = 2 ] || { cat "$T/run.log"; fail "a worker saw wrong values"; }
[ -f "$T/out/ok/summary.json" ] && [ "$(wc -l < "$T/out/ok/metrics.jsonl")" = 60 ] ||
  fail "the run folder lacks summary.json or 60 metrics lines"
ok "30 iterations over ssh across the two hosts; every pulled value right; 60 metrics lines"

# 2. a worker on host B dies: the launcher stops everything and fails
launch fail.log --model.iterations=1000000 --output.run=dies
training dies || fail "the run dies did not start training"
victim=$(pgrep -f "^[^ ]*/ordo-worker -c /tmp/ordo-launch-[0-9]+-$LPID\.ini .*--cluster.rank=0" | head -1)
[ -n "$victim" ] || fail "no worker 0 of the second run to kill"
kill -KILL "$victim"
t0=$(date +%s)
wait $LPID && fail "the launcher succeeded although a worker died"
took=$(( $(date +%s) - t0 ))
gone $LPID || fail "processes of the failed run were left running"
grep -q "exited with status" "$T/fail.log" || fail "the launcher did not say which process failed"
ok "worker 0 killed on host B: the launcher stopped the cluster and failed after ${took}s, nothing left"

# 3. TERM to the launcher mid-run
launch term.log --model.iterations=1000000 --output.run=term
training term || fail "the run term did not start training"
kill -TERM $LPID
wait $LPID
gone $LPID || fail "processes were left after TERM"
ok "TERM to the launcher: every remote process stopped"
echo "3 passed, 0 failed"
