#!/usr/bin/env bash
# Session 18, call 4 (H200): does a GEMM's time depend on what the GPU did just before (rest_probe.py),
# then final_device.sh's attn part (attention forward/backward, the Gluon probe, others with gemm_2d at
# three sizes).
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session18/call4/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s18c4
mkdir -p "$R"
t0=$SECONDS
timeout 100 python3 bench/rest_probe.py --rounds 2 --rest 0.7 --load 0.4 --json "$R/rest.json" > "$R/rest.txt" 2>&1
echo "rest: rc=$? in $((SECONDS - t0)) s" | tee "$R/steps.txt"
tar czf "$OUT/s18c4.tgz" -C "$OUT" s18c4
OUT=$R bash bench/final_device.sh attn > "$R/attn_run.txt" 2>&1
tar czf "$OUT/s18c4.tgz" -C "$OUT" s18c4
echo "== summary"
cat "$R/steps.txt"
cut -c1-110 "$R/rest.txt"
tail -40 "$R/attn_run.txt" | cut -c1-150
