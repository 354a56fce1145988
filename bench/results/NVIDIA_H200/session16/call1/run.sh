#!/usr/bin/env bash
# Session 16, call 1 (H200): the backward probe's issue orders, the 3-D-tile product made persistent,
# and the others section (kernels in other people's style) re-run. Everything lands in $OUT/s16c1.tgz.
#   PYTHONPATH=src bash bench/results/NVIDIA_H200/session16/call1/run.sh
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
R=$OUT/s16c1
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$R/device.txt"
step() {
    local limit=$1 name=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1
    echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
}
P=bench/gluon_attention_bwd_probe.py
step 90 bwd64_default python3 $P --d 64 --causal --reps 5 --out "$R/bwd64_default.json"
step 90 bwd64_dqfirst python3 $P --d 64 --causal --reps 5 --dq-first --out "$R/bwd64_dqfirst.json"
step 90 bwd64_turn python3 $P --d 64 --causal --reps 5 --turn --out "$R/bwd64_turn.json"
step 90 bwd64_turn_dqfirst python3 $P --d 64 --causal --reps 5 --turn --dq-first --out "$R/bwd64_turn_dqfirst.json"
step 90 bwd128_turn python3 $P --d 128 --causal --reps 5 --turn --out "$R/bwd128_turn.json"
step 150 bmm python3 bench/bmm_probe.py --persistent --tile-configs 0,1 --json "$R/bmm.json"
step 150 others python3 bench/gpu_bench.py --only others --reps 5 --out "$R/others.json"
tar czf "$OUT/s16c1.tgz" -C "$OUT" s16c1
echo "== summary"
cat "$R/steps.txt"
grep -h "ratio" "$R"/bwd*.txt | sed 's/^/bwd /'
grep -h "ratio" "$R/bmm.txt"
tail -25 "$R/others.txt"
