#!/usr/bin/env bash
# Session 16, call 4 (H200): every GPU test on the persistent-grid code, then cold/warm first launches
# (the GEMM's first launch now compiles the walk and asks the driver for its occupancy).
# (the red team's file, being written meanwhile on the dev box, is left out)
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session16/call4/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s16c4
mkdir -p "$R/tests"
t0=$SECONDS
PYTEST_ADDOPTS="--ignore=tests/test_persistent_adversarial.py" OUT=$R/tests timeout 450 bash bench/gpu_tests.sh > "$R/gpu_tests.txt" 2>&1
echo "gpu_tests: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
t0=$SECONDS
timeout 90 python3 bench/gpu_bench.py --only compile --compile-kernels gemm,attention_w8 --compile-reps 3 \
    --out "$R/compile.json" > "$R/compile.txt" 2>&1
echo "compile: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
tar czf "$OUT/s16c4.tgz" -C "$OUT" s16c4
echo "== summary"
cat "$R/steps.txt"
tail -15 "$R/gpu_tests.txt"
grep -A6 "== first-launch" "$R/compile.txt"
