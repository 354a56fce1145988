"""Launch cost and first-launch compile time.

``launch``: per-launch cost of dependent tiny launches (synchronising each, chained, CUDA graph),
and the host time of one ``ct.launch`` of an already compiled kernel for the argument patterns
users write (a tensor passed twice, a Constant, a float scalar, the stream given as None, as
``torch.cuda.current_stream()`` evaluated per call, or as a raw handle), next to torch ops' host
time in the same process and to the Triton launcher's own share.

``compile``: the first launch of a kernel in a fresh process, when nothing is cached
(``cold_install``), when the caches hold other kernels (``cold``: a used installation meeting a
new kernel), when this kernel was compiled by an earlier process (``warm``), and the same
without Python bytecode caches (``warm_no_pyc``)."""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import safetile as ct
from kernels.basic import add4, axpy, tiny

ROOT = Path(__file__).resolve().parents[2]


def host_samples(fn, n: int, reps: int, warmup: int = 0) -> list[float]:
    """``reps`` samples of the host time per call (µs) of ``n`` calls (the GPU keeps up: tiny kernels)."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return out


def _host_us(fn, n=4000, reps=5) -> float:
    """Median over ``reps`` of the host time per call of ``n`` calls."""
    return statistics.median(host_samples(fn, n, reps))


def bench_launch(args, res):
    x = torch.zeros(128, device="cuda")
    ct.launch(None, (1,), tiny, (x, 128))
    torch.cuda.synchronize()
    rows = []
    for n in args.launch_counts:
        for who, fn in (("safetile", lambda: ct.launch(None, (1,), tiny, (x, 128))), ("torch", lambda: x.add_(1.0))):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
                torch.cuda.synchronize()
            sync_us = (time.perf_counter() - t0) / n * 1e6
            reps = []
            for _ in range(5):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                torch.cuda.synchronize()
                reps.append((time.perf_counter() - t0) / n * 1e6)
            chained_us = statistics.median(reps)
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
    res["launch"] = {"rows": rows, "host": _host_patterns()}
    h = res["launch"]["host"]
    for k, v in h.items():
        print(f"  host us per call: {k:44s} {v:6.2f}", flush=True)


def _host_patterns() -> dict:
    """Host time per call of ct.launch for several argument patterns, and of torch ops."""
    x = torch.randn(1 << 12, device="cuda")
    z = torch.empty_like(x)
    grid = (x.numel() // 1024,)
    stream = torch.cuda.current_stream()
    raw = stream.cuda_stream
    for k, a in ((add4, (x, x, z, 1024)), (axpy, (x, z, 0.5, x.numel(), 1024)), (tiny, (x, 128))):
        ct.launch(None, grid, k, a)
    torch.cuda.synchronize()
    from safetile.backends.triton.fastpath import FastPath
    fast = add4.gpu_learned
    hit = fast.table[fast.parts((x, x, z, 1024))[0]] if isinstance(fast, FastPath) else None
    out = {
        "ct.launch tiny(x, 128), stream None": _host_us(lambda: ct.launch(None, (1,), tiny, (x, 128))),
        "ct.launch add4(x, x, z, 1024), stream None": _host_us(lambda: ct.launch(None, grid, add4, (x, x, z, 1024))),
        "ct.launch add4, current_stream() per call": _host_us(
            lambda: ct.launch(torch.cuda.current_stream(), grid, add4, (x, x, z, 1024))),
        "ct.launch add4, stream object": _host_us(lambda: ct.launch(stream, grid, add4, (x, x, z, 1024))),
        "ct.launch add4, raw stream handle": _host_us(lambda: ct.launch(raw, grid, add4, (x, x, z, 1024))),
        "ct.launch add4, grid via ct.cdiv per call": _host_us(
            lambda: ct.launch(None, (ct.cdiv(x.numel(), 1024),), add4, (x, x, z, 1024))),
        "ct.launch axpy(x, z, 0.5, n, 1024)": _host_us(lambda: ct.launch(None, grid, axpy, (x, z, 0.5, 4096, 1024))),
        "torch.add(x, x, out=z)": _host_us(lambda: torch.add(x, x, out=z)),
        "x.add_(1.0)": _host_us(lambda: x.add_(1.0)),
        "torch.cuda.current_stream()": _host_us(torch.cuda.current_stream),
    }
    if hit is not None:  # Triton's C launcher alone, arguments prepared
        call, prefix, _ = hit
        flat = fast.parts((x, x, z, 1024))[1]
        out["Triton C launcher alone (add4)"] = _host_us(lambda: call(grid[0], 1, 1, raw, *prefix, *flat))
        if len(prefix) == 9:  # the raw C launcher: (function, cooperative, pdl, ...) -- without the PDL attribute
            no_pdl = (prefix[0], prefix[1], False, *prefix[3:])
            out["Triton C launcher alone, no PDL attribute"] = _host_us(lambda: call(grid[0], 1, 1, raw, *no_pdl, *flat))
        out["FastPath argument read (add4)"] = _host_us(lambda: fast.parts((x, x, z, 1024)))
    return out


_SNIPPETS = {
    "tiny": "x=torch.zeros(128,device='cuda')\nargs=(1,), Ba.tiny, (x, 128)",
    "gemm": "a=torch.randn(1024,1024,device='cuda',dtype=torch.float16); c=torch.empty_like(a)\n"
            "args=(8*4,), G.matmul.replace_hints(num_warps=8, num_stages=3), (a, a, c, 128, 256, 64, 8, True)",
    "attention": "q=torch.randn(16,1024,64,device='cuda',dtype=torch.bfloat16)\n"
                 "args=(8,16), A.attention.replace_hints(num_warps=4), (q, q, q, torch.empty_like(q), 0.18, 128, 128, 64, True)",
    # the 3-D kernel with the key block its d=64 probe picked on the H100 (perf-call3: 64 beat 128)
    "attention_bn64": "q=torch.randn(16,1024,64,device='cuda',dtype=torch.bfloat16)\n"
                      "args=(8,16), A.attention.replace_hints(num_warps=4), "
                      "(q, q, q, torch.empty_like(q), 0.18, 128, 64, 64, True)",
    # the same 3-D kernel with the attention section's first d=64 config (128x128x8x3x2: 8 warps,
    # 3 stages, occupancy 2): 64 scores per thread instead of 128
    "attention_w8": "q=torch.randn(16,1024,64,device='cuda',dtype=torch.bfloat16)\n"
                    "args=(8,16), A.attention.replace_hints(num_warps=8, num_stages=3, occupancy=2), "
                    "(q, q, q, torch.empty_like(q), 0.18, 128, 128, 64, True)",
    # the 2-D kernel under warp_specialize="pingpong" (Gluon, pingpong.py), d=128 causal
    "attention_pp": "q=torch.randn(16*1024,128,device='cuda',dtype=torch.bfloat16)\n"
                    "args=(8,16), A.attention_2d.replace_hints(warp_specialize='pingpong'), "
                    "(q, q, q, torch.empty_like(q), torch.empty(1, device='cuda'), 1024, 0.18, 128, 128, 128, "
                    "True, False, False, True)",
}

COMPILE_KERNELS = tuple(k for k in _SNIPPETS if k != "tiny")


def _first_launch(name: str, env: dict, profile: bool = False) -> dict:
    code = ("import sys, time; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
            "import torch, safetile as ct\n"
            "from kernels import basic as Ba, gemm as G, attention as A\n"
            "torch.zeros(1, device='cuda'); torch.cuda.synchronize()\n"
            "%s\n"
            "if %r:\n"
            "    import cProfile, pstats, io; pr = cProfile.Profile(); pr.enable()\n"
            "t0 = time.perf_counter(); ct.launch(None, *args); torch.cuda.synchronize()\n"
            "t1 = time.perf_counter(); ct.launch(None, *args); torch.cuda.synchronize()\n"
            "t2 = time.perf_counter()\n"
            "if %r:\n"
            "    pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats('cumtime').print_stats(30)\n"
            "    print('PROFILE', repr(s.getvalue()[-5000:]))\n"
            "print('TIMES', t1 - t0, t2 - t1)\n") % (str(ROOT / "src"), str(ROOT / "bench"), _SNIPPETS[name],
                                                   profile, profile)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    total = time.perf_counter() - t0
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("TIMES")]
    if p.returncode or not line:
        return {"error": (p.stderr or p.stdout)[-2000:]}
    first, second = map(float, line[0].split()[1:])
    out = {"first_launch_s": first, "second_launch_s": second, "process_s": total}
    prof = [ln for ln in p.stdout.splitlines() if ln.startswith("PROFILE")]
    if prof:
        import ast
        out["profile"] = ast.literal_eval(prof[0][len("PROFILE "):])
    return out


def _median_run(name: str, envs: list) -> dict:
    """The first launch of ``name`` once in each environment: the run with the median first-launch
    time, with every sample's time under ``samples`` (one cold sample moves by +-20 % on the H100's host)."""
    runs = [_first_launch(name, e) for e in envs]
    bad = [r for r in runs if "error" in r]
    if bad:
        return bad[0]
    runs.sort(key=lambda r: r["first_launch_s"])
    return {**runs[(len(runs) - 1) // 2], "samples": [r["first_launch_s"] for r in runs]}


def bench_compile(args, res):
    rows = []
    reps = max(1, getattr(args, "compile_reps", 1))
    with tempfile.TemporaryDirectory() as tmp:
        def env_for(tag, pyc=True):
            e = dict(os.environ, SAFETILE_CACHE_DIR=os.path.join(tmp, tag, "st"),
                     TRITON_CACHE_DIR=os.path.join(tmp, tag, "triton"))
            # a normal install keeps .pyc files of Triton's modules; some images do not
            # (PYTHONDONTWRITEBYTECODE, read-only site-packages): then every process compiles
            # Triton's Python source again (~0.1 s), shown as warm_no_pyc
            if pyc:
                e["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pyc")
                e.pop("PYTHONDONTWRITEBYTECODE", None)
            else:
                e["PYTHONDONTWRITEBYTECODE"] = "1"
                e.pop("PYTHONPYCACHEPREFIX", None)
            return e

        def used_copy(tag):  # a copy of the used installation: each cold sample meets the kernel new
            shutil.copytree(os.path.join(tmp, "used"), os.path.join(tmp, tag))
            return env_for(tag)
        _first_launch("tiny", env_for("used"))  # a used installation: caches hold another kernel
        for name in args.compile_kernels:
            row = {"kernel": name}
            colds = [used_copy(f"used-{name}-{i}") for i in range(reps)]
            phases = [("cold", colds), ("warm", colds[:1]), ("warm_no_pyc", [env_for(f"used-{name}-0", pyc=False)])]
            if name == args.compile_kernels[0]:  # nothing cached at all: once is enough
                phases.insert(0, ("cold_install", [env_for(f"fresh-{name}")]))
            for phase, envs in phases:
                row[phase] = r = _median_run(name, envs)
                if "error" in r:
                    print(f"  compile {name} {phase}: FAILED\n{r['error']}", flush=True)
                else:
                    s = r["samples"]
                    spread = f" (samples {min(s):.3f}-{max(s):.3f})" if len(s) > 1 else ""
                    print(f"  compile {name:9s} {phase:12s}: first launch {r['first_launch_s']:6.3f} s{spread} "
                          f"(then {r['second_launch_s'] * 1e6:6.1f} us); process {r['process_s']:5.1f} s", flush=True)
            if args.compile_profile:  # where a cold and a warm first launch spend their time
                cold = env_for(f"profile-{name}")
                _first_launch("tiny", cold)  # a used installation of its own, this kernel not in it
                row["cold_profile"] = _first_launch(name, cold, profile=True)
                row["warm_profile"] = _first_launch(name, colds[0], profile=True)
            rows.append(row)
    res["compile"] = rows
