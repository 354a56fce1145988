"""Triton backend: differential tests against the CPU backend and NumPy.

Each case runs one kernel on fresh random data three ways: the CPU backend (NumPy arrays),
the Triton backend, and a NumPy reference. Here the Triton backend runs under Triton's
interpreter (``TRITON_INTERPRET=1``) on CPU torch tensors, selected with
``SAFETILE_BACKEND=triton`` around each launch; tests/test_gpu.py runs the same cases on
CUDA tensors. Outputs are poisoned before every run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import safetile as ct
from safetile import dtypes as dtypes_mod
from triton_interp import triton_interpreter

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

RNG_SEED = 1234


def to_torch(a: np.ndarray, device: str = "cpu"):
    d = dtypes_mod.as_dtype(a.dtype)
    if d.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).to(device)
    return torch.from_numpy(a.copy()).to(device)


def to_numpy(t, like: np.ndarray) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(like.dtype)
    return t.numpy()


def poison(a: np.ndarray) -> np.ndarray:
    """Fill an output with a recognisable non-zero garbage pattern."""
    out = np.empty_like(a)
    if a.dtype.kind == "f" or dtypes_mod.as_dtype(a.dtype).is_float:
        out[...] = np.asarray(-777.25).astype(a.dtype)
    elif a.dtype == np.bool_:
        out[...] = True
    else:
        out[...] = np.asarray(0x5A).astype(a.dtype)
    return out


@dataclass
class Case:
    """One differential test: ``make(rng)`` returns (args, outputs-to-poison, reference(args) -> dict)."""

    name: str
    kernel: Any
    grid: Any
    make: Callable
    rtol: float = 1e-6
    atol: float = 1e-6
    exact: bool = False  # compare CPU and Triton bit-exactly (NaN positions included)
    check_ref: bool = True
    marks: list = field(default_factory=list)


def run_cpu(case: Case, args):
    host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ct.launch(None, case.grid, case.kernel, tuple(host))
    return host


def run_triton(case: Case, args, device: str = "cpu"):
    dev = [to_torch(a, device) if isinstance(a, np.ndarray) else a for a in args]
    if device == "cpu":
        with triton_interpreter():
            ct.launch(None, case.grid, case.kernel, tuple(dev))
    else:
        ct.launch(None, case.grid, case.kernel, tuple(dev))
        torch.cuda.synchronize()
    return [to_numpy(t, a) if isinstance(a, np.ndarray) else a for t, a in zip(dev, args)]


def _close(a: np.ndarray, b: np.ndarray, rtol, atol, exact, what):
    if a.dtype.kind in "iub" or exact:
        if a.dtype.kind == "f" or dtypes_mod.as_dtype(a.dtype).is_float:
            aa, bb = a.astype(np.float64), b.astype(np.float64)
            assert np.array_equal(np.isnan(aa), np.isnan(bb)), f"{what}: NaN positions differ"
            ok = np.isnan(aa) | (aa == bb)
            if not exact:
                ok |= np.isclose(aa, bb, rtol=rtol, atol=atol)
            assert ok.all(), f"{what}: {int((~ok).sum())} elements differ, e.g. {aa[~ok][:5]} vs {bb[~ok][:5]}"
        else:
            assert np.array_equal(a, b), f"{what}: differ at {np.argwhere(a != b)[:5].tolist()}: " \
                                         f"{a[a != b][:5]} vs {b[a != b][:5]}"
        return
    aa, bb = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(aa, bb, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def check_case(case: Case, device: str = "cpu"):
    rng = np.random.default_rng(RNG_SEED)
    args, outputs, ref = case.make(rng)
    args = list(args)
    for i in outputs:
        args[i] = poison(args[i])
    cpu = run_cpu(case, args)
    tri = run_triton(case, args, device)
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            _close(cpu[i], tri[i], case.rtol, case.atol, case.exact, f"{case.name}: argument {i} (CPU vs Triton)")
    if ref is not None and case.check_ref:
        expected = ref(*args) if callable(ref) else ref
        for i, e in expected.items():
            _close(np.asarray(e).astype(tri[i].dtype), tri[i], max(case.rtol, 1e-5), max(case.atol, 1e-5),
                   False, f"{case.name}: argument {i} (Triton vs NumPy)")


# ======================================================================================
# kernels
# ======================================================================================

@ct.kernel
def vec_add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    x = ct.load(a, index=(i,), shape=(TILE,))
    y = ct.load(b, index=(i,), shape=(TILE,))
    ct.store(c, index=(i,), tile=x + y)


def _vec_add(dtype, n=1000, tile=128):
    def make(rng):
        a = (rng.standard_normal(n) * 100).astype(dtype)
        b = (rng.standard_normal(n) * 100).astype(dtype)
        c = np.zeros(n, dtype)
        return (a, b, c, tile), [2], lambda a, b, c, t: {2: (a.astype(np.float64) + b).astype(dtype)}
    return make


@ct.kernel
def pad_copy(x, out, BM: ct.Constant[int], BN: ct.Constant[int], PAD: ct.Constant[int]):
    """Each block loads one edge-tile of x with a padding mode and stores the full tile."""
    i, j = ct.bid(0), ct.bid(1)
    mode = (ct.PaddingMode.ZERO, ct.PaddingMode.NEG_ZERO, ct.PaddingMode.NAN, ct.PaddingMode.POS_INF,
            ct.PaddingMode.NEG_INF, ct.PaddingMode.UNDETERMINED)[PAD]
    t = ct.load(x, index=(i, j), shape=(BM, BN), padding_mode=mode)
    ct.store(out, index=(i, j), tile=t)


def _pad_case(pad):
    def make(rng):
        x = rng.standard_normal((13, 21)).astype(np.float32)
        out = np.zeros((16, 24), np.float32)
        val = [0.0, -0.0, np.nan, np.inf, -np.inf, 0.0][pad]

        def ref(x, out, *_):
            r = np.full((16, 24), val, np.float32)
            r[:13, :21] = x
            return {1: r}
        return (x, out, 8, 8, pad), [1], ref
    return make


@ct.kernel
def edge_store(x, out, BM: ct.Constant[int], BN: ct.Constant[int]):
    """Full tiles computed from a transposed ('F' order) load, stored to an odd-sized array."""
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(i, j), shape=(BM, BN), order="F", padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(i, j), tile=t * 2.0 + 1.0)


def _edge_store(rng):
    x = rng.standard_normal((19, 10)).astype(np.float32)   # loaded as its transpose (10, 19)
    out = np.zeros((10, 19), np.float32)
    return (x, out, 8, 8), [1], lambda x, out, *_: {1: x.T * 2 + 1}


@ct.kernel
def gemm(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((BM, BN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (BM, BK))):
        a = ct.load(A, (bm, k), (BM, BK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (BK, BN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


def _gemm(dtype, m=40, n=48, k=70, tiles=(16, 16, 16)):
    def make(rng):
        A = rng.standard_normal((m, k)).astype(dtype)
        B = rng.standard_normal((k, n)).astype(dtype)
        C = np.zeros((m, n), dtype)
        return (A, B, C, *tiles), [2], lambda A, B, C, *_: {
            2: (A.astype(np.float64) @ B.astype(np.float64)).astype(dtype)}
    return make


@ct.kernel
def gemm_int8(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((BM, BN), ct.int32)
    for k in range(ct.cdiv(A.shape[1], BK)):
        a = ct.load(A, (bm, k), (BM, BK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (BK, BN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc)


def _gemm_int8(rng):
    A = rng.integers(-128, 128, (32, 100)).astype(np.int8)
    B = rng.integers(-128, 128, (100, 32)).astype(np.int8)
    C = np.zeros((32, 32), np.int32)
    return (A, B, C, 32, 32, 32), [2], lambda A, B, C, *_: {2: A.astype(np.int32) @ B.astype(np.int32)}


@ct.kernel
def batched_mma(A, B, C, BB: ct.Constant[int], BM: ct.Constant[int], BN: ct.Constant[int], K: ct.Constant[int]):
    a = ct.load(A, (ct.bid(0), 0, 0), (BB, BM, K))
    b = ct.load(B, (0, 0, 0), (1, K, BN))
    acc = ct.full((BB, BM, BN), 0.5, ct.float32)
    ct.store(C, (ct.bid(0), 0, 0), ct.mma(a, b, acc))


def _batched(rng):
    A = rng.standard_normal((4, 16, 8)).astype(np.float32)
    B = rng.standard_normal((1, 8, 16)).astype(np.float32)
    C = np.zeros((4, 16, 16), np.float32)
    return (A, B, C, 2, 16, 16, 8), [2], lambda A, B, C, *_: {2: A.astype(np.float64) @ B + 0.5}


@ct.kernel
def reductions(x, s, p, mx, mn, mxn, am, amn, am2, T: ct.Constant[int], N: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i, 0), (T, N))
    ct.store(s, (i,), ct.sum(t, axis=1))
    ct.store(p, (i,), ct.prod(t * 0.5 + 1.0, axis=1))
    ct.store(mx, (i,), ct.max(t, axis=1, propagate_nan=True))
    ct.store(mn, (i,), ct.min(t, axis=1, propagate_nan=True))
    ct.store(mxn, (i,), ct.max(t, axis=1))  # NaNs ignored by default (cuTile Python 1.6+)
    ct.store(am, (i,), ct.argmax(t, axis=1, propagate_nan=True))
    ct.store(amn, (i,), ct.argmin(t, axis=1))
    ct.store(am2, (i,), ct.reshape(ct.argmax(t), (1,)))


def _reductions(rng):
    T, N = 4, 16
    x = rng.standard_normal((8, N)).astype(np.float32)
    x[1, 3] = np.nan
    x[2, :] = np.nan
    x[3, 5] = x[3, 9] = 7.0  # tie
    x[5, 2] = np.nan
    outs = [np.zeros(8, np.float32) for _ in range(5)] + [np.zeros(8, np.int32) for _ in range(2)] + \
           [np.zeros(2, np.int32)]

    def ref(x, s, p, mx, mn, mxn, am, amn, am2, *_):
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                nanmax = np.nanmax(x, axis=1)
        blocks = x.reshape(2, T * N)
        no_nan_min = np.where(np.isnan(x), np.inf, x)  # NaNs ignored (an all-NaN row gives index 0)
        no_nan_max = np.where(np.isnan(blocks), -np.inf, blocks)
        return {1: x.astype(np.float64).sum(1), 2: np.prod(x.astype(np.float64) * 0.5 + 1, axis=1),
                3: x.max(1), 4: x.min(1), 5: nanmax, 6: np.argmax(x, 1), 7: np.argmin(no_nan_min, 1),
                8: np.argmax(no_nan_max, 1)}
    return (x, *outs, T, N), list(range(1, 9)), ref


@ct.kernel
def int_reductions(x, s, mx, am, cs, cp, T: ct.Constant[int]):
    t = ct.load(x, (0, 0), (T, T))
    ct.store(s, (0,), ct.sum(t, axis=0))           # int8 sum wraps
    ct.store(mx, (0, 0), ct.max(t, axis=(0, 1), keepdims=True))
    ct.store(am, (0, 0), ct.argmin(t, keepdims=True))
    ct.store(cs, (0, 0), ct.cumsum(t, axis=1, reverse=True))
    ct.store(cp, (0, 0), ct.cumprod(t, axis=0))


def _int_reductions(rng):
    x = rng.integers(-100, 100, (8, 8)).astype(np.int8)
    s = np.zeros(8, np.int8)
    mx = np.zeros((1, 1), np.int8)
    am = np.zeros((1, 1), np.int32)
    cs = np.zeros((8, 8), np.int8)
    cp = np.zeros((8, 8), np.int8)

    def ref(x, *_):
        with np.errstate(all="ignore"):
            return {1: x.sum(0, dtype=np.int8), 2: x.max().reshape(1, 1), 3: np.argmin(x).reshape(1, 1),
                    4: np.flip(np.cumsum(np.flip(x, 1), 1, dtype=np.int8), 1), 5: np.cumprod(x, 0, dtype=np.int8)}
    return (x, s, mx, am, cs, cp, 8), [1, 2, 3, 4, 5], ref


def _max_combine(a, b):
    return ct.maximum(a, b)


def _argmax_combine(av, ai, bv, bi):
    take = (bv > av) | ((bv == av) & (bi < ai))
    return ct.where(take, bv, av), ct.where(take, bi, ai)


@ct.kernel
def custom_reduce_scan(x, mx, vals, idxs, sc, T: ct.Constant[int], N: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i, 0), (T, N))
    ct.store(mx, (i,), ct.reduce(t, 1, _max_combine, float("-inf")))
    idx = ct.broadcast_to(ct.arange(N, dtype=ct.int32)[None, :], (T, N))
    v, k = ct.reduce((t, idx), 1, _argmax_combine, (float("-inf"), 0))
    ct.store(vals, (i,), v)
    ct.store(idxs, (i,), k)
    ct.store(sc, (i, 0), ct.scan(t, 1, lambda a, b: ct.maximum(a, b), float("-inf")))


def _custom(rng):
    T, N = 2, 16
    x = rng.standard_normal((6, N)).astype(np.float32)

    def ref(x, *_):
        return {1: x.max(1), 2: x.max(1), 3: np.argmax(x, 1), 4: np.maximum.accumulate(x, axis=1)}
    return (x, np.zeros(6, np.float32), np.zeros(6, np.float32), np.zeros(6, np.int32),
            np.zeros((6, N), np.float32), T, N), [1, 2, 3, 4], ref


@ct.kernel
def casts(x, i8, u8, i32, i64, f16, bf, tf, b, bits, T: ct.Constant[int]):
    t = ct.load(x, (0,), (T,))
    ct.store(i8, (0,), t.astype(ct.int8))
    ct.store(u8, (0,), t.astype(ct.uint8))
    ct.store(i32, (0,), t.astype(ct.int32))
    ct.store(i64, (0,), ct.where(ct.isnan(t), -1, t.astype(ct.int64)))
    ct.store(f16, (0,), t.astype(ct.float16))
    ct.store(bf, (0,), t.astype(ct.bfloat16))
    ct.store(tf, (0,), t.astype(ct.tfloat32).astype(ct.float32))
    ct.store(b, (0,), t.astype(ct.bool_))
    ct.store(bits, (0,), ct.bitcast(t, ct.int32) ^ 0x5555)


def _casts(rng):
    T = 32
    x = (rng.standard_normal(T) * 300).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, 1e10, -1e10, -0.7, 0.999, 2.5e9]
    outs = [np.zeros(T, d) for d in (np.int8, np.uint8, np.int32, np.int64, np.float16)]
    outs.append(np.zeros(T, dtypes_mod.bfloat16.np_dtype))
    outs += [np.zeros(T, np.float32), np.zeros(T, np.bool_), np.zeros(T, np.int32)]

    def sat(v, d):
        info = np.iinfo(d)
        f = np.nan_to_num(np.trunc(v.astype(np.float64)), nan=0.0)
        with np.errstate(all="ignore"):
            inside = np.where((f > info.min) & (f < info.max), f, 0).astype(d)
        return np.where(f >= info.max, info.max, np.where(f <= info.min, info.min, inside)).astype(d)

    def ref(x, *_):
        i64 = np.where(np.isnan(x), -1, sat(x, np.int64))
        return {1: sat(x, np.int8), 2: sat(x, np.uint8), 3: sat(x, np.int32), 4: i64,
                5: x.astype(np.float16), 8: x != 0, 9: x.view(np.int32) ^ 0x5555}
    return (x, *outs, T), list(range(1, 10)), ref


@ct.kernel
def int_ops(x, y, fd, md, sl, sr, pw, mn, T: ct.Constant[int]):
    a = ct.load(x, (0,), (T,))
    b = ct.load(y, (0,), (T,))
    ct.store(fd, (0,), a // b)
    ct.store(md, (0,), a % b)
    ct.store(sl, (0,), a << (b & 63))
    ct.store(sr, (0,), a >> (b & 63))
    ct.store(pw, (0,), a ** (b & 7))
    ct.store(mn, (0,), ct.minimum(a, b) + ct.maximum(a, b) * 3)


def _int_ops(rng):
    T = 64
    x = rng.integers(-1000, 1000, T).astype(np.int32)
    y = rng.integers(-40, 40, T).astype(np.int32)
    y[:4] = 0
    x[4], y[4] = -7, 2
    x[5], y[5] = 7, -2
    outs = [np.zeros(T, np.int32) for _ in range(6)]

    def ref(x, y, *_):
        with np.errstate(all="ignore"):
            yy = np.where(y == 0, 1, y)
            sh = y & 63
            big = sh >= 32
            sl = np.where(big, 0, np.left_shift(x, np.where(big, 0, sh)))
            sr = np.where(big, np.where(x < 0, -1, 0), np.right_shift(x, np.where(big, 0, sh)))
            return {2: np.where(y == 0, 0, x // yy), 3: np.where(y == 0, 0, x % yy), 4: sl, 5: sr,
                    6: x ** (y & 7), 7: np.minimum(x, y) + np.maximum(x, y) * 3}
    return (x, y, *outs, T), list(range(2, 8)), ref


@ct.kernel
def float_ops(x, y, fd, md, dv, mx, ex, T: ct.Constant[int]):
    a = ct.load(x, (0,), (T,))
    b = ct.load(y, (0,), (T,))
    ct.store(fd, (0,), a // b)
    ct.store(md, (0,), a % b)
    ct.store(dv, (0,), a / b)
    ct.store(mx, (0,), ct.maximum(a, b, propagate_nan=True) - ct.minimum(a, b, propagate_nan=True))
    ct.store(ex, (0,), ct.exp(a * 0.1) + ct.sqrt(ct.abs(b)) + ct.tanh(a) + ct.rsqrt(ct.abs(a) + 1.0)
             + ct.sin(b) * ct.log(ct.abs(b) + 1.0) + a ** 2 + ct.floor(b) + ct.atan2(a, b))


def _float_ops(rng):
    T = 64
    x = (rng.standard_normal(T) * 10).astype(np.float32)
    y = (rng.standard_normal(T) * 3).astype(np.float32)
    y[0] = 0.0
    x[1] = np.nan
    y[2] = -0.0
    outs = [np.zeros(T, np.float32) for _ in range(5)]

    def ref(x, y, *_):
        with np.errstate(all="ignore"):
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            ex = (np.exp(x64 * 0.1) + np.sqrt(np.abs(y64)) + np.tanh(x64) + 1 / np.sqrt(np.abs(x64) + 1)
                  + np.sin(y64) * np.log(np.abs(y64) + 1) + x64 ** 2 + np.floor(y64) + np.arctan2(x64, y64))
            return {2: np.floor_divide(x, y), 3: np.mod(x, y), 4: x / y,
                    5: np.maximum(x, y) - np.minimum(x, y), 6: ex}
    return (x, y, *outs, T), [2, 3, 4, 5, 6], ref


@ct.kernel
def half_ops(x, y, out, s, T: ct.Constant[int]):
    a = ct.load(x, (0,), (T,))
    b = ct.load(y, (0,), (T,))
    r = (a * b + a) / (ct.abs(b) + 1.0)
    ct.store(out, (0,), ct.where(a > b, r, ct.exp(b)))
    ct.store(s, (0,), ct.reshape(ct.sum(a), (1,)))


def _half(dtype):
    def make(rng):
        T = 128
        x = rng.standard_normal(T).astype(dtype)
        y = rng.standard_normal(T).astype(dtype)

        def ref(x, y, *_):
            a, b = x.astype(np.float32), y.astype(np.float32)
            r = (a * b + a) / (np.abs(b) + 1)
            return {2: np.where(a > b, r, np.exp(b)), 3: a.sum().reshape(1)}
        return (x, y, np.zeros(T, dtype), np.zeros(1, dtype), T), [2, 3], ref
    return make


@ct.kernel
def gather_scatter(x, idx, out, sc, T: ct.Constant[int]):
    i = ct.load(idx, (0,), (T,))
    m = (i & 1) == 0
    g = ct.gather(x, i, mask=m, padding_value=-5.0)
    ct.store(out, (0,), g)
    ct.scatter(sc, i, g * 2.0, mask=i < 20)
    rows = ct.arange(4, dtype=ct.int32)[:, None]
    cols = ct.arange(8, dtype=ct.int32)[None, :] - 2
    g2 = ct.gather(x, rows * 8 + cols)
    ct.scatter(sc, rows * 8 + 50 + cols, g2)   # distinct targets; 80 and 81 out of bounds


def _gather(rng):
    T = 32
    x = rng.standard_normal(40).astype(np.float32)
    idx = rng.permutation(np.arange(-10, 50))[:T].astype(np.int32)
    out = np.zeros(T, np.float32)
    sc = np.zeros(80, np.float32)

    def ref(x, idx, out, sc, *_):
        valid = (idx >= 0) & (idx < 40) & ((idx & 1) == 0)
        g = np.where(valid, x[np.clip(idx, 0, 39)], -5.0).astype(np.float32)
        s = sc.copy()
        sm = (idx >= 0) & (idx < 20)
        s[idx[sm]] = g[sm] * 2
        rows, cols = np.arange(4)[:, None], np.arange(8)[None, :] - 2
        e = rows * 8 + cols
        g2 = np.where((e >= 0) & (e < 40), x[np.clip(e, 0, 39)], 0)
        t = np.broadcast_to(rows * 8 + 50 + cols, (4, 8))
        ok = (t >= 0) & (t < 80)
        s[t[ok]] = np.broadcast_to(g2, (4, 8))[ok]
        return {2: g, 3: s}
    return (x, idx, out, sc, T), [2], ref


@ct.kernel
def atomics(hist, vals, mx, cas, old_sum, T: ct.Constant[int]):
    i = ct.bid(0)
    v = ct.load(vals, (i,), (T,))
    ct.atomic_add(hist, v % 8, 1)
    ct.atomic_max(mx, v % 4, v)
    ct.atomic_min(mx, v % 4 + 4, v)
    lane = ct.arange(T, dtype=ct.int32) + i * T
    old = ct.atomic_cas(cas, lane, 0, lane + 1)
    ct.atomic_xchg(cas, lane + 1000, 3)   # entirely out of bounds: dropped
    o = ct.atomic_add(old_sum, lane * 0, 1, memory_order=ct.MemoryOrder.RELAXED)
    ct.atomic_or(hist, 9 + (o * 0), 2)
    ct.atomic_and(hist, 10 + (o * 0), 6)
    ct.atomic_xor(hist, 11 + (o * 0), lane)
    ct.store(cas, (i + 100,), old)   # out of bounds: dropped


def _atomics(rng):
    T, G = 16, 4
    vals = rng.integers(0, 1000, G * T).astype(np.int32)
    hist = np.zeros(12, np.int32)
    hist[10] = 0xFF
    mx = np.zeros(8, np.int32)
    mx[4:] = 10**6
    cas = np.zeros(G * T, np.int32)
    cas[::5] = 9
    old_sum = np.zeros(1, np.int32)

    def ref(hist, vals, mx, cas, old_sum, *_):
        h = hist.copy()
        np.add.at(h, vals % 8, 1)
        h[9] |= 2
        h[10] &= 6
        x = 0
        for lane in range(G * T):
            x ^= lane
        h[11] ^= x
        m = mx.copy()
        for k in range(4):
            m[k] = max(m[k], vals[vals % 4 == k].max(initial=0))
            m[k + 4] = min(m[k + 4], vals[vals % 4 == k].min(initial=10**6))
        c = np.where(cas == 0, np.arange(G * T) + 1, cas)
        return {0: h, 2: m, 3: c, 4: np.array([G * T])}
    return (hist, vals, mx, cas, old_sum, T), [], ref


@ct.kernel
def control(x, out, n):
    i = ct.bid(0)
    s = 0
    for j in range(n):
        if j == i:
            continue
        if j > i + 5:
            break
        s += j
    k = 0
    while k < i * 3:
        k += 2
        if k == 6:
            k += 1
    acc = ct.zeros((4,), ct.float32)
    for j in range(i):          # bid-dependent trip count
        acc = acc + ct.load(x, (j,), (4,))
    if i % 2 == 0:
        acc = acc * 2.0
    else:
        acc = acc - 1.0
    ct.store(out, (i,), acc + s + k)


def _control(rng):
    x = rng.standard_normal(40).astype(np.float32)
    out = np.zeros(40, np.float32)

    def ref(x, out, n):
        r = np.zeros(40)
        for i in range(10):
            s = 0
            for j in range(n):
                if j == i:
                    continue
                if j > i + 5:
                    break
                s += j
            k = 0
            while k < i * 3:
                k += 2
                if k == 6:
                    k += 1
            acc = np.zeros(4)
            for j in range(i):
                acc += x[4 * j:4 * j + 4]
            acc = acc * 2 if i % 2 == 0 else acc - 1
            r[4 * i:4 * i + 4] = acc + s + k
        return {1: r}
    return (x, out, 12), [1], ref


@ct.kernel
def shapes(x, o1, o2, o3, o4, o5, o6):
    t = ct.load(x, (0, 0), (8, 16))
    ct.store(o1, (0, 0), ct.reshape(t, (16, 8)))
    ct.store(o2, (0, 0), ct.transpose(t))
    ct.store(o3, (0, 0), ct.cat((t, t * 2.0), 0))
    ct.store(o4, (0, 0), ct.cat((t, -t), 1))
    e = ct.extract(t, (1, ct.bid(0) + 2), (4, 4))
    ct.store(o5, (0, 0), e)
    ct.store(o6, (0, 0), ct.insert(t, (0, 3), e * 0.0 - 1.0))


def _shapes(rng):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    x[5, 9] = -0.0
    outs = [np.zeros(s, np.float32) for s in ((16, 8), (16, 8), (16, 16), (8, 32), (4, 4), (8, 16))]

    def ref(x, *_):
        ins = x.copy()
        ins[0:4, 12:16] = -1
        return {1: x.reshape(16, 8), 2: x.T, 3: np.concatenate([x, 2 * x], 0), 4: np.concatenate([x, -x], 1),
                5: x[4:8, 8:12], 6: ins}
    return (x, *outs), [1, 2, 3, 4, 5, 6], ref


@ct.kernel
def int_shapes(x, o1, o2, o3):
    t = ct.load(x, (0, 0), (4, 8))
    b = t > 0
    ct.store(o1, (0, 0), ct.extract(b, (1, 1), (2, 4)))
    ct.store(o2, (0, 0), ct.cat((t, t + 1), 1))
    ct.store(o3, (0, 0, 0), ct.permute(ct.reshape(t, (2, 2, 8)), (2, 0, 1)))


def _int_shapes(rng):
    x = rng.integers(-50, 50, (4, 8)).astype(np.int16)

    def ref(x, *_):
        return {1: (x > 0)[2:4, 4:8], 2: np.concatenate([x, x + 1], 1), 3: x.reshape(2, 2, 8).transpose(2, 0, 1)}
    return (x, np.zeros((2, 4), np.bool_), np.zeros((4, 16), np.int16), np.zeros((8, 2, 2), np.int16)), [1, 2, 3], ref


@ct.kernel
def takes(x, s, o1, o2, shift):
    t = ct.load(x, (0, 0), (4, 16))
    i = ct.load(s, (0, 0), (4, 16))
    ct.store(o1, (0, 0), ct.take(t, i, 1))             # run-time positions, some out of range
    lanes = ct.arange(16, dtype=ct.int32)
    row = ct.reshape(ct.extract(t, (0, 0), (1, 16)), (16,)).astype(ct.uint8)
    ct.store(o2, (0,), ct.take(row, lanes - shift))     # a string-style shift right by `shift`


def _takes(rng):
    x = rng.integers(0, 200, (4, 16)).astype(np.float32)
    s = rng.integers(-3, 19, (4, 16)).astype(np.int32)

    def ref(x, s, o1, o2, shift):
        inside = (s >= 0) & (s < 16)
        r1 = np.where(inside, np.take_along_axis(x, np.clip(s, 0, 15), 1), 0)
        pos = np.arange(16) - shift
        row = x[0].astype(np.uint8)
        r2 = np.where((pos >= 0) & (pos < 16), row[np.clip(pos, 0, 15)], 0)
        return {2: r1, 3: r2}
    return (x, s, np.zeros((4, 16), np.float32), np.zeros(16, np.uint8), 5), [2, 3], ref


@ct.kernel
def scalars(x, out, alpha, k, flag):
    v = ct.load(x, (ct.bid(0),), shape=())
    r = ct.where(flag, v * alpha, v - alpha) + k
    ct.store(out, (ct.bid(0),), r)


def _scalars(rng):
    x = rng.standard_normal(5).astype(np.float32)
    out = np.zeros(5, np.float32)
    return (x, out, 1.5, 3, True), [1], lambda x, out, a, k, f: {1: x * a + k}


@ct.kernel
def index_math(out, k):
    """Scalar index arithmetic where the generator can and cannot prove signs."""
    i = ct.bid(0)
    n = ct.num_blocks(0)
    a = (i - 3) // 2            # negative numerators
    b = (i + 7) % 3             # provably non-negative
    c = i // (k - 2)            # run-time divisor, may be zero or negative
    d = (n * 4 - i) % (i + 1)
    e = ct.cdiv(i * 5 + 1, 4)
    ct.store(out, (i, 0), ct.reshape(ct.cat((ct.full((4,), a, ct.int32), ct.full((4,), b + 10 * c, ct.int32)), 0)
                                     + ct.arange(8, dtype=ct.int32) * (d + e) , (1, 8)))


def _index_math(rng):
    out = np.zeros((9, 8), np.int32)

    def ref(out, k):
        r = np.zeros((9, 8), np.int64)
        for i in range(9):
            a, b = (i - 3) // 2, (i + 7) % 3
            c = 0 if k == 2 else i // (k - 2)
            d, e = (36 - i) % (i + 1), -(-(i * 5 + 1) // 4)
            r[i] = np.r_[[a] * 4, [b + 10 * c] * 4] + np.arange(8) * (d + e)
        return {0: r}
    return (out, -1), [0], ref


@ct.kernel
def rotating(out, n):
    """Loop variables whose next values are each other's current ones (a Fibonacci step, a
    three-way rotation) and that start from one constant: all must move at once."""
    a = 1.0
    b = 1.0
    p = 0
    q = 0
    r = 0
    for i in range(n):
        c = a + b
        a = b
        b = c
        p, q, r = q + 1, r, p
    w = 0
    v = 1
    while w < n:
        v, w = w + 2, v
    base = ct.bid(0) * 4
    ct.store(out, (base,), ct.full((1,), a, ct.float32))
    ct.store(out, (base + 1,), ct.full((1,), b, ct.float32))
    ct.store(out, (base + 2,), ct.full((1,), p * 100 + q * 10 + r, ct.float32))
    ct.store(out, (base + 3,), ct.full((1,), v * 100 + w, ct.float32))


def _rotating(rng):
    out = np.zeros(8, np.float32)

    def ref(out, n):
        a = b = 1.0
        p = q = r = 0
        for _ in range(n):
            a, b = b, a + b
            p, q, r = q + 1, r, p
        w, v = 0, 1
        while w < n:
            v, w = w + 2, v
        return {0: np.tile(np.array([a, b, p * 100 + q * 10 + r, v * 100 + w], np.float32), 2)}
    return (out, int(rng.integers(5, 12))), [0], ref


CASES = [
    Case("vec_add_f32", vec_add, (8,), _vec_add(np.float32)),
    Case("vec_add_f16", vec_add, (8,), _vec_add(np.float16), rtol=1e-3),
    Case("vec_add_i32", vec_add, (8,), _vec_add(np.int32)),
    *[Case(f"padding_{p}", pad_copy, (2, 3), _pad_case(p), exact=True) for p in range(6)],
    Case("edge_store_order_F", edge_store, (2, 3), _edge_store),
    Case("gemm_f16", gemm, (3, 3), _gemm(np.float16), rtol=2e-2, atol=2e-2),
    Case("gemm_f32_ieee", gemm, (3, 3), _gemm(np.float32), rtol=1e-4, atol=1e-4),
    Case("gemm_bf16_smallk", gemm, (3, 3), _gemm(dtypes_mod.bfloat16.np_dtype, tiles=(16, 16, 8)),
         rtol=2e-2, atol=5e-2),
    Case("gemm_int8", gemm_int8, (1, 1), _gemm_int8),
    Case("batched_mma", batched_mma, (2,), _batched, rtol=1e-4, atol=1e-4),
    Case("reductions", reductions, (2,), _reductions, rtol=1e-5, atol=1e-5),
    Case("int_reductions", int_reductions, (1,), _int_reductions),
    Case("custom_reduce_scan", custom_reduce_scan, (3,), _custom, rtol=1e-5, atol=1e-5),
    Case("casts", casts, (1,), _casts, exact=True),
    Case("int_ops", int_ops, (1,), _int_ops),
    Case("float_ops", float_ops, (1,), _float_ops, rtol=2e-5, atol=2e-5),
    Case("half_ops_f16", half_ops, (1,), _half(np.float16), rtol=2e-3, atol=2e-3),
    Case("half_ops_bf16", half_ops, (1,), _half(dtypes_mod.bfloat16.np_dtype), rtol=2e-2, atol=2e-2),
    Case("gather_scatter", gather_scatter, (1,), _gather, exact=True),
    Case("atomics", atomics, (4,), _atomics),
    Case("control_flow", control, (10,), _control, rtol=1e-5, atol=1e-5),
    Case("shapes", shapes, (1,), _shapes, exact=True),
    Case("int_shapes", int_shapes, (1,), _int_shapes),
    Case("take", takes, (1,), _takes, exact=True),
    Case("scalar_args", scalars, (5,), _scalars),
    Case("index_math", index_math, (9,), _index_math),
    Case("rotating_loop_variables", rotating, (2,), _rotating, exact=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_differential(case):
    check_case(case, "cpu")


# ======================================================================================
# the rest of the backend
# ======================================================================================

def test_every_catalogue_op_has_a_triton_lowering():
    from safetile.backends.triton.codegen import EMITTERS
    from safetile.backends.triton import lowerings  # noqa: F401
    from safetile.ir.catalogue import OPS
    missing = sorted(set(OPS) - set(EMITTERS))
    assert not missing, f"no Triton lowering for {missing}"


@ct.kernel
def printer(x):
    t = ct.load(x, (ct.bid(0),), (4,))
    ct.print("row", ct.bid(0), "values", t)


def test_print_reaches_stdout(capfd):
    x = np.arange(8, dtype=np.float32) + 0.5
    with triton_interpreter():
        ct.launch(None, (2,), printer, (to_torch(x),))
    out = capfd.readouterr().out
    assert "row" in out and "values" in out
    assert "4.5" in out and "[0.5" in out.replace("[ ", "[")


@ct.kernel
def no_arrays(n):
    ct.print("hello")
    for i in range(n):
        ct.print("i", i.astype(ct.float32) * 0.5)


def test_kernel_without_arrays_on_interpreter(capfd):
    """No array argument (so no tensor to pick the device from), a print without values, and a
    loop induction variable (a Python int in the interpreter) cast to float."""
    with triton_interpreter():
        ct.launch(None, (1,), no_arrays, (3,))
    out = capfd.readouterr().out
    assert out == "hello\ni 0.0\ni 0.5\ni 1.0\n"


@ct.kernel
def asserting(x, limit):
    t = ct.load(x, (ct.bid(0),), (4,))
    ct.assert_(ct.max(t) < limit, "value over the limit")


def test_assert_raises_on_failure_only():
    x = np.arange(8, dtype=np.float32)
    with triton_interpreter():
        ct.launch(None, (2,), asserting, (to_torch(x), 100.0))
        with pytest.raises(ct.TileRuntimeError, match="over the limit"):
            ct.launch(None, (2,), asserting, (to_torch(x), 5.0))


def test_source_and_specialisation_facts():
    @ct.kernel
    def vec_add(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, index=(i,), tile=ct.load(a, index=(i,), shape=(TILE,)) + ct.load(b, index=(i,), shape=(TILE,)))
    a = torch.randn(100)
    b = torch.randn(100)
    c = torch.zeros(100)
    src = vec_add.source(a, b, c, 32)
    assert "@triton.jit" in src and "def st_vec_add(" in src
    # unit strides are folded into the source; a strided view is not
    assert "a_s0" not in src.split("):", 1)[1]
    src2 = vec_add.source(a[::2], b[::2], c[::2], 32)
    assert "a_s0" in src2.split("):", 1)[1]
    # dynamic sizes share one variant; a new stride pattern adds one
    with triton_interpreter():
        for n in (100, 37, 64):
            ct.launch(None, (ct.cdiv(n, 32),), vec_add, (a[:n], b[:n], c[:n], 32))
        spec = next(v for k, v in vec_add.backend_cache.items() if k[0] == "triton")
        assert len({v.gen.source for v in spec.variants.values()}) == 1
        ct.launch(None, (2,), vec_add, (a[::2], b[::2], c[::2], 32))
        assert len({v.gen.source for v in spec.variants.values()}) == 2
    assert torch.allclose(c[:100:2], a[::2] + b[::2])


def test_disk_cache_roundtrip_and_corruption(tmp_path, monkeypatch):
    from safetile.backends.triton import cache
    from safetile.backends.triton.codegen import generate, Facts, ArrayFacts
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path))
    fn = vec_add.specialize(ct.runtime.args.arg_specs(vec_add, (np.zeros(4, np.float32),) * 3 + (16,))) \
        if hasattr(ct, "runtime") else None
    if fn is None:
        from safetile.runtime.args import arg_specs
        fn = vec_add.specialize(arg_specs(vec_add, (np.zeros(4, np.float32),) * 3 + (16,)))
    af = ArrayFacts(16, (True,), (1,), (1,), False)
    facts = Facts((af, af, af))
    calls = []

    def make():
        calls.append(1)
        return generate(fn, facts)
    key = "ab" + "0" * 62
    cache._loaded.pop((key, True), None)
    with triton_interpreter():
        cache.load(key, make, True)
        files = list(tmp_path.rglob("st_*.py"))
        assert len(files) == 1 and len(calls) == 1
        cache._loaded.pop((key, True), None)
        cache.load(key, make, True)            # from disk: no regeneration
        assert len(calls) == 1
        files[0].write_text(files[0].read_text()[:-40])   # truncate: corrupt
        cache._loaded.pop((key, True), None)
        fn2, gen = cache.load(key, make, True)
        assert len(calls) == 2 and "def st_vec_add" in gen.source
        # metadata survives the round trip in parameter order (the launcher depends on it)
        ref = generate(fn, facts)
        back = cache._decode(key, cache._encode(key, ref))
        assert list(back.signature.items()) == list(ref.signature.items()) and back.params == ref.params
        assert back.attrs == ref.attrs
        monkeypatch.setenv("SAFETILE_CACHE_DIR", "off")
        assert cache.cache_dir() is None
        monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path))
        monkeypatch.setenv("SAFETILE_DISABLE_CACHE", "1")
        assert cache.cache_dir() is None


def test_dump_source(monkeypatch, capfd, tmp_path):
    monkeypatch.setenv("SAFETILE_DUMP_SOURCE", "1")
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path))

    @ct.kernel
    def neg(x, TILE: ct.Constant[int]):
        ct.store(x, (ct.bid(0),), -ct.load(x, (ct.bid(0),), (TILE,)))
    x = torch.arange(8, dtype=torch.float32)
    with triton_interpreter():
        ct.launch(None, (1,), neg, (x, 8))
    assert "def st_neg(" in capfd.readouterr().out
    assert torch.equal(x, -torch.arange(8, dtype=torch.float32))


def test_big_grid_and_64bit_indexing(monkeypatch):
    """Grids beyond CUDA's y/z limit launch flat; huge arrays index in int64 (limits lowered here)."""
    from safetile.backends.triton import launcher

    @ct.kernel
    def coords(out):
        x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
        v = x + 10 * y + 100 * z + 1000 * ct.num_blocks(1)
        ct.store(out, (z, y, x), ct.full((1, 1, 1), v, ct.int32))
    monkeypatch.setattr(launcher, "_GRID_YZ_LIMIT", 2)
    monkeypatch.setattr(launcher, "_I32_LIMIT", 20)
    out = np.zeros((2, 3, 4), np.int32)
    ct.launch(None, (4, 3, 2), coords, (out,))
    t = to_torch(np.zeros_like(out))
    with triton_interpreter():
        ct.launch(None, (4, 3, 2), coords, (t,))
    assert np.array_equal(to_numpy(t, out), out)
    spec = next(v for k, v in coords.backend_cache.items() if k[0] == "triton")
    src = next(iter(spec.variants.values())).gen.source
    assert "_st_gx" in src and "tl.int64" in src


