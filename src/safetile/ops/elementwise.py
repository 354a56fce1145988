"""Element-wise ops: arithmetic, comparisons, bitwise, math functions, selection, casts.

The public functions do the type work (promotion, constant operands, rank alignment)
and emit catalogue ops whose operands already share one dtype and one rank; backends
then only broadcast size-1 dimensions. Ops on two Python constants fold at compile time.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any
from collections.abc import Callable

from .. import dtypes as dt
from ..errors import TileTypeError, TileValueError
from ..ir.builder import emit
from ..ir.catalogue import declare
from ..ir.types import TileType
from .rounding import RoundingMode, check_flag, check_mode, conversion_modes, rounding_attrs
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
    "add": ("x + y (attrs rounding_mode, flush_to_zero)", _arith_rule, operator.add),
    "sub": ("x - y (attrs rounding_mode, flush_to_zero)", _arith_rule, operator.sub),
    "mul": ("x * y (attrs rounding_mode, flush_to_zero)", _arith_rule, operator.mul),
    "truediv": ("x / y on floats (the public function converts integer and bool operands to float32); "
                "attrs rounding_mode, flush_to_zero", _float_rule, operator.truediv),
    "floordiv": ("x // y, rounding toward negative infinity (Python semantics; integer division by zero "
                 "is undefined, the CPU backend gives 0)", _arith_rule, operator.floordiv),
    "mod": ("x % y with the sign of y (Python semantics; integer modulo by zero is undefined, the CPU "
            "backend gives 0)", _arith_rule, operator.mod),
    "pow": ("x ** y; for integers a negative exponent gives 1 / x ** -y truncated toward zero (1, -1 "
            "or 0)", _arith_rule, operator.pow),
    "atan2": ("atan2(x, y), float only", _float_rule, math.atan2),
    "minimum": ("element-wise minimum; a NaN operand is ignored unless attr propagate_nan (attr "
                "flush_to_zero)", _arith_rule, min),
    "maximum": ("element-wise maximum; a NaN operand is ignored unless attr propagate_nan (attr "
                "flush_to_zero)", _arith_rule, max),
    "bitwise_and": ("x & y on integers and bools", _int_rule, operator.and_),
    "bitwise_or": ("x | y on integers and bools", _int_rule, operator.or_),
    "bitwise_xor": ("x ^ y on integers and bools", _int_rule, operator.xor),
    "bitwise_lshift": ("x << y on integers (shifting by the bit width or more gives 0)", _int_rule,
                       operator.lshift),
    "bitwise_rshift": ("x >> y on integers, arithmetic for signed types (shifting by the width or more "
                       "gives 0 or -1)", _int_rule, operator.rshift),
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
    "negative": ("-x (integers wrap around)", False, operator.neg),
    "abs": ("|x| (integers wrap: the minimum value stays negative; bools are unchanged)", False, abs),
    "exp": ("e ** x (attr rounding_mode FULL or APPROX)", True, math.exp),
    "exp2": ("2 ** x (attr flush_to_zero)", True, lambda x: 2.0 ** x),
    "log": ("natural logarithm", True, math.log),
    "log2": ("base-2 logarithm", True, math.log2),
    "sqrt": ("square root (attrs rounding_mode, flush_to_zero)", True, math.sqrt),
    "rsqrt": ("1 / sqrt(x) (attr flush_to_zero)", True, lambda x: 1.0 / math.sqrt(x)),
    "sin": ("sine", True, math.sin),
    "cos": ("cosine", True, math.cos),
    "tan": ("tangent", True, math.tan),
    "sinh": ("hyperbolic sine", True, math.sinh),
    "cosh": ("hyperbolic cosine", True, math.cosh),
    "tanh": ("hyperbolic tangent (attr rounding_mode FULL or APPROX)", True, math.tanh),
    "floor": ("round toward negative infinity (floats only)", True, math.floor),
    "ceil": ("round toward positive infinity (floats only)", True, math.ceil),
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
        "saturates; NaN becomes 0; attr rounding_mode for float→float)", _astype_rule)
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


def _operand_dtype(args: list[Any], force_float: bool = False) -> dt.DType:
    """The common dtype of tiles and Python constants (cuTile Python's promotion rules)."""
    tiles = [a for a in args if isinstance(a, Tile)]
    d = tiles[0].dtype
    for t in tiles[1:]:
        d = dt.promote(d, t.dtype)
    for c in args:
        if is_const(c):
            d = dt.promote_constant(d, c, force_float)
    return d if not force_float or d.is_float else dt.float32


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
        raise TileValueError(str(e)) from None
    except TypeError as e:
        raise TileTypeError(str(e)) from None


_ARITH = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "atan2", "minimum", "maximum"}
_BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor"}
_SHIFT = {"bitwise_lshift", "bitwise_rshift"}


