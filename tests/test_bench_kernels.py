"""The benchmark's own kernels (bench/kernels/) against NumPy/torch references on small random
inputs, on the CPU backend (the GPU runs them through bench/gpu_bench.py, which checks every
case again before timing it), and the benchmark's command line."""
from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import safetile as ct

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from kernels import attention as A  # noqa: E402
from kernels import gemm as G  # noqa: E402
from kernels import others as O  # noqa: E402
from triton_interp import triton_interpreter  # noqa: E402

rng = np.random.default_rng(12)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("sk_first", [False, True])
@pytest.mark.parametrize("m,n,k,bm,bn,bk,nprog", [(96, 80, 64, 32, 32, 16, 5), (70, 50, 48, 16, 16, 16, 7),
                                                   (64, 64, 32, 32, 32, 16, 4), (24, 24, 32, 8, 8, 16, 8)])
def test_streamk_gemm(m, n, k, bm, bn, bk, nprog, sk_first):
    """The last case has one tile past the whole wave but only 2 K iterations for 8 blocks: it
    left a tile unwritten (NaN) and its counter set before the plan moved the wave into stream-K."""
    a, b = rand(m, k), rand(k, n)
    dp, sk = G.plan_streamk(m, n, k, bm, bn, bk, nprog)
    assert sk == 0 or sk * -(-k // bk) >= nprog
    c = np.full((m, n), np.nan, np.float32)
    work = np.full((2 * nprog * bm, bn), np.nan, np.float32)
    locks = np.zeros(max(sk, 1), np.int32)
    for _ in range(2):  # the counters are left at zero for the next launch
        c[:] = np.nan
        ct.launch(None, (nprog,), G.matmul_streamk, (a, b, c, work, locks, dp, bm, bn, bk, 8, nprog, sk_first,
                                                     sk_first))
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
        assert not locks.any()


def test_streamk_plan():
    assert G.plan_streamk(1024, 1024, 1024, 128, 128, 64, 64) == (64, 0)  # whole waves: no split
    dp, sk = G.plan_streamk(3000, 5000, 4096, 128, 256, 64, 132)
    assert dp + sk == 24 * 20 and dp == 3 * 132 and sk == 84
    assert G.plan_streamk(100, 100, 512, 128, 128, 64, 4) == (0, 1)  # fewer tiles than blocks: all split
    # 4 tiles x 16 iterations past 31 whole waves, for 132 blocks: a whole wave joins the split
    assert G.plan_streamk(8192, 8192, 1000, 128, 128, 64, 132) == (30 * 132, 4096 - 30 * 132)
    assert G.plan_streamk(100, 100, 128, 128, 128, 64, 4) == (1, 0)  # 2 iterations for 4 blocks: no stream-K


@pytest.mark.parametrize("backend", ["cpu", "triton"])
@pytest.mark.parametrize("m,n,k,bm,bn,bk,slots", [(70, 50, 80, 16, 16, 16, 3), (96, 40, 64, 32, 16, 16, 7),
                                                   (20, 30, 48, 32, 32, 16, 4)])
def test_splittail_gemm(m, n, k, bm, bn, bk, slots, backend):
    """Ragged shapes whose last partial wave is split by K slices (and one with fewer tiles than
    slots: every tile split); the CPU backend and the generated Triton code in its interpreter."""
    dp, split = G.plan_splittail(m, n, k, bm, bn, bk, slots, min_slice=1)
    tiles = -(-m // bm) * -(-n // bn)
    assert split > 1 and dp < tiles
    a, b = rand(m, k), rand(k, n)
    c = np.full((m, n), np.nan, np.float32)
    work = np.full(((tiles - dp) * split * bm, bn), np.nan, np.float32)
    locks = np.zeros(tiles - dp, np.int32)
    ctx = triton_interpreter() if backend == "triton" else contextlib.nullcontext()
    with ctx:
        for _ in range(2):  # the counters are left at zero for the next launch
            c[:] = np.nan
            ct.launch(None, (dp + (tiles - dp) * split,), G.matmul_splittail,
                      (a, b, c, work, locks, dp, bm, bn, bk, 2, split))
            np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
            assert not locks.any()


def test_splittail_plan():
    assert G.plan_splittail(3000, 5000, 4096, 128, 256, 64, 132) == (3 * 132, 3)  # 252 slices: two waves
    assert G.plan_splittail(4096, 4096, 4096, 128, 128, 64, 64) == (1024, 1)  # whole waves: no split
    assert G.plan_splittail(2048, 2048, 2048, 128, 256, 64, 132) == (128, 1)  # 128 of 132: nothing to gain
    assert G.plan_splittail(1024, 1024, 1024, 128, 256, 64, 132) == (0, 4)  # 32 tiles: split-K by 4
    assert G.plan_splittail(1024, 1024, 128, 128, 256, 64, 132) == (32, 1)  # two K iterations: too short


def _attention_ref(q, k, v, causal):
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    lse = np.log(p.sum(-1)) + s.max(-1)
    p /= p.sum(-1, keepdims=True)
    return p, p @ v, lse


@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_and_backward(causal):
    bh, s, d, bm, bn = 2, 64, 16, 32, 16
    q, k, v, do = (rand(bh, s, d) * 0.5 for _ in range(4))
    p, ref, lse_ref = _attention_ref(q, k, v, causal)
    sm = 1 / math.sqrt(d)
    scale = sm * 1.4426950408889634
    o3 = np.full_like(q, np.nan)
    ct.launch(None, (s // bm, bh), A.attention, (q, k, v, o3, scale, bm, bn, d, causal))
    np.testing.assert_allclose(o3, ref, rtol=1e-4, atol=1e-5)
    flat = [x.reshape(-1, d) for x in (q, k, v, do)]
    o, lse = np.full_like(flat[0], np.nan), np.full(bh * s, np.nan, np.float32)
    for split in (True, False):  # causal: split at the diagonal, or one loop with a masking branch
        o[:], lse[:] = np.nan, np.nan
        ct.launch(None, (s // bm, bh), A.attention_2d, (*flat[:3], o, lse, s, scale, bm, bn, d, causal, True, split,
                                                        not split))
        np.testing.assert_allclose(o.reshape(ref.shape), ref, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(lse, (lse_ref / math.log(2)).reshape(-1), rtol=1e-5, atol=1e-5)
    for blocks in (1, 3):  # the persistent kernel: fewer blocks than (query block, head) tiles
        o[:] = np.nan
        ct.launch(None, (blocks,), A.attention_2d_persistent, (*flat[:3], o, s, scale, bm, bn, d, causal))
        np.testing.assert_allclose(o.reshape(ref.shape), ref, rtol=1e-4, atol=1e-5)
    delta = np.full(bh * s, np.nan, np.float32)
    ct.launch(None, (bh * s // bm,), A.attention_bwd_delta, (o, flat[3], delta, bm, d))
    dq, dk, dv = (np.full_like(flat[0], np.nan) for _ in range(3))
    ct.launch(None, (s // bm, bh), A.attention_bwd_dq, (*flat, lse, delta, dq, s, scale, sm, bm, bn, d, causal))
    dp = do.astype(np.float64) @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    want = {"dq": ds @ k * sm, "dk": np.swapaxes(ds, -1, -2) @ q * sm, "dv": np.swapaxes(p, -1, -2) @ do}
    for split in (True, False):
        dk[:], dv[:] = np.nan, np.nan
        ct.launch(None, (s // bn, bh), A.attention_bwd_dkdv,
                  (*flat, lse, delta, dk, dv, dq, s, scale, sm, bm, bn, d, causal, split, False))
        for name, got in (("dq", dq), ("dk", dk), ("dv", dv)):
            np.testing.assert_allclose(got.reshape(want[name].shape), want[name], rtol=1e-3, atol=1e-4,
                                       err_msg=f"{name} split={split}")
    dk[:], dv[:], dq[:] = np.nan, np.nan, np.nan  # dK/dV with dQ added up by atomics, then cast
    dqacc = np.zeros_like(flat[0])
    ct.launch(None, (s // bn, bh), A.attention_bwd_dkdv, (*flat, lse, delta, dk, dv, dqacc, s, scale, sm, bm, bn, d,
                                                           causal, False, True))
    ct.launch(None, (bh * s // bm,), A.attention_bwd_dq_cast, (dqacc, dq, sm, bm, d))
    for name, got in (("dq", dq), ("dk", dk), ("dv", dv)):
        np.testing.assert_allclose(got.reshape(want[name].shape), want[name], rtol=1e-3, atol=1e-4,
                                   err_msg=f"{name} fused")


def test_kernels_in_other_styles():
    m, n = 3, 2500  # not a multiple of the 1024-element chunks
    x, w, b = rand(m, n), rand(n), rand(n)
    y, mean, rstd = np.full_like(x, np.nan), np.full(m, np.nan, np.float32), np.full(m, np.nan, np.float32)
    ct.launch(None, (m,), O.layernorm_chunked, (x, w, b, y, mean, rstd, 1e-5, 1024))
    mu, var = x.mean(1, dtype=np.float64), x.var(1, dtype=np.float64)
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(var + 1e-5), rtol=1e-4)
    np.testing.assert_allclose(y, (x - mu[:, None]) / np.sqrt(var[:, None] + 1e-5) * w + b, rtol=1e-4, atol=1e-4)
    sm = np.full_like(x, np.nan)
    ct.launch(None, (m,), O.softmax_chunked, (x, sm, 1024))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    x3, w3 = rand(2, 5, 48), rand(48)
    y3 = np.full_like(x3, np.nan)
    ct.launch(None, (5, 2), O.rmsnorm_3d, (x3, w3, y3, 1e-6, 64))
    np.testing.assert_allclose(y3, x3 / np.sqrt((x3.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w3,
                               rtol=1e-4, atol=1e-5)
    table, ids = rand(50, 40), rng.integers(0, 50, 37).astype(np.int32)
    out = np.full((37, 40), np.nan, np.float32)
    ct.launch(None, (ct.cdiv(37, 8), ct.cdiv(40, 16)), O.embedding_gather, (table, ids, out, 8, 16))
    np.testing.assert_array_equal(out, table[ids])
    xt = rand(40, 24)
    yt = np.full((24, 40), np.nan, np.float32)
    ct.launch(None, (ct.cdiv(40, 16), ct.cdiv(24, 16)), O.transpose_tiles, (xt, yt, 16, 16))
    np.testing.assert_array_equal(yt, xt.T)
    a, bb = rand(3, 40, 24), rand(3, 24, 20)
    c = np.full((3, 40, 20), np.nan, np.float32)
    ct.launch(None, (3, ct.cdiv(40, 16), ct.cdiv(20, 16)), O.batched_matmul_3d, (a, bb, c, 16, 16, 16))
    np.testing.assert_allclose(c, a.astype(np.float64) @ bb, rtol=1e-4, atol=1e-4)


def test_bench_cli_rejects_unknown_sections(capsys):
    pytest.importorskip("torch")
    import gpu_bench
    with pytest.raises(SystemExit):
        gpu_bench.parse_args(["--only", "softmax,norm"])
    assert "unknown section(s) softmax, norm" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        gpu_bench.parse_args(["--only", ","])
    assert gpu_bench.parse_args(["--only", "gemm, attention"]).only == ["gemm", "attention"]


def test_gemm_configs_name_warp_specialisation_in_a_sixth_field():
    pytest.importorskip("torch")
    from sections.gemm import _candidate, parse_configs
    import torch
    plain, ws = parse_configs("128x256x64x8x3,256x128x64x4x3x1")
    assert plain == {"BM": 128, "BN": 256, "BK": 64, "warps": 8, "stages": 3, "ws": 0}
    assert ws == {"BM": 256, "BN": 128, "BK": 64, "warps": 4, "stages": 3, "ws": 1}
    a, c = torch.zeros(512, 512, dtype=torch.float16), torch.zeros(512, 512, dtype=torch.float16)
    assert _candidate(ws, "tile", True, a, a, c, 132)[0].hints == {"num_warps": 4, "num_stages": 3,
                                                                    "warp_specialize": True}
    assert "warp_specialize" not in _candidate(plain, "persistent", False, a, a, c, 132)[0].hints


def test_bench_plots(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("torch")
    from benchlib import write_plots
    res = {"device": "test", "gemm": [{"dtype": "float16", "m": s, "n": s, "k": s, "ratio": r}
                                      for s, r in ((1024, 0.8), (4096, 1.02))],
           "add": [{"dtype": "float32", "n": 1 << 20, "ratio": 0.5}, {"dtype": "float32", "n": 1 << 24, "ratio": 0.99}]}
    paths = write_plots(res, tmp_path / "run.json")
    assert sorted(p.name for p in paths) == ["run-add.png", "run-gemm.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)


@pytest.mark.gpu
@pytest.mark.parametrize("d,bm,bn", [(64, 64, 128), (128, 64, 64)])
@pytest.mark.parametrize("causal", [False, True])
def test_fused_backward_matches_sdpa_on_the_gpu(d, bm, bn, causal):
    """dK/dV with dQ added up by atomics (then cast) against SDPA's backward, twice (the atomics'
    order changes between runs; the result must stay within tolerance every time)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    import torch.nn.functional as F
    b, h, s = 2, 4, 1024
    q, k, v, do = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    qr, kr, vr = (t.detach().requires_grad_() for t in (q, k, v))
    refs = torch.autograd.grad(F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal), (qr, kr, vr), do)
    flat = [t.reshape(-1, d) for t in (q, k, v, do)]
    sm = 1 / math.sqrt(d)
    o = torch.empty_like(flat[0])
    lse = torch.empty(b * h * s, device="cuda", dtype=torch.float32)
    ct.launch(None, (s // 128, b * h), A.attention_2d, (*flat[:3], o, lse, s, sm * 1.4426950408889634, 128, 64, d,
                                                        causal, True, True, False))
    delta = torch.empty_like(lse)
    ct.launch(None, (b * h * s // 128,), A.attention_bwd_delta, (o, flat[3], delta, 128, d))
    kern = A.attention_bwd_dkdv.replace_hints(num_warps=8, num_stages=3)
    for _ in range(2):
        dq, dk, dv = (torch.full_like(flat[0], float("nan")) for _ in range(3))
        acc = torch.zeros(b * h * s, d, device="cuda", dtype=torch.float32)
        ct.launch(None, (s // bn, b * h), kern, (*flat, lse, delta, dk, dv, acc, s, sm * 1.4426950408889634, sm, bm,
                                                 bn, d, causal, False, True))
        ct.launch(None, (b * h * s // 128,), A.attention_bwd_dq_cast, (acc, dq, sm, 128, d))
        torch.cuda.synchronize()
        for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), refs):
            err = ((got.float() - ref.reshape(-1, d).float()).norm() / ref.float().norm()).item()
            assert err < 2e-2, (name, err)


def test_gluon_attention_probe_builds_for_sm90(capsys):
    """The Gluon experiment (bench/gluon_attention_probe.py) still compiles for sm_90a without a
    GPU, both forms, with no register spills."""
    pytest.importorskip("torch")
    pytest.importorskip("triton.experimental.gluon")
    import gluon_attention_probe as G
    G.main(["--compile-only", "--tiles", "128x128x8,ws:128x128x4"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("shared")]
    assert len(lines) == 2 and all("0 bytes spill stores" in ln for ln in lines), lines


def test_gluon_backward_probe_builds_for_sm90(capsys):
    """The FA3-style backward experiment (bench/gluon_attention_bwd_probe.py) compiles for sm_90a
    without a GPU at d=64, with its TMA reduce-adds of dQ and no register spills (d=128 spills:
    bench/NOTES.md, session 14)."""
    pytest.importorskip("torch")
    pytest.importorskip("triton.experimental.gluon")
    import gluon_attention_bwd_probe as G
    c = G.compile_only(64, True)
    assert c.asm["ptx"].count("cp.reduce.async.bulk.tensor") >= 1
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("d=64")]
    assert len(line) == 1 and "0 bytes spill stores" in line[0], line


def test_gemm_confirmation_alternates_and_takes_medians():
    """The GEMM and attention rows' ratios come from the chosen kernel and torch timed again in
    turn (benchlib ``confirmed``): each round the other goes first, and each side's median is
    returned (a fake timer returns per-call readings and records the order)."""
    pytest.importorskip("torch")
    from benchlib import confirmed
    order, readings = [], {"st": iter([3.0, 1.0, 2.0, 9.0]), "torch": iter([4.0, 8.0, 5.0, 6.0])}

    def timer(calls, reps):
        assert reps == 7 and len(calls) == 1
        name = calls[0]()
        order.append(name)
        return next(readings[name])

    st, tt = confirmed(lambda: "st", lambda: "torch", 4, 7, timer)
    assert order == ["st", "torch", "torch", "st", "st", "torch", "torch", "st"]
    assert (st, tt) == (2.5, 5.5)
    seen = []  # lists of calls (the others section rotates input copies) go to the timer as they are
    confirmed([len, abs], [min], 2, 7, lambda calls, reps: seen.append(calls) or 1.0)
    assert seen == [[len, abs], [min], [min], [len, abs]]


def test_in_turn_times_every_kernel_once_per_round_in_a_new_order(monkeypatch):
    """``benchlib.in_turn`` (walk_ab.py, streamk_ab.py): one reading per kernel per round, the
    rounds in different orders, each reading from ``time_ms`` on that kernel's own calls."""
    pytest.importorskip("torch")
    import random
    import benchlib
    order = []

    def fake_time_ms(calls, reps):
        assert reps == 3
        order.append(calls[0]())
        return float(len(order))

    monkeypatch.setattr(benchlib, "time_ms", fake_time_ms)
    calls = {name: [lambda name=name: name] for name in "abcd"}
    samples = benchlib.in_turn(calls, 5, 3, random.Random(1))
    rounds = [order[i:i + 4] for i in range(0, 20, 4)]
    assert all(sorted(r) == list("abcd") for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # shuffled
    assert {k: len(v) for k, v in samples.items()} == dict.fromkeys("abcd", 5)
    assert samples["a"] == [float(i + 1) for i, name in enumerate(order) if name == "a"]
