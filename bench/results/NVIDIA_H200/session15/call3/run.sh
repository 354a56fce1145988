# Session 15, call 3: batched products with 3-D tiles over configurations, TMA on and off (bench/bmm_probe.py).
export PYTHONPATH=src PYTHONUNBUFFERED=1
timeout 200 python3 bench/bmm_probe.py --json $OUT/bmm_tma.json > $OUT/bmm_tma.txt 2>&1; echo "tma rc=$?"
SAFETILE_TMA=0 timeout 200 python3 bench/bmm_probe.py --json $OUT/bmm_notma.json > $OUT/bmm_notma.txt 2>&1; echo "no tma rc=$?"
cat $OUT/bmm_tma.txt $OUT/bmm_notma.txt
