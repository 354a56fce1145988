"""How should the persistent walk (backends/triton/persistent.py) band 2-D grids? (issue 12 items
2-3; written in session 16, run in session 17.)

A GEMM written as a plain 2-D grid (``gemm_2d``: block (i, j) computes C tile (i, j), no swizzle,
the way users write one first) is walked since session 17 in bands of ``WALK_BAND`` (8) row tiles;
before, in the hardware's order, the resident blocks swept one column band of B against every row
of A (2-9 % slower). The benchmark's ``matmul`` bands its 1-D grid itself (GROUP rows of tiles),
which the walk keeps in order, so ``--groups 4,8,16`` shows what other band widths would give. Each
kernel is timed walked and as a grid of tiles (``persistent=False``), checked against
``torch.matmul`` first, in the same process (CUDA-event medians, two input sets in turn).

    PYTHONPATH=src python bench/walk_probe.py [--groups 4,8,16] [--json out.json]
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
from kernels.gemm import gemm_2d, matmul  # noqa: E402


def candidates(m: int, n: int, bm: int, bn: int, bk: int, groups: tuple[int, ...] = (8,)):
    """(label, kernel, grid, extra arguments) for one shape and tile. ``matmul`` bands its 1-D grid
    itself (GROUP rows of tiles), which the walk keeps in order: GROUP g walked times what the walk's
    own bands of g (``persistent.WALK_BAND``) would give a 2-D grid."""
    tiles_2d = (ct.cdiv(m, bm), ct.cdiv(n, bn))
    out = []
    for walked in (True, False):
        hints = {"num_warps": 8, "num_stages": 3} | ({} if walked else {"persistent": False})
        tag = "walked" if walked else "grid"
        out.append((f"gemm_2d {tag}", gemm_2d.replace_hints(**hints), tiles_2d, (bm, bn, bk)))
        for g in groups:
            out.append((f"matmul GROUP {g} {tag}", matmul.replace_hints(**hints), (tiles_2d[0] * tiles_2d[1],),
                        (bm, bn, bk, g, True)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192,3000x5000x4096")
    ap.add_argument("--tile", default="128x256x64")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--groups", default="8", help="GROUP values for the self-banded matmul, e.g. 4,8,16")
    ap.add_argument("--json")
    a = ap.parse_args()
    bm, bn, bk = (int(x) for x in a.tile.split("x"))
    rows = []
    for shape in a.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        sets = [(torch.randn(m, k, device="cuda", dtype=torch.float16),
                 torch.randn(k, n, device="cuda", dtype=torch.float16)) for _ in range(2)]
        outs = [torch.empty(m, n, device="cuda", dtype=torch.float16) for _ in sets]
        flop = 2.0 * m * n * k
        t_torch = time_ms([lambda s=s: torch.matmul(*s) for s in sets], a.reps)
        ref = torch.matmul(*sets[0]).float()
        groups = tuple(int(g) for g in a.groups.split(","))
        for label, kern, grid, extra in candidates(m, n, bm, bn, bk, groups):
            def run(s, o, kern=kern, grid=grid, extra=extra):
                ct.launch(None, grid, kern, (*s, o, *extra))
            try:
                outs[0].fill_(float("nan"))
                run(sets[0], outs[0])
                err = ((outs[0].float() - ref).norm() / ref.norm()).item()
                t = time_ms([lambda s=s, o=o: run(s, o) for s, o in zip(sets, outs)], a.reps)
            except Exception as e:  # noqa: BLE001 - keep the other candidates' numbers
                print(f"{shape:16s} {label:24s} FAILED {type(e).__name__}: {str(e)[:160]}")
                continue
            row = {"shape": shape, "kernel": label, "tile": a.tile, "ms": t, "torch_ms": t_torch,
                   "TFLOPs": flop / t / 1e9, "torch_TFLOPs": flop / t_torch / 1e9, "ratio": t_torch / t,
                   "rel_err": err, "ok": err < 1e-2}
            rows.append(row)
            print(f"{shape:16s} {label:24s} {row['TFLOPs']:6.1f} vs torch {row['torch_TFLOPs']:6.1f} TFLOP/s  "
                  f"ratio {row['ratio']:.3f}  {'ok' if row['ok'] else f'WRONG {err:.1e}'}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
