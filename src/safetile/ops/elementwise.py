"""Element-wise ops: arithmetic, comparisons, bitwise, math functions, selection, casts.

The public functions do the type work (promotion, constant operands, rank alignment)
and emit catalogue ops whose operands already share one dtype and one rank; backends
then only broadcast size-1 dimensions. Ops on two Python constants fold at compile time.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Callable

from .. import dtypes as dt
from ..errors import TileTypeError
from ..ir.builder import emit
from ..ir.catalogue import declare
from ..ir.types import TileType
from .values import Tile, as_tile, describe, is_const, static_dtype

FAMILY = "elementwise"


# ----------------------------------------------------------------------------- rules

def _same_dtype_broadcast(types, attrs, out_dtype=None):
    dtypes = {t.dtype for t in types}
    if len(dtypes) != 1:
        raise TileTypeError("operands must share one dtype: " + ", ".join(str(t) for t in types))
    ranks = {len(t.shape) for t in types}
    if len(ranks) != 1:
        raise TileTypeError("operands must have one rank: " + ", ".join(str(t) for t in types))
    try:
        shape = dt.broadcast_shapes(*(t.shape for t in types))
    except ValueError as e:
        raise TileTypeError(str(e)) from None
    return [TileType(out_dtype or types[0].dtype, shape)]


def check_computable(d: dt.DType, what: str) -> None:
    """Narrow storage formats (float8) are for load/store, conversion and mma only."""
    if d.storage_only:
        raise TileTypeError(f"{what}: {d.name} is a storage-only type (load, store, astype, bitcast and "
                            f"mma); convert it with .astype(ct.float32) first")


def _computable(types):
    for t in types:
        check_computable(t.dtype, "element-wise arithmetic")


def _arith_rule(types, attrs):
    _computable(types)
    return _same_dtype_broadcast(types, attrs)


def _compare_rule(types, attrs):
    _computable(types)
    return _same_dtype_broadcast(types, attrs, dt.bool_)


def _float_rule(types, attrs):
    _computable(types)
    if not types[0].dtype.is_float:
        raise TileTypeError(f"expected a float tile, got {types[0]}")
    return _same_dtype_broadcast(types, attrs)


def _int_rule(types, attrs):
    if types[0].dtype.is_float:
        raise TileTypeError(f"expected an integer or bool tile, got {types[0]}")
    return _same_dtype_broadcast(types, attrs)


def _isnan_rule(types, attrs):
    _computable(types)
    return [TileType(dt.bool_, types[0].shape)]


# ----------------------------------------------------------------------------- ops

# name: (doc, rule, python folding function)
BINARY: dict[str, tuple[str, Callable, Callable]] = {
    "add": ("x + y", _arith_rule, operator.add),
    "sub": ("x - y", _arith_rule, operator.sub),
    "mul": ("x * y", _arith_rule, operator.mul),
    "truediv": ("x / y (integer operands are converted to float first: float32, or float64 for 64-bit "
                "integers)", _float_rule, operator.truediv),
    "floordiv": ("x // y, rounding toward negative infinity (Python semantics; integer division by zero "
                 "is undefined, the CPU backend gives 0)", _arith_rule, operator.floordiv),
    "mod": ("x % y with the sign of y (Python semantics; integer modulo by zero is undefined, the CPU "
            "backend gives 0)", _arith_rule, operator.mod),
    "pow": ("x ** y; for integers a negative exponent gives 1 / x ** -y truncated toward zero (1, -1 "
            "or 0)", _arith_rule, operator.pow),
    "atan2": ("atan2(x, y), float only", _float_rule, math.atan2),
    "minimum": ("element-wise minimum (NaN propagates)", _arith_rule, min),
    "maximum": ("element-wise maximum (NaN propagates)", _arith_rule, max),
    "bitwise_and": ("x & y on integers and bools", _int_rule, operator.and_),
    "bitwise_or": ("x | y on integers and bools", _int_rule, operator.or_),
    "bitwise_xor": ("x ^ y on integers and bools", _int_rule, operator.xor),
    "bitwise_lshift": ("x << y on integers (shifting by the bit width or more gives 0; bools count as "
                       "int32)", _int_rule, operator.lshift),
    "bitwise_rshift": ("x >> y on integers, arithmetic for signed types (shifting by the width or more "
                       "gives 0 or -1; bools count as int32)", _int_rule, operator.rshift),
}
COMPARE: dict[str, tuple[str, Callable]] = {
    "equal": ("x == y", operator.eq),
    "not_equal": ("x != y", operator.ne),
    "less": ("x < y", operator.lt),
    "less_equal": ("x <= y", operator.le),
    "greater": ("x > y", operator.gt),
    "greater_equal": ("x >= y", operator.ge),
}
# name: (doc, needs float, python folding function)
UNARY: dict[str, tuple[str, bool, Callable]] = {
    "negative": ("-x (integers wrap around; bools count as int32)", False, operator.neg),
    "abs": ("|x| (integers wrap: the minimum value stays negative)", False, abs),
    "exp": ("e ** x", True, math.exp),
    "exp2": ("2 ** x", True, lambda x: 2.0 ** x),
    "log": ("natural logarithm", True, math.log),
    "log2": ("base-2 logarithm", True, math.log2),
    "sqrt": ("square root", True, math.sqrt),
    "rsqrt": ("1 / sqrt(x)", True, lambda x: 1.0 / math.sqrt(x)),
    "sin": ("sine", True, math.sin),
    "cos": ("cosine", True, math.cos),
    "tan": ("tangent", True, math.tan),
    "sinh": ("hyperbolic sine", True, math.sinh),
    "cosh": ("hyperbolic cosine", True, math.cosh),
    "tanh": ("hyperbolic tangent", True, math.tanh),
    "floor": ("round toward negative infinity", False, math.floor),
    "ceil": ("round toward positive infinity", False, math.ceil),
    "bitwise_not": ("~x on integers; logical not on bools", False, operator.invert),
}

for _name, (_doc, _rule, _) in BINARY.items():
    declare(_name, FAMILY, _doc, _rule)
for _name, (_doc, _) in COMPARE.items():
    declare(_name, FAMILY, _doc, _compare_rule)
for _name, (_doc, _needs_float, _) in UNARY.items():
    declare(_name, FAMILY, _doc, _float_rule if _needs_float else
            (_int_rule if _name == "bitwise_not" else _arith_rule))
declare("isnan", FAMILY, "true where x is NaN", _isnan_rule)


def _constant_rule(types, attrs):
    return [TileType(attrs["dtype"], attrs["shape"])]


declare("constant", FAMILY, "a tile filled with one compile-time value (attrs value, dtype, shape)",
        _constant_rule)


def _where_rule(types, attrs):
    cond, x, y = types
    if not cond.dtype.is_bool:
        raise TileTypeError(f"where: condition must be a bool tile, got {cond}")
    if x.dtype is not y.dtype:
        raise TileTypeError(f"where: branches must share one dtype: {x}, {y}")
    return [TileType(x.dtype, _same_dtype_broadcast([TileType(x.dtype, t.shape) for t in types], attrs)[0].shape)]


declare("where", FAMILY, "select x where cond is true, else y", _where_rule)


def _astype_rule(types, attrs):
    return [TileType(attrs["dtype"], types[0].shape)]


def _bitcast_rule(types, attrs):
    src, dst = types[0].dtype, attrs["dtype"]
    if src.bits != dst.bits:
        raise TileTypeError(f"bitcast needs equal bit widths: {src.name} has {src.bits}, {dst.name} has {dst.bits}")
    return [TileType(dst, types[0].shape)]


declare("astype", FAMILY, "convert values to another dtype (float→int truncates toward zero and "
        "saturates; NaN becomes 0)", _astype_rule)
declare("bitcast", FAMILY, "reinterpret the bits as another dtype of the same width", _bitcast_rule)


# ----------------------------------------------------------------------------- helpers

def align_rank(t: Tile, ndim: int) -> Tile:
    """Prepend unit dimensions so ``t`` has rank ``ndim`` (NumPy's right alignment)."""
    if t.ndim == ndim:
        return t
    shape = (1,) * (ndim - t.ndim) + t.shape
    return Tile(emit("reshape", [t.value], {"shape": shape}).result)


def cast(t: Tile, dtype: dt.DType) -> Tile:
    if t.dtype is dtype:
        return t
    return Tile(emit("astype", [t.value], {"dtype": dtype}).result)


def _operand_dtype(args: list[Any]) -> dt.DType:
    tiles = [a for a in args if isinstance(a, Tile)]
    d = tiles[0].dtype
    for t in tiles[1:]:
        d = dt.promote(d, t.dtype)
    for c in args:
        if is_const(c):
            d = dt.promote_with_scalar(d, c)
    return d


def unify(args: list[Any], dtype: dt.DType | None = None) -> list[Tile]:
    """Promote tiles and constants to one dtype and one rank (the IR's operand contract)."""
    for a in args:
        if not isinstance(a, Tile) and not is_const(a):
            raise TileTypeError(f"expected a tile or a number, got {describe(a)}")
    d = dtype or _operand_dtype(args)
    tiles = [cast(as_tile(a, d), d) for a in args]
    ndim = max(t.ndim for t in tiles)
    return [align_rank(t, ndim) for t in tiles]


def _fold(fn: Callable, *args):
    try:
        return fn(*args)
    except (ZeroDivisionError, OverflowError, ValueError) as e:
        raise TileTypeError(f"constant expression failed: {e}") from None


def _float_of(d: dt.DType) -> dt.DType:
    if d.is_float:
        return d
    return dt.float64 if d.bits == 64 else dt.float32


def binary(name: str, x: Any, y: Any, **hints) -> Any:
    """Apply binary op ``name``; two constants fold in Python."""
    if is_const(x) and is_const(y):
        fn = BINARY[name][2] if name in BINARY else COMPARE[name][1]
        return _fold(fn, x, y)
    if not isinstance(x, Tile) and not isinstance(y, Tile):
        raise TileTypeError(f"{name}: expected tiles or numbers, got {describe(x)} and {describe(y)}")
    args = [x, y]
    d = _operand_dtype(args)
    if name.startswith("bitwise") and d.is_float:
        raise TileTypeError(f"{name} needs integer or bool operands, got {d.name}")
    a, b = unify(args, d)  # promotion first, then the op's own conversions
    if name in ("truediv", "atan2") and not d.is_float:
        d = _float_of(d)
        a, b = cast(a, d), cast(b, d)
    if d.is_bool and name in ("add", "sub", "mul", "floordiv", "mod", "pow", "bitwise_lshift", "bitwise_rshift"):
        a, b = cast(a, dt.int32), cast(b, dt.int32)
    attrs = {k: v for k, v in hints.items() if v is not None}
    return Tile(emit(name, [a.value, b.value], attrs).result)


def unary(name: str, x: Any, **hints) -> Any:
    doc, needs_float, fn = UNARY[name] if name in UNARY else ("", False, math.isnan)
    if is_const(x):
        return _fold(fn, x)
    if not isinstance(x, Tile):
        raise TileTypeError(f"{name}: expected a tile or a number, got {describe(x)}")
    if needs_float:
        x = cast(x, _float_of(x.dtype))
    elif name in ("floor", "ceil") and not x.dtype.is_float:
        return x
    elif name == "bitwise_not" and x.dtype.is_float:
        raise TileTypeError(f"bitwise_not needs an integer or bool tile, got {x.type}")
    elif name in ("negative", "abs") and x.dtype.is_bool:
        x = cast(x, dt.int32)
    attrs = {k: v for k, v in hints.items() if v is not None}
    return Tile(emit(name, [x.value], attrs).result)


# ----------------------------------------------------------------------------- public API

def add(x, y, /, *, rounding_mode=None, flush_to_zero=None):
    """x + y, element-wise with broadcasting."""
    return binary("add", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


def sub(x, y, /, *, rounding_mode=None, flush_to_zero=None):
    """x - y, element-wise with broadcasting."""
    return binary("sub", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


def mul(x, y, /, *, rounding_mode=None, flush_to_zero=None):
    """x * y, element-wise with broadcasting."""
    return binary("mul", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


def truediv(x, y, /, *, rounding_mode=None, flush_to_zero=None):
    """x / y; integer operands are converted to float first (Python semantics)."""
    return binary("truediv", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


def floordiv(x, y, /):
    """x // y, rounding toward negative infinity."""
    return binary("floordiv", x, y)


def mod(x, y, /):
    """x % y, the result takes the sign of y."""
    return binary("mod", x, y)


def pow(x, y, /):
    """x ** y."""
    return binary("pow", x, y)


def atan2(x, y, /):
    """Four-quadrant arctangent of x / y."""
    return binary("atan2", x, y)


def minimum(x, y, /):
    """Element-wise minimum."""
    return binary("minimum", x, y)


def maximum(x, y, /):
    """Element-wise maximum."""
    return binary("maximum", x, y)


def bitwise_and(x, y, /):
    """x & y on integer or bool tiles."""
    return binary("bitwise_and", x, y)


def bitwise_or(x, y, /):
    """x | y on integer or bool tiles."""
    return binary("bitwise_or", x, y)


def bitwise_xor(x, y, /):
    """x ^ y on integer or bool tiles."""
    return binary("bitwise_xor", x, y)


def bitwise_lshift(x, y, /):
    """x << y on integers; shifting by the bit width or more gives 0."""
    return binary("bitwise_lshift", x, y)


def bitwise_rshift(x, y, /):
    """x >> y on integers (arithmetic for signed types); shifting by the width or more gives 0 or -1."""
    return binary("bitwise_rshift", x, y)


def bitwise_not(x, /):
    """~x on integers; logical not on bools."""
    return unary("bitwise_not", x)


def equal(x, y, /):
    """x == y element-wise, a bool tile."""
    return binary("equal", x, y)


def not_equal(x, y, /):
    """x != y element-wise, a bool tile."""
    return binary("not_equal", x, y)


def less(x, y, /):
    """x < y element-wise, a bool tile."""
    return binary("less", x, y)


def less_equal(x, y, /):
    """x <= y element-wise, a bool tile."""
    return binary("less_equal", x, y)


def greater(x, y, /):
    """x > y element-wise, a bool tile."""
    return binary("greater", x, y)


def greater_equal(x, y, /):
    """x >= y element-wise, a bool tile."""
    return binary("greater_equal", x, y)


def divmod(x, y, /):
    """(x // y, x % y) for integer tiles."""
    return floordiv(x, y), mod(x, y)


def _unary_fn(name: str):
    def fn(x, /, *, rounding_mode=None, flush_to_zero=None):
        return unary(name, x, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = UNARY[name][0]
    return fn


negative = _unary_fn("negative")
abs = _unary_fn("abs")
exp = _unary_fn("exp")
exp2 = _unary_fn("exp2")
log = _unary_fn("log")
log2 = _unary_fn("log2")
sqrt = _unary_fn("sqrt")
rsqrt = _unary_fn("rsqrt")
sin = _unary_fn("sin")
cos = _unary_fn("cos")
tan = _unary_fn("tan")
sinh = _unary_fn("sinh")
cosh = _unary_fn("cosh")
tanh = _unary_fn("tanh")
floor = _unary_fn("floor")
ceil = _unary_fn("ceil")


def isnan(x, /):
    """True where x is NaN (always false for integer tiles)."""
    if is_const(x):
        return isinstance(x, float) and math.isnan(x)
    if not isinstance(x, Tile):
        raise TileTypeError(f"isnan: expected a tile, got {describe(x)}")
    return Tile(emit("isnan", [x.value]).result)


def where(cond, x, y, /):
    """Select x where cond is true, else y (all three broadcast)."""
    if is_const(cond):
        return x if cond else y
    if not isinstance(cond, Tile):
        raise TileTypeError(f"where: condition must be a bool tile, got {describe(cond)}")
    if not cond.dtype.is_bool:
        cond = not_equal(cond, 0)
    if is_const(x) and is_const(y):
        d = dt.promote(dt.scalar_dtype(x), dt.scalar_dtype(y))
    else:
        d = _operand_dtype([x, y])
    a, b = unify([x, y], d)
    ndim = max(cond.ndim, a.ndim)
    c, a, b = align_rank(cond, ndim), align_rank(a, ndim), align_rank(b, ndim)
    return Tile(emit("where", [c.value, a.value, b.value]).result)


def astype(x, dtype, /, *, rounding_mode=None):
    """Convert to ``dtype``; float→int truncates toward zero and saturates (NaN → 0)."""
    d = static_dtype(dtype)
    if is_const(x):
        return as_tile(x, d)
    if not isinstance(x, Tile):
        raise TileTypeError(f"astype: expected a tile, got {describe(x)}")
    return cast(x, d)


def bitcast(x, dtype, /):
    """Reinterpret the bits of x as ``dtype`` (same bit width)."""
    d = static_dtype(dtype)
    x = as_tile(x)
    return Tile(emit("bitcast", [x.value], {"dtype": d}).result)


# ----------------------------------------------------------------------------- operators

def _attach_operators() -> None:
    def swap(fn):
        return lambda self, other: fn(other, self)

    table = {
        "__add__": add, "__sub__": sub, "__mul__": mul, "__truediv__": truediv,
        "__floordiv__": floordiv, "__mod__": mod, "__pow__": pow,
        "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
        "__lshift__": bitwise_lshift, "__rshift__": bitwise_rshift,
    }
    for name, fn in table.items():
        setattr(Tile, name, lambda self, other, fn=fn: fn(self, other))
        setattr(Tile, "__r" + name[2:], swap(fn))
    for name, fn in {"__eq__": equal, "__ne__": not_equal, "__lt__": less, "__le__": less_equal,
                     "__gt__": greater, "__ge__": greater_equal}.items():
        setattr(Tile, name, lambda self, other, fn=fn: fn(self, other))
    Tile.__hash__ = object.__hash__
    Tile.__neg__ = lambda self: negative(self)
    Tile.__pos__ = lambda self: self
    Tile.__abs__ = lambda self: abs(self)
    Tile.__invert__ = lambda self: bitwise_not(self)
    Tile.__matmul__ = lambda self, other: __import__("safetile.ops.matmul", fromlist=["matmul"]).matmul(self, other)
    Tile.__rmatmul__ = lambda self, other: __import__("safetile.ops.matmul", fromlist=["matmul"]).matmul(other, self)


_attach_operators()
