"""Kernels written the way other people write tile code (bench/kernels/others.py), and, when
``--cutile-samples DIR`` names a copy of NVIDIA's cuTile Python ``samples/`` folder, those
samples run as shipped (``import cuda.tile as ct`` resolves to safetile) through their own
host wrappers. Each case is checked against torch first, then timed against torch's usual
call for the same work; memory-bound cases rotate input copies past L2."""
from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional as F

import safetile as ct
from benchlib import check, confirmed, copies_for, launch, time_graph_ms
from kernels import others as K
from kernels.gemm import gemm_2d

# cuTile Python 1.7 (tileiras 13.4) on one H100, NVIDIA's samples as shipped, time relative to
# torch (higher is better): /work/shared/reference/real-cutile-on-the-gpu.md. Not re-measured here.
CUTILE_H100 = {"vec_add": 1.00, "matmul": 0.06, "transpose": 2.82, "layernorm": 0.26, "attention": 0.57}


def _case(res, rows, name, size, unit, make, run_st, run_torch, tol, args, nbytes=None, graph=False):
    """Check ``run_st`` against ``run_torch`` on fresh inputs, then time both in alternating rounds
    (``benchlib.confirmed``; rotating copies of the inputs past L2 when ``nbytes`` is given)."""
    if args.others_kernels and not any(name.startswith(k) for k in args.others_kernels):
        return
    inputs = make()
    got, want = run_st(inputs), run_torch(inputs)
    ok = check(f"{name} {size}", got, want, tol, tol, res)
    k = copies_for(nbytes, args.mem_budget) if nbytes else 1
    sets = [inputs] + [make() for _ in range(k - 1)]
    st_calls = [lambda s=s: run_st(s) for s in sets]
    torch_calls = [lambda s=s: run_torch(s) for s in sets]
    t_st, t_torch = confirmed(st_calls, torch_calls, args.confirm_rounds, args.reps)
    row = {"kernel": name, "size": size, "unit": unit, "ok": ok, "safetile_ms": t_st, "torch_ms": t_torch,
           "ratio": t_torch / t_st}
    if graph:  # host launch cost hides small kernels: also their device time alone
        g_st, g_torch = confirmed(st_calls, torch_calls, args.confirm_rounds, args.reps, time_graph_ms)
        row.update(graph_ratio=g_torch / g_st)
    if unit == "bytes":
        row.update(safetile_GBps=size / t_st / 1e6, torch_GBps=size / t_torch / 1e6)
    else:
        row.update(safetile_TFLOPs=size / t_st / 1e9, torch_TFLOPs=size / t_torch / 1e9)
    rows.append(row)
    rate = (f"{row['safetile_GBps']:7.0f} vs {row['torch_GBps']:7.0f} GB/s" if unit == "bytes"
            else f"{row['safetile_TFLOPs']:6.1f} vs {row['torch_TFLOPs']:6.1f} TFLOP/s")
    print(f"  {name:24s} {size:>12.3g} {unit:5s}: {rate}  ratio {row['ratio']:.2f}"
          + (f"  (graphs {row['graph_ratio']:.2f})" if graph else ""), flush=True)
    del sets, inputs


