#!/usr/bin/env bash
# control_plane.sh: the scheduler's CPU per member and iteration (docs/planning.md, the
# cluster planner's --sched-us). For each worker count it runs the synthetic job (one 4 KiB
# tensor, one server, loopback) twice, N1 and N2 iterations, under /usr/bin/time, and prints
# the scheduler's user + system CPU of each and the slope per member-iteration:
#   (cpu(N2) - cpu(N1)) / ((N2 - N1) x W), which leaves out start-up and teardown.
# From the longer run's summary.json "control_plane" member it prints the messages the
# scheduler took per member and second, by type, and it fails when anyone was declared dead
# (membership.jsonl) or the scheduler's log names a dead node. During the longer run it
# samples every 2 s the server's and the scheduler's open file descriptors (/proc/PID/fd) and
# resident memory, and the workers' (VmRSS, RssAnon of /proc/PID/status), and prints the
# largest of each: the server's and the scheduler's per worker, the workers' mean.
#
# usage: scripts/experiments/control_plane.sh [--workers "16 32 64"] [--iterations "50 250"]
#        [--bin DIR] [-- EXTRA-OPTIONS...]   (EXTRA-OPTIONS go to every process)
# CP_WAIT_S (default 900): how long one run may take, start-up included
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
workers="16 32 64"
iters="50 250"
bin="$here/build/bin"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^set -uo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --workers) workers=$2; shift 2 ;;
    --iterations) iters=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "control_plane.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x /usr/bin/time ] || { echo "control_plane.sh: needs /usr/bin/time" >&2; exit 77; }
export ORDO_BIN_DIR="$bin"
# shellcheck source=../../tests/integration/lib.sh
source "$here/tests/integration/lib.sh"
read -r n1 n2 <<<"$iters"
wait_s=${CP_WAIT_S:-900} # how long a run may take, start-up included

