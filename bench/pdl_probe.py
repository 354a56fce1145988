"""Where should a GEMM signal programmatic dependent launch (PDL)? (issue 12 item 2, session 17.)

small_gemm_ab.py (call 3) found safetile's small GEMMs 25-35 % slower in CUDA graphs with PDL than
without; safetile's code signals ``griddepcontrol.launch_dependents`` first thing in every kernel.
This probe, in raw Triton, times one plain GEMM (pointer loads, GROUP-8 bands) in graphs of
back-to-back launches with the signal placed five ways, and a chain of small element-wise adds
(where PDL hides launch gaps) the same ways; every GEMM case is checked against torch first.

  none   no griddepcontrol, launched without the PDL attribute
  start  wait + launch_dependents first (safetile's code before session 17)
  loop   wait first, launch_dependents after the K loop (before the epilogue)
  end    wait first, launch_dependents after the store
  wait   wait only (dependents launch when the kernel completes)

    python bench/pdl_probe.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait  # noqa: E402

from benchlib import time_graph_ms  # noqa: E402

MODES = {"none": 0, "start": 1, "loop": 2, "end": 3, "wait": 4}


@triton.jit
def gemm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, MODE: tl.constexpr):
    if MODE == 1:
        gdc_launch_dependents()
    if MODE != 0:
        gdc_wait()
    tile = tl.program_id(0)
    grid_m = tl.cdiv(M, BM)
    width = 8 * tl.cdiv(N, BN)
    first_m = (tile // width) * 8
    rows = tl.minimum(grid_m - first_m, 8)
    offs_m = (first_m + (tile % width) % rows) * BM + tl.arange(0, BM)
    offs_n = ((tile % width) // rows) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in range(tl.cdiv(K, BK)):
        ks = kt * BK + offs_k
        a = tl.load(A + offs_m[:, None] * K + ks[None, :], mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(B + ks[:, None] * N + offs_n[None, :], mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    if MODE == 2:
        gdc_launch_dependents()
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(C + offs_m[:, None] * N + offs_n[None, :], acc.to(C.dtype.element_ty), mask=mask)
    if MODE == 3:
        gdc_launch_dependents()


@triton.jit
def add(X, Y, Z, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
    if MODE == 1:
        gdc_launch_dependents()
    if MODE != 0:
        gdc_wait()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Z + offs, tl.load(X + offs, mask=offs < n) + tl.load(Y + offs, mask=offs < n), mask=offs < n)
    if MODE == 2 or MODE == 3:
        gdc_launch_dependents()


def gemm_call(a, b, c, cfg, mode: int):
    bm, bn, bk, warps, stages = cfg
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    return lambda: gemm[grid](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, MODE=mode, num_warps=warps,
                              num_stages=stages, launch_pdl=mode != 0)


def add_call(x, y, z, mode: int):
    n = x.numel()
    return lambda: add[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024, MODE=mode, num_warps=4, launch_pdl=mode != 0)


def torch_call(a, b, c):
    return lambda: torch.matmul(a, b, out=c)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    rows = []
    gemms = [((1024, 1024, 1024), (64, 128, 64, 4, 4)), ((1024, 1024, 1024), (128, 128, 64, 8, 4)),
             ((1024, 1024, 4096), (64, 128, 64, 4, 4)), ((2048, 2048, 1024), (128, 128, 64, 8, 4)),
             ((4096, 4096, 4096), (128, 256, 64, 8, 3))]
    for (m, n, k), cfg in gemms:
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        ref = a.float() @ b.float()
        t_torch = time_graph_ms([torch_call(a, b, c)], args.reps)
        label = f"{m}x{n}x{k} {cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[3]} s{cfg[4]}"
        for name, mode in MODES.items():
            call = gemm_call(a, b, c, cfg, mode)
            c.fill_(float("nan"))
            call()
            torch.cuda.synchronize()
            ok = ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-2
            t = time_graph_ms([call], args.reps)
            rows.append({"case": label, "mode": name, "ok": ok, "us": t * 1e3, "ratio": t_torch / t})
            print(f"{label:<40} {name:<6} {2 * m * n * k / t / 1e9:6.0f} TFLOP/s ratio {t_torch / t:.3f}"
                  f" {'ok' if ok else 'WRONG'}", flush=True)
        if (m, n, k) == (1024, 1024, 1024):  # a norm-then-GEMM pattern: an add (1M) before each GEMM
            x, y, z = (torch.randn(1 << 20, device="cuda") for _ in range(3))
            t_ref = time_graph_ms([add_call(x, y, z, 0), torch_call(a, b, c)], args.reps)
            for name, mode in MODES.items():
                t = time_graph_ms([add_call(x, y, z, mode), gemm_call(a, b, c, cfg, mode)], args.reps)
                rows.append({"case": f"add+{label}", "mode": name, "ok": True, "us": t * 1e3, "ratio": t_ref / t})
                print(f"add+{label:<36} {name:<6} ratio to add+torch {t_ref / t:.3f}", flush=True)
    for n in (1 << 16, 1 << 20):
        x, y = (torch.randn(n, device="cuda") for _ in range(2))
        zs = [torch.empty_like(x) for _ in range(2)]
        for name, mode in MODES.items():  # a chain: each add reads the previous one's output
            calls = [add_call(x if i == 0 else zs[(i - 1) % 2], y, zs[i % 2], mode) for i in range(2)]
            t = time_graph_ms(calls, args.reps)
            rows.append({"case": f"add chain {n}", "mode": name, "ok": True, "us": t * 1e3})
            print(f"add chain {n:<29} {name:<6} {t * 1e3:6.2f} us per add", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("\ncase" + " " * 37 + "".join(f"{m:>9}" for m in MODES))
    for case in dict.fromkeys(r["case"] for r in rows):
        got = {r["mode"]: r for r in rows if r["case"] == case}
        cells = [f"{got[m]['ratio']:9.3f}" if "ratio" in got[m] else f"{got[m]['us']:7.2f}us" for m in MODES]
        print(f"{case:<41}" + "".join(cells))


if __name__ == "__main__":
    main()
