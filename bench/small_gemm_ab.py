"""Why does safetile's GEMM trail a plain Triton GEMM on tile-starved shapes inside CUDA graphs?
(issue 12 item 2, session 17.)

Session 17's split-K probe found its *plain* raw-Triton kernel (64x128x64, 4 warps, 4 stages,
pointer loads) at 317 TFLOP/s at 1024^3 in graphs, where safetile's benchmark ``matmul`` with the
same tile and pointer loads read 235 (session 16): nearly the same Triton source. This A/B times,
in one process, inside CUDA graphs (``benchlib.time_graph_ms``), every case checked against
``torch.matmul`` first:

  probe          splitk_probe.plain_kernel (raw Triton, Triton's own launcher)
  st             safetile ``matmul`` through ``ct.launch`` (walk and PDL as the defaults give)
  st nowalk      the same with the ``persistent=False`` hint
  st nopdl       a kernel compiled after ``SAFETILE_PDL=0`` (no griddepcontrol in the code)
  st nopdl nowalk
  st src         safetile's generated source for sm_90 (``kernel_source``), compiled and launched by
                 Triton's own launcher: the code without safetile's launcher

    PYTHONPATH=src python bench/small_gemm_ab.py [--shapes 1024x1024x1024] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import safetile as ct  # noqa: E402
from benchlib import time_graph_ms  # noqa: E402
from kernels.gemm import matmul  # noqa: E402
from safetile.backends.triton import cache as triton_cache  # noqa: E402
from safetile.backends.triton.launcher import kernel_source  # noqa: E402
from splitk_probe import plain_kernel  # noqa: E402
import triton  # noqa: E402

CONFIGS = [(64, 128, 64, 4, 4), (128, 128, 64, 8, 4), (128, 128, 64, 4, 4)]


def st_kernel(warps: int, stages: int, **hints):
    return ct.kernel(matmul.fn, num_warps=warps, num_stages=stages, **hints)


def source_kernel(a, b, c, bm, bn, bk, warps, stages, tag: str):
    """safetile's generated sm_90 source as a plain @triton.jit function (Triton's launcher)."""
    src = kernel_source(st_kernel(warps, stages), (a, b, c, bm, bn, bk, 8, False), target=90)
    path = Path(tempfile.mkdtemp()) / f"st_src_{tag}.py"
    path.write_text(src)
    mod = triton_cache._exec_file(path, f"st_src_{tag}", triton_cache.prelude_namespace(False), False)
    fn = mod.st_matmul
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    return lambda: fn[grid](a, m, k, k, 1, b, k, n, n, 1, c, m, n, n, 1, num_warps=warps, num_stages=stages)


def torch_call(a, b, c):
    return lambda: torch.matmul(a, b, out=c)


def cases_for(a, b, c, bm, bn, bk, warps, stages) -> dict:
    """label -> a call launching that case once."""
    m, k = a.shape
    n = b.shape[1]
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    cases = {"probe": lambda: plain_kernel[(tiles,)](a, b, c, m, n, k, k, 1, n, 1, n, 1, BM=bm, BN=bn, BK=bk,
                                                     GROUP_M=8, num_warps=warps, num_stages=stages)}
    kargs = (a, b, c, bm, bn, bk, 8, False)
    for label, hints, pdl in (("st", {}, "1"), ("st nowalk", {"persistent": False}, "1"),
                              ("st nopdl", {}, "0"), ("st nopdl nowalk", {"persistent": False}, "0")):
        os.environ["SAFETILE_PDL"] = pdl
        kern = st_kernel(warps, stages, **hints)
        ct.launch(None, (tiles,), kern, kargs)  # compiled now, under this PDL setting
        cases[label] = (lambda kern=kern: ct.launch(None, (tiles,), kern, kargs))
    os.environ["SAFETILE_PDL"] = "1"
    cases["st src"] = source_kernel(a, b, c, bm, bn, bk, warps, stages, f"{bm}_{bn}_{warps}_{stages}")
    return cases


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="1024x1024x1024,1024x1024x4096,2048x2048x1024")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    rows = []
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        ref = (a.float() @ b.float())
        flop = 2.0 * m * n * k
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        t_torch = time_graph_ms([torch_call(a, b, c)], args.reps)
        print(f"{shape} torch {flop / t_torch / 1e9:.0f} TFLOP/s", flush=True)
        for bm, bn, bk, warps, stages in CONFIGS:
            cases = cases_for(a, b, c, bm, bn, bk, warps, stages)
            for label, call in cases.items():
                c.fill_(float("nan"))
                call()
                torch.cuda.synchronize()
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                ok = err < 2e-2
                t = time_graph_ms([call], args.reps) if ok else float("nan")
                row = {"shape": shape, "config": f"{bm}x{bn}x{bk} w{warps} s{stages}", "case": label, "ok": ok,
                       "err": err, "TFLOPs": flop / t / 1e9, "ratio": t_torch / t}
                rows.append(row)
                print(f"  {row['config']:<18} {label:<16} {row['TFLOPs']:6.0f} TFLOP/s  ratio {row['ratio']:.3f}"
                      f"  {'ok' if ok else 'WRONG'}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print("\nshape            config             " + "  ".join(f"{c:>15}" for c in
          ("probe", "st", "st nowalk", "st nopdl", "st nopdl nowalk", "st src")))
    for shape in args.shapes.split(","):
        for cfg in dict.fromkeys(r["config"] for r in rows if r["shape"] == shape):
            got = {r["case"]: r for r in rows if r["shape"] == shape and r["config"] == cfg}
            print(f"{shape:<16} {cfg:<18} " + "  ".join(
                f"{got[c]['TFLOPs']:8.0f} {got[c]['ratio']:.2f}" if c in got else " " * 15
                for c in ("probe", "st", "st nowalk", "st nopdl", "st nopdl nowalk", "st src")))


if __name__ == "__main__":
    main()
