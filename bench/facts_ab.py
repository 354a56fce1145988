"""A/B of the C++ fact reader (runtime/torch_facts.py) on a GPU host: host cost per launch with
``SAFETILE_TORCH_FACTS`` on and off, each benchmark in fresh processes, the two settings
alternating (a host's speed moves between processes; ratios are taken within one process).

Per process: ``launch_patterns.py`` (ct.launch per argument pattern against torch.add(x, y)) and
``gpu_bench.py --only safe`` (safe chain / unchecked chain, Shared inputs and raw torch Refs).
Prints a table of medians per setting last; every reading goes to ``--out`` as JSON.

    PYTHONPATH=src python bench/facts_ab.py --rounds 3 --out facts_ab.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd: list[str], env: dict, limit: int) -> tuple[int, str]:
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=limit)
    return p.returncode, p.stdout[-3000:] + p.stderr[-3000:]


def one(setting: str, tmp: str, i: int) -> dict:
    env = {**os.environ, "SAFETILE_TORCH_FACTS": setting}
    out: dict = {"setting": setting, "round": i}
    pj, sj = os.path.join(tmp, f"p{setting}{i}.json"), os.path.join(tmp, f"s{setting}{i}.json")
    rc, log = run([sys.executable, os.path.join(HERE, "launch_patterns.py"), "--json", pj], env, 120)
    if rc == 0:
        rows = json.load(open(pj))["rows"]
        out["patterns"] = {k: v["ratio_to_torch_add"] for k, v in rows.items()}
        out["patterns_us"] = {k: v["host_us"] for k, v in rows.items()}
    else:
        out["patterns_error"] = log
    rc, log = run([sys.executable, os.path.join(HERE, "gpu_bench.py"), "--only", "safe", "--out", sj], env, 200)
    if rc == 0:
        host = json.load(open(sj))["safe"]["host"]
        out["safe_host_us"] = host
        out["shared_ratio"] = host["safe_chain_us"] / host["unchecked_chain_us"]
        out["raw_ratio"] = host["safe_chain_torch_refs_us"] / host["unchecked_chain_us"]
    else:
        out["safe_error"] = log
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="facts_ab.json")
    a = ap.parse_args()
    from safetile.runtime import torch_facts
    import torch  # noqa: F401 - the reader is built against it
    built = torch_facts.module(build=True) is not None
    print("C++ fact reader built:", built, flush=True)
    readings = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.rounds):
            for setting in (("1", "0") if i % 2 == 0 else ("0", "1")):
                r = one(setting, tmp, i)
                readings.append(r)
                print(json.dumps({k: v for k, v in r.items() if k != "safe_host_us"})[:600], flush=True)
    json.dump({"built": built, "readings": readings}, open(a.out, "w"), indent=1)
    print("\n== medians per setting (ratios within each process)")
    keys = ["ct.launch add4(x, x, z, 1024)", "ct.launch add4(x, y, z, 1024)", "ct.launch tiny(x, 128)",
            "ct.launch axpy(x, z, 0.5, n, 1024)"]
    print(f"{'row':44s} {'facts on':>9s} {'facts off':>9s}")
    for k in keys:
        vals = {s: [r["patterns"][k] for r in readings if r["setting"] == s and "patterns" in r] for s in "10"}
        print(f"{k + ' / torch.add':44s} " + " ".join(f"{statistics.median(vals[s]):9.3f}" if vals[s] else "      n/a"
                                                      for s in "10"))
    for name in ("shared_ratio", "raw_ratio"):
        vals = {s: [r[name] for r in readings if r["setting"] == s and name in r] for s in "10"}
        print(f"{'safe chain / unchecked, ' + name:44s} " + " ".join(
            f"{statistics.median(vals[s]):9.3f}" if vals[s] else "      n/a" for s in "10"))
        print(f"{'  (all readings)':44s} " + "  ".join(",".join(f"{v:.2f}" for v in vals[s]) for s in "10"))


if __name__ == "__main__":
    main()
