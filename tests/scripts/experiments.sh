#!/usr/bin/env bash
# scripts.experiments: every experiment script answers --help and refuses an unknown
# argument by name; merging_aa.sh's report, on run folders written here with known
# iteration times, gives the means, standard errors and distances those times imply.
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

# run MODEL S ARM REP MS: a run folder whose 3 measured iterations (after 1 warm-up) all take
# MS on both workers, 40 % of it forward
run() {
  local d="$tmp/aa/runs/$1-10gbit-s$2-$3-r$4" i w
  mkdir -p "$d"
  echo '{"warmup": 1, "iterations": 4}' > "$d/summary.json"
  for i in 0 1 2 3; do
    for w in 0 1; do
      echo "{\"worker\":$w,\"iter\":$i,\"step_ms\":$5,\"compute_ms\":1,\"forward_ms\":$(python3 -c "print($5 * 0.4)")}"
    done
  done > "$d/metrics.jsonl"
}
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
echo "scripts.experiments: passed"
