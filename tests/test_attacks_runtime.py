"""Adversarial corpus, runtime side: threads, graphs, sharing, dropped operations.

Classes 4 to 7 of issue 9 and the ownership lifecycle: a CPU graph replay is in flight
while it runs; claiming memory in the in-flight registry is atomic; checking and moving
ownership is one step; a ``Shared`` value has no writable alias (views taken before, graphs
captured before, ``op.shared()``); an unrun launch gives its arguments back (drop, cancel,
end of a borrow); every message is true. Races are provoked with a tiny thread switch
interval; every result is compared with the sequential one.
"""
from __future__ import annotations

import gc
import threading
import warnings

import numpy as np
import pytest

import safetile as ct

from attack_helpers import add, inc, poisoned, refused, rnd
from safetile.safe.errors import DeviceOpError, OwnershipError


def run_threads(*fns):
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported by the test
                errors.append(e)
        return run
    threads = [threading.Thread(target=wrap(f)) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return errors


# ----------------------------------------------------------------------------- class 4: graph replays in flight

@pytest.mark.threads
def test_cpu_graph_replay_is_in_flight_for_host_reads_and_launches(racy):
    t = ct.zeros(256).sync()
    view = t[:]  # another tensor over the same memory, taken before the partition
    z = t.partition(64)
    op = inc(z)
    for _ in range(31):
        op = op.then(lambda r: inc(*r))
    g = op.graph()  # 32 increments per replay
    seen = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            seen.append(view.to_numpy())

    def launcher():
        p = view[:128].partition(64)  # a second, writable partition of the same memory
        for _ in range(40):
            p, = inc(p).sync()

    def replayer():
        for _ in range(10):
            g.launch()
        stop.set()
    assert run_threads(reader, launcher, replayer) == []
    final = view.to_numpy()
    assert np.array_equal(final[:128], np.full(128, 320 + 40, np.float32))  # no lost update
    assert np.array_equal(final[128:], np.full(128, 320, np.float32))
    for a in seen:  # a read never sees a replay half done
        assert (a[128:] % 32 == 0).all(), a[128:]


# ----------------------------------------------------------------------------- class 5: atomic claims

@pytest.mark.threads
def test_overlapping_launches_from_two_threads_lose_no_update(racy):
    t = ct.zeros(512).sync()
    a, b = t[0:384].partition(128), t[128:512].partition(128)  # overlap on [128, 384)
    n = 60

    def run(p):
        def go():
            for _ in range(n):
                p_, = inc(p_box[p]).sync()
                p_box[p] = p_
        return go
    p_box = {"a": a, "b": b}
    assert run_threads(run("a"), run("b")) == []
    out = p_box["a"].unpartition().to_numpy()
    expected = np.r_[np.full(128, n), np.full(256, 2 * n)].astype(np.float32)
    assert np.array_equal(out[:384], expected)


@pytest.mark.threads
def test_host_read_never_sees_a_running_launch(racy):
    t = ct.zeros(4096).sync()
    view = t[:]
    z = t.partition(1024)
    bad = []

    def reader():
        for _ in range(200):
            a = view.to_numpy()
            if not (a == a[0]).all():
                bad.append(a)

    def writer():
        nonlocal z
        for _ in range(100):
            z, = inc(z).sync()
    assert run_threads(reader, writer) == []
    assert not bad, "a host read saw a launch half done"


# ----------------------------------------------------------------------------- class 6: atomic moves

@pytest.mark.threads
@pytest.mark.parametrize("what", ["launch", "partition", "shared", "memcpy", "run"])
def test_one_value_taken_by_two_threads_goes_to_exactly_one(what, racy):
    for round_ in range(20):
        t = ct.zeros(64).sync()
        p = t.partition(16)
        src = rnd(64, seed=round_)
        op = inc(ct.zeros(64).sync().partition(16)) if what == "run" else None
        barrier = threading.Barrier(2)
        won = []

        def contender():
            barrier.wait()
            try:
                if what == "launch":
                    won.append(inc(p))
                elif what == "partition":
                    won.append(t2.partition(16))
                elif what == "shared":
                    won.append(t2.shared())
                elif what == "memcpy":
                    won.append(ct.memcpy(t2, src))
                else:
                    won.append(op.sync())
            except (ct.OwnershipError, ct.DeviceOpError):
                pass
        t2 = ct.zeros(64).sync()
        assert run_threads(contender, contender) == []
        assert len(won) == 1, f"round {round_}: {len(won)} threads took one value"
        for w in won:
            if isinstance(w, (ct.LaunchOp, ct.DeviceOp)):
                w.cancel()


# ----------------------------------------------------------------------------- class 7: Shared has no writable alias

def test_view_taken_before_shared_cannot_be_written():
    t = rnd(64, seed=1)
    v = t[16:32]
    s = t.shared()
    refused([v, s], lambda: v.partition(16), ct.AliasError, "read-only shared memory")
    refused([v, s], lambda: ct.memcpy(v, np.zeros(16, np.float32)), ct.AliasError, "read-only shared memory")
    t2 = s.try_unwrap()  # the shared handle ends: writable again
    p = v.partition(16)
    p, = inc(p).sync()
    assert np.array_equal(t2.to_numpy()[16:32], rnd(64, seed=1).to_numpy()[16:32] + 1)


@ct.kernel
def fill_blocks(a, v: float):
    ct.store(a, (ct.bid(0),), ct.full((16,), 1.0, ct.float32) * v)


def test_frozen_memory_is_not_exported_writable_nor_written_by_unchecked_launches():
    """Round-2 attacks 207/208: a view taken before .shared() handed to NumPy/torch by DLPack, or to
    an unchecked ct.launch (which takes it by DLPack), would be a writable alias of the Shared."""
    import torch
    t = rnd(64, seed=2)
    v = t[:]
    s = t.shared()
    refused([v, s], lambda: np.from_dlpack(v), ct.AliasError, "read-only shared memory")
    refused([v, s], lambda: torch.from_dlpack(v), ct.AliasError, "read-only shared memory")
    refused([v, s], lambda: ct.launch(None, (4, 1, 1), fill_blocks, (v, 3.0)), ct.AliasError, "copy")
    c = np.from_dlpack(v, copy=True)  # a copy is fine, and writing it writes nothing of the Shared
    c[:] = 7
    assert np.array_equal(s.to_numpy(), rnd(64, seed=2).to_numpy())
    t2 = s.try_unwrap()  # the Shared ends: the view is an ordinary writable alias again
    ct.launch(None, (4, 1, 1), fill_blocks, (v, 3.0))
    assert np.all(t2.to_numpy() == 3.0)


def test_second_wrapper_of_the_same_memory_cannot_be_written_while_shared():
    a = np.zeros(64, np.float32)
    t1, t2 = ct.from_dlpack(a), ct.from_dlpack(a)
    s = t1.shared()
    refused([t2, a], lambda: t2.partition(16), ct.AliasError, "shared")
    del s
    gc.collect()  # a collected handle's claim ends
    t2.partition(16).unpartition()


def test_shared_refused_while_a_writable_partition_lives():
    t = ct.zeros(64).sync()
    v = t[:32]
    p = t.partition(16)
    refused([v, p], lambda: v.shared(), ct.AliasError, "can still be written")
    t = p.unpartition()
    s = v.shared()
    assert isinstance(s, ct.Shared)


def test_graph_replays_keep_their_memory_from_becoming_shared():
    z = ct.zeros(64).sync().partition(16)
    g = inc(z).graph()
    z = g.value[0]
    t = z.unpartition()  # the capture gave z back; a replay would still write it
    refused([t], lambda: t.shared(), ct.AliasError, "graph")
    g.close()
    s = t.shared()
    with pytest.raises(ct.GraphCaptureError, match="closed"):
        g.launch()
    assert np.array_equal(s.to_numpy(), np.zeros(64, np.float32))  # a CPU capture records, never runs


def test_op_shared_hands_out_read_only_values():
    t = ct.zeros(64).sync()
    made = ct.value(t.partition(16)).shared()
    a = made.sync()
    b = made.sync()
    assert isinstance(a, ct.Shared) and a is b  # one read-only handle, never one mutable partition twice
    refused([a], lambda: inc(a), ct.LaunchTypeError, "is mutable")


def test_op_shared_refuses_a_borrowed_partition():
    t = ct.zeros(64).sync()
    with ct.borrow_mut(t) as b:
        p = b.partition(16)
        with pytest.raises(ct.DeviceOpError, match="borrowed"):
            ct.value(p).shared().sync()


# ----------------------------------------------------------------------------- drops, cancels, borrows

def test_dropped_launch_gives_its_arguments_back_with_a_warning():
    z, x = poisoned(64).partition(16), rnd(64, seed=2)
    op = add(z, x)
    assert z.is_moved
    with pytest.warns(ct.LaunchDroppedWarning, match=r"launch 'add' \(op #\d+.*was dropped without being run"):
        del op
        gc.collect()
    assert not z.is_moved and not x.is_moved
    assert np.all(np.isnan(z.to_numpy()))


def test_cancel_gives_the_arguments_back_and_the_op_never_runs():
    z, x = poisoned(64).partition(16), rnd(64, seed=3)
    op = add(z, x)
    assert op.cancel() == (z, x)
    with pytest.raises(ct.DeviceOpError, match="cancelled"):
        op.sync()
    with pytest.raises(ct.DeviceOpError, match="cannot be cancelled"):
        op.cancel()
    assert np.all(np.isnan(z.to_numpy()))


def test_use_after_move_message_is_true():
    z, x = poisoned(64).partition(16), rnd(64, seed=4)
    op = add(z, x)
    with pytest.raises(ct.UseAfterMoveError, match=r"moved into launch 'add' .*given back by that launch's "
                       r"result .* or by op\.cancel\(\)"):
        z.to_numpy()
    op.cancel()
    z.to_numpy()


def test_borrow_ends_when_the_block_raises():
    t = ct.zeros(64).sync()
    with pytest.raises(RuntimeError, match="boom"):
        with ct.borrow_mut(t) as b:
            op = inc(b.partition(16))  # noqa: F841 - never run
            raise RuntimeError("boom")
    assert np.array_equal(t.to_numpy(), np.zeros(64, np.float32))
    with pytest.raises(ct.DeviceOpError, match="cancelled"):
        op.sync()


def test_borrow_ends_with_a_mapped_partition():
    t = ct.zeros(64).sync()

    @ct.entry
    def fill(c: ct.MappedMut[ct.f32, ("B",)]):
        for idx in c.iter_indices():
            c.store(ct.full((B,), 7.0, ct.float32), idx)  # noqa: F821
    with ct.borrow_mut(t) as b:
        m = b.partition(16).map(2)
        m, = fill(m).sync()
    assert np.array_equal(t.to_numpy(), np.full(64, 7.0, np.float32))
    with pytest.raises(ct.OwnershipError):
        fill(m)


def test_dropped_memcpy_gives_the_destination_back():
    dst = poisoned(16)
    op = ct.memcpy(dst, np.zeros(16, np.float32))
    with pytest.warns(ct.LaunchDroppedWarning, match="memcpy"):
        del op
        gc.collect()
    assert np.all(np.isnan(dst.to_numpy()))


def test_memcpy_runs_once():
    dst = poisoned(16)
    op = ct.memcpy(dst, np.ones(16, np.float32))
    out = op.sync()
    with pytest.raises(ct.DeviceOpError, match="runs once"):
        op.sync()
    assert np.array_equal(out.to_numpy(), np.ones(16, np.float32))


def test_a_dropped_launch_releases_its_hold_on_a_shared_handle():
    s = rnd(64, seed=5).shared()
    op = add(poisoned(64).partition(16), s)
    with pytest.raises(ct.OwnershipError, match="still held"):
        s.try_unwrap()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ct.LaunchDroppedWarning)
        del op
        gc.collect()
    assert isinstance(s.try_unwrap(), ct.Tensor)


