#!/usr/bin/env bash
# Session 17, call 2 (H200): the walk with and without GROUP bands on 2-D GEMM grids (walk_probe.py),
# then what split-K buys tile-starved GEMMs in CUDA graphs (splitk_probe.py, raw Triton).
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session17/call2/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s17c2
mkdir -p "$R"
step() { local limit=$1 name=$2; shift 2; local t0=$SECONDS
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1; echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"; }
step 200 walk python3 bench/walk_probe.py --json "$R/walk.json"
step 330 splitk python3 bench/splitk_probe.py --out "$R/splitk.json"
tar czf "$OUT/s17c2.tgz" -C "$OUT" s17c2
echo "== summary"
cat "$R/steps.txt"
tail -20 "$R/walk.txt"
tail -16 "$R/splitk.txt"
