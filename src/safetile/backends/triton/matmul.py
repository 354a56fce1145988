"""Triton lowering of the matmul family (ops/matmul.py).

``mma`` becomes ``tl.dot`` with the accumulator (float32 operands use IEEE precision,
tfloat32 operands "tf32"; an float16 accumulator adds a float32 product and rounds once,
as the CPU backend does). Shapes or dtypes ``tl.dot`` cannot take (K below 16, integer
operands other than int8, ...) multiply by broadcasting and summing over K.
"""
from __future__ import annotations

from ... import dtypes as dt
from .codegen import Gen, lowers

_DOT_DTYPES = ("float16", "bfloat16", "float32", "tfloat32", "float64", "float8_e4m3fn", "float8_e5m2", "int8")


@lowers("mma")
def mma(g: Gen, op):
    a, b, acc = op.operands
    xd, accd = a.type.dtype, acc.type.dtype
    A, B, C = g.val(a), g.val(b), g.val(acc)
    ash, bsh = a.type.shape, b.type.shape
    if len(ash) == 3 and ash[0] != bsh[0]:
        batch = max(ash[0], bsh[0])
        if ash[0] == 1:
            A = g.tmp(f"tl.broadcast_to({A}, {[batch, ash[1], ash[2]]!r})")
        else:
            B = g.tmp(f"tl.broadcast_to({B}, {[batch, bsh[1], bsh[2]]!r})")
    m, k, n = ash[-2], ash[-1], bsh[-1]
    kmin = 32 if xd.bits == 8 else 16
    if xd.name in _DOT_DTYPES and k >= kmin and m >= 16 and n >= 16:
        if xd.name == "int8":
            return f"tl.dot({A}, {B}, {C}, out_dtype=tl.int32)"
        prec = {"float32": ', input_precision="ieee"', "float64": ', input_precision="ieee"',
                "tfloat32": ', input_precision="tf32"'}.get(xd.name, "")
        if xd.name == "bfloat16":
            A, B = f"_st_dot_operand({A})", f"_st_dot_operand({B})"
        if accd.name == "float16":
            return f"(tl.dot({A}, {B}{prec}) + {C}.to(tl.float32)).to(tl.float16)"
        return f"tl.dot({A}, {B}, {C}{prec})"
    # fallback: broadcast multiply and sum over K in the CPU backend's compute type
    if xd.is_float:
        cd = dt.float64 if xd.name == "float64" else dt.float32
    else:
        cd = dt.int64 if xd.bits == 64 else dt.int32

    def conv(x):
        if xd.name == "tfloat32":
            return f"_st_round_tf32({x})"
        return g.cast(x, xd, cd)
    Ac, Bc = conv(A), conv(B)
    if len(ash) == 2:
        prod = f"tl.sum({Ac}[:, :, None] * {Bc}[None, :, :], axis=1)"
    else:
        prod = f"tl.sum({Ac}[:, :, :, None] * {Bc}[:, None, :, :], axis=2)"
    return g.cast(f"({prod} + {g.cast(C, accd, cd)})", cd, accd)


_DECODE = {"float8_e8m0fnu": "_st_e8m0_to_f32({})", "float8_e5m3fnu": "_st_e5m3_to_f32({})",
           "float4_e2m1fn": "_st_fp4_to_f32({})"}


def _f32(x: str, d) -> str:
    return _DECODE[d.name].format(x) if d.name in _DECODE else f"{x}.to(tl.float32)"


@lowers("mma_scaled")
def mma_scaled(g: Gen, op):
    """Emulated block scaling: operands decoded to float32, multiplied by their scales repeated
    over each block of K (exact: the scales are powers of two or narrow floats), then one
    float32 ``tl.dot`` in IEEE precision (or a broadcast product for small tiles)."""
    x, xs, y, ys, acc = op.operands
    xd, sd = x.type.dtype, xs.type.dtype
    xsh, ysh = x.type.shape, y.type.shape
    batch = list(xsh[:-2])
    m, k, n = xsh[-2], xsh[-1], ysh[-1]
    ks = xs.type.shape[-1]
    block = k // ks
    xs_full = g.tmp(f"tl.reshape(tl.broadcast_to(tl.reshape({_f32(g.val(xs), sd)}, {batch + [m, ks, 1]!r}), "
                    f"{batch + [m, ks, block]!r}), {batch + [m, k]!r})")
    ys_full = g.tmp(f"tl.reshape(tl.broadcast_to(tl.reshape({_f32(g.val(ys), sd)}, {batch + [ks, 1, n]!r}), "
                    f"{batch + [ks, block, n]!r}), {batch + [k, n]!r})")
    A = g.tmp(f"{_f32(g.val(x), xd)} * {xs_full}")
    B = g.tmp(f"{_f32(g.val(y), xd)} * {ys_full}")
    C = g.val(acc)
    if m >= 16 and n >= 16 and k >= 16:
        return f"tl.dot({A}, {B}, {C}, input_precision=\"ieee\")"
    if not batch:
        return f"(tl.sum({A}[:, :, None] * {B}[None, :, :], axis=1) + {C})"
    return f"(tl.sum({A}[:, :, :, None] * {B}[:, None, :, :], axis=2) + {C})"