def test_refused_deferred_launch_gives_everything_back():
    x = rnd(64, seed=6)
    op = add(ct.zeros(32).partition(16), x)  # a DeviceOp argument: checked when it runs (grid differs? no: x too long is fine)
    z2 = poisoned(64).partition(32)
    bad = add(ct.value(z2), ct.value(z2))  # the same partition twice, found when the op runs
    with pytest.raises(ct.AliasError, match="same partition"):
        bad.sync()
    assert not z2.is_moved
    z, x = op.sync()
    assert np.array_equal(z.unpartition().to_numpy(), x.to_numpy()[:32])


def test_host_handles_have_no_instance_dict_and_refuse_class_swaps():
    """Round-2 attack 216: host values keep their state in slots (no ``__dict__`` to edit), and
    their class cannot be swapped for another handle class (the layouts differ)."""
    t = ct.zeros(64).sync()
    s = ct.ones(64).sync().shared()
    p = t.partition(16)
    for v in (t, s, p, p.map(2)):
        assert not hasattr(v, "__dict__")
    with pytest.raises(TypeError, match="layout"):
        s.__class__ = ct.Tensor
    with pytest.raises(TypeError, match="layout"):
        t.__class__ = ct.Shared
    assert isinstance(s, ct.Shared) and np.all(s.to_numpy() == 1.0)


