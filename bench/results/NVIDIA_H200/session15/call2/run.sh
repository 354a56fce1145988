# Session 15, call 2 (second half; the first half, call2a.sh, left the first part of the cuTile tool
# tarball in /tmp/parts: tracked files plus the whole tarball exceed the 64 MiB a call may carry).
# NVIDIA's cuTile samples through real cuTile 1.7 and through safetile on the H200 (../cutile/run.sh),
# and an A/B of the batch-axis-last block order (block_order.py): the same benchmark cases with the
# code before it (.whl/ab-old/src = d1d016f, carried) and after.
# carry: .whl/cutile-p2 .whl/cutile-samples .whl/ab-old
export PYTHONUNBUFFERED=1
mkdir -p $OUT/cutile $OUT/ab .whl/cutile
ls -l /tmp/parts
cat /tmp/parts/tools-part-aa .whl/cutile-p2/tools-part-ab > .whl/cutile/cutile-tools-13.4.92.tar.xz && xz -t .whl/cutile/cutile-tools-13.4.92.tar.xz && echo "tarball intact"
cp .whl/cutile-p2/*.whl .whl/cutile/ && cp -r .whl/cutile-p2/samples-utils .whl/cutile/
OUT=$OUT/cutile CUTILE_SAMPLES=.whl/cutile-samples timeout 330 bash bench/results/NVIDIA_H200/session15/call2/cutile_run.sh > $OUT/cutile/run.txt 2>&1; echo "cutile rc=$?"
for round in 1 2; do
  for side in old new; do
    src=src; [ $side = old ] && src=.whl/ab-old/src
    PYTHONPATH=$src:bench timeout 100 python3 bench/cutile_compare.py --impl safetile --samples .whl/cutile-samples \
      --json $OUT/ab/samples-$side-$round.json > $OUT/ab/samples-$side-$round.txt 2>&1
    PYTHONPATH=$src timeout 100 python3 bench/gpu_bench.py --only others --others-kernels batched --reps 7 \
      --out $OUT/ab/others-$side-$round.json > $OUT/ab/others-$side-$round.txt 2>&1
  done
done
cat $OUT/cutile/summary.txt 2>/dev/null || tail -20 $OUT/cutile/run.txt
for f in $OUT/ab/*.txt; do echo "== $(basename $f)"; grep -E "ratio|FAIL|Error" $f | tail -6; done
