export PYTHONPATH=src PYTHONUNBUFFERED=1
mkdir -p $OUT/r
OUT=$OUT/r timeout 330 bash bench/gpu_tests.sh > /dev/null 2>&1; echo "gpu tests rc=$?"
tail -3 $OUT/r/pytest_gpu.txt; grep FAILED $OUT/r/pytest_gpu.txt | head
timeout 200 python3 bench/gpu_bench.py --only attention --reps 5 --attn-seqs 4096,16384 --attn-kernels 1 --attn-configs-64 256x64x4x2x0x2 --attn-configs-128 128x128x4x2x0x2 --attn-bwd-dq-128 128x64x8x3,128x64x4x2x0x2 --attn-bwd-dq-64 128x64x8x3,128x128x4x2x0x2 --attn-bwd-dkdv-64 32x128x8x3,64x128x4x2x0x2 --out $OUT/r/attention.json > $OUT/r/attention.txt 2>&1; echo "attn rc=$?"
grep -n "bwd probe\|^bwd\|^fwd\|geomean\|failed\|correctness" $OUT/r/attention.txt | tail -30