def _check_operands(name: str, x: Any, y: Any) -> None:
    """cuTile Python's operand rules per kind of binary op (errors before any promotion)."""
    dx = x.dtype if isinstance(x, Tile) else dt.scalar_dtype(x)
    dy = y.dtype if isinstance(y, Tile) else dt.scalar_dtype(y)
    if name in _BITWISE:
        if dx.is_float or dy.is_float:
            raise TileTypeError("Bitwise operations require integers or booleans. Use an explicit "
                                "ct.bitcast() for non-integer operands.")
        if isinstance(x, Tile) == isinstance(y, Tile) and dx is not dy:
            raise TileTypeError(f"Bitwise operands must have same data type, got: {dx.name} and {dy.name}")
        if {dx.name, dy.name} == {"bool_", "int8"}:
            raise TileTypeError("Bitwise op does not support bool and int8")
    elif name in _SHIFT:
        for side, d in (("left", dx), ("right", dy)):
            if not d.is_int:
                raise TileTypeError(f"Bitwise shift requires an integer for {side}-hand side, got: {d.name}")
    elif name in _ARITH:
        for side, d in (("Left", dx), ("Right", dy)):
            if dt.is_restricted(d):
                raise TileTypeError(f"{side}-hand side has non-arithmetic dtype {d.name}")


def binary(name: str, x: Any, y: Any, rounding_mode=None, flush_to_zero=False, propagate_nan=None) -> Any:
    """Apply binary op ``name`` with cuTile Python's typing; two constants fold in Python."""
    if is_const(x) and is_const(y):
        if name == "mod" and isinstance(x, bool) and isinstance(y, bool):
            raise TileTypeError("Modulo operation does not support bool")
        fn = BINARY[name][2] if name in BINARY else COMPARE[name][1]
        return _fold(fn, x, y)
    if not isinstance(x, Tile) and not isinstance(y, Tile):
        raise TileTypeError(f"{name}: expected tiles or numbers, got {describe(x)} and {describe(y)}")
    for v in (x, y):
        if not isinstance(v, Tile) and not is_const(v):
            raise TileTypeError(f"{name}: expected a tile or a number, got {describe(v)}")
    _check_operands(name, x, y)
    d = _operand_dtype([x, y], force_float=name == "truediv")
    if name in _ARITH and d.is_bool:
        if name == "mod":
            raise TileTypeError("Modulo operation does not support bool")
        raise TileTypeError(f"Binary arithmetic op `{name}` does not support bool, please cast bool to int")
    if name == "atan2" and not d.is_float:
        d = dt.float32
    attrs = rounding_attrs(name, rounding_mode, flush_to_zero, d)
    if propagate_nan is not None:
        check_flag(propagate_nan, "propagate_nan")
        if d.is_float:
            attrs["propagate_nan"] = propagate_nan
    a, b = unify([x, y], d)
    return Tile(emit(name, [a.value, b.value], attrs).result)


# unary op -> what it does with (bool, integer) inputs: "float" converts to float32, "int" to
# int32, "keep" keeps the dtype, None is an error (cuTile Python's unary behaviours)
_UNARY_INPUTS: dict[str, tuple[str | None, str | None]] = {
    "negative": ("int", "keep"), "abs": ("keep", "keep"), "floor": (None, None), "ceil": (None, None),
    "bitwise_not": ("keep", "keep"),
}


