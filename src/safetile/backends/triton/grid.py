"""Triton lowerings of the grid family (ops/grid.py).

Grids whose y or z size exceeds CUDA's 65535 are launched flat along x; the kernel then
recovers its block coordinates from the linear program id (``Facts.big_grid``). A persistent
kernel (persistent.py) sets them in each turn of its walk over the logical grid.
"""
from __future__ import annotations

from .codegen import Gen, lowers


@lowers("bid")
def bid(g: Gen, op):
    axis = op.attrs["axis"]
    if g.m.facts.big_grid or g.m.facts.persistent:
        return ("_st_bx", "_st_by", "_st_bz")[axis]
    return f"tl.program_id({axis})"


@lowers("num_blocks")
def num_blocks(g: Gen, op):
    axis = op.attrs["axis"]
    if g.m.facts.persistent:
        return ("_st_gx", "_st_gy", "_st_gz")[axis]
    if g.m.facts.big_grid:
        return ("_st_gx", "_st_gy", "(tl.num_programs(0) // (_st_gx * _st_gy))")[axis]
    return f"tl.num_programs({axis})"
