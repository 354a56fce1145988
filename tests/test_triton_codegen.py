"""Quality of the Triton source the generator writes, and the first-compile helpers: checked on
the generated text and, for layouts, by compiling for sm_90 with the real Triton compiler (no
GPU needed). Results of the same kernels are checked on the CPU backend and Triton's
interpreter elsewhere (tests/test_bench_kernels.py, tests/test_triton_backend.py)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

import safetile as ct
from triton_interp import triton_interpreter

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")


@ct.kernel
def row_chunks(X, Y, TILE: ct.Constant[int]):
    """A row loop over (1, TILE) chunks: a running (1, TILE) sum, then a second pass that writes."""
    row = ct.bid(0)
    total = ct.zeros((1, TILE), ct.float32)
    for j in range(ct.num_tiles(X, axis=1, shape=(1, TILE))):
        total += ct.load(X, index=(row, j), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO) ** 2
    s = ct.sum(total, axis=1, keepdims=True)
    for j in range(ct.num_tiles(X, axis=1, shape=(1, TILE))):
        x = ct.load(X, index=(row, j), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO)
        ct.store(Y, index=(row, j), tile=(x / s).astype(Y.dtype))


@ct.kernel
def squeeze_3d(X, Y, T: ct.Constant[int]):
    """(1, T, T) tiles used as (T, T): loaded without the unit axis."""
    b = ct.bid(0)
    t = ct.reshape(ct.load(X, (b, 0, 0), (1, T, T)), (T, T))
    ct.store(Y, (b, 0, 0), ct.reshape(ct.transpose(t), (1, T, T)))


@ct.kernel
def flag_after_store(X, Flags, Out):
    b = ct.bid(0)
    ct.store(Out, (b,), ct.load(X, (b,), (64,)) * 2.0)
    ct.atomic_add(Flags, (0,), 1)  # default order: acquire-release
    ct.atomic_add(Flags, (1,), 1, memory_order=ct.MemoryOrder.RELAXED)


def _source(kernel, args, target=90):
    from safetile.backends.triton.launcher import kernel_source
    return kernel_source(kernel, args, target=target)


def test_unit_axis_loads_keep_the_tile_rank():
    x = torch.randn(4, 3000)
    src = _source(row_chunks, (x, torch.empty_like(x), 1024))
    loads = re.findall(r"(\w+) = tl\.load\((\w+),", src)
    assert len(loads) == 2
    for value, ptrs in loads:  # pointers of shape (1, TILE): the value is used as loaded
        assert re.search(rf"{ptrs} = \(.*\)\[None, :\]", src), src
        assert not re.search(rf"{value}\[None, :\]", src), src
    assert "tl.reshape" not in src  # the (1, TILE) store takes the tile as it is
    assert "_ld.pow" not in src  # x ** 2 is x * x
    x3 = torch.randn(2, 32, 32)
    src3 = _source(squeeze_3d, (x3, torch.empty_like(x3), 32))
    value, ptrs = re.search(r"(\w+) = tl\.load\((\w+),", src3).groups()
    assert not re.search(rf"{ptrs} = \(.*\)\[None", src3)  # used as (T, T) only: loaded without the unit axis
    assert re.search(rf"tl\.permute\({value}, \[1, 0\]\)|= {value}\n", src3), src3


def test_unit_axis_chunk_loop_compiles_without_layout_conversions(tmp_path, monkeypatch):
    """In sm_90 code, the row loops hold no layout conversion (one per chunk through shared memory
    was what made such loops slow: a (TILE,) load then x[None, :])."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from safetile.backends.triton import cache
    from safetile.backends.triton.codegen import Facts, generate
    from safetile.backends.triton.launcher import array_facts, array_parts, compile_options
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    x = torch.randn(64, 4096, dtype=torch.bfloat16)
    args = (x, torch.empty_like(x), 1024)
    fn = row_chunks.specialize(arg_specs(row_chunks, args))
    facts = Facts(tuple(array_facts(*array_parts(a)[:3]) for a in args[:2]), False, 90, True)
    gen = generate(fn, facts)
    jitfn, gen = cache.load(cache.digest("codegen-quality", facts), lambda: gen, False)
    compiled = triton.compile(ASTSource(jitfn, gen.signature, {}, gen.attrs), target=GPUTarget("cuda", 90, 32),
                              options=compile_options(fn, gen, facts))
    ttgir = compiled.asm["ttgir"]
    loops = re.findall(r"scf\.for .*?\n(.*?)\n\s+\} loc", ttgir, flags=re.S)
    assert len(loops) == 2 and all("convert_layout" not in body for body in loops), ttgir


