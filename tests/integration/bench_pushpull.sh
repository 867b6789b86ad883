#!/usr/bin/env bash
# ordo-bench pushpull, briefly: its --json rows are the documented ones (one per size, x4
# steps, every goodput and time positive, at least --reps rounds each), and bad options stop it with exit status 2 and the option named. No
# timing is asserted: the benchmark's figures are for people to compare (docs/benchmarks.md).
source "$(dirname "$0")/lib.sh"

start bench "$BIN/ordo-bench" pushpull --json --reps 3 --min-time 0 --min 4KiB --max 1MiB
finish bench 120
[ "$st" = 0 ] || fail "ordo-bench pushpull: exit status $st"
python3 - "$T/bench.log" <<'PY' || fail "pushpull --json rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
sizes = [r["bytes"] for r in rows]
assert sizes == [4096, 16384, 65536, 262144, 1048576], "sizes %s" % sizes
for r in rows:
    for k in ("ordo_gbps", "raw_gbps", "sep_gbps", "fused_us", "push_us", "pull_us", "raw_rtt_us"):
        assert r[k] > 0, "%s: %s = %s" % (r["bytes"], k, r[k])
    assert r["rounds"] >= 3, "%s: %d rounds, asked for 3" % (r["bytes"], r["rounds"])
    # goodput counts the bytes pushed and pulled: 2 * bytes over the fused round trip
    want = 2 * r["bytes"] / (r["fused_us"] * 1e-6) / 1e9
    assert abs(r["ordo_gbps"] - want) <= 0.01 * want + 1e-3, "%s: ordo_gbps %s, fused_us gives %s" % (
        r["bytes"], r["ordo_gbps"], want)
print("ok: %d rows, %s" % (len(rows), " ".join("%d:%.2f" % (r["bytes"], r["ordo_gbps"] / r["raw_gbps"])
                                             for r in rows)))
PY
ok "pushpull --json: five sizes, positive figures"

for bad in "--segment 100" "--reps 0" "--frobnicate"; do
  # shellcheck disable=SC2086
  out=$("$BIN/ordo-bench" pushpull $bad 2>&1); rc=$?
  [ $rc = 2 ] || fail "pushpull $bad: exit status $rc, expected 2 ($out)"
  grep -q "ordo-bench pushpull: \(bad value in\|unknown option\) ${bad%% *}" <<<"$out" ||
    fail "pushpull $bad: '$out' does not name the option"
  ok "refused $bad: $out"
done
