"""Triton lowerings of the shape family (ops/shape.py).

Triton tensors cannot be sliced, so ``extract`` views the tile as a grid of sub-tiles
(reshape to interleaved (count, size) axes), keeps the chosen block with a one-hot mask and
sums the count axes away; values travel as same-width integers so the sum is exact for
every dtype (NaN payloads and -0.0 included). ``insert`` selects with the same mask, and
``cat`` joins both tiles on a new last axis, moves it next to the concatenation axis and
merges the two.
"""
from __future__ import annotations

from .codegen import Gen, lowers, tl_dtype


def _inserts_units(src, dst) -> bool:
    """Whether ``dst`` is ``src`` with size-1 axes inserted (a pure expand_dims)."""
    it = iter(src)
    want = next(it, None)
    for n in dst:
        if want is not None and n == want:
            want = next(it, None)
        elif n != 1:
            return False
    return want is None


@lowers("reshape")
def reshape(g: Gen, op):
    src, dst = tuple(op.operands[0].type.shape), tuple(op.attrs["shape"])
    if src == dst:
        return op.operands[0]
    sq = g.squeezed.get(op.operands[0].id)
    if sq is not None and dst == tuple(n for n in src if n != 1):
        return sq  # the tile was produced without its unit axes (see memory.load)
    x = g.val(op.operands[0])
    if not src:
        return f"tl.broadcast_to({x}, {list(dst)!r})"
    if _inserts_units(src, dst):  # x[:, None]: keeps the layout, unlike tl.reshape
        it = iter(src)
        want = next(it, None)
        idx = []
        for n in dst:
            if want is not None and n == want:
                idx.append(":")
                want = next(it, None)
            else:
                idx.append("None")
        return f"{x}[{', '.join(idx)}]"
    return f"tl.reshape({x}, {list(dst)!r})"


@lowers("permute")
def permute(g: Gen, op):
    return f"tl.permute({g.val(op.operands[0])}, {list(op.attrs['axes'])!r})"


@lowers("broadcast_to")
def broadcast_to(g: Gen, op):
    return f"tl.broadcast_to({g.val(op.operands[0])}, {list(op.attrs['shape'])!r})"


@lowers("cat")
def cat(g: Gen, op):
    a, b = (g.val(v) for v in op.operands)
    axis = op.attrs["axis"]
    rank = len(op.result.type.shape)
    j = g.tmp(f"tl.join({a}, {b})")
    perm = list(range(axis)) + [rank] + list(range(axis, rank))
    p = j if perm == list(range(rank + 1)) else g.tmp(f"tl.permute({j}, {perm!r})")
    return f"tl.reshape({p}, {list(op.result.type.shape)!r})"


@lowers("take")
def take(g: Gen, op):
    x, idx = (g.val(v) for v in op.operands)
    axis = op.attrs["axis"]
    n = op.operands[0].type.shape[axis]
    inside = g.tmp(f"({idx} >= 0) & ({idx} < {n})")
    got = g.tmp(f"tl.gather({x}, tl.where({inside}, {idx}, 0).to(tl.int32), {axis})")
    return f"tl.where({inside}, {got}, tl.zeros_like({got}))"


def _bits(d):
    """(integer dtype of the same width, to-bits format, from-bits format) for exact selection."""
    if d.is_bool:
        return "tl.int8", "{}.to(tl.int8)", "({} != 0)"
    if d.is_float:
        it = f"tl.int{d.bits}"
        return it, f"{{}}.to({it}, bitcast=True)", f"{{}}.to({it}).to({tl_dtype(d)}, bitcast=True)"
    return tl_dtype(d), "{}", f"{{}}.to({tl_dtype(d)})"


