"""The ``warp_specialize`` kernel hint: validated like every hint, written into the generated
source only where it can act (sm_90+, innermost loops with a matrix product), compiled by
Triton 3.6 into producer/consumer warp groups on Hopper, dropped (not failed) when Triton cannot
partition the loop, and never changing a result: on the GPU, warp-specialised attention against
torch's SDPA on fresh random inputs."""
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


@ct.kernel
def scaled_then_products(X, W, Y, N: ct.Constant[int], T: ct.Constant[int]):
    """A loop without a product (scaling X's tiles in place) and one with (Y = X Wᵀ summed)."""
    acc = ct.zeros((T, T), ct.float32)
    for i in range(N):
        x = ct.load(X, (i, 0), (T, T))
        ct.store(X, (i, 0), x * 2.0)
    for i in range(N):
        acc = ct.mma(ct.load(X, (i, 0), (T, T)), ct.transpose(ct.load(W, (i, 0), (T, T))), acc)
    ct.store(Y, (0, 0), acc)


def _loops(src: str) -> list[str]:
    return [ln.strip() for ln in src.splitlines() if re.match(r"\s*for \w+ in ", ln)]


def test_hint_is_validated_and_kept():
    k = scaled_then_products.replace_hints(warp_specialize=True, num_warps=4)
    assert k.hints == {"warp_specialize": True, "num_warps": 4}
    for bad in (1, "yes", None):
        with pytest.raises(ValueError, match="warp_specialize"):
            scaled_then_products.replace_hints(warp_specialize=bad)
    assert ct.kernel(warp_specialize=ct.ByTarget(sm_90=True, default=False))(
        scaled_then_products.fn).hints["warp_specialize"] == ct.ByTarget(sm_90=True, default=False)


def test_only_product_loops_on_sm90_get_it():
    from safetile.backends.triton.launcher import kernel_source
    x, w, y = torch.zeros(64, 16), torch.zeros(64, 16), torch.zeros(16, 16)
    args = (x, w, y, 4, 16)
    ws = scaled_then_products.replace_hints(warp_specialize=True)
    loops = _loops(kernel_source(ws, args, target=90))
    assert len(loops) == 2 and "warp_specialize" not in loops[0] and "warp_specialize=True" in loops[1], loops
    assert not any("warp_specialize" in ln for ln in _loops(kernel_source(ws, args, target=80)))
    assert not any("warp_specialize" in ln for ln in _loops(kernel_source(scaled_then_products, args, target=90)))
    by_target = scaled_then_products.replace_hints(warp_specialize=ct.ByTarget(sm_100=True, default=False))
    assert not any("warp_specialize" in ln for ln in _loops(kernel_source(by_target, args, target=90)))


@ct.kernel
def products_then_atomic(X, W, Y, N: ct.Constant[int], T: ct.Constant[int]):
    """A product loop that also writes (an atomic add per step): not the shape to partition."""
    for i in range(N):
        t = ct.mma(ct.load(X, (i, 0), (T, T)), ct.load(W, (i, 0), (T, T)), ct.zeros((T, T), ct.float32))
        r = ct.arange(T, dtype=ct.int32)
        ct.atomic_add(Y, (r[:, None], r[None, :]), t, memory_order=ct.MemoryOrder.RELAXED)


def test_product_loops_that_write_are_not_warp_specialised():
    """Triton 3.6 partitioned a dK/dV loop with an atomic dQ update into code without the update;
    a loop with a store, scatter, atomic or print keeps its plain form, hint or not."""
    from safetile.backends.triton.launcher import kernel_source
    x, w, y = torch.zeros(64, 16), torch.zeros(64, 16), torch.zeros(16, 16)
    src = kernel_source(products_then_atomic.replace_hints(warp_specialize=True, num_warps=4), (x, w, y, 4, 16),
                        target=90)
    assert "atomic_add(" in src and not any("warp_specialize" in ln for ln in _loops(src))
    kern = A.attention_bwd_dkdv.replace_hints(warp_specialize=True, num_warps=4)
    q, lse, acc = torch.zeros(256, 64, dtype=torch.bfloat16), torch.zeros(256), torch.zeros(256, 64)
    args = (q, q, q, q, lse, lse, q, q, acc, 256, 0.1, 0.1, 64, 64, 64, True, False, True)  # DQ: the atomic update
    src = kernel_source(kern, args, target=90)
    assert not any("warp_specialize" in ln for ln in _loops(src))


