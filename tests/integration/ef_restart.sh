#!/usr/bin/env bash
# Error feedback under [fault] worker = restart (docs/compression.md, docs/fault.md): an mlp
# run of 2 workers pushing onebit (then topk; then onebit in merged pushes) with residuals has
# a worker SIGKILLed mid-run; ordo-launch starts it again, it takes up its predecessor's
# residuals (RUN/residuals-worker-R) and the run's params.bin equals, byte for byte, the same
# conf's run without the kill. Then the residuals in a checkpoint: the same onebit run with a
# checkpoint every 200 updates under `ordo-launch --restart 2` has its scheduler SIGKILLed
# after the first one; the job resumed from it (fault.resume) reads every worker's residuals
# back from checkpoint-worker-R-T.bin and ends equal, byte for byte, to the fault-free run.
source "$(dirname "$0")/lib.sh"
need_fmnist
LAUNCH=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}/scripts/ordo-launch
common=(--cluster.workers=2 --cluster.servers=2 --model.trainer=mlp --model.compute=cpu
        --model.batch=32 --model.iterations=600 --output.save_params=true
        --fault.worker=restart --fault.timeout_ms=5000 --fault.heartbeat_ms=250
        --output.dir="$T" --output.progress_every=0)
conf=$T/empty.ini
: > "$conf"
# run RUN ARGS...: the launcher in the background, its pid in $lpid, pids in $T/RUN.pids
run() {
  local r=$1; shift
  "$LAUNCH" "$conf" --bin "$BIN" --pids "$T/$r.pids" "${common[@]}" --output.run="$r" "$@" \
    > "$T/$r.log" 2>&1 &
  lpid=$!
}
# finished RUN: wait (240 s) for the launcher; fail unless it exited 0
finished() {
  for _ in $(seq 1 4800); do
    if ! kill -0 $lpid 2>/dev/null; then
      wait $lpid || fail "$1: the run ended with status $?"
      return
    fi
    sleep 0.05
  done
  kill -TERM $lpid
  fail "$1 did not end within 240 s"
}
# at_iter RUN N: wait (120 s) until both workers recorded N iterations
at_iter() {
  for _ in $(seq 1 2400); do
    [ -f "$T/$1/metrics.jsonl" ] && [ $(( $(wc -l < "$T/$1/metrics.jsonl") / 2 )) -ge "$2" ] && return 0
    kill -0 $lpid 2>/dev/null || fail "$1 ended before iteration $2"
    sleep 0.05
  done
  fail "$1 did not reach iteration $2"
}
pid_of() { awk -v r="$2" '$1=="worker" && $2==r {p=$3} END {print p}' "$T/$1.pids"; }
# CODEC VICTIM PUSH-MODE: merged pushes keep a residual per merged part
for case in "onebit 1 dense" "topk:0.01 0 dense" "onebit 1 merged"; do
  read -r codec victim mode <<< "$case"
  name=${codec%%:*}-$mode
  run "$name-ref" --push.compression="$codec" --push.mode="$mode"
  finished "$name-ref"
  run "$name-kill" --push.compression="$codec" --push.mode="$mode"
  at_iter "$name-kill" 150
  kill -KILL "$(pid_of "$name-kill" "$victim")"
  finished "$name-kill"
  grep -q "worker $victim .*rejoined at iteration" "$T/$name-kill.log" ||
    fail "$codec: worker $victim did not rejoin"
  grep -q "goes on with zero residuals" "$T/$name-kill.log" &&
    fail "$codec: the restarted worker did not find its predecessor's residuals"
  ls "$T/$name-kill/residuals-worker-$victim"/unit-*.res > /dev/null 2>&1 ||
    fail "$codec: no residual files in $name-kill/residuals-worker-$victim"
  cmp -s "$T/$name-ref/params.bin" "$T/$name-kill/params.bin" ||
    fail "$codec: params.bin of the run with worker $victim killed differs from the fault-free run's"
  ok "$codec with error feedback, $mode pushes: worker $victim killed, rejoined at iteration $(grep -o "rejoined at iteration [0-9]*" "$T/$name-kill.log" | head -1 | awk '{print $4}'), restarted; params.bin equals the fault-free run's byte for byte"
done
# the residuals in a checkpoint: a whole job resumed from it goes on exactly
"$LAUNCH" "$conf" --bin "$BIN" --restart 2 --pids "$T/ckpt.pids" "${common[@]}" \
  --push.compression=onebit --push.mode=dense --fault.checkpoint_every=200 \
  --output.run=ckpt > "$T/ckpt.log" 2>&1 &
lpid=$!
for _ in $(seq 1 2400); do
  grep -q "checkpoint: .*/ckpt/checkpoint.bin after [1-9]00 updates" "$T/ckpt.log" && break
  kill -0 $lpid 2>/dev/null || fail "the checkpointed run ended before its first checkpoint"
  sleep 0.05
done
kill -KILL "$(awk '$1=="scheduler" {print $2; exit}' "$T/ckpt.pids")"
finished ckpt
grep -q "restart 1/2: run ckpt-r1 from $T/ckpt" "$T/ckpt.log" ||
  fail "the launcher did not resume the job from its checkpoint"
[ "$(grep -c "resume: error-feedback residuals from $T/ckpt/checkpoint-worker-" "$T/ckpt.log")" = 2 ] ||
  fail "the resumed workers did not read their residuals from the checkpoint"
cmp -s "$T/onebit-dense-ref/params.bin" "$T/ckpt-r1/params.bin" ||
  fail "onebit: the job resumed from a checkpoint ends with other values than the fault-free run"
ok "onebit with error feedback: scheduler killed after a checkpoint; the job resumed from it with every worker's residuals, and params.bin equals the fault-free run's byte for byte"
echo "all passed"
