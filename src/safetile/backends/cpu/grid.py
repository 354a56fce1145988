"""CPU lowerings of the grid family (ops/grid.py)."""
from __future__ import annotations

import numpy as np

from .executor import lowers


@lowers("bid")
def bid(run, op, args):
    return run.blockset.coords[op.attrs["axis"]]


@lowers("num_blocks")
def num_blocks(run, op, args):
    return np.full((1,) * run.nb, run.grid[op.attrs["axis"]], dtype=np.int32)
