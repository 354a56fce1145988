"""An experiment, not safetile: does FlashAttention-3's backward (five products per block pair,
dQ added up with TMA reduce-adds) beat SDPA's default backward on this GPU, where safetile's
two-kernel pass (seven products: dQ recomputes S and dP) stays at 0.79-0.86? (issue 12 item 1;
bench/NOTES.md, session 14.) The answer decides whether the ping-pong lowering should learn a
third, per-iteration product whose result feeds a bulk reduction.

One block = 128 key rows, split between two consumer warp groups of 64 keys; a producer warp
loads each group's K and V rows once, then the query blocks' Q and dO (64 rows each) into TMA
rings. Per query block a group computes Sᵀ = K Qᵀ and dPᵀ = V dOᵀ, then Pᵀ and dSᵀ in registers,
dV += Pᵀ dO and dK += dSᵀ Q, and its share of dQ = dS K from dSᵀ staged in shared memory (the
transposed A operand), which a TMA reduce-add (``cp.reduce.async.bulk.tensor``, through Gluon's
builder: Gluon 3.6 has no Python call for it) adds to a float32 dQ buffer. At d=128 the dQ share
is computed and added in two 64-column halves (registers). Causal: query blocks from the
diagonal on, masked only where they cross it. The pass timed is what a user would run: delta
(torch), the buffer's zeroing, the kernel and dQ's scale-and-cast (torch), against
``torch.autograd.grad`` through SDPA's default backend. Checked against SDPA before timing.

    PYTHONPATH=src python bench/gluon_attention_bwd_probe.py --d 64,128 --causal --out bwd_probe.json
    python bench/gluon_attention_bwd_probe.py --compile-only   # sm_90a, no GPU needed
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
from triton._C.libtriton import ir as _ir
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language import _core as gl_core
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

LOG2E = 1.4426950408889634
BN = gl.constexpr(128)  # key rows per block: two consumer warp groups of 64
HALF = gl.constexpr(64)


@gl_core.builtin
def _reduce_add(tensor_desc, coord, src, _semantic=None):
    """TMA reduce-add of shared-memory tile ``src`` into global memory at ``coord``."""
    coord = _semantic._convert_to_ir_values(coord, require_i64=False)
    _semantic.builder.create_async_tma_reduce(_ir.DESCRIPTOR_REDUCE_KIND.ADD, tensor_desc.handle, coord, src.handle)


@gluon.constexpr_function
def _mma_layout(n):
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, n, 16])


@gluon.jit
def _producer(q_desc, k_desc, v_desc, do_desc, k_s, v_s, q_s, do_s, kv_bar, full, empty, krow, qrow0, n,
              QS: gl.constexpr):
    BM: gl.constexpr = q_desc.block_type.shape[0]
    for c in gl.static_range(2):
        mbarrier.expect(kv_bar.index(c), k_desc.block_type.nbytes + v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [krow + c * HALF, 0], kv_bar.index(c), k_s.index(c))
        tma.async_copy_global_to_shared(v_desc, [krow + c * HALF, 0], kv_bar.index(c), v_s.index(c))
    for t in range(n):
        slot = t % QS
        mbarrier.wait(empty.index(slot), ((t // QS) & 1) ^ 1, pred=t >= QS)
        mbarrier.expect(full.index(slot), q_desc.block_type.nbytes + do_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [qrow0 + t * BM, 0], full.index(slot), q_s.index(slot))
        tma.async_copy_global_to_shared(do_desc, [qrow0 + t * BM, 0], full.index(slot), do_s.index(slot))


@gluon.jit
def _consumer(c: gl.constexpr, dq_desc, dk_desc, dv_desc, k_s, v_s, q_s, do_s, ds_s, dq_s, kv_bar, full, empty,
              turn, Lse, Delta, krow, qrow0, kpos0, qpos0, n, diag, scale, sm_scale, QS: gl.constexpr,
              CAUSAL: gl.constexpr, DQ_FIRST: gl.constexpr, TURN: gl.constexpr):
    BM: gl.constexpr = q_s.type.shape[1]
    D: gl.constexpr = q_s.type.shape[2]
    DQN: gl.constexpr = dq_desc.block_type.shape[1]
    dtype: gl.constexpr = q_s.dtype
    SL: gl.constexpr = _mma_layout(BM)
    OL: gl.constexpr = _mma_layout(D)
    QL: gl.constexpr = _mma_layout(DQN)
    PL: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=OL, k_width=2)
    k = k_s.index(c)
    v = v_s.index(c)
    ds = ds_s.index(c)
    dq_buf = dq_s.index(c)
    zero_s = gl.zeros([HALF, BM], gl.float32, SL)
    zero_q = gl.zeros([BM, DQN], gl.float32, QL)
    dk = gl.zeros([HALF, D], gl.float32, OL)
    dv = gl.zeros([HALF, D], gl.float32, OL)
    kpos = kpos0 + c * HALF + gl.arange(0, HALF, layout=gl.SliceLayout(1, SL))
    mbarrier.wait(kv_bar.index(c), 0)
    for t in range(n):
        slot = t % QS
        cols = qrow0 + t * BM + gl.arange(0, BM, layout=gl.SliceLayout(0, SL))
        lse = gl.load(Lse + cols)
        delta = gl.load(Delta + cols)
        mbarrier.wait(full.index(slot), (t // QS) & 1)
        q = q_s.index(slot)
        do = do_s.index(slot)
        if TURN:  # the groups take turns issuing: one's exp2 runs under the other's products
            mbarrier.wait(turn.index(c), 0)
        st = warpgroup_mma(k, q.permute((1, 0)), zero_s, use_acc=False, is_async=True)
        dpt = warpgroup_mma(v, do.permute((1, 0)), zero_s, use_acc=False, is_async=True)
        if TURN:
            mbarrier.arrive(turn.index(1 - c), count=1)
        st, dpt = warpgroup_mma_wait(num_outstanding=0, deps=(st, dpt))
        pt = gl.exp2(st * scale - lse[None, :])
        if CAUSAL:
            if t < diag:
                qpos = qpos0 + t * BM + gl.arange(0, BM, layout=gl.SliceLayout(0, SL))
                pt = gl.where(qpos[None, :] >= kpos[:, None], pt, 0.0)
        dst = (pt * (dpt - delta[None, :])).to(dtype)
        if DQ_FIRST:  # dQ's product first: its epilogue (store, reduce-add) overlaps dV's and dK's
            gl.static_assert(D == DQN, "dQ in one product: d = 64 only")
            ds.store(dst)
            fence_async_shared()
            if TURN:
                mbarrier.wait(turn.index(c), 1)
            dq = warpgroup_mma(ds.permute((1, 0)), k, zero_q, use_acc=False, is_async=True)
            dv = warpgroup_mma(gl.convert_layout(pt.to(dtype), PL), do, dv, is_async=True)
            dk = warpgroup_mma(gl.convert_layout(dst, PL), q, dk, is_async=True)
            if TURN:
                mbarrier.arrive(turn.index(1 - c), count=1)
            dq = warpgroup_mma_wait(num_outstanding=2, deps=(dq,))
            tma.store_wait(pendings=0)  # the previous reduce-add has read the buffer
            dq_buf.store(dq)
            fence_async_shared()
            _reduce_add(dq_desc, [qrow0 + t * BM, 0], dq_buf)
        else:
            if TURN:
                mbarrier.wait(turn.index(c), 1)
            dv = warpgroup_mma(gl.convert_layout(pt.to(dtype), PL), do, dv, is_async=True)
            dk = warpgroup_mma(gl.convert_layout(dst, PL), q, dk, is_async=True)
            if TURN:
                mbarrier.arrive(turn.index(1 - c), count=1)
            ds.store(dst)
            fence_async_shared()
            for h in gl.static_range(D // DQN):  # this group's share of dQ: dS (queries x its keys) K
                dq = warpgroup_mma(ds.permute((1, 0)), k.slice(h * DQN, DQN, dim=1), zero_q, use_acc=False,
                                   is_async=True)
                dq = warpgroup_mma_wait(num_outstanding=0, deps=(dq,))  # dV and dK done too: in order
                tma.store_wait(pendings=0)  # the previous reduce-add has read the buffer
                dq_buf.store(dq)
                fence_async_shared()
                _reduce_add(dq_desc, [qrow0 + t * BM, h * DQN], dq_buf)
        dv, dk = warpgroup_mma_wait(num_outstanding=0, deps=(dv, dk))
        mbarrier.arrive(empty.index(slot), count=1)
    tma.store_wait(pendings=0)
    k.store((dk * sm_scale).to(dtype))  # K and V are read no more: their buffers stage the results
    v.store(dv.to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(dk_desc, [krow + c * HALF, 0], k)
    tma.async_copy_shared_to_global(dv_desc, [krow + c * HALF, 0], v)
    tma.store_wait(pendings=0)


@gluon.jit
def attention_bwd_fa3(q_desc, k_desc, v_desc, do_desc, dq_desc, dk_desc, dv_desc, Lse, Delta, S, scale, sm_scale,
                      QS: gl.constexpr, CAUSAL: gl.constexpr, DQ_FIRST: gl.constexpr, TURN: gl.constexpr,
                      num_warps: gl.constexpr):
    """dK, dV of one 128-key block and its additions to dQ (float32, zeroed before)."""
    BM: gl.constexpr = q_desc.block_type.shape[0]
    D: gl.constexpr = q_desc.block_type.shape[1]
    DQN: gl.constexpr = dq_desc.block_type.shape[1]
    dtype: gl.constexpr = q_desc.dtype
    kb = gl.program_id(0)  # causal: the first key blocks see the most queries, and start first
    row0 = gl.program_id(1) * S
    krow = row0 + kb * BN
    first = (kb * BN) // BM if CAUSAL else 0
    n = S // BM - first
    diag = gl.minimum(gl.cdiv((kb + 1) * BN, BM), S // BM) - first if CAUSAL else 0
    qrow0 = row0 + first * BM
    k_s = gl.allocate_shared_memory(dtype, [2, HALF, D], k_desc.layout)
    v_s = gl.allocate_shared_memory(dtype, [2, HALF, D], v_desc.layout)
    q_s = gl.allocate_shared_memory(dtype, [QS, BM, D], q_desc.layout)
    do_s = gl.allocate_shared_memory(dtype, [QS, BM, D], do_desc.layout)
    ds_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    ds_s = gl.allocate_shared_memory(dtype, [2, HALF, BM], ds_layout)
    dq_s = gl.allocate_shared_memory(gl.float32, [2, BM, DQN], dq_desc.layout)
    kv_bar = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    full = gl.allocate_shared_memory(gl.int64, [QS, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [QS, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(kv_bar.index(i), count=1)
        mbarrier.init(turn.index(i), count=1)
    mbarrier.arrive(turn.index(0), count=1)  # group 0 issues first
    for i in gl.static_range(QS):
        mbarrier.init(full.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)
    gl.warp_specialize([
        (_consumer, (0, dq_desc, dk_desc, dv_desc, k_s, v_s, q_s, do_s, ds_s, dq_s, kv_bar, full, empty, turn, Lse,
                     Delta, krow, qrow0, kb * BN, first * BM, n, diag, scale, sm_scale, QS, CAUSAL, DQ_FIRST, TURN)),
        (_consumer, (1, dq_desc, dk_desc, dv_desc, k_s, v_s, q_s, do_s, ds_s, dq_s, kv_bar, full, empty, turn, Lse,
                     Delta, krow, qrow0, kb * BN, first * BM, n, diag, scale, sm_scale, QS, CAUSAL, DQ_FIRST, TURN)),
        (_producer, (q_desc, k_desc, v_desc, do_desc, k_s, v_s, q_s, do_s, kv_bar, full, empty, krow, qrow0, n, QS)),
    ], [4, 1], [240, 24])


def descriptors(q, k, v, do, dq32, dk, dv, bm):
    """Descriptors over (batch*heads*seq, d) views: Q, dO by query block; K, V, dK, dV by one
    group's 64 keys; the float32 dQ buffer by (query block, dQ columns per reduce-add)."""
    d = q.shape[-1]
    dqn = min(d, 64)
    flat = [t.reshape(-1, d) for t in (q, k, v, do, dq32, dk, dv)]
    lq = gl.NVMMASharedLayout.get_default_for([bm, d], gl.bfloat16)
    lk = gl.NVMMASharedLayout.get_default_for([HALF.value, d], gl.bfloat16)
    l32 = gl.NVMMASharedLayout.get_default_for([bm, dqn], gl.float32)
    return (TensorDescriptor.from_tensor(flat[0], [bm, d], lq), TensorDescriptor.from_tensor(flat[1], [HALF.value, d], lk),
            TensorDescriptor.from_tensor(flat[2], [HALF.value, d], lk), TensorDescriptor.from_tensor(flat[3], [bm, d], lq),
            TensorDescriptor.from_tensor(flat[4], [bm, dqn], l32), TensorDescriptor.from_tensor(flat[5], [HALF.value, d], lk),
            TensorDescriptor.from_tensor(flat[6], [HALF.value, d], lk))


