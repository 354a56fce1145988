"""The runtime's states seen from outside while work is in flight: what a value lent to (or moved
into) a running terminal says when someone else uses it, stream order, the in-flight registry
staying usable after a failed claim. Each test drives the runtime's own worker threads (or one
thread of its own) step by step with events, so what it asserts happens deterministically.
(bench/NOTES.md, "Mutation testing": these cover what the mutants left alive in the runtime.)"""
from __future__ import annotations

import asyncio
import re
import threading
import time

import numpy as np
import pytest

import safetile as ct
from safetile.safe.memory import InFlight, Registry, extent_of

from attack_helpers import WAIT, Pause, add, inc, rnd, wait_until


def in_use_message(value, holder: str) -> str:
    return re.escape(f"{value.label} cannot be read: it is in use by {holder}, which has not finished; that "
                     "terminal's result gives it back")


@pytest.mark.parametrize("pinned", [False, True])
def test_a_value_lent_to_a_running_sync_names_that_terminal(pinned):
    """A launch inside a chain gives its arguments back to the chain, not to everyone: until the
    terminal ends, another thread's use of them is refused, naming the terminal."""
    p = ct.zeros(64).sync().partition(16)
    pause = Pause()
    op = inc(p).then(pause)
    worker = ct.Stream("cpu")  # the runtime's own worker thread drives the terminal
    fut = worker.submit(lambda: op.sync_on(ct.Stream("cpu")) if pinned else op.sync())
    assert pause.entered.wait(WAIT)
    holder = "a running sync_on()" if pinned else "a running sync()"
    with pytest.raises(ct.UseAfterMoveError, match="^" + in_use_message(p, holder) + "$"):
        p.to_numpy()
    with pytest.raises(ct.UseAfterMoveError, match=re.escape(f"cannot be passed as argument 'z' of kernel 'inc': it "
                                                            f"is in use by {holder}")):
        inc(p)
    assert not p.is_moved  # the refused launch moved nothing
    pause.go.set()
    (out,) = fut.result(WAIT)
    assert out is p and np.array_equal(p.to_numpy(), np.ones(64, np.float32))  # usable again


def test_a_value_lent_to_an_unfinished_await_names_it():
    t = ct.zeros(32).sync()
    p = t.partition(8)
    pause = Pause()
    op = inc(p).then(pause)

    async def main():
        task = asyncio.ensure_future(op)  # runs on a stream's worker thread
        deadline = time.monotonic() + WAIT
        while not pause.entered.is_set():
            assert not task.done() and time.monotonic() < deadline, "the awaited chain never reached its pause"
            await asyncio.sleep(0.001)
        with pytest.raises(ct.UseAfterMoveError, match="^" + in_use_message(p, f"an unfinished await of {op.label}")):
            p.to_numpy()
        pause.go.set()
        return await task
    (out,) = asyncio.run(main())
    assert out is p and np.array_equal(p.to_numpy(), np.ones(32, np.float32))


def test_a_value_moved_into_a_running_replay_names_it():
    """A replay takes the values it was captured with for its duration (as a launch does)."""
    z, x = ct.zeros(16).sync().partition(16), rnd(16, seed=3)
    xs = x.to_numpy()
    g = add(z, x).graph()
    busy, go = threading.Event(), threading.Event()
    g.stream.submit(lambda: (busy.set(), go.wait(WAIT)))  # the graph's stream has work queued: the replay waits
    assert busy.wait(WAIT)
    driver = ct.Stream("cpu")
    fut = driver.submit(g.launch)  # takes the values, then waits for the graph's stream
    wait_until(lambda: z.is_moved or fut.done(), "the replay taking its values")
    assert not fut.done()
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{z.label} cannot be read: it was moved into a "
                                                                   f"replay of {g.label}; it is given back when the "
                                                                   "replay ends") + "$"):
        z.to_numpy()
    go.set()
    assert fut.result(WAIT)[0] is z and g.replays == 1
    assert np.array_equal(z.to_numpy(), xs)


