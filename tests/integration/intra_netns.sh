#!/usr/bin/env bash
# The intra experiment's smoke mode (scripts/experiments/intra.sh --smoke), so the script
# cannot rot: two worker hosts of two workers and two server hosts in network namespaces on
# tbf-shaped veths run a 4 MiB chain profile flat, hierarchical and hierarchical with the
# overlapped all-gather. Asserts bytes, not times: every variant produced a row; the
# hierarchical runs move at most 0.55 times the flat run's network_bytes_per_iter, and worker
# host 0's link carried less per iteration than flat. Skips (exit 77) when not root, when
# network namespaces cannot be made, entered, addressed or reached (lib.sh's netns_probe), or
# when the kernel lacks bridges or tbf.
source "$(dirname "$0")/lib.sh"
SRC=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null && command -v tc >/dev/null || skip "ip or tc (iproute2) is not installed"
netns_probe
rc=0
bash "$SRC/scripts/experiments/intra.sh" --smoke --bin "$BIN" --out "$T/out" > "$T/smoke.log" 2>&1 || rc=$?
[ $rc = 77 ] && skip "$(tail -n 1 "$T/smoke.log")"
[ $rc = 0 ] || fail "intra.sh --smoke exited $rc: $(tail -n 20 "$T/smoke.log")"
python3 - "$T/out/intra.csv" <<'PY' || fail "intra.csv: $(cat "$T/out/intra.csv")"
import csv, sys
rows = {r["variant"]: r for r in csv.DictReader(open(sys.argv[1]))}
assert set(rows) == {"flat", "hier", "overlap"}, rows.keys()
flat = float(rows["flat"]["network_mb_per_iter"])
for v in ("hier", "overlap"):
    r = rows[v]
    assert float(r["network_mb_per_iter"]) <= 0.55 * flat, (v, r["network_mb_per_iter"], flat)
    assert float(r["h0_tx_mb"]) < float(rows["flat"]["h0_tx_mb"]), (v, r["h0_tx_mb"])
PY
ok "intra.sh --smoke: $(grep -c . "$T/out/intra.csv") CSV lines, hierarchical bytes <= 0.55 x flat"
echo "1 passed, 0 failed"
