"""Persistent grids (backends/triton/persistent.py): which kernels are walked by resident blocks,
and that a walked kernel computes what the grid of tiles computes, every logical block exactly
once with its own ``bid`` and the logical ``num_blocks``, on Triton's interpreter (three workers
walk each grid) against the NumPy backend and NumPy, outputs poisoned first. The GPU tests at the
end run the compiled form against torch."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import safetile as ct

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from guarded_buffers import backend as _backend  # noqa: E402
from test_ksplit import bmm_wide as bmm3d  # noqa: E402 - NVIDIA's batched-matmul sample's loop

ZERO = ct.PaddingMode.ZERO


@ct.kernel
def census(A, B, Seen, Grid, tk: ct.Constant[int]):
    """A product loop (so the automatic rule takes it), then each block adds one to its own cell
    of ``Seen`` and records its index and the grid's size in its own row of ``Grid``. Every
    access is indexed by x, so the walk takes x slowest (a batch axis)."""
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((16, 16), ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (x, k), (16, tk), padding_mode=ZERO),
                     ct.load(B, (k, x), (tk, 16), padding_mode=ZERO), acc)
    cell = (x, y, z)
    ct.store(Seen, cell, ct.load(Seen, cell, ()) + 1 + (ct.sum(acc) * 0.0).astype(ct.int32))
    row = (x * ct.num_blocks(1) + y) * ct.num_blocks(2) + z
    info = ct.cat((ct.cat((ct.full((1,), x, ct.int32), ct.full((1,), y, ct.int32)), 0),
                   ct.cat((ct.full((1,), z, ct.int32), ct.full((1,), ct.num_blocks(0), ct.int32)), 0)), 0)
    ct.store(Grid, (row, 0), ct.reshape(info, (1, 4)))


@ct.kernel
def chained(Q, K, V, O, tm: ct.Constant[int], tn: ct.Constant[int]):
    """Attention's shape of loop: the second product takes a computed tile."""
    q = ct.load(Q, (ct.bid(0), 0), (tm, 16), padding_mode=ZERO)
    acc = ct.zeros((tm, 16), ct.float32)
    for j in range(ct.cdiv(K.shape[0], tn)):
        s = ct.mma(q, ct.transpose(ct.load(K, (j, 0), (tn, 16), padding_mode=ZERO)), ct.zeros((tm, tn), ct.float32))
        acc = ct.mma(s.astype(Q.dtype), ct.load(V, (j, 0), (tn, 16), padding_mode=ZERO), acc)
    ct.store(O, (ct.bid(0), 0), acc.astype(O.dtype))


@ct.kernel
def ragged(A, B, C, tk: ct.Constant[int]):
    """A K loop whose length depends on the block (a causal mask's shape of work)."""
    i = ct.bid(0)
    acc = ct.zeros((16, 16), ct.float32)
    for k in range(i + 1):
        acc = ct.mma(ct.load(A, (i, k), (16, tk), padding_mode=ZERO),
                     ct.load(B, (k, 0), (tk, 16), padding_mode=ZERO), acc)
    ct.store(C, (i, 0), acc.astype(C.dtype))


@ct.kernel
def halving(A, B, C, tk: ct.Constant[int]):
    """A GEMM's K loop, then a while loop that runs bid(0) times (unequal work per block)."""
    i = ct.bid(0)
    acc = ct.zeros((16, 16), ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (i, k), (16, tk), padding_mode=ZERO),
                     ct.load(B, (k, 0), (tk, 16), padding_mode=ZERO), acc)
    n = i
    while n > 0:
        acc = acc * 0.5
        n = n - 1
    ct.store(C, (i, 0), acc.astype(C.dtype))


@ct.kernel
def counted(A, B, C, Count, tk: ct.Constant[int]):
    """A GEMM that also counts its blocks with an atomic."""
    i = ct.bid(0)
    acc = ct.zeros((16, 16), ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (i, k), (16, tk), padding_mode=ZERO),
                     ct.load(B, (k, 0), (tk, 16), padding_mode=ZERO), acc)
    ct.store(C, (i, 0), acc.astype(C.dtype))
    ct.atomic_add(Count, (0,), 1)


@ct.kernel
def scale(X, Y, t: ct.Constant[int]):
    """Element-wise: no product loop, so persistent only when asked."""
    ct.store(Y, (ct.bid(0),), ct.load(X, (ct.bid(0),), (t,), padding_mode=ZERO) * 2.0)


