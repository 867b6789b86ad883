#!/usr/bin/env bash
# setup.sh [--test]: install ordo's dependencies from Debian's packages. Without arguments,
# what the main job needs (scripts/run.sh): the build's packages and the run's tools; with
# --test, also what the test suite adds (scripts/test.sh). Idempotent: installs only what is
# missing. Needs root (or sudo) when something is missing. apt's own output (the packages'
# service start-up messages, slurm's useradd warning) goes to a log shown only on failure.
set -euo pipefail

# the build and the runs
# python3: ordo-launch (free ports, the readable summary) and the experiments' reports;
# python3-venv: the .venv of the Python binding (scripts/setup-python.sh); check: the unit
# tests' library, which the build compiles with the rest; openssh-client: ordo-launch --hosts;
# iproute2, gnuplot-nox: the experiments' network namespaces and plots
pkgs=(build-essential cmake pkg-config git
      libzmq3-dev libmsgpack-dev check libinih-dev libjansson-dev
      libopenblas-dev zlib1g-dev dataset-fashion-mnist
      gnuplot-nox iproute2 python3 python3-venv procps openssh-client)
# what the tests add (--test)
# openssh-server: integration.launch_ssh starts a throw-away sshd in each of two network
# namespaces (the package's service is not needed; it is not started in containers)
# iputils-ping: the network-namespace tests' probe (tests/integration/lib.sh)
# gdb: a shell test that times out waiting for a process prints that process's stacks
# tcpdump: integration.curve captures loopback traffic to check CURVE leaves nothing in clear
# slurmctld, slurmd, slurm-client, munge: integration.slurm runs a real Slurm on this host
# (daemons of its own, on loopback) and ordo-slurm in it
test_pkgs=(openssh-server iputils-ping tcpdump gdb slurmctld slurmd slurm-client munge)

what="run"
case ${1:-} in
  "") ;;
  --test) pkgs+=("${test_pkgs[@]}"); what="run and test" ;;
  *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all $what dependencies present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
log=$(mktemp /tmp/ordo-setup.XXXXXX.log)
echo "setup: installing ${missing[*]} (apt's output: $log)"
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } > "$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "setup: apt-get failed; its whole output is in $log" >&2
  exit 1
fi
rm -f "$log"
echo "setup: done"
