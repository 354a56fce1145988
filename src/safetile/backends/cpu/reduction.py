"""CPU lowerings of the reduction family (ops/reduction.py).

Custom reductions and scans run their combining region on whole arrays: a reduction
halves the axis each step (tile dimensions are powers of two), a scan doubles its stride
each step (Hillis-Steele), so both take log2(n) region executions.
"""
from __future__ import annotations

import warnings

import numpy as np

from ... import dtypes as dt
from ... import numerics
from .context import BlockSet
from .elementwise import _compute_dtype
from .executor import Env, lowers


def _axes(run, op):
    return tuple(run.nb + a for a in op.attrs["axes"])


def _finish(x, run, op):
    """Cast to the result dtype and lay out as batch + result shape (keepdims axes included)."""
    out = op.results[0].type
    x = np.asarray(x).astype(out.dtype.np_dtype, copy=False)
    return x.reshape(x.shape[:run.nb] + out.shape) if x.ndim >= run.nb else x


def _numeric(x):
    return x.astype(_compute_dtype(x), copy=False)


def _combine(op, base: str):
    """(x, y) -> x op y in float32-or-wider with the op's rounding mode and flush_to_zero, or None
    for the plain NumPy reduction. Directed modes round every partial result (the reduction
    order is a tree, as on the GPU)."""
    mode = op.attrs.get("rounding_mode")
    ftz = op.attrs.get("flush_to_zero", False)
    if mode is None and not ftz:
        return None
    plain = np.add if base == "add" else np.multiply

    def comb(x, y):
        if mode is not None and mode.value in numerics.DIRECTED:
            hi, sign = numerics.exact_op(base, x.astype(np.float64), y.astype(np.float64))
            r = numerics.round_to(hi, sign, dt.as_dtype(x.dtype), mode.value)
        else:
            r = plain(x, y)
        return numerics.flush_subnormals(r) if ftz else r
    return comb


def _tree(x, axes, keepdims, comb):
    """Reduce ``axes`` of ``x`` by halving (tile dimensions are powers of two)."""
    axes = sorted(axes)
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = x.transpose(rest + axes)
    flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
    while flat.shape[-1] > 1:
        half = flat.shape[-1] // 2
        flat = comb(flat[..., :half], flat[..., half:])
    r = flat[..., 0]
    if keepdims:
        r = np.expand_dims(r, tuple(axes))
    return r


def _to_result(op, x):
    """A float32 accumulation back to a 16-bit result in the op's rounding mode."""
    d = op.results[0].type.dtype
    mode = op.attrs.get("rounding_mode")
    if mode is not None and mode.value in numerics.DIRECTED and d.is_float and d.bits == 16:
        x64 = np.asarray(x, np.float64)
        return numerics.round_to(x64, np.zeros_like(x64), d, mode.value)
    return x


def _flushed(op, x):
    return numerics.flush_subnormals(x) if op.attrs.get("flush_to_zero") else x


@lowers("reduce_sum", "reduce_prod")
def reduce_sum(run, op, args):
    x = _flushed(op, _numeric(args[0]))
    comb = _combine(op, "add" if op.name == "reduce_sum" else "mul")
    if comb is not None:
        with np.errstate(all="ignore"):
            return _finish(_to_result(op, _tree(x, _axes(run, op), op.attrs["keepdims"], comb)), run, op)
    fn = np.sum if op.name == "reduce_sum" else np.prod
    return _finish(fn(x, axis=_axes(run, op), keepdims=op.attrs["keepdims"], dtype=x.dtype), run, op)


@lowers("reduce_max", "reduce_min")
def reduce_extreme(run, op, args):
    x = _flushed(op, _numeric(args[0]))
    is_max = op.name == "reduce_max"
    if x.dtype.kind == "f" and not op.attrs.get("propagate_nan", False):
        fn = np.nanmax if is_max else np.nanmin
    else:
        fn = np.max if is_max else np.min
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN slice gives NaN, as documented
        r = fn(x, axis=_axes(run, op), keepdims=op.attrs["keepdims"])
    return _finish(r, run, op)


@lowers("argmax", "argmin")
def arg_extreme(run, op, args):
    """Index of the first extreme of the C-order flattened reduced axes; NaNs are the extreme
    with propagate_nan, else ignored (an all-NaN slice gives index 0)."""
    x = _numeric(args[0])
    nb, axes = run.nb, op.attrs["axes"]
    is_max = op.name == "argmax"
    if x.dtype.kind == "f" and not op.attrs.get("propagate_nan", False):
        x = np.where(np.isnan(x), -np.inf if is_max else np.inf, x)
    rest = [a for a in range(x.ndim - nb) if a not in axes]
    moved = x.transpose(tuple(range(nb)) + tuple(nb + a for a in rest) + tuple(nb + a for a in axes))
    flat = moved.reshape(moved.shape[:nb + len(rest)] + (-1,))
    r = (np.argmax if is_max else np.argmin)(flat, axis=-1)
    return _finish(r, run, op)


