"""Why the batched products written with 3-D tiles (bench/kernels/others.py ``batched_matmul_3d``,
NVIDIA's BatchMatMul sample) trail ``torch.bmm`` where the 2-D GEMM does not (issue 12 item 3):
the same kernel over tile shapes, warps and pipeline depths, with tensor-descriptor loads or
without (``SAFETILE_TMA=0`` in the environment of a second run), each checked against
``torch.bmm`` first, then timed against it in the same process (CUDA-event medians).

    PYTHONPATH=src python bench/bmm_probe.py [--json out.json]
    SAFETILE_TMA=0 PYTHONPATH=src python bench/bmm_probe.py
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import safetile as ct  # noqa: E402
from benchlib import time_ms  # noqa: E402
from kernels import others as K  # noqa: E402

CONFIGS = [  # (BM, BN, BK, warps, stages)
    (128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (256, 128, 64, 8, 4),
    (128, 128, 64, 8, 4), (128, 128, 64, 4, 4), (128, 256, 128, 8, 2),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8x2048,8x1024,32x1024")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    tma = os.environ.get("SAFETILE_TMA", "1")
    rows = []
    for shape in a.shapes.split(","):
        b, m = (int(x) for x in shape.split("x"))
        sets = [tuple(torch.randn(b, m, m, device="cuda", dtype=torch.float16) for _ in range(2)) for _ in range(2)]
        outs = [torch.empty(b, m, m, device="cuda", dtype=torch.float16) for _ in sets]
        flop = 2.0 * b * m ** 3
        t_torch = time_ms([lambda s=s: torch.bmm(*s) for s in sets], a.reps)
        for bm, bn, bk, w, st in CONFIGS:
            kern = K.batched_matmul_3d.replace_hints(num_warps=w, num_stages=st)
            grid = (b, ct.cdiv(m, bm), ct.cdiv(m, bn))

            def run(s, o, kern=kern, grid=grid, cfg=(bm, bn, bk)):
                ct.launch(None, grid, kern, (*s, o, *cfg))
            try:
                outs[0].fill_(float("nan"))
                run(sets[0], outs[0])
                ref = torch.bmm(*sets[0]).float()
                err = ((outs[0].float() - ref).norm() / ref.norm()).item()
                t = time_ms([lambda s=s, o=o: run(s, o) for s, o in zip(sets, outs)], a.reps)
            except Exception as e:  # noqa: BLE001 - keep the other configurations' numbers
                print(f"{shape:8s} {bm}x{bn}x{bk} w{w} s{st} tma={tma}: FAILED {type(e).__name__}: {str(e)[:160]}")
                continue
            row = {"shape": shape, "config": f"{bm}x{bn}x{bk} w{w} s{st}", "tma": tma, "ms": t, "torch_ms": t_torch,
                   "TFLOPs": flop / t / 1e9, "torch_TFLOPs": flop / t_torch / 1e9, "ratio": t_torch / t,
                   "rel_err": err, "ok": err < 1e-2}
            rows.append(row)
            print(f"{shape:8s} {row['config']:18s} tma={tma}: {row['TFLOPs']:6.1f} vs torch {row['torch_TFLOPs']:6.1f} "
                  f"TFLOP/s  ratio {row['ratio']:.3f}  {'ok' if row['ok'] else f'WRONG {err:.1e}'}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