def bench_others(args, res):
    rows = []
    bf = torch.bfloat16
    for m, n in args.others_norm_shapes:
        def mk_ln(m=m, n=n):
            return (torch.randn(m, n, device="cuda", dtype=bf), torch.randn(n, device="cuda", dtype=bf),
                    torch.randn(n, device="cuda", dtype=bf), torch.empty(m, n, device="cuda", dtype=bf),
                    torch.empty(m, device="cuda"), torch.empty(m, device="cuda"))

        def ln_st(s, m=m):
            launch((m,), K.layernorm_chunked, (*s, 1e-5, 1024))
            return s[3]
        _case(res, rows, "layernorm_chunked", 4 * m * n, "bytes", mk_ln, ln_st,
              lambda s: F.layer_norm(s[0], (s[0].shape[1],), s[1], s[2], 1e-5), 5e-2, args, 4 * m * n, graph=True)

        def mk_sm(m=m, n=n):
            return torch.randn(m, n, device="cuda", dtype=bf), torch.empty(m, n, device="cuda", dtype=bf)

        def sm_st(s, m=m):
            launch((m,), K.softmax_chunked, (*s, 1024))
            return s[1]
        _case(res, rows, "softmax_chunked", 4 * m * n, "bytes", mk_sm, sm_st, lambda s: torch.softmax(s[0], -1),
              2e-2, args, 4 * m * n, graph=True)
    for b, s_, h in args.others_rms3d_shapes:
        def mk_r(b=b, s_=s_, h=h):
            return (torch.randn(b, s_, h, device="cuda", dtype=bf), torch.randn(h, device="cuda", dtype=bf),
                    torch.empty(b, s_, h, device="cuda", dtype=bf))

        def r_st(s, b=b, s_=s_, h=h):
            launch((s_, b), K.rmsnorm_3d, (*s, 1e-6, h))
            return s[2]
        _case(res, rows, "rmsnorm_3d", 4 * b * s_ * h, "bytes", mk_r, r_st,
              lambda s: F.rms_norm(s[0], (s[0].shape[-1],), s[1], 1e-6), 5e-2, args, 4 * b * s_ * h)
    for vocab, dim, tokens in args.others_embedding_shapes:
        table = torch.randn(vocab, dim, device="cuda", dtype=bf)

        def mk_e(tokens=tokens, vocab=vocab, dim=dim):
            return (torch.randint(0, vocab, (tokens,), device="cuda", dtype=torch.int32),
                    torch.empty(tokens, dim, device="cuda", dtype=bf))

        def e_st(s, tokens=tokens, dim=dim, table=table):
            launch((ct.cdiv(tokens, 32), ct.cdiv(dim, 256)), K.embedding_gather, (table, s[0], s[1], 32, 256))
            return s[1]
        _case(res, rows, "embedding_gather", 4 * tokens * dim, "bytes", mk_e, e_st,
              lambda s, table=table: F.embedding(s[0], table), 0, args, 4 * tokens * dim)
    for n, dtype in args.others_transpose:
        td = getattr(torch, dtype)
        t = 128 if td.itemsize == 2 else 64

        def mk_t(n=n, td=td):
            return torch.randn(n, n, device="cuda", dtype=td), torch.empty(n, n, device="cuda", dtype=td)

        def t_st(s, n=n, t=t):
            launch((ct.cdiv(n, t), ct.cdiv(n, t)), K.transpose_tiles, (*s, t, t))
            return s[1]
        _case(res, rows, f"transpose_{dtype}", 2 * n * n * td.itemsize, "bytes", mk_t, t_st,
              lambda s: s[0].t().contiguous(), 0, args, 2 * n * n * td.itemsize)
    for b, m in args.others_bmm:
        def mk_b(b=b, m=m):
            return (torch.randn(b, m, m, device="cuda", dtype=torch.float16),
                    torch.randn(b, m, m, device="cuda", dtype=torch.float16),
                    torch.empty(b, m, m, device="cuda", dtype=torch.float16))
        k3 = K.batched_matmul_3d.replace_hints(num_warps=8, num_stages=3)

        def b_st(s, b=b, m=m, k3=k3):
            launch((b, ct.cdiv(m, 128), ct.cdiv(m, 256)), k3, (*s, 128, 256, 64))
            return s[2]
        _case(res, rows, "batched_matmul_3d", 2.0 * b * m ** 3, "flop", mk_b, b_st,
              lambda s: torch.bmm(s[0], s[1]), 5e-2, args)
    for m in args.others_gemm2d:  # a GEMM as users first write one: 2-D grid, no swizzle (walked in bands)
        def mk_g(m=m):
            return (torch.randn(m, m, device="cuda", dtype=torch.float16),
                    torch.randn(m, m, device="cuda", dtype=torch.float16),
                    torch.empty(m, m, device="cuda", dtype=torch.float16))
        g2 = gemm_2d.replace_hints(num_warps=8, num_stages=3)

        def g_st(s, m=m, g2=g2):
            launch((ct.cdiv(m, 128), ct.cdiv(m, 256)), g2, (*s, 128, 256, 64))
            return s[2]
        _case(res, rows, "gemm_2d", 2.0 * m ** 3, "flop", mk_g, g_st, lambda s: torch.matmul(s[0], s[1]), 5e-2, args)
    res["others"] = rows
    if args.cutile_samples:
        res["samples"] = _samples(args, res)


# ------------------------------------------------------------------------------------ samples

