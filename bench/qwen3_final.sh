#!/usr/bin/env bash
# The Qwen3 benchmark of issue 10 in one device call: 0.6B/4B/8B shapes at 1k and 8k context,
# safetile against plain PyTorch (eager and CUDA-graph) and transformers, per-kernel diagnosis
# and float32 logit checks. Results in $OUT (or bench/results/qwen3-final).
#   PYTHONPATH=src bash bench/qwen3_final.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=${OUT:-bench/results/qwen3-final}
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee "$R/device.txt"
python3 bench/qwen3_bench.py --shapes 4B,0.6B,8B --peers torch,transformers --diagnose --fp32-check 4B,0.6B \
    --out "$R" > "$R/log.txt" 2>&1
grep -v '^{' "$R/log.txt" | grep -v -i 'warn' | tail -40
