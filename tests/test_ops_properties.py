"""Property tests: every op family of the catalogue against NumPy on the CPU backend.

Hypothesis draws shapes (power-of-two tiles over arrays whose sizes are usually *not*
multiples of the tile), dtypes and a seed for NumPy's generator, which fills the inputs.
Outputs are poisoned before each launch with a value the reference does not contain (or,
for bool outputs, the launch runs twice with opposite poisons), then every element is
compared with a NumPy reference that implements the documented semantics independently:
Python floor division and modulo, wrap-around integers, NaN-propagating min/max,
saturating float→int conversion, block-ordered atomics.
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
    """The documented tile∘tile rule: bool < integers < floats, the wider type wins, signed
    and unsigned of equal width go to the next wider signed type, f16 with bf16 → f32."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    fa, fb = a.kind == "f" or a == BF16, b.kind == "f" or b == BF16
    if fa and fb:
        if a.itemsize != b.itemsize:
            return a if a.itemsize > b.itemsize else b
        return np.dtype(np.float32)  # float16 with bfloat16
    if fa or fb:
        return a if fa else b
    if a == BOOL or b == BOOL:
        return b if a == BOOL else a
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    s, u = (a, b) if a.kind == "i" else (b, a)
    if s.itemsize > u.itemsize:
        return s
    return np.dtype({1: np.int16, 2: np.int32, 4: np.int64, 8: np.int64}[u.itemsize])


def is_float(d):
    d = np.dtype(d)
    return d.kind == "f" or d == BF16


def float_of(d):
    d = np.dtype(d)
    if is_float(d):
        return d
    return np.dtype(np.float64) if d.itemsize == 8 else np.dtype(np.float32)


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
    return 1 if a == 1 else ((-1) ** b if a == -1 else 0)  # truncation of 1 / a**-b


def py_shift(left):
    def f(a, b):
        return a << b if left else a >> b  # Python ints: arithmetic, never wraps the amount
    return f


def binary_result_dtype(name, da, db):
    d = ref_promote(da, db)
    if name in COMPARE:
        return BOOL
    if name in ("truediv", "atan2"):
        return float_of(d)
    if d == BOOL and name in ("add", "sub", "mul", "floordiv", "mod", "pow", "bitwise_lshift", "bitwise_rshift"):
        return np.dtype(np.int32)
    return d


def binary_reference(name, x, y):
    """(expected, rtol) for op ``name`` on arrays x, y (already broadcast-compatible)."""
    d = ref_promote(x.dtype, y.dtype)
    rd = binary_result_dtype(name, x.dtype, y.dtype)
    if name in COMPARE:
        return COMPARE[name](as_cmp(x.astype(d)), as_cmp(y.astype(d))), 0
    if name in ("truediv", "atan2"):
        a, b = x.astype(rd), y.astype(rd)
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
          "pow": np.power, "minimum": np.minimum, "maximum": np.maximum}[name]
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
            x = np.where((x.astype(d) == 0) & (y.astype(d) < 0), np.array(2, dtype=dx), x).astype(dx)
        elif is_float(d):
            x = np.abs(gen(rng, shape_x, dx, lo=0.1, hi=4)).astype(dx)
            y = gen(rng, shape_y, dy, lo=-3, hi=3) if is_float(dy) else gen(rng, shape_y, dy, lo=0, hi=3)
    if name in ("floordiv", "mod") and is_float(d):
        x = gen(rng, shape_x, dx, lo=-50, hi=50) if is_float(dx) else x
        y = gen(rng, shape_y, dy, lo=-6, hi=6) if is_float(dy) else np.where(y == 0, 1, y).astype(dy)
    return x, y


def allowed_binary(name, dx, dy):
    d = ref_promote(dx, dy)
    if name.startswith("bitwise") and is_float(d):
        return False
    if name in ("bitwise_lshift", "bitwise_rshift") and (d == BOOL or dx == BOOL or dy == BOOL):
        return False
    if name == "atan2" and not is_float(d) and d.itemsize < 4:
        return True
    if name in ("floordiv", "mod", "pow") and d == BOOL:
        return False
    return True


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
def binary_case(draw):
    form = draw(st.sampled_from(["fn", "op"]))
    name = draw(st.sampled_from(sorted(BIN_FNS if form == "fn" else BIN_OPS)))
    dx = draw(st.sampled_from(ALL))
    dy = draw(st.sampled_from([dx, dx, *ALL]))
    if not allowed_binary(name, dx, dy):
        dx = dy = draw(st.sampled_from(INTS))
    return form, name, dx, dy


