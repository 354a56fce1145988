"""Why does the benchmark's stream-K GEMM lose to the persistent one where it should win? (issue 12
item 2; session 18.)

At 3000×5000×4096, 480 tiles of 256×128 over 132 SMs make 3.64 rounds that run as 4; stream-K
(``kernels.gemm.matmul_streamk``) gives each block an equal share of the partial round's K
iterations, so it should gain up to ~9 % over one tile per block, yet session 18 read it 4 % slower
than the persistent kernel. Variants of ``matmul_streamk``: the split tiles before the whole
ones (``SK_FIRST``: their partial sums are added while other blocks still work), whole tiles stored
through a descriptor (``TMA_C``), both. Every kernel is checked against ``torch.matmul`` first,
then all are timed in ``--rounds`` rounds, in a new order each, back to back (the GPU kept busy:
``rest_probe.py``); medians, as ratios to torch.

    PYTHONPATH=src python bench/streamk_ab.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from benchlib import in_turn, launch  # noqa: E402
from sections.gemm import _candidate, parse_configs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="float16:3000x5000x4096,bfloat16:3000x5000x4096,bfloat16:8192x8192x1000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rng = random.Random(18)
    rows = []
    for spec in a.shapes.split(","):
        dtype, shape = spec.split(":")
        m, n, k = (int(x) for x in shape.split("x"))
        td = getattr(torch, dtype)
        x, w = torch.randn(m, k, device="cuda", dtype=td), torch.randn(k, n, device="cuda", dtype=td)
        c = torch.empty(m, n, device="cuda", dtype=td)
        ref = torch.matmul(x, w).float()
        runs = {"torch.matmul": lambda x=x, w=w: torch.matmul(x, w)}
        persistent = parse_configs("256x128x64x4x4x1")[0]
        runs["persistent 256x128 w4 s4 ws"] = _candidate(persistent, "persistent", False, x, w, c, sms)
        runs["tile 128x256 w8 s3 tma (walked)"] = _candidate(parse_configs("128x256x64x8x3")[0], "tile", True, x, w, c,
                                                             sms)
        for cfg in ("256x128x64x8x3", "128x256x64x8x3"):
            kern, grid, kargs = _candidate(parse_configs(cfg)[0], "streamk", False, x, w, c, sms)
            for sk_first in (False, True):
                for tma_c in (False, True):
                    label = (f"streamk {cfg[:7]}{' sk-first' if sk_first else ''}{' tma-c' if tma_c else ''}")
                    runs[label] = (kern, grid, (*kargs[:-2], sk_first, tma_c))
        calls, ok = {}, {}
        for label, r in runs.items():
            if callable(r):
                calls[label] = r
                continue
            kern, grid, kargs = r
            c.fill_(float("nan"))
            try:
                launch(grid, kern, kargs)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - e.g. out of shared memory: report, go on
                print(f"{spec} {label}: failed ({type(e).__name__}: {str(e)[:160]})", flush=True)
                continue
            err = ((c.float() - ref).norm() / ref.norm()).item()
            ok[label] = err < 1e-2
            calls[label] = lambda kern=kern, grid=grid, kargs=kargs: launch(grid, kern, kargs)
            print(f"{spec} {label}: rel err {err:.1e}", flush=True)
        samples = in_turn({label: [call] for label, call in calls.items()}, a.rounds, a.reps, rng)
        t_torch = statistics.median(samples["torch.matmul"])
        for label, ts in samples.items():
            t = statistics.median(ts)
            row = {"dtype": dtype, "shape": shape, "kernel": label, "ms": t, "samples_ms": ts,
                   "TFLOPs": 2.0 * m * n * k / t / 1e9, "ratio_to_torch": t_torch / t, "ok": ok.get(label, True)}
            rows.append(row)
            print(f"{dtype:8s} {shape:16s} {label:34s} {row['TFLOPs']:6.1f} TFLOP/s  ratio {row['ratio_to_torch']:.3f}"
                  f"  {'ok' if row['ok'] else 'WRONG'}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
