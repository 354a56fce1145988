"""Kill tests of the fifth mutation pass (bench/NOTES.md, "Mutation testing (issue 9), fifth
pass"): factories, graph, memory and streams trained as whole modules, then partition, launch,
entry and tensor. Each asserts what a user sees (a result, a message, a refusal, a state),
never the text of a mutant."""
from __future__ import annotations

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
