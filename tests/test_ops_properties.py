"""Property tests: every op family of the catalogue against NumPy on the CPU backend.

Hypothesis draws shapes (power-of-two tiles over arrays whose sizes are usually *not*
multiples of the tile), dtypes and a seed for NumPy's generator, which fills the inputs.
Outputs are poisoned before each launch with a value the reference does not contain (or,
for bool outputs, the launch runs twice with opposite poisons), then every element is
compared with a NumPy reference that implements the documented semantics independently:
Python floor division and modulo, wrap-around integers, min/max ignoring NaN unless asked
to propagate it, saturating float→int conversion, block-ordered atomics, and cuTile
Python's promotion table (mixing signed with unsigned integers or float16 with bfloat16
needs an explicit cast).
"""
from __future__ import annotations

import math
import operator

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import safetile as ct
from safetile import dtypes as sdt

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

prop = settings(max_examples=20, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
few = settings(max_examples=12, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

BF16 = np.dtype(ml_dtypes.bfloat16)
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)]
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
BOOL = np.dtype(np.bool_)
ALL = INTS + FLOATS + [BOOL]

seeds = st.integers(0, 2**32 - 1)
pow2 = st.sampled_from([1, 2, 4, 8, 16, 32])
small_pow2 = st.sampled_from([1, 2, 4, 8])


def sd(npd) -> sdt.DType:
    return sdt.as_dtype(np.dtype(npd))


# ============================================================================ data helpers

def gen(rng, shape, dtype, *, special=False, lo=None, hi=None):
    """Random data of ``dtype``: full-range and small integers mixed; floats of varied
    magnitude; with ``special`` some NaN, ±inf and ±0."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = info.min if lo is None else max(lo, info.min)
        b = info.max if hi is None else min(hi, info.max)
        x = rng.integers(a, b, size=shape, endpoint=True, dtype=dtype)
        if lo is None and hi is None:
            small = rng.integers(max(-9, info.min), min(9, info.max), size=shape, endpoint=True).astype(dtype)
            x = np.where(rng.random(shape) < 0.5, small, x)
        return x
    if lo is not None or hi is not None:
        x = rng.uniform(-8 if lo is None else lo, 8 if hi is None else hi, size=shape)
    else:
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-2, 3, size=shape)
    x = np.asarray(x).astype(dtype)
    if special and x.size:
        pick = rng.random(shape)
        vals = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0]).astype(dtype)
        which = rng.integers(0, len(vals), size=shape)
        x = np.where(pick < 0.15, vals[which], x).astype(dtype)
    return x


def wrap(v: int, dtype) -> int:
    """Python integer → the value an integer of ``dtype`` holds (two's complement wrap)."""
    dtype = np.dtype(dtype)
    bits = dtype.itemsize * 8
    v &= (1 << bits) - 1
    if dtype.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def pyref(fn, dtype, *arrays):
    """Apply a Python function element-wise on Python ints, wrapped to ``dtype``."""
    out = np.empty(np.broadcast_shapes(*(a.shape for a in arrays)), dtype=dtype)
    flat = [np.broadcast_to(a, out.shape).ravel() for a in arrays]
    res = out.reshape(-1)
    for i in range(res.size):
        res[i] = wrap(fn(*(int(f[i]) for f in flat)), dtype)
    return out


def as_cmp(x):
    """A comparable NumPy array (bfloat16 → float32)."""
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype == BF16 else x


def poison_fills(expected, dtype):
    """Fill values for the output: one value absent from ``expected`` when there is one;
    otherwise two different fills (two launches: an unwritten element cannot match both)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return [False, True]
    exp = as_cmp(expected)
    if is_float(dtype):
        if not np.isnan(exp).any():
            return [np.nan]
        cands = [-7321.5, 5917.25, -3.125, 1e-3]
    else:
        info = np.iinfo(dtype)
        cands = [info.min, info.max, info.min + 1, 0x5A & info.max, info.max - 3]
    for v in cands:
        if not (as_cmp(np.array(v).astype(dtype)) == exp).any():
            return [v]
    return cands[:2]


def check(expected, got, *, rtol=0.0, atol=0.0, what=""):
    exp, out = as_cmp(expected), as_cmp(got)
    assert out.shape == exp.shape, (what, out.shape, exp.shape)
    assert out.dtype == exp.dtype or (np.asarray(expected).dtype == np.asarray(got).dtype), (what, out.dtype)
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(out, exp, err_msg=what)
    else:
        if np.asarray(expected).dtype.kind == "f" or "float" in np.asarray(expected).dtype.name:
            # results rounded into the subnormal range keep few bits: compare those absolutely
            atol = max(atol, float(ml_dtypes.finfo(np.asarray(expected).dtype).smallest_normal))
        np.testing.assert_allclose(out.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=what)


def run_checked(kernel, grid, make_args, expected, out_dtype, *, rtol=0.0, atol=0.0, what=""):
    """Launch with a poisoned output (shape of ``expected``) and compare every element."""
    out_dtype = np.dtype(out_dtype)
    expected = np.asarray(expected)
    assert expected.dtype == out_dtype or expected.dtype == BF16, (expected.dtype, out_dtype)
    for fill in poison_fills(expected, out_dtype):
        out = np.full(expected.shape, fill).astype(out_dtype)
        ct.launch(None, grid, kernel, make_args(out))
        check(expected, out, rtol=rtol, atol=atol, what=what)
    return out


def cdiv(a, b):
    return -(-a // b)


# ============================================================================ promotion (reference)

def ref_promote(a, b):
    """cuTile Python's tile∘tile table: bool < integers < floats, the wider type wins within a
    category; signed with unsigned integers or float16 with bfloat16 → None (explicit cast)."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    fa, fb = a.kind == "f" or a == BF16, b.kind == "f" or b == BF16
    if fa and fb:
        if a.itemsize != b.itemsize:
            return a if a.itemsize > b.itemsize else b
        return None  # float16 with bfloat16
    if fa or fb:
        return a if fa else b
    if a == BOOL or b == BOOL:
        return b if a == BOOL else a
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    return None  # signed with unsigned


def is_float(d):
    d = np.dtype(d)
    return d.kind == "f" or d == BF16


def float_of(d):
    d = np.dtype(d)
    return d if is_float(d) else np.dtype(np.float32)


def eps(d):
    d = np.dtype(d)
    return {2: 2.0 ** -10, 4: 2.0 ** -23, 8: 2.0 ** -52}[d.itemsize] if d != BF16 else 2.0 ** -7


# ============================================================================ element-wise binary

def op_add(a, b): return a + b
def op_sub(a, b): return a - b
def op_mul(a, b): return a * b
def op_truediv(a, b): return a / b
def op_floordiv(a, b): return a // b
def op_mod(a, b): return a % b
def op_pow(a, b): return a ** b
def op_and(a, b): return a & b
def op_or(a, b): return a | b
def op_xor(a, b): return a ^ b
def op_lshift(a, b): return a << b
def op_rshift(a, b): return a >> b
def op_eq(a, b): return a == b
def op_ne(a, b): return a != b
def op_lt(a, b): return a < b
def op_le(a, b): return a <= b
def op_gt(a, b): return a > b
def op_ge(a, b): return a >= b
def op_min(a, b): return min(a, b)
def op_max(a, b): return max(a, b)


BIN_FNS = {
    "add": ct.add, "sub": ct.sub, "mul": ct.mul, "truediv": ct.truediv, "floordiv": ct.floordiv,
    "mod": ct.mod, "pow": ct.pow, "atan2": ct.atan2, "minimum": ct.minimum, "maximum": ct.maximum,
    "bitwise_and": ct.bitwise_and, "bitwise_or": ct.bitwise_or, "bitwise_xor": ct.bitwise_xor,
    "bitwise_lshift": ct.bitwise_lshift, "bitwise_rshift": ct.bitwise_rshift,
    "equal": ct.equal, "not_equal": ct.not_equal, "less": ct.less, "less_equal": ct.less_equal,
    "greater": ct.greater, "greater_equal": ct.greater_equal,
}
BIN_OPS = {  # the same ops spelled with Python operators / builtins
    "add": op_add, "sub": op_sub, "mul": op_mul, "truediv": op_truediv, "floordiv": op_floordiv,
    "mod": op_mod, "pow": op_pow, "bitwise_and": op_and, "bitwise_or": op_or, "bitwise_xor": op_xor,
    "bitwise_lshift": op_lshift, "bitwise_rshift": op_rshift, "equal": op_eq, "not_equal": op_ne,
    "less": op_lt, "less_equal": op_le, "greater": op_gt, "greater_equal": op_ge,
    "minimum": op_min, "maximum": op_max,
}
BIN_ALL = {("fn", k): v for k, v in BIN_FNS.items()} | {("op", k): v for k, v in BIN_OPS.items()}

COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
           "greater": np.greater, "greater_equal": np.greater_equal}
BITWISE = {"bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor}


def py_floordiv(a, b):
    return a // b


def py_mod(a, b):
    return a % b


def py_int_pow(a, b):
    if b >= 0:
        return a ** b
    return 1 if a == 1 else ((1 if b % 2 == 0 else -1) if a == -1 else 0)  # truncation of 1 / a**-b


def py_shift(left):
    def f(a, b):
        return a << b if left else a >> b  # Python ints: arithmetic, never wraps the amount
    return f


def binary_result_dtype(name, da, db):
    """The result dtype, or None where cuTile Python rejects the operands."""
    da, db = np.dtype(da), np.dtype(db)
    if name in BITWISE and (da != db or is_float(da)):
        return None
    if name in ("bitwise_lshift", "bitwise_rshift") and (da.kind not in "iu" or db.kind not in "iu"):
        return None
    d = ref_promote(da, db)
    if d is None:
        return None
    if name in COMPARE:
        return BOOL
    if d == BOOL and name == "atan2":
        return None  # only true division promotes bools to float first
    if name in ("truediv", "atan2"):
        return float_of(d)
    if d == BOOL and name not in BITWISE:
        return None  # arithmetic on bools needs a cast to int
    return d


def binary_reference(name, x, y):
    """(expected, rtol) for op ``name`` on arrays x, y (already broadcast-compatible)."""
    d = ref_promote(x.dtype, y.dtype)
    rd = binary_result_dtype(name, x.dtype, y.dtype)
    if name in COMPARE:
        return COMPARE[name](as_cmp(x.astype(d)), as_cmp(y.astype(d))), 0
    if name in ("truediv", "atan2"):  # promotion to the common type first, then to float
        a, b = x.astype(d).astype(rd), y.astype(d).astype(rd)
        r = (np.true_divide if name == "truediv" else np.arctan2)(a.astype(np.float64), b.astype(np.float64))
        return r.astype(rd), (0 if name == "truediv" else 2 * eps(rd))
    a, b = x.astype(rd), y.astype(rd)
    if rd.kind in "iu":
        fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": py_floordiv,
              "mod": py_mod, "pow": py_int_pow, "minimum": min, "maximum": max,
              "bitwise_lshift": py_shift(True), "bitwise_rshift": py_shift(False), **BITWISE}[name]
        return pyref(fn, rd, a, b), 0
    if rd == BOOL:
        fn = {"minimum": np.minimum, "maximum": np.maximum, "bitwise_and": np.logical_and,
              "bitwise_or": np.logical_or, "bitwise_xor": np.logical_xor}[name]
        return fn(a, b), 0
    # floats: + - * min max computed in float64 and rounded once (exact: float64 has more than
    # 2p+2 bits for every narrower format); // and % in the operand precision (Python semantics)
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "floordiv": np.floor_divide, "mod": np.mod,
          "pow": np.power, "minimum": np.fmin, "maximum": np.fmax}[name]  # min/max ignore NaN by default
    if name in ("floordiv", "mod"):
        cd = np.float64 if rd.itemsize == 8 else np.float32
        return fn(a.astype(cd), b.astype(cd)).astype(rd), 0
    r = fn(a.astype(np.float64), b.astype(np.float64))
    return r.astype(rd), (4 * eps(rd) if name == "pow" else 0)


def binary_inputs(rng, name, shape_x, shape_y, dx, dy):
    x = gen(rng, shape_x, dx, special=name not in ("floordiv", "mod", "pow"))
    y = gen(rng, shape_y, dy, special=name not in ("floordiv", "mod", "pow"))
    d = binary_result_dtype(name, dx, dy)
    if name in ("bitwise_lshift", "bitwise_rshift"):
        bits = d.itemsize * 8
        y = gen(rng, shape_y, dy, lo=0, hi=min(bits + 2, np.iinfo(dy).max if dy.kind in "iu" else 1))
    if name in ("floordiv", "mod") and d.kind in "iu":
        y = np.where(y.astype(d) == 0, np.array(1, dtype=dy), y).astype(dy)
    if name == "pow":
        if d.kind in "iu":
            y = gen(rng, shape_y, dy, lo=-3 if dy.kind == "i" else 0, hi=5)
            if (y.astype(d) < 0).any():  # no 0 ** negative (keeps x's own shape)
                x = np.where(x.astype(d) == 0, np.array(2, dtype=dx), x).astype(dx)
        elif is_float(d):
            x = np.abs(gen(rng, shape_x, dx, lo=0.1, hi=4)).astype(dx)
            y = gen(rng, shape_y, dy, lo=-3, hi=3) if is_float(dy) else gen(rng, shape_y, dy, lo=0, hi=3)
    if name in ("floordiv", "mod") and is_float(d):
        x = gen(rng, shape_x, dx, lo=-50, hi=50) if is_float(dx) else x
        y = gen(rng, shape_y, dy, lo=-6, hi=6) if is_float(dy) else np.where(y == 0, 1, y).astype(dy)
    return x, y


def allowed_binary(name, dx, dy):
    return binary_result_dtype(name, dx, dy) is not None


