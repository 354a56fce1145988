"""Array slices, advanced indexing and stepped tiled views.

``Array.slice``, ``ct.load_advanced_indexing``/``ct.store_advanced_indexing`` with
``ct.Slice`` and ``tiled_view(..., traversal_steps=...)`` are composed in the front end from
element index tiles and gather/scatter. Each case runs against a NumPy reference on the CPU
backend, and as a differential test (CPU vs Triton, Triton vs NumPy) under Triton's
interpreter through tests/test_triton_backend.py; outputs are poisoned first.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import safetile as ct
from safetile.errors import TileError, TileTypeError, TileValueError

F32, I32 = np.float32, np.int32
MODES = (ct.PaddingMode.ZERO, ct.PaddingMode.NAN, ct.PaddingMode.POS_INF, ct.PaddingMode.NEG_INF)
PAD_VALUES = (0.0, np.nan, np.inf, -np.inf)


def _triton_cases():
    """tests/test_triton_backend.py (Case, check_case, poison); skips without torch/triton."""
    return importlib.import_module("test_triton_backend")


@dataclass
class SCase:
    """``make(rng)`` returns (args, indices of outputs to poison, reference(*args) -> {index: array})."""

    name: str
    kernel: Any
    grid: Any
    make: Callable
    exact: bool = True


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _padded(block: np.ndarray, shape: tuple[int, ...], fill: float) -> np.ndarray:
    out = np.full(shape, fill, block.dtype)
    out[tuple(slice(0, min(n, m)) for n, m in zip(block.shape, shape))] = \
        block[tuple(slice(0, min(n, m)) for n, m in zip(block.shape, shape))]
    return out


# ======================================================================================
# Array.slice
# ======================================================================================

@ct.kernel
def slice_tiles(x, y, out, start, stop, AXIS: ct.Constant[int], BM: ct.Constant[int], BN: ct.Constant[int]):
    """Tiles of a run-time slice: edge tiles padded (NaN) and stores dropped relative to the slice."""
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x.slice(AXIS, start, stop), (i, j), (BM, BN), padding_mode=ct.PaddingMode.NAN)
    ct.store(out, (i, j), t)
    ct.store(y.slice(AXIS, start, stop), (i, j), t * 2.0)


def _slice_tiles(axis: int, start: int, stop: int, shape=(13, 11), tile=(4, 4)):
    sl = tuple(slice(start, stop) if a == axis % 2 else slice(None) for a in range(2))
    view = np.zeros(shape)[sl].shape
    grid = (_cdiv(view[0], tile[0]) + 1, _cdiv(view[1], tile[1]) + 1)  # one row/column of tiles past the end

    def make(rng):
        x = rng.standard_normal(shape).astype(F32)
        y = np.zeros(shape, F32)
        out = np.zeros((grid[0] * tile[0], grid[1] * tile[1]), F32)

        def ref(x, y, out, *_):
            y = y.copy()
            y[sl] = x[sl] * 2
            return {1: y, 2: _padded(x[sl], out.shape, np.nan)}
        return (x, y, out, start, stop, axis, *tile), [1, 2], ref
    return SCase(f"slice_tiles_axis{axis}_{start}_{stop}", slice_tiles, grid, make)


@ct.kernel
def nested_slice(x, y, out, meta, B: ct.Constant[int]):
    """Constant bounds, a negative axis, a slice of a slice of a slice, clamped bounds, shapes."""
    s = x.slice(0, 2, 12).slice(-1, 1, 8).slice(0, 1, 7)  # rows 3..8, columns 1..7
    t = ct.load(s, (0, 0), (B, B), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (0, 0), t)
    ct.store(y.slice(0, 2, 12).slice(-1, 1, 8).slice(0, 1, 7), (0, 0), t + 1.0)
    rows, cols = s.shape
    ct.store(meta, (0,), rows)
    ct.store(meta, (1,), cols)
    ct.store(meta, (2,), ct.num_tiles(s, 0, (4, 4)))
    ct.store(meta, (3,), ct.num_tiles(s, 1, (4, 4)))
    ct.store(meta, (4,), s.tiled_view((4, 2)).num_tiles(1))
    ct.store(meta, (5,), x.slice(0, 5, 100).shape[0])   # constant bounds: stop - start (cuTile's static size)
    # run-time bounds are clamped (constant ones out of order are TileTypeErrors, as in cuTile)
    ct.store(meta, (6,), x.slice(1, ct.bid(0) - 3, 4).shape[1])  # start clamped to 0
    ct.store(meta, (7,), s.slice(1, ct.bid(0) + 6, 2).shape[1])  # stop below start: empty


def _nested(rng):
    x = rng.standard_normal((13, 10)).astype(F32)
    y = np.zeros((13, 10), F32)
    out = np.zeros((8, 8), F32)
    meta = np.zeros(8, I32)

    def ref(x, y, out, meta, _):
        y = y.copy()
        y[3:9, 1:8] = x[3:9, 1:8] + 1
        return {1: y, 2: _padded(x[3:9, 1:8], (8, 8), 0.0), 3: np.array([6, 7, 2, 2, 4, 95, 4, 0])}
    return (x, y, out, meta, 8), [1, 2, 3], ref


@ct.kernel
def segment_sums(x, offsets, out, T: ct.Constant[int]):
    """Variable-length segments: bounds loaded at run time per block; num_tiles of the slice."""
    b = ct.bid(0)
    seg = x.slice(0, ct.load(offsets, (b,), shape=()), ct.load(offsets, (b + 1,), shape=()))
    acc = ct.zeros((T,), ct.float32)
    for k in range(ct.num_tiles(seg, 0, (T,))):
        acc = acc + ct.load(seg, (k,), (T,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (b,), ct.sum(acc))


def _segments(rng):
    offsets = np.array([0, 3, 3, 20, 37, 50], I32)
    x = rng.standard_normal(50).astype(F32)
    out = np.zeros(5, F32)
    return (x, offsets, out, 8), [2], lambda x, o, out, _: {2: np.add.reduceat(x, o[:-1]) * (np.diff(o) > 0)}


@ct.kernel
def bid_slice(x, out, T: ct.Constant[int]):
    """Slice bounds computed from ct.bid (overlapping windows of rows)."""
    b = ct.bid(0)
    t = ct.load(x.slice(0, b * 3, b * 3 + 5), (1, 0), (T, 4), padding_mode=ct.PaddingMode.NEG_INF)
    ct.store(out, (b, 0), t)


def _bid_slice(rng):
    x = rng.standard_normal((13, 4)).astype(F32)
    out = np.zeros((4 * 4, 4), F32)

    def ref(x, out, _):
        r = np.full((16, 4), -np.inf, F32)
        for b in range(4):
            rows = x[b * 3:b * 3 + 5][4:8]
            r[b * 4:b * 4 + len(rows)] = rows
        return {1: r}
    return (x, out, 4), [1], ref


@ct.kernel
def slice_elements(x, y, z, gout, old, ridx, cidx, r0, r1, c0, c1, N: ct.Constant[int]):
    """gather, scatter and atomic_add through a 2-D slice with indices inside and outside it."""
    r = ct.load(ridx, (0,), (N,))
    c = ct.load(cidx, (0,), (N,))
    g = ct.gather(x.slice(0, r0, r1).slice(1, c0, c1), (r.reshape((N, 1)), c.reshape((1, N))),
                  padding_value=-5.0)
    ct.store(gout, (0, 0), g)
    vals = ct.arange(N, dtype=ct.int32).astype(ct.float32) + 1.0
    ct.scatter(y.slice(0, r0, r1).slice(1, c0, c1), (r, c), vals)
    ct.store(old, (0,), ct.atomic_add(z.slice(0, r0, r1).slice(1, c0, c1), (r, c), 1))


def _slice_elements(rng):
    r0, r1, c0, c1, n = 2, 8, 3, 9, 8
    x = rng.standard_normal((11, 12)).astype(F32)
    y = np.zeros((11, 12), F32)
    z = rng.integers(0, 100, (11, 12)).astype(I32)
    gout = np.zeros((n, n), F32)
    old = np.zeros(n, I32)
    ridx = rng.permutation(np.arange(-3, 9))[:n].astype(I32)   # some outside [0, 6): -3..-1, 6..8
    cidx = rng.permutation(np.arange(-2, 10))[:n].astype(I32)

    def ref(x, y, z, gout, old, ridx, cidx, *_):
        h, w = r1 - r0, c1 - c0
        xs = x[r0:r1, c0:c1]
        ok2 = ((ridx >= 0) & (ridx < h))[:, None] & ((cidx >= 0) & (cidx < w))[None, :]
        g = np.where(ok2, xs[np.clip(ridx, 0, h - 1)[:, None], np.clip(cidx, 0, w - 1)[None, :]], -5.0)
        ok = (ridx >= 0) & (ridx < h) & (cidx >= 0) & (cidx < w)
        y, z2 = y.copy(), z.copy()
        y[r0 + ridx[ok], c0 + cidx[ok]] = np.arange(1, n + 1, dtype=F32)[ok]
        z2[r0 + ridx[ok], c0 + cidx[ok]] += 1
        o = np.zeros(n, I32)
        o[ok] = z[r0 + ridx[ok], c0 + cidx[ok]]
        return {1: y, 2: z2, 3: g, 4: o}
    return (x, y, z, gout, old, ridx, cidx, r0, r1, c0, c1, n), [1, 3, 4], ref


# ======================================================================================
# tiled views with traversal_steps
# ======================================================================================

@ct.kernel
def stepped_load(x, out, cnt, lo, hi, TM: ct.Constant[int], TN: ct.Constant[int], SM: ct.Constant[int],
                 SN: ct.Constant[int], SLICED: ct.Constant[bool]):
    """Every window of a stepped view (of the array or of a column slice) and its num_tiles."""
    i, j = ct.bid(0), ct.bid(1)
    a = x.slice(1, lo, hi) if SLICED else x
    v = a.tiled_view((TM, TN), padding_mode=ct.PaddingMode.NEG_INF, traversal_steps=(SM, SN))
    ct.store(out, (i, j), v.load((i, j)))
    ct.store(cnt, (0,), v.num_tiles(0))
    ct.store(cnt, (1,), v.num_tiles(1))


def _stepped_load(tile, steps, sliced, shape=(10, 13), lo=2, hi=11):
    view = (shape[0], hi - lo) if sliced else shape
    grid = (_cdiv(view[0], steps[0]), _cdiv(view[1], steps[1]))

    def make(rng):
        x = rng.standard_normal(shape).astype(F32)
        out = np.zeros((grid[0] * tile[0], grid[1] * tile[1]), F32)
        cnt = np.zeros(2, I32)

        def ref(x, out, cnt, *_):
            xs = x[:, lo:hi] if sliced else x
            r = np.empty_like(out)
            for i in range(grid[0]):
                for j in range(grid[1]):
                    win = xs[i * steps[0]:i * steps[0] + tile[0], j * steps[1]:j * steps[1] + tile[1]]
                    r[i * tile[0]:(i + 1) * tile[0], j * tile[1]:(j + 1) * tile[1]] = _padded(win, tile, -np.inf)
            return {1: r, 2: np.array(grid)}
        return (x, out, cnt, lo, hi, *tile, *steps, sliced), [1, 2], ref
    kind = "overlap" if steps[0] < tile[0] or steps[1] < tile[1] else "gaps"
    return SCase(f"stepped_load_{kind}_{steps}{'_sliced' if sliced else ''}", stepped_load, grid, make)


@ct.kernel
def stepped_store(x, y, counts, TM: ct.Constant[int], TN: ct.Constant[int], SM: ct.Constant[int],
                  SN: ct.Constant[int], CM: ct.Constant[int], CN: ct.Constant[int]):
    """Stores through a gapped view (disjoint windows) and atomic adds through an overlapping one."""
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    y.tiled_view((TM, TN), traversal_steps=(SM, SN)).store((i, j), t)
    counts.tiled_view((TM, TN), traversal_steps=(CM, CN)).atomic_add((i, j), 1)


def _stepped_store(rng):
    tile, steps, csteps, shape = (4, 2), (5, 3), (2, 1), (17, 9)
    grid = (_cdiv(shape[0], steps[0]), _cdiv(shape[1], steps[1]))
    x = rng.standard_normal((grid[0] * tile[0], grid[1] * tile[1])).astype(F32)
    y = np.zeros(shape, F32)
    counts = np.zeros(shape, I32)

    def ref(x, y, counts, *_):
        y, c = y.copy(), counts.copy()
        for i in range(grid[0]):
            for j in range(grid[1]):
                t = x[i * tile[0]:(i + 1) * tile[0], j * tile[1]:(j + 1) * tile[1]]
                win = y[i * steps[0]:i * steps[0] + tile[0], j * steps[1]:j * steps[1] + tile[1]]
                win[...] = t[:win.shape[0], :win.shape[1]]
                c[i * csteps[0]:i * csteps[0] + tile[0], j * csteps[1]:j * csteps[1] + tile[1]] += 1
        return {1: y, 2: c}
    return (x, y, counts, *tile, *steps, *csteps), [1], ref


# ======================================================================================
# advanced indexing
# ======================================================================================

@ct.kernel
def adv2(x, y, out, src, idx, a, SPARSE: ct.Constant[int], K: ct.Constant[int], L: ct.Constant[int],
         PAD: ct.Constant[int]):
    i = ct.load(idx, (0,), (K,))
    ind = ((i, ct.Slice(a, L)), (ct.Slice(a, L), i))[SPARSE]
    t = ct.load_advanced_indexing(x, ind, padding_mode=MODES[PAD])
    ct.store(out, (0, 0), t)
    ct.store_advanced_indexing(y, ind, ct.load(src, (0, 0), t.shape))


@ct.kernel
def adv3(x, y, out, src, idx, a, b, SPARSE: ct.Constant[int], K: ct.Constant[int], L: ct.Constant[int],
         M: ct.Constant[int], PAD: ct.Constant[int]):
    i = ct.load(idx, (0,), (K,))
    ind = ((i, ct.Slice(a, L), ct.Slice(b, M)), (ct.Slice(a, L), i, ct.Slice(b, M)),
           (ct.Slice(a, L), ct.Slice(b, M), i))[SPARSE]
    t = ct.load_advanced_indexing(x, ind, padding_mode=MODES[PAD])
    ct.store(out, (0, 0, 0), t)
    ct.store_advanced_indexing(y, ind, ct.load(src, (0, 0, 0), t.shape), latency=2)


def _adv(shape, sparse, starts, lengths, pad, k=8):
    """``starts``/``lengths``: the dense Slices in axis order (the sparse axis left out)."""
    rank = len(shape)

    def make(rng):
        n = shape[sparse]
        idx = rng.permutation(np.arange(-2, n + 3))[:k].astype(I32)   # distinct; some negative, some >= n
        per_axis, dense = [], iter(zip(starts, lengths))
        for axis in range(rank):
            if axis == sparse:
                per_axis.append(idx)
            else:
                s, ln = next(dense)
                per_axis.append(np.arange(s, s + ln))
        out_shape = tuple(len(e) for e in per_axis)
        x = rng.standard_normal(shape).astype(F32)
        y = np.zeros(shape, F32)
        out = np.zeros(out_shape, F32)
        src = rng.standard_normal(out_shape).astype(F32)

        def ref(x, y, out, src, *_):
            grids = np.ix_(*per_axis)
            ok = np.ones(out_shape, bool)
            for g, size in zip(grids, shape):
                ok &= (g >= 0) & (g < size)
            clipped = tuple(np.clip(g, 0, size - 1) for g, size in zip(grids, shape))
            y = y.copy()
            y[tuple(np.broadcast_to(g, out_shape)[ok] for g in grids)] = src[ok]
            return {1: y, 2: np.where(ok, x[clipped], PAD_VALUES[pad])}
        extra = (k, *lengths, pad)
        return (x, y, out, src, idx, *starts, sparse, *extra), [1, 2], ref
    kernel = adv2 if rank == 2 else adv3
    return SCase(f"adv{rank}d_sparse{sparse}_starts{starts}_pad{pad}", kernel, (1,), make)


CASES = [
    _slice_tiles(0, 3, 10), _slice_tiles(-1, 2, 9), _slice_tiles(1, 0, 11),
    SCase("nested_slice", nested_slice, (1,), _nested),
    SCase("segment_sums", segment_sums, (5,), _segments, exact=False),
    SCase("bid_slice", bid_slice, (4,), _bid_slice),
    SCase("slice_elements", slice_elements, (1,), _slice_elements),
    _stepped_load((4, 4), (2, 3), False), _stepped_load((2, 4), (3, 8), False),
    _stepped_load((4, 2), (1, 3), True),
    SCase("stepped_store", stepped_store, (4, 3), _stepped_store),
    _adv((9, 7), 0, (-2,), (8,), 0), _adv((9, 7), 1, (3,), (8,), 1), _adv((12, 10), 1, (-1,), (4,), 2),
    _adv((6, 5, 7), 0, (1, -1), (4, 8), 1), _adv((6, 5, 7), 1, (-2, 3), (8, 8), 3),
    _adv((6, 5, 7), 2, (3, 0), (4, 4), 0),
]


def _close(expected: np.ndarray, got: np.ndarray, what: str) -> None:
    np.testing.assert_allclose(np.asarray(expected).astype(np.float64), got.astype(np.float64), rtol=1e-5,
                               atol=1e-5, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_cpu_matches_numpy(case: SCase):
    args, outputs, ref = case.make(np.random.default_rng(1234))
    args = list(args)
    for i in outputs:
        args[i] = np.full_like(args[i], np.nan if args[i].dtype.kind == "f" else 0x5A)
    host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ct.launch(None, case.grid, case.kernel, tuple(host))
    for i, e in ref(*args).items():
        _close(e, host[i], f"{case.name}: argument {i}")


def _triton_case(case: SCase):
    tb = _triton_cases()
    return tb, tb.Case(case.name, case.kernel, case.grid, case.make, exact=case.exact)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_triton_differential(case: SCase):
    tb, c = _triton_case(case)
    tb.check_case(c)


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", ["slice_tiles_axis-1_2_9", "slice_elements", "stepped_store",
                                  "adv3d_sparse1_starts(-2, 3)_pad3", "segment_sums"])
def test_cuda(name: str, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SAFETILE_BACKEND", raising=False)
    tb, c = _triton_case(next(c for c in CASES if c.name == name))
    tb.check_case(c, "cuda")


# ======================================================================================
# errors
# ======================================================================================

def _line(kernel) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    (line,) = [first + i for i, text in enumerate(lines) if text.rstrip().endswith("# ERR")]
    return line


@ct.kernel
def e_slice_axis_runtime(x):
    ct.load(x.slice(ct.bid(0), 0, 4), (0, 0), (4, 4))  # ERR


@ct.kernel
def e_slice_axis_range(x):
    x.slice(-3, 0, 4)  # ERR


@ct.kernel
def e_slice_start(x):
    x.slice(0, 1.5, 4)  # ERR


@ct.kernel
def e_slice_indexed(x):
    s = x.slice(0, 1, 4)
    s[0]  # ERR


@ct.kernel
def e_adv_count(x):
    i = ct.arange(4, dtype=ct.int32)
    ct.load_advanced_indexing(x, (i,))  # ERR


@ct.kernel
def e_adv_no_sparse(x):
    ct.load_advanced_indexing(x, (ct.Slice(0, 4), ct.Slice(0, 4)))  # ERR


@ct.kernel
def e_adv_two_sparse(x):
    i = ct.arange(4, dtype=ct.int32)
    ct.load_advanced_indexing(x, (i, i))  # ERR


@ct.kernel
def e_adv_float_index(x):
    i = ct.arange(4, dtype=ct.int32).astype(ct.float32)
    ct.load_advanced_indexing(x, (i, ct.Slice(0, 4)))  # ERR


@ct.kernel
def e_adv_2d_index(x):
    i = ct.zeros((4, 4), ct.int32)
    ct.load_advanced_indexing(x, (i, ct.Slice(0, 4)))  # ERR


@ct.kernel
def e_slice_pow2(x):
    i = ct.arange(4, dtype=ct.int32)
    ct.load_advanced_indexing(x, (i, ct.Slice(0, 6)))  # ERR


@ct.kernel
def e_slice_runtime_length(x, n):
    i = ct.arange(4, dtype=ct.int32)
    ct.load_advanced_indexing(x, (i, ct.Slice(0, n)))  # ERR


@ct.kernel
def e_slice_float_start(x):
    i = ct.arange(4, dtype=ct.int32)
    ct.load_advanced_indexing(x, (i, ct.Slice(0.5, 4)))  # ERR


@ct.kernel
def e_adv_padding(x):
    i = ct.arange(4, dtype=ct.int32)
    ct.load_advanced_indexing(x, (i, ct.Slice(0, 4)), padding_mode=ct.PaddingMode.NAN)  # ERR


@ct.kernel
def e_adv_store_shape(x):
    i = ct.arange(4, dtype=ct.int32)
    ct.store_advanced_indexing(x, (i, ct.Slice(0, 4)), ct.zeros((4, 8), x.dtype))  # ERR


@ct.kernel
def e_adv_store_dtype(x):
    i = ct.arange(4, dtype=ct.int32)
    ct.store_advanced_indexing(x, (i, ct.Slice(0, 4)), ct.zeros((4, 4), ct.float64))  # ERR


@ct.kernel
def e_steps_zero(x):
    x.tiled_view((4, 4), traversal_steps=(0, 4))  # ERR


@ct.kernel
def e_steps_rank(x):
    x.tiled_view((4, 4), traversal_steps=(2,))  # ERR


@ct.kernel
def e_steps_runtime(x, n):
    x.tiled_view((4, 4), traversal_steps=(n, 4))  # ERR


@ct.kernel
def e_steps_store_shape(x):
    x.tiled_view((4, 4), traversal_steps=(2, 2)).store((0, 0), ct.zeros((4, 2), x.dtype))  # ERR


ERRORS = [
    (e_slice_axis_runtime, (), TileTypeError, "compile-time constant"),
    (e_slice_axis_range, (), TileTypeError, "axis -3 is out of range for an array of rank 2"),
    (e_slice_start, (), TileTypeError, "Array.slice start must be an integer"),
    (e_slice_indexed, (), TileTypeError, "cannot be indexed directly"),
    (e_adv_count, (), TileTypeError, "one entry per array axis (2)"),
    (e_adv_no_sparse, (), TileTypeError, "exactly one indices entry must be a 1-d integer tile"),
    (e_adv_two_sparse, (), TileTypeError, "(the sparse axis), got 2"),
    (e_adv_float_index, (), TileTypeError, "entry 0 must be a ct.Slice or a 1-d integer tile"),
    (e_adv_2d_index, (), TileTypeError, "entry 0 must be a ct.Slice or a 1-d integer tile"),
    (e_slice_pow2, (), TileTypeError, "Slice length must be a power of two, got 6"),
    (e_slice_runtime_length, (3,), TileTypeError, "Slice length must be a compile-time constant"),
    (e_slice_float_start, (), TileTypeError, "Slice start must be an integer"),
    (e_adv_padding, (), TileTypeError, "padding mode NAN needs a float array"),
    (e_adv_store_shape, (), TileTypeError, "tile shape (4, 8) does not broadcast to (4, 4)"),
    (e_adv_store_dtype, (), TileTypeError, "cannot implicitly cast float64 to float32"),
    (e_steps_zero, (), TileValueError, "traversal_steps must be positive"),
    (e_steps_rank, (), TileTypeError, "does not match the array rank 2"),
    (e_steps_runtime, (3,), TileTypeError, "compile-time constant"),
    (e_steps_store_shape, (), TileTypeError, "is not broadcastable to the view's tile_shape (4, 4)"),
]


@pytest.mark.parametrize("kernel,extra,cls,words", ERRORS, ids=[e[0].fn.__name__ for e in ERRORS])
def test_errors(kernel, extra, cls, words):
    x = np.zeros((8, 8), I32 if kernel is e_adv_padding else F32)
    with pytest.raises(TileError) as info:
        ct.launch(None, (1,), kernel, (x, *extra))
    err = info.value
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}: {err}"
    assert words in err.message, err.message
    assert err.line == _line(kernel), str(err)
