#!/usr/bin/env bash
# run.sh: the main job. Installs its dependencies (scripts/setup.sh: the build's and the run's
# packages, not the test suite's), builds, then trains the built-in MLP on
# Fashion-MNIST for one epoch on a local cluster (1 scheduler, 2 servers, 2 workers;
# conf/mlp.ini) and prints the result. Extra arguments go to ordo-launch, e.g.
#   scripts/run.sh --model.epochs=2 --order.policy=tao
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# ordo-launch ends with the readable summary (the whole one is the run folder's summary.json)
status=0
scripts/ordo-launch conf/mlp.ini "$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "run.sh: the run failed (status $status)" >&2
  exit "$status"
fi