def test_unit_axis_kernels_run_in_the_interpreter():
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((3, 2100)).astype(np.float32))
    y = torch.full_like(x, float("nan"))
    with triton_interpreter():
        ct.launch(None, (3,), row_chunks, (x, y, 1024))
    np.testing.assert_allclose(y.numpy(), x.numpy() / (x.numpy().astype(np.float64) ** 2).sum(1, keepdims=True),
                               rtol=1e-5)
    x3 = torch.from_numpy(rng.standard_normal((2, 16, 16)).astype(np.float32))
    y3 = torch.full_like(x3, float("nan"))
    with triton_interpreter():
        ct.launch(None, (2,), squeeze_3d, (x3, y3, 16))
    np.testing.assert_array_equal(y3.numpy(), np.swapaxes(x3.numpy(), 1, 2))


def test_releasing_atomics_follow_a_block_barrier():
    """An atomic with release semantics orders every lane's earlier writes (the block's), so a
    block barrier comes first; a relaxed one needs none."""
    x = torch.randn(128)
    src = _source(flag_after_store, (x, torch.zeros(2, dtype=torch.int32), torch.empty_like(x)))
    lines = [ln.strip() for ln in src.splitlines()]
    atomics = [i for i, ln in enumerate(lines) if "tl.atomic_add(" in ln]
    barriers = [i for i, ln in enumerate(lines) if ln == "tl.debug_barrier()"]
    store = next(i for i, ln in enumerate(lines) if ln.startswith("tl.store("))
    assert len(atomics) == 2 and "sem='acq_rel'" in lines[atomics[0]] and "sem='relaxed'" in lines[atomics[1]]
    assert barriers == [atomics[0] - 1] and store < barriers[0]  # 0-d atomics: no barrier after


def test_triton_key_is_recorded_and_reused(tmp_path, monkeypatch):
    """Triton's installation hash is computed once per installation, not once per process."""
    import triton.runtime.cache as tcache
    from safetile.backends.triton import cache
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_key_memo_done", False)
    calls = []

    def slow_key():
        calls.append(1)
        return "triton-key-value"
    monkeypatch.setattr(tcache, "triton_key", slow_key)
    cache.memoize_triton_key()
    assert tcache.triton_key() == "triton-key-value" and calls == [1]
    record = next(tmp_path.glob("triton_key_*.json"))
    assert json.loads(record.read_text())["key"] == "triton-key-value"
    monkeypatch.setattr(tcache, "triton_key", slow_key)  # a new process: Triton's function again
    monkeypatch.setattr(cache, "_key_memo_done", False)
    cache.memoize_triton_key()
    assert tcache.triton_key() == "triton-key-value" and calls == [1]  # from the record
    record.write_text(json.dumps({"fingerprint": "another installation", "key": "stale"}))
    monkeypatch.setattr(tcache, "triton_key", slow_key)
    monkeypatch.setattr(cache, "_key_memo_done", False)
    cache.memoize_triton_key()
    assert tcache.triton_key() == "triton-key-value" and calls == [1, 1]  # files changed: computed again


@ct.kernel
def transpose_tile(X, Y, T: ct.Constant[int]):
    ct.store(Y, (ct.bid(1), ct.bid(0)), ct.transpose(ct.load(X, (ct.bid(0), ct.bid(1)), (T, T))))


@ct.kernel
def transpose_tile_tma(X, Y, T: ct.Constant[int]):
    t = ct.load(X, (ct.bid(0), ct.bid(1)), (T, T), allow_tma=True)
    ct.store(Y, (ct.bid(1), ct.bid(0)), ct.transpose(t), allow_tma=True)


@ct.kernel
def bmm_tiles(A, B, C, T: ct.Constant[int]):
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.num_tiles(A, axis=2, shape=(1, T, T))):
        a = ct.reshape(ct.load(A, (ct.bid(0), ct.bid(1), k), (1, T, T)), (T, T))
        b = ct.reshape(ct.load(B, (ct.bid(0), k, ct.bid(2)), (1, T, T)), (T, T))
        acc = ct.mma(a, b, acc)
    ct.store(C, (ct.bid(0), ct.bid(1), ct.bid(2)), ct.reshape(acc.astype(C.dtype), (1, T, T)))


