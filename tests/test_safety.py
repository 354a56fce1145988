"""The safety corpus: programs and launches the safe style must refuse.

Every case is refused with its specific error (type and message), and every argument is
byte-identical afterwards and still usable (a rejected launch writes nothing and moves
nothing). Data is random and outputs are poisoned with NaN.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import safetile as ct
from safetile.errors import TileError, TileSafetyError, TileTypeError

# ----------------------------------------------------------------------------- kernels


@ct.entry
def add(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1], y: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z) + ct.load_tile_like(y, z))


@ct.entry
def copy2(z: ct.Mut[ct.f32, "B"], w: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    z.store(t)
    w.store(t + 1.0)


@ct.entry
def store_to_readonly(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = ct.load_tile_like(x, z)
    ct.store(x, index=(ct.bid(0),), tile=t)
    z.store(t)


@ct.entry
def method_store_to_readonly(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    x.store(z.load())


@ct.entry
def scatter_to_readonly(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    ct.scatter(x, ct.arange(B, dtype=ct.int32), z.load())  # noqa: F821


@ct.entry
def partition_store_to_readonly(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    x.partition((B,)).store((0,), z.load())  # noqa: F821


@ct.entry
def wrong_store_shape(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    t = x.partition((2 * B,)).load((ct.bid(0),))  # noqa: F821
    z.store(t)


@ct.entry
def wrong_store_dtype(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z).astype(ct.float16))


@ct.entry
def store_with_index(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z), ct.bid(0))


@ct.entry
def forged_tuple(c: ct.MappedMut[ct.f32, ("BM", "BN")], a: ct.Ref[ct.f32, (-1, -1)]):
    for idx in c.iter_indices():
        i, j = idx
        c.store(a.partition((BM, BN)).load((i, j)), (i, j))  # noqa: F821


@ct.entry
def forged_tile(c: ct.MappedMut[ct.f32, ("B",)], a: ct.Ref[ct.f32, -1]):
    for idx in c.iter_indices():
        c.store(a.partition((B,)).load(idx), ct.bid(0))  # noqa: F821


@ct.entry
def forged_other_partition(c: ct.MappedMut[ct.f32, ("B",)], d: ct.MappedMut[ct.f32, ("B",)],
                           a: ct.Ref[ct.f32, -1]):
    for idx in c.iter_indices():
        for jdx in d.iter_indices():
            c.store(a.partition((B,)).load(jdx), jdx)  # noqa: F821


@ct.entry
def mapped_copy(c: ct.MappedMut[ct.f32, ("B",)], a: ct.Ref[ct.f32, -1]):
    for idx in c.iter_indices():
        c.store(a.partition((B,)).load(idx), idx)  # noqa: F821


@ct.entry(preconditions=["dim(x, 0) % 64 == 0"])
def needs_multiple_of_64(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry(preconditions=[lambda z, x: z.shape == x.shape])
def needs_same_shape(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def static_64(z: ct.Mut[ct.f32, 64], x: ct.Ref[ct.f32, 1000]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def prefix_rows(z: ct.Mut[ct.f32, (1, "N")], x: ct.Ref[ct.f32, (-1, "N")]):
    z.store(ct.load_tile_like(x, z))


@ct.entry
def no_mutable(x: ct.Ref[ct.f32, -1]):
    t = x.partition((64,)).load((ct.bid(0),))
    ct.print(ct.sum(t))


# ----------------------------------------------------------------------------- helpers

def rnd(shape, seed):
    return ct.randn(shape, seed=seed).sync()


def poisoned(shape):
    return ct.full(shape, np.nan).sync()


def raw(o):
    if isinstance(o, (ct.Partition, ct.MappedPartition, ct.Shared)):
        return o._tensor._data
    if isinstance(o, ct.Tensor):
        return o._data
    return o


def snapshot(objs):
    return [np.array(raw(o), copy=True) for o in objs]


def assert_untouched(objs, snaps):
    for o, s in zip(objs, snaps):
        a = raw(o)
        assert a.tobytes() == s.tobytes(), f"{o!r} was written by a rejected launch"
        if hasattr(o, "is_moved"):
            assert not o.is_moved, f"{o!r} was moved by a rejected launch"


def refused(objs, exc, pattern, action):
    snaps = snapshot(objs)
    with pytest.raises(exc) as info:
        action()
    assert re.search(pattern, str(info.value), re.S), str(info.value)
    assert_untouched(objs, snaps)
    return info.value


def inputs(n=1000):
    return rnd(n, 1), rnd(n, 2)


# ----------------------------------------------------------------------------- aliasing

def test_alias_output_overlaps_input_view():
    t = rnd(1024, 3)
    x = t[256:768]  # a view of t
    z = t.partition(128)
    y = rnd(512, 4)
    refused([z, x, y], ct.AliasError, r"mutable argument 'z' overlaps argument 'x'", lambda: add(z, x, y))


def test_alias_overlapping_slices():
    t = rnd(1000, 5)
    z = t[0:600].partition(128)
    x = t[500:1000].reshape(500)
    y = rnd(500, 6)
    refused([z, x, y], ct.AliasError, r"'z' overlaps argument 'x'", lambda: add(z, x, y))


def test_alias_two_mutable_views_of_one_buffer():
    t = rnd(1024, 7)
    z = t[0:512].partition(128)
    w = t[384:896].partition(128)
    x = rnd(512, 8)
    refused([z, w, x], ct.AliasError, r"mutable argument 'z' overlaps argument 'w'", lambda: copy2(z, w, x))


def test_alias_same_partition_twice():
    z = poisoned(512).partition(128)
    x = rnd(512, 9)
    refused([z, x], ct.AliasError, r"same partition.*'z'.*'w'", lambda: copy2(z, z, x))


def test_alias_numpy_input_aliases_output():
    a = np.random.default_rng(0).standard_normal(512).astype(np.float32)
    z = ct.from_dlpack(a).partition(128)
    y = rnd(512, 10)
    refused([z, a, y], ct.AliasError, r"'z' overlaps argument 'x'", lambda: add(z, a, y))


def test_disjoint_interleaved_views_are_accepted():
    t = poisoned((64, 256))
    z = t[:, 0:128].partition((64, 128))
    w = t[:, 128:256].partition((64, 128))
    x = rnd((64, 128), 11)
    # column halves of one buffer: their byte extents interleave row by row but share no byte
    @ct.entry
    def copy2d(z: ct.Mut[ct.f32, ("A", "B")], w: ct.Mut[ct.f32, ("A", "B")], x: ct.Ref[ct.f32, (-1, -1)]):
        z.store(ct.load_tile_like(x, z))
        w.store(ct.load_tile_like(x, z) * 2.0)
    z, w, x = copy2d(z, w, x).sync()
    assert np.array_equal(z.unpartition().to_numpy(), x.to_numpy())
    assert np.array_equal(w.unpartition().to_numpy(), 2 * x.to_numpy())


# ----------------------------------------------------------------------------- ownership

def test_ownership_use_after_partition():
    t = rnd(512, 12)
    z = t.partition(128)
    x, y = rnd(512, 13), rnd(512, 14)
    e = refused([z, x, y], ct.UseAfterMoveError, r"moved into partition.*\.partition\(\)",
                lambda: add(z, t, y))
    assert "argument 'x'" in str(e)
    with pytest.raises(ct.UseAfterMoveError, match="unpartition"):
        t.to_numpy()


def test_ownership_use_after_move_into_launch():
    x, y = inputs(512)
    z = poisoned(512).partition(128)
    op = add(z, x, y)
    x2, y2 = rnd(512, 15), rnd(512, 16)
    with pytest.raises(ct.UseAfterMoveError, match=r"moved into launch 'add' \(op #\d+, created at test_safety.py"):
        add(z, x2, y2)
    assert not x2.is_moved and not y2.is_moved
    with pytest.raises(ct.UseAfterMoveError, match="launch 'add'"):
        x.to_numpy()
    z, x, y = op.sync()  # the result gives everything back
    assert np.array_equal(z.to_numpy(), x.to_numpy() + y.to_numpy())


def test_ownership_borrowed_tensor_unusable_until_released():
    t = poisoned(512)
    x, y = inputs(512)
    with ct.borrow_mut(t) as b:
        p = b.partition(128)
        with pytest.raises(ct.BorrowError, match="mutably borrowed"):
            t.to_numpy()
        refused([p, x, y], ct.BorrowError, "mutably borrowed", lambda: add(p, t, y))
        p, x, y = add(p, x, y).sync()
    assert np.array_equal(t.to_numpy(), x.to_numpy() + y.to_numpy())


def test_ownership_shared_cannot_be_unwrapped_while_held():
    x = rnd(512, 17).shared()
    y = rnd(512, 18)
    z = poisoned(512).partition(128)
    op = add(z, x, y)
    with pytest.raises(ct.OwnershipError, match="still held by 1 launch"):
        x.try_unwrap()
    z, x2, y = op.sync()
    assert x2 is x and isinstance(x2, ct.Shared)
    assert isinstance(x.try_unwrap(), ct.Tensor)



def test_ownership_values_of_a_running_chain_are_refused_to_other_threads():
    """A chain gives its arguments back to its own closures between launches; another thread
    trying to use them meanwhile is refused (it would race the chain's next launch)."""
    import threading
    x, y = inputs(512)
    z = poisoned(512).partition(128)
    inside, outside = threading.Event(), threading.Event()
    errors = []

    def other_thread():
        inside.wait()
        for action in (lambda: z.to_numpy(), lambda: add(z, x, y)):
            try:
                action()
                errors.append("not refused")
            except ct.UseAfterMoveError as e:
                errors.append(str(e))
        outside.set()

    def pause(r):  # inside the chain, between two launches: z is back, but only for the chain
        inside.set()
        outside.wait()
        return add(*r)

    t = threading.Thread(target=other_thread)
    t.start()
    z, x, y = add(z, x, y).then(pause).sync()
    t.join()
    assert len(errors) == 2 and all("in use by a running sync_on()" in e for e in errors), errors
    assert np.allclose(z.to_numpy(), x.to_numpy() + y.to_numpy())  # the chain's result, undisturbed


# ----------------------------------------------------------------------------- compile time

def _compile_refused(kernel, exc, pattern, line_text):
    z = poisoned(512).partition(128)
    x = rnd(512, 19)
    e = refused([z, x], exc, pattern, lambda: kernel(z, x))
    assert isinstance(e, TileError) and e.loc is not None and e.loc.filename.endswith("test_safety.py")
    assert line_text in str(e)


def test_safety_store_to_readonly_is_compile_error():
    _compile_refused(store_to_readonly, TileTypeError, "read-only", "ct.store(x, index=(ct.bid(0),), tile=t)")


def test_safety_method_store_to_readonly():
    _compile_refused(method_store_to_readonly, TileSafetyError, "cannot store to 'x'.*read-only", "x.store(z.load())")


def test_safety_scatter_to_readonly():
    _compile_refused(scatter_to_readonly, TileTypeError, "read-only", "ct.scatter(x")


def test_safety_store_through_readonly_partition():
    _compile_refused(partition_store_to_readonly, TileSafetyError, "read-only", "x.partition((B,)).store")


def test_safety_wrong_store_shape():
    _compile_refused(wrong_store_shape, TileSafetyError, r"sub-tensor of shape \(128,\).*got \(256,\)", "z.store(t)")


def test_safety_wrong_store_dtype():
    _compile_refused(wrong_store_dtype, TileTypeError, "float16 does not match", "z.store(")


def test_safety_mut_store_takes_no_index():
    _compile_refused(store_with_index, TileSafetyError, "takes no index", "z.store(")


def _mapped_refused(kernel, pattern, line_text, two=False):
    c = poisoned((64, 64)) if not two else poisoned(256)
    a = rnd((64, 64) if not two else 256, 20)
    if two:
        cp = c.partition(32).map(2)
        d = poisoned(256).partition(32).map(2)
        objs, call = [cp, d, a], (lambda: kernel(cp, d, a))
    elif kernel is forged_tile:
        c, a = poisoned(256), rnd(256, 21)
        cp = c.partition(32).map(3)
        objs, call = [cp, a], (lambda: kernel(cp, a))
    else:
        cp = c.partition((16, 16)).map(3)
        objs, call = [cp, a], (lambda: kernel(cp, a))
    e = refused(objs, TileSafetyError, pattern, call)
    assert line_text in str(e)


def test_safety_forged_index_tuple():
    _mapped_refused(forged_tuple, r"must come from c\.iter_indices\(\).*a tuple", "c.store(")


def test_safety_forged_index_tile():
    _mapped_refused(forged_tile, r"must come from c\.iter_indices\(\).*got a tile<", "c.store(")


def test_safety_forged_index_from_other_partition():
    _mapped_refused(forged_other_partition, r"produced by d\.iter_indices\(\), not c\.iter_indices\(\)",
                    "c.store(", two=True)


# ----------------------------------------------------------------------------- grids

def test_safety_grid_mismatch_explicit_vs_inferred():
    x, y = inputs(1000)
    z = poisoned(1000).partition(128)
    refused([z, x, y], ct.GridError, r"launch grid \(4, 1, 1\) does not match the grid \(8, 1, 1\).*axis 0 \(x\)",
            lambda: add.grid((4, 1, 1))(z, x, y))


def test_safety_grid_mismatch_between_partitions():
    x = rnd(1024, 22)
    z = poisoned(1024).partition(128)
    w = poisoned(512).partition(128)
    refused([z, w, x], ct.GridError, r"grid mismatch on axis 0 \(x\).*'w' has 4 blocks.*'z' has 8",
            lambda: copy2(z, w, x))


def test_safety_grid_mismatch_on_axis_1():
    @ct.entry
    def two(z: ct.Mut[ct.f32, ("A", "B")], w: ct.Mut[ct.f32, ("A", "B")]):
        z.store(ct.zeros((A, B), ct.float32))  # noqa: F821
        w.store(ct.zeros((A, B), ct.float32))  # noqa: F821
    z = poisoned((64, 64)).partition((32, 32))
    w = poisoned((64, 128)).partition((32, 32))
    refused([z, w], ct.GridError, r"axis 1 \(y\)", lambda: two(z, w))


def test_safety_launch_grid_required():
    x = rnd(256, 23)
    refused([x], ct.GridError, "launch grid required", lambda: no_mutable(x))


def test_safety_grid_set_on_op_rejected_gives_arguments_back():
    x, y = inputs(1000)
    z = poisoned(1000).partition(128)
    op = add(z, x, y)
    assert z.is_moved
    refused([z, x, y], ct.GridError, "axis 0", lambda: op.grid((3, 1, 1)))
    z, x, y = add(z, x, y).sync()  # still usable


def test_safety_prefix_grid_must_equal_the_launch_grid():
    x = rnd((8, 64), 24)
    z = poisoned((8, 64)).partition_prefix((1,))
    refused([z, x], ct.GridError, r"launch grid \(4, 1, 1\) does not match the grid \(8, 1, 1\)",
            lambda: prefix_rows.grid((4, 1, 1))(z, x))
    refused([z, x], ct.GridError, r"launch grid \(8, 2, 1\) does not match.*axis 1 \(y\)",
            lambda: prefix_rows.grid((8, 2, 1))(z, x))


# ----------------------------------------------------------------------------- partitions

def test_safety_rank4_mutable_partition():
    t = poisoned((2, 2, 2, 16))
    refused([t], ct.PartitionError, r"rank at most 3.*rank 4", lambda: t.partition((1, 1, 1, 16)))
    p = t.partition_prefix((1, 1, 2))  # a prefix of 3 axes is fine
    assert p.grid() == (2, 2, 1)


def test_safety_out_of_range_map():
    t = poisoned((64, 64))
    p = t.partition((32, 32))
    refused([p], ct.PartitionError, r"num_tile_blocks=5 is out of range.*\(4\)", lambda: p.map(5))
    refused([p], ct.PartitionError, r"num_tile_blocks=0 is out of range", lambda: p.map(0))


def test_safety_partition_rank_must_match():
    t = poisoned((64, 64))
    refused([t], ct.PartitionError, "has rank 1 but the tensor has rank 2", lambda: t.partition(32))


def test_safety_non_power_of_two_partition():
    x, y = inputs(1000)
    z = poisoned(1000).partition(100)
    refused([z, x, y], ct.LaunchTypeError, "powers of two", lambda: add(z, x, y))


# ----------------------------------------------------------------------------- types & preconditions

def test_safety_failed_precondition_string():
    x = rnd(1000, 25)
    z = poisoned(1000).partition(128)
    refused([z, x], ct.PreconditionError, r"`dim\(x, 0\) % 64 == 0` does not hold \(dim\(x, 0\) = 1000\)",
            lambda: needs_multiple_of_64(z, x))
    x2 = rnd(1024, 26)
    z2 = poisoned(1024).partition(128)
    needs_multiple_of_64(z2, x2).sync()


def test_safety_failed_precondition_lambda():
    x = rnd(512, 27)
    z = poisoned(1024).partition(128)
    refused([z, x], ct.PreconditionError, "does not hold", lambda: needs_same_shape(z, x))


def test_safety_wrong_element_type():
    x = ct.randn(512, seed=1, dtype=ct.f16).sync()
    y = rnd(512, 28)
    z = poisoned(512).partition(128)
    refused([z, x, y], ct.LaunchTypeError, r"'x' has element type float16 but the parameter is declared float32",
            lambda: add(z, x, y))


def test_safety_wrong_rank():
    x = rnd((16, 32), 29)
    y = rnd(512, 30)
    z = poisoned(512).partition(128)
    refused([z, x, y], ct.LaunchTypeError, r"'x'.*has rank 2 but ct\.Ref\[float32, \(-1,\)\] has rank 1",
            lambda: add(z, x, y))


def test_safety_static_shape_mismatch():
    x = rnd(999, 31)
    z = poisoned(1000).partition(64)
    refused([z, x], ct.LaunchTypeError, "needs size 1000 on axis 0", lambda: static_64(z, x))


def test_safety_generic_conflict():
    x, y = inputs(512)
    z = poisoned(512).partition(128)
    refused([z, x, y], ct.LaunchTypeError, r"generic 'B' is 64 from kernel\.generics.*128",
            lambda: add.generics(B=64)(z, x, y))


def test_safety_tensor_for_mutable_parameter():
    x, y = inputs(512)
    z = poisoned(512)
    refused([z, x, y], ct.LaunchTypeError, r"'z'.*is mutable \(ct\.Mut\): pass a partition", lambda: add(z, x, y))


def test_safety_partition_for_readonly_parameter():
    x, y = inputs(512)
    z = poisoned(512).partition(128)
    xp = x.partition(128)
    refused([z, xp, y], ct.LaunchTypeError, r"'x'.*read-only \(ct\.Ref\).*not a partition", lambda: add(z, xp, y))


# ----------------------------------------------------------------------------- device operations

def test_safety_nested_sync_in_then():
    x, y = inputs(512)
    z = poisoned(512).partition(128)
    op = ct.value((z, x, y)).then(lambda args: add(*args).sync())
    refused([z, x, y], ct.NestedSyncError, r"sync\(\) called while a device operation is executing", op.sync)


def test_safety_allocating_op_in_graph_capture():
    x, y = inputs(512)
    z = poisoned(512).partition(128)
    op = add(z, x, y).then(lambda r: ct.zeros(512))
    refused([z, x, y], ct.GraphCaptureError, r"zeros\(\(512,\), float32\) cannot be recorded into a graph", op.graph)
    with pytest.raises(ct.GraphCaptureError, match="allocates"):
        ct.rand(16, seed=1).graph()


def test_safety_launch_runs_once():
    x, y = inputs(512)
    z = poisoned(512).partition(128)
    op = add(z, x, y)
    z, x, y = op.sync()
    snaps = snapshot([z, x, y])
    with pytest.raises(ct.DeviceOpError, match="a launch runs once"):
        op.sync()
    assert_untouched([z, x, y], snaps)


def test_safety_corpus_size():
    """The corpus above: at least 20 refused programs or launches."""
    names = [n for n in globals() if n.startswith("test_") and ("safety" in n or "alias" in n or "ownership" in n)]
    assert len(names) >= 20
