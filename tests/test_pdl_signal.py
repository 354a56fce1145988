"""Where a generated kernel lets its successor launch under programmatic dependent launch
(``Facts.pdl`` in backends/triton/codegen.py): first thing, or right after the last top-level loop
of matrix products (a successor launched early doubles up on the SMs a tile-starved GEMM uses).
The wait for the predecessor always comes first, so results cannot depend on the placement; the
GPU test checks a GEMM and its dependent kernels back to back, eagerly and replayed in a graph."""
from __future__ import annotations

import dataclasses

import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

ZERO = ct.PaddingMode.ZERO


@ct.kernel
def gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (ct.bid(0), k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, ct.bid(1)), (tk, tn), padding_mode=ZERO), acc)
    ct.store(C, (ct.bid(0), ct.bid(1)), acc.astype(C.dtype))


@ct.kernel
def two_loops(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    """A product loop, a loop without products after it, then a second product loop."""
    acc = ct.zeros((tm, tn), ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (ct.bid(0), k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, ct.bid(1)), (tk, tn), padding_mode=ZERO), acc)
    for _k in range(2):
        acc = acc * 0.5
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (ct.bid(0), k), (tm, tk), padding_mode=ZERO),
                     ct.load(B, (k, ct.bid(1)), (tk, tn), padding_mode=ZERO), acc)
    for _k in range(2):
        acc = acc + 1.0
    ct.store(C, (ct.bid(0), ct.bid(1)), acc.astype(C.dtype))


@ct.kernel
def scale(X, Y, t: ct.Constant[int]):
    for _k in range(2):
        ct.store(Y, (ct.bid(0),), ct.load(X, (ct.bid(0),), (t,)) * 2.0)


def _source(kern, args, **facts):
    from safetile.backends.triton.codegen import default_facts, generate
    from safetile.runtime.args import arg_specs
    fn = kern.specialize(arg_specs(kern, args))
    return generate(fn, dataclasses.replace(default_facts(fn), **facts)).source.splitlines()


def _gemm_args(m=64, n=48, k=80):
    g = torch.Generator().manual_seed(1)
    a, b = (torch.randn(*s, generator=g).to(torch.float16) for s in ((m, k), (k, n)))
    return a, b, torch.empty(m, n, dtype=torch.float16), 16, 16, 16


def _top_level(lines):
    """The kernel body's top-level statements (4 spaces deep), in order."""
    return [ln.strip() for ln in lines if ln.startswith("    ") and not ln.startswith("     ")]


def test_a_gemm_waits_first_and_signals_right_after_its_k_loop():
    top = _top_level(_source(gemm, _gemm_args(), pdl=True))
    assert top[0] == "_st_gdc_wait()"
    assert top.count("_st_gdc_launch()") == 1
    signal = top.index("_st_gdc_launch()")
    assert top[signal - 1].startswith("for "), "the signal follows the K loop at the top level"
    assert any(s.startswith("tl.store(") for s in top[signal:]), "the epilogue comes after the signal"


def test_with_several_loops_the_signal_follows_the_last_one_with_products():
    top = _top_level(_source(two_loops, _gemm_args(), pdl=True))
    loops = [i for i, s in enumerate(top) if s.startswith("for ")]
    assert len(loops) == 4 and top.count("_st_gdc_launch()") == 1
    assert loops[2] < top.index("_st_gdc_launch()") < loops[3]


def test_kernels_without_products_signal_first_thing():
    x = torch.randn(64)
    top = _top_level(_source(scale, (x, torch.empty(64), 16), pdl=True))
    assert top[:2] == ["_st_gdc_launch()", "_st_gdc_wait()"]
    assert top.count("_st_gdc_launch()") == 1


def test_without_pdl_there_is_no_griddepcontrol_at_all():
    for kern, args in ((gemm, _gemm_args()), (scale, (torch.randn(64), torch.empty(64), 16))):
        assert not any("_st_gdc" in ln for ln in _source(kern, args, pdl=False))


def test_a_walked_gemm_signals_after_its_walk():
    lines = _source(gemm, _gemm_args(), pdl=True, persistent=True)
    top = _top_level(lines)
    assert top[0] == "_st_gdc_wait()" and top[-1] == "_st_gdc_launch()"
    assert sum("_st_gdc_launch()" in ln for ln in lines) == 1
    assert any("tl.num_programs(0)" in s for s in top), "the walk is the loop before it"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_the_gpu_a_gemm_and_its_dependents_back_to_back_eagerly_and_in_a_graph(monkeypatch):
    """Each step multiplies the previous step's output: a successor that ran before its GEMM
    finished would read a stale or half-written tile. Tile-starved on purpose (32 blocks)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SAFETILE_BACKEND", raising=False)
    g = torch.Generator().manual_seed(3)
    n, steps = 512, 8
    w = (torch.randn(n, n, generator=g) / n ** 0.5).to(torch.float16).cuda()
    x0 = torch.randn(n, n, generator=g).to(torch.float16).cuda()
    ys = [torch.empty_like(x0) for _ in range(steps)]  # ys[i] = xs[i] @ w
    xs = [x0] + [torch.empty_like(x0) for _ in range(steps)]  # xs[i + 1] = 2 * ys[i]
    kern = gemm.replace_hints(num_warps=4, num_stages=4)

    def chain():
        for i in range(steps):
            ct.launch(None, (n // 64, n // 128), kern, (xs[i], w, ys[i], 64, 128, 64))
            ct.launch(None, (n * n // 1024,), scale, (ys[i].view(-1), xs[i + 1].view(-1), 1024))

    def poison():
        for t in ys + xs[1:]:
            t.fill_(float("nan"))

    ref = x0
    for _ in range(steps):
        ref = ((ref.float() @ w.float()).half().float() * 2.0).half()
    poison()
    chain()
    torch.cuda.synchronize()
    eager = xs[-1].clone()
    # values grow to ~256 over the steps, and fp16 roundings (a few units in the last place there)
    # differ from torch's: the bound is relative to the result's scale; a stale tile is off by far more
    torch.testing.assert_close(eager.float(), ref.float(), rtol=0, atol=1e-2 * ref.float().abs().max().item())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain()
    poison()
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(xs[-1], eager, rtol=0, atol=0)