def test_descriptors_where_tiles_pass_through_shared_memory():
    """By default TMA is used for matrix-product operands and results (3-D tiles with unit axes
    too), not for tiles that go straight between registers and memory; allow_tma decides when given."""
    x = torch.randn(256, 256, dtype=torch.float16)
    assert "make_tensor_descriptor" not in _source(transpose_tile, (x, torch.empty_like(x), 64))
    assert _source(transpose_tile_tma, (x, torch.empty_like(x), 64)).count("make_tensor_descriptor") == 2
    a = torch.randn(2, 128, 128, dtype=torch.float16)
    src = _source(bmm_tiles, (a, a, torch.empty_like(a), 64))
    assert src.count("make_tensor_descriptor") == 3  # A and B operands, C the product's tile
    assert re.search(r"tl\.reshape\(desc\d+\.load\(\[.*\]\), \[64, 64\]\)", src), src
    assert re.search(r"desc\d+\.store\(\[.*\], tl\.reshape\(\w+, \[1, 64, 64\]\)\)", src), src
    assert "make_tensor_descriptor" not in _source(bmm_tiles, (a, a, torch.empty_like(a), 64), target=80)


def test_bmm_tiles_with_descriptors_match_the_cpu_backend():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 64, 48)).astype(np.float32)
    b = rng.standard_normal((2, 48, 80)).astype(np.float32)
    c = np.full((2, 64, 80), np.nan, np.float32)
    ct.launch(None, (2, 4, 5), bmm_tiles, (a, b, c, 16))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    ct_, ta, tb = torch.full((2, 64, 80), float("nan")), torch.from_numpy(a), torch.from_numpy(b)
    with triton_interpreter():
        ct.launch(None, (2, 4, 5), bmm_tiles, (ta, tb, ct_, 16))
    np.testing.assert_allclose(ct_.numpy(), c, rtol=1e-5, atol=1e-5)


def test_tile_streaming_loops_are_software_pipelined(monkeypatch):
    x = torch.randn(4, 3000)
    src = _source(row_chunks, (x, torch.empty_like(x), 1024))
    # the first loop (a running sum of squares) streams; the second divides: left to Triton
    assert src.count("in tl.range(") == 1 and src.count(", num_stages=3):") == 1
    loops = src.split("for ")
    assert "tl.range" in loops[1] and "tl.div_rn" not in loops[1] and "tl.div_rn" in loops[2]
    assert "tl.range" not in _source(row_chunks, (x, torch.empty_like(x), 1024), target=0)  # interpreter
    a = torch.randn(2, 128, 128, dtype=torch.float16)
    assert "tl.range" not in _source(bmm_tiles, (a, a, torch.empty_like(a), 64))  # Triton pipelines products itself
    monkeypatch.setenv("SAFETILE_PIPELINE_LOOPS", "0")
    assert "tl.range" not in _source(row_chunks, (x, torch.empty_like(x), 1024))


@ct.kernel
def exp2_rows(X, Y, s, TILE: ct.Constant[int]):
    """exp2 of a float32 tile, of a bfloat16 tile (computed in float32) and of a scalar."""
    b = ct.bid(0)
    x = ct.load(X, (b,), (TILE,))
    ct.store(Y, (b,), ct.exp2(x) + ct.exp2(x.astype(ct.bfloat16)).astype(ct.float32) + ct.exp2(s * 0.5))


def test_float32_exp2_compiles_without_libdevice(tmp_path, monkeypatch):
    """float32 exp2 is the one instruction libdevice's __nv_exp2f gives under Triton's default
    flush-to-zero reflection, written inline: the compile links no libdevice (~0.05 s of every
    compile of an attention kernel) and the binary holds the same instruction."""
    from triton._C.libtriton import llvm
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from safetile.backends.triton import cache
    from safetile.backends.triton.codegen import Facts, generate
    from safetile.backends.triton.launcher import array_facts, array_parts, compile_options
    from safetile.runtime.args import arg_specs
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("SAFETILE_CACHE_DIR", str(tmp_path / "st"))
    linked = []
    link = llvm.link_extern_libs
    monkeypatch.setattr(llvm, "link_extern_libs", lambda *a: (linked.append(a), link(*a))[1])
    x = torch.randn(256)
    args = (x, torch.empty_like(x), 1.5, 128)
    fn = exp2_rows.specialize(arg_specs(exp2_rows, args))
    facts = Facts(tuple(array_facts(*array_parts(a)[:3]) for a in args[:2]), False, 90, True)
    gen = generate(fn, facts)
    assert "tl.exp2" not in gen.source and gen.source.count("_st_exp2(") == 3, gen.source
    jitfn, gen = cache.load(cache.digest("exp2-inline", facts), lambda: gen, False)
    compiled = triton.compile(ASTSource(jitfn, gen.signature, {}, gen.attrs), target=GPUTarget("cuda", 90, 32),
                              options=compile_options(fn, gen, facts))
    assert not linked
    assert "ex2.approx.ftz.f32" in compiled.asm["ptx"]


