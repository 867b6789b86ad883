#!/usr/bin/env bash
# chaos.sh: a run under a seeded random schedule of faults, against the same run without
# them. Each trainer (the synthetic job, whose every value follows a formula, the mlp on
# Fashion-MNIST, and a PyTorch program: examples/torch/train_fmnist_elastic.py, the CNN on
# Fashion-MNIST through ordo.torch.elastic as a [worker] command) runs once fault-free and once with [fault] worker = restart while this
# script SIGKILLs workers (scripts/ordo-launch starts them again and they rejoin) and pauses
# workers and servers with SIGSTOP/SIGCONT for less than half of fault.timeout_ms. The
# faults come at iterations drawn from --seed (between 5 % and 85 % of the run), one at a
# time: after a kill the next waits for the worker's return. It writes chaos.csv (one row per
# run) and faults.csv (one row per fault: what, when, and for a kill the recovery time from
# the SIGKILL to the restarted worker's first finished iteration, from RUN/membership.jsonl)
# and prints a table: kills, pauses, exit status, recovery median and worst, the synthetic
# job's wrong values (final values included), the mlp's and the PyTorch CNN's test accuracy
# against the fault-free run's, and for the PyTorch run the largest relative difference of
# its final parameters from the fault-free run's. Exits non-zero when a chaos run failed, a synthetic value was wrong, or
# the accuracy is more than --max-acc-drop points below the fault-free run's.
#
# usage: scripts/experiments/chaos.sh [OPTIONS]
#   --trainers LIST   synthetic,mlp,torch (default synthetic,mlp; mlp and torch need
#                     Fashion-MNIST, torch the venv's PyTorch: ORDO_PYTHON, default .venv/bin/python)
#   --seed S          the fault schedule's seed (default 1)
#   --kills K         worker SIGKILLs per chaos run (default 4)
#   --pauses P        SIGSTOP/SIGCONT pauses per chaos run (default 4)
#   --joins J         workers added mid-run per chaos run (ordo-launch --add-worker; the torch
#                     trainer only: [worker] command programs can join; its runs get
#                     fault.max_workers = workers + J); a join's time is from the command to
#                     the scheduler's welcome (membership.jsonl "join")
#   --long-pauses L   workers paused (SIGSTOP) past fault.timeout_ms per chaos run, as a
#                     partition would cut them off: declared dead and fenced, killed by
#                     scripts/ordo-launch and started again; recovery from the SIGSTOP to the
#                     restarted worker's first finished iteration
#   --disk-full F     times per chaos run the run folder's disk fills up for 1 to 3 s (needs
#                     root: the runs' output folder is a 256 MiB tmpfs mounted for the
#                     experiment; checkpoints every iterations/20 updates, fault.disk_full =
#                     retry): failed checkpoints are logged and the run goes on
#   --kill-servers    also SIGKILL servers (needs [fault] replicas >= 2 in the conf: replicated
#                     servers; refused otherwise): the backups take over, the launcher starts a
#                     replacement that joins (ordo-server --join), and the next fault waits
#                     for it; a server's recovery is from the SIGKILL to the next iteration
#                     every worker finished (summary.json "promotions")
#   --sched-kills K   a third run per trainer, NAME-sched, under fault.scheduler = restart
#                     (and fault.worker = abort, which it needs): K scheduler SIGKILLs
#                     (scripts/ordo-launch starts a new scheduler at the address), with the
#                     --pauses, --disk-full and (--kill-servers) as many server kills as
#                     scheduler kills; a scheduler kill's recovery is from the SIGKILL to the
#                     next iteration every worker finished (metrics.jsonl, the workers'
#                     clock), and its rebuild from the SIGKILL to the new scheduler's
#                     "cluster complete" (the next fault waits for it)
#   --partitions      (root, synthetic and mlp) two runs per trainer with the scheduler alone
#                     on a network namespace of its own, its link cut (ip link set down) once
#                     for a third of fault.timeout_ms (NAME-cut-short: nobody may be found
#                     dead) and once for 2.5 times it (NAME-cut-long: the members register
#                     again with it once the link is back); recovery: from the link's return
#                     to the last member welcomed back
#   --servers S --workers W   (default 2 and 3)
#   --iterations N    per run (default: synthetic 6000, mlp 3000, torch 600)
#   --timeout-ms T    fault.timeout_ms (default 2000; heartbeats every T/10)
#   --conf FILE       a conf under the runs' settings (e.g. one with [fault] replicas = 2)
#   --max-acc-drop D  accuracy points the mlp may lose (default 0.5)
#   --out DIR         output folder (default runs/chaos-DATE)
#   --bin DIR         binaries (default build/bin)
set -uo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
trainers="synthetic,mlp"
seed=1
kills=4
pauses=4
long_pauses=0
disk_full=0
joins=0
kill_servers=0
sched_kills=0
partitions=0
servers=2
workers=3
iterations=""
timeout_ms=2000
conf=""
max_drop=0.5
out=""
bin="$here/build/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,61p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --trainers) trainers=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --kills) kills=$2; shift 2 ;;
    --pauses) pauses=$2; shift 2 ;;
    --joins) joins=$2; shift 2 ;;
    --long-pauses) long_pauses=$2; shift 2 ;;
    --disk-full) disk_full=$2; shift 2 ;;
    --kill-servers) kill_servers=1; shift ;;
    --sched-kills) sched_kills=$2; shift 2 ;;
    --partitions) partitions=1; shift ;;
    --servers) servers=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --timeout-ms) timeout_ms=$2; shift 2 ;;
    --conf) conf=$2; shift 2 ;;
    --max-acc-drop) max_drop=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "chaos.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in seed kills pauses long_pauses disk_full joins sched_kills servers workers timeout_ms; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "chaos.sh: --${v//_/-} takes a number, not '${!v}'" >&2; exit 2; }
done
[ -n "$out" ] || out="runs/chaos-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -n "$conf" ] || { conf="$out/base.ini"; : > "$conf"; }
runs_dir=$out # where the runs' folders are: a tmpfs with --disk-full
if [ "$disk_full" -gt 0 ]; then
  runs_dir=$out/disk
  mkdir -p "$runs_dir"
  mount -t tmpfs -o size=256m tmpfs "$runs_dir" 2> "$out/mount.err" || {
    echo "chaos.sh: --disk-full needs a tmpfs for the run folders (root): $(cat "$out/mount.err")" >&2; exit 2; }
  trap 'rm -f "$runs_dir/filler"; for r in "$runs_dir"/*/; do [ -d "$r" ] && cp -r "$r" "$out/"; done; umount -l "$runs_dir"' EXIT
fi
[ -f "$conf" ] || { echo "chaos.sh: no conf file $conf" >&2; exit 2; }
data=${ORDO_MODEL_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ $kill_servers = 1 ]; then
  replicas=$("$bin/ordo-scheduler" -c "$conf" --print-conf 2>/dev/null |
             awk '$0=="[fault]"{s=1;next} /^\[/{s=0} s && $1=="replicas"{print $3}')
  if [ -z "$replicas" ] || [ "$replicas" -lt 2 ]; then
    echo "chaos.sh: --kill-servers needs [fault] replicas >= 2 in the conf (a killed server is survived only with replicated servers)" >&2
    exit 2
  fi
fi

now_s() { date +%s.%N; }

# chaos NAME TRAINER ITERS: the chaos run NAME; appends its faults to faults.csv
chaos() {
  local name=$1 trainer=$2 iters=$3
  local dir="$runs_dir/$name" pids="$out/$name.pids"
  rm -f "$pids"
  "$here/scripts/ordo-launch" "$conf" --bin "$bin" --pids "$pids" "${common[@]}" "${wcmd[@]/RUN/$name}" \
    --output.run="$name" --fault.worker=restart --fault.restarts=$((kills + 1)) \
    > "$out/$name.log" 2>&1 &
  local launcher=$! k
  # the schedule: fault k at iteration at[k], a kill, a pause or a join, of a target drawn too
  RANDOM=$seed
  local n=$((kills + pauses + run_joins + long_pauses + disk_full)) at=() kind=() i
  for ((k = 0; k < n; k++)); do
    at+=($(( iters * 5 / 100 + RANDOM % (iters * 80 / 100) )))
    if [ $k -lt $kills ]; then kind+=(kill); elif [ $k -lt $((kills + pauses)) ]; then kind+=(pause)
    elif [ $k -lt $((kills + pauses + long_pauses)) ]; then kind+=(longpause)
    elif [ $k -lt $((kills + pauses + long_pauses + disk_full)) ]; then kind+=(diskfull)
    else kind+=(join); fi
  done
  # shuffle the kinds, sort the iterations
  for ((k = n - 1; k > 0; k--)); do
    i=$((RANDOM % (k + 1))); local t=${kind[$k]}; kind[$k]=${kind[$i]}; kind[$i]=$t
  done
  mapfile -t at < <(printf '%s\n' "${at[@]}" | sort -n)
  for ((k = 0; k < n; k++)); do
    # wait for the iteration (the lines of metrics.jsonl over the workers)
    while kill -0 $launcher 2>/dev/null; do
      local lines=0
      [ -f "$dir/metrics.jsonl" ] && lines=$(wc -l < "$dir/metrics.jsonl")
      [ $((lines / workers)) -ge "${at[$k]}" ] && break
      sleep 0.05
    done
    kill -0 $launcher 2>/dev/null || break
    local role=worker rank pid
    if [ "${kind[$k]}" = kill ] && [ $kill_servers = 1 ] && [ $((RANDOM % 3)) = 0 ]; then role=server; fi
    if [ "${kind[$k]}" = pause ] && [ $((RANDOM % 2)) = 0 ]; then role=server; fi
    if [ $role = server ]; then rank=$((RANDOM % servers)); else rank=$((RANDOM % workers)); fi
    pid=$(awk -v r="$role" -v n="$rank" '$1==r && $2==n {p=$3} END {print p}' "$pids")
    [ -n "$pid" ] || continue
    local t0 iter=$(( $(wc -l < "$dir/metrics.jsonl") / workers ))
    if [ "${kind[$k]}" = diskfull ]; then
      # the run folder's disk full for 1 to 3 s: checkpoints in that time fail, are logged,
      # and the run goes on (fault.disk_full = retry)
      local ms=$(( 1000 + RANDOM % 2000 ))
      t0=$(now_s)
      dd if=/dev/zero of="$runs_dir/filler" bs=64k 2> /dev/null
      sleep "$(awk -v m=$ms 'BEGIN{printf "%.3f", m/1000}')"
      rm -f "$runs_dir/filler"
      echo "$name,diskfull,disk,-1,$iter,$t0,$ms" >> "$out/faults.raw"
      continue
    fi
    if [ "${kind[$k]}" = longpause ]; then
      # a worker cut off past the timeout: declared dead and fenced; the launcher kills it and
      # starts it again; the next fault waits for its return (at most 8 timeouts and 30 s)
      if [ "$role" != worker ]; then
        role=worker rank=$((RANDOM % workers))
        pid=$(awk -v n="$rank" '$1=="worker" && $2==n {p=$3} END {print p}' "$pids")
      fi
      local before=0
      [ -f "$dir/membership.jsonl" ] && before=$(grep -c "\"recovered\",\"worker\":$rank," "$dir/membership.jsonl")
      t0=$(now_s)
      kill -STOP "$pid" 2>/dev/null || continue
      echo "$name,longpause,worker,$rank,$iter,$t0,$before" >> "$out/faults.raw"
      local deadline=$(( $(date +%s) + 8 * timeout_ms / 1000 + 30 ))
      while kill -0 $launcher 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do
        [ -f "$dir/membership.jsonl" ] &&
          [ "$(grep -c "\"recovered\",\"worker\":$rank," "$dir/membership.jsonl")" -gt "$before" ] && break
        sleep 0.05
      done
      kill -CONT "$pid" 2>/dev/null # (killed by then; were it not, it is fenced)
      continue
    fi
    if [ "${kind[$k]}" = join ]; then
      # one more worker: the launcher reads RUN/add-worker.env; the next fault waits for its
      # welcome (at most 4 timeouts and its start)
      local before=0
      [ -f "$dir/membership.jsonl" ] && before=$(grep -c '"event":"join"' "$dir/membership.jsonl")
      t0=$(now_s)
      "$here/scripts/ordo-launch" --add-worker "$dir" > "$out/$name.join$k.log" 2>&1 &
      echo "$name,join,worker,-1,$iter,$t0,$before" >> "$out/faults.raw"
      local deadline=$(( $(date +%s) + 4 * timeout_ms / 1000 + 60 ))
      while kill -0 $launcher 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do
        [ -f "$dir/membership.jsonl" ] &&
          [ "$(grep -c '"event":"join"' "$dir/membership.jsonl")" -gt "$before" ] && break
        sleep 0.05
      done
      continue
    fi
    if [ "${kind[$k]}" = kill ]; then
      local before=0
      [ "$role" = worker ] && [ -f "$dir/membership.jsonl" ] && before=$(grep -c "\"recovered\",\"worker\":$rank," "$dir/membership.jsonl")
      # a server: the launcher starts a replacement (ordo-server --join) once the scheduler
      # promoted the dead one's backups; the next fault waits for it to join
      [ "$role" = server ] && before=$(grep -c "joined in place of the dead server" "$out/$name.log")
      t0=$(now_s)
      kill -KILL "$pid" 2>/dev/null || continue
      echo "$name,kill,$role,$rank,$iter,$t0,$before" >> "$out/faults.raw"
      # the next fault waits for this worker's return, or the server's replacement (at most
      # 4 timeouts)
      local deadline=$(( $(date +%s) + 4 * timeout_ms / 1000 + 10 ))
      while kill -0 $launcher 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do
        [ "$role" = worker ] && [ -f "$dir/membership.jsonl" ] &&
          [ "$(grep -c "\"recovered\",\"worker\":$rank," "$dir/membership.jsonl")" -gt "$before" ] && break
        [ "$role" = server ] &&
          [ "$(grep -c "joined in place of the dead server" "$out/$name.log")" -gt "$before" ] && break
        sleep 0.05
      done
    else
      local ms=$(( timeout_ms / 10 + RANDOM % (timeout_ms * 4 / 10) )) # below timeout/2
      t0=$(now_s)
      kill -STOP "$pid" 2>/dev/null || continue
      sleep "$(awk -v m=$ms 'BEGIN{printf "%.3f", m/1000}')"
      kill -CONT "$pid" 2>/dev/null
      echo "$name,pause,$role,$rank,$iter,$t0,$ms" >> "$out/faults.raw"
    fi
  done
  wait $launcher
  echo $? > "$out/$name.rc"
}

# faultfree NAME TRAINER: the same run without faults
faultfree() {
  "$here/scripts/ordo-launch" "$conf" --bin "$bin" "${common[@]}" "${wcmd[@]/RUN/$1}" --output.run="$1" \
    > "$out/$1.log" 2>&1
  echo $? > "$out/$1.rc"
}

# draw N fault iterations of a run of ITERS (between 5 % and 85 %), sorted, into at[]
draw_at() {
  local n=$1 iters=$2 k
  at=()
  for ((k = 0; k < n; k++)); do at+=($(( iters * 5 / 100 + RANDOM % (iters * 80 / 100) ))); done
  mapfile -t at < <(printf '%s\n' "${at[@]}" | sort -n)
}
# wait_iter DIR ITER PID: until DIR's metrics.jsonl holds ITER iterations of every worker, or
# PID ended (status 1)
wait_iter() {
  while kill -0 "$3" 2>/dev/null; do
    local lines=0
    [ -f "$1/metrics.jsonl" ] && lines=$(wc -l < "$1/metrics.jsonl")
    [ $((lines / workers)) -ge "$2" ] && return 0
    sleep 0.05
  done
  return 1
}
mono_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }

