#!/usr/bin/env bash
# Every GPU test (pytest -m gpu) on the device in one call, 14 workers: about 7 minutes for 520 tests on
# an H200 host in session 15, when one of them (test_compat_gpu's samples, one test then) took 340 s
# alone; in session 16 that test was split per sample so the workers share it (session 16's run ran
# out of 450 s at 96 %, before the split; session 17: 528 tests in 519 s, the ping-pong red-team files
# ~55 % of the CPU time and the BlockScaledMatMul sample 440 s alone); junit XML and the log in $OUT
# (or bench/results/gpu-tests),
# a summary printed last.
#   PYTHONPATH=src bash bench/gpu_tests.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src:tests PYTHONUNBUFFERED=1
R=${OUT:-bench/results/gpu-tests}
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/device.txt"
python3 -m pytest -q -p no:cacheprovider -m gpu -n 14 -rfE tests/ --junitxml="$R/junit.xml" > "$R/pytest_gpu.txt" 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" "$R/pytest_gpu.txt" | tail -30
