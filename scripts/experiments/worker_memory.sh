#!/usr/bin/env bash
# worker_memory.sh: the memory of one running ordo-worker of the synthetic job (emulated
# compute, one 4 KiB tensor, one server, loopback) and of its server and scheduler, from
# /proc/PID/status (VmSize, VmRSS, RssAnon, RssFile, Threads), and which CUDA libraries the
# worker has mapped (/proc/PID/maps: cublas, cudart, nccl), 4 s after it started.
#
# usage: scripts/experiments/worker_memory.sh [--bin DIR]   (default build/bin)
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
B=$here/build/bin
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^set -uo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --bin) B=$2; shift 2 ;;
    *) echo "worker_memory.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
T=$(mktemp -d)
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
pids=()
common=(--model.trainer=synthetic --model.tensors=4KiB --model.iterations=1000000
  --model.warmup=1 --net.bandwidth=0 --output.progress_every=0 "--output.dir=$T"
  --cluster.workers=1 --cluster.servers=1 --output.run=mem)
"$B/ordo-scheduler" "${common[@]}" --cluster.scheduler=tcp://127.0.0.1:0 > "$T/s.log" 2>&1 &
sp=$!; pids+=("$sp")
ep=""
for _ in $(seq 600); do
  ep=$(grep -m1 '^READY ' "$T/s.log" 2>/dev/null | cut -d' ' -f2) && [ -n "$ep" ] && break
  sleep 0.1
done
[ -n "$ep" ] || { echo "worker_memory.sh: the scheduler never became ready" >&2; exit 1; }
"$B/ordo-server" "${common[@]}" "--cluster.scheduler=$ep" --cluster.rank=0 > "$T/v.log" 2>&1 &
vp=$!; pids+=("$vp")
"$B/ordo-worker" "${common[@]}" "--cluster.scheduler=$ep" --cluster.rank=0 > "$T/w.log" 2>&1 &
wp=$!; pids+=("$wp")
sleep 4
status() { grep -E "^($2):" "/proc/$1/status" | tr -s ' \t' ' ' | paste -sd';'; }
echo "worker:    $(status "$wp" 'VmSize|VmRSS|RssAnon|RssFile|Threads')"
echo "worker maps: cublas $(grep -c cublas "/proc/$wp/maps"), cudart $(grep -c cudart \
"/proc/$wp/maps"), nccl $(grep -c nccl "/proc/$wp/maps") mappings"
echo "server:    $(status "$vp" 'VmRSS|RssAnon')"
echo "scheduler: $(status "$sp" 'VmRSS|RssAnon')"
