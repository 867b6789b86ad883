#!/usr/bin/env bash
# Worker faults under scripts/ordo-launch ([fault] worker, docs/fault.md): with worker =
# restart, SIGKILLed workers (rank 1, then rank 0) are started again, rejoin, and the run
# exits 0 with every pulled value of the synthetic job, the final ones included, equal to the
# fault-free formula (nothing lost, nothing applied twice); a rank killed more often than
# fault.restarts stops the run. With worker = shrink the run goes on with the workers left
# and summary.json counts the change. Modes the rejoin cannot follow are refused at start.
source "$(dirname "$0")/lib.sh"
LAUNCH=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}/scripts/ordo-launch
common=(--model.trainer=synthetic "--model.tensors=64KiB,256KiB,16KiB" --cluster.servers=2
        --fault.timeout_ms=5000 --fault.heartbeat_ms=250 --output.dir="$T" --output.progress_every=0)
conf=$T/empty.ini
: > "$conf"

# launch RUN ARGS...: the launcher in the background, its pid in $lpid, pids in $T/RUN.pids
launch() {
  local run=$1; shift
  "$LAUNCH" "$conf" --bin "$BIN" --pids "$T/$run.pids" "${common[@]}" --output.run="$run" "$@" \
    > "$T/$run.log" 2>&1 &
  lpid=$!
}
# at_iter RUN WORKERS N: wait (60 s) until the run recorded N iterations
at_iter() {
  for _ in $(seq 1 1200); do
    [ -f "$T/$1/metrics.jsonl" ] && [ $(( $(wc -l < "$T/$1/metrics.jsonl") / $2 )) -ge "$3" ] && return 0
    kill -0 $lpid 2>/dev/null || fail "$1 ended before iteration $3: $(tail -n 5 "$T/$1.log")"
    sleep 0.05
  done
  fail "$1 did not reach iteration $3"
}
pid_of() { awk -v r="$2" '$1=="worker" && $2==r {p=$3} END {print p}' "$T/$1.pids"; }
# launched RUN SECONDS: wait for the launcher; its status goes to $st
launched() {
  st=timeout
  for _ in $(seq 1 $(( $2 * 20 ))); do
    if ! kill -0 $lpid 2>/dev/null; then wait $lpid; st=$?; return; fi
    sleep 0.05
  done
  kill -TERM $lpid
}
member() { python3 -c "import json;print(json.load(open('$T/$1/summary.json'))['membership']['$2'])"; }

# restart: kill worker 1, and once it is back worker 0
launch restart --cluster.workers=2 --model.iterations=4000 --fault.worker=restart
at_iter restart 2 300
kill -KILL "$(pid_of restart 1)"
for _ in $(seq 1 1200); do grep -q '"recovered","worker":1,' "$T/restart/membership.jsonl" 2>/dev/null && break; sleep 0.05; done
grep -q '"recovered","worker":1,' "$T/restart/membership.jsonl" || fail "worker 1 did not come back"
at_iter restart 2 1500
kill -KILL "$(pid_of restart 0)"
launched restart 120
[ "$st" = 0 ] || fail "worker = restart: the run ended with '$st', expected 0"
n=$(grep -c 'pulled values checked, 0 wrong (the final values included)' "$T/restart.log")
[ "$n" = 2 ] || fail "worker = restart: $n of 2 workers checked every value without a wrong one"
[ "$(member restart restarts)" = 2 ] && [ "$(member restart worker_deaths)" = 2 ] ||
  fail "summary.json: membership $(member restart restarts) restarts, $(member restart worker_deaths) deaths; expected 2, 2"
grep -q "worker 0 .*rejoined at iteration" "$T/restart.log" || fail "worker 0 did not rejoin"
ok "worker = restart: workers 1 and 0 killed and rejoined; exit 0, every value (the final ones too) as the formula says; re-sent pushes left out: $(grep -o '[0-9]* re-sent pushes left out' "$T/restart.log" | awk '{s += $1} END {print s + 0}')"