@ct.kernel
def ew_binary(x, y, out, OP: ct.Constant[tuple], TM: ct.Constant[int], TN: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    a = ct.load(x, index=(bx, by), shape=(TM, TN))
    b = ct.load(y, index=(bx, by), shape=(TM, TN))
    ct.store(out, index=(bx, by), tile=BIN_ALL[OP](a, b))


@ct.kernel
def ew_binary_bcast(x, y, out, OP: ct.Constant[tuple], TM: ct.Constant[int], TN: ct.Constant[int]):
    # y is a (1, N) row broadcast over the rows of x; loaded as a rank-1 tile (rank alignment)
    bx, by = ct.bid(0), ct.bid(1)
    a = ct.load(x, index=(bx, by), shape=(TM, TN))
    b = ct.load(y, index=(0, by), shape=(1, TN)).reshape((TN,))
    ct.store(out, index=(bx, by), tile=BIN_ALL[OP](b, a))


@st.composite
def binary_case(draw, name):
    form = draw(st.sampled_from(["fn", "op"] if name in BIN_OPS else ["fn"]))
    dx = draw(st.sampled_from(ALL))
    dy = draw(st.sampled_from([dx, dx, *ALL]))
    if not allowed_binary(name, dx, dy):
        dx = dy = draw(st.sampled_from([d for d in INTS + FLOATS if allowed_binary(name, d, d)]))
    return form, name, dx, dy


@pytest.mark.parametrize("name", sorted(BIN_FNS))
@given(data=st.data(), m=st.integers(1, 40), n=st.integers(1, 40), tm=pow2, tn=pow2, seed=seeds)
@few
def test_binary_elementwise(name, data, m, n, tm, tn, seed):
    form, name, dx, dy = data.draw(binary_case(name))
    rng = np.random.default_rng(seed)
    x, y = binary_inputs(rng, name, (m, n), (m, n), dx, dy)
    expected, rtol = binary_reference(name, x, y)
    run_checked(ew_binary, (cdiv(m, tm), cdiv(n, tn)), lambda out: (x, y, out, (form, name), tm, tn),
                expected, binary_result_dtype(name, dx, dy), rtol=rtol, atol=0 if not rtol else 1e-30,
                what=f"{form} {name} {dx} {dy}")


@prop
@given(data=st.data(), m=st.integers(1, 24), n=st.integers(1, 24), tm=pow2, tn=pow2, seed=seeds)
def test_binary_broadcast_rank_alignment(data, m, n, tm, tn, seed):
    form, name, dx, dy = data.draw(binary_case(data.draw(st.sampled_from(sorted(BIN_FNS)))))
    rng = np.random.default_rng(seed)
    row, mat = binary_inputs(rng, name, (1, n), (m, n), dx, dy)  # the kernel computes row OP mat
    expected, rtol = binary_reference(name, row, mat)
    run_checked(ew_binary_bcast, (cdiv(m, tm), cdiv(n, tn)), lambda out: (mat, row, out, (form, name), tm, tn),
                expected, binary_result_dtype(name, dx, dy), rtol=rtol, atol=0 if not rtol else 1e-30,
                what=f"{form} {name} {dx} {dy}")


# ---------------------------------------------------------------------------- scalar ∘ tile

@ct.kernel
def ew_scalar_const(x, out, OP: ct.Constant[tuple], C: ct.Constant, T: ct.Constant[int]):
    b = ct.bid(0)
    a = ct.load(x, index=(b,), shape=(T,))
    ct.store(out, index=(b,), tile=BIN_ALL[OP](a, C))


@ct.kernel
def ew_scalar_const_left(x, out, OP: ct.Constant[tuple], C: ct.Constant, T: ct.Constant[int]):
    b = ct.bid(0)
    a = ct.load(x, index=(b,), shape=(T,))
    ct.store(out, index=(b,), tile=BIN_ALL[OP](C, a))


def scalar_result_dtype(name, d, c):
    """scalar∘tile (cuTile Python): a constant of the tile's category takes the tile's dtype (an
    integer must fit it), a constant of a stronger category wins with its default dtype.
    (result dtype, operand dtype), or (None, None) where the kernel must be rejected."""
    d = np.dtype(d)
    cat = lambda t: 0 if t == BOOL else (2 if is_float(t) else 1)  # noqa: E731
    if isinstance(c, bool):
        loose = BOOL
    elif isinstance(c, float):
        loose = np.dtype(np.float32)
    else:
        loose = np.dtype(np.int32) if -(2**31) <= c < 2**31 else np.dtype(np.int64)
    if cat(loose) == cat(d):
        if d.kind in "iu" and not isinstance(c, bool) and not np.iinfo(d).min <= c <= np.iinfo(d).max:
            if name != "truediv":  # true division converts to float first: no range check
                return None, None
            return np.dtype(np.float32), np.dtype(np.float32)
        base = d
    else:
        base = loose if cat(loose) > cat(d) else d
    if name in BITWISE and is_float(base):
        return None, None
    if name in BITWISE and {d, loose} == {BOOL, np.dtype(np.int8)}:
        return None, None
    return binary_result_dtype(name, base, base), base


@prop
@given(name=st.sampled_from(["add", "sub", "mul", "truediv", "minimum", "maximum", "less", "equal",
                             "bitwise_and", "bitwise_xor"]),
       d=st.sampled_from(ALL), c=st.one_of(st.integers(-300, 300), st.sampled_from([2**40, -(2**33)]),
                                           st.floats(-100, 100, allow_nan=False), st.booleans()),
       left=st.booleans(), n=st.integers(1, 40), t=pow2, seed=seeds)
def test_scalar_tile_promotion(name, d, c, left, n, t, seed):
    rd, base = scalar_result_dtype(name, d, c)
    rng = np.random.default_rng(seed)
    x = gen(rng, n, d)
    kern = ew_scalar_const_left if left else ew_scalar_const
    if rd is None:  # rejected at compile time, like cuTile Python
        with pytest.raises(ct.TileError):
            ct.launch(None, (cdiv(n, t),), kern, (x, np.zeros(n, np.float64), ("fn", name), c, t))
        return
    cval = np.array(c).astype(base)
    cb = np.broadcast_to(cval, x.shape)
    expected, rtol = binary_reference(name, cb, x.astype(base)) if left else \
        binary_reference(name, x.astype(base), cb)
    assert expected.dtype == rd
    run_checked(kern, (cdiv(n, t),), lambda out: (x, out, ("fn", name), c, t), expected, rd,
                rtol=rtol, what=f"{name} {d} {c!r}")


@pytest.mark.parametrize("tile_dtype,const,result", [
    (np.int32, 2, np.int32), (np.int32, 2.5, np.float32), (np.int8, 100, np.int8), (np.int8, 1000, None),
    (np.uint8, -1, None), (np.float16, 2.5, np.float16), (np.float16, 3, np.float16),
    (BF16, 1.5, BF16), (np.int64, 2.5, np.float32), (np.bool_, 1, np.int32), (np.int16, 2**40, None),
])
def test_scalar_promotion_table(tile_dtype, const, result):
    x = np.arange(1, 9).astype(tile_dtype)
    if result is None:  # the constant does not fit the tile's integer type: TileValueError, as in cuTile
        with pytest.raises(ct.TileValueError, match="out of range"):
            ct.launch(None, (1,), ew_scalar_const, (x, np.zeros(8, np.int64), ("op", "add"), const, 8))
        return
    out = np.zeros(8, dtype=result)
    ct.launch(None, (1,), ew_scalar_const, (x, out, ("op", "add"), const, 8))
    if is_float(result):
        exp = (x.astype(np.float64) + const).astype(result)
    else:
        exp = pyref(lambda a: a + int(const), result, x.astype(result))
    check(exp, out)


@ct.kernel
def ew_runtime_scalar(x, s, out, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(out, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)) * s)


@prop
@given(d=st.sampled_from(INTS + FLOATS), ds=st.sampled_from(INTS + FLOATS), n=st.integers(1, 30), t=pow2,
       seed=seeds)
def test_runtime_scalar_is_a_tile(d, ds, n, t, seed):
    # a scalar kernel argument is a typed 0-d tile: tile∘tile promotion applies
    rng = np.random.default_rng(seed)
    if ds == BF16:
        ds = np.dtype(np.float32)
    x = gen(rng, n, d)
    s = gen(rng, (), ds)[()]
    rd = binary_result_dtype("mul", d, ds)
    if rd is None:  # e.g. signed with unsigned: an explicit cast is needed
        with pytest.raises(ct.TileTypeError, match="Implicit promotion"):
            ct.launch(None, (cdiv(n, t),), ew_runtime_scalar, (x, s, np.zeros(n, np.float64), t))
        return
    expected, rtol = binary_reference("mul", x, np.asarray(s))
    run_checked(ew_runtime_scalar, (cdiv(n, t),), lambda out: (x, s, out, t), expected, rd, rtol=rtol)


# ============================================================================ element-wise unary

def u_neg(a): return -a
def u_abs(a): return abs(a)
def u_inv(a): return ~a


UN_FNS = {
    "negative": ct.negative, "abs": ct.abs, "exp": ct.exp, "exp2": ct.exp2, "log": ct.log, "log2": ct.log2,
    "sqrt": ct.sqrt, "rsqrt": ct.rsqrt, "sin": ct.sin, "cos": ct.cos, "tan": ct.tan, "sinh": ct.sinh,
    "cosh": ct.cosh, "tanh": ct.tanh, "floor": ct.floor, "ceil": ct.ceil, "isnan": ct.isnan,
    "bitwise_not": ct.bitwise_not, "-": u_neg, "abs()": u_abs, "~": u_inv,
}
FLOAT_UNARY = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
               "rsqrt": lambda v: 1.0 / np.sqrt(v), "sin": np.sin, "cos": np.cos, "tan": np.tan,
               "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh}


def unary_reference(name, x):
    d = x.dtype
    if name in FLOAT_UNARY:
        od = float_of(d)
        with np.errstate(all="ignore"):
            r = FLOAT_UNARY[name](x.astype(od).astype(np.float64))
        return r.astype(od), od, 3 * eps(od)
    if name == "isnan":
        return np.isnan(as_cmp(x)) if is_float(d) else np.zeros(x.shape, bool), BOOL, 0
    if name in ("floor", "ceil"):  # floats only (cuTile Python rejects integer inputs)
        return (np.floor if name == "floor" else np.ceil)(x.astype(np.float64)).astype(d), d, 0
    if name in ("bitwise_not", "~"):
        return (~x if d != BOOL else np.logical_not(x)), d, 0
    if d == BOOL and name in ("abs", "abs()"):
        return x.copy(), d, 0  # abs keeps a bool
    od = np.dtype(np.int32) if d == BOOL else d
    fn = operator.neg if name in ("negative", "-") else abs
    if od.kind in "iu":
        return pyref(fn, od, x.astype(od)), od, 0
    return fn(x.astype(np.float64)).astype(od), od, 0


