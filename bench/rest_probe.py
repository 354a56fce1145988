"""Does a GEMM's timing depend on what the GPU did just before? (issue 12 item 2; session 18.)

In session 18's GEMM sweep the chosen kernel, timed again beside torch in alternating rounds, ran
5-14 % slower than when it was chosen, while torch's time did not move. During selection each
candidate is timed right after its compile, on a GPU that has idled for a second; torch was timed
without such a rest. Here safetile's GEMM (a fixed config) and ``torch.matmul`` are each timed
(``time_ms``, CUDA-event medians) in three conditions, in rounds: after ``--rest`` seconds of an idle
GPU, right after ``--load`` seconds of torch.matmul on the same shape, right after as long of
itself. The SM clock (NVML, where torch can read it) is printed beside each reading.

    PYTHONPATH=src python bench/rest_probe.py [--json out.json]
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
from benchlib import time_ms  # noqa: E402
from kernels.gemm import matmul, matmul_persistent  # noqa: E402


def clock_mhz() -> float | None:
    try:
        return float(torch.cuda.clock_rate())
    except Exception:  # noqa: BLE001 - no NVML here: the clock is left out
        return None


def busy(fn, seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192x8192x1000,4096x4096x4096,3000x5000x4096")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rest", type=float, default=1.0)
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--json")
    a = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for shape in a.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        x = torch.randn(m, k, device="cuda", dtype=torch.float16)
        w = torch.randn(k, n, device="cuda", dtype=torch.float16)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        tiles = ct.cdiv(m, 128) * ct.cdiv(n, 256)
        tile_k = matmul.replace_hints(num_warps=8, num_stages=3)
        pers_k = matmul_persistent.replace_hints(num_warps=8, num_stages=3)
        kernels = {
            "torch.matmul": lambda: torch.matmul(x, w),
            "safetile 128x256 w8 s3 (walked)": lambda: ct.launch(None, (tiles,), tile_k, (x, w, c, 128, 256, 64, 8, True)),
            "safetile 128x256 w8 s3 persistent": lambda: ct.launch(None, (min(tiles, sms),), pers_k,
                                                                   (x, w, c, 128, 256, 64, 8, min(tiles, sms))),
        }
        ref = torch.matmul(x, w).float()
        for name, fn in kernels.items():
            c.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            if name != "torch.matmul":
                err = ((c.float() - ref).norm() / ref.norm()).item()
                assert err < 1e-2, f"{shape} {name}: rel err {err:.1e}"
        samples: dict[tuple[str, str], list[tuple[float, float | None]]] = {}
        for _ in range(a.rounds):
            for name, fn in kernels.items():
                for cond in ("rested", "after torch", "after itself"):
                    if cond == "rested":
                        torch.cuda.synchronize()
                        time.sleep(a.rest)
                    else:
                        busy(kernels["torch.matmul"] if cond == "after torch" else fn, a.load)
                    t = time_ms([fn], a.reps)
                    samples.setdefault((name, cond), []).append((t, clock_mhz()))
        flop = 2.0 * m * n * k
        for (name, cond), ts in samples.items():
            t = statistics.median(s[0] for s in ts)
            clocks = [s[1] for s in ts if s[1] is not None]
            row = {"shape": shape, "kernel": name, "condition": cond, "ms": t, "TFLOPs": flop / t / 1e9,
                   "samples_ms": [s[0] for s in ts], "sm_clock_mhz": clocks}
            rows.append(row)
            print(f"{shape:16s} {name:36s} {cond:13s} {row['TFLOPs']:6.1f} TFLOP/s  "
                  f"clock {statistics.median(clocks) if clocks else float('nan'):6.0f} MHz", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