# sched_chaos NAME ITERS: the run under fault.scheduler = restart (fault.worker = abort):
# scheduler SIGKILLs, pauses, full disks and (--kill-servers) server SIGKILLs, in a seeded
# order; appends its faults to faults.raw
sched_chaos() {
  local name=$1 iters=$2
  local dir="$runs_dir/$name" pids="$out/$name.pids"
  rm -f "$pids"
  "$here/scripts/ordo-launch" "$conf" --bin "$bin" --pids "$pids" "${common[@]}" "${wcmd[@]/RUN/$name}" \
    --output.run="$name" --fault.scheduler=restart --fault.worker=abort \
    --fault.restarts=$((sched_kills + 1)) > "$out/$name.log" 2>&1 &
  local launcher=$! k i sk=0
  [ $kill_servers = 1 ] && sk=$sched_kills
  RANDOM=$((seed + 7))
  local n=$((sched_kills + sk + pauses + disk_full)) kind=()
  for ((k = 0; k < n; k++)); do
    if [ $k -lt $sched_kills ]; then kind+=(schedkill)
    elif [ $k -lt $((sched_kills + sk)) ]; then kind+=(serverkill)
    elif [ $k -lt $((sched_kills + sk + pauses)) ]; then kind+=(pause); else kind+=(diskfull); fi
  done
  for ((k = n - 1; k > 0; k--)); do
    i=$((RANDOM % (k + 1))); local t=${kind[$k]}; kind[$k]=${kind[$i]}; kind[$i]=$t
  done
  draw_at $n "$iters"
  for ((k = 0; k < n; k++)); do
    wait_iter "$dir" "${at[$k]}" $launcher || break
    local iter=$(( $(wc -l < "$dir/metrics.jsonl") / workers )) t0 pid before mono deadline
    case ${kind[$k]} in
      schedkill) # the launcher starts a new scheduler; the next fault waits for its rebuild
        pid=$(awk '$1=="scheduler" {p=$2} END {print p}' "$pids")
        before=$(grep -c "cluster complete: every member registered again" "$out/$name.log")
        mono=$(mono_ns); t0=$(now_s)
        kill -KILL "$pid" 2>/dev/null || continue
        echo "$name,schedkill,scheduler,0,$iter,$t0,$before,$mono" >> "$out/faults.raw"
        deadline=$(( $(date +%s) + 4 * timeout_ms / 1000 + 30 ))
        while kill -0 $launcher 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do
          [ "$(grep -c "cluster complete: every member registered again" "$out/$name.log")" -gt "$before" ] && break
          sleep 0.05
        done ;;
      serverkill) # the backups take over; a replacement joins (the next fault waits for it)
        local rank=$((RANDOM % servers))
        pid=$(awk -v n="$rank" '$1=="server" && $2==n {p=$3} END {print p}' "$pids")
        before=$(grep -c "joined in place of the dead server" "$out/$name.log")
        t0=$(now_s)
        kill -KILL "$pid" 2>/dev/null || continue
        echo "$name,kill,server,$rank,$iter,$t0,$before" >> "$out/faults.raw"
        deadline=$(( $(date +%s) + 4 * timeout_ms / 1000 + 30 ))
        while kill -0 $launcher 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do
          [ "$(grep -c "joined in place of the dead server" "$out/$name.log")" -gt "$before" ] && break
          sleep 0.05
        done ;;
      pause) # a worker or a server, below half the timeout
        local role=worker rank ms=$(( timeout_ms / 10 + RANDOM % (timeout_ms * 4 / 10) ))
        [ $((RANDOM % 2)) = 0 ] && role=server
        if [ $role = server ]; then rank=$((RANDOM % servers)); else rank=$((RANDOM % workers)); fi
        pid=$(awk -v r="$role" -v n="$rank" '$1==r && $2==n {p=$3} END {print p}' "$pids")
        t0=$(now_s)
        kill -STOP "$pid" 2>/dev/null || continue
        sleep "$(awk -v m=$ms 'BEGIN{printf "%.3f", m/1000}')"
        kill -CONT "$pid" 2>/dev/null
        echo "$name,pause,$role,$rank,$iter,$t0,$ms" >> "$out/faults.raw" ;;
      diskfull)
        local ms=$(( 1000 + RANDOM % 2000 ))
        t0=$(now_s)
        dd if=/dev/zero of="$runs_dir/filler" bs=64k 2> /dev/null
        sleep "$(awk -v m=$ms 'BEGIN{printf "%.3f", m/1000}')"
        rm -f "$runs_dir/filler"
        echo "$name,diskfull,disk,-1,$iter,$t0,$ms" >> "$out/faults.raw" ;;
    esac
  done
  wait $launcher
  echo $? > "$out/$name.rc"
}