def test_exp2_in_the_interpreter_matches_numpy():
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.uniform(-20, 20, 256).astype(np.float32))
    y = torch.full_like(x, float("nan"))
    with triton_interpreter():
        ct.launch(None, (2,), exp2_rows, (x, y, 1.5, 128))
    xs = x.numpy().astype(np.float64)
    bf = torch.from_numpy(x.numpy()).to(torch.bfloat16).to(torch.float64).numpy()
    ref = np.exp2(xs) + torch.from_numpy(np.exp2(bf)).to(torch.bfloat16).to(torch.float64).numpy() + 2 ** 0.75
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5)


@ct.kernel
def scores_kt(Q, K, S, T: ct.Constant[int], D: ct.Constant[int]):
    """S = Q Kᵀ with K's tile read transposed (order), 2-D and as the 4-D tiles of an attention kernel."""
    q = ct.load(Q, (ct.bid(0), 0), (T, D))
    k = ct.load(K, (0, ct.bid(1)), (D, T), order=(1, 0))
    ct.store(S, (ct.bid(0), ct.bid(1)), ct.mma(q, k, ct.zeros((T, T), ct.float32)))


@ct.kernel
def scores_kt4(Q, K, S, T: ct.Constant[int], D: ct.Constant[int]):
    b, h = ct.bid(2) // 2, ct.bid(2) % 2
    q = ct.reshape(ct.load(Q, (b, h, ct.bid(0), 0), (1, 1, T, D)), (T, D))
    k = ct.reshape(ct.load(K, (b, h, 0, ct.bid(1)), (1, 1, D, T), order=(0, 1, 3, 2)), (D, T))
    s = ct.mma(q, k, ct.zeros((T, T), ct.float32))
    ct.store(S, (b, h, ct.bid(0), ct.bid(1)), ct.reshape(s, (1, 1, T, T)))


def test_a_tile_read_transposed_for_a_product_is_a_descriptor_load_permuted():
    q = torch.randn(128, 64, dtype=torch.float16)
    src = _source(scores_kt, (q, q, torch.empty(128, 128), 64, 64))
    assert src.count("make_tensor_descriptor") == 3, src  # Q, K (in its own order) and S
    assert re.search(r"tl\.permute\(desc\d+\.load\(\[\w+ \* 64, 0\]\), \(1, 0\)\)", src), src  # K's rows at bid(1)
    q4 = torch.randn(2, 2, 128, 64, dtype=torch.float16)
    src4 = _source(scores_kt4, (q4, q4, torch.empty(2, 2, 128, 128), 64, 64))
    assert re.search(r"(\w+) = tl\.reshape\(desc\d+\.load\(\[.*\]\), \[64, 64\]\)\n\s+\w+ = tl\.permute\(\1, \(1, 0\)\)",
                     src4), src4


@pytest.mark.parametrize("kernel,shape", [(scores_kt, (64, 32)), (scores_kt4, (2, 2, 64, 32))])
def test_tiles_read_transposed_match_numpy_on_every_backend(kernel, shape):
    rng = np.random.default_rng(11)
    q = rng.standard_normal(shape).astype(np.float32)
    k = rng.standard_normal(shape).astype(np.float32)
    want = q.astype(np.float64) @ np.swapaxes(k, -1, -2)
    grid = (4, 4) if len(shape) == 2 else (4, 4, 4)
    s = np.full(want.shape, np.nan, np.float32)
    ct.launch(None, grid, kernel, (q, k, s, 16, 32))
    np.testing.assert_allclose(s, want, rtol=1e-4, atol=1e-4)
    st = torch.full(want.shape, float("nan"))
    with triton_interpreter():
        ct.launch(None, grid, kernel, (torch.from_numpy(q), torch.from_numpy(k), st, 16, 32))
    np.testing.assert_allclose(st.numpy(), want, rtol=1e-4, atol=1e-4)
