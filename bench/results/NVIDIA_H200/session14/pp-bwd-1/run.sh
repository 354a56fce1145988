export PYTHONPATH=src PYTHONUNBUFFERED=1
mkdir -p $OUT/r
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_pingpong.py tests/test_bulk_atomics_adversarial.py tests/test_bulk_atomics.py tests/test_bench_kernels.py -x -n 4 > $OUT/r/tests.txt 2>&1; echo "tests rc=$?"
tail -5 $OUT/r/tests.txt
timeout 240 python3 bench/gpu_bench.py --only attention --reps 5 --out $OUT/r/attention.json > $OUT/r/attention.txt 2>&1; echo "attn rc=$?"
grep -n "probe\|bwd d=\|fwd d=\|geomean\|failed\|correctness" $OUT/r/attention.txt | tail -60
