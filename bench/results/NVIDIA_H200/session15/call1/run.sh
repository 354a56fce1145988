# Session 15, call 1: the FA3-style backward probe (first GPU run), then every GPU test.
export PYTHONPATH=src PYTHONUNBUFFERED=1
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 python3 bench/gluon_attention_bwd_probe.py --causal --reps 5 --out $OUT/r/bwd_probe.json > $OUT/r/bwd_probe.txt 2>&1; echo "probe rc=$?"
OUT=$OUT/r timeout 340 bash bench/gpu_tests.sh > /dev/null 2>&1; echo "gpu tests rc=$?"
tail -2 $OUT/r/pytest_gpu.txt; grep -E "^(FAILED|ERROR)" $OUT/r/pytest_gpu.txt | head -20
tail -12 $OUT/r/bwd_probe.txt
