"""The ``warp_specialize="pingpong"`` hint: online-softmax loops (attention's) written in Gluon
with FlashAttention-3's schedule (producer warp, two consumer warp groups taking turns on the
tensor cores). On the CPU: which kernels match, the generated source, and builds for sm_90a; on
an H100/H200: results against torch's SDPA and against the same kernel without the hint (fresh
random inputs, outputs poisoned first)."""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from kernels import attention as A  # noqa: E402
from kernels import gemm as G  # noqa: E402
from pingpong_helpers import build_sm90, plan_of, sm90_facts  # noqa: E402

LOG2E = 1.4426950408889634
PP = A.attention_2d.replace_hints(warp_specialize="pingpong")


@ct.kernel
def weighted_rows(Q, K, V, O, lo, hi, scale, D: ct.Constant[int], BN: ct.Constant[int]):
    """An online softmax over key blocks lo..hi (a run-time range that may be empty) written
    differently from the benchmark's: natural exp, the running max taken after scaling, the
    accumulator rescaled by a division, and a cast through float32 before the store."""
    r = ct.bid(0)
    q = ct.load(Q, (r, 0), (128, D), allow_tma=True)
    m = ct.full((128,), -1e30, ct.float32)
    den = ct.zeros((128,), ct.float32)
    acc = ct.zeros((128, D), ct.float32)
    for j in range(lo, hi):
        k = ct.load(K, (j, 0), (BN, D), allow_tma=True)
        s = ct.mma(q, ct.transpose(k), ct.zeros((128, BN), ct.float32)) * scale
        m_new = ct.maximum(m, ct.max(s, axis=1))
        p = ct.exp(s - m_new[:, None])
        keep = ct.exp(m - m_new)
        den = den * keep + ct.sum(p, axis=1)
        v = ct.load(V, (j, 0), (BN, D), allow_tma=True)
        acc = ct.mma(p.astype(ct.bfloat16), v, acc / (1.0 / keep)[:, None])
        m = m_new
    ct.store(O, (r, 0), (acc / den[:, None]).astype(ct.float32).astype(O.dtype), allow_tma=True)


def _attn_args(d=128, bn=128, causal=True, lse=False, split=False, diag=True, s=1024, bm=128):
    q = torch.empty(2 * s, d, dtype=torch.bfloat16)
    return (q, q, q, q, torch.empty(2 * s if lse else 1), s, 0.1, bm, bn, d, causal, lse, split, diag)


def _plan(kern, args, narrays, target=90):
    return plan_of(kern, args, narrays, target)


def test_hint_takes_pingpong_and_rejects_other_strings():
    assert PP.hints == {"warp_specialize": "pingpong"}
    for bad in ("ping", "yes", 2):
        with pytest.raises(ValueError, match="warp_specialize"):
            A.attention_2d.replace_hints(warp_specialize=bad)