def test_a_cpu_stream_runs_its_work_one_at_a_time_in_order():
    s = ct.Stream("cpu")
    first_running, second_started = threading.Event(), threading.Event()
    order = []

    def first():
        first_running.set()
        order.append(("first saw the second start", second_started.wait(0.2)))

    def second():
        second_started.set()
        order.append("second")
    a, b = s.submit(first), s.submit(second)
    assert first_running.wait(WAIT)
    b.result(WAIT), a.result(WAIT)
    assert order == [("first saw the second start", False), "second"]
    assert s.run(lambda: "inline") == "inline"  # nothing queued: runs on the caller's thread


@pytest.mark.hang_guard
def test_stream_run_waits_behind_queued_work():
    """``Stream.run`` behind queued work waits for it, then runs on the worker and returns. It runs
    on a thread of the test's own, joined with a deadline: a wait that is never woken fails the
    test instead of hanging the suite."""
    s = ct.Stream("cpu")
    go, order, result = threading.Event(), [], []
    s.submit(lambda: (go.wait(WAIT), order.append("queued")))
    runner = threading.Thread(target=lambda: result.append(
        s.run(lambda: order.append("run") or threading.current_thread().name)), daemon=True)
    runner.start()
    # the run's job is queued behind the first, and the runner waits for it (a runner that ends
    # instead, having run nothing or run out of order, fails the asserts below)
    wait_until(lambda: s._queued >= 2 or not runner.is_alive(), "Stream.run queueing behind queued work")
    threading.Event().wait(0.02)
    go.set()
    runner.join(WAIT)
    assert not runner.is_alive(), "Stream.run never returned after the work queued before it ended"
    assert result[0].startswith("safetile-stream") and order == ["queued", "run"]


def test_a_failed_claim_leaves_the_registry_usable():
    """Whatever goes wrong inside a claim (here a failing extent list), the registry's lock is let go:
    a lock left held would hang every later launch, copy and host read."""
    reg = Registry()
    keep = np.zeros(4, np.float32)

    def failing():
        raise RuntimeError("extents could not be listed")
        yield  # pragma: no cover

    for entries in ((), (InFlight("another", None),)):
        for e in entries:
            reg.claim(e, e, [], [extent_of(np.zeros(2))])
        entry = InFlight("a claim that fails", None)
        with pytest.raises(RuntimeError, match="extents could not be listed"):
            reg.claim(entry, entry, failing(), [])
        assert reg._lock.acquire(timeout=1), "the registry's lock was left held"
        reg._lock.release()
        ok = InFlight("the next claim", None)
        reg.claim(ok, ok, [extent_of(keep)], [])
        reg.remove(ok)
        for e in entries:
            reg.remove(e)


def test_slicing_along_an_axis_the_tensor_lacks_is_refused():
    t = ct.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)).sync().named("s")
    assert np.array_equal(t.slice(-1, 1, 3).to_numpy(), np.arange(12).reshape(3, 4)[:, 1:3])
    assert np.array_equal(t.slice(1, 0, 2).to_numpy(), np.arange(12).reshape(3, 4)[:, 0:2])
    for axis in (2, -3, True, 1.0):
        with pytest.raises(ct.TensorError, match="^" + re.escape(f"slice of tensor 's': axis {axis!r} is not an axis "
                                                                 "of a rank-2 tensor") + "$"):
            t.slice(axis, 0, 1)


def test_forcing_a_backend_by_name():
    z = ct.zeros(16).sync().partition(16)
    (z,) = inc.backend("cpu")(z).sync()
    assert np.array_equal(z.to_numpy(), np.ones(16, np.float32))
    assert inc.backend(None) is not None and inc.backend("triton") is not None
    with pytest.raises(ct.ArgumentError, match=r"^unknown backend 'CPU': use 'cpu', 'triton' or None$"):
        inc.backend("CPU")


def test_a_stream_pool_is_on_the_cpu_unless_told():
    pool = ct.StreamPool(size=2)
    a, b, c = pool.next(), pool.next(), pool.next()
    assert pool.device == "cpu" and a.device == b.device == "cpu" and a is not b and c is a
    with pytest.raises(ct.ArgumentError, match="^a stream pool needs at least one stream, got 0$"):
        ct.StreamPool(size=0)


