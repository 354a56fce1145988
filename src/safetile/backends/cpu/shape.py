"""CPU lowerings of the shape family (ops/shape.py)."""
from __future__ import annotations

import numpy as np

from .executor import lowers


def batch_broadcast(nb: int, *xs: np.ndarray) -> list[np.ndarray]:
    """Broadcast only the batch axes of several values (tile axes untouched)."""
    batch = np.broadcast_shapes(*(x.shape[:nb] for x in xs))
    return [np.broadcast_to(x, batch + x.shape[nb:]) for x in xs]


@lowers("reshape")
def reshape(run, op, args):
    (x,) = args
    return x.reshape(x.shape[:run.nb] + op.attrs["shape"])


@lowers("permute")
def permute(run, op, args):
    (x,) = args
    nb = run.nb
    return x.transpose(tuple(range(nb)) + tuple(nb + a for a in op.attrs["axes"]))


@lowers("broadcast_to")
def broadcast_to(run, op, args):
    (x,) = args
    return np.broadcast_to(x, x.shape[:run.nb] + op.attrs["shape"])


@lowers("cat")
def cat(run, op, args):
    a, b = batch_broadcast(run.nb, *args)
    return np.concatenate([a, b], axis=run.nb + op.attrs["axis"])


@lowers("take")
def take(run, op, args):
    x, idx = batch_broadcast(run.nb, *args)
    axis = run.nb + op.attrs["axis"]
    n = x.shape[axis]
    inside = (idx >= 0) & (idx < n)
    out = np.take_along_axis(x, np.where(inside, idx, 0).astype(np.intp), axis=axis)
    return np.where(inside, out, np.zeros((), x.dtype))


def _block_elements(run, index: list[np.ndarray], sub: tuple[int, ...], full_shape: tuple[int, ...]):
    """Fancy-index keys selecting block ``index`` of size ``sub`` from batch + full_shape values."""
    nb, rank = run.nb, len(sub)
    keys = []
    for d, (i, s) in enumerate(zip(index, sub)):
        lane = np.arange(s).reshape((1,) * nb + tuple(s if a == d else 1 for a in range(rank)))
        keys.append(i.astype(np.int64).reshape(i.shape + (1,) * rank) * s + lane)
    return keys


def _check_block_index(run, op, index, sub, full_shape, what):
    """Fail the launch, naming the blocks, when a run-time block index is out of range."""
    bs = run.blockset
    bad = np.zeros(bs.size, dtype=bool)
    for i, s, n in zip(index, sub, full_shape):
        flat = bs.flatten(i)
        bad |= (flat < 0) | (flat >= n // s)
    if bad.any():
        run.fail(op, f"{what}: block index out of range for a tile of shape {tuple(full_shape)} "
                     f"split into {tuple(sub)} blocks", bs.flatten(bs.ids)[bad])


@lowers("extract")
def extract(run, op, args):
    x, index = args[0], args[1:]
    nb, sub = run.nb, op.attrs["shape"]
    _check_block_index(run, op, index, sub, x.shape[nb:], "extract")
    if all(i.size == 1 for i in index):
        sl = tuple(slice(int(i.reshape(-1)[0]) * s, int(i.reshape(-1)[0]) * s + s) for i, s in zip(index, sub))
        return x[(slice(None),) * nb + sl]
    keys = _block_elements(run, index, sub, x.shape[nb:])
    batch = np.broadcast_shapes(x.shape[:nb], *(i.shape for i in index))
    xb = np.broadcast_to(x, batch + x.shape[nb:])
    grids = np.ix_(*[np.arange(n) for n in batch]) if nb else ()
    bkeys = tuple(g.reshape(g.shape + (1,) * len(sub)) for g in grids)
    return xb[bkeys + tuple(keys)]


@lowers("insert")
def insert(run, op, args):
    x, index, val = args[0], args[1:-1], args[-1]
    nb, sub = run.nb, val.shape[run.nb:]
    _check_block_index(run, op, index, sub, x.shape[nb:], "insert")
    batch = np.broadcast_shapes(x.shape[:nb], val.shape[:nb], *(i.shape for i in index))
    out = np.array(np.broadcast_to(x, batch + x.shape[nb:]))
    if all(i.size == 1 for i in index):
        sl = tuple(slice(int(i.reshape(-1)[0]) * s, int(i.reshape(-1)[0]) * s + s) for i, s in zip(index, sub))
        out[(slice(None),) * nb + sl] = val
        return out
    keys = _block_elements(run, index, sub, x.shape[nb:])
    grids = np.ix_(*[np.arange(n) for n in batch]) if nb else ()
    bkeys = tuple(g.reshape(g.shape + (1,) * len(sub)) for g in grids)
    out[bkeys + tuple(keys)] = np.broadcast_to(val, batch + sub)
    return out


def _raw_bytes(x: np.ndarray, nb: int, d) -> np.ndarray:
    """batch + (bytes,) little-endian bytes of the tile elements of ``x`` (dtype ``d``)."""
    batch = x.shape[:nb]
    flat = np.ascontiguousarray(x).reshape(batch + (-1,))
    if d.is_bool:
        return flat.astype(np.uint8)
    if d.bits == 4:  # ml_dtypes float4: one code per byte, in the low nibble
        codes = flat.view(np.uint8) & 0x0F
        return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    return flat.view(np.uint8).reshape(batch + (-1,))


@lowers("pack_to_bytes")
def pack_to_bytes(run, op, args):
    (x,) = args
    return _raw_bytes(x, run.nb, op.operands[0].type.dtype)


@lowers("unpack_from_bytes")
def unpack_from_bytes(run, op, args):
    (x,) = args
    d = op.attrs["dtype"]
    b = np.ascontiguousarray(x, dtype=np.uint8)
    if d.is_bool:
        return b != 0
    if d.bits == 4:
        codes = np.stack([b & 0x0F, b >> 4], axis=-1).reshape(b.shape[:-1] + (-1,))
        return codes.astype(np.uint8).view(d.np_dtype)
    return b.view(d.np_dtype)
