"""Kill tests of the fifth mutation pass (bench/NOTES.md, "Mutation testing (issue 9), fifth
pass"): factories, graph, memory and streams trained as whole modules, then partition, launch,
entry and tensor. Each asserts what a user sees (a result, a message, a refusal, a state),
never the text of a mutant."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import safetile as ct

from attack_helpers import rnd

torch = pytest.importorskip("torch")


# ----------------------------------------------------------------------------- factories


class OutOfMemoryError(RuntimeError):
    """What torch's CUDA allocator raises (matched by class name: torch.cuda.OutOfMemoryError)."""


@pytest.mark.parametrize("error, refused_as", [(OutOfMemoryError("simulated: CUDA out of memory"), ct.AllocationError),
                                               (RuntimeError("simulated: another failure"), RuntimeError)])
def test_an_allocator_out_of_memory_error_is_an_allocation_error_and_nothing_else_is(monkeypatch, error, refused_as):
    """A factory whose allocation raises torch's out-of-memory error (by its class name) fails with
    an AllocationError naming the op and the device; any other RuntimeError passes through as is."""
    def failing(shape, dtype):
        raise error
    monkeypatch.setattr(np, "ones", failing)
    op = ct.ones((3, 5), ct.f16)
    with pytest.raises(refused_as) as e:
        op.sync()
    if refused_as is ct.AllocationError:
        assert str(e.value).startswith("ones((3, 5), float16): could not allocate the tensor on cpu: simulated")
    else:
        assert e.value is error


def test_a_memcpy_into_a_large_two_dimensional_tensor_is_not_an_alias():
    """A contiguous 2-d destination past the exact-comparison limit (4 MiB) has distinct elements
    by its strides alone: the copy is made, bit for bit."""
    rows, cols = 1100, 1024  # 4.5 MB of float32
    src = np.random.default_rng(7).standard_normal((rows, cols)).astype(np.float32)
    dst = ct.zeros((rows, cols)).sync()
    out = ct.memcpy(dst, ct.from_numpy(src).sync()).sync()
    assert np.array_equal(out.to_numpy(), src)
    dst3 = ct.zeros((11, 100, 1024)).sync()  # and with three axes
    src3 = src.reshape(-1)[:11 * 100 * 1024].reshape(11, 100, 1024)
    assert np.array_equal(ct.memcpy(dst3, src3).sync().to_numpy(), src3)


def test_a_memcpy_into_memory_a_shared_handle_reads_is_refused_by_name():
    """Two tensors over one array: while one is Shared, a memcpy into the other is refused when
    built, the refusal naming the memcpy and the shared holder; the destination stays usable."""
    a = np.zeros(8, np.float32)
    t1, t2 = ct.from_dlpack(a), ct.from_dlpack(a)
    s = t1.shared()
    src = np.random.default_rng(5).standard_normal(8).astype(np.float32)
    with pytest.raises(ct.AliasError) as e:
        ct.memcpy(t2, src)
    assert str(e.value).startswith(f"memcpy into {t2.label} is refused: its memory overlaps memory held by shared ")
    assert "read-only shared memory" in str(e.value)
    del s
    assert np.array_equal(ct.memcpy(t2, src).sync().to_numpy(), src)


# ----------------------------------------------------------------------------- graphs


def test_a_graph_whose_replays_would_write_shared_memory_is_refused_by_name():
    """A graph scope that recorded a copy into memory another tensor then shared cannot make its
    graph: the refusal says capturing is refused and names the shared holder; nothing was written."""
    a = np.zeros(8, np.float32)
    t1, t2 = ct.from_dlpack(a), ct.from_dlpack(a)
    src = np.random.default_rng(6).standard_normal(8).astype(np.float32)
    with pytest.raises(ct.AliasError) as e:
        with ct.graph_scope() as g:
            g.record(ct.memcpy(t2, src))
            s = t1.shared()
    assert str(e.value).startswith("capturing the graph is refused: its memory overlaps memory held by shared ")
    assert g.graph is None and not a.any()
    del s


def test_a_graph_scope_opened_inside_a_running_operation_is_refused_by_name():
    """``ct.graph_scope()`` entered from a host closure of a running chain is a nested terminal,
    refused with its own name."""
    def inner(v):
        with ct.graph_scope():
            pass
    with pytest.raises(ct.NestedSyncError, match=r"^graph_scope\(\) called while a device operation is executing"):
        ct.value(1).then(inner).sync()


