"""The runner of red-team rounds 6 onwards: each attack in its own process with a timeout, one after
another (the dev box has 2 shared cores), a table printed and written to the round's RESULTS.txt
(with its FINDINGS.txt appended). A round's run_all.py calls ``main(folder, pattern, header)``.

An attack prints a final line `HELD: ...`, `BROKEN: ...` (or `BROKE: ...`), `OUTSIDE: ...` or
`INCONCLUSIVE: ...` and exits 0 (HELD/OUTSIDE), 1 (broken) or 3 (INCONCLUSIVE); a runner timeout
counts as HANG. Attacks whose first lines contain '# BACKENDS: cpu triton' also run with
SAFETILE_BACKEND=triton TRITON_INTERPRET=1 when --triton is given.
usage (in a round's folder): python run_all.py [-k substring] [--timeout S] [--triton]"""
import argparse
import os
import re
import subprocess
import sys
import time


def run_one(here, f, backend, timeout):
    env = dict(os.environ)
    env.setdefault("SAFETILE_CACHE_DIR", "off")
    if backend == "triton":
        env.update(SAFETILE_BACKEND="triton", TRITON_INTERPRET="1")
    t0 = time.time()
    try:
        r = subprocess.run([sys.executable, os.path.join(here, f)], cwd=here, env=env, capture_output=True,
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
        verdict = {0: "HELD?", 1: "BROKEN?", 3: "INCONCLUSIVE"}.get(code, f"ERROR({code})")
        line = (out.strip().splitlines() or [""])[-1]
    return f, backend, verdict, time.time() - t0, line


def main(here, pattern, header):
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--triton", action="store_true")
    ap.add_argument("--width", type=int, default=170)
    a = ap.parse_args()
    rows = []
    for f in sorted(f for f in os.listdir(here) if re.match(pattern, f) and a.k in f):
        backends = ["cpu"]
        if a.triton:
            with open(os.path.join(here, f)) as fh:
                if "# BACKENDS: cpu triton" in fh.read(3000):
                    backends.append("triton")
        for b in backends:
            r = run_one(here, f, b, a.timeout)
            print(f"  {r[2]:<12} {r[0]} [{r[1]}] {r[3]:.1f}s", file=sys.stderr, flush=True)
            rows.append(r)
    lines = [f"{'attack':<48} {'backend':<7} {'result':<12} {'time':>6}  detail", "-" * a.width]
    for f, b, s, t, line in rows:
        lines.append(f"{f[:-3]:<48} {b:<7} {s:<12} {t:6.1f}  {line[:a.width - 78]}")
    lines.append("-" * a.width)
    counts = {}
    for r in rows:
        counts[r[2]] = counts.get(r[2], 0) + 1
    lines.append("  ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + f"  (of {len(rows)} runs)")
    text = "\n".join(lines)
    print(text)
    if not a.k:
        findings = os.path.join(here, "FINDINGS.txt")
        extra = open(findings).read() if os.path.exists(findings) else ""
        with open(os.path.join(here, "RESULTS.txt"), "w") as fh:
            fh.write(header + text + "\n" + extra)
    return 1 if counts.get("BROKEN") or counts.get("BROKE") or counts.get("HANG") else 0
