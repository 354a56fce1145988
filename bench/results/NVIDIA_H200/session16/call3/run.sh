#!/usr/bin/env bash
# Session 16, call 3 (H200): the walk with a batch axis last (persistent.walk_order). The 3-D-tile
# product four ways (bmm_probe --persistent), NVIDIA's MatMul and BatchMatMul samples with
# SAFETILE_PERSISTENT=0 and 1 in turn (same harness), the others section, the GEMM sweep. Everything lands in $OUT/s16c3.tgz.
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session16/call2/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s16c3
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$R/device.txt"
step() {
    local limit=$1 name=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1
    echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
}
step 60 unit python3 -m pytest -q -x -m gpu tests/test_persistent.py
step 200 bmm python3 bench/bmm_probe.py --persistent --tile-configs 0,1 --json "$R/bmm.json"
step 60 others python3 bench/gpu_bench.py --only others --reps 5 --out "$R/others.json"
S=/tmp/cutile-samples
rm -rf $S && mkdir -p $S && cp tests/cutile_samples/*.py $S/
for p in 0 1 0 1; do
    SAFETILE_PERSISTENT=$p step 60 samples_p$p python3 bench/gpu_bench.py --only others \
        --others-kernels batch_matmul,matmul --cutile-samples $S --reps 5 --out "$R/samples_p$p.json"
    cat "$R/samples_p$p.txt" >> "$R/samples_all_p$p.txt"
done
step 290 gemm python3 bench/gpu_bench.py --only gemm --reps 5 --out "$R/gemm.json"
tar czf "$OUT/s16c3.tgz" -C "$OUT" s16c3
echo "== summary"
cat "$R/steps.txt"
tail -3 "$R/unit.txt"
grep -h "ratio" "$R/bmm.txt"
grep -A12 "== others (time" "$R/others.txt"
for p in 0 1; do echo "SAFETILE_PERSISTENT=$p"; grep -h "^matmul\|^batch_matmul" "$R/samples_all_p$p.txt"; done
grep -A30 "== GEMM" "$R/gemm.txt" | tail -32
