"""Kill tests of the third mutation pass (bench/NOTES.md, "Mutation testing (issue 9), third
pass"): behaviours a sampled mutmut run showed no test pinned. Each asserts what a user sees
(a message, a result, a refusal), never the text of a mutant."""
from __future__ import annotations

import asyncio
import os
import re
import sys
import threading

import numpy as np
import pytest

import safetile as ct

from attack_helpers import add, inc, poisoned, refused, rnd, spin_write
from safetile.safe.memory import REGISTRY, InFlight


@ct.entry
def ref_partition_of_three(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(x.partition((3,)).load((ct.bid(0),)))


@ct.entry
def mut_partition_of_three(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.partition((3,)).store(ct.full((3,), 1.0, ct.float32), (0,))


@pytest.mark.parametrize("kernel", [ref_partition_of_three, mut_partition_of_three], ids=["Ref", "Mut"])
def test_an_in_kernel_partition_shape_that_is_no_tile_shape_is_named(kernel):
    """A partition taken inside a kernel needs a tile shape (powers of two): the error says it is
    the partition shape that is wrong, at the user's line."""
    z, x = poisoned(16).partition(16), rnd(16, seed=1)
    e = refused([z, x], lambda: kernel(z, x), ct.TileTypeError,
                re.escape("tile dimensions must be powers of two, got partition shape (3,)"))
    assert e.loc is not None and e.loc.filename.endswith("test_mutation_kills_gaps.py")


WAIT = 10  # seconds: an upper bound for events that come at once; never reached when the code is right


class Pause:
    """A ``then`` closure that stops its chain until ``go`` is set (``entered``: it is stopped there)."""

    def __init__(self):
        self.entered, self.go = threading.Event(), threading.Event()

    def __call__(self, value):
        self.entered.set()
        assert self.go.wait(WAIT)
        return value


@pytest.mark.parametrize("how", [ct.copy, lambda x: ct.to_device(x, "cpu")], ids=["copy", "to_device"])
def test_a_copy_only_reads_its_source(how):
    """A copy reads its source: work that only reads the same memory and is still being submitted
    (on the CPU: running) does not hold it up, as readers never wait for readers. The work is an
    in-flight entry of the runtime's registry held at "submitting" by the test."""
    x = rnd(64, seed=5)
    entry = InFlight("a test launch", None)
    REGISTRY.claim(entry, entry, [], [x._extent()])  # reads x, submitting until set_enqueued
    copied, op = [], how(x)
    copier = threading.Thread(target=lambda: copied.append(op.sync().to_numpy()), daemon=True)
    copier.start()
    copier.join(3)
    finished_beside_the_reader = not copier.is_alive()
    entry.set_enqueued()
    REGISTRY.remove(entry)
    copier.join(WAIT)
    assert finished_beside_the_reader, "a copy waited for work that only reads its source"
    assert np.array_equal(copied[0], x.to_numpy())


def test_reshape_refuses_sizes_that_are_not_integers():
    t = ct.zeros(16).sync().named("r")
    for shape in ((2.0, 8), (2, "8"), (True, 16)):
        with pytest.raises(ct.TensorError, match=re.escape(f"reshape of tensor 'r': a shape is sizes (and at most "
                                                           f"one -1), got {shape!r}")):
            t.reshape(*shape)
    assert t.reshape(np.int64(2), 8).shape == (2, 8)


def test_await_inside_a_running_chain_is_refused_by_name():
    """``await op`` inside a ``then`` closure would wait for the chain it runs in: refused, naming
    ``await``, and the chain goes on."""
    z = ct.zeros(16).sync().partition(16)
    inner = ct.value(1)

    async def wait_for_inner():
        return await inner

    def nested(value):
        with pytest.raises(ct.NestedSyncError, match=r"^await called while a device operation is executing"):
            asyncio.run(wait_for_inner())
        return value
    (out,) = inc(z).then(nested).sync()
    assert np.array_equal(out.unpartition().to_numpy(), np.ones(16, np.float32))


def test_a_dtype_generic_bound_twice_names_both_element_types():
    @ct.entry
    def two(z: ct.Mut["T", "B"], x: ct.Ref["T", -1]):  # noqa: F821
        z.store(ct.load_tile_like(x, z))
    z, x = poisoned(16).partition(16), ct.zeros(16, dtype=ct.int32).sync()
    refused([z, x], lambda: two(z, x), ct.LaunchTypeError,
            re.escape("kernel 'two': generic 'T' is float32 from argument 'z' but int32 from argument 'x'"))


@pytest.mark.parametrize("how", [ct.copy, lambda x: ct.to_device(x, "cpu")], ids=["copy", "to_device"])
def test_a_copy_waits_for_work_being_submitted_on_its_source(how):
    """The reverse of the test above: while work writing the memory is being submitted (on the
    CPU: running), a copy of it waits, and then sees what was written. The work is an in-flight
    entry of the runtime's registry held at "submitting" by the test."""
    t = ct.zeros(64).sync()
    entry = InFlight("a test launch", None)
    REGISTRY.claim(entry, entry, [t._extent()], [])  # registered, and submitting until set_enqueued
    copied, op = [], how(t)
    copier = threading.Thread(target=lambda: copied.append(op.sync().to_numpy()), daemon=True)
    copier.start()
    copier.join(1.0)
    waited = copier.is_alive()
    np.asarray(t._data)[:] = 5.0  # what the work wrote
    entry.set_enqueued()
    REGISTRY.remove(entry)
    copier.join(WAIT)
    assert waited, "a copy ran while work writing its source was being submitted"
    assert np.array_equal(copied[0], np.full(64, 5.0, np.float32))


def test_an_out_of_range_view_is_refused_with_numpys_reason():
    t = ct.zeros(4).sync().named("v")
    with pytest.raises(ct.TensorError, match=re.escape("cannot take the view 7 of tensor 'v': index 7 is out of "
                                                       "bounds for axis 0 with size 4")):
        t[7]
    assert t[1:3].device == "cpu" and t[1:3].shape == (2,)


def test_string_preconditions_read_shape_and_ndim():
    @ct.entry(preconditions=["x.shape[0] % 8 == 0 and x.ndim == 1"])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
        z.store(ct.load_tile_like(x, z))
    z, x = ct.zeros(16).sync().partition(16), rnd(16, seed=2)
    z, x = k(z, x).sync()
    assert np.array_equal(z.unpartition().to_numpy(), x.to_numpy())
    z2, x2 = ct.zeros(16).sync().partition(16), rnd(12, seed=2)
    refused([z2, x2], lambda: k(z2, x2), ct.PreconditionError,
            re.escape("precondition `x.shape[0] % 8 == 0 and x.ndim == 1` does not hold"))


def test_a_graph_of_one_output_of_an_unzipped_op_replays():
    """Capturing a chain that runs a shared step (``unzip``) and replaying it twice."""
    z, x = ct.zeros(16).sync().partition(16), rnd(16, seed=3)
    first, _ = add(z, x).unzip(2)
    g = first.graph()
    g.launch()
    (out,) = (g.launch(),)
    assert out is z and np.array_equal(z.unpartition().to_numpy(), 2 * x.to_numpy())


def test_memory_a_graph_writes_cannot_become_shared_and_the_refusal_says_how_to_free_it():
    t, x = ct.zeros(16).sync(), rnd(16, seed=4)
    g = add(t.partition(16), x).graph()
    p = g.launch()[0]
    with pytest.raises(ct.AliasError, match=re.escape("its memory overlaps memory held by a graph (1 ops) whose "
                                                      "replays write it (close it with g.close())")):
        p.unpartition().shared()


@pytest.mark.parametrize("element_type", [np.float32, "float32", np.dtype(np.float32), ct.float32],
                         ids=["numpy type", "name", "numpy dtype", "safetile dtype"])
def test_element_type_generics_may_be_given_in_any_spelling(element_type):
    @ct.entry
    def copy_t(z: ct.Mut["T", "B"], x: ct.Ref["T", -1]):  # noqa: F821
        z.store(ct.load_tile_like(x, z))
    z, x = ct.zeros(16).sync().partition(16), rnd(16, seed=5)
    z, x = copy_t.generics({"T": element_type})(z, x).sync()
    assert np.array_equal(z.unpartition().to_numpy(), x.to_numpy())


def test_from_numpy_takes_torch_tensors_of_any_float_type_and_with_grad():
    torch = pytest.importorskip("torch")
    b = torch.randn(8, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    got = ct.from_numpy(b).sync().to_numpy()
    assert got.tobytes() == b.view(torch.int16).numpy().tobytes()
    g = torch.ones(4, requires_grad=True)
    assert np.array_equal(ct.from_numpy(g).sync().to_numpy(), np.ones(4, np.float32))


def test_memcpy_reads_a_raw_source_as_it_was_when_built():
    """Whoever owns a raw NumPy source may re-shape it after ``memcpy`` was built: the copy reads
    the memory as it was checked."""
    a = np.arange(16, dtype=np.float32)
    d = ct.zeros(16).sync()
    op = ct.memcpy(d, a)
    a.shape = (4, 4)
    assert np.array_equal(op.sync().to_numpy(), np.arange(16, dtype=np.float32))


@ct.entry
def store_twice(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, -1]):
    z.store(ct.load_tile_like(x, z))
    z.store(z.load() * 2.0)


def test_a_block_reading_and_writing_its_own_elements_is_no_race():
    z, x = ct.zeros(64).sync().partition(16), rnd(64, seed=7)
    report = ct.detect_races(store_twice, None, (z, x))
    assert not report.conflicts and report.racy_elements == 0 and report.written_elements == 64
    assert np.array_equal(z.unpartition().to_numpy(), 2 * x.to_numpy())


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs os.fork (Linux)")
def test_after_a_fork_each_host_access_names_itself():
    """In a forked child, memory that work of the parent was writing at the fork is refused; the
    refusal names what was tried (a host read, a copy, a DLPack export)."""
    from test_fork import in_child
    t = ct.zeros(64).sync()
    entry = InFlight("a test launch", None)
    REGISTRY.claim(entry, entry, [t._extent()], [])  # work writing t is in flight at the fork

    def child():
        out = []
        for call in (t.to_numpy, lambda: ct.copy(t).sync(), lambda: np.from_dlpack(t)):
            try:
                call()
                out.append("ran")
            except ct.ForkError as e:
                out.append(str(e).split(" is refused: this memory was being written by a test launch")[0])
        return "|".join(out)
    try:
        out = in_child(child)
    finally:
        entry.set_enqueued()
        REGISTRY.remove(entry)
    assert out == "a host read|a copy|a DLPack export", out
    for call in (t.to_numpy, lambda: ct.copy(t).sync().to_numpy(), lambda: np.from_dlpack(t)):
        assert np.array_equal(call(), np.zeros(64, np.float32))  # in the parent, once the work is done


@ct.kernel
def two_overlaps(small, big):
    b = ct.bid(0)
    ct.store(small, index=(b // 2,), tile=ct.full((2,), 1.0, ct.float32))  # blocks 0 and 1: 2 elements
    ct.store(big, index=((b + 1) // 2,), tile=ct.full((8,), 1.0, ct.float32))  # blocks 1 and 2: 8 elements


def test_a_race_report_lists_the_widest_conflict_first():
    rep = ct.detect_races(two_overlaps, (3, 1, 1), (np.zeros(4, np.float32), np.zeros(16, np.float32)),
                          raise_on_race=False)
    assert [(c.count, c.array) for c in rep.conflicts] == [(8, "big"), (2, "small")], rep.describe()


def test_the_size_limit_of_a_tensor_is_exact():
    """2**62 bytes at most: one byte more is refused when the operation is built, not when it runs
    (floating-point arithmetic would round the two to the same number)."""
    assert ct.zeros(2**62, dtype=ct.uint8) is not None  # built, never run
    with pytest.raises(ct.TensorError, match=re.escape("zeros: a uint8 tensor of shape (4611686018427387905,) "
                                                       "would take more than 2**62 bytes")):
        ct.zeros(2**62 + 1, dtype=ct.uint8)


def test_host_factories_on_the_cpu_need_no_torch(monkeypatch):
    """torch is an optional dependency: CPU tensors are NumPy memory."""
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    for op, want in ((ct.zeros(4), 0.0), (ct.ones(4), 1.0), (ct.full(4, 2.5), 2.5)):
        assert np.array_equal(op.sync().to_numpy(), np.full(4, want, np.float32))


@ct.entry
def no_tensors(n: int):
    pass


def test_a_kernel_without_tensor_arguments_runs_on_the_cpu():
    assert no_tensors.grid((2,))(3).sync() == (3,)


def test_overlap_is_exact_up_to_the_limit_of_the_exact_comparison(monkeypatch):
    """Interleaved views are compared element by element up to ``EXACT_LIMIT`` bytes each (beyond,
    conservatively: intersecting ranges count as overlapping). The limit is lowered to 64 bytes
    here, so the views are small."""
    from safetile.safe import memory
    monkeypatch.setattr(memory, "EXACT_LIMIT", 64)
    buf = np.zeros(32, np.float32)  # two interleaved views of exactly 64 bytes each
    assert not memory.overlaps(memory.extent_of(buf[0::2]), memory.extent_of(buf[1::2]))
    assert not memory.overlaps(memory.extent_of(buf[1::2]), memory.extent_of(buf[0::2]))
    big = np.zeros(34, np.float32)  # one element past the limit: conservative
    assert memory.overlaps(memory.extent_of(big[0::2]), memory.extent_of(big[1::2]))


def test_a_value_lent_to_a_chain_stays_usable_in_its_closure_after_a_nested_record():
    """A ``then`` closure may record into a graph scope opened outside; afterwards the values its
    own terminal lent it are still its to use."""
    z, w = ct.zeros(16).sync().partition(16), ct.zeros(16).sync().partition(16)
    with ct.graph_scope() as g:
        def closure(value):
            g.record(inc(w))
            return value[0].to_numpy()
        seen = inc(z).then(closure).sync()
    assert np.array_equal(seen, np.ones(16, np.float32)) and g.graph is not None


def test_a_launch_with_an_op_argument_refuses_a_moved_value_when_built():
    p = ct.zeros(16).sync().partition(16)
    op = inc(p)
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{p.label} cannot be passed to a launch: it "
                                                                   "was moved into launch 'inc'")):
        add(p, ct.zeros(16))
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{p.label} cannot be mapped: it was moved")):
        p.map(2)
    op.sync()


def test_a_host_read_waits_for_a_running_launch_writing_that_memory():
    """While a launch runs (on the CPU: while it is submitted) its in-flight entry holds what it
    writes: a host read of a view of that memory waits and sees the finished result."""
    t = ct.zeros(1024).sync()
    view = t[:]  # taken before the move: the launched tensor itself is lent to the terminal
    runner = threading.Thread(target=lambda: spin_write(t.partition(64), 3.0, 10000).sync(), daemon=True)
    runner.start()
    while not any(not e.enqueued for e in REGISTRY._entries):  # the launch has claimed its memory and runs
        assert runner.is_alive()
        threading.Event().wait(0.0005)
    seen = view.to_numpy()
    runner.join(WAIT)
    assert np.array_equal(seen, np.full(1024, 3.0, np.float32)), "a host read saw a launch half-way"


def test_a_cuda_device_past_the_count_names_the_ones_there_are(monkeypatch):
    """With GPUs present (faked here: two), asking for a third names the range there is."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: False)
    with pytest.raises(ct.TensorError, match="^" + re.escape("device 'cuda:5' is not available: this process sees 2 "
                                                             "CUDA GPU(s); use 'cpu' or 'cuda:0'..'cuda:1'") + "$"):
        ct.zeros(4, device="cuda:5")


def test_a_dlpack_export_waits_for_readers_being_submitted():
    """The consumer of a DLPack export may write the memory: the export waits even for work that
    only reads it (a copy, by contrast, does not: test_a_copy_only_reads_its_source)."""
    t = rnd(64, seed=8)
    entry = InFlight("a test launch", None)
    REGISTRY.claim(entry, entry, [], [t._extent()])  # reads t, submitting until set_enqueued
    exported = []
    exporter = threading.Thread(target=lambda: exported.append(np.from_dlpack(t)), daemon=True)
    exporter.start()
    exporter.join(1.0)
    waited = exporter.is_alive()
    entry.set_enqueued()
    REGISTRY.remove(entry)
    exporter.join(WAIT)
    assert waited, "a DLPack export went out while work reading the memory was being submitted"
    assert np.array_equal(exported[0], t.to_numpy())
    np.from_dlpack(t)  # and one from this thread (so mutmut maps the test to the export)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs os.fork (Linux)")
def test_a_fork_waits_a_bounded_time_for_a_lock_held_elsewhere(monkeypatch):
    """A runtime lock held by another thread that never lets go delays a fork by ``LOCK_WAIT`` at
    most (lowered here), and the child gets a fresh lock."""
    from test_fork import in_child
    from safetile.safe import forking
    monkeypatch.setattr(forking, "LOCK_WAIT", 0.2)
    held, done = threading.Event(), threading.Event()

    def holder():
        with REGISTRY._lock:
            held.set()
            done.wait(WAIT)
    threading.Thread(target=holder, daemon=True).start()
    assert held.wait(WAIT)
    out = []
    forker = threading.Thread(target=lambda: out.append(in_child(lambda: str(ct.zeros(4).sync().to_numpy().sum()))),
                              daemon=True)
    try:
        forker.start()
        forker.join(5)
        forked_while_held = not forker.is_alive()
    finally:
        done.set()
        forker.join(WAIT)
    assert forked_while_held, "a fork waited for a lock that another thread holds"
    assert out == ["0.0"]


def test_a_live_graph_holds_the_shared_values_it_reads():
    t, z = rnd(16, seed=9), ct.zeros(16).sync().partition(16)
    s = t.shared()
    g = add(z, s).graph()
    with pytest.raises(ct.OwnershipError, match=re.escape(f"{s.label} is still held by 1 launch(es) or live "
                                                          "graph(s)")):
        s.try_unwrap()
    g.close()
    assert np.array_equal(s.try_unwrap().to_numpy(), t.to_numpy())


@ct.entry
def store_a_wrong_tile(z: ct.Mut[ct.f32, "B"]):
    z.partition((8,)).store(ct.full((4,), 1.0, ct.float32), (0,))


def test_a_wrong_tile_stored_through_an_in_kernel_partition_names_it():
    z = poisoned(16).partition(16)
    refused([z], lambda: store_a_wrong_tile(z), ct.TileSafetyError,
            re.escape("z.partition(...).store: 'z.partition((8,))' is a sub-tensor of shape (8,); a store writes "
                      "it whole, so the tile must have that shape, got (4,)"))


def test_compile_takes_arguments_by_position_only():
    z, x = poisoned(16).partition(16), rnd(16, seed=1)
    refused([z, x], lambda: add.compile(z, x=x), ct.LaunchTypeError,
            re.escape("kernel 'add' takes its arguments by position (z, x); got keyword argument(s) x"))
    assert add.compile(z, x) is not None


def test_an_awaited_shared_result_stays_shared():
    """``await op.shared()`` delivers Shared handles; the terminal ending well keeps them so."""
    p = ct.zeros(16).sync().partition(16)

    async def main():
        return await inc(p).shared()
    (s,) = asyncio.run(main())
    assert isinstance(s, ct.Shared) and np.array_equal(s.to_numpy(), np.ones(16, np.float32))
    assert np.array_equal(s.try_unwrap().to_numpy(), np.ones(16, np.float32))


def test_refusals_of_partitions_name_which_kind():
    t = ct.zeros((4, 8)).sync().named("p")
    with pytest.raises(ct.PartitionError, match="^partition_prefix of tensor 'p': "):
        t.partition_prefix((2, 4, 4))
    with pytest.raises(ct.PartitionError, match="^partition of tensor 'p': "):
        t.partition((2,))


def test_a_tensor_label_shows_its_element_type_and_shape():
    assert re.fullmatch(r"tensor#\d+\[float32 2x3\]", ct.zeros((2, 3)).sync().label)
    assert ct.zeros((2, 3), dtype=ct.int8).sync().named("q").label == "tensor 'q'"


def test_a_view_with_a_zero_step_is_refused_like_a_negative_one():
    t = ct.zeros(8).sync()
    for step in (0, -1):
        with pytest.raises(ct.TensorError, match="^tensor slices need a positive step$"):
            t[::step]


def test_sharing_collects_an_export_kept_alive_only_by_a_reference_cycle():
    """A DLPack export that only a reference cycle keeps (a stored traceback, say) does not block
    ``shared()``: the cycle is collected and the export with it."""
    import gc
    t = rnd(16, seed=10)

    class Holder:
        pass
    enabled = gc.isenabled()
    gc.disable()  # the cycle stays until shared() collects it
    try:
        h = Holder()
        h.me, h.export = h, np.from_dlpack(t)
        del h
        s = t.shared()
    finally:
        if enabled:
            gc.enable()
    assert np.array_equal(s.to_numpy(), rnd(16, seed=10).to_numpy())


def test_the_registry_forgets_an_entry_that_is_not_the_latest():
    first, second = InFlight("first", None), InFlight("second", None)
    a, b = ct.zeros(4).sync(), ct.zeros(4).sync()
    REGISTRY.claim(first, first, [a._extent()], [])
    REGISTRY.claim(second, second, [b._extent()], [])
    first.set_enqueued()
    second.set_enqueued()
    REGISTRY.remove(first)  # not the last one registered
    assert first not in REGISTRY._entries and second in REGISTRY._entries
    REGISTRY.remove(second)
    assert second not in REGISTRY._entries


@ct.entry
def scale_by(z: ct.Mut[ct.f32, "B"], a: float):
    z.store(z.load() * a)


def test_a_mapped_partition_where_a_scalar_is_declared_is_named():
    z, m = poisoned(64).partition(16), poisoned(64).partition(16).map(2)
    refused([z, m], lambda: scale_by(z, m), ct.LaunchTypeError,
            re.escape("argument 'a' of kernel 'scale_by' is a scalar (float32), got MappedPartition"))


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs os.fork (Linux)")
def test_after_a_fork_memory_a_running_launch_wrote_names_that_launch():
    from test_fork import in_child
    t = ct.zeros(1024).sync()
    view = t[:]
    op = spin_write(t.partition(64), 3.0, 20000)  # built here: mutmut maps the test to the launch
    runner = threading.Thread(target=op.sync, daemon=True)
    runner.start()
    while not any(not e.enqueued for e in REGISTRY._entries):
        assert runner.is_alive()
        threading.Event().wait(0.0005)

    def child():
        try:
            view.to_numpy()
            return "ran"
        except ct.ForkError as e:
            return str(e)
    out = in_child(child)
    runner.join(WAIT)
    assert out.startswith("a host read is refused: this memory was being written by launch 'spin_write' (op #"), out


def test_strides_are_integers_in_elements():
    t = ct.zeros((3, 4), dtype=ct.float64).sync()
    assert t.strides == (4, 1) and all(type(s) is int for s in t.strides)
    assert t[:, ::2].strides == (4, 2) and all(type(s) is int for s in t[:, ::2].strides)


def test_a_shared_op_keeps_its_arity_for_unzip():
    z, x = ct.zeros(16).sync().partition(16), rnd(16, seed=11)
    want = x.to_numpy()
    zs, xs = add(z, x).shared().unzip()  # no count given: the launch's arity (its two parameters)
    out, x2 = ct.zip(zs, xs).sync()
    assert np.array_equal(out.to_numpy(), want) and np.array_equal(x2.to_numpy(), want)


def test_refusals_of_moved_values_name_the_action():
    t = ct.zeros(16).sync()
    p = t.partition(16)
    op = inc(p)
    for action, verb in ((p.grid, "inspected"), (lambda: ct.memcpy(p, np.zeros(16, np.float32)), "copied into")):
        with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{p.label} cannot be {verb}: it was moved")):
            action()
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{t.label} cannot be shared: it was moved")):
        t.shared()
    op.sync()


def test_one_block_may_walk_a_whole_mapped_partition():
    p = ct.zeros(64).sync().partition(16)
    with pytest.raises(ct.PartitionError):
        p.map(0)
    m = p.map(1)
    assert m.grid() == (1, 1, 1)


@ct.kernel
def one_element_race(out):
    ct.store(out, index=(0,), tile=ct.full((1,), 1.0, ct.float32))


def test_a_race_on_a_one_element_argument_is_located_in_it():
    rep = ct.detect_races(one_element_race, (2, 1, 1), (np.zeros(1, np.float32),), raise_on_race=False)
    assert [(c.array, c.lo, c.hi, c.count) for c in rep.conflicts] == [("out", (0,), (0,), 1)], rep.describe()


def test_an_annotation_error_names_the_annotation():
    with pytest.raises(ct.TileDeclarationError, match="^" + re.escape("ct.Mut: static sizes must be positive (or -1 "
                                                                      "for dynamic), got 0")):
        ct.Mut[ct.f32, (0,)]


def test_a_self_overlapping_output_names_its_strides_in_elements():
    from numpy.lib.stride_tricks import as_strided
    v = as_strided(np.zeros(4, np.float32), shape=(16,), strides=(0,))
    z = ct.from_dlpack(v).partition(16)
    refused([z], lambda: inc(z), ct.AliasError, re.escape("(shape (16,), strides (0,)) gives several"))


def test_a_graph_for_one_device_refuses_a_stream_of_another():
    from safetile.safe.graph import _stream_for
    with pytest.raises(ct.DeviceOpError, match="graph"):
        _stream_for("cuda:0", ct.Stream("cpu"), "graph()")
    s = ct.Stream("cpu")
    assert _stream_for("cpu", s, "graph()") is s


@pytest.mark.parametrize("make, name", [(ct.rand, "rand"), (ct.randn, "randn")])
def test_random_factories_name_themselves_in_shape_errors(make, name):
    with pytest.raises(ct.TensorError, match="^" + re.escape(f"{name}: a tensor shape is a non-negative integer or "
                                                             "a tuple of them, got (-1,)")):
        make(-1)


def test_a_race_report_lists_eight_conflicts_by_default_one_a_line():
    @ct.kernel
    def all_zero(x, out, T: ct.Constant[int]):
        ct.store(out, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(T,)))
    rep = ct.detect_races(all_zero, (11, 1, 1), (rnd(44).to_numpy(), np.zeros(44, np.float32), 4),
                          raise_on_race=False)
    lines = rep.describe().split("\n")
    assert len(rep.conflicts) == 10 and lines[0].startswith("data race in kernel")
    assert sum("both write" in line for line in lines) == 8 and lines[-1] == "  ... and 2 more pair(s) of blocks"


def test_graph_inside_a_running_chain_is_refused_by_name():
    z, w = ct.zeros(16).sync().partition(16), ct.zeros(16).sync().partition(16)
    op = inc(w)

    def nested(value):
        with pytest.raises(ct.NestedSyncError, match=r"^graph\(\) called while a device operation is executing"):
            op.graph()
        return value
    inc(z).then(nested).sync()
    assert np.array_equal(w.to_numpy(), np.zeros(16, np.float32))  # the refused op was abandoned: w is back


def test_a_host_read_does_not_wait_for_readers_being_submitted():
    t = rnd(64, seed=12)
    entry = InFlight("a test launch", None)
    REGISTRY.claim(entry, entry, [], [t._extent()])  # reads t, submitting until set_enqueued
    got = []
    reader = threading.Thread(target=lambda: got.append(t.to_numpy()), daemon=True)
    reader.start()
    reader.join(3)
    finished_beside_the_reader = not reader.is_alive()
    entry.set_enqueued()
    REGISTRY.remove(entry)
    reader.join(WAIT)
    assert finished_beside_the_reader, "a host read waited for work that only reads the memory"
    assert np.array_equal(got[0], t.to_numpy())


@pytest.mark.parametrize("cond, shown", [
    ([lambda x: x.ndim == 3 , 0][0], "lambda x: x.ndim == 3"),  # noqa: E203 - a space before the comma
])
def test_a_lambdas_text_drops_the_space_before_what_follows_it(cond, shown):
    @ct.entry(preconditions=[cond])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, (-1, -1)]):
        z.store(z.load() + 1.0)
    z = ct.zeros(16).sync().partition(16)
    with pytest.raises(ct.PreconditionError, match=re.escape(f"precondition `{shown}` does not hold")):
        k(z, rnd((4, 4), seed=7))
