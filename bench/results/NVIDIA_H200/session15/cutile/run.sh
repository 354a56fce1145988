#!/usr/bin/env bash
# NVIDIA's cuTile Python samples as shipped (NVIDIA/cutile-python samples/ at 9c3ee3c, the test
# file left out), timed against torch by bench/cutile_compare.py through safetile and through the
# real cuTile Python 1.7, on one GPU: the H200 repeat of session 6's H100 call
# (bench/results/NVIDIA_H100_80GB_HBM3/session6-cutile/README.md).
#
# Needs one carried folder $CUTILE_WHL (default .whl/cutile; git-ignored, never committed: NVIDIA's
# code and binaries; how they are made and why CUDA_HOME goes: /work/shared/reference/real-cutile-on-the-gpu.md):
#   cuda_tile-1.7.0-cp312-cp312-manylinux2014_x86_64.whl
#   cutile-tools-13.4.92.tar.xz   nvidia/cu13/{bin/tileiras,bin/ptxas,lib/libnvvm.so.4,nvvm/libdevice}
#                                 from the 13.4.92 wheels (xz, x86 filter), or instead
#   cutile-tools-13.4.92.zpaq + zpaq   the same four files, zpaq 7.15 -method 55 (4.4 MB smaller with its decoder, for
#                                 when the working tree leaves too little room under 64 MiB; decoded
#                                 in the background while safetile runs, so safetile goes first)
#   samples-utils/utils/benchmark.py   the samples' utils/ (AttentionFMHA.py imports it)
# and optionally .whl/cutile-samples/ (NVIDIA/cutile-python samples/ less test_samples.py); without
# it the samples come from tests/cutile_samples (the same files, vendored unchanged) + that utils/.
# Run from the repository root; results in $OUT (the device runner's folder):
#   bash bench/results/NVIDIA_H200/session15/cutile/run.sh
# Writes device.txt, safetile.json/.log, cutile.json/.log, summary.txt (the table printed last).
set -uo pipefail
cd "$(dirname "$0")/../../../../.."
OUT=${OUT:-/tmp/cutile-out}
mkdir -p "$OUT"
W=${CUTILE_WHL:-.whl/cutile}
SAMPLES=${CUTILE_SAMPLES:-.whl/cutile-samples}
if [ ! -d "$SAMPLES" ]; then
    # Not carried: tests/cutile_samples holds the same files (9c3ee3c, unchanged) less utils/, which
    # AttentionFMHA.py imports; utils/benchmark.py comes in the carried $W/samples-utils/.
    SAMPLES=/tmp/cutile-samples
    rm -rf "$SAMPLES" && mkdir -p "$SAMPLES"
    cp tests/cutile_samples/*.py "$SAMPLES"/ && cp -r "$W"/samples-utils/utils "$SAMPLES"/
fi
T=${CUTILE_TIMEOUT:-180}  # seconds for each implementation's run: a hang cannot eat the call
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
$PY -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)' \
    | tee -a "$OUT/device.txt"
echo "samples: $SAMPLES ($(ls "$SAMPLES" | tr '\n' ' '))" | tee -a "$OUT/device.txt"
ls -l "$W" | tee -a "$OUT/device.txt"

# 1. The real cuTile Python and its compiler: the package in /tmp/ct, tileiras/ptxas/libnvvm in /tmp/ctx.
rm -rf /tmp/ct /tmp/ctx && mkdir -p /tmp/ctx
$PY -m pip install -q --no-index --no-deps --no-cache-dir --target /tmp/ct "$W"/cuda_tile-*.whl 2>&1 | grep -v WARNING
UNPACK=
if [ -f "$W"/cutile-tools-13.4.92.tar.xz ]; then
    tar xJf "$W"/cutile-tools-13.4.92.tar.xz -C /tmp/ctx 2>/dev/null \
        || $PY -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="tar")' \
            "$W"/cutile-tools-13.4.92.tar.xz /tmp/ctx
else
    install -m 755 "$W"/zpaq /tmp/zpaq
    Z=$(readlink -f "$W"/cutile-tools-13.4.92.zpaq)
    # 7 blocks of 32 MB, decoded in parallel: about 10 CPU-minutes on the (slow, 2-core) dev box.
    (t0=$SECONDS; cd /tmp/ctx && timeout -k 5 "${CUTILE_UNPACK_TIMEOUT:-300}" /tmp/zpaq extract "$Z" -threads 8 > /tmp/zpaq.log 2>&1
     echo "zpaq extract: exit $?, $((SECONDS - t0)) s (in the background of the safetile run)" >> /tmp/zpaq.log) &
    UNPACK=$!
fi

# 2. safetile: the same script and samples, cuda.tile aliased to safetile.
{
    PYTHONPATH=src:bench timeout -k 10 "$T" \
        $PY bench/cutile_compare.py --impl safetile --samples "$SAMPLES" --json "$OUT/safetile.json"
    echo "exit $?"
} > "$OUT/safetile.log" 2>&1
tail -6 "$OUT/safetile.log"
if [ -n "$UNPACK" ]; then
    wait "$UNPACK"
    tail -2 /tmp/zpaq.log | tee -a "$OUT/device.txt"
    chmod 755 /tmp/ctx/nvidia/cu13/bin/* 2>/dev/null
fi

# 3. cuTile: CUDA_HOME unset and /usr/local/cuda*/bin off PATH (the image's CUDA 13.0 makes
#    tileiras 13.4 fail with exit code 5 and no message), the carried 13.4 tools first.
(
    unset CUDA_HOME CUDA_PATH
    PATH=/tmp/ctx/nvidia/cu13/bin:$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '^/usr/local/cuda[^/]*/bin' \
        | grep -v '^$' | paste -sd: -)
    LD_LIBRARY_PATH=/tmp/ctx/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # the driver's own dirs stay
    export PATH LD_LIBRARY_PATH
    {
        echo "PATH=$PATH"; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; echo "CUDA_HOME=${CUDA_HOME-(unset)}"
        echo "tileiras: $(command -v tileiras)  ptxas: $(command -v ptxas)"
        tileiras --version | tail -2
        ptxas --version | tail -2
        PYTHONPATH=/tmp/ct:/tmp/ctx:src:bench timeout -k 10 "$T" \
            $PY bench/cutile_compare.py --impl cutile --samples "$SAMPLES" --json "$OUT/cutile.json"
        echo "exit $?"
    } > "$OUT/cutile.log" 2>&1
)
tail -8 "$OUT/cutile.log"

