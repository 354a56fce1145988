"""Host time of one ``ct.launch`` of a compiled kernel, taken apart, next to torch ops (GPU).

For each argument pattern (the README's add4(x, x, z, 1024): a tensor passed twice and a
Constant; tiny(x, 128); axpy(x, z, 0.5, n, 1024)) it times ``ct.launch`` through safetile's lean
C launcher and through Triton's (``SAFETILE_LEAN_LAUNCH=0`` while the kernel compiles), each C
launcher alone on prepared arguments, safetile's Python part alone (the launcher replaced by a
Python no-op, whose own cost is printed), and torch's ops in the same process: ``torch.add(x, y)``
(the issue's baseline), ``torch.add(x, x, out=z)``, ``x.add_(1.0)``. Host time per call: the
median over ``--reps`` of the mean of ``--n`` calls, the GPU kept ahead (tiny kernels). Also the
safe style's chained launch against the unchecked one (1000 dependent tiny adds, one sync).

    PYTHONPATH=src python bench/launch_diag.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import safetile as ct  # noqa: E402
from kernels.basic import safe_add, tiny  # noqa: E402


@ct.kernel
def add4(x, y, z, TILE: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(z, (b,), ct.load(x, (b,), (TILE,)) + ct.load(y, (b,), (TILE,)))


@ct.kernel
def axpy(x, z, alpha: float, n: int, TILE: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(z, (b,), ct.load(x, (b,), (TILE,)) * alpha + ct.load(z, (b,), (TILE,)))


def host_us(fn, n: int, reps: int) -> float:
    for _ in range(200):
        fn()
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(out)


def noop(*a):
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    n, reps = a.n, a.reps
    x = torch.randn(1 << 12, device="cuda")
    y = torch.randn_like(x)
    z = torch.empty_like(x)
    grid = (x.numel() // 1024,)
    cases = {"add4(x, x, z, 1024)": (add4, (x, x, z, 1024), grid), "tiny(x, 128)": (tiny, (x, 128), (1,)),
             "axpy(x, z, 0.5, n, 1024)": (axpy, (x, z, 0.5, x.numel(), 1024), grid)}
    # each kernel three times: lean launcher, Triton's launcher, and a copy whose launcher is a Python no-op
    kernels = {}
    for name, (k, args, g) in cases.items():
        lean_k, triton_k, stub_k = k.replace_hints(), k.replace_hints(), k.replace_hints()
        os.environ["SAFETILE_LEAN_LAUNCH"] = "0"
        ct.launch(None, g, triton_k, args)
        os.environ.pop("SAFETILE_LEAN_LAUNCH")
        ct.launch(None, g, lean_k, args)
        ct.launch(None, g, stub_k, args)
        table = stub_k.gpu_learned.table
        for key, (_, prefix, dev) in list(table.items()):
            table[key] = (noop, prefix, dev)
        kernels[name] = (lean_k, triton_k, stub_k, args, g)
    torch.cuda.synchronize()
    # correctness of what is timed: fresh data, poisoned output, both launchers
    for k in (kernels["add4(x, x, z, 1024)"][0], kernels["add4(x, x, z, 1024)"][1]):
        xx = torch.randn_like(x)
        zz = torch.full_like(x, float("nan"))
        ct.launch(None, grid, k, (xx, xx, zz, 1024))
        torch.cuda.synchronize()
        assert torch.equal(zz, xx + xx), "add4 wrong"
    from safetile.backends.triton import lean
    lean_mod = lean._loader.get(build=False)
    res: dict[str, float] = {}
    raw = torch.cuda.current_stream().cuda_stream
    res["torch.add(x, y)"] = host_us(lambda: torch.add(x, y), n, reps)
    res["torch.add(x, x, out=z)"] = host_us(lambda: torch.add(x, x, out=z), n, reps)
    res["x.add_(1.0)"] = host_us(lambda: x.add_(1.0), n, reps)
    for name, (lean_k, triton_k, stub_k, args, g) in kernels.items():
        res[f"ct.launch {name} lean"] = host_us(lambda k=lean_k, args=args, g=g: ct.launch(None, g, k, args), n, reps)
        res[f"ct.launch {name} triton-launcher"] = host_us(
            lambda k=triton_k, args=args, g=g: ct.launch(None, g, k, args), n, reps)
        res[f"ct.launch {name} python-part (no-op launcher)"] = host_us(
            lambda k=stub_k, args=args, g=g: ct.launch(None, g, k, args), n, reps)
        for who, k in (("lean", lean_k), ("triton", triton_k)):
            fast = k.gpu_learned
            key, flat = fast.parts(args)
            call, prefix, _ = fast.table[key]
            tup = (g[0], 1, 1, raw, *prefix, *flat)
            res[f"C launcher alone {name} {who}"] = host_us(lambda call=call, tup=tup: call(*tup), n, reps)
        res[f"Python no-op call {name}"] = host_us(lambda tup=tup: noop(*tup), n, reps)
    lk = kernels["add4(x, x, z, 1024)"][0]
    res["ct.launch add4 lean, raw stream handle"] = host_us(lambda: ct.launch(raw, grid, lk, (x, x, z, 1024)), n, reps)
    res["ct.launch add4 lean, grid as int"] = host_us(lambda: ct.launch(None, grid[0], lk, (x, x, z, 1024)), n, reps)
    res["ct.launch add4 lean, x, y distinct"] = host_us(lambda: ct.launch(None, grid, lk, (x, y, z, 1024)), n, reps)
    res["empty loop"] = host_us(lambda: None, n, reps)

    # safe chain vs unchecked chain (issue 9): 1000 dependent tiny adds, one sync
    xa, xb = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    xs, xbs = ct.from_dlpack(xa).shared(), ct.from_dlpack(xb).shared()
    zt = torch.empty_like(xa)
    st = {"z": ct.from_dlpack(zt).partition(1024)}
    add_lean = add4.replace_hints()

    def safe_chain(k=1000):
        op = safe_add(st["z"], xs, xbs)
        for _ in range(k - 1):
            op = op.then(lambda v: safe_add(*v))
        st["z"] = op.sync()[0]

    def unchecked_chain(k=1000):
        for _ in range(k):
            ct.launch(None, (1,), add_lean, (xa, xb, zt, 1024))
        torch.cuda.synchronize()
    for name, fn in (("safe chain", safe_chain), ("unchecked chain", unchecked_chain)):
        fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) / 1000 * 1e6)
        res[f"{name}, per launch"] = statistics.median(ts)
    base = res["torch.add(x, y)"]
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "python": sys.version.split()[0], "lean_module": bool(lean_mod), "n": n, "reps": reps,
                       "us": res}, f, indent=1)
    w = max(len(k) for k in res)
    print(f"{'host us per call':<{w}}  {'us':>7}  {'/ torch.add(x, y)':>8}")
    for k, v in res.items():
        print(f"{k:<{w}}  {v:7.2f}  {v / base:8.2f}")


if __name__ == "__main__":
    main()
