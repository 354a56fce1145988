# Session 15, call 5 (final code): every GPU test, verbose (which tests finish, and when), 14 workers.
export PYTHONUNBUFFERED=1 PYTHONPATH=src:tests
R=/tmp/r5; mkdir -p $R
timeout -s INT 470 python3 -m pytest -v -p no:cacheprovider -m gpu -n 14 -rfE --durations=30 tests/ > $R/pytest_gpu.txt 2>&1; echo "gpu tests rc=$?"
tar -czf $OUT/call5.tgz -C $R .
grep -cE " PASSED " $R/pytest_gpu.txt; grep -E " (FAILED|ERROR) " $R/pytest_gpu.txt | head -20; tail -3 $R/pytest_gpu.txt