@ct.kernel
def ew_unary(x, out, OP: ct.Constant[str], TM: ct.Constant[int], TN: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    a = ct.load(x, index=(bx, by), shape=(TM, TN))
    ct.store(out, index=(bx, by), tile=UN_FNS[OP](a))


@pytest.mark.parametrize("name", sorted(UN_FNS))
@given(d=st.sampled_from(ALL), m=st.integers(1, 30), n=st.integers(1, 30), tm=pow2, tn=pow2, seed=seeds)
@few
def test_unary_elementwise(name, d, m, n, tm, tn, seed):
    if name in ("bitwise_not", "~") and is_float(d):
        d = np.dtype(np.int16)
    if name in FLOAT_UNARY and d == BOOL:
        d = np.dtype(np.uint8)
    if name in ("floor", "ceil") and not is_float(d):
        d = np.dtype(np.float32)
    rng = np.random.default_rng(seed)
    x = gen(rng, (m, n), d, special=True)
    if name in FLOAT_UNARY and not is_float(d):
        x = gen(rng, (m, n), d, lo=-50, hi=50)
    expected, od, rtol = unary_reference(name, x)
    run_checked(ew_unary, (cdiv(m, tm), cdiv(n, tn)), lambda out: (x, out, name, tm, tn), expected, od,
                rtol=rtol, atol=1e-30 if rtol else 0, what=f"{name} {d}")


# ============================================================================ where

@ct.kernel
def ew_where(c, x, y, out, T: ct.Constant[int], COND_ROW: ct.Constant[bool]):
    b = ct.bid(0)
    a = ct.load(x, index=(b, 0), shape=(T, 4))
    v = ct.load(y, index=(b, 0), shape=(T, 4))
    if COND_ROW:
        cond = ct.load(c, index=(0,), shape=(4,))  # broadcast over rows (rank alignment)
    else:
        cond = ct.load(c, index=(b, 0), shape=(T, 4))
    ct.store(out, index=(b, 0), tile=ct.where(cond, a, v))


@prop
@given(dx=st.sampled_from(ALL), dy=st.sampled_from(ALL), n=st.integers(1, 40), t=pow2, row=st.booleans(),
       seed=seeds)
def test_where(dx, dy, n, t, row, seed):
    rng = np.random.default_rng(seed)
    x, y = gen(rng, (n, 4), dx, special=True), gen(rng, (n, 4), dy, special=True)
    c = gen(rng, (4,) if row else (n, 4), BOOL)
    d = ref_promote(dx, dy)
    if d is None:
        with pytest.raises(ct.TileTypeError, match="Implicit promotion"):
            ct.launch(None, (cdiv(n, t),), ew_where, (c, x, y, np.zeros((n, 4), np.float64), t, row))
        return
    expected = np.where(c, x.astype(d), y.astype(d)).astype(d)
    run_checked(ew_where, (cdiv(n, t),), lambda out: (c, x, y, out, t, row), expected, d)


@ct.kernel
def ew_where_scalars(c, out, A: ct.Constant, B: ct.Constant, T: ct.Constant[int]):
    b = ct.bid(0)
    cond = ct.load(c, index=(b,), shape=(T,))
    ct.store(out, index=(b,), tile=ct.where(cond > 0, A, B))


def test_where_two_constants(rng=np.random.default_rng(5)):
    c = gen(rng, 20, np.int32)
    out = np.full(20, np.nan, np.float32)
    ct.launch(None, (3,), ew_where_scalars, (c, out, 1, 2.5, 8))
    check(np.where(c > 0, 1, 2.5).astype(np.float32), out)


# ============================================================================ astype / bitcast

def ref_astype(x, dst):
    """The documented conversion rules, element by element on Python values."""
    src, dst = x.dtype, np.dtype(dst)
    if dst == BOOL:
        return as_cmp(x) != 0
    if is_float(dst):
        return x.astype(dst)
    out = np.empty(x.shape, dst)
    info = np.iinfo(dst)
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    for i in range(x.size):
        v = flat_in[i]
        if is_float(src):
            f = float(v)
            if math.isnan(f):
                r = 0
            elif math.isinf(f):
                r = info.max if f > 0 else info.min
            else:
                r = min(max(math.trunc(f), info.min), info.max)  # truncate, saturate
        else:
            r = wrap(int(v), dst)  # integers wrap
        flat_out[i] = r
    return out


@ct.kernel
def ew_astype(x, out, DT: ct.Constant, METHOD: ct.Constant[bool], TM: ct.Constant[int], TN: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    a = ct.load(x, index=(bx, by), shape=(TM, TN))
    if METHOD:
        r = a.astype(DT)
    else:
        r = ct.astype(a, DT)
    ct.store(out, index=(bx, by), tile=r)


@pytest.mark.parametrize("dst", ALL, ids=str)
@given(src=st.sampled_from(ALL), method=st.booleans(), m=st.integers(1, 20), n=st.integers(1, 20), tm=pow2,
       tn=pow2, seed=seeds)
@few
def test_astype(dst, src, method, m, n, tm, tn, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, (m, n), src, special=True)
    if is_float(src) and not is_float(dst) and dst != BOOL:
        info = np.iinfo(dst)
        edges = np.array([info.min, info.max, info.min - 1.0, info.max + 1.0, 2.0 * info.max, -0.7, 0.7,
                          -1.5, 255.9, np.nan, np.inf, -np.inf])
        k = min(edges.size, x.size)
        x.reshape(-1)[:k] = edges[:k].astype(src)
    expected = ref_astype(x, dst)
    # also check the conversion through the np dtype, the ct dtype and the dtype name
    dt_arg = [sd(dst), dst.type if dst != BF16 else sd(dst), sd(dst).name][seed % 3]
    run_checked(ew_astype, (cdiv(m, tm), cdiv(n, tn)), lambda out: (x, out, dt_arg, method, tm, tn),
                expected, dst, what=f"{src}->{dst}")


SAME_WIDTH = [(a, b) for a in INTS + FLOATS for b in INTS + FLOATS if a.itemsize == b.itemsize]


@ct.kernel
def ew_bitcast(x, out, DT: ct.Constant, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(out, index=(b,), tile=ct.bitcast(ct.load(x, index=(b,), shape=(T,)), DT))


@prop
@given(pair=st.sampled_from(SAME_WIDTH), n=st.integers(1, 40), t=pow2, seed=seeds)
def test_bitcast(pair, n, t, seed):
    src, dst = pair
    rng = np.random.default_rng(seed)
    x = gen(rng, n, src, special=True)
    expected = x.view(dst)
    uint = np.dtype(f"u{src.itemsize}")
    out = np.zeros(n, dst)
    for fill in (0, 0x5A):
        out = np.full(n, fill, dtype=uint).view(dst)
        ct.launch(None, (cdiv(n, t),), ew_bitcast, (x, out, sd(dst), t))
        np.testing.assert_array_equal(out.view(uint), expected.view(uint))


def test_bitcast_width_mismatch_is_a_type_error():
    with pytest.raises(ct.TileTypeError, match="bit width"):
        ct.launch(None, (1,), ew_bitcast, (np.zeros(8, np.int32), np.zeros(8, np.int16), ct.int16, 8))


# ============================================================================ promotion tables

@ct.kernel
def ew_two(x, y, out, OP: ct.Constant[tuple]):
    a = ct.load(x, index=(0,), shape=(8,))
    b = ct.load(y, index=(0,), shape=(8,))
    ct.store(out, index=(0,), tile=BIN_ALL[OP](a, b))


@pytest.mark.parametrize("da", ALL, ids=str)
@pytest.mark.parametrize("db", ALL, ids=str)
def test_tile_tile_promotion_matrix(da, db):
    rng = np.random.default_rng(abs(hash((str(da), str(db)))) % 2**32)
    x, y = gen(rng, 8, da), gen(rng, 8, db)
    name = "add" if not (da == BOOL and db == BOOL) else "bitwise_or"
    rd = binary_result_dtype(name, da, db)
    assert ref_promote(da, db) == ref_promote(db, da)  # the result type is symmetric
    if rd is None:  # signed with unsigned, float16 with bfloat16: an explicit cast is needed
        with pytest.raises(ct.TileTypeError, match="Implicit promotion"):
            ct.launch(None, (1,), ew_two, (x, y, np.zeros(8, np.float64), ("op", name)))
        return
    expected, _ = binary_reference(name, x, y)
    out = np.zeros(8, rd)
    ct.launch(None, (1,), ew_two, (x, y, out, ("op", "add" if name == "add" else "bitwise_or")))
    check(expected, out)


def test_wider_int_wins_and_int_float_gives_float():
    for a, b, r in [(np.int16, np.int32, np.int32), (np.int32, np.float16, np.float16),
                    (np.uint8, np.uint32, np.uint32), (np.int64, np.float16, np.float16),
                    (np.bool_, np.uint16, np.uint16), (np.float32, np.float64, np.float64), (BF16, np.float32, np.float32)]:
        x, y = np.ones(8, a), np.ones(8, b)
        out = np.zeros(8, r)
        ct.launch(None, (1,), ew_two, (x, y, out, ("op", "add")))
        check(np.full(8, 2).astype(r), out)


def test_int_truediv_gives_float():
    x, y = np.arange(1, 9, dtype=np.int32), np.full(8, 4, np.int32)
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), ew_two, (x, y, out, ("op", "truediv")))
    check((x / 4).astype(np.float32), out)
    x64 = x.astype(np.int64)  # int64 / int64 is float32 too (cuTile Python's default float type)
    out64 = np.zeros(8, np.float32)
    ct.launch(None, (1,), ew_two, (x64, y.astype(np.int64), out64, ("op", "truediv")))
    check((x64 / 4).astype(np.float32), out64)


def test_float_operands_reject_bitwise():
    x = np.ones(8, np.float32)
    with pytest.raises(ct.TileTypeError, match="integer"):
        ct.launch(None, (1,), ew_two, (x, x, np.zeros(8, np.float32), ("op", "bitwise_and")))


# ============================================================================ shape ops

def s_reshape(t, u, args, bid): return ct.reshape(t, args[0])
def s_reshape_m(t, u, args, bid): return t.reshape(args[0])
def s_permute(t, u, args, bid): return ct.permute(t, args[0])
def s_permute_m(t, u, args, bid): return t.permute(args[0])
def s_transpose(t, u, args, bid): return ct.transpose(t, args[0], args[1])
def s_transpose2(t, u, args, bid): return ct.transpose(t)
def s_T(t, u, args, bid): return t.T
def s_broadcast(t, u, args, bid): return ct.broadcast_to(t, args[0])
def s_expand(t, u, args, bid): return ct.expand_dims(t, args[0])
def s_none_front(t, u, args, bid): return t[None, ...]
def s_none_back(t, u, args, bid): return t[..., None]
def s_none_mid(t, u, args, bid): return t[:, None]
def s_cat(t, u, args, bid): return ct.cat((t, u), args[0])
def s_extract(t, u, args, bid): return ct.extract(t, args[0], args[1])
def s_extract_bid(t, u, args, bid): return ct.extract(t, (bid % args[2],) + args[0][1:], args[1])
def s_insert(t, u, args, bid): return ct.insert(t, args[0], u)
def s_insert_bid(t, u, args, bid): return ct.insert(t, (bid % args[1],) + args[0][1:], u)
def s_item(t, u, args, bid): return t.item()
def s_item_fn(t, u, args, bid): return ct.item(t)


SHAPE_FNS = {f.__name__[2:]: f for f in (
    s_reshape, s_reshape_m, s_permute, s_permute_m, s_transpose, s_transpose2, s_T, s_broadcast, s_expand,
    s_none_front, s_none_back, s_none_mid, s_cat, s_extract, s_extract_bid, s_insert, s_insert_bid, s_item,
    s_item_fn)}


@ct.kernel
def shape_fn(x, y, out, FN: ct.Constant[str], ARGS: ct.Constant, S: ct.Constant[tuple],
             SY: ct.Constant[tuple], NS: ct.Constant[int], NY: ct.Constant[int], NR: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(1, NS)).reshape(S)
    u = ct.load(y, index=(bid, 0), shape=(1, NY)).reshape(SY)
    r = SHAPE_FNS[FN](t, u, ARGS, bid)
    ct.store(out, index=(bid, 0), tile=ct.reshape(r, (1, NR)))


def run_shape(fn, args, x, y, expected):
    """x: (G, *S), y: (G, *SY), expected: (G, *R); runs one block per leading index."""
    g = x.shape[0]
    S, SY, R = x.shape[1:], y.shape[1:], expected.shape[1:]
    ns, ny, nr = math.prod(S), math.prod(SY), math.prod(R)
    xf, yf = x.reshape(g, ns), y.reshape(g, ny)
    out = run_checked(shape_fn, (g,), lambda out: (xf, yf, out, fn, args, S, SY, ns, ny, nr),
                      expected.reshape(g, nr), expected.dtype, what=f"{fn} {args}")
    return out


tile_shapes = st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=4)


def factor_shape(draw, total):
    """A random power-of-two shape with ``total`` elements."""
    dims = []
    while total > 1:
        d = draw(st.sampled_from([k for k in (2, 4, 8, 16) if k <= total] + [1]))
        if d == 1 and len(dims) > 3:
            d = total
        dims.append(d)
        total //= max(d, 1) if d > 1 else 1
    if draw(st.booleans()):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    return tuple(dims) if dims else (1,)


@prop
@given(data=st.data(), S=tile_shapes, d=st.sampled_from(ALL), g=st.integers(1, 4), seed=seeds)
def test_reshape_permute_transpose(data, S, d, g, seed):
    S = tuple(S)
    rng = np.random.default_rng(seed)
    x = gen(rng, (g,) + S, d, special=True)
    y = gen(rng, (g, 1), d)
    kind = data.draw(st.sampled_from(["reshape", "reshape_m", "permute", "permute_m", "transpose", "T"]))
    if kind.startswith("reshape"):
        R = factor_shape(data.draw, math.prod(S))
        assert math.prod(R) == math.prod(S)
        run_shape(kind, (R,), x, y, x.reshape((g,) + R))
    elif kind.startswith("permute"):
        axes = tuple(data.draw(st.permutations(range(len(S)))))
        run_shape(kind, (axes,), x, y, x.transpose((0,) + tuple(a + 1 for a in axes)))
    elif kind == "transpose" and len(S) >= 2:
        a0 = data.draw(st.integers(-len(S), len(S) - 1))
        a1 = data.draw(st.integers(-len(S), len(S) - 1))
        run_shape("transpose", (a0, a1), x, y, np.swapaxes(x, 1 + a0 % len(S), 1 + a1 % len(S)))
    elif len(S) == 2:
        run_shape(data.draw(st.sampled_from(["T", "transpose2"])), (), x, y, np.swapaxes(x, 1, 2))


@prop
@given(data=st.data(), S=tile_shapes, d=st.sampled_from(ALL), g=st.integers(1, 3), seed=seeds)
def test_broadcast_expand_none_index(data, S, d, g, seed):
    S = tuple(S)
    rng = np.random.default_rng(seed)
    x = gen(rng, (g,) + S, d)
    y = gen(rng, (g, 1), d)
    kind = data.draw(st.sampled_from(["broadcast", "broadcast_rank", "expand", "none_front", "none_back",
                                      "none_mid"]))
    if kind.startswith("broadcast"):
        target = tuple(data.draw(st.sampled_from([1, 2, 4])) if n == 1 else n for n in S)
        if kind == "broadcast_rank":
            target = tuple(data.draw(st.lists(st.sampled_from([1, 2, 4]), min_size=1, max_size=2))) + target
        exp = np.broadcast_to(x.reshape((g,) + (1,) * (len(target) - len(S)) + S), (g,) + target)
        run_shape("broadcast", (target,), x, y, np.ascontiguousarray(exp))
    elif kind == "expand":
        axis = data.draw(st.integers(-len(S) - 1, len(S)))
        run_shape("expand", (axis,), x, y, np.expand_dims(x, 1 + axis % (len(S) + 1)))
    else:
        key = {"none_front": (slice(None), None, Ellipsis), "none_back": (Ellipsis, None),
               "none_mid": (slice(None), slice(None), None)}[kind]
        run_shape(kind, (), x, y, x[key])


@prop
@given(data=st.data(), S=tile_shapes, d=st.sampled_from(ALL), g=st.integers(1, 3), seed=seeds)
def test_cat(data, S, d, g, seed):
    S = tuple(S)
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(S), len(S) - 1))
    x, y = gen(rng, (g,) + S, d), gen(rng, (g,) + S, d)
    run_shape("cat", (axis,), x, y, np.concatenate([x, y], axis=1 + axis % len(S)))


