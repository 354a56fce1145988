"""An experiment, not safetile: is Gluon (Triton 3.6's explicit layer) the way past the d=128
attention forward's gap to cuDNN? (issue 12 item 1; bench/NOTES.md, session 12.)

Triton's automatic passes run each warp group's two products synchronously, so no tensor-core
work overlaps that group's softmax. Here, in Gluon, a hand-scheduled forward (non-causal,
bf16, 8 warps = two warp groups of 64 query rows each) issues block j+1's QKᵀ as an asynchronous
``warpgroup_mma`` before block j's softmax. It waits for the previous PV only before rescaling
the accumulator, and for QKᵀ(j+1) only after issuing PV(j). K comes through a 3-deep TMA ring
and V through a 2-deep one, each slot with its mbarrier.

If this beats SDPA's default where safetile's generated kernel does not, a Gluon code-generation
target for this loop shape is worth building. If not, the gap is elsewhere. Checked against
SDPA before it is timed.

    PYTHONPATH=src python bench/gluon_attention_probe.py --out gluon_attention.json
    python bench/gluon_attention_probe.py --compile-only   # sm_90a, no GPU needed
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_init, warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

LOG2E = 1.4426950408889634


@gluon.jit
def _softmax_step(s, m_i, l_i, scale):
    """Online softmax of one score block: (p, alpha, new max, new sum); exp2 with the scale folded."""
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * scale)
    p = gl.exp2(s * scale - m_new[:, None])
    alpha = gl.exp2(m_i - m_new)
    return p, alpha, m_new, l_i * alpha + gl.sum(p, axis=1)


@gluon.constexpr_function
def _score_layout(warps, BN):
    """Layout of a [rows, BN] product (QKᵀ) spread over ``warps`` warps along the rows."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[warps, 1], instr_shape=[16, BN, 16])


@gluon.constexpr_function
def _p_layout(acc_layout):
    """Layout of P as the register operand of PV, whose accumulator has ``acc_layout``."""
    return gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)


