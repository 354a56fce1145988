"""NVIDIA's cuTile samples as shipped, timed against torch, through whichever ``cuda.tile`` is
importable: the real cuTile Python (``--impl cutile``: its package and tileiras on the path, see
/work/shared/reference/real-cutile-on-the-gpu.md) or safetile (``--impl safetile``: ``cuda.tile``
aliased to safetile, as bench/sections/others.py does). Run both in one process each, on the same
GPU, to compare the two compilers on the same source (issue 12 item 3). Each case is checked
against torch first; times are CUDA-event medians (benchlib.time_ms), torch's time / the sample's.

    PYTHONPATH=src python bench/cutile_compare.py --impl safetile --samples DIR [--json out.json]
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import types

import torch
import torch.nn.functional as F

from benchlib import time_ms


def _cuda_tile(impl: str) -> None:
    if impl == "safetile":
        import safetile as ct
        pkg = types.ModuleType("cuda")
        pkg.tile = ct  # type: ignore[attr-defined]
        sys.modules.update({"cuda": pkg, "cuda.tile": ct, "cuda.tile.tune": ct.tune})
    import cuda.tile  # noqa: F401 - the real package must import on its own


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=("safetile", "cutile"), required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json")
    a = ap.parse_args()
    _cuda_tile(a.impl)
    sys.path.insert(0, a.samples)
    f16 = torch.float16
    rows = []

    def case(name, flop, make, run, ref, tol):
        try:
            s = make()
            got, want = run(s), ref(s)
            ok = bool(torch.allclose(got.float(), want.float(), rtol=tol, atol=tol))
            t_s = time_ms([lambda: run(s)], a.reps)
            t_t = time_ms([lambda: ref(s)], a.reps)
            row = {"case": name, "ok": ok, "sample_ms": t_s, "torch_ms": t_t, "ratio": t_t / t_s,
                   "sample_TFLOPs": flop / t_s / 1e9}
        except Exception as e:  # noqa: BLE001 - a sample this implementation cannot run: say so
            row = {"case": name, "error": f"{type(e).__name__}: {str(e)[:300]}"}
        rows.append(row)
        print(f"{a.impl:9s} {name:16s} " + (f"ratio {row['ratio']:.3f}  {row['sample_TFLOPs']:.1f} TFLOP/s  ok={row['ok']}"
                                             if "ratio" in row else row["error"]), flush=True)

    bmm_mod = importlib.import_module("BatchMatMul")
    case("batch_matmul", 2.0 * 8 * 1024 ** 3,
         lambda: (torch.randn(8, 1024, 1024, device="cuda", dtype=f16), torch.randn(8, 1024, 1024, device="cuda", dtype=f16)),
         lambda s: bmm_mod.bmm(s[0], s[1], f16), lambda s: torch.bmm(s[0], s[1]), 5e-2)
    att = importlib.import_module("AttentionFMHA")
    for d, causal in ((64, False), (128, True)):
        case(f"attention:d{d}{'c' if causal else ''}", 4.0 * 4 * 16 * 4096 * 4096 * d * (0.5 if causal else 1.0),
             lambda d=d: tuple(torch.randn(4, 16, 4096, d, device="cuda", dtype=f16) for _ in range(3)),
             lambda s, c=causal: att.cutile_fmha(*s, causal=c),
             lambda s, c=causal: F.scaled_dot_product_attention(*s, is_causal=c), 2e-2)
    mm = importlib.import_module("MatMul")
    case("matmul 4096", 2.0 * 4096 ** 3,
         lambda: (torch.randn(4096, 4096, device="cuda", dtype=f16), torch.randn(4096, 4096, device="cuda", dtype=f16)),
         lambda s: mm.cutile_matmul(s[0], s[1]), lambda s: s[0] @ s[1], 5e-2)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"impl": a.impl, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