def test_a_graph_scope_never_swallows_an_exception():
    """An exception raised in the body of a graph scope propagates, and no graph is made."""
    x = rnd(8, seed=3)
    with pytest.raises(KeyError, match="from the body"):
        with ct.graph_scope() as g:
            g.record(ct.value(x))
            raise KeyError("from the body")
    assert g.graph is None
    assert np.array_equal(x.to_numpy(), rnd(8, seed=3).to_numpy())  # given back, unchanged


# ----------------------------------------------------------------------------- streams


def test_a_cpu_stream_has_no_cuda_stream_and_a_pool_has_four_by_default():
    """A CPU stream carries no torch stream, no raw handle and device index -1 (what the launcher
    reads for "the CPU"); a pool made without a size has 4 streams, handed out round robin."""
    s = ct.Stream()
    assert (s.device, s.is_cuda, s.torch_stream, s.handle, s.device_index) == ("cpu", False, None, 0, -1)
    with s.context() as c:
        assert c is None
    pool = ct.StreamPool("cpu")
    assert pool.device == "cpu" and len(pool.streams) == 4 and len({id(x) for x in pool.streams}) == 4
    assert [pool.next() for _ in range(8)] == pool.streams * 2


@pytest.mark.parametrize("how", ["op.graph()", "Graph.capture", "g.update"])
def test_capturing_a_graph_inside_a_running_operation_is_refused_by_name(how):
    """Capturing (``op.graph()``, ``ct.Graph.capture(op)``, ``g.update(op)``) from a host closure of
    a running chain is a nested terminal, refused as ``graph()``; the op to capture is abandoned."""
    x = rnd(8, seed=21)
    g = ct.value(x).graph()
    inner_op = ct.value(2)
    capture = {"op.graph()": lambda: inner_op.graph(), "Graph.capture": lambda: ct.Graph.capture(inner_op),
               "g.update": lambda: g.update(inner_op)}[how]
    with pytest.raises(ct.NestedSyncError, match=r"^graph\(\) called while a device operation is executing"):
        ct.value(1).then(lambda v: capture()).sync()
    with pytest.raises(ct.NestedSyncError, match=r"^Graph\.launch\(\) called while a device operation is executing"):
        ct.value(1).then(lambda v: g.launch()).sync()
    assert g.launch() is x


def test_a_graph_updated_from_a_new_op_replays_the_new_work():
    """``g.update(op)`` captures ``op`` in place of the old work: replays then run the new op and
    return its value; the old capture's values are free again."""
    a, b = rnd(16, seed=31), rnd(16, seed=32)
    src_a = np.random.default_rng(33).standard_normal(16).astype(np.float32)
    src_b = np.random.default_rng(34).standard_normal(16).astype(np.float32)
    g = ct.memcpy(a, src_a).graph()
    assert g.launch() is a and np.array_equal(a.to_numpy(), src_a)
    assert g.update(ct.memcpy(b, src_b)) is g
    assert g.launch() is b and np.array_equal(b.to_numpy(), src_b)
    assert g.num_ops == 1 and g.replays == 1
    src_a[:] = 0
    assert np.array_equal(a.to_numpy(), np.random.default_rng(33).standard_normal(16).astype(np.float32))
    assert np.array_equal(ct.memcpy(a, src_a).sync().to_numpy(), src_a)  # a was given back


def test_a_replay_whose_torch_source_was_reallocated_names_the_argument_and_the_capture():
    """A graph copying from a raw torch tensor refuses a replay once the tensor's storage was
    reallocated: the refusal names the copy, its argument ``src`` and "since the capture"."""
    dst = ct.zeros(8).sync()
    src = torch.arange(8, dtype=torch.float32)
    g = ct.memcpy(dst, src).graph()
    src.resize_(1 << 20)  # beyond the storage: torch moves it
    with pytest.raises(ct.GraphCaptureError) as e:
        g.launch()
    assert str(e.value).startswith(f"{g.label}: memcpy into {dst.label}: argument 'src': its torch storage was "
                                   "reallocated (resize_) since the capture, so the memory")
    assert not dst.to_numpy().any() and g.replays == 0


