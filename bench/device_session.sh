#!/usr/bin/env bash
# One call on a GPU machine (about 6 minutes on an H100/H200): the GPU tests (Triton backend,
# BASIC, safe style), the execution-mode sweep, the toy model's tokens/s, the GEMM autotuning
# run, and the benchmark sections given as arguments (default: all). With CUTILE_SAMPLES naming
# a copy of NVIDIA cuTile Python's samples/ folder, the "others" section runs those too.
# Results land in $OUT (the device runner's folder) or bench/results/session/; the runner
# returns only a few files, so there everything is packed into $OUT/session.tgz (elsewhere the
# folder stays too).
#   PYTHONPATH=src bash bench/device_session.sh [gpu_bench sections, e.g. safe,launch,add]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
RUNNER_OUT=${OUT:-}
OUT=${OUT:-bench/results/session}
R=$OUT/session
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$R/device.txt"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/ 2>&1 | tee "$R/pytest_gpu.txt" | tail -4
python3 -m pytest -q -p no:cacheprovider tests/test_autotune.py 2>&1 | tail -1 | tee -a "$R/pytest_gpu.txt"
python3 bench/exec_modes.py --device cuda --out "$R/exec_modes_gpu.json" 2>&1 | tail -6
SAFETILE_DEVICE=cuda python3 examples/safe/toy_model_graph.py 2>&1 | tee "$R/toy_model_gpu.txt"
python3 bench/tune_gemm.py --out "$R/tune_gemm.json" 2>&1 | tail -2
SAMPLES=()
[ -n "${CUTILE_SAMPLES:-}" ] && [ -d "$CUTILE_SAMPLES" ] && SAMPLES=(--cutile-samples "$CUTILE_SAMPLES")
OUT= python3 bench/gpu_bench.py --reps 5 ${1:+--only "$1"} ${SAMPLES[@]+"${SAMPLES[@]}"} --out "$R/gpu_bench.json" 2>&1 \
    | tee "$R/gpu_bench.txt" | sed -n '/^== /,$p' | grep -v '^  '
tar czf "$OUT/session.tgz" -C "$OUT" session
[ -n "$RUNNER_OUT" ] && rm -rf "$R"  # the device runner returns few files: keep the archive only
exit 0
