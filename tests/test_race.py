"""The CPU race detector: catches every planted race, reports nothing on race-free kernels."""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import numpy as np
import pytest

import safetile as ct

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "safe")


def ex(name):
    """Import examples/safe/<name>.py under a unique module name."""
    key = f"safetile_safe_example_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(EXAMPLES, f"{name}.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]


permute = ex("permute_heads")

B = 16


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def nan(*shape):
    return np.full(shape, np.nan, dtype=np.float32)


# ----------------------------------------------------------------------------- planted races

@ct.kernel
def all_blocks_store_tile_zero(x, out, T: ct.Constant[int]):
    ct.store(out, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))


@ct.kernel
def overlapping_scatter(x, out, T: ct.Constant[int]):
    # each block writes T + 1 elements: one past its own tile (off by one)
    i = ct.bid(0) * T + ct.arange(2 * T, dtype=ct.int32)
    v = ct.gather(x, i)
    ct.scatter(out, i, v, mask=ct.arange(2 * T, dtype=ct.int32) <= T)


@ct.kernel
def ignores_grid_axis_1(x, out, T: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0), ct.bid(1)), shape=(T, T))
    ct.store(out, index=(ct.bid(0), 0), tile=t)  # should be (bid(0), bid(1))


@ct.kernel
def halved_view_index(x, out, T: ct.Constant[int]):
    v = out.tiled_view((T,))
    v.store((ct.bid(0) // 2,), ct.load(x, index=(ct.bid(0),), shape=(T,)))


@ct.kernel
def divergent_race(x, out, T: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    if ct.bid(0) % 2 == 1:
        ct.store(out, index=(0,), tile=t)  # odd blocks all write tile 0
    else:
        ct.store(out, index=(ct.bid(0),), tile=t)


@ct.kernel
def own_tiles(x, out1, out2, T: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    ct.store(out1, index=(ct.bid(0),), tile=t)
    ct.store(out2, index=(ct.bid(0),), tile=t)


@ct.kernel
def column_order_race(x, out, T: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0), ct.bid(1)), shape=(T, T))
    ct.store(out, index=(ct.bid(1), 0), tile=t, order="F")  # transposed store, index ignores bid(0)


RACY = [
    ("all blocks store tile 0", all_blocks_store_tile_zero, (8, 1, 1), lambda: (rnd(8 * B), nan(8 * B), B)),
    ("off-by-one scatter", overlapping_scatter, (8, 1, 1), lambda: (rnd(9 * B), nan(9 * B), B)),
    ("store ignores grid axis 1", ignores_grid_axis_1, (2, 3, 1), lambda: (rnd(2 * B, 3 * B), nan(2 * B, 3 * B), B)),
    ("tiled view index halved", halved_view_index, (6, 1, 1), lambda: (rnd(6 * B), nan(6 * B), B)),
    ("divergent branch race", divergent_race, (7, 1, 1), lambda: (rnd(7 * B), nan(7 * B), B)),
    ("overlapping views of one buffer", own_tiles, (4, 1, 1), None),
    ("transposed store race", column_order_race, (3, 2, 1), lambda: (rnd(3 * B, 2 * B), nan(2 * B, 3 * B), B)),
]


@pytest.mark.parametrize("name,kernel,grid,make", RACY, ids=[r[0] for r in RACY])
def test_race_planted_kernels_are_caught(name, kernel, grid, make):
    if make is None:
        buf = nan(6 * B)
        args = (rnd(4 * B), buf[0:4 * B], buf[2 * B:6 * B], B)  # out2 overlaps out1 by two tiles
    else:
        args = make()
    with pytest.raises(ct.RaceError) as info:
        ct.detect_races(kernel, grid, args)
    report = info.value.report
    assert report.conflicts and report.racy_elements > 0
    c = report.conflicts[0]
    assert c.block_a != c.block_b
    assert all(lo <= hi for lo, hi in zip(c.lo, c.hi)) and c.count > 0
    assert "data race" in str(info.value) and str(c.block_a) in str(info.value)


def test_race_report_names_blocks_and_region():
    x = rnd(8 * B)
    out = nan(8 * B)
    report = ct.detect_races(all_blocks_store_tile_zero, (8, 1, 1), (x, out, B), raise_on_race=False)
    assert report.racy_elements == B and report.written_elements == B
    blocks = {c.block_a for c in report.conflicts} | {c.block_b for c in report.conflicts}
    assert blocks == {(b, 0, 0) for b in range(8)}
    assert all(c.array == "out" and c.lo == (0,) and c.hi == (B - 1,) for c in report.conflicts)


def test_race_overlapping_views_region_is_in_the_view():
    buf = nan(6 * B)
    out1, out2 = buf[0:4 * B], buf[2 * B:6 * B]
    report = ct.detect_races(own_tiles, (4, 1, 1), (rnd(4 * B), out1, out2, B), raise_on_race=False)
    assert report.racy_elements == 2 * B
    pairs = {(c.block_a, c.block_b) for c in report.conflicts}
    assert pairs == {((0, 0, 0), (2, 0, 0)), ((1, 0, 0), (3, 0, 0))}


def test_race_head_permutation_with_swapped_strides():
    x = permute.inputs(2, 4, 32, 16, seed=3)
    with pytest.raises(ct.RaceError) as info:
        ct.detect_races(permute.permute_heads_unchecked, (2, 4, 4), (x, nan(2, 32 * 4, 16), 8, 16, True))
    rep = info.value.report
    assert rep.racy_elements > 0 and rep.conflicts[0].array == "out"
    # blocks of different heads collide: the race is between heads of one batch entry
    assert any(c.block_a[1] != c.block_b[1] and c.block_a[0] == c.block_b[0] for c in rep.conflicts)
    bad, rep2 = permute.run_unchecked(x, bs=8, swap=True, detect=True)
    assert rep2.racy_elements == rep.racy_elements
    assert not np.allclose(bad, permute.reference(x))


def test_race_head_permutation_safe_style_is_race_free():
    x = permute.inputs(2, 4, 32, 16, seed=4)
    ref = permute.reference(x)
    good, rep = permute.run_unchecked(x, bs=8, swap=False, detect=True)
    assert not rep and np.array_equal(good, ref)
    assert np.array_equal(permute.run_safe(x, bs=8), ref)
    xt = ct.from_numpy(x).sync().shared()
    out = ct.full((2, 32, 4 * 16), np.nan).sync().partition((1, 8, 16))
    assert not ct.detect_races(permute.permute_heads, None, (out, xt))


# ----------------------------------------------------------------------------- race-free kernels

@ct.kernel
def vec_add(x, y, out, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)) + ct.load(y, index=(i,), shape=(T,)))