@prop
@given(case=binary_case(), m=st.integers(1, 40), n=st.integers(1, 40), tm=pow2, tn=pow2, seed=seeds)
def test_binary_elementwise(case, m, n, tm, tn, seed):
    form, name, dx, dy = case
    rng = np.random.default_rng(seed)
    x, y = binary_inputs(rng, name, (m, n), (m, n), dx, dy)
    expected, rtol = binary_reference(name, x, y)
    run_checked(ew_binary, (cdiv(m, tm), cdiv(n, tn)), lambda out: (x, y, out, (form, name), tm, tn),
                expected, binary_result_dtype(name, dx, dy), rtol=rtol, atol=0 if not rtol else 1e-30,
                what=f"{form} {name} {dx} {dy}")


@prop
@given(case=binary_case(), m=st.integers(1, 24), n=st.integers(1, 24), tm=pow2, tn=pow2, seed=seeds)
def test_binary_broadcast_rank_alignment(case, m, n, tm, tn, seed):
    form, name, dx, dy = case
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
    """scalar∘tile: the tile's dtype when the constant is representable in it, else promoted."""
    d = np.dtype(d)
    if isinstance(c, float):
        fits = is_float(d)
        other = np.dtype(np.float32)
    elif isinstance(c, bool):
        fits, other = True, BOOL
    else:
        if is_float(d):
            fits = True
        elif d == BOOL:
            fits = c in (0, 1)
        else:
            info = np.iinfo(d)
            fits = info.min <= c <= info.max
        other = np.dtype(np.int32) if -(2**31) <= c < 2**31 else np.dtype(np.int64)
    base = d if fits else ref_promote(d, other)
    return binary_result_dtype(name, base, base), base


@prop
@given(name=st.sampled_from(["add", "sub", "mul", "truediv", "minimum", "maximum", "less", "equal",
                             "bitwise_and", "bitwise_xor"]),
       d=st.sampled_from(ALL), c=st.one_of(st.integers(-300, 300), st.sampled_from([2**40, -(2**33)]),
                                           st.floats(-100, 100, allow_nan=False), st.booleans()),
       left=st.booleans(), n=st.integers(1, 40), t=pow2, seed=seeds)
def test_scalar_tile_promotion(name, d, c, left, n, t, seed):
    rd, base = scalar_result_dtype(name, d, c)
    if name.startswith("bitwise") and is_float(base):
        name = "add"
        rd, base = scalar_result_dtype(name, d, c)
    rng = np.random.default_rng(seed)
    x = gen(rng, n, d)
    cval = np.array(c).astype(base)
    cb = np.broadcast_to(cval, x.shape)
    expected, rtol = binary_reference(name, cb, x.astype(base)) if left else \
        binary_reference(name, x.astype(base), cb)
    assert expected.dtype == rd
    kern = ew_scalar_const_left if left else ew_scalar_const
    run_checked(kern, (cdiv(n, t),), lambda out: (x, out, ("fn", name), c, t), expected, rd,
                rtol=rtol, what=f"{name} {d} {c!r}")


@pytest.mark.parametrize("tile_dtype,const,result", [
    (np.int32, 2, np.int32), (np.int32, 2.5, np.float32), (np.int8, 100, np.int8), (np.int8, 1000, np.int32),
    (np.uint8, -1, np.int32), (np.float16, 2.5, np.float16), (np.float16, 3, np.float16),
    (BF16, 1.5, BF16), (np.int64, 2.5, np.float32), (np.bool_, 1, np.int32), (np.int16, 2**40, np.int64),
])
def test_scalar_promotion_table(tile_dtype, const, result):
    x = np.arange(1, 9).astype(tile_dtype)
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
    expected, rtol = binary_reference("mul", x, np.asarray(s))
    run_checked(ew_runtime_scalar, (cdiv(n, t),), lambda out: (x, s, out, t), expected,
                binary_result_dtype("mul", d, ds), rtol=rtol)


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
    if name in ("floor", "ceil"):
        if is_float(d):
            return (np.floor if name == "floor" else np.ceil)(x.astype(np.float64)).astype(d), d, 0
        return x, d, 0
    if name in ("bitwise_not", "~"):
        return (~x if d != BOOL else np.logical_not(x)), d, 0
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


