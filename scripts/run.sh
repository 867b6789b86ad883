#!/usr/bin/env bash
# run.sh: the main job. Installs dependencies, builds, then trains the built-in MLP on
# Fashion-MNIST for one epoch on a local cluster (1 scheduler, 2 servers, 2 workers;
# conf/mlp.ini) and prints the result. Extra arguments go to ordo-launch, e.g.
#   scripts/run.sh --model.epochs=2 --order.policy=tao
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
scripts/ordo-launch conf/mlp.ini "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "run.sh: the run failed (status $status)" >&2
  exit "$status"
fi
summary=$(grep -o 'SUMMARY .*' "$log" | tail -1 | cut -d' ' -f2-)
python3 - "$summary" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
print()
print("ordo run complete")
print(f"  workers:            {s['workers']}  iterations: {s['iterations']}")
print(f"  throughput:         {s['throughput_samples_per_s']:.0f} samples/s")
print(f"  step time:          mean {s['step_ms']['mean']:.2f} ms  p50 {s['step_ms']['p50']:.2f}  p95 {s['step_ms']['p95']:.2f}")
if 'test_accuracy' in s:
    print(f"  test accuracy:      {100 * s['test_accuracy']:.2f} %")
PY
