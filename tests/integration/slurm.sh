#!/usr/bin/env bash
# A real Slurm on this host: Debian's slurm-wlm (slurmctld and slurmd, one node, "localhost")
# with a munged of the test's own, all on loopback, configured in a folder of the test's
# (SLURM_CONF: nothing under /etc is touched). Then:
#  1. sbatch runs scripts/ordo-slurm to train the mlp (conf/mlp.ini: 2 servers and 2 workers
#     on the node, each a job step started by srun): the run succeeds and its test accuracy
#     is at least 80 % (85.0 % with seed 1, as scripts/run.sh);
#  2. faults as ordo-launch handles them, since ordo-slurm is ordo-launch with srun for ssh:
#     on the synthetic job, worker 1 SIGKILLed mid-run with [fault] worker = restart is
#     started again through srun and rejoins; server 1 SIGKILLed with [fault] replicas = 2 is
#     replaced by a server that joins; the run exits 0 with every pulled value right.
# Root only (slurmd runs jobs as their users); skipped without root, the packages (slurmctld,
# slurmd, slurm-client, munge: scripts/setup.sh --test), the Fashion-MNIST data set, or what
# slurmd needs to start (a cgroup hierarchy on /sys/fs/cgroup; slurmd -C).
source "$(dirname "$0")/lib.sh"
SRC=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
[ "$(id -u)" = 0 ] || skip "not root (slurmd runs the jobs' steps as their users)"
for b in munged slurmctld slurmd sbatch srun scontrol sinfo; do
  command -v "$b" > /dev/null || PATH=$PATH:/usr/sbin command -v "$b" > /dev/null ||
    skip "no $b: Debian's slurmctld, slurmd, slurm-client and munge (scripts/setup.sh --test)"
done
PATH=$PATH:/usr/sbin
need_fmnist
# slurmd's prerequisites, checked before anything starts: its cgroup plugin (loaded whatever
# the conf's ProctrackType and TaskPlugin) finds the cgroup version from /sys/fs/cgroup and
# stops the daemon ("No filesystem mounted on /sys/fs/cgroup") where nothing is mounted there,
# as in a chroot or a container without cgroups; and it reads the node's hardware (slurmd -C)
slurmd_prereqs() {
  local fs
  fs=$(stat -f -c %T /sys/fs/cgroup 2> /dev/null) ||
    skip "slurmd needs a cgroup hierarchy: there is no /sys/fs/cgroup"
  case $fs in
    cgroup2fs)
      [ -r /sys/fs/cgroup/cgroup.controllers ] ||
        skip "slurmd needs a cgroup hierarchy: /sys/fs/cgroup is cgroup2 without cgroup.controllers" ;;
    tmpfs)
      awk '$2 ~ "^/sys/fs/cgroup/" && ($3 == "cgroup" || $3 == "cgroup2") {f = 1} END {exit !f}' /proc/mounts ||
        skip "slurmd needs a cgroup hierarchy: /sys/fs/cgroup is a tmpfs with no cgroup controller mounted in it" ;;
    *) skip "slurmd needs a cgroup hierarchy: nothing is mounted on /sys/fs/cgroup (its file system is $fs; mount cgroup2 there)" ;;
  esac
  SLURM_CONF=/dev/null slurmd -C > /dev/null 2>&1 ||
    skip "slurmd -C cannot read this node's hardware: $(SLURM_CONF=/dev/null slurmd -C 2>&1 | tail -n 1)"
}
slurmd_prereqs
chmod 755 "$T" # slurmd's steps and munged check the folders on their paths

# munged, with a key and socket of its own
mkdir -p "$T/munge" "$T/state" "$T/spool" && chmod 700 "$T/munge"
head -c 1024 /dev/urandom > "$T/munge/munge.key" && chmod 400 "$T/munge/munge.key"
start munged munged -F --force --socket="$T/munge/sock" --key-file="$T/munge/munge.key" \
  --pid-file="$T/munge/pid" --seed-file="$T/munge/seed" --log-file="$T/munged-file.log"
for _ in $(seq 1 600); do [ -S "$T/munge/sock" ] && break; sleep 0.05; done
[ -S "$T/munge/sock" ] || fail "munged did not start"

# slurmctld and slurmd on free loopback ports
read -r ctld_port d_port < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
export SLURM_CONF=$T/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=ordotest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld-file.log
SlurmdLogFile=$T/slurmd-file.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
PlugStackConfig=/dev/null
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=ordo Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
# on exit, pass or fail: cancel the jobs left (their steps' processes outlive slurmd) while
# slurmctld still answers, then stop the daemons and the sbatch --wait clients (one whose
# slurmctld is gone polls it for minutes: it once held a failed run until ctest's 300 s)
slurm_cleanup() {
  if timeout 10 scancel --partition=ordo 2> /dev/null; then
    for _ in $(seq 1 50); do [ -z "$(timeout 5 squeue -h 2> /dev/null)" ] && break; sleep 0.1; done
  fi
  cleanup_all
}
trap slurm_cleanup EXIT
start slurmctld slurmctld -D -i
start slurmd slurmd -D -N localhost
for _ in $(seq 1 600); do
  [ "$(sinfo -h -n localhost -o %t 2> /dev/null)" = idle ] && break
  sleep 0.1