def test_a_cuda_stream_without_a_gpu_is_a_safetile_error():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    for dev, name in (("cuda", "cuda:0"), ("cuda:1", "cuda:1")):
        with pytest.raises(ct.TensorError, match="^" + re.escape(f"device {name!r} is not available: this process "
                                                                 "sees 0 CUDA GPU(s)")):
            ct.Stream(dev)
    assert not ct.Stream("cpu").is_cuda


def test_leaving_a_borrow_with_an_unrun_launch_warns_at_the_with_statement():
    t = ct.zeros(16).sync()
    with pytest.warns(ct.LaunchDroppedWarning) as caught:
        with ct.borrow_mut(t) as b:
            op = inc(b.partition(16))
    (w,) = [w for w in caught if issubclass(w.category, ct.LaunchDroppedWarning)]
    assert w.filename == __file__ and str(w.message) == (
        f"leaving the borrow of {t.label}: {op.label} had not run; it was cancelled and will never run (run "
        "launches inside the block)")
    assert np.array_equal(t.to_numpy(), np.zeros(16, np.float32))


@pytest.mark.parametrize("cond, n, c, outcome", [
    ("n * 3 == 6", 2, 0, "runs"),
    ("n * 3 == 7", 2, 0, "does not hold"),
    ("n ** c == 1024", 2, 10, "runs"),
    ("n ** c > 0", 1, 100000, "runs"),  # 1 ** c stays small however large c is
    ("n ** c > 0", 2, 2000, "runs"),
    ("n ** c > 0", 2, 5000, "OverflowError: the constant 2 ** 5000 has more than 4096 bits"),
    ("2 ** c * 2 ** c > n", 2, 2000, "runs"),
    ("2 ** c * 2 ** c > n", 2, 2048, "OverflowError: the constant "),  # the product passes 4096 bits
])
def test_precondition_arithmetic_is_exact_and_bounded(cond, n, c, outcome):
    """Multiplication and powers in a precondition are exact Python integers, refused (not computed)
    once a result would pass 4096 bits."""
    @ct.entry(preconditions=[cond])
    def k(z: ct.Mut[ct.f32, "B"], n: int, c: ct.Constant[int]):
        z.store(z.load() + 1.0)
    z = ct.zeros(16).sync().partition(16)
    if outcome == "runs":
        z, _, _ = k(z, n, c).sync()
        assert np.array_equal(z.to_numpy(), np.ones(16, np.float32))
        return
    text = "does not hold" if outcome == "does not hold" else "could not be evaluated: " + outcome
    with pytest.raises(ct.PreconditionError, match=re.escape(f"kernel 'k': precondition `{cond}` {text}")):
        k(z, n, c)
    assert np.array_equal(z.to_numpy(), np.zeros(16, np.float32))


def test_a_borrowed_tensor_cannot_be_launched_with():
    z, x = ct.zeros(16).sync().partition(16), rnd(16, seed=4)
    with ct.borrow_mut(x) as b:
        p = b.partition(16)
        with pytest.raises(ct.BorrowError, match=re.escape(f"{x.label} cannot be passed as argument 'x' of kernel "
                                                           f"'add': it is mutably borrowed by {p.label}")):
            add(z, x)
        assert not z.is_moved and not x.is_moved
        p.release()
    (z, x) = add(z, x).sync()
    assert np.array_equal(z.to_numpy(), x.to_numpy())


def test_waiters_list_themselves_while_they_wait():
    """``notify_all`` wakes waiters only when some thread is listed as waiting: each waiter lists
    itself for the length of its wait, and no longer."""
    from safetile.safe import memory
    flag, seen = [False], []
    before = len(memory._WAITERS)

    def test():
        seen.append(len(memory._WAITERS))
        return flag[0]
    waiter = ct.Stream("cpu").submit(lambda: memory.wait_until(test))
    while len(seen) < 2:  # its first test fails, then it lists itself and waits
        threading.Event().wait(0.001)
    flag[0] = True
    memory.notify_all()
    waiter.result(WAIT)
    assert seen[0] == before and set(seen[1:]) == {before + 1} and len(memory._WAITERS) == before


