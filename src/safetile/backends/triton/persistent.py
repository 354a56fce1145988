"""Persistent grids: a kernel whose blocks each run one K loop of matrix products is launched with
as many blocks as the GPU holds at once, each walking the logical grid's blocks in turn.

Why: a block of such a kernel spends the end of its life storing its tile while its loads for the
next tile cannot start, and with one block per SM (128×256 tiles and their pipeline fill the shared
memory) nothing else runs meanwhile. A persistent block issues the next tile's first loads right
after its last product. A batched product written with 3-D tiles on NVIDIA's grid (batch, rows,
columns), 128×256×64 tiles, ran on an H200 at 407–560 TFLOP/s as a grid of tiles and 569–650
walked, against 546–748 for ``torch.bmm`` (bench/NOTES.md, session 16, call 3).

Blocks are unordered and independent by contract, so any one-to-one walk of the grid computes the
same stores; the walk takes the hardware's axis order (x fastest), except that a batch axis (one
every load and store indexes by) goes last (``walk_order``), in bands of the fastest axis
(``wrap_body``). Taken automatically
(``Facts.persistent``, sm_90+ and Triton's interpreter) where that holds and pays:

- the kernel's top level has a ``for`` loop of matrix products whose operands are loaded tiles
  (a GEMM's K loop; attention's chained products are left alone) and whose bounds do not depend
  on the block index, so every block has the same work and a static walk balances;
- nothing in it is atomic: blocks that communicate may wait on one another, and a worker runs
  its blocks one after another;
- no warp-specialisation hint, no clusters (``num_ctas``), and a grid within CUDA's y/z limits.

``persistent=False`` (a kernel hint) keeps any kernel a grid of tiles; ``persistent=True`` makes
every kernel that is legal to walk (the second and third conditions) persistent.
"""
from __future__ import annotations

from typing import Any

from ...ir.core import Function, Op, walk

_ATOMICS = ("atomic_rmw", "atomic_cas")
PRODUCTS = ("mma", "mma_scaled")
_THROUGH = ("reshape", "astype", "permute")
INTERPRETED_WORKERS = 3  # under Triton's interpreter: few workers, so that every one walks several blocks
WALK_BAND = 8  # indices of the walk's fastest axis per band (``wrap_body``)


def _from_load(v) -> bool:
    """``v`` is a loaded tile, possibly reshaped, cast or transposed."""
    op = v.owner
    while op is not None and op.name in _THROUGH:
        op = op.operands[0].owner
    return op is not None and op.name == "load"


def _block_dependent(fn: Function, axis: int | None = None) -> set[int]:
    """Ids of the values whose computation reads a block index (along ``axis``; any axis when
    None): a forward pass over the kernel, where an op with regions counts as reading it when
    anything inside does."""
    tainted: set[int] = set()

    def reads(op: Op) -> bool:
        if op.name == "bid" and axis in (None, op.attrs["axis"]) or any(v.id in tainted for v in op.operands):
            return True
        return any(reads(inner) for region in op.regions for inner in region.ops)

    for op in walk(fn.body):
        if reads(op):
            tainted.update(r.id for r in op.results)
    return tainted


def products(op: Op) -> list[Op]:
    """The matrix products anywhere inside ``op``'s regions (a loop's body, at any depth)."""
    return [inner for region in op.regions for inner in walk(region) if inner.name in PRODUCTS]


def _product_loop(loop: Op) -> bool:
    found = products(loop)
    return bool(found) and all(_from_load(op.operands[0]) and _from_load(op.operands[1]) for op in found)


def pays(fn: Function) -> bool:
    """The automatic rule's first condition (see the module docstring): a product loop at the top
    level, and no top-level loop whose bounds (a ``while``: its initial values) read the block index."""
    tainted = _block_dependent(fn)
    loops = [op for op in fn.body.ops if op.name in ("for", "while")]
    bounds = [v for op in loops for v in (op.operands[:3] if op.name == "for" else op.operands)]
    if any(v.id in tainted for v in bounds):  # a for loop's carried values (an accumulator loaded
        return False  # from the block's own tile) do not change its length
    return any(op.name == "for" and _product_loop(op) for op in loops)


def legal(fn: Function) -> bool:
    """No op that lets blocks talk to each other."""
    return not any(op.name in _ATOMICS for op in walk(fn.body))