done
[ "$(sinfo -h -n localhost -o %t 2> /dev/null)" = idle ] ||
  fail "the Slurm node did not come up: $(sinfo 2>&1 | tail -n 2)"
ok "slurmctld and slurmd on this host (ports $ctld_port, $d_port), munged with its own key"

# 1. the mlp through ordo-slurm in an sbatch job
timeout 240 sbatch --wait -N 1 -J ordo-mlp -o "$T/mlp.log" --wrap "$(printf '%q ' \
  "$SRC/scripts/ordo-slurm" "$SRC/conf/mlp.ini" --servers-per-node 2 --workers-per-node 2 \
  --bin "$BIN" --output.dir="$T/out" --output.run=mlp --output.progress_every=0)" > "$T/sbatch-mlp.log" 2>&1 ||
  fail "the mlp job failed: $(tail -n 20 "$T/mlp.log")"
grep -q "ordo-slurm: 1 nodes (localhost): 2 servers, 2 workers" "$T/mlp.log" ||
  fail "ordo-slurm did not lay out the node: $(head -n 5 "$T/mlp.log")"
acc=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["test_accuracy"])' \
  "$T/out/mlp/summary.json") || fail "no test accuracy in $T/out/mlp/summary.json"
python3 -c "import sys; sys.exit(0 if $acc >= 0.80 else 1)" ||
  fail "the mlp under Slurm reached $acc test accuracy (expected at least 0.80)"
ok "sbatch + ordo-slurm: the mlp on 2 servers and 2 workers (srun steps), test accuracy $acc"

# 2. a dead worker (restart) and a dead server (replicas): the programs through a folder of
# wrappers that note each process's pid, so that the test kills exactly its own
mkdir -p "$T/bin" "$T/pids"
for p in ordo-scheduler ordo-server ordo-worker; do
  cat > "$T/bin/$p" <<WRAP
#!/usr/bin/env bash
rank=-; for a in "\$@"; do case \$a in --cluster.rank=*) rank=\${a#*=} ;; esac; done
echo \$\$ > "$T/pids/$p-\$rank"
exec "$(cd "$BIN" && pwd)/$p" "\$@"
WRAP
  chmod +x "$T/bin/$p"
done
sbatch --wait -N 1 -J ordo-fault -o "$T/fault.log" --wrap "$(printf '%q ' "$SRC/scripts/ordo-slurm" \
  --bin "$T/bin" --servers-per-node 2 --workers-per-node 2 --model.trainer=synthetic \
  "--model.tensors=64KiB,1MiB,4KiB" --model.iterations=600 --fault.worker=restart \
  --fault.replicas=2 --fault.timeout_ms=2000 --fault.heartbeat_ms=200 --output.dir="$T/out" \
  --output.run=fault --output.progress_every=0)" > "$T/sbatch-fault.log" 2>&1 &
sbatch_pid=$!
PID[sbatch]=$sbatch_pid
for _ in $(seq 1 600); do grep -q '^Submitted batch job' "$T/sbatch-fault.log" && break; sleep 0.1; done
job=$(grep -o '[0-9]*$' "$T/sbatch-fault.log") || fail "sbatch: $(cat "$T/sbatch-fault.log")"
# at_iter N: wait (120 s) until the run recorded N worker-iterations
at_iter() {
  for _ in $(seq 1 2400); do
    [ -f "$T/out/fault/metrics.jsonl" ] && [ "$(wc -l < "$T/out/fault/metrics.jsonl")" -ge "$1" ] && return 0
    [ -n "$(squeue -h -j "$job" 2> /dev/null)" ] ||
      fail "the job ended early: $(grep 'ordo-launch:' "$T/fault.log"; tail -n 20 "$T/fault.log")"
    sleep 0.05
  done
  fail "the run did not reach $1 worker-iterations: $(tail -n 20 "$T/fault.log")"
}
at_iter 100
kill -KILL "$(cat "$T/pids/ordo-worker-1")" || fail "no worker 1 to kill"
at_iter 500
kill -KILL "$(cat "$T/pids/ordo-server-1")" || fail "no server 1 to kill"
wait "$sbatch_pid" || fail "the fault job failed (sbatch --wait: status $?): $(tail -n 30 "$T/fault.log")"
grep -q "ordo-launch: worker 1 exited with status .*; starting it again" "$T/fault.log" ||
  fail "worker 1 was not started again: $(grep ordo-launch "$T/fault.log")"
grep -q "ordo-launch: server 1 exited with status .*a replacement joins" "$T/fault.log" ||
  fail "server 1 was not replaced: $(grep ordo-launch "$T/fault.log")"
[ "$(grep -c '^\[worker [01]\] .*iterations, [0-9]* pulled values checked, 0 wrong' "$T/fault.log")" -ge 2 ] ||
  fail "a worker saw wrong values: $(grep 'values checked' "$T/fault.log")"
ok "under Slurm: worker 1 killed and started again (fault.worker = restart), server 1 killed and replaced (fault.replicas = 2), every pulled value right"
