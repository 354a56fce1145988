"""Run time of kernels compiled at LLVM's O3 (Triton's level) against a lower level
(``SAFETILE_LLVM_OPT``, ``--level``, default 0; llvm_level.py), in one process on one GPU.

Each case is one kernel and its arguments; two copies of the kernel (``replace_hints``: each has
its own compile cache) are compiled, one with ``SAFETILE_LLVM_OPT=3`` and one with the level
under test, and the script checks that the two binaries differ (else the row says so), checks
both outputs against a torch reference (|out - ref| <= tol + tol |ref| everywhere; outputs
poisoned with NaN first), then times the two
interleaved (``--rounds`` rounds of A then B, each the median of ``--reps`` event-timed
batches) and reports the median of B / A per case: above 1 means the lower level is slower.

    PYTHONPATH=src python bench/llvm_ab.py --out ab.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import safetile as ct  # noqa: E402
from benchlib import time_ms  # noqa: E402
from kernels import attention as A, gemm as G, others as O  # noqa: E402

LOG2E = 1.4426950408889634


def _attention(kernel, d, causal, bm, bn, hints, two_d=False):
    b, h, seq = 4, 16, 4096
    q, k, v = (torch.randn((b, h, seq, d), device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    scale = LOG2E / math.sqrt(d)
    grid = (ct.cdiv(seq, bm), b * h)
    if two_d:
        flat = [t.view(-1, d) for t in (q, k, v, o)]
        args = (*flat, torch.empty(1, device="cuda"), seq, scale, bm, bn, d, causal, False, True, False)  # no LSE, split
    else:
        args = (*[t.view(b * h, seq, d) for t in (q, k, v, o)], scale, bm, bn, d, causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return kernel.replace_hints(**hints), grid, args, o, ref, 2e-2


def _gemm(n):
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.full_like(a, float("nan"))
    grid = (ct.cdiv(n, 128) * ct.cdiv(n, 256),)
    return (G.matmul.replace_hints(num_warps=8, num_stages=3), grid, (a, b, c, 128, 256, 64, 8, True), c,
            (a.float() @ b.float()).half(), 1e-2)


def _layernorm_chunked():
    x = torch.randn(16384, 4096, device="cuda")
    w, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    y = torch.full_like(x, float("nan"))
    mean, rstd = torch.empty(16384, device="cuda"), torch.empty(16384, device="cuda")
    ref = F.layer_norm(x, (4096,), w, b, 1e-5)
    return O.layernorm_chunked.replace_hints(), (16384,), (x, w, b, y, mean, rstd, 1e-5, 1024), y, ref, 1e-3


def _softmax_chunked():
    x = torch.randn(16384, 4096, device="cuda")
    y = torch.full_like(x, float("nan"))
    return O.softmax_chunked.replace_hints(), (16384,), (x, y, 1024), y, torch.softmax(x, -1), 1e-5


CASES = {
    "gemm_4096": lambda: _gemm(4096),
    "gemm_8192": lambda: _gemm(8192),
    "attn3d_d64_w4": lambda: _attention(A.attention, 64, False, 128, 128, {"num_warps": 4}),
    "attn3d_d64_w4_causal": lambda: _attention(A.attention, 64, True, 128, 128, {"num_warps": 4}),
    "attn3d_d64_w8o2": lambda: _attention(A.attention, 64, False, 128, 128,
                                          {"num_warps": 8, "num_stages": 3, "occupancy": 2}),
    "attn2d_d64_w8o2_causal": lambda: _attention(A.attention_2d, 64, True, 128, 128,
                                                 {"num_warps": 8, "num_stages": 3, "occupancy": 2}, two_d=True),
    "attn3d_d128_w8": lambda: _attention(A.attention, 128, False, 128, 128, {"num_warps": 8, "num_stages": 3}),
    "layernorm_chunked": _layernorm_chunked,
    "softmax_chunked": _softmax_chunked,
}


def _built(kernel, grid, args, level: str):
    """Launch ``kernel`` once with ``SAFETILE_LLVM_OPT=level`` (its first launch compiles)."""
    old = os.environ.get("SAFETILE_LLVM_OPT")
    os.environ["SAFETILE_LLVM_OPT"] = level
    try:
        ct.launch(None, grid, kernel, args)
    finally:
        if old is None:
            os.environ.pop("SAFETILE_LLVM_OPT", None)
        else:
            os.environ["SAFETILE_LLVM_OPT"] = old
    torch.cuda.synchronize()
    spec = next(v for k, v in kernel.backend_cache.items() if k[0] == "triton")
    variant = next(iter(spec.by_facts.values()))
    return variant.compiled.asm["cubin"] if getattr(variant, "compiled", None) is not None else None


def run_case(name: str, level: str, rounds: int, reps: int) -> dict:
    kernel, grid, args, out, ref, tol = CASES[name]()
    twin = kernel.replace_hints()
    cubins, errs, oks = [], [], []
    for k, lv in ((kernel, "3"), (twin, level)):
        out.fill_(float("nan"))
        cubins.append(_built(k, grid, args, lv))
        diff = (out.float() - ref.float()).abs()
        errs.append(float(diff.max()))
        oks.append(bool((diff <= tol + tol * ref.float().abs()).all()))  # NaN fails
    ok = all(oks)
    t_a, t_b = [], []
    for _ in range(rounds):
        t_a.append(time_ms([lambda: ct.launch(None, grid, kernel, args)], reps))
        t_b.append(time_ms([lambda: ct.launch(None, grid, twin, args)], reps))
    ratios = [b / a for a, b in zip(t_a, t_b)]
    return {"case": name, "level": int(level), "o3_ms": statistics.median(t_a), "level_ms": statistics.median(t_b),
            "ratio": statistics.median(ratios), "ratios": ratios, "max_abs_err": errs, "ok": ok,
            "binaries_differ": None if None in cubins else cubins[0] != cubins[1]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--level", default="0")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    names = args.cases.split(",")
    unknown = [n for n in names if n not in CASES]
    if unknown:
        p.error(f"unknown cases {unknown}; known: {sorted(CASES)}")
    torch.manual_seed(0)
    rows = []
    for name in names:
        try:
            r = run_case(name, args.level, args.rounds, args.reps)
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            r = {"case": name, "error": f"{type(e).__name__}: {e}"[:500]}
        rows.append(r)
        if "error" in r:
            print(f"{name:24s} ERROR {r['error']}", flush=True)
        else:
            print(f"{name:24s} O3 {r['o3_ms']:.4f} ms  O{args.level} {r['level_ms']:.4f} ms  ratio {r['ratio']:.4f} "
                  f"(rounds {min(r['ratios']):.3f}-{max(r['ratios']):.3f})  ok {r['ok']}  "
                  f"binaries differ {r['binaries_differ']}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
