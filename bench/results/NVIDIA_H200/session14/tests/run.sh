export PYTHONPATH=src
bash bench/final_device.sh tests
timeout 150 python3 bench/gpu_bench.py --only compile --compile-kernels attention_pp --compile-reps 3 --compile-profile 1 --out $OUT/final/compile_pp.json > $OUT/final/compile_pp.txt 2>&1; echo "pp rc=$?"
tail -25 $OUT/final/compile_pp.txt
cd $OUT && tar czf final-tests.tgz final && ls -la
