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


@gluon.jit
def attention_fwd(q_desc, k_desc, v_desc, o_desc, S, scale, num_warps: gl.constexpr):
    BM: gl.constexpr = q_desc.block_type.shape[0]
    D: gl.constexpr = q_desc.block_type.shape[1]
    BN: gl.constexpr = k_desc.block_type.shape[0]
    KS: gl.constexpr = 3
    VS: gl.constexpr = 2
    dtype: gl.constexpr = q_desc.dtype
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, BN, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)

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
    out = acc * gl.convert_layout(1.0 / l_i, gl.SliceLayout(1, o_layout))[:, None]
    q_smem.store(out.to(dtype))  # Q's buffer holds the output tile
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [row0 + qb * BM, 0], q_smem)
    tma.store_wait(pendings=0)


def descriptors(q, k, v, o, bm, bn):
    d = q.shape[-1]
    flat = [t.reshape(-1, d) for t in (q, k, v, o)]
    lq = gl.NVMMASharedLayout.get_default_for([bm, d], gl.bfloat16)
    lk = gl.NVMMASharedLayout.get_default_for([bn, d], gl.bfloat16)
    return (TensorDescriptor.from_tensor(flat[0], [bm, d], lq), TensorDescriptor.from_tensor(flat[1], [bn, d], lk),
            TensorDescriptor.from_tensor(flat[2], [bn, d], lk), TensorDescriptor.from_tensor(flat[3], [bm, d], lq))


def compile_only(d, bm, bn):
    """Build for sm_90a without a GPU: a failed layout or schedule shows here."""
    import subprocess

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type
    q = torch.empty(1, 1, 1024, d, dtype=torch.bfloat16)
    descs = descriptors(q, q, q, q, bm, bn)
    sig = {name: mangle_type(a) for name, a in zip(("q_desc", "k_desc", "v_desc", "o_desc"), descs)}
    sig.update(S="i32", scale="fp32", num_warps="constexpr")
    src = GluonASTSource(attention_fwd, sig, {"num_warps": 8})
    c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
    ptxas = triton.backends.nvidia.compiler.get_ptxas(90).path
    Path("/tmp/gluon_attention.ptx").write_text(c.asm["ptx"])
    r = subprocess.run([ptxas, "-arch=sm_90a", "-v", "/tmp/gluon_attention.ptx", "-o", "/tmp/gluon_attention.cubin"],
                       capture_output=True, text=True)
    print("shared", c.metadata.shared, [ln.strip() for ln in r.stderr.splitlines() if "spill" in ln or "Used" in ln])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--tiles", default="128x128,128x64")
    p.add_argument("--seqs", default="4096,8192,16384")
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    tiles = [tuple(int(x) for x in t.split("x")) for t in args.tiles.split(",")]
    if args.compile_only:
        for bm, bn in tiles:
            compile_only(args.d, bm, bn)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch.nn.functional as F

    from benchlib import time_ms
    rows, d = [], args.d
    for seq in [int(s) for s in args.seqs.split(",")]:
        b = max(1, args.tokens // seq)
        q, k, v = (torch.randn(b, args.heads, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        ref = F.scaled_dot_product_attention(q, k, v)
        t_ref = time_ms([lambda: F.scaled_dot_product_attention(q, k, v)], args.reps)
        flop = 4.0 * b * args.heads * seq * seq * d
        for bm, bn in tiles:
            o = torch.full_like(q, float("nan"))
            descs = descriptors(q, k, v, o, bm, bn)
            grid = (seq // bm, b * args.heads)

            def run():
                attention_fwd[grid](*descs, seq, LOG2E / math.sqrt(d), num_warps=8)
            run()
            torch.cuda.synchronize()
            err = ((o.float() - ref.float()).abs().max()).item()
            t = time_ms([run], args.reps)
            ok = err < 2e-2
            rows.append({"seq": seq, "d": d, "tile": f"{bm}x{bn}", "ms": t, "TFLOPs": flop / t / 1e9,
                         "sdpa_default_ms": t_ref, "ratio": t_ref / t, "max_err": err, "ok": ok})
            print(f"seq {seq} d {d} {bm}x{bn}: {t:.3f} ms {flop / t / 1e9:6.1f} TFLOP/s, SDPA default "
                  f"{flop / t_ref / 1e9:6.1f}: ratio {t_ref / t:.3f} {'ok' if ok else f'WRONG ({err:.2e})'}", flush=True)
        del q, k, v, ref
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
