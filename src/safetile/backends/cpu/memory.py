"""CPU lowerings of the memory family (ops/memory.py).

Tile-space loads and stores take a fast path when every tile index is either the same
for all blocks or steps regularly along one grid axis (``bid(0)``, ``2*bid(1)+1``...) and
the tiles are whole: the array is viewed as a grid of tiles and the blocks' tiles are one
strided view of it (a load copies that view only when the launch may write the memory
behind it, since tiles are values). Anything else (partial edge tiles, data-dependent indices) goes
through a masked gather/scatter. Within one store or scatter op, writes from several
blocks to one element resolve in block order (the highest linear block id wins); atomics
apply in block order, lanes in row-major order within a block. Blocks that took different
branches of divergent control flow run one branch after the other, so this order holds
per op, not across branches.
"""
from __future__ import annotations

import numpy as np

from ...ops.memory import PAD_VALUES
from .context import BlockSet
from .executor import lowers


@lowers("array_dim")
def array_dim(run, op, args):
    return np.full((1,) * run.nb, args[0].shape[op.attrs["axis"]], dtype=np.int32)


@lowers("array_stride")
def array_stride(run, op, args):
    a = args[0]
    return np.full((1,) * run.nb, a.strides[op.attrs["axis"]] // a.itemsize, dtype=np.int32)


# ---------------------------------------------------------------------------------- tile-space

def _tiles(view: np.ndarray, shape: tuple[int, ...], keys: tuple) -> np.ndarray:
    """The whole tiles of ``shape`` that ``keys`` selects from ``view``, by basic slicing only.

    An int key picks one tile along its dim, a slice key (in tiles, step >= 1, inside the
    array) a run of tiles. The result is a view of shape (tiles along each slice-keyed dim..., *shape), so
    stores can write through it; slicing and reshaping avoid ``as_strided``, which costs
    microseconds per call.
    """
    cut, dims, counted, steps = [], [], [], []
    for k, s in zip(keys, shape):
        if type(k) is int:
            cut.append(slice(k * s, k * s + s))
            dims.append(s)
        else:
            spanned = k.step * (len(range(k.start, k.stop, k.step)) - 1) + 1  # first to last tile
            cut.append(slice(k.start * s, (k.start + spanned) * s))
            counted.append(len(dims))
            steps.append(k.step)
            dims += [spanned, s]
    v = view[tuple(cut)] if cut else view[...]  # a 0-d array: a 0-d view, not a scalar copy
    if not counted:
        return v
    v = v.reshape(dims)  # splits each cut dim into (tiles, s): one axis split, always a view
    if any(st != 1 for st in steps):
        sel = [slice(None)] * len(dims)
        for a, st in zip(counted, steps):
            sel[a] = slice(None, None, st)
        v = v[tuple(sel)]
    return v.transpose(counted + [a for a in range(len(dims)) if a not in counted])


def _classify(idx: np.ndarray, blocks: BlockSet):
    """('scalar', i) | ('range', batch_axis, start, step, count) | None for a tile index."""
    if idx.size == 1:  # every batch axis is 1
        return ("scalar", int(idx.item()))
    known = blocks.ranges.get(id(idx))
    if known is not None:
        return known
    nb = blocks.nb
    varying = [a for a in range(nb) if idx.shape[a] != 1]
    if len(varying) > 1:
        return None
    v = idx.reshape(-1).astype(np.int64)
    start = int(v[0])
    step = int(v[1] - v[0]) if len(v) > 1 else 1
    if step < 1 or not np.array_equal(v, start + step * np.arange(len(v))):
        return None
    return ("range", varying[0], start, step, len(v))


def _fast_keys(blocks: BlockSet, index: list[np.ndarray], dims: tuple[int, ...], shape: tuple[int, ...]):
    """Keys for ``_tiles`` (whole tiles of ``shape`` in an array of ``dims``) when every tile
    index is uniform or steps regularly along one batch axis, plus the batch axis of each
    slice key; None otherwise."""
    keys, axes = [], []
    for idx, dim, s in zip(index, dims, shape):
        count = dim // s
        c = _classify(idx, blocks)
        if c is None:
            return None
        if c[0] == "scalar":
            if not 0 <= c[1] < count:
                return None
            keys.append(c[1])
        else:
            _, axis, start, step, n = c
            if axis in axes or start < 0 or start + step * (n - 1) >= count:
                return None
            keys.append(slice(start, start + step * n, step))
            axes.append(axis)
    return tuple(keys), axes


def _element_index(idx: np.ndarray, s: int, d: int, rank: int, nb: int) -> np.ndarray:
    """Element indices idx*s + arange(s) laid out as batch + (1,..,s,..,1) for tile axis d."""
    lane = np.arange(s, dtype=np.int64).reshape((1,) * nb + tuple(s if a == d else 1 for a in range(rank)))
    return idx.astype(np.int64).reshape(idx.shape + (1,) * rank) * s + lane


def _tile_elements(index, shape: tuple, nb: int) -> list[np.ndarray]:
    """The element indices of the tiles at ``index`` (tile coordinates), one array per axis."""
    return [_element_index(i, s, d, len(shape), nb) for d, (i, s) in enumerate(zip(index, shape))]


@lowers("load")
def load(run, op, args):
    arr, index = args[0], args[1:]
    shape, order = op.attrs["shape"], op.attrs["order"]
    view = arr.transpose(order)
    nb = run.nb
    if run.race_detector is not None:
        run.race_detector.record(run, view, _tile_elements(index, shape, nb), None, "read")
    fast = _fast_keys(run.blockset, index, view.shape, shape)
    if fast is not None:
        keys, axes = fast
        v = _tiles(view, shape, keys)
        batch = [1] * nb
        if axes:  # tile-count axes to their batch axes, in batch order
            perm = sorted(range(len(axes)), key=axes.__getitem__)
            v = v.transpose(perm + list(range(len(axes), v.ndim)))
            for p, k in enumerate(perm):
                batch[axes[k]] = v.shape[p]
        v = v.reshape(tuple(batch) + shape)
        # tiles are values: copy when a store, scatter or atomic of this launch may change the
        # memory behind the view (the same array, or another argument overlapping it)
        return np.array(v, copy=True) if run.may_change(op.operands[0]) else v
    rank = len(shape)
    elems = _tile_elements(index, shape, nb)
    valid = np.ones((1,) * (nb + rank), dtype=bool)
    for e, n in zip(elems, view.shape):
        valid = valid & (e >= 0) & (e < n)
    clipped = tuple(np.clip(e, 0, max(n - 1, 0)) for e, n in zip(elems, view.shape))
    if view.size == 0:
        vals = np.zeros(np.broadcast_shapes(*(e.shape for e in elems)), dtype=view.dtype)
    else:
        vals = view[clipped]
    if not valid.all():
        pad = np.asarray(PAD_VALUES[op.attrs["padding"]]).astype(view.dtype)
        vals = np.where(valid, vals, pad)
    return vals


def _last_writer(value: np.ndarray, keep_axes: list[int], nb: int) -> np.ndarray:
    """Drop the batch axes not in ``keep_axes``: where several blocks write the same place,
    the last block wins (a unit axis has one block)."""
    return value[tuple(slice(None) if a in keep_axes else -1 for a in range(nb))]


@lowers("store")
def store(run, op, args):
    arr, index, tile = args[0], args[1:-1], args[-1]
    nb = run.nb
    shape = tile.shape[nb:]
    view = arr.transpose(op.attrs["order"])
    if run.race_detector is not None:
        run.race_detector.record(run, view, _tile_elements(index, shape, nb), None, "write")
    fast = _fast_keys(run.blockset, index, view.shape, shape)
    if fast is not None:
        keys, axes = fast
        value = _last_writer(tile, axes, nb)  # batch axes of ``axes`` left, in batch order
        if len(axes) > 1:  # into the order of ``keys``
            in_value = sorted(axes)
            value = value.transpose([in_value.index(a) for a in axes] + list(range(len(axes), value.ndim)))
        _tiles(view, shape, keys)[...] = value
        return None
    _scatter(view, _tile_elements(index, shape, nb), tile, None)
    return None


def _scatter(view: np.ndarray, elems: list[np.ndarray], value: np.ndarray, mask: np.ndarray | None) -> None:
    full = np.broadcast_shapes(*(e.shape for e in elems), value.shape,
                               *(() if mask is None else (mask.shape,)))
    valid = np.ones(full, dtype=bool)
    for e, n in zip(elems, view.shape):
        valid &= (e >= 0) & (e < n)
    if mask is not None:
        valid &= mask
    if not elems:  # a 0-d array: the last writing lane wins
        written = np.broadcast_to(value, full)[valid]
        if written.size:
            view[...] = written[-1]
        return
    sel = tuple(np.broadcast_to(e, full)[valid] for e in elems)
    view[sel] = np.broadcast_to(value, full)[valid]


# ---------------------------------------------------------------------------------- element-wise

@lowers("gather")
def gather(run, op, args):
    arr = args[0]
    n = arr.ndim
    elems = [e.astype(np.int64, copy=False) for e in args[1:1 + n]]
    mask = args[1 + n] if op.attrs["has_mask"] else None
    if run.race_detector is not None:
        run.race_detector.record(run, arr, elems, mask, "read")
    full = np.broadcast_shapes((1,) * run.nb, *(e.shape for e in elems), *(() if mask is None else (mask.shape,)))
    valid = np.ones(full, dtype=bool)
    for e, size in zip(elems, arr.shape):
        valid &= (e >= 0) & (e < size)
    if mask is not None:
        valid &= mask
    clipped = tuple(np.broadcast_to(np.clip(e, 0, max(size - 1, 0)), full) for e, size in zip(elems, arr.shape))
    vals = (arr[clipped] if clipped else arr[...]) if arr.size else np.zeros(full, dtype=arr.dtype)
    pad = np.asarray(op.attrs["padding_value"]).astype(arr.dtype)
    return np.where(valid, vals, pad)


@lowers("scatter")
def scatter(run, op, args):
    arr = args[0]
    n = arr.ndim
    elems = [e.astype(np.int64, copy=False) for e in args[1:1 + n]]
    value = args[1 + n]
    mask = args[2 + n] if op.attrs["has_mask"] else None
    if run.race_detector is not None:
        run.race_detector.record(run, arr, elems, mask, "write")
    _scatter(arr, elems, value, mask)


_RMW = {
    "add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
    "or": np.bitwise_or, "xor": np.bitwise_xor,
}


def _segmented_scan(v: np.ndarray, group_start: np.ndarray, combine) -> np.ndarray:
    """Inclusive scan of ``v`` restarting at each group (Hillis-Steele, log2(longest group) steps).

    ``combine(earlier, later)`` must be associative; the result equals the sequential
    left-to-right fold within each group.
    """
    s = v.copy()
    pos = np.arange(len(v))
    longest = int((pos - group_start).max(initial=0)) + 1
    d = 1
    while d < longest:
        i = pos[pos - d >= group_start]
        nxt = s.copy()
        nxt[i] = combine(s[i - d], s[i])
        s = nxt
        d *= 2
    return s


def _atomic_apply(run, op, arr, elems, values: list[np.ndarray], combine, ufunc, need_old: bool,
                  associative: bool):
    """Apply per-element updates in block/lane order; return old values (or None).

    Every block of the set performs its own update, even when the indices and values
    do not depend on the block (so they are held once): operands are broadcast to the
    full batch shape first. Updates of one element are grouped: an exactly associative
    update (integer add, max, min, bitwise, exchange) is a segmented scan over its group,
    others (float add, compare-and-swap) are applied one rank of the groups at a time.
    Both give the result of applying the updates one after the other in block order.
    """
    every_block = run.blockset.batch_shape + (1,) * len(op.result.type.shape)
    if run.race_detector is not None:
        run.race_detector.record(run, arr, elems, None, "atomic")
    full = np.broadcast_shapes(every_block, *(e.shape for e in elems), *(v.shape for v in values))
    valid = np.ones(full, dtype=bool)
    for e, size in zip(elems, arr.shape):
        valid &= (e >= 0) & (e < size)
    idx = tuple(np.broadcast_to(e, full)[valid] for e in elems)
    vals = [np.broadcast_to(v, full)[valid] for v in values]
    if not need_old and ufunc is not None:
        ufunc.at(arr, idx, vals[0])
        return None
    if not need_old and combine is None:  # exchange without result: last write wins
        arr[idx] = vals[0]
        return None
    n = len(idx[0]) if idx else 0
    old_full = np.zeros(full, dtype=arr.dtype)
    if n == 0:
        return old_full
    flat = np.ravel_multi_index(idx, arr.shape)
    order = np.argsort(flat, kind="stable")  # grouped by element, block/lane order inside
    sidx = tuple(i[order] for i in idx)
    svals = [v[order] for v in vals]
    sflat = flat[order]
    starts = np.r_[True, sflat[1:] != sflat[:-1]]
    pos = np.arange(n)
    group_start = np.maximum.accumulate(np.where(starts, pos, 0))
    old = np.empty(n, dtype=arr.dtype)
    if associative:
        init = arr[sidx]  # each element's value before the op, per update
        scan = _segmented_scan(svals[0].astype(arr.dtype, copy=False), group_start, combine)
        old[starts] = init[starts]
        rest = ~starts
        old[rest] = combine(init[rest], scan[pos[rest] - 1])
        ends = np.r_[starts[1:], True]
        arr[tuple(i[ends] for i in sidx)] = combine(init[ends], scan[ends])
    else:
        rank = pos - group_start
        by_rank = np.argsort(rank, kind="stable")
        bounds = np.r_[0, np.cumsum(np.bincount(rank))]
        for r in range(len(bounds) - 1):
            sel = by_rank[bounds[r]:bounds[r + 1]]  # at most one update per element
            where = tuple(i[sel] for i in sidx)
            cur = arr[where]
            old[sel] = cur
            arr[where] = combine(cur, *(v[sel] for v in svals))
    unsorted = np.empty(n, dtype=arr.dtype)
    unsorted[order] = old
    old_full[valid] = unsorted
    return old_full


def _uses(run, value) -> bool:
    return run.fn_uses.get(value.id, 0) > 0


@lowers("atomic_rmw")
def atomic_rmw(run, op, args):
    arr = args[0]
    n = arr.ndim
    elems = [e.astype(np.int64, copy=False) for e in args[1:1 + n]]
    update = args[1 + n]
    kind = op.attrs["kind"]
    if kind == "xchg":
        combine, ufunc = (lambda cur, new: new), None
    else:
        ufunc = _RMW[kind]
        combine = lambda cur, new: ufunc(cur, new).astype(arr.dtype)  # noqa: E731
    # floating-point addition is not associative: it keeps the one-at-a-time order
    associative = not (kind == "add" and arr.dtype.kind not in "iub")
    old = _atomic_apply(run, op, arr, elems, [update], combine, ufunc, need_old=_uses(run, op.result),
                        associative=associative)
    return old if old is not None else np.zeros((1,) * (run.nb + len(op.result.type.shape)), arr.dtype)


@lowers("atomic_cas")
def atomic_cas(run, op, args):
    arr = args[0]
    n = arr.ndim
    elems = [e.astype(np.int64, copy=False) for e in args[1:1 + n]]
    expected, desired = args[1 + n], args[2 + n]
    return _atomic_apply(run, op, arr, elems, [expected, desired],
                         lambda cur, exp, des: np.where(cur == exp, des, cur), None, need_old=True,
                         associative=False)