def test_a_memcpy_that_failed_when_run_says_so_and_runs_no_more():
    """A memcpy refused when it runs (its torch source was reallocated since it was built) is
    failed: it cannot be cancelled or run again, each refusal saying it is failed; the
    destination was given back untouched."""
    dst = ct.zeros(8).sync()
    src = torch.arange(8, dtype=torch.float32)
    op = ct.memcpy(dst, src)
    src.resize_(1 << 20)
    with pytest.raises(ct.AliasError, match=r"^memcpy: argument 'src': its torch storage was reallocated"):
        op.sync()
    with pytest.raises(ct.DeviceOpError, match=r"cannot be cancelled: it is failed$"):
        op.cancel()
    with pytest.raises(ct.DeviceOpError, match=r"is failed; a copy runs once$"):
        op._run(None)
    assert not dst.to_numpy().any()


def test_a_replay_takes_a_tensor_it_only_reads_and_refuses_while_it_is_elsewhere():
    """A graph copying from a safetile tensor holds that source for each replay, though the graph's
    value is only the destination: a replay while the source is partitioned (moved) is refused
    naming it, and once it is back the replay copies its current contents."""
    dst = ct.zeros(8).sync()
    data = np.random.default_rng(41).standard_normal(8).astype(np.float32)
    src = ct.from_numpy(data).sync()
    g = ct.memcpy(dst, src).graph()
    assert np.array_equal(g.launch().to_numpy(), data)
    p = src.partition(4)
    with pytest.raises(ct.OwnershipError, match="used by a replay of"):
        g.launch()
    assert g.replays == 1
    src = p.unpartition()
    assert np.array_equal(g.launch().to_numpy(), data)


@pytest.mark.parametrize("src, message", [
    ("text", "memcpy: cannot copy from str"), ([1.0] * 8, "memcpy: cannot copy from list"),
])
def test_a_memcpy_from_what_is_no_array_is_refused_naming_memcpy(src, message):
    """A memcpy source that is neither a safetile value nor a NumPy/torch array is refused when the
    copy is built, naming ``memcpy`` and the type; the destination stays usable."""
    dst = rnd(8, seed=51)
    before = dst.to_numpy()
    with pytest.raises(ct.TensorError, match="^" + message + "$"):
        ct.memcpy(dst, src)
    assert np.array_equal(dst.to_numpy(), before)


def test_a_memcpy_from_a_moved_tensor_names_the_copy():
    """A memcpy from a tensor that was partitioned (moved) is refused: the message says it cannot
    be copied and where it went."""
    src = rnd(8, seed=52)
    p = src.partition(4)
    with pytest.raises(ct.OwnershipError, match="cannot be copied"):
        ct.memcpy(ct.zeros(8).sync(), src)
    assert p.unpartition() is not None


# ----------------------------------------------------------------------------- partitions and scalars


@ct.entry
def _put(z: ct.Mut[ct.i64, "B"], v: "E"):  # noqa: F821, UP037 - E: an element-type generic
    z.store(ct.zeros((B,), ct.int64) + v)  # noqa: F821 - B is the generic bound by z


@pytest.mark.parametrize("v", [2**31 - 1, 2**31, -2**31, -2**31 - 1])
def test_an_int_scalar_at_the_int32_edge_keeps_its_value(v):
    """A Python int generic scalar is int32 only when it fits (-2**31 <= v < 2**31): the values
    on each side of both edges arrive exactly, also after the other side compiled first."""
    z = ct.zeros(8, dtype=ct.i64).sync().partition(4)
    for w in (v, 5, v):
        z, _ = _put(z, w).sync()
        assert (z.to_numpy() == w).all(), (v, w)


def test_a_consumed_partition_names_the_line_that_unpartitioned_it():
    """Using a partition after ``.unpartition()`` is refused, naming the file and line of that call."""
    p = rnd(8, seed=61).partition(4)
    t = p.unpartition(); line = sys._getframe().f_lineno  # noqa: E702 - the line of the call
    with pytest.raises(ct.OwnershipError) as e:
        p.to_numpy()
    assert f"the tensor returned by .unpartition() at test_mutation_kills_fifth.py:{line}" in str(e.value)
    assert t.to_numpy().shape == (8,)


