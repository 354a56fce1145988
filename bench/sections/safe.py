"""``safe``: the safe style (``@ct.entry`` + partitions, checked launches) against the unchecked
style with the same tiles and block order (add 2^28 f32/f16, GEMM 8192³ f16), plus host cost per
launch of both and a profile of the safe path."""
from __future__ import annotations

import math
import statistics
import time

import torch

import safetile as ct
from benchlib import check, launch
from kernels.basic import safe_add, safe_gemm, vec_add
from kernels.gemm import gemm_2d


def bench_safe(args, res):
    """Safe style (@ct.entry + partitions, checked launch) against the unchecked style (@ct.kernel +
    ct.launch) with the same tile configuration and block order. Timed as chains of launches with one
    synchronisation at the end (wall clock; the safe chain is a DeviceOp `then` chain), the two styles
    alternating rep by rep; plus host time per launch of a tiny add and a profile of the safe path."""
    import cProfile
    import io
    import pstats
    from safetile.safe.native import FAST
    from safetile.safe.ownership import OWNERSHIP
    out = {"rows": [], "safe_native": FAST.load(build=True),  # the safe launch's C path, as a warm process has it
           "ownership_lock": type(OWNERSHIP).__name__}  # chosen at import: the C lock once the module is built

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
    rows = (("safe_chain", safe_tiny), ("safe_chain_torch_refs", safe_tiny_torch_refs),
            ("unchecked_chain", unchecked_tiny),
            ("safe_sync_each", safe_tiny_sync_each), ("unchecked_sync_each", unchecked_tiny_sync_each))
    samples: dict[str, list] = {name: [] for name, _ in rows}
    for _ in range(7):  # rows interleaved, so a slow moment of the host treats every row alike
        for name, fn in rows:
            samples[name] += chain_time(fn, 1000, 1)
    for name, v in samples.items():
        host[name + "_us"] = statistics.median(v) * 1e3
    from safetile.safe.launch import prepare
    for name, args_t in (("safe_prepare_us", (st["z"], xs, x2s)), ("safe_prepare_torch_refs_us", (st["z"], x, x2))):
        t0 = time.perf_counter()
        for _ in range(2000):
            prepare(safe_add, args_t)  # the checks only (ownership is checked when taking)
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
