"""Triton lowerings of the element-wise family (ops/elementwise.py).

Semantics follow backends/cpu/elementwise.py: 16-bit floats compute in float32 where one
rounding would differ (division, transcendental functions), integer ``//`` and ``%`` round
toward -inf and give 0 for a zero divisor, shifts past the bit width give 0 (or the sign
fill), float→int conversion truncates and saturates with NaN → 0, min/max propagate NaN.
"""
from __future__ import annotations

from ... import dtypes as dt
from .codegen import Gen, compute_dtype, lowers, tl_dtype

# IEEE rounding modes (ops.rounding.RoundingMode values) → (libdevice suffix, _st_round_dir mode)
_DIRECTED = {"zero": ("rz", 0), "negative_inf": ("rd", 1), "positive_inf": ("ru", 2), "nearest_away": (None, 3)}
_LIBDEVICE = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "sqrt": "sqrt"}


def _mode(op) -> str | None:
    m = op.attrs.get("rounding_mode")
    return m.value if m is not None else None


def _ftz(op, expr: str) -> str:
    return f"_st_ftz({expr})" if op.attrs.get("flush_to_zero") else expr


def _inputs(g: Gen, op) -> list[str]:
    """Operand expressions, float32 subnormals flushed when the op asks for it."""
    return [_ftz(op, g.val(v)) for v in op.operands]


def _directed(g: Gen, op) -> str:
    """add/sub/mul/truediv/sqrt rounded toward zero, down or up: libdevice's directed float32 and
    float64 operations; 16-bit floats compute in float64 with the same mode and round down to
    their format in that mode (directed rounding composes across nested formats)."""
    d = op.result.type.dtype
    mode = _mode(op)
    assert mode is not None  # called for directed rounding modes only
    suffix, flag = _DIRECTED[mode]
    fn = f"_ld.{_LIBDEVICE[op.name]}_{suffix}"
    xs = _inputs(g, op)
    if d.name in ("float32", "float64"):
        return f"{fn}({', '.join(xs)})"
    wide = g.tmp(f"{fn}({', '.join(x + '.to(tl.float64)' for x in xs)})")
    near = g.tmp(g.cast(f"{wide}.to(tl.float32)", dt.float32, d))
    return f"_st_round_dir({wide}, {near}, tl.uint16, 0x8000, {flag})"


def _special(op) -> bool:
    return _mode(op) in ("zero", "negative_inf", "positive_inf") or bool(op.attrs.get("flush_to_zero"))

_INFIX = {"add": "+", "sub": "-", "mul": "*", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
          "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
          "greater_equal": ">="}


def _narrow_float(d) -> bool:
    """float8 has no native arithmetic; bfloat16 computes through float32 (identical results for
    single IEEE operations, and Triton's interpreter has no bfloat16 arithmetic)."""
    return d.is_float and (d.bits < 16 or d.name == "bfloat16")


@lowers(*_INFIX)
def infix(g: Gen, op):
    if _special(op):
        if _mode(op) is not None:
            return _ftz(op, _directed(g, op))
        x, y = _inputs(g, op)
        return _ftz(op, f"({x} {_INFIX[op.name]} {y})")
    x, y = g.operands(op)
    d = op.operands[0].type.dtype
    sym = _INFIX[op.name]
    if _narrow_float(d):
        expr = f"({g.up(x, d)} {sym} {g.up(y, d)})"
        return expr if op.result.type.dtype.is_bool else g.down(expr, d)
    return f"({x} {sym} {y})"


@lowers("truediv")
def truediv(g: Gen, op):
    d = op.result.type.dtype
    mode = _mode(op)
    if mode in ("zero", "negative_inf", "positive_inf"):
        return _ftz(op, _directed(g, op))
    if mode == "approx":  # float32 only: the fast division (exact in the interpreter)
        x, y = _inputs(g, op)
        return _ftz(op, f"tl.fdiv({x}, {y})")
    if op.attrs.get("flush_to_zero"):
        x, y = _inputs(g, op)
        return _ftz(op, f"tl.div_rn({x}, {y})")
    x, y = g.operands(op)
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
    """Floats: a NaN operand wins with propagate_nan, else it is ignored (the prelude's NaN-aware
    combiners, one instruction each when compiled)."""
    d = op.result.type.dtype
    if d.is_bool:
        x, y = g.operands(op)
        return f"({x} {'&' if op.name == 'minimum' else '|'} {y})"
    if d.is_float:
        x, y = (g.up(e, d) for e in _inputs(g, op))
        kind = "nan" if op.attrs.get("propagate_nan") else "num"
        expr = _ftz(op, f"_st_{op.name[:3]}_{kind}({x}, {y})")
        return g.down(expr, d) if _narrow_float(d) else expr
    x, y = g.operands(op)
    return f"tl.{op.name}({x}, {y})"


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


_FLOAT_UNARY = {"exp": "tl.exp({})", "exp2": "_st_exp2({})", "log": "tl.log({})", "log2": "tl.log2({})",
                "sin": "tl.sin({})", "cos": "tl.cos({})", "tan": "_ld.tan({})", "sinh": "_ld.sinh({})",
                "cosh": "_ld.cosh({})", "tanh": "_ld.tanh({})", "floor": "tl.floor({})", "ceil": "tl.ceil({})"}