# a rank killed more often than fault.restarts stops the run
launch bound --cluster.workers=2 --model.iterations=100000 --fault.worker=restart --fault.restarts=1
at_iter bound 2 200
kill -KILL "$(pid_of bound 1)"
for _ in $(seq 1 1200); do grep -q '"recovered","worker":1,' "$T/bound/membership.jsonl" 2>/dev/null && break; sleep 0.05; done
kill -KILL "$(pid_of bound 1)"
launched bound 60
[ "$st" != 0 ] && [ "$st" != timeout ] || fail "a second death with fault.restarts = 1 ended with '$st'"
ok "fault.restarts = 1: the second death of worker 1 stopped the run (status $st)"

# shrink: kill worker 1 of 3
launch shrink --cluster.workers=3 --model.iterations=3000 --fault.worker=shrink
at_iter shrink 3 300
kill -KILL "$(pid_of shrink 1)"
launched shrink 120
[ "$st" = 0 ] || fail "worker = shrink: the run ended with '$st', expected 0"
[ "$(member shrink shrinks)" = 1 ] && [ "$(member shrink workers_left)" = 2 ] ||
  fail "summary.json: $(member shrink shrinks) shrinks, $(member shrink workers_left) workers left; expected 1, 2"
grep -q "the run goes on with 2 workers" "$T/shrink.log" || fail "the scheduler did not log the shrink"
[ "$(grep -c '0 wrong' "$T/shrink.log")" = 2 ] || fail "a value pulled before the shrink was wrong"
ok "worker = shrink: worker 1 of 3 killed; the run went on with 2 and exited 0; summary counts it"

# shrink with the mlp: 2 epochs of 3 workers' shards; worker 1 dies in the first, and the
# second divides the data among the 2 left (where Fashion-MNIST is installed)
d=${ORDO_MODEL_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ -r "$d/train-images-idx3-ubyte.gz" ] && [ -r "$d/t10k-images-idx3-ubyte.gz" ]; then
  launch mshrink --cluster.workers=3 --model.trainer=mlp --model.compute=cpu --model.batch=32 \
    --model.epochs=2 --fault.worker=shrink
  at_iter mshrink 3 200
  kill -KILL "$(pid_of mshrink 1)"
  launched mshrink 180
  [ "$st" = 0 ] || fail "mlp under shrink: the run ended with '$st', expected 0"
  [ "$(grep -c "epoch 2: the data is divided among the 2 workers left" "$T/mshrink.log")" = 2 ] ||
    fail "the 2 workers left did not divide the data at the second epoch"
  acc=$(python3 -c "import json;print(json.load(open('$T/mshrink/summary.json'))['test_accuracy'])")
  python3 -c "import sys; sys.exit(0 if $acc > 0.75 else 1)" || fail "mlp under shrink: accuracy $acc"
  ok "worker = shrink, mlp: worker 1 of 3 killed in epoch 1; epoch 2 divided the data among 2; accuracy $acc"
else
  echo "note: no Fashion-MNIST in $d: the mlp shrink case is left out"
fi

# refused: what a rejoin cannot follow
for bad in "--sync.mode=ssp:sync.mode = bsp" "--push.mode=merged --push.calibrate=true:push.calibrate = false"; do
  # shellcheck disable=SC2086  # two options in one case
  "$BIN/ordo-scheduler" "${common[@]}" --fault.worker=restart ${bad%%:*} --print-conf > "$T/bad.log" 2>&1
  rc=$?
  [ $rc = 2 ] && grep -q "fault.worker = restart needs ${bad#*:}" "$T/bad.log" ||
    fail "fault.worker = restart with ${bad%%:*}: status $rc, $(cat "$T/bad.log")"
done
ok "fault.worker = restart with ssp or a start-up calibration is refused at start, naming the key"
echo "all passed"