def _blocks(g: Gen, full, sub, index):
    """Interleaved (count, size) shape and the one-hot mask of block ``index``."""
    inter, mask = [], None
    rank = len(full)
    for n, s in zip(full, sub):
        inter += [n // s, s]
    for d, (n, s) in enumerate(zip(full, sub)):
        c = n // s
        if c == 1:
            continue
        shape = [1] * (2 * rank)
        shape[2 * d] = c
        oh = f"tl.reshape(tl.arange(0, {c}) == {g.lit(index[d])}, {shape!r})"
        mask = oh if mask is None else f"({mask} & {oh})"
    return inter, mask


@lowers("extract")
def extract(g: Gen, op):
    x, index = op.operands[0], op.operands[1:]
    full, sub = x.type.shape, op.attrs["shape"]
    if tuple(full) == tuple(sub):
        return x
    d = x.type.dtype
    _, to_bits, from_bits = _bits(d)
    inter, mask = _blocks(g, full, sub, index)
    y = g.tmp(f"tl.where({mask}, tl.reshape({to_bits.format(g.val(x))}, {inter!r}), 0)")
    for k in reversed(range(len(full))):
        if full[k] // sub[k] > 1:
            y = g.tmp(f"tl.sum({y}, axis={2 * k})")
    return from_bits.format(f"tl.reshape({y}, {list(sub)!r})")


@lowers("insert")
def insert(g: Gen, op):
    x, index, v = op.operands[0], op.operands[1:-1], op.operands[-1]
    full, sub = x.type.shape, v.type.shape
    if tuple(full) == tuple(sub):
        return v
    inter, mask = _blocks(g, full, sub, index)
    vinter = [k for s in sub for k in (1, s)]
    d = x.type.dtype
    xs, vs = g.val(x), g.val(v)
    if d.is_float and d.bits == 8:
        xs, vs = f"{xs}.to(tl.int8, bitcast=True)", f"{vs}.to(tl.int8, bitcast=True)"
    out = f"tl.reshape(tl.where({mask}, tl.reshape({vs}, {vinter!r}), tl.reshape({xs}, {inter!r})), {list(full)!r})"
    return f"{out}.to({tl_dtype(d)}, bitcast=True)" if d.is_float and d.bits == 8 else out



def _uint(bits: int) -> str:
    return f"tl.uint{bits}"


@lowers("pack_to_bytes")
def pack_to_bytes(g: Gen, op):
    """Elements → little-endian bytes: each element's bits shifted into (n, k) bytes, then flattened
    (row-major, so the bytes of element 0 come first); 4-bit codes pair up in one byte."""
    src = op.operands[0].type
    d = src.dtype
    n = 1
    for s in src.shape:
        n *= s
    x = g.tmp(f"tl.reshape({g.val(op.operands[0])}, [{n}])")
    if d.is_bool:
        return f"{x}.to(tl.uint8)"
    if d.bits == 4:
        pairs = g.tmp(f"tl.split(tl.reshape({x}, [{n // 2}, 2]))")
        return f"({pairs}[0] | ({pairs}[1] << 4)).to(tl.uint8)"
    bits = d.bits
    u = g.tmp(f"{x}.to({_uint(bits)}, bitcast=True)") if tl_dtype(d) != _uint(bits) else x
    if bits == 8:
        return u
    k = bits // 8
    shifts = f"(tl.arange(0, {k}) * 8).to({_uint(bits)})"
    b = g.tmp(f"(({u}[:, None] >> {shifts}[None, :]) & 0xFF).to(tl.uint8)")
    return f"tl.reshape({b}, [{n * k}])"


@lowers("unpack_from_bytes")
def unpack_from_bytes(g: Gen, op):
    d = op.attrs["dtype"]
    m = op.operands[0].type.shape[0]
    x = g.val(op.operands[0])
    if d.is_bool:
        return f"({x} != 0)"
    if d.bits == 4:
        lo, hi = f"({x} & 15)", f"({x} >> 4)"
        return f"tl.reshape(tl.join({lo}, {hi}), [{2 * m}])"
    bits = d.bits
    if bits == 8:
        return f"{x}.to({tl_dtype(d)}, bitcast=True)" if tl_dtype(d) != "tl.uint8" else x
    k = bits // 8
    b = g.tmp(f"tl.reshape({x}, [{m // k}, {k}]).to({_uint(bits)})")
    shifts = f"(tl.arange(0, {k}) * 8).to({_uint(bits)})"
    u = g.tmp(f"tl.reduce({b} << {shifts}[None, :], 1, _st_or)")
    return f"{u}.to({tl_dtype(d)}, bitcast=True)" if tl_dtype(d) != _uint(bits) else u
