#!/usr/bin/env bash
# Installs what attnsim needs to build and test, from Debian packages. The CUDA toolkit
# (nvcc) is expected to be installed already. Does nothing when everything is present.
set -euo pipefail
pkgs=(cmake g++ make git nlohmann-json3-dev libcli11-dev catch2 libeigen3-dev libfmt-dev libbenchmark-dev
      clang libclang-rt-14-dev)  # clang and its libFuzzer runtime: the fuzz targets (fuzz/)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
