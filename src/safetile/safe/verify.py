"""The compiled-IR check of entry kernels: every access to a mutable parameter is this block's own.

Kernel code is Python, and Python can reach almost anything (``getattr``, ``gc``, module
globals, ``ct.static_eval``), so the device objects' documented surface (``device.py``) is
a convenience, not the guarantee. The guarantee is this pass: it reads only the IR that
will run, after compilation, and refuses the kernel unless

* a ``ct.Mut`` parameter is used only by ``load``/``store`` at the block's own index
  ``(bid(0), ..., bid(r-1), 0, ...)`` with the sub-tensor shape and the natural axis order
  (``r`` = the partition's rank), or by size/stride queries;
* a ``ct.Mut`` parameter may also be written by a masked ``scatter`` whose element index on
  each partitioned axis is ``bid(axis) · P + r`` with ``r >= 0`` and ``r < P`` among the
  mask's conjuncts (P the sub-tensor's size on that axis; ``z.partition(shape).store``):
  every lane it keeps is inside the block's sub-tensor;
* a ``ct.MappedMut`` parameter is used only by ``load``/``store`` whose index is the
  unflattening ``divmod`` chain of the induction variable of a grid-stride loop
  ``for iv in range(bid(0), stop, num_blocks(0))`` (distinct blocks get distinct ``iv``
  residues, and ``divmod`` by a positive divisor is injective), each divisor a positive
  constant or that array's own tile count along the axis, or by size/stride queries;
* no ``ct.Ref`` parameter is written (the type rule says so too; checked again here);
* every array operand is a kernel parameter.

With every mutable partition's grid equal to the launch grid (``launch.py``), each block
then touches exactly the sub-tensors no other block touches.
"""
from __future__ import annotations

from typing import Any, NoReturn

from ..errors import TileSafetyError
from ..ir.core import Function, Op, Value, walk
from ..ir.types import ArrayType, TileType
from ..runtime.interrupts import interruptible

METADATA = frozenset({"array_dim", "array_stride"})
TILE_ACCESS = frozenset({"load", "store"})
WRITES = frozenset({"store", "scatter", "atomic_rmw", "atomic_cas"})


class _Param:
    __slots__ = ("name", "kind", "shape", "grid_rank")

    def __init__(self, name: str, kind: str, shape: tuple, grid_rank: int):
        self.name, self.kind, self.shape, self.grid_rank = name, kind, tuple(shape), grid_rank


@interruptible  # part of compilation: its caller caches nothing when it fails
def verify_entry(fn: Function, keys: tuple) -> None:
    """Raise ``TileSafetyError`` (located at the op) unless ``fn`` keeps the ownership rules.

    ``keys`` are the launch's ``ParamKey``s, one per parameter in order (``entry.py``)."""
    params: dict[int, _Param] = {}
    for fp, k in zip(fn.params, keys):
        if fp.kind == "array" and fp.value is not None:
            params[fp.value.id] = _Param(fp.name, k.kind, k.shape, k.grid_rank)
    loops: dict[int, Op] = {}  # induction variable (block argument) id -> its for op
    for op in walk(fn.body):
        if op.name == "for" and op.regions and op.regions[0].args:
            loops[op.regions[0].args[0].id] = op
    for op in walk(fn.body):
        for pos, v in enumerate(op.operands):
            if not isinstance(v.type, ArrayType):
                continue
            p = params.get(v.id)
            if p is None:
                _refuse(op, f"{op.name} uses an array that is not a parameter of the kernel")
            if p.kind == "ref":
                if op.name in WRITES:
                    _refuse(op, f"{op.name} writes the read-only parameter {p.name!r} (ct.Ref)")
                continue
            if op.name in METADATA:
                continue
            if op.name == "scatter" and pos == 0:
                _check_owned_scatter(op, p)
                continue
            if op.name not in TILE_ACCESS or pos != 0:
                _refuse(op, f"{op.name} uses the mutable parameter {p.name!r}; only {p.name}.load() and "
                        f"{p.name}.store(...) may touch it, so that no block reaches another block's sub-tensor")
            _check_access(op, p, loops)


