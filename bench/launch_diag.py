"""Host time of one ``ct.launch`` of a compiled kernel, taken apart, next to torch ops (GPU).

For each argument pattern (the README's add4(x, x, z, 1024): a tensor passed twice and a
Constant; tiny(x, 128); axpy(x, z, 0.5, n, 1024)) it times ``ct.launch`` through safetile's lean
C launcher and through Triton's (``SAFETILE_LEAN_LAUNCH=0`` while the kernel compiles), each C
launcher alone on prepared arguments, safetile's Python part alone (the launcher replaced by a
Python no-op, whose own cost is printed), and torch's ops in the same process: ``torch.add(x, y)``
(the issue's baseline), ``torch.add(x, x, out=z)``, ``x.add_(1.0)``. Host time per call: the
median of ``--reps`` means of ``--n`` calls, taken in 3 rounds interleaving the rows, the GPU
kept ahead (tiny kernels). Also the
safe style's chained launch against the unchecked one (1000 dependent tiny adds, one sync).

    PYTHONPATH=src python bench/launch_diag.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import safetile as ct  # noqa: E402
from kernels.basic import add4, axpy, safe_add, tiny  # noqa: E402
from sections.launch import host_samples  # noqa: E402




def measure(rows: dict, n: int, reps: int, rounds: int = 3) -> dict[str, float]:
    """Each row's median over ``rounds`` rounds of ``reps`` samples, the rows in a new order each
    round (the host's speed drifts: rows timed one after another would compare different moments)."""
    samples: dict[str, list[float]] = {k: [] for k in rows}
    order = list(rows)
    shuffle = random.Random(12).shuffle
    for _ in range(rounds):
        shuffle(order)  # no row always follows the same one
        for k in order:
            samples[k] += host_samples(rows[k], n, max(1, reps // rounds), warmup=200)
    return {k: statistics.median(v) for k, v in samples.items()}


def noop(*a):
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=9, help="samples per row, in 3 interleaved rounds")
    ap.add_argument("--json")
    ap.add_argument("--basic", action="store_true",
                    help="only ct.launch as a user calls it, torch's ops and the chains (any safetile version)")
    a = ap.parse_args()
    n, reps = a.n, a.reps
    x = torch.randn(1 << 12, device="cuda")
    y = torch.randn_like(x)
    z = torch.empty_like(x)
    grid = (x.numel() // 1024,)
    cases = {"add4(x, x, z, 1024)": (add4, (x, x, z, 1024), grid), "tiny(x, 128)": (tiny, (x, 128), (1,)),
             "axpy(x, z, 0.5, n, 1024)": (axpy, (x, z, 0.5, x.numel(), 1024), grid)}
    # each kernel three times: lean launcher, Triton's launcher, and a copy whose launcher is a Python no-op
    rows: dict = {}
    if a.basic:
        rows["torch.add(x, y)"] = lambda: torch.add(x, y)
        rows["torch.add(x, x, out=z)"] = lambda: torch.add(x, x, out=z)
        for name, (k, args, g) in cases.items():
            ct.launch(None, g, k, args)
            rows[f"ct.launch {name}"] = lambda k=k, args=args, g=g: ct.launch(None, g, k, args)
        rows["ct.launch add4, x, y distinct"] = lambda: ct.launch(None, grid, add4, (x, y, z, 1024))
        res = measure(rows, n, reps)
        chains(res, reps)
        report(a, res, None)
        return
    kernels = {}
    for name, (k, args, g) in cases.items():
        lean_k, triton_k, stub_k = k.replace_hints(), k.replace_hints(), k.replace_hints()
        ct.launch(None, g, lean_k, args)
        ct.launch(None, g, stub_k, args)
        os.environ["SAFETILE_LEAN_LAUNCH"] = "0"
        ct.launch(None, g, triton_k, args)
        os.environ.pop("SAFETILE_LEAN_LAUNCH")
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
    for name, (lean_k, triton_k, *_) in kernels.items():
        used = [next(iter(k.gpu_learned.table.values()))[0] for k in (lean_k, triton_k)]
        print(f"{name}: launchers {used[0]!r} / {used[1]!r}")
        assert lean_mod is not None and used[0] is lean_mod.launch and used[1] is not lean_mod.launch
    raw = torch.cuda.current_stream().cuda_stream
    rows["torch.add(x, y)"] = lambda: torch.add(x, y)
    rows["torch.add(x, x, out=z)"] = lambda: torch.add(x, x, out=z)
    rows["x.add_(1.0)"] = lambda: x.add_(1.0)
    for name, (lean_k, triton_k, stub_k, args, g) in kernels.items():
        rows[f"ct.launch {name} lean"] = lambda k=lean_k, args=args, g=g: ct.launch(None, g, k, args)
        rows[f"ct.launch {name} triton-launcher"] = lambda k=triton_k, args=args, g=g: ct.launch(None, g, k, args)
        rows[f"ct.launch {name} python-part (no-op launcher)"] = \
            lambda k=stub_k, args=args, g=g: ct.launch(None, g, k, args)
        for who, k in (("lean", lean_k), ("triton", triton_k)):
            fast = k.gpu_learned
            key, flat = fast.parts(args)
            call, prefix, _ = fast.table[key]
            tup = (g[0], 1, 1, raw, *prefix, *flat)
            rows[f"C launcher alone {name} {who}"] = lambda call=call, tup=tup: call(*tup)
            rows[f"Python no-op call {name} {who}"] = lambda tup=tup: noop(*tup)
    lk = kernels["add4(x, x, z, 1024)"][0]
    rows["ct.launch add4 lean, raw stream handle"] = lambda: ct.launch(raw, grid, lk, (x, x, z, 1024))
    rows["ct.launch add4 lean, grid as int"] = lambda: ct.launch(None, grid[0], lk, (x, x, z, 1024))
    rows["ct.launch add4 lean, x, y distinct"] = lambda: ct.launch(None, grid, lk, (x, y, z, 1024))
    rows["empty loop"] = lambda: None
    # the pieces of the Python part (each in a lambda: subtract the empty loop)
    for what, fn in (("x.data_ptr()", x.data_ptr), ("x.shape", lambda: x.shape), ("x.stride()", x.stride),
                     ("x.dtype", lambda: x.dtype), ("x.get_device()", x.get_device),
                     ("torch._C._cuda_getDevice()", torch._C._cuda_getDevice),
                     ("torch._C._cuda_getCurrentRawStream(0)", lambda: torch._C._cuda_getCurrentRawStream(0)),
                     ("kernel.captured.check()", lk.captured.check)):
        rows[f"piece: {what}"] = fn
    res = measure(rows, n, reps)

    chains(res, reps)
    report(a, res, bool(lean_mod))


def chains(res: dict, reps: int) -> None:
    """Safe chain vs unchecked chain (issue 9): 1000 dependent tiny adds, one sync."""
    from safetile.safe.native import FAST
    from safetile.safe.ownership import OWNERSHIP
    res["safe launch C path loaded"] = float(FAST.load(build=True))  # as a warm process has it
    res["safe C lock (built before import)"] = float(type(OWNERSHIP).__name__ == "Lock")
    xa, xb = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    xs, xbs = ct.from_dlpack(xa).shared(), ct.from_dlpack(xb).shared()
    zt = torch.empty_like(xa)
    st = {"z": ct.from_dlpack(zt).partition(1024)}
    add_k = add4.replace_hints()

    def safe_chain(k=1000):
        op = safe_add(st["z"], xs, xbs)
        for _ in range(k - 1):
            op = op.then(lambda v: safe_add(*v))
        st["z"] = op.sync()[0]

    def unchecked_chain(k=1000):
        for _ in range(k):
            ct.launch(None, (1,), add_k, (xa, xb, zt, 1024))
        torch.cuda.synchronize()
    ts: dict[str, list[float]] = {"safe chain": [], "unchecked chain": []}
    safe_chain()
    unchecked_chain()
    torch.cuda.synchronize()
    for _ in range(reps):  # alternating
        for name, fn in (("safe chain", safe_chain), ("unchecked chain", unchecked_chain)):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            ts[name].append((time.perf_counter() - t0) / 1000 * 1e6)
    for name, v in ts.items():
        res[f"{name}, per launch"] = statistics.median(v)


def report(a, res: dict, lean_module: bool | None) -> None:
    base = res["torch.add(x, y)"]
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "python": sys.version.split()[0], "lean_module": lean_module, "n": a.n, "reps": a.reps,
                       "us": res}, f, indent=1)
    w = max(len(k) for k in res)
    print(f"{'host us per call':<{w}}  {'us':>7}  {'/ torch.add(x, y)':>8}")
    for k, v in res.items():
        print(f"{k:<{w}}  {v:7.2f}  {v / base:8.2f}")


if __name__ == "__main__":
    main()
