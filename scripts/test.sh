#!/usr/bin/env bash
# test.sh: install dependencies, build, and run the whole default test suite with ctest.
# Longer runs carry the ctest label "long": run them with  scripts/test.sh -L long
# A few integration tests compare two timings of one run (live vs simulated makespan,
# calibrated link cost): on a loaded machine a failing test gets one more try.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
if [ $# -eq 0 ]; then
  set -- -LE long
fi
ctest --output-on-failure --timeout 900 --repeat until-pass:2 "$@"
