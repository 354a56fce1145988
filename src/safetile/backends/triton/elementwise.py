"""Triton lowerings of the element-wise family (ops/elementwise.py).

Semantics follow backends/cpu/elementwise.py: 16-bit floats compute in float32 where one
rounding would differ (division, transcendental functions), integer ``//`` and ``%`` round
toward -inf and give 0 for a zero divisor, shifts past the bit width give 0 (or the sign
fill), float→int conversion truncates and saturates with NaN → 0, min/max propagate NaN.
"""
from __future__ import annotations

from .codegen import Gen, compute_dtype, lowers, tl_dtype

_INFIX = {"add": "+", "sub": "-", "mul": "*", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
          "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
          "greater_equal": ">="}


def _narrow_float(d) -> bool:
    """float8 has no native arithmetic; bfloat16 computes through float32 (identical results for
    single IEEE operations, and Triton's interpreter has no bfloat16 arithmetic)."""
    return d.is_float and (d.bits < 16 or d.name == "bfloat16")


@lowers(*_INFIX)
def infix(g: Gen, op):
    x, y = g.operands(op)
    d = op.operands[0].type.dtype
    sym = _INFIX[op.name]
    if _narrow_float(d):
        expr = f"({g.up(x, d)} {sym} {g.up(y, d)})"
        return expr if op.result.type.dtype.is_bool else g.down(expr, d)
    return f"({x} {sym} {y})"


@lowers("truediv")
def truediv(g: Gen, op):
    x, y = g.operands(op)
    d = op.result.type.dtype
    if d.name == "float64":
        return f"({x} / {y})"
    return g.down(f"tl.div_rn({g.up(g.val(op.operands[0]), d)}, {g.up(g.val(op.operands[1]), d)})", d)


def _int_divmod(g: Gen, op, python_op: str, helper: str):
    a, b = op.operands
    d = op.result.type.dtype
    c = g.const(b)
    if c is not None and c > 0 and (d.kind == "u" or g.nonneg(a)):
        return f"({g.val(a)} {python_op} {g.lit(b)})"
    # non-negative operands: truncating division is floor division (only b == 0 needs care)
    prefix = "_st_u" if d.kind == "u" or (g.nonneg(a) and g.nonneg(b)) else "_st_i"
    return f"{prefix}{helper}({g.val(a)}, {g.val(b)})"


_DIVMOD = {"floordiv": ("_st_ffloordiv", "//"), "mod": ("_st_fmod", "%")}  # float helper, int symbol


@lowers("floordiv", "mod")
def floordiv_mod(g: Gen, op):
    """Python semantics: // rounds toward -inf and % takes the divisor's sign."""
    d = op.result.type.dtype
    float_helper, symbol = _DIVMOD[op.name]
    if d.is_float:
        x, y = (g.up(g.val(v), d) for v in op.operands)
        return g.down(f"{float_helper}({x}, {y})", d)
    return _int_divmod(g, op, symbol, op.name)


@lowers("pow")
def pow_(g: Gen, op):
    d = op.result.type.dtype
    x, y = (g.val(v) for v in op.operands)
    if d.is_int:
        helper = "_st_upow" if d.kind == "u" else "_st_ipow"
        return f"{helper}({x}, {y}, {d.bits})"
    e = g.splat(op.operands[1])
    if e == 2:  # x * x is pow(x, 2) correctly rounded: one rounding either way
        xs = g.tmp(g.up(x, d), "t") if g.up(x, d) != x else x
        return g.down(f"({xs} * {xs})", d)
    return g.down(f"_ld.pow({g.up(x, d)}, {g.up(y, d)})", d)


@lowers("atan2")
def atan2(g: Gen, op):
    d = op.result.type.dtype
    x, y = (g.up(g.val(v), d) for v in op.operands)
    return g.down(f"_ld.atan2({x}, {y})", d)


@lowers("minimum", "maximum")
def min_max(g: Gen, op):
    d = op.result.type.dtype
    x, y = g.operands(op)
    if d.is_bool:
        return f"({x} {'&' if op.name == 'minimum' else '|'} {y})"
    fn = "tl." + op.name
    if d.is_float:
        return g.down(f"{fn}({g.up(x, d)}, {g.up(y, d)}, propagate_nan=tl.PropagateNan.ALL)", d) \
            if _narrow_float(d) else f"{fn}({x}, {y}, propagate_nan=tl.PropagateNan.ALL)"
    return f"{fn}({x}, {y})"


