"""Kill tests of mutation testing's sixth pass (bench/NOTES.md, "Mutation testing (issue 9), sixth
pass"): each checks user-visible behaviour that a surviving mutant of ``safetile.safe`` changed."""
from __future__ import annotations

import os
import re
import sys
import threading

import numpy as np
import pytest

import safetile as ct
from safetile.safe.memory import REGISTRY

from attack_helpers import WAIT, Pause, add, inc, spin_write, wait_until


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs os.fork (Linux)")
@pytest.mark.parametrize("copy", [lambda v: ct.copy(v), lambda v: ct.to_device(v, "cpu")], ids=["copy", "to_device"])
def test_after_a_fork_a_copy_of_memory_a_running_launch_wrote_is_refused_by_name(copy):
    """In a forked child, memory the parent was writing when it forked has undefined contents: a
    copy of it (``ct.copy``, ``ct.to_device``) is refused as "a copy", naming the launch."""
    from test_fork import in_child
    t = ct.zeros(1024).sync()
    view = t[:]
    op = spin_write(t.partition(64), 3.0, 20000)
    runner = threading.Thread(target=op.sync, daemon=True)
    runner.start()
    wait_until(lambda: any(not e.enqueued for e in REGISTRY._entries) or not runner.is_alive(),
               "the launch claiming its memory")
    assert runner.is_alive()

    def child():
        try:
            copy(view).sync()
            return "ran"
        except ct.ForkError as e:
            return str(e)
    out = in_child(child)
    runner.join(WAIT)
    assert out.startswith("a copy is refused: this memory was being written by launch 'spin_write' (op #"), out


@ct.entry
def store_trailing(z: ct.Mut[ct.f32, (1, 8)], k: ct.Constant[int]):
    """Each block stores a (1, 4) tile of 7s at in-block tile (0, k) of its own row."""
    z.partition((1, 4)).store(ct.full((1, 4), 7.0, ct.float32), (0, k))


@pytest.mark.parametrize("k, written", [(1, slice(4, 8)), (2, None), (-1, None)])
def test_an_in_block_store_at_a_constant_index_past_a_whole_axis_writes_nothing(k, written):
    """A prefix partition's trailing axis is whole (not bounded by a block mask): a constant tile
    index past its end (here exactly the tile count, 2) writes nothing, not the next row. (The
    store's early return for such an index and the scatter's bound by the tensor agree there: the
    ``<`` of that bound as ``<=`` is an equivalent mutant, which this test does not kill.)"""
    z = ct.zeros((3, 8)).sync().partition_prefix((1,))
    z, _ = store_trailing(z, k).sync()
    want = np.zeros((3, 8), np.float32)
    if written is not None:
        want[:, written] = 7.0
    assert np.array_equal(z.unpartition().to_numpy(), want)


@ct.entry
def fill_mapped(c: ct.MappedMut[ct.f32, (16,)]):
    for idx in c.iter_indices():
        c.store(ct.full((16,), 1.0, ct.float32), idx)


def test_unmap_of_a_mapped_partition_moved_into_a_launch_is_refused_by_name():
    m = ct.zeros(64).sync().partition(16).map(2)
    op = fill_mapped(m)
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{m.label} cannot be unmapped: it was moved into "
                                                                   "launch 'fill_mapped'")):
        m.unmap()
    (m2,) = op.sync()
    assert np.array_equal(m2.unmap().unpartition().to_numpy(), np.ones(64, np.float32))


def test_map_of_a_moved_partition_is_refused_by_name():
    p = ct.zeros(64).sync().partition(16)
    m = p.map(2)
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{p.label} cannot be mapped: it was moved into "
                                                                   f"{m.label} (by .map() at ")):
        p.map(2)
    assert m.unmap() is p


@pytest.mark.parametrize("args", [(None,), (1, 2)])
def test_a_dlpack_copy_with_positional_arguments_is_refused_as_a_safetile_error(args):
    """DLPack's ``__dlpack__`` takes keyword arguments only: positional ones are refused, with a
    copy as without, in safetile's words (a TensorError, still a TypeError) and nothing exported."""
    t = ct.from_numpy(np.arange(4, dtype=np.float32)).sync()
    shown = ", ".join(map(repr, args))
    for kw in ({"copy": True}, {}):
        given = ", ".join([shown] + [f"{k}={v!r}" for k, v in kw.items()])
        with pytest.raises(ct.TensorError, match="^" + re.escape(f"{t.label} cannot be exported by DLPack with "
                                                                f"{given}: TypeError")):
            t.__dlpack__(*args, **kw)
    assert isinstance(t.shared(), ct.Shared)  # no export was left claiming the memory


