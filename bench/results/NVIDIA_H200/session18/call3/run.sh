#!/usr/bin/env bash
# Session 18, call 3 (H200): final_device.sh's bench part (GEMM sweep with confirmation rounds, NVIDIA's samples, cold compiles)
# at commit edf88e1; the samples carried in .whl/cutile-samples (run with carry [".whl/cutile-samples"]).
mkdir -p $OUT/s18c3 && CUTILE_SAMPLES=.whl/cutile-samples OUT=$OUT/s18c3 bash bench/final_device.sh bench
