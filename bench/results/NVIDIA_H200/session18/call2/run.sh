#!/usr/bin/env bash
# Session 18, call 2 (H200): gemm_2d walked against the self-banded GEMM, interleaved, with a 32-bit walk
# variant (walk_ab.py).
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session18/call2/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s18c2
mkdir -p "$R"
step() { local limit=$1 name=$2; shift 2; local t0=$SECONDS
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1; echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
    tar czf "$OUT/s18c2.tgz" -C "$OUT" s18c2; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/device.txt"
step 150 walkab python3 bench/walk_ab.py --json "$R/walkab.json"
echo "== summary"
cat "$R/steps.txt"
grep -E "ratio|WRONG|Error" "$R/walkab.txt" | cut -c1-120
