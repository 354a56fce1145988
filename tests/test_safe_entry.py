"""@ct.entry kernels: annotations, generics, specialisation, edge tiles, prefixes, escape hatch."""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct


@ct.entry
def scale(z: ct.Mut["E", "B"], x: ct.Ref["E", -1], a: "E"):
    z.store(ct.load_tile_like(x, z) * a)


@ct.entry
def copy2d(z: ct.Mut[ct.f32, ("BM", "BN")], x: ct.Ref[ct.f32, (-1, -1)]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def matvec(y: ct.Mut[ct.f32, ("BM",)], a: ct.Ref[ct.f32, (-1, "K")], v: ct.Ref[ct.f32, ("K",)]):
    rows = a.partition((BM, K)).load((ct.bid(0), 0))  # noqa: F821 - generics
    y.store(ct.sum(rows * v.load().reshape((1, K)), axis=1))  # noqa: F821


@ct.entry
def rows_prefix(z: ct.Mut[ct.f32, (1, "N")], x: ct.Ref[ct.f32, (-1, "N")], k: ct.Constant[int]):
    z.store(ct.load_tile_like(x, z) + float(k))


@ct.entry
def count_tiles(z: ct.Mut[ct.i32, (1,)], x: ct.Ref[ct.f32, (-1, -1)]):
    p = x.partition((4, 8))
    z.store(ct.full((1,), ct.num_tiles(p, 0) * 100 + p.num_tiles(1), ct.int32))


@ct.entry(preconditions=["dim(a, 1) == dim(v, 0)", "K % 4 == 0"])
def checked_matvec(y: ct.Mut[ct.f32, ("BM",)], a: ct.Ref[ct.f32, (-1, "K")], v: ct.Ref[ct.f32, ("K",)]):
    rows = a.partition((BM, K)).load((ct.bid(0), 0))  # noqa: F821
    y.store(ct.sum(rows * v.load().reshape((1, K)), axis=1))  # noqa: F821


def nan(shape):
    return ct.full(shape, np.nan).sync()


def test_element_type_generic_and_scalar():
    x = ct.randn(100, seed=1).sync()
    z, x, _ = scale(nan(100).partition(32), x, 3.0).sync()
    assert np.allclose(z.to_numpy(), 3 * x.to_numpy())
    xh = ct.randn(100, seed=2, dtype=ct.f16).sync()
    zh, xh, _ = scale(ct.zeros(100, ct.f16).sync().partition(32), xh, np.float16(2.0)).sync()
    assert zh.dtype is ct.float16 and np.array_equal(zh.to_numpy(), xh.to_numpy() * np.float16(2))


def test_dynamic_sizes_do_not_recompile_but_shapes_do():
    k = copy2d
    before = k.num_compiled
    for n in (40, 50, 64):
        x = ct.randn((n, n + 3), seed=n).sync()
        z, x = k(nan((n, n + 3)).partition((16, 16)), x).sync()
        assert np.array_equal(z.to_numpy(), x.to_numpy())
    assert k.num_compiled == before + 1
    z, x = k(nan((8, 8)).partition((8, 4)), ct.randn((8, 8), seed=3).sync()).sync()
    assert k.num_compiled == before + 2


def test_edge_tiles_never_write_outside_the_tensor():
    buf = nan((50, 70))
    inner = buf[5:42, 3:60]  # a view: everything outside it must stay untouched
    x = ct.randn((37, 57), seed=4).sync()
    p = inner.partition((16, 32))
    assert p.grid() == (3, 2)
    p, x = copy2d(p, x).sync()
    whole = buf.to_numpy()
    assert np.array_equal(whole[5:42, 3:60], x.to_numpy())
    mask = np.ones(whole.shape, bool)
    mask[5:42, 3:60] = False
    assert np.isnan(whole[mask]).all()


def test_generics_from_static_ref_shapes_and_explicit():
    a = ct.randn((64, 16), seed=5).sync()
    v = ct.randn(16, seed=6).sync()
    y, a, v = matvec(nan(64).partition(16), a, v).sync()
    assert np.allclose(y.to_numpy(), a.to_numpy() @ v.to_numpy(), atol=1e-5)
    bad = ct.randn(8, seed=7).sync()
    with pytest.raises(ct.LaunchTypeError, match=r"generic 'K' is 16 from the tensor shape of 'a'.*8"):
        matvec(y, a, bad)
    y2, _, _ = matvec.generics(K=16)(y, a, v).sync()
    with pytest.raises(ct.LaunchTypeError, match="generic 'K' is 8"):
        matvec.generics(K=8)(y2, a, v)


def test_generic_given_after_building_the_op():
    a = ct.randn((32, 16), seed=8).sync()
    v = ct.randn(16, seed=9).sync()
    y = nan(32).partition(16)
    op = matvec(y, a, v).generics(K=16)
    y, a, v = op.sync()
    assert np.allclose(y.to_numpy(), a.to_numpy() @ v.to_numpy(), atol=1e-5)


def test_partition_prefix_kernel():
    x = ct.randn((6, 64), seed=10).sync()
    z = nan((6, 64)).partition_prefix((1,))
    z, x, k = rows_prefix(z, x, 2).sync()
    assert k == 2 and np.allclose(z.to_numpy(), x.to_numpy() + 2)
    # an explicit grid must equal the prefix partition's (one sub-tensor per block)
    z, x, _ = rows_prefix.grid((6, 1, 1))(z, x, 3).sync()
    assert np.allclose(z.to_numpy(), x.to_numpy() + 3)
    with pytest.raises(ct.GridError, match=r"launch grid \(8, 1, 1\) does not match the grid \(6, 1, 1\)"):
        rows_prefix.grid((8, 1, 1))(z, x, 3)


def test_num_tiles_of_device_partitions():
    x = ct.zeros((10, 17)).sync()
    z, _ = count_tiles(ct.zeros(1, ct.i32).sync().partition(1), x).sync()
    assert z.to_numpy()[0] == 3 * 100 + 3


def test_preconditions_that_hold():
    a = ct.randn((16, 8), seed=11).sync()
    v = ct.randn(8, seed=12).sync()
    y, a, v = checked_matvec(nan(16).partition(16), a, v).sync()
    assert np.allclose(y.to_numpy(), a.to_numpy() @ v.to_numpy(), atol=1e-5)
    with pytest.raises(ct.PreconditionError, match=r"K % 4 == 0"):
        checked_matvec(y, ct.randn((16, 6), seed=1).sync(), ct.randn(6, seed=2).sync())


def test_compile_and_ir_do_not_move_or_run():
    x = ct.randn(64, seed=13).sync()
    z = nan(64).partition(32)
    fn = scale.compile(z, x, 1.5)
    assert fn.name == "scale" and not z.is_moved and not x.is_moved
    text = scale.ir(z, x, 1.5)
    assert "store(" in text and "ro>" in text
    assert np.isnan(z.to_numpy()).all()


def test_unchecked_escape_hatch_is_an_ordinary_kernel():
    @ct.entry(unchecked=True)
    def raw_copy(x, out, T: ct.Constant[int]):
        ct.store(out, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))
    assert isinstance(raw_copy, ct.Kernel)
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    ct.launch(None, (4,), raw_copy, (x, out, 16))
    assert np.array_equal(out, x)


def test_annotations_are_required_and_checked():
    with pytest.raises(TypeError, match="need an annotation"):
        @ct.entry
        def bad(z):
            pass
    with pytest.raises(TypeError, match=r"ct\.Mut\[dtype, shape\]"):
        @ct.entry
        def bad2(z: ct.Mut):
            pass
    with pytest.raises(TypeError):
        ct.Mut[ct.f32, 0]


def test_tile_factories_still_work_inside_kernels():
    @ct.entry
    def fill(z: ct.Mut[ct.f32, ("B",)]):
        z.store(ct.zeros((B,), ct.float32) + ct.ones((B,), dtype=ct.float32) * 2.0  # noqa: F821
                + ct.arange(B, dtype=ct.float32) + ct.full((B,), 1.0, ct.float32))  # noqa: F821
    z, = fill(nan(8).partition(8)).sync()
    assert np.array_equal(z.to_numpy(), np.arange(8, dtype=np.float32) + 3)