# cut_run NAME ITERS MS: the scheduler alone on a network namespace (host B), the servers and
# workers on another (A), B's end of the link cut (ip link set down) for MS ms once at a drawn
# iteration; every process's output in NAME-ROLE.log, all of it in NAME.log
cut_run() {
  local name=$1 iters=$2 ms=$3 i ep
  local A=ordo-chaos-$$-a B=ordo-chaos-$$-b VA=och$$a VB=och$$b NET=10.213.72
  local dir="$runs_dir/$name" names=() cpids=()
  ip netns add $A && ip netns add $B && ip link add $VA type veth peer name $VB &&
    ip link set $VA netns $A && ip link set $VB netns $B &&
    ip -n $A addr add $NET.1/24 dev $VA && ip -n $B addr add $NET.2/24 dev $VB &&
    ip -n $A link set lo up && ip -n $B link set lo up && ip -n $A link set $VA up &&
    ip -n $B link set $VB up || {
    echo "chaos.sh: --partitions needs network namespaces (root): $name left out" >&2
    ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null; return; }
  ip netns exec $B "$bin/ordo-scheduler" -c "$conf" "${common[@]}" --output.run="$name" \
    --fault.scheduler=restart "--cluster.scheduler=tcp://$NET.2:0" > "$out/$name-scheduler.log" 2>&1 &
  names+=(scheduler); cpids+=($!)
  for _ in $(seq 1 1200); do grep -q '^READY ' "$out/$name-scheduler.log" 2>/dev/null && break; sleep 0.05; done
  ep=$(sed -n 's/^READY //p' "$out/$name-scheduler.log" | head -1)
  for ((i = 0; i < servers; i++)); do
    ip netns exec $A "$bin/ordo-server" -c "$conf" "${common[@]}" --output.run="$name" \
      --fault.scheduler=restart "--cluster.scheduler=$ep" --cluster.rank=$i "--cluster.host=$NET.1" \
      > "$out/$name-server$i.log" 2>&1 &
    names+=(server$i); cpids+=($!)
  done
  for ((i = 0; i < workers; i++)); do
    ip netns exec $A "$bin/ordo-worker" -c "$conf" "${common[@]}" --output.run="$name" \
      --fault.scheduler=restart "--cluster.scheduler=$ep" --cluster.rank=$i "--cluster.host=$NET.1" \
      > "$out/$name-worker$i.log" 2>&1 &
    names+=(worker$i); cpids+=($!)
  done
  RANDOM=$((seed + 11))
  draw_at 1 "$iters"
  if wait_iter "$dir" "${at[0]}" "${cpids[0]}"; then
    local iter=$(( $(wc -l < "$dir/metrics.jsonl") / workers )) t0 t1
    t0=$(now_s)
    ip -n $B link set $VB down
    sleep "$(awk -v m=$ms 'BEGIN{printf "%.3f", m/1000}')"
    ip -n $B link set $VB up
    t1=$(now_s)
    echo "$name,cut,scheduler,0,$iter,$t0,$ms,$t1" >> "$out/faults.raw"
  fi
  local rc=0 st
  for i in "${!cpids[@]}"; do wait "${cpids[$i]}"; st=$?; [ $st = 0 ] || rc=$st; done
  echo $rc > "$out/$name.rc"
  for i in "${names[@]}"; do cat "$out/$name-$i.log"; done > "$out/$name.log"
  ip netns del $A 2>/dev/null; ip netns del $B 2>/dev/null
}

