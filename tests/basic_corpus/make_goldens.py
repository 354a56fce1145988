"""Regenerate the golden outputs of the BASIC corpus.

Every ``NAME.bas`` here is a classic program whose ``NAME.out`` is what GW-BASIC prints for
it, as PC-BASIC (``pip install pcbasic``) runs it; ``python make_goldens.py [NAME ...]``
rewrites them. The programs in ``EXTENSIONS`` use safetile's additions (TILE, BID, block
IF, MIN/MAX, AS types), which GW-BASIC does not have: their goldens were checked by hand and
are left alone.
"""
from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
EXTENSIONS = {"tile_blocks", "tile_math", "tile_diverge", "local_types", "block_if", "builtins"}


def main(names: list[str]) -> None:
    sys.path.insert(0, str(HERE.parent))
    from gwbasic_reference import run_reference
    for path in sorted(HERE.glob("*.bas")):
        if path.stem in EXTENSIONS or names and path.stem not in names:
            continue
        out = run_reference(path.read_text())
        if out is None:
            raise SystemExit(f"{path.name} runs too long under PC-BASIC")
        path.with_suffix(".out").write_text(out)
        print(f"{path.stem}.out: {len(out.splitlines())} lines")


if __name__ == "__main__":
    main(sys.argv[1:])