def _refuse(op: Op, why: str) -> NoReturn:
    raise TileSafetyError(f"ownership check of the compiled kernel: {why}", op.loc)


def _check_access(op: Op, p: _Param, loops: dict[int, Op]) -> None:
    ndim = len(p.shape)
    if op.attrs.get("order") != tuple(range(ndim)):
        _refuse(op, f"{op.name} of {p.name!r} permutes its axes (order={op.attrs.get('order')})")
    if op.name == "load":
        shape = op.attrs["shape"]
    else:  # a store: its last operand is the stored tile
        tile_type = op.operands[-1].type
        assert isinstance(tile_type, TileType)  # ct.store emits the stored Tile there (ops/memory.py)
        shape = tile_type.shape
    if tuple(shape) != p.shape:
        _refuse(op, f"{op.name} of {p.name!r} has tile shape {tuple(shape)}, not the sub-tensor shape {p.shape}")
    index = op.operands[1:1 + ndim]
    coords, rest = index[:p.grid_rank], index[p.grid_rank:]
    for v in rest:
        if _constant(v) != 0:
            _refuse(op, f"{op.name} of {p.name!r}: the axes past the partitioned ones must have index 0")
    if p.kind == "mut":
        for axis, v in enumerate(coords):
            if not _is_grid_query(v, "bid", axis):
                _refuse(op, f"{op.name} of {p.name!r} is not at this block's own index (bid({axis}) on axis "
                        f"{axis}); a ct.Mut parameter is only reached through {p.name}.load()/{p.name}.store(tile)")
        return
    if not _mapped_index(coords, op.operands[0], loops):
        _refuse(op, f"{op.name} of {p.name!r} is not at an index produced by {p.name}.iter_indices()")


def _check_owned_scatter(op: Op, p: _Param) -> None:
    """A scatter that keeps only lanes inside the block's own sub-tensor (see the module doc)."""
    if p.kind != "mut" or not op.attrs.get("has_mask"):
        _refuse(op, f"scatter to the mutable parameter {p.name!r} is only possible through "
                f"{p.name}.partition(shape).store(tile, index), which masks every lane to this block's sub-tensor")
    index = op.operands[1:1 + len(p.shape)]
    conjuncts = _conjuncts(op.operands[-1])
    for axis in range(p.grid_rank):
        r = _own_offset(index[axis], axis, p.shape[axis])
        if r is None or not _bounded(conjuncts, r, p.shape[axis]):
            _refuse(op, f"scatter to {p.name!r}: on axis {axis} its index is not bid({axis}) * {p.shape[axis]} + r "
                    f"with 0 <= r < {p.shape[axis]} in its mask, so a lane could leave this block's sub-tensor")


def _strip(v: Value) -> Value:
    """``v`` through broadcasts and rank changes by leading unit axes: ops after which every
    element still lines up with the same element of ``v`` when tiles are broadcast together
    (right-aligned). A reshape that moves elements (``(n,)`` to ``(n, 1)``) is not stripped: a
    mask would no longer guard the lanes of the index it was computed for."""
    while True:
        o = v.owner
        if o is None or not o.operands:
            return v
        if o.name == "broadcast_to" or (o.name == "reshape" and _unit_padded(o.operands[0].type, v.type)):
            v = o.operands[0]
            continue
        return v


def _unit_padded(a, b) -> bool:
    """Whether tile types ``a`` and ``b`` have the same shape once leading unit axes are dropped."""
    def core(shape):
        shape = tuple(shape)
        while shape and shape[0] == 1:
            shape = shape[1:]
        return shape
    return core(a.shape) == core(b.shape)  # a reshape's operand and result are tiles (ops/shape.py)