rm -f "$out/faults.raw"
IFS=, read -ra tlist <<<"$trainers"
for trainer in "${tlist[@]}"; do
  wcmd=() # the torch trainer's [worker] command (RUN: the run's name, where its parameters go)
  run_joins=0
  case $trainer in
    synthetic) iters=${iterations:-6000}
               common=(--model.trainer=synthetic "--model.tensors=64KiB,256KiB,16KiB") ;;
    mlp) if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
           echo "chaos.sh: no Fashion-MNIST in $data: the mlp is left out" >&2; continue
         fi
         iters=${iterations:-3000}
         common=(--model.trainer=mlp --model.compute=cpu --model.batch=32 --model.seed=$seed
                 --optimizer.lr=0.05 --optimizer.momentum=0.9) ;;
    torch) if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
             echo "chaos.sh: no Fashion-MNIST in $data: the torch trainer is left out" >&2; continue
           fi
           py=${ORDO_PYTHON:-$here/.venv/bin/python}
           if ! "$py" -c "import torch, ordo.torch.elastic" 2>/dev/null; then
             echo "chaos.sh: $py cannot import torch and ordo.torch.elastic (scripts/setup-python.sh, or ORDO_PYTHON): the torch trainer is left out" >&2
             continue
           fi
           iters=${iterations:-600}
           wcmd=("--worker.command=$py $here/examples/torch/train_fmnist_elastic.py --steps $iters --seed $seed --out $out/RUN")
           common=(--model.trainer=declared)
           run_joins=$joins
           if [ "$joins" -gt 0 ] && [ $kill_servers = 1 ]; then
             echo "chaos.sh: --joins with --kill-servers: a run cannot grow with replicated servers (fault.max_workers needs fault.replicas = 1); the torch run gets no joins" >&2
             run_joins=0
           fi
           [ "$run_joins" -gt 0 ] && common+=(--fault.max_workers=$((workers + joins))) ;;
    *) echo "chaos.sh: unknown trainer $trainer (synthetic, mlp, torch)" >&2; exit 2 ;;
  esac
  common+=(--model.iterations="$iters" --cluster.servers="$servers" --cluster.workers="$workers"
           --fault.timeout_ms="$timeout_ms" --fault.heartbeat_ms=$((timeout_ms / 10))
           --output.dir="$runs_dir" --output.progress_every=0)
  [ "$disk_full" -gt 0 ] && common+=(--fault.checkpoint_every=$((iters / 20)))
  [ "$trainer" = mlp ] && common+=(--output.save_params=true)
  if [ "$joins" -gt 0 ] && [ "$run_joins" = 0 ]; then
    echo "chaos.sh: $trainer: no joins (only [worker] command programs can join a running job)" >&2
  fi
  echo "chaos.sh: $trainer: fault-free run, then $kills kills, $pauses pauses, $long_pauses long pauses, $disk_full full disks and $run_joins joins (seed $seed)" >&2
  faultfree "$trainer-faultfree"
  chaos "$trainer-chaos" "$trainer" "$iters"
  if [ "$sched_kills" -gt 0 ]; then
    echo "chaos.sh: $trainer: $sched_kills scheduler kills (fault.scheduler = restart)" >&2
    sched_chaos "$trainer-sched" "$iters"
  fi
  if [ $partitions = 1 ] && [ "$trainer" != torch ]; then
    echo "chaos.sh: $trainer: the scheduler's host cut for $((timeout_ms / 3)) ms and $((timeout_ms * 5 / 2)) ms" >&2
    cut_run "$trainer-cut-short" "$iters" $((timeout_ms / 3))
    cut_run "$trainer-cut-long" "$iters" $((timeout_ms * 5 / 2))
  fi