def _fn(kern, args):
    from safetile.runtime.args import arg_specs
    return kern.specialize(arg_specs(kern, args))


def _wanted(kern, args, target=90, interp=False, excluded=False):
    from safetile.backends.triton.launcher import _resolve
    from safetile.backends.triton.persistent import walkable, wanted
    fn = _fn(kern, args)
    return wanted(walkable(fn), _resolve(fn.hints.get("persistent"), target), target, interp, excluded)


def _mats(*shapes, dtype=torch.float16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g).to(dtype) for s in shapes]


def _bmm_args(batch=3, m=48, n=40, k=56):
    a, w = _mats((batch, m, k), (batch, k, n))
    return a, w, torch.full((batch, m, n), float("nan"), dtype=torch.float16), 16, 16, 16


# ------------------------------------------------------------------------------ the rule

def test_product_loops_over_loaded_tiles_are_walked():
    assert _wanted(bmm3d, _bmm_args())
    a, w = _mats((64, 48), (48, 64))
    assert _wanted(census, (a, w, torch.zeros(2, 2, 2, dtype=torch.int32), torch.zeros(8, 4, dtype=torch.int32), 16))


def test_a_batch_axis_goes_last_in_the_walk():
    from safetile.backends.triton.persistent import walk_order
    assert walk_order(_fn(bmm3d, _bmm_args())) == (1, 2, 0)  # (batch, rows, columns): rows fastest
    a, w = _mats((64, 48), (48, 64))
    assert walk_order(_fn(census, (a, w, torch.zeros(2, 2, 2, dtype=torch.int32),
                                   torch.zeros(8, 4, dtype=torch.int32), 16))) == (1, 2, 0)
    assert walk_order(_fn(loud, (*_mats((80, 32), (32, 16)), torch.empty(80, 16, dtype=torch.float16), 16))) == (
        0, 1, 2)  # B is read by every block: no axis separates the data


@pytest.mark.parametrize("why, kern, args", [
    ("a chained product (attention)", chained,
     lambda: (*_mats((64, 16), (64, 16), (64, 16)), torch.empty(64, 16, dtype=torch.float16), 16, 16)),
    ("a K loop whose length reads the block index", ragged,
     lambda: (*_mats((64, 64), (64, 16)), torch.empty(64, 16, dtype=torch.float16), 16)),
    ("a while loop whose start reads the block index", halving,
     lambda: (*_mats((64, 48), (48, 16)), torch.empty(64, 16, dtype=torch.float16), 16)),
    ("an atomic", counted,
     lambda: (*_mats((64, 48), (48, 16)), torch.empty(64, 16, dtype=torch.float16), torch.zeros(1, dtype=torch.int32), 16)),
    ("no product loop", scale, lambda: (torch.randn(64), torch.empty(64), 16)),
])
def test_other_kernels_stay_grids_of_tiles(why, kern, args):
    assert not _wanted(kern, args()), why


def test_the_hint_turns_it_off_or_on_and_never_past_legality():
    args = _bmm_args()
    assert not _wanted(bmm3d.replace_hints(persistent=False), args)
    assert _wanted(scale.replace_hints(persistent=True), (torch.randn(64), torch.empty(64), 16))
    counted_args = (*_mats((64, 48), (48, 16)), torch.empty(64, 16, dtype=torch.float16),
                    torch.zeros(1, dtype=torch.int32), 16)
    assert not _wanted(counted.replace_hints(persistent=True), counted_args)  # atomics: never


def test_targets_and_exclusions():
    args = _bmm_args()
    assert not _wanted(bmm3d, args, target=80)  # measured on Hopper only
    assert _wanted(bmm3d, args, target=0, interp=True)
    assert not _wanted(bmm3d, args, excluded=True)  # big grid, warp specialisation, clusters


def test_warp_specialisation_and_clusters_exclude_it_in_the_facts():
    from safetile.backends.triton.launcher import Specialization
    args = _bmm_args()
    for hints, expect in (({}, True), ({"warp_specialize": True}, False), ({"num_ctas": 2}, False)):
        kern = bmm3d.replace_hints(**hints)
        spec = Specialization(kern, _fn(kern, args))
        parts = spec.parts(args)
        assert spec.facts_for(parts, False, 90, False).persistent is expect, hints
        assert spec.facts_for(parts, True, 90, False).persistent is False  # a big grid: launched flat