@prop
@given(data=st.data(), S=tile_shapes, d=st.sampled_from(ALL), g=st.integers(1, 5), seed=seeds)
def test_extract_insert_item(data, S, d, g, seed):
    S = tuple(S)
    rng = np.random.default_rng(seed)
    sub = tuple(data.draw(st.sampled_from([k for k in (1, 2, 4, 8) if k <= n])) for n in S)
    counts = tuple(n // s for n, s in zip(S, sub))
    index = tuple(data.draw(st.integers(0, c - 1)) for c in counts)
    x = gen(rng, (g,) + S, d)
    v = gen(rng, (g,) + sub, d)
    sl = tuple(slice(i * s, (i + 1) * s) for i, s in zip(index, sub))
    kind = data.draw(st.sampled_from(["extract", "extract_bid", "insert", "insert_bid", "item"]))
    if kind == "extract":
        run_shape("extract", (index, sub), x, v, x[(slice(None),) + sl])
    elif kind == "extract_bid":
        # the block index along axis 0 is bid % counts[0], the other entries are constants
        exp = np.stack([x[b][(slice((b % counts[0]) * sub[0], (b % counts[0] + 1) * sub[0]),) + sl[1:]]
                        for b in range(g)])
        run_shape("extract_bid", (index, sub, counts[0]), x, v, exp)
    elif kind == "insert":
        exp = x.copy()
        exp[(slice(None),) + sl] = v
        run_shape("insert", (index,), x, v, exp)
    elif kind == "insert_bid":
        exp = x.copy()
        for b in range(g):
            i0 = b % counts[0]
            exp[(b, slice(i0 * sub[0], (i0 + 1) * sub[0])) + sl[1:]] = v[b]
        run_shape("insert_bid", (index, counts[0]), x, v, exp)
    else:
        one = gen(rng, (g,) + (1,) * len(S), d)
        run_shape(data.draw(st.sampled_from(["item", "item_fn"])), (), one, v, one.reshape(g, 1))


def test_shape_errors():
    x = np.zeros((1, 8), np.float32)
    y = np.zeros((1, 8), np.float32)
    with pytest.raises(ct.TileTypeError):  # element counts differ
        ct.launch(None, (1,), shape_fn, (x, y, np.zeros((1, 8), np.float32), "reshape", ((4, 4),), (8,), (8,), 8, 8, 8))
    with pytest.raises(ct.TileTypeError):  # not a permutation
        ct.launch(None, (1,), shape_fn, (x, y, np.zeros((1, 8), np.float32), "permute", ((0, 0),), (2, 4), (8,), 8, 8, 8))
    with pytest.raises(ct.TileTypeError):  # cat result not a power of two
        ct.launch(None, (1,), shape_fn, (x, np.zeros((1, 4), np.float32), np.zeros((1, 12), np.float32), "cat", (0,),
                                         (8,), (4,), 8, 4, 12))
    with pytest.raises(ct.TileTypeError):  # item of a multi-element tile
        ct.launch(None, (1,), shape_fn, (x, y, np.zeros((1, 1), np.float32), "item", (), (8,), (8,), 8, 8, 1))
    with pytest.raises(ct.TileTypeError):  # tile dims must be powers of two
        ct.launch(None, (1,), shape_fn, (x, y, np.zeros((1, 8), np.float32), "reshape", ((3, 3),), (8,), (8,), 8, 8, 8))


# ============================================================================ reductions

def r_sum(t, args): return ct.sum(t, axis=args[0], keepdims=args[1])
def r_prod(t, args): return ct.prod(t, axis=args[0], keepdims=args[1])
def r_max(t, args): return ct.max(t, axis=args[0], keepdims=args[1], propagate_nan=True)
def r_min(t, args): return ct.min(t, axis=args[0], keepdims=args[1], propagate_nan=True)
def r_nanmax(t, args): return ct.max(t, axis=args[0], keepdims=args[1])  # NaN ignored by default
def r_nanmin(t, args): return ct.min(t, axis=args[0], keepdims=args[1])
def r_argmax(t, args): return ct.argmax(t, axis=args[0], keepdims=args[1])
def r_argmin(t, args): return ct.argmin(t, axis=args[0], keepdims=args[1])
def r_sum_m(t, args): return t.sum(args[0], keepdims=args[1])
def r_max_m(t, args): return t.max(args[0], keepdims=args[1])  # NaN ignored by default
def r_min_m(t, args): return t.min(args[0], keepdims=args[1])


RED_FNS = {f.__name__[2:]: f for f in (r_sum, r_prod, r_max, r_min, r_nanmax, r_nanmin, r_argmax, r_argmin,
                                       r_sum_m, r_max_m, r_min_m)}


@ct.kernel
def reduce_fn(x, out, FN: ct.Constant[str], ARGS: ct.Constant, S: ct.Constant[tuple], NS: ct.Constant[int],
              NR: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(1, NS)).reshape(S)
    r = RED_FNS[FN](t, ARGS)
    ct.store(out, index=(bid, 0), tile=ct.reshape(r, (1, NR)))


def np_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        return tuple(sorted(a % ndim for a in axis))
    return (axis % ndim,)


def ref_arg(x, axes, keepdims, fn):
    """Per block: index of the first extreme over the flattened reduced axes (C order)."""
    g, S = x.shape[0], x.shape[1:]
    rest = [a for a in range(len(S)) if a not in axes]
    moved = x.transpose([0] + [1 + a for a in rest] + [1 + a for a in axes])
    flat = moved.reshape(moved.shape[:1 + len(rest)] + (-1,))
    r = fn(as_cmp(flat), axis=-1).astype(np.int32)
    if keepdims:
        r = r.reshape((g,) + tuple(1 if a in axes else n for a, n in enumerate(S)))
    return r


@pytest.mark.parametrize("fn", sorted(RED_FNS))
@given(data=st.data(), S=tile_shapes, d=st.sampled_from(ALL), g=st.integers(1, 4), keepdims=st.booleans(),
       seed=seeds)
@few
def test_builtin_reductions(fn, data, S, d, g, keepdims, seed):
    S = tuple(S)
    rng = np.random.default_rng(seed)
    name = fn.replace("_m", "")
    axis = data.draw(st.one_of(st.none(), st.integers(-len(S), len(S) - 1),
                               st.lists(st.integers(0, len(S) - 1), min_size=1, max_size=len(S), unique=True)
                               .map(tuple)) if not name.startswith("arg") else  # one axis or all
                     st.one_of(st.none(), st.integers(-len(S), len(S) - 1)))
    axes = np_axes(axis, len(S))
    npax = tuple(1 + a for a in axes)
    if name in ("sum", "prod") and is_float(d):
        x = gen(rng, (g,) + S, d, lo=0.5, hi=1.5) if name == "prod" else gen(rng, (g,) + S, d, lo=-50, hi=50)
    elif name in ("argmax", "argmin"):
        x = gen(rng, (g,) + S, d, lo=-3, hi=3) if d != BOOL else gen(rng, (g,) + S, d)  # ties
    else:
        x = gen(rng, (g,) + S, d, special=True)
    kw = dict(axis=npax, keepdims=keepdims)
    rtol = atol = 0
    if name in ("sum", "prod"):
        od = np.dtype(np.int32) if d == BOOL else d
        if od.kind in "iu":
            fnp = np.sum if name == "sum" else np.prod
            exp = fnp(x.astype(od), dtype=od, **kw)  # modular: exact in any order
        else:
            exp = (np.sum if name == "sum" else np.prod)(x.astype(np.float64), **kw).astype(od)
            n = math.prod(S[a] for a in axes)
            rtol = (n + 2) * eps(od)
            atol = (n + 2) * eps(od) * (np.abs(x.astype(np.float64)).sum(axis=npax).max() if name == "sum" else 1)
    elif name in ("max", "min", "nanmax", "nanmin"):
        od = np.dtype(np.int32) if d == BOOL else d  # bools reduce as int32 (cuTile Python)
        if fn in ("max_m", "min_m"):
            name = "nan" + name
        npfn = {"max": np.max, "min": np.min, "nanmax": np.nanmax, "nanmin": np.nanmin}[name]
        if not is_float(d):
            npfn = np.max if "max" in name else np.min
        exp = npfn(as_cmp(x).astype(od) if d == BOOL else as_cmp(x), **kw).astype(od)
    else:
        od = np.dtype(np.int32)
        exp = ref_arg(x, axes, keepdims, np.argmax if name == "argmax" else np.argmin)
    nr = math.prod(exp.shape[1:])
    run_checked(reduce_fn, (g,), lambda out: (x.reshape(g, -1), out, fn, (axis, keepdims), S, math.prod(S), nr),
                exp.reshape(g, nr), od, rtol=rtol, atol=atol, what=f"{fn} axis={axis} {d}")


# ---------------------------------------------------------------------------- custom reduce / scan

def comb_max(a, b):
    return ct.maximum(a, b)


def comb_argmax(av, ai, bv, bi):
    take_b = (bv > av) | ((bv == av) & (bi < ai))
    return ct.where(take_b, bv, av), ct.where(take_b, bi, ai)


def comb_sum_count(a0, a1, b0, b1):
    return a0 + b0, a1 + b1


def comb_max_if(a, b):
    # control flow inside a combiner: cuTile rejects it (TileSyntaxError), so does safetile
    if a > b:
        return a
    else:
        return b


def c_reduce_ifdef(t, args, bid):
    return ct.reduce(t, args[0], comb_max_if, -(2**31), keepdims=args[1])


def c_scan_ifdef(t, args, bid):
    return ct.scan(t, args[0], comb_max_if, -(2**31), reverse=args[1])


def c_reduce_lambda(t, args, bid):
    return ct.reduce(t, args[0], lambda a, b: a + b, 0, keepdims=args[1])


def c_reduce_def(t, args, bid):
    return ct.reduce(t, args[0], comb_max, -(2**31), keepdims=args[1])


def c_reduce_mod(t, args, bid):
    # the combining function closes over a run-time scalar that differs per block:
    # addition modulo m is a valid reduction (identity 0) for inputs in [0, m)
    m = bid + 5
    return ct.reduce(t % m, args[0], lambda a, b: (a + b) % m, 0, keepdims=args[1])


def c_reduce_argmax(t, args, bid):
    idx = ct.arange(t.shape[0], dtype=ct.int32)
    v, i = ct.reduce((t, idx), 0, comb_argmax, (-(2**31), 0))
    return i * 1000 + v


def c_reduce_tuple(t, args, bid):
    s, c = ct.reduce((t, ct.ones(t.shape, dtype=ct.int32)), args[0], comb_sum_count, (0, 0), keepdims=args[1])
    return s * 64 + c


def c_scan_lambda(t, args, bid):
    return ct.scan(t, args[0], lambda a, b: a + b, 0, reverse=args[1])


def c_scan_def(t, args, bid):
    return ct.scan(t, args[0], comb_max, -(2**31), reverse=args[1])


def c_scan_tuple(t, args, bid):
    s, c = ct.scan((t, ct.ones(t.shape, dtype=ct.int32)), args[0], comb_sum_count, (0, 0), reverse=args[1])
    return s * 64 + c


def c_cumsum(t, args, bid):
    return ct.cumsum(t, axis=args[0], reverse=args[1])


def c_cumprod(t, args, bid):
    return ct.cumprod(t, args[0], reverse=args[1])


def c_cumsum_default(t, args, bid):
    return ct.cumsum(t)


CUSTOM_FNS = {f.__name__[2:]: f for f in (c_reduce_ifdef, c_scan_ifdef, c_reduce_lambda, c_reduce_def, c_reduce_mod, c_reduce_argmax,
                                          c_reduce_tuple, c_scan_lambda, c_scan_def, c_scan_tuple, c_cumsum,
                                          c_cumprod, c_cumsum_default)}


@ct.kernel
def custom_fn(x, out, FN: ct.Constant[str], ARGS: ct.Constant, S: ct.Constant[tuple], NS: ct.Constant[int],
              NR: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(1, NS)).reshape(S)
    r = CUSTOM_FNS[FN](t, ARGS, bid)
    ct.store(out, index=(bid, 0), tile=ct.reshape(r, (1, NR)))


def run_custom(fn, args, x, expected, **kw):
    g, S = x.shape[0], x.shape[1:]
    nr = math.prod(expected.shape[1:])
    run_checked(custom_fn, (g,), lambda out: (x.reshape(g, -1), out, fn, args, S, math.prod(S), nr),
                expected.reshape(g, nr), expected.dtype, what=f"{fn} {args}", **kw)


@prop
@given(data=st.data(), S=tile_shapes, g=st.integers(1, 9), keepdims=st.booleans(), seed=seeds)
def test_custom_reduce(data, S, g, keepdims, seed):
    S = tuple(S)
    rng = np.random.default_rng(seed)
    x = gen(rng, (g,) + S, np.int32, lo=-40, hi=40)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(S), len(S) - 1),
                               st.lists(st.integers(0, len(S) - 1), min_size=1, max_size=len(S), unique=True)
                               .map(tuple)))
    npax = tuple(1 + a for a in np_axes(axis, len(S)))
    kind = data.draw(st.sampled_from(["reduce_lambda", "reduce_def", "reduce_mod", "reduce_tuple"]))
    if kind == "reduce_lambda":
        exp = x.sum(axis=npax, keepdims=keepdims, dtype=np.int32)
    elif kind == "reduce_def":
        exp = x.max(axis=npax, keepdims=keepdims)
    elif kind == "reduce_mod":
        m = (np.arange(g) + 5).reshape((g,) + (1,) * len(S))
        exp = np.mod(np.mod(x, m).sum(axis=npax, keepdims=True), m)
        exp = exp if keepdims else exp.reshape(np.max(x, axis=npax).shape)
    else:
        exp = x.sum(axis=npax, keepdims=keepdims, dtype=np.int32) * 64 + \
            np.ones_like(x).sum(axis=npax, keepdims=keepdims, dtype=np.int32)
    run_custom(kind, (axis, keepdims), x, exp.astype(np.int32))


@pytest.mark.parametrize("kind", ["reduce_ifdef", "scan_ifdef"])
def test_branch_in_a_combiner_is_rejected(kind):
    x = np.zeros((1, 4), np.int32)
    with pytest.raises(ct.TileSyntaxError, match="Branching inside (reduction|scan) body is not supported"):
        ct.launch(None, (1,), custom_fn, (x, np.zeros((1, 4), np.int32), kind, (0, False) if kind == "scan_ifdef"
                                          else (None, False), (4,), 4, 4 if kind == "scan_ifdef" else 1))


@prop
@given(n=st.sampled_from([1, 2, 4, 8, 16, 32]), g=st.integers(1, 6), seed=seeds)
def test_custom_reduce_argmax_pairs(n, g, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, (g, n), np.int32, lo=-5, hi=5)  # many ties: the first index must win
    exp = x.argmax(axis=1).astype(np.int32) * 1000 + x.max(axis=1)
    run_custom("reduce_argmax", (), x, exp.reshape(g, 1))


def np_scan(x, axis, reverse, fn):
    if reverse:
        x = np.flip(x, axis)
    r = fn(x, axis=axis)
    return np.flip(r, axis) if reverse else r


@prop
@given(data=st.data(), S=tile_shapes, g=st.integers(1, 5), reverse=st.booleans(), seed=seeds)
def test_scans(data, S, g, reverse, seed):
    S = tuple(S)
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(S), len(S) - 1))
    ax = 1 + axis % len(S)
    kind = data.draw(st.sampled_from(["scan_lambda", "scan_def", "scan_tuple", "cumsum", "cumprod",
                                      "cumsum_default"]))
    d = data.draw(st.sampled_from(INTS + FLOATS + [BOOL])) if kind.startswith("cum") else np.dtype(np.int32)
    if kind == "cumprod" and is_float(d):
        x = gen(rng, (g,) + S, d, lo=0.5, hi=1.5)
    elif is_float(d):
        x = gen(rng, (g,) + S, d, lo=-20, hi=20)
    else:
        x = gen(rng, (g,) + S, d, lo=-40 if d.kind != "u" else 0, hi=40) if d != BOOL else gen(rng, (g,) + S, d)
    if kind == "cumsum_default":
        axis, reverse, ax = 0, False, 1
    rtol = atol = 0
    od = np.dtype(np.int32) if d == BOOL else d
    if kind in ("scan_lambda", "cumsum", "cumsum_default"):
        if is_float(od):
            exp = np_scan(x.astype(np.float64), ax, reverse, np.cumsum).astype(od)
            rtol, atol = 64 * eps(od), 64 * eps(od) * 20 * S[ax - 1]
        else:
            exp = np_scan(x.astype(od), ax, reverse, lambda v, axis: np.cumsum(v, axis=axis, dtype=od))
    elif kind == "cumprod":
        if is_float(od):
            exp = np_scan(x.astype(np.float64), ax, reverse, np.cumprod).astype(od)
            rtol, atol = 64 * eps(od), 64 * eps(od)
        else:
            exp = np_scan(x.astype(od), ax, reverse, lambda v, axis: np.cumprod(v, axis=axis, dtype=od))
    elif kind in ("scan_def", "scan_ifdef"):
        exp = np_scan(x, ax, reverse, np.maximum.accumulate)
    else:
        exp = np_scan(x, ax, reverse, np.cumsum).astype(np.int32) * 64 + \
            np_scan(np.ones_like(x), ax, reverse, np.cumsum).astype(np.int32)
    run_custom(kind, (axis, reverse), x, exp.astype(od), rtol=rtol, atol=atol)


def test_reduction_errors():
    x = np.zeros((1, 8), np.int32)
    with pytest.raises(ct.TileTypeError):  # axis out of range
        ct.launch(None, (1,), reduce_fn, (x, np.zeros((1, 1), np.int32), "sum", (3, False), (8,), 8, 1))
    with pytest.raises(ct.TileTypeError):  # repeated axis
        ct.launch(None, (1,), reduce_fn, (x, np.zeros((1, 1), np.int32), "sum", ((0, 0), False), (2, 4), 8, 1))


# ============================================================================ tile-space load / store

PADS = {
    ct.PaddingMode.ZERO: 0.0, ct.PaddingMode.NEG_ZERO: -0.0, ct.PaddingMode.NAN: np.nan,
    ct.PaddingMode.POS_INF: np.inf, ct.PaddingMode.NEG_INF: -np.inf, ct.PaddingMode.UNDETERMINED: None,
}


def order_perm(order, ndim):
    if order == "C":
        return tuple(range(ndim))
    if order == "F":
        return tuple(reversed(range(ndim)))
    return order


