"""Prefill kernels (all prompt rows at once): fused RMSNorm + GEMM, gate/up GEMM + SwiGLU,
GEMM + residual. Safe-style entry kernels; each block owns one (BM, BN) output tile.

A prompt's activations are float32 ``[T, n]``; weights are ``[out, in]``, so a block
multiplies its (BM, BK) activation tiles by transposed (BN, BK) weight tiles on the
matrix units (operands in the weights' dtype, float32 accumulation). The norm is folded
in as in the decode kernels: ``Σ x²`` per row accumulates in the same K loop and scales
the finished tile.
"""
from __future__ import annotations

import safetile as ct

ZERO = ct.PaddingMode.ZERO


def _gamma(gamma, k, BK):
    return ct.load(gamma, (k,), (BK,), padding_mode=ZERO).astype(ct.float32).reshape((1, BK))


@ct.entry
def rms_gemm(y: ct.Mut[ct.f32, ("BM", "BN")], x: ct.Ref[ct.f32, (-1, -1)], gamma: ct.Ref["W", (-1,)],
             w: ct.Ref["W", (-1, -1)], eps: ct.f32):
    """y = RMSNorm(x; gamma) · wᵀ."""
    i, n = ct.bid(0), ct.bid(1)
    acc = ct.zeros((BM, BN), ct.float32)
    ss = ct.zeros((BM, 1), ct.float32)
    for k in range(ct.num_tiles(w, 1, (BN, BK))):
        xt = ct.load(x, (i, k), (BM, BK), padding_mode=ZERO)
        ss = ss + ct.sum(xt * xt, axis=1, keepdims=True)
        a = (xt * _gamma(gamma, k, BK)).astype(w.dtype)
        acc = ct.mma(a, ct.transpose(ct.load(w, (n, k), (BN, BK), padding_mode=ZERO)), acc)
    y.store(acc * ct.rsqrt(ss / x.shape[1] + eps))


@ct.entry
def rms_gate_up_gemm(act: ct.Mut["A", ("BM", "BN")], x: ct.Ref[ct.f32, (-1, -1)], gamma: ct.Ref["W", (-1,)],
                     wg: ct.Ref["W", (-1, -1)], wu: ct.Ref["W", (-1, -1)], eps: ct.f32):
    """act = silu(h · gateᵀ) ⊙ (h · upᵀ), h = RMSNorm(x; gamma)."""
    i, n = ct.bid(0), ct.bid(1)
    ag = ct.zeros((BM, BN), ct.float32)
    au = ct.zeros((BM, BN), ct.float32)
    ss = ct.zeros((BM, 1), ct.float32)
    for k in range(ct.num_tiles(wg, 1, (BN, BK))):
        xt = ct.load(x, (i, k), (BM, BK), padding_mode=ZERO)
        ss = ss + ct.sum(xt * xt, axis=1, keepdims=True)
        a = (xt * _gamma(gamma, k, BK)).astype(wg.dtype)
        ag = ct.mma(a, ct.transpose(ct.load(wg, (n, k), (BN, BK), padding_mode=ZERO)), ag)
        au = ct.mma(a, ct.transpose(ct.load(wu, (n, k), (BN, BK), padding_mode=ZERO)), au)
    r = ct.rsqrt(ss / x.shape[1] + eps)
    g = ag * r
    act.store((g / (1.0 + ct.exp(-g)) * (au * r)).astype(act.dtype))


@ct.entry
def gemm_residual(y: ct.Mut[ct.f32, ("BM", "BN")], res: ct.Ref[ct.f32, (-1, -1)], a: ct.Ref["A", (-1, -1)],
                  w: ct.Ref["W", (-1, -1)]):
    """y = res + a · wᵀ."""
    i, n = ct.bid(0), ct.bid(1)
    acc = ct.zeros((BM, BN), ct.float32)
    for k in range(ct.num_tiles(w, 1, (BN, BK))):
        at = ct.load(a, (i, k), (BM, BK), padding_mode=ZERO).astype(w.dtype)
        acc = ct.mma(at, ct.transpose(ct.load(w, (n, k), (BN, BK), padding_mode=ZERO)), acc)
    y.store(ct.load(res, (i, n), (BM, BN), padding_mode=ZERO) + acc)