def test_attention_compiles_into_warp_groups_for_sm90(tmp_path, monkeypatch):
    """Triton 3.6 partitions a 4-warp loop into a producer and two consumer warp groups (the
    kernel is compiled for sm_90 here: no GPU needed); stages are pinned at 2 (3 gave NaNs)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from safetile.backends.triton import cache
    from safetile.backends.triton.codegen import Facts, generate
    from safetile.backends.triton.launcher import array_facts, array_parts, compile_options
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    q = torch.empty(2 * 256, 64, dtype=torch.bfloat16)
    kern = A.attention_2d.replace_hints(num_warps=4, num_stages=3, warp_specialize=True)
    args = (q, q, q, q, torch.empty(1), 256, 0.18, 128, 64, 64, True, False, False, False)
    fn = kern.specialize(arg_specs(kern, args))
    facts = Facts(tuple(array_facts(*array_parts(a)[:3]) for a in args[:5]), False, 90, True, True, 3, True)
    gen = generate(fn, facts)
    jitfn, gen = cache.load(cache.digest("warp-specialize", facts), lambda: gen, False)
    opts = compile_options(fn, gen, facts)
    assert opts["num_stages"] == 2 and opts["num_warps"] == 4
    compiled = triton.compile(ASTSource(jitfn, gen.signature, {}, gen.attrs), target=GPUTarget("cuda", 90, 32),
                              options=opts)
    assert "ttg.warp_specialize(" in compiled.asm["ttgir"]
    assert compiled.asm["ptx"].count("setmaxnreg.inc") >= 2  # the consumers take the registers


def test_only_loops_with_chained_products_are_pinned_at_two_stages():
    """Attention's loop (QKᵀ then PV) is pinned at 2 stages under the hint (3 gave NaNs on an
    H100); a GEMM's K loop (one product) keeps its hinted depth (right at 3 and 4 on an H200)."""
    from kernels import gemm as G
    from safetile.backends.triton.codegen import Facts, chained_products, generate
    from safetile.backends.triton.launcher import array_facts, array_parts, compile_options
    from safetile.runtime.args import arg_specs

    def options(kern, args, narrays):
        fn = kern.specialize(arg_specs(kern, args))
        facts = Facts(tuple(array_facts(*array_parts(a)[:3]) for a in args[:narrays]), False, 90, True, True, 3,
                      True)
        return chained_products(fn), compile_options(fn, generate(fn, facts), facts)["num_stages"]
    q = torch.empty(2 * 256, 64, dtype=torch.bfloat16)
    attn = A.attention_2d.replace_hints(num_warps=4, num_stages=3, warp_specialize=True)
    assert options(attn, (q, q, q, q, torch.empty(1), 256, 0.18, 128, 64, 64, True, False, False, False), 5) == (True, 2)
    a, c = torch.empty(256, 256, dtype=torch.float16), torch.empty(256, 256, dtype=torch.float16)
    for stages in (3, 4):
        gemm = G.matmul.replace_hints(num_warps=4, num_stages=stages, warp_specialize=True)
        assert options(gemm, (a, a, c, 128, 128, 64, 8, True), 3) == (False, stages)


