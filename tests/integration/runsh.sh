#!/usr/bin/env bash
# The README's main command: scripts/run.sh must end with a printed result and exit 0: a
# readable summary (no screen-wide SUMMARY JSON line) naming the run's summary.json, whose
# test accuracy is the one printed.
# Skips (exit 77) without the Fashion-MNIST files it trains on.
source "$(dirname "$0")/lib.sh"
need_fmnist
root=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# run.sh configures and builds build/ first (scripts/build.sh: -Werror when CI=true). Keep the
# build's own ORDO_WERROR, whatever CI is in this environment: flipping it recompiled the whole
# tree (77 s of a CI run) and relinked the binaries under the tests running beside this one.
case $(sed -n 's/^ORDO_WERROR:BOOL=//p' "$root/build/CMakeCache.txt" 2>/dev/null) in
  ON) export CI=true ;;
  OFF) unset CI ;;
esac
out="$T/run.out"
if ! (cd "$root" && bash scripts/run.sh --output.dir="$T/runs") > "$out" 2>&1; then
  tail -30 "$out"
  fail "scripts/run.sh exited non-zero"
fi
grep -q "ordo run complete" "$out" || fail "no result printed"
acc=$(grep -o 'test accuracy: *[0-9.]*' "$out" | grep -o '[0-9.]*$')
[ -n "$acc" ] || fail "no test accuracy printed"
! grep -q 'SUMMARY {' "$out" || fail "the summary's JSON line was printed"
js=$(sed -n 's/^  summary: *//p' "$out")
[ -f "$js" ] || fail "the printed summary path '$js' is not a file"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))
sys.exit(0 if "%.2f" % (100 * s["test_accuracy"]) == sys.argv[2] else 1)' "$js" "$acc" ||
  fail "$js does not hold the printed test accuracy $acc %"
ok "scripts/run.sh printed a result: test accuracy $acc %, the whole summary in $js"
echo "1 passed, 0 failed"
