#!/usr/bin/env bash
# Recalibrates a hardware config on the GPU machine you are on, in one command:
#   scripts/calibrate-gpu.sh h100_sxm      (or h200, or a new name: copy a config first)
# Builds attnsim and the CUDA microbenchmarks, runs every benchmark into
# configs/measured/<name>/, checks the results, and folds them into configs/hw/<name>.json
# (constants marked "measured" with GPU, driver and date; what they replaced kept as "was").
# Do not change clocks or power limits first: the benchmarks measure the card as it runs.
set -euo pipefail
name=${1:?usage: scripts/calibrate-gpu.sh <hardware config name, e.g. h100_sxm>}
cd "$(dirname "$0")/.."
[ -f "configs/hw/$name.json" ] || { echo "configs/hw/$name.json does not exist: copy the closest config first" >&2; exit 2; }
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j --target attnsim attnsim_microbench
mkdir -p "configs/measured/$name"
build/attnsim_microbench all --out "configs/measured/$name"
build/attnsim_microbench check "configs/measured/$name"
build/attnsim calibrate "configs/measured/$name" --into "configs/hw/$name.json"
