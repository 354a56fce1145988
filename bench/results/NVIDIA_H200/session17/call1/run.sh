#!/usr/bin/env bash
# Session 17, call 1 (H200): every GPU test, including the two persistence-rule changes of session 16
# that never ran on a GPU (accumulator from a load walked; ws/num_ctas hints exclude the walk).
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session17/call1/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s17c1
mkdir -p "$R/tests"
t0=$SECONDS
OUT=$R/tests timeout 560 bash bench/gpu_tests.sh > "$R/gpu_tests.txt" 2>&1
echo "gpu_tests: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
tar czf "$OUT/s17c1.tgz" -C "$OUT" s17c1
echo "== summary"
cat "$R/steps.txt"
tail -25 "$R/gpu_tests.txt"
