#!/usr/bin/env bash
# Session 5's H100 call (from the repository root): the A/B of the attention forward's run time
# and of float32 exp2 (before the session / after), the benchmark's compile section (cold and warm
# first launches, with profiles), and bench/compile_profile.py on the host CPU. Results to $OUT.
# attention_before.py: `git show a777217:bench/kernels/attention.py`, placed in the root.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
O=${OUT:-/tmp/session5}; mkdir -p "$O"
HERE=bench/results/compile-session5
{ nvidia-smi -L; nproc; lscpu | grep "Model name"; python -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > "$O/device.txt" 2>&1
for side in before after; do
  flag=(); [ $side = before ] && flag=(--before --kernels-file attention_before.py)
  SAFETILE_CACHE_DIR=/tmp/st-ab-$side timeout 50 python $HERE/ab_attention.py "${flag[@]}" --reps 7 --out /tmp/ab_$side.pt > "$O/ab_$side.txt" 2>&1
  echo "ab $side rc=$?"
done
timeout 10 python - "$O" <<'PY'
import json, sys, torch
o = sys.argv[1]
b, a = torch.load("/tmp/ab_before.pt"), torch.load("/tmp/ab_after.pt")
same = torch.equal(b["exp2"], a["exp2"]) if b["exp2"].shape == a["exp2"].shape else False
diff = int((b["exp2"].view(torch.int32) != a["exp2"].view(torch.int32)).sum())
rows = []
for rb, ra in zip(b["rows"], a["rows"]):
    rows.append({**{k: rb[k] for k in ("d", "causal", "k2d", "BM", "BN", "warps")}, "before_ms": rb["ms"],
                 "after_ms": ra["ms"], "after_over_before": ra["ms"] / rb["ms"], "ok_before": rb["ok"],
                 "ok_after": ra["ok"], "err_after": ra["max_abs_err"]})
json.dump({"exp2_bit_identical": same, "exp2_differing_elements": diff, "rows": rows}, open(f"{o}/ab.json", "w"), indent=1)
print(f"exp2 bit-identical: {same} ({diff} differ)")
for r in rows:
    print(f"d={r['d']:3d} causal={r['causal']!s:5s} k2d={r['k2d']} {r['BM']}x{r['BN']} w{r['warps']}: "
          f"before {r['before_ms']:.3f} ms after {r['after_ms']:.3f} ms ratio {r['after_over_before']:.3f} ok {r['ok_after']}")
PY
timeout 120 python bench/gpu_bench.py --only compile --compile-kernels gemm,attention,attention_bn64 \
  --compile-profile 1 --out "$O/compile.json" > "$O/compile.txt" 2>&1
echo "compile rc=$?"
timeout 55 python bench/compile_profile.py --reps 3 --out "$O/profile-host.json" > "$O/profile.txt" 2>&1
echo "profile rc=$?"
tail -5 "$O/profile.txt"
grep -A4 "first-launch compile time" "$O/compile.txt"
