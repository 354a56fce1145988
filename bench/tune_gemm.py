"""Autotune the benchmark GEMM kernel (bench/kernels/gemm.py) with ``ct.tune.exhaustive_search``.

Searches tile sizes (BM, BN, BK, Constants), num_warps/num_stages (hints) and tensor
descriptors (TMA, a Constant) at one square size, checks the winner against torch.matmul,
and times torch.matmul the same way (CUDA events, L2 flushed before each call, median).

    PYTHONPATH=src python bench/tune_gemm.py --out tune_gemm.json            # GPU, 4096³ f16
    PYTHONPATH=src python bench/tune_gemm.py --size 64 --configs 32x32x16x4x2,64x64x32x4x3

Without CUDA the search runs in Triton's interpreter on the CPU, for sizes up to 256.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402

import safetile as ct  # noqa: E402
from kernels.gemm import matmul  # noqa: E402

DEFAULT_CONFIGS = "128x256x64x8x3,128x256x64x8x4,128x128x64x8x4,128x128x64x4x4,64x128x64x4x4,64x64x64x4x4"
INTERPRETER_MAX_SIZE = 256
GROUP = 8


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=4096, help="M = N = K")
    p.add_argument("--shape", default=None, help="MxNxK (instead of --size), e.g. 3000x5000x4096")
    p.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    p.add_argument("--configs", default=DEFAULT_CONFIGS, help="BMxBNxBKxWARPSxSTAGES list")
    p.add_argument("--tma", default="0,1", help="TMA values to search (0: pointer loads, 1: tensor descriptors)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", default=None, help="write the result as JSON here")
    args = p.parse_args(argv)
    try:
        args.mnk = tuple(int(v) for v in args.shape.split("x")) if args.shape else (args.size,) * 3
    except ValueError:
        p.error(f"--shape must look like 3000x5000x4096, got {args.shape!r}")
    if len(args.mnk) != 3 or min(args.mnk) < 1:
        p.error("--size / --shape must give three positive sizes")
    try:
        args.search_space = [dict(zip(("BM", "BN", "BK", "num_warps", "num_stages"), map(int, c.split("x"))),
                                  TMA=bool(int(t)))
                             for c in args.configs.split(",") if c for t in args.tma.split(",") if t]
    except ValueError:
        p.error(f"--configs must look like 128x128x64x8x4,... and --tma like 0,1 (got {args.configs!r}, {args.tma!r})")
    if any(len(c) != 6 for c in args.search_space):
        p.error("each --configs entry needs five numbers: BMxBNxBKxWARPSxSTAGES")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    cuda = torch.cuda.is_available()
    if not cuda:
        if max(args.mnk) > INTERPRETER_MAX_SIZE:
            raise SystemExit(f"no CUDA device: the interpreter fallback needs --size <= {INTERPRETER_MAX_SIZE}")
        os.environ["TRITON_INTERPRET"] = "1"
        os.environ["SAFETILE_BACKEND"] = "triton"
    dev = "cuda" if cuda else "cpu"
    td = getattr(torch, args.dtype)
    m, n, k = args.mnk
    gen = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(m, k, device=dev, dtype=td, generator=gen)
    b = torch.randn(k, n, device=dev, dtype=td, generator=gen)
    c = torch.empty(m, n, device=dev, dtype=td)

    t0 = time.perf_counter()
    result = ct.tune.exhaustive_search(
        args.search_space, None, lambda cfg: (ct.cdiv(m, cfg["BM"]) * ct.cdiv(n, cfg["BN"]),), matmul,
        lambda cfg: (a, b, c, cfg["BM"], cfg["BN"], cfg["BK"], GROUP, cfg["TMA"]),
        reps=args.reps, warmup=args.warmup, force=True)
    search_s = time.perf_counter() - t0

    best = result.config
    c.fill_(float("nan"))
    ct.launch(None, (ct.cdiv(m, best["BM"]) * ct.cdiv(n, best["BN"]),), result.kernel,
              (a, b, c, best["BM"], best["BN"], best["BK"], GROUP, best["TMA"]))
    ref = torch.matmul(a.float(), b.float())
    ok = bool(torch.allclose(c.float(), ref, rtol=2e-2, atol=5e-1 if k > 2048 else 1e-1))
    out = torch.empty_like(c)
    t_torch = ct.tune.time_ms(lambda: torch.matmul(a, b, out=out), cuda=cuda, reps=args.reps, warmup=args.warmup)

    flop = 2.0 * m * n * k
    res = {"device": result.device, "m": m, "n": n, "k": k, "dtype": args.dtype, "search_seconds": search_s,
           "best": best, "best_ms": result.time_ms, "best_TFLOPs": flop / result.time_ms / 1e9, "correct": ok,
           "torch_ms": t_torch, "torch_TFLOPs": flop / t_torch / 1e9, "ratio": t_torch / result.time_ms,
           "trials": [{**t.config, "ms": t.time_ms, "error": t.error} for t in result.trials],
           "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    for t in result.trials:
        cfg = " ".join(f"{key}={v}" for key, v in t.config.items())
        print(f"  {cfg:60s} {f'{t.time_ms:.4f} ms' if t.ok else 'failed: ' + t.error.splitlines()[0][:100]}")
    print(f"{result.device} {args.dtype} {m}x{n}x{k}: best {best} {result.time_ms:.4f} ms "
          f"({res['best_TFLOPs']:.1f} TFLOP/s, correct: {ok}); torch.matmul {t_torch:.4f} ms "
          f"({res['torch_TFLOPs']:.1f} TFLOP/s); ratio torch/safetile {res['ratio']:.2f}; search {search_s:.1f} s")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=1))
        print(f"wrote {args.out}")
    return res


if __name__ == "__main__":
    main()
