"""Host cost of one launch, measured without a GPU.

Method: the launch path is run exactly as on a GPU host up to the Triton backend's
per-launch call, ``Specialization.__call__`` (argument packing + Triton's C launcher),
which is replaced by a no-op. ``SAFETILE_BACKEND=triton`` makes ``ct.launch`` take the
Triton route on CPU torch tensors (there is no CUDA here), so everything before the
backend call -- argument checks, grid, specs, specialisation lookup, backend-cache lookup
-- runs as it would on CUDA tensors. Not measured: the backend's own part (~6 us on the H200
host, bench/NOTES.md run 2) and the device. ``torch add_`` on tiny CPU tensors is printed as a
yardstick for the host cost of an eager element-wise op on this machine. "safe graph replay
bookkeeping" replays a captured 1000-launch chain with its step list emptied: the Python work a GPU
replay does besides cudaGraphLaunch + synchronize (conflict check, in-flight registration).

    PYTHONPATH=src python bench/launch_overhead.py [--json out.json]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time

os.environ["SAFETILE_BACKEND"] = "triton"
os.environ.pop("TRITON_INTERPRET", None)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import safetile as ct  # noqa: E402
from safetile.backends.triton import launcher  # noqa: E402

launcher.Specialization.__call__ = lambda self, stream, grid3, args: None  # the cut: no backend work


@ct.kernel
def vec_add(x, y, z, n: int):
    bid = ct.bid(0)
    t = ct.load(x, (bid,), (128,)) + ct.load(y, (bid,), (128,))
    ct.store(z, (bid,), t)


@ct.kernel
def scaled(x, z, alpha: float, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(z, (bid,), ct.load(x, (bid,), (TILE,)) * alpha)


@ct.entry
def safe_add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


def per_call_us(fn, n: int, reps: int = 7) -> float:
    """Median over ``reps`` of the mean wall time of ``n`` calls, in microseconds."""
    for _ in range(min(n, 200)):
        fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(out)


@ct.kernel
def add4(x, y, z, TILE: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(z, (b,), ct.load(x, (b,), (TILE,)) + ct.load(y, (b,), (TILE,)))


class _StubVariant:
    prefix = ("spec",)
    call = staticmethod(lambda *a: None)


def _one_pass(x, z, n: int) -> dict[str, float]:
    saved = launcher._cuda_get_device, launcher._current_device, launcher._get_stream
    launcher._cuda_get_device = launcher._current_device = lambda: -1  # CPU tensors report device -1
    launcher._get_stream = lambda device: 0
    try:
        launcher.learn_fast(add4, _StubVariant(), (1, 1, 1), (x, x, z, 1024))
        launcher.learn_fast(vec_add, _StubVariant(), (1, 1, 1), (x, x, z, 1024))
        return {"ct.launch one-pass add4(x, x, z, 1024), launcher stubbed":
                per_call_us(lambda: ct.launch(None, (1,), add4, (x, x, z, 1024)), n),
                "ct.launch one-pass vec_add(x, x, z, 1024), launcher stubbed":
                per_call_us(lambda: ct.launch(None, (1,), vec_add, (x, x, z, 1024)), n),
                "Python no-op call, 13 arguments (the stub's own cost)":
                per_call_us(lambda: _StubVariant.call(1, 1, 1, 0, "spec", 1, 1, 1, 1, 1, 1, 1, 1), n)}
    finally:
        launcher._cuda_get_device, launcher._current_device, launcher._get_stream = saved


def _chain_vs_unchecked(x, z, st: dict, sx, sy, reps: int, k: int = 1000) -> dict[str, float]:
    """Issue 9's "no regression" comparison with the same stub behind both styles: ``k`` dependent
    safe launches (``op.then(lambda v: safe_add(*v))``, one ``sync()``) against ``k`` unchecked
    ``ct.launch`` calls on the one-pass path, both ending in the stub launcher call (the safe plan's
    bound launch is a ``launcher.Bound`` of the stub, as a GPU plan's is of the lean launcher). Rows
    interleaved, min over ``reps`` of CPU time per launch. The ratio on a GPU host is
    (safe + L) / (unchecked + L), L the C launcher's own cost (~3.8-4 us on the H100 host,
    results/NVIDIA_H100_80GB_HBM3/session5-check/diag.txt): printed for L = 4."""
    from safetile.safe.launch import prepare
    saved = launcher._cuda_get_device, launcher._current_device, launcher._get_stream
    launcher._cuda_get_device = launcher._current_device = lambda: -1  # CPU tensors report device -1
    launcher._get_stream = lambda device: 0
    plan = prepare(safe_add, (st["z"], sx, sy))
    plan.bound = launcher.Bound(_StubVariant(), (1, 1, 1), tuple(range(9)), -1)  # type: ignore[arg-type]
    try:
        launcher.learn_fast(add4, _StubVariant(), (1, 1, 1), (x, x, z, 1024))

        def safe_chain():
            op = safe_add(st["z"], sx, sy)
            for _ in range(k - 1):
                op = op.then(lambda v: safe_add(*v))
            st["z"] = op.sync()[0]

        def unchecked():
            for _ in range(k):
                ct.launch(None, (1,), add4, (x, x, z, 1024))

        safe, unch = [], []
        for f in (safe_chain, unchecked):
            f()
        for _ in range(reps):
            for f, out in ((safe_chain, safe), (unchecked, unch)):
                t0 = time.process_time()
                f()
                out.append((time.process_time() - t0) / k * 1e6)
    finally:
        plan.bound = None
        launcher._cuda_get_device, launcher._current_device, launcher._get_stream = saved
    s, u = min(safe), min(unch)
    return {f"issue 9: safe then-chain per launch, stub launcher (reader: {type(add4.gpu_fast).__name__})": s,
            "issue 9: unchecked ct.launch loop per launch, stub launcher": u,
            "issue 9: ratio safe/unchecked, stubs (x)": s / u,
            "issue 9: ratio with a 4 us C launcher, (safe+4)/(unchecked+4) (x)": (s + 4) / (u + 4)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--json")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    n = a.n
    res: dict[str, float] = {}
    from safetile.backends.triton import lean
    lean._loader.get(build=True)  # ct.launch's C reader where a C compiler is at hand, as on a GPU host
    from safetile.safe.native import FAST
    res["safe launch C path loaded (1 = yes)"] = float(FAST.load(build=True))  # as a warm process has it

    x = torch.randn(1024)
    y = torch.randn(1024)
    z = torch.empty(1024)
    xn, yn, zn = x.numpy(), y.numpy(), z.numpy()
    k_tiny = lambda: ct.launch(None, (8,), vec_add, (x, y, z, 1024))  # noqa: E731
    k_const = lambda: ct.launch(None, (8,), scaled, (x, z, 2.0, 128))  # noqa: E731
    k_numpy = lambda: ct.launch(None, (8,), vec_add, (xn, yn, zn, 1024))  # noqa: E731
    k_int_grid = lambda: ct.launch(None, 8, vec_add, (x, y, z, 1024))  # noqa: E731
    res["ct.launch torch (4 args)"] = per_call_us(k_tiny, n)
    res["ct.launch torch + Constant"] = per_call_us(k_const, n)
    res["ct.launch numpy (4 args)"] = per_call_us(k_numpy, n)
    res["ct.launch grid=int"] = per_call_us(k_int_grid, n)

    # ct.launch's one-pass path (learned after a first CUDA launch; here taught directly, with
    # CPU tensors standing for CUDA ones and a Python no-op standing for the C launcher)
    res.update(_one_pass(x, z, n))

    # safe style: a launch built, validated, moved in, run (backend stubbed) and given back
    from safetile.safe.launch import prepare
    st = {"z": ct.from_dlpack(torch.empty(1024)).partition(128)}
    sx, sy = ct.from_dlpack(x).shared(), ct.from_dlpack(y).shared()
    tx, ty = torch.randn(1024), torch.randn(1024)

    def safe_sync_each():
        st["z"] = safe_add(st["z"], sx, sy).sync()[0]

    def safe_sync_each_torch():
        st["z"] = safe_add(st["z"], tx, ty).sync()[0]

    def safe_prepare():
        prepare(safe_add, (st["z"], sx, sy))

    def safe_chain(k=100):
        op = safe_add(st["z"], sx, sy)
        for _ in range(k - 1):
            op = op.then(lambda v: safe_add(*v))
        st["z"] = op.sync()[0]

    def safe_graph(k):
        op = safe_add(st["z"], sx, sy)
        for _ in range(k - 1):
            op = op.then(lambda v: safe_add(*v))
        g = op.graph()
        st["z"] = g.value[0]
        return g

    g1000 = safe_graph(1000)
    g1000.launch()
    steps = g1000._steps
    g1000._steps = []  # what a GPU replay does besides cudaGraphLaunch + synchronize
    res["safe graph replay bookkeeping, N=1000 (per replay)"] = per_call_us(g1000.launch, max(20, n // 40))
    g1000._steps = steps

    res["safe prepare (validation only)"] = per_call_us(safe_prepare, n // 2)
    res["safe launch+sync, Shared inputs"] = per_call_us(safe_sync_each, n // 4)
    res["safe launch+sync, torch inputs"] = per_call_us(safe_sync_each_torch, n // 4)
    res["safe then-chain, per launch"] = per_call_us(safe_chain, max(1, n // 400)) / 100
    res.update(_chain_vs_unchecked(x, z, st, sx, sy, max(10, n // 1000)))

    # yardsticks
    res["torch x.add_(y), 1024 f32 CPU"] = per_call_us(lambda: x.add_(y), n)
    res["numpy np.add(x, y, out=z), 1024"] = per_call_us(lambda: np.add(xn, yn, out=zn), n)

    w = max(len(k) for k in res)
    for k, v in res.items():
        print(f"{k:<{w}}  {v:8.2f}" + ("" if k.endswith("(x)") else " us"))
    if a.profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20000):
            k_const()
        prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(15)
        print(s.getvalue())
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"python": sys.version.split()[0], "torch": torch.__version__, "us": res}, f, indent=1)


if __name__ == "__main__":
    main()