def test_a_partition_kept_from_a_failed_terminal_says_how_to_get_its_tensor_back():
    """``op.partition(shape)`` inside a terminal that then fails gives the tensor back; a partition
    a ``then`` closure kept is refused as a partition, naming its tensor and ``.unpartition()``, which
    still returns that tensor."""
    kept = []

    def keep(p):
        kept.append(p)
        return p

    def fail(_):
        raise ValueError("the chain fails after the partition")
    x = ct.zeros(64).sync()
    with pytest.raises(ValueError, match="the chain fails"):
        ct.value(x).partition(16).then(keep).then(fail).sync()
    (p,) = kept
    said = (f"{p.label} cannot be inspected: it was moved into its {x.label}, given back by a failed terminal "
            "(.unpartition() returns it)")
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(said) + "$"):
        p.grid()
    assert p.unpartition() is x and np.array_equal(x.to_numpy(), np.zeros(64, np.float32))


@ct.entry
def bump_rows(c: ct.MappedMut[ct.f32, (1, 8)]):
    for idx in c.iter_indices():
        c.store(c.load(idx) + 1.0, idx)


def test_a_mapped_prefix_partition_loads_and_stores_whole_rows():
    """A mapped prefix partition's index names the partitioned axes only; its trailing axis is
    whole: every block reads and writes its rows from their first element."""
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    m = ct.from_numpy(a).sync().partition_prefix((1,)).map(2)
    (m,) = bump_rows(m).sync()
    assert np.array_equal(m.unmap().unpartition().to_numpy(), a + 1.0)


def test_a_cuda_device_without_any_gpu_says_why_and_names_only_the_cpu(monkeypatch):
    """With no GPU (faked here, so that a GPU machine checks it too) a CUDA device is refused with
    the likely reasons, offering only 'cpu'."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: False)
    with pytest.raises(ct.TensorError, match="^" + re.escape("device 'cuda:0' is not available: this process sees 0 "
                                                             "CUDA GPU(s) (no GPU, or torch built without CUDA); use "
                                                             "'cpu'") + "$"):
        ct.zeros(4, device="cuda")


@pytest.mark.parametrize("make", [lambda t: t, lambda t: t.shared()], ids=["Tensor", "Shared"])
def test_the_array_protocol_converts_to_the_dtype_asked_for(make):
    """``__array__(dtype)`` (NumPy's protocol, which libraries call directly) returns a host copy
    of that element type, not one NumPy would have to convert afterwards."""
    v = make(ct.from_numpy(np.arange(4, dtype=np.float32) + 0.5).sync())
    a = v.__array__(np.float64)
    assert a.dtype == np.float64 and np.array_equal(a, np.arange(4) + 0.5)
    assert v.__array__().dtype == np.float32


def test_a_memcpy_that_ran_says_it_is_done_and_runs_no_more():
    dst = ct.zeros(8).sync()
    op = ct.memcpy(dst, np.arange(8, dtype=np.float32))
    assert op.sync() is dst
    with pytest.raises(ct.DeviceOpError, match=r"^" + re.escape(op.label) + r" cannot be cancelled: it is done$"):
        op.cancel()
    assert np.array_equal(dst.to_numpy(), np.arange(8, dtype=np.float32))


def test_a_memcpy_destination_stays_the_chains_until_its_terminal_ends():
    """A memcpy inside a chain gives its destination back to the chain, not to everyone: until the
    terminal ends, another thread's use of it is refused, naming the terminal."""
    dst = ct.zeros(8).sync()
    pause = Pause()
    op = ct.memcpy(dst, np.ones(8, np.float32)).then(pause)
    fut = ct.Stream("cpu").submit(op.sync)
    try:
        assert pause.entered.wait(WAIT)
        with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(
                f"{dst.label} cannot be read: it is in use by a running sync(), which has not finished")):
            dst.to_numpy()
    finally:
        pause.go.set()
    assert fut.result(WAIT) is dst and np.array_equal(dst.to_numpy(), np.ones(8, np.float32))


