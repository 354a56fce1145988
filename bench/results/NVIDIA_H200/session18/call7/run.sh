#!/usr/bin/env bash
# Session 18, call 7 (H200): the stream-K GEMM's forms timed in turn with torch and the persistent kernel.
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session18/call7/run.sh
set -uo pipefail
mkdir -p "$OUT/s18c7"
PYTHONPATH=src timeout 190 python3 bench/streamk_ab.py --json "$OUT/s18c7/streamk.json" > "$OUT/s18c7/streamk.txt" 2>&1
echo rc=$?
grep -E "ratio|failed|WRONG|Error" "$OUT/s18c7/streamk.txt" | cut -c1-120
