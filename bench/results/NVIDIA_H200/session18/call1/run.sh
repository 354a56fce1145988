#!/usr/bin/env bash
# Session 18, call 1 (H200): the ping-pong attention's PDL signal first vs at exit (attention_pdl_probe),
# the self-banded GEMM at band widths 4/8/16 (walk_probe --groups), kernels in other people's style
# with the plain 2-D GEMM grid (gpu_bench --only others), and host cost (launch_diag, launch_patterns).
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session18/call1/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s18c1
mkdir -p "$R"
step() { local limit=$1 name=$2; shift 2; local t0=$SECONDS
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1; echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
    tar czf "$OUT/s18c1.tgz" -C "$OUT" s18c1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/device.txt"
step 120 pdl python3 bench/attention_pdl_probe.py --json "$R/pdl.json"
step 60 walk python3 bench/walk_probe.py --groups 4,8,16 --json "$R/walk.json"
step 120 others python3 bench/gpu_bench.py --only others --out "$R/others.json"
step 60 facts python3 -c "import torch; from safetile.runtime import torch_facts as t; print(t.module(build=True))"
step 60 diag python3 bench/launch_diag.py --json "$R/diag.json"
step 90 patterns python3 bench/launch_patterns.py --json "$R/patterns.json"
echo "== summary"
cat "$R/steps.txt"
tail -14 "$R/pdl.txt"
grep -E "ratio" "$R/walk.txt" | cut -c1-110
grep -iE "gemm_2d|ratio|layernorm|softmax|rmsnorm|transpose|bmm|batched" "$R/others.txt" | tail -14 | cut -c1-140
grep -E "ct.launch|torch.add|python-part|C launcher alone add4|chain" "$R/diag.txt" | cut -c1-110
tail -9 "$R/patterns.txt"