def _own_offset(v: Value, axis: int, size: int) -> Value | None:
    """r, when ``v`` is ``bid(axis) * size + r`` (either order of either operation)."""
    add = _owner(_strip(v), "add")
    if add is None:
        return None
    for base, r in ((add.operands[0], add.operands[1]), (add.operands[1], add.operands[0])):
        mul = _owner(_strip(base), "mul")
        if mul is None:
            continue
        a, b = (_strip(x) for x in mul.operands)
        if (_is_grid_query(a, "bid", axis) and _constant(b) == size) or \
           (_is_grid_query(b, "bid", axis) and _constant(a) == size):
            return _strip(r)
    return None


def _conjuncts(v: Value) -> list[Op]:
    """The operations and-ed together into the bool tile ``v``."""
    out, todo = [], [v]
    while todo:
        o = _strip(todo.pop()).owner
        if o is None:
            continue
        if o.name == "bitwise_and":
            todo.extend(o.operands)
        else:
            out.append(o)
    return out


def _bounded(conjuncts: list[Op], r: Value, size: int) -> bool:
    """Whether the conjuncts include ``r >= c`` with c >= 0 and ``r < c`` with c <= size."""
    def bound(name: str):
        for o in conjuncts:
            if o.name == name and _strip(o.operands[0]) is r:
                c = _constant(_strip(o.operands[1]))
                if isinstance(c, int) and not isinstance(c, bool):
                    yield c
    return any(c >= 0 for c in bound("greater_equal")) and any(c <= size for c in bound("less"))


def _owner(v: Value, name: str) -> Op | None:
    o = v.owner
    return o if o is not None and o.name == name else None


def _constant(v: Value) -> Any:
    o = _owner(v, "constant")
    return o.attrs.get("value") if o is not None and o.attrs.get("shape") == () else None


def _is_grid_query(v: Value, name: str, axis: int) -> bool:
    o = _owner(v, name)
    return o is not None and o.attrs.get("axis") == axis


def _same(a: Value, b: Value) -> bool:
    if a is b:
        return True
    ca, cb = _constant(a), _constant(b)
    return ca is not None and ca == cb


def _positive_count(d: Value, array: Value, axis: int) -> bool:
    """A positive constant, or ``array``'s tile count along ``axis``: (dim + T - 1) // T, T >= 1."""
    c = _constant(d)
    if c is not None:
        return isinstance(c, int) and not isinstance(c, bool) and c >= 1
    div = _owner(d, "floordiv")
    sub = div and _owner(div.operands[0], "sub")
    add = sub and _owner(sub.operands[0], "add")
    dim = add and _owner(add.operands[0], "array_dim")
    if dim is None or dim.operands[0] is not array or dim.attrs.get("axis") != axis:
        return False
    assert div is not None and sub is not None and add is not None  # dim was found through each of them
    t = _constant(add.operands[1])
    return isinstance(t, int) and t >= 1 and _constant(sub.operands[1]) == 1 and _constant(div.operands[1]) == t


def _mapped_index(coords: list[Value], array: Value, loops: dict[int, Op]) -> bool:
    """Whether ``coords`` = unflatten(iv) of a grid-stride loop over the blocks (see module doc)."""
    r = len(coords)
    rest = coords[0]  # walking from the first axis: coords[0] = rest_0
    for k in range(1, r):
        # coords[k] = rest_k % d_k and rest_{k-1} = rest_k // d_k, with the same rest_k and d_k
        m = _owner(coords[k], "mod")
        div = _owner(rest, "floordiv")
        if m is None or div is None or m.operands[0] is not div.operands[0] \
                or not _same(m.operands[1], div.operands[1]):
            return False
        if not _positive_count(m.operands[1], array, k) or not _positive_count(div.operands[1], array, k):
            return False
        rest = m.operands[0]
    loop = loops.get(rest.id) if rest.owner is None else None
    if loop is None or loop.regions[0].args[0] is not rest:
        return False
    start, step = loop.operands[0], loop.operands[2]
    return _is_grid_query(start, "bid", 0) and _is_grid_query(step, "num_blocks", 0)
