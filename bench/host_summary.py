"""Issue 9's and 12's host-cost figures from one final_device.sh run (JSON files in a folder):
safe chain / unchecked chain per process (gpu_bench's safe section, launch_diag's chains) and
ct.launch / torch.add per argument pattern, with medians over processes. Ratios are within a process.

    python bench/host_summary.py bench/results/<device>/<run>/
"""
from __future__ import annotations

import glob
import json
import os
import statistics
import sys


def main(folder: str) -> None:
    shared, raw, diag = [], [], []
    for f in sorted(glob.glob(os.path.join(folder, "safe_launch*.json"))):
        h = json.load(open(f)).get("safe", {}).get("host")
        if h:
            shared.append(h["safe_chain_us"] / h["unchecked_chain_us"])
            raw.append(h["safe_chain_torch_refs_us"] / h["unchecked_chain_us"])
    for f in sorted(glob.glob(os.path.join(folder, "diag*.json"))):
        us = json.load(open(f)).get("us", {})
        if "safe chain, per launch" in us and "unchecked chain, per launch" in us:
            diag.append(us["safe chain, per launch"] / us["unchecked chain, per launch"])
    print("== host cost (ratios within each process; median, then every reading)")
    for name, v in (("safe/unchecked chain, Shared inputs (gpu_bench)", shared),
                    ("safe/unchecked chain, raw torch Refs (gpu_bench)", raw),
                    ("safe/unchecked chain (launch_diag)", diag)):
        if v:
            print(f"{name:52s} {statistics.median(v):5.2f}  ({', '.join(f'{x:.2f}' for x in v)})")
    p = os.path.join(folder, "launch_patterns.json")
    if os.path.exists(p):
        for row, r in json.load(open(p))["rows"].items():
            if row.startswith("ct.launch"):
                print(f"{row + ' / torch.add(x, y)':52s} {r['ratio_to_torch_add']:5.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
