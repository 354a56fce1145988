"""Grid queries: where this block sits in the launch grid."""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import ArgumentError, TileTypeError
from ..ir.builder import active, emit
from ..ir.catalogue import declare
from ..ir.types import TileType
from .values import Tile, is_const, static_int

FAMILY = "grid"

declare("bid", FAMILY, "this block's index along grid axis `axis` (int32)",
        lambda types, attrs: [TileType(dt.int32, ())])
declare("num_blocks", FAMILY, "the number of blocks along grid axis `axis` (int32)",
        lambda types, attrs: [TileType(dt.int32, ())])


def _axis(axis) -> int:
    a = static_int(axis, "grid axis")
    if a not in (0, 1, 2):
        raise TileTypeError(f"grid axis must be 0, 1 or 2, got {a}")
    return a


def bid(axis) -> Tile:
    """This block's index along ``axis`` (0, 1 or 2), an int32 scalar."""
    return Tile(emit("bid", [], {"axis": _axis(axis)}).result)


def num_blocks(axis) -> Tile:
    """The grid size along ``axis`` (0, 1 or 2), an int32 scalar."""
    return Tile(emit("num_blocks", [], {"axis": _axis(axis)}).result)


def cdiv(x, y):
    """Ceiling division ``(x + y - 1) // y``; works on the host and in kernels."""
    if is_const(x) and is_const(y):
        return -(-int(x) // int(y))
    if not active():
        raise ArgumentError("cdiv expects integers on the host")
    if isinstance(y, Tile) or isinstance(x, Tile):
        from .elementwise import add, floordiv, sub
        return floordiv(sub(add(x, y), 1), y)
    raise TileTypeError(f"cdiv expects integers, got {x!r} and {y!r}")


def grid_dependency_control_wait() -> None:
    """Wait for the preceding kernel of a programmatic dependent launch (PDL).

    Kernels safetile generates already wait for their predecessor before touching memory
    (sm_90+, see docs/architecture.md), so memory written by the predecessor is always visible:
    the call is accepted and adds nothing."""
    return None


def grid_dependency_control_launch_dependents() -> None:
    """Let a programmatically dependent successor kernel start scheduling. safetile's kernels
    already allow it, at their start or after their last top-level loop of matrix products
    (their successor waits before touching memory): the call is accepted and adds nothing."""
    return None
