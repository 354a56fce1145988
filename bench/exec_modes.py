"""Execution-mode sweep: N dependent small launches in each DeviceOp execution mode.

Modes (the paper's pipeline sweep): ``sync`` (every launch synchronised), ``chained``
(``then`` chain, one final sync), ``async`` (the same chain awaited once from asyncio),
``graph`` (the chain captured once, then replayed). The kernel is ``z = z * 0.5 + x`` on
one tile of ``--size`` elements, so every launch depends on the previous one. Reports µs
per launch (median of ``--repeat`` runs) next to the natural baseline in the same run:
NumPy on the CPU; on the GPU torch doing the same (``z.mul_(0.5).add_(x)``: op + synchronize each
time, chained with one final synchronize, and a torch CUDA graph); ``ratio`` compares each mode
with its counterpart. Results go to
bench/results/exec_modes_<device>.json. Usage:

    PYTHONPATH=src python bench/exec_modes.py [--device cpu|cuda] [--ns 1,10,100,1000]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import safetile as ct  # noqa: E402


@ct.entry
def step(z: ct.Mut["E", "B"], x: ct.Ref["E", -1]):
    z.store(z.load() * 0.5 + ct.load_tile_like(x, z))


def expected(n: int, x: np.ndarray) -> np.ndarray:
    z = np.zeros_like(x, dtype=np.float64)
    for _ in range(n):
        z = z * 0.5 + x
    return z


def chain(z, x, n: int):
    op = step(z, x)
    for _ in range(n - 1):
        op = op.then(lambda r: step(*r))
    return op


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Sweep:
    def __init__(self, device: str, size: int, dtype):
        self.device, self.size, self.dtype = device, size, dtype
        self.x = ct.rand(size, seed=1, dtype=dtype, device=device).sync().shared()
        self.z = ct.zeros(size, dtype, device=device).sync().partition(size)
        self.loop = asyncio.new_event_loop()
        self.stream = ct.default_pool(device).next()

    def reset(self):
        self.z = ct.memcpy(self.z, np.zeros(self.size, self.dtype.np_dtype)).sync_on(self.stream)

    def check(self, n: int):
        got = self.z.to_numpy().astype(np.float64)
        ref = expected(n, self.x.to_numpy().astype(np.float64))
        tol = 1e-2 if self.dtype is ct.f16 else 1e-5
        assert np.allclose(got, ref, rtol=tol, atol=tol), f"wrong result after {n} launches"

    def sync(self, n: int):
        z, x = self.z, self.x
        for _ in range(n):
            z, x = step(z, x).sync_on(self.stream)
        self.z = z

    def chained(self, n: int):
        self.z, _ = chain(self.z, self.x, n).sync_on(self.stream)

    def async_(self, n: int):
        async def run():
            return await chain(self.z, self.x, n)
        self.z, _ = self.loop.run_until_complete(run())

    def graph_for(self, n: int):
        g = chain(self.z, self.x, n).graph(self.stream)
        self.z = g.value[0]
        return g

    def run_mode(self, mode: str, n: int, repeat: int) -> float:
        if mode == "graph":
            self.reset()
            g = self.graph_for(n)
            g.launch()  # warm
            self.reset()
            g.launch()
            self.check(n)
            return median_time(g.launch, repeat)
        fn = {"sync": self.sync, "chained": self.chained, "async": self.async_}[mode]
        self.reset()
        fn(n)
        self.check(n)
        return median_time(lambda: fn(n), repeat)

    def baseline(self, n: int, repeat: int) -> dict:
        if self.device == "cpu":
            x = self.x.to_numpy()
            z = np.zeros_like(x)

            def run():
                nonlocal z
                for _ in range(n):
                    z = z * np.float32(0.5) + x
            return {"numpy": median_time(run, repeat)}
        import torch
        x = torch.from_numpy(self.x.to_numpy()).to(self.device)
        z = torch.zeros_like(x)

        def eager():
            for _ in range(n):
                z.mul_(0.5).add_(x)
            torch.cuda.synchronize()

        def each():
            for _ in range(n):
                z.mul_(0.5).add_(x)
                torch.cuda.synchronize()
        eager()
        each()
        out = {"torch_eager": median_time(eager, repeat), "torch_sync": median_time(each, repeat)}
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            eager()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(n):
                z.mul_(0.5).add_(x)

        def replay():
            g.replay()
            torch.cuda.synchronize()
        replay()
        out["torch_graph"] = median_time(replay, repeat)
        return out


def device_name(device: str) -> str:
    if device == "cpu":
        return f"CPU ({platform.processor() or platform.machine()})"
    import torch
    return torch.cuda.get_device_name(torch.device(device))


def versions() -> dict:
    out = {"python": platform.python_version(), "numpy": np.__version__, "safetile": ct.__version__}
    for mod in ("torch", "triton"):
        try:
            out[mod] = __import__(mod).__version__
        except ImportError:
            pass
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--ns", default="1,10,100,1000")
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--dtype", default=None, help="element type (default f32 on CPU, f16 on GPU)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--modes", default="sync,chained,async,graph")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    device = "cuda:0" if args.device == "cuda" else args.device
    dtype = ct.dtypes.as_dtype(args.dtype or ("float32" if device == "cpu" else "float16"))
    ns = [int(n) for n in args.ns.split(",")]
    modes = args.modes.split(",")
    sweep = Sweep(device, args.size, dtype)
    rows = []
    for n in ns:
        row = {"n": n}
        for mode in modes:
            t = sweep.run_mode(mode, n, args.repeat)
            row[mode] = {"total_us": t * 1e6, "us_per_launch": t * 1e6 / n}
        for name, t in sweep.baseline(n, args.repeat).items():
            row[name] = {"total_us": t * 1e6, "us_per_launch": t * 1e6 / n}
        # each mode against its counterpart in the same run: per-launch sync against torch's op +
        # synchronize, the others against torch's chained ops (NumPy on the CPU)
        bases = {m: "numpy" for m in modes} if device == "cpu" else \
            {m: ("torch_sync" if m == "sync" else "torch_graph" if m == "graph" else "torch_eager") for m in modes}
        row["ratio"] = {m: row[m]["us_per_launch"] / row[bases[m]]["us_per_launch"] for m in modes}
        row["ratio_baseline"] = bases
        rows.append(row)
        cells = "  ".join(f"{k} {row[k]['us_per_launch']:9.1f}" for k in row if isinstance(row[k], dict)
                          and "us_per_launch" in row[k])
        print(f"N={n:5d}  µs/launch:  {cells}")
    result = {
        "benchmark": "exec_modes", "device": device_name(device), "device_kind": device,
        "versions": versions(), "size": args.size, "dtype": dtype.name, "repeat": args.repeat,
        "kernel": "z = z * 0.5 + x (one tile, dependent launches)", "results": rows,
    }
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "results" / \
        f"exec_modes_{'cpu' if device == 'cpu' else 'gpu'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