def test_a_loop_triton_cannot_partition_is_built_without_it(monkeypatch, tmp_path):
    from safetile.backends.triton import launcher
    from safetile.backends.triton.codegen import Facts
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    built = []

    class FakeVariant:
        def __init__(self, jitfn, gen, facts, fn, interp, key="", loaded=None):
            built.append((facts.warp_specialize, "warp_specialize=True" in gen.source))
            if facts.warp_specialize:
                raise RuntimeError("PassManager::run failed")

    monkeypatch.setattr(launcher, "Variant", FakeVariant)
    monkeypatch.setattr(launcher.Specialization, "_warm", lambda self, k, facts, device: None)
    x, w, y = torch.zeros(64, 16), torch.zeros(64, 16), torch.zeros(16, 16)
    kern = scaled_then_products.replace_hints(warp_specialize=True)
    fn = kern.specialize(arg_specs(kern, (x, w, y, 4, 16)))
    spec = launcher.Specialization(kern, fn)
    spec.ir_text = "test"
    facts = Facts(tuple(launcher.array_facts(*launcher.array_parts(a)[:3]) for a in (x, w, y)), False, 90, True,
                  warp_specialize=True)
    assert isinstance(spec._build(facts, False, 0), FakeVariant)
    assert built == [(True, True), (False, False)]


def test_hinted_attention_matches_numpy_in_the_interpreter():
    """Under Triton's interpreter the hint is inert; the one-loop causal form stays exact."""
    from triton_interp import triton_interpreter
    rng = np.random.default_rng(7)
    bh, s, d = 2, 64, 16
    q, k, v = (torch.from_numpy(rng.standard_normal((bh * s, d)).astype(np.float32)) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    kern = A.attention_2d.replace_hints(num_warps=4, warp_specialize=True)
    with triton_interpreter():
        ct.launch(None, (s // 32, bh), kern, (q, k, v, o, torch.empty(1), s, 1.4426950408889634 / math.sqrt(d),
                                              32, 16, d, True, False, False, False))
    sc = (q.double().view(bh, s, d) @ k.double().view(bh, s, d).transpose(1, 2)) / math.sqrt(d)
    sc = sc.masked_fill(~torch.ones(s, s, dtype=torch.bool).tril(), float("-inf"))
    ref = torch.softmax(sc, -1) @ v.double().view(bh, s, d)
    np.testing.assert_allclose(o.view(bh, s, d).numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("d,bm,bn", [(64, 256, 128), (128, 128, 128), (128, 256, 64)])
@pytest.mark.parametrize("causal", [False, True])
def test_warp_specialised_attention_matches_sdpa_on_the_gpu(d, bm, bn, causal):
    import torch.nn.functional as F
    b, h, s = 2, 4, 1024
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
    kern = A.attention_2d.replace_hints(num_warps=4, num_stages=3, warp_specialize=True)
    for _ in range(3):  # a race shows as a result that moves between runs
        o = torch.full_like(q, float("nan"))
        ct.launch(None, (s // bm, b * h), kern, (*(t.view(-1, d) for t in (q, k, v, o)), torch.empty(1, device="cuda"),
                                                 s, 1.4426950408889634 / math.sqrt(d), bm, bn, d, causal, False, False, False))
        torch.cuda.synchronize()
        err = ((o.float() - ref).norm() / ref.norm()).item()
        assert err < 1e-2, err


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("kind,stages", [("tile", 3), ("persistent", 4)])
def test_warp_specialised_gemm_keeps_its_stages_and_matches_torch_on_the_gpu(kind, stages):
    """The 4-warp GEMM under the hint, 3-4 pipeline stages (not pinned: one product per loop), on a
    shape whose edges are not multiples of the tile, against torch.matmul, three times."""
    from kernels import gemm as G
    m, n, k = 1000, 1200, 520
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    ref = (a.float() @ b.float())
    hints = dict(num_warps=4, num_stages=stages, warp_specialize=True)
    tiles = ct.cdiv(m, 128) * ct.cdiv(n, 256)
    for _ in range(3):
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        if kind == "tile":
            ct.launch(None, (tiles,), G.matmul.replace_hints(**hints), (a, b, c, 128, 256, 64, 8, True))
        else:
            ct.launch(None, (8,), G.matmul_persistent.replace_hints(**hints), (a, b, c, 128, 256, 64, 8, 8))
        torch.cuda.synchronize()
        assert torch.isfinite(c).all()
        assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-3
