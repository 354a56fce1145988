"""Shared by the benchmark sections: timing with CUDA events, correctness checks, input
rotation past L2, geometric means, and the plots written next to each run's JSON."""
from __future__ import annotations

import math
import statistics
from pathlib import Path

import torch

import safetile as ct


def l2_bytes() -> int:
    try:
        return torch.cuda.get_device_properties(0).L2_cache_size
    except Exception:  # noqa: BLE001
        return 50 << 20


def copies_for(nbytes: int, budget: float) -> int:
    """How many input copies to rotate through: enough to exceed 2x L2, within a memory budget."""
    want = math.ceil(2 * l2_bytes() / max(nbytes, 1)) + 1
    return max(1, min(want, 8, int(budget // max(nbytes, 1))))


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


def confirmed(st, ref, rounds: int, reps: int, timer=None) -> tuple[float, float]:
    """(``st`` ms, ``ref`` ms): medians over ``rounds`` rounds timing the two in turn with ``timer``
    (``time_ms`` when None), the first in each round alternating; each side is a call or a list of
    calls the timer rotates through. A kernel picked as the fastest of several candidates, each
    timed right after its compile on a GPU that idled meanwhile, reads 10-14 % faster than on a
    busy GPU (an H200 under load clocks down; rest_probe.py, bench/NOTES.md session 18): the ratios
    reported come from these rounds, both timed alike."""
    timer = timer or time_ms
    ts, tr = [], []
    for r in range(rounds):
        pair = ((ts, st), (tr, ref)) if r % 2 == 0 else ((tr, ref), (ts, st))
        for out, call in pair:
            out.append(timer(call if isinstance(call, list) else [call], reps))
    return statistics.median(ts), statistics.median(tr)


def in_turn(calls: dict, rounds: int, reps: int, rng) -> dict[str, list[float]]:
    """Each of ``calls`` (name -> the calls ``time_ms`` rotates through) timed once per round, in a
    new order each round (``rng.shuffle``): every kernel meets the GPU in every state the others
    leave it in. Returns each name's readings (ms), to take medians of."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            samples[name].append(time_ms(calls[name], reps))
    return samples


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


def check(name, got, ref, rtol, atol, res) -> bool:
    """Record whether ``got`` matches ``ref`` (allclose, plus max-abs and relative L2 errors)."""
    g, r = got.float(), ref.float()
    ok = bool(torch.allclose(g, r, rtol=rtol, atol=atol)) and not bool(torch.isnan(g).any())
    err = (g - r).abs().max().item()
    rel = ((g - r).norm() / r.norm().clamp_min(1e-30)).item()
    res.setdefault("checks", []).append({"name": name, "ok": ok, "max_abs_err": err, "rel_l2_err": rel})
    if not ok:
        print(f"  !! correctness check FAILED for {name}: max abs err {err:.3g}, rel L2 {rel:.3g}", flush=True)
    return ok


def geomean(xs) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def sdpa_backend_name(fn) -> str:
    """Which kernels ``fn`` (an SDPA call) runs, from one profiled call: cudnn / flash / efficient / math."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        names = " ".join(e.key.lower() for e in prof.key_averages())
    except Exception as e:  # noqa: BLE001 - the profiler is optional
        return f"unknown ({type(e).__name__})"
    for tag, name in (("cudnn", "cudnn"), ("flash", "flash"), ("fmha", "efficient"), ("mem_eff", "efficient")):
        if tag in names:
            return name
    return "math/other"


# ------------------------------------------------------------------------------------ plots

def _series(res):
    """(section, x label, [(label, [(x, ratio)])]) for every sweep in a result."""
    out = []
    for sec in ("copy", "add"):
        rows = res.get(sec) or []
        groups: dict[str, list] = {}
        for r in rows:
            groups.setdefault(r.get("dtype", "float32"), []).append((r["n"], r["ratio"]))
        if groups:
            out.append((sec, "elements", list(groups.items())))
    for sec in ("softmax", "rmsnorm", "layernorm"):
        rows = res.get(sec) or []
        if rows:
            out.append((sec, "row width", [("ratio", [(r["n"], r["ratio"]) for r in rows])]))
    if res.get("gemm"):
        groups = {}
        for r in res["gemm"]:
            groups.setdefault(r["dtype"], []).append(((r["m"] * r["n"] * r["k"]) ** (1 / 3), r["ratio"]))
        out.append(("gemm", "(M·N·K)^(1/3)", list(groups.items())))
    if res.get("attention"):
        groups = {}
        for r in res["attention"]:
            key = f"{r.get('pass', 'fwd')} d={r['d']}{' causal' if r['causal'] else ''}"
            groups.setdefault(key, []).append((r["seq"], r["ratio"]))
        out.append(("attention", "sequence length", list(groups.items())))
    if res.get("others"):
        groups = {}
        for r in res["others"]:
            groups.setdefault(r["kernel"], []).append((r["size"], r["ratio"]))
        out.append(("others", "bytes moved (or FLOP for products)", list(groups.items())))
    if res.get("samples"):
        groups = {}
        for r in res["samples"]:
            groups.setdefault(r["sample"], []).append((r["size"], r["ratio"]))
        out.append(("samples", "bytes moved (or FLOP for products)", list(groups.items())))
    return out


def write_plots(res, json_path: Path) -> list[Path]:
    """One PNG per sweep next to ``json_path``: time ratio (torch / safetile, higher is better)
    against problem size, with 1.0 marked. Skipped quietly when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    for sec, xlabel, groups in _series(res):
        groups = [(label, sorted(p for p in pts if p[0] > 0 and math.isfinite(p[0]) and math.isfinite(p[1])))
                  for label, pts in groups]
        groups = [(label, pts) for label, pts in groups if pts]
        if not groups:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, pts in groups:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("torch time / safetile time")
        ax.set_title(f"{sec} — {res.get('device', '')}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = json_path.with_name(f"{json_path.stem}-{sec}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def unpin_ws_stages():
    """An experiment's switch: warp-specialised kernels keep their hinted pipeline depth (the
    launcher pins loops with chained products, attention's, at 2 after 3-stage NaNs on an H100)."""
    from safetile.backends.triton import launcher
    pinned = launcher.compile_options

    def as_hinted(fn, gen, facts):
        opts = pinned(fn, gen, facts)
        if facts.warp_specialize and fn.hints.get("num_stages"):
            opts["num_stages"] = fn.hints["num_stages"]
        return opts
    launcher.compile_options = as_hinted


def ptxas_usage(ptx: str, arch: str = "sm_90a") -> list[str]:
    """ptxas's register, stack and spill report for ``ptx`` (Triton's bundled ptxas; no GPU
    needed): the lines a Gluon probe's compile-only check prints."""
    import subprocess
    import tempfile

    import triton
    ptxas = triton.backends.nvidia.compiler.get_ptxas(int(arch[3:5])).path
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "kernel.ptx")
        src.write_text(ptx)
        r = subprocess.run([ptxas, f"-arch={arch}", "-v", str(src), "-o", str(src.with_suffix(".cubin"))],
                           capture_output=True, text=True)
    return [ln.strip() for ln in r.stderr.splitlines() if "spill" in ln or "Used" in ln]
