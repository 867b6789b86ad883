#!/usr/bin/env bash
# Replicated servers on the mlp (Fashion-MNIST; skips without it): replicas = 2, 2 servers, 2
# workers, momentum 0.9. SIGKILL server 1 mid-run: the survivors exit 0 and the test accuracy
# is within 0.5 points of a fault-free run with the same seed (the parameters are in fact
# byte for byte the same: params.bin is compared too). Once with dense pushes, once merged
# (push.mode = merged: a group's message carries several slices; the new primary takes the
# parts the dead one had not acknowledged). Then under asp and ssp (sync.mode = asp | ssp;
# nondeterministic whatever happens: fault-free asp runs differ by up to 1 point here): every
# survivor exits 0, the test accuracy is within 2 points of a fault-free run of the same mode,
# and the surviving server took exactly one push per push made (its slices x the
# worker-iterations recorded): none lost, none twice. Arguments go to every process
# (integration.replicas_mlp.bf16: --push.compression=bf16).
source "$(dirname "$0")/lib.sh"
need_fmnist
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
iters=120
common=(-c "$root/conf/mlp.ini" --model.epochs=0 --model.iterations=$iters --fault.replicas=2
        --fault.timeout_ms=2000 --fault.heartbeat_ms=200 --output.dir="$T" --output.progress_every=0
        --output.save_params=true "$@")

cluster() { local run=$1; shift; start_cluster "$run" 2 2 "$@"; }
acc() { python3 -c "import json; print(json.load(open('$T/$1/summary.json'))['test_accuracy'])"; }

for mode in dense merged; do
  cluster ref-$mode --push.mode=$mode
  for n in scheduler server0 server1 worker0 worker1; do
    finish $n 150
    [ "$st" = 0 ] || fail "$mode, fault-free run: $n ended with '$st'"
  done
  a_ref=$(acc ref-$mode)

  cluster kill-$mode --push.mode=$mode
  for _ in $(seq 1 2400); do
    [ -f "$T/kill-$mode/metrics.jsonl" ] && [ "$(wc -l < "$T/kill-$mode/metrics.jsonl")" -ge $iters ] && break
    sleep 0.05
  done
  at=$(wc -l < "$T/kill-$mode/metrics.jsonl")
  [ "$at" -lt $((2 * iters)) ] || fail "$mode: the run ended before the kill"
  kill -KILL "${PID[server1]}"
  kill_ms=$(( $(date +%s%N) / 1000000 ))
  for n in scheduler server0 worker0 worker1; do
    finish $n 150
    [ "$st" = 0 ] || fail "$mode, server 1 killed: $n ended with '$st', expected 0"
  done
  a_kill=$(acc kill-$mode)
  python3 -c "import sys; sys.exit(0 if abs($a_kill - $a_ref) <= 0.005 else 1)" ||
    fail "$mode: test accuracy $a_kill with a server killed, $a_ref without: more than 0.5 points apart"
  cmp -s "$T/ref-$mode/params.bin" "$T/kill-$mode/params.bin" || fail "$mode: params.bin differs from the fault-free run's"
  rec=$(python3 -c "import json; print(json.load(open('$T/kill-$mode/summary.json'))['promotions'][0]['next_iteration_unix_ms'] - $kill_ms)")
  ok "$mode: server 1 killed after $at of $((2 * iters)) worker-iterations: test accuracy $a_kill (fault-free $a_ref), params.bin identical, recovery $rec ms from the kill to the next completed iteration"
done

# asp and ssp
for sync in asp ssp; do
  cluster ref-$sync --sync.mode=$sync
  for n in scheduler server0 server1 worker0 worker1; do
    finish $n 150
    [ "$st" = 0 ] || fail "$sync, fault-free run: $n ended with '$st'"
  done
  a_ref=$(acc ref-$sync)
  cluster kill-$sync --sync.mode=$sync
  for _ in $(seq 1 2400); do
    [ -f "$T/kill-$sync/metrics.jsonl" ] && [ "$(wc -l < "$T/kill-$sync/metrics.jsonl")" -ge $iters ] && break
    sleep 0.05
  done
  at=$(wc -l < "$T/kill-$sync/metrics.jsonl")
  [ "$at" -lt $((2 * iters)) ] || fail "$sync: the run ended before the kill"
  kill -KILL "${PID[server1]}"
  for n in scheduler server0 worker0 worker1; do
    finish $n 150
    [ "$st" = 0 ] || fail "$sync, server 1 killed: $n ended with '$st', expected 0"
  done
  a_kill=$(acc kill-$sync)
  python3 -c "import sys; sys.exit(0 if abs($a_kill - $a_ref) <= 0.02 else 1)" ||
    fail "$sync: test accuracy $a_kill with a server killed, $a_ref without: more than 2 points apart"
  line=$(grep "shutdown:" "$T/server0.log") || fail "$sync: server 0 logged no shutdown line"
  slices=$(sed -n 's/.*primary of \([0-9]*\) slices holding \([0-9]*\) updates.*/\1/p' <<< "$line")
  updates=$(sed -n 's/.*primary of \([0-9]*\) slices holding \([0-9]*\) updates.*/\2/p' <<< "$line")
  n_iters=$(wc -l < "$T/kill-$sync/metrics.jsonl")
  [ -n "$slices" ] && [ "$updates" = $((slices * n_iters)) ] ||
    fail "$sync: server 0 holds $updates updates of its $slices slices after $n_iters worker-iterations, expected one per push: $line"
  ok "$sync: server 1 killed after $at of $n_iters worker-iterations: test accuracy $a_kill (fault-free $sync $a_ref), server 0 holds $updates updates = $slices slices x $n_iters pushes"
done
echo "4 passed, 0 failed"