@ct.kernel
def atomic_histogram(x, counts, T: ct.Constant[int]):
    v = ct.load(x, index=(ct.bid(0),), shape=(T,))
    bins = ct.astype(ct.abs(v) * 4.0, ct.int32) % 8
    ct.atomic_add(counts, bins, 1)


@ct.kernel
def same_block_writes_twice(x, out, T: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    ct.store(out, index=(ct.bid(0),), tile=t)
    ct.store(out, index=(ct.bid(0),), tile=t * 2.0)


@ct.kernel
def disjoint_scatter(x, out, T: ct.Constant[int]):
    i = ct.bid(0) * T + ct.arange(T, dtype=ct.int32)
    ct.scatter(out, i, ct.gather(x, i), mask=i < 100)


@ct.kernel
def reversed_blocks(x, out, T: ct.Constant[int]):
    n = ct.num_blocks(0)
    ct.store(out, index=(n - 1 - ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))


@ct.kernel
def gemm_unchecked(a, b, c, T: ct.Constant[int]):
    acc = ct.zeros((T, T), ct.float32)
    for k in range(ct.cdiv(a.shape[1], T)):
        acc = ct.mma(ct.load(a, index=(ct.bid(0), k), shape=(T, T), padding_mode=ct.PaddingMode.ZERO),
                     ct.load(b, index=(k, ct.bid(1)), shape=(T, T), padding_mode=ct.PaddingMode.ZERO), acc)
    ct.store(c, index=(ct.bid(0), ct.bid(1)), tile=acc)


RACE_FREE = [
    ("vector add", vec_add, (5, 1, 1), lambda: (rnd(5 * B), rnd(5 * B, seed=1), nan(5 * B), B)),
    ("atomics into shared bins", atomic_histogram, (6, 1, 1), lambda: (rnd(6 * B), np.zeros(8, np.int32), B)),
    ("one block writes twice", same_block_writes_twice, (4, 1, 1), lambda: (rnd(4 * B), nan(4 * B), B)),
    ("disjoint masked scatter", disjoint_scatter, (7, 1, 1), lambda: (rnd(7 * B), nan(7 * B), B)),
    ("reversed block order", reversed_blocks, (5, 1, 1), lambda: (rnd(5 * B), nan(5 * B), B)),
    ("unchecked gemm", gemm_unchecked, (2, 3, 1), lambda: (rnd(2 * B, 40), rnd(40, 3 * B), nan(2 * B, 3 * B), B)),
]


@pytest.mark.parametrize("name,kernel,grid,make", RACE_FREE, ids=[r[0] for r in RACE_FREE])
def test_race_free_unchecked_kernels_report_nothing(name, kernel, grid, make):
    args = make()
    report = ct.detect_races(kernel, grid, args)
    assert not report and report.conflicts == [] and report.racy_elements == 0
    if kernel is not atomic_histogram:
        assert report.written_elements > 0


def _examples():
    return [ex(m) for m in ("vector_add", "softmax", "persistent_gemm", "batched_matmul", "flash_attention",
                             "dropout")]


def test_race_free_safe_examples_report_nothing():
    """Safe-style kernels, run under the detector (including a mapped partition and a 3-D grid)."""
    va, sm, pg, bmm, fa, do = _examples()
    cases = [
        (va.add, lambda: (ct.full(300, np.nan).sync().partition(64), ct.rand(300, seed=1).sync(),
                          ct.rand(300, seed=2).sync())),
        (sm.softmax, lambda: (ct.full((20, 50), np.nan).sync().partition((4, 64)), ct.randn((20, 50), seed=3).sync())),
        (pg.persistent_gemm.generics(BK=16), lambda: (ct.full((64, 96), np.nan).sync().partition((32, 32)).map(4),
                                                      ct.randn((64, 48), seed=4).sync(), ct.randn((48, 96), seed=5).sync())),
        (bmm.bmm.generics(BK=8), lambda: (ct.full((2, 32, 32), np.nan).sync().partition((1, 16, 16)),
                                          ct.randn((2, 32, 24), seed=6).sync(), ct.randn((2, 24, 32), seed=7).sync())),
        (fa.flash_attention.generics(BN=16), lambda: (ct.full((2, 40, 16), np.nan).sync().partition((1, 16, 16)),
                                                      *(ct.randn((2, 40, 16), seed=s).sync() for s in (8, 9, 10)),
                                                      0.25, True)),
        (do.dropout, lambda: (ct.full(500, np.nan).sync().partition(128), ct.randn(500, seed=11).sync(), 0.5, 7)),
    ]
    for kernel, make in cases:
        report = ct.detect_races(kernel, None, make())
        assert not report and report.written_elements > 0, (kernel, report)


# ----------------------------------------------------------------------------- bytes, atomics, reads (issue 9, class 10)

@ct.kernel
def store_f32_and_u8(x, out_f, out_u, T: ct.Constant[int]):
    # block 0 writes floats, block 1 writes bytes: two views of the same memory
    if ct.bid(0) == 0:
        ct.store(out_f, index=(0,), tile=ct.load(x, index=(0,), shape=(T,)))
    else:
        ct.store(out_u, index=(0,), tile=ct.full((4 * T,), 7, ct.uint8))


@ct.kernel
def atomic_vs_store(x, out, T: ct.Constant[int]):
    if ct.bid(0) == 0:
        ct.atomic_add(out, ct.arange(T, dtype=ct.int32), 1.0)
    else:
        ct.store(out, index=(0,), tile=ct.load(x, index=(0,), shape=(T,)))


@ct.kernel
def atomic_vs_load(x, out, T: ct.Constant[int]):
    if ct.bid(0) == 0:
        ct.atomic_add(out, ct.arange(T, dtype=ct.int32), 1.0)
    else:
        ct.store(x, index=(0,), tile=ct.load(out, index=(0,), shape=(T,)))


@ct.kernel
def reads_neighbours_output(x, out, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)))
    n = ct.num_blocks(0)
    ct.store(x, index=(i,), tile=ct.load(out, index=((i + 1) % n,), shape=(T,)))  # another block's output


