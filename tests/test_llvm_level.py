"""LLVM's optimisation level for safetile's kernels (backends/triton/llvm_level.py), compiled for
sm_90 by the real Triton compiler without a GPU."""
from __future__ import annotations

import threading

import pytest
import torch

import safetile as ct

pytest.importorskip("triton")


@ct.kernel
def scale_add(x, y, z, a: float, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(z, (i,), ct.load(x, (i,), (TILE,)) * a + ct.load(y, (i,), (TILE,)))


def _compile_parts(tmp_path, monkeypatch):
    """(src, target, options) of ``scale_add`` for sm_90, with fresh caches."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from safetile.backends.triton import cache, launcher as L
    from safetile.backends.triton.codegen import Facts, generate
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    x = torch.randn(4096)
    args = (x, x.clone(), x.clone(), 0.5, 1024)
    fn = scale_add.specialize(arg_specs(scale_add, args))
    facts = Facts(tuple(L.array_facts(*L.array_parts(a)[:3]) for a in args[:3]), False, 90, True, True)
    jitfn, gen = cache.load(cache.digest("llvm-level-test", facts), lambda: generate(fn, facts))
    return ASTSource(jitfn, dict(gen.signature), {}, dict(gen.attrs)), GPUTarget("cuda", 90, 32), fn, gen, facts


def test_setting_picks_the_level(monkeypatch):
    from safetile.runtime import env
    monkeypatch.delenv("SAFETILE_LLVM_OPT", raising=False)
    assert env.llvm_opt() is None  # Triton's own level
    for text, level in (("0", 0), ("1", 1), ("2", 2), ("3", None), ("O2", None), ("", None)):
        monkeypatch.setenv("SAFETILE_LLVM_OPT", text)
        assert env.llvm_opt() == level


def test_the_level_reaches_llvm_and_tritons_cache_key(tmp_path, monkeypatch):
    """O0 and O3 compiles of one kernel give different optimised LLVM IR, under different Triton
    cache entries (the level is in the key and the binary's metadata); without the setting the
    options are exactly Triton's."""
    from safetile.backends.triton import launcher as L
    src, target, fn, gen, facts = _compile_parts(tmp_path, monkeypatch)
    monkeypatch.setenv("SAFETILE_LLVM_OPT", "0")
    opts0 = L.compile_options(fn, gen, facts)
    monkeypatch.delenv("SAFETILE_LLVM_OPT")
    opts3 = L.compile_options(fn, gen, facts)
    assert opts0 == {**opts3, "llvm_opt": 0} and "llvm_opt" not in opts3
    low = L.compile_fitting(src, target, opts0, shared_limit=0)
    high = L.compile_fitting(src, target, opts3, shared_limit=0)
    assert low.hash != high.hash
    assert low.asm["llir"] != high.asm["llir"] and low.asm["cubin"] and high.asm["cubin"]
    assert low.metadata.SAFETILE_LLVM_OPT == "0"
    assert "SAFETILE_LLVM_OPT" not in high.metadata._fields
    assert L.compile_fitting(src, target, opts0, shared_limit=0).hash == low.hash  # found again


def test_the_level_is_per_thread(tmp_path, monkeypatch):
    """Inside ``level(0)`` only this thread's compiles change: another thread's compile (a user's
    own Triton kernel, say) keeps Triton's O3. Nested uses restore what they found."""
    import triton

    from safetile.backends.triton import llvm_level
    src, target, fn, gen, facts = _compile_parts(tmp_path, monkeypatch)
    options = {"num_warps": 4}
    reference = triton.compile(src, target=target, options=options).asm["llir"]
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-2"))  # compile again, not a cache hit
    seen: dict = {}

    def elsewhere():
        seen["level"] = llvm_level.current()
        seen["llir"] = triton.compile(src, target=target, options=options).asm["llir"]
    with llvm_level.level(0):
        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
        here = llvm_level.current()
        with llvm_level.level(2):
            nested = llvm_level.current()
        after = llvm_level.current()
    assert (seen["level"], here, nested, after, llvm_level.current()) == (None, 0, 2, 0, None)
    assert seen["llir"] == reference