def unary(name: str, x: Any, rounding_mode=None, flush_to_zero=False) -> Any:
    fn = UNARY[name][2]
    if is_const(x):
        if name == "bitwise_not" and isinstance(x, float):
            raise TileTypeError("Float inputs are not supported")
        if name == "bitwise_not" and isinstance(x, bool):
            return not x
        return _fold(fn, x)
    if not isinstance(x, Tile):
        raise TileTypeError(f"{name}: expected a tile or a number, got {describe(x)}")
    on_bool, on_int = _UNARY_INPUTS.get(name, ("float", "float"))
    if dt.is_restricted(x.dtype):
        raise TileTypeError(f"{name}: {x.dtype.name} is a restricted float type without arithmetic; convert it "
                            f"with .astype(ct.float32) first")
    if not x.dtype.is_float:
        rule = on_bool if x.dtype.is_bool else on_int
        if rule is None:
            raise TileTypeError("Boolean inputs are not supported" if x.dtype.is_bool else
                                "Integer inputs are not supported")
        if rule == "float":
            x = cast(x, dt.float32)
        elif rule == "int":
            x = cast(x, dt.int32)
    elif name == "bitwise_not":
        raise TileTypeError("Float inputs are not supported")
    attrs = rounding_attrs(name, rounding_mode, flush_to_zero, x.dtype)
    return Tile(emit(name, [x.value], attrs).result)


# ----------------------------------------------------------------------------- public API