def walkable(fn: Function) -> tuple[bool, bool]:
    """(legal, pays) of a kernel: what ``wanted`` needs from its IR, computed once per
    specialisation rather than for every new launch key."""
    ok = legal(fn)
    return ok, ok and pays(fn)


def wanted(analysis: tuple[bool, bool], hint: Any, target: int, interp: bool, excluded: bool) -> bool:
    """Whether a variant is compiled persistent. ``analysis``: the kernel's ``walkable``; ``hint``:
    the resolved ``persistent`` hint (None when absent); ``excluded``: a fact that rules it out
    (big grid, warp specialisation, clusters, ``SAFETILE_PERSISTENT=0``)."""
    is_legal, is_paying = analysis
    if excluded or hint is False or not (interp or target >= 90) or not is_legal:
        return False
    return hint is True or is_paying


def walk_order(fn: Function) -> tuple[int, ...]:
    """The grid axes from fastest to slowest in the walk: the hardware's order (x fastest), except
    that an axis every load and store indexes by (a batch axis: blocks apart along it share no
    data) goes last, so that the resident blocks share operands in the L2 (NVIDIA's batched sample,
    grid (batch, rows, columns): a walk in the hardware's order spans every batch at once;
    bench/NOTES.md, session 16)."""
    accesses = [op for op in walk(fn.body) if op.name in ("load", "store")]
    separate = []
    for axis in range(3):
        tainted = _block_dependent(fn, axis)
        if accesses and all(any(v.id in tainted for v in op.operands[1:]) for op in accesses):
            separate.append(axis)
    return tuple(a for a in range(3) if a not in separate) + tuple(separate)


def wrap_body(body: list[str], order: tuple[int, ...] = (0, 1, 2)) -> list[str]:
    """The kernel body inside the walk over the logical grid (``_st_gx/_st_gy/_st_gz``, the last
    kernel parameters), its axes in ``order`` (fastest first): each turn sets the block index the
    body's ``bid`` reads. The plane of the two fastest axes is walked in bands of ``WALK_BAND``
    along the first (``WALK_BAND`` of its indices, each with every index of the second, then the
    next band), the third axis slowest: the blocks resident at once then cover a compact patch of
    a GEMM's output, whose rows of A and columns of B fit the L2 together. Walked in the
    hardware's order, a plain 2-D GEMM grid (one column of B tiles against every row of A) ran
    2-9 % slower than the benchmark's GEMM that bands itself (H200, session 17, walk_probe.py).
    The walk counts in 64 bits (a grid's block count may exceed int32); each index fits 32."""
    n0, n1, n2 = ("xyz"[a] for a in order)
    return [
        f"    _st_plane = _st_g{n0}.to(tl.int64) * _st_g{n1}",
        f"    _st_nblocks = _st_plane * _st_g{n2}",
        f"    _st_width = _st_g{n1}.to(tl.int64) * {WALK_BAND}",
        "    for _st_t_py in range(tl.program_id(0).to(tl.int64), _st_nblocks, tl.num_programs(0)):",
        "        _st_t = tl.full((), _st_t_py, tl.int64)",
        "        _st_q = _st_t % _st_plane",
        f"        _st_first = _st_q // _st_width * {WALK_BAND}",
        f"        _st_rows = tl.minimum(_st_g{n0} - _st_first, {WALK_BAND})",
        f"        _st_b{n0} = (_st_first + _st_q % _st_width % _st_rows).to(tl.int32)",
        f"        _st_b{n1} = (_st_q % _st_width // _st_rows).to(tl.int32)",
        f"        _st_b{n2} = (_st_t // _st_plane).to(tl.int32)",
    ] + ["    " + ln if ln else ln for ln in body]


class PersistentCall:
    """A persistent kernel's launcher: ``call(gx, gy, gz, stream, *rest)`` with the logical grid
    launches ``min(blocks, workers)`` blocks and passes the logical grid as the last arguments."""

    __slots__ = ("inner", "workers")

    def __init__(self, inner, workers: int):
        self.inner = inner
        self.workers = workers

    def __call__(self, gx, gy, gz, stream, *rest) -> None:
        n = gx * gy * gz
        self.inner(n if n < self.workers else self.workers, 1, 1, stream, *rest, gx, gy, gz)

