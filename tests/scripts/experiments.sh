#!/usr/bin/env bash
# scripts.experiments: every experiment script answers --help and refuses an unknown
# argument by name; merging_aa.sh's report, on run folders written here with known
# iteration times, gives the means, standard errors and distances those times imply; so does
# merging.sh's report on time-dilated runs (--dilate), in the emulated network's time;
# stragglers.sh's report on model-profile runs (throughput alone).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for s in "$root"/scripts/experiments/*.sh; do
  name=$(basename "$s")
  "$s" --help > "$tmp/help" 2>&1 || fail "$name --help exited $?"
  grep -q "usage: scripts/experiments/$name" "$tmp/help" || fail "$name --help: no usage line"
  rc=0; "$s" --no-such-option > "$tmp/err" 2>&1 || rc=$?
  [ $rc = 2 ] || fail "$name --no-such-option exited $rc, not 2"
  grep -q "unknown argument --no-such-option" "$tmp/err" || fail "$name: $(cat "$tmp/err")"
done

# run_folder DIR MS COMPUTE FORWARD: a run folder whose 3 measured iterations (after 1
# warm-up) all take MS on both workers, COMPUTE of it compute and FORWARD the forward phase
run_folder() {
  local i w
  mkdir -p "$1"
  echo '{"warmup": 1, "iterations": 4}' > "$1/summary.json"
  for i in 0 1 2 3; do
    for w in 0 1; do
      echo "{\"worker\":$w,\"iter\":$i,\"step_ms\":$2,\"compute_ms\":$3,\"forward_ms\":$4}"
    done
  done > "$1/metrics.jsonl"
}
# run MODEL S ARM REP MS: an A/A run taking MS, 40 % of it forward
run() { run_folder "$tmp/aa/runs/$1-10gbit-s$2-$3-r$4" "$5" 1 "$(python3 -c "print($5 * 0.4)")"; }
run googlenet 1 optimalA 1 100; run googlenet 1 mgwfbp 1 104; run googlenet 1 optimalB 1 102
run googlenet 1 optimalA 2 102; run googlenet 1 mgwfbp 2 106; run googlenet 1 optimalB 2 106
"$root/scripts/experiments/merging_aa.sh" --report-only --out "$tmp/aa" --models googlenet \
  --servers 1 > "$tmp/table"
# A: 101 +- 1, B: 104 +- 2, 2.97 % apart; mgwfbp 105 +- 1; A and B pooled 102.5: -2.4 %
want="| googlenet | 1 | 2 | 101.0 ± 1.0 | 104.0 ± 2.0 | 3.0 % | 105.0 ± 1.0 | -2.4 % |"
grep -qF -- "$want" "$tmp/table" || fail "merging_aa.sh report: want '$want', got: $(cat "$tmp/table")"
grep -q "largest 3.0 %, median 3.0 %, 1 of 1 rows more than 2 % apart" "$tmp/table" ||
  fail "merging_aa.sh summary line: $(tail -n 1 "$tmp/table")"
[ "$(wc -l < "$tmp/aa/runs.csv")" = 7 ] || fail "runs.csv: $(wc -l < "$tmp/aa/runs.csv") lines, want 7"
grep -q "^googlenet,10gbit,1,optimalB,2,106,42.4,63.6," "$tmp/aa/runs.csv" ||
  fail "runs.csv row: $(grep optimalB,2 "$tmp/aa/runs.csv")"
# merging.sh --dilate: a bad factor is refused by name; the report of a folder dilated 10
# times gives times, predictions and the cost model divided by 10
rc=0; "$root/scripts/experiments/merging.sh" --dilate 10gbit=0 > "$tmp/err" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "\-\-dilate: '10gbit=0' is not K or NET=K" "$tmp/err" ||
  fail "merging.sh --dilate 10gbit=0: exit $rc, $(cat "$tmp/err")"
