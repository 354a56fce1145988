export PYTHONPATH=src:tests PYTHONUNBUFFERED=1
mkdir -p $OUT/r
timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_pingpong.py tests/test_pingpong_backward_adversarial.py -n 8 -rfE > $OUT/r/tests.txt 2>&1; echo "tests rc=$?"
grep -E "^(FAILED|ERROR)|passed|failed" $OUT/r/tests.txt | tail -25
timeout 200 python3 bench/gpu_bench.py --only attention --reps 5 --attn-dims 128 --attn-seqs 4096,16384 --attn-kernels 1 --attn-configs-128 128x128x4x2x0x2 --attn-bwd-dq-128 128x64x8x3,128x64x4x2x0x2,128x32x4x2x0x2 --attn-bwd-dkdv-128 64x128x4x2x0x1,32x128x4x2x0x2 --out $OUT/r/attention.json > $OUT/r/attention.txt 2>&1; echo "attn rc=$?"
grep -n "bwd probe\|^bwd\|^fwd\|geomean\|failed\|correctness" $OUT/r/attention.txt | tail -20
