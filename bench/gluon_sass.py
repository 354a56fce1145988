"""The ping-pong (Gluon) kernels of the attention benchmark built for sm_90a on the CPU: the CPU
seconds of each compile stage (min and median over ``--reps`` builds in one process, imports
warm), the size of each stage's output, and the SASS (Triton's bundled nvdisasm), with its loops
and, against another build's SASS, whether the instructions are the same.

It answers "does this change to the emitted kernel change what the GPU runs?" without a GPU:
``--src FILE`` builds an edited copy of the generated source (``--save DIR`` writes the
generated one to start from), ``--diff OTHER.sass`` compares the two instruction streams
(addresses left out). ``--no-sanitize`` builds without Triton's integer-overflow checks (dead
IR unless ``debug``; safetile's Triton kernels are built that way).

    PYTHONPATH=src python bench/gluon_sass.py fwd_causal --reps 5 --save /tmp/a
    PYTHONPATH=src python bench/gluon_sass.py fwd_causal --src edited.py --diff /tmp/a/fwd_causal.sass

Kernels (``cases()``): the forward at d=128 (128x128, causal with the diagonal branch or not; 128x64
with log-sum-exp), the forward at d=64 with four consumer groups (256x64), and the backward's dQ
at d=128 (128x64, causal or not).
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import difflib
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cases() -> dict:
    """name -> (kernel, arguments, number of array arguments)."""
    import torch

    from kernels import attention as A
    q = torch.randn(16 * 1024, 128, dtype=torch.bfloat16)
    q64 = torch.randn(16 * 1024, 64, dtype=torch.bfloat16)
    r = torch.randn(16 * 1024)
    fwd = A.attention_2d.replace_hints(num_warps=4, num_stages=2, warp_specialize="pingpong")
    dq = A.attention_bwd_dq.replace_hints(num_warps=4, num_stages=2, warp_specialize="pingpong")
    return {
        "fwd_causal": (fwd, (q, q, q, torch.empty_like(q), torch.empty(1), 1024, 0.18, 128, 128, 128, True, False,
                             False, True), 5),
        "fwd": (fwd, (q, q, q, torch.empty_like(q), torch.empty(1), 1024, 0.18, 128, 128, 128, False, False, False,
                      True), 5),
        "fwd_bn64_lse": (fwd, (q, q, q, torch.empty_like(q), r, 1024, 0.18, 128, 64, 128, True, True, False, True), 5),
        "fwd_d64_g4": (fwd, (q64, q64, q64, torch.empty_like(q64), torch.empty(1), 1024, 0.18, 256, 64, 64, True,
                             False, False, True), 5),
        "dq": (dq, (q, q, q, q, r, r, torch.empty_like(q), 1024, 0.13, 0.09, 128, 64, 128, False), 7),
        "dq_causal": (dq, (q, q, q, q, r, r, torch.empty_like(q), 1024, 0.13, 0.09, 128, 64, 128, True), 7),
    }


def _children_cpu() -> float:
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


_INSTR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", re.M)


def sass_instructions(sass: str) -> list[str]:
    """The instructions of an nvdisasm listing, without addresses (labels and comments dropped)."""
    return [m.group(2) for m in _INSTR.finditer(sass)]


def sass_loops(sass: str, smallest: int = 40) -> list[tuple[int, int, collections.Counter]]:
    """(first, last, opcode counts) of the innermost loops of at least ``smallest`` instructions:
    backward branches' ranges that hold no other such range (ptxas moves the barrier waits' retry
    paths out of line, past the loops, so the larger ranges are those paths branching back)."""
    ins, labels = [], {}
    for line in sass.splitlines():
        label = re.match(r"^\s*(\.L_x_\d+):", line)
        if label:
            labels[label.group(1)] = len(ins)
            continue
        m = _INSTR.match(line)
        if m:
            ins.append(m.group(2))
    ranges = []
    for k, i in enumerate(ins):
        m = re.search(r"BRA\s+`?\(?(\.L_x_\d+)", i)
        if m and m.group(1) in labels and labels[m.group(1)] <= k and k - labels[m.group(1)] + 1 >= smallest:
            ranges.append((labels[m.group(1)], k))
    inner = [(a, b) for a, b in ranges if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in ranges)]
    return [(a, b, collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", x).split()[0] for x in ins[a:b + 1]))
            for a, b in sorted(set(inner))]


def build(name: str, reps: int, src_file: str | None, sanitize: bool) -> tuple[dict, dict, str]:
    """(stage -> CPU seconds per build, stage -> output, generated source) of ``reps`` builds."""
    sys.path.insert(0, str(ROOT / "tests"))
    from pingpong_helpers import generated, sm90_facts
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.experimental.gluon._runtime import GluonASTSource

    from safetile.backends.triton import cache
    from safetile.backends.triton.launcher import compile_options
    kern, args, narrays = cases()[name]
    t = time.process_time()
    fn, made = generated(kern, args, narrays)
    generate_s = time.process_time() - t
    if not made.gluon:
        raise SystemExit(f"{name}: the ping-pong form was not generated")
    if src_file:
        made = dataclasses.replace(made, source=Path(src_file).read_text())
    facts = sm90_facts(args, narrays)
    jitfn, gen = cache.load(cache.digest(made.source + repr(sorted(made.signature.items())), facts), lambda: made)
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    src = GluonASTSource(jitfn, gen.signature, {}, gen.attrs)
    opts = dict(compile_options(fn, gen, facts))
    if not sanitize:
        opts["sanitize_overflow"] = False
    options = backend.parse_options(opts)
    stages: dict = {}
    backend.add_stages(stages, options, src.language)
    times: dict[str, list[float]] = {"generate": [generate_s], "make_ir": []}
    out: dict = {}
    for _ in range(reps):
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        t = time.process_time()
        module = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                             context)
        times["make_ir"].append(time.process_time() - t)
        metadata = {"hash": "gluon_sass", "target": target, **options.__dict__}
        for stage, run in stages.items():
            t, c = time.process_time(), _children_cpu()
            module = run(module, metadata)
            times.setdefault(stage, []).append(time.process_time() - t + _children_cpu() - c)
            out[stage] = module
    return times, out, gen.source


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("kernel", help="one of CASES: fwd_causal, fwd, fwd_bn64_lse, fwd_d64_g4, dq, dq_causal")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--src", help="build this Gluon source instead of the generated one (same kernel and facts)")
    p.add_argument("--save", help="directory for the source, TTGIR, LLVM IR, PTX, cubin and SASS")
    p.add_argument("--diff", help="another build's .sass: are the instructions the same?")
    p.add_argument("--no-sanitize", action="store_true", help="sanitize_overflow=False")
    args = p.parse_args(argv)
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="gluon_sass_triton_"))
    os.environ.setdefault("SAFETILE_CACHE_DIR", tempfile.mkdtemp(prefix="gluon_sass_st_"))
    times, out, source = build(args.kernel, args.reps, args.src, not args.no_sanitize)
    import triton
    nvdisasm = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp, "k.cubin")
        cubin.write_bytes(out["cubin"])
        sass = subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    ins = sass_instructions(sass)
    print(f"{args.kernel}{' (' + args.src + ')' if args.src else ''}: CPU s min/median over {args.reps} builds")
    print("  " + "  ".join(f"{k} {min(v):.3f}/{statistics.median(v):.3f}" for k, v in times.items()))
    print(f"  lines: source {source.count(chr(10))}, LLVM IR {out['llir'].count(chr(10))}, PTX "
          f"{out['ptx'].count(chr(10))}; SASS instructions {len(ins)}")
    for a, b, ops in sass_loops(sass):
        top = " ".join(f"{k}:{n}" for k, n in ops.most_common(12))
        print(f"  loop [{a}, {b}] {b - a + 1} instructions: {top}")
    if args.save:
        d = Path(args.save)
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{args.kernel}.src.py").write_text(source)
        for stage in ("ttgir", "llir", "ptx"):
            (d / f"{args.kernel}.{stage}").write_text(str(out[stage]))
        (d / f"{args.kernel}.cubin").write_bytes(out["cubin"])
        (d / f"{args.kernel}.sass").write_text(sass)
    if args.diff:
        other = sass_instructions(Path(args.diff).read_text())
        ops = difflib.SequenceMatcher(None, other, ins, autojunk=False).get_opcodes()
        there = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag != "equal")
        here = sum(j2 - j1 for tag, _, _, j1, j2 in ops if tag != "equal")
        print(f"  SASS against {args.diff}: " + ("the same instructions" if other == ins else
              f"{there} of its {len(other)} instructions replaced by {here} of these {len(ins)}"))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    sys.exit(main())