@ct.kernel
def load_tiles(a, out, SHAPE: ct.Constant[tuple], ORDER: ct.Constant, PAD: ct.Constant):
    idx = (ct.bid(0), ct.bid(1), ct.bid(2))[:len(SHAPE)]
    t = ct.load(a, index=idx, shape=SHAPE, order=ORDER, padding_mode=PAD)
    ct.store(out, index=idx, tile=t)


@ct.kernel
def store_tiles(src, out, SHAPE: ct.Constant[tuple], ORDER: ct.Constant):
    idx = (ct.bid(0), ct.bid(1), ct.bid(2))[:len(SHAPE)]
    t = ct.load(src, index=idx, shape=SHAPE)
    ct.store(out, index=idx, tile=t, order=ORDER)


@st.composite
def layout(draw, max_rank=3):
    rank = draw(st.integers(1, max_rank))
    dims = tuple(draw(st.integers(1, 20 if rank < 3 else 9)) for _ in range(rank))
    tile = tuple(draw(st.sampled_from([1, 2, 4, 8])) for _ in range(rank))
    order = draw(st.sampled_from(["C", "F", tuple(draw(st.permutations(range(rank))))]))
    return dims, tile, order


@pytest.mark.parametrize("pad", list(PADS), ids=lambda p: p.name)
@given(lay=layout(), data=st.data(), strided=st.booleans(), seed=seeds)
@few
def test_load_padding_order_partial_tiles(pad, lay, data, strided, seed):
    dims, tile, order = lay
    float_only = pad not in (ct.PaddingMode.ZERO, ct.PaddingMode.UNDETERMINED)
    d = data.draw(st.sampled_from(FLOATS if float_only else ALL))
    rng = np.random.default_rng(seed)
    base = gen(rng, tuple(n * (2 if strided else 1) for n in dims), d)
    a = base[tuple(slice(None, None, 2) if strided else slice(None) for _ in dims)]  # maybe non-contiguous
    perm = order_perm(order, len(dims))
    view = a.transpose(perm)
    grid_t = tuple(cdiv(n, s) for n, s in zip(view.shape, tile))
    full = tuple(g * s for g, s in zip(grid_t, tile))
    known = np.zeros(full, bool)
    known[tuple(slice(0, n) for n in view.shape)] = True
    padv = PADS[pad]
    exp = np.zeros(full, d) if padv is None else np.full(full, padv).astype(d)
    exp[tuple(slice(0, n) for n in view.shape)] = view
    grid = grid_t + (1,) * (3 - len(grid_t))
    if padv is not None:
        run_checked(load_tiles, grid, lambda out: (a, out, tile, order, pad), exp, d, what=f"{order} {pad}")
    else:  # UNDETERMINED: only in-bounds elements are specified
        out = np.full(full, 1).astype(d)
        ct.launch(None, grid, load_tiles, (a, out, tile, order, pad))
        check(exp[known], out[known])


@prop
@given(lay=layout(), d=st.sampled_from(ALL), seed=seeds)
def test_store_order_partial_tiles_drop_out_of_bounds(lay, d, seed):
    dims, tile, order = lay
    rng = np.random.default_rng(seed)
    perm = order_perm(order, len(dims))
    vshape = tuple(dims[p] for p in perm)  # the permuted (view) shape the tiles cover
    grid_t = tuple(cdiv(n, s) for n, s in zip(vshape, tile))
    src = gen(rng, tuple(g * s for g, s in zip(grid_t, tile)), d)
    # the output is a window of a bigger poisoned buffer: nothing outside it may change
    fills = poison_fills(src, d)
    for fill in fills:
        buf = np.full(tuple(n + 3 for n in dims), fill).astype(d)
        out = buf[tuple(slice(1, 1 + n) for n in dims)]
        ct.launch(None, grid_t + (1,) * (3 - len(grid_t)), store_tiles, (src, out, tile, order))
        exp_buf = np.full(buf.shape, fill).astype(d)
        exp_out = exp_buf[tuple(slice(1, 1 + n) for n in dims)]
        exp_out.transpose(perm)[...] = src[tuple(slice(0, n) for n in vshape)]
        check(exp_buf, buf)


@ct.kernel
def scalar_load_store(a, out, SCALE: ct.Constant):
    i, j = ct.bid(0), ct.bid(1)
    v = ct.load(a, index=(i, j), shape=())
    ct.static_assert(v.shape == ())
    ct.store(out, index=(i, j), tile=v * SCALE)


@ct.kernel
def scalar_store_constant(out, C: ct.Constant):
    ct.store(out, index=(ct.bid(0),), tile=C)


@prop
@given(m=st.integers(1, 9), n=st.integers(1, 9), d=st.sampled_from(INTS + FLOATS), seed=seeds)
def test_scalar_loads_and_stores(m, n, d, seed):
    rng = np.random.default_rng(seed)
    a = gen(rng, (m, n), d)
    exp = pyref(lambda v: v * 3, d, a) if d.kind in "iu" else (a.astype(np.float64) * 3).astype(d)
    run_checked(scalar_load_store, (m, n), lambda out: (a, out, 3), exp, d)
    run_checked(scalar_store_constant, (m,), lambda out: (out, 7), np.full(m, 7).astype(d), d)


@ct.kernel
def loop_over_num_tiles(a, out, TM: ct.Constant[int], TN: ct.Constant[int], ORDER: ct.Constant):
    # each block sums its row of tiles; the trip count comes from num_tiles
    acc = ct.zeros((TM, TN), dtype=ct.float64)
    for k in range(ct.num_tiles(a, axis=1, shape=(TM, TN), order=ORDER)):
        acc = acc + ct.load(a, index=(ct.bid(0), k), shape=(TM, TN), order=ORDER,
                            padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(ct.bid(0), 0), tile=acc)


@prop
@given(m=st.integers(1, 20), n=st.integers(1, 40), tm=small_pow2, tn=small_pow2, f=st.booleans(), seed=seeds)
def test_num_tiles_drives_loop(m, n, tm, tn, f, seed):
    rng = np.random.default_rng(seed)
    a = gen(rng, (m, n), np.float64)
    view = a.T if f else a
    vm, vn = view.shape
    exp = np.zeros((cdiv(vm, tm) * tm, tn))
    pad = np.zeros((cdiv(vm, tm) * tm, cdiv(vn, tn) * tn))
    pad[:vm, :vn] = view
    for k in range(cdiv(vn, tn)):
        exp += pad[:, k * tn:(k + 1) * tn]
    run_checked(loop_over_num_tiles, (cdiv(vm, tm),), lambda out: (a, out, tm, tn, "F" if f else "C"), exp,
                np.float64, rtol=1e-12, atol=1e-12)


def test_load_errors():
    a = np.zeros((8, 8), np.int32)
    with pytest.raises(ct.TileTypeError, match="float"):  # NaN padding for an int array
        ct.launch(None, (1, 1, 1), load_tiles, (a, a.copy(), (8, 8), "C", ct.PaddingMode.NAN))
    with pytest.raises(ct.TileTypeError):  # order is not a permutation
        ct.launch(None, (1, 1, 1), load_tiles, (a, a.copy(), (8, 8), (0, 0), ct.PaddingMode.ZERO))
    with pytest.raises(ct.TileTypeError):  # shape rank differs from the array rank
        ct.launch(None, (1, 1, 1), load_tiles, (a, a.copy(), (8,), "C", ct.PaddingMode.ZERO))
    with pytest.raises(ct.TileTypeError):  # not a power of two
        ct.launch(None, (1, 1, 1), load_tiles, (a, a.copy(), (8, 6), "C", ct.PaddingMode.ZERO))


# ============================================================================ tiled views

@ct.kernel
def view_copy(a, out, counts, TILE: ct.Constant[tuple], PAD: ct.Constant):
    v = a.tiled_view(TILE, padding_mode=PAD)
    w = out.tiled_view(TILE)
    idx = (ct.bid(0), ct.bid(1))
    w.store(idx, v.load(idx) * 2)
    ct.store(counts, index=(0,), tile=v.num_tiles(0))
    ct.store(counts, index=(1,), tile=v.num_tiles(1))


@prop
@given(m=st.integers(1, 30), n=st.integers(1, 30), tm=small_pow2, tn=small_pow2, d=st.sampled_from(INTS + FLOATS),
       seed=seeds)
def test_tiled_view_load_store_num_tiles(m, n, tm, tn, d, seed):
    rng = np.random.default_rng(seed)
    a = gen(rng, (m, n), d)
    gm, gn = cdiv(m, tm), cdiv(n, tn)
    exp = pyref(lambda v: 2 * v, d, a) if d.kind in "iu" else (a.astype(np.float64) * 2).astype(d)
    counts = np.full(2, -1, np.int32)
    run_checked(view_copy, (gm, gn), lambda out: (a, out, counts, (tm, tn), ct.PaddingMode.ZERO), exp, d)
    check(np.array([gm, gn], np.int32), counts)


@ct.kernel
def view_store_scalar(out, C: ct.Constant, T: ct.Constant[int]):
    out.tiled_view((T,)).store((ct.bid(0),), C)


def test_tiled_view_store_broadcasts_scalar():
    out = np.full(37, -1, np.int16)
    ct.launch(None, (cdiv(37, 8),), view_store_scalar, (out, 5, 8))
    check(np.full(37, 5, np.int16), out)


VIEW_ATOMICS = ("add", "max", "min", "and", "or", "xor")


@ct.kernel
def view_atomic(a, vals, KIND: ct.Constant[str], T: ct.Constant[int], K: ct.Constant[int]):
    b = ct.bid(0)
    v = ct.load(vals, index=(b,), shape=(T,))
    view = a.tiled_view((T,))
    idx = (b % K,)
    if KIND == "add":
        view.atomic_add(idx, v)
    elif KIND == "max":
        view.atomic_max(idx, v)
    elif KIND == "min":
        view.atomic_min(idx, v)
    elif KIND == "and":
        view.atomic_and(idx, v)
    elif KIND == "or":
        view.atomic_or(idx, v)
    else:
        view.atomic_xor(idx, v)


# cuTile's element types per atomic: 32/64-bit integers everywhere; floats for exchange and
# compare-and-swap (32/64-bit) and add (16/32/64-bit)
_I3264 = ("int32", "int64", "uint32", "uint64")
ATOMIC_DTYPES = {"xchg": _I3264 + ("float32", "float64"), "add": _I3264 + ("float16", "bfloat16", "float32", "float64"),
                 "max": _I3264, "min": _I3264, "and": _I3264, "or": _I3264, "xor": _I3264}
NP_RMW = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": np.bitwise_xor}


@prop
@given(kind=st.sampled_from(VIEW_ATOMICS), d=st.sampled_from(INTS + [np.dtype(np.float32), np.dtype(np.float64)]),
       n=st.integers(1, 40), t=small_pow2, blocks=st.integers(1, 12), seed=seeds)
def test_tiled_view_atomics(kind, d, n, t, blocks, seed):
    if d.name not in ATOMIC_DTYPES[kind]:
        d = np.dtype(np.int32)
    rng = np.random.default_rng(seed)
    k = cdiv(n, t)
    a = gen(rng, n, d, lo=-100 if is_float(d) else None, hi=100 if is_float(d) else None)
    vals = gen(rng, blocks * t, d, lo=-100 if is_float(d) else None, hi=100 if is_float(d) else None)
    exp = a.copy()
    for b in range(blocks):  # block order; out-of-bounds lanes of the edge tile are dropped
        for lane in range(t):
            i = (b % k) * t + lane
            if i < n:
                exp[i] = NP_RMW[kind](exp[i], vals[b * t + lane])
    ct.launch(None, (blocks,), view_atomic, (a, vals, kind, t, k))
    check(exp, a)


# ============================================================================ gather / scatter

@ct.kernel
def gather_1d(a, idx, m, out, T: ct.Constant[int], MASK: ct.Constant[bool], PADV: ct.Constant):
    b = ct.bid(0)
    i = ct.load(idx, index=(b,), shape=(T,))
    if MASK:
        keep = ct.load(m, index=(b,), shape=(T,))
        g = ct.gather(a, i, mask=keep, padding_value=PADV)
    else:
        g = ct.gather(a, i, padding_value=PADV)
    ct.store(out, index=(b,), tile=g)


@prop
@given(n=st.integers(1, 50), t=pow2, blocks=st.integers(1, 6), d=st.sampled_from(ALL), mask=st.booleans(),
       idx_dtype=st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint16]), seed=seeds)
def test_gather_1d(n, t, blocks, d, mask, idx_dtype, seed):
    rng = np.random.default_rng(seed)
    a = gen(rng, n, d, special=True)
    lo = 0 if np.dtype(idx_dtype).kind == "u" else max(-n - 3, np.iinfo(idx_dtype).min)
    idx = rng.integers(lo, min(n + 5, np.iinfo(idx_dtype).max), size=blocks * t, endpoint=True).astype(idx_dtype)
    m = gen(rng, blocks * t, BOOL)
    padv = True if d == BOOL else (int(rng.integers(-5, 100)) if not is_float(d) else float(rng.uniform(-9, 9)))
    if not is_float(d) and d.kind == "u":
        padv = abs(padv)
    ok = (idx.astype(np.int64) >= 0) & (idx.astype(np.int64) < n) & (m if mask else True)
    exp = np.where(ok, a[np.clip(idx.astype(np.int64), 0, n - 1)], np.array(padv).astype(d)).astype(d)
    run_checked(gather_1d, (blocks,), lambda out: (a, idx, m, out, t, mask, padv), exp, d,
                what=f"mask={mask} pad={padv}")


@ct.kernel
def gather_2d(a, rows, cols, out, TR: ct.Constant[int], TC: ct.Constant[int]):
    b = ct.bid(0)
    r = ct.load(rows, index=(b, 0), shape=(TR, 1))      # (TR, 1)
    c = ct.load(cols, index=(b,), shape=(TC,))          # (TC,) aligns to (1, TC)
    ct.store(out, index=(b, 0), tile=ct.gather(a, (r, c)))


@prop
@given(m=st.integers(1, 12), n=st.integers(1, 12), tr=small_pow2, tc=small_pow2, blocks=st.integers(1, 4),
       d=st.sampled_from(ALL), seed=seeds)
def test_gather_2d_broadcast_indices(m, n, tr, tc, blocks, d, seed):
    rng = np.random.default_rng(seed)
    a = gen(rng, (m, n), d)
    rows = rng.integers(-2, m + 2, size=(blocks * tr, 1)).astype(np.int32)
    cols = rng.integers(-2, n + 2, size=blocks * tc).astype(np.int32)
    exp = np.zeros((blocks * tr, tc), d)
    for b in range(blocks):
        for i in range(tr):
            for j in range(tc):
                r, c = rows[b * tr + i, 0], cols[b * tc + j]
                exp[b * tr + i, j] = a[r, c] if 0 <= r < m and 0 <= c < n else 0
    run_checked(gather_2d, (blocks,), lambda out: (a, rows, cols, out, tr, tc), exp, d)


