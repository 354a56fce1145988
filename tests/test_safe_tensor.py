"""Host tensors, views, DLPack, partitions, borrowing and sharing."""
from __future__ import annotations

import numpy as np
import pytest

import safetile as ct


def rnd(shape, seed=0):
    return ct.randn(shape, seed=seed).sync()


def test_tensor_metadata_and_copies():
    t = rnd((6, 10), 1)
    assert t.shape == (6, 10) and t.ndim == 2 and t.dtype is ct.float32 and t.device == "cpu"
    assert t.strides == (10, 1) and t.size == 60 and t.nbytes == 240
    a = t.to_numpy()
    a[0, 0] = 1234.0  # a copy: the tensor is unchanged
    assert t.to_numpy()[0, 0] != 1234.0
    h = t.to_host().sync()
    assert h is not t and np.array_equal(h.to_numpy(), t.to_numpy())
    d = t.dup().sync()
    assert np.array_equal(np.asarray(d), np.asarray(t)) and d.data_ptr != t.data_ptr


def test_zero_copy_views_and_reshape():
    t = rnd((4, 8), 2)
    r = t.reshape(8, 4)
    assert r.data_ptr == t.data_ptr and np.array_equal(r.to_numpy(), t.to_numpy().reshape(8, 4))
    s = t[1:3, ::2]
    assert s.shape == (2, 4) and s.strides == (8, 2)
    assert np.array_equal(s.to_numpy(), t.to_numpy()[1:3, ::2])
    assert np.array_equal(t.slice(1, 2, 5).to_numpy(), t.to_numpy()[:, 2:5])
    with pytest.raises(ValueError, match="needs a copy"):
        t[:, 1:3].reshape(8)
    with pytest.raises(TypeError):
        t[np.array([0, 1])]


def test_dlpack_roundtrip_numpy_and_torch():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ct.from_dlpack(a)
    assert t.data_ptr == a.__array_interface__["data"][0]  # zero copy
    b = np.from_dlpack(t)
    assert np.shares_memory(a, b)
    assert t.__dlpack_device__()[0] == 1
    torch = pytest.importorskip("torch")
    tt = torch.arange(6, dtype=torch.float32)
    t2 = ct.Tensor.from_dlpack(tt)
    assert t2.data_ptr == tt.data_ptr() and t2.device == "cpu"
    back = torch.from_dlpack(t2)
    assert back.data_ptr() == tt.data_ptr()
    bf = ct.from_dlpack(torch.ones(4, dtype=torch.bfloat16))
    assert bf.dtype is ct.bfloat16 and np.array_equal(bf.to_numpy().astype(np.float32), np.ones(4, np.float32))


def test_partition_grid_is_ceil_division():
    p = rnd((100, 33), 3).partition((32, 16))
    assert p.grid() == (4, 3) and p.num_tiles == 12 and p.tile_shape == (32, 16)
    assert rnd((8, 16, 4), 4).partition((2, 4, 4)).grid() == (4, 4, 1)
    pp = rnd((3, 5, 32), 5).partition_prefix((1,))
    assert pp.grid() == (3,) and pp.tile_shape == (1, 5, 32) and pp.is_prefix


def test_partition_moves_and_unpartition_gives_back():
    t = rnd(64, 6)
    p = t.partition(16)
    with pytest.raises(ct.UseAfterMoveError, match=r"moved into partition.*\.partition\(\) at test_safe_tensor\.py"):
        t.shape
    with pytest.raises(ct.UseAfterMoveError):
        t.partition(8)
    back = p.unpartition()
    assert back is t and t.shape == (64,)
    with pytest.raises(ct.UseAfterMoveError, match="unpartition"):
        p.grid()


def test_map_and_unmap():
    p = rnd((64, 64), 7).partition((16, 32))
    m = p.map(3)
    assert m.grid() == (3, 1, 1) and m.num_tile_blocks == 3
    with pytest.raises(ct.UseAfterMoveError, match="map"):
        p.grid()
    p2 = m.unmap()
    assert p2 is p and p.grid() == (4, 2)