# ----------------------------------------------------------------------------- factories, more


def test_seeds_cover_exactly_the_unsigned_64_bit_range_and_follow_numpy_on_the_cpu():
    """A seed is an integer in [0, 2**64): both ends of the range are taken, one past is refused;
    on the CPU ``rand``/``randn`` draw NumPy's generator for that seed (same numbers)."""
    for seed in (0, 2**64 - 1, 12345):
        r = ct.rand((3, 5), seed=seed).sync().to_numpy()
        assert np.array_equal(r, np.random.default_rng(seed).random((3, 5), dtype=np.float64).astype(np.float32))
        n = ct.randn(7, seed=seed, dtype=ct.f64).sync().to_numpy()
        assert np.array_equal(n, np.random.default_rng(seed).standard_normal(7))
    with pytest.raises(ct.TensorError,
                       match=r"seed must be None or an integer in \[0, 2\*\*64\), got 18446744073709551616"):
        ct.rand(4, seed=2**64)


def test_copy_of_a_numpy_array_is_a_new_cpu_tensor():
    """``ct.copy`` of a raw NumPy array makes a CPU tensor with a copy of its contents (changing
    the array afterwards changes nothing)."""
    a = np.random.default_rng(71).standard_normal((4, 6)).astype(np.float32)
    want = a.copy()
    t = ct.copy(a).sync()
    a[:] = 0
    assert t.device == "cpu" and np.array_equal(t.to_numpy(), want)


def _strided(shape, strides_in_elements, dtype=np.uint8):
    """A writable view of fresh memory with the given layout (strides in elements)."""
    item = np.dtype(dtype).itemsize
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides_in_elements))
    base = np.zeros(span, dtype)
    return np.lib.stride_tricks.as_strided(base, shape, tuple(s * item for s in strides_in_elements))


@pytest.mark.parametrize("layout", ["interleaved, exactly 4 MiB", "a size-1 axis of stride 0, past 4 MiB"])
def test_distinct_elements_are_counted_exactly_up_to_and_at_the_limit(layout):
    """A destination whose layout the stride test cannot clear but whose elements are distinct is
    accepted when its bytes are at most the exact-comparison limit (4 MiB, inclusive); an axis of
    one element never makes a layout overlap, whatever its stride."""
    if layout.startswith("interleaved"):
        # blocks of 4x2 elements at strides (2, 3): addresses 0,3,2,5,4,7,6,9, all distinct, and
        # the sorted-stride test fails (3 < 7); 2**19 blocks of 8 bytes: exactly 4 MiB
        dst = _strided((2**19, 4, 2), (10, 2, 3))
    else:
        dst = _strided((1, 1100, 1024), (0, 1024, 1), np.float32)
    t = ct.from_dlpack(dst)
    src = np.random.default_rng(73).integers(0, 100, dst.shape).astype(dst.dtype)
    out = ct.memcpy(t, src).sync()
    assert np.array_equal(out.to_numpy(), src)


# ----------------------------------------------------------------------------- the in-flight registry


def test_the_registry_forgets_only_the_latest_entry_and_a_reclaim_marks_it_submitting():
    """Removing the latest of two entries leaves the other registered; an entry claiming its
    memory again for the same plan (a chain's next launch) is marked "being submitted" again until
    ``set_enqueued``, so other claimants wait for it meanwhile."""
    from safetile.safe.memory import InFlight, Registry, extent_of
    reg = Registry()
    a, b = np.zeros(8, np.float32), np.zeros(8, np.float32)
    e1, e2 = InFlight("first", None), InFlight("second", None)
    k1, k2 = object(), object()
    reg.claim(e1, k1, [extent_of(a)], [])
    e1.set_enqueued()
    reg.claim(e2, k2, [extent_of(b)], [])
    e2.set_enqueued()
    assert reg._entries == (e1, e2)
    reg.remove(e2)
    assert reg._entries == (e1,) and e2.done and not e1.done
    assert e1.enqueued
    reg.claim(e1, k1, [extent_of(a)], [])  # the same plan again: the shortcut
    assert reg._entries == (e1,) and not e1.enqueued and not e1.submitted()
    e1.set_enqueued()
    assert e1.submitted()
    reg.remove(e1)
    assert reg._entries == ()