done

# the PyTorch runs' final parameters against the fault-free run's (the venv's torch)
for run in torch-chaos torch-sched; do
  [ -f "$out/$run/params.pt" ] && [ -f "$out/torch-faultfree/params.pt" ] || continue
  "${ORDO_PYTHON:-$here/.venv/bin/python}" - "$out" "$run" > "$out/$run-params.txt" <<'EOF'
import sys, torch
a = torch.load(f"{sys.argv[1]}/torch-faultfree/params.pt")
b = torch.load(f"{sys.argv[1]}/{sys.argv[2]}/params.pt")
print(max(float(((b[k] - v).abs() / v.abs().clamp_min(1e-6)).max()) for k, v in a.items()))
EOF
done

# the mlp's final parameters (params.bin) against the fault-free run's: the largest absolute
# difference, for each run with faults
for run in mlp-chaos mlp-sched mlp-cut-short mlp-cut-long; do
  [ -f "$runs_dir/$run/params.bin" ] && [ -f "$runs_dir/mlp-faultfree/params.bin" ] || continue
  python3 - "$runs_dir/mlp-faultfree/params.bin" "$runs_dir/$run/params.bin" > "$out/$run-params.txt" <<'EOF'
import struct, sys
def values(p):
    b = open(p, "rb").read()
    n, _, _ = struct.unpack_from("<IIq", b, 8)
    off, total = 24, 0
    for _ in range(n):
        (l,) = struct.unpack_from("<H", b, off)
        (k,) = struct.unpack_from("<Q", b, off + 2 + l)
        off += 10 + l
        total += k
    return struct.unpack_from(f"<{total}f", b, off)
