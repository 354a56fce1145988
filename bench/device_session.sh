#!/usr/bin/env bash
# One call on a GPU machine: the GPU tests (Triton backend, BASIC, safe style), the
# execution-mode sweep, and the benchmark sections given as arguments (default: all).
# Results land in $OUT (the device runner's folder) or bench/results/<device>/.
#   PYTHONPATH=src bash bench/device_session.sh [gpu_bench sections, e.g. safe,launch,add]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-bench/results/session}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/ 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -4
python3 bench/exec_modes.py --device cuda --out "$OUT/exec_modes_gpu.json" 2>&1 | tail -12
python3 bench/gpu_bench.py --reps 5 ${1:+--only "$1"} 2>&1 | tee "$OUT/gpu_bench.txt" | tail -40
