#!/usr/bin/env bash
# Session 17, call 4 (H200): where a GEMM should signal programmatic dependent launch (raw Triton).
#   bash bench/results/NVIDIA_H200/session17/call4/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s17c4
mkdir -p "$R"
t0=$SECONDS
timeout 200 python3 bench/pdl_probe.py --json "$R/pdl.json" > "$R/pdl.txt" 2>&1
echo "pdl: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
tar czf "$OUT/s17c4.tgz" -C "$OUT" s17c4
cat "$R/steps.txt"
tail -12 "$R/pdl.txt"