# ----------------------------------------------------------------------------- after the held-out sample mut7-final
# (written for its survivors: training for a later sample, not part of its score)


@pytest.mark.parametrize("make", [
    lambda d: ct.rand(4, seed=1, device=d), lambda d: ct.randn(4, seed=1, device=d),
    lambda d: ct.from_numpy(np.zeros(3, np.float32), device=d), lambda d: ct.tensor([1.0, 2.0], device=d),
])
def test_a_factory_checks_the_device_it_is_given(make):
    """The device given to ``rand``/``randn``/``from_numpy`` is checked when the op is built (an
    unknown name is refused by name), and a valid one is where the tensor is made."""
    with pytest.raises(ct.TensorError, match=r"^unknown device 'tpu'; use 'cpu' or 'cuda' / 'cuda:N'$"):
        make("tpu")
    assert make("cpu").sync().device == "cpu"


def test_wrapping_a_tensor_again_takes_the_new_name():
    """``ct.from_dlpack(t, name=...)`` of a safetile tensor is a tensor of that name over the same memory."""
    t = rnd(4, seed=81)
    w = ct.from_dlpack(t, name="again")
    assert w.label.startswith("tensor 'again'")
    assert np.array_equal(w.to_numpy(), t.to_numpy())


@pytest.mark.parametrize("make, says", [
    (lambda: torch.zeros(2, device="meta"), "a torch tensor on the meta device (no data) is not plain strided"),
    (lambda: torch.zeros(2)._neg_view(), "lazy negative bit set (its memory does not hold the values it shows); "
                                         "materialise it first with .resolve_neg()"),
    (lambda: torch.zeros(2, dtype=torch.complex64).conj(),
     "lazy conjugate bit set (its memory does not hold the values it shows); "
     "materialise it first with .resolve_conj()"),
])
def test_torch_tensors_without_plain_memory_are_refused_saying_why(make, says):
    with pytest.raises(ct.TensorError) as e:
        ct.from_dlpack(make())
    assert says in str(e.value)


@ct.entry
def _add_one(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):  # noqa: F821, UP037 - B: a generic
    z.store(ct.load_tile_like(x, z) + 1.0)


def test_a_graph_scope_whose_shared_input_was_unwrapped_is_refused_by_name():
    """A graph scope that recorded a launch reading a Shared value, unwrapped before the scope
    ends, makes no graph: the refusal says the shared value cannot be held by a graph and where
    it was unwrapped."""
    data = np.random.default_rng(91).standard_normal(8).astype(np.float32)
    z = ct.zeros(8).sync().partition(4)
    s = ct.from_numpy(data).sync().shared()
    with pytest.raises(ct.OwnershipError) as e:
        with ct.graph_scope() as g:
            z, s = g.record(_add_one(z, s))
            t = s.try_unwrap(); line = sys._getframe().f_lineno  # noqa: E702 - the line of the unwrap
    assert str(e.value).startswith(f"{s.label} cannot be held by a graph: it was unwrapped at "
                                   f"test_mutation_kills_fifth.py:{line}")
    assert g.graph is None and np.array_equal(t.to_numpy(), data)


@ct.entry
def _store_wrong_shape(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):  # noqa: F821, UP037
    z.store(ct.full((2,), 1.0, ct.float32))


@ct.entry
def _store_wrong_dtype(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):  # noqa: F821, UP037
    z.store(ct.load_tile_like(x, z).astype(ct.float16))


@pytest.mark.parametrize("kernel, message", [
    (_store_wrong_shape, "z.store: 'z' is a sub-tensor of shape (4,); a store writes it whole, so the tile must "
                         "have that shape, got (2,)"),
    (_store_wrong_dtype, "z.store: tile dtype float16 does not match 'z' (float32); convert it with "
                         ".astype(ct.float32)"),
])
def test_a_store_of_the_wrong_tile_names_the_parameter(kernel, message):
    """Storing a tile of another shape or element type into a ``ct.Mut`` parameter is refused when
    the kernel compiles, naming the parameter; nothing is written."""
    z = ct.zeros(8).sync().partition(4)
    x = rnd(8, seed=92)
    with pytest.raises((ct.TileSafetyError, ct.TileTypeError)) as e:
        kernel(z, x).sync()
    assert message in str(e.value)
