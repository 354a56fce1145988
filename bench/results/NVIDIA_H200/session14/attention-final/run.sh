PYTHONPATH=src python3 bench/gpu_bench.py --only attention --reps 5
