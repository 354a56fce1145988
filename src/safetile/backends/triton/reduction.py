"""Triton lowerings of the reduction family (ops/reduction.py).

Built-in reductions use ``tl.sum``/``tl.max``/``tl.reduce`` one axis at a time (highest
axis first, so lower axis numbers stay valid); 16-bit floats accumulate in float32 and
integers wrap in their own width like the CPU backend. Sums and products with a directed
rounding mode or flush_to_zero combine with the prelude's ``_st_add_rz``-style functions.
Max/min use NaN-aware combiners, argmax/argmin carry (value, index) pairs with NaN counted
as the extreme (propagate_nan) or ignored, and ties going to the lower index. Custom
reductions and scans compile their combining region into a generated ``@triton.jit``
function for ``tl.reduce`` / ``tl.associative_scan``.
"""
from __future__ import annotations

import math

from .codegen import Gen, compute_dtype, lowers, tl_dtype

_NATIVE_SUM = ("int32", "int64", "uint32", "uint64", "float32", "float64", "tfloat32")


def _axes_desc(op):
    return sorted(op.attrs["axes"], reverse=True)


def _reduce_chain(g: Gen, x: str, op, call: str) -> str:
    kd = op.attrs["keepdims"]
    axes = _axes_desc(op)
    for i, a in enumerate(axes):
        expr = call.format(x=x, axis=a, kd=kd)
        x = expr if i == len(axes) - 1 else g.tmp(expr)
    return x


_DIRECTED = {"zero": ("rz", 0), "negative_inf": ("rd", 1), "positive_inf": ("ru", 2)}


def _combiner(op, base: str) -> str | None:
    """The prelude combine function for a sum/product with rounding_mode or flush_to_zero
    (``_st_add_rz``, ``_st_mul_ftz``...), or None for the plain operation."""
    mode = op.attrs.get("rounding_mode")
    if mode is not None and mode.value in _DIRECTED:
        return f"_st_{base}_{_DIRECTED[mode.value][0]}"
    if op.attrs.get("flush_to_zero"):
        return f"_st_{base}_ftz"
    return None


def _finish(g: Gen, op, out: str, d) -> str:
    """Back to 16-bit floats in the op's rounding mode (they accumulate in float32)."""
    mode = op.attrs.get("rounding_mode")
    if mode is None or mode.value not in _DIRECTED or not (d.is_float and d.bits == 16):
        return _native(g, out, d, op.name in ("reduce_sum", "cumsum"))
    wide = g.tmp(out)
    near = g.tmp(g.down(wide, d))
    return f"_st_round_dir({wide}, {near}, tl.uint16, 0x8000, {_DIRECTED[mode.value][1]})"


@lowers("reduce_sum", "reduce_prod")
def reduce_sum(g: Gen, op):
    d = op.result.type.dtype
    x = g.up(g.val(op.operands[0]), d)
    comb = _combiner(op, "add" if op.name == "reduce_sum" else "mul")
    if comb is not None:
        if op.attrs.get("flush_to_zero"):
            x = g.tmp(f"_st_ftz({x})")
        return _finish(g, op, _reduce_chain(g, x, op, f"tl.reduce({{x}}, {{axis}}, {comb}, keep_dims={{kd}})"), d)
    call = "tl.sum({x}, axis={axis}, keep_dims={kd})" if op.name == "reduce_sum" else \
        "tl.reduce({x}, {axis}, _st_mul, keep_dims={kd})"
    return _native(g, _reduce_chain(g, x, op, call), d, op.name == "reduce_sum")


def _native(g: Gen, out: str, d, is_sum: bool) -> str:
    """Sums widen small integers (tl.sum) and 16-bit floats (``up``); cast back to ``d``."""
    native = d.name in _NATIVE_SUM if is_sum else (compute_dtype(d) is d or d.name == "tfloat32")
    if native:
        return out
    if d.is_float:
        return g.down(out, d)
    return f"{out}.to({tl_dtype(d)})"