# 4. The table: torch's time / the sample's (higher is better), TFLOP/s, and whether it matched torch.
$PY - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
res = {}
for impl in ("cutile", "safetile"):
    try:
        with open(os.path.join(out, impl + ".json")) as f:
            res[impl] = {r["case"]: r for r in json.load(f)["rows"]}
    except (OSError, ValueError, KeyError) as e:
        res[impl] = {}
        print(f"{impl}: no results ({type(e).__name__}: {e}); see {impl}.log")
def cell(r):
    if r is None:
        return "-"
    if "ratio" not in r:
        return "error"
    return f"{r['ratio']:.3f} ({r['sample_TFLOPs']:.0f}){'' if r['ok'] else ' WRONG'}"
cases = list(dict.fromkeys([*res["cutile"], *res["safetile"]]))
print(f"{'case':18s} {'cuTile 1.7':>18s} {'safetile':>18s}   ratio = torch ms / sample ms (TFLOP/s)")
for c in cases:
    print(f"{c:18s} {cell(res['cutile'].get(c)):>18s} {cell(res['safetile'].get(c)):>18s}")
for impl in ("cutile", "safetile"):
    for c, r in res[impl].items():
        if "error" in r:
            print(f"{impl} {c}: {r['error']}")
EOF
exit 0