@lowers("bitwise_lshift", "bitwise_rshift")
def shift(g: Gen, op):
    d = op.result.type.dtype
    bits = d.bits
    left = op.name == "bitwise_lshift"
    x = g.val(op.operands[0])
    c = g.const(op.operands[1])
    if c is not None and 0 <= c < bits:
        return f"({x} {'<<' if left else '>>'} {int(c)})"
    y = g.val(op.operands[1])
    big = g.tmp(f"({y} >= {bits})" + (f" | ({y} < 0)" if d.kind == "i" else ""), "t")
    ys = g.tmp(f"tl.where({big}, 0, {y})", "t")
    if left:
        return f"tl.where({big}, 0, {x} << {ys})"
    fill = f"({x} >> {bits - 1})" if d.kind == "i" else "0"
    return f"tl.where({big}, {fill}, {x} >> {ys})"


_FLOAT_UNARY = {"exp": "tl.exp({})", "exp2": "tl.exp2({})", "log": "tl.log({})", "log2": "tl.log2({})",
                "sin": "tl.sin({})", "cos": "tl.cos({})", "tan": "_ld.tan({})", "sinh": "_ld.sinh({})",
                "cosh": "_ld.cosh({})", "tanh": "_ld.tanh({})", "floor": "tl.floor({})", "ceil": "tl.ceil({})"}


@lowers(*_FLOAT_UNARY)
def float_unary(g: Gen, op):
    d = op.result.type.dtype
    return g.down(_FLOAT_UNARY[op.name].format(g.up(g.val(op.operands[0]), d)), d)


@lowers("sqrt", "rsqrt")
def sqrt(g: Gen, op):
    d = op.result.type.dtype
    x = g.up(g.val(op.operands[0]), d)
    if compute_dtype(d).name == "float64":
        s = f"tl.sqrt({x})"
        return f"(1.0 / {s})" if op.name == "rsqrt" else s
    s = f"tl.sqrt_rn({x})"
    return g.down(f"tl.div_rn(1.0, {s})" if op.name == "rsqrt" else s, d)


@lowers("negative")
def negative(g: Gen, op):
    d = op.result.type.dtype
    x = g.val(op.operands[0])
    return g.down(f"(-{g.up(x, d)})", d) if _narrow_float(d) else f"(-{x})"


@lowers("abs")
def abs_(g: Gen, op):
    d = op.result.type.dtype
    x = g.val(op.operands[0])
    if d.kind in "ub":
        return op.operands[0]
    return g.down(f"tl.abs({g.up(x, d)})", d) if _narrow_float(d) else f"tl.abs({x})"


@lowers("bitwise_not")
def bitwise_not(g: Gen, op):
    x = g.val(op.operands[0])
    return f"({x} == 0)" if op.result.type.dtype.is_bool else f"(~{x})"


@lowers("isnan")
def isnan(g: Gen, op):
    x = g.val(op.operands[0])
    d = op.operands[0].type.dtype
    return f"({g.up(x, d)} != {g.up(x, d)})" if d.is_float else f"({x} != {x})"


@lowers("where")
def where(g: Gen, op):
    c, x, y = g.operands(op)
    d = op.result.type.dtype
    if d.is_float and d.bits == 8:  # float8 selects through its bits
        bits = "tl.uint8"
        xv, yv = (g.val(v) for v in op.operands[1:])
        return f"tl.where({c}, {xv}.to({bits}, bitcast=True), {yv}.to({bits}, bitcast=True))" \
               f".to({tl_dtype(d)}, bitcast=True)"
    return f"tl.where({c}, {x}, {y})"


@lowers("astype")
def astype(g: Gen, op):
    return g.cast(g.val(op.operands[0]), op.operands[0].type.dtype, op.attrs["dtype"])


@lowers("bitcast")
def bitcast(g: Gen, op):
    src, dst = op.operands[0].type.dtype, op.attrs["dtype"]
    if tl_dtype(src) == tl_dtype(dst):
        return op.operands[0]
    return f"{g.val(op.operands[0])}.to({tl_dtype(dst)}, bitcast=True)"