def test_a_bad_hint_is_rejected():
    with pytest.raises(ct.ArgumentError, match="persistent"):
        bmm3d.replace_hints(persistent="yes")


def test_the_walk_in_the_source_and_the_kernels_ir_untouched():
    from safetile.backends.triton.codegen import default_facts, generate
    from safetile.ir.printer import format_function
    fn = _fn(bmm3d, _bmm_args())
    before = format_function(fn)
    gen = generate(fn, dataclasses.replace(default_facts(fn), persistent=True))
    assert gen.params[-3:] == ["_st_gx", "_st_gy", "_st_gz"]
    assert "tl.num_programs(0)" in gen.source and "_st_bz = " in gen.source
    plain = generate(fn, default_facts(fn))
    assert "_st_gx" not in plain.source and "_st_gx" not in plain.params
    assert format_function(fn) == before


def _walk_sequence(order, grid, workers):
    """The blocks ``wrap_body``'s walk visits, as {t: (x, y, z)}, from its generated lines run as
    Python (the index arithmetic is on non-negative integers, where Triton's and Python's ``//``
    and ``%`` agree)."""
    import re
    import types

    from safetile.backends.triton.persistent import wrap_body
    lines = wrap_body(["    seen[int(_st_t)] = (_st_bx, _st_by, _st_bz)"], order)
    text = "\n".join(re.sub(r"\.to\(tl\.int(32|64)\)", "", ln[4:]) for ln in lines)
    seen: dict = {}
    for pid in range(workers):
        tl = types.SimpleNamespace(int64=None, minimum=min, full=lambda shape, v, dtype: v,
                                   program_id=lambda axis, pid=pid: pid, num_programs=lambda axis: workers)
        exec(text, {"tl": tl, "seen": seen, "_st_gx": grid[0], "_st_gy": grid[1], "_st_gz": grid[2]})  # noqa: S102
    return seen


@pytest.mark.parametrize("order", [(0, 1, 2), (1, 2, 0), (2, 0, 1)])
@pytest.mark.parametrize("grid", [(1, 1, 1), (20, 7, 3), (8, 16, 1), (9, 5, 2), (3, 40, 2), (17, 1, 1), (1, 13, 4)])
def test_the_walk_visits_every_block_once_in_bands_of_its_fastest_axis(order, grid):
    from safetile.backends.triton.persistent import WALK_BAND
    seq = _walk_sequence(order, grid, workers=5)
    n = grid[0] * grid[1] * grid[2]
    assert sorted(seq) == list(range(n))
    assert sorted(seq.values()) == sorted((x, y, z) for x in range(grid[0]) for y in range(grid[1])
                                          for z in range(grid[2]))
    a0, a1, a2 = order
    plane = grid[a0] * grid[a1]
    for t, block in seq.items():
        assert block[a2] == t // plane, "the third axis is the slowest"
        q = t % plane
        band = q // (WALK_BAND * grid[a1])
        assert band * WALK_BAND <= block[a0] < (band + 1) * WALK_BAND, "a band: WALK_BAND of the fastest axis"
        rows = min(grid[a0] - band * WALK_BAND, WALK_BAND)
        assert block[a1] == (q - band * WALK_BAND * grid[a1]) // rows, "then the second axis, band column by column"


def test_persistent_call_launches_the_resident_blocks_with_the_logical_grid_last():
    from safetile.backends.triton.persistent import PersistentCall
    seen = []
    call = PersistentCall(lambda *a: seen.append(a), 132)
    call(8, 16, 8, "stream", "fn", 1, 2)
    call(5, 2, 1, "stream", "fn", 1, 2)
    assert seen == [(132, 1, 1, "stream", "fn", 1, 2, 8, 16, 8), (10, 1, 1, "stream", "fn", 1, 2, 5, 2, 1)]


# ------------------------------------------------------------------------------ results

def _run(kern, grid, args, name):
    with _backend(name):
        ct.launch(None, grid, kern, args)


