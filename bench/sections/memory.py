"""Memory-bound sections: device-to-device copy, element-wise add, softmax / RMSNorm / LayerNorm rows.
safetile and torch timed in alternating rounds (``benchlib.confirmed``), as everywhere in the benchmark."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from benchlib import check, confirmed, copies_for, launch, time_graph_ms
from kernels.basic import copy_kernel, layernorm, rmsnorm, softmax, vec_add

import safetile as ct


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
        grid = (ct.cdiv(n, args.tile),)
        t_st, t_torch = confirmed([lambda s=s, d=d, grid=grid: launch(grid, copy_kernel, (s, d, args.tile))
                                   for s, d in zip(srcs, dsts)],
                                  [lambda s=s, d=d: d.copy_(s) for s, d in zip(srcs, dsts)], args.confirm_rounds,
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
            st_calls = [lambda s=s, grid=grid: launch(grid, vec_add, (s[0], s[1], s[2], args.tile)) for s in sets]
            t_st, t_torch = confirmed(st_calls, torch_calls, args.confirm_rounds, args.reps)
            g_st, g_torch = confirmed(st_calls, torch_calls, args.confirm_rounds, args.reps, time_graph_ms)
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


def _row_bench(name, args, res, rows_out, make, run_st, run_torch, nbytes_fn, tol):
    for n in args.norm_hidden if name != "softmax" else args.softmax_widths:
        m = args.rows if name != "softmax" else max(1, args.softmax_elems // n)
        inputs = make(m, n)
        out = run_st(inputs, n)
        check(f"{name} {m}x{n}", out, run_torch(inputs), tol, tol, res)
        nbytes = nbytes_fn(m, n)
        k = copies_for(nbytes, args.mem_budget)
        sets = [inputs] + [make(m, n) for _ in range(k - 1)]
        t_st, t_torch = confirmed([lambda s=s, n=n: run_st(s, n) for s in sets],
                                  [lambda s=s: run_torch(s) for s in sets], args.confirm_rounds, args.reps)
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
