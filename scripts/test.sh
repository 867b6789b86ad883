#!/usr/bin/env bash
# test.sh: install dependencies (Debian's packages: the run's and what the tests add, through
# scripts/setup.sh --test; and .venv for the Python binding), build, and run the whole default
# test suite with ctest.
# The default suite (ctest -LE long) aims at about 10 minutes on CI's 2 cores: it runs with
# one test per core (ctest -j, ORDO_TEST_JOBS or the number of cores), each test's ctest
# properties keeping heavy or clashing ones apart (PROCESSORS: integration.hardening has the
# machine to itself; RESOURCE_LOCK shm: the tests that make or check ordo's /dev/shm
# segments run one at a time). Longer runs carry the ctest label "long" (soaks, whole-epoch
# trainings, the CURVE variant of hardening): run them with  scripts/test.sh -L long
# The suite runs once, without retries. Only the tests labelled "timing" (they compare two
# timings of one run: live vs simulated makespan, a calibrated link cost, shaped vs emulated
# network, measured vs emulated compute time) get one more try, in a second ctest run, one
# test at a time, since a loaded machine can stretch one timing. Either run failing fails the
# script. Arguments are ctest's (default: -LE long); they select the tests of both runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
bash scripts/setup-python.sh
bash scripts/build.sh
cd build
if [ $# -eq 0 ]; then
  set -- -LE long
fi
# first run: the selection without the timing tests (folded into the caller's -LE, since
# several -LE options would have to match together)
args=("$@") first=() excluded=0
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    -LE|--label-exclude)
      first+=("${args[i]}" "(${args[i + 1]:-})|timing"); excluded=1; i=$((i + 1)) ;;
    *) first+=("${args[i]}") ;;
  esac
done
[ "$excluded" = 1 ] || first+=(-LE timing)
rc=0
jobs=${ORDO_TEST_JOBS:-$(nproc)}
ctest --output-on-failure --timeout 900 -j "$jobs" "${first[@]}" || rc=1
# second run: the timing tests of the selection (several -L options must all match)
ctest --output-on-failure --timeout 900 --repeat until-pass:2 "${args[@]}" -L timing || rc=1
exit $rc