def test_a_mapped_partition_of_an_ended_borrow_is_refused_by_name():
    t = ct.zeros(64).sync()
    with ct.borrow_mut(t) as b:
        m = b.partition(16).map(2)
    with pytest.raises(ct.OwnershipError, match="^" + re.escape(f"{m.label} cannot be inspected: its partition was "
                                                                "released (its borrow ended)") + "$"):
        m.grid()
    assert not t.to_numpy().any()  # the tensor itself is usable again


def test_a_replay_of_a_launch_over_a_reallocated_raw_torch_argument_is_refused_by_name():
    """A graph holds the raw torch tensors it was captured with by their memory: a replay after
    one was reallocated (``resize_``) is refused naming that argument, and runs nothing."""
    torch = pytest.importorskip("torch")
    x = torch.arange(16, dtype=torch.float32)
    z = ct.zeros(16).sync().partition(16)
    g = add(z, x).graph()
    x.resize_(1 << 20)
    with pytest.raises(ct.GraphCaptureError, match=re.escape("launch 'add' (op #") + r".*" + re.escape(
            "argument 'x': its torch storage was reallocated (resize_) since the capture")):
        g.launch()
    assert g.replays == 0


@pytest.mark.parametrize("kind, says", [
    ("nested", "a torch tensor nested is not plain strided memory"),
    ("sparse", "a torch tensor with layout torch.sparse_coo is not plain strided memory"),
    ("quantized", "a torch tensor quantized is not plain strided memory"),
])
def test_torch_tensors_that_are_not_strided_memory_are_refused_naming_their_kind(kind, says):
    torch = pytest.importorskip("torch")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's prototype and deprecation notices
        x = {"nested": lambda: torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)]),
             "sparse": lambda: torch.zeros(4).to_sparse(),
             "quantized": lambda: torch.quantize_per_tensor(torch.zeros(4), 0.1, 0, torch.qint8)}[kind]()
    with pytest.raises(ct.TensorError, match="^" + re.escape(f"Tensor: {says}; safetile tensors wrap strided memory")):
        ct.from_dlpack(x)


@ct.entry
def put_first(z: ct.Mut[ct.f32, (4,)], c: ct.Constant[tuple]):
    z.store(ct.full((4,), c[0], ct.float32))


def test_launches_with_different_tuple_constants_run_each_its_own_constant():
    """A tuple Constant compiles into the kernel: a second launch with another tuple is not the
    first one's cached plan."""
    z = ct.zeros(4).sync().partition(4)
    for c in ((2,), (3,), (2,)):
        z, _ = put_first(z, c).sync()
        assert np.array_equal(z.to_numpy(), np.full(4, c[0], np.float32)), c


def test_a_launch_with_too_few_arguments_names_the_parameters():
    z = ct.zeros(4).sync().partition(4)
    with pytest.raises(ct.LaunchTypeError, match="^" + re.escape("kernel 'put_first' takes 2 argument(s) (z, c), "
                                                                 "got 1")):
        put_first(z)
    assert not z.is_moved


def test_a_host_read_waits_for_a_running_launch_while_other_work_is_in_flight():
    """With another terminal's work in flight (paused in its chain, on other memory), a launch
    writing ``t`` still registers as being submitted: a host read of ``t`` meanwhile waits for it
    and sees the finished result (test_mutation_kills_gaps checks the same with nothing else in flight)."""
    other = ct.zeros(16).sync().partition(16)
    pause = Pause()
    busy = ct.Stream("cpu").submit(inc(other).then(pause).sync)
    try:
        assert pause.entered.wait(WAIT)
        t = ct.zeros(1024).sync()
        view = t[:]
        runner = threading.Thread(target=lambda: spin_write(t.partition(64), 3.0, 10000).sync(), daemon=True)
        runner.start()
        wait_until(lambda: any(not e.enqueued for e in REGISTRY._entries) or not runner.is_alive(),
                   "the launch claiming its memory")
        assert runner.is_alive(), "the launch ran without ever being seen as running"
        seen = view.to_numpy()
        runner.join(WAIT)
        assert np.array_equal(seen, np.full(1024, 3.0, np.float32)), "a host read saw a launch half-way"
    finally:
        pause.go.set()
    (out,) = busy.result(WAIT)
    assert np.array_equal(out.to_numpy(), np.ones(16, np.float32))


