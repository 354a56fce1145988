#!/usr/bin/env bash
# Session 17, call 3 (H200): safetile's small GEMMs against the same tile in raw Triton, in CUDA graphs
# (walk, PDL, and safetile's launcher each switched off in turn).
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session17/call3/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s17c3
mkdir -p "$R"
t0=$SECONDS
timeout 240 python3 bench/small_gemm_ab.py --json "$R/ab.json" > "$R/ab.txt" 2>&1
echo "ab: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
tar czf "$OUT/s17c3.tgz" -C "$OUT" s17c3
cat "$R/steps.txt"
tail -14 "$R/ab.txt"