@lowers("reduce_max", "reduce_min")
def reduce_extreme(g: Gen, op):
    d = op.result.type.dtype
    x = g.val(op.operands[0])
    is_max = op.name == "reduce_max"
    if d.is_bool:
        out = _reduce_chain(g, f"{x}.to(tl.int8)", op, "tl.%s({x}, axis={axis}, keep_dims={kd})"
                            % ("max" if is_max else "min"))
        return f"({out} != 0)"
    if d.is_int:
        return _reduce_chain(g, x, op, "tl.%s({x}, axis={axis}, keep_dims={kd})" % ("max" if is_max else "min"))
    narrow = d.bits == 8 or d.name == "bfloat16"
    if narrow:
        x = g.up(x, d)
    kind = "nan" if op.attrs.get("propagate_nan") else "num"
    if op.attrs.get("flush_to_zero"):
        x = g.tmp(f"_st_ftz({x})")
    which = "max" if is_max else "min"
    out = _reduce_chain(g, x, op, f"tl.reduce({{x}}, {{axis}}, _st_{which}_{kind}, keep_dims={{kd}})")
    return g.down(out, d) if narrow else out


@lowers("argmax", "argmin")
def arg_extreme(g: Gen, op):
    src = op.operands[0].type
    d = src.dtype
    x = g.val(op.operands[0])
    if d.is_bool:
        x = f"{x}.to(tl.int8)"
    elif d.is_float and (d.bits == 8 or d.name == "bfloat16"):
        x = g.up(x, d)
    axes = sorted(op.attrs["axes"])
    kd = op.attrs["keepdims"]
    shape = list(src.shape)
    rank = len(shape)
    comb = f"_st_{op.name}_{'comb' if op.attrs.get('propagate_nan') else 'num'}"
    if len(axes) == 1:
        a = axes[0]
        ishape = [1] * rank
        ishape[a] = shape[a]
        idx = f"tl.broadcast_to(tl.reshape(tl.arange(0, {shape[a]}), {ishape!r}), {shape!r})"
        t = g.tmp(f"tl.reduce(({x}, {idx}), {a}, {comb}, keep_dims={kd})")
        return f"{t}[1]"
    rest = [a for a in range(rank) if a not in axes]
    perm = rest + axes
    xp = x if perm == list(range(rank)) else g.tmp(f"tl.permute({x}, {perm!r})")
    n = math.prod(shape[a] for a in axes)
    flat = [shape[a] for a in rest] + [n]
    xf = g.tmp(f"tl.reshape({xp}, {flat!r})")
    ishape = [1] * len(rest) + [n]
    idx = f"tl.broadcast_to(tl.reshape(tl.arange(0, {n}), {ishape!r}), {flat!r})"
    t = g.tmp(f"tl.reduce(({xf}, {idx}), {len(rest)}, {comb})")
    r = f"{t}[1]"
    if kd:
        out_shape = list(op.result.type.shape)
        r = f"tl.broadcast_to({r}, {out_shape!r})" if not rest else f"tl.reshape({r}, {out_shape!r})"
    return r


@lowers("reduce")
def custom_reduce(g: Gen, op):
    fn = g.combine_function(op.regions[0])
    xs = [g.val(v) for v in op.operands]
    cur = xs[0] if len(xs) == 1 else f"({', '.join(xs)},)"
    kd = op.attrs["keepdims"]
    for a in _axes_desc(op):
        cur = g.tmp(f"tl.reduce({cur}, {a}, {fn}, keep_dims={kd})")
    if len(xs) == 1:
        return cur
    return [f"{cur}[{i}]" for i in range(len(xs))]


@lowers("cumsum", "cumprod")
def cumulative(g: Gen, op):
    d = op.result.type.dtype
    x = g.up(g.val(op.operands[0]), d)
    comb = _combiner(op, "add" if op.name == "cumsum" else "mul")
    if comb is not None:
        if op.attrs.get("flush_to_zero"):
            x = g.tmp(f"_st_ftz({x})")
        out = f"tl.associative_scan({x}, {op.attrs['axis']}, {comb}, reverse={op.attrs['reverse']})"
        return _finish(g, op, out, d)
    fn = "tl.cumsum" if op.name == "cumsum" else "tl.cumprod"
    out = f"{fn}({x}, axis={op.attrs['axis']}, reverse={op.attrs['reverse']})"
    return _native(g, out, d, op.name == "cumsum")


@lowers("scan")
def custom_scan(g: Gen, op):
    fn = g.combine_function(op.regions[0])
    xs = [g.val(v) for v in op.operands]
    cur = xs[0] if len(xs) == 1 else f"({', '.join(xs)},)"
    t = g.tmp(f"tl.associative_scan({cur}, {op.attrs['axis']}, {fn}, reverse={op.attrs['reverse']})")
    if len(xs) == 1:
        return t
    return [f"{t}[{i}]" for i in range(len(xs))]
