"""Where should the ping-pong attention (Gluon, backends/triton/pingpong_emit.py) let its successor
launch? (issue 12 item 1; session 18.)

Since session 17 a GEMM-like kernel waits for its predecessor first and signals programmatic
dependent launch after its last product loop; element-wise kernels signal first. The ping-pong
attention still signals first. Here the same forward kernel is generated twice in one process:
``first`` (as shipped: signal, then wait) and ``exit`` (the signal line removed: a block's exit is
its signal), each checked against SDPA first, then timed alone and in a chain attention → GEMM
(the output projection, safetile's ``matmul`` reading the attention's output, as in a model's
layer), eagerly and replayed in a CUDA graph (CUDA-event medians).

    PYTHONPATH=src python bench/attention_pdl_probe.py [--json out.json]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from types import SimpleNamespace

os.environ.setdefault("SAFETILE_CACHE_DIR", "off")  # both variants generated here, not read from disk
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import safetile as ct  # noqa: E402
from safetile.backends.triton import cache, pingpong_emit  # noqa: E402
from benchlib import time_graph_ms, time_ms  # noqa: E402
from kernels.gemm import matmul  # noqa: E402
from sections.attention import _fwd_launch, _inputs  # noqa: E402

_SHIPPED = pingpong_emit.generate_pingpong


def _exit_signal(fn, facts):
    """The shipped kernel without its early signal (each block signals when it exits)."""
    gen = _SHIPPED(fn, facts)
    if gen is None:
        return None
    assert "    _st_gdc_launch()\n" in gen.source, "the ping-pong kernel no longer signals first"
    return dataclasses.replace(gen, source=gen.source.replace("    _st_gdc_launch()\n", "", 1))


def build(variant: str, cfg: dict, d: int, seq: int, causal: bool, tensors, o):
    pingpong_emit.generate_pingpong = _exit_signal if variant == "exit" else _SHIPPED
    cache._loaded.clear()  # the in-memory source cache is keyed by the IR, not the variant
    try:
        kern, grid, kargs = _fwd_launch(cfg, d, seq, causal, *tensors[1:], o)
        ct.launch(None, grid, kern, kargs)  # compiles under the patch
        torch.cuda.synchronize()
    finally:
        pingpong_emit.generate_pingpong = _SHIPPED
    return kern, grid, kargs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--config", default="128x128x4x2x0x2", help="BMxBNxWARPSxSTAGESxOCCxWS (WS 2: ping-pong)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    cfg = dict(zip(("BM", "BN", "warps", "stages", "occ", "ws"), map(int, a.config.split("x")))) | {"k2d": 1}
    args = SimpleNamespace(attn_tokens=a.tokens, attn_heads=a.heads)
    rows = []
    for d in map(int, a.dims.split(",")):
        tensors = _inputs(args, d, a.seq)
        b, q, k, v = tensors
        width = a.heads * d
        w = torch.randn(width, width, device="cuda", dtype=torch.bfloat16) / width ** 0.5
        y = torch.empty(b * a.seq, width, device="cuda", dtype=torch.bfloat16)
        gemm = matmul.replace_hints(num_warps=8, num_stages=3)
        ggrid = (ct.cdiv(b * a.seq, 128) * ct.cdiv(width, 256),)
        for causal in (False, True):
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            for variant in ("first", "exit"):
                o = torch.full_like(q, float("nan"))
                kern, grid, kargs = build(variant, cfg, d, a.seq, causal, tensors, o)
                err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
                y.fill_(float("nan"))

                def attn(kern=kern, grid=grid, kargs=kargs):
                    ct.launch(None, grid, kern, kargs)

                gargs = (o.view(b * a.seq, width), w, y, 128, 256, 64, 8, True)

                def chain(attn=attn, gemm=gemm, ggrid=ggrid, gargs=gargs):
                    attn()
                    ct.launch(None, ggrid, gemm, gargs)

                chain()
                torch.cuda.synchronize()
                gerr = ((y.float() - (o.view(-1, width) @ w).float()).norm() / y.float().norm()).item()
                row = {"d": d, "seq": a.seq, "causal": causal, "variant": variant, "rel_err": err, "gemm_rel_err": gerr,
                       "ok": err < 2e-2 and gerr < 2e-2,
                       "alone_ms": time_ms([attn], a.reps), "alone_graph_ms": time_graph_ms([attn], a.reps),
                       "chain_ms": time_ms([chain], a.reps), "chain_graph_ms": time_graph_ms([chain], a.reps)}
                rows.append(row)
                print(f"d={d} causal={causal!s:5s} {variant:5s} alone {row['alone_ms']:.4f} graph "
                      f"{row['alone_graph_ms']:.4f}  chain {row['chain_ms']:.4f} graph {row['chain_graph_ms']:.4f} ms "
                      f"{'ok' if row['ok'] else f'WRONG {err:.1e} {gerr:.1e}'}", flush=True)
    print("\nexit/first time ratio (below 1: the exit signal is faster)")
    for first, ex in zip(rows[::2], rows[1::2]):
        print(f"d={first['d']} causal={first['causal']!s:5s} " + "  ".join(
            f"{key[:-3]} {ex[key] / first[key]:.3f}" for key in ("alone_ms", "alone_graph_ms", "chain_ms",
                                                               "chain_graph_ms")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "config": a.config, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
