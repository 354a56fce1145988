"""Mutation score of safe/ from a uniform random sample of mutmut's mutants (bench/NOTES.md,
"Mutation testing"): a full run does not fit on shared cores.

    python bench/mutation_sample.py select SEED P > names.txt   # after `mutmut run` made the mutants
    mutmut run --max-children 2 $(cat names.txt)                 # then rerun its timeouts alone
    python bench/mutation_sample.py score names.txt [--gpu-only names-gpu.txt] [--json out.json]

``select`` keeps each mutant independently with probability ``P`` (a hash of the seed and its
name decides), so the selection of a function's mutants does not change when other code changes:
verdicts of unchanged functions carry over, and only mutants of changed code run again.
``score`` reads the verdicts from ``mutmut results --all true``; a mutant listed in the
``--gpu-only`` file (one name a line, ``#`` comments allowed) is one whose code runs only with a
CUDA device: the score is given with and without them. The headline ("raw") counts every mutant
not killed as not killed. Under mutation tests/conftest.py turns a collection error into a failed
run (a kill) and runs ``hang_guard`` tests first, so a "timeout" is a hang no test's deadline
caught (or a harness problem: bench/NOTES.md lists the known ones).
"""
from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from collections import Counter, defaultdict


def verdicts() -> dict[str, str]:
    out = subprocess.run(["mutmut", "results", "--all", "true"], capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        if ":" in line:
            name, status = line.strip().rsplit(":", 1)
            res[name.strip()] = status.strip()
    return res


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (c - h, c + h)


def module(name: str) -> str:
    return name.split(".")[2]


def selected(seed: str, name: str, p: float) -> bool:
    return int(hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()[:12], 16) < p * 16 ** 12


def select(seed: str, p: float) -> None:
    print("\n".join(n for n in sorted(verdicts()) if selected(seed, n, p)))


def score(sample_file: str, gpu_file: str | None, json_out: str | None) -> None:
    sample = [s.strip() for s in open(sample_file) if s.strip()]
    gpu = set()
    if gpu_file:
        gpu = {s.split("#")[0].strip() for s in open(gpu_file)} - {""}
    v = verdicts()
    status = {s: v.get(s, "missing") for s in sample}
    per: dict[str, Counter] = defaultdict(Counter)
    for s, st in status.items():
        per[module(s)][st] += 1
    pop = Counter(module(n) for n in v)

    def line(label: str, names: list[str]) -> dict:
        c = Counter(status[s] for s in names)
        k, n = c["killed"], len(names)
        lo, hi = wilson(k, n)
        print(f"{label}: {k}/{n} killed = {100 * k / n:.1f}% (95% Wilson {100 * lo:.1f}-{100 * hi:.1f}%) "
              f"{dict(c)}")
        return {"killed": k, "n": n, "rate": k / n, "wilson95": [lo, hi], "by_status": dict(c)}
    raw = line("raw", sample)
    excl = line("without GPU-only", [s for s in sample if s not in gpu])
    print("\n| module | sampled (of) | killed | not killed | rate |\n|---|---|---|---|---|")
    for m in sorted(per, key=lambda m: -per[m]["killed"] / sum(per[m].values())):
        c = per[m]
        n = sum(c.values())
        print(f"| {m} | {n} ({pop[m]}) | {c['killed']} | {n - c['killed']} | {100 * c['killed'] / n:.0f}% |")
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"population": len(v), "sample_size": len(sample), "raw": raw, "without_gpu_only": excl,
                       "population_by_module": dict(pop),
                       "mutants": {s: {"status": status[s], **({"gpu_only": True} if s in gpu else {})}
                                   for s in sample}}, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    if sys.argv[1] == "select":
        select(sys.argv[2], float(sys.argv[3]))
    else:
        args = sys.argv[3:]
        opt = {args[i]: args[i + 1] for i in range(0, len(args), 2)}
        score(sys.argv[2], opt.get("--gpu-only"), opt.get("--json"))
