#!/usr/bin/env bash
# Installs ddlsim's build and test dependencies from Debian 12 packages (as root).
# Idempotent: does nothing when every package is already installed.
set -euo pipefail
packages=(build-essential cmake libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev libeigen3-dev doctest-dev
          clang libclang-rt-14-dev openmpi-bin libopenmpi-dev python3-matplotlib
          dataset-fashion-mnist iproute2 zlib1g-dev pybind11-dev python3-dev python3-pandas python3-pytest chromium)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