# kb PID FIELD: a /proc/PID/status field in kB (0 when the process is gone)
kb() { awk -v f="$2:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' \
  "/proc/$1/status" 2>/dev/null || echo 0; }
# sample W: until killed, every 2 s, the largest fd count and memory of the server and the
# scheduler and the workers' mean memory so far; prints them (one line, replaced each time)
sample() {
  local w=$1 spid vfd=0 sfd=0 vrss=0 vanon=0 srss=0 sanon=0 wrss=0 wanon=0 n i r a files
  spid=$(pgrep -P "${PID[scheduler]}" | head -n 1)
  while :; do
    n=$(ls "/proc/${PID[server0]}/fd" 2>/dev/null | wc -l); [ "$n" -gt "$vfd" ] && vfd=$n
    n=$(ls "/proc/$spid/fd" 2>/dev/null | wc -l); [ "$n" -gt "$sfd" ] && sfd=$n
    r=$(kb "${PID[server0]}" VmRSS); [ "$r" -gt "$vrss" ] && vrss=$r
    a=$(kb "${PID[server0]}" RssAnon); [ "$a" -gt "$vanon" ] && vanon=$a
    r=$(kb "$spid" VmRSS); [ "$r" -gt "$srss" ] && srss=$r
    a=$(kb "$spid" RssAnon); [ "$a" -gt "$sanon" ] && sanon=$a
    files=()
    for ((i = 0; i < w; i++)); do files+=("/proc/${PID[worker$i]}/status"); done
    read -r r a n < <(awk '$1 == "VmRSS:" { r += $2 } $1 == "RssAnon:" { a += $2 }
      FNR == 1 { n++ } END { print r + 0, a + 0, n + 0 }' "${files[@]}" 2>/dev/null)
    if [ "$n" = "$w" ]; then [ "$r" -gt "$wrss" ] && wrss=$r; [ "$a" -gt "$wanon" ] && wanon=$a; fi
    echo "$vfd $vrss $vanon $sfd $srss $sanon $wrss $wanon" > "$T/sample-now"
    sleep 2
  done
}
echo "control plane: $(uptime)"
for W in $workers; do
  cpu=()
  for N in $n1 $n2; do
    common=(--model.trainer=synthetic --model.tensors=4KiB "--model.iterations=$N"
            --model.warmup=1 --net.bandwidth=0 --output.progress_every=0 "--output.dir=$T"
            "--cluster.workers=$W" --cluster.servers=1 --fault.timeout_ms=60000
            "--output.run=cp-$W-$N" "${extra[@]}")
    start scheduler /usr/bin/time -f "SCHEDCPU %U %S" "$BIN/ordo-scheduler" "${common[@]}" \
      --cluster.scheduler=tcp://127.0.0.1:0
    ep=$(ready scheduler)
    start server0 "$BIN/ordo-server" "${common[@]}" "--cluster.scheduler=$ep" --cluster.rank=0
    for ((i = 0; i < W; i++)); do
      start "worker$i" "$BIN/ordo-worker" "${common[@]}" "--cluster.scheduler=$ep" \
        "--cluster.rank=$i"
    done
    if [ "$N" = "$n2" ]; then sample "$W" > "$T/sample-$W.txt" & sampler=$!; fi
    finish scheduler "$wait_s"
    [ "$N" = "$n2" ] && { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; }
    [ "$st" = 0 ] || fail "W=$W N=$N: the scheduler ended with $st"
    for ((i = 0; i < W; i++)); do finish "worker$i" 60; done
    finish server0 60
    cpu+=("$(awk '/^SCHEDCPU/ { print $2 + $3 }' "$T/scheduler.log")")
    if [ -s "$T/cp-$W-$N/membership.jsonl" ] || grep -qi "dead" "$T/scheduler.log"; then
      fail "W=$W N=$N: a member was declared dead: $(grep -i dead "$T/scheduler.log" | head -3)"
    fi
    python3 -c "
import json
cp = json.load(open('$T/cp-$W-$N/summary.json'))['control_plane']
records = sum(1 for _ in open('$T/cp-$W-$N/metrics.jsonl'))
print('W=$W N=$N: scheduler CPU %.2f s, %d messages (STATS %d) for %d records in %.1f s'
      % (cp['cpu_user_s'] + cp['cpu_system_s'], cp['messages_total'],
         cp['messages'].get('STATS', 0), records, cp['seconds']))"
    echo "W=$W N=$N: done, $(uptime)"
  done
  python3 -c "
import json
cp = json.load(open('$T/cp-$W-$n2/summary.json'))['control_plane']
m, s = cp['members'], cp['seconds']
by = ', '.join('%s %.2f' % (k, v / m / s) for k, v in sorted(cp['messages'].items()))
print('W=%d: %d members, %d messages in %.1f s: %.2f per member-second (%s); CPU %.2f s'
      % ($W, m, cp['messages_total'], s, cp['messages_total'] / m / s, by,
         cp['cpu_user_s'] + cp['cpu_system_s']))"
  grep -h "control plane:" "$T/scheduler.log" | sed 's/^/  /'
  if read -r vfd vrss vanon sfd srss sanon wrss wanon < "$T/sample-now" 2>/dev/null; then
    python3 -c "
w = $W
print('W=%d: server: %d fds (%.2f a worker), VmRSS %.1f MB, RssAnon %.1f MB (%.1f kB a worker)'
      % (w, $vfd, $vfd / w, $vrss / 1024, $vanon / 1024, $vanon / w))
print('W=%d: scheduler: %d fds (%.2f a worker), VmRSS %.1f MB, RssAnon %.1f MB (%.1f kB a worker)'
      % (w, $sfd, $sfd / w, $srss / 1024, $sanon / 1024, $sanon / w))
print('W=%d: workers (all %d alive at once): VmRSS %.1f MB, RssAnon %.1f MB each (mean, largest sum)'
      % (w, w, $wrss / w / 1024, $wanon / w / 1024))"
  fi
  rm -f "$T/sample-now"
  python3 -c "
w, n1, n2, c1, c2 = $W, $n1, $n2, ${cpu[0]}, ${cpu[1]}
print('W=%d: scheduler CPU %.2f s (%d iterations), %.2f s (%d): %.1f us per member-iteration'
      % (w, c1, n1, c2, n2, (c2 - c1) / ((n2 - n1) * w) * 1e6))"
done
