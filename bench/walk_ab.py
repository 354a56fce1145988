"""The plain 2-D GEMM grid walked against the benchmark's self-banded GEMM, interleaved (issue 12
item 3; session 18).

Both kernels visit the same tiles in the same order when walked (``persistent.wrap_body``'s bands of
8 tile rows and ``kernels.gemm._band`` with GROUP 8 compute the same sequence), and their K loops
compile to the same TTGIR; yet ``walk_probe.py`` read ``gemm_2d`` 6-12 % slower at 4096³. Here each
round times, in a new order, ``torch.matmul``, ``gemm_2d`` walked as generated, ``gemm_2d`` walked
with the walk's index arithmetic in 32 bits (``wrap_body`` patched in this process: legal for
these grids, whose block counts fit int32) and ``matmul`` GROUP 8 walked; medians over rounds.
Every kernel is checked against ``torch.matmul`` first.

    PYTHONPATH=src python bench/walk_ab.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys

os.environ.setdefault("SAFETILE_CACHE_DIR", "off")  # the patched walk is generated here, not read from disk
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import safetile as ct  # noqa: E402
from safetile.backends.triton import cache, codegen, persistent  # noqa: E402
from benchlib import in_turn  # noqa: E402
from kernels.gemm import gemm_2d, matmul  # noqa: E402

_SHIPPED = codegen.wrap_body  # what the generator calls


def wrap_body_32(body: list[str], order: tuple[int, ...] = (0, 1, 2)) -> list[str]:
    """``wrap_body`` with 32-bit index arithmetic (the grids here have fewer than 2**31 blocks)."""
    n0, n1, n2 = ("xyz"[a] for a in order)
    band = persistent.WALK_BAND
    return [
        f"    _st_plane = _st_g{n0} * _st_g{n1}",
        f"    _st_nblocks = _st_plane * _st_g{n2}",
        f"    _st_width = _st_g{n1} * {band}",
        "    for _st_t in range(tl.program_id(0), _st_nblocks, tl.num_programs(0)):",
        "        _st_q = _st_t % _st_plane",
        f"        _st_first = _st_q // _st_width * {band}",
        f"        _st_rows = tl.minimum(_st_g{n0} - _st_first, {band})",
        f"        _st_b{n0} = _st_first + _st_q % _st_width % _st_rows",
        f"        _st_b{n1} = _st_q % _st_width // _st_rows",
        f"        _st_b{n2} = _st_t // _st_plane",
    ] + ["    " + ln if ln else ln for ln in body]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192,3000x5000x4096")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    bm, bn, bk = 128, 256, 64
    hints = {"num_warps": 8, "num_stages": 3}
    rows = []
    rng = random.Random(18)
    for shape in a.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        sets = [(torch.randn(m, k, device="cuda", dtype=torch.float16),
                 torch.randn(k, n, device="cuda", dtype=torch.float16)) for _ in range(2)]
        outs = [torch.empty(m, n, device="cuda", dtype=torch.float16) for _ in sets]
        ref = torch.matmul(*sets[0]).float()
        tiles = (ct.cdiv(m, bm), ct.cdiv(n, bn))
        plain, narrow = gemm_2d.replace_hints(**hints), gemm_2d.replace_hints(**hints)
        banded = matmul.replace_hints(**hints)
        kernels = {"gemm_2d walked": (plain, tiles, (bm, bn, bk)),
                   "gemm_2d walked, 32-bit walk": (narrow, tiles, (bm, bn, bk)),
                   "matmul GROUP 8 walked": (banded, (tiles[0] * tiles[1],), (bm, bn, bk, 8, True))}
        runs = {"torch.matmul": lambda s, o: torch.matmul(*s, out=o)}
        for label, (kern, grid, extra) in kernels.items():
            runs[label] = lambda s, o, kern=kern, grid=grid, extra=extra: ct.launch(None, grid, kern, (*s, o, *extra))
        ok = {}
        for label, run in runs.items():
            patched = label.endswith("32-bit walk")
            codegen.wrap_body = wrap_body_32 if patched else _SHIPPED
            cache._loaded.clear()
            try:
                outs[0].fill_(float("nan"))
                run(sets[0], outs[0])  # compiles (under the patch for the 32-bit walk)
                torch.cuda.synchronize()
            finally:
                codegen.wrap_body = _SHIPPED
            err = ((outs[0].float() - ref).norm() / ref.norm()).item()
            ok[label] = err < 1e-2
            print(f"{shape} {label}: rel err {err:.1e}", flush=True)
        samples = in_turn({label: [lambda s=s, o=o, r=r: r(s, o) for s, o in zip(sets, outs)]
                           for label, r in runs.items()}, a.rounds, a.reps, rng)
        t_torch = statistics.median(samples["torch.matmul"])
        for label, ts in samples.items():
            t = statistics.median(ts)
            row = {"shape": shape, "kernel": label, "ms": t, "samples_ms": ts, "TFLOPs": 2.0 * m * n * k / t / 1e9,
                   "ratio_to_torch": t_torch / t, "ok": ok[label]}
            rows.append(row)
            print(f"{shape:16s} {label:30s} {row['TFLOPs']:6.1f} TFLOP/s  ratio {row['ratio_to_torch']:.3f}  "
                  f"spread {min(ts) / t:.3f}-{max(ts) / t:.3f}  {'ok' if ok[label] else 'WRONG'}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