def test_the_default_pool_of_a_torch_device_is_that_devices():
    """``ct.default_pool`` takes a torch.device as it takes a name: the CPU's is the CPU pool; a
    CUDA device's is that device's pool, or refused when there is no GPU (rather than answered
    with another device's pool)."""
    torch = pytest.importorskip("torch")
    assert ct.default_pool(torch.device("cpu")) is ct.default_pool("cpu")
    if torch.cuda.is_available():
        assert ct.default_pool(torch.device("cuda", 0)) is ct.default_pool("cuda:0")
        return
    with pytest.raises(ct.TensorError, match="^" + re.escape("device 'cuda:0' is not available: this process sees 0 "
                                                             "CUDA GPU(s)")):
        ct.default_pool(torch.device("cuda", 0))


# ----------------------------------------------------------------------------------------------
# Written after the held-out run `mut8-final`, for its survivors: training for the next pass, not
# part of that measurement (bench/NOTES.md, "sixth pass").


@pytest.mark.parametrize("value, dtype", [(float("nan"), ct.float32), (float("-inf"), ct.float64),
                                          (np.float32("inf"), ct.float16)])
def test_a_float_tensor_can_be_filled_with_a_non_finite_value(value, dtype):
    a = ct.full(3, value, dtype=dtype).sync().to_numpy()
    assert np.array_equal(a, np.full(3, value, a.dtype), equal_nan=True)


def test_a_copy_of_an_unwrapped_shared_handle_is_refused_by_name():
    s = ct.zeros(4).sync().shared()
    t = s.try_unwrap()
    with pytest.raises(ct.OwnershipError, match="^" + re.escape(f"{s.label} cannot be copied: it was unwrapped at ")):
        ct.copy(s)
    assert not t.to_numpy().any()


def test_a_shared_handle_a_closed_graph_held_unwraps():
    """A graph holds a Shared it reads until it is closed; then ``try_unwrap`` gives the tensor back."""
    x = ct.from_numpy(np.arange(16, dtype=np.float32)).sync()
    s = x.shared()
    g = add(ct.zeros(16).sync().partition(16), s).graph()
    (z, _) = g.launch()
    with pytest.raises(ct.OwnershipError, match=re.escape(f"{s.label} is still held by 1 launch(es) or live graph(s)")):
        s.try_unwrap()
    g.close()
    assert s.try_unwrap() is x
    assert np.array_equal(z.to_numpy(), np.arange(16, dtype=np.float32))


def test_an_entry_kernel_keeps_its_functions_names():
    @ct.entry
    def local_kernel(z: ct.Mut[ct.f32, (4,)]):
        z.store(z.load())
    assert local_kernel.__name__ == "local_kernel"
    assert local_kernel.__qualname__.endswith("test_an_entry_kernel_keeps_its_functions_names.<locals>.local_kernel")


def test_an_element_type_a_tensor_cannot_hold_is_refused_in_full():
    said = "a safetile Tensor cannot hold complex64 elements (it holds booleans, integers and floating-point numbers)"
    with pytest.raises(ct.DTypeError, match="^" + re.escape(said) + "$"):
        ct.from_dlpack(np.zeros(2, np.complex64))


@ct.entry
def copy_across(a: ct.Mut[ct.f32, (4,)], b: ct.Mut[ct.f32, (4,)]):
    a.store(b.load())


def test_a_grid_mismatch_names_the_kernel():
    a, b = ct.zeros(8).sync().partition(4), ct.zeros(12).sync().partition(4)
    said = ("kernel 'copy_across': grid mismatch on axis 0 (x): the partition of 'b' has 3 blocks but the partition "
            "of 'a' has 2")
    with pytest.raises(ct.GridError, match="^" + re.escape(said)):
        copy_across(a, b)
    assert not a.is_moved and not b.is_moved


def test_a_partition_given_back_by_a_failed_shared_terminal_says_how_to_get_its_tensor_back():
    """``op.shared()`` gives a partition's tensor back first; when the terminal then fails, the
    partition is refused as a partition, naming its tensor and ``.unpartition()``."""
    t = ct.zeros(64).sync()
    p = t.partition(16)

    def fail(_):
        raise ValueError("the chain fails after the share")
    with pytest.raises(ValueError, match="the chain fails"):
        ct.value(p).shared().then(fail).sync()
    said = f"{p.label} cannot be inspected: it was moved into its {t.label}, given back by a failed terminal " \
           "(.unpartition() returns it)"
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(said) + "$"):
        p.grid()
    assert p.unpartition() is t and not t.to_numpy().any()