def _stages(d):
    return 3 if d <= 64 else 2  # Q and dO ring slots (shared memory: 208 KB at d=128 with 2)


def compile_only(d, causal, dq_first=False, turn=False):
    """Build for sm_90a without a GPU; ptxas's register and spill report."""
    from benchlib import ptxas_usage
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type
    bm = 64
    t = torch.empty(1024, d, dtype=torch.bfloat16)
    descs = descriptors(t, t, t, t, torch.empty(1024, d), t, t, bm)
    names = ("q_desc", "k_desc", "v_desc", "do_desc", "dq_desc", "dk_desc", "dv_desc")
    sig = {name: mangle_type(a) for name, a in zip(names, descs)}
    sig.update(Lse="*fp32", Delta="*fp32", S="i32", scale="fp32", sm_scale="fp32", QS="constexpr",
               CAUSAL="constexpr", DQ_FIRST="constexpr", TURN="constexpr", num_warps="constexpr")
    src = GluonASTSource(attention_bwd_fa3, sig, {"QS": _stages(d), "CAUSAL": causal, "DQ_FIRST": dq_first,
                                                  "TURN": turn, "num_warps": 4})
    c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    reduces = c.asm["ptx"].count("cp.reduce.async.bulk.tensor")
    print(f"d={d} causal={causal} dq_first={dq_first} turn={turn}: shared {c.metadata.shared}, {reduces} reduce-adds,", ptxas_usage(c.asm["ptx"]))
    return c


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--d", default="64,128")
    p.add_argument("--seqs", default="4096,16384")
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--causal", action="store_true", help="also the causal form")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--dq-first", action="store_true",
                   help="d=64: issue dQ's product before dV's and dK's, so its reduce-add overlaps them")
    p.add_argument("--turn", action="store_true",
                   help="the consumer groups take turns issuing products (FA3's ping-pong), one's exp2 under the other's")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    dims = [int(x) for x in args.d.split(",")]
    if args.compile_only:
        for d in dims:
            for causal in (False, True):
                compile_only(d, causal, args.dq_first and d == 64, args.turn)
        return
    root = Path(__file__).resolve().parent
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root.parent / "src"))
    import torch.nn.functional as F

    import safetile as ct
    from benchlib import time_ms
    from kernels import attention as A
    rows = []
    for d in dims:
        for seq in [int(s) for s in args.seqs.split(",")]:
            b = max(1, args.tokens // seq)
            q, k, v, do = (torch.randn(b, args.heads, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            bh, sm = b * args.heads, 1 / math.sqrt(d)
            flat = [t.reshape(-1, d) for t in (q, k, v, do)]
            for causal in (False, True) if args.causal else (False,):
                o = torch.empty_like(flat[0])
                lse = torch.empty(bh * seq, device="cuda", dtype=torch.float32)
                ct.launch(None, (seq // 128, bh), A.attention_2d, (*flat[:3], o, lse, seq, sm * LOG2E, 128, 64, d,
                                                                    causal, True, True, False))
                dq32 = torch.empty(bh * seq, d, device="cuda", dtype=torch.float32)
                dq, dk, dv = (torch.full_like(flat[0], float("nan")) for _ in range(3))
                descs = descriptors(q, k, v, do, dq32, dk, dv, 64)
                delta = torch.empty_like(lse)

                def run():
                    torch.sum(o.float() * flat[3].float(), dim=-1, out=delta)
                    dq32.zero_()
                    attention_bwd_fa3[(seq // BN.value, bh)](*descs, lse, delta, seq, sm * LOG2E, sm, QS=_stages(d),
                                                        CAUSAL=causal, DQ_FIRST=args.dq_first and d == 64,
                                                        TURN=args.turn, num_warps=4)
                    torch.mul(dq32, sm, out=dq32)
                    dq.copy_(dq32)
                qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
                out = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
                refs = torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True)
                run()
                torch.cuda.synchronize()
                errs = [((g.float() - r.reshape(-1, d).float()).norm() / r.float().norm()).item()
                        for g, r in zip((dq, dk, dv), refs)]
                ok = all(e < 2e-2 for e in errs)

                def sdpa_bwd():
                    torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True)
                t_ref = time_ms([sdpa_bwd], args.reps)
                t = time_ms([run], args.reps)
                flop = 2.5 * 4.0 * bh * seq * seq * d * (0.5 if causal else 1.0)
                rows.append({"seq": seq, "d": d, "causal": causal, "dq_first": args.dq_first and d == 64, "turn": args.turn,
                             "ms": t, "TFLOPs": flop / t / 1e9,
                             "sdpa_default_bwd_ms": t_ref, "ratio": t_ref / t, "rel_err": errs, "ok": ok})
                verdict = "ok" if ok else f"WRONG {['%.1e' % e for e in errs]}"
                print(f"d {d} seq {seq} causal {causal!s:5}: {t:.3f} ms {flop / t / 1e9:6.1f} TFLOP/s, SDPA default "
                      f"backward {flop / t_ref / 1e9:6.1f}: ratio {t_ref / t:.3f} {verdict}", flush=True)
            del q, k, v, do
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
