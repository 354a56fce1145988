"""CPU lowerings of the element-wise family (ops/elementwise.py)."""
from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ... import numerics
from .executor import lowers


def out_dtype(op) -> np.dtype:
    return op.results[0].type.dtype.np_dtype


_COMPUTE: dict[np.dtype, np.dtype] = {}


def _compute_dtype(x: np.ndarray) -> np.dtype:
    """16-bit and 8-bit floats compute in float32 and round once at the end (memoised:
    NumPy's ``dtype.name`` is slow Python code)."""
    d = x.dtype
    c = _COMPUTE.get(d)
    if c is None:
        c = _COMPUTE[d] = np.dtype(np.float32) if d.kind == "V" or (d.kind == "f" and d.itemsize < 4) \
            or d.name in ("bfloat16",) or "float8" in d.name or "float4" in d.name else d
    return c


def _up(*xs):
    return [x.astype(_compute_dtype(x), copy=False) for x in xs]


def _int_pow(x, y):
    base = np.power(x, np.maximum(y, 0))
    neg = y < 0
    if not neg.any():
        return base
    small = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0)).astype(x.dtype)
    return np.where(neg, small, base)


def _shift(x, y, left: bool):
    bits = x.dtype.itemsize * 8
    big = (y >= bits) | (y < 0)
    ys = np.where(big, 0, y).astype(x.dtype)
    if left:
        return np.where(big, 0, np.left_shift(x, ys)).astype(x.dtype)
    fill = np.where(x < 0, -1, 0).astype(x.dtype) if x.dtype.kind == "i" else np.zeros_like(x)
    return np.where(big, fill, np.right_shift(x, ys)).astype(x.dtype)


def _floordiv(x, y):
    if x.dtype.kind in "iu":
        return np.where(y == 0, 0, np.floor_divide(x, np.where(y == 0, 1, y)))
    return np.floor_divide(x, y)


def _mod(x, y):
    if x.dtype.kind in "iu":
        return np.where(y == 0, 0, np.mod(x, np.where(y == 0, 1, y)))
    return np.mod(x, y)


_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": _floordiv, "mod": _mod, "atan2": np.arctan2, "minimum": np.minimum, "maximum": np.maximum,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}


def _ignore_nan(fn):
    """minimum/maximum that return the other operand where one is NaN (propagate_nan=False)."""
    return {"minimum": np.fmin, "maximum": np.fmax}.get(fn.__name__, fn)


def _ftz(fn):
    """``fn`` on float32 with subnormal inputs and results flushed to zero (flush_to_zero=True)."""
    def flushed(*xs):
        return numerics.flush_subnormals(fn(*(numerics.flush_subnormals(x) for x in xs)))
    return flushed


def _directed(name: str, d: dt.DType, mode: str):
    """``name`` computed exactly and rounded with a directed mode (numerics.py)."""
    def rounded(*xs):
        hi, sign = numerics.exact_op(name, *(x.astype(np.float64) for x in xs))
        return numerics.round_to(hi, sign, d, mode)
    return rounded


def numpy_fn(op, fn):
    """The NumPy function for an element-wise op, honouring its rounding_mode, flush_to_zero and
    propagate_nan attributes (the result dtype's ``float32``-or-wider compute)."""
    d = op.results[0].type.dtype
    mode = op.attrs.get("rounding_mode")
    if mode is not None and mode.value in numerics.DIRECTED:
        fn = _directed(op.name, d, mode.value)
    if op.name in ("minimum", "maximum") and not op.attrs.get("propagate_nan", False):
        fn = _ignore_nan(fn)
    if op.attrs.get("flush_to_zero"):
        fn = _ftz(fn)
    return fn


@lowers(*_BINARY, bind=True)
def binary(op):
    """Bound: the NumPy function and the result dtype are looked up once per op."""
    fn, dtype = numpy_fn(op, _BINARY[op.name]), out_dtype(op)

    def lower(run, op, args):
        x, y = _up(*args)
        with np.errstate(all="ignore"):
            return fn(x, y).astype(dtype, copy=False)
    return lower


@lowers("pow")
def pow_(run, op, args):
    x, y = _up(*args)
    r = _int_pow(x, y) if x.dtype.kind in "iu" else np.power(x, y)
    return r.astype(out_dtype(op), copy=False)


@lowers("bitwise_lshift", "bitwise_rshift")
def shift(run, op, args):
    x, y = args
    return _shift(x, y, op.name == "bitwise_lshift")


_UNARY = {
    "negative": np.negative, "abs": np.abs, "exp": np.exp, "exp2": np.exp2, "log": np.log,
    "log2": np.log2, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "floor": np.floor,
    "ceil": np.ceil, "isnan": np.isnan,
}


@lowers(*_UNARY, bind=True)
def unary(op):
    """Bound: the NumPy function and the result dtype are looked up once per op."""
    fn, dtype = numpy_fn(op, _UNARY[op.name]), out_dtype(op)

    def lower(run, op, args):
        (x,) = _up(*args)
        with np.errstate(all="ignore"):
            return fn(x).astype(dtype, copy=False)
    return lower


@lowers("bitwise_not")
def bitwise_not(run, op, args):
    (x,) = args
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


@lowers("constant", bind=True)
def constant(op):
    """The value is built once per op; each batch rank gets one read-only array, shared by launches."""
    value = np.asarray(op.attrs["value"]).astype(op.attrs["dtype"].np_dtype)
    shape = op.attrs["shape"]
    by_nb: dict[int, np.ndarray] = {}

    def lower(run, op, args):
        nb = run.nb
        x = by_nb.get(nb)
        if x is None:
            x = by_nb[nb] = np.broadcast_to(value, (1,) * nb + shape)
        return x
    return lower


@lowers("where")
def where(run, op, args):
    c, x, y = args
    return np.where(c, x, y).astype(out_dtype(op), copy=False)


@lowers("astype", bind=True)
def astype(op):
    src, dst = op.operands[0].type.dtype, op.attrs["dtype"]
    mode = op.attrs.get("rounding_mode")
    rounding = mode.value if mode is not None else None

    def lower(run, op, args):
        (x,) = args
        return dt.convert(x, dst, src, rounding)
    return lower


@lowers("bitcast")
def bitcast(run, op, args):
    (x,) = args
    return np.ascontiguousarray(x).view(op.attrs["dtype"].np_dtype)
