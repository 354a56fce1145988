#!/usr/bin/env bash
# Session 17, call 6 (H200), the session's last: the walk in bands and the PDL signal after the walk.
# walk_probe, small_gemm_ab, the 3-D-tile bmm probe, NVIDIA's product-loop samples checked, the GEMM
# sweep, then the GPU tests without the two ping-pong red-team files (Gluon code, unchanged) and the
# 440-s BlockScaledMatMul sample test (check_samples.py checks that sample above).
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session17/call6/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s17c6
mkdir -p "$R/tests"
step() { local limit=$1 name=$2; shift 2; local t0=$SECONDS
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1; echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
    tar czf "$OUT/s17c6.tgz" -C "$OUT" s17c6; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/device.txt"
step 40 walk python3 bench/walk_probe.py --json "$R/walk.json"
step 50 ab python3 bench/small_gemm_ab.py --json "$R/ab.json"
step 40 bmm python3 bench/bmm_probe.py --persistent --tile-configs 0,1 --json "$R/bmm.json"
PYTHONPATH=src:tests step 60 samples python3 bench/results/NVIDIA_H200/session16/call5/check_samples.py
step 230 gemm python3 bench/gpu_bench.py --only gemm --reps 5 --out "$R/gemm.json"
PYTEST_ADDOPTS="--ignore=tests/test_pingpong_backward_adversarial.py --ignore=tests/test_pingpong_adversarial.py --deselect=tests/test_compat_gpu.py::test_sample_block_scaled" \
    OUT=$R/tests step 170 gpu_tests bash bench/gpu_tests.sh
echo "== summary"
cat "$R/steps.txt"
tail -8 "$R/walk.txt" | cut -c1-100
tail -10 "$R/ab.txt"
grep -h "ratio" "$R/bmm.txt" | cut -c1-100
tail -8 "$R/samples.txt"
grep -E "^(float16|bfloat16) " "$R/gemm.txt" | cut -c1-140
grep -h "geomean" "$R/gemm.txt"
tail -6 "$R/gpu_tests.txt"