def add(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """x + y, element-wise with broadcasting."""
    return binary("add", x, y, rounding_mode, flush_to_zero)


def sub(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """x - y, element-wise with broadcasting."""
    return binary("sub", x, y, rounding_mode, flush_to_zero)


def mul(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """x * y, element-wise with broadcasting."""
    return binary("mul", x, y, rounding_mode, flush_to_zero)


def truediv(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """x / y; integer and bool operands are converted to float32 first."""
    return binary("truediv", x, y, rounding_mode, flush_to_zero)


def floordiv(x, y, /):
    """x // y, rounding toward negative infinity."""
    return binary("floordiv", x, y)


def mod(x, y, /):
    """x % y, the result takes the sign of y."""
    return binary("mod", x, y)


def pow(x, y, /):
    """x ** y."""
    return binary("pow", x, y)


def atan2(x1, x2, /):
    """Four-quadrant arctangent of x1 / x2."""
    return binary("atan2", x1, x2)


def minimum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """Element-wise minimum; a NaN operand is ignored unless ``propagate_nan``."""
    return binary("minimum", x, y, None, flush_to_zero, propagate_nan)


def maximum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """Element-wise maximum; a NaN operand is ignored unless ``propagate_nan``."""
    return binary("maximum", x, y, None, flush_to_zero, propagate_nan)


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
    """(x // y, x % y) for integer operands (floats are not supported, as in cuTile Python)."""
    if is_const(x) and is_const(y):
        if isinstance(x, bool) and isinstance(y, bool):
            raise TileTypeError("divmod() operation does not support bool")
        return _fold(builtins.divmod, x, y)
    for v in (x, y):
        if not isinstance(v, Tile) and not is_const(v):
            raise TileTypeError(f"divmod: expected a tile or a number, got {describe(v)}")
    d = _operand_dtype([x, y])
    if d.is_bool:
        raise TileTypeError("divmod() operation does not support bool")
    if d.is_float:
        raise TileTypeError("divmod() is not implemented for floating point values")
    return floordiv(x, y), mod(x, y)


def _unary_fn(name: str, rounding: bool, ftz: bool) -> Callable[..., Any]:
    doc = UNARY[name][0]
    fn: Callable[..., Any]
    if rounding and ftz:
        def rounded_ftz(x, /, *, rounding_mode=None, flush_to_zero=False):
            return unary(name, x, rounding_mode, flush_to_zero)
        fn = rounded_ftz
    elif rounding:
        def rounded(x, /, *, rounding_mode=None):
            return unary(name, x, rounding_mode)
        fn = rounded
    elif ftz:
        def ftz_only(x, /, *, flush_to_zero=False):
            return unary(name, x, None, flush_to_zero)
        fn = ftz_only
    else:
        def plain(x, /):
            return unary(name, x)
        fn = plain
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


negative = _unary_fn("negative", False, False)
abs = _unary_fn("abs", False, False)
exp = _unary_fn("exp", True, False)
exp2 = _unary_fn("exp2", False, True)
log = _unary_fn("log", False, False)
log2 = _unary_fn("log2", False, False)
sqrt = _unary_fn("sqrt", True, True)
rsqrt = _unary_fn("rsqrt", False, True)
sin = _unary_fn("sin", False, False)
cos = _unary_fn("cos", False, False)
tan = _unary_fn("tan", False, False)
sinh = _unary_fn("sinh", False, False)
cosh = _unary_fn("cosh", False, False)
tanh = _unary_fn("tanh", True, False)
floor = _unary_fn("floor", False, False)
ceil = _unary_fn("ceil", False, False)


def isnan(x, /):
    """True where x is NaN (always false for integer tiles)."""
    if is_const(x):
        return isinstance(x, float) and math.isnan(x)
    if not isinstance(x, Tile):
        raise TileTypeError(f"isnan: expected a tile, got {describe(x)}")
    if dt.is_restricted(x.dtype):
        x = cast(x, dt.float32)
    return Tile(emit("isnan", [x.value]).result)


def where(cond, x, y, /):
    """Select x where cond is true, else y (all three broadcast; x and y promoted together)."""
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
    """Convert to ``dtype``; float→int truncates toward zero and saturates (NaN → 0).

    ``rounding_mode`` applies to float→float conversions (the modes cuTile Python supports
    per pair of types; conversions to float8_e8m0fnu need RZ or RP)."""
    d = static_dtype(dtype)
    mode = check_mode(rounding_mode)
    if is_const(x):
        if mode not in (None, RoundingMode.RN):
            raise TileTypeError("rounding_mode is only valid for float to float conversions of tiles")
        return as_tile(x, d)
    if not isinstance(x, Tile):
        raise TileTypeError(f"astype: expected a tile, got {describe(x)}")
    float_to_float = x.dtype.is_float and d.is_float
    if mode is not None and not float_to_float:
        raise TileTypeError("rounding_mode is only valid for float to float conversions")
    if x.dtype is d:
        return x
    if float_to_float:
        allowed = conversion_modes(x.dtype, d)
        effective = mode or RoundingMode.RN
        if effective not in allowed:
            raise TileTypeError(f"rounding_mode={effective} is not supported for conversion from {x.dtype.name} to "
                                f"{d.name}, supported rounding modes for this conversion are "
                                f"{tuple(str(m) for m in allowed)}")
        if effective is not RoundingMode.RN:
            return Tile(emit("astype", [x.value], {"dtype": d, "rounding_mode": effective}).result)
    return cast(x, d)


def implicit_cast(value: Any, target: dt.DType, context: str) -> Tile:
    """``value`` as a tile of ``target`` where cuTile Python converts implicitly (stores, scatters,
    atomics): only widening within the promotion rules, and constants that fit ``target``'s
    category and range. ``context`` leads the error message."""
    if is_const(value):
        src = dt.scalar_dtype(value)
        cat = {"b": 0, "i": 1, "u": 1, "f": 2}
        if target.is_bool:
            if not (src.is_bool or src.is_int) or value not in (0, 1):
                raise TileTypeError(f"{context}: cannot implicitly cast {value!r} to {target.name}")
        elif cat[src.kind] > cat[target.kind]:
            raise TileTypeError(f"{context}: cannot implicitly cast {value!r} to {target.name}")
        elif src.is_int and target.is_int and not isinstance(value, bool):
            info = target.info()
            if not info.min <= int(value) <= info.max:
                raise TileValueError(f"{context}: {value} is out of range of {target.name}")
        return as_tile(value, target)
    if not isinstance(value, Tile):
        raise TileTypeError(f"{context}: expected a tile or a number, got {describe(value)}")
    if value.dtype is not target and dt.try_promote(value.dtype, target) is not target:
        raise TileTypeError(f"{context}: cannot implicitly cast {value.dtype.name} to {target.name}")
    return cast(value, target)


def bitcast(x, /, dtype):
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
    unary_table: dict[str, Callable[..., Any]] = {
        "__hash__": object.__hash__,
        "__neg__": lambda self: negative(self),
        "__pos__": lambda self: self,
        "__abs__": lambda self: abs(self),
        "__invert__": lambda self: bitwise_not(self),
        "__matmul__": lambda self, other: __import__("safetile.ops.matmul", fromlist=["matmul"]).matmul(self, other),
        "__rmatmul__": lambda self, other: __import__("safetile.ops.matmul", fromlist=["matmul"]).matmul(other, self),
    }
    for name, method in unary_table.items():
        setattr(Tile, name, method)


_attach_operators()
