#!/usr/bin/env python
"""Run every attack (NN_name.py, or NNb_name.py for a variant of NN) in a subprocess with a timeout and print a summary table.

Exit codes of an attack: 0 HELD, 1 BROKEN, 2 HANG (its own watchdog), 3 INCONCLUSIVE;
a runner timeout is reported as HANG. Attacks whose docstring mentions "Active backend"
or "active backend" also run with SAFETILE_BACKEND=triton TRITON_INTERPRET=1.

usage: python attacks/run_all.py [-j N] [-k substring] [--no-triton] [--dir round2]
(the later rounds' run_all.py call this runner on their own folder)
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STATUS = {0: "HELD", 1: "BROKEN", 2: "HANG", 3: "INCONCLUSIVE"}


def attacks(filt, here):
    out = []
    def number(n):  # "301b_x.py" -> 301 (a letter after the number: a variant of that attack)
        m = re.match(r"^(\d+)[a-z]?_", n)
        return int(m.group(1)) if m else 10**9
    for f in sorted(os.listdir(here), key=lambda n: (number(n), n)):
        if re.match(r"^\d+[a-z]?_.*\.py$", f) and (not filt or filt in f):
            out.append(f)
    return out


def wants_triton(path):
    with open(path) as fh:
        head = fh.read(3000)
    return "# BACKENDS: cpu triton" in head


def run_one(f, backend, timeout, here):
    env = dict(os.environ)
    env.setdefault("SAFETILE_CACHE_DIR", "off")
    if backend == "triton":
        env.update(SAFETILE_BACKEND="triton", TRITON_INTERPRET="1")
    t0 = time.time()
    try:
        r = subprocess.run([sys.executable, os.path.join(here, f)], cwd=here, env=env, capture_output=True,
                           text=True, timeout=timeout)
        code, out = r.returncode, (r.stdout + r.stderr)
    except subprocess.TimeoutExpired as e:
        code, out = 2, f"runner timeout after {timeout}s\n" + ((e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""))
    status = STATUS.get(code, f"ERROR({code})")
    line = ""
    for ln in out.splitlines():
        if ln.startswith(("HELD:", "BROKEN:", "HANG:", "INCONCLUSIVE:")):
            line = ln.split(":", 1)[1].strip()
    if not line:
        line = (out.strip().splitlines() or [""])[-1]
    return f, backend, status, time.time() - t0, line


def main(here: str = HERE):
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("-k", default="")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument("--width", type=int, default=150)
    ap.add_argument("--dir", default="", help="a folder of attacks (default: this one)")
    a = ap.parse_args()
    here = os.path.join(HERE, a.dir) if a.dir else here
    jobs = []
    for f in attacks(a.k, here):
        jobs.append((f, "cpu"))
        if not a.no_triton and wants_triton(os.path.join(here, f)):
            jobs.append((f, "triton"))
    results = []
    with cf.ThreadPoolExecutor(a.j) as ex:
        futs = [ex.submit(run_one, f, b, a.timeout, here) for f, b in jobs]
        for fu in cf.as_completed(futs):
            r = fu.result()
            results.append(r)
            print(f"  {r[2]:<12} {r[0]} [{r[1]}] {r[3]:.1f}s", file=sys.stderr)
    order = {j: i for i, j in enumerate(jobs)}
    results.sort(key=lambda r: order[(r[0], r[1])])
    print(f"{'attack':<40} {'backend':<7} {'result':<12} {'time':>6}  detail")
    print("-" * a.width)
    for f, b, s, t, line in results:
        print(f"{f[:-3]:<40} {b:<7} {s:<12} {t:6.1f}  {line[:a.width - 70]}")
    print("-" * a.width)
    counts = {}
    for r in results:
        counts[r[2]] = counts.get(r[2], 0) + 1
    print("  ".join(f"{k}: {v}" for k, v in sorted(counts.items())), f" (of {len(results)} runs, {len(set(r[0] for r in results))} attacks)")
    return 1 if counts.get("BROKEN") or counts.get("HANG") else 0


if __name__ == "__main__":
    sys.exit(main())
