"""GPU benchmark: safetile kernels (Triton backend) against PyTorch in the same process.

Every case is checked against torch first (fresh random inputs, outputs poisoned with NaN),
then timed with CUDA events after warm-up: each measurement is the mean of a batch of
back-to-back calls, the reported value the median over ``--reps`` batches; memory-bound cases
rotate over input copies (past L2). The baseline is torch's default path for the same work
(for attention: ``F.scaled_dot_product_attention``'s default choice, named, with its flash and
cuDNN backends beside it). Sections (bench/sections/): copy, add, rows (softmax / RMSNorm /
LayerNorm), gemm, attention (forward and backward), others (kernels in other people's styles;
NVIDIA's cuTile samples as shipped with ``--cutile-samples DIR``), launch, compile, safe.

    PYTHONPATH=src python bench/gpu_bench.py --quick          # a few minutes
    PYTHONPATH=src python bench/gpu_bench.py                  # everything
    PYTHONPATH=src python bench/gpu_bench.py --only gemm,attention --gemm-sizes 4096,8192

Writes JSON to bench/results/<device>/gpu_bench[-quick].json (or --out), a plot per sweep next
to it (torch time / safetile time against size; needs matplotlib), and prints a table last.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402

from benchlib import geomean, write_plots  # noqa: E402
from sections.attention import bench_attention  # noqa: E402
from sections.gemm import bench_gemm  # noqa: E402
from sections.launch import COMPILE_KERNELS, bench_compile, bench_launch  # noqa: E402
from sections.memory import bench_add, bench_copy, bench_rows  # noqa: E402
from sections.others import bench_others  # noqa: E402
from sections.safe import bench_safe  # noqa: E402

# in the order a full run takes them (the targets first: a run cut short keeps those)
SECTIONS = {"gemm": bench_gemm, "attention": bench_attention, "others": bench_others, "launch": bench_launch,
            "compile": bench_compile, "rows": bench_rows, "add": bench_add, "copy": bench_copy, "safe": bench_safe}


# ===================================================================================== report

def table(res) -> str:
    out = []

    def line(*cols):
        out.append("  ".join(str(c) for c in cols if c != ""))
    if res.get("copy"):
        line("== D2D copy (GB/s, read+write)")
        for r in res["copy"]:
            line(f"n=2^{int(math.log2(r['n'])):<3d}", f"safetile {r['safetile_GBps']:7.0f}",
                 f"torch {r['torch_GBps']:7.0f}", f"ratio {r['ratio']:.2f}")
    if res.get("add"):
        line("== element-wise add (GB/s)")
        for r in res["add"]:
            line(f"{r['dtype']:8s} n=2^{int(math.log2(r['n'])):<3d}", f"safetile {r['safetile_GBps']:7.0f}",
                 f"torch {r['torch_GBps']:7.0f}", f"ratio {r['ratio']:.2f}",
                 f"| graphs ratio {r['graph_ratio']:.2f}" if "graph_ratio" in r else "")
    if res.get("gemm"):
        line("== GEMM, fp32 accumulate (TFLOP/s; best candidate) vs torch.matmul")
        for r in res["gemm"]:
            b = r["best"]
            line(f"{r['dtype']:8s} {r['m']}x{r['n']}x{r['k']:<6}", f"safetile {r['safetile_TFLOPs']:6.1f}",
                 f"torch {r['torch_TFLOPs']:6.1f}", f"ratio {r['ratio']:.2f} (sel {r.get('select_ratio', r['ratio']):.2f})",
                 f"[{b['BM']}x{b['BN']}x{b['BK']} w{b['warps']} s{b['stages']} {b['kind']}{' tma' if b['tma'] else ''}]",
                 f"| graphs ratio {r['graph_ratio']:.2f} {r['graph_best']}" if "graph_ratio" in r else "")
        big = [r["ratio"] for r in res["gemm"] if r["m"] * r["n"] * r["k"] > 2048 ** 3]
        line(f"GEMM geomean ratio {geomean(r['ratio'] for r in res['gemm']):.3f} (all), {geomean(big):.3f} "
             f"(> 2048^3), min {min(r['ratio'] for r in res['gemm']):.3f}")
    for name in ("softmax", "rmsnorm", "layernorm"):
        if res.get(name):
            line(f"== {name} (GB/s)")
            for r in res[name]:
                line(f"{r['rows']}x{r['n']:<6d}", f"safetile {r['safetile_GBps']:7.0f}",
                     f"torch {r['torch_GBps']:7.0f}", f"ratio {r['ratio']:.2f}")
    if res.get("attention"):
        line("== flash attention bf16 (TFLOP/s) vs SDPA's default (backend named), and its flash / cuDNN backends")
        for r in res["attention"]:
            c = r["config"]
            tags = [f"occ{c['occ']}" if c.get("occ") else "", {1: "ws", 2: "pp"}.get(c.get("ws") or 0, ""),
                    "2d" if c.get("k2d") else "", "persistent" if c.get("k2d") == 2 else ""]
            cfg = (f"[BM {c['BM']} BN {c['BN']} w{c['warps']} s{c['stages']} {' '.join(t for t in tags if t)}]"
                   if "BM" in c else "")
            line(f"{r['pass']} d={r['d']:<4d} seq={r['seq']:<6d} causal={r['causal']!s:5s}",
                 f"safetile {r['safetile_TFLOPs']:6.1f}", f"default({r.get('torch_backend', '?')}) "
                 f"{r['torch_TFLOPs']:6.1f}", f"ratio {r['ratio']:.2f} (sel {r.get('select_ratio', r['ratio']):.2f})",
                 *(f"vs {n} {r[f'ratio_vs_{n}']:.2f}" for n in ("flash", "cudnn") if f"ratio_vs_{n}" in r), cfg)
        for p in ("fwd", "bwd"):
            if f"attention_{p}_geomean" in res:
                line(f"attention {p} geomean vs SDPA default {res[f'attention_{p}_geomean']:.3f} "
                     f"(seq >= 4096: {res[f'attention_{p}_geomean_seq4096plus']:.3f})")
    for sec in ("others", "samples"):
        if res.get(sec):
            line(f"== {sec} (time ratio torch / safetile; GB/s or TFLOP/s)")
            for r in res[sec]:
                if "error" in r:
                    line(f"{r['kernel']:24s} {r['size']:>10.3g}  FAILED: {r['error'][:100]}")
                    continue
                rate = (f"{r['safetile_GBps']:7.0f} vs {r['torch_GBps']:7.0f} GB/s" if r["unit"] == "bytes"
                        else f"{r['safetile_TFLOPs']:6.1f} vs {r['torch_TFLOPs']:6.1f} TFLOP/s")
                line(f"{r['kernel']:24s} {r['size']:>10.3g} {r['unit']:5s}", rate, f"ratio {r['ratio']:.2f}",
                     f"graphs {r['graph_ratio']:.2f}" if "graph_ratio" in r else "",
                     f"(cuTile 1.7 H100: {r['cutile_h100_ratio']:.2f})" if r.get("cutile_h100_ratio") else "")
    if res.get("launch"):
        line("== launch overhead (us per launch)")
        for r in res["launch"]["rows"]:
            line(f"{r['who']:8s} n={r['n']:<5d}", f"sync {r['sync_us']:7.2f}", f"chained {r['chained_us']:7.2f}",
                 f"graph {r['graph_us']:7.2f}")
        for k, v in res["launch"].get("host", {}).items():
            line(f"host {k:46s} {v:6.2f} us")
    if res.get("safe"):
        line("== safe (@ct.entry, checked launch) vs unchecked (@ct.kernel), same tiles, chained launches")
        for r in res["safe"]["rows"]:
            line(f"{r['case']:36s}", f"safe {r['safe_rate']:8.1f}", f"unchecked {r['unchecked_rate']:8.1f} {r['unit']}",
                 f"unchecked/safe time ratio {r['ratio_unchecked_over_safe']:.4f}")
        h = res["safe"].get("host", {})
        line("host us/launch: " + ", ".join(f"{k[:-3]} {v:.1f}" for k, v in h.items()))
    if res.get("compile"):
        line("== first-launch compile time (s)")
        for r in res["compile"]:
            line(f"{r['kernel']:10s}", *(f"{p} {r[p]['first_launch_s']:.3f}" if "first_launch_s" in r[p] else f"{p} FAILED"
                                         for p in ("cold_install", "cold", "warm", "warm_no_pyc") if p in r))
    bad = [c["name"] for c in res.get("checks", []) if not c["ok"]]
    line(f"== correctness: {len(res.get('checks', [])) - len(bad)}/{len(res.get('checks', []))} checks passed"
         + (f"; FAILED: {', '.join(bad)}" if bad else ""))
    if res.get("errors"):
        line(f"== section errors: {', '.join(res['errors'])}")
    return "\n".join(out)


# ===================================================================================== CLI

def ints(text):
    return [int(eval(x, {})) for x in text.split(",") if x]  # noqa: S307 - "1<<20" style sizes from the command line


def shapes(text):
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",") if s]


def sections_arg(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in SECTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown section(s) {', '.join(unknown) or '(none given)'}; "
                                         f"choose from {', '.join(SECTIONS)}")
    return names


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a subset that runs in a few minutes")
    p.add_argument("--only", type=sections_arg, default=None, help="comma list of sections: " + ",".join(SECTIONS))
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--tile", type=int, default=2048, help="element-wise tile size")
    p.add_argument("--add-sizes", type=ints, default=None)
    p.add_argument("--add-dtypes", default="float32,float16")
    p.add_argument("--copy-sizes", type=ints, default=None)
    p.add_argument("--gemm-sizes", type=ints, default=None)
    p.add_argument("--gemm-shapes", type=shapes, default=None, help="extra MxNxK shapes")
    p.add_argument("--gemm-dtypes", default="float16,bfloat16")
    p.add_argument("--gemm-tma", default="1,0", help="time each config with tensor descriptors (1) and/or pointer loads (0)")
    p.add_argument("--gemm-graph-limit", type=int, default=4096,
                   help="also time GEMMs up to this cube root of MNK inside CUDA graphs (kernel time only)")
    p.add_argument("--gemm-configs", default="128x256x64x8x3,128x256x64x8x4,256x128x64x8x4,128x128x64x8x4,"
                   "256x128x64x4x3x1", help="BMxBNxBKxWARPSxSTAGES[xWS] list (256x128: rows of B not on 128-byte "
                   "lines; 128x128: 1024^3; WS 1: warp-specialised, 4 warps)")
    p.add_argument("--gemm-small-configs", default="64x128x64x4x4,128x64x64x4x4,128x128x64x4x4,64x256x64x8x3,"
                   "128x128x64x4x4x1",
                   help="more tile configs for problems up to --gemm-graph-limit^3 (a 128x128 grid of 1024^3 fills "
                        "64 of 132 SMs)")
    p.add_argument("--confirm-rounds", type=int, default=4,
                   help="rounds timing safetile's kernel and torch's in turn for each reported ratio (benchlib.confirmed; "
                        "the copy, add, row, GEMM, attention and others sections)")
    p.add_argument("--gemm-persistent", type=int, default=1, help="also time persistent, stream-K and split-tail GEMMs")
    p.add_argument("--gemm-persistent-configs", default="128x256x64x4x4x1,256x128x64x4x4x1",
                   help="more tile configs for the persistent kernel (x1: warp-specialised)")
    p.add_argument("--gemm-streamk-configs", default="256x128x64x8x3", help="more tile configs for stream-K (ragged shapes)")
    p.add_argument("--softmax-widths", type=ints, default=[4096, 32768])
    p.add_argument("--softmax-elems", type=int, default=1 << 25)
    p.add_argument("--norm-hidden", type=ints, default=[4096, 8192])
    p.add_argument("--norm-dtype", default="bfloat16")
    p.add_argument("--rows", type=int, default=16384)
    p.add_argument("--attn-dims", type=ints, default=[64, 128])
    p.add_argument("--attn-seqs", type=ints, default=None)
    p.add_argument("--attn-heads", type=int, default=16)
    p.add_argument("--attn-tokens", type=int, default=16384, help="batch * seq")
    p.add_argument("--attn-probe-seq", type=int, default=4096)
    p.add_argument("--attn-configs-64", default="128x128x8x3x2,256x64x4x2x0x2,128x128x4x2x0x2,256x128x4x2x0x1",
                   help="BMxBNxWARPSxSTAGES[xOCCUPANCY[xWS]] list (WS 1: warp_specialize=True, 2: \"pingpong\")")
    p.add_argument("--attn-configs-128", default="128x128x4x2x0x2,128x64x4x2x0x2,128x128x4x2x0x1,256x64x4x2x0x1,"
                   "128x128x8x3")
    p.add_argument("--attn-kernels", default="1,2",
                   help="0: 3-D tiles (pointer loads), 1: 2-D tiles (TMA), 2: 2-D persistent")
    p.add_argument("--attn-bwd", type=int, default=1, help="also the backward pass")
    p.add_argument("--attn-bwd-dkdv-64", default="32x128x8x3,64x128x8x3,64x128x4x2x0x2", help="BM(queries)xBN(keys)xWxS")
    p.add_argument("--attn-bwd-dkdv-128", default="64x128x4x2x0x1,32x128x8x3")
    p.add_argument("--attn-bwd-fused-64", default="",
                   help="dK/dV kernels that add dQ up with atomics, BM(queries)xBN(keys)xWxS, also timed "
                        "(H200, session 12: 1.4-1.7x slower than the two-kernel pass; e.g. 64x128x8x3)")
    p.add_argument("--attn-bwd-fused-128", default="", help="the same for d=128 (e.g. 32x128x8x3)")
    p.add_argument("--attn-bwd-dq-64", default="128x64x8x3,128x32x8x3,128x64x4x2x0x2,128x128x4x2x0x2")
    p.add_argument("--attn-bwd-dq-128", default="128x32x8x3,128x64x8x3,128x64x4x2x0x2")
    p.add_argument("--others-norm-shapes", type=shapes, default=None, help="RxN rows for the chunked row kernels")
    p.add_argument("--others-rms3d-shapes", type=shapes, default=None, help="BxSxH")
    p.add_argument("--others-embedding-shapes", type=shapes, default=None, help="VOCABxDIMxTOKENS")
    p.add_argument("--others-transpose", default="8192:float16,8192:float32", help="N:dtype list")
    p.add_argument("--others-bmm", type=shapes, default=None, help="BATCHxM (square)")
    p.add_argument("--others-gemm2d", type=ints, default=[4096], help="square sizes for the plain 2-D-grid GEMM")
    p.add_argument("--others-kernels", default="", help="only the others/samples cases whose names start so")
    p.add_argument("--cutile-samples", default=None, help="a copy of NVIDIA cuTile Python's samples/ folder")
    p.add_argument("--launch-counts", type=ints, default=[1, 100, 1000])
    p.add_argument("--compile-kernels", default=None,
                   help=f"first launches to time (default gemm,attention; known: {','.join(COMPILE_KERNELS)})")
    p.add_argument("--compile-profile", type=int, default=0, help="also profile a cold and a warm first launch")
    p.add_argument("--compile-reps", type=int, default=1, help="cold first launches per kernel (median)")
    p.add_argument("--mem-budget", type=float, default=None, help="bytes of GPU memory to use (default 60%%)")
    p.add_argument("--safe-add-n", type=ints, default=[1 << 28])
    p.add_argument("--safe-gemm-sizes", type=ints, default=[8192])
    p.add_argument("--safe-gemm-tile", default="128x256x64", help="BMxBNxBK of the safe/unchecked GEMM pair")
    p.add_argument("--safe-batch-ms", type=float, default=40.0, help="length of one timed chain of launches")
    p.add_argument("--safe-reps", type=int, default=7, help="timed chains per style (alternating)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    q = args.quick
    args.safe_add_n = args.safe_add_n[0]
    args.safe_gemm_tile = tuple(int(v) for v in args.safe_gemm_tile.split("x"))
    args.add_sizes = args.add_sizes or ([1 << 20, 1 << 24, 1 << 28] if q else [1 << s for s in range(20, 29, 2)])
    args.copy_sizes = args.copy_sizes or ([1 << 24, 1 << 28] if q else [1 << 20, 1 << 24, 1 << 28])
    args.gemm_sizes = args.gemm_sizes if args.gemm_sizes is not None else (
        [4096, 8192] if q else [1024, 2048, 4096, 8192, 16384])
    args.gemm_shapes = args.gemm_shapes if args.gemm_shapes is not None else \
        ([(3000, 5000, 4096)] if q else [(8192, 8192, 1000), (3000, 5000, 4096)])
    args.attn_seqs = args.attn_seqs or ([4096] if q else [4096, 8192, 16384])
    args.others_norm_shapes = args.others_norm_shapes or [(1024, 2048), (16384, 4096)]
    args.others_rms3d_shapes = args.others_rms3d_shapes or [(4, 4096, 4096)]
    args.others_embedding_shapes = args.others_embedding_shapes or [(32000, 4096, 8192)]
    args.others_bmm = args.others_bmm or [(8, 2048)]
    args.others_transpose = [(int(a), b) for a, b in (x.split(":") for x in args.others_transpose.split(",") if x)]
    args.others_kernels = [k for k in args.others_kernels.split(",") if k]
    args.add_dtypes = args.add_dtypes.split(",")
    args.attn_kernels = [int(x) for x in args.attn_kernels.split(",")]
    args.gemm_dtypes = args.gemm_dtypes.split(",")
    args.gemm_tma = [bool(int(x)) for x in args.gemm_tma.split(",")]
    args.compile_kernels = (args.compile_kernels or "gemm,attention").split(",")
    unknown = [k for k in args.compile_kernels if k not in COMPILE_KERNELS]
    if unknown:
        p.error(f"unknown --compile-kernels {','.join(unknown)}; known: {','.join(COMPILE_KERNELS)}")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.mem_budget is None:
        args.mem_budget = 0.6 * torch.cuda.get_device_properties(0).total_memory
    sections = args.only or list(SECTIONS)
    dev = torch.cuda.get_device_name(0)
    import triton
    res = {"device": dev, "capability": list(torch.cuda.get_device_capability(0)), "torch": torch.__version__,
           "triton": triton.__version__, "python": platform.python_version(), "quick": args.quick,
           "argv": sys.argv[1:] if argv is None else list(argv), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "errors": []}
    print(f"device: {dev}  torch {torch.__version__}  triton {triton.__version__}", flush=True)
    for s in sections:
        print(f"== {s}", flush=True)
        t0 = time.perf_counter()
        try:
            SECTIONS[s](args, res)
        except Exception:  # noqa: BLE001 - keep the other sections' numbers
            traceback.print_exc()
            res["errors"].append(s)
        torch.cuda.empty_cache()
        res.setdefault("section_seconds", {})[s] = time.perf_counter() - t0
        save(res, args, dev)  # after every section: a run cut short keeps what it measured
    out = save(res, args, dev, plots=True)
    print(f"\nwrote {out}\n")
    print(table(res))


def save(res, args, dev, plots=False) -> Path:
    safe = "".join(ch if ch.isalnum() else "_" for ch in dev).strip("_")
    out = Path(args.out) if args.out else \
        ROOT / "bench" / "results" / safe / f"gpu_bench{'-quick' if args.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(res, indent=1, default=str)
    out.write_text(text)
    targets = [out]
    if os.environ.get("OUT"):  # the device runner's result folder
        copy = Path(os.environ["OUT"]) / out.name
        if copy.resolve() != out.resolve():
            copy.write_text(text)
            targets.append(copy)
    if plots:
        for t in targets:
            try:
                write_plots(res, t)
            except Exception:  # noqa: BLE001 - a plot is never worth the numbers
                traceback.print_exc()
    return out


if __name__ == "__main__":
    main()