@ct.kernel
def reads_own_output(x, out, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)))
    ct.store(out, index=(i,), tile=ct.load(out, index=(i,), shape=(T,)) * 2.0)  # its own: program order


@ct.kernel
def atomics_only(x, out, T: ct.Constant[int]):
    ct.atomic_add(out, ct.arange(T, dtype=ct.int32), ct.load(x, index=(ct.bid(0),), shape=(T,)))


def test_race_writes_through_dtype_views_are_compared_by_bytes():
    buf = np.zeros(4 * B, np.uint8)
    out_f, out_u = buf.view(np.float32), buf
    rep = ct.detect_races(store_f32_and_u8, (2, 1, 1), (rnd(B), out_f, out_u, B), raise_on_race=False)
    assert rep.kinds == {"write-write"} and rep.blocks == {(0, 0, 0), (1, 0, 0)}
    assert rep.racy_elements == 4 * B  # distinct element addresses: every byte (the floats start at some of them)


def test_race_partial_byte_overlap_of_two_float_views():
    buf = np.zeros(4 * B + 4, np.uint8)
    a = buf[0:4 * B].view(np.float32)
    b = np.lib.stride_tricks.as_strided(buf[2:].view(np.uint8), shape=(4 * B,), strides=(1,))  # 2 bytes later

    @ct.kernel
    def two_views(x, a, b, T: ct.Constant[int]):
        if ct.bid(0) == 0:
            ct.store(a, index=(T - 1,), tile=ct.load(x, index=(0,), shape=(1,)))  # the last float of a
        else:
            ct.store(b, index=(0,), tile=ct.full((1,), 3, ct.uint8))  # byte 2 of a's first float
    rep = ct.detect_races(two_views, (2, 1, 1), (rnd(B), a, b, B), raise_on_race=False)
    assert not rep  # the last float of a and byte 2 are apart
    rep = ct.detect_races(store_f32_and_u8, (2, 1, 1), (rnd(1), a[:1], buf[3:4], 1), raise_on_race=False)
    assert rep and rep.kinds == {"write-write"}  # a float and a byte inside it: overlap by one byte


