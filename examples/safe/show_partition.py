"""Pictures of partitions: which tile block owns which sub-tensor.

Prints the text pictures of a plain and a mapped partition and, with matplotlib installed,
draws them (the README's pictures come from ``python examples/safe/show_partition.py docs/images``).
"""
from __future__ import annotations

import sys
from pathlib import Path

import safetile as ct


def main(outdir: str | None = None):
    p = ct.zeros((300, 200)).sync().partition((128, 64))  # 3 x 4 blocks, partial edge sub-tensors
    m = ct.zeros((100, 96)).sync().partition((32, 32)).map(5)  # 5 persistent blocks walk 12 sub-tensors
    p.show()
    print()
    m.show()
    if outdir is not None:
        out = Path(outdir)
        out.mkdir(parents=True, exist_ok=True)
        print(p.show(out / "partition.png"), m.show(out / "mapped_partition.png"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