@ct.entry
def fill_mapped(c: ct.MappedMut[ct.f32, ("B",)]):
    for idx in c.iter_indices():
        c.store(ct.full((B,), 1.0, ct.float32), idx)  # noqa: F821


def test_leaving_a_borrow_cancels_an_unrun_launch_of_a_mapped_partition():
    t = ct.zeros(64).sync()
    with pytest.warns(ct.LaunchDroppedWarning, match="had not run; it was cancelled"):
        with ct.borrow_mut(t) as b:
            op = fill_mapped(b.partition(16).map(2))
    with pytest.raises(ct.DeviceOpError, match="cannot be cancelled: it has been cancelled$"):
        op.cancel()
    assert np.array_equal(t.to_numpy(), np.zeros(64, np.float32))
    (m,) = fill_mapped(t.partition(16).map(2)).sync()  # the tensor is free again
    assert np.array_equal(m.to_numpy(), np.ones(64, np.float32))


def test_a_copy_names_what_it_copies_into_and_how_to_get_it_back():
    dst, src = ct.zeros(8).sync(), np.arange(8, dtype=np.float32)
    op = ct.memcpy(dst, src)
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(
            f"{dst.label} cannot be read: it was moved into memcpy into {dst.label} (created at "
            "test_mutation_kills_runtime.py:") + r"\d+" + re.escape("); it is given back by that operation's result "
                                                                    "or by op.cancel()") + "$"):
        dst.to_numpy()
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{dst.label} cannot be copied into: it was moved "
                                                                   f"into memcpy into {dst.label}")):
        ct.memcpy(dst, src)
    assert op.sync() is dst and np.array_equal(dst.to_numpy(), src)
    p = dst.partition(8)
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{dst.label} cannot be copied into: it was moved "
                                                                   f"into {p.label} (by .partition() at")):
        ct.memcpy(dst, src)


def test_an_entry_holds_the_keys_it_has_seen():
    """Extents are added once per key (a plan launched again adds nothing); the key is held, so a new
    key can never reuse a freed one's id and be skipped."""
    keep = [np.zeros(4, np.float32) for _ in range(2)]
    a, b = extent_of(keep[0]), extent_of(keep[1])
    e = InFlight("x", None)
    key = object()
    e.add(key, [a], [])
    del key
    for _ in range(100):  # CPython hands a freed object's address to the next object of its size
        e.add(object(), [], [b])
    assert e.writes == [a] and e.reads == [b] and len(e._added) == 101


def test_a_host_read_of_memory_already_written_by_an_unfinished_terminal_goes_on():
    """CPU work is finished once it is submitted: a host read of what a chain has already written does
    not wait for the rest of the chain."""
    base = np.zeros(16, np.float32)
    z = ct.from_dlpack(base).partition(16)
    pause = Pause()
    fut = ct.Stream("cpu").submit(inc(z).then(pause).sync)
    assert pause.entered.wait(WAIT)
    safety = threading.Timer(WAIT, pause.go.set)  # only if the read waited for the chain (a hang otherwise)
    safety.start()
    seen = ct.copy(base).sync().to_numpy()
    released_by_timer = pause.go.is_set()
    pause.go.set()
    safety.cancel()
    assert fut.result(WAIT)[0] is z
    assert not released_by_timer and np.array_equal(seen, np.ones(16, np.float32))


def test_sync_runs_on_the_calling_thread_when_the_stream_is_idle():
    me = threading.current_thread()
    assert ct.value(1).map(lambda v: threading.current_thread()).sync() is me
    s = ct.Stream("cpu")
    assert ct.value(1).map(lambda v: threading.current_thread()).sync_on(s) is me
    go = threading.Event()
    s.submit(lambda: go.wait(WAIT))  # queued work: the next terminal on s runs on its worker, in order
    threading.Timer(0.05, go.set).start()
    ran_on = ct.value(1).map(lambda v: threading.current_thread()).sync_on(s)
    assert ran_on is not me and ran_on.name.startswith(f"safetile-stream{s.id}_")
    assert ct.value(1).map(lambda v: threading.current_thread()).sync_on(s) is me  # idle again