@lowers(*_FLOAT_UNARY)
def float_unary(g: Gen, op):
    """exp's and tanh's FULL and APPROX modes share one implementation (Triton's exp, libdevice's
    tanh), accurate enough for both; exp2 may flush float32 subnormals."""
    d = op.result.type.dtype
    if op.name == "exp2" and d.name == "float32" and op.attrs.get("flush_to_zero"):
        return f"_st_exp2_ftz({g.val(op.operands[0])})"  # the instruction flushes both sides itself
    (x,) = _inputs(g, op)
    return _ftz(op, g.down(_FLOAT_UNARY[op.name].format(g.up(x, d)), d))


@lowers("sqrt", "rsqrt")
def sqrt(g: Gen, op):
    d = op.result.type.dtype
    if _mode(op) in ("zero", "negative_inf", "positive_inf"):
        return _ftz(op, _directed(g, op))
    if _mode(op) == "approx":
        return _ftz(op, f"tl.sqrt({_inputs(g, op)[0]})")
    x = g.up(_inputs(g, op)[0], d)
    if op.attrs.get("flush_to_zero"):
        s = f"tl.sqrt_rn({x})"
        return _ftz(op, f"tl.div_rn(1.0, {s})" if op.name == "rsqrt" else s)
    if compute_dtype(d).name == "float64":
        s = f"tl.sqrt({x})"
        return f"(1.0 / {s})" if op.name == "rsqrt" else s
    s = f"tl.sqrt_rn({x})"
    return g.down(f"tl.div_rn(1.0, {s})" if op.name == "rsqrt" else s, d)


@lowers("negative")
def negative(g: Gen, op):
    d = op.result.type.dtype
    x = g.val(op.operands[0])
    if d.is_float:  # Triton's unary minus is 0 - x, which gives +0.0 for +0.0; x * -1.0 flips the sign
        return g.down(f"({g.up(x, d)} * -1.0)", d) if _narrow_float(d) else f"({x} * -1.0)"
    return f"(-{x})"


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


_CODED = ("float8_e8m0fnu", "float8_e5m3fnu", "float4_e2m1fn")  # raw codes in uint8 (see codegen.TL)


def _decode(g: Gen, x: str, src: dt.DType) -> str:
    """A value of a coded format as float32."""
    fn = {"float8_e8m0fnu": "_st_e8m0_to_f32", "float8_e5m3fnu": "_st_e5m3_to_f32",
          "float4_e2m1fn": "_st_fp4_to_f32"}[src.name]
    return f"{fn}({x})"


@lowers("astype")
def astype(g: Gen, op):
    """Conversions; coded formats go through float32, and float→float conversions honour the
    rounding_mode attribute (libdevice's directed float64→float32 conversions, then a directed
    step into narrower formats)."""
    src, dst = op.operands[0].type.dtype, op.attrs["dtype"]
    x = g.val(op.operands[0])
    mode = _mode(op)
    if src.name in _CODED:
        if dst.name in _CODED:  # through float32 (exact from either side)
            return astype_from_f32(g, g.tmp(_decode(g, x, src)), dt.float32, dst, mode)
        return g.cast(_decode(g, x, src), dt.float32, dst)
    if dst.name in _CODED or mode is not None:
        return astype_from_f32(g, x, src, dst, mode)
    return g.cast(x, src, dst)


def astype_from_f32(g: Gen, x: str, src: dt.DType, dst: dt.DType, mode: str | None) -> str:
    """``x`` (a float of ``src``) converted to ``dst`` with ``mode`` (None: to nearest even)."""
    exact = dst is src or (dst.name in ("float32", "float64") and (src.bits < dst.bits or src is dt.tfloat32)) \
        or (dst.bits == 16 and src.bits <= 8)
    if exact:  # widening: the same value whatever the mode
        return g.cast(x, src, dst)
    flag = _DIRECTED[mode][1] if mode in _DIRECTED else None
    if src is dt.float64:  # to float32 first, in the same mode (composes), or to nearest
        if mode is not None and flag is not None and flag < 3:
            x = g.tmp(f"_ld.double2float_{_DIRECTED[mode][0]}({x})")
        elif flag == 3:
            x = g.tmp(f"_st_round_dir({x}, {x}.to(tl.float32), tl.uint32, 0x80000000, 3)")
        else:
            x = g.tmp(f"{x}.to(tl.float32)")
        if dst is dt.float32:
            return x
    else:
        x = g.tmp(g.cast(x, src, dt.float32))
    if dst.name == "float8_e8m0fnu":
        return f"_st_e8m0_from_f32({x}, {flag == 2})"
    if dst.name == "float8_e5m3fnu":
        return f"_st_e5m3_from_f32({x})"
    if dst.name == "float4_e2m1fn":
        return f"_st_fp4_from_f32({x})"
    if dst is dt.tfloat32:
        return f"_st_tf32_dir({x}, {flag})" if flag in (0, 3) else g.cast(x, dt.float32, dst)
    near = g.tmp(g.cast(x, dt.float32, dst))
    if flag is None:
        return near
    return f"_st_round_dir({x}, {near}, tl.uint{dst.bits}, {hex(1 << (dst.bits - 1))}, {flag})"


@lowers("bitcast")
def bitcast(g: Gen, op):
    src, dst = op.operands[0].type.dtype, op.attrs["dtype"]
    if tl_dtype(src) == tl_dtype(dst):
        return op.operands[0]
    return f"{g.val(op.operands[0])}.to({tl_dtype(dst)}, bitcast=True)"