a, b = values(sys.argv[1]), values(sys.argv[2])
print(max(abs(x - y) for x, y in zip(a, b)))
EOF
done

python3 - "$out" "$runs_dir" "$timeout_ms" "$max_drop" "${tlist[@]}" <<'EOF'
import csv, datetime, json, os, re, statistics, sys
out, runs, timeout_ms, max_drop = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
trainers = sys.argv[5:]
faults = []
if os.path.exists(f"{out}/faults.raw"):
    for row in csv.reader(open(f"{out}/faults.raw")):
        faults.append(dict(run=row[0], kind=row[1], role=row[2], rank=int(row[3]),
                           iter=int(row[4]), t=float(row[5]), extra=int(row[6]),
                           more=int(float(row[7])) if len(row) > 7 and row[1] == "schedkill"
                           else float(row[7]) if len(row) > 7 else None))
def events(run):
    p = f"{runs}/{run}/membership.jsonl"
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
def log_of(run):
    p = f"{out}/{run}.log"
    return open(p, errors="replace").read() if os.path.exists(p) else ""
def rc_of(run):
    p = f"{out}/{run}.rc"
    return int(open(p).read()) if os.path.exists(p) else None
def summary(run):
    p = f"{runs}/{run}/summary.json"
    return json.load(open(p)) if os.path.exists(p) else {}
