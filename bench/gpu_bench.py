"""GPU benchmark: safetile kernels (Triton backend) against PyTorch in the same process.

Every section checks correctness against PyTorch first, then times with CUDA events after
warm-up: each measurement is the mean of a batch of back-to-back calls, the reported value
the median over ``--reps`` batches; inputs rotate over several copies (enough to exceed L2)
so caches don't flatter. Sections: D2D copy, element-wise add, GEMM (fp16/bf16, fp32
accumulate), softmax, RMSNorm, LayerNorm, flash-attention forward (against SDPA's flash backend, and
its default choice, cuDNN on Hopper), launch overhead,
first-launch compile time (cold and warm disk cache, in fresh processes), and ``safe``: the
safe style (``@ct.entry`` + partitions, checked launches) against the unchecked style with the
same tiles (add 2^28 f32/f16, GEMM 8192³ f16), plus host cost per launch of both.

    PYTHONPATH=src python bench/gpu_bench.py --quick          # a few minutes
    PYTHONPATH=src python bench/gpu_bench.py                  # everything
    PYTHONPATH=src python bench/gpu_bench.py --only gemm,attention --gemm-sizes 4096,8192

Writes JSON to bench/results/<device>/gpu_bench[-quick].json and prints a table last.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import safetile as ct  # noqa: E402

ZERO = ct.PaddingMode.ZERO

# ===================================================================================== kernels


@ct.kernel
def vec_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def copy_kernel(src, dst, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(dst, (i,), ct.load(src, (i,), (TILE,)))


@ct.kernel
def matmul(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int],
           GROUP: ct.Constant[int], TMA: ct.Constant[bool]):
    """C = A @ B with a K loop of ct.mma; blocks walk the output in GROUP-row bands (L2 reuse)."""
    pid = ct.bid(0)
    num_m = ct.cdiv(A.shape[0], BM)
    num_n = ct.cdiv(B.shape[1], BN)
    width = GROUP * num_n
    first_m = (pid // width) * GROUP
    rows = ct.minimum(num_m - first_m, GROUP)
    bm = first_m + (pid % width) % rows
    bn = (pid % width) // rows
    acc = ct.zeros((BM, BN), ct.float32)
    for k in range(ct.cdiv(A.shape[1], BK)):
        a = ct.load(A, (bm, k), (BM, BK), padding_mode=ZERO, allow_tma=TMA)
        b = ct.load(B, (k, bn), (BK, BN), padding_mode=ZERO, allow_tma=TMA)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype), allow_tma=TMA)


@ct.kernel
def softmax(x, y, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, N), padding_mode=ct.PaddingMode.NEG_INF).astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, (row, 0), (e * (1.0 / ct.sum(e, axis=1, keepdims=True))).astype(y.dtype))


@ct.kernel
def rmsnorm(x, w, y, eps, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, N)).astype(ct.float32)
    r = ct.rsqrt(ct.sum(t * t, axis=1, keepdims=True) * (1.0 / N) + eps)
    wt = ct.load(w, (0,), (N,)).astype(ct.float32)
    ct.store(y, (row, 0), (t * r * wt[None, :]).astype(y.dtype))


@ct.kernel
def layernorm(x, w, b, y, eps, N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, N)).astype(ct.float32)
    mean = ct.sum(t, axis=1, keepdims=True) * (1.0 / N)
    d = t - mean
    r = ct.rsqrt(ct.sum(d * d, axis=1, keepdims=True) * (1.0 / N) + eps)
    wt = ct.load(w, (0,), (N,)).astype(ct.float32)
    bt = ct.load(b, (0,), (N,)).astype(ct.float32)
    ct.store(y, (row, 0), (d * r * wt[None, :] + bt[None, :]).astype(y.dtype))


def _attn_block(q, K, V, bh, j, m_i, l_i, acc, qpos, S, scale, BN, D, MASK, CAUSAL):
    k = ct.reshape(ct.load(K, (bh, j, 0), (1, BN, D), padding_mode=ZERO), (BN, D))
    s = ct.mma(q, ct.transpose(k), ct.zeros((q.shape[0], BN), ct.float32)) * scale
    if MASK:
        kpos = j * BN + ct.arange(BN, dtype=ct.int32)
        ok = kpos[None, :] < S
        if CAUSAL:
            ok = ok & (qpos[:, None] >= kpos[None, :])
        s = ct.where(ok, s, float("-inf"))
    m_new = ct.maximum(m_i, ct.max(s, axis=1))
    p = ct.exp2(s - m_new[:, None])
    alpha = ct.exp2(m_i - m_new)
    l_i = l_i * alpha + ct.sum(p, axis=1)
    v = ct.reshape(ct.load(V, (bh, j, 0), (1, BN, D), padding_mode=ZERO), (BN, D))
    acc = ct.mma(p.astype(v.dtype), v, acc * alpha[:, None])
    return m_new, l_i, acc


@ct.kernel
def attention(Q, K, V, O, scale, BM: ct.Constant[int], BN: ct.Constant[int], D: ct.Constant[int],
              CAUSAL: ct.Constant[bool]):
    """Flash-attention forward over (batch*heads, seq, D) arrays; ``scale`` includes log2(e).
    Causal: the longest rows (last query blocks) are scheduled first."""
    bh = ct.bid(1)
    qb = ct.num_blocks(0) - 1 - ct.bid(0) if CAUSAL else ct.bid(0)
    S = Q.shape[1]
    q = ct.reshape(ct.load(Q, (bh, qb, 0), (1, BM, D), padding_mode=ZERO), (BM, D))
    qpos = qb * BM + ct.arange(BM, dtype=ct.int32)
    m_i = ct.full((BM,), float("-inf"), ct.float32)
    l_i = ct.zeros((BM,), ct.float32)
    acc = ct.zeros((BM, D), ct.float32)
    if CAUSAL:
        full = (qb * BM) // BN
        stop = ct.cdiv(ct.minimum((qb + 1) * BM, S), BN)
    else:
        full = S // BN
        stop = ct.cdiv(S, BN)
    for j in range(full):
        m_i, l_i, acc = _attn_block(q, K, V, bh, j, m_i, l_i, acc, qpos, S, scale, BN, D, False, CAUSAL)
    for j in range(full, stop):
        m_i, l_i, acc = _attn_block(q, K, V, bh, j, m_i, l_i, acc, qpos, S, scale, BN, D, True, CAUSAL)
    out = acc * (1.0 / l_i)[:, None]
    ct.store(O, (bh, qb, 0), ct.reshape(out.astype(O.dtype), (1, BM, D)))


# ---- safe style (@ct.entry, partitions) and its unchecked twins: same tiles, same block order

@ct.entry
def safe_add(z: ct.Mut["E", "B"], x: ct.Ref["E", -1], y: ct.Ref["E", -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@ct.entry(num_warps=8, num_stages=3)
def safe_gemm(c: ct.Mut[ct.f16, ("BM", "BN")], a: ct.Ref[ct.f16, (-1, -1)], b: ct.Ref[ct.f16, (-1, -1)]):
    pa = a.partition((BM, BK))  # noqa: F821 - BM, BN from c's partition, BK explicit
    pb = b.partition((BK, BN))  # noqa: F821
    acc = ct.zeros((BM, BN), ct.float32)  # noqa: F821
    for k in range(pa.num_tiles(1)):
        acc = ct.mma(pa.load((ct.bid(0), k)), pb.load((k, ct.bid(1))), acc)
    c.store(acc.astype(ct.float16))


@ct.kernel
def gemm_2d(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    """The unchecked twin of safe_gemm: 2-D grid, block (i, j) computes C tile (i, j)."""
    acc = ct.zeros((BM, BN), ct.float32)
    for k in range(ct.cdiv(A.shape[1], BK)):
        acc = ct.mma(ct.load(A, (ct.bid(0), k), (BM, BK), padding_mode=ZERO),
                     ct.load(B, (k, ct.bid(1)), (BK, BN), padding_mode=ZERO), acc)
    ct.store(C, (ct.bid(0), ct.bid(1)), acc.astype(C.dtype))


@ct.kernel
def matmul_persistent(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int],
                      GROUP: ct.Constant[int], NPROG: ct.Constant[int]):
    """Persistent GEMM: NPROG blocks walk the output tiles (GROUP-row bands for L2 reuse)."""
    num_m = ct.cdiv(A.shape[0], BM)
    num_n = ct.cdiv(B.shape[1], BN)
    width = GROUP * num_n
    for t in range(ct.bid(0), num_m * num_n, NPROG):
        first_m = (t // width) * GROUP
        rows = ct.minimum(num_m - first_m, GROUP)
        bm = first_m + (t % width) % rows
        bn = (t % width) // rows
        acc = ct.zeros((BM, BN), ct.float32)
        for k in range(ct.cdiv(A.shape[1], BK)):
            acc = ct.mma(ct.load(A, (bm, k), (BM, BK), padding_mode=ZERO),
                         ct.load(B, (k, bn), (BK, BN), padding_mode=ZERO), acc)
        ct.store(C, (bm, bn), acc.astype(C.dtype))


def _attn2d_block(q, K, V, kbase, j, m_i, l_i, acc, qpos, scale, BN, D, MASK):
    k = ct.load(K, (kbase + j, 0), (BN, D), allow_tma=True)
    s = ct.mma(q, ct.transpose(k), ct.zeros((q.shape[0], BN), ct.float32))
    if MASK:
        kpos = j * BN + ct.arange(BN, dtype=ct.int32)
        s = ct.where(qpos[:, None] >= kpos[None, :], s, float("-inf"))
    m_new = ct.maximum(m_i, ct.max(s, axis=1) * scale)
    p = ct.exp2(s * scale - m_new[:, None])
    alpha = ct.exp2(m_i - m_new)
    l_i = l_i * alpha + ct.sum(p, axis=1)
    v = ct.load(V, (kbase + j, 0), (BN, D), allow_tma=True)
    acc = ct.mma(p.astype(v.dtype), v, acc * alpha[:, None])
    return m_new, l_i, acc


@ct.kernel
def attention_2d(Q, K, V, O, S, scale, BM: ct.Constant[int], BN: ct.Constant[int], D: ct.Constant[int],
                 CAUSAL: ct.Constant[bool]):
    """Flash-attention forward over (batch*heads*seq, D) arrays (seq S a multiple of BM and BN):
    2-D tiles only, so every load and the store can go through tensor descriptors (TMA).
    Causal: the longest rows (last query blocks) are scheduled first."""
    bh = ct.bid(1)
    qb = ct.num_blocks(0) - 1 - ct.bid(0) if CAUSAL else ct.bid(0)
    q = ct.load(Q, (bh * (S // BM) + qb, 0), (BM, D), allow_tma=True)
    qpos = qb * BM + ct.arange(BM, dtype=ct.int32)
    kbase = bh * (S // BN)
    m_i = ct.full((BM,), float("-inf"), ct.float32)
    l_i = ct.zeros((BM,), ct.float32)
    acc = ct.zeros((BM, D), ct.float32)
    if CAUSAL:
        full = (qb * BM) // BN
        stop = ct.cdiv((qb + 1) * BM, BN)
    else:
        full = S // BN
        stop = full
    for j in range(full):
        m_i, l_i, acc = _attn2d_block(q, K, V, kbase, j, m_i, l_i, acc, qpos, scale, BN, D, False)
    for j in range(full, stop):
        m_i, l_i, acc = _attn2d_block(q, K, V, kbase, j, m_i, l_i, acc, qpos, scale, BN, D, True)
    out = acc * (1.0 / l_i)[:, None]
    ct.store(O, (bh * (S // BM) + qb, 0), out.astype(O.dtype), allow_tma=True)


@ct.kernel
def tiny(x, TILE: ct.Constant[int]):
    ct.store(x, (0,), ct.load(x, (0,), (TILE,)) + 1.0)


# ===================================================================================== timing

def l2_bytes() -> int:
    try:
        return torch.cuda.get_device_properties(0).L2_cache_size
    except Exception:  # noqa: BLE001
        return 50 << 20


def copies_for(nbytes: int, budget: int) -> int:
    """How many input copies to rotate through: enough to exceed 2x L2, within a memory budget."""
    want = math.ceil(2 * l2_bytes() / max(nbytes, 1)) + 1
    return max(1, min(want, 8, budget // max(nbytes, 1)))


def time_ms(calls, reps: int, min_batch_ms: float = 20.0) -> float:
    """Median over ``reps`` batches of the mean time of one call (CUDA events); rotates ``calls``."""
    for c in calls:
        c()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    calls[0]()
    end.record()
    end.synchronize()
    one = max(start.elapsed_time(end), 1e-3)
    n = max(len(calls), min(2000, int(math.ceil(min_batch_ms / one))))
    times = []
    for _ in range(reps):
        start.record()
        for i in range(n):
            calls[i % len(calls)]()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / n)
    return statistics.median(times)


def time_graph_ms(calls, reps: int) -> float:
    """Device time per call without host launch cost: the calls captured in a CUDA graph, replayed."""
    for c in calls:
        c()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    calls[0]()
    end.record()
    end.synchronize()
    k = max(len(calls), min(200, int(20.0 / max(start.elapsed_time(end), 1e-3))))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        calls[0]()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(k):
            calls[i % len(calls)]()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / k)
    del g
    return statistics.median(times)


def launch(grid, kernel, args):
    ct.launch(None, grid, kernel, args)


def check(name, got, ref, rtol, atol, results):
    ok = torch.allclose(got.float(), ref.float(), rtol=rtol, atol=atol)
    err = (got.float() - ref.float()).abs().max().item()
    rel = ((got.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()
    results.setdefault("checks", []).append({"name": name, "ok": bool(ok), "max_abs_err": err, "rel_l2_err": rel})
    if not ok:
        print(f"  !! correctness check FAILED for {name}: max abs err {err:.3g}, rel L2 {rel:.3g}", flush=True)
    return ok


# ===================================================================================== sections

def bench_copy(args, res):
    rows = []
    for n in args.copy_sizes:
        src = torch.randn(n, device="cuda")
        dst = torch.empty_like(src)
        launch((ct.cdiv(n, args.tile),), copy_kernel, (src, dst, args.tile))
        check(f"copy n={n}", dst, src, 0, 0, res)
        k = copies_for(8 * n, args.mem_budget)
        srcs = [src] + [torch.randn(n, device="cuda") for _ in range(k - 1)]
        dsts = [torch.empty_like(src) for _ in range(k)]
        t_torch = time_ms([lambda s=s, d=d: d.copy_(s) for s, d in zip(srcs, dsts)], args.reps)
        grid = (ct.cdiv(n, args.tile),)
        t_st = time_ms([lambda s=s, d=d: launch(grid, copy_kernel, (s, d, args.tile)) for s, d in zip(srcs, dsts)],
                       args.reps)
        gb = 8 * n / 1e9
        rows.append({"n": n, "bytes": 8 * n, "safetile_ms": t_st, "torch_ms": t_torch,
                     "safetile_GBps": gb / t_st * 1e3, "torch_GBps": gb / t_torch * 1e3, "ratio": t_torch / t_st})
        print(f"  copy n=2^{int(math.log2(n))}: safetile {gb / t_st * 1e3:7.0f} GB/s  torch {gb / t_torch * 1e3:7.0f} GB/s",
              flush=True)
        del srcs, dsts
    res["copy"] = rows


def bench_add(args, res):
    rows = []
    for dtype in args.add_dtypes:
        td = getattr(torch, dtype)
        for n in args.add_sizes:
            item = torch.finfo(td).bits // 8
            nbytes = 3 * n * item
            if nbytes * 1.2 > args.mem_budget:
                print(f"  add {dtype} n={n}: skipped (memory budget)")
                continue
            a = torch.randn(n, device="cuda", dtype=td)
            b = torch.randn(n, device="cuda", dtype=td)
            c = torch.empty_like(a)
            grid = (ct.cdiv(n, args.tile),)
            launch(grid, vec_add, (a, b, c, args.tile))
            check(f"add {dtype} n={n}", c, a + b, 1e-3, 1e-3, res)
            k = copies_for(nbytes, args.mem_budget)
            sets = [(a, b, c)] + [(torch.randn_like(a), torch.randn_like(a), torch.empty_like(a)) for _ in range(k - 1)]
            torch_calls = [lambda s=s: torch.add(s[0], s[1], out=s[2]) for s in sets]
            st_calls = [lambda s=s: launch(grid, vec_add, (s[0], s[1], s[2], args.tile)) for s in sets]
            t_torch = time_ms(torch_calls, args.reps)
            t_st = time_ms(st_calls, args.reps)
            g_torch = time_graph_ms(torch_calls, args.reps)
            g_st = time_graph_ms(st_calls, args.reps)
            gbps = nbytes / 1e9 / (t_st / 1e3)
            rows.append({"dtype": dtype, "n": n, "safetile_ms": t_st, "torch_ms": t_torch, "safetile_GBps": gbps,
                         "torch_GBps": nbytes / 1e9 / (t_torch / 1e3), "ratio": t_torch / t_st,
                         "graph_safetile_GBps": nbytes / g_st / 1e6, "graph_torch_GBps": nbytes / g_torch / 1e6,
                         "graph_ratio": g_torch / g_st})
            print(f"  add {dtype:8s} n=2^{int(math.log2(n)):2d}: safetile {gbps:7.0f} GB/s  torch "
                  f"{rows[-1]['torch_GBps']:7.0f} GB/s  ratio {rows[-1]['ratio']:.2f}   in CUDA graphs: "
                  f"{nbytes / g_st / 1e6:7.0f} vs {nbytes / g_torch / 1e6:7.0f} GB/s", flush=True)
            del sets, a, b, c
    res["add"] = rows


def parse_configs(text, names):
    return [dict(zip(names, map(int, c.split("x")))) for c in text.split(",") if c]


def bench_gemm(args, res):
    """Each shape: every --gemm-configs tile config with pointer loads, then the best one again
    with tensor descriptors (TMA) allowed; the best of all is compared with torch.matmul."""
    rows = []
    shapes = [(s, s, s) for s in args.gemm_sizes] + args.gemm_shapes
    configs = parse_configs(args.gemm_configs, ("BM", "BN", "BK", "warps", "stages"))
    for dtype in args.gemm_dtypes:
        td = getattr(torch, dtype)
        for (m, n, k) in shapes:
            need = 2 * (m * k + k * n + 2 * m * n)
            if need * 1.2 > args.mem_budget:
                print(f"  gemm {dtype} {m}x{n}x{k}: skipped (memory budget)")
                continue
            a = torch.randn(m, k, device="cuda", dtype=td)
            b = torch.randn(k, n, device="cuda", dtype=td)
            c = torch.empty(m, n, device="cuda", dtype=td)
            ref = torch.matmul(a, b)
            flop = 2.0 * m * n * k
            t_torch = time_ms([lambda: torch.matmul(a, b, out=c)], args.reps)
            row = {"dtype": dtype, "m": m, "n": n, "k": k, "torch_ms": t_torch, "torch_TFLOPs": flop / t_torch / 1e9,
                   "configs": []}
            atol = 5e-1 if k > 2048 else 1e-1

            def run_cfg(cfg, tma):
                kern = matmul.replace_hints(num_warps=cfg["warps"], num_stages=cfg["stages"])
                grid = (ct.cdiv(m, cfg["BM"]) * ct.cdiv(n, cfg["BN"]),)
                kargs = (a, b, c, cfg["BM"], cfg["BN"], cfg["BK"], 8, tma)
                c.fill_(float("nan"))
                launch(grid, kern, kargs)
                ok = check(f"gemm {dtype} {m}x{n}x{k} {cfg} tma={tma}", c, ref, 2e-2, atol, res)
                t = time_ms([lambda: launch(grid, kern, kargs)], args.reps)
                entry = {**cfg, "tma": tma, "ms": t, "TFLOPs": flop / t / 1e9, "ok": ok}
                row["configs"].append(entry)
                return entry
            def try_cfg(cfg, tma):
                try:
                    return [run_cfg(cfg, tma)]
                except Exception as e:  # noqa: BLE001 - e.g. out of shared memory: skip the config
                    print(f"  gemm {dtype} {m}x{n}x{k} {cfg} tma={tma}: failed ({type(e).__name__}: {str(e)[:120]})")
                    return []
            entries = [e for cfg in configs for e in try_cfg(cfg, False)]
            best = max(entries, key=lambda e: e["TFLOPs"] if e["ok"] else -1)
            if True in args.gemm_tma:
                entries += try_cfg({k2: best[k2] for k2 in ("BM", "BN", "BK", "warps", "stages")}, True)
            if args.gemm_persistent:
                bt = max(entries, key=lambda e: e["TFLOPs"] if e["ok"] else -1)
                # the persistent kernel keeps more in shared memory: one stage fewer if the best
                # tiles' stages do not fit
                for stages in (bt["stages"], bt["stages"] - 1):
                    try:
                        cfg = {**{k2: bt[k2] for k2 in ("BM", "BN", "BK", "warps")}, "stages": stages}
                        nprog = min(torch.cuda.get_device_properties(0).multi_processor_count,
                                    ct.cdiv(m, cfg["BM"]) * ct.cdiv(n, cfg["BN"]))
                        kern = matmul_persistent.replace_hints(num_warps=cfg["warps"], num_stages=stages)
                        kargs = (a, b, c, cfg["BM"], cfg["BN"], cfg["BK"], 8, nprog)
                        c.fill_(float("nan"))
                        launch((nprog,), kern, kargs)
                        ok = check(f"gemm persistent {dtype} {m}x{n}x{k} {cfg}", c, ref, 2e-2, atol, res)
                        t = time_ms([lambda: launch((nprog,), kern, kargs)], args.reps)
                        entries.append({**cfg, "tma": True, "persistent": nprog, "ms": t, "TFLOPs": flop / t / 1e9,
                                        "ok": ok})
                        row["configs"].append(entries[-1])
                        break
                    except Exception as e:  # noqa: BLE001 - e.g. out of shared memory
                        print(f"  gemm persistent {dtype} {m}x{n}x{k} stages={stages}: failed "
                              f"({type(e).__name__}: {str(e)[:120]})")
            best = max(entries, key=lambda e: e["TFLOPs"] if e["ok"] else -1)
            row.update(best=best, safetile_TFLOPs=best["TFLOPs"], safetile_ms=best["ms"],
                       ratio=t_torch / best["ms"], ok=all(e["ok"] for e in entries))
            if m * n * k <= args.gemm_graph_limit ** 3:  # small problems: host launch cost hides the kernel
                kern = matmul.replace_hints(num_warps=best["warps"], num_stages=best["stages"])
                grid = (ct.cdiv(m, best["BM"]) * ct.cdiv(n, best["BN"]),)
                kargs = (a, b, c, best["BM"], best["BN"], best["BK"], 8, best["tma"])
                if best.get("persistent"):
                    kern = matmul_persistent.replace_hints(num_warps=best["warps"], num_stages=best["stages"])
                    grid = (best["persistent"],)
                    kargs = (a, b, c, best["BM"], best["BN"], best["BK"], 8, best["persistent"])
                g_st = time_graph_ms([lambda: launch(grid, kern, kargs)], args.reps)
                g_torch = time_graph_ms([lambda: torch.matmul(a, b, out=c)], args.reps)
                row.update(graph_safetile_TFLOPs=flop / g_st / 1e9, graph_torch_TFLOPs=flop / g_torch / 1e9,
                           graph_ratio=g_torch / g_st)
            tma_e = [e for e in entries if e["tma"]]
            if tma_e:
                row["safetile_tma_TFLOPs"] = tma_e[0]["TFLOPs"]
                row["safetile_ptr_TFLOPs"] = max(e["TFLOPs"] for e in entries if not e["tma"])
            rows.append(row)
            print(f"  gemm {dtype:8s} {m}x{n}x{k}: " +
                  " ".join(f"[{e['BM']}x{e['BN']}x{e['BK']} w{e['warps']} s{e['stages']}{' tma' if e['tma'] else ''}"
                           f"{' persistent' if e.get('persistent') else ''}: "
                           f"{e['TFLOPs']:.0f}]" for e in entries) +
                  f"  torch {row['torch_TFLOPs']:6.1f}  ratio {row['ratio']:.2f}" +
                  (f"  in CUDA graphs: {row['graph_safetile_TFLOPs']:.1f} vs {row['graph_torch_TFLOPs']:.1f}"
                   if "graph_ratio" in row else ""), flush=True)
            del a, b, c, ref
    res["gemm"] = rows


def _row_bench(name, args, res, rows_out, make, run_st, run_torch, nbytes_fn, tol):
    for n in args.norm_hidden if name != "softmax" else args.softmax_widths:
        m = args.rows if name != "softmax" else max(1, args.softmax_elems // n)
        inputs = make(m, n)
        out = run_st(inputs, n)
        check(f"{name} {m}x{n}", out, run_torch(inputs), tol, tol, res)
        nbytes = nbytes_fn(m, n)
        k = copies_for(nbytes, args.mem_budget)
        sets = [inputs] + [make(m, n) for _ in range(k - 1)]
        t_torch = time_ms([lambda s=s: run_torch(s) for s in sets], args.reps)
        t_st = time_ms([lambda s=s: run_st(s, n) for s in sets], args.reps)
        rows_out.append({"rows": m, "n": n, "safetile_ms": t_st, "torch_ms": t_torch,
                         "safetile_GBps": nbytes / t_st / 1e6, "torch_GBps": nbytes / t_torch / 1e6,
                         "ratio": t_torch / t_st})
        print(f"  {name:9s} {m}x{n}: safetile {nbytes / t_st / 1e6:7.0f} GB/s  torch {nbytes / t_torch / 1e6:7.0f} GB/s"
              f"  ratio {t_torch / t_st:.2f}", flush=True)
        del sets, inputs


def bench_rows(args, res):
    td = getattr(torch, args.norm_dtype)
    item = torch.finfo(td).bits // 8

    def mk_x(m, n):
        return torch.randn(m, n, device="cuda", dtype=td)

    sm = []
    _row_bench("softmax", args, res, sm, lambda m, n: (mk_x(m, n), torch.empty(m, n, device="cuda", dtype=td)),
               lambda s, n: (launch((s[0].shape[0],), softmax, (s[0], s[1], n)), s[1])[1],
               lambda s: torch.softmax(s[0], dim=-1), lambda m, n: 2 * m * n * item, 2e-2)
    res["softmax"] = sm
    rms = []
    _row_bench("rmsnorm", args, res, rms,
               lambda m, n: (mk_x(m, n), torch.randn(n, device="cuda", dtype=td), torch.empty(m, n, device="cuda", dtype=td)),
               lambda s, n: (launch((s[0].shape[0],), rmsnorm, (s[0], s[1], s[2], 1e-6, n)), s[2])[1],
               lambda s: F.rms_norm(s[0], (s[0].shape[1],), s[1], 1e-6), lambda m, n: 2 * m * n * item, 5e-2)
    res["rmsnorm"] = rms
    ln = []
    _row_bench("layernorm", args, res, ln,
               lambda m, n: (mk_x(m, n), torch.randn(n, device="cuda", dtype=td), torch.randn(n, device="cuda", dtype=td),
                             torch.empty(m, n, device="cuda", dtype=td)),
               lambda s, n: (launch((s[0].shape[0],), layernorm, (s[0], s[1], s[2], s[3], 1e-5, n)), s[3])[1],
               lambda s: F.layer_norm(s[0], (s[0].shape[1],), s[1], s[2], 1e-5), lambda m, n: 2 * m * n * item, 5e-2)
    res["layernorm"] = ln


def bench_attention(args, res):
    """Per head dim: the --attn-configs tile configs are tried at the probe length (non-causal) and the
    fastest is used for every length and both masks."""
    rows = []
    names = ("BM", "BN", "warps", "stages")
    chosen = {}

    def setup(d, seq, causal):
        bh = max(1, args.attn_tokens // seq) * args.attn_heads
        b = bh // args.attn_heads
        q, k, v = (torch.randn((b, args.attn_heads, seq, d), device="cuda", dtype=torch.bfloat16) for _ in range(3))
        return b, bh, q, k, v, torch.empty_like(q)

    def run(cfg, d, seq, causal, tensors):
        b, bh, q, k, v, o = tensors
        scale = (1.0 / math.sqrt(d)) * 1.4426950408889634
        grid = (ct.cdiv(seq, cfg["BM"]), bh)
        if cfg.get("k2d") and seq % cfg["BM"] == 0 and seq % cfg["BN"] == 0:
            kern = attention_2d.replace_hints(num_warps=cfg["warps"], num_stages=cfg["stages"])
            kargs = (q.view(-1, d), k.view(-1, d), v.view(-1, d), o.view(-1, d), seq, scale,
                     cfg["BM"], cfg["BN"], d, causal)
        else:
            kern = attention.replace_hints(num_warps=cfg["warps"], num_stages=cfg["stages"])
            kargs = (q.view(bh, seq, d), k.view(bh, seq, d), v.view(bh, seq, d), o.view(bh, seq, d), scale,
                     cfg["BM"], cfg["BN"], d, causal)
        o.fill_(float("nan"))
        launch(grid, kern, kargs)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        ok = check(f"attention d={d} s={seq} causal={causal} {cfg}", o, ref, 2e-2, 2e-2, res)
        return ok, time_ms([lambda: launch(grid, kern, kargs)], args.reps)

    for d in args.attn_dims:
        configs = parse_configs(args.attn_configs_64 if d <= 64 else args.attn_configs_128, names)
        configs = [{**c, "k2d": k2d} for k2d in args.attn_kernels for c in configs]
        probe = args.attn_probe_seq
        tensors = setup(d, probe, False)
        for causal in (False, True):
            sweep = []
            for cfg in configs:
                try:
                    ok, t = run(cfg, d, probe, causal, tensors)
                except Exception as e:  # noqa: BLE001 - e.g. out of shared memory: try the next config
                    print(f"  attention d={d} {cfg}: failed ({type(e).__name__}: {str(e)[:200]})")
                    continue
                sweep.append({**cfg, "ms": t, "ok": ok})
                print(f"  attention d={d} probe seq={probe} causal={causal} {cfg}: {t:.3f} ms", flush=True)
            good = [e for e in sweep if e["ok"]] or sweep
            # the fastest config of each kernel kind; every length then runs both and keeps the faster
            chosen[(d, causal)] = [{k2: min(kind, key=lambda e: e["ms"])[k2] for k2 in names + ("k2d",)}
                                   for kind in ([e for e in good if e["k2d"] == k2d] for k2d in args.attn_kernels)
                                   if kind]
            res.setdefault("attention_sweep", {})[f"{d}{' causal' if causal else ''}"] = sweep
        del tensors
        for seq in args.attn_seqs:
            for causal in (False, True):
                tensors = setup(d, seq, causal)
                b = tensors[0]
                q, k, v = tensors[2:5]
                tried = []
                for cfg in chosen[(d, causal)]:
                    ok, t = run(cfg, d, seq, causal, tensors)
                    tried.append((not ok, t, ok, cfg))
                _, t_st, ok, cfg = min(tried, key=lambda e: e[:2])
                flop = 4.0 * b * args.attn_heads * seq * seq * d * (0.5 if causal else 1.0)

                def sdpa():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                # the target's baseline: SDPA's flash backend (FlashAttention-2 kernels); torch's default
                # choice on Hopper is cuDNN's attention, reported beside it
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    t_torch = time_ms([sdpa], args.reps)
                t_default = time_ms([sdpa], args.reps)
                rows.append({"batch": b, "heads": args.attn_heads, "seq": seq, "d": d, "causal": causal, "config": cfg,
                             "ok": ok, "safetile_ms": t_st, "torch_ms": t_torch, "torch_backend": "flash",
                             "safetile_TFLOPs": flop / t_st / 1e9, "torch_TFLOPs": flop / t_torch / 1e9,
                             "ratio": t_torch / t_st, "torch_default_ms": t_default,
                             "torch_default_TFLOPs": flop / t_default / 1e9, "ratio_vs_default": t_default / t_st})
                print(f"  attention d={d:3d} seq={seq:5d} causal={causal!s:5s}: safetile {flop / t_st / 1e9:6.1f} "
                      f"TFLOP/s  SDPA flash {flop / t_torch / 1e9:6.1f}  ratio {t_torch / t_st:.2f}  "
                      f"(SDPA default/cuDNN {flop / t_default / 1e9:6.1f}, ratio {t_default / t_st:.2f})", flush=True)
                del tensors, q, k, v
    res["attention"] = rows


def bench_launch(args, res):
    x = torch.zeros(128, device="cuda")
    launch((1,), tiny, (x, 128))
    torch.cuda.synchronize()
    rows = []
    for n in args.launch_counts:
        for who, fn in (("safetile", lambda: ct.launch(None, (1,), tiny, (x, 128))), ("torch", lambda: x.add_(1.0))):
            # 1) synchronise after every launch
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
                torch.cuda.synchronize()
            sync_us = (time.perf_counter() - t0) / n * 1e6
            # 2) dependent launches back to back, one final sync
            reps = []
            for _ in range(5):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                torch.cuda.synchronize()
                reps.append((time.perf_counter() - t0) / n * 1e6)
            chained_us = statistics.median(reps)
            # 3) CUDA graph of n launches, replayed
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                fn()
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(g):
                for _ in range(n):
                    fn()
            g.replay()
            torch.cuda.synchronize()
            reps = []
            for _ in range(5):
                t0 = time.perf_counter()
                g.replay()
                torch.cuda.synchronize()
                reps.append((time.perf_counter() - t0) / n * 1e6)
            graph_us = statistics.median(reps)
            del g
            rows.append({"who": who, "n": n, "sync_us": sync_us, "chained_us": chained_us, "graph_us": graph_us})
            print(f"  launch {who:8s} n={n:5d}: per-launch sync {sync_us:7.2f} us  chained {chained_us:7.2f} us  "
                  f"graph {graph_us:7.2f} us", flush=True)
    # host-side cost of one launch (no GPU wait): the whole ct.launch, and the Triton backend's part
    from safetile.backends.triton.launcher import specialization
    from safetile.runtime.args import arg_specs
    specs = arg_specs(tiny, (x, 128))
    spec = specialization(tiny, tiny.specialize(specs), specs)

    def host(fn, n=3000):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out = (time.perf_counter() - t0) / n * 1e6
        torch.cuda.synchronize()
        return out
    host_us = host(lambda: ct.launch(None, (1,), tiny, (x, 128)))
    backend_us = host(lambda: spec(None, (1, 1, 1), (x, 128)))
    torch_us = host(lambda: x.add_(1.0))
    res["launch"] = {"rows": rows, "host_us_per_launch": host_us, "backend_host_us": backend_us,
                     "torch_host_us": torch_us}
    print(f"  host time per launch: ct.launch {host_us:.2f} us, of which the Triton backend "
          f"{backend_us:.2f} us; torch add_ {torch_us:.2f} us", flush=True)


def bench_safe(args, res):
    """Safe style (@ct.entry + partitions, checked launch) against the unchecked style (@ct.kernel +
    ct.launch) with the same tile configuration and block order. Timed as chains of launches with one
    synchronisation at the end (wall clock; the safe chain is a DeviceOp `then` chain), the two styles
    alternating rep by rep; plus host time per launch of a tiny add and a profile of the safe path."""
    import cProfile
    import io
    import pstats
    out = {"rows": []}

    def chain_time(run_n, n, reps):
        run_n(2)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            run_n(n)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / n * 1e3)
        return times

    def compare(name, flop_or_bytes, unit, safe_n, unchecked_n, one_ms_guess):
        n = max(5, int(math.ceil(args.safe_batch_ms / one_ms_guess)))
        safe_n(2), unchecked_n(2)
        ts, tu = [], []
        for _ in range(args.safe_reps):  # alternate, so clocks and temperature treat both alike
            ts += chain_time(safe_n, n, 1)
            tu += chain_time(unchecked_n, n, 1)
        s_ms, u_ms = statistics.median(ts), statistics.median(tu)
        rate = (lambda ms: flop_or_bytes / ms / 1e9) if unit == "TFLOP/s" else (lambda ms: flop_or_bytes / ms / 1e6)
        row = {"case": name, "launches_per_rep": n, "safe_ms": s_ms, "unchecked_ms": u_ms,
               "safe_rate": rate(s_ms), "unchecked_rate": rate(u_ms), "unit": unit,
               "ratio_unchecked_over_safe": u_ms / s_ms, "ratio_best_of": min(tu) / min(ts),
               "safe_ms_all": ts, "unchecked_ms_all": tu}
        out["rows"].append(row)
        print(f"  safe vs unchecked {name}: safe {rate(s_ms):8.1f} {unit}  unchecked {rate(u_ms):8.1f} {unit}  "
              f"ratio {u_ms / s_ms:.4f} (best-of ratio {min(tu) / min(ts):.4f})", flush=True)

    # ---- vector add at 2^28, float32 and float16, tile args.tile for both
    n = args.safe_add_n
    for dtype in ("float32", "float16"):
        td = getattr(torch, dtype)
        x = torch.randn(n, device="cuda", dtype=td)
        y = torch.randn(n, device="cuda", dtype=td)
        zt = torch.full((n,), float("nan"), device="cuda", dtype=td)
        cu = torch.full((n,), float("nan"), device="cuda", dtype=td)
        xs, ys = ct.from_dlpack(x).shared(), ct.from_dlpack(y).shared()  # read-only inputs, shared handles
        state = {"z": ct.from_dlpack(zt).partition(args.tile)}
        z, _, _ = safe_add(state["z"], xs, ys).sync()
        state["z"] = z
        check(f"safe add {dtype} n={n}", zt, x + y, 1e-3, 1e-3, res)
        grid = (ct.cdiv(n, args.tile),)
        launch(grid, vec_add, (x, y, cu, args.tile))
        check(f"unchecked add {dtype} n={n}", cu, x + y, 1e-3, 1e-3, res)

        def safe_n(k, state=state, x=xs, y=ys):
            op = safe_add(state["z"], x, y)
            for _ in range(k - 1):
                op = op.then(lambda v: safe_add(*v))
            state["z"] = op.sync()[0]

        def unchecked_n(k, x=x, y=y, cu=cu, grid=grid):
            for _ in range(k):
                ct.launch(None, grid, vec_add, (x, y, cu, args.tile))
        nbytes = 3 * n * x.element_size()
        compare(f"add {dtype} n=2^{int(math.log2(n))} tile {args.tile}", nbytes, "GB/s", safe_n, unchecked_n,
                nbytes / 4.0e9)
        del state, x, y, xs, ys, zt, cu

    # ---- GEMM fp16, same tiles and 2-D block order for both
    BM, BN, BK = args.safe_gemm_tile
    for sz in args.safe_gemm_sizes:
        a = torch.randn(sz, sz, device="cuda", dtype=torch.float16)
        b = torch.randn(sz, sz, device="cuda", dtype=torch.float16)
        ref = torch.matmul(a, b)
        ct_ = torch.full((sz, sz), float("nan"), device="cuda", dtype=torch.float16)
        cu = torch.full((sz, sz), float("nan"), device="cuda", dtype=torch.float16)
        sk = safe_gemm.generics(BK=BK)
        a_s, b_s = ct.from_dlpack(a).shared(), ct.from_dlpack(b).shared()
        state = {"c": ct.from_dlpack(ct_).partition((BM, BN))}
        state["c"] = sk(state["c"], a_s, b_s).sync()[0]
        atol = 5e-1 if sz > 2048 else 1e-1
        check(f"safe gemm f16 {sz}^3", ct_, ref, 2e-2, atol, res)
        ku = gemm_2d.replace_hints(num_warps=8, num_stages=3)
        grid = (ct.cdiv(sz, BM), ct.cdiv(sz, BN))
        launch(grid, ku, (a, b, cu, BM, BN, BK))
        check(f"unchecked gemm_2d f16 {sz}^3", cu, ref, 2e-2, atol, res)

        def safe_n(k, state=state, a=a_s, b=b_s, sk=sk):
            op = sk(state["c"], a, b)
            for _ in range(k - 1):
                op = op.then(lambda v: sk(*v))
            state["c"] = op.sync()[0]

        def unchecked_n(k, a=a, b=b, cu=cu, grid=grid, ku=ku):
            for _ in range(k):
                ct.launch(None, grid, ku, (a, b, cu, BM, BN, BK))
        flop = 2.0 * sz ** 3
        compare(f"gemm f16 {sz}^3 {BM}x{BN}x{BK} w8 s3", flop, "TFLOP/s", safe_n, unchecked_n, flop / 600e12 * 1e3)
        del state, a, b, a_s, b_s, ct_, cu, ref

    # ---- host cost per launch: tiny add, 1000 launches, one sync (host-bound: the GPU waits on the host)
    x = torch.randn(1024, device="cuda")
    x2 = torch.randn(1024, device="cuda")
    xs, x2s = ct.from_dlpack(x).shared(), ct.from_dlpack(x2).shared()
    zt = torch.empty_like(x)
    st = {"z": ct.from_dlpack(zt).partition(1024)}

    def safe_tiny_torch_refs(k, st=st):  # torch tensors passed straight as Ref arguments
        op = safe_add(st["z"], x, x2)
        for _ in range(k - 1):
            op = op.then(lambda v: safe_add(*v))
        st["z"] = op.sync()[0]

    def safe_tiny(k, st=st):
        op = safe_add(st["z"], xs, x2s)
        for _ in range(k - 1):
            op = op.then(lambda v: safe_add(*v))
        st["z"] = op.sync()[0]

    def safe_tiny_sync_each(k, st=st):
        for _ in range(k):
            st["z"] = safe_add(st["z"], xs, x2s).sync()[0]

    def unchecked_tiny(k):
        for _ in range(k):
            ct.launch(None, (1,), vec_add, (x, x2, zt, 1024))

    def unchecked_tiny_sync_each(k):
        for _ in range(k):
            ct.launch(None, (1,), vec_add, (x, x2, zt, 1024))
            torch.cuda.synchronize()
    host = {}
    for name, fn in (("safe_chain", safe_tiny), ("safe_chain_torch_refs", safe_tiny_torch_refs),
                     ("unchecked_chain", unchecked_tiny),
                     ("safe_sync_each", safe_tiny_sync_each), ("unchecked_sync_each", unchecked_tiny_sync_each)):
        host[name + "_us"] = statistics.median(chain_time(fn, 1000, 5)) * 1e3
    from safetile.safe.launch import prepare
    for name, args_t in (("safe_prepare_us", (st["z"], xs, x2s)), ("safe_prepare_torch_refs_us", (st["z"], x, x2))):
        t0 = time.perf_counter()
        for _ in range(2000):
            prepare(safe_add, args_t)
        host[name] = (time.perf_counter() - t0) / 2000 * 1e6
    out["host"] = host
    print("  host us per launch: " + ", ".join(f"{k} {v:.1f}" for k, v in host.items()), flush=True)
    prof = cProfile.Profile()
    prof.enable()
    safe_tiny(1000)
    prof.disable()
    s_ = io.StringIO()
    pstats.Stats(prof, stream=s_).sort_stats("tottime").print_stats(25)
    out["profile_safe_chain_1000"] = s_.getvalue()[-6000:]
    res["safe"] = out


_COMPILE_SNIPPETS = {
    "vec_add": "a=torch.randn(1<<20,device='cuda'); c=torch.empty_like(a)\n"
               "args=((1<<20)//1024,), B.vec_add, (a, a, c, 1024)",
    "gemm": "a=torch.randn(1024,1024,device='cuda',dtype=torch.float16); c=torch.empty_like(a)\n"
            "args=(8*4,), B.matmul.replace_hints(num_warps=8, num_stages=3), (a, a, c, 128, 256, 64, 8, True)",
    "attention": "q=torch.randn(16,1024,64,device='cuda',dtype=torch.bfloat16)\n"
                 "args=(8,16), B.attention.replace_hints(num_warps=4), (q, q, q, torch.empty_like(q), 0.18, 128, 128, 64, True)",
}


def bench_compile(args, res):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.compile_kernels:
            code = ("import sys, time; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
                    "import torch, safetile as ct\n"
                    "import gpu_bench as B\n"
                    "torch.zeros(1, device='cuda'); torch.cuda.synchronize()\n"
                    "%s\n"
                    "t0 = time.perf_counter(); ct.launch(None, *args); torch.cuda.synchronize()\n"
                    "t1 = time.perf_counter(); ct.launch(None, *args); torch.cuda.synchronize()\n"
                    "t2 = time.perf_counter()\n"
                    "print('TIMES', t1 - t0, t2 - t1)\n") % (str(ROOT / "src"), str(ROOT / "bench"),
                                                           _COMPILE_SNIPPETS[name])
            env = dict(os.environ, SAFETILE_CACHE_DIR=os.path.join(tmp, name, "st"),
                       TRITON_CACHE_DIR=os.path.join(tmp, name, "triton"))
            # Python's bytecode cache: a normal install has .pyc files for Triton's modules; where
            # site-packages has none and cannot take them (some container images), every process
            # compiles Triton's Python source again (~0.1 s). The fresh processes get a private
            # bytecode cache (filled by the cold run); "warm_disk_no_pyc" shows the other case.
            pyc = dict(env, PYTHONPYCACHEPREFIX=os.path.join(tmp, name, "pyc"))
            pyc.pop("PYTHONDONTWRITEBYTECODE", None)
            no_pyc = dict(env, PYTHONDONTWRITEBYTECODE="1")
            no_pyc.pop("PYTHONPYCACHEPREFIX", None)
            row = {"kernel": name}
            for phase, penv in (("cold", pyc), ("warm_disk", pyc), ("warm_disk_no_pyc", no_pyc)):
                t0 = time.perf_counter()
                p = subprocess.run([sys.executable, "-c", code], env=penv, capture_output=True, text=True)
                total = time.perf_counter() - t0
                line = [l for l in p.stdout.splitlines() if l.startswith("TIMES")]
                if p.returncode or not line:
                    row[phase] = {"error": (p.stderr or p.stdout)[-2000:]}
                    print(f"  compile {name} {phase}: FAILED\n{(p.stderr or p.stdout)[-2000:]}", flush=True)
                    continue
                first, second = map(float, line[0].split()[1:])
                row[phase] = {"first_launch_s": first, "second_launch_s": second, "process_s": total}
                print(f"  compile {name:9s} {phase:9s}: first launch {first:6.3f} s (then {second * 1e6:6.1f} us); "
                      f"process {total:5.1f} s", flush=True)
            rows.append(row)
    res["compile"] = rows


SECTIONS = {"copy": bench_copy, "add": bench_add, "gemm": bench_gemm, "rows": bench_rows,
            "attention": bench_attention, "launch": bench_launch, "compile": bench_compile, "safe": bench_safe}


# ===================================================================================== report

def table(res) -> str:
    out = []

    def line(*cols):
        out.append("  ".join(str(c) for c in cols))
    if res.get("copy"):
        line("== D2D copy (GB/s, read+write)")
        for r in res["copy"]:
            line(f"n=2^{int(math.log2(r['n'])):<3d}", f"safetile {r['safetile_GBps']:7.0f}", f"torch {r['torch_GBps']:7.0f}",
                 f"ratio {r['ratio']:.2f}")
    if res.get("add"):
        line("== element-wise add (GB/s)")
        for r in res["add"]:
            line(f"{r['dtype']:8s} n=2^{int(math.log2(r['n'])):<3d}", f"safetile {r['safetile_GBps']:7.0f}",
                 f"torch {r['torch_GBps']:7.0f}", f"ratio {r['ratio']:.2f}",
                 f"| in CUDA graphs: safetile {r['graph_safetile_GBps']:7.0f} torch {r['graph_torch_GBps']:7.0f} "
                 f"ratio {r['graph_ratio']:.2f}" if "graph_ratio" in r else "")
    if res.get("gemm"):
        line("== GEMM, fp32 accumulate (TFLOP/s; best tile config; ptr / tma = pointer / tensor-descriptor loads)")
        for r in res["gemm"]:
            bst = r["best"]
            parts = [f"{k} {r[f'safetile_{k}_TFLOPs']:6.1f}" for k in ("ptr", "tma") if f"safetile_{k}_TFLOPs" in r]
            line(f"{r['dtype']:8s} {r['m']}x{r['n']}x{r['k']:<6}", f"safetile {r['safetile_TFLOPs']:6.1f}", *parts,
                 f"torch {r['torch_TFLOPs']:6.1f}", f"ratio {r['ratio']:.2f}",
                 f"[{bst['BM']}x{bst['BN']}x{bst['BK']} w{bst['warps']} s{bst['stages']}{' tma' if bst['tma'] else ''}"
                 f"{' persistent' if bst.get('persistent') else ''}]",
                 f"| in CUDA graphs: safetile {r['graph_safetile_TFLOPs']:6.1f} torch {r['graph_torch_TFLOPs']:6.1f} "
                 f"ratio {r['graph_ratio']:.2f}" if "graph_ratio" in r else "")
    for name in ("softmax", "rmsnorm", "layernorm"):
        if res.get(name):
            line(f"== {name} (GB/s)")
            for r in res[name]:
                line(f"{r['rows']}x{r['n']:<6d}", f"safetile {r['safetile_GBps']:7.0f}", f"torch {r['torch_GBps']:7.0f}",
                     f"ratio {r['ratio']:.2f}")
    if res.get("attention"):
        line("== flash attention fwd, bf16 (TFLOP/s) vs torch SDPA's flash backend (and its default, cuDNN)")
        for r in res["attention"]:
            cfg = r["config"]
            line(f"d={r['d']:<4d} seq={r['seq']:<6d} causal={r['causal']!s:5s}", f"safetile {r['safetile_TFLOPs']:6.1f}",
                 f"flash {r['torch_TFLOPs']:6.1f}", f"ratio {r['ratio']:.2f}",
                 f"| default {r['torch_default_TFLOPs']:6.1f} ratio {r['ratio_vs_default']:.2f}"
                 if "ratio_vs_default" in r else "",
                 f"[BM {cfg['BM']} BN {cfg['BN']} w{cfg['warps']} s{cfg['stages']}{' 2d/tma' if cfg.get('k2d') else ''}]")
    if res.get("attention"):
        for name, field in (("flash backend", "ratio"), ("default (cuDNN)", "ratio_vs_default")):
            rs = [r[field] for r in res["attention"] if field in r]
            if rs:
                line(f"attention geomean ratio vs SDPA {name} {math.exp(sum(map(math.log, rs)) / len(rs)):.3f} "
                     f"over {len(rs)} cases")
    if res.get("gemm"):
        big = [r["ratio"] for r in res["gemm"] if r["m"] * r["n"] * r["k"] > 2048 ** 3]
        if big:
            line(f"GEMM (> 2048^3) geomean ratio {math.exp(sum(map(math.log, big)) / len(big)):.3f} over {len(big)} cases")
    if res.get("launch"):
        line("== launch overhead (us per launch)")
        for r in res["launch"]["rows"]:
            line(f"{r['who']:8s} n={r['n']:<5d}", f"sync {r['sync_us']:7.2f}", f"chained {r['chained_us']:7.2f}",
                 f"graph {r['graph_us']:7.2f}")
        lr = res["launch"]
        line(f"host us/launch: ct.launch {lr['host_us_per_launch']:.2f} (Triton backend part "
             f"{lr.get('backend_host_us', float('nan')):.2f}), torch add_ {lr.get('torch_host_us', float('nan')):.2f}")
    if res.get("safe"):
        line("== safe (@ct.entry, checked launch) vs unchecked (@ct.kernel), same tiles, chained launches")
        for r in res["safe"]["rows"]:
            line(f"{r['case']:36s}", f"safe {r['safe_rate']:8.1f}", f"unchecked {r['unchecked_rate']:8.1f} {r['unit']}",
                 f"unchecked/safe time ratio {r['ratio_unchecked_over_safe']:.4f} (best-of {r.get('ratio_best_of', 0):.4f})")
        h = res["safe"].get("host", {})
        line("host us/launch: " + ", ".join(f"{k[:-3]} {v:.1f}" for k, v in h.items()))
        for r in res["safe"]["rows"]:
            line(f"  {r['case']:34s} per-rep ms: safe {min(r['safe_ms_all']):.4f}..{max(r['safe_ms_all']):.4f} "
                 f"unchecked {min(r['unchecked_ms_all']):.4f}..{max(r['unchecked_ms_all']):.4f}")
    if res.get("compile"):
        line("== first-launch compile time (s)")
        for r in res["compile"]:
            cols = [f"{p} {r[p]['first_launch_s']:.3f}" if "first_launch_s" in r.get(p, {}) else f"{p} FAILED"
                    for p in ("cold", "warm_disk", "warm_disk_no_pyc")]
            line(f"{r['kernel']:10s}", *cols)
    bad = [c["name"] for c in res.get("checks", []) if not c["ok"]]
    line(f"== correctness: {len(res.get('checks', [])) - len(bad)}/{len(res.get('checks', []))} checks passed"
         + (f"; FAILED: {', '.join(bad)}" if bad else ""))
    if res.get("errors"):
        line(f"== section errors: {', '.join(res['errors'])}")
    return "\n".join(out)


def ints(text):
    return [int(eval(x, {})) for x in text.split(",") if x]  # noqa: S307 - "1<<20" style sizes from the command line


def shapes(text):
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",") if s]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a subset that runs in a few minutes")
    p.add_argument("--only", default="", help="comma list of sections: " + ",".join(SECTIONS))
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--tile", type=int, default=2048, help="element-wise tile size")
    p.add_argument("--add-sizes", type=ints, default=None)
    p.add_argument("--add-dtypes", default="float32,float16")
    p.add_argument("--copy-sizes", type=ints, default=None)
    p.add_argument("--gemm-sizes", type=ints, default=None)
    p.add_argument("--gemm-shapes", type=shapes, default=None, help="extra MxNxK shapes")
    p.add_argument("--gemm-dtypes", default="float16,bfloat16")
    p.add_argument("--gemm-tma", default="1,0", help="include 1 to also time the best config with tensor descriptors")
    p.add_argument("--gemm-graph-limit", type=int, default=4096,
                   help="also time GEMMs up to this cube root of MNK inside CUDA graphs (kernel time only)")
    p.add_argument("--gemm-configs",
                   default="128x256x64x8x3,128x256x64x8x4,128x128x64x8x4,128x128x64x4x4,64x128x64x4x4,64x64x64x4x4",
                   help="BMxBNxBKxWARPSxSTAGES list")
    p.add_argument("--softmax-widths", type=ints, default=[4096, 32768])
    p.add_argument("--softmax-elems", type=int, default=1 << 25)
    p.add_argument("--norm-hidden", type=ints, default=[4096, 8192])
    p.add_argument("--norm-dtype", default="bfloat16")
    p.add_argument("--rows", type=int, default=16384)
    p.add_argument("--attn-dims", type=ints, default=[64, 128])
    p.add_argument("--attn-seqs", type=ints, default=None)
    p.add_argument("--attn-heads", type=int, default=16)
    p.add_argument("--attn-tokens", type=int, default=16384, help="batch * seq")
    p.add_argument("--attn-probe-seq", type=int, default=4096)
    p.add_argument("--attn-configs-64", default="128x128x4x3,128x64x4x3,128x128x8x3,128x64x4x4")
    p.add_argument("--attn-configs-128", default="128x64x8x3,128x128x8x3,128x128x8x2,128x64x8x4,64x64x4x3")
    p.add_argument("--attn-kernels", default="0,1", help="0: 3-D tiles (pointer loads), 1: 2-D tiles (TMA)")
    p.add_argument("--gemm-persistent", type=int, default=1, help="also time a persistent GEMM with the best tiles")
    p.add_argument("--launch-counts", type=ints, default=[1, 10, 100, 1000])
    p.add_argument("--compile-kernels", default=None)
    p.add_argument("--mem-budget", type=float, default=None, help="bytes of GPU memory to use (default 60%%)")
    p.add_argument("--safe-add-n", type=ints, default=[1 << 28])
    p.add_argument("--safe-gemm-sizes", type=ints, default=[8192])
    p.add_argument("--safe-gemm-tile", default="128x256x64", help="BMxBNxBK of the safe/unchecked GEMM pair")
    p.add_argument("--safe-batch-ms", type=float, default=40.0, help="length of one timed chain of launches")
    p.add_argument("--safe-reps", type=int, default=11, help="timed chains per style (alternating)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    q = args.quick
    args.safe_add_n = args.safe_add_n[0]
    args.safe_gemm_tile = tuple(int(v) for v in args.safe_gemm_tile.split("x"))
    args.add_sizes = args.add_sizes or ([1 << 20, 1 << 24, 1 << 28] if q else [1 << s for s in range(20, 29, 2)])
    args.copy_sizes = args.copy_sizes or ([1 << 24, 1 << 28] if q else [1 << 20, 1 << 24, 1 << 28])
    args.gemm_sizes = args.gemm_sizes or ([4096, 8192] if q else [1024, 2048, 4096, 8192, 16384])
    args.gemm_shapes = args.gemm_shapes if args.gemm_shapes is not None else \
        ([(8192, 8192, 1000)] if q else [(8192, 8192, 1000), (3000, 5000, 4096)])
    args.attn_seqs = args.attn_seqs or ([1024, 4096] if q else [1024, 2048, 4096, 8192, 16384])
    args.add_dtypes = args.add_dtypes.split(",")
    args.attn_kernels = [int(x) for x in args.attn_kernels.split(",")]
    args.gemm_dtypes = args.gemm_dtypes.split(",")
    args.gemm_tma = [bool(int(x)) for x in args.gemm_tma.split(",")]
    args.compile_kernels = (args.compile_kernels or ("vec_add,gemm" if q else "vec_add,gemm,attention")).split(",")
    if args.mem_budget is None:
        args.mem_budget = 0.6 * torch.cuda.get_device_properties(0).total_memory
    sections = [s for s in (args.only.split(",") if args.only else SECTIONS)]

    dev = torch.cuda.get_device_name(0)
    import triton
    res = {"device": dev, "capability": list(torch.cuda.get_device_capability(0)), "torch": torch.__version__,
           "triton": triton.__version__, "python": platform.python_version(), "quick": q,
           "argv": sys.argv[1:], "date": time.strftime("%Y-%m-%d %H:%M:%S"), "errors": []}
    print(f"device: {dev}  torch {torch.__version__}  triton {triton.__version__}", flush=True)
    for s in sections:
        print(f"== {s}", flush=True)
        t0 = time.perf_counter()
        try:
            SECTIONS[s](args, res)
        except Exception:  # noqa: BLE001 - keep the other sections' numbers
            traceback.print_exc()
            res["errors"].append(s)
        torch.cuda.empty_cache()
        res.setdefault("section_seconds", {})[s] = time.perf_counter() - t0
        save(res, args, dev, q)  # after every section: a run cut short keeps what it measured
    out = save(res, args, dev, q)
    print(f"\nwrote {out}\n")
    print(table(res))


def save(res, args, dev, quick) -> Path:
    safe = "".join(ch if ch.isalnum() else "_" for ch in dev).strip("_")
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / safe / f"gpu_bench{'-quick' if quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    if os.environ.get("OUT"):  # the device runner's result folder
        (Path(os.environ["OUT"]) / out.name).write_text(json.dumps(res, indent=1))
    return out


if __name__ == "__main__":
    main()
