"""Does split-K lift tile-starved fp16/bf16 GEMMs on an H200 once launch cost is out of the way?

safetile's GEMM reaches 0.65-0.70x cuBLAS at 1024^3 in CUDA graphs (0.58-0.60x at 1024x1024x4096):
128x128 tiles give 64 blocks for 132 SMs, and smaller tiles did not help, since a tile's time is
its K pipeline's fill and drain. This probe, in raw Triton (not safetile's compiler), measures
what splitting K buys before the code generator learns it. C = A @ B, A (M x K) and B (K x N)
row-major, fp32 accumulation, C in the inputs' dtype. Variants:

  plain          one block per C tile, the whole K loop (the baseline);
  splitk_ws      grid (tiles, S) stores fp32 partials to a workspace [S, M, N]; a second kernel
                 sums them and casts (two launches);
  splitk_atomic  grid (tiles, S) atomically adds fp32 partials into a workspace [M, N] zeroed by a
                 memset, then a cast kernel (three graph nodes);
  splitk_fixup   one kernel: each (tile, split) block stores its partial, bumps the tile's counter,
                 and the last arriver sums the others' partials with its own, stores C and resets
                 the counter (see ``fixup_kernel`` on memory ordering).

Each candidate (tile configuration, and S for the split variants) is checked against torch.matmul
in fp32 (run twice, C and the workspace poisoned with NaN before each run, so the fixup's counter
reset and the atomic variant's memset are exercised; the atomic sums are not deterministic), then
timed in a CUDA graph of ``--reps-in-graph`` back-to-back invocations (median over ``--reps``
replays, CUDA events), as is torch.matmul (cuBLAS) in the same process. The inputs stay in L2 for
every variant and for cuBLAS alike. All candidates go to ``--out`` as JSON; the table comes last.

    python bench/splitk_probe.py [--shapes 1024x1024x1024,1024x1024x4096] [--dtypes fp16,bf16]
    python bench/splitk_probe.py --configs 128x128x64x8x3,128x64x64x4x4 --splits 2,4 --out x.json
    TRITON_INTERPRET=1 python bench/splitk_probe.py --check-only --shapes 64x96x256,40x72x200 --configs 32x32x32

``--configs`` entries are BMxBNxBK[xWARPSxSTAGES] (4 warps, 3 stages when left out). ``--check-only``
runs only those checks, without timing or graphs (on the CPU under TRITON_INTERPRET=1 when there is
no GPU), and writes no JSON. Offsets are int32: fine for these shapes, not for huge S * M * N.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Callable

import torch
import triton
import triton.language as tl

CONFIGS = [(128, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4)]
VARIANTS = ("plain", "splitk_ws", "splitk_atomic", "splitk_fixup")
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
GROUP = 8
REDUCE_BLOCK = 1024
Config = tuple[int, int, int, int, int]
INTERPRETED = tl.constexpr(os.environ.get("TRITON_INTERPRET") == "1")


@triton.jit
def _partial(A, B, M, N, K, sam, sak, sbk, sbn, tile, split, tiles_per_split,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """fp32 product of C tile ``tile`` (GROUP_M-row bands) over K tiles [split, split + 1) * tiles_per_split,
    with the tile's row and column offsets and its in-bounds mask."""
    grid_m = tl.cdiv(M, BM)
    width = GROUP_M * tl.cdiv(N, BN)
    first_m = (tile // width) * GROUP_M
    rows = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (tile % width) % rows
    pid_n = (tile % width) // rows
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    mask_m, mask_n = offs_m < M, offs_n < N
    kt_lo = split * tiles_per_split
    kt_hi = tl.minimum(kt_lo + tiles_per_split, tl.cdiv(K, BK))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in range(kt_lo, kt_hi):
        ks = kt * BK + offs_k
        mask_k = ks < K
        a = tl.load(A + offs_m[:, None] * sam + ks[None, :] * sak, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(B + ks[:, None] * sbk + offs_n[None, :] * sbn, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        if INTERPRETED:  # the interpreter multiplies bfloat16 bit patterns as integers: widen first
            a, b = a.to(tl.float32), b.to(tl.float32)
        acc = tl.dot(a, b, acc)
    return acc, offs_m, offs_n, mask_m[:, None] & mask_n[None, :]


@triton.jit
def plain_kernel(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    acc, offs_m, offs_n, mask = _partial(A, B, M, N, K, sam, sak, sbk, sbn, tl.program_id(0), 0, tl.cdiv(K, BK),
                                         BM, BN, BK, GROUP_M)
    tl.store(C + offs_m[:, None] * scm + offs_n[None, :] * scn, acc.to(C.dtype.element_ty), mask=mask)


@triton.jit
def partial_kernel(A, B, W, M, N, K, sam, sak, sbk, sbn, tiles_per_split,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                   ATOMIC: tl.constexpr):
    """Split ``program_id(1)``'s partial: added atomically into W [M, N] (ATOMIC), else stored to W[split]."""
    split = tl.program_id(1)
    acc, offs_m, offs_n, mask = _partial(A, B, M, N, K, sam, sak, sbk, sbn, tl.program_id(0), split,
                                         tiles_per_split, BM, BN, BK, GROUP_M)
    mn = offs_m[:, None] * N + offs_n[None, :]
    if ATOMIC:
        tl.atomic_add(W + mn, acc, mask=mask, sem="relaxed")
    else:
        tl.store(W + split * M * N + mn, acc, mask=mask)


@triton.jit
def reduce_kernel(W, C, MN, S, BLOCK: tl.constexpr):
    """C = sum over s < S of W[s] (W fp32 [S, M, N], C [M, N], both contiguous), cast to C's dtype."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(S):
        acc += tl.load(W + s * MN + offs, mask=mask, other=0.0)
    tl.store(C + offs, acc.to(C.dtype.element_ty), mask=mask)


@triton.jit
def fixup_kernel(A, B, C, W, CNT, M, N, K, sam, sak, sbk, sbn, scm, scn, tiles_per_split, S,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """Split-K in one launch: the last of a tile's S blocks to finish reduces it.

    Memory ordering (the PTX model; the pattern of CUTLASS's semaphore / generic barrier):
    1. Every thread stores its part of the fp32 partial to W[split] (weak stores).
    2. ``tl.debug_barrier()`` (bar.sync) orders all warps' stores before what thread 0 does next.
       It is needed: Triton lowers the scalar atomic below to one thread, and its barrier pass only
       guards shared memory, so nothing else makes the other warps' global stores precede it.
    3. ``tl.atomic_add(..., sem="acq_rel")`` on a scalar: one thread issues atom.acq_rel.gpu. The
       release half publishes this block's stores (cumulative through the bar.sync, at gpu scope);
       the acquire half, in the last arriver (old count == S - 1), sees every earlier arriver's
       release in the counter's release sequence, so all S - 1 other partials happen-before it.
    4. Triton broadcasts the scalar result through shared memory behind a bar.sync, which orders
       thread 0's acquire before every thread's loads of W; the loads use ``.cg`` (L2, not the
       non-coherent L1) as belt and braces; the memory model already requires the fresh values.
    5. The counter is reset with a plain store: all S increments have happened by then and nobody
       reads it again in this launch; the next launch (graph replay) sees 0 across the kernel
       boundary. No block waits on another, so there is no co-residency requirement or deadlock.
    The sm_90 PTX (cross-compiled on a CPU) has that order: st.global of W, bar.sync, one thread's
    atom.global.gpu.acq_rel.add.u32, bar.sync, then ld.global.cg of W. The interpreter runs blocks
    one after another, so the CPU check proves the arithmetic and the reset, not the ordering.
    """
    tile, split = tl.program_id(0), tl.program_id(1)
    acc, offs_m, offs_n, mask = _partial(A, B, M, N, K, sam, sak, sbk, sbn, tile, split, tiles_per_split,
                                         BM, BN, BK, GROUP_M)
    mn = offs_m[:, None] * N + offs_n[None, :]
    tl.store(W + split * M * N + mn, acc, mask=mask)
    tl.debug_barrier()
    count = tl.atomic_add(CNT + tile, 1, sem="acq_rel", scope="gpu")
    if count == S - 1:
        for s in range(S):
            acc += tl.load(W + s * M * N + mn, mask=mask & (s != split), other=0.0, cache_modifier=".cg")
        tl.store(C + offs_m[:, None] * scm + offs_n[None, :] * scn, acc.to(C.dtype.element_ty), mask=mask)
        tl.store(CNT + tile, 0)


def make_call(variant: str, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, cfg: Config,
              splits: int) -> tuple[Callable[[], None], dict[str, torch.Tensor]]:
    """One invocation of ``variant`` (all its kernels and memsets) and the buffers it owns."""
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk, warps, stages = cfg
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    per_split = triton.cdiv(triton.cdiv(k, bk), splits)
    opts = {"num_warps": warps, "num_stages": stages}
    ab = (a, b, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1))
    tile_args = (bm, bn, bk, GROUP)
    red_grid = (triton.cdiv(m * n, REDUCE_BLOCK),)
    if variant == "plain":
        return lambda: plain_kernel[(tiles,)](*ab[:2], c, *ab[2:], *c.stride(), *tile_args, **opts), {}
    if variant == "splitk_fixup":
        w = torch.empty(splits, m, n, device=a.device, dtype=torch.float32)
        cnt = torch.zeros(tiles, device=a.device, dtype=torch.int32)
        return (lambda: fixup_kernel[(tiles, splits)](*ab[:2], c, w, cnt, *ab[2:], *c.stride(), per_split, splits,
                                                      *tile_args, **opts)), {"ws": w, "counters": cnt}
    atomic = variant == "splitk_atomic"
    w = torch.empty(1 if atomic else splits, m, n, device=a.device, dtype=torch.float32)

    def call() -> None:
        if atomic:
            w.zero_()
        partial_kernel[(tiles, splits)](*ab[:2], w, *ab[2:], per_split, *tile_args, atomic, **opts)
        reduce_kernel[red_grid](w, c, m * n, w.shape[0], REDUCE_BLOCK, num_warps=4)
    return call, {"ws": w}


def candidates(k: int, configs: list[Config], splits: list[int]) -> list[tuple[str, Config, int]]:
    """(variant, config, S) to try; a split variant only with S where each split has >= 2 K tiles."""
    out = [("plain", cfg, 1) for cfg in configs]
    for variant in VARIANTS[1:]:
        out += [(variant, cfg, s) for cfg in configs for s in splits if k >= 2 * cfg[2] * s]
    return out


def check(call: Callable[[], None], c: torch.Tensor, ref: torch.Tensor, bufs: dict[str, torch.Tensor]) -> dict:
    """Run twice, C and any workspace poisoned with NaN before each; max abs error relative to max |ref|."""
    errs = []
    for _ in range(2):
        c.fill_(float("nan"))
        if "ws" in bufs:
            bufs["ws"].fill_(float("nan"))
        call()
        errs.append(((c.float() - ref).abs().max() / ref.abs().max()).item())
    err = max(errs) if all(e == e for e in errs) else float("nan")
    res = {"rel_max_err": err, "ok": err < 2e-2}
    if "counters" in bufs:
        res["counters_reset"] = not bool(bufs["counters"].any())
        res["ok"] = res["ok"] and res["counters_reset"]
    return res


def graph_ms(call: Callable[[], None], reps: int, reps_in_graph: int) -> float:
    """Median over ``reps`` replays of a CUDA graph of ``reps_in_graph`` calls, per call (ms)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps_in_graph):
            call()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps_in_graph)
    return statistics.median(times)


def parse_config(text: str) -> Config:
    f = [int(x) for x in text.split("x")]
    return (*f, 4, 3) if len(f) == 3 else tuple(f)  # type: ignore[return-value]


def label(cfg: Config, s: int) -> str:
    return f"{cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[3]} s{cfg[4]}" + (f" S={s}" if s > 1 else "")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="1024x1024x1024,1024x1024x4096,2048x2048x1024,512x512x8192,2048x2048x2048")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--configs", default=None, help="comma list of BMxBNxBK[xWARPSxSTAGES] (default CONFIGS)")
    ap.add_argument("--splits", default="2,4,8")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--reps-in-graph", type=int, default=20)
    ap.add_argument("--check-only", action="store_true", help="check every candidate, no timing (CPU interpreter)")
    ap.add_argument("--out", default="bench/results/splitk_probe.json")
    a = ap.parse_args()
    configs = [parse_config(x) for x in a.configs.split(",")] if a.configs else CONFIGS
    splits = [int(x) for x in a.splits.split(",")]
    if INTERPRETED:  # NumPy 2 breaks the interpreter's run-time loop bounds
        from safetile.backends.triton import interp
        interp.install()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    rows: list[dict] = []
    for shape in a.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        flop = 2.0 * m * n * k
        for dname in a.dtypes.split(","):
            dtype = DTYPES[dname]
            x, y = torch.randn(m, k, device=device, dtype=dtype), torch.randn(k, n, device=device, dtype=dtype)
            c = torch.empty(m, n, device=device, dtype=dtype)
            ref = x.float() @ y.float()
            base = {"shape": shape, "dtype": dname}
            t_torch = None
            if not a.check_only:
                c_torch = torch.empty_like(c)
                t_torch = graph_ms(lambda x=x, y=y, o=c_torch: torch.matmul(x, y, out=o), a.reps, a.reps_in_graph)
                rows.append(base | {"variant": "cublas", "ms": t_torch, "TFLOPs": flop / t_torch / 1e9})
            for variant, cfg, s in candidates(k, configs, splits):
                row = base | {"variant": variant, "config": label(cfg, s), "splits": s}
                try:
                    call, bufs = make_call(variant, x, y, c, cfg, s)
                    row |= check(call, c, ref, bufs)
                    if row["ok"] and not a.check_only:
                        t = graph_ms(call, a.reps, a.reps_in_graph)
                        row |= {"ms": t, "TFLOPs": flop / t / 1e9, "ratio": t_torch / t}
                except Exception as e:  # noqa: BLE001 - keep the other candidates' numbers
                    row |= {"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
                rows.append(row)
                status = "ok" if row["ok"] else f"FAILED {row.get('error', '')}"
                timing = f"{row['TFLOPs']:6.1f} TFLOP/s ratio {row['ratio']:.3f}" if "ms" in row else ""
                print(f"{shape:16s} {dname} {variant:13s} {row['config']:26s} err {row.get('rel_max_err', -1):.1e} "
                      f"{status} {timing}", flush=True)
    fails = sum(r.get("ok") is False for r in rows)
    if not a.check_only:
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "args": vars(a), "rows": rows}, f, indent=1)
        print(f"wrote {a.out}")
    print(f"\n{len(rows)} rows, {fails} failed" + (" (check only)" if a.check_only else ""))
    print_table(rows, a.check_only)
    if fails:
        raise SystemExit(1)


def print_table(rows: list[dict], check_only: bool) -> None:
    """Per shape and dtype: cuBLAS TFLOP/s and each variant's best candidate (TFLOP/s, cuBLAS time /
    its time); with ``check_only``, the worst error and each variant's passing candidates instead."""
    print(f"{'shape':16s} {'dtype':5s} {'worst err' if check_only else 'cuBLAS TF/s':>11s}  "
          + "  ".join(f"{v:>34s}" for v in VARIANTS))
    for key in dict.fromkeys((r["shape"], r["dtype"]) for r in rows):
        mine = [r for r in rows if (r["shape"], r["dtype"]) == key]
        cells = []
        for v in VARIANTS:
            cands = [r for r in mine if r["variant"] == v]
            timed = [r for r in cands if "ms" in r]
            if check_only:
                cells.append(f"{sum(r['ok'] for r in cands)}/{len(cands)} ok".rjust(34))
            elif timed:
                r = min(timed, key=lambda r: r["ms"])
                cells.append(f"{r['config']} {r['TFLOPs']:5.0f} {r['ratio']:.2f}x".rjust(34))
            else:
                cells.append(f"{'-':>34s}")
        if check_only:
            lead = f"{max(r.get('rel_max_err', float('nan')) for r in mine):11.1e}"
        else:
            lead = "".join(f"{r['TFLOPs']:11.1f}" for r in mine if r["variant"] == "cublas")
        print(f"{key[0]:16s} {key[1]:5s} {lead}  " + "  ".join(cells))

if __name__ == "__main__":
    main()