@prop
@given(name=st.sampled_from(sorted(UN_FNS)), d=st.sampled_from(ALL), m=st.integers(1, 30), n=st.integers(1, 30),
       tm=pow2, tn=pow2, seed=seeds)
def test_unary_elementwise(name, d, m, n, tm, tn, seed):
    if name in ("bitwise_not", "~") and is_float(d):
        d = np.dtype(np.int16)
    if name in FLOAT_UNARY and d == BOOL:
        d = np.dtype(np.uint8)
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


@prop
@given(src=st.sampled_from(ALL), dst=st.sampled_from(ALL), method=st.booleans(), m=st.integers(1, 20),
       n=st.integers(1, 20), tm=pow2, tn=pow2, seed=seeds)
def test_astype(src, dst, method, m, n, tm, tn, seed):
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
    expected, _ = binary_reference(name, x, y)
    rd = binary_result_dtype(name, da, db)
    out = np.zeros(8, rd)
    ct.launch(None, (1,), ew_two, (x, y, out, ("op", "add" if name == "add" else "bitwise_or")))
    check(expected, out)
    # the result type is symmetric
    assert ref_promote(da, db) == ref_promote(db, da)


def test_wider_int_wins_and_int_float_gives_float():
    for a, b, r in [(np.int16, np.int32, np.int32), (np.int32, np.float16, np.float16),
                    (np.uint8, np.int8, np.int16), (np.uint32, np.int32, np.int64), (np.uint64, np.int64, np.int64),
                    (np.float16, BF16, np.float32), (np.bool_, np.uint16, np.uint16), (np.float32, np.float64, np.float64)]:
        x, y = np.ones(8, a), np.ones(8, b)
        out = np.zeros(8, r)
        ct.launch(None, (1,), ew_two, (x, y, out, ("op", "add")))
        check(np.full(8, 2).astype(r), out)