@pytest.mark.parametrize("batch, m, n, k", [(3, 48, 40, 56), (1, 16, 16, 16), (2, 64, 80, 33)])
def test_the_walked_product_equals_numpy_on_both_backends(batch, m, n, k):
    a, w, _, tm, tn, tk = _bmm_args(batch, m, n, k)
    ref = torch.bmm(a.float(), w.float()).numpy()
    grid = (batch, ct.cdiv(m, tm), ct.cdiv(n, tn))
    for name in ("numpy", "triton"):
        out = torch.full((batch, m, n), float("nan"), dtype=torch.float16)
        args = (a, w, out, tm, tn, tk) if name == "triton" else (a.numpy(), w.numpy(), out.numpy(), tm, tn, tk)
        _run(bmm3d, grid, args, name)
        np.testing.assert_allclose(out.float().numpy(), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("grid", [(2, 3, 2), (1, 1, 1), (5, 1, 1), (1, 2, 7), (2, 19, 3), (1, 9, 10)])
def test_every_logical_block_runs_once_with_its_index_and_the_logical_grid(grid):
    a, w = _mats((16 * grid[0], 40), (40, 16 * grid[0]))
    n = grid[0] * grid[1] * grid[2]
    seen = torch.zeros(grid, dtype=torch.int32)
    table = torch.full((n, 4), -1, dtype=torch.int32)
    _run(census, grid, (a, w, seen, table, 16), "triton")
    assert (seen == 1).all()
    want = np.array([(x, y, z, grid[0]) for x in range(grid[0]) for y in range(grid[1]) for z in range(grid[2])])
    np.testing.assert_array_equal(table.numpy(), want)


def test_under_the_interpreter_a_few_workers_walk_the_grid(monkeypatch):
    from triton.runtime.interpreter import InterpretedFunction
    grids = []
    run = InterpretedFunction.run

    def spy(self, *args, grid, **kwargs):
        grids.append(tuple(grid))
        return run(self, *args, grid=grid, **kwargs)
    monkeypatch.setattr(InterpretedFunction, "run", spy)
    a, w = _mats((32, 40), (40, 32))
    _run(census, (2, 3, 2), (a, w, torch.zeros((2, 3, 2), dtype=torch.int32),
                             torch.full((12, 4), -1, dtype=torch.int32), 16), "triton")
    assert grids == [(3, 1, 1)]


def test_a_hinted_elementwise_kernel_walks_its_grid():
    x = torch.randn(100)
    y = torch.full((100,), float("nan"))
    _run(scale.replace_hints(persistent=True), (ct.cdiv(100, 16),), (x, y, 16), "triton")
    np.testing.assert_array_equal(y.numpy(), x.numpy() * 2)


@ct.kernel
def loud(A, B, C, tk: ct.Constant[int]):
    acc = ct.zeros((16, 16), ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (ct.bid(0), k), (16, tk), padding_mode=ZERO),
                     ct.load(B, (k, 0), (tk, 16), padding_mode=ZERO), acc)
    ct.printf("block %d of %d\n", ct.bid(0), ct.num_blocks(0))
    ct.store(C, (ct.bid(0), 0), acc.astype(C.dtype))


def test_prints_of_a_walked_kernel_come_in_block_order_as_on_the_cpu(capfd):
    a, w = _mats((80, 32), (32, 16))
    outs = {}
    for name in ("numpy", "triton"):
        c = torch.full((80, 16), float("nan"), dtype=torch.float16)
        args = (a, w, c, 16) if name == "triton" else (a.numpy(), w.numpy(), c.numpy(), 16)
        capfd.readouterr()
        _run(loud, (5,), args, name)
        outs[name] = capfd.readouterr().out
    assert outs["triton"] == outs["numpy"] == "".join(f"block {i} of 5\n" for i in range(5))


