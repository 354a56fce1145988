"""Why the batched products written with 3-D tiles (bench/kernels/others.py ``batched_matmul_3d``,
NVIDIA's BatchMatMul sample) trail ``torch.bmm`` where the 2-D GEMM does not (issue 12 item 3):
the same kernel over tile shapes, warps and pipeline depths, with tensor-descriptor loads or
without (``SAFETILE_TMA=0`` in the environment of a second run), each checked against
``torch.bmm`` first, then timed against it in the same process (CUDA-event medians).

    PYTHONPATH=src python bench/bmm_probe.py [--json out.json]
    SAFETILE_TMA=0 PYTHONPATH=src python bench/bmm_probe.py

Since session 16 the code generator walks such grids with resident blocks (persistent.py): the
kernel as written runs persistent ("auto"); ``persistent=False`` gives the grid of tiles ("grid").
``--persistent`` adds, per configuration, the grid of tiles, the kernel with a plain (not
tensor-descriptor) store of C ("auto ptr-store": a TMA store stages C in its own shared memory
in a persistent loop), and the product written persistent by hand ("hand": batch slowest,
GROUP-row bands within a batch, plain store), to tell the walk, the store and the order apart.
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
from kernels.gemm import _band  # noqa: E402

ZERO = ct.PaddingMode.ZERO


@ct.kernel
def bmm3d_persistent(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int],
                     GROUP: ct.Constant[int], NPROG: ct.Constant[int]):
    """``batched_matmul_3d``'s body in a loop over the tiles this block owns (C stored without a
    descriptor, as ``matmul_persistent`` does)."""
    num_m = ct.cdiv(A.shape[1], BM)
    num_n = ct.cdiv(B.shape[2], BN)
    per = num_m * num_n
    for t in range(ct.bid(0), A.shape[0] * per, NPROG):
        b = t // per
        i, j = _band(t % per, num_m, num_n, GROUP)
        acc = ct.full((BM, BN), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(A, axis=2, shape=(1, BM, BK))):
            a = ct.reshape(ct.load(A, index=(b, i, k), shape=(1, BM, BK), padding_mode=ZERO), (BM, BK))
            bt = ct.reshape(ct.load(B, index=(b, k, j), shape=(1, BK, BN), padding_mode=ZERO), (BK, BN))
            acc = ct.mma(a, bt, acc)
        ct.store(C, index=(b, i, j), tile=ct.reshape(acc.astype(C.dtype), (1, BM, BN)), allow_tma=False)


@ct.kernel
def bmm3d_plain_store(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    """``batched_matmul_3d`` with C stored without a tensor descriptor."""
    b, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((BM, BN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=2, shape=(1, BM, BK))):
        a = ct.reshape(ct.load(A, index=(b, i, k), shape=(1, BM, BK), padding_mode=ZERO), (BM, BK))
        bt = ct.reshape(ct.load(B, index=(b, k, j), shape=(1, BK, BN), padding_mode=ZERO), (BK, BN))
        acc = ct.mma(a, bt, acc)
    ct.store(C, index=(b, i, j), tile=ct.reshape(acc.astype(C.dtype), (1, BM, BN)), allow_tma=False)


KINDS = ("auto", "grid", "auto ptr-store", "hand")

CONFIGS = [  # (BM, BN, BK, warps, stages)
    (128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (256, 128, 64, 8, 4),
    (128, 128, 64, 8, 4), (128, 128, 64, 4, 4), (128, 256, 128, 8, 2),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8x2048,8x1024,32x1024")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--persistent", action="store_true", help="also the persistent form (see the docstring)")
    ap.add_argument("--tile-configs", default=None, help="indices into CONFIGS to run (default all)")
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
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        picked = CONFIGS if a.tile_configs is None else [CONFIGS[int(i)] for i in a.tile_configs.split(",")]
        cands = [(c, kind) for c in picked for kind in (KINDS if a.persistent else KINDS[:1])]
        for cfg, kind in cands:
            bm, bn, bk, w, st = cfg
            hints = {"num_warps": w, "num_stages": st}
            grid, extra = (b, ct.cdiv(m, bm), ct.cdiv(m, bn)), (bm, bn, bk)
            if kind == "hand":
                nprog = min(sms, b * ct.cdiv(m, bm) * ct.cdiv(m, bn))
                kern, grid, extra = bmm3d_persistent.replace_hints(**hints), (nprog,), (bm, bn, bk, 8, nprog)
            elif kind == "grid":
                kern = K.batched_matmul_3d.replace_hints(persistent=False, **hints)
            elif kind == "auto ptr-store":
                kern = bmm3d_plain_store.replace_hints(**hints)
            else:
                kern = K.batched_matmul_3d.replace_hints(**hints)
            label = f"{bm}x{bn}x{bk} w{w} s{st} {kind}"

            def run(s, o, kern=kern, grid=grid, cfg=extra):
                ct.launch(None, grid, kern, (*s, o, *cfg))
            try:
                outs[0].fill_(float("nan"))
                run(sets[0], outs[0])
                ref = torch.bmm(*sets[0]).float()
                err = ((outs[0].float() - ref).norm() / ref.norm()).item()
                t = time_ms([lambda s=s, o=o: run(s, o) for s, o in zip(sets, outs)], a.reps)
            except Exception as e:  # noqa: BLE001 - keep the other configurations' numbers
                print(f"{shape:8s} {label} tma={tma}: FAILED {type(e).__name__}: {str(e)[:160]}")
                continue
            row = {"shape": shape, "config": label, "tma": tma, "ms": t, "torch_ms": t_torch,
                   "TFLOPs": flop / t / 1e9, "torch_TFLOPs": flop / t_torch / 1e9, "ratio": t_torch / t,
                   "rel_err": err, "ok": err < 1e-2}
            rows.append(row)
            print(f"{shape:8s} {row['config']:26s} tma={tma}: {row['TFLOPs']:6.1f} vs torch {row['torch_TFLOPs']:6.1f} "
                  f"TFLOP/s  ratio {row['ratio']:.3f}  {'ok' if row['ok'] else f'WRONG {err:.1e}'}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
