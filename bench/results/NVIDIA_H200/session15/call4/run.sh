# Session 15, call 4 (final code): NVIDIA's samples through safetile (the batched-matmul sample now
# with its K tiles split, ksplit.py), then every GPU test. Outputs packed in one tarball.
# carry: .whl/cutile-samples
export PYTHONUNBUFFERED=1
R=/tmp/r4; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt
for round in 1 2; do
  PYTHONPATH=src:bench timeout 100 python3 bench/cutile_compare.py --impl safetile --samples .whl/cutile-samples \
    --json $R/samples-$round.json > $R/samples-$round.txt 2>&1; echo "samples $round rc=$?"
done
export PYTHONPATH=src:tests
timeout 420 python3 -m pytest -q -p no:cacheprovider -m gpu -n 14 -rfE tests/ --junitxml=$R/junit.xml > $R/pytest_gpu.txt 2>&1; echo "gpu tests rc=$?"
tar -czf $OUT/call4.tgz -C $R .
grep -E "ratio" $R/samples-*.txt
grep -E "^(FAILED|ERROR)" $R/pytest_gpu.txt | head -20; tail -1 $R/pytest_gpu.txt
