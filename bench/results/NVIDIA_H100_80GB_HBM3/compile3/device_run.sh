#!/usr/bin/env bash
# Session 7, helper compile3, one H100 call (from the repository root): LLVM O0 against O3 for
# safetile's kernels. The benchmark's compile section (median of 3 cold first launches per kernel)
# at the default level (O0) and at SAFETILE_LLVM_OPT=3; run time of both binaries of each case,
# interleaved in one process (bench/llvm_ab.py); compile_profile.py on the host CPU (O0).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
O=${OUT:-/tmp/compile3}; mkdir -p "$O"; L=$O/log.txt
{ nvidia-smi -L; nproc; lscpu | grep "Model name"; python -c "import torch, triton; print(torch.__version__, triton.__version__)"; } > "$O/device.txt" 2>&1
run() { local t=$1; shift; echo "== $*" >> "$L"; timeout "$t" "$@" >> "$L" 2>&1; echo "rc=$?" >> "$L"; }
run 85 python bench/gpu_bench.py --only compile --compile-kernels gemm,attention,attention_w8 --compile-reps 3 --out "$O/compile_O0.json"
SAFETILE_CACHE_DIR=/tmp/st-ab run 65 python bench/llvm_ab.py --rounds 4 --reps 5 --out "$O/llvm_ab.json"
SAFETILE_LLVM_OPT=3 run 55 python bench/gpu_bench.py --only compile --compile-kernels attention,attention_w8 --compile-reps 3 --out "$O/compile_O3.json"
run 15 python bench/compile_profile.py --kernels attention,attention_w8 --reps 1 --out "$O/profile_O0.json"
grep -E "^rc=|compile .*(cold|warm)|ratio|ERROR|CPU s:" "$L"
