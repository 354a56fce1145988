"""Where the time goes on GEMMs whose shapes are not multiples of the tile (issue 12 item 2).

Times torch.matmul (``a @ b``, cuBLAS) and safetile GEMM candidates per shape, each checked
against torch first, with the GEMM section's timing (``benchlib.time_ms``: CUDA events, medians).
The default shapes take 3000x5000x4096 apart: ragged edges (3000 = 23.4 x 128), rows that do not
start on 128-byte lines (N = 5000: a row of B or C is 10000 bytes; 5056 makes rows of 10112 =
79 x 128 bytes), and the partial last wave (480 tiles of 128x256 on 132 SMs). ``--ncu`` has
Nsight Compute read L2 and DRAM counters of a few cases in a child process.

    PYTHONPATH=src python bench/gemm_ragged.py --out gemm_ragged.json
    PYTHONPATH=src python bench/gemm_ragged.py --shapes 3000x5000x4096 --candidates tile:128x256x64x8x3:tma

A candidate is KIND:BMxBNxBKxWARPSxSTAGES[:tma][:ws][:gGROUP][:cCTAS] (ws: warp-specialised) with KIND tile, persistent,
streamk or splittail (bench/kernels/gemm.py); ``--extra`` lists more candidates for the first shape.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402

from benchlib import launch, time_graph_ms, time_ms, unpin_ws_stages  # noqa: E402
from kernels.gemm import plan_splittail, plan_streamk  # noqa: E402
from sections.gemm import _candidate  # noqa: E402

SHAPES = "3000x5000x4096,3072x5120x4096,3072x5000x4096,3072x5056x4096,3000x5120x4096,4096x4096x4096"
CANDIDATES = "tile:128x256x64x8x3:tma,tile:256x128x64x8x3:tma,splittail:128x256x64x8x3,splittail:256x128x64x8x3"
EXTRA = ("tile:128x256x64x8x4:tma,tile:256x128x64x8x4:tma,tile:128x256x64x8x3,tile:128x256x64x8x3:tma:g1,"
         "tile:128x256x64x8x3:tma:g4,tile:128x256x64x8x3:tma:g16,tile:256x128x64x8x3:tma:g16,"
         "tile:128x128x64x8x4:tma,tile:128x128x64x4x3:tma,persistent:128x256x64x8x3,streamk:256x128x64x8x3,"
         "splittail:128x256x64x8x4,splittail:256x128x64x8x4,tile:256x256x64x8x3:tma:c2")
NCU = "3000x5000x4096:cublas,3000x5000x4096:tile:128x256x64x8x3:tma,3072x5120x4096:tile:128x256x64x8x3:tma," \
      "3072x5056x4096:tile:128x256x64x8x3:tma,3000x5000x4096:tile:256x128x64x8x3:tma,3072x5120x4096:cublas"
NCU_METRICS = ["gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second",
               "sm__throughput.avg.pct_of_peak_sustained_elapsed", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
               "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum", "dram__bytes_write.sum",
               "lts__t_sectors.sum", "lts__t_requests.sum", "lts__t_sector_hit_rate.pct",
               "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed"]


def parse_shape(text):
    m, n, k = (int(v) for v in text.split("x"))
    return m, n, k


def parse_candidate(text):
    """KIND:BMxBNxBKxWxS[:tma][:ws][:gN][:cN] -> (kind, cfg, tma)."""
    kind, tiles, *opts = text.split(":")
    cfg = dict(zip(("BM", "BN", "BK", "warps", "stages"), (int(v) for v in tiles.split("x"))))
    tma = False
    for o in opts:
        if o == "tma":
            tma = True
        elif o == "ws":
            cfg["ws"] = 1
        elif o[0] == "g":
            cfg["group"] = int(o[1:])
        elif o[0] == "c":
            cfg["ctas"] = int(o[1:])
        else:
            raise SystemExit(f"unknown candidate option {o!r} in {text!r}")
    return kind, cfg, tma


def applies(kind, cfg, m, n, k, sms):
    """Whether a kind has anything to do on this shape (split kinds need a partial last wave)."""
    if kind == "streamk":
        return bool(plan_streamk(m, n, k, cfg["BM"], cfg["BN"], cfg["BK"], sms)[1])
    if kind == "splittail":
        return plan_splittail(m, n, k, cfg["BM"], cfg["BN"], cfg["BK"], sms)[1] > 1
    return True


def inputs(m, n, k, dtype):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    return a, b, torch.empty(m, n, device="cuda", dtype=dtype)


def measure(args, sms, save=lambda rows: None):
    """Per shape: torch, then every candidate that applies (checked, timed, checked again)."""
    rows = []
    shapes = [parse_shape(s) for s in args.shapes.split(",") if s]
    for si, (m, n, k) in enumerate(shapes):
        a, b, c = inputs(m, n, k, args.dtype)
        ref = torch.matmul(a, b)
        ref32 = ref.float()
        flop = 2.0 * m * n * k
        t_torch = time_ms([lambda: torch.matmul(a, b)], args.reps)
        graphs = m * n * k <= args.graph_limit ** 3  # host-bound: also timed inside CUDA graphs
        g_torch = time_graph_ms([lambda: torch.matmul(a, b)], args.reps) if graphs else None
        tiles = -(-m // 128) * -(-n // 256)
        row = {"m": m, "n": n, "k": k, "dtype": str(args.dtype), "torch_ms": t_torch,
               "torch_TFLOPs": flop / t_torch / 1e9, "tiles_128x256": tiles, "candidates": [],
               "torch_graph_ms": g_torch}
        print(f"{m}x{n}x{k}: torch {t_torch * 1e3:7.1f} us {flop / t_torch / 1e9:6.1f} TFLOP/s", flush=True)
        extra = [x for x in args.extra.split(",") if x] if si == 0 else []
        names = [x for x in args.candidates.split(",") if x] + extra
        for name in names:
            kind, cfg, tma = parse_candidate(name)
            if not applies(kind, cfg, m, n, k, sms):
                continue
            try:
                kern, grid, kargs = _candidate(cfg, kind, tma, a, b, c, sms)
                c.fill_(float("nan"))
                launch(grid, kern, kargs)
                torch.cuda.synchronize()
                err = ((c.float() - ref32).norm() / ref32.norm()).item()
                ok = bool(torch.isfinite(c).all().item()) and err < 1e-2
                t = time_ms([lambda: launch(grid, kern, kargs)], args.reps)
                g = time_graph_ms([lambda: launch(grid, kern, kargs)], args.reps) if graphs else None
                for _ in range(args.checks):  # the timed launches must still compute the same C
                    c.fill_(float("nan"))
                    launch(grid, kern, kargs)
                    torch.cuda.synchronize()
                    ok = ok and bool(torch.isfinite(c).all().item()) and \
                        ((c.float() - ref32).norm() / ref32.norm()).item() < 1e-2
            except Exception as e:  # noqa: BLE001 - a candidate that does not compile or fit
                print(f"  {name}: failed ({type(e).__name__}: {str(e)[:160]})", flush=True)
                row["candidates"].append({"name": name, "error": f"{type(e).__name__}: {str(e)[:300]}"})
                continue
            entry = {"name": name, "ms": t, "TFLOPs": flop / t / 1e9, "ratio": t_torch / t, "rel_err": err,
                     "ok": ok, "grid": list(grid)}
            if graphs:
                entry.update(graph_ms=g, graph_ratio=g_torch / g)
            row["candidates"].append(entry)
            print(f"  {name:40s} {t * 1e3:7.1f} us {entry['TFLOPs']:6.1f} TFLOP/s ratio {entry['ratio']:.3f}"
                  f"{f' graphs {g_torch / g:.3f}' if graphs else ''}"
                  f"{'' if ok else f'  WRONG (rel err {err:.2e})'}", flush=True)
        rows.append(row)
        save(rows)
        del a, b, c, ref, ref32
    return rows


def ncu_child(args, sms):
    """Each listed case once, warmed up, between cudaProfilerStart/Stop (ncu --profile-from-start off)."""
    for case in args.ncu_cases.split(","):
        shape, rest = case.split(":", 1)
        m, n, k = parse_shape(shape)
        a, b, c = inputs(m, n, k, args.dtype)
        if rest == "cublas":
            run = lambda: torch.matmul(a, b)  # noqa: E731
        else:
            kind, cfg, tma = parse_candidate(rest)
            kern, grid, kargs = _candidate(cfg, kind, tma, a, b, c, sms)
            run = lambda: launch(grid, kern, kargs)  # noqa: E731
        run()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        run()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print(f"ncu case {case}", flush=True)


def run_ncu(args, out_dir):
    ncu = shutil.which("ncu")
    if not ncu:
        print("ncu: not found")
        return None
    try:
        known = subprocess.run([ncu, "--query-metrics", "--chip", "gh100"], capture_output=True, text=True,
                               timeout=60).stdout
    except Exception as e:  # noqa: BLE001
        print(f"ncu --query-metrics failed: {e}")
        known = ""
    metrics = [x for x in NCU_METRICS if not known or x.split(".")[0] in known]
    cmd = [ncu, "--profile-from-start", "off", "--clock-control", "none", "--csv", "--metrics", ",".join(metrics),
           sys.executable, __file__, "--ncu-child", "--ncu-cases", args.ncu_cases, "--dtype", args.dtype_name]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.ncu_timeout)
    (out_dir / "ncu.csv").write_text(p.stdout)
    (out_dir / "ncu_stderr.txt").write_text(p.stderr[-20000:])
    print(f"ncu: rc {p.returncode}, {time.time() - t0:.0f} s, metrics {len(metrics)} of {len(NCU_METRICS)}")
    return summarize_ncu(p.stdout)


def summarize_ncu(text):
    """{kernel #: {metric: value}} from ncu's CSV (one row per kernel and metric)."""
    import csv
    import io
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    out = {}
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        key = f"{r.get('ID')} {r.get('Kernel Name', '')[:60]}"
        out.setdefault(key, {})[f"{r.get('Metric Name')} ({r.get('Metric Unit')})"] = r.get("Metric Value")
    for key, vals in out.items():
        print(key)
        for mk, v in vals.items():
            print(f"    {mk:75s} {v}")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=SHAPES)
    p.add_argument("--candidates", default=CANDIDATES)
    p.add_argument("--extra", default=EXTRA, help="more candidates, timed on the first shape only")
    p.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--checks", type=int, default=3, help="checks after timing (a wrong pipeline can be intermittent)")
    p.add_argument("--graph-limit", type=int, default=2048, help="shapes up to this^3 are also timed in CUDA graphs")
    p.add_argument("--ws-stages-as-hinted", action="store_true",
                   help="experiment: warp-specialised kernels keep their hinted num_stages (safetile pins 2)")
    p.add_argument("--ncu", type=int, default=0, help="also read counters with Nsight Compute")
    p.add_argument("--ncu-cases", default=NCU)
    p.add_argument("--ncu-timeout", type=int, default=120)
    p.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    args.dtype_name, args.dtype = args.dtype, getattr(torch, args.dtype)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if args.ws_stages_as_hinted:
        unpin_ws_stages()
    if args.ncu_child:
        return ncu_child(args, sms)
    res = {"device": torch.cuda.get_device_name(), "sms": sms, "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": []}
    out = Path(args.out) if args.out else None

    def save(rows):
        if out:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps({**res, "rows": rows}, indent=1))
    res["rows"] = measure(args, sms, save)
    if args.ncu:
        res["ncu"] = run_ncu(args, out.parent if out else Path("."))
        if out:
            out.write_text(json.dumps(res, indent=1))
    print(f"\n== {res['device']}: {args.dtype_name}, time per shape (us) and ratio torch/safetile")
    for r in res["rows"]:
        ok = [c for c in r["candidates"] if c.get("ok")]
        best = min(ok, key=lambda c: c["ms"]) if ok else None
        wrong = sum(1 for c in r["candidates"] if "ok" in c and not c["ok"])
        print(f"{r['m']}x{r['n']}x{r['k']:<6} torch {r['torch_ms'] * 1e3:6.1f}  "
              f"best {best['ms'] * 1e3 if best else 0:6.1f} "
              f"ratio {best['ratio'] if best else 0:.3f}  [{best['name'] if best else '-'}]"
              f"{f'  {wrong} WRONG' if wrong else ''}")
    return res


if __name__ == "__main__":
    main()
