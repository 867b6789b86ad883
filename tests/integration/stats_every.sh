#!/usr/bin/env bash
# integration.stats_every: [output] stats_every = 3 (docs/planning.md, "The scheduler at
# scale"). 4 workers of the synthetic job, 10 iterations: each worker sends its records in
# STATS messages of 3 (and the last one alone, before DONE), so the scheduler takes
# 4 x 4 = 16 STATS messages instead of 40, and the run log still holds all 40 records, each
# (worker, iteration) once. Then the default (auto, 1 at 4 workers): 40 messages.
source "$(dirname "$0")/lib.sh"
common=(--model.trainer=synthetic --model.tensors=4KiB --model.iterations=10 --model.warmup=1
        --net.bandwidth=0 --output.progress_every=0 "--output.dir=$T" --cluster.workers=4
        --cluster.servers=1)
check_run() { # RUN WANT_STATS_MESSAGES
  local run=$1 want=$2 i
  finish scheduler 120
  [ "$st" = 0 ] || fail "$run: the scheduler ended with $st"
  for i in 0 1 2 3; do
    finish "worker$i" 60
    [ "$st" = 0 ] || fail "$run: worker $i ended with $st"
  done
  finish server0 60
  python3 - "$T/$run" "$want" <<'PY' || fail "$run: see above"
import json, sys
run, want = sys.argv[1], int(sys.argv[2])
recs = [json.loads(l) for l in open(run + "/metrics.jsonl")]
pairs = sorted((r["worker"], r["iter"]) for r in recs)
expect = sorted((w, i) for w in range(4) for i in range(10))
if pairs != expect:
    sys.exit("FAIL: metrics.jsonl holds %d records, not each (worker, iteration) of 4 x 10 once"
             % len(recs))
cp = json.load(open(run + "/summary.json"))["control_plane"]
got = cp["messages"].get("STATS", 0)
if got != want:
    sys.exit("FAIL: the scheduler took %d STATS messages, not %d" % (got, want))
print("ok: %s: 40 records in %d STATS messages" % (run.rsplit("/", 1)[1], got))
PY
  if grep -qi "dropped stats\|WARN\|ERROR" "$T/scheduler.log"; then
    fail "$run: the scheduler warned: $(grep -i "dropped stats\|WARN\|ERROR" "$T/scheduler.log" | head -3)"
  fi
}
start_cluster every3 1 4 --output.stats_every=3
check_run every3 16
start_cluster auto 1 4
check_run auto 40
ok "stats_every"
