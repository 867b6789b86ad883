#!/usr/bin/env bash
# ordo-plan cluster on the command line: --help, a table and ordo-cluster/1 JSON with the
# values a user reads (the auto settings filled in, one model each way on a worker host's link
# with groups and as many server hosts as worker hosts, the ring's 2 (n - 1) / n), usage errors
# and impossible clusters refused with exit status 2 naming the option, an unknown profile
# with exit status 1 naming the file.
source "$(dirname "$0")/lib.sh"
SRC=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
P="$BIN/ordo-plan"
M="$SRC/conf/models/resnet50.json"

"$P" cluster --help | grep -q '^usage: ordo-plan cluster' || fail "--help"
"$P" --help | grep -q 'ordo-plan cluster' || fail "ordo-plan --help does not list cluster"
ok "--help"

out=$("$P" cluster --workers 16 --workers-per-host 4 --worker-link 10gbit "$M") || fail "table: $out"
grep -q '^ordo (parameter servers) ' <<<"$out" && grep -q '^ring all-reduce ' <<<"$out" &&
  grep -q '^hierarchical all-reduce ' <<<"$out" && grep -q '^why ' <<<"$out" || fail "table: $out"
ok "table: $(head -2 <<<"$out" | tail -1)"

"$P" cluster --json --workers 16 --workers-per-host 4 --server-hosts 4 --worker-link 10gbit \
  --groups on --compression none --order tao "$M" > "$T/c.json" || fail "json"
python3 - "$T/c.json" <<'PY' || fail "json values"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "ordo-cluster/1" and d["model"] == "resnet50", d
s, ps, ring = d["settings"], d["ps"], d["ring"]
assert s == {"server_hosts": 4, "compression": "none", "density": 0.01, "groups": "on",
             "order": "tao", "auto": []}, s
model = 25557032 * 4
assert abs(ps["worker_link_bytes_out"] - model) < 1, ps  # groups: one model per host
assert abs(ring["worker_link_bytes"] - 2 * 15 / 16 * model) < 1, ring
assert ps["pushers"] == 4 and ps["step_ms"] >= ps["bound_ms"] * 0.99, ps
assert ps["limit"] in ("compute", "worker link", "server link", "server cpu", "scheduler"), ps
PY
ok "json: the settings, one model per worker host, the ring's 2 (n - 1) / n"

expect() { # STATUS TEXT ARGS...: ordo-plan cluster ARGS exits STATUS with one line naming TEXT
  local want=$1 text=$2 out rc; shift 2
  out=$("$P" cluster "$@" 2>&1); rc=$?
  [ $rc = "$want" ] || fail "$*: exit status $rc, expected $want ($out)"
  grep -qF -- "$text" <<<"$out" || fail "$*: '$out' does not name $text"
  [ "$(wc -l <<<"$out")" = 1 ] || fail "$*: more than one line: $out"
  ok "refused ($rc): $out"
}
expect 2 "--worker-link: a link of 0" --workers 8 --worker-link 0 "$M"
expect 2 "--server-link: a link of 0" --workers 8 --worker-link 1gbit --server-link 0 "$M"
expect 2 "--workers-per-host: 16 workers per host but only 8" --workers 8 --workers-per-host 16 \
  --worker-link 1gbit "$M"
expect 2 "--server-hosts: 9 server hosts for 8 workers" --workers 8 --server-hosts 9 \
  --worker-link 1gbit "$M"
expect 2 "--groups: host groups need" --workers 8 --groups on --worker-link 1gbit "$M"
expect 2 "--workers: missing" --worker-link 1gbit "$M"
expect 2 "--compression: none, bf16" --workers 8 --worker-link 1gbit --compression zip "$M"
expect 2 "--frobnicate: unknown option" --workers 8 --worker-link 1gbit --frobnicate 1 "$M"
expect 1 "nope.json" --workers 8 --worker-link 1gbit "$SRC/conf/models/nope.json"
echo "12 passed, 0 failed"