def test_a_mapped_partition_is_named_by_its_own_label():
    m = ct.zeros(64).sync().partition(16).map(2)
    assert re.fullmatch(r"mapped partition#\d+", m.label)
    p = m.unmap()
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{m.label} cannot be read: it was moved into "
                                                                   "the partition returned by .unmap() at ")):
        m.to_numpy()
    assert p.num_tiles == 4


@pytest.mark.parametrize("how", ["graph", "scope"])
def test_a_value_lent_to_a_capture_names_it(how):
    """Host closures run once, at capture: until the capture ends, what its launches gave back belongs
    to it."""
    p = ct.zeros(16).sync().partition(16)
    pause = Pause()
    op = inc(p).then(pause)

    def capture():
        if how == "graph":
            return op.graph()
        with ct.graph_scope() as g:
            g.record(op)
        return g.graph
    fut = ct.Stream("cpu").submit(capture)
    assert pause.entered.wait(WAIT)
    holder = "a graph capture" if how == "graph" else "a graph scope's record()"
    with pytest.raises(ct.UseAfterMoveError, match="^" + in_use_message(p, holder) + "$"):
        p.to_numpy()
    pause.go.set()
    g = fut.result(WAIT)
    assert np.array_equal(p.to_numpy(), np.zeros(16, np.float32))  # captured, not run
    g.launch()
    assert np.array_equal(p.to_numpy(), np.ones(16, np.float32))
    g.close()


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_copies_of_narrow_torch_floats_are_bit_exact_in_any_layout(name):
    """bfloat16 and float8 reach NumPy through an integer view of the same width, which works for any
    layout (a transposed tensor, a scalar, an odd length)."""
    torch = pytest.importorskip("torch")
    dtype = getattr(torch, name)
    g = torch.Generator().manual_seed(5)
    full = torch.randn(3, 5, generator=g).to(dtype)
    for t in (full.t(), full[1, 2], full[0, :3]):
        bits = torch.int16 if name == "bfloat16" else torch.uint8
        want = t.contiguous().reshape(-1).view(bits).numpy().reshape(tuple(t.shape))
        got = ct.copy(t).sync().to_numpy()
        assert got.shape == tuple(t.shape) and got.dtype == getattr(ct, name).np_dtype
        assert np.array_equal(got.view(want.dtype), want)


def test_leaving_a_borrow_lets_the_memory_be_shared():
    t = ct.zeros(32).sync()
    with ct.borrow_mut(t) as b:
        b.partition(16).release()
        b.partition_prefix((8,))  # never released by hand: leaving the block ends it
    s = t.shared()  # no writable claim left behind
    assert np.array_equal(s.to_numpy(), np.zeros(32, np.float32))


def test_unzip_refuses_a_wrong_count_when_the_arity_is_known():
    op = ct.zip(ct.value(1), ct.value(2))
    with pytest.raises(ct.DeviceOpError, match=r"^unzip\(3\): the operation produces 2 values, not 3$"):
        op.unzip(3)
    a, b = op.unzip(2)
    assert a.sync() == 1 and b.sync() == 2


def test_a_replayed_copy_refuses_a_raw_source_changed_since_the_capture():
    """A graph replays a copy unchecked: a raw NumPy source reshaped in place since the capture (its
    facts changed) refuses the replay, naming the copy and its argument."""
    dst = ct.zeros(8).sync()
    src = np.arange(8, dtype=np.float32)
    g = ct.memcpy(dst, src).graph()
    g.launch()
    assert np.array_equal(dst.to_numpy(), src)
    src.shape = (2, 4)  # the same memory, another layout
    with pytest.raises(ct.GraphCaptureError, match="^" + re.escape(
            f"{g.label}: argument 'src' of memcpy into {dst.label} is a raw ndarray whose data pointer, shape, "
            "strides or dtype changed since the capture")):
        g.launch()
    g.close()


