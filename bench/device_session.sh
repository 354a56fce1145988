#!/usr/bin/env bash
# One call on a GPU machine: the GPU tests (Triton backend, BASIC, safe style), the
# execution-mode sweep, the toy model's tokens/s, the GEMM autotuning run, and the benchmark
# sections given as arguments (default: all). Results land in $OUT (the device runner's
# folder) or bench/results/session/.
#   PYTHONPATH=src bash bench/device_session.sh [gpu_bench sections, e.g. safe,launch,add]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT=${OUT:-bench/results/session}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/ 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -4
python3 -m pytest -q -p no:cacheprovider tests/test_autotune.py 2>&1 | tail -1 | tee -a "$OUT/pytest_gpu.txt"
python3 bench/exec_modes.py --device cuda --out "$OUT/exec_modes_gpu.json" 2>&1 | tail -6
SAFETILE_DEVICE=cuda python3 examples/safe/toy_model_graph.py 2>&1 | tee "$OUT/toy_model_gpu.txt"
python3 bench/tune_gemm.py --out "$OUT/tune_gemm.json" 2>&1 | tail -2
python3 bench/gpu_bench.py --reps 5 ${1:+--only "$1"} 2>&1 | tee "$OUT/gpu_bench.txt" | tail -48
