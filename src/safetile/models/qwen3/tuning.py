"""Tile sizes and launch hints of the engine's kernels, per backend.

Every tile size is a power of two and is clipped to the problem (a tiny test model gets
tiny tiles). The GPU defaults come from the sweeps recorded in bench/NOTES.md.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


def pow2_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def clip(tile: int, n: int) -> int:
    """``tile`` unless the dimension is smaller (then the power of two covering it)."""
    return min(tile, pow2_at_least(n))


@dataclass(frozen=True)
class Tuning:
    # decode GEMVs: outputs per block, K tile, hints, tensor descriptors (TMA) for weight tiles
    gemv_bn: int = 8
    gemv_bk: int = 512
    gemv_warps: int = 4
    gemv_stages: int = 3
    gemv_tma: bool = False
    gemv_unroll: bool = True  # K loop written out (K static): every weight tile in flight at once
    gemv_min_blocks: int = 1056  # halve BN (down to 1) until a projection has this many blocks (8 per SM)
    head_bn: int = 8
    # decode attention: keys per tile, splits per key/value head (at most; the key tiles are dealt
    # over them at run time), query rows (>= 16 feeds the matrix units)
    attn_bn: int = 128
    attn_splits: int = 8
    attn_qm: int = 16
    attn_warps: int = 4
    merge_elems: int = 1024  # partials one merge block loads (splits x group x columns): many small blocks
    # prefill
    gemm_bm: int = 128
    gemm_bn: int = 128
    gemm_bk: int = 64
    gemm_warps: int = 8
    gemm_stages: int = 3
    fa_bm: int = 128
    fa_bn: int = 64
    fa_warps: int = 8
    fa_stages: int = 2
    fill_bt: int = 64
    # small kernels
    embed_bh: int = 1024
    argmax_bc: int = 8192
    topk_k: int = 64
    topk_bv: int = 2048
    # decode steps per graph replay (greedy): tokens reach the host in groups of this many,
    # and the host waits for the device once per group
    decode_chunk: int = 16

    def with_(self, **changes) -> Tuning:
        return replace(self, **changes)


GPU = Tuning()
# The CPU backend runs every block of a grid at once with NumPy: a few large blocks beat many
# small ones, and there are no matrix units to pad for.
CPU = Tuning(gemv_bn=64, gemv_bk=256, gemv_min_blocks=1, decode_chunk=1, head_bn=256, attn_bn=64, attn_splits=4,
             merge_elems=8192,
             attn_qm=1,
             gemm_bm=64, gemm_bn=64, gemm_bk=64, fa_bm=64, fa_bn=64, fill_bt=64, embed_bh=1024,
             topk_k=64, topk_bv=1024)


# float32 weights on the GPU: GEMM tiles twice the bytes, so half as deep (shared memory)
GPU_F32 = GPU.with_(gemm_bk=32, gemm_stages=2, fa_bm=64, fa_stages=1)


def default(device: str, itemsize: int = 2) -> Tuning:
    if device == "cpu":
        return CPU
    return GPU_F32 if itemsize == 4 else GPU