@ct.kernel
def scatter_1d(out, idx, vals, m, T: ct.Constant[int], MASK: ct.Constant[bool]):
    b = ct.bid(0)
    i = ct.load(idx, index=(b,), shape=(T,))
    v = ct.load(vals, index=(b,), shape=(T,))
    if MASK:
        ct.scatter(out, i, v, mask=ct.load(m, index=(b,), shape=(T,)))
    else:
        ct.scatter(out, i, v)


@prop
@given(n=st.integers(1, 60), t=pow2, blocks=st.integers(1, 6), d=st.sampled_from(ALL), mask=st.booleans(),
       seed=seeds)
def test_scatter_1d(n, t, blocks, d, mask, seed):
    rng = np.random.default_rng(seed)
    # unique indices within a block (some out of bounds or negative); blocks may collide,
    # and then the later block in block order wins
    idx = np.concatenate([rng.permutation(np.arange(-4, max(n + 4, t) + 4))[:t] for _ in range(blocks)])
    idx = idx.astype(np.int32)
    vals = gen(rng, blocks * t, d)
    m = gen(rng, blocks * t, BOOL)
    fills = poison_fills(vals, d)
    for fill in fills:
        out = np.full(n, fill).astype(d)
        exp = out.copy()
        for k in range(blocks * t):
            if 0 <= idx[k] < n and (m[k] or not mask):
                exp[idx[k]] = vals[k]
        ct.launch(None, (blocks,), scatter_1d, (out, idx, vals, m, t, mask))
        check(exp, out)


@ct.kernel
def scatter_2d_scalar(out, rows, cols, C: ct.Constant):
    r = ct.load(rows, index=(0,), shape=(4,))
    c = ct.load(cols, index=(0,), shape=(4,))
    ct.scatter(out, (r, c), C)


def test_scatter_scalar_value_and_tuple_indices():
    out = np.zeros((5, 5), np.float32)
    rows, cols = np.array([0, 4, -1, 2], np.int32), np.array([1, 4, 0, 7], np.int32)
    ct.launch(None, (1,), scatter_2d_scalar, (out, rows, cols, 2.5))
    exp = np.zeros((5, 5), np.float32)
    exp[0, 1] = exp[4, 4] = 2.5
    check(exp, out)


def test_gather_scatter_errors():
    a = np.zeros(8, np.float32)
    with pytest.raises(ct.TileTypeError):  # float indices
        ct.launch(None, (1,), gather_1d, (a, np.zeros(8, np.float32), np.zeros(8, bool), a.copy(), 8, False, 0))
    with pytest.raises(ct.TileTypeError):  # value dtype must match the array
        ct.launch(None, (1,), scatter_1d, (a, np.zeros(8, np.int32), np.zeros(8, np.float64), np.zeros(8, bool),
                                           8, False))


# ============================================================================ atomics

ATOMIC_FNS = {"add": ct.atomic_add, "max": ct.atomic_max, "min": ct.atomic_min, "and": ct.atomic_and,
              "or": ct.atomic_or, "xor": ct.atomic_xor, "xchg": ct.atomic_xchg}


@ct.kernel
def atomic_1d(a, idx, vals, olds, KIND: ct.Constant[str], T: ct.Constant[int], USE_OLD: ct.Constant[bool]):
    b = ct.bid(0)
    i = ct.load(idx, index=(b,), shape=(T,))
    v = ct.load(vals, index=(b,), shape=(T,))
    old = ATOMIC_FNS[KIND](a, i, v)
    if USE_OLD:
        ct.store(olds, index=(b,), tile=old)


@ct.kernel
def atomic_cas_1d(a, idx, exp, des, olds, T: ct.Constant[int]):
    b = ct.bid(0)
    i = ct.load(idx, index=(b,), shape=(T,))
    e = ct.load(exp, index=(b,), shape=(T,))
    d = ct.load(des, index=(b,), shape=(T,))
    ct.store(olds, index=(b,), tile=ct.atomic_cas(a, i, e, d))


def rmw(kind, cur, v):
    if kind == "xchg":
        return v
    return NP_RMW[kind](np.asarray(cur), np.asarray(v))[()]


@pytest.mark.parametrize("kind", sorted(ATOMIC_FNS))
@given(d=st.sampled_from(INTS + FLOATS), n=st.integers(1, 12), t=pow2, blocks=st.integers(1, 6),
       use_old=st.booleans(), seed=seeds)
@few
def test_atomics_sequential_block_order(kind, d, n, t, blocks, use_old, seed):
    if str(d) not in ATOMIC_DTYPES[kind]:
        d = np.dtype(np.uint32)
    rng = np.random.default_rng(seed)
    a = gen(rng, n, d) if not is_float(d) else gen(rng, n, d, lo=-50, hi=50)
    vals = gen(rng, blocks * t, d) if not is_float(d) else gen(rng, blocks * t, d, lo=-50, hi=50)
    if is_float(d) and kind == "add":  # exact sums: small integers in any float format
        a, vals = np.round(a).astype(d), np.round(vals).astype(d)
    idx = rng.integers(-2, n + 2, size=blocks * t).astype(np.int32)  # contention + out of bounds
    exp, exp_old = a.copy(), np.zeros(blocks * t, d)
    for k in range(blocks * t):  # blocks in order, lanes in order within a block
        i = idx[k]
        if 0 <= i < n:
            exp_old[k] = exp[i]
            exp[i] = rmw(kind, exp[i], vals[k])
    olds = np.full(blocks * t, 1).astype(d)
    ct.launch(None, (blocks,), atomic_1d, (a, idx, vals, olds, kind, t, use_old))
    check(exp, a, what=f"{kind} memory")
    if use_old:
        check(exp_old, olds, what=f"{kind} old values")


@given(d=st.sampled_from(INTS + FLOATS), n=st.integers(1, 8), t=pow2, blocks=st.integers(1, 6), seed=seeds)
@prop
def test_atomic_cas_sequential_block_order(d, n, t, blocks, seed):
    if str(d) not in ATOMIC_DTYPES["xchg"]:
        d = np.dtype(np.int64)
    rng = np.random.default_rng(seed)
    a = gen(rng, n, d, lo=0, hi=3)
    idx = rng.integers(-1, n + 1, size=blocks * t).astype(np.int32)
    expv = gen(rng, blocks * t, d, lo=0, hi=3)  # small values: many compares succeed
    des = gen(rng, blocks * t, d, lo=0, hi=3)
    exp, exp_old = a.copy(), np.zeros(blocks * t, d)
    for k in range(blocks * t):
        i = idx[k]
        if 0 <= i < n:
            exp_old[k] = exp[i]
            if exp[i] == expv[k]:
                exp[i] = des[k]
    olds = np.full(blocks * t, 9).astype(d)
    ct.launch(None, (blocks,), atomic_cas_1d, (a, idx, expv, des, olds, t))
    check(exp, a)
    check(exp_old, olds)


@ct.kernel
def atomic_2d_const(a, olds, R: ct.Constant[int], C: ct.Constant[int]):
    r = ct.arange(R, dtype=ct.int32)[:, None]
    c = ct.arange(C, dtype=ct.int32)[None, :] % 2
    old = ct.atomic_add(a, (r, c), 1)  # the same update from every block
    ct.store(olds, index=(ct.bid(0), 0), tile=old)


@prop
@given(r=small_pow2, c=small_pow2, blocks=st.integers(1, 5), seed=seeds)
def test_atomic_2d_block_uniform_update(r, c, blocks, seed):
    rng = np.random.default_rng(seed)
    a = gen(rng, (r, 2), np.int64, lo=-100, hi=100)
    exp = a.copy()
    exp_old = np.zeros((blocks * r, c), np.int64)
    for b in range(blocks):
        for i in range(r):
            for j in range(c):
                exp_old[b * r + i, j] = exp[i, j % 2]
                exp[i, j % 2] += 1
    olds = np.full((blocks * r, c), -7, np.int64)
    ct.launch(None, (blocks,), atomic_2d_const, (a, olds, r, c))
    check(exp, a)
    check(exp_old, olds)


def test_atomic_errors():
    """cuTile's element types per atomic; anything else is a TileTypeError naming the dtype."""
    idx = np.zeros(8, np.int32)
    for kind in sorted(ATOMIC_FNS):
        for d in INTS + FLOATS + [np.dtype(bool)]:
            if str(d) in ATOMIC_DTYPES[kind]:
                continue
            a = np.zeros(8, d)
            with pytest.raises(ct.TileTypeError, match="Unsupported array dtype"):
                ct.launch(None, (1,), atomic_1d, (a, idx, a.copy(), a.copy(), kind, 8, True))
    for d in (np.int8, np.float16, np.uint16):
        a = np.zeros(8, d)
        with pytest.raises(ct.TileTypeError, match="Unsupported array dtype"):
            ct.launch(None, (1,), atomic_cas_1d, (a, idx, a.copy(), a.copy(), a.copy(), 8))


# ============================================================================ mma / matmul

MMA_COMBOS = [(np.float16, np.float16), (np.float16, np.float32), (BF16, np.float32), (np.float32, np.float32),
              (np.float64, np.float64), (np.int8, np.int32), (np.uint8, np.int32), ("tfloat32", np.float32)]


@ct.kernel
def mma_kernel(x, y, acc, out, XD: ct.Constant, SX: ct.Constant[tuple], SY: ct.Constant[tuple]):
    b = ct.bid(0)
    zero = (0,) * (len(SX) - 1)
    a = ct.load(x, index=(b,) + zero, shape=SX)
    w = ct.load(y, index=(b,) + zero, shape=SY)
    c = ct.load(acc, index=(b,) + zero, shape=(SX[:-2] + (SX[-2], SY[-1])) if len(SX) == 3 else (SX[0], SY[1]))
    if XD is not None:
        a, w = a.astype(XD), w.astype(XD)
    ct.store(out, index=(b,) + zero, tile=ct.mma(a, w, c))


def mm_tol(in_d, acc_d, k):
    if np.dtype(acc_d).kind in "iu":
        return 0, 0
    e = eps(acc_d)  # operands are exact in the accumulator; only the sums round
    return 4 * e, 4 * e * 4 * (k + 1)


@pytest.mark.parametrize("in_d,acc_d", MMA_COMBOS, ids=lambda d: str(np.dtype(d)) if d != "tfloat32" else d)
@given(m=pow2, n=pow2, k=pow2, batch=st.sampled_from([0, 1, 2, 4]), blocks=st.integers(1, 3), seed=seeds)
@few
def test_mma(in_d, acc_d, m, n, k, batch, blocks, seed):
    rng = np.random.default_rng(seed)
    store_d = np.float32 if in_d == "tfloat32" else in_d
    lead = (batch,) if batch else ()
    sx, sy = lead + (m, k), lead + (k, n)
    x = gen(rng, (blocks * sx[0],) + sx[1:], store_d, lo=-2, hi=2) if is_float(store_d) else \
        gen(rng, (blocks * sx[0],) + sx[1:], store_d)
    y = gen(rng, (blocks * sy[0],) + sy[1:], store_d, lo=-2, hi=2) if is_float(store_d) else \
        gen(rng, (blocks * sy[0],) + sy[1:], store_d)
    c_shape = lead + (m, n)
    acc = gen(rng, (blocks * c_shape[0],) + c_shape[1:], acc_d, lo=-2, hi=2) if is_float(acc_d) else \
        gen(rng, (blocks * c_shape[0],) + c_shape[1:], acc_d, lo=-1000, hi=1000)
    xs = x.reshape((blocks,) + sx).astype(np.float64)
    ys = y.reshape((blocks,) + sy).astype(np.float64)
    if in_d == "tfloat32":  # operands rounded to nearest-even with 11 significant bits (TF32)
        xs, ys = (np.ldexp(np.round(np.frexp(v)[0] * 2**11) / 2**11, np.frexp(v)[1]) for v in (xs, ys))
    ref = xs @ ys + acc.reshape((blocks,) + c_shape).astype(np.float64)
    if np.dtype(acc_d).kind in "iu":
        ref = pyref(lambda v: v, acc_d, ref.astype(np.int64))
    exp = ref.astype(acc_d).reshape(acc.shape)
    rtol, atol = mm_tol(in_d, acc_d, k)
    xd = ct.tfloat32 if in_d == "tfloat32" else None
    run_checked(mma_kernel, (blocks,), lambda out: (x, y, acc, out, xd, sx, sy), exp, acc_d, rtol=rtol, atol=atol,
                what=f"mma {in_d}->{acc_d}")


@ct.kernel
def matmul_kernel(x, y, out, FORM: ct.Constant[str], M: ct.Constant[int], K: ct.Constant[int],
                  N: ct.Constant[int]):
    b = ct.bid(0)
    a = ct.load(x, index=(b, 0), shape=(M, K))
    w = ct.load(y, index=(0, b), shape=(K, N))
    if FORM == "@":
        r = a @ w
    else:
        r = ct.matmul(a, w)
    ct.store(out, index=(b, b), tile=r)


MATMUL_DTYPES = [np.dtype(np.int8), np.dtype(np.uint8)] + FLOATS


def matmul_result_dtype(da, db):
    """The promoted dtype (cuTile Python: int8 @ int8 accumulates in int32 and wraps to int8),
    or None where the operands do not promote to a dtype matmul supports."""
    d = ref_promote(da, db)
    return d if d is not None and d in MATMUL_DTYPES else None


@prop
@given(da=st.sampled_from(MATMUL_DTYPES + [np.dtype(np.int32)]), db=st.sampled_from(MATMUL_DTYPES),
       m=small_pow2, k=pow2, n=small_pow2, blocks=st.integers(1, 3), form=st.sampled_from(["@", "fn"]), seed=seeds)
def test_matmul_promotes(da, db, m, k, n, blocks, form, seed):
    rng = np.random.default_rng(seed)
    if matmul_result_dtype(da, db) is None:
        x, y = np.zeros((blocks * m, k), da), np.zeros((k, blocks * n), db)
        with pytest.raises(ct.TileTypeError):
            ct.launch(None, (blocks,), matmul_kernel, (x, y, np.zeros((blocks * m, blocks * n)), form, m, k, n))
        return
    x = gen(rng, (blocks * m, k), da, lo=-3, hi=3)
    y = gen(rng, (k, blocks * n), db, lo=-3 if db.kind != "u" else 0, hi=3)
    rd = matmul_result_dtype(da, db)
    cd = ref_promote(da, db)
    exp = np.zeros((blocks * m, blocks * n), rd)
    for b in range(blocks):
        xa = x[b * m:(b + 1) * m].astype(cd).astype(np.float64)
        yb = y[:, b * n:(b + 1) * n].astype(cd).astype(np.float64)
        prod = xa @ yb
        exp[b * m:(b + 1) * m, b * n:(b + 1) * n] = pyref(lambda v: v, rd, prod.astype(np.int64)) \
            if rd.kind in "iu" else prod.astype(rd)
    fills = poison_fills(exp, rd)
    rtol = 0 if rd.kind in "iu" else 8 * eps(rd) * (k + 1)
    for fill in fills:
        out = np.full(exp.shape, fill).astype(rd)
        ct.launch(None, (blocks,), matmul_kernel, (x, y, out, form, m, k, n))
        for b in range(blocks):  # only the diagonal blocks are written
            sl = (slice(b * m, (b + 1) * m), slice(b * n, (b + 1) * n))
            check(exp[sl], out[sl], rtol=rtol, atol=rtol * 9)


