#!/usr/bin/env bash
# Session 17, call 5 (H200): with PDL signalled after the K loop: the small-GEMM A/B again, the GEMM
# sweep (its small shapes timed in CUDA graphs too), the attention section (forward and backward).
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session17/call5/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s17c5
mkdir -p "$R"
step() { local limit=$1 name=$2; shift 2; local t0=$SECONDS
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1; echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/device.txt"
step 60 ab python3 bench/small_gemm_ab.py --json "$R/ab.json"
step 290 gemm python3 bench/gpu_bench.py --only gemm --reps 5 --out "$R/gemm.json"
step 150 attention python3 bench/gpu_bench.py --only attention --reps 5 --out "$R/attention.json"
tar czf "$OUT/s17c5.tgz" -C "$OUT" s17c5
echo "== summary"
cat "$R/steps.txt"
tail -11 "$R/ab.txt"
grep -E "^(float16|bfloat16) " "$R/gemm.txt" | cut -c1-150
grep -iE "geomean|geo-mean" "$R/gemm.txt" "$R/attention.txt" | tail -8
