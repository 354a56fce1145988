"""Host time of ``ct.launch`` per argument pattern, with the GPU's queue kept short (GPU).

``launch_diag.py`` times 4000 calls in a row: when the GPU takes longer per tiny kernel than the
host per launch, the queue fills and the host then waits on the GPU, which reads as host cost.
Here each sample is ``--chunk`` calls after a synchronisation (the queue starts empty and cannot
fill), rows interleaved in a new order each round; the 4000-in-a-row figure and the GPU's own time
per launch (wall time of 4000 launches plus the final synchronisation) are printed beside it.

    PYTHONPATH=src python bench/launch_patterns.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import safetile as ct  # noqa: E402
from kernels.basic import add4, axpy, tiny  # noqa: E402


def chunked_us(fn, chunk: int, chunks: int) -> float:
    """Host µs per call over ``chunks`` runs of ``chunk`` calls, each started on an idle GPU."""
    total = 0.0
    for _ in range(chunks):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(chunk):
            fn()
        total += time.perf_counter() - t0
    torch.cuda.synchronize()
    return total / (chunk * chunks) * 1e6


def in_a_row_us(fn, n: int) -> tuple[float, float]:
    """(host µs per call, wall µs per call including the final synchronisation) of ``n`` calls."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunk", type=int, default=200)
    ap.add_argument("--chunks", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    n = 1 << 12  # as launch_diag.py: 4 blocks of 1024
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    grid = (n // 1024,)
    rows = {
        "torch.add(x, y)": lambda: torch.add(x, y),
        "torch.add(x, y, out=z)": lambda: torch.add(x, y, out=z),
        "ct.launch add4(x, x, z, 1024)": lambda: ct.launch(None, grid, add4, (x, x, z, 1024)),
        "ct.launch add4(x, y, z, 1024)": lambda: ct.launch(None, grid, add4, (x, y, z, 1024)),
        "ct.launch add4(x, x, z, 1024), grid as int": lambda: ct.launch(None, n // 1024, add4, (x, x, z, 1024)),
        "ct.launch tiny(x, 128)": lambda: ct.launch(None, (1,), tiny, (x, 128)),
        "ct.launch axpy(x, z, 0.5, n, 1024)": lambda: ct.launch(None, grid, axpy, (x, z, 0.5, n, 1024)),
    }
    for f in rows.values():  # compile, learn the fast path
        f()
        f()
    zz = torch.full_like(x, float("nan"))
    ct.launch(None, grid, add4, (x, y, zz, 1024))
    torch.cuda.synchronize()
    assert torch.equal(zz, x + y), "add4(x, y) wrong"
    samples: dict[str, list[float]] = {k: [] for k in rows}
    order = list(rows)
    rng = random.Random(7)
    for _ in range(a.rounds):
        rng.shuffle(order)
        for k in order:
            samples[k].append(chunked_us(rows[k], a.chunk, a.chunks))
    res = {}
    for k in rows:
        host_row, wall_row = in_a_row_us(rows[k], 4000)
        res[k] = {"host_us": statistics.median(samples[k]), "host_us_4000_in_a_row": host_row,
                  "wall_us_4000_in_a_row": wall_row}
    base = res["torch.add(x, y)"]["host_us"]
    print(f"{'host us per call, queue kept short':48s} {'us':>7s} {'/ torch.add':>11s} {'4000 in a row':>14s} "
          f"{'wall/launch':>12s}")
    for k, r in res.items():
        r["ratio_to_torch_add"] = r["host_us"] / base
        print(f"{k:48s} {r['host_us']:7.2f} {r['ratio_to_torch_add']:11.2f} {r['host_us_4000_in_a_row']:14.2f} "
              f"{r['wall_us_4000_in_a_row']:12.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": res, "chunk": a.chunk, "chunks": a.chunks,
                       "rounds": a.rounds}, f, indent=1)


if __name__ == "__main__":
    main()
