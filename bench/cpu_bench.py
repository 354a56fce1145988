"""CPU backend benchmark: safetile kernels against NumPy in the same process.

Checks each result against NumPy first, then times warm launches (median of --repeat
runs) and writes JSON under bench/results/cpu/. Usage:

    PYTHONPATH=src python bench/cpu_bench.py [--repeat 7] [--only add,gemm,softmax] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import safetile as ct  # noqa: E402


@ct.kernel
def vec_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(c, index=(bid,), tile=ct.load(a, index=(bid,), shape=(TILE,)) + ct.load(b, index=(bid,), shape=(TILE,)))


@ct.kernel
def gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))


@ct.kernel
def softmax_rows(x, y, BN: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BN), padding_mode=ct.PaddingMode.NEG_INF)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(row, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


def median_time(fn, repeat: int) -> float:
    fn()  # warm-up (compiles)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_add(args, rng):
    n = 1 << 24
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.full(n, np.nan, np.float32)
    grid = (ct.cdiv(n, 1024),)
    ct.launch(None, grid, vec_add, (a, b, c, 1024))
    assert np.array_equal(c, a + b), "vec_add mismatch"
    t_st = median_time(lambda: ct.launch(None, grid, vec_add, (a, b, c, 1024)), args.repeat)
    t_np = median_time(lambda: np.add(a, b, out=c), args.repeat)
    return {"case": "vector add 2^24 f32, tile 1024", "safetile_s": t_st, "numpy_s": t_np}


def bench_gemm(args, rng):
    m = k = nn = 1024
    A, B = rng.random((m, k), dtype=np.float32), rng.random((k, nn), dtype=np.float32)
    C = np.full((m, nn), np.nan, np.float32)
    grid = (ct.cdiv(m, 64), ct.cdiv(nn, 64))
    ct.launch(None, grid, gemm, (A, B, C, 64, 64, 32))
    ref = A.astype(np.float64) @ B.astype(np.float64)
    err = float(np.linalg.norm(C - ref) / np.linalg.norm(ref))
    assert err < 1e-5, f"gemm relative error {err}"
    t_st = median_time(lambda: ct.launch(None, grid, gemm, (A, B, C, 64, 64, 32)), args.repeat)
    t_np = median_time(lambda: np.matmul(A, B), args.repeat)
    return {"case": "GEMM 1024^3 f32, tiles 64x64x32", "safetile_s": t_st, "numpy_s": t_np, "rel_error": err}


def bench_softmax(args, rng):
    r, cols = 4096, 1024
    X = rng.standard_normal((r, cols), dtype=np.float32)
    Y = np.full_like(X, np.nan)
    ct.launch(None, (r,), softmax_rows, (X, Y, cols))
    e = np.exp(X - X.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    assert np.allclose(Y, ref, rtol=1e-5, atol=1e-6), "softmax mismatch"

    def np_softmax():
        e = np.exp(X - X.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    t_st = median_time(lambda: ct.launch(None, (r,), softmax_rows, (X, Y, cols)), args.repeat)
    t_np = median_time(np_softmax, args.repeat)
    return {"case": "softmax 4096x1024 f32, one row per block", "safetile_s": t_st, "numpy_s": t_np}


SECTIONS = {"add": bench_add, "gemm": bench_gemm, "softmax": bench_softmax}


def _report(args, rows) -> None:
    for row in rows:
        row["ratio_vs_numpy"] = row["safetile_s"] / row["numpy_s"]
    result = {
        "device": "cpu", "machine": platform.machine(), "processor": platform.processor(),
        "cores": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
        "safetile": ct.__version__, "date": time.strftime("%Y-%m-%d"), "repeat": args.repeat,
        "timing": "median wall time of warm launches (compilation excluded), same process",
        "results": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'case':44s} {'safetile ms':>12s} {'numpy ms':>10s} {'ratio':>7s}")
    for row in rows:
        print(f"{row['case']:44s} {row['safetile_s'] * 1e3:12.2f} {row['numpy_s'] * 1e3:10.2f} "
              f"{row['ratio_vs_numpy']:6.2f}x")
    print(f"wrote {args.out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "cpu" / "latest.json"))
    ap.add_argument("--only", default="", help="comma list of sections: " + ",".join(SECTIONS))
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}; sections: {', '.join(SECTIONS)}")
    rng = np.random.default_rng(0)
    rows = []
    for name in only or SECTIONS:
        rows.append(SECTIONS[name](args, rng))
    _report(args, rows)


if __name__ == "__main__":
    main()
