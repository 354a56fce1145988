"""Where a cold first launch spends its time, phase by phase, without a GPU.

Each sample is a fresh process on a "used installation" (Triton's installation hash already
recorded, nothing cached for this kernel) that does what a cold ``ct.launch`` does up to the
binary, for an sm_90 target: the front end (argument specs, parsing, IR), the IR text and cache
key, Triton source generation, loading the generated module (the first ``import triton`` and
the prelude of device helpers), Triton's setup, and ``triton.compile`` with Triton's own
per-stage times (ttir, ttgir, llir, ptx, cubin; wall, and CPU through a stage hook: ``ir_init``
is the front end that turns the Python source into IR, Gluon's for the ping-pong kernels). The
GPU-only steps (the C launcher build, which runs beside the compile, and loading the binary) are
left out; the benchmark's ``compile`` section times the whole first launch on a GPU. Every phase
reports wall seconds and CPU seconds (the process and its children: ptxas), medians over
``--reps`` processes; on a shared machine the CPU seconds are the steadier number.

    PYTHONPATH=src python bench/compile_profile.py --reps 5 --out bench/results/compile-session5/x.json

The samples inherit the environment: ``SAFETILE_LLVM_OPT=0`` profiles compiles with LLVM at O0
(backends/triton/llvm_level.py); ``attention_w8`` is the attention section's first d=64 config;
``pingpong`` and ``pingpong_dq`` are the Gluon kernels of ``warp_specialize="pingpong"``
(pingpong.py) with the attention section's d=128 configs. ``--cprofile N`` adds one sample per
kernel under cProfile and prints its N costliest functions by own time.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the benchmark's compile section launches these (bench/sections/launch.py, _SNIPPETS), here on
# CPU tensors: only dtypes, shapes and alignment matter to the compile
KERNELS = {
    "gemm": "a = torch.randn(1024, 1024, dtype=torch.float16); c = torch.empty_like(a)\n"
            "kern, args = G.matmul.replace_hints(num_warps=8, num_stages=3), (a, a, c, 128, 256, 64, 8, True)",
    "attention": "q = torch.randn(16, 1024, 64, dtype=torch.bfloat16)\n"
                 "kern = A.attention.replace_hints(num_warps=4)\n"
                 "args = (q, q, q, torch.empty_like(q), 0.18, 128, 128, 64, True)",
    "attention_bn64": "q = torch.randn(16, 1024, 64, dtype=torch.bfloat16)\n"
                      "kern = A.attention.replace_hints(num_warps=4)\n"
                      "args = (q, q, q, torch.empty_like(q), 0.18, 128, 64, 64, True)",
    "attention_w8": "q = torch.randn(16, 1024, 64, dtype=torch.bfloat16)\n"
                    "kern = A.attention.replace_hints(num_warps=8, num_stages=3, occupancy=2)\n"
                    "args = (q, q, q, torch.empty_like(q), 0.18, 128, 128, 64, True)",
    # the ping-pong lowering (Gluon, backends/triton/pingpong.py): the compile section's
    # attention_pp (attention_2d, d=128, causal, the mask in a branch at the diagonal blocks) with
    # the attention section's config 128x128x4x2x0x2 (BMxBNxWARPSxSTAGESxOCCxWS, WS 2: "pingpong")
    "pingpong": "q = torch.randn(16 * 1024, 128, dtype=torch.bfloat16)\n"
                "kern = A.attention_2d.replace_hints(num_warps=4, num_stages=2, warp_specialize='pingpong')\n"
                "args = (q, q, q, torch.empty_like(q), torch.empty(1), 1024, 0.18, 128, 128, 128, True, False, "
                "False, True)",
    # the backward's ping-pong dQ at d=128, config 128x64x4x2x0x2, non-causal (the probe's mask)
    "pingpong_dq": "q = torch.randn(16 * 1024, 128, dtype=torch.bfloat16); r = torch.randn(16 * 1024)\n"
                   "kern = A.attention_bwd_dq.replace_hints(num_warps=4, num_stages=2, warp_specialize='pingpong')\n"
                   "args = (q, q, q, q, r, r, torch.empty_like(q), 1024, 0.13, 0.09, 128, 64, 128, False)",
    "tiny": "x = torch.zeros(128)\nkern, args = Ba.tiny, (x, 128)",
}

_CHILD = r'''
import json, os, resource, sys, time
sys.path.insert(0, {src!r}); sys.path.insert(0, {bench!r})
import torch, safetile as ct
from kernels import attention as A, basic as Ba, gemm as G
{snippet}
from safetile.backends.triton import cache
from safetile.backends.triton.codegen import Facts, generate
from safetile.backends.triton.launcher import (array_facts, array_parts, compile_fitting, compile_options,
                                               loop_stages, pingpong, specialization, warp_specialized)
from safetile.ir.printer import format_function
from safetile.runtime.args import arg_specs
TARGET = {target}
out = {{}}

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

class phase:
    def __init__(self, name):
        self.name = name
    def __enter__(self):
        self.t, self.c = time.perf_counter(), cpu()
    def __exit__(self, *exc):
        out[self.name] = {{"wall": time.perf_counter() - self.t, "cpu": cpu() - self.c}}

PROFILE_TOP = int(os.environ.get("COMPILE_PROFILE_TOP", "0"))  # --cprofile: this sample under cProfile
if PROFILE_TOP:
    import cProfile, io, pstats
    profiler = cProfile.Profile()
    profiler.enable()
t0, c0 = time.perf_counter(), cpu()
with phase("frontend"):
    specs = arg_specs(kern, args)
    fn = kern.specialize(specs)
with phase("ir_text_and_key"):
    spec = specialization(kern, fn, specs)
    arrays = [args[i] for i, kind, _ in spec.slots if kind == "array"]
    facts = Facts(tuple(array_facts(*array_parts(x)[:3]) for x in arrays), False, TARGET, True, True,
                  loop_stages(TARGET), warp_specialized(fn, TARGET), pingpong(fn, TARGET))
    key = cache.digest(format_function(fn), facts)
with phase("generate"):
    gen = generate(fn, facts)
with phase("load_module"):  # writes the entry, imports Triton and the prelude the first time
    jitfn, gen = cache.load(key, lambda: gen, False)
with phase("triton_setup"):
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    if gen.gluon:
        from triton.experimental.gluon._runtime import GluonASTSource as ASTSource
    else:
        from triton.compiler import ASTSource
    src = ASTSource(jitfn, dict(gen.signature), {{}}, dict(gen.attrs))
    options = compile_options(fn, gen, facts)
    cache.memoize_triton_key()
stages, stages_cpu = {{}}, {{}}

def listener(src, metadata, metadata_group, times, cache_hit):
    stages.update(ir_init=times.ir_initialization / 1e6, **{{k: v / 1e6 for k, v in times.lowering_stages}})
knobs.compilation.listener = listener

def timed_stages(backend, table, options, language, capability):
    """CPU seconds of each stage (ptxas: the child process), and of the front end before them."""
    for name, run in list(table.items()):
        def timed(src, metadata, run=run, name=name):
            if not stages_cpu:
                stages_cpu["ir_init"] = cpu() - compile_start[0]
            c = cpu()
            try:
                return run(src, metadata)
            finally:
                stages_cpu[name] = cpu() - c
        table[name] = timed
knobs.runtime.add_stages_inspection_hook = timed_stages
compile_start = [0.0]
from triton._C.libtriton import llvm as _llvm
_link, linked = _llvm.link_extern_libs, []

def _counting_link(*a):
    linked.append(1)
    return _link(*a)
_llvm.link_extern_libs = _counting_link
with phase("triton_compile"):
    compile_start[0] = cpu()
    compiled = compile_fitting(src, GPUTarget("cuda", TARGET, 32), options, shared_limit=0)
out["total"] = {{"wall": time.perf_counter() - t0, "cpu": cpu() - c0}}
out["triton_stages_wall"] = stages
out["triton_stages_cpu"] = stages_cpu
out["source_lines"] = gen.source.count("\n")
out["ptx_lines"] = compiled.asm["ptx"].count("\n")
out["llir_lines"] = compiled.asm["llir"].count("\n")
out["ttgir_lines"] = compiled.asm["ttgir"].count("\n")
out["gluon"] = bool(gen.gluon)
out["libdevice_linked"] = bool(linked)
if PROFILE_TOP:
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(PROFILE_TOP)
    out["cprofile"] = text.getvalue()
print("RESULT", json.dumps(out))
'''


def _sample(name: str, tmp: Path, target: int, used: Path, profile_top: int = 0) -> dict:
    """One fresh process compiling ``name`` cold, on a copy of a used installation's caches
    (``profile_top``: under cProfile, its ``profile_top`` costliest functions by own time)."""
    here = tmp / f"run-{time.monotonic_ns()}"
    shutil.copytree(used, here)
    env = dict(os.environ, SAFETILE_CACHE_DIR=str(here / "st"), TRITON_CACHE_DIR=str(here / "triton"),
               PYTHONPYCACHEPREFIX=str(tmp / "pyc"), COMPILE_PROFILE_TOP=str(profile_top))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = _CHILD.format(src=str(ROOT / "src"), bench=str(ROOT / "bench"), snippet=KERNELS[name], target=target)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    shutil.rmtree(here, ignore_errors=True)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode or not line:
        raise RuntimeError(f"{name}: {(p.stderr or p.stdout)[-2000:]}")
    return json.loads(line[0][len("RESULT "):])


def _median(samples: list[dict]) -> dict:
    first = samples[0]
    out: dict = {}
    for k, v in first.items():
        if isinstance(v, dict) and v and all(isinstance(x, (int, float)) for x in v.values()):
            out[k] = {f: round(statistics.median(s[k].get(f, 0.0) for s in samples), 4) for f in v}
        elif isinstance(v, dict):
            out[k] = {f: round(statistics.median(s[k][f]["cpu"] for s in samples), 4) for f in v}
        else:
            out[k] = v
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kernels", default="gemm,attention,attention_bn64")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--target", type=int, default=90)
    p.add_argument("--out", default=None)
    p.add_argument("--cprofile", type=int, default=0, metavar="N",
                   help="one more sample per kernel under cProfile: print its N costliest functions (own time)")
    args = p.parse_args(argv)
    names = args.kernels.split(",")
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        p.error(f"unknown kernels {unknown}; known: {sorted(KERNELS)}")
    result: dict = {"target": f"sm_{args.target}", "reps": args.reps, "host_cpus": os.cpu_count(), "kernels": {}}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        used = tmp / "used"
        _prime(used, args.target)  # a used installation: another kernel compiled before
        for name in names:
            samples = [_sample(name, tmp, args.target, used) for _ in range(args.reps)]
            result["kernels"][name] = {"median": _median(samples), "samples": samples}
            m = result["kernels"][name]["median"]
            phases = "  ".join(f"{k} {m[k]['cpu']:.3f}" for k in m if isinstance(m[k], dict) and "cpu" in m[k])
            print(f"{name:15s} CPU s: {phases}", flush=True)
            print(f"{'':15s} Triton stages (CPU s): {m['triton_stages_cpu']}", flush=True)
            print(f"{'':15s} lines: source {m['source_lines']}, TTGIR {m['ttgir_lines']}, LLVM IR {m['llir_lines']}, "
                  f"PTX {m['ptx_lines']}", flush=True)
            if args.cprofile:
                prof = _sample(name, tmp, args.target, used, args.cprofile)["cprofile"]
                result["kernels"][name]["cprofile"] = prof
                print(prof, flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


def _prime(used: Path, target: int) -> None:
    """Make ``used`` hold the caches of an installation that compiled another kernel."""
    env = dict(os.environ, SAFETILE_CACHE_DIR=str(used / "st"), TRITON_CACHE_DIR=str(used / "triton"))
    code = _CHILD.format(src=str(ROOT / "src"), bench=str(ROOT / "bench"), snippet=KERNELS["tiny"], target=target)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])


if __name__ == "__main__":
    sys.exit(main())