# ------------------------------------------------------------------------------ on the GPU

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_the_gpu_the_walk_runs_on_resident_blocks_and_matches_torch(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SAFETILE_BACKEND", raising=False)
    from safetile.backends.triton.persistent import PersistentCall
    kern = bmm3d.replace_hints(num_warps=8, num_stages=3)
    for batch, m, n, k in ((4, 1000, 700, 520), (9, 256, 512, 128)):
        a, w = (t.cuda() for t in _mats((batch, m, k), (batch, k, n)))
        c = torch.full((batch, m, n), float("nan"), dtype=torch.float16, device="cuda")
        ct.launch(None, (batch, ct.cdiv(m, 128), ct.cdiv(n, 128)), kern, (a, w, c, 128, 128, 64))
        torch.testing.assert_close(c.float(), torch.bmm(a.float(), w.float()), rtol=2e-2, atol=5e-1)
    calls = [v.call for spec in kern.backend_cache.values() for v in getattr(spec, "by_facts", {}).values()]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if torch.cuda.get_device_capability()[0] >= 9:
        assert calls and all(isinstance(c, PersistentCall) and c.workers % sms == 0 and c.workers >= sms for c in calls)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_the_gpu_a_walked_kernel_replays_in_a_graph_and_counts_each_block_once(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("SAFETILE_BACKEND", raising=False)
    grid = (40, 30, 3)  # 3600 blocks over a few hundred resident ones
    a, w = (t.cuda() for t in _mats((640, 40), (40, 640)))
    seen = torch.zeros(grid, dtype=torch.int32, device="cuda")
    table = torch.full((3600, 4), -1, dtype=torch.int32, device="cuda")
    ct.launch(None, grid, census, (a, w, seen, table, 16))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        ct.launch(None, grid, census, (a, w, seen, table, 16))
    g.replay()
    torch.cuda.synchronize()
    assert (seen == 2).all()  # the eager launch and the replay (capture does not run it)
    want = np.array([(x, y, z, grid[0]) for x in range(grid[0]) for y in range(grid[1]) for z in range(grid[2])])
    np.testing.assert_array_equal(table.cpu().numpy(), want)


_PRINTING = textwrap.dedent("""
    import torch, safetile as ct
    @ct.kernel
    def loud(A, B, C, tk: ct.Constant[int]):
        acc = ct.zeros((16, 16), ct.float32)
        for k in range(ct.cdiv(A.shape[1], tk)):
            acc = ct.mma(ct.load(A, (ct.bid(0), k), (16, tk), padding_mode=ct.PaddingMode.ZERO),
                         ct.load(B, (k, 0), (tk, 16), padding_mode=ct.PaddingMode.ZERO), acc)
        ct.printf("block %d of %d\\n", ct.bid(0), ct.num_blocks(0))
        ct.store(C, (ct.bid(0), 0), acc.astype(C.dtype))
    a = torch.ones(48, 32, device="cuda", dtype=torch.float16)
    b = torch.ones(32, 16, device="cuda", dtype=torch.float16)
    c = torch.empty(48, 16, device="cuda", dtype=torch.float16)
    ct.launch(None, (3,), loud, (a, b, c, 16))
    print("sum", float(c.float().sum()))
""")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_printing_kernel_loaded_from_the_disk_cache_still_prints(tmp_path):
    """The second process finds the binary on disk (no Triton import): its launch must still pass
    the print buffer and report, as the first did."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "SAFETILE_BACKEND")}
    env.update(SAFETILE_CACHE_DIR=str(tmp_path / "st"), TRITON_CACHE_DIR=str(tmp_path / "tr"))
    want = "block 0 of 3\nblock 1 of 3\nblock 2 of 3\nsum 24576.0\n"
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _PRINTING], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout == want


@ct.kernel
def accumulate_into(A, B, C, tk: ct.Constant[int]):
    """C += A @ B: the accumulator starts from the block's own tile of C."""
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.load(C, (i, j), (16, 16), padding_mode=ZERO).astype(ct.float32)
    for k in range(ct.cdiv(A.shape[1], tk)):
        acc = ct.mma(ct.load(A, (i, k), (16, tk), padding_mode=ZERO),
                     ct.load(B, (k, j), (tk, 16), padding_mode=ZERO), acc)
    ct.store(C, (i, j), acc.astype(C.dtype))


def test_an_accumulator_loaded_from_the_blocks_own_tile_is_walked_and_right():
    """A for loop's carried values do not change its length: only its bounds count."""
    a, w = _mats((40, 24), (24, 48))
    c0 = torch.randn(40, 48)
    assert _wanted(accumulate_into, (a.float(), w.float(), c0, 8))
    for name in ("numpy", "triton"):
        c = c0.clone()
        args = ((a.float(), w.float(), c, 8) if name == "triton"
                else (a.float().numpy(), w.float().numpy(), c.numpy(), 8))
        _run(accumulate_into, (3, 3), args, name)
        np.testing.assert_allclose(c.numpy(), (c0 + a.float() @ w.float()).numpy(), rtol=1e-4, atol=1e-4)