def test_int_truediv_gives_float():
    x, y = np.arange(1, 9, dtype=np.int32), np.full(8, 4, np.int32)
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), ew_two, (x, y, out, ("op", "truediv")))
    check((x / 4).astype(np.float32), out)
    x64 = x.astype(np.int64)
    out64 = np.zeros(8, np.float64)
    ct.launch(None, (1,), ew_two, (x64, y.astype(np.int64), out64, ("op", "truediv")))
    check(x64 / 4, out64)


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
def s_item_fn(t, u, args, bid): return ct.item(t) + 0


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
        exp = np.expand_dims(x.reshape(S if g == 1 else (g,) + S), axis if g == 1 else
                             (axis % (len(S) + 1)) + 1)
        run_shape("expand", (axis,), x, y, exp.reshape((g,) + exp.shape[1 if g > 1 else 0:]))
    elif kind == "none_mid" and len(S) < 1:
        return
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
        exp = np.stack([x[b][((b % counts[0]) * sub[0],) and (slice((b % counts[0]) * sub[0],
                                                                     (b % counts[0] + 1) * sub[0]),) + sl[1:]]
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
        run_shape(data.draw(st.sampled_from(["item", "item_fn"])), (), one, v,
                  one.reshape(g, 1) if d != BOOL or True else None)


def test_shape_errors():
    x = np.zeros((1, 8), np.float32)
    y = np.zeros((1, 8), np.float32)
    with pytest.raises(ct.TileTypeError):  # element counts differ
        ct.launch(None, (1,), shape_fn, (x, y, np.zeros((1, 8), np.float32), "reshape", ((4, 4),), (8,), (8,), 8, 8, 8))
    with pytest.raises(ct.TileValueError):  # not a permutation
        ct.launch(None, (1,), shape_fn, (x, y, np.zeros((1, 8), np.float32), "permute", ((0, 0),), (2, 4), (8,), 8, 8, 8))
    with pytest.raises(ct.TileTypeError):  # cat result not a power of two
        ct.launch(None, (1,), shape_fn, (x, np.zeros((1, 4), np.float32), np.zeros((1, 12), np.float32), "cat", (0,),
                                         (8,), (4,), 8, 4, 12))
    with pytest.raises(ct.TileTypeError):  # item of a multi-element tile
        ct.launch(None, (1,), shape_fn, (x, y, np.zeros((1, 1), np.float32), "item", (), (8,), (8,), 8, 8, 1))
    with pytest.raises(ct.TileValueError):  # tile dims must be powers of two
        ct.launch(None, (1,), shape_fn, (x, y, np.zeros((1, 8), np.float32), "reshape", ((3, 3),), (8,), (8,), 8, 8, 8))


# ============================================================================ reductions

def r_sum(t, args): return ct.sum(t, axis=args[0], keepdims=args[1])
def r_prod(t, args): return ct.prod(t, axis=args[0], keepdims=args[1])
def r_max(t, args): return ct.max(t, axis=args[0], keepdims=args[1])
def r_min(t, args): return ct.min(t, axis=args[0], keepdims=args[1])
def r_nanmax(t, args): return ct.max(t, axis=args[0], keepdims=args[1], propagate_nan=False)
def r_nanmin(t, args): return ct.min(t, axis=args[0], keepdims=args[1], propagate_nan=False)
def r_argmax(t, args): return ct.argmax(t, axis=args[0], keepdims=args[1])
def r_argmin(t, args): return ct.argmin(t, axis=args[0], keepdims=args[1])
def r_sum_m(t, args): return t.sum(args[0], keepdims=args[1])
def r_max_m(t, args): return t.max(args[0], keepdims=args[1])
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


@prop
@given(data=st.data(), S=tile_shapes, d=st.sampled_from(ALL), g=st.integers(1, 4), keepdims=st.booleans(),
       seed=seeds)
def test_builtin_reductions(data, S, d, g, keepdims, seed):
    S = tuple(S)
    rng = np.random.default_rng(seed)
    fn = data.draw(st.sampled_from(sorted(RED_FNS)))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(S), len(S) - 1),
                               st.lists(st.integers(0, len(S) - 1), min_size=1, max_size=len(S), unique=True)
                               .map(tuple)))
    axes = np_axes(axis, len(S))
    npax = tuple(1 + a for a in axes)
    name = fn.replace("_m", "")
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
        od = d
        npfn = {"max": np.max, "min": np.min, "nanmax": np.nanmax, "nanmin": np.nanmin}[name]
        if not is_float(d):
            npfn = np.max if "max" in name else np.min
        exp = npfn(as_cmp(x), **kw).astype(od)
    else:
        od = np.dtype(np.int32)
        exp = ref_arg(x, axes, keepdims, np.argmax if name == "argmax" else np.argmin)
    g_, R = exp.shape[0], exp.shape[1:]
    nr = math.prod(R)
    run_checked(reduce_fn, (g,), lambda out: (x.reshape(g, -1), out, fn, (axis, keepdims), S, math.prod(S), nr),
                exp.reshape(g, nr), od, rtol=rtol, atol=atol, what=f"{fn} axis={axis} {d}")


# ---------------------------------------------------------------------------- custom reduce / scan

def comb_max(a, b):
    return ct.maximum(a, b)


def comb_argmax(a, b):
    av, ai = a
    bv, bi = b
    take_b = (bv > av) | ((bv == av) & (bi < ai))
    return ct.where(take_b, bv, av), ct.where(take_b, bi, ai)


def comb_sum_count(a, b):
    return a[0] + b[0], a[1] + b[1]


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


CUSTOM_FNS = {f.__name__[2:]: f for f in (c_reduce_lambda, c_reduce_def, c_reduce_mod, c_reduce_argmax,
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
    elif kind == "scan_def":
        exp = np_scan(x, ax, reverse, np.maximum.accumulate)
    else:
        exp = np_scan(x, ax, reverse, np.cumsum).astype(np.int32) * 64 + \
            np_scan(np.ones_like(x), ax, reverse, np.cumsum).astype(np.int32)
    run_custom(kind, (axis, reverse), x, exp.astype(od), rtol=rtol, atol=atol)


def test_reduction_errors():
    x = np.zeros((1, 8), np.int32)
    with pytest.raises(ct.TileValueError):  # axis out of range
        ct.launch(None, (1,), reduce_fn, (x, np.zeros((1, 1), np.int32), "sum", (3, False), (8,), 8, 1))
    with pytest.raises(ct.TileValueError):  # repeated axis
        ct.launch(None, (1,), reduce_fn, (x, np.zeros((1, 1), np.int32), "sum", ((0, 0), False), (2, 4), 8, 1))
