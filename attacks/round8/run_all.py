#!/usr/bin/env python
"""Run round 8's cases (case8NN_*.py) one after another, each in its own process with a timeout,
and write RESULTS.txt here. usage: python run_all.py [-k substring] [--timeout S] [--triton]

An attack prints a final line `HELD: ...`, `BROKE: ...`, `OUTSIDE: ...` (or `INCONCLUSIVE: ...`)
and exits 0 (HELD/OUTSIDE), 1 (BROKE) or 3 (INCONCLUSIVE). A runner timeout counts as HANG.
Attacks whose first lines contain '# BACKENDS: cpu triton' also run with SAFETILE_BACKEND=triton
TRITON_INTERPRET=1 when --triton is given. Runs are sequential (the dev box has 2 shared cores)."""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def attacks(filt):
    fs = [f for f in os.listdir(HERE) if re.match(r"^case8\d\d[a-z]?_.*\.py$", f) and filt in f]
    return sorted(fs)


def run_one(f, backend, timeout):
    env = dict(os.environ)
    env.setdefault("SAFETILE_CACHE_DIR", "off")
    if backend == "triton":
        env.update(SAFETILE_BACKEND="triton", TRITON_INTERPRET="1")
    t0 = time.time()
    try:
        r = subprocess.run([sys.executable, os.path.join(HERE, f)], cwd=HERE, env=env, capture_output=True,
                           text=True, timeout=timeout)
        out = r.stdout + r.stderr
        code = r.returncode
    except subprocess.TimeoutExpired:
        return f, backend, "HANG", time.time() - t0, f"runner timeout after {timeout}s"
    verdict, line = None, ""
    for ln in out.splitlines():
        m = re.match(r"^(HELD|BROKE|BROKEN|OUTSIDE|INCONCLUSIVE):?\s(.*)$", ln)
        if m:
            verdict, line = m.group(1), m.group(2)
    if verdict is None:
        verdict = {0: "HELD?", 1: "BROKE?", 3: "INCONCLUSIVE"}.get(code, f"ERROR({code})")
        line = (out.strip().splitlines() or [""])[-1]
    return f, backend, verdict, time.time() - t0, line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--triton", action="store_true")
    ap.add_argument("--width", type=int, default=170)
    a = ap.parse_args()
    rows = []
    for f in attacks(a.k):
        backends = ["cpu"]
        if a.triton:
            with open(os.path.join(HERE, f)) as fh:
                if "# BACKENDS: cpu triton" in fh.read(3000):
                    backends.append("triton")
        for b in backends:
            r = run_one(f, b, a.timeout)
            print(f"  {r[2]:<12} {r[0]} [{r[1]}] {r[3]:.1f}s", file=sys.stderr, flush=True)
            rows.append(r)
    lines = [f"{'case':<44} {'backend':<7} {'result':<12} {'time':>6}  detail", "-" * a.width]
    for f, b, s, t, line in rows:
        lines.append(f"{f[:-3]:<44} {b:<7} {s:<12} {t:6.1f}  {line[:a.width - 78]}")
    lines.append("-" * a.width)
    counts = {}
    for r in rows:
        counts[r[2]] = counts.get(r[2], 0) + 1
    lines.append("  ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + f"  (of {len(rows)} runs)")
    text = "\n".join(lines)
    print(text)
    if not a.k:
        with open(os.path.join(HERE, "RESULTS.txt"), "w") as fh:
            fh.write(HEADER + text + "\n" + FINDINGS)
    return 1 if counts.get("BROKE") or counts.get("HANG") else 0


HEADER = ("Round-8 red-team results (launch caches keyed on torch tensor facts; C++ fact reader).\n"
          "Run: cd attacks/round8 && python run_all.py  (sequential, CPU backend; --triton adds the\n"
          "Triton-interpreter run of attacks marked '# BACKENDS: cpu triton').\n\n")
FINDINGS_FILE = os.path.join(HERE, "FINDINGS.txt")
FINDINGS = open(FINDINGS_FILE).read() if os.path.exists(FINDINGS_FILE) else ""

if __name__ == "__main__":
    sys.exit(main())