def test_race_atomic_against_plain_store_is_reported():
    rep = ct.detect_races(atomic_vs_store, (2, 1, 1), (rnd(B), np.zeros(B, np.float32), B), raise_on_race=False)
    assert rep.kinds == {"atomic-plain"} and rep.racy_elements == B
    assert "update atomically and access plainly" in str(rep)


def test_race_atomic_against_plain_load_is_reported():
    rep = ct.detect_races(atomic_vs_load, (2, 1, 1), (nan(B), np.zeros(B, np.float32), B), raise_on_race=False)
    assert rep.kinds == {"atomic-plain"}


def test_race_read_after_write_across_blocks_is_reported():
    with pytest.raises(ct.RaceError) as info:
        ct.detect_races(reads_neighbours_output, (4, 1, 1), (rnd(4 * B), nan(4 * B), B))
    rep = info.value.report
    assert "write-read" in rep.kinds
    assert all(c.block_a != c.block_b for c in rep.conflicts)
    assert any(c.array == "out" and c.kind == "write-read" for c in rep.conflicts)


def test_race_reading_own_output_and_atomics_together_are_not_races():
    assert not ct.detect_races(reads_own_output, (4, 1, 1), (rnd(4 * B), nan(4 * B), B))
    assert not ct.detect_races(atomics_only, (4, 1, 1), (rnd(4 * B), np.zeros(B, np.float32), B))