torn = {}
def metrics(run):
    """metrics.jsonl's records; a line that is no JSON (torn) is counted in torn[run]"""
    p = f"{runs}/{run}/metrics.jsonl"
    out_ = []
    for l in open(p) if os.path.exists(p) else []:
        try:
            out_.append(json.loads(l))
        except ValueError:
            torn[run] = torn.get(run, 0) + 1
    return out_
def logged_at(line, near):
    """the wall time of a log line's HH:MM:SS.mmm, on the day of the time `near`"""
    m = re.search(r"(\d\d):(\d\d):(\d\d\.\d+) ", line)
    if not m:
        return None
    day = datetime.datetime.fromtimestamp(near).replace(hour=0, minute=0, second=0, microsecond=0)
    t = day.timestamp() + int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])
    return t - 86400 if t - near > 43200 else t + 86400 if near - t > 43200 else t
def next_iteration_ms(run, mono_ns):
    """from mono_ns (the workers' monotonic clock) to the first time every worker had finished
    an iteration after it"""
    firsts = {}
    for d in metrics(run):
        if d.get("t_end_ns", 0) > mono_ns:
            w = d["worker"]
            firsts[w] = min(firsts.get(w, d["t_end_ns"]), d["t_end_ns"])
    workers = {d["worker"] for d in metrics(run)}
    return round((max(firsts.values()) - mono_ns) / 1e6, 1) if workers and set(firsts) == workers else ""
