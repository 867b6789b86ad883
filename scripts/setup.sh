#!/usr/bin/env bash
# setup.sh: install ordo's build and run dependencies from Debian's packages.
# Idempotent: installs only what is missing. Needs root (or sudo) when something is missing.
set -euo pipefail

# python3-venv: the .venv of the Python binding (scripts/setup-python.sh)
# openssh: ordo-launch --hosts runs processes over ssh; its test starts a throw-away sshd in
# each of two network namespaces (the package's service is not started in containers)
# gdb: a shell test that times out waiting for a process prints that process's stacks
# tcpdump: integration.curve captures loopback traffic to check CURVE leaves nothing in clear
# slurmctld, slurmd, slurm-client, munge: integration.slurm runs a real Slurm on this host
# (daemons of its own, on loopback) and ordo-slurm in it
pkgs=(build-essential cmake pkg-config git
      libzmq3-dev libmsgpack-dev check libinih-dev libjansson-dev
      libopenblas-dev zlib1g-dev dataset-fashion-mnist
      gnuplot-nox iproute2 python3 python3-venv procps
      openssh-client openssh-server tcpdump gdb
      slurmctld slurmd slurm-client munge)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