def test_kernel_hints_map_to_triton_options():
    from safetile.backends.triton.codegen import Facts, generate, default_facts
    from safetile.backends.triton.launcher import compile_options, default_num_warps
    from safetile.runtime.args import arg_specs
    k = vec_add.replace_hints(num_warps=2, num_stages=4, occupancy=2, num_ctas=2)
    fn = k.specialize(arg_specs(k, (np.zeros(4, np.float32),) * 3 + (16,)))
    opts = compile_options(fn, generate(fn, default_facts(fn)), Facts(default_facts(fn).arrays, target=90))
    assert opts["num_warps"] == 2 and opts["num_stages"] == 4 and opts["num_ctas"] == 2
    assert "launch_pdl" not in opts  # only when the source waits for its predecessor (Facts.pdl)
    assert opts["maxnreg"] <= 255 and opts["sanitize_overflow"] is False
    big = gemm.specialize(arg_specs(gemm, (np.zeros((4, 4), np.float16),) * 3 + (128, 128, 32)))
    assert default_num_warps(big) == 8


SM90_CASES = ["gemm_f16", "reductions", "shapes", "casts", "custom_reduce_scan", "atomics", "int_ops", "index_math"]


@pytest.mark.parametrize("name", SM90_CASES)
def test_generated_source_compiles_for_sm90(name, tmp_path, monkeypatch):
    """The real Triton compiler (no GPU needed) accepts the generated code for Hopper."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from safetile.backends.triton import cache
    from safetile.backends.triton.codegen import Facts, generate
    from safetile.backends.triton.launcher import array_facts, compile_options, array_parts
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    case = next(c for c in CASES if c.name == name)
    args, _, _ = case.make(np.random.default_rng(0))
    targs = [to_torch(a) if isinstance(a, np.ndarray) else a for a in args]
    fn = case.kernel.specialize(arg_specs(case.kernel, tuple(targs)))
    facts = Facts(tuple(array_facts(*array_parts(a)[:3]) for a in targs if isinstance(a, torch.Tensor)),
                  False, 90, True, pdl=True)
    gen = generate(fn, facts)
    jitfn, gen = cache.load(cache.digest("sm90-" + name, facts), lambda: gen, False)
    if name == "gemm_f16":
        assert "make_tensor_descriptor" in gen.source
    opts = compile_options(fn, gen, facts)
    assert opts["launch_pdl"] is True
    compiled = triton.compile(ASTSource(jitfn, gen.signature, {}, gen.attrs), target=GPUTarget("cuda", 90, 32),
                              options=opts)
    assert compiled.asm["cubin"]
    assert re.search(r"\.entry\s+st_", compiled.asm["ptx"])
    # programmatic dependent launch: the kernel waits for its predecessor before any memory access
    ptx = compiled.asm["ptx"]
    assert "griddepcontrol.wait" in ptx and ptx.index("griddepcontrol.wait") < ptx.index("ld.global") \
        if "ld.global" in ptx else "griddepcontrol.wait" in ptx


def test_compiled_binary_record_skips_tritons_cache_key(tmp_path, monkeypatch):
    """A later process finds the binary through safetile's record, without ``triton.compile``
    (whose cache key hashes Triton's whole native library first)."""
    import triton
    import triton.runtime.cache as triton_cache
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from safetile.backends.triton import cache
    from safetile.backends.triton.codegen import Facts, generate
    from safetile.backends.triton.launcher import array_facts, array_parts, compile_options
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    case = next(c for c in CASES if c.name == "reductions")
    args, _, _ = case.make(np.random.default_rng(0))
    targs = [to_torch(a) if isinstance(a, np.ndarray) else a for a in args]
    fn = case.kernel.specialize(arg_specs(case.kernel, tuple(targs)))
    facts = Facts(tuple(array_facts(*array_parts(a)[:3]) for a in targs if isinstance(a, torch.Tensor)),
                  False, 90, True, pdl=True)
    key = cache.digest("record-test", facts)
    jitfn, gen = cache.load(key, lambda: generate(fn, facts), False)
    src = ASTSource(jitfn, gen.signature, {}, gen.attrs)
    target, opts = GPUTarget("cuda", 90, 32), compile_options(fn, gen, facts)
    assert cache.load_binary(key, src, target, opts) is None  # nothing recorded yet
    compiled = triton.compile(src, target=target, options=opts)
    cache.remember_binary(key, src, target, opts, compiled)

    def no_key():
        raise AssertionError("triton_key() was computed")
    monkeypatch.setattr(triton_cache, "triton_key", no_key)
    again = cache.load_binary(key, src, target, opts)
    assert again is not None and again.asm["cubin"] == compiled.asm["cubin"]
    assert cache.load_binary(key, src, target, {**opts, "num_warps": 2}) is None  # other options: no record
    record = next((tmp_path / "st").rglob("bin_*.json"))
    record.write_text("{not json")
    assert cache.load_binary(key, src, target, opts) is None  # a corrupt record: compile normally
    cache.remember_binary(key, src, target, opts, compiled)
    for f in (tmp_path / "triton").rglob("*.cubin"):
        f.unlink()
    assert cache.load_binary(key, src, target, opts) is None  # Triton's entry is gone


def test_a_variant_too_big_for_shared_memory_is_rebuilt_without_descriptors(monkeypatch, tmp_path):
    """Descriptor (TMA) loads stage whole tiles in shared memory; when even one pipeline stage
    does not fit, the kernel is generated again with pointer loads and no pipelining."""
    from safetile.backends.triton import launcher
    from safetile.backends.triton.codegen import Facts
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))

    class OutOfResources(Exception):
        pass

    built = []

    class FakeVariant:
        def __init__(self, jitfn, gen, facts, fn, interp, key="", loaded=None):
            built.append(facts)
            if facts.tma or facts.loop_stages:
                raise OutOfResources("out of resource: shared memory")

    monkeypatch.setattr(launcher, "Variant", FakeVariant)
    monkeypatch.setattr(launcher.Specialization, "_warm", lambda self, k, facts, device: None)
    x = torch.zeros(64)
    fn = vec_add.specialize(arg_specs(vec_add, (x, x, x, 16)))
    spec = launcher.Specialization(vec_add, fn)
    spec.ir_text = "test"
    facts = Facts(tuple(launcher.array_facts(*launcher.array_parts(x)[:3]) for _ in range(3)), False, 90, True,
                  loop_stages=2)
    v = spec._build(facts, False, 0)
    assert isinstance(v, FakeVariant)
    assert [(f.tma, f.loop_stages) for f in built] == [(True, 2), (False, 0)]

    class OtherError(Exception):
        pass

    def failing(*a, **k):
        raise OtherError("a real compile error")
    monkeypatch.setattr(launcher, "Variant", failing)
    with pytest.raises(ct.TileCompilerExecutionError, match="the Triton compiler failed on kernel 'vec_add'") as e:
        spec._build(facts, False, 0)
    assert isinstance(e.value.__cause__, OtherError)

    def too_big(*a, **k):
        raise OutOfResources("out of resource: shared memory, Required: 262144, Hardware limit: 232448")
    monkeypatch.setattr(launcher, "Variant", too_big)
    with pytest.raises(ct.TileCompilerExecutionError, match="does not fit this GPU: out of resource: shared memory"):
        spec._build(facts, False, 0)