def test_borrow_mut_partitions_in_place():
    t = ct.zeros(256).sync()

    @ct.entry
    def fill(z: ct.Mut[ct.f32, "B"], v: ct.f32):
        z.store(ct.full((B,), v, ct.float32))  # noqa: F821

    b = ct.borrow_mut(t)
    p = b.partition(64)
    with pytest.raises(ct.BorrowError):
        t.to_numpy()
    p, _ = fill(p, 2.5).sync()
    assert p.release() is t
    assert np.array_equal(t.to_numpy(), np.full(256, 2.5, np.float32))
    with pytest.raises(ct.OwnershipError, match="released"):
        p.grid()
    with ct.borrow_mut(t) as bb:
        fill(bb.partition(128), 1.0).sync()
    assert np.array_equal(t.to_numpy(), np.ones(256, np.float32))


def test_borrow_scope_cancels_a_launch_that_never_ran():
    """Leaving the block always ends the borrow: a launch built inside and never run is
    cancelled (it can never write the tensor afterwards), with a warning."""
    t = ct.zeros(64).sync()

    @ct.entry
    def one(z: ct.Mut[ct.f32, "B"]):
        z.store(ct.ones((B,), ct.float32))  # noqa: F821

    with pytest.warns(ct.LaunchDroppedWarning, match="had not run; it was cancelled"):
        with ct.borrow_mut(t) as b:
            op = one(b.partition(32))
    assert np.array_equal(t.to_numpy(), np.zeros(64, np.float32))  # usable again, never written
    with pytest.raises(ct.DeviceOpError, match="cancelled"):
        op.sync()
    assert np.array_equal(t.to_numpy(), np.zeros(64, np.float32))


def test_shared_is_read_only_and_unwraps():
    t = rnd(32, 8)
    data = t.to_numpy()
    s = ct.shared(t)
    assert isinstance(s, ct.Shared) and s.clone() is s and s.shape == (32,)
    assert np.array_equal(s.to_numpy(), data)
    with pytest.raises(ct.UseAfterMoveError, match="shared"):
        t.to_numpy()
    back = s.try_unwrap()
    assert back is t and np.array_equal(t.to_numpy(), data)
    with pytest.raises(ct.OwnershipError, match="unwrapped"):
        s.to_numpy()
    assert not hasattr(s, "partition")


def test_memcpy_and_from_numpy():
    src = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    t = ct.from_numpy(src).sync()
    src[0, 0] = 99.0  # from_numpy copied
    assert t.to_numpy()[0, 0] != 99.0
    u = ct.zeros((3, 5)).sync()
    u = ct.memcpy(u, t).sync()
    assert np.array_equal(u.to_numpy(), t.to_numpy())
    with pytest.raises(ct.AliasError):
        ct.memcpy(t[0:2], t[1:3])
    assert ct.from_numpy([[1, 2], [3, 4]], dtype=ct.f16).sync().dtype is ct.float16


def test_tensor_repr_mentions_move():
    t = rnd(4, 9).named("weights")
    t.partition(4)
    assert "moved into partition 'weights'" in repr(t)


def test_numpy_asking_for_no_copy_is_refused_not_given_a_silent_copy():
    """NumPy 2's __array__(copy=False) promises the caller the memory itself: a safetile value only
    hands NumPy copies, so it must refuse (ValueError, as the protocol says) rather than return a copy
    whose writes would be lost (red team round 6, 620)."""
    base = np.random.default_rng(3).standard_normal(8).astype(np.float32)
    t = ct.from_dlpack(base.copy())
    s = ct.from_dlpack(base.copy()).shared()
    for v in (t, s):
        for ask in (lambda v: np.asarray(v, copy=False), lambda v: np.array(v, copy=False),
                    lambda v: v.__array__(copy=False)):
            with pytest.raises(ct.TensorError, match="without a copy"):
                ask(v)
            with pytest.raises(ValueError):
                ask(v)
        a = np.asarray(v)  # the default (copy when needed) is a host copy
        np.testing.assert_array_equal(a, base)
        assert not np.shares_memory(a, v.to_numpy())
        np.testing.assert_array_equal(np.asarray(v, dtype=np.float64), base.astype(np.float64))