def test_a_graph_scope_replays_on_the_stream_it_was_given():
    s = ct.Stream("cpu")
    z = ct.zeros(16).sync().partition(16)
    with ct.graph_scope(s) as g:
        (z,) = g.record(inc(z))
    assert g.graph.stream is s
    g.launch()
    assert np.array_equal(z.to_numpy(), np.ones(16, np.float32))
    g.graph.close()
    with ct.graph_scope() as g2:  # none given: a stream of the recorded work's device
        g2.record(inc(z))
    assert g2.graph.stream is not s and g2.graph.stream.device == "cpu"
    g2.graph.close()


def test_refusals_name_the_action_tried():
    t = ct.zeros(16).sync().named("t")
    p = t.partition(16)
    z = ct.zeros(16).sync()
    g = add(z.partition(16), p.unpartition().shared()).graph()
    zz = g.value[0]
    zz.unpartition()  # the captured partition is moved elsewhere: the replay is refused, naming it
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{zz.label} cannot be used by a replay of "
                                                                   f"{g.label}: it was moved into the tensor returned "
                                                                   "by .unpartition() at ")):
        g.launch()
    g.close()
    with pytest.raises(ct.UseAfterMoveError, match="^" + re.escape(f"{zz.label} cannot be unpartitioned: it was "
                                                                   "moved into the tensor returned")):
        zz.unpartition()
    with pytest.raises(ct.DeviceOpError, match=r"^map\(\) takes a function of the value, got int$"):
        ct.value(1).map(3)
    with pytest.raises(ct.DeviceOpError, match=r"^then\(\) takes a function of the value, got int$"):
        ct.value(1).then(3)
    named = ct.zeros(32).sync().named("w").partition(16).map(2)
    assert named.label == "mapped partition 'w'"


@pytest.mark.parametrize("cond, shown", [
    ((lambda x: x.ndim == 3), "lambda x: x.ndim == 3"),
    ((lambda x: x.ndim == 3,)[0], "lambda x: x.ndim == 3"),  # a different tail after the lambda
    ([lambda x: x.ndim == 3][0], "lambda x: x.ndim == 3"),  # its text ends an odd number of characters earlier
    ("x.ndim == 3", "x.ndim == 3"),
])
def test_a_failing_precondition_shows_its_text(cond, shown):
    @ct.entry(preconditions=[cond])
    def k(z: ct.Mut[ct.f32, "B"], x: ct.Ref[ct.f32, (-1, -1)]):
        z.store(z.load() + 1.0)
    z = ct.zeros(16).sync().partition(16)
    with pytest.raises(ct.PreconditionError, match=re.escape(f"kernel 'k': precondition `{shown}` does not hold")):
        k(z, rnd((4, 4), seed=7))


def test_a_precondition_naming_several_unknown_names_lists_them():
    with pytest.raises(ct.TileDeclarationError, match=re.escape("precondition `y > w` names y, w, which is neither "
                                                                "a parameter nor a generic")):
        @ct.entry(preconditions=["y > w"])
        def k(z: ct.Mut[ct.f32, "B"]):
            z.store(z.load())


def test_the_race_detector_refuses_unresolved_operation_arguments():
    z = ct.zeros(16).sync()
    with pytest.raises(ct.ArgumentError, match="^detect_races runs a launch of host values: resolve DeviceOp "
                                               "arguments first$"):
        ct.detect_races(inc, None, (ct.value(z.partition(16)),))


def test_from_numpy_takes_its_copy_when_called():
    a = np.arange(4, dtype=np.float32)
    op = ct.from_numpy(a)
    a[0] = 99.0  # after the call: not in the tensor the op makes
    assert np.array_equal(op.sync().to_numpy(), np.arange(4, dtype=np.float32))


def test_a_partition_label_shows_its_shapes():
    p = ct.zeros((4, 6)).sync().partition((2, 4))
    assert re.fullmatch(r"partition#\d+\[float32 4x6 / 2x4\]", p.label)


def test_the_default_pool_is_on_the_default_device():
    pool = ct.default_pool()
    assert pool.device == "cpu" and ct.default_pool("cpu") is pool and pool.next().device == "cpu"
