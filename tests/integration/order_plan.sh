#!/usr/bin/env bash
# The scheduler's plan at start-up: for each policy it logs the policy and (ordered policies)
# the simulated makespan, and says when it assumes a link rate; an order file that does not
# fit the model (missing parameter, other model, no file) stops it before anyone can register,
# exit status 1, with the file, the JSON path and the reason.
source "$(dirname "$0")/lib.sh"
args=(--model.trainer=synthetic --model.tensors=4KiB,8KiB,1MiB --cluster.scheduler=tcp://127.0.0.1:0
      "--output.dir=$T" --fault.startup_ms=300)

expect_refusal() { # FILE TEXT: the scheduler must exit 1 naming TEXT
  local out rc
  out=$("$BIN/ordo-scheduler" "${args[@]}" "--order.policy=file:$1" 2>&1); rc=$?
  [ $rc = 1 ] || fail "order file $1: exit status $rc, expected 1 ($out)"
  grep -qF "ordo-scheduler: cannot plan the run: order.policy: $1: $2" <<<"$out" ||
    fail "order file $1: got '$out', expected it to name: $2"
  grep -q '^READY' <<<"$out" && fail "order file $1: the scheduler listened before refusing"
  ok "refused: ${out#ordo-scheduler: }"
}
printf '{"format": "ordo-order/1", "model": "sizes", "policy": "x", "priorities": [{"param": "p0", "priority": 0}, {"param": "p2", "priority": 1}]}' > "$T/missing.json"
expect_refusal "$T/missing.json" "\$.priorities: parameter 'p1' is missing"
printf '{"format": "ordo-order/1", "model": "resnet50", "policy": "x", "priorities": []}' > "$T/other.json"
expect_refusal "$T/other.json" "\$.model: 'resnet50' does not match the model 'sizes'"
expect_refusal "$T/none.json" "cannot open: No such file or directory"

# ordered policies log the simulated makespan; no [net] bandwidth: the assumed rate is named
for pol in tio tao search none fifo; do
  start sched_$pol "$BIN/ordo-scheduler" "${args[@]}" "--order.policy=$pol" --order.search_budget_ms=100
  finish sched_$pol 10
  [ "$st" = 3 ] || fail "policy $pol: the lone scheduler should give up waiting (status 3), got '$st'"
  log="$T/sched_$pol.log"
  case $pol in
    none) grep -q "order: policy none: every worker requests its pulls in a seeded random order" "$log" ||
            fail "policy none: no plan line in $(cat "$log")" ;;
    *) want=greedy; [ $pol = fifo ] && want=fifo # enforce = auto: greedy in training
       grep -q "order: policy $pol, enforce $want; simulated forward makespan [0-9.]* ms" "$log" ||
         fail "policy $pol: no simulated makespan in $(cat "$log")" ;;
  esac
  case $pol in tio|tao|search)
    grep -q "order: no \[net\] bandwidth or \[order\] plan_bandwidth set; planning assumes 10 gbit/s" "$log" ||
      fail "policy $pol: the assumed link rate is not logged" ;;
  esac
  # search in training searches again under the step model, from the better start
  case $pol in
    search) grep -qE "order: training search from the (planned|listed) order \(modelled step: planned [0-9.]+ ms, listed [0-9.]+ ms\): [0-9.]+ ms after [0-9]+ modelled steps" "$log" ||
              fail "policy search: no training search line in $(cat "$log")" ;;
    *) grep -q "training search" "$log" && fail "policy $pol: ran the training search" ;;
  esac
  ok "policy $pol: $(grep -o 'order: policy.*' "$log" | head -1)"
done

# a real link's rate for the planners, without emulation ([order] plan_bandwidth): the
# simulated makespan is planned at 1 gbit/s, and merged pushes take b = 8 ns/byte from it
start sched_rate "$BIN/ordo-scheduler" "${args[@]}" --order.policy=tio --order.plan_bandwidth=1gbit \
  --push.mode=merged
finish sched_rate 10
log="$T/sched_rate.log"
grep -q "simulated forward makespan [0-9.]* ms .* at 1 gbit/s" "$log" || fail "plan_bandwidth: not planned at 1 gbit/s: $(cat "$log")"
grep -q "planning assumes" "$log" && fail "plan_bandwidth: still says it assumes a rate"
grep -q "merge: optimal, .*b = 8 ns/byte" "$log" || fail "plan_bandwidth: the merge planner's b is not 8 ns/byte"
ok "order.plan_bandwidth = 1gbit: $(grep -o 'simulated forward makespan.*' "$log" | head -1)"
echo "9 passed, 0 failed"