def test_a_claim_made_inside_another_claims_check_is_refused(monkeypatch):
    """Red team round 3 (304, 305): a signal handler or finalizer running on the launching thread
    between a claim's check and its registration must not get its own claim in between (the
    claims lock is re-entrant, so it does not keep the same thread out)."""
    import safetile.safe.claims as claims_mod
    elsewhere = ct.zeros(16).sync().shared()  # a live frozen claim: the partition's check looks at it
    t = ct.zeros(256).sync()
    v = t[:]
    real = claims_mod.overlaps
    made: list = []

    def interrupting(a, b):
        if not made:  # the "handler": runs inside t.partition's claim check
            try:
                made.append(v.shared())
            except ct.AliasError as e:
                made.append(e)
        return real(a, b)
    monkeypatch.setattr(claims_mod, "overlaps", interrupting)
    p = t.partition(64)
    monkeypatch.setattr(claims_mod, "overlaps", real)
    assert isinstance(made[0], ct.AliasError) and "interrupts another claim" in str(made[0])
    with pytest.raises(ct.AliasError):
        v.shared()  # the partition's writable claim is registered: sharing a view is refused
    t = p.unpartition()
    assert v.shared().to_numpy().sum() == 0  # the memory can be shared once the partition is gone
    assert elsewhere.to_numpy().shape == (16,)