@gluon.jit
def _store_rows(acc, l_i, smem, o_desc, row, acc_layout: gl.constexpr):
    """acc / l into the output rows from ``row`` on, staged in ``smem`` (a Q buffer the products
    no longer read)."""
    out = acc * gl.convert_layout(1.0 / l_i, gl.SliceLayout(1, acc_layout))[:, None]
    smem.store(out.to(o_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [row, 0], smem)
    tma.store_wait(pendings=0)


@gluon.jit
def attention_fwd(q_desc, k_desc, v_desc, o_desc, S, scale, num_warps: gl.constexpr):
    BM: gl.constexpr = q_desc.block_type.shape[0]
    D: gl.constexpr = q_desc.block_type.shape[1]
    BN: gl.constexpr = k_desc.block_type.shape[0]
    KS: gl.constexpr = 3
    VS: gl.constexpr = 2
    dtype: gl.constexpr = q_desc.dtype
    s_layout: gl.constexpr = _score_layout(num_warps, BN)
    o_layout: gl.constexpr = _score_layout(num_warps, D)
    p_layout: gl.constexpr = _p_layout(o_layout)

    qb = gl.program_id(0)
    bh = gl.program_id(1)
    row0 = bh * S
    n = S // BN

    q_smem = gl.allocate_shared_memory(dtype, [BM, D], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [KS, BN, D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [VS, BN, D], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_bar = gl.allocate_shared_memory(gl.int64, [KS, 1], mbarrier.MBarrierLayout())
    v_bar = gl.allocate_shared_memory(gl.int64, [VS, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(KS):
        mbarrier.init(k_bar.index(i), count=1)
    for i in gl.static_range(VS):
        mbarrier.init(v_bar.index(i), count=1)

    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [row0 + qb * BM, 0], q_bar, q_smem)
    for i in gl.static_range(2):  # K0, K1 (n >= 2)
        mbarrier.expect(k_bar.index(i), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [row0 + i * BN, 0], k_bar.index(i), k_smem.index(i))
    mbarrier.expect(v_bar.index(0), v_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(v_desc, [row0, 0], v_bar.index(0), v_smem.index(0))

    zero_s = gl.zeros([BM, BN], gl.float32, s_layout)
    mbarrier.wait(q_bar, 0)
    mbarrier.wait(k_bar.index(0), 0)
    s = warpgroup_mma(q_smem, k_smem.index(0).permute((1, 0)), zero_s, use_acc=False, is_async=True)
    s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))

    m_i = gl.full([BM], float("-inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([BM], gl.float32, gl.SliceLayout(1, s_layout))
    acc = warpgroup_mma_init(gl.zeros([BM, D], gl.float32, o_layout))  # carried as an in-flight product
    for j in range(n - 1):
        # K(j+2) into the slot K(j-1) left (its product finished one iteration ago)
        nk = j + 2
        pred = nk < n
        mbarrier.expect(k_bar.index(nk % KS), k_desc.block_type.nbytes, pred=pred)
        tma.async_copy_global_to_shared(k_desc, [row0 + nk * BN, 0], k_bar.index(nk % KS), k_smem.index(nk % KS),
                                        pred=pred)
        # QK(j+1) on the tensor cores while this warp group computes block j's softmax
        mbarrier.wait(k_bar.index((j + 1) % KS), ((j + 1) // KS) & 1)
        s_next = warpgroup_mma(q_smem, k_smem.index((j + 1) % KS).permute((1, 0)), zero_s, use_acc=False,
                               is_async=True)
        p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, scale)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))  # PV(j-1) done; QK(j+1) may run on
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
        # V(j+1) into the slot PV(j-1) just released
        mbarrier.expect(v_bar.index((j + 1) % VS), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [row0 + (j + 1) * BN, 0], v_bar.index((j + 1) % VS),
                                        v_smem.index((j + 1) % VS))
        mbarrier.wait(v_bar.index(j % VS), (j // VS) & 1)
        acc = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), v_smem.index(j % VS), acc, is_async=True)
        s = warpgroup_mma_wait(num_outstanding=1, deps=(s_next,))  # QK(j+1) done; PV(j) may run on
    j = n - 1
    p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, scale)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    mbarrier.wait(v_bar.index(j % VS), (j // VS) & 1)
    acc = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), v_smem.index(j % VS), acc, is_async=True)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))

    mbarrier.invalidate(q_bar)
    for i in gl.static_range(KS):
        mbarrier.invalidate(k_bar.index(i))
    for i in gl.static_range(VS):
        mbarrier.invalidate(v_bar.index(i))
    _store_rows(acc, l_i, q_smem, o_desc, row0 + qb * BM, o_layout)


@gluon.jit
def _ws_producer(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, k_full, k_empty, v_full, v_empty, qrow, row0,
                 n, KS: gl.constexpr, VS: gl.constexpr):
    """One warp: both consumers' Q tiles, then K and V block by block into their rings, each slot
    reloaded once both consumers have released it."""
    BMH: gl.constexpr = q_desc.block_type.shape[0]
    BN: gl.constexpr = k_desc.block_type.shape[0]
    for c in gl.static_range(2):
        mbarrier.expect(q_bar.index(c), q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [qrow + c * BMH, 0], q_bar.index(c), q_smem.index(c))
    for j in range(n):
        mbarrier.wait(k_empty.index(j % KS), ((j // KS) & 1) ^ 1, pred=j >= KS)
        mbarrier.expect(k_full.index(j % KS), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [row0 + j * BN, 0], k_full.index(j % KS), k_smem.index(j % KS))
        mbarrier.wait(v_empty.index(j % VS), ((j // VS) & 1) ^ 1, pred=j >= VS)
        mbarrier.expect(v_full.index(j % VS), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [row0 + j * BN, 0], v_full.index(j % VS), v_smem.index(j % VS))


@gluon.jit
def _ws_consumer(c: gl.constexpr, o_desc, q_smem, k_smem, v_smem, q_bar, k_full, k_empty, v_full, v_empty, qrow, n,
                 scale, KS: gl.constexpr, VS: gl.constexpr):
    """One warp group, 64 query rows: QK(j+1) in flight during softmax(j), PV(j) during the wait for
    QK(j+1); each K and V slot released to the producer once this group's product on it is done."""
    BMH: gl.constexpr = o_desc.block_type.shape[0]
    D: gl.constexpr = o_desc.block_type.shape[1]
    BN: gl.constexpr = k_smem.type.shape[1]
    dtype: gl.constexpr = o_desc.dtype
    s_layout: gl.constexpr = _score_layout(4, BN)
    o_layout: gl.constexpr = _score_layout(4, D)
    p_layout: gl.constexpr = _p_layout(o_layout)
    q = q_smem.index(c)
    zero_s = gl.zeros([BMH, BN], gl.float32, s_layout)
    mbarrier.wait(q_bar.index(c), 0)
    mbarrier.wait(k_full.index(0), 0)
    s = warpgroup_mma(q, k_smem.index(0).permute((1, 0)), zero_s, use_acc=False, is_async=True)
    s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
    mbarrier.arrive(k_empty.index(0), count=1)
    m_i = gl.full([BMH], float("-inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([BMH], gl.float32, gl.SliceLayout(1, s_layout))
    acc = warpgroup_mma_init(gl.zeros([BMH, D], gl.float32, o_layout))
    for j in range(n - 1):
        kn = (j + 1) % KS
        mbarrier.wait(k_full.index(kn), ((j + 1) // KS) & 1)
        s_next = warpgroup_mma(q, k_smem.index(kn).permute((1, 0)), zero_s, use_acc=False, is_async=True)
        p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, scale)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))  # PV(j-1) done
        mbarrier.arrive(v_empty.index((j + VS - 1) % VS), count=1, pred=j > 0)
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
        mbarrier.wait(v_full.index(j % VS), (j // VS) & 1)
        acc = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), v_smem.index(j % VS), acc, is_async=True)
        s = warpgroup_mma_wait(num_outstanding=1, deps=(s_next,))  # QK(j+1) done
        mbarrier.arrive(k_empty.index(kn), count=1)
    j = n - 1
    p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, scale)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    mbarrier.wait(v_full.index(j % VS), (j // VS) & 1)
    acc = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), v_smem.index(j % VS), acc, is_async=True)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    _store_rows(acc, l_i, q, o_desc, qrow + c * BMH, o_layout)


@gluon.jit
def _mask_diagonal(s, qpos, j, n, BN: gl.constexpr, s_layout: gl.constexpr):
    """Scores of key block j, masked to keys at or before each query when j is the last block."""
    if j == n - 1:
        kpos = j * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, s_layout))
        s = gl.where(qpos[:, None] >= kpos[None, :], s, float("-inf"))
    return s


@gluon.jit
def _ws_consumer_pp(c: gl.constexpr, o_desc, q_smem, k_smem, v_smem, q_bar, k_full, k_empty, v_full, v_empty, turn,
                    qrow, qpos0, n, scale, KS: gl.constexpr, VS: gl.constexpr, CAUSAL: gl.constexpr):
    """FA3's order: per block, QK(j) and PV(j-1) issued back to back in this group's turn, the
    other group's turn given at once, then softmax(j) while the tensor cores run the other group's
    pair (ping-pong through the two ``turn`` barriers). Causal: only the last block (the diagonal,
    key block = query block) is masked; ``qpos0`` is this block's first query position."""
    BMH: gl.constexpr = o_desc.block_type.shape[0]
    D: gl.constexpr = o_desc.block_type.shape[1]
    BN: gl.constexpr = k_smem.type.shape[1]
    dtype: gl.constexpr = o_desc.dtype
    s_layout: gl.constexpr = _score_layout(4, BN)
    o_layout: gl.constexpr = _score_layout(4, D)
    p_layout: gl.constexpr = _p_layout(o_layout)
    q = q_smem.index(c)
    zero_s = gl.zeros([BMH, BN], gl.float32, s_layout)
    mbarrier.wait(q_bar.index(c), 0)
    mbarrier.wait(turn.index(c), 0)
    mbarrier.wait(k_full.index(0), 0)
    s = warpgroup_mma(q, k_smem.index(0).permute((1, 0)), zero_s, use_acc=False, is_async=True)
    mbarrier.arrive(turn.index(1 - c), count=1)
    s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
    mbarrier.arrive(k_empty.index(0), count=1)
    qpos = qpos0 + c * BMH + gl.arange(0, BMH, layout=gl.SliceLayout(1, s_layout))
    if CAUSAL:
        s = _mask_diagonal(s, qpos, 0, n, BN, s_layout)
    m_i = gl.full([BMH], float("-inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([BMH], gl.float32, gl.SliceLayout(1, s_layout))
    p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, scale)
    acc = gl.zeros([BMH, D], gl.float32, o_layout)
    for j in range(1, n):
        mbarrier.wait(turn.index(c), j & 1)
        mbarrier.wait(k_full.index(j % KS), (j // KS) & 1)
        s = warpgroup_mma(q, k_smem.index(j % KS).permute((1, 0)), zero_s, use_acc=False, is_async=True)
        mbarrier.wait(v_full.index((j - 1) % VS), ((j - 1) // VS) & 1)
        pv = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), v_smem.index((j - 1) % VS), acc, is_async=True)
        mbarrier.arrive(turn.index(1 - c), count=1)
        s = warpgroup_mma_wait(num_outstanding=1, deps=(s,))  # QK(j) done; PV(j-1) may run on
        mbarrier.arrive(k_empty.index(j % KS), count=1)
        if CAUSAL:
            s = _mask_diagonal(s, qpos, j, n, BN, s_layout)
        p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, scale)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(pv,))
        mbarrier.arrive(v_empty.index((j - 1) % VS), count=1)
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    mbarrier.wait(v_full.index((n - 1) % VS), ((n - 1) // VS) & 1)
    pv = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), v_smem.index((n - 1) % VS), acc, is_async=True)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(pv,))
    _store_rows(acc, l_i, q, o_desc, qrow + c * BMH, o_layout)


@gluon.jit
def attention_fwd_ws(q_desc, k_desc, v_desc, o_desc, S, scale, PINGPONG: gl.constexpr, CAUSAL: gl.constexpr,
                     num_warps: gl.constexpr):
    """FA3's layout by hand: a producer warp (TMA) and two consumer warp groups of 64 query rows
    each (128 per block), running ``_ws_consumer``'s schedule independently, or with PINGPONG
    ``_ws_consumer_pp``'s in alternating turns. Descriptors made on the host."""
    _ws_body(q_desc, k_desc, v_desc, o_desc, S, scale, PINGPONG, CAUSAL)


@gluon.jit
def attention_fwd_pp_raw(Q, K, V, O, rows, stride, S, scale, BMH: gl.constexpr, BN: gl.constexpr, D: gl.constexpr,
                         CAUSAL: gl.constexpr, num_warps: gl.constexpr):
    """The ping-pong kernel with safetile's launch interface: raw pointers, shapes and strides in,
    TMA descriptors made in the kernel (as safetile's generated kernels make theirs), so that a
    lowering could keep the launcher as it is."""
    layout_q: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    q_desc = tma.make_tensor_descriptor(Q, [rows, D], [stride, 1], [BMH, D], layout_q)
    k_desc = tma.make_tensor_descriptor(K, [rows, D], [stride, 1], [BN, D], layout_q)
    v_desc = tma.make_tensor_descriptor(V, [rows, D], [stride, 1], [BN, D], layout_q)
    o_desc = tma.make_tensor_descriptor(O, [rows, D], [stride, 1], [BMH, D], layout_q)
    _ws_body(q_desc, k_desc, v_desc, o_desc, S, scale, True, CAUSAL)


@gluon.jit
def _ws_body(q_desc, k_desc, v_desc, o_desc, S, scale, PINGPONG: gl.constexpr, CAUSAL: gl.constexpr):
    BMH: gl.constexpr = q_desc.block_type.shape[0]
    D: gl.constexpr = q_desc.block_type.shape[1]
    BN: gl.constexpr = k_desc.block_type.shape[0]
    KS: gl.constexpr = 2
    VS: gl.constexpr = 2
    dtype: gl.constexpr = q_desc.dtype
    gl.static_assert(not CAUSAL or (PINGPONG and BN == 2 * BMH), "causal: the ping-pong form, key block = query block")
    row0 = gl.program_id(1) * S
    qb = gl.program_id(0)
    if CAUSAL:  # the longest query blocks first
        qb = gl.num_programs(0) - 1 - qb
    qrow = row0 + qb * (2 * BMH)
    n = qb + 1 if CAUSAL else S // BN
    q_smem = gl.allocate_shared_memory(dtype, [2, BMH, D], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [KS, BN, D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [VS, BN, D], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    k_full = gl.allocate_shared_memory(gl.int64, [KS, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [KS, 1], mbarrier.MBarrierLayout())
    v_full = gl.allocate_shared_memory(gl.int64, [VS, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [VS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(q_bar.index(i), count=1)
    for i in gl.static_range(KS):
        mbarrier.init(k_full.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)
    for i in gl.static_range(VS):
        mbarrier.init(v_full.index(i), count=1)
        mbarrier.init(v_empty.index(i), count=2)
    if PINGPONG:
        turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(2):
            mbarrier.init(turn.index(i), count=1)
        mbarrier.arrive(turn.index(0), count=1)  # group 0 goes first
        gl.warp_specialize([
            (_ws_consumer_pp, (0, o_desc, q_smem, k_smem, v_smem, q_bar, k_full, k_empty, v_full, v_empty, turn, qrow,
                               qb * (2 * BMH), n, scale, KS, VS, CAUSAL)),
            (_ws_consumer_pp, (1, o_desc, q_smem, k_smem, v_smem, q_bar, k_full, k_empty, v_full, v_empty, turn, qrow,
                               qb * (2 * BMH), n, scale, KS, VS, CAUSAL)),
            (_ws_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, k_full, k_empty, v_full, v_empty,
                            qrow, row0, n, KS, VS)),
        ], [4, 1], [232, 40])
    else:
        gl.warp_specialize([
            (_ws_consumer, (0, o_desc, q_smem, k_smem, v_smem, q_bar, k_full, k_empty, v_full, v_empty, qrow, n, scale,
                            KS, VS)),
            (_ws_consumer, (1, o_desc, q_smem, k_smem, v_smem, q_bar, k_full, k_empty, v_full, v_empty, qrow, n, scale,
                            KS, VS)),
            (_ws_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, k_full, k_empty, v_full, v_empty,
                            qrow, row0, n, KS, VS)),
        ], [4, 1], [232, 40])


def descriptors(q, k, v, o, bm, bn, ws=False):
    """TMA descriptors over (batch*heads*seq, d) views; the warp-specialised kernel's Q and O
    blocks are one consumer's 64 of the block's ``bm`` = 128 rows."""
    d = q.shape[-1]
    bm = bm // 2 if ws else bm
    flat = [t.reshape(-1, d) for t in (q, k, v, o)]
    lq = gl.NVMMASharedLayout.get_default_for([bm, d], gl.bfloat16)
    lk = gl.NVMMASharedLayout.get_default_for([bn, d], gl.bfloat16)
    return (TensorDescriptor.from_tensor(flat[0], [bm, d], lq), TensorDescriptor.from_tensor(flat[1], [bn, d], lk),
            TensorDescriptor.from_tensor(flat[2], [bn, d], lk), TensorDescriptor.from_tensor(flat[3], [bm, d], lq))


def _kernel(kind, causal=False):
    """(kernel, its constexpr arguments) of a kind: '' (one instruction stream), 'ws', 'pp' or
    'raw' (only 'pp' and 'raw' have a causal form)."""
    if kind == "raw":
        return attention_fwd_pp_raw, {"CAUSAL": causal}
    return (attention_fwd, {}) if not kind else (attention_fwd_ws, {"PINGPONG": kind == "pp", "CAUSAL": causal})


def _raw_args(q, k, v, o, bm, bn):
    """(args, constexprs) of the raw kernel over (batch*heads*seq, d) views."""
    d = q.shape[-1]
    flat = [t.reshape(-1, d) for t in (q, k, v, o)]
    return (*flat, flat[0].shape[0], flat[0].stride(0)), {"BMH": bm // 2, "BN": bn, "D": d}


def _parse_tile(t):
    """[ws:|pp:|raw:]BMxBNxWARPS -> (bm, bn, warps, kind)."""
    kind, _, tile = t.rpartition(":")
    bm, bn, warps = (int(x) for x in tile.split("x"))
    return bm, bn, warps, kind


def compile_only(d, bm, bn, warps, kind, causal=False):
    """Build for sm_90a without a GPU: a failed layout or schedule shows here."""
    from benchlib import ptxas_usage
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type
    q = torch.empty(1, 1, 1024, d, dtype=torch.bfloat16)
    fn, consts = _kernel(kind, causal)
    if kind == "raw":
        args, more = _raw_args(q, q, q, q, bm, bn)
        consts = {**more, **consts}
        sig = {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "O": "*bf16", "rows": "i32", "stride": "i32"}
    else:
        descs = descriptors(q, q, q, q, bm, bn, bool(kind))
        sig = {name: mangle_type(a) for name, a in zip(("q_desc", "k_desc", "v_desc", "o_desc"), descs)}
    sig.update(S="i32", scale="fp32", **{k: "constexpr" for k in consts}, num_warps="constexpr")
    src = GluonASTSource(fn, sig, {**consts, "num_warps": warps})
    c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    print("shared", c.metadata.shared, ptxas_usage(c.asm["ptx"]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--tiles", default="128x128x8,ws:128x128x4,pp:128x128x4",
                   help="[ws:|pp:|raw:]BMxBNxWARPS (ws: the warp-specialised kernel, 4 warps per consumer; pp: the "
                        "same with ping-pong turns; raw: pp with descriptors made in the kernel)")
    p.add_argument("--seqs", default="4096,8192,16384")
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--causal", action="store_true", help="causal masks (only the ping-pong kernel has that form)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    tiles = [_parse_tile(t) for t in args.tiles.split(",")]
    if args.compile_only:
        for bm, bn, warps, kind in tiles:
            compile_only(args.d, bm, bn, warps, kind, args.causal and kind == "pp")
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch.nn.functional as F
    import triton

    from benchlib import time_ms
    rows, d = [], args.d
    for seq in [int(s) for s in args.seqs.split(",")]:
        b = max(1, args.tokens // seq)
        q, k, v = (torch.randn(b, args.heads, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        for causal in (False, True) if args.causal else (False,):
            def sdpa():
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            ref = sdpa()
            t_ref = time_ms([sdpa], args.reps)
            flop = 4.0 * b * args.heads * seq * seq * d * (0.5 if causal else 1.0)
            for bm, bn, warps, kind in tiles:
                if causal and kind not in ("pp", "raw"):
                    continue
                o = torch.full_like(q, float("nan"))
                fn, consts = _kernel(kind, causal)
                if kind == "raw":  # descriptors made in the kernel need Triton's scratch allocator
                    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
                    descs, more = _raw_args(q, k, v, o, bm, bn)
                    consts = {**more, **consts}
                else:
                    descs = descriptors(q, k, v, o, bm, bn, bool(kind))

                def run():
                    fn[(seq // bm, b * args.heads)](*descs, seq, LOG2E / math.sqrt(d), **consts, num_warps=warps)
                run()
                torch.cuda.synchronize()
                err = ((o.float() - ref.float()).abs().max()).item()
                t = time_ms([run], args.reps)
                ok = err < 2e-2
                name = f"{kind + ':' if kind else ''}{bm}x{bn}x{warps}"
                rows.append({"seq": seq, "d": d, "causal": causal, "tile": name, "ms": t, "TFLOPs": flop / t / 1e9,
                             "sdpa_default_ms": t_ref, "ratio": t_ref / t, "max_err": err, "ok": ok})
                verdict = "ok" if ok else f"WRONG ({err:.2e})"
                print(f"seq {seq} d {d} causal {causal!s:5} {name}: {t:.3f} ms {flop / t / 1e9:6.1f} TFLOP/s, SDPA "
                      f"default {flop / t_ref / 1e9:6.1f}: ratio {t_ref / t:.3f} {verdict}", flush=True)
        del q, k, v
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