def _run_region(run, region, arrays):
    """Run a scalar combining region element-wise over arrays of one common shape.

    The region sees every element as a block of its own: its batch is the current batch
    followed by the remaining tile axes. Values from outside the region (a captured
    per-block scalar, ``bid``) get unit axes for those extra dimensions.
    """
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    outer = run.blockset
    extra = len(shape) - outer.nb
    pad = (1,) * extra
    blocks = BlockSet(shape, tuple(c.reshape(c.shape + pad) for c in outer.coords), outer.ids.reshape(
        outer.ids.shape + pad), run.grid)
    saved = run.cur_env
    try:
        return run.run_block(region, Env(blocks, run.cur_env, extra_axes=extra),
                             [np.broadcast_to(a, shape) for a in arrays])
    finally:
        run.cur_env = saved


@lowers("reduce")
def custom_reduce(run, op, args):
    nb = run.nb
    axes = sorted(op.attrs["axes"])
    # move reduced axes last and flatten them into one power-of-two axis
    rest = [a for a in range(args[0].ndim - nb) if a not in axes]
    perm = tuple(range(nb)) + tuple(nb + a for a in rest) + tuple(nb + a for a in axes)
    vals = [np.ascontiguousarray(np.broadcast_to(a, np.broadcast_shapes(*(x.shape for x in args))).transpose(perm))
            for a in args]
    lead = vals[0].shape[:nb + len(rest)]
    vals = [v.reshape(lead + (-1,)) for v in vals]
    while vals[0].shape[-1] > 1:
        half = vals[0].shape[-1] // 2
        left = [v[..., :half] for v in vals]
        right = [v[..., half:] for v in vals]
        vals = _run_region(run, op.regions[0], left + right)
    outs = []
    for v, r in zip(vals, op.results):
        v = v[..., 0]
        if op.attrs["keepdims"]:
            full, it = [], iter(v.shape[nb:])
            for a in range(args[0].ndim - nb):
                full.append(1 if a in axes else next(it))
            v = v.reshape(v.shape[:nb] + tuple(full))
        outs.append(np.asarray(v).astype(r.type.dtype.np_dtype, copy=False))
    return outs


def _scan_builtin(x, axis, reverse, fn):
    if reverse:
        x = np.flip(x, axis)
    r = fn(x, axis=axis, dtype=x.dtype)
    return np.flip(r, axis) if reverse else r


@lowers("cumsum", "cumprod")
def cumulative(run, op, args):
    x = _flushed(op, _numeric(args[0]))
    axis = run.nb + op.attrs["axis"]
    comb = _combine(op, "add" if op.name == "cumsum" else "mul")
    if comb is not None:
        with np.errstate(all="ignore"):
            r = _to_result(op, _scan_tree(x, axis, op.attrs["reverse"], comb))
        return np.asarray(r).astype(op.results[0].type.dtype.np_dtype, copy=False)
    fn = np.cumsum if op.name == "cumsum" else np.cumprod
    r = _scan_builtin(x, axis, op.attrs["reverse"], fn)
    return r.astype(op.results[0].type.dtype.np_dtype, copy=False)


def _scan_tree(x, axis, reverse, comb):
    """Inclusive scan by doubling strides (Hillis-Steele) with ``comb``."""
    if reverse:
        x = np.flip(x, axis)
    n, step = x.shape[axis], 1
    while step < n:
        head = np.take(x, np.arange(step), axis=axis)
        cur = comb(np.take(x, np.arange(n - step), axis=axis), np.take(x, np.arange(step, n), axis=axis))
        x = np.concatenate([head, cur], axis=axis)
        step *= 2
    return np.flip(x, axis) if reverse else x


@lowers("scan")
def custom_scan(run, op, args):
    axis = run.nb + op.attrs["axis"]
    shape = np.broadcast_shapes(*(a.shape for a in args))
    vals = [np.broadcast_to(a, shape) for a in args]
    if op.attrs["reverse"]:
        vals = [np.flip(v, axis) for v in vals]
    n = shape[axis]
    step = 1
    while step < n:
        head = [np.take(v, np.arange(step), axis=axis) for v in vals]
        prev = [np.take(v, np.arange(n - step), axis=axis) for v in vals]
        cur = [np.take(v, np.arange(step, n), axis=axis) for v in vals]
        combined = _run_region(run, op.regions[0], prev + cur)
        new = []
        for h, c, cu in zip(head, combined, cur):
            # the combiner may depend on per-block values: results can have a wider batch
            c = np.broadcast_to(c, np.broadcast_shapes(c.shape, cu.shape))
            h = np.broadcast_to(h, c.shape[:axis] + (h.shape[axis],) + c.shape[axis + 1:])
            new.append(np.concatenate([h, c], axis=axis))
        vals = new
        step *= 2
    if op.attrs["reverse"]:
        vals = [np.flip(v, axis) for v in vals]
    return [v.astype(r.type.dtype.np_dtype, copy=False) for v, r in zip(vals, op.results)]