@ct.kernel
def _bump_twice(x):
    ct.store(x, (0,), ct.load(x, (0,), (16,)) + 1.0)
    ct.store(x, (0,), ct.load(x, (0,), (16,)) * 2.0)


def test_accesses_to_an_array_the_block_writes_are_ordered_by_barriers():
    """A block is one logical thread: a load after a store to the same array must see it, though
    Triton may give the lanes of the two accesses to different threads of the block."""
    from safetile.backends.triton.codegen import Facts, generate, ordered_arrays
    from safetile.backends.triton.launcher import array_facts, array_parts
    from safetile.runtime.args import arg_specs
    x = torch.zeros(16)
    fn = _bump_twice.specialize(arg_specs(_bump_twice, (x,)))
    assert len(ordered_arrays(fn)) == 1
    facts = Facts((array_facts(*array_parts(x)[:3]),), False, 90, False)
    assert generate(fn, facts).source.count("tl.debug_barrier()") == 4
    a, b, c = torch.zeros(64), torch.zeros(64), torch.zeros(64)
    fn = vec_add.specialize(arg_specs(vec_add, (a, b, c, 16)))
    assert not ordered_arrays(fn)
    assert "debug_barrier" not in generate(fn, Facts(tuple(array_facts(*array_parts(t)[:3]) for t in (a, b, c)),
                                                     False, 90, False)).source
    xs = np.random.default_rng(5).standard_normal(16).astype(np.float32)
    with triton_interpreter():
        t = torch.from_numpy(xs.copy())
        ct.launch(None, (1,), _bump_twice, (t,))
    np.testing.assert_allclose(t.numpy(), (xs + 1) * 2, rtol=1e-6)