rows, bad = [], []
with open(f"{out}/faults.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["run", "fault", "role", "rank", "iteration", "pause_ms", "recovery_ms", "rebuilt_ms"])
    for t in trainers:
      for kind_of_run in ("chaos", "sched", "cut-short", "cut-long"):
        run = f"{t}-{kind_of_run}"
        if rc_of(run) is None:
            continue
        ev, lg = events(run), log_of(run)
        rec, rebuilt, joins_ms = [], [], []
        built = re.findall(r".*cluster complete: every member registered again.*", lg)
        for x in faults:
            if x["run"] != run:
                continue
            r, b = "", ""
            if x["kind"] in ("kill", "longpause") and x["role"] == "worker":
                back = [e for e in ev if e["event"] == "recovered" and e["worker"] == x["rank"]]
                if len(back) > x["extra"]:
                    r = round((back[x["extra"]]["time_s"] - x["t"]) * 1000, 1)
                    rec.append(r)
            if x["kind"] == "join":
                joined = [e for e in ev if e["event"] == "join"]
                if len(joined) > x["extra"]:
                    r = round((joined[x["extra"]]["time_s"] - x["t"]) * 1000, 1)
                    joins_ms.append(r)
            if x["kind"] == "kill" and x["role"] == "server":
                # the extra-th promotion (in kill order): the next iteration every worker finished
                promos = summary(run).get("promotions", [])
                if len(promos) > x["extra"] and "next_iteration_unix_ms" in promos[x["extra"]]:
                    r = round(promos[x["extra"]]["next_iteration_unix_ms"] - x["t"] * 1000, 1)
                    rec.append(r)
            if x["kind"] == "schedkill":
                # the next iteration every worker finished (they train on without a scheduler)
                # and the new scheduler's rebuild (the extra-th "cluster complete" line)
                r = next_iteration_ms(run, x["more"])
                if r != "":
                    rec.append(r)
                if len(built) > x["extra"]:
                    at = logged_at(built[x["extra"]], x["t"])
                    if at is not None:
                        b = round((at - x["t"]) * 1000, 1)
                        rebuilt.append(b)
            if x["kind"] == "cut" and x["more"] is not None:
                # a long cut: from the link's return to the last member welcomed back
                back = [logged_at(l, x["more"]) for l in
                        re.findall(r".*registered again: welcomed back.*", lg)]
                back = [a for a in back if a is not None and a >= x["t"]]
                if back:
                    r = round((max(back) - x["more"]) * 1000, 1)
                    rec.append(r)
            w.writerow([run, x["kind"], x["role"], x["rank"], x["iter"],
                        x["extra"] if x["kind"] in ("pause", "diskfull", "cut") else "", r, b])
        mine = [x for x in faults if x["run"] == run]
        count = lambda k: sum(1 for x in mine if x["kind"] == k)
        kills, pauses, joins = count("kill"), count("pause"), count("join")
        long_pauses, disks, sched_kills, cuts = count("longpause"), count("diskfull"), count("schedkill"), count("cut")
        disk_errors = len(re.findall(r"ERROR checkpoint after \d+ updates: cannot write", lg))
        deaths = len(re.findall(r"is dead: no heartbeat", lg))
        wrong = sum(int(m) for m in re.findall(r"pulled values checked.*?, (\d+) wrong", lg))
        acc = summary(run).get("test_accuracy")
        acc0 = summary(f"{t}-faultfree").get("test_accuracy")
        params_diff = ""
        if t == "torch":  # worker 0 prints it; summary.json has none for a [worker] command
            def printed(r):
                m = re.findall(r"test accuracy ([0-9.]+)%", log_of(r))
                return float(m[-1]) / 100 if m else None
            acc, acc0 = printed(run), printed(f"{t}-faultfree")
        if t in ("mlp", "torch") and os.path.exists(f"{out}/{run}-params.txt"):
            params_diff = float(open(f"{out}/{run}-params.txt").read())
        mem = summary(run).get("membership", {})
        row = dict(run=run, kills=kills, pauses=pauses, long_pauses=long_pauses,
                   sched_kills=sched_kills, scheduler_cuts=cuts, deaths_logged=deaths,
                   disk_full=disks, failed_checkpoints=disk_errors, joins=joins,
                   joined=len(joins_ms), join_median_ms=round(statistics.median(joins_ms), 1)
                   if joins_ms else "", exit=rc_of(run),
                   exit_faultfree=rc_of(f"{t}-faultfree"), restarts=mem.get("restarts"),
                   recovered=len(rec),
                   recovery_median_ms=round(statistics.median(rec), 1) if rec else "",
                   recovery_worst_ms=max(rec) if rec else "",
                   rebuilt_median_ms=round(statistics.median(rebuilt), 1) if rebuilt else "",
                   rebuilt_worst_ms=max(rebuilt) if rebuilt else "",
                   wrong_values=wrong if t == "synthetic" else "",
                   accuracy=acc if acc is not None else "",
                   accuracy_faultfree=acc0 if acc0 is not None else "",
                   params_max_rel_diff=params_diff)
        rows.append(row)
        if row["exit"] != 0 or row["exit_faultfree"] != 0:
            bad.append(f"{run}: exit {row['exit']} (fault-free {row['exit_faultfree']})")
        if t == "synthetic" and (wrong or "pulled values checked" not in lg):
            bad.append(f"{run}: {wrong} wrong values")
        want = sum(1 for x in mine if x["kind"] in ("kill", "longpause", "schedkill")
                   or (x["kind"] == "cut" and kind_of_run == "cut-long"))
        if len(rec) != want:
            bad.append(f"{run}: {len(rec)} of the {want} faults recovered from (a worker back, a "
                       "server's slices served again, every worker past the scheduler's death, "
                       "the members back with a cut-off scheduler)")
        if len(rebuilt) != sched_kills:
            bad.append(f"{run}: {len(rebuilt)} of {sched_kills} killed schedulers rebuilt the run")
        if kind_of_run == "cut-short" and deaths:
            bad.append(f"{run}: a cut shorter than the timeout was taken for {deaths} deaths")
        if len(joins_ms) != joins:
            bad.append(f"{run}: {len(joins_ms)} of {joins} added workers joined")
        metrics(run)
        if torn.get(run):
            bad.append(f"{run}: {torn[run]} lines of metrics.jsonl are no JSON (torn)")
        if t in ("mlp", "torch") and (acc is None or acc0 is None or (acc0 - acc) * 100 > max_drop):
            bad.append(f"{run}: accuracy {acc} against {acc0} fault-free")
with open(f"{out}/chaos.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["run"])
    w.writeheader()
    w.writerows(rows)
print(f"| run | kills | pauses | long pauses | scheduler kills | scheduler cuts | full disks (failed checkpoints) | joins | exit | deaths logged | recovery median (ms) | recovery worst (ms) | scheduler rebuilt, median (ms) | join median (ms) | wrong values | accuracy (fault-free) | params vs fault-free |")
print(f"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    acc = (f"{100 * r['accuracy']:.2f} % ({100 * r['accuracy_faultfree']:.2f} %)"
           if r["accuracy"] != "" and r["accuracy_faultfree"] != "" else "")
    print(f"| {r['run']} | {r['kills']} | {r['pauses']} | {r['long_pauses']} | {r['sched_kills']} | "
          f"{r['scheduler_cuts']} | {r['disk_full']} ({r['failed_checkpoints']}) | "
          f"{r['joined']}/{r['joins']} | {r['exit']} | {r['deaths_logged']} | "
          f"{r['recovery_median_ms']} | {r['recovery_worst_ms']} | {r['rebuilt_median_ms']} | "
          f"{r['join_median_ms']} | {r['wrong_values']} | {acc} | "
          f"{'' if r['params_max_rel_diff'] == '' else format(r['params_max_rel_diff'], '.1e')} |")
print(f"(fault.timeout_ms {timeout_ms}; recovery: from the SIGKILL (a long pause: the SIGSTOP) to the restarted worker's first finished iteration, for a server to the next iteration every worker finished, for the scheduler to the next iteration every worker finished after its death, for a long cut of the scheduler's link from its return to the last member welcomed back; scheduler rebuilt: from its SIGKILL to the new scheduler's rebuild; params: the largest relative (torch) or absolute (mlp) difference of the final parameters; {out}/faults.csv)")
for b in bad:
    print("FAILED:", b)
sys.exit(1 if bad else 0)
EOF