d="$tmp/dil"
mkdir -p "$d/runs"
echo "10gbit 1 14 8 0.9 calibrated" > "$d/calibration.txt"
echo "10gbit 10" > "$d/dilation.txt"
# mrun ALGO REP MS GROUPS: a run of googlenet whose measured iterations take MS (dilated)
mrun() {
  local r="$d/runs/googlenet-10gbit-s1-$1-r$2"
  run_folder "$r" "$3" 300 $(($3 / 2))
  python3 -c "import json, sys; print(json.dumps({'groups': [[str(g)] for g in range(int(sys.argv[1]))]}))" \
    "$4" > "$r/merge-plan.json"
  echo "[scheduler] 12:00:00.000 scheduler INFO merge: $1, $4 groups for 173 parameters, 8 messages per worker (a = 14.0 us, b = 8 ns/byte, c = 0.9 ns/byte); predicted backward + pushes + pulls 884.800 ms" > "$r.log"
}
mrun wfbp 1 1040 173; mrun optimal 1 1000 3; mrun wfbp 2 1060 173; mrun optimal 2 1020 3
"$root/scripts/experiments/merging.sh" --report-only --out "$d" --models googlenet --networks 10gbit \
  --servers 1 --algos wfbp,optimal > "$tmp/dil.out" 2>&1 || fail "merging.sh --report-only: $(cat "$tmp/dil.out")"
# optimal: (100 + 102) / 2 = 101 ms +- 1, predicted 88.48, compute 30 of it, forward 50.5,
# a 1.4 us, b 0.8 ns/B
want="googlenet,10gbit,1,optimal,3,nan,88.48,101,1,100,102,71,1,100,1,50.5,50.5,2,6,1.4,0.8,0.09,"
grep -qF -- "$want" "$d/merging.csv" || fail "dilated merging.csv: want '$want', got: $(cat "$d/merging.csv")"
# wfbp (104 + 106) / 2 = 105 ms: optimal the fastest, 3.81 % ahead of it
grep -q "^googlenet,10gbit,1,optimal,101,1,101,1,0,wfbp,105,3.81," "$d/merging-summary.csv" ||
  fail "dilated merging-summary.csv: $(cat "$d/merging-summary.csv")"

# stragglers.sh: an unknown model is refused by name; a profile's report (no accuracy) has
# throughput against bsp's, the busy rate (batch / step: 10 / 35 ms = 286 against
# 10 / 80 ms = 125) and no time-to-target columns
rc=0; "$root/scripts/experiments/stragglers.sh" --model no_such_model --out "$tmp/st0" \
  > "$tmp/err" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "no_such_model" "$tmp/err" || fail "stragglers.sh --model no_such_model: $rc, $(cat "$tmp/err")"
for run in none-bsp-tao:100:40 none-asp-tao:150:30 x4-bsp-tao:50:80 x4-backup1-tao:125:35; do
  IFS=: read -r name tput step <<< "$run"
  mkdir -p "$tmp/st/$name"
  echo "{\"throughput_samples_per_s\": $tput, \"step_ms\": {\"mean\": $step}, \"compute_ms\": {\"mean\": 10}, \"sync\": {\"late_pushes\": 3}, \"conf\": {\"model\": {\"batch\": 10}}}" \
    > "$tmp/st/$name/summary.json"
  echo "{\"worker\": 0, \"iter\": 0, \"step_ms\": $step}" > "$tmp/st/$name/metrics.jsonl"
done
"$root/scripts/experiments/stragglers.sh" --model resnet50 --report-only --out "$tmp/st" \
  > "$tmp/st.out" 2>&1 || fail "stragglers.sh --report-only: $(cat "$tmp/st.out")"
grep -qF "| tao | x4 | backup1 | 125 | 2.50x | 286 | 2.29x | 35.0 | 10.0 | 0.00 / 0 | 3 |" "$tmp/st/stragglers.md" ||
  fail "stragglers.sh profile table: $(cat "$tmp/st/stragglers.md")"
grep -q "time to" "$tmp/st/stragglers.md" && fail "stragglers.sh profile table has time-to-target columns"
echo "scripts.experiments: passed"