def test_mma_errors():
    with pytest.raises(ct.TileTypeError, match="Unsupported acc dtype int32"):
        ct.launch(None, (1,), mma_kernel, (np.zeros((8, 8), np.float16), np.zeros((8, 8), np.float16),
                                           np.zeros((8, 8), np.int32), np.zeros((8, 8), np.int32), None,
                                           (8, 8), (8, 8)))
    with pytest.raises(ct.TileTypeError, match="Incompatible shapes for matrix mul"):
        ct.launch(None, (1,), mma_kernel, (np.zeros((8, 4), np.float32), np.zeros((8, 8), np.float32),
                                           np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32), None,
                                           (8, 4), (8, 8)))
    with pytest.raises(ct.TileTypeError, match="x and y must have the same dtype"):
        ct.launch(None, (1,), mma_kernel, (np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float16),
                                           np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32), None,
                                           (8, 8), (8, 8)))


# ============================================================================ divergent control flow

@ct.kernel
def diverge_if(x, out, side, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    if b % 3 == 0:
        r = t * 2
    elif b % 3 == 1:
        r = t + 1
        ct.store(side, index=(b,), tile=ct.sum(t))
    else:
        r = -t
    if ct.sum(t) > 0:  # a data-dependent condition
        r = r + 100
    ct.store(out, index=(b,), tile=r)


@prop
@given(blocks=st.integers(1, 13), t=small_pow2, seed=seeds)
def test_if_on_block_id_and_data(blocks, t, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, blocks * t, np.int32, lo=-50, hi=50)
    exp = np.zeros(blocks * t, np.int32)
    exp_side = np.full(blocks, -999, np.int32)
    for b in range(blocks):
        tile = x[b * t:(b + 1) * t]
        r = tile * 2 if b % 3 == 0 else (tile + 1 if b % 3 == 1 else -tile)
        if b % 3 == 1:
            exp_side[b] = tile.sum()
        exp[b * t:(b + 1) * t] = r + (100 if tile.sum() > 0 else 0)
    side = np.full(blocks, -999, np.int32)
    run_checked(diverge_if, (blocks,), lambda out: (x, out, side, t), exp, np.int32)
    check(exp_side, side)


@ct.kernel
def diverge_for(x, out, T: ct.Constant[int]):
    b, c = ct.bid(0), ct.bid(1)
    acc = ct.zeros((T,), dtype=ct.int64)
    for k in range(c, b + 1):  # trip count differs per block (zero for some)
        acc = acc + ct.load(x, index=(k,), shape=(T,)) * (k + 1)
    ct.store(out, index=(c, b), tile=acc.reshape((1, T)))


@prop
@given(gx=st.integers(1, 7), gy=st.integers(1, 4), t=small_pow2, seed=seeds)
def test_for_with_block_dependent_trip_count(gx, gy, t, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, (gx * t,), np.int64, lo=-1000, hi=1000)
    exp = np.zeros((gy, gx * t), np.int64)
    for b in range(gx):
        for c in range(gy):
            acc = np.zeros(t, np.int64)
            for k in range(c, b + 1):
                acc += x[k * t:(k + 1) * t] * (k + 1)
            exp[c, b * t:(b + 1) * t] = acc
    run_checked(diverge_for, (gx, gy), lambda out: (x, out, t), exp, np.int64)


@ct.kernel
def diverge_while(x, out, LIMIT: ct.Constant[int]):
    b = ct.bid(0)
    i = 0
    acc = 0
    steps = 0
    while i < b + 3:
        i += 1
        v = ct.load(x, index=(b * 8 + i % 8,), shape=())
        if v % 3 == 0:
            continue
        steps += 1
        acc = acc + v
        if acc > LIMIT:
            break
    ct.store(out, index=(b, 0), tile=acc)
    ct.store(out, index=(b, 1), tile=steps)
    ct.store(out, index=(b, 2), tile=i)


@prop
@given(blocks=st.integers(1, 12), limit=st.integers(0, 60), seed=seeds)
def test_while_with_break_and_continue(blocks, limit, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, blocks * 8, np.int32, lo=0, hi=20)
    exp = np.zeros((blocks, 3), np.int32)
    for b in range(blocks):
        i = acc = steps = 0
        while i < b + 3:
            i += 1
            v = int(x[b * 8 + i % 8])
            if v % 3 == 0:
                continue
            steps += 1
            acc += v
            if acc > limit:
                break
        exp[b] = (acc, steps, i)
    run_checked(diverge_while, (blocks,), lambda out: (x, out, limit), exp, np.int32)


@ct.kernel
def diverge_nested(x, out, counter, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    if b == 0:
        return  # block 0 does nothing at all
    acc = ct.zeros((T,), dtype=ct.float32)
    if b % 2 == 0:
        for k in range(b):
            if k % 2 == 1:
                acc = acc + t * k
            else:
                acc = acc - 1.0
    else:
        j = 0
        while j < b:
            acc = ct.maximum(acc, t + j)
            j += 2
    ct.atomic_add(counter, ct.zeros((1,), dtype=ct.int32), ct.full((1,), b, dtype=ct.int32))
    ct.store(out, index=(b,), tile=acc)


@prop
@given(blocks=st.integers(1, 11), t=small_pow2, seed=seeds)
def test_nested_divergence_early_return_and_atomics(blocks, t, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, blocks * t, np.float32, lo=-4, hi=4)
    fill = np.float32(-7321.5)
    out = np.full(blocks * t, fill, np.float32)
    counter = np.zeros(1, np.int32)
    ct.launch(None, (blocks,), diverge_nested, (x, out, counter, t))
    exp = np.full(blocks * t, fill, np.float32)
    for b in range(1, blocks):
        tile = x[b * t:(b + 1) * t]
        acc = np.zeros(t, np.float32)
        if b % 2 == 0:
            for k in range(b):
                acc = acc + tile * np.float32(k) if k % 2 == 1 else acc - np.float32(1)
        else:
            for j in range(0, b, 2):
                acc = np.maximum(acc, tile + np.float32(j))
        exp[b * t:(b + 1) * t] = acc
    check(exp, out)
    assert counter[0] == sum(range(1, blocks))


@ct.kernel
def diverge_loop_carried_types(x, out, T: ct.Constant[int]):
    # a loop whose carried tile changes per block and an if that yields values from both arms
    b = ct.bid(0)
    t = ct.load(x, index=(b, 0), shape=(1, T)).reshape((T,))
    best = ct.full((T,), -1e30, dtype=ct.float64)
    for k in range(b % 4):
        cand = t * (k + 1) - k
        best = ct.where(cand > best, cand, best)
    if b > 2:
        s, m = ct.sum(best), ct.max(best)
    else:
        s, m = ct.min(t), ct.sum(t)
    ct.store(out, index=(b, 0), tile=ct.reshape(best + s - m, (1, T)))


@prop
@given(blocks=st.integers(1, 10), t=small_pow2, seed=seeds)
def test_divergent_loop_carried_values(blocks, t, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, (blocks, t), np.float64, lo=-3, hi=3)
    exp = np.zeros((blocks, t))
    for b in range(blocks):
        tile = x[b]
        best = np.full(t, -1e30)
        for k in range(b % 4):
            cand = tile * (k + 1) - k
            best = np.where(cand > best, cand, best)
        s, m = (best.sum(), best.max()) if b > 2 else (tile.min(), tile.sum())
        exp[b] = best + s - m
    run_checked(diverge_loop_carried_types, (blocks,), lambda out: (x, out, t), exp, np.float64, rtol=1e-12,
                atol=1e-9)


# ============================================================================ tile indices: data-dependent, strided, races

@ct.kernel
def permute_tiles(x, perm, out, T: ct.Constant[int], DIVERGE: ct.Constant[bool]):
    b = ct.bid(0)
    j = ct.load(perm, index=(b,), shape=())  # a data-dependent tile index
    t = ct.load(x, index=(b,), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
    if DIVERGE and b % 2 == 1:
        ct.store(out, index=(j,), tile=t + 1)
    else:
        ct.store(out, index=(j,), tile=t)


@prop
@given(n=st.integers(1, 60), t=small_pow2, diverge=st.booleans(), seed=seeds)
def test_data_dependent_tile_indices(n, t, diverge, seed):
    rng = np.random.default_rng(seed)
    g = cdiv(n, t)
    x = gen(rng, n, np.int32, lo=-99, hi=99)
    perm = rng.permutation(g).astype(np.int32)
    xp = np.zeros(g * t, np.int32)
    xp[:n] = x
    exp = np.zeros(g * t, np.int32)
    for b in range(g):
        exp[perm[b] * t:(perm[b] + 1) * t] = xp[b * t:(b + 1) * t] + (1 if diverge and b % 2 else 0)
    run_checked(permute_tiles, (g,), lambda out: (x, perm, out, t, diverge), exp, np.int32)


@ct.kernel
def strided_tile_indices(x, out, T: ct.Constant[int], S: ct.Constant[int], O: ct.Constant[int]):
    b = ct.bid(0)
    nb = ct.num_blocks(0)
    ct.store(out, index=(b,), tile=ct.load(x, index=(S * b + O,), shape=(T,)))              # forward stride
    ct.store(out, index=(2 * nb - 1 - b,), tile=ct.load(x, index=(nb - 1 - b,), shape=(T,)))  # reversed


@prop
@given(blocks=st.integers(1, 9), t=small_pow2, stride=st.integers(1, 3), off=st.integers(0, 2), seed=seeds)
def test_strided_and_reversed_tile_indices(blocks, t, stride, off, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, (stride * (blocks - 1) + off + 1 + blocks) * t, np.float32)
    exp = np.zeros(2 * blocks * t, np.float32)
    for b in range(blocks):
        exp[b * t:(b + 1) * t] = x[(stride * b + off) * t:(stride * b + off + 1) * t]
        r = 2 * blocks - 1 - b
        exp[r * t:(r + 1) * t] = x[(blocks - 1 - b) * t:(blocks - b) * t]
    run_checked(strided_tile_indices, (blocks,), lambda out: (x, out, t, stride, off), exp, np.float32)


@ct.kernel
def racing_stores(out, T: ct.Constant[int]):
    b = ct.bid(0) + 10 * ct.bid(1) + 100 * ct.bid(2)
    ct.store(out, index=(0,), tile=ct.full((T,), b, dtype=ct.int32))
    ct.store(out, index=(1 + ct.bid(0) % 2,), tile=ct.full((T,), b, dtype=ct.int32))
    ct.scatter(out, ct.full((T,), 3 * T, dtype=ct.int32) + ct.arange(T, dtype=ct.int32) % 2, b)


@prop
@given(gx=st.integers(1, 5), gy=st.integers(1, 3), gz=st.integers(1, 3), t=small_pow2)
def test_racing_writes_resolve_in_block_order(gx, gy, gz, t):
    # within one store or scatter op, the highest linear block id (x fastest) wins
    ids = [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]
    val = {c: c[0] + 10 * c[1] + 100 * c[2] for c in ids}
    exp = np.full(3 * t + 2, -5, np.int32)
    for c in ids:
        exp[0:t] = val[c]
        k = 1 + c[0] % 2
        exp[k * t:(k + 1) * t] = val[c]
        for lane in range(t):
            exp[3 * t + lane % 2] = val[c]
    if gx == 1:
        exp[2 * t:3 * t] = -5
    out = np.full(3 * t + 2, -5, np.int32)
    ct.launch(None, (gx, gy, gz), racing_stores, (out, t))
    check(exp, out)


# ============================================================================ factories

@ct.kernel
def factories_kernel(s, out_f, out_i, out_b, T: ct.Constant[int], START: ct.Constant, STEP: ct.Constant,
                     FILL: ct.Constant, DT: ct.Constant):
    b = ct.bid(0)
    a = ct.arange(T, dtype=DT, start=START, step=STEP)           # compile-time start/step
    r = ct.arange(T, dtype=ct.int32, start=b, step=b + 1)         # run-time start/step
    f = ct.full((T,), s, dtype=ct.float64)                        # run-time fill
    c = ct.full((T,), FILL, dtype=DT)
    z, o = ct.zeros((T,), dtype=DT), ct.ones((T,), dtype=DT)
    ct.store(out_f, index=(b, 0), tile=ct.reshape(a.astype(ct.float64) + f + c.astype(ct.float64) * 1000
                                                  + z.astype(ct.float64) + o.astype(ct.float64) * 0.5, (1, T)))
    ct.store(out_i, index=(b, 0), tile=ct.reshape(r, (1, T)))
    ct.store(out_b, index=(b, 0), tile=ct.reshape(ct.astile(s > 0) & (o != z), (1, 1)) if T == 1 else
             ct.reshape(ct.full((T,), True, dtype=ct.bool_) & (o != z), (1, T)))


@prop
@given(t=pow2, blocks=st.integers(1, 4), start=st.integers(-5, 5), step=st.integers(1, 4), fill=st.integers(-3, 3),
       dtype=st.sampled_from(["int32", "int64", "float32", "float64", "float16", "int16"]),
       s=st.floats(-10, 10, allow_nan=False))
def test_factories(t, blocks, start, step, fill, dtype, s):
    d = sd(dtype).np_dtype
    base = np.arange(t) * step + start
    exp_f = np.zeros((blocks, t))
    exp_i = np.zeros((blocks, t), np.int32)
    for b in range(blocks):
        # a Python float argument is a float32 scalar in the kernel
        exp_f[b] = base.astype(d).astype(np.float64) + np.float64(np.float32(s)) + fill * 1000 + 0.5
        exp_i[b] = np.arange(t) * (b + 1) + b
    run_checked(factories_kernel, (blocks,), lambda out: (s, out, np.zeros((blocks, t), np.int32),
                                                           np.zeros((blocks, t), bool), t, start, step, fill,
                                                           getattr(ct, dtype)), exp_f, np.float64,
                rtol=1e-12)
    out_i, out_b = np.full((blocks, t), -1, np.int32), np.zeros((blocks, t), bool)
    ct.launch(None, (blocks,), factories_kernel, (s, np.zeros((blocks, t)), out_i, out_b, t, start, step, fill,
                                                  getattr(ct, dtype)))
    check(exp_i, out_i)
    check(np.full((blocks, t), True if t > 1 else bool(np.float32(s) > 0)), out_b)


@ct.kernel
def full_checks(out, FILL: ct.Constant, DT: ct.Constant):
    ct.store(out, index=(0,), tile=ct.full((4,), FILL, dtype=DT))


def test_full_rejects_unrepresentable_integer():
    with pytest.raises(ct.TileValueError, match="does not fit"):
        ct.launch(None, (1,), full_checks, (np.zeros(4, np.int8), 300, ct.int8))
    with pytest.raises(ct.TileTypeError, match="power"):
        ct.launch(None, (1,), factories_kernel, (1.0, np.zeros((1, 3)), np.zeros((1, 3), np.int32),
                                                 np.zeros((1, 3), bool), 3, 0, 1, 0, ct.int32))


# ============================================================================ debug: print and assert

@ct.kernel
def printing(x, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    if b % 2 == 1:
        print("odd block", b, "sum", ct.sum(t))
    else:
        ct.printf("even %d: %.1f\n", b, ct.sum(t))
    print(f"b={b} first={ct.extract(t, (0,), (1,)).item()}")


def test_print_output_is_in_block_order(capsys):
    blocks, t = 5, 4
    x = np.arange(blocks * t, dtype=np.float32)
    ct.launch(None, (blocks,), printing, (x, t))
    lines = capsys.readouterr().out.splitlines()
    exp = []
    for b in range(blocks):
        s = x[b * t:(b + 1) * t].sum()
        exp.append(f"odd block {b} sum {s}" if b % 2 else f"even {b}: {s:.1f}")
        exp.append(f"b={b} first={x[b * t]}")
    assert lines == exp


@ct.kernel
def asserting(x, T: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    ct.assert_(t < 100, "value too large")


def test_assert_names_the_failing_block():
    x = np.zeros(16, np.int32)
    ct.launch(None, (4,), asserting, (x, 4))  # passes
    x[9] = 100
    with pytest.raises(ct.TileRuntimeError, match=r"value too large.*\(2, 0, 0\)"):
        ct.launch(None, (4,), asserting, (x, 4))


# ============================================================================ regions and slicing under divergence

@ct.kernel
def diverge_regions(x, out, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b, 0), shape=(1, T)).reshape((T,))
    if b % 2 == 1:
        m = b + 5
        r = ct.reduce(t % m, 0, lambda a, c: (a + c) % m, 0)
        e = ct.extract(t, (b % (T // 2),), (2,))
        s = ct.scan(t, 0, lambda a, c: ct.maximum(a, c), -1000)
        res = ct.insert(s, ((b // 2) % (T // 2),), e) + r
    else:
        rows = ct.full((T,), b, dtype=ct.int32)
        res = ct.cumsum(t, reverse=True) + ct.gather(x, (rows, ct.arange(T, dtype=ct.int32)))
    ct.store(out, index=(b, 0), tile=res.reshape((1, T)))


@prop
@given(blocks=st.integers(1, 12), t=st.sampled_from([2, 4, 8, 16]), seed=seeds)
def test_regions_and_slicing_in_divergent_branches(blocks, t, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, (blocks, t), np.int32, lo=0, hi=30)
    exp = np.zeros((blocks, t), np.int32)
    for b in range(blocks):
        v = x[b]
        if b % 2:
            m = b + 5
            s = np.maximum.accumulate(v)
            i, j = b % (t // 2), (b // 2) % (t // 2)
            s[j * 2:j * 2 + 2] = v[i * 2:i * 2 + 2]
            exp[b] = s + (v % m).sum() % m
        else:
            exp[b] = np.cumsum(v[::-1])[::-1] + v
    run_checked(diverge_regions, (blocks,), lambda out: (x, out, t), exp, np.int32)


# ============================================================================ invalid input: clear errors

@ct.kernel
def gather_pad(a, out, PADV: ct.Constant):
    ct.store(out, index=(0,), tile=ct.gather(a, ct.arange(8, dtype=ct.int32) * 2, padding_value=PADV))


@ct.kernel
def extract_at(x, i, out, IDX: ct.Constant, INSERT: ct.Constant[bool]):
    t = ct.load(x, index=(0,), shape=(8,))
    j = ct.load(i, index=(ct.bid(0),), shape=()) if IDX is None else IDX
    if INSERT:
        ct.store(out, index=(0,), tile=ct.insert(t, (j,), ct.zeros((2,), dtype=ct.int32)))
    else:
        ct.store(out, index=(0,), tile=ct.broadcast_to(ct.sum(ct.extract(t, (j,), (2,))), (8,)))


@ct.kernel
def float8_math(a, out):
    t = ct.load(a, index=(0,), shape=(8,))
    ct.store(out, index=(0,), tile=(t + t).astype(ct.float32))


@ct.kernel
def float8_convert(a, out):
    t = ct.load(a, index=(0,), shape=(8,))
    ct.store(out, index=(0,), tile=t.astype(ct.float32) * 2)


def test_invalid_input_raises_clear_errors():
    a = np.arange(8, dtype=np.int32)
    with pytest.raises(ct.TileValueError, match="not representable"):
        ct.launch(None, (1,), gather_pad, (a, np.zeros(8, np.int32), 2.5))
    with pytest.raises(ct.TileValueError, match="not representable"):
        ct.launch(None, (1,), gather_pad, (a.astype(np.uint8), np.zeros(8, np.uint8), -1))
    out = np.zeros(8, np.int32)
    ct.launch(None, (1,), gather_pad, (a, out, 7))  # a representable padding value is fine
    check(np.where(np.arange(8) * 2 < 8, np.arange(8) * 2, 7).astype(np.int32), out)
    with pytest.raises(ct.TileTypeError, match="Unsupported array dtype: bool"):
        ct.launch(None, (1,), atomic_1d, (np.zeros(8, bool), np.zeros(8, np.int32), np.zeros(8, bool),
                                          np.zeros(8, bool), "add", 8, True))
    for insert in (False, True):
        with pytest.raises(ct.TileTypeError, match="out of range"):
            ct.launch(None, (1,), extract_at, (a, np.zeros(1, np.int32), np.zeros(8, np.int32), 4, insert))
        with pytest.raises(ct.TileRuntimeError, match=r"out of range.*\(2, 0, 0\)"):
            ct.launch(None, (3,), extract_at, (a, np.array([0, 3, 4], np.int32), np.zeros(8, np.int32), None,
                                               insert))
    f8 = np.arange(8).astype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(ct.TileTypeError, match="non-arithmetic dtype float8_e4m3fn"):
        ct.launch(None, (1,), float8_math, (f8, np.zeros(8, np.float32)))
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), float8_convert, (f8, out))
    check(np.arange(8, dtype=np.float32) * 2, out)


@given(j=st.integers(0, 3), seed=seeds)
@few
def test_extract_at_run_time_index(j, seed):
    rng = np.random.default_rng(seed)
    a = gen(rng, 8, np.int32, lo=-50, hi=50)
    out = np.zeros(8, np.int32)
    ct.launch(None, (1,), extract_at, (a, np.array([j], np.int32), out, None, False))
    check(np.full(8, a[2 * j:2 * j + 2].sum(), np.int32), out)


@ct.kernel
def diverge_for_break_continue(x, out, N: ct.Constant[int]):
    b = ct.bid(0)
    acc = 0
    cnt = 0
    for i in range(b % 3, N, b % 4 + 1):  # start and step differ per block
        v = ct.load(x, index=(b * N + i,), shape=())
        if v < 0:
            continue
        for j in range(v % 3):  # data-dependent inner trip count
            acc = acc + j + i
        if acc > 40 + b:
            break
        cnt += 1
    ct.store(out, index=(b, 0), tile=acc)
    ct.store(out, index=(b, 1), tile=cnt)


@prop
@given(blocks=st.integers(1, 12), n=st.integers(1, 16), seed=seeds)
def test_for_with_block_dependent_step_break_continue(blocks, n, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, blocks * n, np.int32, lo=-5, hi=10)
    exp = np.zeros((blocks, 2), np.int32)
    for b in range(blocks):
        acc = cnt = 0
        for i in range(b % 3, n, b % 4 + 1):
            v = int(x[b * n + i])
            if v < 0:
                continue
            for j in range(v % 3):
                acc += j + i
            if acc > 40 + b:
                break
            cnt += 1
        exp[b] = acc, cnt
    run_checked(diverge_for_break_continue, (blocks,), lambda out: (x, out, n), exp, np.int32)


@ct.kernel
def mma_batch_broadcast(x, y, acc, out, B: ct.Constant[int], M: ct.Constant[int], K: ct.Constant[int],
                        N: ct.Constant[int], LEFT: ct.Constant[bool]):
    if LEFT:
        a = ct.load(x, index=(0, 0, 0), shape=(1, M, K))
        w = ct.load(y, index=(0, 0, 0), shape=(B, K, N))
    else:
        a = ct.load(x, index=(0, 0, 0), shape=(B, M, K))
        w = ct.load(y, index=(0, 0, 0), shape=(1, K, N))
    c = ct.load(acc, index=(0, 0, 0), shape=(B, M, N))
    ct.store(out, index=(0, 0, 0), tile=ct.mma(a, w, c) + (a @ w).astype(ct.int32) - ct.matmul(a, w))


@prop
@given(b=st.sampled_from([2, 4]), m=small_pow2, k=small_pow2, n=small_pow2, left=st.booleans(), seed=seeds)
def test_batched_mma_broadcasts_a_unit_batch(b, m, k, n, left, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, (1 if left else b, m, k), np.int8, lo=-9, hi=9)
    y = gen(rng, (b if left else 1, k, n), np.int8, lo=-9, hi=9)
    acc = gen(rng, (b, m, n), np.int32, lo=-99, hi=99)
    exp = (x.astype(np.int64) @ y + acc).astype(np.int32)
    run_checked(mma_batch_broadcast, (1,), lambda out: (x, y, acc, out, b, m, k, n, left), exp, np.int32)


@ct.kernel
def batched_gemm_3d_grid(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int],
                         SHARE_B: ct.Constant[bool]):
    bx, by, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((tm, tn), dtype=ct.float64)
    for k in range(ct.num_tiles(A, axis=2, shape=(1, tm, tk))):
        a = ct.load(A, index=(z, bx, k), shape=(1, tm, tk), padding_mode=ct.PaddingMode.ZERO).reshape((tm, tk))
        zb = 0 if SHARE_B else z
        b = ct.load(B, index=(zb, k, by), shape=(1, tk, tn), padding_mode=ct.PaddingMode.ZERO).reshape((tk, tn))
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(z, bx, by), tile=acc.reshape((1, tm, tn)))


@prop
@given(z=st.integers(1, 3), m=st.integers(1, 20), n=st.integers(1, 20), k=st.integers(1, 20), tm=small_pow2,
       tn=small_pow2, tk=small_pow2, share=st.booleans(), seed=seeds)
def test_batched_gemm_over_a_3d_grid(z, m, n, k, tm, tn, tk, share, seed):
    rng = np.random.default_rng(seed)
    A = gen(rng, (z, m, k), np.float64, lo=-1, hi=1)
    B = gen(rng, (1 if share else z, k, n), np.float64, lo=-1, hi=1)
    exp = A @ B
    run_checked(batched_gemm_3d_grid, (cdiv(m, tm), cdiv(n, tn), z), lambda out: (A, B, out, tm, tn, tk, share),
                exp, np.float64, rtol=1e-12, atol=1e-12)


# ============================================================================ array queries

@ct.kernel
def array_queries(a, out):
    shp, st_ = a.shape, a.strides
    for i in ct.static_iter(range(3)):
        ct.store(out, index=(i,), tile=shp[i])
        ct.store(out, index=(3 + i,), tile=st_[i])
    ct.store(out, index=(6,), tile=ct.num_blocks(0) * 100 + ct.num_blocks(1) * 10 + ct.num_blocks(2))


@prop
@given(dims=st.lists(st.integers(1, 9), min_size=3, max_size=3), steps=st.lists(st.integers(1, 3), min_size=3,
                                                                                  max_size=3),
       perm=st.permutations([0, 1, 2]), grid=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)))
def test_array_shape_and_strides(dims, steps, perm, grid):
    base = np.zeros([n * s for n, s in zip(dims, steps)], np.int16)
    a = base[tuple(slice(None, None, s) for s in steps)].transpose(perm)  # strided, maybe not C order
    exp = np.array(list(a.shape) + [s // a.itemsize for s in a.strides] + [grid[0] * 100 + grid[1] * 10 + grid[2]],
                   np.int32)
    run_checked(array_queries, grid, lambda out: (a, out), exp, np.int32)


# ============================================================================ tiles are values

@ct.kernel
def load_then_overwrite(a, w, out, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(a, index=(b,), shape=(T,))
    ct.store(w, index=(b,), tile=t * 2)                      # w may be a itself, or overlap it
    ct.atomic_add(w, ct.arange(T, dtype=ct.int32) + b * T, 1)
    ct.store(out, index=(b,), tile=t)                        # must still be the loaded values


@prop
@given(blocks=st.integers(1, 6), t=small_pow2, mode=st.sampled_from(["same", "overlap", "distinct"]), seed=seeds)
def test_loaded_tiles_do_not_alias_array_memory(blocks, t, mode, seed):
    rng = np.random.default_rng(seed)
    buf = gen(rng, blocks * t + t, np.int32, lo=-99, hi=99)
    a = buf[:blocks * t]
    w = {"same": a, "overlap": buf[t:], "distinct": np.zeros(blocks * t, np.int32)}[mode]
    orig = a.copy()
    out = np.full(blocks * t, -12345, np.int32)
    ct.launch(None, (blocks,), load_then_overwrite, (a, w, out, t))
    check(orig, out)
    exp_w = orig[: len(w)] * 2 + 1 if mode != "overlap" else None
    if exp_w is not None:
        check(exp_w, w)


@ct.kernel
def reduce_closing_over_loop_variable(x, out, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b, 0), shape=(1, T)).reshape((T,))
    acc = 0
    for i in range(b + 1):  # per-block trip count: the loop runs on shrinking block subsets
        m = i + 3
        acc = acc + ct.reduce(t % m, 0, lambda a, c: (a + c) % m, 0)
    ct.store(out, index=(b,), tile=acc)


@prop
@given(blocks=st.integers(1, 9), t=small_pow2, seed=seeds)
def test_combiner_closing_over_loop_variable_in_divergent_loop(blocks, t, seed):
    rng = np.random.default_rng(seed)
    x = gen(rng, (blocks, t), np.int32, lo=0, hi=40)
    exp = np.array([sum(int((x[b] % (i + 3)).sum() % (i + 3)) for i in range(b + 1)) for b in range(blocks)],
                   np.int32)
    run_checked(reduce_closing_over_loop_variable, (blocks,), lambda out: (x, out, t), exp, np.int32)


def test_max_min_skipping_nan_all_nan_slice_gives_nan():
    x = np.array([[np.nan] * 4, [1.0, np.nan, -2.0, np.nan]], np.float32).reshape(1, 8)
    for fn, ref in (("nanmax", [np.nan, 1.0]), ("nanmin", [np.nan, -2.0]), ("max", [np.nan, np.nan]),
                    ("max_m", [np.nan, 1.0])):
        out = np.zeros((1, 2), np.float32)
        ct.launch(None, (1,), reduce_fn, (x, out, fn, (1, False), (2, 4), 8, 2))
        check(np.array([ref], np.float32), out)
