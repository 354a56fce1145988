#!/usr/bin/env bash
# A session's final checks on one GPU machine, in parts that each fit one device call (600 s; on the
# H200 in session 12 the GEMM sweep took ~190 s, in session 16 ~235 s (its tile candidates compile
# the persistent walk), the attention section ~90 s, the Gluon probe ~20 s),
# every step under its own time limit so that one slow step cannot take the rest with it:
#   tests  every GPU test (bench/gpu_tests.sh: ~520 s on an H200 host, session 17)
#   bench  GEMM sweep (~300 s with its confirmation rounds, session 18), NVIDIA's samples through
#          safetile (CUTILE_SAMPLES names a copy of cuTile Python's samples/), cold/warm first
#          launches (compile section, median of 3)
#   attn   attention forward and backward, the Gluon attention probe (not safetile), the kernels
#          in other people's style (others section, plain 2-D GEMM grids at three sizes)
#   quick  for a second GPU kind: launch_diag, safe+launch, GEMM sweep (attention: the attn part)
#   host   host cost only, each benchmark in three fresh processes (their readings move between
#          processes): launch_diag, gpu_bench's safe and launch sections, launch_patterns; cold compiles
#   full   tests, then host in four processes (one call)
#   hostq  host cost in three processes, the C++ fact reader built first (no cold compiles)
# Everything lands in $OUT/final (packed into $OUT/final-<part>.tgz: the device runner returns few
# files); a short table is printed last.
#   PYTHONPATH=src bash bench/final_device.sh tests|bench|attn|quick
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
PART=${1:?tests, bench, attn, quick, host, hostq or full}
BASE=${OUT:-bench/results/final}
R=$BASE/final
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$R/device.txt"
step() {  # step SECONDS NAME COMMAND...: the command's output in $R/NAME.txt, its status in the log
    local limit=$1 name=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1
    echo "$name: rc=$? in $((SECONDS - t0)) s" | tee -a "$R/steps.txt"
}
host_runs() {  # host cost in $1 fresh processes each, the C++ fact reader built first (as a used installation
    # has it; on a fresh machine the first compile only starts its build)
    step 120 facts python3 -c "import torch; from safetile.runtime import torch_facts as t; print(t.module(build=True))"
    # and the safe C module, whose lock a process takes at import when it is built (safe/native_lock.py)
    step 120 safe_native python3 -c "from safetile.safe.native import MODULE; print(MODULE.get(build=True))"
    for i in $(seq 1 "$1"); do
        step 60 "diag$i" python3 bench/launch_diag.py --json "$R/diag$i.json"
        step 150 "safe_launch$i" python3 bench/gpu_bench.py --only safe,launch --out "$R/safe_launch$i.json"
    done
    step 90 patterns python3 bench/launch_patterns.py --json "$R/launch_patterns.json"
}
cold_compiles() {
    step 100 compile python3 bench/gpu_bench.py --only compile --compile-kernels gemm,attention_w8 \
        --compile-reps 3 --out "$R/compile.json"
}
gluon_probe() {  # the hand-scheduled Gluon forward (not safetile): what the d=128 schedule reaches here
    step 60 gluon python3 bench/gluon_attention_probe.py --causal --tiles pp:128x128x4,ws:128x128x4 \
        --seqs 4096,16384 --out "$R/gluon.json"
}
SAMPLES=()
[ -n "${CUTILE_SAMPLES:-}" ] && [ -d "$CUTILE_SAMPLES" ] && SAMPLES=(--cutile-samples "$CUTILE_SAMPLES")
case $PART in
tests)  # the GPU tests outgrew 360 s (session 17: 519 s for all 528); host costs are the host part's
    OUT=$R/tests step 570 gpu_tests bash bench/gpu_tests.sh ;;
bench)  # the parts of a session's last runs are sized to fit one device call (600 s) each
    step 340 gemm python3 bench/gpu_bench.py --only gemm --reps 5 --out "$R/gemm.json"
    [ ${#SAMPLES[@]} -gt 0 ] && step 100 samples python3 bench/gpu_bench.py --only others \
        --others-kernels batch_matmul,attention,matmul,transpose "${SAMPLES[@]}" --out "$R/samples.json"
    cold_compiles ;;
attn)
    step 180 attention python3 bench/gpu_bench.py --only attention --reps 5 --out "$R/attention.json"
    gluon_probe
    step 120 others python3 bench/gpu_bench.py --only others --others-gemm2d 2048,4096,8192 --out "$R/others.json" ;;
quick)  # then the attn part in a second call
    step 60 diag python3 bench/launch_diag.py --json "$R/diag.json"
    step 130 safe_launch python3 bench/gpu_bench.py --only safe,launch --out "$R/safe_launch.json"
    step 340 gemm python3 bench/gpu_bench.py --only gemm --reps 5 --out "$R/gemm.json" ;;
full)  # tests, then host cost in four fresh processes each (fits one call: ~420 s on the H200)
    OUT=$R/tests step 330 gpu_tests bash bench/gpu_tests.sh
    host_runs 4
    cold_compiles ;;
hostq)  # host cost only, no cold compiles
    host_runs 3 ;;
host)
    host_runs 3
    cold_compiles ;;
*)
    echo "unknown part $PART: tests, bench, attn, quick, host, hostq or full"
    exit 2 ;;
esac
python3 bench/host_summary.py "$R" > "$R/host_summary.txt" 2>&1
tar czf "$BASE/final-$PART.tgz" -C "$BASE" final
echo "== summary ($PART)"
cat "$R/steps.txt"
[ -f "$R/tests/pytest_gpu.txt" ] && grep -E "^(FAILED|ERROR)|passed|failed" "$R/tests/pytest_gpu.txt" | tail -8
for f in "$R"/diag*.txt "$R"/safe_launch*.txt "$R"/patterns.txt "$R"/compile.txt "$R"/gemm.txt "$R"/attention.txt \
         "$R"/samples.txt "$R"/others.txt; do
    [ -f "$f" ] && sed -n '/^== /,$p' "$f" | grep -v '^  ' | tail -25
done
cat "$R/host_summary.txt"
exit 0
