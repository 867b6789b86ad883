#!/usr/bin/env bash
# Consistency models and backup workers ([sync], docs/stragglers.md) on the synthetic job,
# 4 workers and 2 servers with transient stragglers: under ssp with s = 0, 1, 3 every worker
# checks each pulled value against the closed form of a version in [t - s, t] and no pull's
# recorded staleness (metrics.jsonl "stale", summary.json sync) exceeds s; asp runs to the
# end; backup workers (b = 1) leave out exactly one push per iteration and slice; bad [sync]
# and [straggle] values are refused at start-up with the key named.
source "$(dirname "$0")/lib.sh"
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
conf="$T/syn.ini"
cat > "$conf" <<INI
[cluster]
servers = 2
workers = 4
[model]
trainer = synthetic
tensors = 1000,50000,3000
iterations = 20
warmup = 1
[straggle]
probability = 0.2
delay_ms = 15
[output]
dir = $T/runs
progress_every = 0
INI

# run NAME FLAGS...: one cluster through ordo-launch, run folder $T/runs/NAME
run() {
  local name=$1; shift
  timeout 120 "$root/scripts/ordo-launch" "$conf" --bin "$BIN" --output.run="$name" "$@" \
    > "$T/$name.log" 2>&1 || fail "run $name ($*) exited non-zero"
  [ -s "$T/runs/$name/summary.json" ] || fail "run $name: no summary.json"
}

# the largest staleness any pull of the run saw, from the per-iteration records
max_stale() {
  python3 - "$T/runs/$1/metrics.jsonl" <<'PY'
import json, sys
top, pulls = 0, 0
for line in open(sys.argv[1]):
    h = json.loads(line).get("stale")
    if h is None: sys.exit("a record without staleness: " + line)
    for s, n in enumerate(h):
        pulls += n
        if n: top = max(top, s)
print(top, pulls)
PY
}

for s in 0 1 3; do
  run ssp$s --sync.mode=ssp --sync.staleness=$s
  grep -q "0 wrong" "$T/ssp$s.log" || fail "ssp $s: pulled values outside the window"
  read -r top pulls < <(max_stale ssp$s)
  [ "$pulls" -eq $((4 * 20 * 3)) ] || fail "ssp $s: $pulls pulls recorded, expected 240"
  [ "$top" -le "$s" ] || fail "ssp $s: a pull was $top iterations stale"
  sm=$(python3 -c "import json;print(json.load(open('$T/runs/ssp$s/summary.json'))['sync']['staleness_max'])")
  [ "$sm" = "$top" ] || fail "ssp $s: summary says staleness_max $sm, the records $top"
  ok "ssp staleness $s: 240 pulls, none staler than $top <= $s, values checked"
done

run asp --sync.mode=asp
read -r top pulls < <(max_stale asp)
[ "$pulls" -eq 240 ] || fail "asp: $pulls pulls recorded"
ok "asp: ran to the end, pulls up to $top iterations stale"

run backup --sync.backup=1
late=$(python3 -c "import json;print(json.load(open('$T/runs/backup/summary.json'))['sync']['late_pushes'])")
[ "$late" -eq $((20 * 3)) ] || fail "backup 1: $late late pushes, expected 20 iterations x 3 slices"
ok "backup 1: 60 late pushes left out (20 iterations x 3 slices)"

# bad input: refused at start-up, the key named
bad() {
  local want=$1; shift
  local out; out=$("$BIN/ordo-scheduler" -c "$conf" "$@" --print-conf 2>&1) && fail "accepted $*"
  echo "$out" | grep -q "$want" || fail "$*: message does not name $want: $out"
}
bad sync.staleness --sync.mode=ssp --sync.staleness=-1
bad sync.backup --sync.backup=4
bad straggle.ranks --straggle.ranks=1,7
bad straggle.ranks --straggle.ranks=1x
ok "bad [sync] and [straggle] values refused with the key named"
echo "6 passed, 0 failed"