@pytest.mark.parametrize("causal,diag", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("bn,d", [(128, 128), (64, 128), (128, 64)])
def test_attention_loops_match(causal, diag, bn, d):
    """Non-causal (a second loop that never runs), causal masked throughout, causal masked under a
    branch at the diagonal."""
    p = _plan(PP, _attn_args(d, bn, causal, diag=diag), 5)
    assert p is not None and (p.bn, p.d, p.dv) == (bn, d, d)


def test_other_shapes_do_not_match():
    assert _plan(PP, _attn_args(lse=True, diag=False), 5).row_stores  # the log-sum-exp rows: a vector store
    assert _plan(PP, _attn_args(64, 64, bm=256), 5).groups == 4  # four consumer warp groups
    assert _plan(PP, _attn_args(64, 128, bm=256), 5) is None  # four groups would spill: 64x128 scores
    assert _plan(PP, _attn_args(64, 64, bm=64), 5) is None  # one group: nobody to take turns with
    assert _plan(PP, _attn_args(split=True), 5) is None  # two loops that run
    assert _plan(PP, _attn_args(), 5, target=80) is None  # no Gluon Hopper products before sm_90
    a, c = torch.empty(256, 256, dtype=torch.float16), torch.empty(256, 256, dtype=torch.float16)
    gemm = G.matmul.replace_hints(num_warps=4, warp_specialize="pingpong")
    assert _plan(gemm, (a, a, c, 128, 128, 64, 8, True), 3) is None  # one product per loop
    q = torch.empty(512, 64, dtype=torch.float32)
    assert _plan(PP, (q, q, q, q, torch.empty(1), 256, 0.1, 128, 64, 64, True, False, False, True), 5) is None  # fp32


def test_unmatched_kernels_keep_tritons_warp_specialisation():
    from safetile.backends.triton.launcher import kernel_source
    a, c = torch.empty(256, 256, dtype=torch.float16), torch.empty(256, 256, dtype=torch.float16)
    src = kernel_source(G.matmul.replace_hints(num_warps=4, warp_specialize="pingpong"),
                        (a, a, c, 128, 128, 64, 8, True), target=90)
    assert "@triton.jit" in src and "warp_specialize=True" in src and "gluon" not in src


def test_row_axes_are_split_between_the_consumers():
    """With 128-row query and key blocks, only the query positions (the row axis) are offset by
    the consumer's first row; the key positions keep all 128."""
    from safetile.backends.triton.launcher import kernel_source
    src = kernel_source(PP, _attn_args(128, 128, True), target=90)
    assert set(re.findall(r"gl\.arange\([^)]*\)", src)) == {"gl.arange(C * 64, C * 64 + 64)", "gl.arange(0, 128)"}
    assert "gl.warp_specialize(" in src and src.count("warpgroup_mma(") == 4


def _build(kern, args, narrays):
    return build_sm90(kern, args, narrays)


@pytest.mark.parametrize("bm,bn,d,causal,diag,lse", [(128, 128, 128, True, True, False),
                                                     (128, 64, 128, True, False, True),
                                                     (128, 128, 64, False, False, False),
                                                     (256, 64, 64, True, True, True)])
def test_generated_gluon_builds_for_sm90(bm, bn, d, causal, diag, lse, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    compiled = _build(PP, _attn_args(d, bn, causal, lse=lse, diag=diag, bm=bm), 5)
    assert "ttg.warp_specialize(" in compiled.asm["ttgir"]
    assert compiled.asm["ptx"].count("wgmma.mma_async") >= 2 and "setmaxnreg" in compiled.asm["ptx"]


def test_a_differently_written_loop_builds_for_sm90(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    x = torch.empty(1024, 64, dtype=torch.bfloat16)
    assert "ttg.warp_specialize(" in _build(weighted_rows.replace_hints(warp_specialize="pingpong"),
                                            (x, x, x, x, 0, 8, 0.1, 64, 64), 4).asm["ttgir"]


DQ = A.attention_bwd_dq.replace_hints(warp_specialize="pingpong")
DKDV = A.attention_bwd_dkdv.replace_hints(warp_specialize="pingpong")


def _dq_args(d=128, bn=64, causal=True, s=1024, device="cpu"):
    q, lse = torch.empty(2 * s, d, dtype=torch.bfloat16, device=device), torch.empty(2 * s, device=device)
    return (q, q, q, q, lse, lse, q, s, 0.1, 0.1, 128, bn, d, causal)


def _dkdv_args(d=64, bm=64, causal=True, split=True, s=1024):
    q, lse = torch.empty(2 * s, d, dtype=torch.bfloat16), torch.empty(2 * s)
    return (q, q, q, q, lse, lse, q, q, torch.empty(2 * s, d), s, 0.1, 0.1, bm, 128, d, causal, split, False)


@pytest.mark.parametrize("d,bn", [(64, 64), (64, 128), (128, 64)])
def test_the_backward_loops_match(d, bn):
    """dQ: two first-stage products (S = Q Kᵀ, dP = dO Vᵀ) over two row tiles, K read by a
    first-stage product and by the accumulating one, lse and delta loaded per row before the loop."""
    p = _plan(DQ, _dq_args(d, bn), 7)
    assert p is not None and (len(p.firsts), len(p.accs), len(p.row_vecs), p.bn, p.d) == (2, 1, 2, bn, d)
    assert [p.last_use(i) for i in range(len(p.cols))] == ["acc", "first"]  # K's slot waits for dQ's product


def test_dkdv_matches_where_its_registers_fit():
    """dK/dV: two accumulators, lse and delta loaded per column block in the loop. At d=128 with
    64-query column blocks the two 64x128 accumulators, two score tiles and the carried operands do
    not fit (ptxas spilled 496 bytes on a CPU build, 388 with 240 registers), so that kernel keeps
    Triton's code; with 32-query blocks it fits (no spill)."""
    p = _plan(DKDV, _dkdv_args(64), 9)
    assert p is not None and (len(p.firsts), len(p.accs), len(p.col_vecs), len(p.stores)) == (2, 2, 2, 2)
    assert _plan(DKDV, _dkdv_args(128), 9) is None
    assert _plan(DKDV, _dkdv_args(64, bm=128), 9) is None
    assert _plan(DKDV, _dkdv_args(128, bm=32), 9) is not None


@pytest.mark.parametrize("kern,args,n", [(DQ, _dq_args(128, 64, True), 7), (DKDV, _dkdv_args(64), 9),
                                         (DKDV, _dkdv_args(128, bm=32), 9)], ids=["dq", "dkdv", "dkdv-d128-bm32"])
def test_the_backward_builds_for_sm90(kern, args, n, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    compiled = _build(kern, args, n)
    assert "ttg.warp_specialize(" in compiled.asm["ttgir"]
    assert compiled.asm["ptx"].count("wgmma.mma_async") >= 3


def test_a_kernel_gluon_cannot_build_falls_back(monkeypatch, tmp_path):
    """A failed Gluon build is rebuilt as the ordinary Triton kernel: hints never make a kernel fail."""
    from safetile.backends.triton import launcher
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    built = []

    class FakeVariant:
        def __init__(self, jitfn, gen, facts, fn, interp, key="", loaded=None):
            built.append((facts.pingpong, gen.gluon))
            if gen.gluon:
                raise RuntimeError("layout inference failed")

    monkeypatch.setattr(launcher, "Variant", FakeVariant)
    monkeypatch.setattr(launcher.Specialization, "_warm", lambda self, k, facts, device: None)
    args = _attn_args()
    fn = PP.specialize(arg_specs(PP, args))
    spec = launcher.Specialization(PP, fn)
    spec.ir_text = "test"
    assert isinstance(spec._build(sm90_facts(args, 5), False, 0), FakeVariant)
    assert built == [(True, True), (False, False)]


# ------------------------------------------------------------------------------ on the GPU

def _hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU (H100/H200)")
@pytest.mark.parametrize("d,bm,bn", [(128, 128, 128), (128, 128, 64), (64, 128, 128), (64, 256, 64), (128, 128, 32)])
@pytest.mark.parametrize("causal,diag", [(False, False), (True, False), (True, True)])
def test_pingpong_attention_matches_sdpa_on_the_gpu(d, bm, bn, causal, diag):
    import torch.nn.functional as F
    b, h, s = 2, 3, 1024
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
    for _ in range(3):  # a race between the partitions shows as a result that moves between runs
        o = torch.full_like(q, float("nan"))
        ct.launch(None, (s // bm, b * h), PP, (*(t.view(-1, d) for t in (q, k, v, o)), torch.empty(1, device="cuda"),
                                               s, LOG2E / math.sqrt(d), bm, bn, d, causal, False, False, diag))
        torch.cuda.synchronize()
        err = ((o.float() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, err


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU (H100/H200)")
@pytest.mark.parametrize("causal", [False, True])
def test_pingpong_log_sum_exp_matches_the_triton_kernel_on_the_gpu(causal):
    """The forward the backward pass needs (LSE: a per-row vector stored beside the output), with
    and without the hint, on 3 heads of 640 rows (5 query blocks)."""
    bh, s, d = 3, 640, 128
    q, k, v = (torch.randn(bh * s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    outs = []
    for kern, split, diag in ((A.attention_2d, True, False), (PP, False, True)):
        o = torch.full_like(q, float("nan"))
        lse = torch.full((bh * s,), float("nan"), device="cuda")
        ct.launch(None, (s // 128, bh), kern, (q, k, v, o, lse, s, LOG2E / math.sqrt(d), 128, 64, d, causal, True,
                                               split, diag))
        torch.cuda.synchronize()
        outs.append((o.float(), lse))
    (o1, l1), (o2, l2) = outs
    assert torch.isfinite(o2).all() and torch.isfinite(l2).all()
    assert ((o1 - o2).norm() / o1.norm()).item() < 1e-2
    assert (l1 - l2).abs().max().item() < 1e-2


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU (H100/H200)")
@pytest.mark.parametrize("lo,hi", [(0, 8), (3, 7), (5, 5), (6, 2)])
def test_pingpong_matches_the_triton_kernel_on_the_gpu(lo, hi):
    """The same kernel with and without the hint, over ranges of key blocks that include an empty
    one (the accumulator's initial value reaches the store) and rows past the array's end."""
    rng = np.random.default_rng(lo * 10 + hi)
    rows, d = 1000, 64
    q, k, v = (torch.from_numpy(rng.standard_normal((rows, d), dtype=np.float32)).to("cuda", torch.bfloat16)
               for _ in range(3))
    outs = []
    for kern in (weighted_rows, weighted_rows.replace_hints(warp_specialize="pingpong")):
        o = torch.full((rows, d), float("nan"), device="cuda", dtype=torch.bfloat16)
        ct.launch(None, (ct.cdiv(rows, 128),), kern, (q, k, v, o, lo, hi, 0.125, d, 64))
        torch.cuda.synchronize()
        outs.append(o.float())
    plain, pp = outs
    assert torch.equal(plain.isnan(), pp.isnan())
    fin = ~plain.isnan()
    assert (lo >= hi) == bool((~fin).all())
    if fin.any():
        assert ((plain[fin] - pp[fin]).norm() / plain[fin].norm()).item() < 1e-2


@pytest.mark.gpu
@pytest.mark.skipif(not _hopper(), reason="needs an sm_90 GPU (H100/H200)")
@pytest.mark.parametrize("d,dq_bn,dkdv_bm", [(64, 64, 64), (64, 128, 64), (128, 64, 64), (128, 32, 32)])
@pytest.mark.parametrize("causal", [False, True])
def test_pingpong_backward_matches_sdpa_on_the_gpu(d, dq_bn, dkdv_bm, causal):
    """dQ and dK/dV with the hint (dK/dV at d=128 with 64-query blocks is declined: Triton's code)
    against SDPA's backward, three times (a race between the partitions shows as a result that
    moves between runs)."""
    import torch.nn.functional as F
    b, h, s = 2, 3, 1024
    q, k, v, do = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
    refs = torch.autograd.grad(F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal), (qr, kr, vr), do)
    flat = [t.reshape(-1, d) for t in (q, k, v, do)]
    sm = 1 / math.sqrt(d)
    o = torch.empty_like(flat[0])
    lse = torch.empty(b * h * s, device="cuda", dtype=torch.float32)
    ct.launch(None, (s // 128, b * h), A.attention_2d, (*flat[:3], o, lse, s, sm * LOG2E, 128, 64, d, causal, True,
                                                        True, False))
    delta = torch.empty_like(lse)
    ct.launch(None, (b * h * s // 128,), A.attention_bwd_delta, (o, flat[3], delta, 128, d))
    for _ in range(3):
        dq, dk, dv = (torch.full_like(flat[0], float("nan")) for _ in range(3))
        ct.launch(None, (s // 128, b * h), DKDV, (*flat, lse, delta, dk, dv, dq, s, sm * LOG2E, sm, dkdv_bm, 128, d,
                                                  causal, True, False))
        ct.launch(None, (s // 128, b * h), DQ, (*flat, lse, delta, dq, s, sm * LOG2E, sm, 128, dq_bn, d, causal))
        torch.cuda.synchronize()
        for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), refs):
            err = ((got.float() - ref.reshape(-1, d).float()).norm() / ref.float().norm()).item()
            assert err < 2e-2, (name, err)