# forces the cyclic collector to run a finalizer inside traced calls: under mutmut's stats pass that
# re-enters CPython 3.11's ContextVar.set and crashes it (bench/NOTES.md, mutation testing)
@pytest.mark.threads
def test_a_finalizer_partitioning_during_a_partition_does_not_deadlock():
    """Red team round 3 (304): a collection inside the facts interning table's lookup runs a
    finalizer that partitions again on the same thread; it must not wait for itself."""
    import gc
    import threading
    import weakref

    class Bait:
        pass

    def run():
        for n in range(1, 40):
            t = ct.zeros(64).sync()

            def again(t=t):
                try:
                    t.partition(16)
                except ct.OwnershipError:
                    pass
            gc.collect()
            gc.disable()
            b = Bait()
            b.self = b
            weakref.finalize(b, again)
            del b
            gc.set_threshold(gc.get_count()[0] + n, 1000, 1000)
            gc.enable()
            try:
                t.partition(16)
            except ct.OwnershipError:
                pass
            finally:
                gc.set_threshold(700, 10, 10)
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(60)
    assert not th.is_alive(), "a finalizer re-entering partition() deadlocked the thread"


@pytest.mark.threads
def test_leaving_a_borrow_while_another_thread_launches_its_partition():
    """Red team round 5 (520): a launch another thread builds while the borrow block is being left
    is either refused (the partition is released first) or cancelled / waited for by the exit: once
    the exit returns, nothing writes the tensor, so a Shared made from it stays as it was."""
    import time
    x = ct.from_dlpack(np.ones(256, np.float32)).shared()
    for _ in range(20):
        t = ct.from_dlpack(np.zeros(256, np.float32))
        leaving = threading.Event()
        stop = threading.Event()

        def hammer(p):
            while not stop.is_set():
                try:
                    op = add(p, x)
                except OwnershipError:  # released: the borrow has ended
                    return
                if leaving.is_set():
                    time.sleep(0.01)  # built in the window: run it late
                try:
                    p, _ = op.sync()
                except DeviceOpError:  # cancelled by the exit: it never runs
                    return

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exit may cancel the late launch (LaunchDroppedWarning)
            with ct.borrow_mut(t) as b:
                th = threading.Thread(target=hammer, args=(b.partition(64),))
                th.start()
                time.sleep(0.002)
                leaving.set()
        s = t.shared()
        before = s.to_numpy().copy()
        time.sleep(0.02)
        stop.set()
        th.join()
        np.testing.assert_array_equal(s.to_numpy(), before)