def _load_samples(folder: Path) -> dict:
    """NVIDIA's sample modules with ``cuda.tile`` mapped to safetile (nothing of theirs is copied here)."""
    pkg = types.ModuleType("cuda")
    pkg.tile = ct
    saved = {k: sys.modules.get(k) for k in ("cuda", "cuda.tile", "cuda.tile.tune")}
    sys.modules.update({"cuda": pkg, "cuda.tile": ct, "cuda.tile.tune": ct.tune})
    sys.path.insert(0, str(folder))
    mods = {}
    try:
        for name in ("VectorAddition", "Transpose", "LayerNorm", "MatMul", "BatchMatMul", "AttentionFMHA"):
            try:
                mods[name] = importlib.import_module(name)
            except Exception as e:  # noqa: BLE001 - a sample that needs API safetile lacks
                print(f"  sample {name}: not loaded ({type(e).__name__}: {str(e)[:160]})")
    finally:
        sys.path.remove(str(folder))
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return mods


def _samples(args, res):
    rows = []
    mods = _load_samples(Path(args.cutile_samples))

    def run(sample, size, unit, make, st, ref, tol, nbytes=None):
        try:
            before = len(rows)
            _case(res, rows, sample, size, unit, make, st, ref, tol, args, nbytes, graph=True)
            if len(rows) > before:
                rows[-1]["sample"] = sample
                rows[-1]["cutile_h100_ratio"] = CUTILE_H100.get(sample.split(":")[0])
        except Exception as e:  # noqa: BLE001 - keep the other samples' numbers
            print(f"  sample {sample} {size}: FAILED ({type(e).__name__}: {str(e)[:200]})")
            rows.append({"sample": sample, "kernel": sample, "size": size, "unit": unit, "error": str(e)[:500],
                         "ratio": float("nan")})
    f16, bf = torch.float16, torch.bfloat16
    if "VectorAddition" in mods:
        m = mods["VectorAddition"]
        for n in (1 << 24, 1 << 28):
            run("vec_add", 3 * 2 * n, "bytes", lambda n=n: (torch.randn(n, device="cuda", dtype=f16),
                                                            torch.randn(n, device="cuda", dtype=f16)),
                lambda s, m=m: m.vec_add(*s), lambda s: s[0] + s[1], 1e-3, 3 * 2 * n)
    if "Transpose" in mods:
        m = mods["Transpose"]
        for n, td in ((1024, f16), (8192, f16), (8192, torch.float32)):
            nb = 2 * n * n * td.itemsize
            run("transpose", nb, "bytes", lambda n=n, td=td: (torch.randn(n, n, device="cuda", dtype=td),),
                lambda s, m=m: m.cutile_transpose(s[0]), lambda s: s[0].t().contiguous(), 0, nb)
    if "LayerNorm" in mods:
        m = mods["LayerNorm"]
        for rows_, n in ((1024, 2048), (16384, 4096)):
            nb = 4 * rows_ * n
            run("layernorm", nb, "bytes",
                lambda r=rows_, n=n: (torch.randn(r, n, device="cuda", dtype=bf), torch.randn(n, device="cuda", dtype=bf),
                                      torch.randn(n, device="cuda", dtype=bf)),
                lambda s, m=m: m.CuTileLayerNorm.apply(s[0], s[1], s[2], 1e-5),
                lambda s: F.layer_norm(s[0], (s[0].shape[1],), s[1], s[2], 1e-5), 5e-2, nb)
    if "MatMul" in mods:
        m = mods["MatMul"]
        for n in (4096, 8192):
            run("matmul", 2.0 * n ** 3, "flop", lambda n=n: (torch.randn(n, n, device="cuda", dtype=f16),
                                                             torch.randn(n, n, device="cuda", dtype=f16)),
                lambda s, m=m: m.cutile_matmul(s[0], s[1]), lambda s: s[0] @ s[1], 5e-2)
    if "BatchMatMul" in mods:
        m = mods["BatchMatMul"]
        run("batch_matmul", 2.0 * 8 * 1024 ** 3, "flop",
            lambda: (torch.randn(8, 1024, 1024, device="cuda", dtype=f16), torch.randn(8, 1024, 1024, device="cuda", dtype=f16)),
            lambda s, m=m: m.bmm(s[0], s[1], f16), lambda s: torch.bmm(s[0], s[1]), 5e-2)
    if "AttentionFMHA" in mods:
        m = mods["AttentionFMHA"]
        for d, causal in ((64, False), (128, True)):
            flop = 4.0 * 4 * 16 * 4096 * 4096 * d * (0.5 if causal else 1.0)
            run(f"attention:d{d}{'c' if causal else ''}", flop, "flop",
                lambda d=d: tuple(torch.randn(4, 16, 4096, d, device="cuda", dtype=f16) for _ in range(3)),
                lambda s, m=m, c=causal: m.cutile_fmha(*s, causal=c),
                lambda s, c=causal: F.scaled_dot_product_attention(*s, is_causal=c), 2e-2)
    return rows
